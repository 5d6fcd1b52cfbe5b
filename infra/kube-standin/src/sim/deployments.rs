//! The Deployment controller, as far as tests can see it: one ReplicaSet per pod template
//! (`{deployment}-{pod-template-hash}`), the current one scaled to `spec.replicas` and the old
//! ones to 0, and the status kube-controller-manager computes, conditions included.
//!
//! Not simulated: the rolling steps of `RollingUpdate` (old pods go at once, as with
//! `Recreate`), `paused`, `minReadySeconds`, revision history pruning and adoption of orphans.

use std::sync::Arc;
use std::time::Instant;

use jiff::Timestamp;
use serde_json::{Map, Value, json};

use super::at_second;
use super::conditions::{Condition, set_condition};
use super::objects::{
    condition, controlled_by, controller_ref, int, pod_is_active, pod_is_ready, str_at, with_label,
};
use super::template_hash::template_hash;
use crate::meta;
use crate::store::ObjKey;
use crate::verbs::State;

pub const HASH_LABEL: &str = "pod-template-hash";
const REVISION: &str = "deployment.kubernetes.io/revision";
const DESIRED_REPLICAS: &str = "deployment.kubernetes.io/desired-replicas";
const MAX_REPLICAS: &str = "deployment.kubernetes.io/max-replicas";

/// The `progressDeadlineSeconds` that means "no deadline".
const NO_DEADLINE: i64 = i32::MAX as i64;

/// Syncs the Deployment under `key`; returns when its progress deadline is due, if it has one
/// pending.
pub fn sync(state: &mut State, key: &ObjKey, now: Timestamp) -> Option<Instant> {
    let d = state.store.get(key).cloned()?;
    if meta::is_deleting(&d) {
        return None;
    }
    roll(state, key, &d, now);
    let d = state.store.get(key)?;
    progress_deadline(d).map(|second| at_second(now, second))
}

/// The second at which `timed_out` can first hold, for a rollout still progressing.
fn progress_deadline(d: &Value) -> Option<i64> {
    let deadline = int(d, "/spec/progressDeadlineSeconds").filter(|s| *s != NO_DEADLINE)?;
    let progressing = condition(d, "Progressing")?;
    if matches!(
        progressing.get("reason").and_then(Value::as_str),
        Some("NewReplicaSetAvailable" | "ProgressDeadlineExceeded")
    ) {
        return None;
    }
    let from = progressing
        .get("lastUpdateTime")
        .and_then(Value::as_str)
        .and_then(|t| t.parse::<Timestamp>().ok())?;
    Some(from.as_second() + deadline + 1)
}

