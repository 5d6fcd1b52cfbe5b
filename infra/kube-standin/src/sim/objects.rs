//! Reading the objects the simulated controllers care about: owners, pods and their state.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::meta;
use crate::store::ObjKey;
use crate::verbs::State;

pub fn int(obj: &Value, pointer: &str) -> Option<i64> {
    obj.pointer(pointer).and_then(Value::as_i64)
}

pub fn str_at<'a>(obj: &'a Value, pointer: &str) -> Option<&'a str> {
    obj.pointer(pointer).and_then(Value::as_str)
}

/// An owner reference that makes `owner` the controller of a dependent, as controllers set it
/// (`blockOwnerDeletion` too, so foreground deletion would wait for the dependent).
pub fn controller_ref(api_version: &str, kind: &str, owner: &Value) -> Value {
    json!({
        "apiVersion": api_version,
        "kind": kind,
        "name": meta::name(owner),
        "uid": meta::uid(owner),
        "controller": true,
        "blockOwnerDeletion": true,
    })
}

/// The objects of a type in `namespace` that `owner_uid` controls, not being deleted.
pub fn controlled_by(
    state: &State,
    group: &str,
    plural: &str,
    namespace: &str,
    owner_uid: &str,
) -> Vec<(ObjKey, Arc<Value>)> {
    state
        .store
        .controlled_by(group, plural, namespace, owner_uid)
        .filter(|(_, o)| !meta::is_deleting(o))
        .map(|(k, o)| (k, o.clone()))
        .collect()
}

pub fn pod_phase(pod: &Value) -> &str {
    str_at(pod, "/status/phase").unwrap_or("Pending")
}

/// Counted by controllers: not finished and not being deleted.
pub fn pod_is_active(pod: &Value) -> bool {
    !matches!(pod_phase(pod), "Succeeded" | "Failed") && !meta::is_deleting(pod)
}

/// A pod whose `Ready` condition is `True`, as `podutil.IsPodReady` decides.
pub fn pod_is_ready(pod: &Value) -> bool {
    condition(pod, "Ready").is_some_and(|c| c.get("status").and_then(Value::as_str) == Some("True"))
}

pub fn condition<'a>(obj: &'a Value, kind: &str) -> Option<&'a Value> {
    obj.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(kind))
}

/// A label map with `extra` added.
pub fn with_label(labels: Option<&Value>, key: &str, value: &str) -> Value {
    let mut labels = labels
        .filter(|l| l.is_object())
        .cloned()
        .unwrap_or_else(|| json!({}));
    labels[key] = json!(value);
    labels
}
