//! The cluster side of the tests: the stand-in Kubernetes API server (or, with
//! `BERTH_TEST_KUBECONFIG`, a real cluster, whose kubeconfig is then an
//! administrator's), Berth's CRDs and RBAC, and the controller running in
//! process, as it would beside the cluster. The API and the controller run as
//! their own ServiceAccounts, with exactly the roles of `infra/k8s`
//! (`identities`).

use std::net::SocketAddr;
use std::time::Duration;

use berth_controller::{Replica, ReplicaSettings};
use berth_kube_standin::StandIn;
pub use berth_kube_standin::testing::{eventually, wait_bound};
use k8s_openapi::api::core::v1::{Namespace, PersistentVolumeClaim};
use kube::Api;
use kube::api::ListParams;

use berth_api::access;
use berth_cluster::crd::Project;
use berth_cluster::install;

use super::cleanup;
pub use super::cleanup::unique;
use super::identities;

/// How long a test app's rollout may make no progress before it is reported
/// `RolloutFailed`: short, since on a real cluster without nodes every
/// rollout stalls.
pub const PROGRESS_DEADLINE_SECONDS: i32 = 10;
/// How long a test app's release command may run: short, so that a
/// release that never finishes (no node runs its pod) fails soon, yet long
/// enough for its one retry, which the Job controller starts only 10 s after
/// the first try failed (its pod failure back-off; the stand-in waits as
/// long): with less, the Job fails `DeadlineExceeded` after one try.
pub const RELEASE_DEADLINE_SECONDS: i64 = 30;
/// The default domain of the test apps' hosts.
pub const APPS_DOMAIN: &str = "apps.berth.test";
/// The Ingress class of the test apps (none needs to exist for the apiserver).
pub const INGRESS_CLASS: &str = "berth-tests";

/// The cert-manager ClusterIssuer of the test apps' certificates: none
/// needs to exist (nor cert-manager), the annotation naming it is inert
/// without it; the tests write the Secrets cert-manager would.
pub const CLUSTER_ISSUER: &str = "berth-tests";

/// The ingress controller's namespace in the tests (none needs to exist for
/// the environments' NetworkPolicies to name it).
pub const INGRESS_NAMESPACE: &str = "berth-tests-ingress";

/// The controller's settings in the tests.
pub fn controller_settings() -> berth_controller::Settings {
    berth_controller::Settings {
        ingress_namespace: INGRESS_NAMESPACE.to_owned(),
        render: berth_controller::render::RenderSettings {
            ingress_class: Some(INGRESS_CLASS.to_owned()),
            apps_domain: Some(APPS_DOMAIN.to_owned()),
            progress_deadline_seconds: PROGRESS_DEADLINE_SECONDS,
            release_deadline_seconds: RELEASE_DEADLINE_SECONDS,
            registry_prefix: None,
            tls: berth_controller::render::tls::TlsSettings::parse(
                Some(CLUSTER_ISSUER),
                None,
                None,
                None,
            )
            .expect("TLS settings"),
        },
        builders: berth_controller::build_engine::BuilderSettings::default(),
        egress: egress_settings(),
    }
}

/// The egress policies' settings in the tests: a node range, the DNS
/// Service's address and the apiserver's as a cluster would have them, and
/// app pods restricted too (not the default), so that both policies are
/// made and checked.
pub fn egress_settings() -> berth_controller::egress::EgressSettings {
    use berth_controller::egress;
    egress::EgressSettings {
        denied: egress::parse_cidrs(EGRESS_DENIED).expect("CIDRs"),
        allowed: egress::parse_cidrs(EGRESS_ALLOWED).expect("CIDRs"),
        dns: egress::parse_cidrs(DNS_ADDRESS).expect("CIDRs"),
        apiserver: Some(APISERVER_ADDRESS.parse().expect("an address")),
        apps: true,
        ..egress::EgressSettings::default()
    }
}

