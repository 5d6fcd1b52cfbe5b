//! Build resources in [`BUILDS_NAMESPACE`]: the API creates, lists and reads
//! them, asks for their cancellation (`BuildSpec::cancel`) and deletes the
//! oldest finished; the controller runs them and writes their status. An app's builds are those labelled with its uid
//! ([`LABEL_APP_UID`]), so a build never serves another App of the same
//! name; who may see them is decided by the App they were read for.

use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::api::{Api, ListParams, PostParams};

use super::crd::{BUILDS_NAMESPACE, Build, LABEL_APP_UID, LABEL_BUILD};
use super::{is_conflict, is_not_found};
use crate::ClusterError;

fn api(client: &kube::Client) -> Api<Build> {
    Api::namespaced(client.clone(), BUILDS_NAMESPACE)
}

fn builds_namespace_missing() -> ClusterError {
    ClusterError::Misconfigured {
        detail: format!(
            "the namespace {BUILDS_NAMESPACE} where builds run is not there: apply \
             infra/k8s (`kubectl apply -k infra/k8s`, docs/deploy.md; `berth-admin cluster \
             install` installs only the CRDs)"
        ),
        cause: format!("namespace {BUILDS_NAMESPACE} not found"),
    }
}

/// The builds of the App with that uid, in no particular order.
pub async fn of_app(client: &kube::Client, app_uid: &str) -> Result<Vec<Build>, ClusterError> {
    let params = ListParams::default().labels(&format!("{LABEL_APP_UID}={app_uid}"));
    match super::list_decoded(client, Some(BUILDS_NAMESPACE), &params).await {
        Ok(builds) => Ok(builds),
        Err(error) if is_not_found(&error) => Ok(Vec::new()),
        Err(error) => Err(error.into()),
    }
}

/// The Build of that name, if it is there.
pub async fn get(client: &kube::Client, name: &str) -> Result<Option<Build>, ClusterError> {
    match api(client).get_opt(name).await {
        Ok(found) => Ok(found),
        Err(error) if is_not_found(&error) => Ok(None),
        Err(error) => Err(error.into()),
    }
}

/// What creating a Build came to.
pub enum Created {
    Made(Box<Build>),
    /// Its name was taken meanwhile (another request made that number).
    NameTaken,
}

pub async fn create(client: &kube::Client, build: &Build) -> Result<Created, ClusterError> {
    match api(client).create(&PostParams::default(), build).await {
        Ok(made) => Ok(Created::Made(Box::new(made))),
        Err(error) if is_conflict(&error) => Ok(Created::NameTaken),
        Err(error) if is_not_found(&error) => Err(builds_namespace_missing()),
        Err(error) => Err(error.into()),
    }
}

/// Replaces the Build (its spec: the status is the controller's),
/// conditioned on the version read; `None` when it changed or went
/// meanwhile.
pub async fn replace(client: &kube::Client, build: &Build) -> Result<Option<Build>, ClusterError> {
    match api(client)
        .replace(&build.name_any(), &PostParams::default(), build)
        .await
    {
        Ok(written) => Ok(Some(written)),
        Err(error) if is_conflict(&error) || is_not_found(&error) => Ok(None),
        Err(error) => Err(error.into()),
    }
}

/// Deletes that very Build (uid precondition): one gone or made again
/// meanwhile is left alone. Its Job, pod and credential copy follow through
/// their owner references.
pub async fn delete(client: &kube::Client, build: &Build) -> Result<(), ClusterError> {
    match api(client)
        .delete(&build.name_any(), &super::delete_only(build.uid()))
        .await
    {
        Ok(_) => Ok(()),
        Err(error) if is_not_found(&error) || is_conflict(&error) => Ok(()),
        Err(error) => Err(error.into()),
    }
}

/// The pods of a build (its Job's, labelled with the app's uid and the
/// build's number), newest first.
pub async fn pods(
    client: &kube::Client,
    app_uid: &str,
    number: i64,
) -> Result<Vec<Pod>, ClusterError> {
    let selector = format!("{LABEL_APP_UID}={app_uid},{LABEL_BUILD}={number}");
    super::pods_newest_first(client, BUILDS_NAMESPACE, &selector).await
}
