//! What an app becomes in the cluster: App resources made directly with the
//! Kubernetes API in an environment's namespace, and the workloads the
//! controller renders from them, read back through the same API. Every check
//! polls: on a real cluster the effects come seconds later.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::batch::v1::CronJob;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Service};
use k8s_openapi::api::networking::v1::Ingress;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::{Resource, ResourceExt};
use serde::de::DeserializeOwned;
use serde_json::json;

use berth_cluster::crd::{
    App, AppSpec, AppStatus, LABEL_APP, LABEL_ENVIRONMENT, LABEL_ORG, LABEL_PROCESS, LABEL_PROJECT,
};
use berth_domain::app::testing::IMAGE;
use berth_domain::app::{AppConfig, AppEnvVar, AppProcess, AppVolume};
use berth_domain::parts::SecretKeyRef;
use berth_domain::stored::Stored;

use crate::support::cluster::wait_bound;
use crate::support::cluster::{APPS_DOMAIN, INGRESS_CLASS, PROGRESS_DEADLINE_SECONDS};
use crate::support::{TestApp, eventually};
use berth_kube_standin::{Fault, FaultKind};

/// An environment provisioned by the controller, to put App resources in.
struct Environment {
    api: TestApp,
    project: String,
    name: String,
    namespace: String,
}

impl Environment {
    async fn new() -> Self {
        let api = TestApp::with_cluster().await;
        let project = api.create_project("r").await;
        api.create_environment(&project, json!({ "name": "dev" }))
            .await;
        let namespace = format!("{project}-dev");
        eventually("the environment's namespace is there", || {
            api.cluster().namespace_exists(&namespace)
        })
        .await;
        Self {
            api,
            project,
            name: "dev".to_owned(),
            namespace,
        }
    }

    fn client(&self) -> kube::Client {
        self.api.cluster().client.clone()
    }

    fn is_standin(&self) -> bool {
        self.api.cluster().standin.is_some()
    }

    fn apps(&self) -> Api<App> {
        Api::namespaced(self.client(), &self.namespace)
    }

    fn objects<K>(&self) -> Api<K>
    where
        K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>,
    {
        Api::namespaced(self.client(), &self.namespace)
    }

    /// An App as the API would store it: labelled with its organization,
    /// project and environment.
    fn app(&self, name: &str, config: AppConfig) -> App {
        App::test(name, config).in_environment(&self.api.owner.org, &self.project, &self.name)
    }

    async fn create(&self, name: &str, config: AppConfig) -> App {
        self.apps()
            .create(&PostParams::default(), &self.app(name, config))
            .await
            .expect("creating the App")
    }

    /// Replaces the App's spec (a merge patch of the whole spec: lists are
    /// replaced, as the API does).
    async fn update(&self, app: &App, change: impl FnOnce(&mut AppSpec)) {
        let mut spec = self.apps().get(&app.name_any()).await.unwrap().spec;
        change(&mut spec);
        self.apps()
            .patch(
                &app.name_any(),
                &PatchParams::default(),
                &Patch::Merge(json!({ "spec": spec })),
            )
            .await
            .expect("updating the App");
    }

    async fn status(&self, app: &str) -> AppStatus {
        self.apps()
            .get(app)
            .await
            .expect("reading the App")
            .status
            .unwrap_or_default()
    }

    async fn get<K>(&self, name: &str) -> Option<K>
    where
        K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
            + Clone
            + DeserializeOwned
            + std::fmt::Debug,
    {
        self.objects::<K>()
            .get_opt(name)
            .await
            .expect("reading an object")
    }

    /// Waits until the object exists and `check` holds for it; returns it.
    async fn wait_for<K>(&self, name: &str, what: &str, check: impl Fn(&K) -> bool) -> K
    where
        K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
            + Clone
            + DeserializeOwned
            + std::fmt::Debug,
    {
        eventually(what, || async {
            self.get::<K>(name)
                .await
                .is_some_and(|object| check(&object))
        })
        .await;
        self.get::<K>(name).await.expect("the object")
    }

