//! The cluster side of the tests: the stand-in Kubernetes API server (or, with
//! `BERTH_TEST_KUBECONFIG`, a real cluster, whose kubeconfig is then an
//! administrator's), Berth's CRDs and RBAC, and the controller running in
//! process, as it would beside the cluster. The API and the controller run as
//! their own ServiceAccounts, with exactly the roles of `infra/k8s`
//! (`identities`).

use std::time::Duration;

use berth_kube_standin::StandIn;
pub use berth_kube_standin::testing::{eventually, wait_bound};
use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube::api::ListParams;

use berth_shared::cluster::crd::Project;
use berth_shared::cluster::{access, install};

use super::identities;

/// How long a test app's rollout may make no progress before it is reported
/// `RolloutFailed`: short, since on a real cluster without nodes every
/// rollout stalls.
pub const PROGRESS_DEADLINE_SECONDS: i32 = 10;
/// The default domain of the test apps' hosts.
pub const APPS_DOMAIN: &str = "apps.berth.test";
/// The Ingress class of the test apps (none needs to exist for the apiserver).
pub const INGRESS_CLASS: &str = "berth-tests";

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
        },
    }
}

/// Point the cluster tests at a real cluster instead: they must pass there
/// too. The fault tests, which need the stand-in's knobs, are then built as
/// ignored (`build.rs` sets `berth_real_cluster`) and reported as such.
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
    controller_kubeconfig: String,
    controller: Controller,
}

/// The controller beside the cluster: one per test on its own stand-in; on a
/// real cluster one for the whole test process, since each would reconcile
/// every test's objects (and every earlier run's) and multiply the load.
enum Controller {
    Own(std::sync::Mutex<tokio::task::JoinHandle<()>>),
    Shared(&'static SharedController),
}

impl Drop for TestCluster {
    fn drop(&mut self) {
        if let Controller::Own(controller) = &self.controller
            && let Ok(controller) = controller.lock()
        {
            controller.abort();
        }
        if let Some(standin) = &self.standin {
            identities::record_uses(standin);
        }
    }
}

/// A cluster with nothing of Berth's in it, and its administrator's
/// kubeconfig: a new stand-in, or `BERTH_TEST_KUBECONFIG`'s cluster.
pub async fn bare_cluster() -> (Option<StandIn>, String) {
    match std::env::var(REAL_CLUSTER_ENV) {
        Ok(path) => (
            None,
            std::fs::read_to_string(&path).expect("BERTH_TEST_KUBECONFIG is readable"),
        ),
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

impl TestCluster {
    pub async fn start() -> Self {
        let (standin, admin_kubeconfig) = bare_cluster().await;
        let client = access::client_from_kubeconfig(&admin_kubeconfig, None, CLIENT_TIMEOUT)
            .await
            .expect("a client for the test cluster");
        install::install_crds(&client)
            .await
            .expect("installing the CRDs");
        identities::apply(&client, &identities::rbac_objects()).await;
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
            Controller::Own(std::sync::Mutex::new(tokio::spawn(run_controller(
                controller_kubeconfig.clone(),
            ))))
        } else {
            Controller::Shared(SharedController::get(&controller_kubeconfig))
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

    /// Stops the controller (until `restart_controller`): nothing provisions
    /// or renders meanwhile. Only on the stand-in: on a shared real cluster
    /// the other tests' controllers would.
    pub async fn stop_controller(&self) {
        let Controller::Own(controller) = &self.controller else {
            panic!(
                "only a test's own controller (on its stand-in) can be stopped: mark the test \
                 #[cfg_attr(berth_real_cluster, ignore = \"…\")]"
            );
        };
        let stopped = {
            let mut controller = controller.lock().unwrap();
            controller.abort();
            std::mem::replace(&mut *controller, tokio::spawn(async {}))
        };
        let _ = stopped.await;
    }

    /// Stops the controller and starts a new one, as a rescheduled pod would.
    pub async fn restart_controller(&self) {
        let stopped = match &self.controller {
            Controller::Own(controller) => {
                let mut controller = controller.lock().unwrap();
                controller.abort();
                std::mem::replace(
                    &mut *controller,
                    tokio::spawn(run_controller(self.controller_kubeconfig.clone())),
                )
            }
            Controller::Shared(shared) => shared.restart(),
        };
        let _ = stopped.await;
    }

    pub async fn namespace_exists(&self, name: &str) -> bool {
        Api::<Namespace>::all(self.client.clone())
            .get_opt(name)
            .await
            .expect("reading a namespace")
            .is_some()
    }
}

/// The controller as `berth-controller` runs it, as its ServiceAccount: a
/// client with kube's own settings (`Client::try_default` there), whose
/// watches outlive the quiet minutes of a real cluster (Berth's API client times a read out after
/// 10 s, long before a real apiserver's next watch bookmark).
async fn run_controller(kubeconfig: String) {
    let parsed = kube::config::Kubeconfig::from_yaml(&kubeconfig).expect("the kubeconfig parses");
    let config = kube::Config::from_custom_kubeconfig(parsed, &Default::default())
        .await
        .expect("a config for the controller");
    let client = kube::Client::try_from(config).expect("a client for the controller");
    berth_controller::run(client, controller_settings()).await;
}

/// The controller of a real cluster, on a runtime of its own, so that it
/// outlives the test (each has its runtime) that started it.
struct SharedController {
    runtime: tokio::runtime::Handle,
    kubeconfig: String,
    task: std::sync::Mutex<tokio::task::JoinHandle<()>>,
}

impl SharedController {
    fn get(kubeconfig: &str) -> &'static Self {
        static SHARED: std::sync::OnceLock<SharedController> = std::sync::OnceLock::new();
        SHARED.get_or_init(|| {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .expect("a runtime for the controller");
            let handle = runtime.handle().clone();
            std::thread::spawn(move || runtime.block_on(std::future::pending::<()>()));
            let task = handle.spawn(run_controller(kubeconfig.to_owned()));
            SharedController {
                runtime: handle,
                kubeconfig: kubeconfig.to_owned(),
                task: std::sync::Mutex::new(task),
            }
        })
    }

    /// Starts a new controller; the stopped one's handle.
    fn restart(&self) -> tokio::task::JoinHandle<()> {
        let mut task = self.task.lock().unwrap();
        task.abort();
        let started = self.runtime.spawn(run_controller(self.kubeconfig.clone()));
        std::mem::replace(&mut *task, started)
    }
}

/// A name no other test (or earlier run on a real cluster) uses: every
/// cluster-wide or platform-wide name a test gives (projects, and so
/// environments' namespaces) comes from here.
pub fn unique(prefix: &str) -> String {
    format!(
        "{prefix}-{}",
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    )
}