/// The Deployment controller's `syncDeployment`: its ReplicaSets scaled, its status written.
fn roll(state: &mut State, key: &ObjKey, d: &Value, now: Timestamp) {
    let uid = meta::uid(d).to_string();
    let desired = int(d, "/spec/replicas").unwrap_or(1).max(0);
    let template = d
        .pointer("/spec/template")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let hash = template_hash(&template);
    let owned = controlled_by(state, "apps", "replicasets", &key.namespace, &uid);
    let revision_of = |rs: &Value| -> i64 {
        meta::metadata(rs)
            .and_then(|m| m.get("annotations"))
            .and_then(|a| a.get(REVISION))
            .and_then(Value::as_str)
            .and_then(|r| r.parse().ok())
            .unwrap_or(0)
    };
    let is_new = |rs: &Value| {
        meta::labels(rs)
            .and_then(|l| l.get(HASH_LABEL))
            .and_then(Value::as_str)
            == Some(hash.as_str())
    };
    let max_old_revision = owned
        .iter()
        .filter(|(_, rs)| !is_new(rs))
        .map(|(_, rs)| revision_of(rs))
        .max()
        .unwrap_or(0);
    let max_surge = max_surge(d, desired);
    let rolling = str_at(d, "/spec/strategy/type") != Some("Recreate");
    let old_total: i64 = owned
        .iter()
        .filter(|(_, rs)| !is_new(rs))
        .map(|(_, rs)| int(rs, "/spec/replicas").unwrap_or(0))
        .sum();

    let existing_new = owned.iter().find(|(_, rs)| is_new(rs)).cloned();
    let created = existing_new.is_none();
    let Some((new_key, new_rs)) = existing_new.or_else(|| {
        let first = if rolling {
            scaled_up(desired, max_surge, old_total, 0)
        } else {
            desired
        };
        let rs = new_replicaset(d, &template, &hash, first, max_old_revision + 1, max_surge);
        state
            .sim_create("apps", "replicasets", &key.namespace, rs)
            .map(|rs| {
                let k = ObjKey::new("apps", "replicasets", &key.namespace, meta::name(&rs));
                (k, rs)
            })
    }) else {
        return;
    };
    let new_rs_name = new_key.name.clone();

    // Scale: the new ReplicaSet to `replicas`, every old one to 0. A template brought back
    // makes its old ReplicaSet the newest revision again, as `kubectl rollout undo` shows.
    let revision = if revision_of(&new_rs) > max_old_revision {
        revision_of(&new_rs)
    } else {
        max_old_revision + 1
    };
    // A rolling update (`rolling.go`): the new ReplicaSet grows within `maxSurge` of the
    // desired count, and old ones shrink only as far as `maxUnavailable` lets the available
    // pods fall, so with `maxUnavailable: 0` old pods go only once new ones are ready.
    let new_target = if rolling {
        let now = int(&new_rs, "/spec/replicas").unwrap_or(0);
        if now >= desired {
            desired
        } else {
            scaled_up(desired, max_surge, old_total, now)
        }
    } else {
        desired
    };
    scale_replicaset(
        state,
        &new_key,
        &new_rs,
        new_target,
        Some((revision, desired, max_surge)),
    );
    let mut scale_down = if rolling {
        let new_ready = ready_pods(state, &key.namespace, meta::uid(&new_rs)).min(new_target);
        let min_available = desired - max_unavailable(d, desired);
        (old_total + new_target - min_available - (new_target - new_ready)).max(0)
    } else {
        old_total
    };
    for (k, rs) in &owned {
        if *k != new_key {
            let replicas = int(rs, "/spec/replicas").unwrap_or(0);
            let cut = scale_down.min(replicas);
            scale_down -= cut;
            scale_replicaset(state, k, rs, replicas - cut, None);
        }
    }
    set_revision_annotation(state, key, revision);

    // Status, from the pods of every ReplicaSet of this Deployment.
    let Some(d) = state.store.get(key).cloned() else {
        return;
    };
    let replicasets = controlled_by(state, "apps", "replicasets", &key.namespace, &uid);
    let mut counts = Counts::default();
    for (rs_key, rs) in &replicasets {
        counts.spec_total += int(rs, "/spec/replicas").unwrap_or(0);
        let pods = controlled_by(state, "", "pods", &key.namespace, meta::uid(rs));
        for (_, pod) in pods.iter().filter(|(_, p)| pod_is_active(p)) {
            counts.replicas += 1;
            if *rs_key == new_key {
                counts.updated += 1;
            }
            if pod_is_ready(pod) {
                counts.ready += 1;
            }
        }
    }
    let status = deployment_status(&d, desired, &counts, created, &new_rs_name, now);
    state.sim_set_status(key, status);
}

/// What the status counts, taken from the pods.
#[derive(Default)]
struct Counts {
    /// Sum of the ReplicaSets' `spec.replicas`.
    spec_total: i64,
    /// Active pods of all ReplicaSets.
    replicas: i64,
    /// Active pods of the current ReplicaSet.
    updated: i64,
    /// Ready pods; available too, as `minReadySeconds` is not simulated.
    ready: i64,
}

/// The new ReplicaSet's size in a rolling update: up to `desired`, while all ReplicaSets
/// together stay within `desired + max_surge`.
fn scaled_up(desired: i64, max_surge: i64, old_total: i64, new_now: i64) -> i64 {
    let room = (desired + max_surge - old_total - new_now).max(0);
    new_now + room.min(desired - new_now)
}

/// The active, ready pods a ReplicaSet controls.
fn ready_pods(state: &State, namespace: &str, rs_uid: &str) -> i64 {
    controlled_by(state, "", "pods", namespace, rs_uid)
        .iter()
        .filter(|(_, pod)| pod_is_active(pod) && pod_is_ready(pod))
        .count() as i64
}

fn new_replicaset(
    d: &Value,
    template: &Value,
    hash: &str,
    replicas: i64,
    revision: i64,
    max_surge: i64,
) -> Value {
    let name = format!("{}-{hash}", meta::name(d));
    let mut template = template.clone();
    let labels = with_label(template.pointer("/metadata/labels"), HASH_LABEL, hash);
    if !template.get("metadata").is_some_and(Value::is_object) {
        template["metadata"] = json!({});
    }
    template["metadata"]["labels"] = labels.clone();
    let mut selector = d
        .pointer("/spec/selector")
        .cloned()
        .unwrap_or_else(|| json!({}));
    selector["matchLabels"] = with_label(selector.get("matchLabels"), HASH_LABEL, hash);
    json!({
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": name,
            "labels": labels,
            "annotations": {
                REVISION: revision.to_string(),
                DESIRED_REPLICAS: replicas.to_string(),
                MAX_REPLICAS: (replicas + max_surge).to_string(),
            },
            "ownerReferences": [controller_ref("apps/v1", "Deployment", d)],
        },
        "spec": {
            "replicas": replicas,
            "minReadySeconds": int(d, "/spec/minReadySeconds").unwrap_or(0),
            "selector": selector,
            "template": template,
        },
    })
}

