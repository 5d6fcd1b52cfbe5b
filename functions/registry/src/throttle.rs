//! The token service's throttle (issue 46, part 6): a flood of wrong
//! passwords must not load the apiserver under berth-api's budget without
//! bound, nor drown an organization's audit log; and a user name, which is
//! guessable (`environment/{namespace}`), must never be locked, or anyone
//! could stop a tenant's image pulls.
//!
//! Failures are counted with the sign-in throttle's slots
//! (`berth_store::identity::throttle`: a sliding window of 15 minutes),
//! under two subjects of the registry's own:
//!
//! - per source address (`RegistrySource`, 100 failures): over it, every
//!   request from that address with a credential — a correct one too — is
//!   `429` with `Retry-After`, answered without reading the cluster. The
//!   address's flood thus costs at most its budget of cluster reads (plus
//!   what was in flight at once) per window.
//! - per user name (`RegistryUser`, 10 failures): over it, nothing is
//!   refused — the credential is checked as always, so the right password
//!   works from any source within its budget — but the name's further
//!   failures are audited in the system partition, not its organization's
//!   log: the organization sees the first 10 of each window, and a flood
//!   of guesses at its names from many addresses adds nothing there.
//!
//! A failure is counted after the check (a grant, on every pod start,
//! costs one read and no write); every call stays one audit event. The
//! throttle fails open: when the table cannot be read or written, the
//! request is judged as if nothing had been counted (logged), so that a
//! DynamoDB outage does not stop pulls that need only the cluster.

use berth_domain::clock;
use berth_domain::registry::RegistryUser;
use berth_store::Store;
use berth_store::identity::throttle::{self, Attempts, Subject};

/// What is counted against a request's source and user name.
pub struct Failures {
    source: String,
    username: String,
    source_seen: Attempts,
    username_seen: Attempts,
}

impl Failures {
    /// Both subjects' failures, in one round trip.
    pub async fn read(store: &Store, source: &str, user: &RegistryUser) -> Self {
        let source = throttle::caller_network(source);
        let username = user.username();
        let subjects = [
            (Subject::RegistrySource, source.as_str()),
            (Subject::RegistryUser, username.as_str()),
        ];
        let read = throttle::read_many(store, &subjects)
            .await
            .unwrap_or_else(|error| {
                tracing::warn!(error = %error,
                    "the registry throttle could not be read; judging without it");
                Vec::new()
            });
        let mut read = read.into_iter();
        let source_seen = read
            .next()
            .unwrap_or_else(|| Attempts::none(Subject::RegistrySource));
        let username_seen = read
            .next()
            .unwrap_or_else(|| Attempts::none(Subject::RegistryUser));
        Self {
            source,
            username,
            source_seen,
            username_seen,
        }
    }

    /// Seconds until the source may try again, when it is over its budget.
    pub fn source_blocked_for(&self) -> Option<u64> {
        self.source_seen.blocked_for(clock::unix_seconds())
    }

    /// Counts a failure against both subjects; whether the user name was
    /// within its budget (its organization's log gets the event).
    pub async fn count(self, store: &Store) -> bool {
        let (source, username) = tokio::join!(
            throttle::count_failure(
                store,
                Subject::RegistrySource,
                &self.source,
                self.source_seen
            ),
            throttle::count_failure(
                store,
                Subject::RegistryUser,
                &self.username,
                self.username_seen
            ),
        );
        if let Err(error) = &source {
            tracing::warn!(error = %error, "a registry failure of a source was not counted");
        }
        match username {
            Ok(within) => within,
            Err(error) => {
                tracing::warn!(error = %error,
                    "a registry failure of a user name was not counted");
                true
            }
        }
    }
}