/// The tests' egress settings, as an operator writes them.
pub const EGRESS_DENIED: &str = "10.0.0.0/8,fd00:10::/64";
pub const EGRESS_ALLOWED: &str = "10.20.30.40/32";
pub const DNS_ADDRESS: &str = "172.20.0.10/32";
pub const APISERVER_ADDRESS: &str = "172.20.0.1";

/// How long the test controllers' Lease holds without renewal: short, so
/// that a standby takes over soon after its leader was killed.
pub const LEASE_DURATION_SECONDS: u64 = 6;

/// Point the cluster tests at a real cluster instead: they must pass there
/// too. The fault tests, which need the stand-in's knobs, are then built as
/// ignored (`tests/build.rs` sets `berth_real_cluster`) and reported as such.
pub const REAL_CLUSTER_ENV: &str = "BERTH_TEST_KUBECONFIG";

/// Bound on connecting and on each request of the tests' clients.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(10);

pub struct TestCluster {
    pub standin: Option<StandIn>,
    /// The administrator's client: for what a test does as someone else than
    /// Berth, and for looking at the cluster.
    pub client: kube::Client,
    /// The administrator's kubeconfig (the stand-in's, or `BERTH_TEST_KUBECONFIG`).
    pub admin_kubeconfig: String,
    /// The kubeconfig Berth's API stores: the `berth-api` ServiceAccount's.
    pub kubeconfig: String,
    /// The controller's kubeconfig: the `berth-controller` ServiceAccount's.
    pub controller_kubeconfig: String,
    controller: Controller,
}

