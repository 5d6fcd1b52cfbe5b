//! The stored kubeconfig's item: how Berth reaches its cluster. The admin
//! CLI writes it; functions that need the cluster read it. What a kubeconfig
//! must be to be stored is the API's to check (`berth_api::kubeconfig`).

use aws_sdk_dynamodb::types::ReturnValue;
use serde::{Deserialize, Serialize};

use crate::StoreError;

use crate::{Item, Store, key as item_key, keys, to_item};

#[derive(Serialize, Deserialize)]
pub struct StoredKubeconfig {
    pub pk: String,
    pub sk: String,
    /// The kubeconfig YAML. Holds credentials: never logged or printed.
    pub kubeconfig: String,
    pub context: Option<String>,
    pub updated_at: i64,
}

fn key() -> Item {
    item_key(keys::CLUSTER_PK.to_owned(), keys::KUBECONFIG_SK)
}

/// Stores `kubeconfig` (checked by the caller), replacing the one before.
pub async fn put(
    store: &Store,
    kubeconfig: String,
    context: Option<String>,
    updated_at: i64,
) -> Result<StoredKubeconfig, StoreError> {
    let item = StoredKubeconfig {
        pk: keys::CLUSTER_PK.to_owned(),
        sk: keys::KUBECONFIG_SK.to_owned(),
        kubeconfig,
        context,
        updated_at,
    };
    store.put(to_item(&item)?).await?;
    Ok(item)
}

pub async fn load(store: &Store) -> Result<Option<StoredKubeconfig>, StoreError> {
    store.get_as(key()).await
}

/// Removes the stored kubeconfig; true when there was one.
pub async fn clear(store: &Store) -> Result<bool, StoreError> {
    let output = store
        .client()
        .delete_item()
        .table_name(store.table())
        .set_key(Some(key()))
        .return_values(ReturnValue::AllOld)
        .send()
        .await?;
    Ok(output.attributes.is_some_and(|old| !old.is_empty()))
}
