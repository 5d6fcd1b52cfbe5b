//! Installs Berth's CRDs into a cluster (`berth-admin cluster install`).

use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::{conditions, wait::await_condition};

use super::crd;
use crate::ApiError;

/// Applies the CRDs (server-side apply, so re-running updates them) and waits
/// until the API server serves them.
pub async fn install_crds(client: &kube::Client) -> Result<Vec<String>, ApiError> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let params = PatchParams::apply(crd::MANAGER).force();
    let mut names = Vec::new();
    for definition in crd::definitions() {
        let name = definition.metadata.name.clone().unwrap_or_default();
        api.patch(&name, &params, &Patch::Apply(&definition))
            .await?;
        names.push(name);
    }
    for name in &names {
        let established = await_condition(api.clone(), name, conditions::is_crd_established());
        match tokio::time::timeout(Duration::from_secs(30), established).await {
            Ok(Ok(_)) => {}
            Ok(Err(error)) => return Err(ApiError::ClusterUnavailable(error.to_string())),
            Err(_) => {
                return Err(ApiError::ClusterUnavailable(format!(
                    "CRD {name} was not established within 30 s"
                )));
            }
        }
    }
    Ok(names)
}
