//! `make bench`: the controller at scale, on the stand-in Kubernetes API
//! server (in this process, its Deployment, ReplicaSet and Job controllers
//! simulated) and the release `berth-controller` as its own process, so its
//! resident memory can be read from `/proc`.
//!
//! For each scale (100, 250, 500 and 1,000 apps; `BERTH_BENCH_SCALES`, comma
//! separated, sets others) on a fresh stand-in: environments of ten apps
//! each (ten environments a project) are made as the API makes them and
//! provisioned by a first run of the controller, which then stops; the apps
//! (from an image, one web process, no release command) are made as custom
//! resources; then the controller starts again, cold, and is measured:
//!
//! - the time from its start until every App is rendered (its Deployment
//!   carries the App's image and the App's status has seen its generation);
//! - its resident memory then (`VmRSS`), beside the serialized size of the
//!   objects it caches (Projects, Environments, Apps);
//! - a burst of 200 image changes (every app, below 200 apps): the time until
//!   all are rendered, and the App reconciles per second meanwhile;
//! - reconciles per App generation, after the start and after the burst
//!   (the storm check: 1 is ideal; each App is also reconciled when its
//!   Deployment's status moves, so a little more is expected).
//!
//! Reconciles are read from the controller's `/metrics`. The figures and the
//! curve are in docs/benchmarks.md ("Controller at scale").

mod common;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{ListParams, ObjectMeta, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Resource, ResourceExt};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use berth_cluster::crd::{
    App, BUILDS_NAMESPACE, EnvType, Environment, EnvironmentSpec, LABEL_ENVIRONMENT,
    LABEL_MANAGED_BY, LABEL_ORG, LABEL_PROJECT, MANAGER, Project, ProjectSpec, ReleaseMark,
    ReleaseReason,
};
use berth_cluster::install;
use berth_domain::app::{AppConfig, AppProcess};
use berth_domain::stored::Stored;

const ORG: &str = "bench";
const APPS_PER_ENVIRONMENT: usize = 10;
const ENVIRONMENTS_PER_PROJECT: usize = 10;
const BURST: usize = 200;
/// How long the reconcile count must stay still to call the controller quiet.
const QUIET: Duration = Duration::from_secs(3);
/// How long anything may take before the bench gives up.
const BOUND: Duration = Duration::from_secs(900);

/// What one scale measured.
struct Figures {
    apps: usize,
    rendered: Duration,
    rss_kib: u64,
    rss_environments_only_kib: u64,
    cached_bytes: usize,
    start_reconciles: f64,
    burst: usize,
    burst_rendered: Duration,
    burst_reconciles: f64,
}

#[tokio::main]
async fn main() {
    if std::env::args().any(|arg| arg == "--list") {
        return; // `cargo bench -- --list` and `cargo test --benches` ask this.
    }
    let scales: Vec<usize> = std::env::var("BERTH_BENCH_SCALES")
        .ok()
        .map(|scales| {
            scales
                .split(',')
                .filter_map(|s| s.trim().parse().ok())
                .collect()
        })
        .unwrap_or_else(|| vec![100, 250, 500, 1000]);
    let binary = controller_binary();
    let mut all = Vec::new();
    for apps in scales {
        let figures = measure(&binary, apps).await;
        print_one(&figures);
        all.push(figures);
    }
    print_curve(&all);
}

/// The release `berth-controller` beside this bench's binary
/// (`target/release/deps/controller_scale-…`): `make bench` builds it first.
fn controller_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("the bench's path");
    let binary = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/release")
        .join("berth-controller");
    assert!(
        binary.exists(),
        "{} is missing: cargo build --release --locked -p berth-controller",
        binary.display()
    );
    binary
}

