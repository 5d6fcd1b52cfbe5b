//! Grants summarised per credential and hour: every pod start that pulls a
//! Berth-built image asks for a token, so one audit event per grant would
//! drown an organization's log. A credential's first grant of each clock
//! hour (UTC) is audited (`getRegistryToken`/`requestRegistryToken`,
//! outcome `success`, actor kind `registry`, the credential as actor and
//! target); its other grants that hour are not, and stand in the
//! function's log, one line each. Denials are audited one by one.
//!
//! Which grant is the hour's first is decided once across all instances by
//! the store (`berth_store::registry_grants`, a record the table's TTL
//! removes after two hours); an instance remembers the hours it has seen, so
//! it asks at most once per credential and hour.

use std::collections::HashSet;
use std::sync::Mutex;

use berth_domain::clock;
use berth_store::Store;

/// Whether this grant is `username`'s first of the current hour (and so
/// gets an audit event). When the store cannot say, it is treated as the
/// first: an event too many rather than none.
pub async fn first_of_the_hour(store: &Store, username: &str) -> bool {
    static SEEN: Mutex<Option<HashSet<(String, i64)>>> = Mutex::new(None);
    let now = clock::unix_seconds();
    let hour = now / 3600;
    let key = (username.to_owned(), hour);
    if let Ok(mut seen) = SEEN.lock() {
        let seen = seen.get_or_insert_with(HashSet::new);
        if seen.contains(&key) {
            return false;
        }
        seen.retain(|(_, h)| *h == hour);
        seen.insert(key);
    }
    match berth_store::registry_grants::first_of_hour(store, username, hour, now + 7200).await {
        Ok(first) => first,
        Err(error) => {
            tracing::warn!(error = %error,
                "could not tell whether a registry grant is its hour's first; auditing it");
            true
        }
    }
}
