//! One replica of the controller among several: leader election on a
//! `coordination.k8s.io` Lease (`kube-lease-manager`), the HTTP endpoint
//! (`/metrics`, `/healthz`, `/readyz`) and a clean shutdown.
//!
//! Only the replica holding the Lease reconciles: the others stand by,
//! watching the Lease, and one takes over once the holder has not renewed it
//! for the lease duration (kube-lease-manager then waits up to one more
//! second, at random, before it takes it, so that two standbys rarely
//! collide). A holder renews `grace` seconds before its lease would expire.
//!
//! Shutdown (SIGTERM in the binary): the endpoint's readiness turns 503, no
//! new reconcile starts and those running finish (kube-runtime's graceful
//! shutdown), then the Lease is released, so a standby takes over at once
//! rather than after the lease duration. A replica that dies without
//! shutting down (killed, or its task aborted) releases nothing: the others
//! wait out the lease. A replica that loses the Lease (another holder shows
//! in it) stops reconciling the same way and stands by again.
//!
//! Readiness (`/readyz`): 200 `leader` once the leader's watches have
//! listed everything (its caches are filled), 200 `standby` for a replica
//! that has read the Lease and waits for it; 503 before either, and while
//! stopping. Liveness (`/healthz`): 200 unless the leader election itself
//! has ended (its task failed), which only a restart cures.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::Client;
use kube::runtime::reflector::Store;
use kube_lease_manager::{LeaseManager, LeaseManagerBuilder};
use tokio::sync::watch;

use berth_cluster::crd::App;

use crate::context::{Context, Settings};
use crate::events::{Events, Reason};
use crate::metrics::Metrics;
use crate::wiring::controllers;

/// The Lease's name when none is set.
pub const DEFAULT_LEASE_NAME: &str = "berth-controller";
/// The Lease's namespace when none is set: the controller's own.
pub const DEFAULT_LEASE_NAMESPACE: &str = "berth-system";
/// How long a Lease holds without renewal.
pub const DEFAULT_LEASE_DURATION_SECONDS: u64 = 15;

/// How this replica takes part in the election.
#[derive(Clone, Debug)]
pub struct ReplicaSettings {
    /// This replica's name among the others (the pod's name): the Lease's
    /// holder while it leads, and the `reportingInstance` of its Events.
    pub identity: String,
    /// The namespace of the Lease, and of this replica's pod (the
    /// Deployment passes its own).
    pub lease_namespace: String,
    pub lease_name: String,
    /// This replica's pod's uid, which the Deployment passes
    /// (`BERTH_REPLICA_UID`): with it `kubectl describe pod` shows the
    /// Events about the replica; without it they are still listed in its
    /// namespace.
    pub pod_uid: Option<String>,
    /// How long the Lease holds without renewal: how long the others wait
    /// after the leader died before one takes over.
    pub lease_duration_seconds: u64,
}

/// This replica's name: the one configured (`BERTH_REPLICA`, the pod's
/// name, which the Deployment passes; else `HOSTNAME`), else the operating
/// system's host name, which `host_name` reads. `HOSTNAME` alone is not
/// enough beside the cluster: bash and other shells set it as a variable of
/// their own without exporting it (Debian's and Ubuntu's login shells
/// included), so a process started from a shell or by `make` does not see
/// it.
pub fn replica_identity(
    configured: Option<String>,
    host_name: impl FnOnce() -> std::io::Result<std::ffi::OsString>,
) -> Result<String, String> {
    if let Some(identity) = configured {
        return Ok(identity);
    }
    let unnamed = |why: String| {
        format!(
            "this replica needs a name: set BERTH_REPLICA (the pod's name, as the Deployment \
             does) or HOSTNAME; the operating system's host name {why}"
        )
    };
    match host_name() {
        Ok(name) => match name.into_string() {
            Ok(name) if !name.trim().is_empty() => Ok(name.trim().to_owned()),
            Ok(_) => Err(unnamed("is empty".to_owned())),
            Err(_) => Err(unnamed("is not UTF-8".to_owned())),
        },
        Err(error) => Err(unnamed(format!("cannot be read: {error}"))),
    }
}

