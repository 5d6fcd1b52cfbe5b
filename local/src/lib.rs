//! Berth's whole API in one process: every function's router mounted together,
//! behind the same pipeline each function has on Lambda; and the whole API's
//! OpenAPI description, merged from every function's part ([`openapi`]).

pub mod openapi;

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use axum::response::IntoResponse;
use berth_api::AppState;
use berth_console_serve::Console;
use tower::ServiceExt;

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

/// The scheduled functions, which serve no route (`template.yaml` gives
/// each a schedule): `cleanup`, run by `berth-local` every
/// [`CLEANUP_INTERVAL`].
pub const SCHEDULED: &[&str] = &["cleanup"];

/// The function that serves the web console's built assets
/// (`functions/console`): no API operation, so no routes here; `berth-local`
/// serves the same files itself.
pub const CONSOLE: &str = "console";

/// How often `berth-local` runs the `cleanup` function's sweep (every five
/// minutes on AWS): sooner, so that what a purge left goes while one
/// watches.
pub const CLEANUP_INTERVAL: std::time::Duration = std::time::Duration::from_secs(60);

/// Runs the `cleanup` function's sweep every [`CLEANUP_INTERVAL`], as its
/// schedule runs it on AWS, for as long as the process lives. No cluster
/// configured yet: nothing to sweep.
pub async fn sweep_regularly(state: AppState) {
    let mut ticks = tokio::time::interval(CLEANUP_INTERVAL);
    loop {
        ticks.tick().await;
        let deadline = tokio::time::Instant::now() + CLEANUP_INTERVAL / 2;
        match berth_fn_cleanup::run(state.clone(), deadline).await {
            Ok(_) | Err(berth_api::ApiError::NoCluster) => {}
            Err(error) => tracing::warn!(error = %error.cause(), "the cleanup sweep failed"),
        }
    }
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
    berth_api::http::serve(routes(), state)
}

/// The whole API, and the web console beside it when there is one: a
/// `GET` or `HEAD` outside `/api/` is the console's (a file of its build,
/// or its page), never seen by the API's pipeline (no audit event, no
/// session read); every other request is the API's, as [`app`] answers it.
/// Which file, with which headers: [`berth_console_serve`], shared with the
/// console's Lambda.
pub fn app_with_console(state: AppState, console: Option<Arc<Console>>) -> Router {
    let api = app(state);
    let Some(console) = console else {
        return api;
    };
    Router::new().fallback(move |request: Request| async move {
        match console.answer(&request) {
            Some(page) => page.map(Body::from).into_response(),
            None => {
                let Ok(response) = api.oneshot(request).await;
                response
            }
        }
    })
}

/// The console's build, from `BERTH_CONSOLE_DIR` (which `make dev` sets to
/// the build it made), else `console/dist` when it has been built; none
/// (the API alone) when neither is there.
pub fn console_from_env() -> Result<Option<Arc<Console>>, String> {
    let (dir, required) = match std::env::var_os("BERTH_CONSOLE_DIR") {
        Some(dir) if !dir.is_empty() => (std::path::PathBuf::from(dir), true),
        _ => (std::path::PathBuf::from("console/dist"), false),
    };
    if !required && !dir.join("index.html").exists() {
        return Ok(None);
    }
    Console::from_dir(&dir)
        .map(|console| Some(Arc::new(console)))
        .map_err(|error| format!("the console in {}: {error}", dir.display()))
}
