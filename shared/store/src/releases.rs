//! An app's release history (`RELEASES#{history}` / `REV#{revision}`): one
//! item per revision, a full snapshot of the app's configuration. What a
//! revision is and which are kept are the API's rules
//! (`berth_api::apps::releases`); here is how they are written — a change's
//! revisions, its entry and its hostnames' claims in one transaction — and
//! read.

use std::collections::BTreeSet;

use aws_sdk_dynamodb::types::{AttributeValue, Delete, Put, Select, TransactWriteItem};
use serde::{Deserialize, Serialize};

use crate::StoreError;
use berth_domain::app::AppConfig;

use crate::app_entries::AppEntry;
use crate::hostnames::{ClaimWrite, HostItem};
use crate::{
    Item, Store, cancellation_reasons, from_item, key, keys, s, sort_key, to_item,
    transaction_failure, tx_delete, tx_put,
};

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
    /// The configuration as stored.
    pub fn encode(config: &AppConfig) -> Result<String, StoreError> {
        serde_json::to_string(config)
            .map_err(|e| StoreError::Malformed(format!("encoding a release: {e}")))
    }

    pub fn config(&self) -> Result<AppConfig, StoreError> {
        serde_json::from_str(&self.config)
            .map_err(|e| StoreError::Malformed(format!("decoding release {}: {e}", self.revision)))
    }
}

/// The revision a write deletes when `oldest_kept` is the oldest kept
/// after it: the one just below, if there is one.
pub fn pruned_below(oldest_kept: i64) -> Option<i64> {
    (oldest_kept > 1).then_some(oldest_kept - 1)
}

/// The stored shape: the release plus its key.
#[derive(Serialize)]
struct ReleaseItem<'a> {
    pk: String,
    sk: String,
    #[serde(flatten)]
    release: &'a StoredRelease,
}

fn item(history: &str, release: &StoredRelease) -> Result<Item, StoreError> {
    to_item(&ReleaseItem {
        pk: keys::releases(history),
        sk: keys::release_sk(release.revision),
        release,
    })
}

/// What a change writes before its commit, in one transaction.
pub struct RevisionWrite<'a> {
    pub history: &'a str,
    /// The App's revision as the resource holds it (None for a new app),
    /// recorded as confirmed.
    pub current: Option<&'a StoredRelease>,
    /// Those the controller wrote over, recorded as confirmed too.
    pub unrecorded: &'a [StoredRelease],
    /// The revision about to be committed: written unless a confirmed copy
    /// of it is there.
    pub next: &'a StoredRelease,
    /// The oldest revision kept once `next` is written: older unrecorded
    /// ones are not written, and the one just below it is deleted.
    pub oldest_kept: i64,
    /// The app's entry in its environment's list.
    pub entry: &'a AppEntry,
    /// The claims of the app's hostnames, which must all succeed.
    pub claims: &'a [ClaimWrite],
}

/// Why a change's revisions were not written (nothing was).
#[derive(Debug)]
pub enum NotPrepared {
    /// A confirmed copy of the next revision is there: another change
    /// committed that revision first.
    Superseded,
    /// Claims failed their conditions: by position in `claims`, each with
    /// the item it found when DynamoDB returned it.
    Refused(Vec<(usize, Option<HostItem>)>),
    /// A concurrent transaction on the same items won; another try may not.
    Contended,
    Failed(StoreError),
}

impl From<StoreError> for NotPrepared {
    fn from(error: StoreError) -> Self {
        Self::Failed(error)
    }
}

/// Writes a change's revisions, its entry and its claims, all or none.
pub async fn prepare(store: &Store, write: RevisionWrite<'_>) -> Result<(), NotPrepared> {
    let RevisionWrite {
        history,
        current,
        unrecorded,
        next,
        oldest_kept,
        entry,
        claims,
    } = write;
    let put = |release: &StoredRelease| {
        tx_put(
            Put::builder()
                .table_name(store.table())
                .set_item(Some(item(history, release)?)),
        )
    };
    let mut writes = Vec::new();
    // One write per revision (a transaction may not write an item twice),
    // and none a prune would delete or the change itself writes.
    let mut seen = BTreeSet::new();
    let own = |revision: i64| {
        revision == next.revision || current.is_some_and(|c| c.revision == revision)
    };
    for revision in unrecorded
        .iter()
        .filter(|r| r.revision >= oldest_kept && !own(r.revision) && seen.insert(r.revision))
    {
        writes.push(put(revision)?);
    }
    if let Some(current) = current {
        writes.push(put(current)?);
    }
    writes.push(tx_put(
        Put::builder()
            .table_name(store.table())
            .set_item(Some(item(history, next)?))
            .condition_expression("attribute_not_exists(pk) OR confirmed = :false")
            .expression_attribute_values(":false", AttributeValue::Bool(false)),
    )?);
    let next_at = writes.len() - 1;
    if let Some(pruned) = pruned_below(oldest_kept) {
        writes.push(tx_delete(
            Delete::builder()
                .table_name(store.table())
                .set_key(Some(key(
                    keys::releases(history),
                    &keys::release_sk(pruned),
                ))),
        )?);
    }
    writes.push(entry.put(store)?);
    let claims_at = writes.len();
    for claim in claims {
        writes.push(claim.write(store)?);
    }
    let error = match store.transact(writes).await {
        Ok(()) => return Ok(()),
        Err(error) => error,
    };
    let Some(reasons) = cancellation_reasons(&error) else {
        return Err(NotPrepared::Failed(error.into()));
    };
    let failed = |at: usize| {
        reasons
            .get(at)
            .is_some_and(|reason| reason.code() == Some("ConditionalCheckFailed"))
    };
    if failed(next_at) {
        return Err(NotPrepared::Superseded);
    }
    let refused = reasons
        .iter()
        .enumerate()
        .skip(claims_at)
        .filter(|(at, _)| failed(*at))
        .map(|(at, reason)| {
            Ok((
                at - claims_at,
                crate::hostnames::refused_item(reason.item())?,
            ))
        })
        .collect::<Result<Vec<_>, StoreError>>()?;
    if !refused.is_empty() {
        return Err(NotPrepared::Refused(refused));
    }
    match transaction_failure(error) {
        StoreError::Conflict(_) => Err(NotPrepared::Contended),
        other => Err(NotPrepared::Failed(other)),
    }
}

