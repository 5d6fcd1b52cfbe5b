//! The API server's defaulting, for the fields clients most often read back. Applied to every
//! write of the main resource, as the real server does when it decodes an object.
//!
//! This is a subset: see the README for what isn't defaulted.

use serde_json::{Map, Value, json};

use crate::registry::ResourceType;

fn obj_mut<'a>(v: &'a mut Value, key: &str) -> Option<&'a mut Map<String, Value>> {
    v.get_mut(key).and_then(Value::as_object_mut)
}

fn set_default(map: &mut Map<String, Value>, key: &str, value: Value) {
    if map.get(key).is_none_or(Value::is_null) {
        map.insert(key.to_string(), value);
    }
}

/// Fills in defaults for an object of type `rt`.
pub fn apply(rt: &ResourceType, obj: &mut Value, services_allocated: u64) {
    match (rt.group.as_str(), rt.plural.as_str()) {
        ("", "pods") => {
            if let Some(spec) = obj_mut(obj, "spec") {
                pod_spec(spec);
                requests_from_limits(spec);
            }
        }
        ("", "limitranges") => {
            let items = obj
                .pointer_mut("/spec/limits")
                .and_then(Value::as_array_mut);
            for item in items.into_iter().flatten().filter_map(Value::as_object_mut) {
                limit_range_item(item);
            }
        }
        ("", "services") => {
            if let Some(spec) = obj_mut(obj, "spec") {
                service_spec(spec, services_allocated);
            }
        }
        ("", "secrets") => secret(obj),
        ("", "persistentvolumeclaims") => {
            if let Some(spec) = obj_mut(obj, "spec") {
                set_default(spec, "volumeMode", json!("Filesystem"));
            }
        }
        ("apps", "deployments") => {
            if let Some(spec) = obj_mut(obj, "spec") {
                set_default(spec, "replicas", json!(1));
                set_default(spec, "revisionHistoryLimit", json!(10));
                set_default(spec, "progressDeadlineSeconds", json!(600));
                set_default(
                    spec,
                    "strategy",
                    json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}),
                );
                template(spec);
            }
        }
        ("apps", "statefulsets") => {
            if let Some(spec) = obj_mut(obj, "spec") {
                set_default(spec, "replicas", json!(1));
                set_default(spec, "revisionHistoryLimit", json!(10));
                set_default(spec, "podManagementPolicy", json!("OrderedReady"));
                set_default(
                    spec,
                    "updateStrategy",
                    json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}),
                );
                template(spec);
            }
        }
        ("apps", "replicasets") | ("apps", "daemonsets") => {
            if let Some(spec) = obj_mut(obj, "spec") {
                if rt.plural == "replicasets" {
                    set_default(spec, "replicas", json!(1));
                } else {
                    set_default(spec, "revisionHistoryLimit", json!(10));
                }
                template(spec);
            }
        }
        ("batch", "jobs") => {
            if let Some(spec) = obj_mut(obj, "spec") {
                set_default(spec, "backoffLimit", json!(6));
                set_default(spec, "completions", json!(1));
                set_default(spec, "parallelism", json!(1));
                set_default(spec, "completionMode", json!("NonIndexed"));
                set_default(spec, "suspend", json!(false));
                template(spec);
            }
        }
        ("batch", "cronjobs") => {
            if let Some(spec) = obj_mut(obj, "spec") {
                set_default(spec, "concurrencyPolicy", json!("Allow"));
                set_default(spec, "suspend", json!(false));
                set_default(spec, "successfulJobsHistoryLimit", json!(3));
                set_default(spec, "failedJobsHistoryLimit", json!(1));
            }
        }
        _ => {}
    }
}

