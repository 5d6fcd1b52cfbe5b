//! The cluster side of the tests: the stand-in Kubernetes API server (or, with
//! `BERTH_TEST_KUBECONFIG`, a real cluster, whose kubeconfig is then an
//! administrator's), Berth's CRDs and RBAC, and the controller running in
//! process, as it would beside the cluster. The API and the controller run as
//! their own ServiceAccounts, with exactly the roles of `infra/k8s`
//! (`identities`).

use std::future::Future;
use std::time::Duration;

use berth_kube_standin::StandIn;
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

/// The controller's settings in the tests.
pub fn controller_settings() -> berth_controller::Settings {
    berth_controller::Settings {
        render: berth_shared::cluster::render::RenderSettings {
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
    /// The controller's client: the `berth-controller` ServiceAccount's.
    controller_client: kube::Client,
    controller: std::sync::Mutex<tokio::task::JoinHandle<()>>,
}

impl Drop for TestCluster {
    fn drop(&mut self) {
        if let Ok(controller) = self.controller.lock() {
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
        let controller_client =
            access::client_from_kubeconfig(&controller_kubeconfig, None, CLIENT_TIMEOUT)
                .await
                .expect("the controller's client");
        // A real API server's authorizer learns of new bindings through a cache.
        for identity in [&kubeconfig, &controller_kubeconfig] {
            let projects: Api<Project> = Api::all(
                access::client_from_kubeconfig(identity, None, CLIENT_TIMEOUT)
                    .await
                    .expect("a client of a Berth identity"),
            );
            eventually("Berth's roles take effect", 30, || async {
                projects.list(&ListParams::default().limit(1)).await.is_ok()
            })
            .await;
        }
        let controller = std::sync::Mutex::new(tokio::spawn(berth_controller::run(
            controller_client.clone(),
            controller_settings(),
        )));
        Self {
            standin,
            client,
            admin_kubeconfig,
            kubeconfig,
            controller_client,
            controller,
        }
    }

    /// Stops the controller and starts a new one, as a rescheduled pod would.
    pub async fn restart_controller(&self) {
        let stopped = {
            let mut controller = self.controller.lock().unwrap();
            controller.abort();
            std::mem::replace(
                &mut *controller,
                tokio::spawn(berth_controller::run(
                    self.controller_client.clone(),
                    controller_settings(),
                )),
            )
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

/// A name no other test (or earlier run on a real cluster) uses.
pub fn unique(prefix: &str) -> String {
    format!(
        "{prefix}-{}",
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    )
}

/// Polls `check` until it holds, for at most `seconds`.
pub async fn eventually<F, Fut>(what: &str, seconds: u64, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(seconds);
    while tokio::time::Instant::now() < deadline {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{what}: not within {seconds} s");
}