impl ReplicaSettings {
    /// This replica's pod, as an Event names what it regards.
    fn pod(&self) -> ObjectReference {
        ObjectReference {
            api_version: Some("v1".to_owned()),
            kind: Some("Pod".to_owned()),
            name: Some(self.identity.clone()),
            namespace: Some(self.lease_namespace.clone()),
            uid: self.pod_uid.clone(),
            ..ObjectReference::default()
        }
    }

    /// How long before its expiry the holder renews the Lease: a third of
    /// the duration (5 s of 15 s), at least 1 s.
    pub fn grace_seconds(&self) -> u64 {
        (self.lease_duration_seconds / 3).max(1)
    }
}

/// Where a replica stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Role {
    Starting = 0,
    Standby = 1,
    /// Holds the Lease; its watches are still listing.
    Leading = 2,
    /// Holds the Lease, caches filled.
    LeaderReady = 3,
    Stopping = 4,
}

/// What the endpoint reads.
struct Shared {
    metrics: Arc<Metrics>,
    role: AtomicU8,
    healthy: AtomicBool,
    /// The leader's cache of Apps (for the `apps` gauge).
    apps: Mutex<Option<Store<App>>>,
    /// What the operator must hear about the settings (the egress's),
    /// which `/readyz`'s body names.
    warning: Option<String>,
}

impl Shared {
    fn role(&self) -> Role {
        match self.role.load(Ordering::Acquire) {
            1 => Role::Standby,
            2 => Role::Leading,
            3 => Role::LeaderReady,
            4 => Role::Stopping,
            _ => Role::Starting,
        }
    }

    fn set_role(&self, role: Role) {
        self.role.store(role as u8, Ordering::Release);
        self.metrics
            .set_leader(matches!(role, Role::Leading | Role::LeaderReady));
    }

    fn set_apps(&self, apps: Option<Store<App>>) {
        *self
            .apps
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = apps;
    }
}

/// A replica, its endpoint bound.
pub struct Replica {
    listener: tokio::net::TcpListener,
    client: Client,
    settings: Settings,
    replica: ReplicaSettings,
    shared: Arc<Shared>,
}

/// The lease manager's task, aborted when dropped: a replica that dies
/// without shutting down releases nothing, like a killed process.
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Replica {
    /// Binds the endpoint at `addr` (port 0: any free port).
    pub async fn bind(
        client: Client,
        settings: Settings,
        replica: ReplicaSettings,
        addr: SocketAddr,
    ) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let metrics = Arc::new(Metrics::default());
        let warning = settings.egress.warning();
        metrics.set_egress_unguarded(warning.is_some());
        Ok(Self {
            listener,
            client,
            settings,
            replica,
            shared: Arc::new(Shared {
                metrics,
                role: AtomicU8::new(Role::Starting as u8),
                healthy: AtomicBool::new(true),
                apps: Mutex::new(None),
                warning,
            }),
        })
    }

    /// Where the endpoint listens.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves the endpoint and takes part in the election until `shutdown`
    /// resolves; then stops cleanly (see the module's documentation).
    pub async fn run(self, shutdown: impl Future<Output = ()> + Send + 'static) {
        let Replica {
            listener,
            client,
            settings,
            replica,
            shared,
        } = self;
        // Said at the start and every 5 minutes, as long as it holds: in the
        // log and as an Event on the replica's pod (one series while the
        // repeats come within its window).
        let _warning = shared.warning.clone().map(|warning| {
            let events = Events::new(client.clone(), &replica.identity);
            let pod = replica.pod();
            AbortOnDrop(tokio::spawn(async move {
                let mut every = tokio::time::interval(WARNING_INTERVAL);
                loop {
                    every.tick().await;
                    tracing::warn!(warning = %warning, "unsafe settings");
                    events
                        .publish_regarding(pod.clone(), UNSAFE_SETTINGS, warning.as_str())
                        .await;
                }
            }))
        });
        let (stopping_tx, stopping) = watch::channel(false);
        let endpoint = axum::serve(listener, router(shared.clone())).with_graceful_shutdown({
            let mut stopping = stopping.clone();
            async move {
                let _ = stopping.wait_for(|stop| *stop).await;
            }
        });
        let elect = async {
            let shutdown = std::pin::pin!(shutdown);
            elect(client, settings, &replica, &shared, shutdown).await;
            let _ = stopping_tx.send(true);
        };
        let (served, ()) = tokio::join!(endpoint, elect);
        if let Err(error) = served {
            tracing::warn!(error = %error, "the controller's endpoint stopped");
        }
    }
}

