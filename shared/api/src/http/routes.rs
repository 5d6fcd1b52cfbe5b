//! Each operation declared once: a handler named after its operation
//! (`list_secrets` serves `listSecrets`), with one `#[utoipa::path]` that
//! gives its method, path and description. [`operations!`](crate::operations)
//! makes both a function's router and its part of the OpenAPI description
//! from the list of its handlers. Who may call an operation is its
//! [`Operation::access`]; the audit target is noted by the handler
//! ([`super::scope::audit_target`]).
//!
//! The router reads only the path and the method of each annotation, so a
//! Lambda function builds no description when it starts.

use axum::Router;
use axum::handler::Handler;
use axum::routing::{MethodFilter, MethodRouter};
use utoipa::openapi::HttpMethod;

use crate::AppState;
use berth_domain::Operation;

/// A function's routes, one handler at a time.
pub struct Routes(Router<AppState>);

impl Routes {
    pub fn new() -> Self {
        Self(Router::new())
    }

    /// Serves `handler` at the path and methods its annotation names, as
    /// the operation it is named after, with `adapt` applied to its route
    /// (a body limit of its own).
    ///
    /// Panics on a handler that is not named after an operation: the
    /// router is built once, when the function starts, and every test
    /// builds it.
    pub fn add<H, T>(
        self,
        handler_name: &str,
        path: &str,
        methods: Vec<HttpMethod>,
        handler: H,
        adapt: impl FnOnce(MethodRouter<AppState>) -> MethodRouter<AppState>,
    ) -> Self
    where
        H: Handler<T, AppState>,
        T: 'static,
    {
        let operation = Operation::of_handler(handler_name)
            .unwrap_or_else(|| panic!("`{handler_name}` is not named after an operation"));
        let route = methods
            .into_iter()
            .fold(MethodRouter::new(), |route, method| {
                route.on(method_filter(&method), handler.clone())
            });
        Self(
            self.0
                .route(path, super::operation(operation, adapt(route))),
        )
    }

    pub fn into_router(self) -> Router<AppState> {
        self.0
    }
}

impl Default for Routes {
    fn default() -> Self {
        Self::new()
    }
}

fn method_filter(method: &HttpMethod) -> MethodFilter {
    match method {
        HttpMethod::Get => MethodFilter::GET,
        HttpMethod::Post => MethodFilter::POST,
        HttpMethod::Put => MethodFilter::PUT,
        HttpMethod::Delete => MethodFilter::DELETE,
        HttpMethod::Options => MethodFilter::OPTIONS,
        HttpMethod::Head => MethodFilter::HEAD,
        HttpMethod::Patch => MethodFilter::PATCH,
        HttpMethod::Trace => MethodFilter::TRACE,
    }
}

/// A function's operations, declared once: its `router()` and its part of
/// the OpenAPI description, `openapi()`, from its handlers, each annotated
/// with `#[utoipa::path]` and named after its operation.
///
/// ```ignore
/// crate::operations! {
///     tag: "secrets",
///     failures: failures,
///     handlers: [list_secrets, put_secret => |route| route.layer(limit), delete_secret],
/// }
/// ```
///
/// `tag` is every operation's tag; `failures` what each can give beyond
/// what follows from its description ([`crate::openapi::describe`]); an
/// optional `finish: fn(&mut OpenApi)` adds what the annotations cannot say.
#[macro_export]
macro_rules! operations {
    (
        tag: $tag:literal,
        failures: $failures:expr,
        $( finish: $finish:expr, )?
        handlers: [ $( $handler:ident $( => $adapt:expr )? ),+ $(,)? ] $(,)?
    ) => {
        #[derive(utoipa::OpenApi)]
        #[openapi(paths($($handler),+))]
        struct Description;

        /// This function's routes.
        pub fn router() -> ::axum::Router<$crate::AppState> {
            let routes = $crate::http::routes::Routes::new();
            $(
                let routes = $crate::__paste! {
                    routes.add(
                        stringify!($handler),
                        &<[<__path_ $handler>] as ::utoipa::Path>::path(),
                        <[<__path_ $handler>] as ::utoipa::Path>::methods(),
                        $handler,
                        $crate::operations!(@adapt $($adapt)?),
                    )
                };
            )+
            routes.into_router()
        }

        /// This function's part of the OpenAPI description.
        pub fn openapi() -> ::utoipa::openapi::OpenApi {
            #[allow(unused_mut)]
            let mut api = $crate::openapi::describe(
                <Description as ::utoipa::OpenApi>::openapi(),
                $tag,
                $failures,
            );
            $( ($finish)(&mut api); )?
            api
        }
    };
    (@adapt) => {
        ::std::convert::identity
    };
    (@adapt $adapt:expr) => {
        $adapt
    };
}
