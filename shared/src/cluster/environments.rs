//! Environments: `Environment` resources named `{project}-{environment}`,
//! provisioned by the controller as namespaces of the same name. Deleting one
//! schedules its purge: production after the configured grace, others at once.

use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use kube::ResourceExt;
use kube::api::{Api, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use serde::Serialize;

use super::crd::{
    EnvType, Environment, EnvironmentSpec, LABEL_ENVIRONMENT, LABEL_MANAGED_BY, LABEL_ORG,
    LABEL_PROJECT, MANAGER, Quota,
};
use super::ownership::{self, NamespaceOwner};
use super::{is_conflict, projects, timestamp};
use crate::identity::Principal;
use crate::names::ReservedNamespaces;
use crate::{ApiError, Missing, Permission, clock, names};

/// `{project}-{environment}` stays a DNS label of at most 63 characters.
pub const MAX_NAME_LEN: usize = 22;
pub const MAX_PODS: i32 = 10_000;

/// The Environment record of the API (spec part 2).
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq, utoipa::ToSchema)]
pub struct EnvironmentRecord {
    pub name: String,
    pub resource_name: String,
    pub project: String,
    pub env_type: String,
    pub namespace: String,
    pub phase: Option<String>,
    pub ready: bool,
    pub message: Option<String>,
    pub deleting: bool,
    pub deletion_scheduled_at: Option<String>,
    pub created_at: Option<String>,
}

pub fn resource_name(project: &str, environment: &str) -> String {
    format!("{project}-{environment}")
}

/// The phase the controller writes when it begins a purge, conditioned on
/// the version it read; from then on the environment cannot be restored.
pub const PHASE_TERMINATING: &str = "Terminating";

pub fn is_deleting(environment: &Environment) -> bool {
    environment.spec.deletion_scheduled_at.is_some()
        || environment.metadata.deletion_timestamp.is_some()
}

fn record(environment: &Environment) -> EnvironmentRecord {
    let status = environment.status.clone().unwrap_or_default();
    let name = environment.name_any();
    EnvironmentRecord {
        name: environment.spec.name.clone(),
        namespace: status.namespace.clone().unwrap_or_else(|| name.clone()),
        resource_name: name,
        project: environment.spec.project.clone(),
        env_type: environment.spec.env_type.as_str().to_owned(),
        // Not yet seen by the controller: waiting to be provisioned.
        phase: Some(status.phase.unwrap_or_else(|| "Pending".to_owned())),
        ready: status.ready && !is_deleting(environment),
        message: status.message,
        deleting: is_deleting(environment),
        deletion_scheduled_at: environment.spec.deletion_scheduled_at.clone(),
        created_at: environment
            .metadata
            .creation_timestamp
            .as_ref()
            .map(timestamp),
    }
}

/// The namespace of that name, whoever's it is.
pub async fn namespace(client: &kube::Client, name: &str) -> Result<Option<Namespace>, ApiError> {
    Ok(Api::<Namespace>::all(client.clone()).get_opt(name).await?)
}

/// Refuses a write into `environment` unless its namespace (read at the
/// same time) exists and is owned by this very Environment, by uid. Absent,
/// going away, or still an earlier environment's of that name: not ready
/// (the controller is making it; retry). Anyone else's: taken, and Berth
/// writes nothing into it.
pub fn check_namespace(
    environment: &Environment,
    namespace: Option<&Namespace>,
) -> Result<(), ApiError> {
    let name = environment.name_any();
    let short = &environment.spec.name;
    let Some(namespace) = namespace else {
        return Err(ApiError::EnvironmentNotReady(format!(
            "environment {short} is still being provisioned: its namespace {name} does not \
             exist yet; try again in a few seconds"
        )));
    };
    match ownership::namespace_owner(namespace, environment) {
        NamespaceOwner::ThisEnvironment if namespace.metadata.deletion_timestamp.is_some() => {
            Err(ApiError::EnvironmentNotReady(format!(
                "the namespace {name} of environment {short} is being deleted and will be made \
                 again; try again in a few seconds"
            )))
        }
        NamespaceOwner::ThisEnvironment => Ok(()),
        NamespaceOwner::EarlierEnvironment => Err(ApiError::EnvironmentNotReady(format!(
            "the namespace {name} still belongs to an earlier environment of that name, which is \
             being removed; environment {short} gets it once it is gone; try again in a few \
             seconds"
        ))),
        NamespaceOwner::Other => Err(ApiError::NamespaceTaken(format!(
            "the namespace {name} of environment {short} was not created by Berth for this \
             environment, so Berth writes nothing into it; delete the environment and create \
             one with another name"
        ))),
    }
}

