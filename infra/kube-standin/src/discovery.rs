//! Discovery documents: `/api`, `/apis`, `/apis/{group}`, `/{prefix}/{version}` and `/version`.

use serde_json::{Value, json};

use crate::registry::{Registry, ResourceType};

const VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

/// The Kubernetes version the stand-in claims to be.
pub const KUBE_MINOR: &str = "33";

pub fn version() -> Value {
    json!({
        "major": "1",
        "minor": KUBE_MINOR,
        "gitVersion": format!("v1.{KUBE_MINOR}.0-berth-standin"),
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2025-01-01T00:00:00Z",
        "goVersion": "go1.24.0",
        "compiler": "gc",
        "platform": "linux/amd64",
    })
}

pub fn core_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    })
}

fn group_json(group: &str, versions: &[String]) -> Value {
    let versions: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v}))
        .collect();
    let preferred = versions.first().cloned().unwrap_or(Value::Null);
    json!({"name": group, "versions": versions, "preferredVersion": preferred})
}

pub fn group_list(registry: &Registry) -> Value {
    let groups: Vec<Value> = registry
        .groups()
        .iter()
        .map(|(g, vs)| group_json(g, vs))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

pub fn group(registry: &Registry, group: &str) -> Option<Value> {
    let groups = registry.groups();
    let (_, versions) = groups.iter().find(|(g, _)| g == group)?;
    let mut doc = group_json(group, versions);
    doc["kind"] = json!("APIGroup");
    doc["apiVersion"] = json!("v1");
    Some(doc)
}

fn resource_entries(t: &ResourceType) -> Vec<Value> {
    let mut main = json!({
        "name": t.plural,
        "singularName": t.singular,
        "namespaced": t.namespaced,
        "kind": t.kind,
        "verbs": VERBS,
    });
    if !t.short_names.is_empty() {
        main["shortNames"] = json!(t.short_names);
    }
    if !t.categories.is_empty() {
        main["categories"] = json!(t.categories);
    }
    let mut out = vec![main];
    let sub = |name: &str, verbs: &[&str]| json!({"name": format!("{}/{name}", t.plural), "singularName": "", "namespaced": t.namespaced, "kind": t.kind, "verbs": verbs});
    if t.status_subresource {
        out.push(sub("status", &["get", "patch", "update"]));
    }
    if t.has_log() {
        out.push(sub("log", &["get"]));
    }
    if t.is("", "serviceaccounts") {
        let mut token = sub("token", &["create"]);
        token["kind"] = json!("TokenRequest");
        token["group"] = json!("authentication.k8s.io");
        token["version"] = json!("v1");
        out.push(token);
    }
    if t.has_scale() {
        let mut scale = sub("scale", &["get", "patch", "update"]);
        scale["kind"] = json!("Scale");
        scale["group"] = json!("autoscaling");
        scale["version"] = json!("v1");
        out.push(scale);
    }
    out
}

/// `APIResourceList` for a group version, or `None` when nothing is served there.
pub fn resource_list(registry: &Registry, group: &str, version: &str) -> Option<Value> {
    let types: Vec<&ResourceType> = registry.in_group_version(group, version).collect();
    if types.is_empty() {
        return None;
    }
    let resources: Vec<Value> = types.into_iter().flat_map(resource_entries).collect();
    let group_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Some(json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources,
    }))
}
