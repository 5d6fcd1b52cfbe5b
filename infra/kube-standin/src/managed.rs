//! `metadata.managedFields`: which field manager wrote an object, how (`Apply` for server-side
//! apply, `Update` for create, replace and the other patches), through which subresource, with
//! which API version and when — as a real API server records it, so that a test can see who
//! wrote to an object. Coarsely: an entry's `fieldsV1` names the top-level fields of the object
//! (and the keys of its labels, annotations and owner references), not every leaf, and a
//! manager never loses fields to another (a real server moves ownership on a forced apply).

use serde_json::{Map, Value, json};

use crate::meta::{self, metadata_mut};
use crate::verbs::Subresource;

/// How a manager wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Operation {
    #[default]
    Update,
    Apply,
}

impl Operation {
    fn as_str(self) -> &'static str {
        match self {
            Operation::Update => "Update",
            Operation::Apply => "Apply",
        }
    }
}

/// One write, as its entry records it.
pub struct Write<'a> {
    pub manager: &'a str,
    pub operation: Operation,
    pub subresource: Subresource,
    pub api_version: &'a str,
}

/// The manager a request without `fieldManager` is recorded as: like a real API server, the
/// first part of its `User-Agent` (`kubectl/v1.33.0 (linux/amd64)` is `kubectl`).
pub fn manager_from_user_agent(user_agent: Option<&str>) -> String {
    user_agent
        .and_then(|agent| agent.split('/').next())
        .map(str::trim)
        .filter(|prefix| !prefix.is_empty())
        .unwrap_or("unknown")
        .chars()
        .take(128)
        .collect()
}