    async fn wait_gone<K>(&self, name: &str, what: &str)
    where
        K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
            + Clone
            + DeserializeOwned
            + std::fmt::Debug,
    {
        eventually(what, || async { self.get::<K>(name).await.is_none() }).await;
    }
}

fn pod_spec(deployment: &Deployment) -> k8s_openapi::api::core::v1::PodSpec {
    deployment
        .spec
        .clone()
        .unwrap()
        .template
        .spec
        .expect("a pod spec")
}

fn container(deployment: &Deployment) -> k8s_openapi::api::core::v1::Container {
    pod_spec(deployment).containers.remove(0)
}

fn strategy(deployment: &Deployment) -> Option<String> {
    deployment.spec.as_ref()?.strategy.as_ref()?.type_.clone()
}

fn storage(claim: &PersistentVolumeClaim) -> Option<String> {
    Some(
        claim.spec.as_ref()?.resources.as_ref()?.requests.as_ref()?["storage"]
            .0
            .clone(),
    )
}

fn hosts(ingress: &Ingress) -> Vec<String> {
    ingress
        .spec
        .iter()
        .flat_map(|spec| spec.rules.iter().flatten())
        .filter_map(|rule| rule.host.clone())
        .collect()
}

/// The App's controlling owner reference, with its uid.
fn assert_owned_by(object: &impl Resource, app: &App) {
    let owners = object.meta().owner_references.clone().unwrap_or_default();
    assert_eq!(owners.len(), 1, "{:?}", object.meta().name);
    let owner = &owners[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("App", app.name_any().as_str())
    );
    assert_eq!(Some(&owner.uid), app.metadata.uid.as_ref());
    assert_eq!(owner.controller, Some(true));
    assert_eq!(owner.block_owner_deletion, Some(true));
}