/// The controller beside the cluster: one per test on its own stand-in; on a
/// real cluster one for the whole test process, since each would reconcile
/// every test's objects (and every earlier run's) and multiply the load.
/// Either is a replica of its own name, leading its Lease alone; restarted,
/// it keeps its name (as a restarted container of the same pod) and so
/// leads again at once.
enum Controller {
    Own {
        replica: ReplicaSettings,
        running: std::sync::Mutex<Running>,
    },
    Shared(&'static SharedController),
}

/// A controller replica's task and the address of its endpoint.
struct Running {
    task: tokio::task::JoinHandle<()>,
    addr: SocketAddr,
}

impl Running {
    /// Kills the replica: nothing of it runs on, nothing is released (the
    /// task is aborted, as a process is killed).
    fn kill(&mut self) -> tokio::task::JoinHandle<()> {
        self.task.abort();
        std::mem::replace(&mut self.task, tokio::spawn(async {}))
    }
}

/// The registry's settings (the ConfigMap `berth-system/berth-registry`,
/// and with shared credentials their Secrets) are one per cluster, and
/// every build and environment the controller serves mints or copies its
/// credentials from them. On a stand-in each test has its own; on a real
/// cluster the run's tests share one, so a test that sets them holds them
/// until it ends: others that set the same settings share them, others
/// wait. Without it, a test's build started between two writes of another
/// test's got a credential for that test's registry.
struct RegistryHolders {
    settings: Option<String>,
    count: usize,
}

static REGISTRY_HOLDERS: std::sync::Mutex<RegistryHolders> =
    std::sync::Mutex::new(RegistryHolders {
        settings: None,
        count: 0,
    });
static REGISTRY_RELEASED: tokio::sync::Notify = tokio::sync::Notify::const_new();

thread_local! {
    /// The hold of this thread's test (see [`hold_registry_settings`]).
    static REGISTRY_HELD: std::cell::RefCell<Option<RegistryHold>> =
        const { std::cell::RefCell::new(None) };
}

/// A hold of the cluster's registry settings; let go when dropped.
pub struct RegistryHold(Option<String>);

impl Drop for RegistryHold {
    fn drop(&mut self) {
        if self.0.is_none() {
            return;
        }
        if let Ok(mut holders) = REGISTRY_HOLDERS.lock() {
            holders.count -= 1;
            if holders.count == 0 {
                holders.settings = None;
            }
        }
        REGISTRY_RELEASED.notify_waiters();
    }
}

/// Holds the cluster's registry settings as `settings` (any text that
/// tells them apart: the mode, prefix, server and shared credentials) for
/// as long as the answer lives, once no other test holds others: what a
/// test does before it writes them. Nothing to wait for on the stand-in.
pub async fn hold_registry_settings(settings: &str) -> RegistryHold {
    if std::env::var_os(REAL_CLUSTER_ENV).is_none() {
        return RegistryHold(None);
    }
    loop {
        let released = REGISTRY_RELEASED.notified();
        {
            let mut holders = REGISTRY_HOLDERS.lock().expect("the registry's holders");
            if holders.count == 0 || holders.settings.as_deref() == Some(settings) {
                holders.settings = Some(settings.to_owned());
                holders.count += 1;
                return RegistryHold(Some(settings.to_owned()));
            }
        }
        released.await;
    }
}

/// [`hold_registry_settings`] for the rest of the test: let go when its
/// cluster goes. A test that changes them lets go of what it held first.
pub async fn hold_registry_settings_for_the_test(settings: &str) {
    let held = REGISTRY_HELD.with(|held| held.borrow_mut().take());
    if let Some(hold) = held {
        if hold.0.as_deref() == Some(settings) {
            REGISTRY_HELD.with(|held| *held.borrow_mut() = Some(hold));
            return;
        }
        drop(hold);
    }
    let hold = hold_registry_settings(settings).await;
    REGISTRY_HELD.with(|held| *held.borrow_mut() = Some(hold));
}

/// What the run's tests share of a real cluster, each test holding its
/// part from its cluster's start to its end: most share it; a test that
/// fills what the cluster has one of (the builds namespace's room, its
/// ResourceQuota of 8 pods) has it alone ([`TestCluster::alone`]), so that
/// its builds and another test's never wait for each other's room. The
/// lock is fair: once a test waits to be alone, the tests that start after
/// it wait for it.
static CLUSTER_SHARE: std::sync::LazyLock<std::sync::Arc<tokio::sync::RwLock<()>>> =
    std::sync::LazyLock::new(Default::default);

enum ClusterHold {
    Shared(#[allow(dead_code)] tokio::sync::OwnedRwLockReadGuard<()>),
    Alone(#[allow(dead_code)] tokio::sync::OwnedRwLockWriteGuard<()>),
}

thread_local! {
    /// This thread's test's part of the real cluster.
    static CLUSTER_HELD: std::cell::RefCell<Option<ClusterHold>> =
        const { std::cell::RefCell::new(None) };
}

impl Drop for TestCluster {
    fn drop(&mut self) {
        // The test is over: its registry settings and its part of the
        // cluster are free.
        drop(REGISTRY_HELD.with(|held| held.borrow_mut().take()));
        drop(CLUSTER_HELD.with(|held| held.borrow_mut().take()));
        if let Controller::Own { running, .. } = &self.controller
            && let Ok(running) = running.lock()
        {
            running.task.abort();
        }
        if let Some(standin) = &self.standin {
            identities::record_uses(standin);
            // The stand-in goes with the test, and all on it.
            cleanup::take_named();
        } else {
            cleanup::remove_named_now(&self.admin_kubeconfig, cleanup::take_named());
        }
    }
}

/// A cluster with nothing of Berth's in it, and its administrator's
/// kubeconfig: a new stand-in, or `BERTH_TEST_KUBECONFIG`'s cluster.
pub async fn bare_cluster() -> (Option<StandIn>, String) {
    match std::env::var(REAL_CLUSTER_ENV) {
        Ok(path) => {
            let kubeconfig =
                std::fs::read_to_string(&path).expect("BERTH_TEST_KUBECONFIG is readable");
            earlier_runs_swept(&kubeconfig).await;
            (None, kubeconfig)
        }
        Err(_) => {
            // Controllers as on the real clusters Berth is checked against (pods stay
            // Pending there: no scheduler, no kubelet); tests play the kubelet themselves.
            let standin = StandIn::start_with(berth_kube_standin::Config {
                simulate_controllers: true,
                // As rare as a real apiserver's (about one a minute): the
                // controller's watches must outlive quiet spells.
                bookmark_interval: Duration::from_secs(60),
                ..berth_kube_standin::Config::default()
            })
            .await
            .expect("the stand-in starts");
            let kubeconfig = standin.kubeconfig_yaml();
            (Some(standin), kubeconfig)
        }
    }
}

/// Once per test process, before its first test touches a real cluster:
/// what earlier runs left there is deleted (`cleanup::sweep_earlier_runs`).
/// On a runtime of its own, like the shared controller's, since the first
/// test's runtime ends with it while others wait here.
async fn earlier_runs_swept(admin_kubeconfig: &str) {
    static SWEPT: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();
    SWEPT
        .get_or_init(|| async {
            let kubeconfig = admin_kubeconfig.to_owned();
            let cutoff = k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                k8s_openapi::jiff::Timestamp::now(),
            );
            let swept = std::thread::spawn(move || {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("a runtime for the sweep")
                    .block_on(async {
                        let client =
                            access::client_from_kubeconfig(&kubeconfig, None, CLIENT_TIMEOUT)
                                .await
                                .expect("a client for the test cluster");
                        cleanup::sweep_earlier_runs(&client, &cutoff).await
                    })
            });
            let swept = tokio::task::spawn_blocking(move || swept.join())
                .await
                .expect("the sweep's thread");
            swept
                .expect("the sweep of earlier runs' objects")
                .expect("the sweep of earlier runs' objects");
        })
        .await;
}

impl TestCluster {
    pub async fn start() -> Self {
        if std::env::var_os(REAL_CLUSTER_ENV).is_some()
            && CLUSTER_HELD.with(|held| held.borrow().is_none())
        {
            let shared = CLUSTER_SHARE.clone().read_owned().await;
            CLUSTER_HELD.with(|held| *held.borrow_mut() = Some(ClusterHold::Shared(shared)));
        }
        let (standin, admin_kubeconfig) = bare_cluster().await;
        let client = access::client_from_kubeconfig(&admin_kubeconfig, None, CLIENT_TIMEOUT)
            .await
            .expect("a client for the test cluster");
        install::install_crds(&client)
            .await
            .expect("installing the CRDs");
        identities::apply(&client, &identities::rbac_objects_for(&client).await).await;
        let kubeconfig =
            identities::kubeconfig_of(&admin_kubeconfig, &identities::api_account()).await;
        let controller_kubeconfig =
            identities::kubeconfig_of(&admin_kubeconfig, &identities::controller_account()).await;
        // A real API server's authorizer learns of new bindings through a cache.
        for identity in [&kubeconfig, &controller_kubeconfig] {
            let projects: Api<Project> = Api::all(
                access::client_from_kubeconfig(identity, None, CLIENT_TIMEOUT)
                    .await
                    .expect("a client of a Berth identity"),
            );
            eventually("Berth's roles take effect", || async {
                projects.list(&ListParams::default().limit(1)).await.is_ok()
            })
            .await;
        }
        let controller = if standin.is_some() {
            let replica = replica_settings(
                unique("test-controller"),
                berth_controller::DEFAULT_LEASE_NAME,
            );
            let running = start_replica(&controller_kubeconfig, replica.clone()).await;
            Controller::Own {
                replica,
                running: std::sync::Mutex::new(running),
            }
        } else {
            Controller::Shared(SharedController::get(&controller_kubeconfig).await)
        };
        Self {
            standin,
            client,
            admin_kubeconfig,
            kubeconfig,
            controller_kubeconfig,
            controller,
        }
    }

