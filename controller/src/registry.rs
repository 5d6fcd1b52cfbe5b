//! The registry builds push to and apps pull from, as the operator set it
//! with `berth-admin registry set`: the ConfigMap [`CONFIG_MAP`] in
//! [`SYSTEM_NAMESPACE`] (keys `prefix` and `server`), the push credential
//! [`PUSH_SECRET`] in the builds namespace only, and the pull credential
//! [`PULL_SECRET`] in `berth-system`, which the controller copies into each
//! environment's namespace (and names in the `imagePullSecrets` of pods whose
//! image is under the prefix, see `render::RenderSettings::registry_prefix`);
//! a pull-only credential's copy in the builds namespace is what builds pull
//! bases with ([`build_credentials`]).

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

use berth_shared::cluster::crd::{LABEL_MANAGED_BY, MANAGER};
pub use berth_shared::cluster::registry::{
    CONFIG_MAP, DOCKER_CONFIG_KEY, DOCKER_CONFIG_TYPE, PULL_SECRET, PUSH_SECRET, Registry,
    SYSTEM_NAMESPACE,
};

use crate::{Error, FIELD_MANAGER};

/// The registry credentials of one build's Job: the one place that says
/// which. The `push` step alone mounts `push_secret`; the steps that pull
/// bases (`run-image`, `dockerfile`) mount `pull_secret`, a pull-only
/// credential, when there is one (the Job mounts it as optional: an
/// operator who gave none has builds pull anonymously).
///
/// Today both are the installation's own, the same for every build; issue
/// 28 replaces them with a push credential per build, valid for the
/// build's own repository, and a pull credential per organization.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildCredentials {
    pub push_secret: String,
    pub pull_secret: Option<String>,
}

/// The credentials `_build` runs with (see [`BuildCredentials`]).
pub fn build_credentials(_build: &berth_shared::cluster::crd::Build) -> BuildCredentials {
    BuildCredentials {
        push_secret: PUSH_SECRET.to_owned(),
        pull_secret: Some(PULL_SECRET.to_owned()),
    }
}

/// What a build says when the registry is not configured.
pub const NOT_CONFIGURED: &str =
    "no image registry is configured for builds: an operator must run `berth-admin registry set`";

/// Reads the registry's ConfigMap: None when it is missing or malformed.
pub async fn read(client: &kube::Client) -> Result<Option<Registry>, Error> {
    let config = Api::<ConfigMap>::namespaced(client.clone(), SYSTEM_NAMESPACE)
        .get_opt(CONFIG_MAP)
        .await?;
    Ok(config.as_ref().and_then(Registry::of))
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
