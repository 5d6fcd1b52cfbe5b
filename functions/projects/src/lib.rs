//! The `projects` function: the organization's projects.

use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;

use berth_shared::cluster::projects::{self, NewProject, ProjectRecord};
use berth_shared::http::{Caller, JsonBody, operation, scope};
use berth_shared::{ApiError, AppState, Operation, Permission};

pub fn router() -> Router<AppState> {
    Router::new()
        .route(
            "/api/v1/projects",
            operation(Operation::ListProjects, get(list_projects))
                .merge(operation(Operation::CreateProject, post(create_project))),
        )
        .route(
            "/api/v1/projects/{project}",
            operation(Operation::GetProject, get(get_project)).merge(operation(
                Operation::DeleteProject,
                axum::routing::delete(delete_project),
            )),
        )
}

async fn list_projects(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<Vec<ProjectRecord>>, ApiError> {
    caller.require(Permission::Read)?;
    let client = state.cluster.client().await?;
    Ok(Json(projects::list(&client, &caller.user.org).await?))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateBody {
    name: String,
    display_name: String,
    description: Option<String>,
}

async fn create_project(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<CreateBody>,
) -> Result<
    (
        StatusCode,
        [(header::HeaderName, String); 1],
        Json<ProjectRecord>,
    ),
    ApiError,
> {
    scope::audit_target("project", body.name.clone());
    caller.require(Permission::ProjectWrite)?;
    let new = NewProject {
        name: body.name,
        display_name: body.display_name,
        description: body.description,
    };
    let new = projects::validate(new, &state.config.reserved_namespaces)?;
    let client = state.cluster.client().await?;
    let created = projects::create(&client, &caller.user.org, new).await?;
    let location = format!("/api/v1/projects/{}", created.name);
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        Json(created),
    ))
}

async fn get_project(
    State(state): State<AppState>,
    caller: Caller,
    Path(project): Path<String>,
) -> Result<Json<ProjectRecord>, ApiError> {
    scope::audit_target("project", project.clone());
    caller.require(Permission::Read)?;
    let client = state.cluster.client().await?;
    Ok(Json(
        projects::get(&client, &caller.user.org, &project).await?,
    ))
}

async fn delete_project(
    State(state): State<AppState>,
    caller: Caller,
    Path(project): Path<String>,
) -> Result<(StatusCode, Json<ProjectRecord>), ApiError> {
    scope::audit_target("project", project.clone());
    caller.require(Permission::ProjectWrite)?;
    let client = state.cluster.client().await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(projects::delete(&client, &caller.user.org, &project).await?),
    ))
}
