//! Kubernetes Secrets in an environment's namespace: each function here is
//! one call to the cluster, and what they mean is [`berth_api::secrets`]'. A
//! Secret is Berth's when it carries
//! `app.kubernetes.io/managed-by: berth` and the organization, project and
//! environment of the namespace it is in; Berth changes no other Secret.
//!
//! Nothing here logs or formats a value: errors name secrets and keys only.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::ResourceExt;
use kube::api::Preconditions;
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, PostParams};

use super::crd::{LABEL_ENVIRONMENT, LABEL_MANAGED_BY, LABEL_ORG, LABEL_PROJECT, MANAGER};
use super::{is_conflict, is_not_found};
use crate::ClusterError;
use berth_domain::Missing;
use berth_domain::names::OrgName;
use berth_domain::paths::{EnvironmentPath, SecretPath};

/// The only type Berth creates: arbitrary keys and values.
pub const OPAQUE: &str = "Opaque";

fn api(client: &kube::Client, namespace: &str) -> Api<Secret> {
    Api::namespaced(client.clone(), namespace)
}

/// Berth's labels for a secret of that organization and environment.
pub fn labels(org: &OrgName, environment: &EnvironmentPath) -> BTreeMap<String, String> {
    BTreeMap::from([
        (LABEL_ORG.to_owned(), org.to_string()),
        (LABEL_PROJECT.to_owned(), environment.project.to_string()),
        (
            LABEL_ENVIRONMENT.to_owned(),
            environment.environment.to_string(),
        ),
        (LABEL_MANAGED_BY.to_owned(), MANAGER.to_owned()),
    ])
}

/// Whether Berth made this secret for that organization's environment.
pub fn is_managed(secret: &Secret, org: &OrgName, environment: &EnvironmentPath) -> bool {
    let found = secret.labels();
    labels(org, environment)
        .iter()
        .all(|(key, value)| found.get(key) == Some(value))
}

/// The secret of that name in the environment's namespace, whoever made it.
pub async fn get(client: &kube::Client, path: &SecretPath) -> Result<Option<Secret>, ClusterError> {
    match api(client, &path.namespace())
        .get_opt(path.secret.as_str())
        .await
    {
        Ok(found) => Ok(found),
        // The namespace itself may be gone (a purged environment).
        Err(error) if is_not_found(&error) => Ok(None),
        Err(error) => Err(error.into()),
    }
}

/// Every secret of the namespace (Berth's or not), for checking references.
pub async fn list_all(client: &kube::Client, namespace: &str) -> Result<Vec<Secret>, ClusterError> {
    match api(client, namespace).list(&ListParams::default()).await {
        Ok(list) => Ok(list.items),
        Err(error) if is_not_found(&error) => Ok(Vec::new()),
        Err(error) => Err(error.into()),
    }
}

/// The organization's Berth-managed secrets of an environment (whose
/// visibility the caller has checked), by name.
pub async fn list_managed(
    client: &kube::Client,
    org: &OrgName,
    environment: &EnvironmentPath,
) -> Result<Vec<Secret>, ClusterError> {
    let namespace = environment.namespace();
    let params =
        ListParams::default().labels(&format!("{LABEL_MANAGED_BY}={MANAGER},{LABEL_ORG}={org}"));
    let mut secrets = match api(client, &namespace).list(&params).await {
        Ok(list) => list.items,
        Err(error) if is_not_found(&error) => Vec::new(),
        Err(error) => return Err(error.into()),
    };
    secrets.retain(|secret| is_managed(secret, org, environment));
    secrets.sort_by_key(ResourceExt::name_any);
    Ok(secrets)
}

fn data_of(values: BTreeMap<String, String>) -> BTreeMap<String, ByteString> {
    values
        .into_iter()
        .map(|(key, value)| (key, ByteString(value.into_bytes())))
        .collect()
}

/// Creates a Berth-managed Opaque secret.
pub async fn create(
    client: &kube::Client,
    org: &OrgName,
    path: &SecretPath,
    values: BTreeMap<String, String>,
) -> Result<Secret, ClusterError> {
    try_create(client, org, path, values).await?.ok_or_else(|| {
        ClusterError::Conflict(format!(
            "the secret {} was created meanwhile; try again",
            path.secret
        ))
    })
}

/// Creates a Berth-managed Opaque secret; `None` if one of that name was
/// created meanwhile.
pub async fn try_create(
    client: &kube::Client,
    org: &OrgName,
    path: &SecretPath,
    values: BTreeMap<String, String>,
) -> Result<Option<Secret>, ClusterError> {
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(path.secret.to_string()),
            namespace: Some(path.namespace()),
            labels: Some(labels(org, &path.environment_path())),
            ..ObjectMeta::default()
        },
        type_: Some(OPAQUE.to_owned()),
        data: Some(data_of(values)),
        ..Secret::default()
    };
    match api(client, &path.namespace())
        .create(&PostParams::default(), &secret)
        .await
    {
        Ok(created) => Ok(Some(created)),
        Err(error) if is_conflict(&error) => Ok(None),
        // The controller has not made the namespace yet.
        Err(error) if is_not_found(&error) => Err(ClusterError::Conflict(
            "the environment is still being provisioned; try again in a moment".into(),
        )),
        Err(error) => Err(error.into()),
    }
}

/// Replaces the whole data of the secret that was read, conditioned on its
/// `resourceVersion`: `None` if it changed or went meanwhile (this write
/// then changed nothing; read it again).
pub async fn replace(
    client: &kube::Client,
    current: &Secret,
    values: BTreeMap<String, String>,
) -> Result<Option<Secret>, ClusterError> {
    let mut next = Secret {
        metadata: current.metadata.clone(),
        type_: Some(OPAQUE.to_owned()),
        data: Some(data_of(values)),
        ..Secret::default()
    };
    // Whatever else was there is replaced too: the secret is one whole.
    next.metadata.managed_fields = None;
    let name = current.name_any();
    match api(client, &current.namespace().unwrap_or_default())
        .replace(&name, &PostParams::default(), &next)
        .await
    {
        Ok(replaced) => Ok(Some(replaced)),
        Err(error) if is_conflict(&error) || is_not_found(&error) => Ok(None),
        Err(error) => Err(error.into()),
    }
}

fn changed_meanwhile(name: &str) -> ClusterError {
    ClusterError::Conflict(format!(
        "the secret {name} was changed or deleted meanwhile; read it again and retry"
    ))
}

/// Deletes the secret that was read (uid and resourceVersion preconditions,
/// so never one that replaced it meanwhile).
pub async fn delete(client: &kube::Client, current: &Secret) -> Result<(), ClusterError> {
    let name = current.name_any();
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid: current.uid(),
            resource_version: current.resource_version(),
        }),
        ..DeleteParams::default()
    };
    match api(client, &current.namespace().unwrap_or_default())
        .delete(&name, &params)
        .await
    {
        Ok(_) => Ok(()),
        Err(error) if is_not_found(&error) => {
            // Only Berth's own secrets are deleted, and they carry their path.
            let labels = current.labels();
            let label = |key: &str| labels.get(key).cloned().unwrap_or_default();
            Err(ClusterError::Missing(Missing::Secret {
                project: label(LABEL_PROJECT),
                environment: label(LABEL_ENVIRONMENT),
                secret: name,
            }))
        }
        Err(error) if is_conflict(&error) => Err(changed_meanwhile(&name)),
        Err(error) => Err(error.into()),
    }
}
