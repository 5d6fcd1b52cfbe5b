//! Environments of a project: each an `Environment` resource named
//! `{project}-{environment}`, provisioned by the controller as the namespace
//! of the same name (see [`berth_cluster::environments`]). Deleting one
//! schedules its purge: production after the configured grace, others at once.
//!
//! - [`quota`]: what an environment's quota may ask for, and the storage
//!   every environment is held to.
//! - [`purges`]: what a purged environment's apps leave in the table, and
//!   the sweep that removes it.

pub mod purges;

use std::time::Duration;

use kube::ResourceExt;
use kube::api::ObjectMeta;

use crate::ApiError;
use berth_cluster::apps as cluster_apps;
use berth_cluster::crd::{
    EnvType, Environment, EnvironmentSpec, LABEL_ENVIRONMENT, LABEL_MANAGED_BY, LABEL_ORG,
    LABEL_PROJECT, MANAGER, PHASE_TERMINATING,
};
use berth_cluster::environments::{self as cluster_environments, get_visible, namespace};
use berth_cluster::ownership;
use berth_cluster::{projects as cluster_projects, timestamp};
use berth_domain::name_rules::ReservedNamespaces;
use berth_domain::names::{EnvironmentName, OrgName, ProjectName};
use berth_domain::parts::Quota;
use berth_domain::paths::EnvironmentPath;
use berth_domain::{Permission, clock};
use berth_records::environments::EnvironmentRecord;
use berth_store::Store;
use berth_store::identity::Principal;

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
        ready: status.ready && !environment.is_deleting(),
        message: status.message,
        deleting: environment.is_deleting(),
        deletion_scheduled_at: environment.spec.deletion_scheduled_at.clone(),
        created_at: environment
            .metadata
            .creation_timestamp
            .as_ref()
            .map(timestamp),
        quota: environment.spec.quota.clone(),
    }
}

/// The project's environments the caller reaches (one out of a scoped
/// token's reach is as if it did not exist).
pub async fn list(
    client: &kube::Client,
    caller: &Principal,
    project: &ProjectName,
) -> Result<Vec<EnvironmentRecord>, ApiError> {
    let org = &caller.user.org;
    cluster_projects::get_visible(client, org, project).await?;
    let mut records: Vec<_> = cluster_environments::list(client, org, project)
        .await?
        .iter()
        .filter(|environment| caller.reaches_environment(project.as_str(), &environment.spec.name))
        .map(record)
        .collect();
    records.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(records)
}

pub async fn get(
    client: &kube::Client,
    org: &OrgName,
    path: &EnvironmentPath,
) -> Result<EnvironmentRecord, ApiError> {
    Ok(record(&get_visible(client, org, path).await?))
}

pub struct NewEnvironment {
    pub name: String,
    pub env_type: String,
    pub quota: Option<Quota>,
}

/// An environment create request that keeps every rule; only [`validate`]
/// makes one.
pub struct ValidEnvironment {
    path: EnvironmentPath,
    env_type: EnvType,
    quota: Option<Quota>,
}

/// Checks the request against the rules, including that its namespace
/// `{project}-{environment}` is not reserved for the cluster or Berth.
pub fn validate(
    project: &ProjectName,
    new: NewEnvironment,
    reserved: &ReservedNamespaces,
) -> Result<ValidEnvironment, ApiError> {
    let path = EnvironmentPath {
        project: project.clone(),
        environment: EnvironmentName::parse_new(&new.name).map_err(|e| e.at("name"))?,
    };
    let namespace = path.namespace();
    if reserved.is_reserved(&namespace) {
        return Err(ApiError::ValidationFailed(format!(
            "name: the namespace {namespace} is reserved for the cluster or Berth; choose another name"
        )));
    }
    let env_type = EnvType::parse(&new.env_type).ok_or_else(|| {
        ApiError::ValidationFailed("env_type: must be standard, production or preview".into())
    })?;
    if let Some(quota) = &new.quota {
        berth_cluster::quota::check(quota)?;
    }
    Ok(ValidEnvironment {
        path,
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
    org: &OrgName,
    new: ValidEnvironment,
) -> Result<EnvironmentRecord, ApiError> {
    let path = &new.path;
    let project = &path.project;
    let name = path.namespace();
    let (parent, existing) = tokio::join!(
        cluster_projects::get_visible(client, org, project),
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
                    (LABEL_ORG.to_owned(), org.to_string()),
                    (LABEL_PROJECT.to_owned(), project.to_string()),
                    (LABEL_ENVIRONMENT.to_owned(), path.environment.to_string()),
                    (LABEL_MANAGED_BY.to_owned(), MANAGER.to_owned()),
                ]
                .into(),
            ),
            ..ObjectMeta::default()
        },
        spec: EnvironmentSpec {
            project: project.to_string(),
            name: path.environment.to_string(),
            org: org.to_string(),
            env_type: new.env_type,
            quota: new.quota,
            deletion_scheduled_at: None,
        },
        status: None,
    };
    match cluster_environments::create(client, &environment).await? {
        Some(created) => Ok(record(&created)),
        None => {
            // Ours, or another project's (of any organization) that maps to
            // the same name: say which without telling whose.
            let same = get_visible(client, org, path).await.is_ok();
            Err(ApiError::Conflict(if same {
                format!(
                    "an environment named {} already exists in {project}",
                    path.environment
                )
            } else {
                format!(
                    "the cluster name {name} is taken: an environment's resource and namespace \
                     are named {{project}}-{{environment}} across the platform; choose another name"
                )
            }))
        }
    }
}

fn kept_changing() -> ApiError {
    ApiError::Conflict("the environment kept changing; try again".into())
}

/// Schedules the environment's purge. Production needs `env-delete-protected`
/// and waits `production_grace`; other types are purged at once. Deleting an
/// environment that is already being deleted changes nothing. The deletion
/// is recorded first ([`purges::record`]), so that what its apps keep in
/// the table goes once the purge is done.
pub async fn delete(
    store: &Store,
    client: &kube::Client,
    caller: &Principal,
    path: &EnvironmentPath,
    production_grace: Duration,
) -> Result<EnvironmentRecord, ApiError> {
    // The patch is conditioned on the version read; the controller writing the
    // status meanwhile is the usual reason to read again.
    for _ in 0..5 {
        let found = get_visible(client, &caller.user.org, path).await?;
        let protected = found.spec.env_type == EnvType::Production;
        let needed = if protected {
            Permission::EnvDeleteProtected
        } else {
            Permission::EnvWrite
        };
        // Beyond the operation's `env-write`: production needs more.
        caller.require(needed)?;
        let apps = cluster_apps::in_namespace(client, &found.name_any()).await?;
        purges::record(store, &found, &apps).await?;
        if found.is_deleting() {
            return Ok(record(&found));
        }
        let grace = if protected {
            i64::try_from(production_grace.as_secs()).unwrap_or(i64::MAX)
        } else {
            0
        };
        let at = clock::rfc3339(clock::unix_seconds().saturating_add(grace));
        if let Some(patched) =
            cluster_environments::schedule_purge(client, &found, Some(at)).await?
        {
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
    path: &EnvironmentPath,
) -> Result<EnvironmentRecord, ApiError> {
    let environment = &path.environment;
    for _ in 0..5 {
        let found = get_visible(client, &caller.user.org, path).await?;
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
        if let Some(patched) = cluster_environments::schedule_purge(client, &found, None).await? {
            return Ok(record(&patched));
        }
    }
    Err(kept_changing())
}
