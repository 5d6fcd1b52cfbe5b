//! The simulated kube-controller-manager: Deployments, ReplicaSets and Jobs as a real cluster
//! without nodes shows them (pods stay `Pending`). These tests pass on a real cluster too.

use std::time::Duration;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::common::{TestEnv, eventually, is_gone};

fn deployment(name: &str, replicas: i32, image: &str, deadline: Option<i32>) -> Deployment {
    let mut d = json!({
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            // Recreate: a real cluster replaces Pending pods at once only with it (a rolling
            // update waits for new pods to become available, which Pending pods never do).
            "strategy": {"type": "Recreate"},
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "main", "image": image}]}
            }
        }
    });
    if let Some(s) = deadline {
        d["spec"]["progressDeadlineSeconds"] = json!(s);
    }
    serde_json::from_value(d).unwrap()
}

fn selector(app: &str) -> ListParams {
    ListParams::default().labels(&format!("app={app}"))
}

fn condition(d: &Deployment, kind: &str) -> Option<(String, String)> {
    d.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == kind)
        .map(|c| (c.status.clone(), c.reason.clone().unwrap_or_default()))
}

/// Plays the kubelet for every pod of `app`: Running and Ready, through `pods/status`.
async fn mark_ready(pods: &Api<Pod>, app: &str) {
    let now = jiff::Timestamp::from_second(jiff::Timestamp::now().as_second())
        .unwrap()
        .to_string();
    for pod in pods.list(&selector(app)).await.unwrap() {
        let name = pod.metadata.name.clone().unwrap();
        let status = json!({"status": {
            "phase": "Running",
            "startTime": now,
            "conditions": [
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": now},
                {"type": "Initialized", "status": "True", "lastTransitionTime": now},
                {"type": "ContainersReady", "status": "True", "lastTransitionTime": now},
                {"type": "Ready", "status": "True", "lastTransitionTime": now},
            ],
        }});
        pods.patch_status(&name, &PatchParams::default(), &Patch::Merge(status))
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn deployment_makes_a_replicaset_and_pending_pods() {
    let env = TestEnv::with_controllers().await;
    let deployments: Api<Deployment> = env.api();
    let replicasets: Api<ReplicaSet> = env.api();
    let pods: Api<Pod> = env.api();
    let d = deployments
        .create(
            &PostParams::default(),
            &deployment("web", 2, "nginx:1", None),
        )
        .await
        .unwrap();

    eventually("two pods", || async {
        pods.list(&selector("web")).await.unwrap().items.len() == 2
    })
    .await;
    let rs = replicasets.list(&selector("web")).await.unwrap().items;
    assert_eq!(rs.len(), 1);
    let rs = &rs[0];
    let rs_name = rs.metadata.name.clone().unwrap();
    let hash = rs.metadata.labels.as_ref().unwrap()["pod-template-hash"].clone();
    assert_eq!(rs_name, format!("web-{hash}"));
    assert!(!hash.is_empty() && hash.len() <= 10);
    assert!(
        hash.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
    );
    if env.standin.is_some() {
        assert_eq!(hash.len(), 10);
    }
    let owner = &rs.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.controller),
        ("Deployment", Some(true))
    );
    assert_eq!(owner.uid, d.metadata.uid.clone().unwrap());

    for pod in pods.list(&selector("web")).await.unwrap() {
        let name = pod.metadata.name.clone().unwrap();
        let suffix = name
            .strip_prefix(&format!("{rs_name}-"))
            .expect("named after the RS");
        assert_eq!(suffix.len(), 5);
        assert_eq!(
            pod.metadata.labels.as_ref().unwrap()["pod-template-hash"],
            hash
        );
        let owner = &pod.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.name.as_str()),
            ("ReplicaSet", rs_name.as_str())
        );
        assert_eq!(
            pod.spec.as_ref().unwrap().containers[0].image.as_deref(),
            Some("nginx:1")
        );
        let status = pod.status.clone().unwrap();
        assert_eq!(status.phase.as_deref(), Some("Pending"));
        // A real cluster without a scheduler writes no condition; with one, this one.
        if let Some(c) = status
            .conditions
            .iter()
            .flatten()
            .find(|c| c.type_ == "PodScheduled")
        {
            assert_eq!(
                (c.status.as_str(), c.reason.as_deref()),
                ("False", Some("Unschedulable"))
            );
        } else {
            assert!(
                env.standin.is_none(),
                "the stand-in marks pods unschedulable"
            );
        }
    }

    eventually(
        "the status of a rollout that waits for its pods",
        || async {
            let d = deployments.get("web").await.unwrap();
            let s = d.status.clone().unwrap_or_default();
            s.observed_generation == d.metadata.generation
                && s.replicas == Some(2)
                && s.updated_replicas == Some(2)
                && s.ready_replicas.unwrap_or(0) == 0
                && s.available_replicas.unwrap_or(0) == 0
                && s.unavailable_replicas == Some(2)
                && condition(&d, "Available")
                    == Some(("False".into(), "MinimumReplicasUnavailable".into()))
                && condition(&d, "Progressing").is_some_and(|(s, _)| s == "True")
        },
    )
    .await;

    // Ready pods make it available and complete.
    mark_ready(&pods, "web").await;
    eventually("an available deployment", || async {
        let d = deployments.get("web").await.unwrap();
        let s = d.status.clone().unwrap_or_default();
        s.ready_replicas == Some(2)
            && s.available_replicas == Some(2)
            && s.unavailable_replicas.unwrap_or(0) == 0
            && condition(&d, "Available")
                == Some(("True".into(), "MinimumReplicasAvailable".into()))
            && condition(&d, "Progressing")
                == Some(("True".into(), "NewReplicaSetAvailable".into()))
    })
    .await;
}

