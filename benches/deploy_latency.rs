//! `make bench`: how long a deploy takes to reach the cluster, one at a time
//! and many at once, against the same change patched straight into a
//! Deployment (the floor), in the same run.
//!
//! Berth's path: `PATCH …/apps/{app}` with a new image through the full router
//! (DynamoDB Local, the App written to the cluster), then the controller (run
//! in this process, as `berth-controller` runs it) renders the App and applies
//! its Deployment. The floor: a copy of each app's Deployment, in a namespace of
//! its own, patched with the same client. Both are timed from the answer to
//! the write until a watch of Deployments sees the pod template carry the new
//! image, and no change may be lost.
//!
//! The cluster is the stand-in (its Deployment and ReplicaSet controllers
//! simulated, so every Deployment's status moves as on a real cluster) or,
//! with `BERTH_TEST_KUBECONFIG` (an administrator's kubeconfig), a real one.
//! Settings: `BERTH_BENCH_OTHER_APPS` (default 300) apps of other
//! environments on the cluster beside the 50 measured, ten to an
//! environment; `BERTH_BENCH_ROUNDS` (default 20) rounds at each concurrency.

mod common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use http::{Method, StatusCode};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, ResourceExt};
use serde_json::{Value, json};
use tokio::sync::oneshot;

use berth_api::AppState;
use berth_api::access;
use berth_api::config::Config;
use berth_cluster::crd::Environment;
use berth_cluster::install;
use berth_store::round_trips::RoundTripCounter;
use berth_store::schema;

/// The apps whose deploys are timed: the most at once.
const MEASURED_APPS: usize = 50;
const APPS_PER_ENVIRONMENT: usize = 10;
const CONCURRENCY: [usize; 3] = [1, 10, 50];
/// A change not seen by then is lost.
const LOST_AFTER: Duration = Duration::from_secs(60);
const FLOOR_NAMESPACE: &str = "berth-bench-floor";
const PROJECT: &str = "lat";

