//! Pod logs, set through the stand-in's knob (no kubelet runs).

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, LogParams, Patch, PatchParams, PostParams};
use serde_json::json;

use berth_kube_standin::LogKey;

use crate::common::{TestEnv, api_status};

fn pod(name: &str, containers: &[&str]) -> Pod {
    let containers: Vec<_> = containers
        .iter()
        .map(|c| json!({"name": c, "image": "registry.k8s.io/pause:3.9"}))
        .collect();
    serde_json::from_value(json!({"metadata": {"name": name}, "spec": {"containers": containers}}))
        .unwrap()
}

#[tokio::test]
#[cfg_attr(berth_real_cluster, ignore = "needs the stand-in's log knob")]
async fn pod_logs_with_tail_container_and_previous() {
    let env = TestEnv::standin_only().await;
    let pods: Api<Pod> = env.api();
    pods.create(&PostParams::default(), &pod("solo", &["main"]))
        .await
        .unwrap();
    pods.create(&PostParams::default(), &pod("duo", &["app", "sidecar"]))
        .await
        .unwrap();

    // Nothing logged yet: the container hasn't started.
    let waiting = api_status(pods.logs("solo", &LogParams::default()).await);
    assert_eq!(waiting.code, 400);
    assert_eq!(
        waiting.message,
        "container \"main\" in pod \"solo\" is waiting to start: ContainerCreating"
    );

    let s = env.standin();
    s.set_pod_logs(
        LogKey::new(&env.ns, "solo", "main"),
        ["one", "two", "three"],
    );
    assert_eq!(
        pods.logs("solo", &LogParams::default()).await.unwrap(),
        "one\ntwo\nthree\n"
    );
    let tail = LogParams {
        tail_lines: Some(2),
        ..Default::default()
    };
    assert_eq!(pods.logs("solo", &tail).await.unwrap(), "two\nthree\n");
    s.append_pod_logs(LogKey::new(&env.ns, "solo", "main"), ["four"]);
    assert_eq!(pods.logs("solo", &tail).await.unwrap(), "three\nfour\n");

    // Two containers: one must be named.
    let ambiguous = api_status(pods.logs("duo", &LogParams::default()).await);
    assert_eq!(ambiguous.code, 400);
    assert!(
        ambiguous
            .message
            .contains("a container name must be specified"),
        "{}",
        ambiguous.message
    );
    s.set_pod_logs(LogKey::new(&env.ns, "duo", "sidecar"), ["side"]);
    let sidecar = LogParams {
        container: Some("sidecar".into()),
        ..Default::default()
    };
    assert_eq!(pods.logs("duo", &sidecar).await.unwrap(), "side\n");
    let bogus = LogParams {
        container: Some("nope".into()),
        ..Default::default()
    };
    assert_eq!(api_status(pods.logs("duo", &bogus).await).code, 400);

    // The previous instance's log.
    let previous = LogParams {
        previous: true,
        ..Default::default()
    };
    let none = api_status(pods.logs("solo", &previous).await);
    assert!(
        none.message
            .contains("previous terminated container \"main\""),
        "{}",
        none.message
    );
    s.set_pod_logs(LogKey::new(&env.ns, "solo", "main").previous(), ["crashed"]);
    assert_eq!(pods.logs("solo", &previous).await.unwrap(), "crashed\n");

    let missing = api_status(pods.logs("ghost", &LogParams::default()).await);
    assert_eq!(missing.code, 404);
}

#[tokio::test]
async fn pods_are_left_to_the_tests_to_run() {
    let env = TestEnv::new().await;
    let pods: Api<Pod> = env.api();
    let created = pods
        .create(&PostParams::default(), &pod("p", &["main"]))
        .await
        .unwrap();
    assert_eq!(created.status.unwrap().phase.as_deref(), Some("Pending"));
    if env.standin.is_none() {
        return; // a real kubelet would fight over the status
    }
    // The test plays the kubelet.
    let running = json!({"status": {"phase": "Running", "containerStatuses": [{
        "name": "main", "image": "registry.k8s.io/pause:3.9", "imageID": "", "ready": true, "restartCount": 0,
        "state": {"running": {"startedAt": "2025-01-01T00:00:00Z"}}
    }]}});
    let updated = pods
        .patch_status("p", &PatchParams::default(), &Patch::Merge(running))
        .await
        .unwrap();
    let status = updated.status.unwrap();
    assert_eq!(status.phase.as_deref(), Some("Running"));
    assert!(status.container_statuses.unwrap()[0].ready);
}
