//! `berth-controller`: runs in the cluster (or beside it, with `KUBECONFIG`).
//!
//! Settings from the environment: `BERTH_INGRESS_CLASS` (the class of every
//! app's Ingress; the cluster's default when unset), `BERTH_APPS_DOMAIN` (web
//! apps also answer at `{app}--{environment}--{project}.{BERTH_APPS_DOMAIN}`;
//! read by the API as well, with the same rule, see `config::apps_domain`),
//! `BERTH_PROGRESS_DEADLINE_SECONDS` (how long a rollout may make no progress
//! before the app is reported `RolloutFailed`; 600 by default),
//! `BERTH_RELEASE_DEADLINE_SECONDS` (how long an app's release command may
//! run before it counts as failed; 600 by default),
//! `BERTH_INGRESS_NAMESPACE` (the ingress controller's namespace, the only
//! other namespace whose pods may reach an environment's; `ingress-nginx` by
//! default).
//!
//! HTTPS (`render::tls`): `BERTH_TLS_CLUSTER_ISSUER` (the cert-manager
//! ClusterIssuer of every custom domain's certificate; none by default),
//! `BERTH_TLS_DEFAULT_HOST_CERTIFICATE` (`ingress-default`, the default
//! when an issuer is set; `issuer`; a Secret's name; `none`, the default
//! otherwise), `BERTH_TLS_REDIRECT` (`ingress-nginx` by default, or `off`),
//! `BERTH_TLS_HSTS_HEADERS` (ingress-nginx's custom-headers ConfigMap,
//! `namespace/name`; none by default).
//!
//! Builds: `BERTH_BUILD_DEADLINE_SECONDS` (how long a build may run; 1800 by
//! default), `BERTH_BUILD_GIT_IMAGE` (the image that clones, and writes the
//! result), `BERTH_BUILDKIT_IMAGE` (rootless BuildKit, for Dockerfiles),
//! `BERTH_BUILDPACKS_BUILDER` (a Cloud Native Buildpacks builder image;
//! Paketo's by default), `BERTH_BUILDPACKS_RUN_IMAGE` (the run image of the
//! builder's stack), `BERTH_BUILD_PUSH_IMAGE` (skopeo, for Berth's own
//! registry steps); each a pinned default (`build_engine`).
//! `BERTH_BUILDS_PER_ORGANIZATION` (builds of one organization running at
//! once; 3 by default), `BERTH_GIT_PRIVATE_HOSTS` (repository hosts builds
//! may reach at private addresses, comma-separated; none by default).
//!
//! Egress (`egress`): `BERTH_EGRESS_DENIED_CIDRS` (ranges build pods may
//! not reach besides link-local and the apiserver's Service address: the
//! nodes', pods' and Services' ranges), `BERTH_EGRESS_ALLOWED_CIDRS` (open
//! even inside those), `BERTH_DNS_CIDRS` (the DNS addresses, port 53; the
//! name servers of `/etc/resolv.conf` by default), `BERTH_DNS_NAMESPACE`
//! and `BERTH_DNS_POD_LABELS` (the DNS pods; `kube-system`,
//! `k8s-app=kube-dns`), `BERTH_APP_EGRESS` (`restricted`, the default: app
//! pods get the same policy, and their namespace; `open` leaves them
//! unguarded).
//!
//! Running as one of several replicas: `BERTH_CONTROLLER_ADDR` (where
//! `/metrics`, `/healthz` and `/readyz` are served; `0.0.0.0:8080` by
//! default), `BERTH_LEASE_DURATION_SECONDS` (how long the leader's Lease
//! holds without renewal: how long a standby waits after the leader died;
//! 15 by default), `BERTH_REPLICA` (this replica's name, the Lease's holder
//! while it leads: the pod's name, which the Deployment passes; `HOSTNAME`
//! otherwise, else the machine's host name, see `replica_identity`),
//! `BERTH_LEASE_NAMESPACE` (the namespace of the Lease
//! `berth-controller`: the pod's own, which the Deployment passes;
//! `berth-system` otherwise), `BERTH_REPLICA_UID` (the pod's uid, which the
//! Deployment passes: the Events about the replica, such as an unsafe
//! setting's, name it).
//!
//! SIGTERM or SIGINT stops it cleanly: reconciles in flight finish and the
//! Lease is released; a second signal exits at once.
//!
//! In the cluster (its ServiceAccount's in-cluster config, no `KUBECONFIG`),
//! it first proves that it is held to what Berth owns: the admission policy
//! `berth-owned-namespaces` must refuse it a dry-run label on `default`, a
//! namespace clusters do not protect by themselves
//! (`berth_cluster::install::require_confinement`). If the policy is
//! not in force (a cluster without ValidatingAdmissionPolicy, or the policy
//! not installed), it says what the cluster needs and exits: it does not run
//! with more than Berth's grants allow. It asks again every 5 minutes, and
//! stops cleanly (exit 1) once the policy is no longer in force. With
//! `KUBECONFIG` (a developer's `make dev`, as its administrator) it does not
//! check.
//!
//! `berth-controller --version` prints its name and version and exits (the
//! image's test runs it that way).

