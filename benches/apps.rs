//! `make bench`: the app operations against DynamoDB Local and the stand-in
//! Kubernetes API server, both in reach over HTTP.
//!
//! `getApp` and `updateApp` go through the full router (pipeline,
//! authentication, rules, release history, audit) and, as the baseline,
//! through bare axum handlers that make the same DynamoDB and Kubernetes calls
//! directly with the SDK and kube-rs — the cost of Berth's own code on top of
//! its round trips. `getAppLogs` of ten pods, each log answered 20 ms late by
//! the stand-in (a kubelet's round trip), goes against a baseline that reads
//! the ten logs one after another. `BERTH_BENCH_ITERATIONS` (default 1000)
//! sets the requests per contender (a tenth of it for the logs).

mod common;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem};
use axum::extract::{Path, State};
use axum::routing::get;
use axum::{Json, Router};
use http::{Method, StatusCode};
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::api::{ListParams, LogParams, Patch, PatchParams, PostParams};
use kube::{Api, Resource, ResourceExt};
use serde_json::{Value, json};

use berth_api::AppState;
use berth_api::access;
use berth_api::config::Config;
use berth_cluster::crd::{App, Environment};
use berth_cluster::install;
use berth_domain::credentials;
use berth_domain::stored::Stored;
use berth_store::round_trips::RoundTripCounter;
use berth_store::{keys, schema};

/// What the baseline handlers share: the clients and the caller's keys.
#[derive(Clone)]
struct Baseline {
    dynamodb: aws_sdk_dynamodb::Client,
    kube: kube::Client,
    table: String,
    user_id: String,
    token_digest: String,
    revision: Arc<AtomicU64>,
}

impl Baseline {
    fn item(&self, pk: String, sk: String) -> HashMap<String, AttributeValue> {
        HashMap::from([
            ("pk".to_owned(), AttributeValue::S(pk)),
            ("sk".to_owned(), AttributeValue::S(sk)),
        ])
    }

    async fn authenticate(&self) {
        common::baseline_authenticate(
            &self.dynamodb,
            &self.table,
            &self.user_id,
            &self.token_digest,
        )
        .await;
    }

    async fn audit(&self, action: &str) {
        common::baseline_audit(&self.dynamodb, &self.table, action).await;
    }
}

async fn baseline_get(
    State(baseline): State<Baseline>,
    Path((project, environment, app)): Path<(String, String, String)>,
) -> Json<Value> {
    baseline.authenticate().await;
    let namespace = format!("{project}-{environment}");
    let apps: Api<App> = Api::namespaced(baseline.kube.clone(), &namespace);
    let pods: Api<Pod> = Api::namespaced(baseline.kube.clone(), &namespace);
    let selector = ListParams::default().labels(&format!("berth.dev/app={app}"));
    let (found, listed) = tokio::join!(apps.get(&app), pods.list(&selector));
    let found = found.unwrap();
    let listed = listed.unwrap();
    baseline.audit("getApp").await;
    Json(json!({ "app": found.spec.config, "pods": listed.items.len() }))
}

/// `getAppLogs` the slow way: each pod's log after the other.
async fn baseline_logs(
    State(baseline): State<Baseline>,
    Path((project, environment, app)): Path<(String, String, String)>,
) -> Json<Value> {
    baseline.authenticate().await;
    let namespace = format!("{project}-{environment}");
    let apps: Api<App> = Api::namespaced(baseline.kube.clone(), &namespace);
    let pods: Api<Pod> = Api::namespaced(baseline.kube.clone(), &namespace);
    let selector = ListParams::default().labels(&format!("berth.dev/app={app}"));
    let (found, listed) = tokio::join!(apps.get(&app), pods.list(&selector));
    found.unwrap();
    let mut entries = Vec::new();
    for pod in listed.unwrap().items.iter().take(10) {
        let params = LogParams {
            container: Some("web".to_owned()),
            tail_lines: Some(200),
            ..LogParams::default()
        };
        entries.push(pods.logs(&pod.name_any(), &params).await.unwrap());
    }
    baseline.audit("getAppLogs").await;
    Json(json!(entries))
}

