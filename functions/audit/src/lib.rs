//! The `audit` function: the caller's organization's audit log.

use axum::Json;
use axum::extract::State;
use serde::Deserialize;

use berth_api::AppState;
use berth_api::http::{Caller, QueryParams};
use berth_domain::ApiError;
use berth_records::audit::AuditPage;
use berth_store::audit::{DEFAULT_PAGE, MAX_PAGE};

berth_api::operations! {
    tag: "audit",
    failures: |_| Vec::new(),
    handlers: [
        list_audit_events,
    ],
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
struct PageQuery {
    /// Events per page, 1 to 200; 50 by default.
    #[param(minimum = 1, maximum = 200)]
    limit: Option<u32>,
    /// Only events older than this `seq` (the previous page's `next_before`).
    before: Option<u64>,
}

/// List audit events
///
/// The organization's audit log, newest first, a page at a time.
#[utoipa::path(
    get,
    path = "/api/v1/audit",
    params(PageQuery),
    responses((status = 200, description = "A page of events.", body = AuditPage)),
)]
async fn list_audit_events(
    State(state): State<AppState>,
    caller: Caller,
    QueryParams(query): QueryParams<PageQuery>,
) -> Result<Json<AuditPage>, ApiError> {
    let limit = query.limit.unwrap_or(DEFAULT_PAGE);
    if !(1..=MAX_PAGE).contains(&limit) {
        return Err(ApiError::InvalidRequest(format!(
            "limit: must be 1 to {MAX_PAGE}"
        )));
    }
    // The description gives `before` as an int64 (`format`), as every
    // `seq` is: a larger one is out of range, as a negative one is.
    if query
        .before
        .is_some_and(|before| i64::try_from(before).is_err())
    {
        return Err(ApiError::InvalidRequest(format!(
            "before: must be 0 to {}",
            i64::MAX
        )));
    }
    Ok(Json(
        state
            .audit
            .page(caller.user.org.as_str(), limit, query.before)
            .await?,
    ))
}