/// A Job's generated selector (unless `spec.manualSelector`), set on create once the uid is
/// known: the template gets the `job-name` and `controller-uid` labels (legacy and
/// `batch.kubernetes.io/` ones), and the selector matches the controller uid.
pub fn job_selector(job: &mut Value) {
    let name = crate::meta::name(job).to_string();
    let uid = crate::meta::uid(job).to_string();
    let Some(spec) = obj_mut(job, "spec") else {
        return;
    };
    if spec.get("manualSelector").and_then(Value::as_bool) == Some(true) {
        return;
    }
    let template = spec.entry("template").or_insert_with(|| json!({}));
    if let Some(t) = template.as_object_mut() {
        let meta = t.entry("metadata").or_insert_with(|| json!({}));
        if let Some(m) = meta.as_object_mut() {
            let labels = m.entry("labels").or_insert_with(|| json!({}));
            if let Some(l) = labels.as_object_mut() {
                for (k, v) in [
                    ("batch.kubernetes.io/controller-uid", &uid),
                    ("batch.kubernetes.io/job-name", &name),
                    ("controller-uid", &uid),
                    ("job-name", &name),
                ] {
                    set_default(l, k, json!(v));
                }
            }
        }
    }
    let selector = spec.entry("selector").or_insert_with(|| json!({}));
    if let Some(sel) = selector.as_object_mut() {
        let matches = sel.entry("matchLabels").or_insert_with(|| json!({}));
        if let Some(m) = matches.as_object_mut() {
            set_default(m, "batch.kubernetes.io/controller-uid", json!(uid));
        }
    }
}

/// Defaults the pod template under `spec.template.spec`.
fn template(spec: &mut Map<String, Value>) {
    if let Some(pod) = spec.get_mut("template").and_then(|t| obj_mut(t, "spec")) {
        pod_spec(pod);
    }
}

fn pod_spec(spec: &mut Map<String, Value>) {
    set_default(spec, "restartPolicy", json!("Always"));
    set_default(spec, "dnsPolicy", json!("ClusterFirst"));
    set_default(spec, "schedulerName", json!("default-scheduler"));
    set_default(spec, "terminationGracePeriodSeconds", json!(30));
    set_default(spec, "securityContext", json!({}));
    for list in ["containers", "initContainers"] {
        if let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) {
            for c in containers.iter_mut().filter_map(Value::as_object_mut) {
                container(c);
            }
        }
    }
}

/// A container that gives a limit but no request for a resource requests its
/// limit (`SetDefaults_Pod`: pods only, not pod templates).
fn requests_from_limits(spec: &mut Map<String, Value>) {
    for list in ["containers", "initContainers"] {
        let containers = spec.get_mut(list).and_then(Value::as_array_mut);
        for c in containers.into_iter().flatten() {
            let Some(limits) = c
                .pointer("/resources/limits")
                .and_then(Value::as_object)
                .cloned()
            else {
                continue;
            };
            let Some(resources) = obj_mut(c, "resources") else {
                continue;
            };
            let requests = resources.entry("requests").or_insert_with(|| json!({}));
            if let Some(requests) = requests.as_object_mut() {
                for (resource, limit) in limits {
                    requests.entry(resource).or_insert(limit);
                }
            }
        }
    }
}

