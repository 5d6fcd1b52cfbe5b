//! A kubelet that runs nothing: about a second after a pod appears it is bound to
//! `standin-node` and reported `Running` and `Ready`, with a few log lines per container that
//! say plainly that nothing runs. Job pods then succeed a second later; a Berth build's pod
//! (its `result` container) ends with the result message a build writes, naming a digest
//! derived from the pod's uid, and its `dockerfile` step with BuildKit's report of that
//! digest, so a local run shows a build completing. An image tagged
//! `crashloop` never becomes ready (a failed rollout, on its deadline). For `make dev` only:
//! tests see what a cluster without nodes shows.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::objects::{pod_phase, str_at};
use crate::logs::{LogKey, Logs};
use crate::meta;
use crate::meta::controller_uid;
use crate::store::ObjKey;
use crate::verbs::State;

pub const NODE_NAME: &str = "standin-node";
/// The image tag whose pods never become ready (see [`Kubelet::start`]).
pub const CRASHING_TAG: &str = ":crashloop";
/// How long a pod waits before it "starts", and a Job's pod runs before it "succeeds".
const STEP: Duration = Duration::from_secs(1);

/// When each pod waiting for its next step was first seen in its current phase (with its
/// uid, so a pod made again under the same name starts afresh).
#[derive(Default)]
pub struct Kubelet {
    seen: HashMap<ObjKey, (String, Instant)>,
    /// Pod IPs handed out, for `podIP`.
    ips: u32,
}

impl Kubelet {
    /// Takes the pod under `key` a step further if its time has come; returns when its next
    /// step is due, if it waits for one.
    pub fn sync(
        &mut self,
        state: &mut State,
        logs: &Logs,
        key: &ObjKey,
        now: &str,
    ) -> Option<Instant> {
        let pod = state.store.get(key).cloned();
        let Some(pod) = pod.filter(|p| !meta::is_deleting(p)) else {
            self.seen.remove(key);
            return None;
        };
        let ours = str_at(&pod, "/spec/nodeName").is_none_or(|n| n.is_empty() || n == NODE_NAME);
        if !ours {
            return None;
        }
        match pod_phase(&pod) {
            "Pending" => match self.waited(key, &pod) {
                Ok(()) => self.start(state, logs, key, &pod, now),
                Err(due) => return Some(due),
            },
            "Running" => {
                ensure_logs(logs, key, &pod);
                if is_job_pod(state, &pod) {
                    match self.waited(key, &pod) {
                        Ok(()) => finish(state, key, &pod, now),
                        Err(due) => return Some(due),
                    }
                }
            }
            _ => {}
        }
        self.seen.remove(key);
        None
    }

    /// Whether the pod has been waiting a step (starting the clock on first sight), or when
    /// it will have.
    fn waited(&mut self, key: &ObjKey, pod: &Value) -> Result<(), Instant> {
        let uid = meta::uid(pod);
        let (seen_uid, since) = self
            .seen
            .entry(key.clone())
            .or_insert_with(|| (uid.to_owned(), Instant::now()));
        if seen_uid != uid {
            *seen_uid = uid.to_owned();
            *since = Instant::now();
        }
        let due = *since + STEP;
        if Instant::now() >= due {
            Ok(())
        } else {
            Err(due)
        }
    }

    fn start(&mut self, state: &mut State, logs: &Logs, key: &ObjKey, pod: &Value, now: &str) {
        self.ips += 1;
        let ip = format!("10.244.{}.{}", (self.ips / 250) % 250, self.ips % 250 + 1);
        // An image tagged `crashloop` never starts: its pod runs, never ready, its
        // container waiting in CrashLoopBackOff, so that a rollout to it fails on its
        // progress deadline (the web console's journeys show the rollback it causes).
        let crashing = containers(pod).any(|c| {
            c.get("image")
                .and_then(Value::as_str)
                .is_some_and(|image| image.ends_with(CRASHING_TAG))
        });
        let statuses: Vec<Value> = containers(pod)
            .map(|c| {
                let state = if crashing {
                    json!({"waiting": {"reason": "CrashLoopBackOff", "message": "back-off restarting failed container (simulated: the image is tagged crashloop)"}})
                } else {
                    json!({"running": {"startedAt": now}})
                };
                json!({
                    "name": c.get("name").cloned().unwrap_or(Value::Null),
                    "image": c.get("image").cloned().unwrap_or(Value::Null),
                    "imageID": "",
                    "containerID": format!("standin://{}", uuid::Uuid::new_v4().simple()),
                    "ready": !crashing,
                    "started": !crashing,
                    "restartCount": if crashing { 3 } else { 0 },
                    "state": state,
                    "lastState": {},
                })
            })
            .collect();
        let ready = if crashing { "False" } else { "True" };
        let condition = |kind: &str| {
            let status = if matches!(kind, "Ready" | "ContainersReady") {
                ready
            } else {
                "True"
            };
            json!({"type": kind, "status": status, "lastProbeTime": null, "lastTransitionTime": now})
        };
        let status = json!({
            "phase": "Running",
            "conditions": [
                condition("PodReadyToStartContainers"),
                condition("Initialized"),
                condition("Ready"),
                condition("ContainersReady"),
                condition("PodScheduled"),
            ],
            "hostIP": "127.0.0.1",
            "hostIPs": [{"ip": "127.0.0.1"}],
            "podIP": ip,
            "podIPs": [{"ip": ip}],
            "startTime": now,
            "containerStatuses": statuses,
            "qosClass": pod.pointer("/status/qosClass").cloned().unwrap_or_else(|| json!("BestEffort")),
        });
        // Binding sets `spec.nodeName`, which no update of a pod may change: the binding is
        // written straight to the store, as the `binding` subresource would.
        let mut new = pod.clone();
        new["spec"]["nodeName"] = json!(NODE_NAME);
        new["status"] = status;
        state.put_raw(key.clone(), new.clone());
        ensure_logs(logs, key, &new);
    }
}