#[tokio::test]
async fn a_web_app_becomes_a_deployment_a_service_and_an_ingress() {
    let env = Environment::new().await;
    let mut web = AppProcess::test("web", Some(8080));
    web.size = Stored::read("750m/1536Mi");
    web.command = vec!["./serve".to_owned(), "--port=8080".to_owned()];
    let mut config = AppConfig::test(vec![web]);
    config.health_check_path = Some(Stored::read("/healthz"));
    config.fs_group = Some(2000);
    config.domains = vec![Stored::read("shop.example.com")];
    config.env = vec![
        AppEnvVar {
            name: "MODE".to_owned(),
            value: Some("production".to_owned()),
            secret: None,
        },
        AppEnvVar {
            name: "DATABASE_URL".to_owned(),
            value: None,
            secret: Some(SecretKeyRef {
                name: "shop-db".to_owned(),
                key: "url".to_owned(),
            }),
        },
    ];
    let app = env.create("shop", config).await;

    let deployment: Deployment = env
        .wait_for("shop-web", "the web process's Deployment", |_| true)
        .await;
    assert_owned_by(&deployment, &app);
    let labels = deployment.labels();
    assert_eq!(labels[LABEL_APP], "shop");
    assert_eq!(labels[LABEL_PROCESS], "web");
    assert_eq!(labels[LABEL_PROJECT], env.project.as_str());
    assert_eq!(labels[LABEL_ENVIRONMENT], "dev");
    assert_eq!(labels[LABEL_ORG], env.api.owner.org.as_str());
    let spec = deployment.spec.clone().unwrap();
    assert_eq!(spec.replicas, Some(1));
    assert_eq!(
        spec.progress_deadline_seconds,
        Some(PROGRESS_DEADLINE_SECONDS)
    );
    assert_eq!(strategy(&deployment).as_deref(), Some("RollingUpdate"));
    assert_eq!(
        pod_spec(&deployment).security_context.unwrap().fs_group,
        Some(2000)
    );

    let container = container(&deployment);
    assert_eq!(container.name, "web");
    assert_eq!(container.image.as_deref(), Some(IMAGE));
    assert_eq!(
        container.command,
        Some(vec!["./serve".to_owned(), "--port=8080".to_owned()])
    );
    let resources = container.resources.clone().unwrap();
    for quantities in [resources.requests.unwrap(), resources.limits.unwrap()] {
        assert_eq!(quantities["cpu"].0, "750m");
        assert_eq!(quantities["memory"].0, "1536Mi");
    }
    assert_eq!(container.ports.clone().unwrap()[0].container_port, 8080);
    for probe in [&container.readiness_probe, &container.liveness_probe] {
        let get = probe.clone().unwrap().http_get.unwrap();
        assert_eq!(get.path.as_deref(), Some("/healthz"));
        assert_eq!(
            get.port,
            k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(8080)
        );
    }
    let env_vars = container.env.clone().unwrap();
    assert_eq!(env_vars[0].value.as_deref(), Some("production"));
    let secret = env_vars[1]
        .value_from
        .clone()
        .unwrap()
        .secret_key_ref
        .unwrap();
    assert_eq!(
        (secret.name.as_str(), secret.key.as_str()),
        ("shop-db", "url")
    );

    let service: Service = env.wait_for("shop-web", "the web Service", |_| true).await;
    assert_owned_by(&service, &app);
    let service_spec = service.spec.unwrap();
    assert_eq!(service_spec.type_.as_deref(), Some("ClusterIP"));
    let port = &service_spec.ports.unwrap()[0];
    assert_eq!((port.name.as_deref(), port.port), (Some("http"), 8080));
    assert_eq!(
        service_spec.selector.unwrap(),
        BTreeMap::from([
            (LABEL_APP.to_owned(), "shop".to_owned()),
            (LABEL_PROCESS.to_owned(), "web".to_owned()),
        ])
    );

    let ingress: Ingress = env.wait_for("shop", "the app's Ingress", |_| true).await;
    assert_owned_by(&ingress, &app);
    assert_eq!(
        hosts(&ingress),
        [
            "shop.example.com".to_owned(),
            format!("shop--dev--{}.{APPS_DOMAIN}", env.project)
        ]
    );
    let ingress_spec = ingress.spec.unwrap();
    assert_eq!(
        ingress_spec.ingress_class_name.as_deref(),
        Some(INGRESS_CLASS)
    );
    let backend = ingress_spec.rules.unwrap()[0].http.clone().unwrap().paths[0]
        .backend
        .service
        .clone()
        .unwrap();
    assert_eq!(backend.name, "shop-web");

    assert!(
        env.get::<HorizontalPodAutoscaler>("shop-web")
            .await
            .is_none()
    );
    eventually("the App's status has its url", || async {
        let status = env.status("shop").await;
        status.url.as_deref() == Some("http://shop.example.com")
            && status.observed_generation == app.metadata.generation
            && status.reason.is_some()
    })
    .await;

    // A restart rolls the pods through the pod template.
    env.update(&app, |spec| {
        spec.restarted_at = Some("2025-06-01T12:00:00Z".to_owned());
    })
    .await;
    env.wait_for::<Deployment>("shop-web", "the restart annotation", |deployment| {
        deployment
            .spec
            .as_ref()
            .and_then(|spec| spec.template.metadata.as_ref())
            .and_then(|meta| meta.annotations.as_ref())
            .and_then(|annotations| annotations.get("kubectl.kubernetes.io/restartedAt"))
            .is_some_and(|at| at == "2025-06-01T12:00:00Z")
    })
    .await;
}

