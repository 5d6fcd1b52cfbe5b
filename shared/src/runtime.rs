//! How a function binary runs: on the Lambda runtime when there is one, else
//! as a plain local HTTP server, saying so.

use std::net::{Ipv4Addr, SocketAddr};
use std::process::ExitCode;

use axum::Router;

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
            tracing::error!(function = name, error = %error, "cannot start");
            return ExitCode::FAILURE;
        }
    };
    let app = http::serve(routes(), state);
    if std::env::var_os("AWS_LAMBDA_RUNTIME_API").is_some() {
        return match lambda_http::run(app).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                tracing::error!(function = name, error = %error, "the Lambda runtime stopped");
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
