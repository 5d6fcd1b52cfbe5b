//! The `LimitRanger` admission plugin, for pods that are created, as
//! kubernetes/kubernetes `plugin/pkg/admission/limitranger/admission.go`
//! does it: first (mutating) every LimitRange of the namespace fills in the
//! `Container` defaults each container (and init container) leaves out —
//! `default` as its limits, `defaultRequest` as its requests — and notes them
//! in the `kubernetes.io/limit-ranger` annotation; then (validating) each
//! LimitRange's `Container` `min`, `max` and `maxLimitRequestRatio` are
//! checked on every container, the first LimitRange that refuses giving
//! `pods "NAME" is forbidden: ` and its errors (one, or `[a, b]`: an
//! apimachinery aggregate).
//!
//! A container giving only limits already requests them (pod defaulting, in
//! `defaults.rs`), and a LimitRange's own `default` and `defaultRequest` were
//! filled in from `max` and `min` when it was stored. `Pod` and
//! `PersistentVolumeClaim` items are not enforced.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::quantity::Written;

const ANNOTATION: &str = "kubernetes.io/limit-ranger";

fn container_items(limit_range: &Value) -> impl Iterator<Item = &Value> {
    limit_range
        .pointer("/spec/limits")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|item| item.get("type").and_then(Value::as_str) == Some("Container"))
}

fn resource_list(v: Option<&Value>) -> impl Iterator<Item = (&String, &Value)> {
    v.and_then(Value::as_object).into_iter().flatten()
}

/// The lists of containers the plugin looks at, with how its annotation
/// names each kind.
const CONTAINER_LISTS: [(&str, &str); 2] = [
    ("containers", "container"),
    ("initContainers", "init container"),
];

/// Fills in the defaults of every LimitRange, in order (a resource the
/// first one filled in is not filled in again).
pub fn default_pod(limit_ranges: &[Arc<Value>], pod: &mut Value) {
    for limit_range in limit_ranges {
        let mut requests = Map::new();
        let mut limits = Map::new();
        for item in container_items(limit_range) {
            for (resource, value) in resource_list(item.get("defaultRequest")) {
                requests.insert(resource.clone(), value.clone());
            }
            for (resource, value) in resource_list(item.get("default")) {
                limits.insert(resource.clone(), value.clone());
            }
        }
        let mut notes = Vec::new();
        for (list, kind) in CONTAINER_LISTS {
            let containers = pod
                .pointer_mut(&format!("/spec/{list}"))
                .and_then(Value::as_array_mut);
            for container in containers.into_iter().flatten() {
                let name = container
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                let set_limits = fill(container, "limits", &limits);
                let set_requests = fill(container, "requests", &requests);
                if !set_requests.is_empty() {
                    notes.push(format!(
                        "{} request for {kind} {name}",
                        set_requests.join(", ")
                    ));
                }
                if !set_limits.is_empty() {
                    notes.push(format!("{} limit for {kind} {name}", set_limits.join(", ")));
                }
            }
        }
        if !notes.is_empty()
            && let Some(meta) = pod.get_mut("metadata").and_then(Value::as_object_mut)
        {
            let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
            annotations[ANNOTATION] =
                json!(format!("LimitRanger plugin set: {}", notes.join("; ")));
        }
    }
}

/// Puts each of `defaults` the container's `resources.<field>` lacks there;
/// returns their names, sorted.
fn fill(container: &mut Value, field: &str, defaults: &Map<String, Value>) -> Vec<String> {
    if defaults.is_empty() || !container.is_object() {
        return Vec::new();
    }
    let resources = container
        .as_object_mut()
        .map(|c| c.entry("resources").or_insert_with(|| json!({})));
    let Some(list) = resources
        .and_then(Value::as_object_mut)
        .map(|r| r.entry(field).or_insert_with(|| json!({})))
        .and_then(Value::as_object_mut)
    else {
        return Vec::new();
    };
    let mut set = Vec::new();
    for (resource, value) in defaults {
        if !list.contains_key(resource) {
            list.insert(resource.clone(), value.clone());
            set.push(resource.clone());
        }
    }
    set.sort();
    set
}

/// The first LimitRange's refusal of `pod`, as the text after `is forbidden: `.
pub fn violations(limit_ranges: &[Arc<Value>], pod: &Value) -> Option<String> {
    limit_ranges.iter().find_map(|limit_range| {
        let mut errors: Vec<String> = Vec::new();
        for item in container_items(limit_range) {
            for (list, _) in CONTAINER_LISTS {
                let containers = pod
                    .pointer(&format!("/spec/{list}"))
                    .and_then(Value::as_array);
                for container in containers.into_iter().flatten() {
                    let requests = container.pointer("/resources/requests");
                    let limits = container.pointer("/resources/limits");
                    let constraints = [
                        ("min", min_constraint as Constraint),
                        ("max", max_constraint),
                        ("maxLimitRequestRatio", ratio_constraint),
                    ];
                    for (field, constraint) in constraints {
                        for (resource, enforced) in resource_list(item.get(field)) {
                            let Some(enforced) = Written::from_value(enforced) else {
                                continue;
                            };
                            let observed = Observed {
                                resource,
                                request: requests
                                    .and_then(|r| r.get(resource))
                                    .and_then(Written::from_value),
                                limit: limits
                                    .and_then(|l| l.get(resource))
                                    .and_then(Written::from_value),
                            };
                            if let Some(error) = constraint(&observed, enforced)
                                && !errors.contains(&error)
                            {
                                errors.push(error);
                            }
                        }
                    }
                }
            }
        }
        match errors.len() {
            0 => None,
            1 => errors.pop(),
            _ => Some(format!("[{}]", errors.join(", "))),
        }
    })
}