#[tokio::test]
async fn autoscaling_comes_and_goes_with_max_replicas() {
    let env = Environment::new().await;
    let mut web = AppProcess::test("web", Some(8080));
    web.min_replicas = 2;
    web.max_replicas = 5;
    let app = env.create("scaler", AppConfig::test(vec![web])).await;

    let hpa: HorizontalPodAutoscaler = env.wait_for("scaler-web", "the autoscaler", |_| true).await;
    assert_owned_by(&hpa, &app);
    let spec = hpa.spec.unwrap();
    assert_eq!((spec.min_replicas, spec.max_replicas), (Some(2), 5));
    assert_eq!(spec.scale_target_ref.kind, "Deployment");
    assert_eq!(spec.scale_target_ref.name, "scaler-web");
    let metric = spec.metrics.unwrap().remove(0).resource.unwrap();
    assert_eq!(metric.name, "cpu");
    assert_eq!(metric.target.average_utilization, Some(75));
    env.wait_for::<Deployment>("scaler-web", "the autoscaled Deployment", |_| true)
        .await;

    // Fixed at 3: the autoscaler goes, the Deployment holds the count.
    env.update(&app, |spec| {
        spec.config.processes[0].min_replicas = 3;
        spec.config.processes[0].max_replicas = 3;
    })
    .await;
    env.wait_gone::<HorizontalPodAutoscaler>("scaler-web", "the autoscaler is removed")
        .await;
    env.wait_for::<Deployment>("scaler-web", "3 replicas", |deployment| {
        deployment.spec.as_ref().and_then(|spec| spec.replicas) == Some(3)
    })
    .await;

    // Stopped (0 replicas): no autoscaler even with a maximum above.
    env.update(&app, |spec| {
        spec.config.processes[0].min_replicas = 0;
        spec.config.processes[0].max_replicas = 4;
    })
    .await;
    env.wait_for::<Deployment>("scaler-web", "0 replicas", |deployment| {
        deployment.spec.as_ref().and_then(|spec| spec.replicas) == Some(0)
    })
    .await;
    assert!(
        env.get::<HorizontalPodAutoscaler>("scaler-web")
            .await
            .is_none()
    );
}

#[tokio::test]
async fn scheduled_processes_become_cron_jobs() {
    let env = Environment::new().await;
    let mut nightly = AppProcess::test("nightly", None);
    nightly.schedule = Some(Stored::read("30 2 * * *"));
    nightly.time_zone = Some(Stored::read("Europe/Berlin"));
    nightly.command = vec!["./report".to_owned()];
    let mut hourly = AppProcess::test("hourly", None);
    hourly.schedule = Some(Stored::read("0 * * * *"));
    let app = env
        .create("reports", AppConfig::test(vec![nightly, hourly]))
        .await;

    let cron: CronJob = env
        .wait_for("reports-nightly", "the nightly CronJob", |_| true)
        .await;
    assert_owned_by(&cron, &app);
    assert_eq!(cron.labels()[LABEL_PROCESS], "nightly");
    let spec = cron.spec.unwrap();
    assert_eq!(spec.schedule, "30 2 * * *");
    assert_eq!(spec.time_zone.as_deref(), Some("Europe/Berlin"));
    assert_eq!(spec.concurrency_policy.as_deref(), Some("Forbid"));
    assert_eq!(spec.successful_jobs_history_limit, Some(3));
    assert_eq!(spec.failed_jobs_history_limit, Some(3));
    let job = spec.job_template.spec.unwrap();
    let pod = job.template.spec.unwrap();
    assert_eq!(pod.restart_policy.as_deref(), Some("OnFailure"));
    assert_eq!(pod.containers[0].command, Some(vec!["./report".to_owned()]));
    assert!(pod.containers[0].resources.is_some());

    let hourly: CronJob = env
        .wait_for("reports-hourly", "the hourly CronJob", |_| true)
        .await;
    assert_eq!(hourly.spec.unwrap().time_zone.as_deref(), Some("UTC"));
    assert!(env.get::<Deployment>("reports-nightly").await.is_none());
    assert!(env.get::<Ingress>("reports").await.is_none());

    eventually("an app of scheduled processes is Scheduled", || async {
        let status = env.status("reports").await;
        status.reason.as_deref() == Some("Scheduled") && status.ready && status.url.is_none()
    })
    .await;
}

