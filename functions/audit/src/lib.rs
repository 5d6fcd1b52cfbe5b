//! The `audit` function: the caller's organization's audit log.

use axum::Json;

use berth_api::ApiError;
use berth_api::http::{Call, QueryParams};
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
    call: Call,
    QueryParams(query): QueryParams<PageQuery>,
) -> Result<Json<AuditPage>, ApiError> {
    let request = query.checked()?;
    let (org, log) = (call.caller.user.org.as_str(), &call.state.audit);
    let (limit, before) = (request.limit, request.before);
    Ok(Json(
        log.filtered_page(org, limit, before, &request.filter)
            .await?,
    ))
}