#[tokio::test]
async fn scaling_and_template_changes() {
    let env = TestEnv::with_controllers().await;
    let deployments: Api<Deployment> = env.api();
    let replicasets: Api<ReplicaSet> = env.api();
    let pods: Api<Pod> = env.api();
    deployments
        .create(
            &PostParams::default(),
            &deployment("app", 1, "nginx:1", None),
        )
        .await
        .unwrap();
    eventually("one pod", || async {
        pods.list(&selector("app")).await.unwrap().items.len() == 1
    })
    .await;

    deployments
        .patch(
            "app",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 3}})),
        )
        .await
        .unwrap();
    eventually("three pods", || async {
        pods.list(&selector("app")).await.unwrap().items.len() == 3
    })
    .await;
    let first_rs = replicasets.list(&selector("app")).await.unwrap().items[0]
        .metadata
        .name
        .clone()
        .unwrap();

    // A new template: a new ReplicaSet takes over, the old one is scaled to 0.
    let image = json!({"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "nginx:2"}]}}}});
    deployments
        .patch("app", &PatchParams::default(), &Patch::Strategic(image))
        .await
        .unwrap();
    eventually("the pods of the new template only", || async {
        let items = pods.list(&selector("app")).await.unwrap().items;
        items.len() == 3
            && items.iter().all(|p| {
                p.spec.as_ref().unwrap().containers[0].image.as_deref() == Some("nginx:2")
                    && !p.metadata.name.as_ref().unwrap().starts_with(&first_rs)
            })
    })
    .await;
    let sets = replicasets.list(&selector("app")).await.unwrap().items;
    assert_eq!(sets.len(), 2);
    for rs in &sets {
        let replicas = rs.spec.as_ref().unwrap().replicas;
        if rs.metadata.name.as_deref() == Some(first_rs.as_str()) {
            assert_eq!(replicas, Some(0));
        } else {
            assert_eq!(replicas, Some(3));
            assert_eq!(
                rs.metadata.annotations.as_ref().unwrap()["deployment.kubernetes.io/revision"],
                "2"
            );
        }
    }

    // Scaling down removes pods.
    deployments
        .patch(
            "app",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 1}})),
        )
        .await
        .unwrap();
    eventually("one pod again", || async {
        pods.list(&selector("app")).await.unwrap().items.len() == 1
    })
    .await;

    // Deleting the Deployment collects its ReplicaSets and pods.
    deployments
        .delete("app", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the ReplicaSets and pods to go", || async {
        replicasets
            .list(&selector("app"))
            .await
            .unwrap()
            .items
            .is_empty()
            && pods.list(&selector("app")).await.unwrap().items.is_empty()
    })
    .await;
}

#[tokio::test]
async fn a_rollout_that_cannot_progress_exceeds_its_deadline() {
    let env = TestEnv::with_controllers().await;
    let deployments: Api<Deployment> = env.api();
    deployments
        .create(
            &PostParams::default(),
            &deployment("stuck", 1, "nginx:1", Some(2)),
        )
        .await
        .unwrap();
    eventually("ProgressDeadlineExceeded", || async {
        let d = deployments.get("stuck").await.unwrap();
        condition(&d, "Progressing") == Some(("False".into(), "ProgressDeadlineExceeded".into()))
    })
    .await;
    let d = deployments.get("stuck").await.unwrap();
    assert_eq!(
        condition(&d, "Available"),
        Some(("False".into(), "MinimumReplicasUnavailable".into()))
    );
}

