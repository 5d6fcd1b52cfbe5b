//! The `secrets` function: the secrets of an environment. The rules live in
//! `berth_api::secrets`; this crate maps HTTP onto them.

use axum::Json;
use axum::extract::DefaultBodyLimit;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::MethodRouter;
use serde_json::Value;

use berth_api::ApiError;
use berth_api::AppState;
use berth_api::http::{Call, Created, JsonBody, Located};
use berth_api::openapi::cluster_failures;
use berth_api::secrets::{self, MAX_PUT_BODY_BYTES, PutOutcome};
use berth_domain::Operation;
use berth_domain::paths::{EnvironmentPath, SecretPath};
use berth_records::secrets::{PutAnswer, PutBody, SecretSummary};

berth_api::operations! {
    tag: "secrets",
    failures: failures,
    handlers: [
        list_secrets,
        // Only this route takes bodies beyond the common 256 KiB, so that
        // the 512 KiB rule on values is the one a caller meets.
        put_secret => |route: MethodRouter<AppState>| {
            route.layer(DefaultBodyLimit::max(MAX_PUT_BODY_BYTES))
        },
        delete_secret,
    ],
}

fn failures(operation: Operation) -> Vec<ApiError> {
    let mut failures = cluster_failures(operation != Operation::ListSecrets);
    match operation {
        Operation::PutSecret => {
            failures.extend([
                ApiError::ValidationFailed(String::new()),
                ApiError::SecretNotManaged,
                ApiError::EnvironmentDeleting,
            ]);
            failures.extend(berth_api::openapi::namespace_failures());
        }
        Operation::DeleteSecret => {
            failures.extend([ApiError::SecretNotManaged, ApiError::EnvironmentDeleting]);
            failures.extend(berth_api::openapi::namespace_failures());
        }
        _ => {}
    }
    failures
}

/// List secrets
///
/// The secrets of an environment: names and keys, never values.
#[utoipa::path(
    get,
    path = "/api/v1/projects/{project}/environments/{environment}/secrets",
    params(EnvironmentPath),
    responses((status = 200, description = "The secrets.", body = Vec<SecretSummary>)),
)]
async fn list_secrets(call: Call<EnvironmentPath>) -> Result<Json<Vec<SecretSummary>>, ApiError> {
    let client = call.cluster().await?;
    Ok(Json(
        secrets::list(&client, &call.caller, &call.path).await?,
    ))
}

/// The body is taken as plain JSON: `berth_api::secrets::parse_data`
/// checks its shape with messages that never quote a value.
/// Create or replace a secret
///
/// Stores the values as a Kubernetes Secret and restarts the apps that read
/// it. Bodies up to 768 KiB.
#[utoipa::path(
    put,
    path = "/api/v1/projects/{project}/environments/{environment}/secrets/{secret}",
    params(SecretPath),
    request_body = PutBody,
    responses(
        (status = 201, description = "Created.", body = PutAnswer,
            headers(("Location" = String, description = "The secret's URL."))),
        (status = 200, description = "Replaced.", body = PutAnswer),
    ),
)]
async fn put_secret(
    call: Call<SecretPath>,
    JsonBody(body): JsonBody<Value>,
) -> Result<Response, ApiError> {
    let client = call.cluster().await?;
    Ok(
        match secrets::put(&client, &call.caller, &call.path, &body).await? {
            (PutOutcome::Created, answer) => {
                let location = call
                    .path
                    .environment_path()
                    .child("secrets", &answer.secret.name);
                Created::at(location, answer).into_response()
            }
            (PutOutcome::Replaced, answer) => Json(answer).into_response(),
        },
    )
}

/// Delete a secret
///
/// Only a secret Berth created, and that no app reads.
#[utoipa::path(
    delete,
    path = "/api/v1/projects/{project}/environments/{environment}/secrets/{secret}",
    params(SecretPath),
    responses((status = 204, description = "Deleted.")),
)]
async fn delete_secret(call: Call<SecretPath>) -> Result<StatusCode, ApiError> {
    let client = call.cluster().await?;
    secrets::delete(&client, &call.caller, &call.path).await?;
    Ok(StatusCode::NO_CONTENT)
}