fn containers(pod: &Value) -> impl Iterator<Item = &Value> {
    pod.pointer("/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// Pods a Job controls run to completion; the others run until deleted.
fn is_job_pod(state: &State, pod: &Value) -> bool {
    let Some(owner) = controller_uid(pod) else {
        return false;
    };
    let namespace = meta::meta_str(pod, "namespace").unwrap_or_default();
    state
        .store
        .list("batch", "jobs", Some(namespace))
        .any(|(_, j)| meta::uid(j) == owner)
}

fn finish(state: &mut State, key: &ObjKey, pod: &Value, now: &str) {
    let mut status = pod.get("status").cloned().unwrap_or_else(|| json!({}));
    status["phase"] = json!("Succeeded");
    if let Some(conds) = status.get_mut("conditions").and_then(Value::as_array_mut) {
        for c in conds.iter_mut() {
            if matches!(
                c.get("type").and_then(Value::as_str),
                Some("Ready" | "ContainersReady")
            ) {
                c["status"] = json!("False");
                c["reason"] = json!("PodCompleted");
                c["lastTransitionTime"] = json!(now);
            }
        }
    }
    let built = build_image(pod);
    let result = built.as_ref().map(BuiltImage::result);
    if let Some(built) = &built {
        // Its init containers ran before it, each to its end; the builder step says
        // what it built, as BuildKit's `--metadata-file` does.
        let init: Vec<Value> = pod
            .pointer("/spec/initContainers")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|c| {
                let mut status = json!({
                    "name": c.get("name").cloned().unwrap_or(Value::Null),
                    "image": c.get("image").cloned().unwrap_or(Value::Null),
                    "imageID": "", "ready": false, "started": false, "restartCount": 0,
                    "state": {"terminated": {
                        "exitCode": 0, "reason": "Completed", "startedAt": now, "finishedAt": now,
                    }},
                });
                if c.get("name").and_then(Value::as_str) == Some(BUILDER) {
                    status["state"]["terminated"]["message"] = json!(built.builder_report());
                }
                status
            })
            .collect();
        status["initContainerStatuses"] = json!(init);
    }
    if let Some(cs) = status
        .get_mut("containerStatuses")
        .and_then(Value::as_array_mut)
    {
        for c in cs.iter_mut() {
            let started = c
                .pointer("/state/running/startedAt")
                .cloned()
                .unwrap_or_else(|| json!(now));
            c["ready"] = json!(false);
            c["started"] = json!(false);
            c["state"] = json!({"terminated": {
                "exitCode": 0, "reason": "Completed", "startedAt": started, "finishedAt": now,
                "containerID": c.get("containerID").cloned().unwrap_or(Value::Null),
            }});
            if let Some(message) = &result
                && c.get("name").and_then(Value::as_str) == Some("result")
            {
                c["state"]["terminated"]["message"] = json!(message);
            }
        }
    }
    state.sim_set_status(key, status);
}

/// The builder step a simulated build "runs": the controller reads the digest it built
/// from its report (`berth_controller::build_engine::outcome::built_digest`) and fails a
/// build whose pushed image is not that one.
const BUILDER: &str = "dockerfile";

/// What a simulated build "pushes": a commit and a digest made of the pod uid's hex
/// digits, so each build its own image.
struct BuiltImage {
    commit: String,
    digest: String,
}

impl BuiltImage {
    /// The termination message of the `result` container, as the result step writes it.
    fn result(&self) -> String {
        json!({"commit": self.commit, "strategy": BUILDER, "digest": self.digest}).to_string()
    }

    /// The builder step's termination message: BuildKit's metadata of an OCI export.
    fn builder_report(&self) -> String {
        json!({"containerimage.digest": self.digest}).to_string()
    }
}

/// The image of a Berth build pod (a pod labelled `berth.dev/build` with a `result`
/// container); None for any other pod.
fn build_image(pod: &Value) -> Option<BuiltImage> {
    pod.pointer("/metadata/labels/berth.dev~1build")?;
    let has_result =
        containers(pod).any(|c| c.get("name").and_then(Value::as_str) == Some("result"));
    if !has_result {
        return None;
    }
    let hex: String = meta::uid(pod)
        .chars()
        .filter(char::is_ascii_hexdigit)
        .map(|c| c.to_ascii_lowercase())
        .collect();
    if hex.is_empty() {
        return None;
    }
    let digits = |count: usize| hex.chars().cycle().take(count).collect::<String>();
    Some(BuiltImage {
        commit: digits(40),
        digest: format!("sha256:{}", digits(64)),
    })
}

/// Gives each container of a running pod its simulated log, unless it has one (after a
/// restart from a state file, logs, which are not saved, come back this way).
fn ensure_logs(logs: &Logs, key: &ObjKey, pod: &Value) {
    for c in containers(pod) {
        let Some(name) = c.get("name").and_then(Value::as_str) else {
            continue;
        };
        let log_key = LogKey::new(&key.namespace, &key.name, name);
        if logs.has(&log_key) {
            continue;
        }
        let image = c.get("image").and_then(Value::as_str).unwrap_or("<none>");
        logs.set(
            log_key,
            [
                format!("[kube-standin] simulated container {name} of pod {}: nothing runs here", key.name),
                format!("[kube-standin] image {image} was not pulled and no process was started"),
                "[kube-standin] these lines stand in for the container's output (--simulate-kubelet)".to_string(),
            ],
        );
    }
}

/// The node pods are bound to, so `kubectl get nodes` and a pod's `nodeName` agree.
pub fn ensure_node(state: &mut State, now: &str) {
    if state
        .store
        .get(&ObjKey::new("", "nodes", "", NODE_NAME))
        .is_some()
    {
        return;
    }
    let node = json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": NODE_NAME, "labels": {
            "kubernetes.io/hostname": NODE_NAME,
            "kubernetes.io/os": "linux",
        }},
    });
    let Some(created) = state.sim_create("", "nodes", "", node) else {
        return;
    };
    let key = ObjKey::new("", "nodes", "", meta::name(&created));
    let ready = json!({
        "conditions": [{
            "type": "Ready", "status": "True", "reason": "KubeletReady",
            "message": "kube-standin simulates this node's kubelet; nothing runs on it",
            "lastHeartbeatTime": now, "lastTransitionTime": now,
        }],
        "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}, {"type": "Hostname", "address": NODE_NAME}],
        "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
        "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
    });
    state.sim_set_status(&key, ready);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build_result(pod: &Value) -> Option<String> {
        build_image(pod).map(|built| built.result())
    }

    #[test]
    fn a_build_pod_ends_with_a_result_of_its_own() {
        let pod = |uid: &str, build: bool| {
            let labels = if build {
                json!({"berth.dev/build": "1"})
            } else {
                json!({})
            };
            json!({
                "metadata": {"uid": uid, "labels": labels},
                "spec": {"containers": [{"name": "result"}]},
            })
        };
        let message = build_result(&pod("6F1e2d3c-0000-4000-8000-00000000abcd", true))
            .expect("a build pod's result");
        let result: Value = serde_json::from_str(&message).expect("JSON");
        let commit = result["commit"].as_str().unwrap();
        let digest = result["digest"].as_str().unwrap();
        assert!(
            commit.len() == 40
                && commit
                    .chars()
                    .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
        let hex = digest.strip_prefix("sha256:").unwrap();
        assert!(hex.len() == 64 && hex.starts_with("6f1e2d3c0000"));
        assert_eq!(result["strategy"], "dockerfile");
        let other = build_result(&pod("1111", true)).unwrap();
        assert_ne!(other, message, "each build its own image");
        assert_eq!(build_result(&pod("6f1e", false)), None);
    }

    /// The controller takes a build's image only when its builder step reports the very
    /// digest its result names.
    #[test]
    fn a_build_pods_builder_step_reports_the_image_it_pushed() {
        let pod = json!({
            "metadata": {"uid": "6f1e2d3c-0000-4000-8000-00000000abcd", "labels": {"berth.dev/build": "1"}},
            "spec": {"containers": [{"name": "result"}]},
        });
        let built = build_image(&pod).expect("a build pod");
        let result: Value = serde_json::from_str(&built.result()).unwrap();
        let report: Value = serde_json::from_str(&built.builder_report()).unwrap();
        assert_eq!(report["containerimage.digest"], result["digest"]);
        assert_eq!(result["strategy"], BUILDER);
    }
}
