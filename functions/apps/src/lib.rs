//! The `apps` function: apps of an environment, their releases, rollback,
//! promotion and domain check. The rules live in `berth_api::apps` (and
//! `berth_api::domain_check`); this crate maps HTTP onto them.

use axum::Json;
use axum::http::StatusCode;
use serde::Deserialize;

use berth_api::ApiError;
use berth_api::apps::commands::{self, NewCommand};
use berth_api::apps::hosts::HostRules;
use berth_api::apps::operate::{self, LogQuery, LogWindow, TailQuery};
use berth_api::apps::service;
use berth_api::http::{Accepted, Call, Created, JsonBody, Located, ObjectPath, QueryParams, scope};
use berth_api::openapi::cluster_failures;
use berth_domain::Operation;
use berth_domain::names::{AppName, EnvironmentName};
use berth_domain::paths::{AppPath, CommandPath, EnvironmentPath};
use berth_records::apps::actions::{PromoteBody, RollbackBody, RunAnswer, RunBody};
use berth_records::apps::body::{CreateBody, UpdateBody};
use berth_records::apps::commands::{CommandRecord, RunBody as CommandBody};
use berth_records::apps::record::{AppDetail, AppRecord, DomainCheck, LogEntry, ReleaseRecord};

berth_api::operations! {
    tag: "apps",
    failures: failures,
    finish: finish,
    handlers: [
        list_apps,
        create_app,
        get_app,
        update_app,
        delete_app,
        list_releases,
        rollback_app,
        promote_app,
        get_app_logs,
        restart_app,
        run_app,
        run_command,
        list_commands,
        get_command,
        get_command_logs,
        check_app_domains,
    ],
}

/// What the annotations cannot say.
fn finish(api: &mut utoipa::openapi::OpenApi) {
    for (schema, forbidden) in berth_records::apps::body::forbidden_combinations() {
        berth_api::openapi::forbid(api, schema, forbidden);
    }
    berth_api::openapi::optional_body(api, Operation::RunApp);
}

fn failures(operation: Operation) -> Vec<ApiError> {
    use Operation::*;
    let changes = !matches!(
        operation,
        ListApps
            | GetApp
            | ListReleases
            | GetAppLogs
            | CheckAppDomains
            | ListCommands
            | GetCommand
            | GetCommandLogs
    );
    let mut failures = cluster_failures(changes);
    if changes {
        failures.push(ApiError::EnvironmentDeleting);
    }
    // Writes into the environment need its namespace to be its own
    // (deleting an app does not).
    if matches!(
        operation,
        CreateApp | UpdateApp | RollbackApp | PromoteApp | RestartApp | RunApp | RunCommand
    ) {
        failures.extend(berth_api::openapi::namespace_failures());
    }
    if matches!(
        operation,
        CreateApp | UpdateApp | RollbackApp | PromoteApp | RunApp | RunCommand
    ) {
        failures.push(ApiError::ValidationFailed(String::new()));
    }
    if operation == UpdateApp {
        // Beyond `app-operate`: `app-write` or `app-deploy`, by field.
        failures.push(ApiError::Forbidden(String::new()));
    }
    if matches!(operation, CreateApp | UpdateApp | RollbackApp | PromoteApp) {
        // Every hostname of the resulting configuration is claimed.
        failures.push(ApiError::DomainTaken {
            hostname: String::new(),
        });
    }
    failures
}

/// List apps
///
/// The apps of an environment, with their readiness.
#[utoipa::path(
    get,
    path = "/api/v1/projects/{project}/environments/{environment}/apps",
    params(EnvironmentPath),
    responses((status = 200, description = "The apps.", body = Vec<AppRecord>)),
)]
async fn list_apps(call: Call<EnvironmentPath>) -> Result<Json<Vec<AppRecord>>, ApiError> {
    let client = call.cluster().await?;
    Ok(Json(
        service::list(&client, &call.caller, &call.path).await?,
    ))
}

