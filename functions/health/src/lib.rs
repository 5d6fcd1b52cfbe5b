//! The `health` function: the liveness probe and the per-subsystem report.

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};

use berth_shared::health::{self, HealthReport};
use berth_shared::http::{Caller, operation};
use berth_shared::{AppState, Operation};

pub fn router() -> Router<AppState> {
    Router::new()
        .route(
            "/api/v1/healthz",
            operation(Operation::GetHealth, get(liveness)),
        )
        .route(
            "/api/v1/healthz/details",
            operation(Operation::GetHealthDetails, get(details)),
        )
}

/// Answers while the process is up; asks nothing of DynamoDB, for load balancers.
async fn liveness() -> Json<serde_json::Value> {
    Json(serde_json::json!({ "status": "ok" }))
}

async fn details(
    State(state): State<AppState>,
    _caller: Caller,
) -> (StatusCode, Json<HealthReport>) {
    let ([dynamodb, audit], cluster) = tokio::join!(
        health::dynamodb_and_audit(&state.store),
        health::cluster(&state.cluster)
    );
    let report = HealthReport::of(vec![dynamodb, audit, cluster]);
    let status = if report.all_up() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, Json(report))
}