fn setting(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Whoever waits for a Deployment to carry an image, told when a watch sees
/// it.
#[derive(Clone, Default)]
struct Sightings {
    /// By Deployment (namespace, name): the image awaited, and whom to tell.
    awaited: Arc<Mutex<HashMap<(String, String), Awaited>>>,
}

type Awaited = (String, oneshot::Sender<Instant>);

impl Sightings {
    fn expect(&self, namespace: &str, name: &str, image: &str) -> oneshot::Receiver<Instant> {
        let (sender, receiver) = oneshot::channel();
        self.awaited.lock().unwrap().insert(
            (namespace.to_owned(), name.to_owned()),
            (image.to_owned(), sender),
        );
        receiver
    }

    fn saw(&self, deployment: &Deployment) {
        let at = Instant::now();
        let key = (
            deployment.namespace().unwrap_or_default(),
            deployment.name_any(),
        );
        let mut awaited = self.awaited.lock().unwrap();
        if awaited
            .get(&key)
            .is_some_and(|(image, _)| common::first_image(deployment) == Some(image.as_str()))
            && let Some((_, sender)) = awaited.remove(&key)
        {
            let _ = sender.send(at);
        }
    }

    fn watch(&self, client: kube::Client) {
        let sightings = self.clone();
        tokio::spawn(async move {
            let mut events = std::pin::pin!(
                watcher(Api::<Deployment>::all(client), watcher::Config::default())
                    .default_backoff()
            );
            while let Some(event) = events.next().await {
                match event {
                    Ok(watcher::Event::Apply(d) | watcher::Event::InitApply(d)) => {
                        sightings.saw(&d)
                    }
                    Ok(_) => {}
                    Err(error) => eprintln!("the watch of Deployments: {error}"),
                }
            }
        });
    }
}

fn image_container_name(deployment: &Deployment) -> String {
    deployment
        .spec
        .as_ref()
        .and_then(|spec| spec.template.spec.as_ref())
        .and_then(|pod| pod.containers.first())
        .map(|container| container.name.clone())
        .unwrap_or_default()
}

/// One side of the comparison: how an app's image is changed.
#[derive(Clone, Copy, PartialEq)]
enum Path {
    Berth,
    Floor,
}

/// An app whose deploys are timed, and its Deployment (its one process's).
struct Measured {
    environment: String,
    app: String,
    namespace: String,
    deployment: String,
    /// Its container's name (the floor's patch names it).
    container: String,
}

impl Measured {
    /// Its Deployment's copy in the floor's namespace.
    fn floor_copy(&self) -> String {
        format!("{}-{}", self.environment, self.deployment)
    }
}

struct Bench {
    berth: Arc<common::Call>,
    token: String,
    kube: kube::Client,
    sightings: Sightings,
    /// The measured apps.
    apps: Vec<Measured>,
}

impl Bench {
    async fn send(&self, method: Method, path: &str, body: Option<Value>) -> (StatusCode, Value) {
        self.berth.send(method, path, Some(&self.token), body).await
    }

    /// Changes the image of app `index` by `path`; the time until a watch
    /// sees the Deployment carry it, from the write's start and from its
    /// answer (`None`: lost).
    async fn deploy(&self, path: Path, index: usize, image: String) -> Option<Latency> {
        let measured = &self.apps[index];
        let (namespace, deployment) = match path {
            Path::Berth => (measured.namespace.clone(), measured.deployment.clone()),
            Path::Floor => (FLOOR_NAMESPACE.to_owned(), measured.floor_copy()),
        };
        let seen = self.sightings.expect(&namespace, &deployment, &image);
        let sent = Instant::now();
        let answered = match path {
            Path::Berth => {
                let (status, answer) = self
                    .send(
                        Method::PATCH,
                        &format!(
                            "/api/v1/projects/{PROJECT}/environments/{}/apps/{}",
                            measured.environment, measured.app
                        ),
                        Some(json!({ "image": image })),
                    )
                    .await;
                assert_eq!(status, StatusCode::OK, "{answer}");
                Instant::now()
            }
            Path::Floor => {
                let patch = json!({"spec": {"template": {"spec": {"containers": [
                    {"name": measured.container, "image": image}
                ]}}}});
                Api::<Deployment>::namespaced(self.kube.clone(), FLOOR_NAMESPACE)
                    .patch(
                        &deployment,
                        &PatchParams::default(),
                        &Patch::Strategic(&patch),
                    )
                    .await
                    .expect("the floor's patch");
                Instant::now()
            }
        };
        match tokio::time::timeout(LOST_AFTER, seen).await {
            Ok(Ok(at)) => Some(Latency {
                from_sent: at.saturating_duration_since(sent),
                from_answer: at.saturating_duration_since(answered),
            }),
            _ => None,
        }
    }
}

/// A change seen carried by its Deployment: how long after its write was
/// sent, and after the write's answer (a watch may see it before the
/// answer arrives: then zero).
struct Latency {
    from_sent: Duration,
    from_answer: Duration,
}

#[derive(Default)]
struct Samples {
    from_sent: Vec<Duration>,
    from_answer: Vec<Duration>,
    lost: usize,
    /// Each round's whole burst: first write sent until its last change seen.
    bursts: Vec<Duration>,
}

/// p50, p90 and max.
fn summary(latencies: &mut [Duration]) -> [Duration; 3] {
    latencies.sort();
    if latencies.is_empty() {
        return [Duration::ZERO; 3];
    }
    [
        common::percentile(latencies, 0.5),
        common::percentile(latencies, 0.9),
        latencies[latencies.len() - 1],
    ]
}

fn ms(duration: Duration) -> String {
    format!("{:.1}", duration.as_secs_f64() * 1e3)
}

#[tokio::main]
async fn main() {
    let other_apps = setting("BERTH_BENCH_OTHER_APPS", 300);
    let rounds = setting("BERTH_BENCH_ROUNDS", 20);

    let counter = RoundTripCounter::default();
    let dynamodb = common::client(&counter);
    let table = format!("bench-{}", uuid::Uuid::new_v4().simple());
    schema::create_table(&dynamodb, &table).await.unwrap();
    let state = AppState::new(dynamodb.clone(), Config::for_table(&table));
    let berth = Arc::new(common::Call {
        router: berth_local::app(state.clone()),
    });

    let (_standin, kubeconfig) = match std::env::var("BERTH_TEST_KUBECONFIG") {
        Ok(path) => (None, std::fs::read_to_string(path).expect("the kubeconfig")),
        Err(_) => {
            let standin = berth_kube_standin::StandIn::start_with(berth_kube_standin::Config {
                simulate_controllers: true,
                ..berth_kube_standin::Config::default()
            })
            .await
            .unwrap();
            let kubeconfig = standin.kubeconfig_yaml();
            (Some(standin), kubeconfig)
        }
    };
    // Fifty writes at once to a loaded cluster can wait longer than the API's
    // own 10 s: a slow write is a figure, not a failure.
    let kube = access::client_from_kubeconfig(&kubeconfig, None, Duration::from_secs(60))
        .await
        .unwrap();
    install::install_crds(&kube).await.unwrap();
    for namespace in [berth_controller::DEFAULT_LEASE_NAMESPACE, FLOOR_NAMESPACE] {
        let _ = Api::<Namespace>::all(kube.clone())
            .create(
                &PostParams::default(),
                &Namespace {
                    metadata: ObjectMeta {
                        name: Some(namespace.to_owned()),
                        ..ObjectMeta::default()
                    },
                    ..Namespace::default()
                },
            )
            .await;
    }
    berth_api::kubeconfig::store_kubeconfig(&state.store, kubeconfig.clone(), None)
        .await
        .unwrap();
    start_controller(&kubeconfig).await;

    let (token, _) = berth.signed_in_owner(&state.store).await;
    let sightings = Sightings::default();
    sightings.watch(kube.clone());
    let mut bench = Bench {
        berth,
        token,
        kube: kube.clone(),
        sightings,
        apps: Vec::new(),
    };
    let (status, answer) = bench
        .send(
            Method::POST,
            "/api/v1/projects",
            Some(json!({"name": PROJECT, "display_name": "Latency"})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");

    let started = Instant::now();
    let environments = (MEASURED_APPS + other_apps).div_ceil(APPS_PER_ENVIRONMENT);
    let mut measured = Vec::new();
    for e in 0..environments {
        let environment = format!("e{e}");
        let namespace = create_environment(&bench, &environment).await;
        for a in 0..APPS_PER_ENVIRONMENT {
            let app = format!("app{a}");
            let (status, answer) = bench
                .send(
                    Method::POST,
                    &format!("/api/v1/projects/{PROJECT}/environments/{environment}/apps"),
                    Some(json!({"name": app, "image": "nginx:1.27", "port": 8080})),
                )
                .await;
            assert_eq!(status, StatusCode::CREATED, "{answer}");
            if measured.len() < MEASURED_APPS {
                measured.push(Measured {
                    environment: environment.clone(),
                    deployment: format!("{app}-web"),
                    app,
                    namespace: namespace.clone(),
                    container: String::new(),
                });
            }
        }
    }
    bench.apps = measured;
    println!(
        "{} apps in {environments} environments made in {:.1} s",
        environments * APPS_PER_ENVIRONMENT,
        started.elapsed().as_secs_f64()
    );
    make_floor(&mut bench).await;
    settle(&bench).await;

    println!(
        "{:<8} {:<6} {:>36} {:>38} {:>10} {:>5}",
        "at once",
        "path",
        "from sent (ms): p50 / p90 / max",
        "from answer (ms): p50 / p90 / max",
        "burst p50",
        "lost"
    );
    let mut tag = 0u64;
    for concurrency in CONCURRENCY {
        let mut berth = Samples::default();
        let mut floor = Samples::default();
        // Interleaved, so both see the same machine.
        for round in 0..rounds {
            for path in [Path::Berth, Path::Floor] {
                tag += 1;
                let first = (round * concurrency) % MEASURED_APPS;
                let burst_started = Instant::now();
                let deploys = (0..concurrency).map(|i| {
                    let bench = &bench;
                    let index = (first + i) % MEASURED_APPS;
                    async move {
                        bench
                            .deploy(path, index, format!("nginx:1.27-bench{tag}"))
                            .await
                    }
                });
                let results = futures::future::join_all(deploys).await;
                let samples = if path == Path::Berth {
                    &mut berth
                } else {
                    &mut floor
                };
                samples.bursts.push(burst_started.elapsed());
                for result in results {
                    match result {
                        Some(latency) => {
                            samples.from_sent.push(latency.from_sent);
                            samples.from_answer.push(latency.from_answer);
                        }
                        None => samples.lost += 1,
                    }
                }
            }
        }
        let mut figures = Vec::new();
        for (name, samples) in [("floor", &mut floor), ("berth", &mut berth)] {
            let sent = summary(&mut samples.from_sent);
            let answer = summary(&mut samples.from_answer);
            let bursts = summary(&mut samples.bursts);
            println!(
                "{:<8} {:<6} {:>36} {:>38} {:>10} {:>5}",
                concurrency,
                name,
                sent.map(ms).join(" / "),
                answer.map(ms).join(" / "),
                ms(bursts[0]),
                samples.lost
            );
            figures.push((sent, answer));
        }
        let ratio = |berth: [Duration; 3], floor: [Duration; 3]| {
            berth
                .iter()
                .zip(floor)
                .map(|(b, f)| format!("{:.2}×", b.as_secs_f64() / f.as_secs_f64()))
                .collect::<Vec<_>>()
                .join(" / ")
        };
        println!(
            "{:<8} {:<6} {:>36} {:>38}",
            concurrency,
            "ratio",
            ratio(figures[1].0, figures[0].0),
            format!("berth from answer: {}", ratio(figures[1].1, figures[0].0)),
        );
        assert_eq!(berth.lost + floor.lost, 0, "changes were lost");
    }
}

/// The controller, in this process, as `berth-controller` runs it.
async fn start_controller(kubeconfig: &str) {
    let parsed = kube::config::Kubeconfig::from_yaml(kubeconfig).unwrap();
    let config = kube::Config::from_custom_kubeconfig(parsed, &Default::default())
        .await
        .unwrap();
    let replica = berth_controller::Replica::bind(
        kube::Client::try_from(config).unwrap(),
        berth_controller::Settings::default(),
        berth_controller::ReplicaSettings {
            identity: format!("bench-{}", uuid::Uuid::new_v4().simple()),
            lease_namespace: berth_controller::DEFAULT_LEASE_NAMESPACE.to_owned(),
            lease_name: format!("bench-{}", uuid::Uuid::new_v4().simple()),
            lease_duration_seconds: 15,
            pod_uid: None,
        },
        std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
    )
    .await
    .unwrap();
    tokio::spawn(replica.run(std::future::pending()));
}

/// Makes the environment and waits until the controller has provisioned it;
/// its namespace.
async fn create_environment(bench: &Bench, environment: &str) -> String {
    let (status, answer) = bench
        .send(
            Method::POST,
            &format!("/api/v1/projects/{PROJECT}/environments"),
            Some(json!({"name": environment})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    let environments: Api<Environment> = Api::all(bench.kube.clone());
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let ready = environments
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .find(|e| e.spec.project == PROJECT && e.spec.name == environment)
            .and_then(|e| e.status.filter(|s| s.ready).and_then(|s| s.namespace));
        if let Some(namespace) = ready {
            return namespace;
        }
        assert!(
            Instant::now() < deadline,
            "environment {environment} never got ready"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A copy of each measured app's Deployment in the floor's namespace: the
/// same pod template, owned by nothing.
async fn make_floor(bench: &mut Bench) {
    let floor: Api<Deployment> = Api::namespaced(bench.kube.clone(), FLOOR_NAMESPACE);
    for measured in &mut bench.apps {
        let Measured {
            app,
            namespace,
            deployment,
            ..
        } = &*measured;
        let rendered: Api<Deployment> = Api::namespaced(bench.kube.clone(), namespace);
        let deadline = Instant::now() + Duration::from_secs(120);
        let original = loop {
            if let Some(d) = rendered.get_opt(deployment).await.unwrap() {
                break d;
            }
            if Instant::now() > deadline {
                let status =
                    Api::<berth_cluster::crd::App>::namespaced(bench.kube.clone(), namespace)
                        .get(app)
                        .await
                        .map(|app| app.status);
                panic!("{namespace}/{app} was never rendered: {status:?}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        let copy = Deployment {
            metadata: ObjectMeta {
                name: Some(measured.floor_copy()),
                labels: original.metadata.labels.clone(),
                ..ObjectMeta::default()
            },
            spec: original.spec.clone(),
            status: None,
        };
        measured.container = image_container_name(&original);
        floor.create(&PostParams::default(), &copy).await.unwrap();
    }
}

/// Waits until the controller has nothing left to do from the setup: every
/// App reports its revision applied.
async fn settle(bench: &Bench) {
    let apps: Api<berth_cluster::crd::App> = Api::all(bench.kube.clone());
    let deadline = Instant::now() + Duration::from_secs(300);
    let started = Instant::now();
    loop {
        let listed = apps.list(&Default::default()).await.unwrap().items;
        let pending = listed
            .iter()
            .filter(|app| {
                app.status
                    .as_ref()
                    .is_none_or(|status| status.observed_generation != app.metadata.generation)
            })
            .count();
        if pending == 0 {
            println!(
                "every App reconciled {:.1} s after the last was made",
                started.elapsed().as_secs_f64()
            );
            return;
        }
        assert!(Instant::now() < deadline, "{pending} Apps never reconciled");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
