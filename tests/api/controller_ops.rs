//! The controller as an operator watches it: Kubernetes Events on the
//! Environments and Apps it works on, `/metrics`, `/healthz` and `/readyz`,
//! leader election between two replicas (the leader killed, a standby taking
//! over; a clean shutdown releasing the Lease), a namespace being deleted
//! waited out rather than written into, and no claim made for an App deleted
//! meanwhile.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use berth_kube_standin::{Fault, FaultKind};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Namespace, PersistentVolumeClaim, Service};
use k8s_openapi::api::events::v1::Event;
use kube::Api;
use kube::api::{DeleteParams, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use berth_cluster::crd::{App, Environment};

use crate::support::cluster::{
    LEASE_DURATION_SECONDS, TestCluster, controller_replica, replica_settings,
};
use crate::support::{TestApp, eventually, unique};

/// The Events regarding the object of `uid` in `namespace`.
async fn events_about(client: &kube::Client, namespace: &str, uid: &str) -> Vec<Event> {
    Api::<Event>::namespaced(client.clone(), namespace)
        .list(&ListParams::default())
        .await
        .expect("listing Events")
        .items
        .into_iter()
        .filter(|event| {
            event
                .regarding
                .as_ref()
                .and_then(|regarding| regarding.uid.as_deref())
                == Some(uid)
        })
        .collect()
}

/// Waits (for at most the shared bound) for an Event regarding `uid` that
/// `wanted` accepts, and returns it.
async fn event_where(
    client: &kube::Client,
    namespace: &str,
    uid: &str,
    what: &str,
    wanted: impl Fn(&Event) -> bool,
) -> Event {
    let deadline = Instant::now() + crate::support::wait_bound();
    while Instant::now() < deadline {
        if let Some(found) = events_about(client, namespace, uid)
            .await
            .into_iter()
            .find(&wanted)
        {
            return found;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!(
        "{what}: not within {} s; the Events: {:?}",
        crate::support::wait_bound().as_secs(),
        events_about(client, namespace, uid).await
    );
}

/// Waits for an Event of `reason` regarding `uid`, and returns it.
pub(crate) async fn event(
    client: &kube::Client,
    namespace: &str,
    uid: &str,
    reason: &str,
) -> Event {
    event_where(client, namespace, uid, reason, |event| {
        event.reason.as_deref() == Some(reason)
    })
    .await
}

/// Waits for an Event of `reason` that counts at least two occurrences.
async fn repeated(client: &kube::Client, namespace: &str, uid: &str, reason: &str) -> Event {
    event_where(client, namespace, uid, reason, |event| {
        event.reason.as_deref() == Some(reason)
            && event
                .series
                .as_ref()
                .is_some_and(|series| series.count >= 2)
    })
    .await
}

/// What a tenant or an operator reading an Event must never see: the
/// cluster's own error text.
fn says_nothing_of_the_cluster(event: &Event) {
    let note = event.note.as_deref().unwrap_or_default();
    for raw in ["serviceaccount", "forbidden", "Forbidden", "is invalid"] {
        assert!(!note.contains(raw), "{note}");
    }
}

/// Who published an Event: this controller, as the test's replica.
fn published_by(event: &Event, cluster: &TestCluster) {
    assert_eq!(
        event.reporting_controller.as_deref(),
        Some(berth_controller::events::REPORTING_CONTROLLER)
    );
    assert_eq!(
        event.reporting_instance.as_deref(),
        Some(cluster.controller_replica().identity.as_str())
    );
}

fn uid_of(meta: &ObjectMeta) -> String {
    meta.uid.clone().expect("a uid")
}

/// Creates an app through the API in `namespace`; its App's uid.
async fn app_uid(app: &TestApp, apps: &str, namespace: &str, body: serde_json::Value) -> String {
    let name = body["name"].as_str().expect("a name").to_owned();
    app.create_app(apps, body).await;
    let created = Api::<App>::namespaced(app.cluster().client.clone(), namespace)
        .get(&name)
        .await
        .expect("the App");
    uid_of(&created.metadata)
}

/// An Event's note ("" without one).
pub(crate) fn note(event: &Event) -> &str {
    event.note.as_deref().unwrap_or_default()
}

/// A new project with a provisioned environment `dev`: the project's name,
/// the Environment's and its uid.
async fn ready_environment(app: &TestApp, prefix: &str) -> (String, String, String) {
    let project = app.ready_environment(prefix, "dev").await;
    let name = format!("{project}-dev");
    let environment = Api::<Environment>::all(app.cluster().client.clone())
        .get(&name)
        .await
        .expect("the Environment");
    (project, name, uid_of(&environment.metadata))
}

#[tokio::test]
async fn an_environments_story_is_told_in_its_events() {
    let app = TestApp::with_cluster().await;
    let cluster = app.cluster();
    let admin = &cluster.client;
    let (project, name, uid) = ready_environment(&app, "events").await;
    // A cluster-scoped object's Events are in `default`.
    let created = event(admin, "default", &uid, "NamespaceCreated").await;
    published_by(&created, cluster);
    assert_eq!(created.type_.as_deref(), Some("Normal"));
    assert!(note(&created).contains(&name), "{created:?}");
    let provisioned = event(admin, "default", &uid, "Provisioned").await;
    assert!(
        note(&provisioned).contains("quota, default limits and network isolation"),
        "{provisioned:?}"
    );
    let regarding = provisioned.regarding.expect("regarding");
    assert_eq!(regarding.kind.as_deref(), Some("Environment"));
    assert_eq!(regarding.name.as_deref(), Some(name.as_str()));
    assert_eq!(regarding.resource_version, None);

    // A new quota (the resource's spec changed): applied, and said so.
    Api::<Environment>::all(admin.clone())
        .patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"quota": {"cpu": "3"}}})),
        )
        .await
        .expect("changing the quota");
    let applied = event(admin, "default", &uid, "QuotaApplied").await;
    assert!(note(&applied).contains(&name), "{applied:?}");

    // Someone else's namespace under an environment's name: a warning, again
    // at each retry, counted in one Event (its series).
    let foreign = format!("{project}-qa");
    Api::<Namespace>::all(admin.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": foreign}})).expect("a namespace"),
        )
        .await
        .expect("someone else's namespace");
    let qa = app.create_environment_resource(&project, "qa", None).await;
    let qa_uid = uid_of(&qa.metadata);
    let refused = repeated(admin, "default", &qa_uid, "NamespaceNotBerths").await;
    assert_eq!(refused.type_.as_deref(), Some("Warning"));
    assert_eq!(
        refused.note.as_deref(),
        Some(format!("namespace {foreign} already exists and is not managed by Berth").as_str())
    );
    says_nothing_of_the_cluster(&refused);
    Api::<Environment>::all(admin.clone())
        .delete(&foreign, &DeleteParams::default())
        .await
        .expect("removing the Environment");
    Api::<Namespace>::all(admin.clone())
        .delete(&foreign, &DeleteParams::default())
        .await
        .expect("removing the namespace");

    // The purge: begun, then done.
    app.request(
        http::Method::DELETE,
        &format!("/api/v1/projects/{project}/environments/dev"),
    )
    .by(&app.owner)
    .send()
    .await
    .assert_status(202);
    let purging = event(admin, "default", &uid, "Purging").await;
    assert!(note(&purging).contains(&name));
    event(admin, "default", &uid, "Purged").await;
}

