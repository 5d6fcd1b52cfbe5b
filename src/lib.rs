//! Berth's whole API in one process: every function's router mounted together,
//! behind the same pipeline each function has on Lambda; and the whole API's
//! OpenAPI description, merged from every function's part ([`openapi`]).

pub mod openapi;

use axum::Router;
use berth_shared::AppState;

/// What a function crate exposes: its routes, unserved.
pub type Routes = fn() -> Router<AppState>;

/// What a function crate exposes: its part of the OpenAPI description.
pub type Describe = fn() -> utoipa::openapi::OpenApi;

/// One function: its binary's name (as `template.yaml` packages it), its
/// routes and its part of the description.
pub struct Function {
    pub name: &'static str,
    pub routes: Routes,
    pub describe: Describe,
}

macro_rules! functions {
    ($($name:literal => $krate:ident,)*) => {
        /// Every function.
        pub const FUNCTIONS: &[Function] = &[$(Function {
            name: $name,
            routes: $krate::router,
            describe: $krate::openapi,
        },)*];
    };
}

functions! {
    "auth" => berth_fn_auth,
    "tokens" => berth_fn_tokens,
    "members" => berth_fn_members,
    "audit" => berth_fn_audit,
    "health" => berth_fn_health,
    "projects" => berth_fn_projects,
    "environments" => berth_fn_environments,
    "apps" => berth_fn_apps,
    "templates" => berth_fn_templates,
    "secrets" => berth_fn_secrets,
    "builds" => berth_fn_builds,
    "registry" => berth_fn_registry,
}

/// The routes of the function of that name.
pub fn function(name: &str) -> Option<Routes> {
    FUNCTIONS
        .iter()
        .find(|function| function.name == name)
        .map(|function| function.routes)
}

/// Every function's routes, unserved.
pub fn routes() -> Router<AppState> {
    FUNCTIONS.iter().fold(Router::new(), |all, function| {
        all.merge((function.routes)())
    })
}

/// The whole API, ready to serve.
pub fn app(state: AppState) -> Router {
    berth_shared::http::serve(routes(), state)
}