async fn baseline_update(
    State(baseline): State<Baseline>,
    Path((project, environment, app)): Path<(String, String, String)>,
    Json(body): Json<Value>,
) -> Json<Value> {
    baseline.authenticate().await;
    let namespace = format!("{project}-{environment}");
    let apps: Api<App> = Api::namespaced(baseline.kube.clone(), &namespace);
    let environments: Api<Environment> = Api::all(baseline.kube.clone());
    let namespaces: Api<Namespace> = Api::all(baseline.kube.clone());
    // As Berth reads before a write: the environment, its namespace (is it
    // the environment's?) and the namespace's Apps (whose names are taken),
    // at once.
    let all = ListParams::default();
    let (found_environment, found_namespace, listed) = tokio::join!(
        environments.get(&namespace),
        namespaces.get(&namespace),
        apps.list(&all)
    );
    found_environment.unwrap();
    found_namespace.unwrap();
    let mut next = listed
        .unwrap()
        .items
        .into_iter()
        .find(|found| found.name_any() == app)
        .unwrap();
    let revision = baseline.revision.fetch_add(1, Ordering::SeqCst) as i64 + 1;
    next.spec.config.image = Some(Stored::read(body["image"].as_str().unwrap()));
    next.spec.release.revision = revision;
    let history = format!("RELEASES#baseline-{app}");
    let release = |revision: i64| {
        let mut item = baseline.item(history.clone(), keys::release_sk(revision));
        item.insert(
            "config".into(),
            AttributeValue::S(serde_json::to_string(&next.spec.config).unwrap()),
        );
        item
    };
    baseline
        .dynamodb
        .transact_write_items()
        .transact_items(
            TransactWriteItem::builder()
                .put(
                    Put::builder()
                        .table_name(&baseline.table)
                        .set_item(Some(release(revision - 1)))
                        .build()
                        .unwrap(),
                )
                .build(),
        )
        .transact_items(
            TransactWriteItem::builder()
                .put(
                    Put::builder()
                        .table_name(&baseline.table)
                        .set_item(Some(release(revision)))
                        .condition_expression("attribute_not_exists(pk)")
                        .build()
                        .unwrap(),
                )
                .build(),
        )
        .send()
        .await
        .unwrap();
    let replaced = apps
        .replace(&app, &PostParams::default(), &next)
        .await
        .unwrap();
    baseline.audit("updateApp").await;
    Json(json!({ "name": replaced.name_any(), "image": replaced.spec.config.image }))
}