#[tokio::test]
async fn an_apps_story_is_told_in_its_events() {
    let app = TestApp::with_cluster().await;
    let cluster = app.cluster();
    let admin = &cluster.client;
    let project = app.ready_environment("events", "dev").await;
    let namespace = format!("{project}-dev");
    let apps = format!("/api/v1/projects/{project}/environments/dev/apps");
    // No pod ever becomes ready here (no kubelet plays): the rollout makes
    // progress, then misses its deadline.
    let web = app_uid(
        &app,
        &apps,
        &namespace,
        json!({"name": "web", "image": "nginx:1", "port": 80}),
    )
    .await;
    let uid = web;
    let progressing = event(admin, &namespace, &uid, "Progressing").await;
    published_by(&progressing, cluster);
    assert_eq!(progressing.type_.as_deref(), Some("Normal"));
    assert!(
        note(&progressing).contains("is rolling out"),
        "{progressing:?}"
    );
    let failed = event(admin, &namespace, &uid, "RolloutFailed").await;
    assert_eq!(failed.type_.as_deref(), Some("Warning"));
    assert!(
        note(&failed).contains("made no progress within its deadline"),
        "{failed:?}"
    );
    says_nothing_of_the_cluster(&failed);

    // An app of no replicas needs no pod to be ready: available at once.
    let idle = app_uid(
        &app,
        &apps,
        &namespace,
        json!({"name": "idle", "image": "nginx:1", "port": 80, "replicas": 0}),
    )
    .await;
    let available = event(admin, &namespace, &idle, "Available").await;
    assert_eq!(available.type_.as_deref(), Some("Normal"));
    assert_eq!(available.action.as_deref(), Some("Rollout"));

    // Someone else's Service holds a name the app renders.
    let service: Service = serde_json::from_value(json!({
        "metadata": {"name": "shop-web"},
        "spec": {"ports": [{"port": 80}]},
    }))
    .expect("a Service");
    Api::<Service>::namespaced(admin.clone(), &namespace)
        .create(&PostParams::default(), &service)
        .await
        .expect("someone else's Service");
    let shop = app_uid(
        &app,
        &apps,
        &namespace,
        json!({"name": "shop", "image": "nginx:1", "port": 80}),
    )
    .await;
    let taken = event(admin, &namespace, &shop, "NameTaken").await;
    assert_eq!(taken.type_.as_deref(), Some("Warning"));
    assert_eq!(
        taken.note.as_deref(),
        Some(
            "Service shop-web exists and belongs to someone else; Berth leaves it untouched and applies nothing of this app."
        )
    );
}

