//! Playing the kubelet, for tests that need running pods: on the stand-in and on a real cluster
//! without nodes alike, pods stay `Pending` until a test says otherwise.

use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::{ListParams, Patch, PatchParams};
use serde_json::{Value, json};

/// Marks every Pod in `namespace` matching `label_selector` as Running and Ready (containers
/// ready and started, no restarts) through the `pods/status` subresource, as a kubelet would
/// report it; kube-controller-manager (or the stand-in's simulation of it) then counts the pods
/// ready and updates the Deployment's status. Returns how many pods it marked.
pub async fn play_kubelet(client: &kube::Client, namespace: &str, label_selector: &str) -> usize {
    try_play_kubelet(client, namespace, label_selector)
        .await
        .expect("playing the kubelet")
}

/// Plays the kubelet for every pod in `namespaces` until dropped, so that apps become
/// available on their own, as on a cluster with nodes (or `make dev`'s stand-in).
pub fn keep_pods_running(client: kube::Client, namespaces: Vec<String>) -> KubeletLoop {
    KubeletLoop(tokio::spawn(async move {
        loop {
            for namespace in &namespaces {
                // A pod deleted between the list and its patch is no fault: the next round
                // sees the pods as they are.
                let _ = try_play_kubelet(&client, namespace, "").await;
            }
            tokio::time::sleep(std::time::Duration::from_millis(250)).await;
        }
    }))
}

/// Ends every build pod in `namespace` matching `label_selector` as `end`
/// says ([`end_build_pods`]) until dropped: a kubelet that runs each build
/// to that end, so that a test's builds finish on a cluster without nodes
/// whatever they are (the stand-in's, without registry settings, fail
/// before they have a pod).
pub fn keep_ending_build_pods(
    client: kube::Client,
    namespace: String,
    label_selector: String,
    end: BuildEnd<'static>,
) -> KubeletLoop {
    KubeletLoop(tokio::spawn(async move {
        loop {
            end_build_pods(&client, &namespace, &label_selector, &end).await;
            tokio::time::sleep(std::time::Duration::from_millis(250)).await;
        }
    }))
}

/// Ends every pod in `namespace` matching `label_selector` with `exit_code`
/// ([`end_pods_with`]) until dropped: a kubelet whose containers all exit
/// so, for a test whose commands say they do.
pub fn keep_ending_pods(
    client: kube::Client,
    namespace: String,
    label_selector: String,
    exit_code: i32,
) -> KubeletLoop {
    KubeletLoop(tokio::spawn(async move {
        loop {
            end_pods_with(&client, &namespace, &label_selector, exit_code).await;
            tokio::time::sleep(std::time::Duration::from_millis(250)).await;
        }
    }))
}

/// The kubelet played by [`keep_pods_running`]; it stops when dropped.
pub struct KubeletLoop(tokio::task::JoinHandle<()>);

impl Drop for KubeletLoop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

async fn try_play_kubelet(
    client: &kube::Client,
    namespace: &str,
    label_selector: &str,
) -> Result<usize, kube::Error> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let list = pods
        .list(&ListParams::default().labels(label_selector))
        .await?;
    let now = now();
    let mut marked = 0;
    for pod in list.items {
        let Some(name) = pod.metadata.name.as_deref() else {
            continue;
        };
        if pod.metadata.deletion_timestamp.is_some() || running_and_ready(&pod) || ended(&pod) {
            continue;
        }
        let containers = container_statuses(&pod, json!({"running": {"startedAt": now}}));
        let condition =
            |kind: &str| json!({"type": kind, "status": "True", "lastTransitionTime": now});
        // A merge patch replaces the lists whole, so every condition a running pod has is sent.
        let status = json!({"status": {
            "phase": "Running",
            "startTime": now,
            "conditions": [
                condition("PodScheduled"),
                condition("Initialized"),
                condition("ContainersReady"),
                condition("Ready"),
            ],
            "containerStatuses": containers,
        }});
        pods.patch_status(name, &PatchParams::default(), &Patch::Merge(status))
            .await?;
        marked += 1;
    }
    Ok(marked)
}