#[tokio::test]
async fn volumes_are_claims_that_grow_never_shrink_and_outlive_their_mount() {
    let env = Environment::new().await;
    let app = env
        .create(
            "files",
            AppConfig::test(vec![AppProcess::test("web", Some(8080))]),
        )
        .await;
    env.wait_for::<Deployment>("files-web", "the Deployment", |deployment| {
        strategy(deployment).as_deref() == Some("RollingUpdate")
    })
    .await;

    // A volume: a claim, mounted, and the Recreate strategy.
    env.update(&app, |spec| {
        spec.config.volumes = vec![AppVolume::test("data", "/var/lib/files", "1Gi")];
    })
    .await;
    let claim: PersistentVolumeClaim = env.wait_for("files-data", "the claim", |_| true).await;
    assert_eq!(storage(&claim).as_deref(), Some("1Gi"));
    assert_eq!(
        claim.spec.clone().unwrap().access_modes,
        Some(vec!["ReadWriteOnce".to_owned()])
    );
    assert!(
        claim
            .metadata
            .owner_references
            .as_ref()
            .is_none_or(|owners| owners.is_empty()),
        "a claim outlives its app"
    );
    assert_eq!(claim.labels()[LABEL_APP], "files");
    let deployment = env
        .wait_for::<Deployment>(
            "files-web",
            "the volume mounted with Recreate",
            |deployment| {
                strategy(deployment).as_deref() == Some("Recreate")
                    && pod_spec(deployment).volumes.is_some()
            },
        )
        .await;
    let volumes = pod_spec(&deployment).volumes.unwrap();
    assert_eq!(volumes[0].name, "data");
    assert_eq!(
        volumes[0]
            .persistent_volume_claim
            .clone()
            .unwrap()
            .claim_name,
        "files-data"
    );
    let mounts = container(&deployment).volume_mounts.unwrap();
    assert_eq!(
        (mounts[0].name.as_str(), mounts[0].mount_path.as_str()),
        ("data", "/var/lib/files")
    );

    // Grown: the claim follows (replaced while unbound, as nothing runs it).
    env.update(&app, |spec| {
        spec.config.volumes[0].size = Stored::read("2Gi")
    })
    .await;
    env.wait_for::<PersistentVolumeClaim>("files-data", "the claim grows", |claim| {
        claim.metadata.deletion_timestamp.is_none() && storage(claim).as_deref() == Some("2Gi")
    })
    .await;

    // Shrunk in the resource (the API refuses it; the controller too): the
    // claim keeps its size, while the same change's other field lands.
    env.update(&app, |spec| {
        spec.config.volumes[0].size = Stored::read("1536Mi");
        spec.config.volumes[0].mount_path = Stored::read("/srv/files");
    })
    .await;
    env.wait_for::<Deployment>("files-web", "the new mount path", |deployment| {
        container(deployment)
            .volume_mounts
            .is_some_and(|mounts| mounts[0].mount_path == "/srv/files")
    })
    .await;
    let claim: PersistentVolumeClaim = env.get("files-data").await.unwrap();
    assert_eq!(storage(&claim).as_deref(), Some("2Gi"));

    // A bound claim grows in place (only the stand-in lets a test bind it).
    if env.is_standin() {
        env.objects::<PersistentVolumeClaim>()
            .patch_status(
                "files-data",
                &PatchParams::default(),
                &Patch::Merge(json!({ "status": { "phase": "Bound" } })),
            )
            .await
            .unwrap();
        env.update(&app, |spec| {
            spec.config.volumes[0].size = Stored::read("3Gi")
        })
        .await;
        let grown = env
            .wait_for::<PersistentVolumeClaim>("files-data", "the bound claim grows", |claim| {
                storage(claim).as_deref() == Some("3Gi")
            })
            .await;
        assert_eq!(grown.metadata.uid, claim.metadata.uid, "the same claim");
    }

    // Removed: unmounted, the claim stays.
    let claim_uid_before_removal = env
        .get::<PersistentVolumeClaim>("files-data")
        .await
        .unwrap()
        .metadata
        .uid;
    env.update(&app, |spec| spec.config.volumes.clear()).await;
    env.wait_for::<Deployment>("files-web", "the volume unmounted", |deployment| {
        pod_spec(deployment)
            .volumes
            .is_none_or(|volumes| volumes.is_empty())
            && container(deployment)
                .volume_mounts
                .is_none_or(|mounts| mounts.is_empty())
            && strategy(deployment).as_deref() == Some("RollingUpdate")
    })
    .await;
    let kept: PersistentVolumeClaim = env.get("files-data").await.expect("the claim is kept");
    assert_eq!(kept.metadata.uid, claim_uid_before_removal);
}

