//! The `members` function: the caller's organization and its roles.

use axum::Json;
use axum::http::StatusCode;

use berth_api::ApiError;
use berth_api::http::{Call, Created, JsonBody, scope};
use berth_domain::paths::MemberPath;
use berth_domain::{Operation, Role};
use berth_records::members::{Invitation, RoleChange};
use berth_records::members::{MemberRecord, NewMember};
use berth_store::identity::members;

berth_api::operations! {
    tag: "members",
    failures: failures,
    handlers: [
        list_members,
        invite_member,
        update_member,
        remove_member,
    ],
}

fn failures(operation: Operation) -> Vec<ApiError> {
    let conflict = ApiError::Conflict(String::new());
    match operation {
        Operation::InviteMember => vec![
            ApiError::ValidationFailed(String::new()),
            conflict,
            ApiError::NotFound(berth_domain::Missing::Route),
        ],
        Operation::UpdateMember => vec![ApiError::ValidationFailed(String::new()), conflict],
        Operation::RemoveMember => vec![conflict],
        _ => Vec::new(),
    }
}

fn parse_role(role: &str) -> Result<Role, ApiError> {
    Role::parse(role).ok_or_else(|| {
        ApiError::ValidationFailed(
            "role: must be one of member, viewer, operator, developer, admin, owner".into(),
        )
    })
}

/// List members
///
/// The users of the caller's organization, with their roles.
#[utoipa::path(
    get,
    path = "/api/v1/members",
    responses((status = 200, description = "The members.", body = Vec<MemberRecord>)),
)]
async fn list_members(call: Call) -> Result<Json<Vec<MemberRecord>>, ApiError> {
    Ok(Json(
        members::list(&call.state.store, &call.caller.user.org).await?,
    ))
}

/// Invite a member
///
/// Creates the user in the caller's organization with a temporary password,
/// shown once, which must be changed at the first sign-in. Only owners
/// invite owners.
#[utoipa::path(
    post,
    path = "/api/v1/members",
    request_body = Invitation,
    responses((status = 201, description = "Invited; `temporary_password` is shown once.",
        body = NewMember)),
)]
async fn invite_member(
    call: Call,
    JsonBody(body): JsonBody<Invitation>,
) -> Result<Created<NewMember>, ApiError> {
    let role = parse_role(&body.role)?;
    let (store, caller) = (&call.state.store, &call.caller);
    let invited = members::invite(store, caller, &body.email, role, body.display_name).await?;
    scope::audit_target("member", &invited.member);
    Ok(Created::new(invited))
}

/// Change a member's role
///
/// Only owners change owners; an organization keeps at least one owner.
#[utoipa::path(
    patch,
    path = "/api/v1/members/{member}",
    params(MemberPath),
    request_body = RoleChange,
    responses((status = 200, description = "The member.", body = MemberRecord)),
)]
async fn update_member(
    call: Call<MemberPath>,
    JsonBody(body): JsonBody<RoleChange>,
) -> Result<Json<MemberRecord>, ApiError> {
    let role = parse_role(&body.role)?;
    let (store, caller) = (&call.state.store, &call.caller);
    Ok(Json(
        members::change_role(store, caller, &call.path.member, role).await?,
    ))
}

/// Remove a member
///
/// Deactivates the user and revokes their sessions and tokens.
#[utoipa::path(
    delete,
    path = "/api/v1/members/{member}",
    params(MemberPath),
    responses((status = 204, description = "Removed.")),
)]
async fn remove_member(call: Call<MemberPath>) -> Result<StatusCode, ApiError> {
    members::remove(&call.state.store, &call.caller, &call.path.member).await?;
    Ok(StatusCode::NO_CONTENT)
}