/// Create an app
///
/// An image with its processes, variables, domains and volumes; the
/// controller renders it into workloads. Each domain is claimed for this app
/// on the whole platform (`409 domain_taken` while another app holds it; a
/// domain under the platform's apps domain is 422), and the name may not
/// contain `--`.
#[utoipa::path(
    post,
    path = "/api/v1/projects/{project}/environments/{environment}/apps",
    params(EnvironmentPath),
    request_body = CreateBody,
    responses((status = 201, description = "Created.", body = AppRecord,
        headers(("Location" = String, description = "The new app's URL.")))),
)]
async fn create_app(
    call: Call,
    ObjectPath(environment): ObjectPath<EnvironmentPath>,
    JsonBody(body): JsonBody<CreateBody>,
) -> Result<Created<AppRecord>, ApiError> {
    if let Ok(name) = AppName::parse(&body.name) {
        scope::audit_target("app", &name);
    }
    let client = call.cluster().await?;
    let rules = HostRules::new(&call.state.config);
    let created = service::create(
        &call.state.store,
        &client,
        &rules,
        &call.caller,
        &environment,
        body,
    )
    .await?;
    Ok(Created::at(
        environment.child("apps", &created.name),
        created,
    ))
}

/// Get an app
///
/// The app and its pods.
#[utoipa::path(
    get,
    path = "/api/v1/projects/{project}/environments/{environment}/apps/{app}",
    params(AppPath),
    responses((status = 200, description = "The app.", body = AppDetail)),
)]
async fn get_app(call: Call<AppPath>) -> Result<Json<AppDetail>, ApiError> {
    let client = call.cluster().await?;
    Ok(Json(service::get(&client, &call.caller, &call.path).await?))
}

/// Change an app
///
/// Omitted fields stay; lists are replaced whole. New code — a new image, a
/// process's new command, a new release command, a source — and any change
/// of `env` need `app-deploy`; domains, processes, sizes, volumes and the
/// health check `app-write`; replicas `app-operate`. The resulting domains are
/// claimed for this app (`409 domain_taken` while another app holds one);
/// dropped ones are released.
#[utoipa::path(
    patch,
    path = "/api/v1/projects/{project}/environments/{environment}/apps/{app}",
    params(AppPath),
    request_body = UpdateBody,
    responses((status = 200, description = "The app.", body = AppRecord)),
)]
async fn update_app(
    call: Call<AppPath>,
    JsonBody(body): JsonBody<UpdateBody>,
) -> Result<Json<AppRecord>, ApiError> {
    let (client, rules) = (call.cluster().await?, HostRules::new(&call.state.config));
    let (store, caller) = (&call.state.store, &call.caller);
    Ok(Json(
        service::update(store, &client, &rules, caller, &call.path, &body).await?,
    ))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
struct DeleteQuery {
    /// Also delete the app's volumes (kept by default).
    #[serde(default)]
    delete_volumes: bool,
}

/// Delete an app
///
/// Its workloads go with it, and its domains are released; its volumes
/// stay unless asked.
#[utoipa::path(
    delete,
    path = "/api/v1/projects/{project}/environments/{environment}/apps/{app}",
    params(AppPath, DeleteQuery),
    responses((status = 204, description = "Deleted.")),
)]
async fn delete_app(
    call: Call<AppPath>,
    QueryParams(query): QueryParams<DeleteQuery>,
) -> Result<StatusCode, ApiError> {
    let client = call.cluster().await?;
    let (store, caller, volumes) = (&call.state.store, &call.caller, query.delete_volumes);
    service::delete(store, &client, caller, &call.path, volumes).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// List releases
///
/// The app's revisions, newest first: the 50 newest are kept, older ones
/// are pruned as new ones are made. The newest is `current` (what should
/// run); `running` marks the one whose configuration runs, and `status`
/// what became of each.
#[utoipa::path(
    get,
    path = "/api/v1/projects/{project}/environments/{environment}/apps/{app}/releases",
    params(AppPath),
    responses((status = 200, description = "The releases.", body = Vec<ReleaseRecord>)),
)]
async fn list_releases(call: Call<AppPath>) -> Result<Json<Vec<ReleaseRecord>>, ApiError> {
    let client = call.cluster().await?;
    let (store, caller) = (&call.state.store, &call.caller);
    Ok(Json(
        service::list_releases(store, &client, caller, &call.path).await?,
    ))
}