/// One container's request and limit of one resource.
struct Observed<'a> {
    resource: &'a str,
    request: Option<Written>,
    limit: Option<Written>,
}

type Constraint = fn(&Observed<'_>, Written) -> Option<String>;

fn min_constraint(o: &Observed<'_>, min: Written) -> Option<String> {
    let resource = o.resource;
    let Some(request) = o.request else {
        return Some(format!(
            "minimum {resource} usage per Container is {min}.  No request is specified."
        ));
    };
    if request.value < min.value {
        return Some(format!(
            "minimum {resource} usage per Container is {min}, but request is {request}."
        ));
    }
    match o.limit {
        Some(limit) if limit.value < min.value => Some(format!(
            "minimum {resource} usage per Container is {min}, but limit is {limit}."
        )),
        _ => None,
    }
}

fn max_constraint(o: &Observed<'_>, max: Written) -> Option<String> {
    let resource = o.resource;
    let Some(limit) = o.limit else {
        return Some(format!(
            "maximum {resource} usage per Container is {max}.  No limit is specified."
        ));
    };
    if limit.value > max.value {
        return Some(format!(
            "maximum {resource} usage per Container is {max}, but limit is {limit}."
        ));
    }
    match o.request {
        Some(request) if request.value > max.value => Some(format!(
            "maximum {resource} usage per Container is {max}, but request is {request}."
        )),
        _ => None,
    }
}

fn ratio_constraint(o: &Observed<'_>, enforced: Written) -> Option<String> {
    let resource = o.resource;
    let request = o.request.filter(|r| !r.value.is_zero());
    let limit = o.limit.filter(|l| !l.value.is_zero());
    let (Some(request), Some(limit)) = (request, limit) else {
        let missing = if request.is_none() {
            "request"
        } else {
            "limit"
        };
        return Some(format!(
            "{resource} max limit to request ratio per Container is {enforced}, but no {missing} is specified or {missing} is 0."
        ));
    };
    let ratio = limit.value.ratio(request.value)?;
    (ratio > enforced.value.as_f64()).then(|| {
        format!(
            "{resource} max limit to request ratio per Container is {enforced}, but provided ratio is {ratio:.6}."
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limit_range(item: Value) -> Vec<Arc<Value>> {
        let mut item = item;
        item["type"] = json!("Container");
        vec![Arc::new(json!({"spec": {"limits": [item]}}))]
    }

    #[test]
    fn defaults_fill_only_what_is_missing_and_are_noted() {
        let ranges = limit_range(json!({
            "default": {"cpu": "500m", "memory": "512Mi"},
            "defaultRequest": {"cpu": "100m", "memory": "128Mi"},
        }));
        let mut pod = json!({"metadata": {"name": "p"}, "spec": {
            "initContainers": [{"name": "init"}],
            "containers": [{"name": "web", "resources": {"limits": {"cpu": "1"}, "requests": {"cpu": "1"}}}],
        }});
        default_pod(&ranges, &mut pod);
        assert_eq!(
            pod.pointer("/spec/containers/0/resources").unwrap(),
            &json!({"limits": {"cpu": "1", "memory": "512Mi"}, "requests": {"cpu": "1", "memory": "128Mi"}})
        );
        assert_eq!(
            pod.pointer("/spec/initContainers/0/resources").unwrap(),
            &json!({"limits": {"cpu": "500m", "memory": "512Mi"}, "requests": {"cpu": "100m", "memory": "128Mi"}})
        );
        assert_eq!(
            pod.pointer("/metadata/annotations/kubernetes.io~1limit-ranger")
                .unwrap(),
            "LimitRanger plugin set: memory request for container web; memory limit for container web; \
             cpu, memory request for init container init; cpu, memory limit for init container init"
        );
    }

    #[test]
    fn min_max_and_ratio_refuse_in_the_plugins_words() {
        let ranges = limit_range(json!({
            "min": {"cpu": "100m"},
            "max": {"memory": "1Gi"},
            "maxLimitRequestRatio": {"memory": "2"},
        }));
        let pod = |resources: Value| json!({"spec": {"containers": [{"name": "a", "resources": resources}]}});
        assert_eq!(
            violations(
                &ranges,
                &pod(
                    json!({"requests": {"cpu": "200m", "memory": "512Mi"}, "limits": {"memory": "1Gi"}})
                )
            ),
            None
        );
        assert_eq!(
            violations(&ranges, &pod(json!({"requests": {"cpu": "50m", "memory": "1Gi"}, "limits": {"memory": "1Gi"}})))
                .unwrap(),
            "minimum cpu usage per Container is 100m, but request is 50m."
        );
        assert_eq!(
            violations(&ranges, &pod(json!({"requests": {"cpu": "0.1", "memory": "256Mi"}, "limits": {"memory": "2048Mi"}})))
                .unwrap(),
            "[maximum memory usage per Container is 1Gi, but limit is 2Gi., \
             memory max limit to request ratio per Container is 2, but provided ratio is 8.000000.]"
        );
        assert_eq!(
            violations(&ranges, &pod(json!({"requests": {"cpu": "1"}}))).unwrap(),
            "[maximum memory usage per Container is 1Gi.  No limit is specified., \
             memory max limit to request ratio per Container is 2, but no request is specified or request is 0.]"
        );
    }
}
