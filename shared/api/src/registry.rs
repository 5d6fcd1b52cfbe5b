//! The registry settings `berth-admin registry set` stores for Berth's token
//! service (item `REGISTRY`/`SETTINGS`); who the registry's credentials are
//! and what each reaches is [`berth_domain::registry`].

use serde::{Deserialize, Serialize};

use crate::ApiError;
use berth_store as store;
use berth_store::Store;

/// A shared credential of before an upgrade, as the token service accepts
/// it until `berth-admin registry set --forget-shared`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SharedCredential {
    pub username: String,
    /// SHA-256 (hex) of the password.
    pub digest: String,
    /// The push credential (push and pull under the prefix); else pull only.
    pub push: bool,
}

/// What the token service needs of the registry: the prefix images go under
/// (for the repositories' names) and the registry's host, which is the
/// token's audience (the registry's `auth.token.service`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegistrySettings {
    pub prefix: String,
    pub server: String,
    #[serde(default)]
    pub shared: Vec<SharedCredential>,
}

impl RegistrySettings {
    /// Stores them, replacing what was there.
    pub async fn store(&self, store: &Store) -> Result<(), ApiError> {
        Ok(store::registry_settings::save(store, self).await?)
    }

    /// The stored settings; None before `berth-admin registry set`.
    pub async fn load(store: &Store) -> Result<Option<Self>, ApiError> {
        Ok(store::registry_settings::load(store).await?)
    }
}