/// Roll back
///
/// Makes an earlier revision current again, as a new release. A revision
/// the app no longer keeps (older than its 50 newest) is unknown: `422`. Its
/// domains are claimed again (`409 domain_taken`, and nothing changes, when
/// another app holds one since).
#[utoipa::path(
    post,
    path = "/api/v1/projects/{project}/environments/{environment}/apps/{app}/rollback",
    params(AppPath),
    request_body = RollbackBody,
    responses((status = 200, description = "The app.", body = AppRecord)),
)]
async fn rollback_app(
    call: Call<AppPath>,
    JsonBody(body): JsonBody<RollbackBody>,
) -> Result<Json<AppRecord>, ApiError> {
    let (client, rules) = (call.cluster().await?, HostRules::new(&call.state.config));
    let (store, caller, revision) = (&call.state.store, &call.caller, body.revision);
    Ok(Json(
        service::rollback(store, &client, &rules, caller, &call.path, revision).await?,
    ))
}

/// Promote
///
/// Copies the image and processes to the app of the same name in another
/// environment (created there if absent, without domains); the target keeps
/// its own env, domains and volumes, and claims its domains again (`409
/// domain_taken` when another app holds one).
#[utoipa::path(
    post,
    path = "/api/v1/projects/{project}/environments/{environment}/apps/{app}/promote",
    params(AppPath),
    request_body = PromoteBody,
    responses((status = 200, description = "The app in the target environment.", body = AppRecord)),
)]
async fn promote_app(
    call: Call<AppPath>,
    JsonBody(body): JsonBody<PromoteBody>,
) -> Result<Json<AppRecord>, ApiError> {
    let target = EnvironmentName::parse(&body.environment).map_err(|e| e.at("environment"))?;
    let (client, rules) = (call.cluster().await?, HostRules::new(&call.state.config));
    let (store, caller) = (&call.state.store, &call.caller);
    Ok(Json(
        service::promote(store, &client, &rules, caller, &call.path, &target).await?,
    ))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
struct LogsQuery {
    /// Lines per pod, 1 to 2000; 200 by default.
    #[param(minimum = 1, maximum = 2000)]
    tail: Option<i64>,
    /// Only the pods of this process.
    process: Option<String>,
    /// The previous container's log (after a restart).
    #[serde(default)]
    previous: bool,
    /// The output of this revision's release command instead (its Job's
    /// pods, kept a day), which belong to no process.
    #[param(minimum = 1)]
    release: Option<i64>,
    /// Only the lines written at or after this time, in Unix seconds
    /// (Kubernetes' `sinceTime`): a client following the log asks again
    /// with the second of the newest line it has, and drops the lines of
    /// that second it has already seen (`timestamps`).
    #[param(minimum = 0)]
    since: Option<i64>,
}

/// App logs
///
/// The last lines of each of the app's newest pods (at most 10). At most
/// 512 KiB of each pod's log is read (its newest lines that fit) and the
/// answer is kept within 5 MiB; an entry that lost or cut lines says
/// `truncated`.
#[utoipa::path(
    get,
    path = "/api/v1/projects/{project}/environments/{environment}/apps/{app}/logs",
    params(AppPath, LogsQuery),
    responses((status = 200, description = "One entry per pod.", body = Vec<LogEntry>)),
)]
async fn get_app_logs(
    call: Call<AppPath>,
    QueryParams(query): QueryParams<LogsQuery>,
) -> Result<Json<Vec<LogEntry>>, ApiError> {
    let window = LogWindow::new(query.tail, query.previous, query.since)?;
    let query = LogQuery::new(window, query.process, query.release)?;
    let client = call.cluster().await?;
    Ok(Json(
        operate::logs(&client, &call.caller, &call.path, &query).await?,
    ))
}

/// Restart
///
/// A rolling restart of every process of the app.
#[utoipa::path(
    post,
    path = "/api/v1/projects/{project}/environments/{environment}/apps/{app}/restart",
    params(AppPath),
    responses((status = 202, description = "Restarting.", body = AppRecord)),
)]
async fn restart_app(call: Call<AppPath>) -> Result<Accepted<AppRecord>, ApiError> {
    let client = call.cluster().await?;
    Ok(Accepted::new(
        operate::restart(&client, &call.caller, &call.path).await?,
    ))
}

/// Run a scheduled process now
///
/// Asks for a Job from the process's CronJob and answers its name; the
/// controller makes it within moments. The body is optional when the app
/// has exactly one scheduled process.
#[utoipa::path(
    post,
    path = "/api/v1/projects/{project}/environments/{environment}/apps/{app}/run",
    params(AppPath),
    request_body(content = RunBody, description = "Optional: which scheduled process."),
    responses((status = 202, description = "Started.", body = RunAnswer)),
)]
async fn run_app(
    call: Call<AppPath>,
    body: Option<JsonBody<RunBody>>,
) -> Result<Accepted<RunAnswer>, ApiError> {
    let body = body.map(|JsonBody(body)| body).unwrap_or_default();
    let client = call.cluster().await?;
    let job = operate::run_now(&client, &call.caller, &call.path, body.process.as_deref()).await?;
    Ok(Accepted::new(RunAnswer { job }))
}