    /// On a real cluster, waits until the run's other tests are done with
    /// it and keeps the tests that start later waiting until this one
    /// ends: for a test that fills what the cluster has one of (the builds'
    /// room). Called first thing, before the test holds anything else (its
    /// registry settings). Nothing to wait for on the stand-in.
    pub async fn alone(&self) {
        if self.standin.is_some() {
            return;
        }
        drop(CLUSTER_HELD.with(|held| held.borrow_mut().take()));
        let alone = CLUSTER_SHARE.clone().write_owned().await;
        CLUSTER_HELD.with(|held| *held.borrow_mut() = Some(ClusterHold::Alone(alone)));
    }

    /// Stops the controller (until `restart_controller`): nothing provisions
    /// or renders meanwhile. Only on the stand-in: on a shared real cluster
    /// the other tests' controllers would.
    pub async fn stop_controller(&self) {
        let Controller::Own { .. } = &self.controller else {
            panic!(
                "only a test's own controller (on its stand-in) can be stopped: mark the test \
                 #[cfg_attr(berth_real_cluster, ignore = \"…\")]"
            );
        };
        self.kill_controller().await;
    }

    /// Kills the controller (until `restart_controller`) without letting it
    /// release its Lease: another replica of the same Lease takes over once
    /// it expires. On a real cluster this is the process's shared
    /// controller: the test that kills it must bring a replica that leads
    /// meanwhile, and restart it.
    pub async fn kill_controller(&self) {
        let killed = match &self.controller {
            Controller::Own { running, .. } => running.lock().unwrap().kill(),
            Controller::Shared(shared) => {
                // Other tests' restarts wait for the killer's revival: a
                // restarted replica of the killed one's name would lead again.
                shared
                    .killed
                    .store(true, std::sync::atomic::Ordering::SeqCst);
                shared.running.lock().unwrap().kill()
            }
        };
        let _ = killed.await;
    }

