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

use aws_sdk_dynamodb::types::{AttributeValue, Delete, Put, Select, TransactWriteItem};
use serde::{Deserialize, Serialize};

use crate::ApiError;
use berth_cluster::crd::{App, AppStatus, OUTCOME_PENDING, ReleaseMark};
use berth_domain::app::AppConfig;
use berth_records::apps::record::ReleaseRecord;
use berth_store as store;
use berth_store::{Store, keys};

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

/// The revision that writing `revision` prunes, if any.
fn pruned_by(revision: i64) -> Option<i64> {
    let oldest = oldest_kept(revision);
    (oldest > 1).then_some(oldest - 1)
}

/// One revision as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StoredRelease {
    pub revision: i64,
    pub reason: String,
    #[serde(default)]
    pub note: Option<String>,
    #[serde(default)]
    pub actor: Option<String>,
    pub created_at: i64,
    /// None for a revision of an app built from source before its first
    /// build.
    #[serde(default)]
    pub image: Option<String>,
    /// The configuration as JSON: restored as a whole by a rollback.
    pub config: String,
    pub confirmed: bool,
}

impl StoredRelease {
    pub fn new(mark: &ReleaseMark, config: &AppConfig, confirmed: bool) -> Result<Self, ApiError> {
        Ok(Self {
            revision: mark.revision,
            reason: mark.reason.clone(),
            note: mark.note.clone(),
            actor: mark.actor.clone(),
            created_at: mark.created_at,
            image: config.image.clone(),
            config: serde_json::to_string(config)
                .map_err(|e| ApiError::Internal(format!("encoding a release: {e}")))?,
            confirmed,
        })
    }

    pub fn config(&self) -> Result<AppConfig, ApiError> {
        serde_json::from_str(&self.config)
            .map_err(|e| ApiError::Internal(format!("decoding release {}: {e}", self.revision)))
    }

    /// Its record, before [`with_outcomes`] says which is current, which
    /// runs and what became of it.
    fn record(&self) -> ReleaseRecord {
        ReleaseRecord {
            revision: self.revision,
            image: self.image.clone(),
            reason: self.reason.clone(),
            note: self.note.clone(),
            actor: self.actor.clone(),
            created_at: self.created_at,
            current: false,
            running: false,
            status: OUTCOME_PENDING.to_owned(),
        }
    }
}

/// The revisions an App holds, as the history records them (confirmed):
/// its own, and those the controller wrote over, which the store may not
/// hold yet (`AppSpec::unrecorded`).
pub fn held_by(app: &App) -> Result<(StoredRelease, Vec<StoredRelease>), ApiError> {
    let spec = &app.spec;
    let own = StoredRelease::new(&spec.release, &spec.config, true)?;
    let unrecorded = spec
        .unrecorded
        .iter()
        .map(|revision| StoredRelease::new(&revision.release, &revision.config, true))
        .collect::<Result<_, _>>()?;
    Ok((own, unrecorded))
}

/// The stored shape: the release plus its key.
#[derive(Serialize)]
struct ReleaseItem<'a> {
    pk: String,
    sk: String,
    #[serde(flatten)]
    release: &'a StoredRelease,
}

/// Why a change's revisions were not written (nothing was).
#[derive(Debug)]
pub enum NotPrepared {
    /// Writes of `with` failed their conditions: by position in `with`, each
    /// with the item it found when DynamoDB returned it.
    Refused(Vec<(usize, Option<store::Item>)>),
    /// A concurrent transaction on the same items won; another try may not.
    Contended,
    Failed(ApiError),
}

impl From<ApiError> for NotPrepared {
    fn from(error: ApiError) -> Self {
        Self::Failed(error)
    }
}

impl From<berth_store::StoreError> for NotPrepared {
    fn from(error: berth_store::StoreError) -> Self {
        Self::Failed(error.into())
    }
}

