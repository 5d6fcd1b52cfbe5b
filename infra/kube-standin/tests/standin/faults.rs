//! The fault knobs, in process and over HTTP, as the kube client experiences them.

use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, PostParams};
use kube::runtime::watcher;
use serde_json::json;

use berth_kube_standin::{Fault, FaultKind};

use crate::common::{TestEnv, api_status};

fn cm(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}})).unwrap()
}

#[tokio::test]
#[cfg_attr(berth_real_cluster, ignore = "needs the stand-in's fault knobs")]
async fn internal_error_and_service_unavailable() {
    let env = TestEnv::standin_only().await;
    let s = env.standin();
    let cms: Api<ConfigMap> = env.api();

    s.fail_next(1, FaultKind::InternalError);
    let err = api_status(cms.list(&ListParams::default()).await);
    assert_eq!((err.code, err.reason.as_str()), (500, "InternalError"));
    cms.list(&ListParams::default())
        .await
        .expect("only the next request fails");

    // kube's client retries 503s by default: a short outage is absorbed ...
    s.fail_next(2, FaultKind::ServiceUnavailable);
    cms.list(&ListParams::default())
        .await
        .expect("retried past two 503s");
    assert!(s.pending_faults().is_empty(), "both 503s were served");

    // ... and with retries off the caller sees it.
    let no_retry = env.client_with(|c| c.default_retry = false).await;
    let cms_no_retry: Api<ConfigMap> = Api::namespaced(no_retry, &env.ns);
    s.fail_next(1, FaultKind::ServiceUnavailable);
    let err = api_status(cms_no_retry.list(&ListParams::default()).await);
    assert_eq!((err.code, err.reason.as_str()), (503, "ServiceUnavailable"));
    cms_no_retry.list(&ListParams::default()).await.unwrap();
}

#[tokio::test]
#[cfg_attr(berth_real_cluster, ignore = "needs the stand-in's fault knobs")]
async fn forbidden() {
    let env = TestEnv::standin_only().await;
    let s = env.standin();
    let cms: Api<ConfigMap> = env.api();

    s.fail_next(1, FaultKind::Forbidden);
    let err = api_status(cms.list(&ListParams::default()).await);
    assert_eq!((err.code, err.reason.as_str()), (403, "Forbidden"));
    cms.list(&ListParams::default())
        .await
        .expect("only the next request is refused");
}

#[tokio::test]
#[cfg_attr(berth_real_cluster, ignore = "needs the stand-in's fault knobs")]
async fn conflict_on_writes() {
    let env = TestEnv::standin_only().await;
    let s = env.standin();
    let cms: Api<ConfigMap> = env.api();
    let created = cms
        .create(&PostParams::default(), &cm("settings"))
        .await
        .unwrap();
    s.add_fault(Fault::new(FaultKind::Conflict, 1).method("PUT"));
    let mut changed = created.clone();
    changed.data = Some([("a".to_owned(), "1".to_owned())].into());
    let err = api_status(
        cms.replace("settings", &PostParams::default(), &changed)
            .await,
    );
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));
    assert!(
        err.message.contains("the object has been modified"),
        "{}",
        err.message
    );
    let now = cms.get("settings").await.unwrap();
    assert_eq!(
        (now.data, now.metadata.resource_version),
        (None, created.metadata.resource_version.clone()),
        "the refused write changed nothing"
    );
    cms.replace("settings", &PostParams::default(), &changed)
        .await
        .expect("the fault was used up");
}

#[tokio::test]
#[cfg_attr(berth_real_cluster, ignore = "needs the stand-in's fault knobs")]
async fn faults_filtered_by_method_and_path() {
    let env = TestEnv::standin_only().await;
    let s = env.standin();
    let cms: Api<ConfigMap> = env.api();
    s.add_fault(
        Fault::new(FaultKind::InternalError, 1)
            .method("POST")
            .path_contains("/configmaps"),
    );

    cms.list(&ListParams::default())
        .await
        .expect("GETs are not affected");
    let err = api_status(cms.create(&PostParams::default(), &cm("first")).await);
    assert_eq!(err.code, 500);
    assert!(
        cms.get_opt("first").await.unwrap().is_none(),
        "the failed create stored nothing"
    );
    cms.create(&PostParams::default(), &cm("second"))
        .await
        .expect("the fault was used up");
}

