//! Patch formats: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and the approximation of
//! server-side apply the stand-in uses.

use serde_json::{Map, Value};

/// The patch formats a PATCH request may carry, by `Content-Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    Merge,
    Json,
    /// Treated as a merge patch (lists are replaced, not merged by key).
    Strategic,
    Apply,
}

impl PatchType {
    pub fn from_content_type(content_type: &str) -> Option<Self> {
        let mime = content_type.split(';').next().unwrap_or_default().trim();
        match mime {
            "application/merge-patch+json" => Some(PatchType::Merge),
            "application/json-patch+json" => Some(PatchType::Json),
            "application/strategic-merge-patch+json" => Some(PatchType::Strategic),
            "application/apply-patch+yaml"
            | "application/apply-patch+json"
            | "application/apply-patch+cbor" => Some(PatchType::Apply),
            _ => None,
        }
    }
}

/// RFC 7386: objects merge recursively, `null` deletes, everything else replaces.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(patch_map) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Value::Object(target_map) = target else {
        return;
    };
    for (k, v) in patch_map {
        if v.is_null() {
            target_map.remove(k);
        } else {
            merge_patch(target_map.entry(k.clone()).or_insert(Value::Null), v);
        }
    }
}

/// Decodes one JSON-pointer token (`~1` is `/`, `~0` is `~`).
fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

fn split_pointer(path: &str) -> Result<(String, String), String> {
    if path.is_empty() {
        return Err("the root cannot be the target of this operation".to_string());
    }
    if !path.starts_with('/') {
        return Err(format!("invalid JSON pointer {path:?}"));
    }
    let idx = path.rfind('/').unwrap_or(0);
    Ok((path[..idx].to_string(), unescape(&path[idx + 1..])))
}

fn array_index(token: &str, len: usize, allow_end: bool) -> Result<usize, String> {
    if allow_end && token == "-" {
        return Ok(len);
    }
    let idx: usize = token
        .parse()
        .map_err(|_| format!("invalid array index {token:?}"))?;
    let max = if allow_end {
        len
    } else {
        len.saturating_sub(1)
    };
    if idx > max || (!allow_end && len == 0) {
        return Err(format!("array index {idx} out of bounds"));
    }
    Ok(idx)
}

fn add(doc: &mut Value, path: &str, value: Value) -> Result<(), String> {
    if path.is_empty() {
        *doc = value;
        return Ok(());
    }
    let (parent, last) = split_pointer(path)?;
    let target = doc
        .pointer_mut(&parent)
        .ok_or_else(|| format!("path {parent:?} does not exist"))?;
    match target {
        Value::Object(m) => {
            m.insert(last, value);
            Ok(())
        }
        Value::Array(a) => {
            let idx = array_index(&last, a.len(), true)?;
            a.insert(idx, value);
            Ok(())
        }
        _ => Err(format!("path {parent:?} is not a container")),
    }
}

fn remove(doc: &mut Value, path: &str) -> Result<Value, String> {
    let (parent, last) = split_pointer(path)?;
    let target = doc
        .pointer_mut(&parent)
        .ok_or_else(|| format!("path {parent:?} does not exist"))?;
    match target {
        Value::Object(m) => m
            .remove(&last)
            .ok_or_else(|| format!("unable to remove nonexistent key: {last}: missing value")),
        Value::Array(a) => {
            let idx = array_index(&last, a.len(), false)?;
            Ok(a.remove(idx))
        }
        _ => Err(format!("path {parent:?} is not a container")),
    }
}

