//! Members' roles in the project: who holds one, and giving, changing and
//! taking them away (owners and organization admins only: `member-manage`
//! is the organization's).

use axum::Json;
use axum::http::StatusCode;

use berth_api::ApiError;
use berth_api::http::{Call, JsonBody};
use berth_domain::paths::{ProjectMemberPath, ProjectPath};
use berth_records::members::{ProjectMemberRecord, ProjectRoleChange};
use berth_store::identity::project_roles;

use super::identify;

/// List a project's members
///
/// The members holding a role in the project, with their organization
/// role beside it (the greater of the two applies in the project).
#[utoipa::path(
    get,
    path = "/api/v1/projects/{project}/members",
    params(ProjectPath),
    responses((status = 200, description = "The project's members.",
        body = Vec<ProjectMemberRecord>)),
)]
pub async fn list_project_members(
    call: Call<ProjectPath>,
) -> Result<Json<Vec<ProjectMemberRecord>>, ApiError> {
    let project = identify(&call, &call.path.project).await?;
    let (store, org) = (&call.state.store, &call.caller.user.org);
    Ok(Json(
        project_roles::list(store, org, project.granted()).await?,
    ))
}

/// Give a member a role in a project
///
/// Gives a member of the organization a role in the project, or changes
/// the one it holds; it applies from the member's next request. A member
/// whose organization role is `member` sees only the projects it holds a
/// role in. Only owners change owners' roles.
#[utoipa::path(
    put,
    path = "/api/v1/projects/{project}/members/{member}",
    params(ProjectMemberPath),
    request_body = ProjectRoleChange,
    responses((status = 200, description = "The member's role in the project.",
        body = ProjectMemberRecord)),
)]
pub async fn set_project_member(
    call: Call<ProjectMemberPath>,
    JsonBody(body): JsonBody<ProjectRoleChange>,
) -> Result<Json<ProjectMemberRecord>, ApiError> {
    let project = identify(&call, &call.path.project).await?;
    let (store, caller, member) = (&call.state.store, &call.caller, &call.path.member);
    Ok(Json(
        project_roles::grant(store, caller, member, project.granted(), body.role).await?,
    ))
}

/// Take a member's role in a project away
///
/// At once: the member's next request is made without it.
#[utoipa::path(
    delete,
    path = "/api/v1/projects/{project}/members/{member}",
    params(ProjectMemberPath),
    responses((status = 204, description = "The role is taken away.")),
)]
pub async fn remove_project_member(call: Call<ProjectMemberPath>) -> Result<StatusCode, ApiError> {
    let project = identify(&call, &call.path.project).await?;
    let (store, caller, member) = (&call.state.store, &call.caller, &call.path.member);
    project_roles::revoke(store, caller, member, project.granted()).await?;
    Ok(StatusCode::NO_CONTENT)
}
