//! The ReplicaSet controller: keeps `spec.replicas` active pods, named `{replicaset}-{random}`,
//! from the template, and reports how many there are and how many are ready.

use std::time::Instant;

use serde_json::{Value, json};

use super::next_tick;

use super::objects::{controlled_by, controller_ref, int, pod_is_active, pod_is_ready};
use crate::meta;
use crate::store::ObjKey;
use crate::verbs::State;

/// Syncs the ReplicaSet under `key`; returns when to look again if it created or deleted pods
/// (their events bring it back; the tick retries a write that failed).
pub fn sync(state: &mut State, key: &ObjKey) -> Option<Instant> {
    let rs = state.store.get(key).cloned()?;
    if meta::is_deleting(&rs) {
        return None;
    }
    scale(state, key, &rs).then(next_tick)
}

/// Creates or deletes pods towards `spec.replicas`, or writes the status once there; whether
/// pods were created or deleted.
fn scale(state: &mut State, key: &ObjKey, rs: &Value) -> bool {
    let desired = int(rs, "/spec/replicas").unwrap_or(1).max(0);
    let mut pods: Vec<(ObjKey, std::sync::Arc<Value>)> =
        controlled_by(state, "", "pods", &key.namespace, meta::uid(rs))
            .into_iter()
            .filter(|(_, p)| pod_is_active(p))
            .collect();
    let active = pods.len() as i64;
    if active < desired {
        for _ in active..desired {
            state.sim_create("", "pods", &key.namespace, pod_from_template(rs));
        }
        // The status is written on the next pass, from the pods as they are then.
        return true;
    }
    if active > desired {
        // Like the real controller, unready and younger pods go first.
        pods.sort_by_key(|(_, p)| {
            let created = meta::meta_str(p, "creationTimestamp")
                .unwrap_or_default()
                .to_string();
            (pod_is_ready(p), std::cmp::Reverse(created))
        });
        for (pod_key, _) in pods.iter().take((active - desired) as usize) {
            state.sim_delete(pod_key);
        }
        return true;
    }
    let ready = pods.iter().filter(|(_, p)| pod_is_ready(p)).count() as i64;
    let mut status = serde_json::Map::new();
    status.insert("replicas".into(), json!(active));
    for (field, value) in [
        ("fullyLabeledReplicas", active),
        ("readyReplicas", ready),
        ("availableReplicas", ready),
    ] {
        if value != 0 {
            status.insert(field.into(), json!(value));
        }
    }
    if let Some(g) = meta::metadata(rs).and_then(|m| m.get("generation")) {
        status.insert("observedGeneration".into(), g.clone());
    }
    state.sim_set_status(key, Value::Object(status));
    false
}

/// A pod as the ReplicaSet controller makes it: the template's metadata and spec, a generated
/// name and a controller reference to the ReplicaSet.
fn pod_from_template(rs: &Value) -> Value {
    let template = rs
        .pointer("/spec/template")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let mut metadata = json!({
        "generateName": format!("{}-", meta::name(rs)),
        "ownerReferences": [controller_ref("apps/v1", "ReplicaSet", rs)],
    });
    for field in ["labels", "annotations"] {
        if let Some(v) = template.pointer(&format!("/metadata/{field}")) {
            metadata[field] = v.clone();
        }
    }
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": template.get("spec").cloned().unwrap_or_else(|| json!({})),
    })
}
