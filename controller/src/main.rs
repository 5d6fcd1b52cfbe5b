//! `berth-controller`: runs in the cluster (or beside it, with `KUBECONFIG`).

use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    berth_shared::telemetry::init();
    let client = match kube::Client::try_default().await {
        Ok(client) => client,
        Err(error) => {
            eprintln!(
                "berth-controller: cannot reach the cluster (in-cluster config or KUBECONFIG): {error}"
            );
            return ExitCode::FAILURE;
        }
    };
    tracing::info!("berth-controller started");
    tokio::select! {
        () = berth_controller::run(client) => ExitCode::SUCCESS,
        _ = tokio::signal::ctrl_c() => ExitCode::SUCCESS,
    }
}