/// Run a command
///
/// Runs a command once in a fresh pod of the app's current revision (its
/// image, env and secrets, the size of `process`, the environment's limits)
/// and answers at once, `pending`; `getCommand` says how it goes and its
/// exit status, `getCommandLogs` its output. At most 5 commands of an
/// environment run at once and 50 are kept (`409` beyond); an ended one is
/// kept an hour. The audit event holds the command, never its output.
#[utoipa::path(
    post,
    path = "/api/v1/projects/{project}/environments/{environment}/apps/{app}/commands",
    params(AppPath),
    request_body = CommandBody,
    responses((status = 202, description = "Started.", body = CommandRecord,
        headers(("Location" = String, description = "The command's URL.")))),
)]
async fn run_command(
    call: Call<AppPath>,
    JsonBody(body): JsonBody<CommandBody>,
) -> Result<Accepted<CommandRecord>, ApiError> {
    // Noted before the body is checked, so that a refused command is on
    // record too.
    scope::audit_detail(&commands::for_audit(&body.command));
    let new = NewCommand::parse(body)?;
    let client = call.cluster().await?;
    let command = commands::run(&client, &call.caller, &call.path, new).await?;
    Ok(Accepted::at(
        call.path.child("commands", &command.name),
        command,
    ))
}

/// List commands
///
/// The app's one-off commands, newest first, those ended within the hour
/// included.
#[utoipa::path(
    get,
    path = "/api/v1/projects/{project}/environments/{environment}/apps/{app}/commands",
    params(AppPath),
    responses((status = 200, description = "The commands.", body = Vec<CommandRecord>)),
)]
async fn list_commands(call: Call<AppPath>) -> Result<Json<Vec<CommandRecord>>, ApiError> {
    let client = call.cluster().await?;
    Ok(Json(
        commands::list(&client, &call.caller, &call.path).await?,
    ))
}

/// Get a command
///
/// How a one-off command goes: `pending` (and what it waits for),
/// `running`, `succeeded` or `failed`, with its exit status once it ended.
#[utoipa::path(
    get,
    path = "/api/v1/projects/{project}/environments/{environment}/apps/{app}/commands/{command}",
    params(CommandPath),
    responses((status = 200, description = "The command.", body = CommandRecord)),
)]
async fn get_command(call: Call<CommandPath>) -> Result<Json<CommandRecord>, ApiError> {
    let client = call.cluster().await?;
    Ok(Json(
        commands::get(&client, &call.caller, &call.path).await?,
    ))
}

/// Command output
///
/// The log of the command's pod (one entry; none before its pod is made),
/// within the bounds of `getAppLogs`.
#[utoipa::path(
    get,
    path = "/api/v1/projects/{project}/environments/{environment}/apps/{app}/commands/{command}/logs",
    params(CommandPath, TailQuery),
    responses((status = 200, description = "The command's pod's log.", body = Vec<LogEntry>)),
)]
async fn get_command_logs(
    call: Call<CommandPath>,
    QueryParams(query): QueryParams<TailQuery>,
) -> Result<Json<Vec<LogEntry>>, ApiError> {
    let window = query.window()?;
    let client = call.cluster().await?;
    Ok(Json(
        commands::logs(&client, &call.caller, &call.path, window).await?,
    ))
}

/// Check domains
///
/// Resolves each of the app's domains and says whether it points at the
/// gateway.
#[utoipa::path(
    get,
    path = "/api/v1/projects/{project}/environments/{environment}/apps/{app}/domains",
    params(AppPath),
    responses((status = 200, description = "One entry per domain.", body = Vec<DomainCheck>)),
)]
async fn check_app_domains(call: Call<AppPath>) -> Result<Json<Vec<DomainCheck>>, ApiError> {
    let client = call.cluster().await?;
    let (state, caller) = (&call.state, &call.caller);
    let checker = &state.domain_check;
    Ok(Json(
        service::check_domains(&state.store, &client, checker, caller, &call.path).await?,
    ))
}
