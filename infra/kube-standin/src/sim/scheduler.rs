//! Without a kubelet, no node can take a pod: a pod that nobody bound gets the status a real
//! scheduler writes when there is no node, `PodScheduled` False `Unschedulable`.

use serde_json::{Value, json};

use super::objects::{condition, pod_phase};
use crate::meta;
use crate::store::ObjKey;
use crate::verbs::State;

pub fn mark_unschedulable(state: &mut State, key: &ObjKey, now: &str) {
    let Some(pod) = state.store.get(key).cloned() else {
        return;
    };
    let waiting = !meta::is_deleting(&pod)
        && pod_phase(&pod) == "Pending"
        && pod
            .pointer("/spec/nodeName")
            .is_none_or(|n| n.is_null() || n == "")
        && condition(&pod, "PodScheduled").is_none();
    if !waiting {
        return;
    }
    let mut status = pod.get("status").cloned().unwrap_or_else(|| json!({}));
    if !status.is_object() {
        status = json!({});
    }
    status["phase"] = json!("Pending");
    let mut conditions = status
        .get("conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    conditions.push(json!({
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": "no nodes available to schedule pods",
        "lastProbeTime": null,
        "lastTransitionTime": now,
    }));
    status["conditions"] = Value::Array(conditions);
    state.sim_set_status(key, status);
}
