//! Berth's whole API in one process: every function's router mounted together,
//! behind the same pipeline each function has on Lambda.

use axum::Router;
use berth_shared::AppState;

/// Every function's routes, unserved.
pub fn routes() -> Router<AppState> {
    Router::new()
        .merge(berth_fn_auth::router())
        .merge(berth_fn_tokens::router())
        .merge(berth_fn_members::router())
        .merge(berth_fn_audit::router())
        .merge(berth_fn_health::router())
        .merge(berth_fn_projects::router())
        .merge(berth_fn_environments::router())
        .merge(berth_fn_apps::router())
}

/// The whole API, ready to serve.
pub fn app(state: AppState) -> Router {
    berth_shared::http::serve(routes(), state)
}
