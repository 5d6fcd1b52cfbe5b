//! The `apps` function: apps of an environment, their releases, rollback,
//! promotion and domain check. The rules live in `berth_shared::apps` (and
//! `berth_shared::domains`); this crate maps HTTP onto them.

use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::routing::{delete, get, patch, post};
use axum::{Json, Router};
use serde::Deserialize;

use berth_shared::apps::body::{CreateBody, UpdateBody};
use berth_shared::apps::operate::{self, LogEntry, LogQuery};
use berth_shared::apps::record::{AppDetail, AppRecord};
use berth_shared::apps::releases::ReleaseRecord;
use berth_shared::apps::service;
use berth_shared::cluster::apps::AppPath;
use berth_shared::domains::DomainCheck;
use berth_shared::http::{Caller, JsonBody, QueryParams, operation, scope};
use berth_shared::{ApiError, AppState, Operation, Permission};

const APPS: &str = "/api/v1/projects/{project}/environments/{environment}/apps";
const APP: &str = "/api/v1/projects/{project}/environments/{environment}/apps/{app}";

pub fn router() -> Router<AppState> {
    Router::new()
        .route(
            APPS,
            operation(Operation::ListApps, get(list_apps))
                .merge(operation(Operation::CreateApp, post(create_app))),
        )
        .route(
            APP,
            operation(Operation::GetApp, get(get_app))
                .merge(operation(Operation::UpdateApp, patch(update_app)))
                .merge(operation(Operation::DeleteApp, delete(delete_app))),
        )
        .route(
            &format!("{APP}/releases"),
            operation(Operation::ListReleases, get(list_releases)),
        )
        .route(
            &format!("{APP}/rollback"),
            operation(Operation::RollbackApp, post(rollback_app)),
        )
        .route(
            &format!("{APP}/promote"),
            operation(Operation::PromoteApp, post(promote_app)),
        )
        .route(
            &format!("{APP}/logs"),
            operation(Operation::GetAppLogs, get(get_app_logs)),
        )
        .route(
            &format!("{APP}/restart"),
            operation(Operation::RestartApp, post(restart_app)),
        )
        .route(
            &format!("{APP}/run"),
            operation(Operation::RunApp, post(run_app)),
        )
        .route(
            &format!("{APP}/domains"),
            operation(Operation::CheckAppDomains, get(check_app_domains)),
        )
}

/// The path of one app, noted as the call's audit target.
fn app_path((project, environment, app): (String, String, String)) -> AppPath {
    scope::audit_target("app", app.clone());
    AppPath {
        project,
        environment,
        app,
    }
}

async fn list_apps(
    State(state): State<AppState>,
    caller: Caller,
    Path((project, environment)): Path<(String, String)>,
) -> Result<Json<Vec<AppRecord>>, ApiError> {
    scope::audit_target("environment", format!("{project}-{environment}"));
    caller.require(Permission::Read)?;
    let client = state.cluster.client().await?;
    Ok(Json(
        service::list(&client, &caller, &project, &environment).await?,
    ))
}

async fn create_app(
    State(state): State<AppState>,
    caller: Caller,
    Path((project, environment)): Path<(String, String)>,
    JsonBody(body): JsonBody<CreateBody>,
) -> Result<
    (
        StatusCode,
        [(header::HeaderName, String); 1],
        Json<AppRecord>,
    ),
    ApiError,
> {
    scope::audit_target("app", body.name.clone());
    caller.require(Permission::AppDeploy)?;
    let client = state.cluster.client().await?;
    let created =
        service::create(&state.store, &client, &caller, &project, &environment, body).await?;
    let location = format!(
        "/api/v1/projects/{project}/environments/{environment}/apps/{}",
        created.name
    );
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        Json(created),
    ))
}

async fn get_app(
    State(state): State<AppState>,
    caller: Caller,
    Path(path): Path<(String, String, String)>,
) -> Result<Json<AppDetail>, ApiError> {
    let path = app_path(path);
    caller.require(Permission::Read)?;
    let client = state.cluster.client().await?;
    Ok(Json(service::get(&client, &caller, &path).await?))
}