use std::process::ExitCode;

use std::net::SocketAddr;

use berth_controller::build_engine::layout::ImageRef;
use berth_controller::build_engine::{BuilderSettings, DEFAULT_BUILD_DEADLINE_SECONDS};
use berth_controller::egress::{self, EgressSettings};
use berth_controller::isolation;
use berth_controller::render::tls::TlsSettings;
use berth_controller::render::{
    DEFAULT_PROGRESS_DEADLINE_SECONDS, DEFAULT_RELEASE_DEADLINE_SECONDS, RenderSettings,
};
use berth_controller::{
    DEFAULT_LEASE_DURATION_SECONDS, DEFAULT_LEASE_NAME, DEFAULT_LEASE_NAMESPACE, Replica,
    ReplicaSettings, Settings, replica_identity,
};
use berth_domain::names::{Hostname, NamespaceName};

const DEFAULT_ADDR: &str = "0.0.0.0:8080";
/// How often the controller asks again whether it is held to what Berth
/// owns (`berth_cluster::install::require_confinement`).
const CONFINEMENT_RECHECK: std::time::Duration = std::time::Duration::from_secs(300);

/// An environment variable, unset when empty.
fn setting(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .map(|value| value.trim().to_owned())
        .filter(|value| !value.is_empty())
}

/// Logs through `tracing`, as readable text (the controller runs in a pod or
/// beside `make dev`, never on Lambda), coloured only on a terminal; `RUST_LOG`
/// filters, `info` by default.
fn init_logs() {
    use std::io::IsTerminal;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _already_set = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stdout().is_terminal())
        .try_init();
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
    let release_deadline_seconds = match setting("BERTH_RELEASE_DEADLINE_SECONDS") {
        None => DEFAULT_RELEASE_DEADLINE_SECONDS,
        Some(value) => value
            .parse::<i64>()
            .ok()
            .filter(|seconds| *seconds > 0)
            .ok_or("BERTH_RELEASE_DEADLINE_SECONDS must be a positive number of seconds")?,
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
    let build_deadline_seconds = match setting("BERTH_BUILD_DEADLINE_SECONDS") {
        None => DEFAULT_BUILD_DEADLINE_SECONDS,
        Some(value) => value
            .parse::<i64>()
            .ok()
            .filter(|seconds| *seconds > 0)
            .ok_or("BERTH_BUILD_DEADLINE_SECONDS must be a positive number of seconds")?,
    };
    let defaults = BuilderSettings::default();
    let run_image = match setting("BERTH_BUILDPACKS_RUN_IMAGE") {
        None => defaults.run_image,
        Some(reference) => ImageRef::parse(&reference)
            .map_err(|why| format!("BERTH_BUILDPACKS_RUN_IMAGE: {why}"))?,
    };
    let per_organization = match setting("BERTH_BUILDS_PER_ORGANIZATION") {
        None => defaults.per_organization,
        Some(value) => value
            .parse::<usize>()
            .ok()
            .filter(|builds| *builds > 0)
            .ok_or("BERTH_BUILDS_PER_ORGANIZATION must be a number of builds, 1 or more")?,
    };
    let private_git_hosts = setting("BERTH_GIT_PRIVATE_HOSTS")
        .map(|hosts| {
            hosts
                .split(',')
                .map(str::trim)
                .filter(|host| !host.is_empty())
                .map(|host| host.to_ascii_lowercase())
                .collect()
        })
        .unwrap_or_default();
    let builders = BuilderSettings {
        git_image: setting("BERTH_BUILD_GIT_IMAGE").unwrap_or(defaults.git_image),
        buildkit_image: setting("BERTH_BUILDKIT_IMAGE").unwrap_or(defaults.buildkit_image),
        builder_image: setting("BERTH_BUILDPACKS_BUILDER").unwrap_or(defaults.builder_image),
        run_image,
        push_image: setting("BERTH_BUILD_PUSH_IMAGE").unwrap_or(defaults.push_image),
        deadline_seconds: build_deadline_seconds,
        per_organization,
        private_git_hosts,
    };
    Ok(Settings {
        ingress_namespace,
        builders,
        egress: egress_settings()?,
        render: RenderSettings {
            ingress_class: setting("BERTH_INGRESS_CLASS"),
            apps_domain: setting("BERTH_APPS_DOMAIN")
                .map(|domain| Hostname::parse(&domain))
                .transpose()
                .map_err(|e| format!("invalid configuration: BERTH_APPS_DOMAIN: {e}"))?
                .map(|domain| domain.into_inner()),
            progress_deadline_seconds,
            release_deadline_seconds,
            registry_prefix: None,
            tls: TlsSettings::parse(
                setting("BERTH_TLS_CLUSTER_ISSUER").as_deref(),
                setting("BERTH_TLS_DEFAULT_HOST_CERTIFICATE").as_deref(),
                setting("BERTH_TLS_REDIRECT").as_deref(),
                setting("BERTH_TLS_HSTS_HEADERS").as_deref(),
            )?,
        },
    })
}

