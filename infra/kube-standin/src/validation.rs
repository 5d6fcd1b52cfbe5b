//! Update rules of built-in types that a client can trip over: immutable fields.
//!
//! A subset of the API server's validation: see the README for what isn't checked.

use serde_json::{Value, json};

use crate::quantity::{self, Quantity};
use crate::registry::ResourceType;
use crate::status::{ApiError, ApiResult};

fn invalid(rt: &ResourceType, name: &str, field: &str, reason: &str, detail: String) -> ApiError {
    ApiError::invalid(&rt.kind, &rt.group, name, field, reason, &detail)
}

fn immutable(rt: &ResourceType, name: &str, field: &str, value: Option<&Value>) -> ApiError {
    let shown = value
        .map(Value::to_string)
        .unwrap_or_else(|| "null".to_string());
    invalid(
        rt,
        name,
        field,
        "FieldValueInvalid",
        format!("Invalid value: {shown}: field is immutable"),
    )
}

/// `value` without the listed top-level keys.
fn without(value: Option<&Value>, keys: &[&str]) -> Value {
    let mut v = value.cloned().unwrap_or_else(|| json!({}));
    if let Some(m) = v.as_object_mut() {
        for k in keys {
            m.remove(*k);
        }
    }
    v
}

/// A claim's spec is immutable, except:
/// - `resources.requests.storage`, and only while the claim is `Bound` (expansion);
/// - `volumeName`, once, while it is empty (the binder sets it);
/// - `volumeAttributesClassName`.
///
/// Quantities compare by value (`1Gi` == `1024Mi`). A bound claim may shrink only while it stays
/// above `status.capacity`: that is 1.33's rule, with `RecoverVolumeExpansionFailure` on by
/// default (beta since 1.32), and its message.
fn check_claim_update(rt: &ResourceType, name: &str, old: &Value, new: &Value) -> ApiResult<()> {
    let bound = old.pointer("/status/phase").and_then(Value::as_str) == Some("Bound");
    let old_requests = old.pointer("/spec/resources/requests");
    let new_requests = new.pointer("/spec/resources/requests");
    let old_storage = old_requests.and_then(|r| r.get("storage"));
    let new_storage = new_requests.and_then(|r| r.get("storage"));

    // The new requests as they are allowed to be compared: storage may differ on a bound claim.
    let mut comparable_requests = new_requests.cloned();
    if bound && let Some(reqs) = comparable_requests.as_mut().and_then(Value::as_object_mut) {
        match old_storage {
            Some(s) => reqs.insert("storage".into(), s.clone()),
            None => reqs.remove("storage"),
        };
    }
    let rest = |spec: Option<&Value>, keep_volume_name: bool| {
        let mut v = without(spec, &["volumeAttributesClassName", "resources"]);
        if !keep_volume_name && let Some(m) = v.as_object_mut() {
            m.remove("volumeName");
        }
        v
    };
    let old_volume_name = old
        .pointer("/spec/volumeName")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let other_resources =
        |v: &Value| without(v.pointer("/spec/resources"), &["requests", "limits"]);
    let spec_same = rest(old.get("spec"), !old_volume_name.is_empty())
        == rest(new.get("spec"), !old_volume_name.is_empty())
        && quantity::same_map(old_requests, comparable_requests.as_ref())
        && quantity::same_map(
            old.pointer("/spec/resources/limits"),
            new.pointer("/spec/resources/limits"),
        )
        && other_resources(old) == other_resources(new);
    if !spec_same {
        return Err(invalid(
            rt,
            name,
            "spec",
            "FieldValueForbidden",
            "Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims".to_string(),
        ));
    }
    let (Some(old_size), Some(new_size)) = (
        old_storage.and_then(Quantity::from_value),
        new_storage.and_then(Quantity::from_value),
    ) else {
        return Ok(());
    };
    let capacity = old
        .pointer("/status/capacity/storage")
        .and_then(Quantity::from_value)
        .unwrap_or(Quantity::ZERO);
    if new_size < old_size && new_size <= capacity {
        return Err(invalid(
            rt,
            name,
            "spec.resources.requests.storage",
            "FieldValueForbidden",
            "Forbidden: field can not be less than status.capacity".to_string(),
        ));
    }
    Ok(())
}

