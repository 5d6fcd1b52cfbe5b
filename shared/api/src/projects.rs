//! Projects: groups of environments owned by one organization, each a
//! `Project` resource (see [`berth_cluster::projects`]). Names are unique
//! across the platform; another organization's project is not found.

use std::collections::HashMap;

use kube::ResourceExt;
use kube::api::ObjectMeta;

use crate::ApiError;
use crate::error::EnvironmentLeft;
use berth_cluster::crd::{Environment, LABEL_MANAGED_BY, LABEL_ORG, MANAGER, Project, ProjectSpec};
use berth_cluster::{
    environments as cluster_environments, projects as cluster_projects, timestamp,
};
use berth_domain::name_rules;
use berth_domain::name_rules::ReservedNamespaces;
use berth_domain::names::{OrgName, ProjectName};
use berth_records::projects::ProjectRecord;
use berth_store::identity::Principal;

pub const MAX_DISPLAY_NAME_LEN: usize = 100;
pub const MAX_DESCRIPTION_LEN: usize = 1000;

fn record(project: &Project, environments: i32) -> ProjectRecord {
    ProjectRecord {
        name: project.name_any(),
        uid: project.uid(),
        display_name: project.spec.display_name.clone(),
        description: project.spec.description.clone(),
        org: Some(project.spec.org.clone()),
        environments,
        ready: project.status.as_ref().is_some_and(|s| s.ready)
            && project.metadata.deletion_timestamp.is_none(),
        deleting: project.metadata.deletion_timestamp.is_some(),
        created_at: project.metadata.creation_timestamp.as_ref().map(timestamp),
    }
}

/// The organization's projects, by name, each with its number of
/// environments the caller reaches (one out of a scoped token's reach is
/// as if it did not exist).
pub async fn list(
    client: &kube::Client,
    caller: &Principal,
) -> Result<Vec<ProjectRecord>, ApiError> {
    let org = &caller.user.org;
    let projects = cluster_projects::list(client, org).await?;
    let environments = cluster_environments::list_of_org(client, org).await?;
    let mut counts: HashMap<&str, i32> = HashMap::new();
    for environment in reached(caller, &environments) {
        *counts.entry(environment.spec.project.as_str()).or_default() += 1;
    }
    let mut records: Vec<ProjectRecord> = projects
        .iter()
        .map(|p| record(p, counts.get(p.name_any().as_str()).copied().unwrap_or(0)))
        .collect();
    records.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(records)
}

/// A project of the organization as grants and tokens name it: its uid,
/// and when it was made (Unix seconds).
#[derive(Debug, Clone)]
pub struct ProjectIdentity {
    pub name: ProjectName,
    pub uid: String,
    pub created: i64,
}

impl ProjectIdentity {
    pub fn granted(&self) -> berth_store::identity::project_roles::GrantedProject<'_> {
        berth_store::identity::project_roles::GrantedProject {
            name: &self.name,
            uid: &self.uid,
        }
    }
}

/// The project's identity; another organization's is not found.
pub async fn identify(
    client: &kube::Client,
    org: &OrgName,
    name: &ProjectName,
) -> Result<ProjectIdentity, ApiError> {
    let project = cluster_projects::get_visible(client, org, name).await?;
    Ok(ProjectIdentity {
        name: name.clone(),
        uid: project
            .uid()
            .ok_or_else(|| ApiError::Internal(format!("project {name} has no uid")))?,
        created: (project.metadata.creation_timestamp.as_ref()).map_or(0, |at| at.0.as_second()),
    })
}

pub async fn get(
    client: &kube::Client,
    caller: &Principal,
    name: &ProjectName,
) -> Result<ProjectRecord, ApiError> {
    let (project, environments) = with_environments(client, &caller.user.org, name).await?;
    let count = reached(caller, &environments).count();
    Ok(record(&project, i32::try_from(count).unwrap_or(i32::MAX)))
}

/// The environments the caller reaches.
fn reached<'a>(
    caller: &'a Principal,
    environments: &'a [Environment],
) -> impl Iterator<Item = &'a Environment> {
    environments.iter().filter(|environment| {
        caller.reaches_environment(&environment.spec.project, &environment.spec.name)
    })
}

