//! The `members` function: the caller's organization and its roles.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, patch};
use axum::{Json, Router};
use serde::Deserialize;

use berth_shared::http::{Caller, JsonBody, operation, scope};
use berth_shared::identity::members::{self, MemberRecord, NewMember};
use berth_shared::{ApiError, AppState, Operation, Permission, Role};

pub fn router() -> Router<AppState> {
    Router::new()
        .route(
            "/api/v1/members",
            operation(Operation::ListMembers, get(list_members)).merge(operation(
                Operation::InviteMember,
                axum::routing::post(invite_member),
            )),
        )
        .route(
            "/api/v1/members/{member}",
            operation(Operation::UpdateMember, patch(update_member)).merge(operation(
                Operation::RemoveMember,
                axum::routing::delete(remove_member),
            )),
        )
}

fn parse_role(role: &str) -> Result<Role, ApiError> {
    Role::parse(role).ok_or_else(|| {
        ApiError::ValidationFailed(
            "role: must be one of viewer, operator, developer, admin, owner".into(),
        )
    })
}

async fn list_members(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<Vec<MemberRecord>>, ApiError> {
    caller.require(Permission::Read)?;
    Ok(Json(members::list(&state.store, &caller.user.org).await?))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Invitation {
    email: String,
    role: String,
    display_name: Option<String>,
}

async fn invite_member(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<Invitation>,
) -> Result<(StatusCode, Json<NewMember>), ApiError> {
    caller.require(Permission::MemberManage)?;
    let role = parse_role(&body.role)?;
    let invited =
        members::invite(&state.store, &caller, &body.email, role, body.display_name).await?;
    scope::audit_target("member", invited.member.id.clone());
    Ok((StatusCode::CREATED, Json(invited)))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RoleChange {
    role: String,
}

async fn update_member(
    State(state): State<AppState>,
    caller: Caller,
    Path(member_id): Path<String>,
    JsonBody(body): JsonBody<RoleChange>,
) -> Result<Json<MemberRecord>, ApiError> {
    scope::audit_target("member", member_id.clone());
    caller.require(Permission::MemberManage)?;
    let role = parse_role(&body.role)?;
    Ok(Json(
        members::change_role(&state.store, &caller, &member_id, role).await?,
    ))
}

async fn remove_member(
    State(state): State<AppState>,
    caller: Caller,
    Path(member_id): Path<String>,
) -> Result<StatusCode, ApiError> {
    scope::audit_target("member", member_id.clone());
    caller.require(Permission::MemberManage)?;
    members::remove(&state.store, &caller, &member_id).await?;
    Ok(StatusCode::NO_CONTENT)
}