#[tokio::test]
#[cfg_attr(berth_real_cluster, ignore = "needs the stand-in's fault knobs")]
async fn a_refused_write_is_a_warning_without_the_clusters_words() {
    let app = TestApp::with_cluster().await;
    let admin = &app.cluster().client;
    let project = app.ready_environment("events", "dev").await;
    let namespace = format!("{project}-dev");
    // The apiserver refuses the Deployment twice (RBAC's 403, in its words).
    app.standin().add_fault(
        Fault::new(FaultKind::Forbidden, 2)
            .method("PATCH")
            .path_contains("/deployments/web-web"),
    );
    let web = app_uid(
        &app,
        &format!("/api/v1/projects/{project}/environments/dev/apps"),
        &namespace,
        json!({"name": "web", "image": "nginx:1", "port": 80}),
    )
    .await;
    let uid = web;
    let refused = repeated(admin, &namespace, &uid, "Refused").await;
    assert_eq!(refused.type_.as_deref(), Some("Warning"));
    assert_eq!(
        refused.note.as_deref(),
        Some(
            "Deployment web-web could not be written: the cluster does not allow Berth to; an operator must fix its permissions."
        )
    );
    says_nothing_of_the_cluster(&refused);
    // Once the cluster takes it, the rollout goes on.
    event(admin, &namespace, &uid, "Progressing").await;
}