#[tokio::test]
async fn a_dropped_process_loses_its_objects() {
    let env = Environment::new().await;
    let mut api = AppProcess::test("api", Some(9000));
    api.max_replicas = 3;
    let mut nightly = AppProcess::test("nightly", None);
    nightly.schedule = Some(Stored::read("30 2 * * *"));
    let app = env
        .create(
            "multi",
            AppConfig::test(vec![
                AppProcess::test("web", Some(8080)),
                api,
                AppProcess::test("worker", None),
                nightly,
            ]),
        )
        .await;
    env.wait_for::<HorizontalPodAutoscaler>("multi-api", "the api autoscaler", |_| true)
        .await;
    env.wait_for::<CronJob>("multi-nightly", "the nightly CronJob", |_| true)
        .await;
    env.wait_for::<Ingress>("multi", "the web Ingress", |_| true)
        .await;
    env.wait_for::<Service>("multi-api", "the api Service", |_| true)
        .await;
    let worker: Deployment = env
        .wait_for("multi-worker", "the worker Deployment", |_| true)
        .await;
    assert!(container(&worker).ports.is_none());
    assert!(env.get::<Service>("multi-worker").await.is_none());

    env.update(&app, |spec| {
        spec.config
            .processes
            .retain(|process| process.name != "api");
    })
    .await;
    env.wait_gone::<Deployment>("multi-api", "the api Deployment is removed")
        .await;
    env.wait_gone::<Service>("multi-api", "the api Service is removed")
        .await;
    env.wait_gone::<HorizontalPodAutoscaler>("multi-api", "the api autoscaler is removed")
        .await;
    for name in ["multi-web", "multi-worker"] {
        assert!(
            env.get::<Deployment>(name).await.is_some(),
            "{name} is kept"
        );
    }
    assert!(env.get::<Service>("multi-web").await.is_some());

    // Without a web process the app has no Ingress; without the scheduled
    // one, no CronJob.
    env.update(&app, |spec| {
        spec.config
            .processes
            .retain(|process| process.name == "worker");
    })
    .await;
    env.wait_gone::<Ingress>("multi", "the Ingress is removed")
        .await;
    env.wait_gone::<CronJob>("multi-nightly", "the nightly CronJob is removed")
        .await;
    env.wait_gone::<Deployment>("multi-web", "the web Deployment is removed")
        .await;
    assert!(env.get::<Deployment>("multi-worker").await.is_some());
}

#[tokio::test]
async fn a_worker_only_app_has_no_ingress_and_no_url() {
    let env = Environment::new().await;
    let mut config = AppConfig::test(vec![AppProcess::test("worker", None)]);
    config.domains = vec![Stored::read("worker.example.com")];
    env.create("crunch", config).await;
    env.wait_for::<Deployment>("crunch-worker", "the worker Deployment", |_| true)
        .await;
    eventually("the App has a status", || async {
        env.status("crunch").await.reason.is_some()
    })
    .await;
    assert_eq!(env.status("crunch").await.url, None);
    assert!(env.get::<Ingress>("crunch").await.is_none());
    assert!(env.get::<Service>("crunch-worker").await.is_none());
}

