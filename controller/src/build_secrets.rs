//! The Secrets a build owns in the builds namespace: its copy of the git
//! credential and, with a scoped registry, its registry credentials. One
//! way to write them, which reads no Secret there (the controller reads
//! none in berth-builds, where the registry's shared push credential may
//! be) and never writes over a Secret the Build does not own.

use k8s_openapi::api::core::v1::Secret;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams, PostParams};

use berth_cluster::crd::{BUILDS_NAMESPACE, Build};
use berth_cluster::{is_conflict, is_not_found};

use crate::error::Error;

/// Writes `secret` (named, owned by `build` as its controller) into the
/// builds namespace: made, or, when its name is taken, written over only if
/// its controller is this Build (a copy from an earlier round whose status
/// write was lost), the JSON patch's `test` deciding on the apiserver in
/// the same write. `Ok(uid)`: the Secret's. `Err(why)`: the build cannot
/// run, in words that name the Secret and `what` it is (never its value):
/// a Secret of that name the Build does not own, which is never used.
pub async fn write(
    client: &kube::Client,
    build: &Build,
    secret: &Secret,
    what: &str,
) -> Result<Result<Option<String>, String>, Error> {
    let name = secret.name_any();
    let secrets: Api<Secret> = Api::namespaced(client.clone(), BUILDS_NAMESPACE);
    match secrets.create(&PostParams::default(), secret).await {
        Ok(made) => return Ok(Ok(made.uid())),
        Err(error) if is_conflict(&error) => {}
        Err(error) => return Err(error.into()),
    }
    let build_uid = build.uid().unwrap_or_default();
    let refresh: json_patch::Patch = serde_json::from_value(serde_json::json!([
        { "op": "test", "path": "/metadata/ownerReferences/0/uid", "value": build_uid },
        { "op": "test", "path": "/metadata/ownerReferences/0/controller", "value": true },
        { "op": "replace", "path": "/data", "value": secret.data },
    ]))?;
    match secrets
        .patch(&name, &PatchParams::default(), &Patch::<()>::Json(refresh))
        .await
    {
        Ok(refreshed) => Ok(Ok(refreshed.uid())),
        Err(error) if is_not_found(&error) => Ok(Err(format!(
            "{what} was removed while the build was starting"
        ))),
        // A `test` that failed: the apiserver's 422.
        Err(kube::Error::Api(response)) if response.code == 422 => Ok(Err(format!(
            "a Secret {name} that this build did not make is in the way of {what}: Berth uses \
             no credential it did not make itself"
        ))),
        Err(error) => Err(error.into()),
    }
}