async fn update_app(
    State(state): State<AppState>,
    caller: Caller,
    Path(path): Path<(String, String, String)>,
    JsonBody(body): JsonBody<UpdateBody>,
) -> Result<Json<AppRecord>, ApiError> {
    let path = app_path(path);
    caller.require(Permission::AppOperate)?;
    let client = state.cluster.client().await?;
    Ok(Json(
        service::update(&state.store, &client, &caller, &path, &body).await?,
    ))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DeleteQuery {
    #[serde(default)]
    delete_volumes: bool,
}

async fn delete_app(
    State(state): State<AppState>,
    caller: Caller,
    Path(path): Path<(String, String, String)>,
    QueryParams(query): QueryParams<DeleteQuery>,
) -> Result<StatusCode, ApiError> {
    let path = app_path(path);
    caller.require(Permission::AppDeploy)?;
    let client = state.cluster.client().await?;
    service::delete(&state.store, &client, &caller, &path, query.delete_volumes).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn list_releases(
    State(state): State<AppState>,
    caller: Caller,
    Path(path): Path<(String, String, String)>,
) -> Result<Json<Vec<ReleaseRecord>>, ApiError> {
    let path = app_path(path);
    caller.require(Permission::Read)?;
    let client = state.cluster.client().await?;
    Ok(Json(
        service::list_releases(&state.store, &client, &caller, &path).await?,
    ))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RollbackBody {
    revision: i64,
}

async fn rollback_app(
    State(state): State<AppState>,
    caller: Caller,
    Path(path): Path<(String, String, String)>,
    JsonBody(body): JsonBody<RollbackBody>,
) -> Result<Json<AppRecord>, ApiError> {
    let path = app_path(path);
    caller.require(Permission::AppDeploy)?;
    let client = state.cluster.client().await?;
    Ok(Json(
        service::rollback(&state.store, &client, &caller, &path, body.revision).await?,
    ))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PromoteBody {
    environment: String,
}

async fn promote_app(
    State(state): State<AppState>,
    caller: Caller,
    Path(path): Path<(String, String, String)>,
    JsonBody(body): JsonBody<PromoteBody>,
) -> Result<Json<AppRecord>, ApiError> {
    let path = app_path(path);
    caller.require(Permission::AppDeploy)?;
    let client = state.cluster.client().await?;
    Ok(Json(
        service::promote(&state.store, &client, &caller, &path, &body.environment).await?,
    ))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LogsQuery {
    tail: Option<i64>,
    process: Option<String>,
    #[serde(default)]
    previous: bool,
}

async fn get_app_logs(
    State(state): State<AppState>,
    caller: Caller,
    Path(path): Path<(String, String, String)>,
    QueryParams(query): QueryParams<LogsQuery>,
) -> Result<Json<Vec<LogEntry>>, ApiError> {
    let path = app_path(path);
    let query = LogQuery::new(query.tail, query.process, query.previous)?;
    let client = state.cluster.client().await?;
    Ok(Json(operate::logs(&client, &caller, &path, &query).await?))
}

async fn restart_app(
    State(state): State<AppState>,
    caller: Caller,
    Path(path): Path<(String, String, String)>,
) -> Result<(StatusCode, Json<AppRecord>), ApiError> {
    let path = app_path(path);
    let client = state.cluster.client().await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(operate::restart(&client, &caller, &path).await?),
    ))
}

/// The body of `runApp`: which scheduled process; optional when the app has
/// exactly one. An empty body is the same as `{}`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RunBody {
    process: Option<String>,
}

#[derive(Debug, serde::Serialize)]
struct RunAnswer {
    job: String,
}

async fn run_app(
    State(state): State<AppState>,
    caller: Caller,
    Path(path): Path<(String, String, String)>,
    body: Option<JsonBody<RunBody>>,
) -> Result<(StatusCode, Json<RunAnswer>), ApiError> {
    let path = app_path(path);
    let body = body.map(|JsonBody(body)| body).unwrap_or_default();
    let client = state.cluster.client().await?;
    let job = operate::run_now(&client, &caller, &path, body.process.as_deref()).await?;
    Ok((StatusCode::ACCEPTED, Json(RunAnswer { job })))
}
async fn check_app_domains(
    State(state): State<AppState>,
    caller: Caller,
    Path(path): Path<(String, String, String)>,
) -> Result<Json<Vec<DomainCheck>>, ApiError> {
    let path = app_path(path);
    caller.require(Permission::Read)?;
    let client = state.cluster.client().await?;
    Ok(Json(
        service::check_domains(&client, &state.domains, &caller, &path).await?,
    ))
}