    /// Starts the controller `kill_controller` killed again.
    pub async fn revive_controller(&self) {
        if let Controller::Shared(shared) = &self.controller {
            shared
                .killed
                .store(false, std::sync::atomic::Ordering::SeqCst);
        }
        self.restart_controller().await;
    }

    /// Stops the controller and starts a new one, as a restarted container
    /// of the same pod (same name: it leads again at once).
    pub async fn restart_controller(&self) {
        let stopped = match &self.controller {
            Controller::Own { replica, running } => {
                let stopped = running.lock().unwrap().kill();
                let started = start_replica(&self.controller_kubeconfig, replica.clone()).await;
                *running.lock().unwrap() = started;
                stopped
            }
            // Killed by a test that revives it when it is done.
            Controller::Shared(shared)
                if shared.killed.load(std::sync::atomic::Ordering::SeqCst) =>
            {
                return;
            }
            Controller::Shared(shared) => shared.restart().await,
        };
        let _ = stopped.await;
    }

    /// How the test's controller takes part in the leader election.
    pub fn controller_replica(&self) -> ReplicaSettings {
        match &self.controller {
            Controller::Own { replica, .. } => replica.clone(),
            Controller::Shared(shared) => shared.replica.clone(),
        }
    }

    /// Where the test's controller serves `/metrics`, `/healthz`, `/readyz`.
    pub fn controller_addr(&self) -> SocketAddr {
        match &self.controller {
            Controller::Own { running, .. } => running.lock().unwrap().addr,
            Controller::Shared(shared) => shared.running.lock().unwrap().addr,
        }
    }

