//! `berth-controller`: runs in the cluster (or beside it, with `KUBECONFIG`).
//!
//! Settings from the environment: `BERTH_INGRESS_CLASS` (the class of every
//! app's Ingress; the cluster's default when unset), `BERTH_APPS_DOMAIN` (web
//! apps also answer at `{app}--{environment}--{project}.{BERTH_APPS_DOMAIN}`;
//! read by the API as well, with the same rule, see `config::apps_domain`),
//! `BERTH_PROGRESS_DEADLINE_SECONDS` (how long a rollout may make no progress
//! before the app is reported `RolloutFailed`; 600 by default),
//! `BERTH_INGRESS_NAMESPACE` (the ingress controller's namespace, the only
//! other namespace whose pods may reach an environment's; `ingress-nginx` by
//! default).
//!
//! `berth-controller --version` prints its name and version and exits (the
//! image's test runs it that way).

use std::process::ExitCode;

use berth_controller::Settings;
use berth_controller::isolation;
use berth_controller::render::{DEFAULT_PROGRESS_DEADLINE_SECONDS, RenderSettings};
use berth_shared::domain::names::NamespaceName;

/// An environment variable, unset when empty.
fn setting(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .map(|value| value.trim().to_owned())
        .filter(|value| !value.is_empty())
}

fn settings() -> Result<Settings, String> {
    let progress_deadline_seconds = match setting("BERTH_PROGRESS_DEADLINE_SECONDS") {
        None => DEFAULT_PROGRESS_DEADLINE_SECONDS,
        Some(value) => value
            .parse::<i32>()
            .ok()
            .filter(|seconds| *seconds > 0)
            .ok_or("BERTH_PROGRESS_DEADLINE_SECONDS must be a positive number of seconds")?,
    };
    let ingress_namespace = match setting("BERTH_INGRESS_NAMESPACE") {
        None => isolation::DEFAULT_INGRESS_NAMESPACE.to_owned(),
        Some(namespace) if NamespaceName::parse(&namespace).is_ok() => namespace,
        Some(_) => {
            return Err(
                "BERTH_INGRESS_NAMESPACE must be a namespace's name (a DNS label)".to_owned(),
            );
        }
    };
    Ok(Settings {
        ingress_namespace,
        render: RenderSettings {
            ingress_class: setting("BERTH_INGRESS_CLASS"),
            apps_domain: berth_shared::config::apps_domain(setting("BERTH_APPS_DOMAIN"))
                .map_err(|e| e.to_string())?
                .map(|domain| domain.into_inner()),
            progress_deadline_seconds,
        },
    })
}

/// What the command line asks for: the controller takes no arguments but
/// `--version`.
fn version_requested() -> Result<bool, String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [] => Ok(false),
        [flag] if flag == "--version" || flag == "-V" => Ok(true),
        _ => Err(format!(
            "unexpected arguments {args:?}: the controller takes its settings from \
             the environment, and no argument but --version"
        )),
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    match version_requested() {
        Ok(true) => {
            println!("berth-controller {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        Ok(false) => {}
        Err(error) => {
            eprintln!("berth-controller: {error}");
            return ExitCode::FAILURE;
        }
    }
    berth_shared::telemetry::init();
    let settings = match settings() {
        Ok(settings) => settings,
        Err(error) => {
            eprintln!("berth-controller: {error}");
            return ExitCode::FAILURE;
        }
    };
    let client = match kube::Client::try_default().await {
        Ok(client) => client,
        Err(error) => {
            eprintln!(
                "berth-controller: cannot reach the cluster (in-cluster config or KUBECONFIG): {error}"
            );
            return ExitCode::FAILURE;
        }
    };
    tracing::info!(
        ingress_class = %settings
            .render
            .ingress_class
            .as_deref()
            .unwrap_or("the cluster's default"),
        apps_domain = %settings.render.apps_domain.as_deref().unwrap_or("none"),
        progress_deadline_seconds = settings.render.progress_deadline_seconds,
        ingress_namespace = %settings.ingress_namespace,
        "berth-controller started"
    );
    tokio::select! {
        () = berth_controller::run(client, settings) => ExitCode::SUCCESS,
        _ = tokio::signal::ctrl_c() => ExitCode::SUCCESS,
    }
}