/// The organization's environment of that project; anything else is not found.
/// The environment names its organization and project, so it alone decides;
/// only when it is missing is the project looked up, to say which is.
pub async fn get_visible(
    client: &kube::Client,
    org: &str,
    project: &str,
    environment: &str,
) -> Result<Environment, ApiError> {
    match Api::<Environment>::all(client.clone())
        .get_opt(&resource_name(project, environment))
        .await?
    {
        Some(found)
            if found.spec.org == org
                && found.spec.project == project
                && found.spec.name == environment =>
        {
            Ok(found)
        }
        _ => {
            projects::get_visible(client, org, project).await?;
            Err(Missing::environment(project, environment).into())
        }
    }
}

pub async fn list(
    client: &kube::Client,
    org: &str,
    project: &str,
) -> Result<Vec<EnvironmentRecord>, ApiError> {
    projects::get_visible(client, org, project).await?;
    let params =
        ListParams::default().labels(&format!("{LABEL_PROJECT}={project},{LABEL_ORG}={org}"));
    let mut records: Vec<_> = super::list_decoded::<Environment>(client, None, &params)
        .await?
        .iter()
        .filter(|e| e.spec.org == org && e.spec.project == project)
        .map(record)
        .collect();
    records.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(records)
}

pub async fn get(
    client: &kube::Client,
    org: &str,
    project: &str,
    environment: &str,
) -> Result<EnvironmentRecord, ApiError> {
    Ok(record(
        &get_visible(client, org, project, environment).await?,
    ))
}

pub struct NewEnvironment {
    pub name: String,
    pub env_type: String,
    pub quota: Option<Quota>,
}

/// An environment create request that keeps every rule; only [`validate`]
/// makes one.
pub struct ValidEnvironment {
    project: String,
    name: String,
    env_type: EnvType,
    quota: Option<Quota>,
}

/// Checks the request against the rules, including that its namespace
/// `{project}-{environment}` is not reserved for the cluster or Berth.
pub fn validate(
    project: &str,
    new: NewEnvironment,
    reserved: &ReservedNamespaces,
) -> Result<ValidEnvironment, ApiError> {
    names::dns_label("name", &new.name, MAX_NAME_LEN)?;
    names::host_part("name", &new.name)?;
    let namespace = resource_name(project, &new.name);
    if reserved.is_reserved(&namespace) {
        return Err(ApiError::ValidationFailed(format!(
            "name: the namespace {namespace} is reserved for the cluster or Berth; choose another name"
        )));
    }
    let env_type = EnvType::parse(&new.env_type).ok_or_else(|| {
        ApiError::ValidationFailed("env_type: must be standard, production or preview".into())
    })?;
    if let Some(quota) = &new.quota {
        if let Some(cpu) = &quota.cpu {
            names::quantity("quota.cpu", cpu)?;
        }
        if let Some(memory) = &quota.memory {
            names::quantity("quota.memory", memory)?;
        }
        if let Some(pods) = quota.pods
            && !(1..=MAX_PODS).contains(&pods)
        {
            return Err(ApiError::ValidationFailed(format!(
                "quota.pods: must be 1 to {MAX_PODS}"
            )));
        }
        super::isolation::check_quota(quota)?;
    }
    Ok(ValidEnvironment {
        project: project.to_owned(),
        name: new.name,
        env_type,
        quota: new.quota,
    })
}

/// Creates the environment. Its resource and namespace are named
/// `{project}-{environment}` cluster-wide, so project `a` + environment `b-c`
/// and project `a-b` + environment `c` would share `a-b-c`: the second is a
/// conflict that says the cluster name is taken, never a shared namespace.
/// A namespace of that name that no Berth environment made (`cert-manager`
/// for project `cert`, environment `manager`) is `namespace_taken`, and
/// nothing is written; the controller, which never adopts a namespace, is
/// the second line for one made after this look.
pub async fn create(
    client: &kube::Client,
    org: &str,
    new: ValidEnvironment,
) -> Result<EnvironmentRecord, ApiError> {
    let project = new.project.as_str();
    let name = resource_name(project, &new.name);
    let (parent, existing) = tokio::join!(
        projects::get_visible(client, org, project),
        namespace(client, &name)
    );
    let parent = parent?;
    if parent.metadata.deletion_timestamp.is_some() {
        return Err(ApiError::Conflict(format!(
            "project {project} is being deleted"
        )));
    }
    // One of Berth's own (this environment's, another project's of the same
    // cluster name, or an earlier one's going away) is the name conflict
    // below, or waited for by the controller.
    if let Some(existing) = existing?
        && !ownership::is_environment_namespace(&existing)
    {
        return Err(ApiError::NamespaceTaken(format!(
            "the namespace {name} already exists in the cluster and was not created by Berth: an \
             environment's namespace is named {{project}}-{{environment}}; choose another name"
        )));
    }
    let environment = Environment {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            labels: Some(
                [
                    (LABEL_ORG.to_owned(), org.to_owned()),
                    (LABEL_PROJECT.to_owned(), project.to_owned()),
                    (LABEL_ENVIRONMENT.to_owned(), new.name.clone()),
                    (LABEL_MANAGED_BY.to_owned(), MANAGER.to_owned()),
                ]
                .into(),
            ),
            ..ObjectMeta::default()
        },
        spec: EnvironmentSpec {
            project: project.to_owned(),
            name: new.name.clone(),
            org: org.to_owned(),
            env_type: new.env_type,
            quota: new.quota,
            deletion_scheduled_at: None,
        },
        status: None,
    };
    let api = Api::<Environment>::all(client.clone());
    match api.create(&PostParams::default(), &environment).await {
        Ok(created) => Ok(record(&created)),
        Err(error) if is_conflict(&error) => {
            // Ours, or another project's (of any organization) that maps to
            // the same name: say which without telling whose.
            let same = get_visible(client, org, project, &new.name).await.is_ok();
            Err(ApiError::Conflict(if same {
                format!(
                    "an environment named {} already exists in {project}",
                    new.name
                )
            } else {
                format!(
                    "the cluster name {name} is taken: an environment's resource and namespace \
                     are named {{project}}-{{environment}} across the platform; choose another name"
                )
            }))
        }
        Err(error) => Err(error.into()),
    }
}

