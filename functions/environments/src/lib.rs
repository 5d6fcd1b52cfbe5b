//! The `environments` function: the environments of a project.

use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;

use berth_shared::cluster::crd::Quota;
use berth_shared::cluster::environments::{self, EnvironmentRecord, NewEnvironment};
use berth_shared::http::{Caller, JsonBody, operation, scope};
use berth_shared::{ApiError, AppState, Operation, Permission};

pub fn router() -> Router<AppState> {
    Router::new()
        .route(
            "/api/v1/projects/{project}/environments",
            operation(Operation::ListEnvironments, get(list_environments)).merge(operation(
                Operation::CreateEnvironment,
                post(create_environment),
            )),
        )
        .route(
            "/api/v1/projects/{project}/environments/{environment}",
            operation(Operation::GetEnvironment, get(get_environment)).merge(operation(
                Operation::DeleteEnvironment,
                axum::routing::delete(delete_environment),
            )),
        )
        .route(
            "/api/v1/projects/{project}/environments/{environment}/restore",
            operation(Operation::RestoreEnvironment, post(restore_environment)),
        )
}

async fn list_environments(
    State(state): State<AppState>,
    caller: Caller,
    Path(project): Path<String>,
) -> Result<Json<Vec<EnvironmentRecord>>, ApiError> {
    scope::audit_target("project", project.clone());
    caller.require(Permission::Read)?;
    let client = state.cluster.client().await?;
    Ok(Json(
        environments::list(&client, &caller.user.org, &project).await?,
    ))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateBody {
    name: String,
    #[serde(default = "standard")]
    env_type: String,
    quota: Option<Quota>,
}

fn standard() -> String {
    "standard".to_owned()
}

async fn create_environment(
    State(state): State<AppState>,
    caller: Caller,
    Path(project): Path<String>,
    JsonBody(body): JsonBody<CreateBody>,
) -> Result<
    (
        StatusCode,
        [(header::HeaderName, String); 1],
        Json<EnvironmentRecord>,
    ),
    ApiError,
> {
    scope::audit_target(
        "environment",
        environments::resource_name(&project, &body.name),
    );
    caller.require(Permission::EnvWrite)?;
    let new = NewEnvironment {
        name: body.name,
        env_type: body.env_type,
        quota: body.quota,
    };
    let new = environments::validate(&project, new, &state.config.reserved_namespaces)?;
    let client = state.cluster.client().await?;
    let created = environments::create(&client, &caller.user.org, new).await?;
    let location = format!("/api/v1/projects/{project}/environments/{}", created.name);
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        Json(created),
    ))
}

async fn get_environment(
    State(state): State<AppState>,
    caller: Caller,
    Path((project, environment)): Path<(String, String)>,
) -> Result<Json<EnvironmentRecord>, ApiError> {
    scope::audit_target(
        "environment",
        environments::resource_name(&project, &environment),
    );
    caller.require(Permission::Read)?;
    let client = state.cluster.client().await?;
    Ok(Json(
        environments::get(&client, &caller.user.org, &project, &environment).await?,
    ))
}

async fn delete_environment(
    State(state): State<AppState>,
    caller: Caller,
    Path((project, environment)): Path<(String, String)>,
) -> Result<(StatusCode, Json<EnvironmentRecord>), ApiError> {
    scope::audit_target(
        "environment",
        environments::resource_name(&project, &environment),
    );
    caller.require(Permission::EnvWrite)?;
    let client = state.cluster.client().await?;
    let deleted = environments::delete(
        &client,
        &caller,
        &project,
        &environment,
        state.config.production_grace,
    )
    .await?;
    Ok((StatusCode::ACCEPTED, Json(deleted)))
}

/// `POST ENV/restore`: cancels a scheduled purge (README, API notes).
async fn restore_environment(
    State(state): State<AppState>,
    caller: Caller,
    Path((project, environment)): Path<(String, String)>,
) -> Result<Json<EnvironmentRecord>, ApiError> {
    scope::audit_target(
        "environment",
        environments::resource_name(&project, &environment),
    );
    let client = state.cluster.client().await?;
    Ok(Json(
        environments::restore(&client, &caller, &project, &environment).await?,
    ))
}
