//! The registry settings `berth-admin registry set` stores for Berth's
//! token service (`REGISTRY` / `SETTINGS`): one item, whose fields are the
//! API's (`berth_api::registry`).

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::StoreError;

use crate::{Store, key, to_item};

const PK: &str = "REGISTRY";
const SK: &str = "SETTINGS";

#[derive(Serialize, Deserialize)]
struct SettingsItem<T> {
    pk: String,
    sk: String,
    #[serde(flatten)]
    settings: T,
}

/// Stores `settings`, replacing what was there.
pub async fn save<T: Serialize>(store: &Store, settings: &T) -> Result<(), StoreError> {
    let item = SettingsItem {
        pk: PK.to_owned(),
        sk: SK.to_owned(),
        settings,
    };
    store.put(to_item(&item)?).await
}

/// The stored settings, if any.
pub async fn load<T: DeserializeOwned>(store: &Store) -> Result<Option<T>, StoreError> {
    let item: Option<SettingsItem<T>> = store.get_as(key(PK.to_owned(), SK)).await?;
    Ok(item.map(|item| item.settings))
}