/// A `Container` LimitRange item's defaults (`SetDefaults_LimitRangeItem`):
/// the default limit is the max, the default request the default limit, else
/// the min.
fn limit_range_item(item: &mut Map<String, Value>) {
    if item.get("type").and_then(Value::as_str) != Some("Container") {
        return;
    }
    let list = |item: &Map<String, Value>, field: &str| {
        item.get(field)
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    let mut default = list(item, "default");
    for (resource, max) in list(item, "max") {
        default.entry(resource).or_insert(max);
    }
    let mut default_request = list(item, "defaultRequest");
    for (resource, limit) in default.iter().chain(list(item, "min").iter()) {
        default_request
            .entry(resource.clone())
            .or_insert_with(|| limit.clone());
    }
    if !default.is_empty() {
        item.insert("default".into(), Value::Object(default));
    }
    if !default_request.is_empty() {
        item.insert("defaultRequest".into(), Value::Object(default_request));
    }
}

fn container(c: &mut Map<String, Value>) {
    let image = c.get("image").and_then(Value::as_str).unwrap_or_default();
    // `repo:tag` (a `:` after the last `/`) other than `latest`, or a digest, is pulled if missing.
    let last = image.rsplit('/').next().unwrap_or_default();
    let pinned =
        image.contains('@') || last.split_once(':').is_some_and(|(_, tag)| tag != "latest");
    set_default(
        c,
        "imagePullPolicy",
        json!(if pinned { "IfNotPresent" } else { "Always" }),
    );
    set_default(c, "terminationMessagePath", json!("/dev/termination-log"));
    set_default(c, "terminationMessagePolicy", json!("File"));
    set_default(c, "resources", json!({}));
    if let Some(ports) = c.get_mut("ports").and_then(Value::as_array_mut) {
        for p in ports.iter_mut().filter_map(Value::as_object_mut) {
            set_default(p, "protocol", json!("TCP"));
        }
    }
}

fn service_spec(spec: &mut Map<String, Value>, allocated: u64) {
    set_default(spec, "type", json!("ClusterIP"));
    set_default(spec, "sessionAffinity", json!("None"));
    let external_name = spec.get("type").and_then(Value::as_str) == Some("ExternalName");
    if !external_name {
        // A fake allocation from 10.96.0.0/12, unique per stand-in.
        let ip = format!("10.96.{}.{}", (allocated / 250) % 256, allocated % 250 + 2);
        set_default(spec, "clusterIP", json!(ip));
        let cluster_ip = spec.get("clusterIP").cloned().unwrap_or(Value::Null);
        set_default(spec, "clusterIPs", json!([cluster_ip]));
        set_default(spec, "ipFamilies", json!(["IPv4"]));
        set_default(spec, "ipFamilyPolicy", json!("SingleStack"));
        set_default(spec, "internalTrafficPolicy", json!("Cluster"));
    }
    if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
        for p in ports.iter_mut().filter_map(Value::as_object_mut) {
            set_default(p, "protocol", json!("TCP"));
            if let Some(port) = p.get("port").cloned() {
                set_default(p, "targetPort", port);
            }
        }
    }
}

/// `type` defaults to `Opaque`; `stringData` is folded into `data`, base64-encoded.
fn secret(obj: &mut Value) {
    let Some(map) = obj.as_object_mut() else {
        return;
    };
    set_default(map, "type", json!("Opaque"));
    let Some(Value::Object(string_data)) = map.remove("stringData") else {
        return;
    };
    let data = map.entry("data").or_insert_with(|| json!({}));
    if !data.is_object() {
        *data = json!({});
    }
    if let Some(data) = data.as_object_mut() {
        for (k, v) in string_data {
            let text = v
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| v.to_string());
            data.insert(k, json!(base64(text.as_bytes())));
        }
    }
}

fn base64(bytes: &[u8]) -> String {
    const TABLE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = (u32::from(chunk[0]) << 16)
            | (u32::from(*chunk.get(1).unwrap_or(&0)) << 8)
            | u32::from(*chunk.get(2).unwrap_or(&0));
        out.push(TABLE[(n >> 18) as usize & 63] as char);
        out.push(TABLE[(n >> 12) as usize & 63] as char);
        out.push(if chunk.len() > 1 {
            TABLE[(n >> 6) as usize & 63] as char
        } else {
            '='
        });
        out.push(if chunk.len() > 2 {
            TABLE[n as usize & 63] as char
        } else {
            '='
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_encodes() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"hunter2"), "aHVudGVyMg==");
    }

    #[test]
    fn image_pull_policy() {
        for (image, policy) in [
            ("nginx", "Always"),
            ("nginx:latest", "Always"),
            ("nginx:1.25", "IfNotPresent"),
            ("localhost:5000/app", "Always"),
            ("r/app@sha256:abc", "IfNotPresent"),
        ] {
            let mut c = json!({"image": image});
            container(c.as_object_mut().unwrap());
            assert_eq!(c["imagePullPolicy"], policy, "{image}");
        }
    }
}