/// Sets (or with `None` clears) the purge time of the environment as it was
/// read: `None` back if it changed since (read it again), not found if it
/// is gone.
async fn schedule_purge(
    client: &kube::Client,
    found: &Environment,
    at: Option<String>,
) -> Result<Option<Environment>, ApiError> {
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
        Err(error) if super::is_not_found(&error) => {
            Err(Missing::environment(&found.spec.project, &found.spec.name).into())
        }
        Err(error) => Err(error.into()),
    }
}

fn kept_changing() -> ApiError {
    ApiError::Conflict("the environment kept changing; try again".into())
}

/// Schedules the environment's purge. Production needs `env-delete-protected`
/// and waits `production_grace`; other types are purged at once. Deleting an
/// environment that is already being deleted changes nothing.
pub async fn delete(
    client: &kube::Client,
    caller: &Principal,
    project: &str,
    environment: &str,
    production_grace: Duration,
) -> Result<EnvironmentRecord, ApiError> {
    // The patch is conditioned on the version read; the controller writing the
    // status meanwhile is the usual reason to read again.
    for _ in 0..5 {
        let found = get_visible(client, &caller.user.org, project, environment).await?;
        let protected = found.spec.env_type == EnvType::Production;
        let needed = if protected {
            Permission::EnvDeleteProtected
        } else {
            Permission::EnvWrite
        };
        // Beyond the operation's `env-write`: production needs more.
        caller.require(needed)?;
        if is_deleting(&found) {
            return Ok(record(&found));
        }
        let grace = if protected {
            i64::try_from(production_grace.as_secs()).unwrap_or(i64::MAX)
        } else {
            0
        };
        let at = clock::rfc3339(clock::unix_seconds().saturating_add(grace));
        if let Some(patched) = schedule_purge(client, &found, Some(at)).await? {
            return Ok(record(&patched));
        }
    }
    Err(kept_changing())
}

/// Cancels a scheduled purge: the environment, its namespace and all in it
/// stay, and the controller shows it `Ready` again. Restoring one that is
/// not being deleted changes nothing (200, like a repeated delete).
///
/// The purge and a restore race safely: both write on the resourceVersion
/// they read, the controller `Terminating` to begin its purge and a restore
/// the cleared schedule, so exactly one wins. Once `Terminating`, or once the
/// purge time has come, it is too late (409); once purged, the environment
/// is not found.
pub async fn restore(
    client: &kube::Client,
    caller: &Principal,
    project: &str,
    environment: &str,
) -> Result<EnvironmentRecord, ApiError> {
    for _ in 0..5 {
        let found = get_visible(client, &caller.user.org, project, environment).await?;
        if found.metadata.deletion_timestamp.is_some() {
            return Err(ApiError::Conflict(format!(
                "environment {environment} is being removed from the cluster and cannot be \
                 restored"
            )));
        }
        let Some(scheduled) = found.spec.deletion_scheduled_at.as_deref() else {
            return Ok(record(&found));
        };
        let purging =
            found.status.as_ref().and_then(|s| s.phase.as_deref()) == Some(PHASE_TERMINATING);
        let due = clock::parse_rfc3339(scheduled).is_none_or(|at| at <= clock::unix_seconds());
        if purging || due {
            return Err(ApiError::Conflict(format!(
                "the purge of environment {environment} was due at {scheduled} and has begun; \
                 it can no longer be restored"
            )));
        }
        // `None`: the controller wrote meanwhile (perhaps `Terminating`).
        if let Some(patched) = schedule_purge(client, &found, None).await? {
            return Ok(record(&patched));
        }
    }
    Err(kept_changing())
}
