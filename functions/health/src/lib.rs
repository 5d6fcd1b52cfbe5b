//! The `health` function: the liveness probe, the per-subsystem report, and
//! the API's OpenAPI description.

use axum::Json;
use axum::extract::State;
use axum::http::{StatusCode, header};

use berth_api::ApiError;
use berth_api::AppState;
use berth_api::health;
use berth_api::http::Caller;
use berth_domain::Operation;
use berth_records::health::{HealthReport, Liveness};

/// The whole API's description, generated from the code of every function
/// by `berth_local::openapi` and committed; served as it is, so that this
/// function builds nothing at start and links no other function. A test
/// (`tests/api/openapi.rs`) fails when the file and the code disagree.
pub const API_DESCRIPTION: &[u8] = include_bytes!("../../../openapi/openapi.json");

berth_api::operations! {
    tag: "health",
    failures: failures,
    handlers: [
        get_health,
        get_health_details,
        get_api_description,
    ],
}

/// Nothing beyond what every operation can give: the report checks the
/// store and the cluster itself and answers with what it found.
fn failures(_operation: Operation) -> Vec<ApiError> {
    Vec::new()
}

/// Liveness probe
///
/// Answers while the process is up; asks nothing of DynamoDB, for load
/// balancers. Needs no credentials.
#[utoipa::path(
    get,
    path = "/api/v1/healthz",
    responses((status = 200, description = "The process is up.", body = Liveness)),
)]
async fn get_health() -> Json<Liveness> {
    Json(Liveness {
        status: "ok".into(),
    })
}

/// Health of each subsystem
///
/// Checks DynamoDB, the audit log and the cluster, each with its latency:
/// 200 when every subsystem is up, 503 with the same report otherwise.
#[utoipa::path(
    get,
    path = "/api/v1/healthz/details",
    responses(
        (status = 200, description = "Every subsystem is up.", body = HealthReport),
        (status = 503, description = "A subsystem is down: the report says which.", body = HealthReport),
    ),
)]
async fn get_health_details(
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

/// The API description
///
/// This document: OpenAPI 3.1, generated from Berth's code. Needs no
/// credentials.
#[utoipa::path(
    get,
    path = "/api/v1/openapi.json",
    tag = "openapi",
    responses((status = 200, description = "The OpenAPI 3.1 document.", body = Object)),
)]
async fn get_api_description() -> ([(header::HeaderName, &'static str); 1], &'static [u8]) {
    (
        [(header::CONTENT_TYPE, "application/json")],
        API_DESCRIPTION,
    )
}
