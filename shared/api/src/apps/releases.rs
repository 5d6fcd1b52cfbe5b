//! Release history in DynamoDB: one item per revision, a full snapshot of the
//! app's configuration, in the partition of the app's history id.
//!
//! The App resource is the commit point. A change writes, in one transaction,
//! the App's current revision (copied from the resource, so it is always
//! right, and marked `confirmed`) and the new revision (unconfirmed, unless an
//! earlier attempt's copy is already confirmed: then another change committed
//! that revision first, and this one is a conflict). Only then is the resource
//! replaced, conditioned on the version that was read. So:
//! - a store fault leaves the old state and no visible new revision;
//! - a refused or failed replace leaves a revision above the resource's, which
//!   readers ignore and the next attempt overwrites;
//! - a revision below the resource's is always the confirmed snapshot.

use crate::ApiError;
use berth_cluster::crd::{App, AppStatus, OUTCOME_PENDING, ReleaseMark};
use berth_domain::app::AppConfig;
use berth_records::apps::record::ReleaseRecord;
use berth_store::app_entries::AppEntry;
use berth_store::hostnames::ClaimWrite;
use berth_store::releases::RevisionWrite;
use berth_store::{self as store, Store};

/// Marks the newest revision `current` and the one whose configuration runs
/// `running` (none, when nothing runs), each with its status from the
/// App's (`AppStatus::release_status`).
pub fn with_outcomes(records: &mut [ReleaseRecord], status: &AppStatus, newest: i64) {
    for record in records {
        record.current = record.revision == newest;
        record.running = status.running_revision == Some(record.revision);
        record.status = status.release_status(record.revision, newest).to_owned();
    }
}

/// The revisions kept per app (spec part 8: the release history is 50
/// revisions): `listReleases` shows them all, a rollback may go to any of
/// them, and the one that falls out of the window is deleted by the very
/// transaction that writes the newest (see [`prepare`]).
pub const HISTORY_KEPT: i64 = 50;

/// The oldest revision an app at `head` keeps.
pub fn oldest_kept(head: i64) -> i64 {
    (head - HISTORY_KEPT + 1).max(1)
}

/// The revision that writing `revision` prunes, if any: the store's rule
/// (`berth_store::releases::prepare` deletes it) applied to this window.
#[cfg(test)]
fn pruned_by(revision: i64) -> Option<i64> {
    berth_store::releases::pruned_below(oldest_kept(revision))
}

pub use berth_store::releases::{NotPrepared, StoredRelease};

/// A revision as the history records it.
pub fn stored(
    mark: &ReleaseMark,
    config: &AppConfig,
    confirmed: bool,
) -> Result<StoredRelease, ApiError> {
    Ok(StoredRelease {
        revision: mark.revision,
        reason: mark.reason.clone(),
        note: mark.note.clone(),
        actor: mark.actor.clone(),
        created_at: mark.created_at,
        image: config.image.as_ref().map(ToString::to_string),
        config: StoredRelease::encode(config)?,
        confirmed,
    })
}

/// Its record, before [`with_outcomes`] says which is current, which
/// runs and what became of it.
fn record(release: &StoredRelease) -> ReleaseRecord {
    ReleaseRecord {
        revision: release.revision,
        image: release.image.clone(),
        reason: release.reason.clone(),
        note: release.note.clone(),
        actor: release.actor.clone(),
        created_at: release.created_at,
        current: false,
        running: false,
        status: OUTCOME_PENDING.to_owned(),
    }
}

/// The revisions an App holds, as the history records them (confirmed):
/// its own, and those the controller wrote over, which the store may not
/// hold yet (`AppSpec::unrecorded`).
pub fn held_by(app: &App) -> Result<(StoredRelease, Vec<StoredRelease>), ApiError> {
    let spec = &app.spec;
    let own = stored(&spec.release, &spec.config, true)?;
    let unrecorded = spec
        .unrecorded
        .iter()
        .map(|revision| stored(&revision.release, &revision.config, true))
        .collect::<Result<_, _>>()?;
    Ok((own, unrecorded))
}

/// Writes a change's revisions before its commit (see the module docs):
/// `current` is the App's revision as the resource holds it (None for a new
/// app) and `unrecorded` those the controller wrote over
/// (`AppSpec::unrecorded`), all recorded as confirmed; `next` the revision
/// about to be committed, `entry` the app's entry in its environment's list
/// (`super::leftovers`), `claims` the claims of the app's hostnames
/// (`super::hosts`), which must succeed with them in the same transaction.
/// The same transaction deletes the revision that falls out of the
/// [`HISTORY_KEPT`] newest, so the history never grows and pruning costs no
/// round trip. (Should the commit then fail, the history is one revision
/// short until the next change.)
pub async fn prepare(
    store: &Store,
    history: &str,
    current: Option<&StoredRelease>,
    unrecorded: &[StoredRelease],
    next: &StoredRelease,
    entry: &AppEntry,
    claims: &[ClaimWrite],
) -> Result<(), NotPrepared> {
    let write = RevisionWrite {
        history,
        current,
        unrecorded,
        next,
        oldest_kept: oldest_kept(next.revision),
        entry,
        claims,
    };
    store::releases::prepare(store, write).await
}

/// One stored revision, if it exists and the App has reached it.
pub async fn get(
    store: &Store,
    history: &str,
    revision: i64,
) -> Result<Option<StoredRelease>, ApiError> {
    Ok(store::releases::get(store, history, revision).await?)
}

/// The newest revisions, newest first, as the App (whose own release is
/// `current`) has them: revisions above it never committed and are left out;
/// its own and those the controller wrote over (`unrecorded`) come from the
/// resource, the rest from the store.
pub async fn list(
    store: &Store,
    history: &str,
    current: &StoredRelease,
    unrecorded: &[StoredRelease],
) -> Result<Vec<ReleaseRecord>, ApiError> {
    let older = store::releases::older(store, history, current.revision, HISTORY_KEPT - 1).await?;
    let mut records = vec![record(current)];
    records.extend(unrecorded.iter().map(record));
    for stored in older {
        if !unrecorded.iter().any(|r| r.revision == stored.revision) {
            records.push(record(&stored));
        }
    }
    records.sort_by_key(|record| std::cmp::Reverse(record.revision));
    records.truncate(usize::try_from(HISTORY_KEPT).unwrap_or(usize::MAX));
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_fifty_are_kept() {
        assert_eq!(oldest_kept(1), 1);
        assert_eq!(oldest_kept(50), 1);
        assert_eq!(oldest_kept(51), 2);
        assert_eq!(oldest_kept(200), 151);
        for revision in 1..=50 {
            assert_eq!(pruned_by(revision), None, "{revision}");
        }
        assert_eq!(pruned_by(51), Some(1));
        assert_eq!(pruned_by(52), Some(2));
        // Writing a revision leaves exactly the window of the next head.
        for revision in 51..300 {
            assert_eq!(pruned_by(revision), Some(oldest_kept(revision) - 1));
            assert_eq!(revision - oldest_kept(revision) + 1, HISTORY_KEPT);
        }
    }
}
