//! How a function binary runs: on the Lambda runtime when there is one, else
//! as a plain local HTTP server, saying so.

use std::net::{Ipv4Addr, SocketAddr};
use std::process::ExitCode;

use axum::Router;
use axum::body::Bytes;
use http_body_util::Full;
use tower::ServiceExt;

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

/// The `main` of every function: build the state once, then serve `routes`.
pub async fn run_function(name: &str, routes: fn() -> Router<AppState>) -> ExitCode {
    telemetry::init();
    let state = match AppState::from_env().await {
        Ok(state) => state,
        Err(error) => {
            tracing::error!(function = %name, error = %error, "cannot start");
            return ExitCode::FAILURE;
        }
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
