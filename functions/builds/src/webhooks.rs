//! The webhook operations of the `builds` function: an app's hook (made,
//! read, deleted by its team) and the receiver GitHub and GitLab call. The
//! rules live in `berth_api::webhooks`.

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

use berth_api::ApiError;
use berth_api::AppState;
use berth_api::http::{Accepted, Call, Created};
use berth_api::openapi::cluster_failures;
use berth_api::webhooks::service::{self, Received};
use berth_domain::ids::RecordId;
use berth_domain::paths::AppPath;
use berth_records::builds::BuildRecord;
use berth_records::webhooks::{CreatedWebhook, IgnoredDelivery, WebhookRecord};

/// `/api/v1/hooks/{hook}`.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
#[allow(dead_code)]
struct HookPath {
    /// The hook's id, from its `url`.
    hook: RecordId,
}

/// What the receiver can answer besides its successes: `401` for every
/// delivery it cannot trust, the body's failures, and those of starting a
/// build (the store, the cluster, an app gone meanwhile, numbers taken).
pub fn receiver_failures() -> Vec<ApiError> {
    let mut failures = cluster_failures(true);
    failures.push(ApiError::EnvironmentDeleting);
    failures.extend(berth_api::openapi::namespace_failures());
    failures.extend([
        ApiError::Unauthenticated,
        ApiError::StorageUnavailable(String::new()),
        ApiError::NotFound(berth_domain::Missing::Route),
    ]);
    failures
}

/// Make an app's webhook
///
/// Makes the app's git webhook, or replaces it: the old URL and secret stop
/// working at once (and the builds the old hook started are cancelled, as
/// when it is deleted). Give `url` (on this API's origin) and `secret` to
/// GitHub (content type `application/json`, the push event) or GitLab
/// (push events); a push to the app's branch then starts a build of the
/// pushed commit. The secret is in this answer only.
#[utoipa::path(
    post,
    path = "/api/v1/projects/{project}/environments/{environment}/apps/{app}/webhook",
    params(AppPath),
    responses((status = 201, description = "Made; `secret` is shown this once.",
        body = CreatedWebhook)),
)]
pub async fn create_webhook(call: Call<AppPath>) -> Result<Created<CreatedWebhook>, ApiError> {
    let client = call.cluster().await?;
    let created = service::create(&call.state.store, &client, &call.caller, &call.path).await?;
    Ok(Created::new(created))
}

/// Get an app's webhook
///
/// Its receiver URL and when it was made; never its secret.
#[utoipa::path(
    get,
    path = "/api/v1/projects/{project}/environments/{environment}/apps/{app}/webhook",
    params(AppPath),
    responses((status = 200, description = "The webhook.", body = WebhookRecord)),
)]
pub async fn get_webhook(call: Call<AppPath>) -> Result<Json<WebhookRecord>, ApiError> {
    let client = call.cluster().await?;
    Ok(Json(
        service::get(&call.state.store, &client, &call.caller, &call.path).await?,
    ))
}

/// Delete an app's webhook
///
/// Its URL and secret stop working at once, and the builds it started
/// that have not finished are cancelled.
#[utoipa::path(
    delete,
    path = "/api/v1/projects/{project}/environments/{environment}/apps/{app}/webhook",
    params(AppPath),
    responses((status = 204, description = "Deleted.")),
)]
pub async fn delete_webhook(call: Call<AppPath>) -> Result<StatusCode, ApiError> {
    let client = call.cluster().await?;
    service::delete(&call.state.store, &client, &call.caller, &call.path).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Receive a git push
///
/// Where GitHub and GitLab deliver an app's webhook events. No session or
/// token: a delivery is accepted only with the hook's signature — GitHub's
/// `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the body under the
/// secret>` or GitLab's `X-Gitlab-Token: <secret>` — and is otherwise
/// `401`, the same for an unknown hook, a missing or a wrong signature
/// (so the conformance run, which cannot sign, gets `401` throughout).
/// Events are told by `X-GitHub-Event` / `X-Gitlab-Event`, deliveries by
/// `X-GitHub-Delivery` / `X-Gitlab-Event-UUID`. The body must be
/// `application/json`, at most 1 MiB. A push to the app's branch (its
/// `git_ref`, else the repository's default branch) starts a build of the
/// pushed commit (`202`, actor `webhook`), which builds only if the commit
/// is on that branch (else the build fails saying so); anything else is
/// `200` with the reason it was ignored: another event (`ping`), another
/// branch, a tag, a deleted branch, a delivery received before (at any
/// time: deliveries are remembered as long as the hook exists). An
/// environment being deleted or not provisioned yet takes no build (`409`,
/// as `createBuild`): the sender's retry comes later.
#[utoipa::path(
    post,
    path = "/api/v1/hooks/{hook}",
    params(HookPath),
    request_body(content = Object, content_type = "application/json",
        description = "The push payload, as GitHub or GitLab sends it."),
    responses(
        (status = 200, description = "Accepted and ignored, with the reason.",
            body = IgnoredDelivery),
        (status = 202, description = "A build of the pushed commit was queued.",
            body = BuildRecord),
    ),
)]
pub async fn receive_webhook(
    State(state): State<AppState>,
    Path(hook): Path<String>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    // Parsed here, and answered as an unknown hook when it does not parse
    // (the same `401`, after the same work): `ObjectPath`'s `404` would
    // tell ids apart.
    let hook = RecordId::parse(&hook).ok();
    let body = body.map_err(|error| berth_api::http::extract::bytes_rejection(&error))?;
    Ok(
        match service::receive(&state, hook.as_ref(), &headers, &body).await? {
            Received::Ignored(ignored) => {
                (StatusCode::OK, Json(IgnoredDelivery { ignored })).into_response()
            }
            Received::Started(build) => Accepted::new(build).into_response(),
        },
    )
}
