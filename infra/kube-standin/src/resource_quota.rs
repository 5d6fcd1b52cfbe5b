//! The `ResourceQuota` admission plugin, for pods that are created, as
//! kubernetes/kubernetes's `apiserver/pkg/admission/plugin/resourcequota`
//! (`controller.go`, `CheckRequest`) and the pod evaluator
//! (`pkg/quota/v1/evaluator/core/pods.go`) do it:
//!
//! - a quota concerns the pod when its `hard` names a pod resource (`pods`,
//!   `count/pods`, `cpu`, `memory`, `ephemeral-storage` and their
//!   `requests.`/`limits.` forms) and its scopes (`Terminating`,
//!   `NotTerminating`, `BestEffort`, `NotBestEffort`, `PriorityClass`,
//!   `CrossNamespacePodAffinity`, as `scopes` or `scopeSelector`) match;
//! - a quota on `cpu`, `memory` or their `requests.`/`limits.` forms needs
//!   every container and init container to state it: `failed quota: NAME:
//!   must specify limits.cpu for: a,b; requests.memory for: a`;
//! - the pod's usage (its requests and limits summed over containers, an init
//!   container counting when it asks for more; `pods` and `count/pods` 1)
//!   added to what the namespace's other pods use (terminal ones count for
//!   `count/pods` only) may not pass `hard`: `exceeded quota: NAME,
//!   requested: pods=1, used: pods=2, limited: pods=2`, each list sorted,
//!   quantities printed as the API server prints them.
//!
//! The real plugin reads `status.hard` and `status.used`, which the quota
//! controller keeps; the stand-in has no such controller and counts from the
//! namespace's pods at once (so never answers "status unknown for quota").

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::Value;

use crate::quantity::{Quantity, Written};

type Usage = BTreeMap<String, Written>;

/// The quota resources a pod uses (`podResources`).
const POD_RESOURCES: [&str; 11] = [
    "count/pods",
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
];

/// The resources every container must state when a quota limits them
/// (`validationSet`).
const MUST_SPECIFY: [&str; 6] = [
    "cpu",
    "memory",
    "requests.cpu",
    "requests.memory",
    "limits.cpu",
    "limits.memory",
];

/// Why `pod` may not be created beside `others` (the namespace's pods) under
/// `quotas`: the text after `is forbidden: `, or `None` when it may.
pub fn violation(quotas: &[Arc<Value>], others: &[Arc<Value>], pod: &Value) -> Option<String> {
    let mut concerned = Vec::new();
    for quota in quotas {
        let hard = hard(quota);
        let limited: BTreeSet<&str> = hard
            .keys()
            .map(String::as_str)
            .filter(|r| POD_RESOURCES.contains(r))
            .collect();
        if limited.is_empty() || !scopes_match(quota, pod) {
            continue;
        }
        if let Some(missing) = unstated(&limited, pod) {
            return Some(format!(
                "failed quota: {}: must specify {missing}",
                crate::meta::name(quota)
            ));
        }
        concerned.push((quota, hard));
    }
    let usage = usage(pod);
    for (quota, hard) in concerned {
        let requested: Usage = usage
            .iter()
            .filter(|(r, q)| !q.value.is_zero() && hard.contains_key(*r))
            .map(|(r, q)| (r.clone(), *q))
            .collect();
        if requested.is_empty() {
            continue;
        }
        let mut used: Usage = requested
            .keys()
            .map(|r| (r.clone(), Written::ZERO))
            .collect();
        for other in others.iter().filter(|other| scopes_match(quota, other)) {
            for (resource, amount) in usage_of(other) {
                if let Some(total) = used.get_mut(&resource) {
                    *total = total.plus(amount);
                }
            }
        }
        let exceeded: Vec<&String> = requested
            .iter()
            .filter(|(r, q)| used[*r].value + q.value > hard[*r].value)
            .map(|(r, _)| r)
            .collect();
        if exceeded.is_empty() {
            continue;
        }
        let print = |list: &Usage| {
            exceeded
                .iter()
                .map(|r| format!("{r}={}", list[*r]))
                .collect::<Vec<_>>()
                .join(",")
        };
        return Some(format!(
            "exceeded quota: {}, requested: {}, used: {}, limited: {}",
            crate::meta::name(quota),
            print(&requested),
            print(&used),
            print(&hard)
        ));
    }
    None
}

fn hard(quota: &Value) -> Usage {
    quota
        .pointer("/spec/hard")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(r, q)| Some((r.clone(), Written::from_value(q)?)))
        .collect()
}

