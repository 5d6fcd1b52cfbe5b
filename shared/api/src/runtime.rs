//! How a function binary runs: on the Lambda runtime when there is one, else
//! as a plain local HTTP server (a scheduled function: once), saying so.

use std::net::{Ipv4Addr, SocketAddr};
use std::process::ExitCode;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use http_body_util::Full;
use tower::ServiceExt;

use crate::ApiError;
use crate::{AppState, http, telemetry};

pub const DEFAULT_PORT: u16 = 3000;

/// `BERTH_PORT`, or 3000.
pub fn port_from_env() -> Result<u16, String> {
    match std::env::var("BERTH_PORT") {
        Err(_) => Ok(DEFAULT_PORT),
        Ok(value) => value
            .parse()
            .map_err(|_| format!("BERTH_PORT must be a port number, not {value:?}")),
    }
}

/// What every function does first: its logs, then its state, built once.
async fn start(name: &str) -> Result<AppState, ExitCode> {
    telemetry::init();
    AppState::from_env().await.map_err(|error| {
        tracing::error!(function = %name, error = %error, "cannot start");
        ExitCode::FAILURE
    })
}

/// The `main` of every function: build the state once, then serve `routes`.
pub async fn run_function(name: &str, routes: fn() -> Router<AppState>) -> ExitCode {
    let state = match start(name).await {
        Ok(state) => state,
        Err(code) => return code,
    };
    let app = http::serve(routes(), state);
    if std::env::var_os("AWS_LAMBDA_RUNTIME_API").is_some() {
        return match run_on_lambda(app).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                tracing::error!(function = %name, error = %error, "the Lambda runtime stopped");
                ExitCode::FAILURE
            }
        };
    }
    let port = match port_from_env() {
        Ok(port) => port,
        Err(error) => {
            eprintln!("{name}: {error}");
            return ExitCode::FAILURE;
        }
    };
    eprintln!(
        "{name}: not in a Lambda environment (AWS_LAMBDA_RUNTIME_API is not set), so serving \
         only this function on http://127.0.0.1:{port}.\n\
         Use `cargo lambda watch` to run it as a Lambda, or `make dev` for the whole API."
    );
    serve_local(app, port).await
}

/// Serves `app` on the Lambda runtime: several invocations at once when
/// `AWS_LAMBDA_MAX_CONCURRENCY` asks for it (Lambda Managed Instances, and
/// `cargo lambda watch`), one at a time otherwise. The router is cheap to
/// clone and its state is shared behind `Arc`s, so concurrency needs nothing
/// more.
async fn run_on_lambda(app: Router) -> Result<(), lambda_http::Error> {
    lambda_http::run_concurrent(tower::service_fn(move |request| {
        answer(app.clone(), request)
    }))
    .await
}

/// `run_concurrent` needs a `Sync` response, which axum's body is not: the
/// answer is collected first, as lambda_http collects it anyway to make the
/// Lambda response.
async fn answer(
    app: Router,
    request: lambda_http::Request,
) -> Result<::http::Response<Full<Bytes>>, lambda_http::Error> {
    let Ok(response) = app.oneshot(request).await;
    let (parts, body) = response.into_parts();
    let bytes = axum::body::to_bytes(body, usize::MAX).await?;
    Ok(::http::Response::from_parts(parts, Full::new(bytes)))
}

/// Serves an application on 127.0.0.1 until Ctrl-C.
pub async fn serve_local(app: Router, port: u16) -> ExitCode {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let listener = match tokio::net::TcpListener::bind(addr).await {
        Ok(listener) => listener,
        Err(error) => {
            eprintln!("cannot listen on {addr}: {error}");
            return ExitCode::FAILURE;
        }
    };
    tracing::info!(%addr, "serving");
    let served = axum::serve(
        listener,
        app.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await;
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("serving failed: {error}");
            ExitCode::FAILURE
        }
    }
}

/// How long before a scheduled invocation's deadline its job stops starting
/// work: one DynamoDB call with its retries (10 s, [`crate::state`]) or one
/// cluster call may still be under way, and the answer must get out.
pub const SCHEDULED_MARGIN: Duration = Duration::from_secs(15);

/// The `main` of a scheduled function (an EventBridge schedule invokes it;
/// the event's content does not matter): build the state once, then run
/// `job` at each invocation, until [`SCHEDULED_MARGIN`] before the
/// invocation's deadline; its result is the invocation's answer. Outside
/// Lambda, runs it once (with `local_budget`) and prints the result.
pub async fn run_scheduled<F, Fut, T>(name: &str, local_budget: Duration, job: F) -> ExitCode
where
    F: Fn(AppState, tokio::time::Instant) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<T, ApiError>> + Send + 'static,
    T: serde::Serialize + Send + 'static,
{
    let state = match start(name).await {
        Ok(state) => state,
        Err(code) => return code,
    };
    let job = std::sync::Arc::new(job);
    if std::env::var_os("AWS_LAMBDA_RUNTIME_API").is_some() {
        let handler =
            lambda_http::service_fn(move |event: lambda_http::LambdaEvent<serde_json::Value>| {
                let (state, job) = (state.clone(), job.clone());
                async move {
                    let left = event
                        .context
                        .deadline()
                        .duration_since(std::time::SystemTime::now())
                        .unwrap_or_default()
                        .saturating_sub(SCHEDULED_MARGIN);
                    // Boxed: a sweep's future is deep, and its type need
                    // not be part of the runtime's.
                    Box::pin(job(state, tokio::time::Instant::now() + left))
                        .await
                        .map_err(|error| error.cause())
                }
            });
        return match lambda_http::lambda_runtime::run(handler).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                tracing::error!(function = %name, error = %error, "the Lambda runtime stopped");
                ExitCode::FAILURE
            }
        };
    }
    eprintln!(
        "{name}: not in a Lambda environment (AWS_LAMBDA_RUNTIME_API is not set), so running \
         once, for at most {} s.",
        local_budget.as_secs()
    );
    match Box::pin(job(state, tokio::time::Instant::now() + local_budget)).await {
        Ok(result) => {
            println!(
                "{}",
                serde_json::to_string(&result).unwrap_or_else(|e| format!("(unprintable: {e})"))
            );
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("{name}: {}", error.cause());
            ExitCode::FAILURE
        }
    }
}
