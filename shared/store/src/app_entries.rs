//! Each app's entry in its environment's list (`ENVAPPS#{namespace}` /
//! `APP#{history}`): how what an app keeps in the table is found once
//! nothing in the cluster names the app any more (its environment purged).
//! Every write of the app's configuration puts it, in the transaction that
//! writes its revisions (`berth_api::apps::leftovers`).

use aws_sdk_dynamodb::types::{Put, TransactWriteItem};
use serde::{Deserialize, Serialize};

use crate::StoreError;

use crate::{Store, keys, to_item, tx_put};

/// An app's entry in its environment's list.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AppEntry {
    pk: String,
    sk: String,
    pub org: String,
    pub project: String,
    pub environment: String,
    pub app: String,
    pub history: String,
    /// Unix milliseconds of the last write that put it: a younger write may
    /// still be creating or replacing its App.
    pub at: i64,
}

/// Where an app is, for its entry.
pub struct Place<'a> {
    pub namespace: &'a str,
    pub org: String,
    pub project: String,
    pub environment: String,
    pub app: String,
}

impl AppEntry {
    /// The entry of the app of release history `history`, written at `at`.
    pub fn new(place: Place<'_>, history: String, at: i64) -> Self {
        Self {
            pk: keys::environment_apps(place.namespace),
            sk: keys::environment_app_sk(&history),
            org: place.org,
            project: place.project,
            environment: place.environment,
            app: place.app,
            history,
            at,
        }
    }

    /// Its put, for the transaction of the app's write.
    pub(crate) fn put(&self, store: &Store) -> Result<TransactWriteItem, StoreError> {
        tx_put(
            Put::builder()
                .table_name(store.table())
                .set_item(Some(to_item(self)?)),
        )
    }
}

/// The entries of every app an environment's namespace has held (and whose
/// leftovers are still there), read consistently.
pub async fn in_environment(store: &Store, namespace: &str) -> Result<Vec<AppEntry>, StoreError> {
    store.partition_as(keys::environment_apps(namespace)).await
}
