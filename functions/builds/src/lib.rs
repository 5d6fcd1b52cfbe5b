//! The `builds` function: builds of apps from source (queue one, list them,
//! read one and its output) and the apps' git webhooks ([`webhooks`]). The
//! rules live in `berth_api::builds` and `berth_api::webhooks`; this
//! crate maps HTTP onto them.

mod webhooks;

use axum::Json;
use axum::extract::DefaultBodyLimit;
use axum::routing::MethodRouter;
use serde::Deserialize;

use berth_api::ApiError;
use berth_api::AppState;
use berth_api::apps::operate::TailQuery;
use berth_api::builds::service::{self, DEFAULT_PAGE, MAX_PAGE};
use berth_api::http::call::Target;
use berth_api::http::{Accepted, Call, JsonBody, Located, QueryParams};
use berth_api::openapi::cluster_failures;
use berth_api::webhooks::service::MAX_DELIVERY_BYTES;
use berth_domain::Operation;
use berth_domain::git::GitRef;
use berth_domain::paths::{AppPath, BuildPath};
use berth_records::apps::record::LogEntry;
use berth_records::builds::{BuildPage, BuildRecord, CreateBuildBody};
use webhooks::{
    __path_create_webhook, __path_delete_webhook, __path_get_webhook, __path_receive_webhook,
    create_webhook, delete_webhook, get_webhook, receive_webhook,
};

berth_api::operations! {
    tag: "builds",
    failures: failures,
    finish: finish,
    handlers: [
        create_build,
        cancel_build,
        list_builds,
        get_build,
        get_build_logs,
        create_webhook,
        get_webhook,
        delete_webhook,
        // Only the receiver takes bodies beyond the common 256 KiB: push
        // payloads of many commits.
        receive_webhook => |route: MethodRouter<AppState>| {
            route.layer(DefaultBodyLimit::max(MAX_DELIVERY_BYTES))
        },
    ],
}

/// What the annotations cannot say: createBuild's body may be left out.
fn finish(api: &mut utoipa::openapi::OpenApi) {
    berth_api::openapi::optional_body(api, Operation::CreateBuild);
}

fn failures(operation: Operation) -> Vec<ApiError> {
    if operation == Operation::ReceiveWebhook {
        return webhooks::receiver_failures();
    }
    let changes = matches!(
        operation,
        Operation::CreateBuild
            | Operation::CancelBuild
            | Operation::CreateWebhook
            | Operation::DeleteWebhook
    );
    if operation != Operation::CreateBuild {
        // A webhook: the app is read from the cluster, the hook is
        // DynamoDB's (a replacement racing another is 409).
        return cluster_failures(changes);
    }
    let mut failures = cluster_failures(changes);
    if changes {
        // The environment must take writes, as for any deploy; `ref` is
        // checked.
        failures.push(ApiError::EnvironmentDeleting);
        failures.extend(berth_api::openapi::namespace_failures());
        failures.push(ApiError::ValidationFailed(String::new()));
    }
    failures
}

/// Build an app
///
/// Queues a build of the app's source: its `git_ref`, or the `ref` given.
/// The controller runs one build of an app at a time; when several are
/// queued, all but the newest are cancelled. On success the app gets a new
/// revision with the built image pinned by digest. An app without a
/// `git_repo` has nothing to build (`409`). The 50 newest builds are kept.
#[utoipa::path(
    post,
    path = "/api/v1/projects/{project}/environments/{environment}/apps/{app}/builds",
    params(AppPath),
    request_body(content = CreateBuildBody, description = "Optional: a ref to build instead \
        of the app's git_ref."),
    responses((status = 202, description = "Queued.", body = BuildRecord,
        headers(("Location" = String, description = "The build's URL.")))),
)]
async fn create_build(
    call: Call<AppPath>,
    body: Option<JsonBody<CreateBuildBody>>,
) -> Result<Accepted<BuildRecord>, ApiError> {
    let body = body.map(|JsonBody(body)| body).unwrap_or_default();
    let requested_ref = body
        .git_ref
        .as_deref()
        .map(|git_ref| GitRef::parse(git_ref).map_err(|e| e.at("ref")))
        .transpose()?;
    let (client, path) = (call.cluster().await?, &call.path);
    let build = service::create(&client, &call.caller, path, requested_ref).await?;
    path.build(build.id).note();
    Ok(Accepted::at(path.child("builds", build.id), build))
}

