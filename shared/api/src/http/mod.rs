//! HTTP glue shared by every function: the request pipeline (request id,
//! authentication, audit, logging), the extractors whose rejections are
//! Problem Details, and the per-route operation tag.

pub mod answer;
pub mod call;
pub mod extract;
pub mod forgery;
pub mod pipeline;
pub mod routes;
pub mod scope;
pub mod whole_numbers;

use axum::Router;
use axum::extract::{DefaultBodyLimit, FromRequestParts, RawPathParams, Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::MethodRouter;
use tower_http::catch_panic::CatchPanicLayer;

pub use answer::{Accepted, Created};
pub use call::{Call, Located, Root};
pub use extract::{Caller, JsonBody, ObjectPath, QueryParams};

use crate::ApiError;
use crate::AppState;
use berth_domain::Operation;
use berth_store::identity::Authentication;

pub const MAX_BODY_BYTES: usize = 256 * 1024;

/// Tags a route with its operation id. The tag reaches the handler's
/// extractors (the password-change gate) and the pipeline (the audit event).
/// A change the session cookie could have been borrowed for is refused here,
/// before any handler runs ([`forgery`]), and audited as its operation.
pub fn operation(op: Operation, route: MethodRouter<AppState>) -> MethodRouter<AppState> {
    route.layer(middleware::from_fn_with_state(op, tag_operation))
}

async fn tag_operation(State(op): State<Operation>, mut request: Request, next: Next) -> Response {
    request.extensions_mut().insert(op);
    scope::note_operation(op);
    let request = note_project(request).await;
    let forged = forgery::check(
        op,
        &forgery::Sent::of(&request),
        request.extensions().get::<Authentication>(),
    );
    let mut response = match forged {
        Ok(()) => next.run(request).await,
        Err(refused) => refused.into_response(),
    };
    response.extensions_mut().insert(op);
    response
}

/// Notes the project the path names (a valid project name), for the
/// call's audit event.
async fn note_project(request: Request) -> Request {
    let (mut parts, body) = request.into_parts();
    if let Ok(params) = RawPathParams::from_request_parts(&mut parts, &()).await
        && let Some((_, project)) = params.iter().find(|(name, _)| *name == "project")
        && berth_domain::names::ProjectName::parse(project).is_ok()
    {
        scope::audit_project(project);
    }
    Request::from_parts(parts, body)
}

/// Wraps routes into the served application: unknown routes and methods,
/// the body limit, panics, and the pipeline around all of it.
pub fn serve(routes: Router<AppState>, state: AppState) -> Router {
    routes
        .fallback(unknown_route)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(CatchPanicLayer::custom(|_panic| {
            ApiError::Internal("a handler panicked".into()).into_response()
        }))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            pipeline::pipeline,
        ))
        .with_state(state)
}

async fn unknown_route() -> ApiError {
    ApiError::NotFound(berth_domain::Missing::Route)
}

async fn method_not_allowed() -> ApiError {
    ApiError::MethodNotAllowed
}