/// Sets a ReplicaSet's replicas (and, for the current one, its revision annotations).
fn scale_replicaset(
    state: &mut State,
    key: &ObjKey,
    rs: &Arc<Value>,
    replicas: i64,
    annotations: Option<(i64, i64, i64)>,
) {
    let mut new = (**rs).clone();
    new["spec"]["replicas"] = json!(replicas);
    if let Some((revision, desired, max_surge)) = annotations {
        let meta = meta::metadata_mut(&mut new);
        let ann = meta.entry("annotations").or_insert_with(|| json!({}));
        if !ann.is_object() {
            *ann = json!({});
        }
        ann[REVISION] = json!(revision.to_string());
        ann[DESIRED_REPLICAS] = json!(desired.to_string());
        ann[MAX_REPLICAS] = json!((desired + max_surge).to_string());
    }
    if new != **rs {
        state.sim_update(key, new);
    }
}

fn set_revision_annotation(state: &mut State, key: &ObjKey, revision: i64) {
    let Some(d) = state.store.get(key).cloned() else {
        return;
    };
    let current = meta::metadata(&d)
        .and_then(|m| m.get("annotations"))
        .and_then(|a| a.get(REVISION))
        .and_then(Value::as_str);
    if current == Some(revision.to_string().as_str()) {
        return;
    }
    let mut new = (*d).clone();
    let meta = meta::metadata_mut(&mut new);
    let ann = meta.entry("annotations").or_insert_with(|| json!({}));
    if !ann.is_object() {
        *ann = json!({});
    }
    ann[REVISION] = json!(revision.to_string());
    state.sim_update(key, new);
}

/// `maxSurge`/`maxUnavailable` as `ResolveFenceposts` resolves them: percentages of the
/// desired replicas, surge rounded up, unavailable down, and never both 0.
fn fenceposts(d: &Value, desired: i64) -> (i64, i64) {
    if str_at(d, "/spec/strategy/type") == Some("Recreate") {
        return (0, 0);
    }
    let scaled = |v: Option<&Value>, default: &str, round_up: bool| -> i64 {
        let v = v.cloned().unwrap_or_else(|| json!(default));
        match &v {
            Value::Number(n) => n.as_i64().unwrap_or(0),
            Value::String(s) => match s.strip_suffix('%').and_then(|p| p.parse::<i64>().ok()) {
                Some(pct) if round_up => (pct * desired + 99) / 100,
                Some(pct) => pct * desired / 100,
                None => s.parse().unwrap_or(0),
            },
            _ => 0,
        }
    };
    let surge = scaled(
        d.pointer("/spec/strategy/rollingUpdate/maxSurge"),
        "25%",
        true,
    );
    let mut unavailable = scaled(
        d.pointer("/spec/strategy/rollingUpdate/maxUnavailable"),
        "25%",
        false,
    );
    if surge == 0 && unavailable == 0 {
        unavailable = 1;
    }
    (surge, unavailable)
}

fn max_surge(d: &Value, desired: i64) -> i64 {
    fenceposts(d, desired).0
}

/// `deploymentutil.MaxUnavailable`.
fn max_unavailable(d: &Value, desired: i64) -> i64 {
    if desired == 0 {
        return 0;
    }
    fenceposts(d, desired).1.min(desired)
}