/// RFC 6902: applies the operations in order; any failure leaves `doc` untouched.
pub fn json_patch(doc: &mut Value, patch: &Value) -> Result<(), String> {
    let ops = patch
        .as_array()
        .ok_or("a JSON patch must be an array of operations")?;
    let mut work = doc.clone();
    for op in ops {
        let kind = op
            .get("op")
            .and_then(Value::as_str)
            .ok_or("patch operation has no \"op\"")?;
        let path = op
            .get("path")
            .and_then(Value::as_str)
            .ok_or("patch operation has no \"path\"")?;
        let value = || {
            op.get("value")
                .cloned()
                .ok_or(format!("{kind} operation has no \"value\""))
        };
        let from = || {
            op.get("from")
                .and_then(Value::as_str)
                .ok_or(format!("{kind} operation has no \"from\""))
        };
        match kind {
            "add" => add(&mut work, path, value()?)?,
            "remove" => {
                remove(&mut work, path)?;
            }
            "replace" => {
                if work.pointer(path).is_none() {
                    return Err(format!(
                        "replace operation does not apply: doc is missing key: {path}"
                    ));
                }
                if path.is_empty() {
                    work = value()?;
                } else {
                    remove(&mut work, path)?;
                    add(&mut work, path, value()?)?;
                }
            }
            "move" => {
                let from = from()?;
                if path.starts_with(&format!("{from}/")) {
                    return Err("a location cannot be moved into one of its children".to_string());
                }
                let v = remove(&mut work, from)?;
                add(&mut work, path, v)?;
            }
            "copy" => {
                let v = work
                    .pointer(from()?)
                    .cloned()
                    .ok_or("copy from a missing location")?;
                add(&mut work, path, v)?;
            }
            "test" => {
                let expected = value()?;
                // As on the API server, a missing location tests equal to `null` (kube's
                // finalizer helper relies on this).
                if work.pointer(path).unwrap_or(&Value::Null) != &expected {
                    return Err(format!("testing value {path} failed"));
                }
            }
            other => return Err(format!("unsupported patch operation {other:?}")),
        }
    }
    *doc = work;
    Ok(())
}

/// Server-side apply, approximated: fields the same manager applied last time but left out now
/// are removed, then the applied configuration is merged in (objects recursively, lists and
/// scalars replaced). There are no per-field owners and so no apply conflicts.
pub fn apply(target: &mut Value, previously_applied: Option<&Value>, applied: &Value) {
    if let Some(prev) = previously_applied {
        prune_dropped(target, prev, applied);
    }
    deep_merge(target, applied);
}

fn prune_dropped(target: &mut Value, prev: &Value, now: &Value) {
    let (Value::Object(t), Value::Object(p)) = (target, prev) else {
        return;
    };
    for (k, pv) in p {
        match now.get(k) {
            None => {
                t.remove(k);
            }
            Some(nv) if pv.is_object() && nv.is_object() => {
                if let Some(tv) = t.get_mut(k) {
                    prune_dropped(tv, pv, nv);
                }
            }
            Some(_) => {}
        }
    }
}

fn deep_merge(target: &mut Value, applied: &Value) {
    match (target, applied) {
        (Value::Object(t), Value::Object(a)) => {
            for (k, v) in a {
                match t.get_mut(k) {
                    Some(existing) if existing.is_object() && v.is_object() => {
                        deep_merge(existing, v)
                    }
                    _ => {
                        t.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (target, applied) => *target = applied.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge() {
        let mut doc = json!({"a": 1, "b": {"c": 2, "d": 3}, "l": [1, 2]});
        merge_patch(&mut doc, &json!({"a": null, "b": {"c": 5}, "l": [3]}));
        assert_eq!(doc, json!({"b": {"c": 5, "d": 3}, "l": [3]}));
    }

    #[test]
    fn json_ops() {
        let mut doc = json!({"a": {"b": [1, 2]}, "x/y": 1});
        json_patch(
            &mut doc,
            &json!([
                {"op": "add", "path": "/a/b/-", "value": 3},
                {"op": "add", "path": "/a/b/0", "value": 0},
                {"op": "replace", "path": "/x~1y", "value": 2},
                {"op": "test", "path": "/x~1y", "value": 2},
                {"op": "copy", "from": "/x~1y", "path": "/c"},
                {"op": "move", "from": "/c", "path": "/d"},
                {"op": "remove", "path": "/a/b/1"}
            ]),
        )
        .unwrap();
        assert_eq!(doc, json!({"a": {"b": [0, 2, 3]}, "x/y": 2, "d": 2}));
        let before = doc.clone();
        assert!(
            json_patch(
                &mut doc,
                &json!([{"op": "remove", "path": "/d"}, {"op": "test", "path": "/a", "value": 1}])
            )
            .is_err()
        );
        assert_eq!(doc, before, "a failed patch changes nothing");
    }

    #[test]
    fn apply_prunes_what_the_manager_dropped() {
        let mut doc = json!({"spec": {"a": 1, "b": 2, "other": 9}});
        let prev = json!({"spec": {"a": 1, "b": 2}});
        apply(&mut doc, Some(&prev), &json!({"spec": {"a": 5}}));
        assert_eq!(doc, json!({"spec": {"a": 5, "other": 9}}));
    }
}
