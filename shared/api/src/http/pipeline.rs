//! The one middleware around every function: it names the request, resolves
//! its credentials, runs the route, then writes the call's audit event and its
//! log line before the response leaves.

use std::net::SocketAddr;
use std::time::Instant;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use lambda_http::RequestExt;
use lambda_http::request::RequestContext;

use super::scope::{AuditNotes, RequestScope};
use crate::ApiError;
use crate::AppState;
use berth_domain::Operation;
use berth_records::audit::{ActorKind, Outcome};
use berth_store::audit::Call;
use berth_store::identity::{Authentication, authenticate::authenticate};
use berth_store::keys::SYSTEM_ORG;

pub const REQUEST_ID_HEADER: &str = "x-request-id";

/// The caller's address, as API Gateway or the socket saw it.
#[derive(Debug, Clone)]
pub struct ClientIp(pub String);

pub async fn pipeline(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    let started = Instant::now();
    let (gateway_request_id, source_ip) = gateway_context(&request);
    let request_id = gateway_request_id.unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let ip = source_ip.or_else(|| {
        request
            .extensions()
            .get::<ConnectInfo<SocketAddr>>()
            .map(|ConnectInfo(addr)| addr.ip().to_string())
    });
    let authentication = authenticate(&state.store, request.headers()).await;
    request.extensions_mut().insert(authentication.clone());
    // A scoped token's check reads its project (`extract::within_scope`).
    #[cfg(feature = "cluster")]
    request.extensions_mut().insert(state.cluster.clone());
    request
        .extensions_mut()
        .insert(ClientIp(ip.clone().unwrap_or_else(|| "unknown".into())));

    // One deadline for the whole route, every call it makes included, so
    // that a chain of slow calls is cut off while the function still has
    // time to answer and to write the audit event below. Dropping the
    // route's future cancels whatever call it was waiting on. The scope
    // carries it, so that retries of cluster calls stop short of it.
    let deadline = tokio::time::Instant::now() + state.config.request_deadline;
    let scope = RequestScope::new(request_id.clone(), deadline);
    let routed = tokio::time::timeout_at(deadline, scope.clone().run(next.run(request))).await;
    let mut response = match routed {
        Ok(response) => response,
        Err(_elapsed) => {
            scope
                .clone()
                .run(async { ApiError::DeadlineExceeded.into_response() })
                .await
        }
    };

    let notes = scope.notes();
    let operation = response
        .extensions()
        .get::<Operation>()
        .copied()
        .or(notes.operation)
        .unwrap_or(Operation::UnknownRoute);
    let status = response.status().as_u16();
    let call = describe_call(&authentication, &notes, operation, status, ip, &request_id);
    if !notes.summarised {
        for org in audit_partitions(&authentication, &notes) {
            // Never lost: an event that cannot be stored is logged for replay.
            state.audit.record(&org, &call).await;
        }
    }
    if notes.login_attempted && notes.login_account.is_none() {
        equal_login_round_trips(&state).await;
    }
    if let Ok(value) = HeaderValue::from_str(&request_id) {
        response.headers_mut().insert(REQUEST_ID_HEADER, value);
    }
    tracing::info!(
        request_id = %request_id,
        operation = %operation.id(),
        status,
        outcome = %Outcome::of_status(status).as_str(),
        actor_kind = %call.actor_kind.as_str(),
        latency_ms = started.elapsed().as_secs_f64() * 1000.0,
        "request"
    );
    response
}

/// The API Gateway request id and source address, when running on Lambda.
fn gateway_context(request: &Request) -> (Option<String>, Option<String>) {
    match request.request_context_ref() {
        Some(RequestContext::ApiGatewayV2(context)) => {
            (context.request_id.clone(), context.http.source_ip.clone())
        }
        _ => (None, None),
    }
}

fn describe_call(
    authentication: &Authentication,
    notes: &AuditNotes,
    operation: Operation,
    status: u16,
    ip: Option<String>,
    request_id: &str,
) -> Call {
    let (actor_kind, actor) = match (authentication, &notes.login_account) {
        // A login is the act of the account it names, not of any other
        // credentials the request happens to carry.
        (_, Some(account)) if notes.login_attempted => {
            (ActorKind::User, Some(account.email.clone()))
        }
        _ if notes.login_attempted => (ActorKind::Anonymous, None),
        // A token request acts as the registry credential it names,
        // whatever else it carries.
        _ if notes.registry_user.is_some() => (ActorKind::Registry, notes.registry_user.clone()),
        // A webhook delivery acts for its hook, whatever credentials the
        // request carries: its sender once the signature held.
        _ if notes.org.is_some() => match notes.webhook {
            Some(sender) => (ActorKind::Webhook, Some(sender.to_owned())),
            None => (ActorKind::Anonymous, None),
        },
        (Authentication::Authenticated(principal), _) => {
            let kind = match principal.via() {
                "token" => ActorKind::Token,
                _ => ActorKind::Session,
            };
            (kind, Some(principal.user.email.clone()))
        }
        _ => (ActorKind::Anonymous, None),
    };
    let (target_kind, target) = notes
        .target
        .clone()
        .map_or((None, None), |(kind, name)| (Some(kind), Some(name)));
    Call {
        actor_kind,
        actor,
        action: operation.id(),
        target_kind,
        target,
        status,
        ip,
        request_id: request_id.to_owned(),
        project: notes.project.clone(),
        detail: notes.detail.clone(),
    }
}

/// A refused login of a known email is written to two partitions, of an
/// unknown one to one. So that the two answer alike (same answer and
/// timing: no user enumeration), an unknown email makes up the second event's round trips
/// with reads of the system partition's audit counter, which change nothing.
async fn equal_login_round_trips(state: &AppState) {
    for _ in 0..berth_store::audit::ROUND_TRIPS_PER_EVENT {
        if let Err(error) = berth_store::audit::padding_read(&state.store).await {
            tracing::warn!(error = %error, "the login's padding read failed");
        }
    }
}

/// Where the event goes: the organization of the webhook a delivery is
/// for (whatever credentials it carries); else the caller's organization;
/// the system partition for calls without one. A login attempt goes by the account it
/// names, whatever other credentials the request carries: a successful one to
/// the account's organization, a refused one to the system partition and, for
/// a known account, its organization too.
fn audit_partitions(authentication: &Authentication, notes: &AuditNotes) -> Vec<String> {
    if notes.login_attempted {
        return match &notes.login_account {
            Some(account) if notes.login_succeeded => vec![account.org.to_string()],
            Some(account) => vec![SYSTEM_ORG.to_owned(), account.org.to_string()],
            None => vec![SYSTEM_ORG.to_owned()],
        };
    }
    match (authentication, &notes.org) {
        (_, Some(org)) => vec![org.to_string()],
        (Authentication::Authenticated(principal), _) => vec![principal.user.org.to_string()],
        _ => vec![SYSTEM_ORG.to_owned()],
    }
}
