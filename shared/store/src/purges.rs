//! The deletions the API was asked for whose leftovers are still to be
//! removed (`PURGES` / `ENV#{namespace}#{uid}`): what the sweep
//! (`berth_api::environments::purges`) works through.

use aws_sdk_dynamodb::types::AttributeValue;
use serde::{Deserialize, Serialize};

use crate::StoreError;

use crate::app_entries::AppEntry;
use crate::{Store, is_condition_failure, key, keys, to_item};

/// A deletion asked through the API whose purge's leftovers are still to
/// be removed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PurgeRecord {
    pk: String,
    sk: String,
    pub org: String,
    pub project: String,
    pub environment: String,
    /// The environment's cluster name, its namespace's.
    pub namespace: String,
    pub uid: String,
    /// Unix milliseconds of the deletion request.
    pub at: i64,
}

impl PurgeRecord {
    pub fn new(
        org: String,
        project: String,
        environment: String,
        namespace: String,
        uid: String,
        at: i64,
    ) -> Self {
        Self {
            pk: keys::PURGES_PK.to_owned(),
            sk: keys::environment_purge_sk(&namespace, &uid),
            org,
            project,
            environment,
            namespace,
            uid,
            at,
        }
    }
}

/// Writes `record`, and the entries of the environment's apps with it
/// (replacing what has their keys).
pub async fn record(
    store: &Store,
    record: &PurgeRecord,
    entries: &[AppEntry],
) -> Result<(), StoreError> {
    let mut items = entries.iter().map(to_item).collect::<Result<Vec<_>, _>>()?;
    items.push(to_item(record)?);
    store.put_batch(items).await
}

/// Every recorded deletion, read consistently.
pub async fn all(store: &Store) -> Result<Vec<PurgeRecord>, StoreError> {
    store.partition_as(keys::PURGES_PK.to_owned()).await
}

/// Deletes the record, unless a newer deletion request renewed it.
pub async fn forget(store: &Store, record: &PurgeRecord) -> Result<(), StoreError> {
    let outcome = store
        .client()
        .delete_item()
        .table_name(store.table())
        .set_key(Some(key(record.pk.clone(), &record.sk)))
        .condition_expression("#at = :at")
        .expression_attribute_names("#at", "at")
        .expression_attribute_values(":at", AttributeValue::N(record.at.to_string()))
        .send()
        .await;
    match outcome {
        Ok(_) => Ok(()),
        Err(error) if is_condition_failure(&error) => Ok(()),
        Err(error) => Err(error.into()),
    }
}