/// Campaigns for the Lease, reconciles while holding it, until `shutdown`.
async fn elect(
    client: Client,
    settings: Settings,
    replica: &ReplicaSettings,
    shared: &Arc<Shared>,
    mut shutdown: std::pin::Pin<&mut (impl Future<Output = ()> + Send)>,
) {
    let manager = tokio::select! {
        manager = lease_manager(&client, replica) => manager,
        () = &mut shutdown => return,
    };
    let (mut leading, task) = manager.watch().await;
    let mut task = AbortOnDrop(task);
    let context = Context::new(client, settings, shared.metrics.clone(), &replica.identity);
    loop {
        shared.set_role(Role::Standby);
        tracing::info!(identity = %replica.identity, lease = %replica.lease_name, "standing by");
        let held = tokio::select! {
            held = leading.wait_for(|leads| *leads) => held.is_ok(),
            () = shutdown.as_mut() => break,
        };
        if !held {
            shared.healthy.store(false, Ordering::Release);
            tracing::error!("the leader election ended; a restart is needed");
            shutdown.as_mut().await;
            break;
        }
        shared.set_role(Role::Leading);
        tracing::info!(identity = %replica.identity, "leading: reconciling");
        let (stop, stopped) = watch::channel(false);
        let (running, stores) = controllers(context.clone(), stopped);
        shared.set_apps(Some(stores.apps.clone()));
        let mut running = std::pin::pin!(running);
        let ready = async {
            stores.ready().await;
            shared.set_role(Role::LeaderReady);
            std::future::pending::<()>().await;
        };
        let why = tokio::select! {
            () = &mut running => "the controllers ended",
            lost = leading.wait_for(|leads| !*leads) => match lost.is_ok() {
                true => "another replica holds the lease",
                false => "the leader election ended",
            },
            () = shutdown.as_mut() => "shutting down",
            () = ready => unreachable!("readiness never ends"),
        };
        let shutting_down = why == "shutting down";
        if shutting_down {
            shared.set_role(Role::Stopping);
        }
        tracing::info!(
            reason = why,
            "stopping the controllers: reconciles in flight finish"
        );
        let _ = stop.send(true);
        running.await;
        shared.set_apps(None);
        if shutting_down {
            break;
        }
        shared.set_role(Role::Standby);
    }
    shared.set_role(Role::Stopping);
    // Closing the channel makes the manager release the Lease and end.
    drop(leading);
    match tokio::time::timeout(Duration::from_secs(10), &mut task.0).await {
        Ok(Ok(Ok(_))) => tracing::info!(lease = %replica.lease_name, "lease released"),
        Ok(Ok(Err(error))) => {
            tracing::warn!(error = %error, "the lease could not be released")
        }
        Ok(Err(error)) => tracing::warn!(error = %error, "the lease manager failed"),
        Err(_) => tracing::warn!("the lease was not released within 10 s"),
    }
}

/// The lease manager, once the Lease could be read (or made): until then
/// the replica is not ready, and tries again every few seconds.
async fn lease_manager(client: &Client, replica: &ReplicaSettings) -> LeaseManager {
    let mut wait = Duration::from_secs(1);
    loop {
        let built = LeaseManagerBuilder::new(client.clone(), &replica.lease_name)
            .with_namespace(&replica.lease_namespace)
            .with_identity(&replica.identity)
            .with_duration(replica.lease_duration_seconds)
            .with_grace(replica.grace_seconds())
            .with_field_manager(format!("berth-controller/{}", replica.identity))
            .build()
            .await;
        match built {
            Ok(manager) => return manager,
            Err(error) => {
                tracing::warn!(
                    error = %error,
                    lease = %replica.lease_name,
                    namespace = %replica.lease_namespace,
                    "the lease cannot be read; trying again"
                );
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(Duration::from_secs(30));
            }
        }
    }
}

fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(shared)
}

async fn metrics(State(shared): State<Arc<Shared>>) -> impl IntoResponse {
    let apps = shared
        .apps
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .as_ref()
        .map(Store::state)
        .unwrap_or_default();
    let text = shared.metrics.encode(apps.iter().map(|app| {
        app.status
            .as_ref()
            .and_then(|status| status.reason.as_deref())
    }));
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        text,
    )
}

