//! Test knobs over HTTP, under `/_standin`, for a stand-in running as a separate process.
//! Requests to these routes never hit injected faults.

use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use bytes::Bytes;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::json;

use crate::faults::Fault;
use crate::logs::LogKey;
use crate::server::{App, kubeconfig_yaml};

pub fn routes() -> Router<App> {
    Router::new()
        .route("/_standin/healthz", get(|| async { "ok" }))
        .route("/_standin/kubeconfig", get(kubeconfig))
        .route(
            "/_standin/faults",
            get(list_faults).post(add_fault).delete(clear_faults),
        )
        .route("/_standin/logs", post(set_logs).delete(clear_logs))
        .route("/_standin/unreachable", post(unreachable))
        .route("/_standin/compact", post(compact))
        .route("/_standin/namespace-deletion", post(namespace_deletion))
}

/// Parses a JSON body whatever its `Content-Type` (so plain `curl -d` works).
fn body<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, (StatusCode, String)> {
    serde_json::from_slice(bytes).map_err(|e| {
        (
            StatusCode::BAD_REQUEST,
            format!("invalid knob request: {e}\n"),
        )
    })
}

async fn kubeconfig(State(app): State<App>) -> String {
    kubeconfig_yaml(&format!("http://{}", app.addr()))
}

async fn list_faults(State(app): State<App>) -> Response {
    Json(app.faults.pending()).into_response()
}

async fn add_fault(State(app): State<App>, bytes: Bytes) -> Response {
    let fault: Fault = match body(&bytes) {
        Ok(f) => f,
        Err(e) => return e.into_response(),
    };
    app.faults.add(fault);
    (StatusCode::CREATED, Json(app.faults.pending())).into_response()
}

async fn clear_faults(State(app): State<App>) -> StatusCode {
    app.faults.clear();
    StatusCode::NO_CONTENT
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SetLogs {
    #[serde(flatten)]
    key: LogKey,
    lines: Vec<String>,
    /// Append instead of replacing.
    #[serde(default)]
    append: bool,
}

async fn set_logs(State(app): State<App>, bytes: Bytes) -> Response {
    let req: SetLogs = match body(&bytes) {
        Ok(r) => r,
        Err(e) => return e.into_response(),
    };
    if req.append {
        app.logs.append(req.key, req.lines);
    } else {
        app.logs.set(req.key, req.lines);
    }
    StatusCode::NO_CONTENT.into_response()
}

async fn clear_logs(State(app): State<App>) -> StatusCode {
    app.logs.clear();
    StatusCode::NO_CONTENT
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Unreachable {
    #[serde(default = "yes")]
    unreachable: bool,
    /// Come back by itself after this long. Needed when calling through the API listener,
    /// which is the one going away.
    duration_ms: Option<u64>,
}

fn yes() -> bool {
    true
}

/// Switches reachability. The switch happens just after the answer is sent, so that the
/// caller's own connection gets its answer first.
async fn unreachable(State(app): State<App>, bytes: Bytes) -> Response {
    let req: Unreachable = match body(if bytes.is_empty() { b"{}" } else { &bytes }) {
        Ok(r) => r,
        Err(e) => return e.into_response(),
    };
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        if let Err(e) = app.set_unreachable(req.unreachable).await {
            tracing::error!("switching reachability: {e}");
            return;
        }
        if let Some(ms) = req.duration_ms {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            if let Err(e) = app.set_unreachable(!req.unreachable).await {
                tracing::error!("switching reachability back: {e}");
            }
        }
    });
    (
        StatusCode::ACCEPTED,
        Json(json!({"unreachable": req.unreachable, "durationMs": req.duration_ms})),
    )
        .into_response()
}

async fn compact(State(app): State<App>) -> StatusCode {
    app.state().compact();
    StatusCode::NO_CONTENT
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct NamespaceDeletion {
    delay_ms: u64,
}

async fn namespace_deletion(State(app): State<App>, bytes: Bytes) -> Response {
    let req: NamespaceDeletion = match body(&bytes) {
        Ok(r) => r,
        Err(e) => return e.into_response(),
    };
    app.set_namespace_deletion_delay(Duration::from_millis(req.delay_ms));
    StatusCode::NO_CONTENT.into_response()
}