/// Reports that the containers of a running pod have restarted `restarts`
/// times, running and ready again, as a kubelet reports a container it
/// restarted.
pub async fn report_restarts(client: &kube::Client, namespace: &str, name: &str, restarts: i32) {
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let pod = pods.get(name).await.expect("the pod");
    let mut containers = container_statuses(&pod, json!({"running": {"startedAt": now()}}));
    for container in &mut containers {
        container["restartCount"] = json!(restarts);
    }
    let status = json!({"status": {"containerStatuses": containers}});
    pods.patch_status(name, &PatchParams::default(), &Patch::Merge(status))
        .await
        .expect("reporting the restart");
}

/// Each container of `pod` as a kubelet reports it in `state`: ready and
/// started while it runs, neither once it ended.
fn container_statuses(pod: &Pod, state: Value) -> Vec<Value> {
    let running = state.get("running").is_some();
    pod.spec
        .iter()
        .flat_map(|s| s.containers.iter())
        .map(|c| {
            json!({
                "name": c.name,
                "image": c.image.clone().unwrap_or_default(),
                "imageID": "",
                "ready": running,
                "started": running,
                "restartCount": 0,
                "state": state,
            })
        })
        .collect()
}

/// A pod whose containers ended (a Job's) is never started again.
fn ended(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|status| status.phase.as_deref())
        .is_some_and(|phase| phase == "Succeeded" || phase == "Failed")
}

/// A kubelet reports changes only: a pod it already runs is left as it is.
fn running_and_ready(pod: &Pod) -> bool {
    pod.status.as_ref().is_some_and(|status| {
        status.phase.as_deref() == Some("Running")
            && status
                .conditions
                .iter()
                .flatten()
                .any(|c| c.type_ == "Ready" && c.status == "True")
    })
}

/// Now in seconds, as Kubernetes writes timestamps.
#[allow(dead_code)]
fn now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or_default();
    k8s_openapi::jiff::Timestamp::from_second(secs)
        .map(|t| t.to_string())
        .unwrap_or_default()
}

/// Ends every Pod in `namespace` matching `label_selector` that has not ended, as a kubelet
/// reports a container that exited: `Succeeded` with exit code 0, or `Failed` with 1. The
/// Job controller (kube-controller-manager's, or the stand-in's) then counts them. Returns how
/// many pods it ended.
pub async fn end_pods(
    client: &kube::Client,
    namespace: &str,
    label_selector: &str,
    succeeded: bool,
) -> usize {
    end_pods_with(
        client,
        namespace,
        label_selector,
        if succeeded { 0 } else { 1 },
    )
    .await
}

/// [`end_pods`], each container exiting with `exit_code`: `Succeeded` for 0, else `Failed`.
pub async fn end_pods_with(
    client: &kube::Client,
    namespace: &str,
    label_selector: &str,
    exit_code: i32,
) -> usize {
    let succeeded = exit_code == 0;
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let list = pods
        .list(&ListParams::default().labels(label_selector))
        .await
        .expect("listing pods");
    let now = now();
    let (phase, reason) = if succeeded {
        ("Succeeded", "Completed")
    } else {
        ("Failed", "Error")
    };
    let mut ended = 0;
    for pod in list.items {
        let Some(name) = pod.metadata.name.as_deref() else {
            continue;
        };
        let over = pod
            .status
            .as_ref()
            .and_then(|status| status.phase.as_deref())
            .is_some_and(|phase| phase == "Succeeded" || phase == "Failed");
        if over || pod.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let containers = container_statuses(
            &pod,
            json!({"terminated": {
                "exitCode": exit_code, "reason": reason, "startedAt": now, "finishedAt": now,
            }}),
        );
        // A pod deleted or ended meanwhile is no fault: the caller looks again.
        if report_ended(&pods, name, phase, &now, None, containers).await {
            ended += 1;
        }
    }
    ended
}

/// Reports a pod ended in `phase` with these container statuses (and init
/// containers' when given), as a kubelet does; whether the report was taken.
async fn report_ended(
    pods: &Api<Pod>,
    name: &str,
    phase: &str,
    now: &str,
    init: Option<Vec<Value>>,
    containers: Vec<Value>,
) -> bool {
    let mut status = json!({"status": {
        "phase": phase,
        "startTime": now,
        "conditions": [
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": now},
            {"type": "Ready", "status": "False", "reason": "PodCompleted", "lastTransitionTime": now},
        ],
        "containerStatuses": containers,
    }});
    if let Some(init) = init {
        status["status"]["initContainerStatuses"] = json!(init);
    }
    pods.patch_status(name, &PatchParams::default(), &Patch::Merge(status))
        .await
        .is_ok()
}

