//! Berth's whole API in one process: every function's router mounted together,
//! behind the same pipeline each function has on Lambda.

use axum::Router;
use berth_shared::AppState;

/// What builds a function's routes.
pub type Routes = fn() -> Router<AppState>;

/// Every function, by its binary's name (as `template.yaml` packages it), with
/// its routes.
pub const FUNCTIONS: &[(&str, Routes)] = &[
    ("auth", berth_fn_auth::router),
    ("tokens", berth_fn_tokens::router),
    ("members", berth_fn_members::router),
    ("audit", berth_fn_audit::router),
    ("health", berth_fn_health::router),
    ("projects", berth_fn_projects::router),
    ("environments", berth_fn_environments::router),
    ("apps", berth_fn_apps::router),
];

/// The routes of the function of that name.
pub fn function(name: &str) -> Option<Routes> {
    FUNCTIONS
        .iter()
        .find(|(function, _)| *function == name)
        .map(|(_, routes)| *routes)
}

/// Every function's routes, unserved.
pub fn routes() -> Router<AppState> {
    FUNCTIONS
        .iter()
        .fold(Router::new(), |all, (_, routes)| all.merge(routes()))
}

/// The whole API, ready to serve.
pub fn app(state: AppState) -> Router {
    berth_shared::http::serve(routes(), state)
}
