//! The registry builds push to and apps pull from, as the operator set it
//! with `berth-admin registry set`: the ConfigMap [`CONFIG_MAP`] in
//! [`SYSTEM_NAMESPACE`] (keys `prefix` and `server`), the push credential
//! [`PUSH_SECRET`] in the builds namespace only, and the pull credential
//! [`PULL_SECRET`] in `berth-system`, which the controller copies into each
//! environment's namespace (and names in the `imagePullSecrets` of pods whose
//! image is under the prefix, see `render::RenderSettings::registry_prefix`).

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

use berth_shared::cluster::crd::{LABEL_MANAGED_BY, MANAGER};

use crate::{Error, FIELD_MANAGER};

/// Where Berth's own configuration lives.
pub const SYSTEM_NAMESPACE: &str = "berth-system";
pub const CONFIG_MAP: &str = "berth-registry";
pub const PUSH_SECRET: &str = "berth-registry-push";
pub use crate::render::PULL_SECRET;
/// The type of both credentials: a Docker `config.json`.
pub const DOCKER_CONFIG_TYPE: &str = "kubernetes.io/dockerconfigjson";
pub const DOCKER_CONFIG_KEY: &str = ".dockerconfigjson";

/// What a build needs when the registry is not configured.
pub const NOT_CONFIGURED: &str = "no image registry is configured for builds: an operator must run `berth-admin registry set`";

/// The registry's settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Registry {
    /// `registry.example.com/berth`: no scheme, no trailing slash.
    pub prefix: String,
    /// The host the credentials are for.
    pub server: String,
}

impl Registry {
    /// The ConfigMap's settings; None when a key is missing or malformed
    /// (the controller then builds nothing rather than push somewhere odd).
    pub fn parse(config: &ConfigMap) -> Option<Self> {
        let data = config.data.as_ref()?;
        let prefix = data.get("prefix")?.trim();
        let server = data.get("server")?.trim();
        let well_formed = |value: &str| {
            !value.is_empty()
                && !value.contains("://")
                && !value.ends_with('/')
                && value
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._-/:".contains(c))
        };
        (well_formed(prefix) && well_formed(server) && !server.contains('/')).then(|| Self {
            prefix: prefix.to_owned(),
            server: server.to_owned(),
        })
    }

    /// Reads the ConfigMap: None when it is missing or malformed.
    pub async fn read(client: &kube::Client) -> Result<Option<Self>, Error> {
        let config = Api::<ConfigMap>::namespaced(client.clone(), SYSTEM_NAMESPACE)
            .get_opt(CONFIG_MAP)
            .await?;
        Ok(config.as_ref().and_then(Self::parse))
    }

    /// The repository of an app's images: `{prefix}/{org}/{project}/{app}`.
    pub fn repository(&self, org: &str, project: &str, app: &str) -> String {
        format!("{}/{org}/{project}/{app}", self.prefix)
    }
}

/// Keeps `namespace`'s copy of the pull credential the same as Berth's in
/// `berth-system`. Without one there, nothing is copied (a copy made
/// before stays until the namespace goes: apps already pulling keep
/// pulling).
pub async fn copy_pull_secret(client: &kube::Client, namespace: &str) -> Result<(), Error> {
    let source = Api::<Secret>::namespaced(client.clone(), SYSTEM_NAMESPACE)
        .get_opt(PULL_SECRET)
        .await?;
    let Some(config) = source
        .and_then(|secret| secret.data)
        .and_then(|mut data| data.remove(DOCKER_CONFIG_KEY))
    else {
        return Ok(());
    };
    let copy = json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": PULL_SECRET,
            "namespace": namespace,
            "labels": { LABEL_MANAGED_BY: MANAGER },
        },
        "type": DOCKER_CONFIG_TYPE,
        "data": { DOCKER_CONFIG_KEY: config },
    });
    Api::<Secret>::namespaced(client.clone(), namespace)
        .patch(
            PULL_SECRET,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&copy),
        )
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn config(prefix: &str, server: &str) -> ConfigMap {
        ConfigMap {
            data: Some(BTreeMap::from([
                ("prefix".to_owned(), prefix.to_owned()),
                ("server".to_owned(), server.to_owned()),
            ])),
            ..Default::default()
        }
    }

    #[test]
    fn the_settings_are_taken_only_when_well_formed() {
        let registry = Registry::parse(&config("registry.example.com/berth", "registry.example.com"))
            .expect("well formed");
        assert_eq!(
            registry.repository("acme", "shop", "web"),
            "registry.example.com/berth/acme/shop/web"
        );
        for (prefix, server) in [
            ("https://registry.example.com/berth", "registry.example.com"),
            ("registry.example.com/berth/", "registry.example.com"),
            ("", "registry.example.com"),
            ("registry.example.com/berth", "registry.example.com/x"),
            ("registry.example.com/be rth", "registry.example.com"),
        ] {
            assert_eq!(Registry::parse(&config(prefix, server)), None, "{prefix}");
        }
        assert_eq!(Registry::parse(&ConfigMap::default()), None);
    }
}
