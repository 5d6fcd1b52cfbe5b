//! Shared test setup: a stand-in (or, with `BERTH_TEST_KUBECONFIG` set, a real cluster), a kube
//! client from a kubeconfig, a fresh namespace per test, and polling helpers.

use std::time::Duration;

pub use berth_kube_standin::testing::eventually;
pub use berth_kube_standin::testing::wait_bound as patience;
use berth_kube_standin::{Config as StandInConfig, StandIn};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::{conditions, wait::await_condition};
use kube::{Client, Config, CustomResource, CustomResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Point the tests at a real cluster instead: they must pass there too (tests of stand-in-only
/// knobs then skip themselves).
pub const REAL_CLUSTER_ENV: &str = "BERTH_TEST_KUBECONFIG";

pub struct TestEnv {
    pub standin: Option<StandIn>,
    pub client: Client,
    /// A namespace created for this test.
    pub ns: String,
    kubeconfig: String,
    /// Namespaces made for the test besides `ns`, deleted with it.
    extra: std::sync::Mutex<Vec<String>>,
}

pub async fn client_from_kubeconfig(yaml: &str, tweak: impl FnOnce(&mut Config)) -> Client {
    let kubeconfig = Kubeconfig::from_yaml(yaml).expect("kubeconfig parses");
    let mut config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("kubeconfig loads");
    config.read_timeout = Some(Duration::from_secs(20));
    tweak(&mut config);
    Client::try_from(config).expect("client builds")
}

fn unique(prefix: &str) -> String {
    let id = uuid::Uuid::new_v4().simple().to_string();
    format!("{prefix}-{}", &id[..8])
}

impl TestEnv {
    /// A stand-in (or the real cluster) with a fresh namespace.
    pub async fn new() -> TestEnv {
        Self::with_config(StandInConfig::default()).await
    }

    pub async fn with_config(config: StandInConfig) -> TestEnv {
        let (standin, kubeconfig) = match std::env::var(REAL_CLUSTER_ENV) {
            Ok(path) => (
                None,
                std::fs::read_to_string(path).expect("real-cluster kubeconfig readable"),
            ),
            Err(_) => {
                let s = StandIn::start_with(config).await.expect("stand-in starts");
                let kc = s.kubeconfig_yaml();
                (Some(s), kc)
            }
        };
        let client = client_from_kubeconfig(&kubeconfig, |_| {}).await;
        let ns = unique("t");
        let namespaces: Api<Namespace> = Api::all(client.clone());
        let body: Namespace =
            serde_json::from_value(serde_json::json!({"metadata": {"name": ns}})).unwrap();
        namespaces
            .create(&PostParams::default(), &body)
            .await
            .expect("test namespace created");
        TestEnv {
            standin,
            client,
            ns,
            kubeconfig,
            extra: std::sync::Mutex::default(),
        }
    }

    /// A stand-in that simulates kube-controller-manager (or the real cluster, which runs it).
    pub async fn with_controllers() -> TestEnv {
        Self::with_config(StandInConfig {
            simulate_controllers: true,
            ..StandInConfig::default()
        })
        .await
    }

    /// For tests of the stand-in's own knobs, which a real cluster does not
    /// have: such tests are marked `#[cfg_attr(berth_real_cluster, ignore =
    /// "…")]` (see this package's `build.rs`), so they are reported skipped
    /// there, never passed.
    pub async fn standin_only() -> TestEnv {
        Self::standin_only_with(StandInConfig::default()).await
    }

    pub async fn standin_only_with(config: StandInConfig) -> TestEnv {
        assert!(
            std::env::var(REAL_CLUSTER_ENV).is_err(),
            "a stand-in-only test ran against a real cluster: mark it \
             #[cfg_attr(berth_real_cluster, ignore = \"…\")]"
        );
        Self::with_config(config).await
    }

    pub fn standin(&self) -> &StandIn {
        self.standin.as_ref().expect("running against the stand-in")
    }

    pub fn api<K>(&self) -> Api<K>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
    {
        Api::namespaced(self.client.clone(), &self.ns)
    }

    /// Another client for the same cluster, with its config adjusted.
    pub async fn client_with(&self, tweak: impl FnOnce(&mut Config)) -> Client {
        client_from_kubeconfig(&self.kubeconfig, tweak).await
    }

    /// Another namespace, for tests that need two.
    pub async fn extra_namespace(&self) -> String {
        let name = unique("t2");
        let namespaces: Api<Namespace> = Api::all(self.client.clone());
        let body: Namespace =
            serde_json::from_value(serde_json::json!({"metadata": {"name": name}})).unwrap();
        namespaces
            .create(&PostParams::default(), &body)
            .await
            .expect("namespace created");
        self.extra.lock().unwrap().push(name.clone());
        name
    }
}

impl TestEnv {
    /// The administrator's kubeconfig of the cluster.
    pub fn kubeconfig(&self) -> &str {
        &self.kubeconfig
    }
}

/// Runs `work` to its end with a client of its own, on a thread and a
/// runtime of their own: for a `Drop`, whose test's runtime (which the
/// test's clients' tasks live on) is the one dropping, so that work spawned
/// on it would never run.
pub fn clean_up<F, Fut>(kubeconfig: &str, work: F)
where
    F: FnOnce(Client) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()>,
{
    let kubeconfig = kubeconfig.to_owned();
    let done = std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime for the cleanup")
            .block_on(async move { work(client_from_kubeconfig(&kubeconfig, |_| {}).await).await })
    })
    .join();
    if done.is_err() {
        eprintln!("cleaning up after the test: the cleanup panicked");
    }
}

