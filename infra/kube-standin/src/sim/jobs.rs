//! The Job controller: runs `min(parallelism, completions - succeeded)` pods at a time (one,
//! for a default Job), counts them, and marks the Job complete or failed. CronJobs create
//! nothing: no schedule fires in the stand-in.
//!
//! A Job running longer than its `activeDeadlineSeconds` (from its `startTime`) fails with
//! `DeadlineExceeded`, and its active pods are deleted.
//!
//! A failed pod is replaced after the Job controller's back-off: 10 s after the last failure,
//! doubling with each further failure, at most 10 minutes (`DefaultJobPodFailureBackOff`,
//! `MaxJobPodFailureBackOff` of kubernetes' pkg/controller/job). So a Job whose deadline is
//! shorter than the back-off fails `DeadlineExceeded` after one try, as on a real cluster.
//! The failed count and the `Failed` condition are written together, as the real controller
//! does (it adds the condition only once no terminated pod is left uncounted).
//!
//! Not simulated: the `batch.kubernetes.io/job-tracking` finalizer on pods, pod failure
//! policies and indexed completions.

use std::sync::Arc;
use std::time::Instant;

use jiff::Timestamp;
use serde_json::{Map, Value, json};

use super::conditions::{Condition, set_condition};
use super::objects::{
    condition, controlled_by, controller_ref, int, pod_is_active, pod_is_ready, pod_phase,
    with_label,
};
use super::{at_second, next_tick};
use crate::meta;
use crate::store::ObjKey;
use crate::verbs::State;

/// Syncs the Job under `key`; returns when its next time-based step is due, if it has one:
/// its deadline, the end of its back-off, or a pod to create again.
pub fn sync(state: &mut State, key: &ObjKey, now: Timestamp) -> Option<Instant> {
    let job = state.store.get(key).cloned()?;
    if meta::is_deleting(&job) {
        return None;
    }
    let stamp = now.to_string();
    run(state, key, &job, &stamp);
    let job = state.store.get(key)?.clone();
    next_step(state, key, &job, &stamp)
}

/// When the unfinished Job's next time-based step is due.
fn next_step(state: &State, key: &ObjKey, job: &Value, now: &str) -> Option<Instant> {
    let suspended = job.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true);
    if finished(job) || suspended {
        return None;
    }
    let parsed = now.parse::<Timestamp>().ok()?;
    let pods = controlled_by(state, "", "pods", &key.namespace, meta::uid(job));
    let count = |phase: &str| pods.iter().filter(|(_, p)| pod_phase(p) == phase).count() as i64;
    let (succeeded, failed) = (count("Succeeded"), count("Failed"));
    let active = pods.iter().filter(|(_, p)| pod_is_active(p)).count() as i64;
    let deadline = int(job, "/spec/activeDeadlineSeconds").and_then(|deadline| {
        let started = job
            .pointer("/status/startTime")
            .and_then(Value::as_str)
            .and_then(|at| at.parse::<Timestamp>().ok())?;
        Some(at_second(parsed, started.as_second() + deadline))
    });
    let retry = if in_backoff(&pods, failed, now) {
        backoff_end(&pods, failed).map(|second| at_second(parsed, second))
    } else {
        let completions = int(job, "/spec/completions").unwrap_or(1).max(1);
        let parallelism = int(job, "/spec/parallelism").unwrap_or(1).max(0);
        (parallelism.min(completions - succeeded) > active).then(next_tick)
    };
    deadline.into_iter().chain(retry).min()
}

fn finished(job: &Value) -> bool {
    ["Complete", "Failed"].iter().any(|kind| {
        condition(job, kind)
            .is_some_and(|c| c.get("status").and_then(Value::as_str) == Some("True"))
    })
}

fn run(state: &mut State, key: &ObjKey, job: &Value, now: &str) {
    let pods = controlled_by(state, "", "pods", &key.namespace, meta::uid(job));
    let active: Vec<&Value> = pods
        .iter()
        .map(|(_, p)| &**p)
        .filter(|p| pod_is_active(p))
        .collect();
    let succeeded = pods
        .iter()
        .filter(|(_, p)| pod_phase(p) == "Succeeded")
        .count() as i64;
    let failed = pods
        .iter()
        .filter(|(_, p)| pod_phase(p) == "Failed")
        .count() as i64;
    let completions = int(job, "/spec/completions").unwrap_or(1).max(1);
    let parallelism = int(job, "/spec/parallelism").unwrap_or(1).max(0);
    let backoff_limit = int(job, "/spec/backoffLimit").unwrap_or(6);
    let suspended = job.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true);

    let old = job.get("status").cloned().unwrap_or_else(|| json!({}));
    let mut conditions: Vec<Value> = old
        .get("conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let cond = |kind: &'static str, reason: &str, message: &str| Condition {
        kind,
        status: "True".into(),
        reason: reason.into(),
        message: message.into(),
        now: now.to_string(),
    };
    let mut status = Map::new();
    let was_finished = finished(job);
    if !was_finished && !suspended {
        if succeeded >= completions {
            set_condition(
                &mut conditions,
                cond(
                    "SuccessCriteriaMet",
                    "CompletionsReached",
                    "Reached expected number of succeeded pods",
                ),
            );
            set_condition(
                &mut conditions,
                cond(
                    "Complete",
                    "CompletionsReached",
                    "Reached expected number of succeeded pods",
                ),
            );
            status.insert("completionTime".into(), json!(now));
        } else if past_deadline(job, now) {
            for (pod, _) in pods.iter().filter(|(_, p)| pod_is_active(p)) {
                state.sim_delete(pod);
            }
            for kind in ["FailureTarget", "Failed"] {
                set_condition(
                    &mut conditions,
                    cond(
                        kind,
                        "DeadlineExceeded",
                        "Job was active longer than specified deadline",
                    ),
                );
            }
        } else if failed > backoff_limit {
            set_condition(
                &mut conditions,
                cond(
                    "FailureTarget",
                    "BackoffLimitExceeded",
                    "Job has reached the specified backoff limit",
                ),
            );
            set_condition(
                &mut conditions,
                cond(
                    "Failed",
                    "BackoffLimitExceeded",
                    "Job has reached the specified backoff limit",
                ),
            );
        } else if in_backoff(&pods, failed, now) {
            // The replacement waits; the next passes look again.
        } else {
            let wanted = parallelism.min(completions - succeeded);
            let missing = wanted - active.len() as i64;
            if missing > 0 {
                for _ in 0..missing {
                    state.sim_create("", "pods", &key.namespace, pod_for(job));
                }
                // Counted on the next pass, from the pods as they are then.
                return;
            }
        }
    }
    for c in ["startTime", "completionTime"] {
        if let Some(v) = old.get(c) {
            status.entry(c).or_insert_with(|| v.clone());
        }
    }
    if !suspended {
        status.entry("startTime").or_insert_with(|| json!(now));
    }
    for (field, value) in [
        ("active", active.len() as i64),
        ("succeeded", succeeded),
        ("failed", failed),
    ] {
        if value != 0 {
            status.insert(field.into(), json!(value));
        }
    }
    let ready = active.iter().filter(|p| pod_is_ready(p)).count();
    status.insert("ready".into(), json!(ready));
    status.insert("terminating".into(), json!(0));
    status.insert("uncountedTerminatedPods".into(), json!({}));
    if !conditions.is_empty() {
        status.insert("conditions".into(), Value::Array(conditions));
    }
    state.sim_set_status(key, Value::Object(status));
}

