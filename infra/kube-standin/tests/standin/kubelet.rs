//! The simulated kubelet (for `make dev`): pods run after about a second, Job pods succeed.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, LogParams, PostParams};
use serde_json::json;

use berth_kube_standin::Config;

use crate::common::{TestEnv, eventually};
use crate::crud::deployment;

async fn env() -> TestEnv {
    TestEnv::standin_only_with(Config {
        simulate_controllers: true,
        simulate_kubelet: true,
        ..Config::default()
    })
    .await
}

#[tokio::test]
#[cfg_attr(berth_real_cluster, ignore = "needs the stand-in's simulated kubelet")]
async fn pods_run_on_the_standin_node_with_simulated_logs() {
    let env = env().await;
    let deployments: Api<Deployment> = env.api();
    let pods: Api<Pod> = env.api();
    deployments
        .create(&PostParams::default(), &deployment("web", 1))
        .await
        .unwrap();
    let by_app = ListParams::default().labels("app=web");
    eventually("a running pod", || async {
        pods.list(&by_app)
            .await
            .unwrap()
            .items
            .iter()
            .any(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
    })
    .await;
    let pod = pods.list(&by_app).await.unwrap().items.remove(0);
    assert_eq!(
        pod.spec.as_ref().unwrap().node_name.as_deref(),
        Some("standin-node")
    );
    let status = pod.status.clone().unwrap();
    assert!(status.start_time.is_some());
    let ready = status
        .conditions
        .unwrap()
        .into_iter()
        .find(|c| c.type_ == "Ready")
        .unwrap();
    assert_eq!(ready.status, "True");
    let container = &status.container_statuses.unwrap()[0];
    assert_eq!((container.ready, container.restart_count), (true, 0));
    assert!(container.state.as_ref().unwrap().running.is_some());

    let log = pods
        .logs(pod.metadata.name.as_deref().unwrap(), &LogParams::default())
        .await
        .unwrap();
    assert!(
        log.contains("[kube-standin] simulated container main of pod")
            && log.contains("nothing runs here"),
        "{log}"
    );

    eventually("an available deployment", || async {
        let s = deployments
            .get("web")
            .await
            .unwrap()
            .status
            .unwrap_or_default();
        s.available_replicas == Some(1)
    })
    .await;
}

#[tokio::test]
#[cfg_attr(berth_real_cluster, ignore = "needs the stand-in's simulated kubelet")]
async fn job_pods_succeed() {
    let env = env().await;
    let jobs: Api<Job> = env.api();
    let job: Job = serde_json::from_value(json!({
        "metadata": {"name": "task"},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "task", "image": "busybox:1"}]}}},
    }))
    .unwrap();
    jobs.create(&PostParams::default(), &job).await.unwrap();
    eventually("a complete job", || async {
        let job = jobs.get("task").await.unwrap();
        let s = job.status.unwrap_or_default();
        s.succeeded == Some(1)
            && s.completion_time.is_some()
            && s.conditions
                .iter()
                .flatten()
                .any(|c| c.type_ == "Complete" && c.status == "True")
    })
    .await;
}
