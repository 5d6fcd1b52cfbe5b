//! The `secrets` function: the secrets of an environment. The rules live in
//! `berth_shared::secrets`; this crate maps HTTP onto them.

use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, put};
use axum::{Json, Router};
use serde_json::Value;

use berth_shared::cluster::secrets::SecretPath;
use berth_shared::http::{Caller, JsonBody, operation, scope};
use berth_shared::secrets::{self, MAX_PUT_BODY_BYTES, PutOutcome, SecretSummary};
use berth_shared::{ApiError, AppState, Operation, Permission};

const SECRETS: &str = "/api/v1/projects/{project}/environments/{environment}/secrets";
const SECRET: &str = "/api/v1/projects/{project}/environments/{environment}/secrets/{secret}";

pub fn router() -> Router<AppState> {
    Router::new()
        .route(
            SECRETS,
            operation(Operation::ListSecrets, get(list_secrets)),
        )
        .route(
            SECRET,
            // Only this route takes bodies beyond the common 256 KiB, so
            // that the 512 KiB rule on values is the one a caller meets.
            operation(
                Operation::PutSecret,
                put(put_secret).layer(DefaultBodyLimit::max(MAX_PUT_BODY_BYTES)),
            )
            .merge(operation(Operation::DeleteSecret, delete(delete_secret))),
        )
}

/// The path of one secret, noted as the call's audit target.
fn secret_path((project, environment, secret): (String, String, String)) -> SecretPath {
    scope::audit_target("secret", secret.clone());
    SecretPath {
        project,
        environment,
        secret,
    }
}

async fn list_secrets(
    State(state): State<AppState>,
    caller: Caller,
    Path((project, environment)): Path<(String, String)>,
) -> Result<Json<Vec<SecretSummary>>, ApiError> {
    scope::audit_target("environment", format!("{project}-{environment}"));
    caller.require(Permission::Read)?;
    let client = state.cluster.client().await?;
    Ok(Json(
        secrets::list(&client, &caller, &project, &environment).await?,
    ))
}

/// The body is taken as plain JSON: `berth_shared::secrets::parse_data`
/// checks its shape with messages that never quote a value.
async fn put_secret(
    State(state): State<AppState>,
    caller: Caller,
    Path(path): Path<(String, String, String)>,
    JsonBody(body): JsonBody<Value>,
) -> Result<Response, ApiError> {
    let path = secret_path(path);
    caller.require(Permission::SecretWrite)?;
    let client = state.cluster.client().await?;
    Ok(match secrets::put(&client, &caller, &path, &body).await? {
        (PutOutcome::Created, answer) => {
            let location = format!(
                "/api/v1/projects/{}/environments/{}/secrets/{}",
                path.project, path.environment, answer.secret.name
            );
            (
                StatusCode::CREATED,
                [(header::LOCATION, location)],
                Json(answer),
            )
                .into_response()
        }
        (PutOutcome::Replaced, answer) => Json(answer).into_response(),
    })
}

async fn delete_secret(
    State(state): State<AppState>,
    caller: Caller,
    Path(path): Path<(String, String, String)>,
) -> Result<StatusCode, ApiError> {
    let path = secret_path(path);
    caller.require(Permission::SecretWrite)?;
    let client = state.cluster.client().await?;
    secrets::delete(&client, &caller, &path).await?;
    Ok(StatusCode::NO_CONTENT)
}