impl Drop for TestEnv {
    /// A real cluster keeps what tests leave behind: the test's namespaces
    /// (and all in them) are deleted; not waited for, they go in their own
    /// time.
    fn drop(&mut self) {
        if self.standin.is_some() {
            return;
        }
        let mut namespaces = std::mem::take(&mut *self.extra.lock().unwrap());
        namespaces.push(self.ns.clone());
        clean_up(&self.kubeconfig, |client| async move {
            let api: Api<Namespace> = Api::all(client);
            for namespace in namespaces {
                if let Err(error) = api.delete(&namespace, &DeleteParams::background()).await {
                    eprintln!("deleting the test's namespace {namespace}: {error}");
                }
            }
        });
    }
}

/// The API `Status` of a failed call.
pub fn api_status(result: Result<impl std::fmt::Debug, kube::Error>) -> Box<kube::core::Status> {
    match result {
        Err(kube::Error::Api(status)) => status,
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// Checks a refusal as a real API server states it, whatever its version:
/// the code, the reason, and the object it names (`details`: the resource
/// and the name, empty when the request named none). Never the message: its
/// words change between Kubernetes versions (a server-side apply that would
/// create says only `configmaps "applied" is forbidden: `), and the
/// stand-in's are its own.
pub fn assert_refused(
    status: &kube::core::Status,
    code: u16,
    reason: &str,
    resource: &str,
    name: &str,
) {
    let details = status.details.as_ref();
    assert_eq!(
        (
            status.code,
            status.reason.as_str(),
            details.map(|d| d.kind.as_str()),
            details.map(|d| d.name.as_str()),
        ),
        (code, reason, Some(resource), Some(name)),
        "{}",
        status.message
    );
}

pub async fn is_gone<K>(api: &Api<K>, name: &str) -> bool
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    matches!(api.get_opt(name).await, Ok(None))
}

/// A namespaced custom resource with a status subresource.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq)]
#[kube(
    group = "standin.berth.dev",
    version = "v1",
    kind = "Widget",
    namespaced,
    status = "WidgetStatus",
    shortname = "wdg"
)]
#[serde(rename_all = "camelCase")]
pub struct WidgetSpec {
    pub size: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub color: Option<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct WidgetStatus {
    pub observed_size: i32,
    #[serde(default)]
    pub observed_generation: i64,
}

/// A cluster-scoped custom resource without a status subresource.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq)]
#[kube(group = "standin.berth.dev", version = "v1", kind = "Gadget")]
pub struct GadgetSpec {
    pub label: String,
}

/// Installs the test CRDs (idempotently, with server-side apply) and waits until established.
pub async fn install_crds(client: &Client) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in [Widget::crd(), Gadget::crd()] {
        let name = crd.metadata.name.clone().expect("CRD has a name");
        crds.patch(
            &name,
            &PatchParams::apply("standin-tests").force(),
            &Patch::Apply(&crd),
        )
        .await
        .expect("CRD applied");
        let established = await_condition(crds.clone(), &name, conditions::is_crd_established());
        tokio::time::timeout(patience(), established)
            .await
            .expect("CRD established in time")
            .expect("CRD watch");
    }
}