/// One stored revision, if it exists.
pub async fn get(
    store: &Store,
    history: &str,
    revision: i64,
) -> Result<Option<StoredRelease>, StoreError> {
    store
        .get_as(key(keys::releases(history), &keys::release_sk(revision)))
        .await
}

/// At most `limit` revisions below `below`, newest first, read
/// consistently.
pub async fn older(
    store: &Store,
    history: &str,
    below: i64,
    limit: i64,
) -> Result<Vec<StoredRelease>, StoreError> {
    let older = store
        .client()
        .query()
        .table_name(store.table())
        .key_condition_expression("pk = :pk AND sk < :current")
        .expression_attribute_values(":pk", s(keys::releases(history)))
        .expression_attribute_values(":current", s(keys::release_sk(below)))
        .scan_index_forward(false)
        .limit(i32::try_from(limit).unwrap_or(i32::MAX))
        .consistent_read(true)
        .select(Select::AllAttributes)
        .send()
        .await?;
    older
        .items
        .unwrap_or_default()
        .into_iter()
        .map(from_item)
        .collect()
}

/// Everything a release history holds, read consistently: what removing an
/// app's leftovers works through (`berth_api::apps::leftovers`).
pub struct HistoryItems {
    /// The keys of its revisions.
    revisions: Vec<Item>,
    /// Each revision's sort key and configuration (as stored).
    configs: Vec<(String, String)>,
    /// The app's webhook, if the history points to one.
    hook: Option<String>,
}

impl HistoryItems {
    pub async fn read(store: &Store, history: &str) -> Result<Self, StoreError> {
        let items = crate::query_all(
            store
                .client()
                .query()
                .table_name(store.table())
                .key_condition_expression("pk = :pk")
                .expression_attribute_values(":pk", s(keys::releases(history)))
                .projection_expression("pk, sk, #hook, #config")
                .expression_attribute_names("#hook", "hook")
                .expression_attribute_names("#config", "config")
                .consistent_read(true),
        )
        .await?;
        let configs = (items.iter())
            .filter_map(|item| {
                let config = item.get("config")?.as_s().ok()?;
                Some((sort_key(item).to_owned(), config.clone()))
            })
            .collect();
        let hook = (items.iter())
            .find_map(crate::hooks::hook_of_history_item)
            .map(str::to_owned);
        let revisions = (items.iter())
            .filter(|item| sort_key(item) != keys::WEBHOOK_SK)
            .map(key_of)
            .collect();
        Ok(Self {
            revisions,
            configs,
            hook,
        })
    }

    /// Each revision's sort key (to name it in a log) and configuration,
    /// as stored (JSON).
    pub fn configs(&self) -> &[(String, String)] {
        &self.configs
    }

    /// The id of the app's webhook, if the history points to one.
    pub fn hook(&self) -> Option<&str> {
        self.hook.as_deref()
    }

    /// Deletes the revisions (not the pointer to the webhook). Not atomic.
    pub async fn delete_revisions(&self, store: &Store) -> Result<(), StoreError> {
        store.delete_batch(self.revisions.clone()).await
    }
}

/// The primary key of an item read with it.
fn key_of(item: &Item) -> Item {
    let mut key = item.clone();
    key.retain(|name, _| name == keys::PK || name == keys::SK);
    key
}

/// Deletes, in one transaction, the app's entry in `namespace`'s list and,
/// when it has one, its webhook `hook` with the history's pointer to it:
/// the last step of removing an app's leftovers.
pub async fn forget_app(
    store: &Store,
    namespace: &str,
    history: &str,
    hook: Option<&str>,
) -> Result<(), StoreError> {
    let delete = |key: Item| -> Result<TransactWriteItem, StoreError> {
        tx_delete(
            Delete::builder()
                .table_name(store.table())
                .set_key(Some(key)),
        )
    };
    let mut last = vec![delete(key(
        keys::environment_apps(namespace),
        &keys::environment_app_sk(history),
    ))?];
    if let Some(hook_id) = hook {
        last.push(delete(crate::hooks::hook_key(hook_id))?);
        last.push(delete(key(keys::releases(history), keys::WEBHOOK_SK))?);
    }
    store.transact(last).await.map_err(transaction_failure)
}
