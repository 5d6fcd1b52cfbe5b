//! `berth-local`: the whole API on http://127.0.0.1:3000 (`BERTH_PORT`), without Lambda,
//! and the scheduled `cleanup` function's sweep every minute.

use std::process::ExitCode;

use berth_api::{AppState, runtime, telemetry};

#[tokio::main]
async fn main() -> ExitCode {
    telemetry::init();
    let port = match runtime::port_from_env() {
        Ok(port) => port,
        Err(error) => {
            eprintln!("berth-local: {error}");
            return ExitCode::FAILURE;
        }
    };
    let state = match AppState::from_env().await {
        Ok(state) => state,
        Err(error) => {
            eprintln!("berth-local: {error}");
            return ExitCode::FAILURE;
        }
    };
    let console = match berth_local::console_from_env() {
        Ok(console) => console,
        Err(error) => {
            eprintln!("berth-local: {error}");
            return ExitCode::FAILURE;
        }
    };
    if console.is_some() {
        eprintln!("berth-local: the web console on http://127.0.0.1:{port}/");
    }
    eprintln!(
        "berth-local: the whole API on http://127.0.0.1:{port} (table {})",
        state.config.table
    );
    // The scheduled `cleanup` function, as its schedule runs it on AWS.
    tokio::spawn(berth_local::sweep_regularly(state.clone()));
    runtime::serve_local(berth_local::app_with_console(state, console), port).await
}