async fn measure(binary: &PathBuf, apps: usize) -> Figures {
    let cluster = berth_kube_standin::StandIn::start_with(berth_kube_standin::Config {
        // Pods run (simulated), so rollouts complete as on a cluster with
        // nodes: an App's next revision waits for its last to be available.
        simulate_controllers: true,
        simulate_kubelet: true,
        // Every change of the run stays in reach of a watch that resumes.
        history_limit: 2_000_000,
        ..berth_kube_standin::Config::default()
    })
    .await
    .expect("stand-in");
    let dir = std::env::temp_dir().join(format!("berth-scale-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).expect("temporary directory");
    let kubeconfig = dir.join("kubeconfig");
    cluster.write_kubeconfig(&kubeconfig).expect("kubeconfig");
    let client = client_of(&cluster.kubeconfig_yaml()).await;
    install::install_crds(&client).await.expect("CRDs");
    for namespace in [berth_controller::DEFAULT_LEASE_NAMESPACE, BUILDS_NAMESPACE] {
        create_namespace(&client, namespace).await;
    }

    // The environments, provisioned by a first run of the controller.
    let environments = apps.div_ceil(APPS_PER_ENVIRONMENT);
    let places: Vec<(String, String)> = (0..environments)
        .map(|e| {
            (
                format!("p{}", e / ENVIRONMENTS_PER_PROJECT),
                format!("e{}", e % ENVIRONMENTS_PER_PROJECT),
            )
        })
        .collect();
    for e in (0..environments).step_by(ENVIRONMENTS_PER_PROJECT) {
        create_project(&client, &places[e].0).await;
    }
    for (project, environment) in &places {
        create_environment(&client, project, environment).await;
    }
    let controller = Controller::start(binary, &kubeconfig);
    let environment_api = Api::<Environment>::all(client.clone());
    wait_for("every environment provisioned", || async {
        let listed = environment_api
            .list(&ListParams::default())
            .await
            .expect("list");
        listed
            .items
            .iter()
            .filter(|e| e.status.as_ref().is_some_and(|s| s.ready))
            .count()
            == environments
    })
    .await;
    controller.quiet().await;
    let rss_environments_only_kib = controller.rss_kib();
    controller.stop().await;

    // The apps, then the controller cold.
    eprintln!("{apps} apps: creating the apps");
    for (i, (project, environment)) in (0..apps).map(|i| (i, &places[i / APPS_PER_ENVIRONMENT])) {
        create_app(&client, project, environment, &format!("a{i}"), "1").await;
    }
    let watched = Watched::start(&client).await;
    eprintln!("{apps} apps: starting the controller");
    let started = Instant::now();
    let controller = Controller::start(binary, &kubeconfig);
    wait_for("every App rendered", || async {
        watched.rendered("1") == apps
    })
    .await;
    let rendered = started.elapsed();
    let start_reconciles = controller.quiet().await;
    let rss_kib = controller.rss_kib();
    let cached_bytes = cached_bytes(&client).await;

    eprintln!("{apps} apps: rendered; the burst");
    // The burst: image changes to `burst` apps at once.
    let burst = BURST.min(apps);
    let before = controller.app_reconciles().await;
    let changed: Vec<(String, String)> = watched
        .apps
        .state()
        .iter()
        .take(burst)
        .map(|app| (app.namespace().unwrap_or_default(), app.name_any()))
        .collect();
    let started = Instant::now();
    futures::future::join_all(changed.iter().map(|(namespace, name)| {
        let apps: Api<App> = Api::namespaced(client.clone(), namespace);
        async move { deploy(&apps, name, "2").await }
    }))
    .await;
    wait_for("the burst rendered", || async {
        watched.rendered("2") == burst
    })
    .await;
    let burst_rendered = started.elapsed();
    let burst_reconciles = controller.quiet().await - before;
    controller.stop().await;
    let _ = std::fs::remove_dir_all(&dir);
    Figures {
        apps,
        rendered,
        rss_kib,
        rss_environments_only_kib,
        cached_bytes,
        start_reconciles,
        burst,
        burst_rendered,
        burst_reconciles,
    }
}

fn image(tag: &str) -> String {
    format!("registry.example/bench/app:{tag}")
}

async fn client_of(kubeconfig: &str) -> kube::Client {
    let kubeconfig = Kubeconfig::from_yaml(kubeconfig).expect("kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("config");
    kube::Client::try_from(config).expect("client")
}

async fn create_namespace(client: &kube::Client, name: &str) {
    let namespace = Namespace {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &namespace)
        .await
        .expect("namespace");
}

fn labels(pairs: &[(&str, &str)]) -> Option<std::collections::BTreeMap<String, String>> {
    Some(
        pairs
            .iter()
            .chain(&[(LABEL_ORG, ORG), (LABEL_MANAGED_BY, MANAGER)])
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
    )
}

/// A Project as the API makes it.
async fn create_project(client: &kube::Client, name: &str) {
    let mut project = Project::new(
        name,
        ProjectSpec {
            display_name: name.to_owned(),
            description: None,
            org: ORG.to_owned(),
        },
    );
    project.metadata.labels = labels(&[]);
    Api::<Project>::all(client.clone())
        .create(&PostParams::default(), &project)
        .await
        .expect("Project");
}

/// An Environment as the API makes it.
async fn create_environment(client: &kube::Client, project: &str, name: &str) {
    let mut environment = Environment::new(
        &format!("{project}-{name}"),
        EnvironmentSpec {
            project: project.to_owned(),
            name: name.to_owned(),
            org: ORG.to_owned(),
            env_type: EnvType::Standard,
            quota: None,
            deletion_scheduled_at: None,
        },
    );
    environment.metadata.labels = labels(&[(LABEL_PROJECT, project), (LABEL_ENVIRONMENT, name)]);
    Api::<Environment>::all(client.clone())
        .create(&PostParams::default(), &environment)
        .await
        .expect("Environment");
}

/// An App from an image, one web process, no release command.
async fn create_app(
    client: &kube::Client,
    project: &str,
    environment: &str,
    name: &str,
    tag: &str,
) {
    let mut config = AppConfig::test(vec![AppProcess::test("web", Some(8080))]);
    config.image = Some(Stored::read(&image(tag)));
    let app = App::test(name, config).in_environment(ORG, project, environment);
    Api::<App>::namespaced(client.clone(), &format!("{project}-{environment}"))
        .create(&PostParams::default(), &app)
        .await
        .expect("App");
}

/// An image change as the API makes it (`PATCH …/apps/{app}`): the image as
/// the App's next revision.
async fn deploy(apps: &Api<App>, name: &str, tag: &str) {
    let app = apps.get(name).await.expect("App");
    let mut config = app.spec.config.clone();
    config.image = Some(Stored::read(&image(tag)));
    let release = ReleaseMark::now(app.next_revision(), ReleaseReason::Deploy, None, None);
    apps.replace(
        name,
        &PostParams::default(),
        &app.superseded(config, release),
    )
    .await
    .expect("image change");
}

/// The Apps and Deployments, as watches see them.
struct Watched {
    apps: Store<App>,
    deployments: Store<Deployment>,
}

impl Watched {
    async fn start(client: &kube::Client) -> Self {
        fn cached<K>(api: Api<K>, config: watcher::Config) -> Store<K>
        where
            K: Resource<DynamicType = ()>
                + Clone
                + serde::de::DeserializeOwned
                + std::fmt::Debug
                + Send
                + Sync
                + 'static,
        {
            let (reader, writer) = reflector::store();
            let stream = watcher(api, config).default_backoff().reflect(writer);
            tokio::spawn(stream.for_each(|_| async {}));
            reader
        }
        let managed = watcher::Config::default().labels(&format!("{LABEL_MANAGED_BY}={MANAGER}"));
        let watched = Watched {
            apps: cached(Api::all(client.clone()), watcher::Config::default()),
            deployments: cached(Api::all(client.clone()), managed),
        };
        watched.apps.wait_until_ready().await.expect("Apps listed");
        watched
            .deployments
            .wait_until_ready()
            .await
            .expect("Deployments listed");
        watched
    }

    /// Apps of image `tag` rendered: their Deployment carries the image, and
    /// their status has seen their generation.
    fn rendered(&self, tag: &str) -> usize {
        let wanted = image(tag);
        let images: HashMap<String, String> = self
            .deployments
            .state()
            .iter()
            .filter_map(|deployment| {
                let owner = deployment
                    .owner_references()
                    .iter()
                    .find(|o| o.kind == "App")?;
                let image = common::first_image(deployment)?.to_owned();
                Some((owner.uid.clone(), image))
            })
            .collect();
        self.apps
            .state()
            .iter()
            .filter(|app| {
                app.spec.config.image.as_ref().map(Stored::text) == Some(wanted.as_str())
                    && app.status.as_ref().and_then(|s| s.observed_generation)
                        == app.metadata.generation
                    && app.uid().and_then(|uid| images.get(&uid)) == Some(&wanted)
            })
            .count()
    }
}

/// The serialized size of what the controller caches: its Projects,
/// Environments and Apps.
async fn cached_bytes(client: &kube::Client) -> usize {
    async fn listed<K>(client: &kube::Client) -> usize
    where
        K: Resource<DynamicType = ()>
            + Clone
            + serde::de::DeserializeOwned
            + serde::Serialize
            + std::fmt::Debug,
    {
        let list = Api::<K>::all(client.clone())
            .list(&ListParams::default())
            .await
            .expect("list");
        list.items
            .iter()
            .map(|item| serde_json::to_vec(item).map_or(0, |bytes| bytes.len()))
            .sum()
    }
    listed::<App>(client).await
        + listed::<Environment>(client).await
        + listed::<Project>(client).await
}

/// The controller, as its own process.
struct Controller {
    child: Child,
    addr: SocketAddr,
}

impl Controller {
    fn start(binary: &PathBuf, kubeconfig: &std::path::Path) -> Self {
        let addr = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free port");
        let child = Command::new(binary)
            .env("KUBECONFIG", kubeconfig)
            .env("BERTH_CONTROLLER_ADDR", addr.to_string())
            .env("BERTH_REPLICA", "bench")
            .env("RUST_LOG", "error")
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("berth-controller");
        Controller { child, addr }
    }

    fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("/proc status");
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))
            .and_then(|kib| kib.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmRSS")
    }

    async fn metrics(&self) -> Option<String> {
        let mut stream = tokio::net::TcpStream::connect(self.addr).await.ok()?;
        let request = format!("GET /metrics HTTP/1.0\r\nHost: {}\r\n\r\n", self.addr);
        stream.write_all(request.as_bytes()).await.ok()?;
        let mut text = String::new();
        stream.read_to_string(&mut text).await.ok()?;
        Some(text)
    }

    /// The App reconciles so far (ok or not).
    async fn app_reconciles(&self) -> f64 {
        let text = self.metrics().await.unwrap_or_default();
        text.lines()
            .filter(|line| line.starts_with("berth_controller_reconciles_total{kind=\"App\""))
            .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    }

    /// Waits until no App reconcile has run for [`QUIET`]; the App
    /// reconciles so far.
    async fn quiet(&self) -> f64 {
        let deadline = Instant::now() + BOUND;
        let mut last = self.app_reconciles().await;
        let mut still_since = Instant::now();
        loop {
            tokio::time::sleep(Duration::from_millis(250)).await;
            let now = self.app_reconciles().await;
            if now != last {
                last = now;
                still_since = Instant::now();
            } else if still_since.elapsed() >= QUIET {
                return last;
            }
            assert!(Instant::now() < deadline, "the controller never went quiet");
        }
    }

    /// SIGTERM: the controller finishes its reconciles and gives up its
    /// Lease, so the next one leads at once.
    async fn stop(mut self) {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        // Off the runtime's threads: the stand-in serves the controller's
        // last requests meanwhile.
        let _ = tokio::task::spawn_blocking(move || self.child.wait()).await;
    }
}

async fn wait_for<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + BOUND;
    while !check().await {
        assert!(Instant::now() < deadline, "{what}: not within {BOUND:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn print_one(f: &Figures) {
    println!(
        "{} apps: rendered after a cold start in {:.2} s; RSS {:.1} MiB ({:.1} MiB with the environments only), \
         cached objects {:.1} MiB serialized; {:.2} App reconciles per App at start; \
         burst of {}: rendered in {:.2} s, {:.0} App reconciles/s, {:.2} reconciles per changed App",
        f.apps,
        f.rendered.as_secs_f64(),
        f.rss_kib as f64 / 1024.0,
        f.rss_environments_only_kib as f64 / 1024.0,
        f.cached_bytes as f64 / 1_048_576.0,
        f.start_reconciles / f.apps as f64,
        f.burst,
        f.burst_rendered.as_secs_f64(),
        f.burst_reconciles / f.burst_rendered.as_secs_f64(),
        f.burst_reconciles / f.burst as f64,
    );
}

/// The curve: each figure per app, and as a ratio of the first scale's.
fn print_curve(all: &[Figures]) {
    let Some(first) = all.first() else { return };
    println!();
    println!(
        "{:>6} {:>10} {:>10} {:>10} {:>12} {:>14} {:>11} {:>12} {:>12}",
        "apps",
        "render s",
        "ms/app",
        "RSS MiB",
        "KiB/app Δ",
        "cached KiB/app",
        "rec/app",
        "burst s",
        "burst rec/s"
    );
    for f in all {
        let extra_apps = f.apps.saturating_sub(first.apps);
        let kib_per_app = if extra_apps == 0 {
            f64::NAN
        } else {
            (f.rss_kib as f64 - first.rss_kib as f64) / extra_apps as f64
        };
        println!(
            "{:>6} {:>10.2} {:>10.2} {:>10.1} {:>12.1} {:>14.2} {:>11.2} {:>12.2} {:>12.0}",
            f.apps,
            f.rendered.as_secs_f64(),
            f.rendered.as_secs_f64() * 1000.0 / f.apps as f64,
            f.rss_kib as f64 / 1024.0,
            kib_per_app,
            f.cached_bytes as f64 / 1024.0 / f.apps as f64,
            f.start_reconciles / f.apps as f64,
            f.burst_rendered.as_secs_f64(),
            f.burst_reconciles / f.burst_rendered.as_secs_f64(),
        );
    }
    if let Some(last) = all.last() {
        let scale = last.apps as f64 / first.apps as f64;
        println!(
            "\n{}→{} apps ({scale:.0}×): render time {:.1}×, RSS {:.2}×",
            first.apps,
            last.apps,
            last.rendered.as_secs_f64() / first.rendered.as_secs_f64(),
            last.rss_kib as f64 / first.rss_kib as f64,
        );
    }
}