/// How a build pod ends (see `controller/src/build_engine/`).
pub enum BuildEnd<'a> {
    /// Every step succeeded, the builder of `strategy` reported what it
    /// built, and `result` says it pushed this.
    Pushed {
        commit: &'a str,
        strategy: &'a str,
        digest: &'a str,
    },
    /// The step `step` failed, its output's tail `message` (as
    /// `FallbackToLogsOnError` makes it).
    Failed { step: &'a str, message: &'a str },
}

/// What a builder step writes as its termination message: BuildKit's
/// `--metadata-file`, or the lifecycle's report.toml after an export to an
/// OCI layout (which names no digest).
fn builder_report(strategy: &str, digest: &str) -> String {
    if strategy == "dockerfile" {
        json!({"containerimage.digest": digest}).to_string()
    } else {
        "[build]\n  bom = []\n\n[image]\n  tags = [\"registry.berth.test/apps/app:commit\"]\n  manifest-size = 345\n"
            .to_owned()
    }
}

/// Ends every build pod in `namespace` matching `label_selector` as a
/// kubelet reports it: each init container terminated in order (up to the
/// failed one) and `result` with its termination message, through the
/// `pods/status` subresource, so it works on a real cluster too. The Job
/// controller then marks the Job complete or failed. Returns how many pods
/// it ended.
pub async fn end_build_pods(
    client: &kube::Client,
    namespace: &str,
    label_selector: &str,
    end: &BuildEnd<'_>,
) -> usize {
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let Ok(list) = pods
        .list(&ListParams::default().labels(label_selector))
        .await
    else {
        return 0;
    };
    let now = now();
    let terminated = |code: i32, message: Option<&str>| {
        let mut state = json!({
            "exitCode": code,
            "reason": if code == 0 { "Completed" } else { "Error" },
            "startedAt": now, "finishedAt": now,
        });
        if let Some(message) = message {
            state["message"] = json!(message);
        }
        json!({"terminated": state})
    };
    let status_of = |name: &str, image: &str, state: Value| {
        json!({
            "name": name, "image": image, "imageID": "", "ready": false,
            "started": false, "restartCount": 0, "state": state,
        })
    };
    let mut ended = 0;
    for pod in list.items {
        let Some(name) = pod.metadata.name.as_deref() else {
            continue;
        };
        let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
        if matches!(phase, Some("Succeeded" | "Failed"))
            || pod.metadata.deletion_timestamp.is_some()
        {
            continue;
        }
        let spec = pod.spec.clone().unwrap_or_default();
        let mut failed_already = false;
        let init: Vec<Value> = spec
            .init_containers
            .iter()
            .flatten()
            .map(|c| {
                let image = c.image.clone().unwrap_or_default();
                let state = if failed_already {
                    json!({"waiting": {"reason": "PodInitializing"}})
                } else {
                    match end {
                        BuildEnd::Failed { step, message } if *step == c.name => {
                            failed_already = true;
                            terminated(1, Some(message))
                        }
                        // The builder's report, as its step leaves it.
                        BuildEnd::Pushed {
                            strategy, digest, ..
                        } if *strategy == c.name => {
                            terminated(0, Some(&builder_report(strategy, digest)))
                        }
                        _ => terminated(0, None),
                    }
                };
                status_of(&c.name, &image, state)
            })
            .collect();
        let main: Vec<Value> = spec
            .containers
            .iter()
            .map(|c| {
                let image = c.image.clone().unwrap_or_default();
                let state = match end {
                    BuildEnd::Pushed {
                        commit,
                        strategy,
                        digest,
                    } => terminated(
                        0,
                        Some(
                            &json!({"commit": commit, "strategy": strategy, "digest": digest})
                                .to_string(),
                        ),
                    ),
                    BuildEnd::Failed { step, message } if *step == c.name => {
                        terminated(1, Some(message))
                    }
                    BuildEnd::Failed { .. } => json!({"waiting": {"reason": "PodInitializing"}}),
                };
                status_of(&c.name, &image, state)
            })
            .collect();
        let phase = match end {
            BuildEnd::Pushed { .. } => "Succeeded",
            BuildEnd::Failed { .. } => "Failed",
        };
        if report_ended(&pods, name, phase, &now, Some(init), main).await {
            ended += 1;
        }
    }
    ended
}