/// The same on the stand-in (which simulates kube-controller-manager) and on
/// a real cluster without nodes: pods stay Pending, the rollout passes its
/// progress deadline, and once the test plays the kubelet the app is
/// Available.
#[tokio::test]
async fn a_stalled_rollout_is_reported_as_failed_and_a_finished_one_as_available() {
    let env = Environment::new().await;
    env.create(
        "stall",
        AppConfig::test(vec![AppProcess::test("web", Some(8080))]),
    )
    .await;
    eventually("the App is Progressing", || async {
        env.status("stall").await.reason.as_deref() == Some("Progressing")
    })
    .await;
    eventually("the App is RolloutFailed", || async {
        let status = env.status("stall").await;
        status.reason.as_deref() == Some("RolloutFailed")
            && !status.ready
            && status
                .message
                .is_some_and(|message| message.contains("Deployment stall-web"))
    })
    .await;
    eventually("the App is Available", || async {
        crate::support::kubelet::play_kubelet(&env.client(), &env.namespace, "berth.dev/app=stall")
            .await;
        let status = env.status("stall").await;
        status.reason.as_deref() == Some("Available") && status.ready
    })
    .await;
}

#[tokio::test]
async fn an_app_the_cluster_cannot_run_is_reported() {
    let env = Environment::new().await;
    let mut web = AppProcess::test("web", Some(8080));
    web.size = Stored::read("galactic");
    let app = env.create("broken", AppConfig::test(vec![web])).await;
    eventually("the invalid size is reported", || async {
        let status = env.status("broken").await;
        status.reason.as_deref() == Some("RolloutFailed")
            && status
                .message
                .is_some_and(|message| message.contains("spec.processes[0].size"))
    })
    .await;
    assert!(env.get::<Deployment>("broken-web").await.is_none());

    // Fixed: it rolls out.
    env.update(&app, |spec| {
        spec.config.processes[0].size = Stored::read("nano")
    })
    .await;
    env.wait_for::<Deployment>("broken-web", "the Deployment once fixed", |_| true)
        .await;
    eventually("the failure is cleared", || async {
        let status = env.status("broken").await;
        status
            .message
            .is_none_or(|message| !message.contains("spec.processes[0].size"))
    })
    .await;
}

/// Apps of a namespace make objects one at a time (two never both take a
/// free name), but an app whose objects are all its own already does not
/// wait for that: its new image reaches its Deployment while another app of
/// the namespace is still making its objects.
#[tokio::test]
#[cfg_attr(berth_real_cluster, ignore = "needs the stand-in's fault knobs")]
async fn a_new_image_does_not_wait_for_another_app_making_its_objects() {
    let env = Environment::new().await;
    let web = || AppConfig::test(vec![AppProcess::test("web", Some(8080))]);
    let fast = env.create("fast", web()).await;
    env.wait_for::<Deployment>("fast-web", "fast's Deployment", |_| true)
        .await;

    // The apply that makes slow's Deployment is held longer than this test
    // waits for anything: slow holds its namespace's turn meanwhile.
    env.api.standin().add_fault(
        Fault::new(
            FaultKind::Delay {
                delay: wait_bound() + Duration::from_secs(60),
            },
            1,
        )
        .method("PATCH")
        .path_contains(format!(
            "/namespaces/{}/deployments/slow-web",
            env.namespace
        )),
    );
    env.create("slow", web()).await;
    eventually("slow's Deployment is being made", || async {
        env.api.standin().pending_faults().is_empty()
    })
    .await;

    let image = "registry.example.com/shop/web:2";
    env.update(&fast, |spec| spec.config.image = Some(Stored::read(image)))
        .await;
    env.wait_for::<Deployment>("fast-web", "fast's new image", |deployment| {
        container(deployment).image.as_deref() == Some(image)
    })
    .await;
    assert!(
        env.get::<Deployment>("slow-web").await.is_none(),
        "slow was still making its objects"
    );
}