    pub async fn namespace_exists(&self, name: &str) -> bool {
        Api::<Namespace>::all(self.client.clone())
            .get_opt(name)
            .await
            .expect("reading a namespace")
            .is_some()
    }
}

/// A client as `berth-controller` makes one, as its ServiceAccount: kube's
/// own settings (`Client::try_default` there), whose watches outlive the
/// quiet minutes of a real cluster (Berth's API client times a read out after
/// 10 s, long before a real apiserver's next watch bookmark).
pub async fn controller_client(kubeconfig: &str) -> kube::Client {
    let parsed = kube::config::Kubeconfig::from_yaml(kubeconfig).expect("the kubeconfig parses");
    let config = kube::Config::from_custom_kubeconfig(parsed, &Default::default())
        .await
        .expect("a config for the controller");
    kube::Client::try_from(config).expect("a client for the controller")
}

/// A replica named `identity` of the Lease `lease` in `berth-system`, held
/// [`LEASE_DURATION_SECONDS`].
pub fn replica_settings(identity: String, lease: &str) -> ReplicaSettings {
    ReplicaSettings {
        identity,
        lease_namespace: berth_controller::DEFAULT_LEASE_NAMESPACE.to_owned(),
        lease_name: lease.to_owned(),
        lease_duration_seconds: LEASE_DURATION_SECONDS,
        pod_uid: None,
    }
}

/// A controller replica as `berth-controller` runs one, its endpoint on
/// loopback; not yet running.
pub async fn controller_replica(kubeconfig: &str, replica: ReplicaSettings) -> Replica {
    Replica::bind(
        controller_client(kubeconfig).await,
        controller_settings(),
        replica,
        SocketAddr::from(([127, 0, 0, 1], 0)),
    )
    .await
    .expect("the controller's endpoint binds")
}

/// A replica running until its task is aborted.
async fn start_replica(kubeconfig: &str, replica: ReplicaSettings) -> Running {
    let replica = controller_replica(kubeconfig, replica).await;
    let addr = replica.local_addr().expect("the endpoint's address");
    let task = tokio::spawn(replica.run(std::future::pending()));
    Running { task, addr }
}

/// The controller of a real cluster, on a runtime of its own, so that it
/// outlives the test (each has its runtime) that started it. Its Lease is
/// the process's own, so that an earlier run's does not hold it up.
struct SharedController {
    runtime: tokio::runtime::Handle,
    kubeconfig: String,
    replica: ReplicaSettings,
    running: std::sync::Mutex<Running>,
    /// Killed by a test (`kill_controller`), until it revives it.
    killed: std::sync::atomic::AtomicBool,
}

impl SharedController {
    async fn get(kubeconfig: &str) -> &'static Self {
        static SHARED: tokio::sync::OnceCell<SharedController> = tokio::sync::OnceCell::const_new();
        SHARED
            .get_or_init(|| async {
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(1)
                    .enable_all()
                    .build()
                    .expect("a runtime for the controller");
                let handle = runtime.handle().clone();
                std::thread::spawn(move || runtime.block_on(std::future::pending::<()>()));
                let replica = replica_settings(unique("test-controller"), &unique("berth-tests"));
                let running = Self::start(&handle, kubeconfig, &replica).await;
                SharedController {
                    runtime: handle,
                    kubeconfig: kubeconfig.to_owned(),
                    replica,
                    running: std::sync::Mutex::new(running),
                    killed: std::sync::atomic::AtomicBool::new(false),
                }
            })
            .await
    }

    /// A replica started on the shared runtime.
    async fn start(
        runtime: &tokio::runtime::Handle,
        kubeconfig: &str,
        replica: &ReplicaSettings,
    ) -> Running {
        let (kubeconfig, replica) = (kubeconfig.to_owned(), replica.clone());
        let (bound, addr) = tokio::sync::oneshot::channel();
        let task = runtime.spawn(async move {
            let replica = controller_replica(&kubeconfig, replica).await;
            let _ = bound.send(replica.local_addr().expect("the endpoint's address"));
            replica.run(std::future::pending()).await;
        });
        let addr = addr
            .await
            .expect("the shared controller binds its endpoint");
        Running { task, addr }
    }

    /// Starts a new controller; the stopped one's handle.
    async fn restart(&self) -> tokio::task::JoinHandle<()> {
        let stopped = self.running.lock().unwrap().kill();
        let started = Self::start(&self.runtime, &self.kubeconfig, &self.replica).await;
        *self.running.lock().unwrap() = started;
        stopped
    }
}

/// Waits until the claim `name` is gone, or marked for deletion: a claim in
/// use is only marked until its pods go.
pub async fn until_claim_deleted(claims: &Api<PersistentVolumeClaim>, name: &str) {
    eventually("the claim is deleted", || async {
        claims
            .get_opt(name)
            .await
            .unwrap()
            .is_none_or(|claim| claim.metadata.deletion_timestamp.is_some())
    })
    .await;
}