/// Checks an update of the main resource against the type's immutability rules.
pub fn check_update(rt: &ResourceType, name: &str, old: &Value, new: &Value) -> ApiResult<()> {
    let same = |ptr: &str| old.pointer(ptr) == new.pointer(ptr);
    match (rt.group.as_str(), rt.plural.as_str()) {
        ("apps", "deployments" | "replicasets" | "daemonsets") if !same("/spec/selector") => {
            return Err(immutable(
                rt,
                name,
                "spec.selector",
                new.pointer("/spec/selector"),
            ));
        }
        ("apps", "statefulsets") => {
            const MUTABLE: &[&str] = &[
                "replicas",
                "ordinals",
                "template",
                "updateStrategy",
                "revisionHistoryLimit",
                "persistentVolumeClaimRetentionPolicy",
                "minReadySeconds",
            ];
            if without(old.get("spec"), MUTABLE) != without(new.get("spec"), MUTABLE) {
                return Err(invalid(rt, name, "spec", "FieldValueForbidden", "Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden".to_string()));
            }
        }
        ("batch", "jobs") => {
            for (ptr, field) in [
                ("/spec/selector", "spec.selector"),
                ("/spec/template", "spec.template"),
                ("/spec/completions", "spec.completions"),
            ] {
                if !same(ptr) {
                    return Err(immutable(rt, name, field, new.pointer(ptr)));
                }
            }
        }
        ("", "pods") => {
            let strip = |v: &Value| {
                let mut spec = without(
                    v.get("spec"),
                    &[
                        "activeDeadlineSeconds",
                        "tolerations",
                        "terminationGracePeriodSeconds",
                    ],
                );
                for list in ["containers", "initContainers"] {
                    if let Some(cs) = spec.get_mut(list).and_then(Value::as_array_mut) {
                        for c in cs.iter_mut().filter_map(Value::as_object_mut) {
                            c.remove("image");
                        }
                    }
                }
                spec
            };
            if strip(old) != strip(new) {
                return Err(invalid(rt, name, "spec", "FieldValueForbidden", "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)".to_string()));
            }
        }
        ("", "configmaps" | "secrets") => {
            if old.get("immutable") == Some(&Value::Bool(true)) {
                if !same("/immutable") {
                    return Err(invalid(
                        rt,
                        name,
                        "immutable",
                        "FieldValueForbidden",
                        "Forbidden: field is immutable when `immutable` is set".to_string(),
                    ));
                }
                for field in ["data", "binaryData"] {
                    if old.get(field) != new.get(field) {
                        return Err(invalid(
                            rt,
                            name,
                            field,
                            "FieldValueForbidden",
                            "Forbidden: field is immutable when `immutable` is set".to_string(),
                        ));
                    }
                }
            }
            if rt.plural == "secrets" && !same("/type") {
                return Err(immutable(rt, name, "type", new.get("type")));
            }
        }
        ("", "services")
            if !same("/spec/clusterIP") && old.pointer("/spec/clusterIP").is_some() =>
        {
            return Err(immutable(
                rt,
                name,
                "spec.clusterIPs[0]",
                new.pointer("/spec/clusterIP"),
            ));
        }
        ("", "persistentvolumeclaims") => check_claim_update(rt, name, old, new)?,
        ("rbac.authorization.k8s.io", "rolebindings" | "clusterrolebindings")
            if !same("/roleRef") =>
        {
            return Err(invalid(
                rt,
                name,
                "roleRef",
                "FieldValueInvalid",
                "Invalid value: cannot change roleRef".to_string(),
            ));
        }
        _ => {}
    }
    Ok(())
}

/// Values the API server allocated that an update may leave out (they are kept, not cleared).
pub fn carry_allocated(rt: &ResourceType, old: &Value, new: &mut Value) {
    if rt.is("", "services")
        && let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut)
    {
        for field in ["clusterIP", "clusterIPs"] {
            if spec.get(field).is_none_or(|v| v.is_null() || v == "")
                && let Some(v) = old.pointer(&format!("/spec/{field}"))
            {
                spec.insert(field.to_string(), v.clone());
            }
        }
    }
}