/// The Job controller's pod failure back-off: the first retry 10 s after a failure,
/// doubling, at most 10 minutes.
const FIRST_BACKOFF_SECONDS: i64 = 10;
const MAX_BACKOFF_SECONDS: i64 = 600;

/// Whether a replacement for the Job's `failed` pods must still wait, counted from the
/// last failure (when its containers finished, as the real controller reads it).
fn in_backoff(pods: &[(ObjKey, Arc<Value>)], failed: i64, now: &str) -> bool {
    match (backoff_end(pods, failed), now.parse::<Timestamp>()) {
        (Some(end), Ok(now)) => now.as_second() < end,
        _ => false,
    }
}

/// The second at which the back-off after the Job's `failed` pods ends.
fn backoff_end(pods: &[(ObjKey, Arc<Value>)], failed: i64) -> Option<i64> {
    if failed == 0 {
        return None;
    }
    let delay = FIRST_BACKOFF_SECONDS
        .saturating_mul(1_i64 << (failed - 1).min(16))
        .min(MAX_BACKOFF_SECONDS);
    let last_failure = pods
        .iter()
        .filter(|(_, p)| pod_phase(p) == "Failed")
        .filter_map(|(_, p)| finished_at(p))
        .max()?;
    Some(last_failure + delay)
}

/// When a pod ended: its containers' last `finishedAt`, else its last condition change,
/// else its creation (the order of kubernetes' `getFinishedTime`).
fn finished_at(pod: &Value) -> Option<i64> {
    let seconds = |at: &Value| {
        at.as_str()
            .and_then(|at| at.parse::<Timestamp>().ok())
            .map(|at| at.as_second())
    };
    let statuses = pod
        .pointer("/status/containerStatuses")
        .and_then(Value::as_array);
    let containers = statuses
        .into_iter()
        .flatten()
        .filter_map(|c| c.pointer("/state/terminated/finishedAt").and_then(seconds))
        .max();
    let conditions = || {
        pod.pointer("/status/conditions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|c| c.get("lastTransitionTime").and_then(seconds))
            .max()
    };
    containers
        .or_else(conditions)
        .or_else(|| pod.pointer("/metadata/creationTimestamp").and_then(seconds))
}

/// Whether the Job has run longer than its `activeDeadlineSeconds`.
fn past_deadline(job: &Value, now: &str) -> bool {
    let Some(deadline) = int(job, "/spec/activeDeadlineSeconds") else {
        return false;
    };
    let started = job
        .pointer("/status/startTime")
        .and_then(Value::as_str)
        .and_then(|at| at.parse::<Timestamp>().ok());
    match (started, now.parse::<Timestamp>()) {
        (Some(started), Ok(now)) => now.as_second() - started.as_second() >= deadline,
        _ => false,
    }
}

/// A pod of a Job: the template, the Job's labels (set on the template when the Job was
/// created, and again here for Jobs from before that) and a controller reference.
fn pod_for(job: &Value) -> Value {
    let template = job
        .pointer("/spec/template")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let name = meta::name(job);
    let uid = meta::uid(job);
    let mut labels = template.pointer("/metadata/labels").cloned();
    for (k, v) in [
        ("batch.kubernetes.io/controller-uid", uid),
        ("batch.kubernetes.io/job-name", name),
        ("controller-uid", uid),
        ("job-name", name),
    ] {
        if labels.as_ref().and_then(|l| l.get(k)).is_none() {
            labels = Some(with_label(labels.as_ref(), k, v));
        }
    }
    let mut metadata = json!({
        "generateName": format!("{name}-"),
        "labels": labels,
        "ownerReferences": [controller_ref("batch/v1", "Job", job)],
    });
    if let Some(a) = template.pointer("/metadata/annotations") {
        metadata["annotations"] = a.clone();
    }
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": template.get("spec").cloned().unwrap_or_else(|| json!({})),
    })
}
