//! A project's deploy tokens: credentials of machines (a CI pipeline's),
//! owned by the project, which its admins make, list and revoke.

use axum::Json;
use axum::http::StatusCode;

use berth_api::ApiError;
use berth_api::http::{Call, Caller, Created, JsonBody, ObjectPath, scope};
use berth_domain::paths::{DeployTokenPath, ProjectPath};
use berth_records::tokens::{CreatedDeployToken, DeployTokenRecord, NewDeployToken};
use berth_store::identity::deploy_tokens;

use super::identify;

/// List a project's deploy tokens
///
/// The project's live deploy tokens, newest first; never their secrets.
#[utoipa::path(
    get,
    path = "/api/v1/projects/{project}/tokens",
    params(ProjectPath),
    responses((status = 200, description = "The deploy tokens.", body = Vec<DeployTokenRecord>)),
)]
pub async fn list_deploy_tokens(
    call: Call<ProjectPath>,
) -> Result<Json<Vec<DeployTokenRecord>>, ApiError> {
    let project = identify(&call, &call.path.project).await?;
    let tokens = deploy_tokens::list(&call.state.store, &project.uid).await?;
    Ok(Json(tokens.iter().map(|token| token.record()).collect()))
}

/// Make a deploy token
///
/// A token owned by the project, not by the member who makes it (it
/// outlives the member's removal), for a machine: its calls are made as
/// `{name}@{project}.deploy.invalid`. It reaches only this project (and,
/// with `environments`, only those), with an admin's rights there or its
/// ceiling's. The secret is shown only in this answer. Made by people:
/// a deploy token makes none.
#[utoipa::path(
    post,
    path = "/api/v1/projects/{project}/tokens",
    params(ProjectPath),
    request_body = NewDeployToken,
    responses((status = 201, description = "Made; `token` is shown once.",
        body = CreatedDeployToken)),
)]
pub async fn create_deploy_token(
    call: Call,
    ObjectPath(ProjectPath { project }): ObjectPath<ProjectPath>,
    JsonBody(body): JsonBody<NewDeployToken>,
) -> Result<Created<CreatedDeployToken>, ApiError> {
    scope::audit_target("deploy-token", &body.name);
    refuse_deploy_tokens(&call.caller)?;
    let project = identify(&call, &project).await?;
    let (store, caller) = (&call.state.store, &call.caller);
    Ok(Created::new(
        deploy_tokens::create(store, caller, project.granted(), body).await?,
    ))
}

/// Revoke a deploy token
///
/// At once: its next request is refused.
#[utoipa::path(
    delete,
    path = "/api/v1/projects/{project}/tokens/{token}",
    params(DeployTokenPath),
    responses((status = 204, description = "Revoked.")),
)]
pub async fn delete_deploy_token(call: Call<DeployTokenPath>) -> Result<StatusCode, ApiError> {
    refuse_deploy_tokens(&call.caller)?;
    let project = identify(&call, &call.path.project).await?;
    deploy_tokens::revoke(&call.state.store, project.granted(), &call.path.token).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Deploy tokens are made and revoked by people: a machine's token makes
/// no credential that would outlive it.
fn refuse_deploy_tokens(caller: &Caller) -> Result<(), ApiError> {
    if caller.is_deploy_token() {
        return Err(ApiError::Forbidden(
            "a deploy token cannot make or revoke deploy tokens: a member of the project does"
                .into(),
        ));
    }
    Ok(())
}