/// Writes a change's revisions before its commit (see the module docs):
/// `current` is the App's revision as the resource holds it (None for a new
/// app) and `unrecorded` those the controller wrote over
/// (`AppSpec::unrecorded`), all recorded as confirmed; `next` the revision
/// about to be committed, `entry` the app's entry in its environment's list
/// (`super::leftovers`), `with` the writes that
/// must succeed with them in the same transaction (the claims of the app's
/// hostnames, `super::hosts`). The same transaction deletes the revision that
/// falls out of the [`HISTORY_KEPT`] newest, so the history never grows and
/// pruning costs no round trip. (Should the commit then fail, the history is
/// one revision short until the next change.)
pub async fn prepare(
    store: &Store,
    history: &str,
    current: Option<&StoredRelease>,
    unrecorded: &[StoredRelease],
    next: &StoredRelease,
    entry: TransactWriteItem,
    with: Vec<TransactWriteItem>,
) -> Result<(), NotPrepared> {
    let mut writes = Vec::new();
    // One write per revision (a transaction may not write an item twice),
    // and none a prune would delete or the change itself writes.
    let oldest = oldest_kept(next.revision);
    let mut seen = std::collections::BTreeSet::new();
    let own = |revision: i64| {
        revision == next.revision || current.is_some_and(|c| c.revision == revision)
    };
    for revision in unrecorded
        .iter()
        .filter(|r| r.revision >= oldest && !own(r.revision) && seen.insert(r.revision))
    {
        writes.push(store::tx_put(
            Put::builder()
                .table_name(store.table())
                .set_item(Some(item(history, revision)?)),
        )?);
    }
    if let Some(current) = current {
        writes.push(store::tx_put(
            Put::builder()
                .table_name(store.table())
                .set_item(Some(item(history, current)?)),
        )?);
    }
    writes.push(store::tx_put(
        Put::builder()
            .table_name(store.table())
            .set_item(Some(item(history, next)?))
            .condition_expression("attribute_not_exists(pk) OR confirmed = :false")
            .expression_attribute_values(":false", AttributeValue::Bool(false)),
    )?);
    let next_at = writes.len() - 1;
    if let Some(pruned) = pruned_by(next.revision) {
        writes.push(store::tx_delete(
            Delete::builder()
                .table_name(store.table())
                .set_key(Some(store::key(
                    keys::releases(history),
                    &keys::release_sk(pruned),
                ))),
        )?);
    }
    writes.push(entry);
    let with_at = writes.len();
    writes.extend(with);
    let error = match store.transact(writes).await {
        Ok(()) => return Ok(()),
        Err(error) => error,
    };
    let Some(reasons) = store::cancellation_reasons(&error) else {
        return Err(NotPrepared::Failed(error.into()));
    };
    let failed = |at: usize| {
        reasons
            .get(at)
            .is_some_and(|reason| reason.code() == Some("ConditionalCheckFailed"))
    };
    if failed(next_at) {
        return Err(NotPrepared::Failed(
            berth_cluster::apps::changed_meanwhile().into(),
        ));
    }
    let refused: Vec<(usize, Option<store::Item>)> = reasons
        .iter()
        .enumerate()
        .skip(with_at)
        .filter(|(at, _)| failed(*at))
        .map(|(at, reason)| (at - with_at, reason.item().cloned()))
        .collect();
    if !refused.is_empty() {
        return Err(NotPrepared::Refused(refused));
    }
    match store::transaction_failure(error) {
        berth_store::StoreError::Conflict(_) => Err(NotPrepared::Contended),
        other => Err(NotPrepared::Failed(other.into())),
    }
}

fn item(history: &str, release: &StoredRelease) -> Result<store::Item, ApiError> {
    Ok(store::to_item(&ReleaseItem {
        pk: keys::releases(history),
        sk: keys::release_sk(release.revision),
        release,
    })?)
}

/// One stored revision, if it exists and the App has reached it.
pub async fn get(
    store: &Store,
    history: &str,
    revision: i64,
) -> Result<Option<StoredRelease>, ApiError> {
    store
        .get_as(store::key(
            keys::releases(history),
            &keys::release_sk(revision),
        ))
        .await
        .map_err(ApiError::from)
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
    let older = store
        .client()
        .query()
        .table_name(store.table())
        .key_condition_expression("pk = :pk AND sk < :current")
        .expression_attribute_values(":pk", store::s(keys::releases(history)))
        .expression_attribute_values(":current", store::s(keys::release_sk(current.revision)))
        .scan_index_forward(false)
        .limit(i32::try_from(HISTORY_KEPT - 1).unwrap_or(i32::MAX))
        .consistent_read(true)
        .select(Select::AllAttributes)
        .send()
        .await?;
    let mut records = vec![current.record()];
    records.extend(unrecorded.iter().map(StoredRelease::record));
    for item in older.items.unwrap_or_default() {
        let stored = store::from_item::<StoredRelease>(item)?;
        if !unrecorded.iter().any(|r| r.revision == stored.revision) {
            records.push(stored.record());
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
