//! Members' roles in single projects. They are kept on the member's
//! profile (`ProfileItem::projects`), which every request reads to
//! authenticate: a grant costs no round trip, and a revoked one stops
//! working at the next request, as a removed member does.

use aws_sdk_dynamodb::types::AttributeValue;

use super::profile::{self, ProfileItem};
use super::{Principal, ProjectGrant};
use crate as store;
use crate::StoreError;
use crate::{Store, keys};
use berth_domain::ids::UserId;
use berth_domain::names::{OrgName, ProjectName};
use berth_domain::{Missing, ProjectRole};
use berth_records::members::ProjectMemberRecord;

/// A project as its grants know it: its name, and the uid that tells it
/// from an earlier project of that name.
#[derive(Debug, Clone, Copy)]
pub struct GrantedProject<'a> {
    pub name: &'a ProjectName,
    pub uid: &'a str,
}

impl GrantedProject<'_> {
    fn holds(&self, grant: &ProjectGrant) -> bool {
        grant.uid == self.uid
    }
}

fn member_record(profile: &ProfileItem, role: ProjectRole) -> ProjectMemberRecord {
    ProjectMemberRecord {
        id: profile.id.clone(),
        email: profile.email.clone(),
        display_name: profile.display_name.clone(),
        organization_role: profile.role,
        role,
    }
}

/// The members holding a role in the project, by email.
pub async fn list(
    store: &Store,
    org: &OrgName,
    project: GrantedProject<'_>,
) -> Result<Vec<ProjectMemberRecord>, StoreError> {
    let profiles = super::members::profiles(store, org).await?;
    Ok(profiles
        .iter()
        .filter_map(|profile| {
            let grant = profile.projects.iter().find(|grant| project.holds(grant))?;
            Some(member_record(profile, grant.role))
        })
        .collect())
}

/// Gives a member of the caller's organization a role in the project, or
/// changes the one it holds.
pub async fn grant(
    store: &Store,
    caller: &Principal,
    member_id: &UserId,
    project: GrantedProject<'_>,
    role: ProjectRole,
) -> Result<ProjectMemberRecord, StoreError> {
    let target = profile::get_member(store, &caller.user.org, member_id).await?;
    super::members::require_owner_rights(caller, &[target.role])?;
    let mut grants: Vec<ProjectGrant> = target
        .projects
        .iter()
        // A grant of an earlier project of the name is replaced too.
        .filter(|grant| !project.holds(grant) && &grant.project != project.name)
        .cloned()
        .collect();
    grants.push(ProjectGrant {
        project: project.name.clone(),
        uid: project.uid.to_owned(),
        role,
    });
    grants.sort_by(|a, b| a.project.cmp(&b.project));
    write_grants(store, &target, &grants).await?;
    Ok(member_record(&target, role))
}

/// Takes away a member's role in the project.
pub async fn revoke(
    store: &Store,
    caller: &Principal,
    member_id: &UserId,
    project: GrantedProject<'_>,
) -> Result<(), StoreError> {
    let target = profile::get_member(store, &caller.user.org, member_id).await?;
    super::members::require_owner_rights(caller, &[target.role])?;
    if !target.projects.iter().any(|grant| project.holds(grant)) {
        return Err(StoreError::Missing(Missing::ProjectMember {
            project: project.name.to_string(),
            member: member_id.clone(),
        }));
    }
    let grants: Vec<ProjectGrant> = target
        .projects
        .iter()
        .filter(|grant| !project.holds(grant))
        .cloned()
        .collect();
    write_grants(store, &target, &grants).await
}

/// Forgets every member's role in a deleted project. A grant of a deleted
/// project reaches nothing (no other project has its uid), so this only
/// keeps member records truthful; it is the deletion's tidying up.
pub async fn forget_project(
    store: &Store,
    org: &OrgName,
    project: GrantedProject<'_>,
) -> Result<(), StoreError> {
    for profile in super::members::profiles(store, org).await? {
        if !profile.projects.iter().any(|grant| project.holds(grant)) {
            continue;
        }
        let grants: Vec<ProjectGrant> = profile
            .projects
            .iter()
            .filter(|grant| !project.holds(grant))
            .cloned()
            .collect();
        write_grants(store, &profile, &grants).await?;
    }
    Ok(())
}

/// Replaces a member's grants, if they are still those read: a change
/// made meanwhile (another grant, the member removed) is a conflict.
async fn write_grants(
    store: &Store,
    target: &ProfileItem,
    grants: &[ProjectGrant],
) -> Result<(), StoreError> {
    let update = store
        .client()
        .update_item()
        .table_name(store.table())
        .set_key(Some(store::key(keys::user(&target.id), keys::PROFILE_SK)))
        .expression_attribute_values(":org", store::s(target.org.as_str()));
    let update = if grants.is_empty() {
        update.update_expression("REMOVE projects")
    } else {
        update
            .update_expression("SET projects = :new")
            .expression_attribute_values(":new", as_list(grants)?)
    };
    let update = if target.projects.is_empty() {
        update.condition_expression("org = :org AND attribute_not_exists(projects)")
    } else {
        update
            .condition_expression("org = :org AND projects = :old")
            .expression_attribute_values(":old", as_list(&target.projects)?)
    };
    match update.send().await {
        Ok(_) => Ok(()),
        Err(error) if store::is_condition_failure(&error) => Err(StoreError::Conflict(
            "the member was changed meanwhile; try again".into(),
        )),
        Err(error) => Err(error.into()),
    }
}

/// Grants as the profile stores them (a list of maps).
fn as_list(grants: &[ProjectGrant]) -> Result<AttributeValue, StoreError> {
    let item = store::to_item(&Wrapped { projects: grants })?;
    item.get("projects")
        .cloned()
        .ok_or_else(|| StoreError::Broken("grants did not serialize to a list".into()))
}

#[derive(serde::Serialize)]
struct Wrapped<'a> {
    projects: &'a [ProjectGrant],
}