/// Where build pods (and app pods, when asked) may connect to.
fn egress_settings() -> Result<EgressSettings, String> {
    let cidrs = |name: &str| {
        setting(name)
            .map(|text| egress::parse_cidrs(&text).map_err(|why| format!("{name}: {why}")))
            .transpose()
    };
    let defaults = EgressSettings::default();
    let dns = match cidrs("BERTH_DNS_CIDRS")? {
        Some(dns) => dns,
        // Pods are told the same name servers as the controller's own pod.
        None => {
            egress::name_servers(&std::fs::read_to_string("/etc/resolv.conf").unwrap_or_default())
        }
    };
    let dns_pod_labels = match setting("BERTH_DNS_POD_LABELS") {
        None => defaults.dns_pod_labels,
        Some(text) => {
            egress::parse_labels(&text).map_err(|why| format!("BERTH_DNS_POD_LABELS: {why}"))?
        }
    };
    let apps = match setting("BERTH_APP_EGRESS").as_deref() {
        Some("open") => false,
        None | Some("restricted") => true,
        Some(_) => return Err("BERTH_APP_EGRESS must be open or restricted".to_owned()),
    };
    // `none`: the operator's choice to close no range of the cluster's own.
    let denied_none_by_choice = setting("BERTH_EGRESS_DENIED_CIDRS").as_deref() == Some("none");
    let denied = match denied_none_by_choice {
        true => Vec::new(),
        false => cidrs("BERTH_EGRESS_DENIED_CIDRS")?.unwrap_or_default(),
    };
    Ok(EgressSettings {
        denied,
        denied_none_by_choice,
        allowed: cidrs("BERTH_EGRESS_ALLOWED_CIDRS")?.unwrap_or_default(),
        dns,
        dns_namespace: setting("BERTH_DNS_NAMESPACE").unwrap_or(defaults.dns_namespace),
        dns_pod_labels,
        // The `kubernetes` Service's address, as the kubelet tells every
        // pod (and the controller's own).
        apiserver: setting("KUBERNETES_SERVICE_HOST").and_then(|host| host.parse().ok()),
        apps,
    })
}

/// How this replica runs among the others, and where its endpoint listens.
fn replica_settings() -> Result<(ReplicaSettings, SocketAddr), String> {
    let addr = setting("BERTH_CONTROLLER_ADDR")
        .unwrap_or_else(|| DEFAULT_ADDR.to_owned())
        .parse::<SocketAddr>()
        .map_err(|_| "BERTH_CONTROLLER_ADDR must be an address and port, like 0.0.0.0:8080")?;
    let lease_duration_seconds = match setting("BERTH_LEASE_DURATION_SECONDS") {
        None => DEFAULT_LEASE_DURATION_SECONDS,
        Some(value) => value
            .parse::<u64>()
            .ok()
            .filter(|seconds| (2..=3600).contains(seconds))
            .ok_or("BERTH_LEASE_DURATION_SECONDS must be a number of seconds from 2 to 3600")?,
    };
    let configured = setting("BERTH_REPLICA").or_else(|| setting("HOSTNAME"));
    let identity = replica_identity(configured, hostname::get)?;
    let lease_namespace =
        setting("BERTH_LEASE_NAMESPACE").unwrap_or_else(|| DEFAULT_LEASE_NAMESPACE.to_owned());
    Ok((
        ReplicaSettings {
            identity,
            lease_namespace,
            lease_name: DEFAULT_LEASE_NAME.to_owned(),
            lease_duration_seconds,
            pod_uid: setting("BERTH_REPLICA_UID"),
        },
        addr,
    ))
}