/// The organization's project of that name and its environments (two reads).
async fn with_environments(
    client: &kube::Client,
    org: &OrgName,
    name: &ProjectName,
) -> Result<(Project, Vec<Environment>), ApiError> {
    let project = cluster_projects::get_visible(client, org, name).await?;
    let environments = cluster_environments::of_project(client, name).await?;
    Ok((project, environments))
}

pub struct NewProject {
    pub name: String,
    pub display_name: String,
    pub description: Option<String>,
}

/// A project create request that keeps every rule; only [`validate`] makes one.
pub struct ValidProject {
    name: ProjectName,
    display_name: String,
    description: Option<String>,
}

impl ValidProject {
    pub fn name(&self) -> &ProjectName {
        &self.name
    }
}

/// Checks the request's names and sizes. A project whose every environment
/// would get a reserved namespace (`kube`, `berth-…`, see
/// [`ReservedNamespaces`]) is refused here, before anything is made.
pub fn validate(new: NewProject, reserved: &ReservedNamespaces) -> Result<ValidProject, ApiError> {
    let name = ProjectName::parse_new(&new.name).map_err(|e| e.at("name"))?;
    if reserved.reserves_project(&new.name) {
        return Err(ApiError::ValidationFailed(format!(
            "name: {}-… namespaces are reserved for the cluster and Berth; choose another name",
            new.name
        )));
    }
    name_rules::text("display_name", &new.display_name, MAX_DISPLAY_NAME_LEN)?;
    if let Some(description) = &new.description
        && description.chars().count() > MAX_DESCRIPTION_LEN
    {
        return Err(ApiError::ValidationFailed(format!(
            "description: must be at most {MAX_DESCRIPTION_LEN} characters"
        )));
    }
    Ok(ValidProject {
        name,
        display_name: new.display_name,
        description: new.description,
    })
}

/// Creates the project. `Project` resources are cluster-scoped and named by
/// the project, so a name is unique across the platform, not only within the
/// organization: a name taken anywhere is a conflict that says so and nothing
/// about who took it.
pub async fn create(
    client: &kube::Client,
    org: &OrgName,
    new: ValidProject,
) -> Result<ProjectRecord, ApiError> {
    let project = Project {
        metadata: ObjectMeta {
            name: Some(new.name.to_string()),
            labels: Some(
                [
                    (LABEL_ORG.to_owned(), org.to_string()),
                    (LABEL_MANAGED_BY.to_owned(), MANAGER.to_owned()),
                ]
                .into(),
            ),
            ..ObjectMeta::default()
        },
        spec: ProjectSpec {
            display_name: new.display_name,
            description: new.description,
            org: org.to_string(),
        },
        status: None,
    };
    match cluster_projects::create(client, &project).await? {
        Some(created) => Ok(record(&created, 0)),
        None => Err(ApiError::Conflict(format!(
            "the project name {} is taken: project names are unique across the platform",
            new.name
        ))),
    }
}

/// Deletes an empty project. The controller's finalizer keeps it until no
/// environment refers to it, so a racing environment cannot be orphaned.
pub async fn delete(
    client: &kube::Client,
    org: &OrgName,
    name: &ProjectName,
) -> Result<ProjectRecord, ApiError> {
    let (project, environments) = with_environments(client, org, name).await?;
    if !environments.is_empty() {
        let mut left: Vec<EnvironmentLeft> = environments
            .iter()
            .map(|environment| EnvironmentLeft {
                name: environment.spec.name.clone(),
                deleting: environment.is_deleting(),
                purge_at: environment.spec.deletion_scheduled_at.clone(),
            })
            .collect();
        left.sort_by(|a, b| a.name.cmp(&b.name));
        return Err(ApiError::ProjectNotEmpty(left));
    }
    let mut deleted = record(&project, 0);
    if !deleted.deleting {
        cluster_projects::delete(client, &project).await?;
    }
    deleted.deleting = true;
    deleted.ready = false;
    Ok(deleted)
}