#[tokio::test]
async fn a_job_gets_one_pending_pod_and_a_cronjob_none() {
    let env = TestEnv::with_controllers().await;
    let jobs: Api<Job> = env.api();
    let cronjobs: Api<CronJob> = env.api();
    let pods: Api<Pod> = env.api();
    let template = json!({"spec": {"restartPolicy": "Never", "containers": [{"name": "task", "image": "busybox:1"}]}});
    let job: Job = serde_json::from_value(json!({
        "metadata": {"name": "once"},
        "spec": {"template": template},
    }))
    .unwrap();
    let job = jobs.create(&PostParams::default(), &job).await.unwrap();
    let uid = job.metadata.uid.clone().unwrap();
    let selector = job.spec.as_ref().unwrap().selector.clone().unwrap();
    assert_eq!(
        selector.match_labels.unwrap()["batch.kubernetes.io/controller-uid"],
        uid
    );

    let by_job = ListParams::default().labels("job-name=once");
    eventually("the job's pod", || async {
        pods.list(&by_job).await.unwrap().items.len() == 1
    })
    .await;
    let pod = pods.list(&by_job).await.unwrap().items.remove(0);
    let labels = pod.metadata.labels.clone().unwrap();
    assert_eq!(labels["batch.kubernetes.io/job-name"], "once");
    assert_eq!(labels["controller-uid"], uid);
    assert!(pod.metadata.name.unwrap().starts_with("once-"));
    let owner = &pod.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!((owner.kind.as_str(), owner.controller), ("Job", Some(true)));
    assert_eq!(pod.status.unwrap().phase.as_deref(), Some("Pending"));
    eventually("the job to count it active", || async {
        let s = jobs.get("once").await.unwrap().status.unwrap_or_default();
        s.active == Some(1) && s.start_time.is_some()
    })
    .await;

    let cron: CronJob = serde_json::from_value(json!({
        "metadata": {"name": "yearly"},
        "spec": {"schedule": "0 0 1 1 *", "jobTemplate": {"spec": {"template": template}}},
    }))
    .unwrap();
    cronjobs
        .create(&PostParams::default(), &cron)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        jobs.list(&ListParams::default()).await.unwrap().items.len(),
        1
    );
    jobs.delete("once", &DeleteParams::background())
        .await
        .unwrap();
    eventually("the job's pod to go", || async {
        pods.list(&by_job).await.unwrap().items.is_empty()
    })
    .await;
    assert!(is_gone(&jobs, "once").await);
}

/// A Job of one pod, retried once, with a deadline of `seconds`.
fn one_try_job(name: &str, seconds: i64) -> Job {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "activeDeadlineSeconds": seconds,
            "backoffLimit": 1,
            "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "task", "image": "busybox:1"}]}},
        },
    }))
    .unwrap()
}

/// Waits until the Job `name` is `Failed` for `reason`.
async fn until_failed(jobs: &Api<Job>, name: &str, reason: &str) {
    eventually(reason, || async {
        let job = jobs.get(name).await.unwrap();
        job.status
            .and_then(|s| s.conditions)
            .unwrap_or_default()
            .iter()
            .any(|c| {
                c.type_ == "Failed" && c.status == "True" && c.reason.as_deref() == Some(reason)
            })
    })
    .await;
}

#[tokio::test]
async fn a_job_past_its_active_deadline_fails_and_loses_its_pods() {
    let env = TestEnv::with_controllers().await;
    let jobs: Api<Job> = env.api();
    let pods: Api<Pod> = env.api();
    jobs.create(&PostParams::default(), &one_try_job("slow", 2))
        .await
        .unwrap();
    let by_job = ListParams::default().labels("job-name=slow");
    eventually("the job's pod", || async {
        pods.list(&by_job).await.unwrap().items.len() == 1
    })
    .await;
    until_failed(&jobs, "slow", "DeadlineExceeded").await;
    eventually("its pod deleted", || async {
        pods.list(&by_job).await.unwrap().items.is_empty()
    })
    .await;
}

/// A failed pod is replaced only after the Job controller's back-off (10 s
/// for the first retry): a Job whose deadline is shorter fails
/// `DeadlineExceeded` after its one try, `failed` 1, as on a real cluster.
#[tokio::test]
async fn a_failed_pod_is_retried_only_after_the_backoff() {
    let env = TestEnv::with_controllers().await;
    let jobs: Api<Job> = env.api();
    let pods: Api<Pod> = env.api();
    jobs.create(&PostParams::default(), &one_try_job("flaky", 6))
        .await
        .unwrap();
    let by_job = ListParams::default().labels("job-name=flaky");
    eventually("the job's pod", || async {
        pods.list(&by_job).await.unwrap().items.len() == 1
    })
    .await;
    // Played kubelet: its container exits 1.
    let pod = pods.list(&by_job).await.unwrap().items.remove(0);
    let now = jiff::Timestamp::from_second(jiff::Timestamp::now().as_second())
        .unwrap()
        .to_string();
    let failed = json!({"status": {"phase": "Failed", "containerStatuses": [{
        "name": "task", "image": "busybox:1", "imageID": "", "ready": false, "restartCount": 0,
        "state": {"terminated": {"exitCode": 1, "reason": "Error", "startedAt": now, "finishedAt": now}},
    }]}});
    pods.patch_status(
        pod.metadata.name.as_deref().unwrap(),
        &PatchParams::default(),
        &Patch::Merge(failed),
    )
    .await
    .unwrap();
    until_failed(&jobs, "flaky", "DeadlineExceeded").await;
    let status = jobs.get("flaky").await.unwrap().status.unwrap();
    assert_eq!(status.failed, Some(1), "never retried within its deadline");
    assert_eq!(
        pods.list(&by_job).await.unwrap().items.len(),
        1,
        "no second pod"
    );
}