/// Resolves at SIGTERM or SIGINT; at a second one, exits at once.
fn shutdown_signal() -> impl std::future::Future<Output = ()> + Send + 'static {
    let (first, received) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        let Ok(mut terminate) =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        else {
            tracing::error!("SIGTERM cannot be handled");
            return;
        };
        let mut signal = async || {
            tokio::select! {
                _ = terminate.recv() => {},
                _ = tokio::signal::ctrl_c() => {},
            }
        };
        signal().await;
        tracing::info!(
            "stopping: reconciles in flight finish, then the lease is released (a second signal exits at once)"
        );
        let _ = first.send(());
        signal().await;
        tracing::warn!("second signal: exiting now");
        std::process::exit(1);
    });
    async move {
        let _ = received.await;
    }
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
    init_logs();
    let (settings, (replica, addr)) = match settings().and_then(|s| Ok((s, replica_settings()?))) {
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
    let in_cluster = std::env::var_os("KUBECONFIG").is_none();
    if in_cluster && let Err(error) = berth_cluster::install::require_confinement(&client).await {
        eprintln!("berth-controller: refusing to run: {error}");
        if let berth_cluster::ClusterError::Misconfigured { detail, .. } = &error {
            eprintln!("berth-controller: {detail}");
        }
        return ExitCode::FAILURE;
    }
    tracing::info!(
        ingress_class = %settings
            .render
            .ingress_class
            .as_deref()
            .unwrap_or("the cluster's default"),
        apps_domain = %settings.render.apps_domain.as_deref().unwrap_or("none"),
        progress_deadline_seconds = settings.render.progress_deadline_seconds,
        release_deadline_seconds = settings.render.release_deadline_seconds,
        ingress_namespace = %settings.ingress_namespace,
        build_deadline_seconds = settings.builders.deadline_seconds,
        identity = %replica.identity,
        lease = %format!("{}/{}", replica.lease_namespace, replica.lease_name),
        lease_duration_seconds = replica.lease_duration_seconds,
        %addr,
        "berth-controller started"
    );
    // Asked again every few minutes: a policy deleted (or unbound) later
    // stops the controller as one missing at its start does; a failure to
    // ask is only logged, and asked again.
    let (unconfined_tx, unconfined) = tokio::sync::oneshot::channel::<()>();
    if in_cluster {
        let client = client.clone();
        tokio::spawn(async move {
            let mut every = tokio::time::interval(CONFINEMENT_RECHECK);
            every.tick().await;
            loop {
                every.tick().await;
                match berth_cluster::install::require_confinement(&client).await {
                    Ok(()) => {}
                    Err(berth_cluster::ClusterError::Misconfigured { detail, .. }) => {
                        tracing::error!(detail = %detail, "no longer confined: stopping");
                        let _ = unconfined_tx.send(());
                        return;
                    }
                    Err(error) => {
                        tracing::warn!(error = %error, "the confinement check could not ask");
                    }
                }
            }
        });
    }
    let stopped_by_policy = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let shutdown = {
        let stopped_by_policy = stopped_by_policy.clone();
        async move {
            tokio::select! {
                () = shutdown_signal() => {}
                Ok(()) = unconfined => {
                    stopped_by_policy.store(true, std::sync::atomic::Ordering::Release);
                }
            }
        }
    };
    match Replica::bind(client, settings, replica, addr).await {
        Ok(replica) => {
            replica.run(shutdown).await;
            if stopped_by_policy.load(std::sync::atomic::Ordering::Acquire) {
                eprintln!(
                    "berth-controller: stopped: the admission policy berth-owned-namespaces is \
                     no longer in force (infra/k8s/admission.yaml)"
                );
                return ExitCode::FAILURE;
            }
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("berth-controller: cannot listen on {addr}: {error}");
            ExitCode::FAILURE
        }
    }
}