/// Cancel a build
///
/// Asks for the build to stop: the controller deletes its Job and marks it
/// `cancelled`, saying who cancelled it. The answer is the build as it is
/// then (`queued` or `running`, its `message` saying it is being
/// cancelled). A build that already finished, or finished building (its
/// image is becoming the app's revision: roll back to undo it), is `409`.
/// Rolling back, setting the image by hand, changing or removing the
/// source, and deleting the webhook that started a build cancel builds too.
#[utoipa::path(
    post,
    path = "/api/v1/projects/{project}/environments/{environment}/apps/{app}/builds/{build}/cancel",
    params(BuildPath),
    responses((status = 202, description = "Being cancelled.", body = BuildRecord)),
)]
async fn cancel_build(call: Call<BuildPath>) -> Result<Accepted<BuildRecord>, ApiError> {
    let client = call.cluster().await?;
    Ok(Accepted::new(
        service::cancel(&client, &call.caller, &call.path).await?,
    ))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
struct PageQuery {
    /// Builds per page, 1 to 50; 20 by default.
    #[param(minimum = 1, maximum = 50)]
    limit: Option<i64>,
    /// Only builds older than this id (the previous page's `next_before`).
    #[param(minimum = 1)]
    before: Option<i64>,
}

/// List builds
///
/// The app's builds, newest first, a page at a time (the 50 newest are
/// kept).
#[utoipa::path(
    get,
    path = "/api/v1/projects/{project}/environments/{environment}/apps/{app}/builds",
    params(AppPath, PageQuery),
    responses((status = 200, description = "A page of builds.", body = BuildPage)),
)]
async fn list_builds(
    call: Call<AppPath>,
    QueryParams(query): QueryParams<PageQuery>,
) -> Result<Json<BuildPage>, ApiError> {
    let limit = query.limit.unwrap_or(DEFAULT_PAGE);
    if !(1..=MAX_PAGE).contains(&limit) {
        return Err(ApiError::InvalidRequest(format!(
            "limit: must be 1 to {MAX_PAGE}"
        )));
    }
    if query.before.is_some_and(|before| before < 1) {
        return Err(ApiError::InvalidRequest(
            "before: must be a build's id (1 or more)".into(),
        ));
    }
    let client = call.cluster().await?;
    let page = service::list(&client, &call.caller, &call.path, limit, query.before).await?;
    Ok(Json(page))
}

/// Get a build
///
/// One build of the app: its status, commit and image once known.
#[utoipa::path(
    get,
    path = "/api/v1/projects/{project}/environments/{environment}/apps/{app}/builds/{build}",
    params(BuildPath),
    responses((status = 200, description = "The build.", body = BuildRecord)),
)]
async fn get_build(call: Call<BuildPath>) -> Result<Json<BuildRecord>, ApiError> {
    let client = call.cluster().await?;
    Ok(Json(service::get(&client, &call.caller, &call.path).await?))
}

/// Build logs
///
/// The output of the build's steps (the containers of its pod, in the order
/// they run), bounded as app logs are: the last `tail` lines of each, at
/// most 512 KiB of each read, the answer within 5 MiB; an entry that lost
/// or cut lines says `truncated`. Empty until the build's pod exists.
#[utoipa::path(
    get,
    path = "/api/v1/projects/{project}/environments/{environment}/apps/{app}/builds/{build}/logs",
    params(BuildPath, TailQuery),
    responses((status = 200, description = "One entry per step.", body = Vec<LogEntry>)),
)]
async fn get_build_logs(
    call: Call<BuildPath>,
    QueryParams(query): QueryParams<TailQuery>,
) -> Result<Json<Vec<LogEntry>>, ApiError> {
    // getAppLogs' bounds, checked by its query's rules.
    let window = query.window()?;
    let client = call.cluster().await?;
    Ok(Json(
        service::logs(&client, &call.caller, &call.path, window).await?,
    ))
}
