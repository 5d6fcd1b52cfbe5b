//! Environment resources in the cluster, and their namespaces: an
//! Environment is cluster-scoped and named `{project}-{environment}`, as is
//! the namespace the controller provisions for it. Each function here is one
//! call to the cluster; what they mean is [`berth_api::environments`]'.

use k8s_openapi::api::core::v1::Namespace;
use kube::ResourceExt;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};

use super::crd::{Environment, LABEL_ORG, LABEL_PROJECT};
use super::ownership::{self, NamespaceOwner};
use super::{is_conflict, is_not_found, list_decoded, projects};
use crate::ClusterError;
use berth_domain::Missing;
use berth_domain::names::{OrgName, ProjectName};
use berth_domain::paths::EnvironmentPath;

/// The namespace of that name, whoever's it is.
pub async fn namespace(
    client: &kube::Client,
    name: &str,
) -> Result<Option<Namespace>, ClusterError> {
    Ok(Api::<Namespace>::all(client.clone()).get_opt(name).await?)
}

/// The environment of that cluster name (`{project}-{environment}`),
/// whoever's.
pub async fn by_name(
    client: &kube::Client,
    name: &str,
) -> Result<Option<Environment>, ClusterError> {
    Ok(Api::<Environment>::all(client.clone())
        .get_opt(name)
        .await?)
}

/// The organization's environment at `path`; anything else is not found.
/// The environment names its organization and project, so it alone decides;
/// only when it is missing is the project looked up, to say which is.
pub async fn get_visible(
    client: &kube::Client,
    org: &OrgName,
    path: &EnvironmentPath,
) -> Result<Environment, ClusterError> {
    match Api::<Environment>::all(client.clone())
        .get_opt(&path.namespace())
        .await?
    {
        Some(found)
            if found.spec.org == org.as_str()
                && found.spec.project == path.project.as_str()
                && found.spec.name == path.environment.as_str() =>
        {
            Ok(found)
        }
        _ => {
            projects::get_visible(client, org, &path.project).await?;
            Err(path.missing().into())
        }
    }
}

/// The organization's environments of every project (any order).
pub async fn list_of_org(
    client: &kube::Client,
    org: &OrgName,
) -> Result<Vec<Environment>, ClusterError> {
    let environments: Vec<Environment> = list_decoded(client, None, &projects::of_org(org)).await?;
    Ok(environments
        .into_iter()
        .filter(|e| e.spec.org == org.as_str())
        .collect())
}

/// The organization's environments of one project (any order).
pub async fn list(
    client: &kube::Client,
    org: &OrgName,
    project: &ProjectName,
) -> Result<Vec<Environment>, ClusterError> {
    let params =
        ListParams::default().labels(&format!("{LABEL_PROJECT}={project},{LABEL_ORG}={org}"));
    let environments: Vec<Environment> = list_decoded(client, None, &params).await?;
    Ok(environments
        .into_iter()
        .filter(|e| e.spec.org == org.as_str() && e.spec.project == project.as_str())
        .collect())
}

/// Every environment labelled with the project, whoever's (project names
/// are unique across the platform).
pub async fn of_project(
    client: &kube::Client,
    project: &ProjectName,
) -> Result<Vec<Environment>, ClusterError> {
    let params = ListParams::default().labels(&format!("{LABEL_PROJECT}={project}"));
    Ok(Api::<Environment>::all(client.clone())
        .list(&params)
        .await?
        .items)
}

/// Creates the environment; `None` when its resource name is taken.
pub async fn create(
    client: &kube::Client,
    environment: &Environment,
) -> Result<Option<Environment>, ClusterError> {
    match Api::<Environment>::all(client.clone())
        .create(&PostParams::default(), environment)
        .await
    {
        Ok(created) => Ok(Some(created)),
        Err(error) if is_conflict(&error) => Ok(None),
        Err(error) => Err(error.into()),
    }
}

/// Sets (or with `None` clears) the purge time of the environment as it was
/// read: `None` back if it changed since (read it again), not found if it
/// is gone.
pub async fn schedule_purge(
    client: &kube::Client,
    found: &Environment,
    at: Option<String>,
) -> Result<Option<Environment>, ClusterError> {
    let patch = serde_json::json!({
        "metadata": { "resourceVersion": found.resource_version() },
        "spec": { "deletionScheduledAt": at },
    });
    match Api::<Environment>::all(client.clone())
        .patch(
            &found.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
    {
        Ok(patched) => Ok(Some(patched)),
        Err(error) if is_conflict(&error) => Ok(None),
        Err(error) if is_not_found(&error) => {
            Err(Missing::environment(&found.spec.project, &found.spec.name).into())
        }
        Err(error) => Err(error.into()),
    }
}

/// Refuses a write into `environment` unless its namespace (read at the
/// same time) exists and is owned by this very Environment, by uid. Absent,
/// going away, or still an earlier environment's of that name: not ready
/// (the controller is making it; retry). Anyone else's: taken, and Berth
/// writes nothing into it.
pub fn check_namespace(
    environment: &Environment,
    namespace: Option<&Namespace>,
) -> Result<(), ClusterError> {
    let name = environment.name_any();
    let short = &environment.spec.name;
    let Some(namespace) = namespace else {
        return Err(ClusterError::EnvironmentNotReady(format!(
            "environment {short} is still being provisioned: its namespace {name} does not \
             exist yet; try again in a few seconds"
        )));
    };
    match ownership::namespace_owner(namespace, environment) {
        NamespaceOwner::ThisEnvironment if namespace.metadata.deletion_timestamp.is_some() => {
            Err(ClusterError::EnvironmentNotReady(format!(
                "the namespace {name} of environment {short} is being deleted and will be made \
                 again; try again in a few seconds"
            )))
        }
        NamespaceOwner::ThisEnvironment => Ok(()),
        NamespaceOwner::EarlierEnvironment => Err(ClusterError::EnvironmentNotReady(format!(
            "the namespace {name} still belongs to an earlier environment of that name, which is \
             being removed; environment {short} gets it once it is gone; try again in a few \
             seconds"
        ))),
        NamespaceOwner::Other => Err(ClusterError::NamespaceTaken(format!(
            "the namespace {name} of environment {short} was not created by Berth for this \
             environment, so Berth writes nothing into it; delete the environment and create \
             one with another name"
        ))),
    }
}

/// The environment a change goes into: visible, not being deleted, and its
/// namespace there and owned by it (see [`check_namespace`]). The one gate
/// of every write into an environment (apps, secrets, templates); the
/// namespace is read at the same time as the environment.
pub async fn writable(
    client: &kube::Client,
    org: &OrgName,
    path: &EnvironmentPath,
) -> Result<Environment, ClusterError> {
    let namespace_name = path.namespace();
    let (found, namespace) = tokio::join!(
        get_visible(client, org, path),
        namespace(client, &namespace_name)
    );
    let found = found?;
    if found.is_deleting() {
        return Err(ClusterError::EnvironmentDeleting);
    }
    check_namespace(&found, namespace?.as_ref())?;
    if !is_provisioned(&found) {
        return Err(ClusterError::EnvironmentNotReady(format!(
            "environment {} is still being provisioned; try again in a few seconds",
            found.spec.name
        )));
    }
    Ok(found)
}

/// Whether the controller has provisioned the environment's namespace at
/// least once (it was `Ready`): with it the RoleBindings through which
/// Berth's API reads and writes the environment's secrets, which it has
/// nowhere else.
pub fn is_provisioned(environment: &Environment) -> bool {
    environment
        .status
        .as_ref()
        .is_some_and(|status| status.namespace.is_some())
}