async fn healthz(State(shared): State<Arc<Shared>>) -> (StatusCode, &'static str) {
    if shared.healthy.load(Ordering::Acquire) {
        (StatusCode::OK, "ok")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "the leader election ended")
    }
}

async fn readyz(State(shared): State<Arc<Shared>>) -> (StatusCode, String) {
    readiness(shared.role(), shared.warning.as_deref())
}

/// `/readyz`'s answer: the role, and the settings' warning after it (the
/// status is the role's alone: a warning never takes a replica out).
fn readiness(role: Role, warning: Option<&str>) -> (StatusCode, String) {
    let (status, said) = match role {
        Role::LeaderReady => (StatusCode::OK, "leader"),
        Role::Standby => (StatusCode::OK, "standby"),
        Role::Leading => (
            StatusCode::SERVICE_UNAVAILABLE,
            "leader, filling its caches",
        ),
        Role::Starting => (StatusCode::SERVICE_UNAVAILABLE, "starting"),
        Role::Stopping => (StatusCode::SERVICE_UNAVAILABLE, "stopping"),
    };
    match warning {
        Some(warning) => (status, format!("{said}; warning: {warning}")),
        None => (status, said.to_owned()),
    }
}

/// The Event of a warning about the settings (its note is the warning).
pub const UNSAFE_SETTINGS: Reason = Reason::warning("UnsafeSettings", "Start");

/// How often a warning about the settings is said again.
const WARNING_INTERVAL: Duration = Duration::from_secs(300);

#[cfg(test)]
mod tests {
    use std::ffi::OsString;
    use std::io;

    use super::{Role, StatusCode, readiness, replica_identity};
    use crate::egress::EgressSettings;

    /// With no denied range and no choice made, the controller says so in
    /// `/readyz`'s body, and stays ready (issue 46, part 5); `none` or a
    /// range says nothing.
    #[test]
    fn unguarded_egress_is_named_by_readyz_and_never_stops_the_replica() {
        let unset = EgressSettings::default();
        let warning = unset.warning().expect("a warning");
        assert!(warning.contains("BERTH_EGRESS_DENIED_CIDRS"), "{warning}");
        let (status, body) = readiness(Role::LeaderReady, Some(&warning));
        assert_eq!(status, StatusCode::OK);
        assert!(
            body.starts_with("leader; warning: BERTH_EGRESS_DENIED_CIDRS"),
            "{body}"
        );
        let chosen = EgressSettings {
            denied_none_by_choice: true,
            ..EgressSettings::default()
        };
        assert_eq!(chosen.warning(), None);
        let ranged = EgressSettings {
            denied: crate::egress::parse_cidrs("10.0.0.0/8").unwrap(),
            ..EgressSettings::default()
        };
        assert_eq!(ranged.warning(), None);
        assert_eq!(
            readiness(Role::Standby, None),
            (StatusCode::OK, "standby".to_owned())
        );
        assert!(
            EgressSettings::default().apps,
            "app pods are restricted by default"
        );
    }

    fn host(name: &'static str) -> impl FnOnce() -> io::Result<OsString> {
        move || Ok(OsString::from(name))
    }

    #[test]
    fn the_replica_is_named_as_configured_else_by_the_host() {
        let configured = Some("pod-a".to_owned());
        assert_eq!(
            replica_identity(configured, host("machine")).unwrap(),
            "pod-a"
        );
        // As under `make` on Debian: bash's HOSTNAME is not exported.
        assert_eq!(
            replica_identity(None, host("machine\n")).unwrap(),
            "machine"
        );
    }

    #[test]
    fn without_any_name_the_error_says_what_to_set() {
        let failing = || Err(io::Error::other("no uname"));
        let error = replica_identity(None, failing).unwrap_err();
        assert!(error.contains("BERTH_REPLICA"), "{error}");
        assert!(error.contains("no uname"), "{error}");
        let error = replica_identity(None, host(" ")).unwrap_err();
        assert!(error.contains("set BERTH_REPLICA"), "{error}");
    }

    #[test]
    fn the_real_host_name_is_read() {
        let name = replica_identity(None, hostname::get).expect("this machine has a name");
        assert!(!name.is_empty());
    }
}