/// Records `write` in `new`'s managedFields, starting from those of `old` (none for a create).
/// An entry whose write changed nothing keeps its time, so a write that changes nothing stays a
/// no-op (as on a real server since 1.26).
pub fn record(old: Option<&Value>, new: &mut Value, write: &Write<'_>) {
    let mut entries: Vec<Value> = old
        .and_then(|o| meta::metadata(o))
        .and_then(|m| m.get("managedFields"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let changed = old.is_none_or(|old| without_managed_fields(old) != without_managed_fields(new));
    let mut entry = json!({
        "manager": write.manager,
        "operation": write.operation.as_str(),
        "apiVersion": write.api_version,
        "time": meta::now_timestamp(),
        "fieldsType": "FieldsV1",
        "fieldsV1": fields_of(new, write.subresource),
    });
    if write.subresource == Subresource::Status {
        entry["subresource"] = json!("status");
    }
    let same_writer = |e: &Value| {
        e.get("manager") == entry.get("manager")
            && e.get("operation") == entry.get("operation")
            && e.get("subresource") == entry.get("subresource")
    };
    match entries.iter_mut().find(|e| same_writer(e)) {
        Some(existing) => {
            if let Some(time) = existing.get("time").cloned() {
                entry["time"] = time;
            }
            if changed || *existing != entry {
                entry["time"] = json!(meta::now_timestamp());
                *existing = entry;
            }
        }
        None => entries.push(entry),
    }
    metadata_mut(new).insert("managedFields".into(), Value::Array(entries));
}

/// The managedFields of `old`, carried over to `new` (a write through the API never sets them).
pub fn carry(old: &Value, new: &mut Value) {
    let meta = metadata_mut(new);
    match old
        .get("metadata")
        .and_then(|m| m.get("managedFields"))
        .cloned()
    {
        Some(fields) => meta.insert("managedFields".into(), fields),
        None => meta.remove("managedFields"),
    };
}

fn without_managed_fields(obj: &Value) -> Value {
    let mut out = obj.clone();
    metadata_mut(&mut out).remove("managedFields");
    out
}

/// `{"f:spec": {}, "f:metadata": {"f:labels": {"f:app": {}}}}`: what the object holds.
fn fields_of(obj: &Value, subresource: Subresource) -> Value {
    let mut fields = Map::new();
    if subresource == Subresource::Status {
        fields.insert("f:status".into(), json!({}));
        return Value::Object(fields);
    }
    let Some(map) = obj.as_object() else {
        return Value::Object(fields);
    };
    for key in map.keys() {
        if !matches!(key.as_str(), "apiVersion" | "kind" | "metadata" | "status") {
            fields.insert(format!("f:{key}"), json!({}));
        }
    }
    let mut metadata = Map::new();
    for part in ["labels", "annotations"] {
        if let Some(keys) = meta::metadata(obj)
            .and_then(|m| m.get(part))
            .and_then(Value::as_object)
        {
            let keys: Map<String, Value> =
                keys.keys().map(|k| (format!("f:{k}"), json!({}))).collect();
            metadata.insert(format!("f:{part}"), Value::Object(keys));
        }
    }
    if let Some(owners) = meta::metadata(obj)
        .and_then(|m| m.get("ownerReferences"))
        .and_then(Value::as_array)
    {
        let keys: Map<String, Value> = owners
            .iter()
            .filter_map(|o| o.get("uid").and_then(Value::as_str))
            .map(|uid| (format!("k:{{\"uid\":\"{uid}\"}}"), json!({})))
            .collect();
        metadata.insert("f:ownerReferences".into(), Value::Object(keys));
    }
    if !metadata.is_empty() {
        fields.insert("f:metadata".into(), Value::Object(metadata));
    }
    Value::Object(fields)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(manager: &str, operation: Operation) -> Write<'_> {
        Write {
            manager,
            operation,
            subresource: Subresource::Main,
            api_version: "v1",
        }
    }

    #[test]
    fn each_manager_and_operation_has_one_entry() {
        let mut created =
            json!({"metadata": {"name": "a", "labels": {"x": "1"}}, "data": {"k": "v"}});
        record(None, &mut created, &write("kubectl", Operation::Update));
        let mut applied = created.clone();
        applied["data"]["k"] = json!("w");
        record(
            Some(&created),
            &mut applied,
            &write("berth", Operation::Apply),
        );
        let entries = applied["metadata"]["managedFields"].as_array().unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0]["manager"], "kubectl");
        assert_eq!(entries[0]["operation"], "Update");
        assert_eq!(entries[1]["manager"], "berth");
        assert_eq!(entries[1]["operation"], "Apply");
        assert_eq!(entries[1]["fieldsV1"]["f:data"], json!({}));
        assert_eq!(
            entries[1]["fieldsV1"]["f:metadata"]["f:labels"]["f:x"],
            json!({})
        );
    }

    #[test]
    fn a_write_that_changes_nothing_changes_no_entry() {
        let mut created = json!({"metadata": {"name": "a"}, "data": {"k": "v"}});
        record(None, &mut created, &write("kubectl", Operation::Update));
        // An entry written long ago, so a new time would show.
        created["metadata"]["managedFields"][0]["time"] = json!("2020-01-01T00:00:00Z");
        let mut again = created.clone();
        record(
            Some(&created),
            &mut again,
            &write("kubectl", Operation::Update),
        );
        assert_eq!(again, created);
    }

    #[test]
    fn status_writes_are_their_own_entry() {
        let mut created = json!({"metadata": {"name": "a"}, "spec": {}});
        record(None, &mut created, &write("kubectl", Operation::Update));
        let mut status = created.clone();
        status["status"] = json!({"phase": "Ready"});
        let by_status = Write {
            subresource: Subresource::Status,
            ..write("kubectl", Operation::Update)
        };
        record(Some(&created), &mut status, &by_status);
        let entries = status["metadata"]["managedFields"].as_array().unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[1]["subresource"], "status");
        assert_eq!(entries[1]["fieldsV1"], json!({"f:status": {}}));
    }

    #[test]
    fn the_manager_defaults_to_the_user_agent() {
        assert_eq!(
            manager_from_user_agent(Some("kubectl/v1.33.0 (linux/amd64)")),
            "kubectl"
        );
        assert_eq!(manager_from_user_agent(None), "unknown");
        assert_eq!(manager_from_user_agent(Some("")), "unknown");
    }
}
