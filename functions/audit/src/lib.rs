//! The `audit` function: the caller's organization's audit log.

use axum::Json;
use axum::extract::State;

use berth_api::ApiError;
use berth_api::AppState;
use berth_api::http::{Caller, QueryParams};
use berth_records::audit::{AuditPage, PageQuery};

berth_api::operations! {
    tag: "audit",
    failures: |_| Vec::new(),
    handlers: [
        list_audit_events,
    ],
}

/// List audit events
///
/// The organization's audit log, newest first, a page at a time; only the
/// events of an actor, an action or a target if asked. A filtered page
/// reads at most 2000 events: it may then hold fewer than `limit` events,
/// even none, with `next_before` set: page on from there.
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
    let request = query.checked()?;
    Ok(Json(
        state
            .audit
            .filtered_page(
                caller.user.org.as_str(),
                request.limit,
                request.before,
                &request.filter,
            )
            .await?,
    ))
}