#[tokio::main]
async fn main() {
    if std::env::args().any(|arg| arg == "--list") {
        return; // `cargo bench -- --list` and `cargo test --benches` ask this.
    }
    let iterations: usize = std::env::var("BERTH_BENCH_ITERATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let counter = RoundTripCounter::default();
    let dynamodb = common::client(&counter);
    let table = format!("bench-{}", uuid::Uuid::new_v4().simple());
    schema::create_table(&dynamodb, &table).await.unwrap();
    let state = AppState::new(dynamodb.clone(), Config::for_table(&table));
    let berth = common::Call {
        router: berth_local::app(state.clone()),
    };

    let cluster = berth_kube_standin::StandIn::start().await.unwrap();
    let kubeconfig = cluster.kubeconfig_yaml();
    let kube =
        access::client_from_kubeconfig(&kubeconfig, None, std::time::Duration::from_secs(10))
            .await
            .unwrap();
    install::install_crds(&kube).await.unwrap();
    berth_api::kubeconfig::store_kubeconfig(&state.store, kubeconfig, None)
        .await
        .unwrap();

    let (token, owner_id) = berth.signed_in_owner(&state.store).await;
    let send = async |method, path: &str, body| berth.send(method, path, Some(&token), body).await;
    assert_eq!(
        send(
            Method::POST,
            "/api/v1/projects",
            Some(json!({"name": "bench", "display_name": "Bench"}))
        )
        .await
        .0,
        StatusCode::CREATED
    );
    assert_eq!(
        send(
            Method::POST,
            "/api/v1/projects/bench/environments",
            Some(json!({"name": "dev"}))
        )
        .await
        .0,
        StatusCode::CREATED
    );
    // What the controller would do: the environment's namespace, owned by
    // its Environment (Berth writes into no other).
    let environment = Api::<Environment>::all(kube.clone())
        .get("bench-dev")
        .await
        .unwrap();
    let namespace = Namespace {
        metadata: kube::api::ObjectMeta {
            name: Some("bench-dev".to_owned()),
            owner_references: environment
                .controller_owner_ref(&())
                .map(|owner| vec![owner]),
            ..Default::default()
        },
        ..Namespace::default()
    };
    Api::<Namespace>::all(kube.clone())
        .create(&PostParams::default(), &namespace)
        .await
        .unwrap();
    // ...and reports it provisioned: apps are created only then.
    Api::<Environment>::all(kube.clone())
        .patch_status(
            &environment.name_any(),
            &PatchParams::default(),
            &Patch::Merge(
                json!({"status": {"namespace": "bench-dev", "phase": "Ready", "ready": true}}),
            ),
        )
        .await
        .unwrap();
    let apps = "/api/v1/projects/bench/environments/dev/apps";
    for name in ["shop", "base"] {
        let (status, answer) = send(
            Method::POST,
            apps,
            Some(json!({"name": name, "image": "nginx:1.27", "port": 8080, "env": [{"name": "A", "value": "1"}]})),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{answer}");
    }

    // Ten running pods of each app, with logs that arrive 20 ms late.
    let pods: Api<Pod> = Api::namespaced(kube.clone(), "bench-dev");
    for app in ["shop", "base"] {
        for i in 0..10 {
            let name = format!("{app}-web-{i}");
            let pod: Pod = serde_json::from_value(json!({
                "metadata": {"name": name, "labels": {"berth.dev/org": "bench", "berth.dev/app": app, "berth.dev/process": "web"}},
                "spec": {"nodeName": "node-1", "containers": [{"name": "web", "image": "nginx"}]},
            }))
            .unwrap();
            pods.create(&PostParams::default(), &pod).await.unwrap();
            cluster.set_pod_logs(
                berth_kube_standin::LogKey::new("bench-dev", &name, "web"),
                (0..50).map(|line| format!("{name}: line {line}")),
            );
        }
    }
    cluster.add_fault(
        berth_kube_standin::Fault::new(
            berth_kube_standin::FaultKind::Delay {
                delay: std::time::Duration::from_millis(20),
            },
            usize::MAX,
        )
        .path_contains("/log"),
    );

    let baseline = common::Call {
        router: Router::new()
            .route(
                "/api/v1/projects/{project}/environments/{environment}/apps/{app}",
                get(baseline_get).patch(baseline_update),
            )
            .route(
                "/api/v1/projects/{project}/environments/{environment}/apps/{app}/logs",
                get(baseline_logs),
            )
            .with_state(Baseline {
                dynamodb,
                kube,
                table,
                user_id: owner_id.clone(),
                token_digest: credentials::digest(&token),
                revision: Arc::new(AtomicU64::new(1)),
            }),
    };
    let app_path = |call: &common::Call| {
        if std::ptr::eq(call, &baseline) {
            format!("{apps}/base")
        } else {
            format!("{apps}/shop")
        }
    };
    common::compare("getApp", iterations, &baseline, &berth, async |call| {
        let (status, answer) = call
            .send(Method::GET, &app_path(call), Some(&token), None)
            .await;
        assert_eq!(status, StatusCode::OK, "{answer}");
    })
    .await;
    let image = AtomicU64::new(0);
    common::compare(
        "updateApp (a new image)",
        iterations,
        &baseline,
        &berth,
        async |call| {
            let tag = image.fetch_add(1, Ordering::SeqCst);
            let (status, answer) = call
                .send(
                    Method::PATCH,
                    &app_path(call),
                    Some(&token),
                    Some(json!({ "image": format!("nginx:{tag}") })),
                )
                .await;
            assert_eq!(status, StatusCode::OK, "{answer}");
        },
    )
    .await;
    common::compare(
        "getAppLogs, 10 pods, each log 20 ms away (baseline: one after another)",
        (iterations / 10).max(20),
        &baseline,
        &berth,
        async |call| {
            let (status, answer) = call
                .send(
                    Method::GET,
                    &format!("{}/logs", app_path(call)),
                    Some(&token),
                    None,
                )
                .await;
            assert_eq!(status, StatusCode::OK, "{answer}");
            assert_eq!(answer.as_array().map(Vec::len), Some(10));
        },
    )
    .await;
}