/// The status `calculateStatus` and `syncRolloutStatus` of kube-controller-manager write.
fn deployment_status(
    d: &Value,
    desired: i64,
    counts: &Counts,
    created_new_rs: bool,
    new_rs: &str,
    now: Timestamp,
) -> Value {
    let old = d.get("status").cloned().unwrap_or_else(|| json!({}));
    let old_count = |field: &str| old.get(field).and_then(Value::as_i64).unwrap_or(0);
    let mut conditions: Vec<Value> = old
        .get("conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let stamp = now.to_string();
    let progressing = |status: &str, reason: &str, message: String| Condition {
        kind: "Progressing",
        status: status.to_string(),
        reason: reason.to_string(),
        message,
        now: stamp.clone(),
    };

    // getNewReplicaSet: a new rollout (re)starts the progress clock.
    let current = conditions
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("Progressing"))
        .cloned();
    if created_new_rs {
        let mut cond = progressing(
            "True",
            "NewReplicaSetCreated",
            format!("Created new replica set \"{new_rs}\""),
        )
        .to_value();
        keep_transition_if_true(&mut cond, current.as_ref());
        replace_condition(&mut conditions, cond);
    } else if current.is_none() {
        set_condition(
            &mut conditions,
            progressing(
                "True",
                "FoundNewReplicaSet",
                format!("Found new replica set \"{new_rs}\""),
            ),
        );
    }

    let available = counts.ready;
    let generation = meta::metadata(d)
        .and_then(|m| m.get("generation"))
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let mut status = Map::new();
    status.insert("observedGeneration".into(), json!(generation));
    // Counts of 0 are left out, as the real status (all `omitempty`) does.
    for (field, value) in [
        ("replicas", counts.replicas),
        ("updatedReplicas", counts.updated),
        ("readyReplicas", counts.ready),
        ("availableReplicas", available),
        (
            "unavailableReplicas",
            (counts.spec_total - available).max(0),
        ),
    ] {
        if value != 0 {
            status.insert(field.into(), json!(value));
        }
    }

    let (kind, reason, message) = if available >= desired - max_unavailable(d, desired) {
        (
            "True",
            "MinimumReplicasAvailable",
            "Deployment has minimum availability.",
        )
    } else {
        (
            "False",
            "MinimumReplicasUnavailable",
            "Deployment does not have minimum availability.",
        )
    };
    set_condition(
        &mut conditions,
        Condition {
            kind: "Available",
            status: kind.into(),
            reason: reason.into(),
            message: message.into(),
            now: stamp.clone(),
        },
    );

    // syncRolloutStatus.
    let deadline = int(d, "/spec/progressDeadlineSeconds").filter(|s| *s != NO_DEADLINE);
    let current = conditions
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("Progressing"))
        .cloned();
    let current_reason = current
        .as_ref()
        .and_then(|c| c.get("reason"))
        .and_then(Value::as_str);
    let complete_before =
        counts.replicas == counts.updated && current_reason == Some("NewReplicaSetAvailable");
    if let Some(deadline) = deadline
        && !complete_before
    {
        let complete =
            counts.updated == desired && counts.replicas == desired && available == desired;
        let progressed = counts.updated > old_count("updatedReplicas")
            || (counts.replicas - counts.updated)
                < (old_count("replicas") - old_count("updatedReplicas"))
            || counts.ready > old_count("readyReplicas")
            || available > old_count("availableReplicas");
        if complete {
            set_condition(
                &mut conditions,
                progressing(
                    "True",
                    "NewReplicaSetAvailable",
                    format!("ReplicaSet \"{new_rs}\" has successfully progressed."),
                ),
            );
        } else if progressed {
            let mut cond = progressing(
                "True",
                "ReplicaSetUpdated",
                format!("ReplicaSet \"{new_rs}\" is progressing."),
            )
            .to_value();
            keep_transition_if_true(&mut cond, current.as_ref());
            replace_condition(&mut conditions, cond);
        } else if timed_out(current.as_ref(), deadline, now) {
            set_condition(
                &mut conditions,
                progressing(
                    "False",
                    "ProgressDeadlineExceeded",
                    format!("ReplicaSet \"{new_rs}\" has timed out progressing."),
                ),
            );
        }
    }
    status.insert("conditions".into(), Value::Array(conditions));
    if let Some(c) = old.get("collisionCount") {
        status.insert("collisionCount".into(), c.clone());
    }
    Value::Object(status)
}

/// `DeploymentTimedOut`: no progress since the condition's `lastUpdateTime` for longer than
/// the deadline.
fn timed_out(progressing: Option<&Value>, deadline_secs: i64, now: Timestamp) -> bool {
    let Some(cond) = progressing else {
        return false;
    };
    match cond.get("reason").and_then(Value::as_str) {
        Some("NewReplicaSetAvailable") => return false,
        Some("ProgressDeadlineExceeded") => return true,
        _ => {}
    }
    let Some(from) = cond
        .get("lastUpdateTime")
        .and_then(Value::as_str)
        .and_then(|t| t.parse::<Timestamp>().ok())
    else {
        return false;
    };
    from.as_second() + deadline_secs < now.as_second()
}

/// A Progressing condition that stays `True` keeps its `lastTransitionTime`.
fn keep_transition_if_true(cond: &mut Value, current: Option<&Value>) {
    if let Some(current) = current
        && current.get("status").and_then(Value::as_str) == Some("True")
        && let Some(t) = current.get("lastTransitionTime")
    {
        cond["lastTransitionTime"] = t.clone();
    }
}

fn replace_condition(conditions: &mut Vec<Value>, cond: Value) {
    let kind = cond.get("type").cloned();
    conditions.retain(|c| c.get("type") != kind.as_ref());
    conditions.push(cond);
}
