//! Status conditions as controllers set them (`SetDeploymentCondition` and friends).

use serde_json::{Value, json};

pub struct Condition {
    pub kind: &'static str,
    pub status: String,
    pub reason: String,
    pub message: String,
    /// The time of this update, RFC 3339.
    pub now: String,
}

impl Condition {
    pub fn to_value(&self) -> Value {
        json!({
            "type": self.kind,
            "status": self.status,
            "reason": self.reason,
            "message": self.message,
            "lastUpdateTime": self.now,
            "lastTransitionTime": self.now,
        })
    }
}

/// Sets a condition unless one with the same status and reason is there already (then nothing
/// changes, timestamps included); a condition whose status stays keeps its transition time.
pub fn set_condition(conditions: &mut Vec<Value>, new: Condition) {
    let existing = conditions
        .iter()
        .position(|c| c.get("type").and_then(Value::as_str) == Some(new.kind));
    let mut value = new.to_value();
    if let Some(i) = existing {
        let old = &conditions[i];
        let same_status = old.get("status").and_then(Value::as_str) == Some(new.status.as_str());
        if same_status && old.get("reason").and_then(Value::as_str) == Some(new.reason.as_str()) {
            return;
        }
        if same_status && let Some(t) = old.get("lastTransitionTime") {
            value["lastTransitionTime"] = t.clone();
        }
        conditions.remove(i);
    }
    conditions.push(value);
}