fn containers<'a>(pod: &'a Value, list: &str) -> impl Iterator<Item = &'a Value> {
    pod.pointer(&format!("/spec/{list}"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

fn resources(container: &Value, field: &str) -> Usage {
    container
        .pointer(&format!("/resources/{field}"))
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(r, q)| Some((r.clone(), Written::from_value(q)?)))
        .collect()
}

/// The quota resources one container's (or a pod's summed) requests and
/// limits stand for (`podComputeUsageHelper`).
fn compute_usage(requests: &Usage, limits: &Usage) -> Usage {
    let mut usage = Usage::new();
    usage.insert("pods".into(), one());
    for resource in ["cpu", "memory", "ephemeral-storage"] {
        if let Some(request) = requests.get(resource) {
            usage.insert(resource.into(), *request);
            usage.insert(format!("requests.{resource}"), *request);
        }
        if let Some(limit) = limits.get(resource) {
            usage.insert(format!("limits.{resource}"), *limit);
        }
    }
    usage
}

fn one() -> Written {
    Written::from_value(&Value::from("1")).unwrap_or(Written::ZERO)
}

/// `must specify` text for the resources some container leaves out, if any.
fn unstated(limited: &BTreeSet<&str>, pod: &Value) -> Option<String> {
    let required: Vec<&str> = limited
        .iter()
        .copied()
        .filter(|r| MUST_SPECIFY.contains(r))
        .collect();
    let mut missing: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for container in containers(pod, "containers").chain(containers(pod, "initContainers")) {
        let stated = compute_usage(
            &resources(container, "requests"),
            &resources(container, "limits"),
        );
        for resource in required.iter().filter(|r| !stated.contains_key(**r)) {
            let name = container
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            missing
                .entry(resource)
                .or_default()
                .insert(name.to_string());
        }
    }
    (!missing.is_empty()).then(|| {
        missing
            .iter()
            .map(|(resource, names)| {
                format!(
                    "{resource} for: {}",
                    names.iter().cloned().collect::<Vec<_>>().join(",")
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    })
}

/// What a pod counts against quota (`PodUsageFunc`): `count/pods` always;
/// the rest only while it is not `Succeeded` or `Failed`.
fn usage_of(pod: &Value) -> Usage {
    let phase = pod.pointer("/status/phase").and_then(Value::as_str);
    if matches!(phase, Some("Succeeded" | "Failed")) {
        return Usage::from([("count/pods".to_string(), one())]);
    }
    usage(pod)
}

fn usage(pod: &Value) -> Usage {
    let mut usage = compute_usage(&pod_total(pod, "requests"), &pod_total(pod, "limits"));
    usage.insert("count/pods".into(), one());
    usage
}

/// A pod's requests (or limits) as the scheduler sums them
/// (`resourcehelper.PodRequests`): the containers' and sidecars' added up,
/// raised to what any init container needs while it runs (with the sidecars
/// started before it), plus the pod's `overhead`.
fn pod_total(pod: &Value, field: &str) -> Usage {
    let mut total = Usage::new();
    for container in containers(pod, "containers") {
        add(&mut total, &resources(container, field));
    }
    let mut sidecars = Usage::new();
    let mut init_peak = Usage::new();
    for container in containers(pod, "initContainers") {
        let own = resources(container, field);
        let while_running =
            if container.get("restartPolicy").and_then(Value::as_str) == Some("Always") {
                add(&mut total, &own);
                add(&mut sidecars, &own);
                sidecars.clone()
            } else {
                let mut with_sidecars = own;
                add(&mut with_sidecars, &sidecars);
                with_sidecars
            };
        raise(&mut init_peak, &while_running);
    }
    raise(&mut total, &init_peak);
    if let Some(overhead) = pod.pointer("/spec/overhead").and_then(Value::as_object) {
        let overhead: Usage = overhead
            .iter()
            .filter_map(|(r, q)| Some((r.clone(), Written::from_value(q)?)))
            .collect();
        add(&mut total, &overhead);
    }
    total
}

fn add(total: &mut Usage, more: &Usage) {
    for (resource, amount) in more {
        let sum = total.get(resource).map_or(*amount, |t| t.plus(*amount));
        total.insert(resource.clone(), sum);
    }
}

fn raise(total: &mut Usage, other: &Usage) {
    for (resource, amount) in other {
        if total.get(resource).is_none_or(|t| amount.value > t.value) {
            total.insert(resource.clone(), *amount);
        }
    }
}

/// Whether every scope of the quota (`spec.scopes`, each `Exists`, and
/// `spec.scopeSelector.matchExpressions`) matches the pod.
fn scopes_match(quota: &Value, pod: &Value) -> bool {
    let listed = quota
        .pointer("/spec/scopes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|scope| (scope.as_str().unwrap_or_default(), "Exists", Vec::new()));
    let selected = quota
        .pointer("/spec/scopeSelector/matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|e| {
            (
                e.get("scopeName")
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
                e.get("operator")
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
                crate::meta::strings(e.get("values")),
            )
        });
    listed
        .chain(selected)
        .all(|(scope, operator, values)| scope_matches(scope, operator, &values, pod))
}

fn scope_matches(scope: &str, operator: &str, values: &[String], pod: &Value) -> bool {
    let spec = pod.get("spec").unwrap_or(&Value::Null);
    let terminating = spec
        .get("activeDeadlineSeconds")
        .and_then(Value::as_i64)
        .is_some_and(|s| s >= 0);
    match scope {
        "Terminating" => terminating,
        "NotTerminating" => !terminating,
        "BestEffort" => best_effort(pod),
        "NotBestEffort" => !best_effort(pod),
        "PriorityClass" => {
            let class = spec
                .get("priorityClassName")
                .and_then(Value::as_str)
                .unwrap_or_default();
            match operator {
                "Exists" => !class.is_empty(),
                "DoesNotExist" => class.is_empty(),
                "In" => !class.is_empty() && values.iter().any(|v| v == class),
                "NotIn" => class.is_empty() || !values.iter().any(|v| v == class),
                _ => false,
            }
        }
        "CrossNamespacePodAffinity" => ["podAffinity", "podAntiAffinity"].iter().any(|kind| {
            let affinity = spec.pointer(&format!("/affinity/{kind}"));
            let required = affinity
                .and_then(|a| a.get("requiredDuringSchedulingIgnoredDuringExecution"))
                .and_then(Value::as_array)
                .into_iter()
                .flatten();
            let preferred = affinity
                .and_then(|a| a.get("preferredDuringSchedulingIgnoredDuringExecution"))
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|w| w.get("podAffinityTerm"));
            required.chain(preferred).any(|term| {
                term.get("namespaces")
                    .and_then(Value::as_array)
                    .is_some_and(|n| !n.is_empty())
                    || term.get("namespaceSelector").is_some_and(|s| !s.is_null())
            })
        }),
        _ => false,
    }
}

/// No container asks for or is limited to any CPU or memory (`GetPodQOS`).
fn best_effort(pod: &Value) -> bool {
    containers(pod, "containers")
        .chain(containers(pod, "initContainers"))
        .all(|c| {
            ["requests", "limits"].iter().all(|field| {
                let list = resources(c, field);
                ["cpu", "memory"]
                    .iter()
                    .all(|r| list.get(*r).is_none_or(|q| q.value <= Quantity::ZERO))
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn quota(name: &str, hard: Value) -> Arc<Value> {
        Arc::new(json!({"metadata": {"name": name}, "spec": {"hard": hard}}))
    }

    fn pod(cpu: &str, memory: &str) -> Value {
        json!({"spec": {"containers": [{"name": "a", "resources": {
            "requests": {"cpu": cpu, "memory": memory},
            "limits": {"cpu": cpu, "memory": memory},
        }}]}})
    }

    #[test]
    fn sums_the_namespace_and_refuses_past_hard() {
        let quotas = [quota(
            "compute",
            json!({"pods": "3", "requests.cpu": "1", "limits.memory": "1Gi", "cpu": "1"}),
        )];
        let others = [
            Arc::new(pod("500m", "512Mi")),
            Arc::new(pod("250m", "256Mi")),
        ];
        assert_eq!(violation(&quotas, &others, &pod("250m", "256Mi")), None);
        assert_eq!(
            violation(&quotas, &others, &pod("500m", "512Mi")).unwrap(),
            "exceeded quota: compute, requested: cpu=500m,limits.memory=512Mi,requests.cpu=500m, \
             used: cpu=750m,limits.memory=768Mi,requests.cpu=750m, limited: cpu=1,limits.memory=1Gi,requests.cpu=1"
        );
    }

    #[test]
    fn terminal_pods_only_count_as_objects() {
        let quotas = [quota("count", json!({"pods": "1", "count/pods": "2"}))];
        let mut done = pod("1", "1Gi");
        done["status"] = json!({"phase": "Succeeded"});
        assert_eq!(
            violation(&quotas, &[Arc::new(done.clone())], &pod("1", "1Gi")),
            None
        );
        assert_eq!(
            violation(
                &quotas,
                &[Arc::new(done.clone()), Arc::new(done)],
                &pod("1", "1Gi")
            )
            .unwrap(),
            "exceeded quota: count, requested: count/pods=1, used: count/pods=2, limited: count/pods=2"
        );
    }

    #[test]
    fn every_container_must_state_what_is_limited() {
        let quotas = [quota(
            "compute",
            json!({"limits.cpu": "4", "requests.memory": "4Gi", "pods": "10"}),
        )];
        let pod = json!({"spec": {
            "initContainers": [{"name": "init", "resources": {"limits": {"cpu": "1"}}}],
            "containers": [
                {"name": "b", "resources": {}},
                {"name": "a", "resources": {"requests": {"memory": "1Gi"}}},
            ],
        }});
        assert_eq!(
            violation(&quotas, &[], &pod).unwrap(),
            "failed quota: compute: must specify limits.cpu for: a,b; requests.memory for: b,init"
        );
    }

    #[test]
    fn init_containers_count_at_their_peak_and_scopes_select() {
        let pod = json!({"spec": {
            "initContainers": [{"name": "init", "resources": {"requests": {"cpu": "2"}}}],
            "containers": [{"name": "a", "resources": {"requests": {"cpu": "500m"}}}, {"name": "b", "resources": {"requests": {"cpu": "500m"}}}],
        }});
        assert_eq!(pod_total(&pod, "requests")["cpu"].to_string(), "2");
        let scoped = Arc::new(
            json!({"metadata": {"name": "long"}, "spec": {"hard": {"pods": "0"}, "scopes": ["Terminating"]}}),
        );
        assert_eq!(violation(&[scoped], &[], &pod), None);
    }
}