/// `GET path` on the controller's endpoint: the status and the body.
pub(crate) async fn http_get(addr: std::net::SocketAddr, path: &str) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(addr)
        .await
        .expect("the controller's endpoint answers");
    stream
        .write_all(
            format!("GET {path} HTTP/1.1\r\nHost: controller\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        )
        .await
        .expect("sending a request");
    let mut answer = String::new();
    stream
        .read_to_string(&mut answer)
        .await
        .expect("reading the answer");
    let status = answer
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .expect("an HTTP status line");
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
        .unwrap_or_default();
    (status, body)
}

/// The sum of the samples whose series starts `prefix` (all the label
/// values after those it names).
fn total(text: &str, prefix: &str) -> f64 {
    text.lines()
        .filter(|line| line.starts_with(prefix))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// The value of the sample `name{labels}` (or `name` alone) in a scrape.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

#[tokio::test]
async fn metrics_and_probes_show_the_leaders_work() {
    let app = TestApp::with_cluster().await;
    let cluster = app.cluster();
    let project = app.ready_environment("metrics", "dev").await;
    app.create_app(
        &format!("/api/v1/projects/{project}/environments/dev/apps"),
        json!({"name": "web", "image": "nginx:1", "port": 80, "replicas": 0}),
    )
    .await;
    let addr = cluster.controller_addr();
    eventually("the app's Deployment is counted", || async {
        let (status, text) = http_get(addr, "/metrics").await;
        status == 200
            && sample(
                &text,
                "berth_controller_objects_applied_total{kind=\"Deployment\"}",
            )
            .is_some_and(|n| n >= 1.0)
            && sample(&text, "berth_controller_apps{reason=\"Available\"}")
                .is_some_and(|n| n >= 1.0)
    })
    .await;
    let (_, text) = http_get(addr, "/metrics").await;
    for (series, at_least) in [
        (
            "berth_controller_reconciles_total{kind=\"Environment\",result=\"ok\"}",
            1.0,
        ),
        (
            "berth_controller_reconciles_total{kind=\"App\",result=\"ok\"}",
            1.0,
        ),
        (
            "berth_controller_reconciles_total{kind=\"Project\",result=\"ok\"}",
            1.0,
        ),
        (
            "berth_controller_reconcile_duration_seconds_count{kind=\"Environment\"}",
            1.0,
        ),
        (
            "berth_controller_objects_applied_total{kind=\"Namespace\"}",
            1.0,
        ),
        (
            "berth_controller_objects_applied_total{kind=\"ResourceQuota\"}",
            1.0,
        ),
        (
            "berth_controller_objects_applied_total{kind=\"Service\"}",
            1.0,
        ),
        ("berth_controller_leader", 1.0),
    ] {
        assert!(
            sample(&text, series).is_some_and(|n| n >= at_least),
            "{series} in:\n{text}"
        );
    }
    assert!(text.contains("# TYPE berth_controller_reconcile_duration_seconds histogram"));
    assert!(text.contains("# TYPE berth_controller_apps gauge"));

    // A failure is counted by its kind.
    let foreign = format!("{project}-qa");
    Api::<Namespace>::all(cluster.client.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": foreign}})).expect("a namespace"),
        )
        .await
        .expect("someone else's namespace");
    app.create_environment_resource(&project, "qa", None).await;
    eventually("the failure is counted", || async {
        let (_, text) = http_get(addr, "/metrics").await;
        text.contains("# TYPE berth_controller_reconcile_failures counter")
            && sample(
            &text,
            "berth_controller_reconcile_failures_total{kind=\"Environment\",error=\"namespace_not_managed\"}",
        )
        .is_some_and(|n| n >= 1.0)
    })
    .await;
    Api::<Environment>::all(cluster.client.clone())
        .delete(&foreign, &DeleteParams::default())
        .await
        .expect("removing the Environment");
    Api::<Namespace>::all(cluster.client.clone())
        .delete(&foreign, &DeleteParams::default())
        .await
        .expect("removing the namespace");

    assert_eq!(http_get(addr, "/healthz").await, (200, "ok".to_owned()));
    assert_eq!(http_get(addr, "/readyz").await, (200, "leader".to_owned()));
    assert_eq!(http_get(addr, "/nothing").await.0, 404);
}

/// Who holds the Lease `name` in `berth-system`, if anyone.
pub(crate) async fn holder(client: &kube::Client, name: &str) -> Option<String> {
    Api::<Lease>::namespaced(client.clone(), berth_controller::DEFAULT_LEASE_NAMESPACE)
        .get_opt(name)
        .await
        .expect("reading the Lease")
        .and_then(|lease| lease.spec)
        .and_then(|spec| spec.holder_identity)
}

/// Polls every 50 ms until `name`'s holder is `identity`, for at most
/// `bound`; how long it took.
pub(crate) async fn held_by(
    client: &kube::Client,
    name: &str,
    identity: &str,
    bound: Duration,
) -> Duration {
    let started = Instant::now();
    while started.elapsed() < bound {
        if holder(client, name).await.as_deref() == Some(identity) {
            return started.elapsed();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "{identity} did not take the Lease {name} within {} s (held by {:?})",
        bound.as_secs(),
        holder(client, name).await
    );
}

/// The test's controller leads; a second replica of its Lease stands by.
/// The leader killed (its task aborted: nothing released), the standby
/// takes over once the lease has expired: within the lease duration of the
/// leader's last renewal, plus kube-lease-manager's random wait of up to a
/// second. The new leader reconciles. Stopped cleanly, it finishes and
/// releases the Lease, and the restarted first replica takes it at once.
#[tokio::test]
async fn a_standby_takes_over_when_the_leader_dies_and_at_once_when_it_stops() {
    let app = TestApp::with_cluster().await;
    let cluster = app.cluster();
    // On a real cluster the Lease is the run's shared controller's: while
    // the standby leads, it reconciles every test's apps, whose Events then
    // name it (an_apps_story_is_told_in_its_events met one). Alone, no other
    // test runs meanwhile. Nothing to wait for on the stand-in.
    cluster.alone().await;
    let admin = &cluster.client;
    let first = cluster.controller_replica();
    let lease = first.lease_name.clone();
    let wait = crate::support::wait_bound();
    held_by(admin, &lease, &first.identity, wait).await;

    let standby = replica_settings(unique("standby"), &lease);
    let replica = controller_replica(&cluster.controller_kubeconfig, standby.clone()).await;
    let standby_addr = replica.local_addr().expect("its address");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(replica.run(async move {
        let _ = stopped.await;
    }));
    eventually("the second replica stands by", || async {
        http_get(standby_addr, "/readyz").await == (200, "standby".to_owned())
    })
    .await;
    let (_, text) = http_get(standby_addr, "/metrics").await;
    assert_eq!(sample(&text, "berth_controller_leader"), Some(0.0));
    assert_eq!(
        holder(admin, &lease).await.as_deref(),
        Some(first.identity.as_str())
    );

    cluster.kill_controller().await;
    let lease_duration = Duration::from_secs(LEASE_DURATION_SECONDS);
    let took = held_by(admin, &lease, &standby.identity, lease_duration * 3).await;
    eprintln!(
        "takeover: {} ms after the leader was killed (lease duration {} s)",
        took.as_millis(),
        LEASE_DURATION_SECONDS
    );
    assert!(
        took <= lease_duration + Duration::from_secs(2),
        "the standby took {took:?}"
    );
    eventually("the new leader's caches are filled", || async {
        http_get(standby_addr, "/readyz").await == (200, "leader".to_owned())
    })
    .await;
    // It reconciles: a new environment is provisioned.
    app.ready_environment("takeover", "dev").await;

    let stopping = Instant::now();
    let _ = stop.send(());
    tokio::time::timeout(wait, running)
        .await
        .expect("the replica stops")
        .expect("cleanly");
    eprintln!(
        "clean shutdown: {} ms, lease released",
        stopping.elapsed().as_millis()
    );
    // Released (on a real cluster another test may have restarted the first
    // replica meanwhile, which may hold it by now).
    assert_ne!(
        holder(admin, &lease).await,
        Some(standby.identity.clone()),
        "the Lease is released"
    );
    assert!(
        tokio::net::TcpStream::connect(standby_addr).await.is_err(),
        "the endpoint is closed"
    );
    cluster.revive_controller().await;
    let took = held_by(admin, &lease, &first.identity, wait).await;
    eprintln!("a released Lease taken in {} ms", took.as_millis());
    assert!(took < lease_duration, "a released Lease is taken at once");
}

/// Holds the next request of `method` whose path has `part` 2 s, and the
/// request is sent on then (a slow apiserver).
fn hold_next(app: &TestApp, method: &str, part: String) {
    app.standin().add_fault(
        Fault::new(
            FaultKind::Delay {
                delay: Duration::from_secs(2),
            },
            1,
        )
        .method(method)
        .path_contains(part),
    );
}

/// SIGTERM's path: reconciles in flight finish before the replica stops.
#[tokio::test]
#[cfg_attr(berth_real_cluster, ignore = "needs the stand-in's fault knobs")]
async fn a_clean_shutdown_finishes_the_reconciles_in_flight() {
    let app = TestApp::with_cluster().await;
    let cluster = app.cluster();
    let admin = &cluster.client;
    cluster.stop_controller().await;
    let settings = replica_settings(unique("alone"), &unique("shutdown"));
    let replica = controller_replica(&cluster.controller_kubeconfig, settings.clone()).await;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(replica.run(async move {
        let _ = stopped.await;
    }));
    held_by(
        admin,
        &settings.lease_name,
        &settings.identity,
        crate::support::wait_bound(),
    )
    .await;
    let project = unique("drain");
    let name = format!("{project}-dev");
    // The first status write of the new environment is held 2 s.
    hold_next(&app, "PATCH", format!("/environments/{name}/status"));
    app.create_environment_resource(&project, "dev", None).await;
    eventually("the status write is in flight", || async {
        app.standin().pending_faults().is_empty()
    })
    .await;
    let _ = stop.send(());
    tokio::time::timeout(crate::support::wait_bound(), running)
        .await
        .expect("the replica stops")
        .expect("cleanly");
    let environment = Api::<Environment>::all(admin.clone())
        .get(&name)
        .await
        .expect("the Environment");
    assert_eq!(
        environment
            .status
            .and_then(|status| status.phase)
            .as_deref(),
        Some("Ready"),
        "the reconcile in flight at shutdown finished"
    );
    assert_eq!(holder(admin, &settings.lease_name).await, None);
}

/// A namespace being deleted refuses every new object: the controller sees
/// it, says so once, and waits for the namespace to go (then makes it
/// again), instead of retrying writes into it.
#[tokio::test]
#[cfg_attr(
    berth_real_cluster,
    ignore = "needs the stand-in's namespace deletion delay"
)]
async fn a_namespace_being_deleted_is_waited_out() {
    let app = TestApp::with_cluster().await;
    let cluster = app.cluster();
    let admin = &cluster.client;
    let (project, name, uid) = ready_environment(&app, "terminating").await;
    let failures = |text: &str| {
        total(
            text,
            "berth_controller_reconcile_failures_total{kind=\"Environment\"",
        )
    };
    let addr = cluster.controller_addr();
    let before = failures(&http_get(addr, "/metrics").await.1);

    app.standin()
        .set_namespace_deletion_delay(Duration::from_secs(4));
    Api::<Namespace>::all(admin.clone())
        .delete(&name, &DeleteParams::default())
        .await
        .expect("deleting the namespace by hand");
    let terminating = event(admin, "default", &uid, "NamespaceTerminating").await;
    assert!(
        note(&terminating).contains("is being deleted"),
        "{terminating:?}"
    );
    let degraded = app
        .get(&format!("/api/v1/projects/{project}/environments/dev"))
        .by(&app.owner)
        .send()
        .await
        .json();
    assert_eq!(degraded["phase"], "Degraded", "{degraded}");
    // It is made again once it has gone.
    app.wait_for_environment(&project, "dev").await;
    let created = event(admin, "default", &uid, "NamespaceCreated").await;
    assert_eq!(
        created.series.map(|series| series.count),
        Some(2),
        "made twice"
    );
    assert_eq!(
        failures(&http_get(addr, "/metrics").await.1),
        before,
        "no write was tried into the namespace while it was going"
    );
}

/// A reconcile working from a cache that has not seen the App's deletion
/// must not make the App's claim: nothing would ever remove it.
#[tokio::test]
#[cfg_attr(berth_real_cluster, ignore = "needs the stand-in's fault knobs")]
async fn no_claim_is_made_for_an_app_deleted_meanwhile() {
    let app = TestApp::with_cluster().await;
    let cluster = app.cluster();
    let admin = &cluster.client;
    let project = app.ready_environment("claims", "dev").await;
    let namespace = format!("{project}-dev");
    // The controller's look at the namespace's claims is held 2 s: the App
    // is deleted meanwhile.
    hold_next(
        &app,
        "GET",
        format!("/namespaces/{namespace}/persistentvolumeclaims"),
    );
    let apps = format!("/api/v1/projects/{project}/environments/dev/apps");
    app.create_app(
        &apps,
        json!({"name": "db", "image": "postgres:16", "volumes": [{"name": "data", "mount_path": "/data"}]}),
    )
    .await;
    eventually("the controller is looking at the claims", || async {
        app.standin().pending_faults().is_empty()
    })
    .await;
    app.request(
        http::Method::DELETE,
        &format!("{apps}/db?delete_volumes=true"),
    )
    .by(&app.owner)
    .send()
    .await
    .assert_status(204);
    let claims = Api::<PersistentVolumeClaim>::namespaced(admin.clone(), &namespace);
    let addr = cluster.controller_addr();
    eventually("the held reconcile has ended", || async {
        let (_, text) = http_get(addr, "/metrics").await;
        total(&text, "berth_controller_reconciles_total{kind=\"App\"") >= 1.0
    })
    .await;
    let left: BTreeMap<String, _> = claims
        .list(&ListParams::default())
        .await
        .expect("listing claims")
        .items
        .into_iter()
        .map(|claim| (claim.metadata.name.clone().unwrap_or_default(), claim))
        .collect();
    assert!(left.is_empty(), "claims left behind: {:?}", left.keys());
}
