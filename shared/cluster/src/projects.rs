//! Project resources in the cluster: cluster-scoped, named by the project,
//! labelled with their organization. Each function here is one call to the
//! cluster; what they mean is [`berth_api::projects`]'.

use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, PostParams, Preconditions};

use super::crd::{LABEL_ORG, Project};
use super::{is_conflict, is_not_found, list_decoded};
use crate::ClusterError;
use berth_domain::names::{OrgName, ProjectName};

/// The label selector of an organization's objects.
pub fn of_org(org: &OrgName) -> ListParams {
    ListParams::default().labels(&format!("{LABEL_ORG}={org}"))
}

/// The organization's projects (any order).
pub async fn list(client: &kube::Client, org: &OrgName) -> Result<Vec<Project>, ClusterError> {
    let projects: Vec<Project> = list_decoded(client, None, &of_org(org)).await?;
    Ok(projects
        .into_iter()
        .filter(|p| p.spec.org == org.as_str())
        .collect())
}

/// The organization's project of that name; another organization's is not
/// found, as one that does not exist.
pub async fn get_visible(
    client: &kube::Client,
    org: &OrgName,
    name: &ProjectName,
) -> Result<Project, ClusterError> {
    match Api::<Project>::all(client.clone())
        .get_opt(name.as_str())
        .await?
    {
        Some(project) if project.spec.org == org.as_str() => Ok(project),
        _ => Err(berth_domain::Missing::project(name.as_str()).into()),
    }
}

/// Creates the project; `None` when its name is taken (by anyone: names are
/// unique across the platform).
pub async fn create(
    client: &kube::Client,
    project: &Project,
) -> Result<Option<Project>, ClusterError> {
    match Api::<Project>::all(client.clone())
        .create(&PostParams::default(), project)
        .await
    {
        Ok(created) => Ok(Some(created)),
        Err(error) if is_conflict(&error) => Ok(None),
        Err(error) => Err(error.into()),
    }
}

/// Deletes the project that was read (uid precondition); one already gone
/// is no failure.
pub async fn delete(client: &kube::Client, project: &Project) -> Result<(), ClusterError> {
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid: project.uid(),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    match Api::<Project>::all(client.clone())
        .delete(&project.name_any(), &params)
        .await
    {
        Ok(_) => Ok(()),
        Err(error) if is_not_found(&error) => Ok(()),
        Err(error) if is_conflict(&error) => Err(ClusterError::Conflict(
            "the project was replaced meanwhile".into(),
        )),
        Err(error) => Err(error.into()),
    }
}