#[tokio::test]
#[cfg_attr(berth_real_cluster, ignore = "needs the stand-in's fault knobs")]
async fn hang_and_delay() {
    let env = TestEnv::standin_only().await;
    let s = env.standin();
    let impatient = env
        .client_with(|c| c.read_timeout = Some(Duration::from_millis(300)))
        .await;
    let cms: Api<ConfigMap> = Api::namespaced(impatient, &env.ns);

    s.fail_next(1, FaultKind::Hang);
    let started = Instant::now();
    let err = cms
        .list(&ListParams::default())
        .await
        .expect_err("the request hangs past the client's timeout");
    assert!(
        !matches!(err, kube::Error::Api(_)),
        "a timeout, not an API answer: {err:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    cms.list(&ListParams::default())
        .await
        .expect("later requests are answered");

    s.fail_next(
        1,
        FaultKind::Delay {
            delay: Duration::from_millis(150),
        },
    );
    let started = Instant::now();
    cms.list(&ListParams::default())
        .await
        .expect("a delayed answer within the timeout");
    assert!(started.elapsed() >= Duration::from_millis(150));
}

#[tokio::test]
#[cfg_attr(berth_real_cluster, ignore = "needs the stand-in's fault knobs")]
async fn unreachable_and_back() {
    let env = TestEnv::standin_only().await;
    let s = env.standin();
    let cms: Api<ConfigMap> = env.api();
    cms.create(&PostParams::default(), &cm("kept"))
        .await
        .unwrap();

    // An open watch is cut too.
    let mut watch = watcher::watcher(cms.clone(), watcher::Config::default()).boxed();
    while !matches!(watch.next().await, Some(Ok(watcher::Event::InitDone))) {}

    s.set_unreachable(true).await.unwrap();
    let err = cms.get("kept").await.expect_err("no server to talk to");
    assert!(
        !matches!(err, kube::Error::Api(_)),
        "a connection error: {err:?}"
    );
    let cut = tokio::time::timeout(Duration::from_secs(5), watch.next())
        .await
        .expect("the watch notices");
    assert!(
        matches!(cut, Some(Err(_))),
        "the watch reports the outage: {cut:?}"
    );

    s.set_unreachable(false).await.unwrap();
    let kept = cms.get("kept").await.expect("reachable again, same data");
    assert_eq!(kept.metadata.name.as_deref(), Some("kept"));
}

async fn knob(client: &kube::Client, method: &str, path: &str, body: serde_json::Value) -> String {
    let req = http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", "application/json")
        .body(serde_json::to_vec(&body).unwrap())
        .unwrap();
    client.request_text(req).await.expect("knob request")
}

#[tokio::test]
#[cfg_attr(berth_real_cluster, ignore = "needs the stand-in's fault knobs")]
async fn knobs_over_http() {
    let env = TestEnv::standin_only().await;
    let cms: Api<ConfigMap> = env.api();

    knob(
        &env.client,
        "POST",
        "/_standin/faults",
        json!({"kind": "internalError", "count": 1, "pathContains": "/configmaps"}),
    )
    .await;
    let pending = knob(&env.client, "GET", "/_standin/faults", json!(null)).await;
    assert!(pending.contains("internalError"), "{pending}");
    assert_eq!(api_status(cms.list(&ListParams::default()).await).code, 500);
    cms.list(&ListParams::default()).await.unwrap();

    let pods: Api<k8s_openapi::api::core::v1::Pod> = env.api();
    let pod = serde_json::from_value(
        json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x"}]}}),
    )
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    knob(
        &env.client,
        "POST",
        "/_standin/logs",
        json!({"namespace": env.ns, "pod": "p", "container": "c", "lines": ["hello"]}),
    )
    .await;
    assert_eq!(
        pods.logs("p", &Default::default()).await.unwrap(),
        "hello\n"
    );

    // Namespaces that stay `Terminating` a while.
    knob(
        &env.client,
        "POST",
        "/_standin/namespace-deletion",
        json!({"delayMs": 1500}),
    )
    .await;
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(env.client.clone());
    let slow = env.extra_namespace().await;
    namespaces.delete(&slow, &Default::default()).await.unwrap();
    assert!(
        namespaces.get_opt(&slow).await.unwrap().is_some(),
        "still terminating"
    );
    crate::common::eventually("the slow namespace to go", || async {
        namespaces.get_opt(&slow).await.unwrap().is_none()
    })
    .await;

    // Unreachable for a while, through the API listener itself.
    knob(
        &env.client,
        "POST",
        "/_standin/unreachable",
        json!({"durationMs": 400}),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert!(
        cms.list(&ListParams::default()).await.is_err(),
        "unreachable"
    );
    tokio::time::sleep(Duration::from_millis(600)).await;
    cms.list(&ListParams::default())
        .await
        .expect("back by itself");
}
