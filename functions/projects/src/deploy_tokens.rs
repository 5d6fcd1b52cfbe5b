//! A project's deploy tokens: credentials of machines (a CI pipeline's),
//! owned by the project, which its admins make, list and revoke.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;

use berth_api::ApiError;
use berth_api::AppState;
use berth_api::http::{Caller, Created, JsonBody, ObjectPath, scope};
use berth_api::projects;
use berth_domain::paths::{DeployTokenPath, ProjectPath};
use berth_records::tokens::{CreatedDeployToken, DeployTokenRecord, NewDeployToken};
use berth_store::identity::deploy_tokens;

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
    State(state): State<AppState>,
    caller: Caller,
    ObjectPath(ProjectPath { project }): ObjectPath<ProjectPath>,
) -> Result<Json<Vec<DeployTokenRecord>>, ApiError> {
    scope::audit_target("project", &project);
    let client = state.cluster.client().await?;
    let project = projects::identify(&client, &caller.user.org, &project).await?;
    let tokens = deploy_tokens::list(&state.store, &project.uid).await?;
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
    State(state): State<AppState>,
    caller: Caller,
    ObjectPath(ProjectPath { project }): ObjectPath<ProjectPath>,
    JsonBody(body): JsonBody<NewDeployToken>,
) -> Result<Created<CreatedDeployToken>, ApiError> {
    scope::audit_target("deploy-token", &body.name);
    refuse_deploy_tokens(&caller)?;
    let client = state.cluster.client().await?;
    let project = projects::identify(&client, &caller.user.org, &project).await?;
    let created = deploy_tokens::create(&state.store, &caller, project.granted(), body).await?;
    Ok(Created::new(created))
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
pub async fn delete_deploy_token(
    State(state): State<AppState>,
    caller: Caller,
    ObjectPath(path): ObjectPath<DeployTokenPath>,
) -> Result<StatusCode, ApiError> {
    scope::audit_target("deploy-token", &path.token);
    refuse_deploy_tokens(&caller)?;
    let client = state.cluster.client().await?;
    let project = projects::identify(&client, &caller.user.org, &path.project).await?;
    deploy_tokens::revoke(&state.store, project.granted(), &path.token).await?;
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
