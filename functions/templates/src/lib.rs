//! The `templates` function: the template catalogue, and deploying a
//! template into an environment. The rules live in `berth_shared::templates`.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};

use berth_shared::http::{Caller, JsonBody, operation, scope};
use berth_shared::templates::{self, DeployBody, Deployed, TemplateRecord};
use berth_shared::{ApiError, AppState, Operation};

pub fn router() -> Router<AppState> {
    Router::new()
        .route(
            "/api/v1/templates",
            operation(Operation::ListTemplates, get(list_templates)),
        )
        .route(
            "/api/v1/projects/{project}/environments/{environment}/templates/{template}",
            operation(Operation::DeployTemplate, post(deploy_template)),
        )
}

async fn list_templates(_caller: Caller) -> Json<Vec<TemplateRecord>> {
    Json(templates::list())
}

async fn deploy_template(
    State(state): State<AppState>,
    caller: Caller,
    Path((project, environment, template)): Path<(String, String, String)>,
    body: Option<JsonBody<DeployBody>>,
) -> Result<(StatusCode, Json<Deployed>), ApiError> {
    scope::audit_target("template", template.clone());
    let body = body.map(|JsonBody(body)| body).unwrap_or_default();
    let client = state.cluster.client().await?;
    let deployed = templates::deploy(
        &state.store,
        &client,
        &caller,
        &project,
        &environment,
        &template,
        body,
    )
    .await?;
    Ok((StatusCode::CREATED, Json(deployed)))
}
