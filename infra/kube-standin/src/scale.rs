//! The `scale` subresource of Deployments, StatefulSets and ReplicaSets: an `autoscaling/v1`
//! `Scale` view of `spec.replicas`.

use serde_json::{Value, json};

use crate::meta;
use crate::patch::{self, PatchType};
use crate::registry::ResourceType;
use crate::status::{ApiError, ApiResult};
use crate::verbs::{State, Subresource, WriteOptions};

/// A label selector object rendered the way `Scale.status.selector` shows it.
fn selector_string(selector: Option<&Value>) -> String {
    let Some(selector) = selector else {
        return String::new();
    };
    let mut parts = Vec::new();
    if let Some(labels) = selector.get("matchLabels").and_then(Value::as_object) {
        for (k, v) in labels {
            parts.push(format!("{k}={}", v.as_str().unwrap_or_default()));
        }
    }
    for expr in selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let key = expr.get("key").and_then(Value::as_str).unwrap_or_default();
        let values: Vec<&str> = expr
            .get("values")
            .and_then(Value::as_array)
            .map(|vs| vs.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        match expr.get("operator").and_then(Value::as_str) {
            Some("In") => parts.push(format!("{key} in ({})", values.join(","))),
            Some("NotIn") => parts.push(format!("{key} notin ({})", values.join(","))),
            Some("Exists") => parts.push(key.to_string()),
            Some("DoesNotExist") => parts.push(format!("!{key}")),
            _ => {}
        }
    }
    parts.join(",")
}

/// The `Scale` of a workload.
pub fn scale_of(obj: &Value) -> Value {
    let mut metadata = serde_json::Map::new();
    for field in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(v) = meta::metadata(obj).and_then(|m| m.get(field)) {
            metadata.insert(field.to_string(), v.clone());
        }
    }
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": metadata,
        "spec": {"replicas": obj.pointer("/spec/replicas").cloned().unwrap_or(json!(1))},
        "status": {
            "replicas": obj.pointer("/status/replicas").cloned().unwrap_or(json!(0)),
            "selector": selector_string(obj.pointer("/spec/selector")),
        },
    })
}

impl State {
    pub fn get_scale(
        &self,
        rt: &ResourceType,
        namespace: Option<&str>,
        name: &str,
    ) -> ApiResult<Value> {
        let (_, object) = self.existing(rt, namespace, name)?;
        Ok(scale_of(&object))
    }

    /// Replaces the `Scale`: sets `spec.replicas` of the workload.
    pub fn replace_scale(
        &mut self,
        rt: &ResourceType,
        version: &str,
        namespace: Option<&str>,
        name: &str,
        scale: &Value,
        opts: &WriteOptions,
    ) -> ApiResult<Value> {
        let (_, old) = self.existing(rt, namespace, name)?;
        let rv = meta::resource_version(scale);
        if !rv.is_empty() && rv != meta::resource_version(&old) {
            return Err(ApiError::conflict(&rt.plural, &rt.group, name));
        }
        let replicas = scale
            .pointer("/spec/replicas")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        if replicas < 0 {
            return Err(ApiError::invalid(
                "Scale",
                "autoscaling",
                name,
                "spec.replicas",
                "FieldValueInvalid",
                &format!("Invalid value: {replicas}: must be greater than or equal to 0"),
            ));
        }
        let mut candidate = (*old).clone();
        match candidate.get_mut("spec").and_then(Value::as_object_mut) {
            Some(spec) => {
                spec.insert("replicas".into(), json!(replicas));
            }
            None => candidate["spec"] = json!({"replicas": replicas}),
        }
        let updated = self.replace(
            rt,
            version,
            namespace,
            name,
            candidate,
            Subresource::Main,
            opts,
        )?;
        Ok(scale_of(&updated))
    }

    /// Patches the `Scale` (apply patches are merged like merge patches).
    #[allow(clippy::too_many_arguments)]
    pub fn patch_scale(
        &mut self,
        rt: &ResourceType,
        version: &str,
        namespace: Option<&str>,
        name: &str,
        patch_type: PatchType,
        body: &Value,
        opts: &WriteOptions,
    ) -> ApiResult<Value> {
        let mut scale = self.get_scale(rt, namespace, name)?;
        match patch_type {
            PatchType::Json => patch::json_patch(&mut scale, body).map_err(|e| {
                ApiError::invalid(
                    "Scale",
                    "autoscaling",
                    name,
                    "",
                    "FieldValueInvalid",
                    &format!("the JSON patch could not be applied: {e}"),
                )
            })?,
            _ => patch::merge_patch(&mut scale, body),
        }
        self.replace_scale(rt, version, namespace, name, &scale, opts)
    }
}
