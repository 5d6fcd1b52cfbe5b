//! The `audit` function: the caller's organization's audit log.

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use serde::Deserialize;

use berth_shared::audit::{AuditPage, DEFAULT_PAGE, MAX_PAGE};
use berth_shared::http::{Caller, QueryParams, operation};
use berth_shared::{ApiError, AppState, Operation, Permission};

pub fn router() -> Router<AppState> {
    Router::new().route(
        "/api/v1/audit",
        operation(Operation::ListAuditEvents, get(list_audit_events)),
    )
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PageQuery {
    limit: Option<u32>,
    before: Option<u64>,
}

async fn list_audit_events(
    State(state): State<AppState>,
    caller: Caller,
    QueryParams(query): QueryParams<PageQuery>,
) -> Result<Json<AuditPage>, ApiError> {
    caller.require(Permission::AuditRead)?;
    let limit = query.limit.unwrap_or(DEFAULT_PAGE);
    if !(1..=MAX_PAGE).contains(&limit) {
        return Err(ApiError::InvalidRequest(format!(
            "limit: must be 1 to {MAX_PAGE}"
        )));
    }
    Ok(Json(
        state
            .audit
            .page(&caller.user.org, limit, query.before)
            .await?,
    ))
}
