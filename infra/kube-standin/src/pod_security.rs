//! Pod Security Admission in enforce mode, as the `PodSecurity` admission
//! plugin of a 1.33 kube-apiserver applies it to a pod that is created: the
//! namespace's `pod-security.kubernetes.io/enforce` label picks the level
//! (`privileged`, `baseline`, `restricted`; no label is `privileged`, a value
//! that is none of them is `restricted`, as `api.PolicyToEvaluate` parses it);
//! the version label is ignored (`latest` is the server's own, 1.33).
//!
//! The checks and their wording are those of kubernetes/pod-security-admission
//! (`policy/check_*.go`, read at 8f84a87), at the versions a 1.33 server runs:
//! baseline's checks in the order of their ids, then restricted's, the
//! baseline checks that restricted ones override left out
//! (`policy/registry.go`); `seLinuxOptions` 1.31, `sysctls` 1.32, no
//! `hostProbesAndHostLifecycle` (1.34) and no user-namespace relaxations
//! (1.35). A refusal is `pods "NAME" is forbidden: violates PodSecurity
//! "LEVEL:latest": REASON (DETAIL), ...` (`admission/admission.go`,
//! `policy/checks.go` `ForbiddenDetail`).

use std::collections::BTreeSet;

use serde_json::Value;

pub const ENFORCE_LABEL: &str = "pod-security.kubernetes.io/enforce";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Privileged,
    Baseline,
    Restricted,
}

impl Level {
    /// The level a namespace enforces, from its labels.
    pub fn enforced_by(namespace: &Value) -> Level {
        match namespace
            .pointer("/metadata/labels")
            .and_then(|labels| labels.get(ENFORCE_LABEL))
            .and_then(Value::as_str)
        {
            None | Some("privileged") => Level::Privileged,
            Some("baseline") => Level::Baseline,
            // An invalid level fails closed (`ParseLevel` returns restricted).
            Some(_) => Level::Restricted,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Level::Privileged => "privileged",
            Level::Baseline => "baseline",
            Level::Restricted => "restricted",
        }
    }
}

/// One check's refusal: its reason and, where there is one, its detail.
struct Violation {
    reason: String,
    detail: String,
}

type Check = fn(&Pod<'_>) -> Option<Violation>;

/// Baseline's checks, in the order of their ids (byte order, as
/// `slices.Sort` orders them).
const BASELINE: [(&str, Check); 11] = [
    ("appArmorProfile", app_armor_profile),
    ("capabilities_baseline", capabilities_baseline),
    ("hostNamespaces", host_namespaces),
    ("hostPathVolumes", host_path_volumes),
    ("hostPorts", host_ports),
    ("privileged", privileged),
    ("procMount", proc_mount),
    ("seLinuxOptions", se_linux_options),
    ("seccompProfile_baseline", seccomp_baseline),
    ("sysctls", sysctls),
    ("windowsHostProcess", windows_host_process),
];

/// Restricted's own checks, in the order of their ids.
const RESTRICTED: [(&str, Check); 6] = [
    ("allowPrivilegeEscalation", allow_privilege_escalation),
    ("capabilities_restricted", capabilities_restricted),
    ("restrictedVolumes", restricted_volumes),
    ("runAsNonRoot", run_as_non_root),
    ("runAsUser", run_as_user),
    ("seccompProfile_restricted", seccomp_restricted),
];

/// The baseline checks a restricted one replaces.
const OVERRIDDEN: [&str; 3] = [
    "capabilities_baseline",
    "hostPathVolumes",
    "seccompProfile_baseline",
];

/// Why `pod` may not be created under `level`: the text after `is forbidden: `,
/// or `None` when it may.
pub fn violations(level: Level, pod: &Value) -> Option<String> {
    let checks: Vec<Check> = match level {
        Level::Privileged => return None,
        Level::Baseline => BASELINE.iter().map(|(_, check)| *check).collect(),
        Level::Restricted => BASELINE
            .iter()
            .filter(|(id, _)| !OVERRIDDEN.contains(id))
            .chain(RESTRICTED.iter())
            .map(|(_, check)| *check)
            .collect(),
    };
    let pod = Pod::new(pod);
    let found: Vec<String> = checks
        .iter()
        .filter_map(|check| check(&pod))
        .map(|v| {
            if v.detail.is_empty() {
                v.reason
            } else {
                format!("{} ({})", v.reason, v.detail)
            }
        })
        .collect();
    (!found.is_empty()).then(|| {
        format!(
            "violates PodSecurity \"{}:latest\": {}",
            level.as_str(),
            found.join(", ")
        )
    })
}

/// The parts of a pod the checks read.
struct Pod<'a> {
    annotations: Option<&'a serde_json::Map<String, Value>>,
    spec: &'a Value,
    /// Init containers, containers, ephemeral containers, in that order
    /// (`policy/visitor.go`).
    containers: Vec<&'a Value>,
}

impl<'a> Pod<'a> {
    fn new(pod: &'a Value) -> Pod<'a> {
        let spec = pod.get("spec").unwrap_or(&Value::Null);
        let containers = ["initContainers", "containers", "ephemeralContainers"]
            .iter()
            .filter_map(|list| spec.get(list).and_then(Value::as_array))
            .flatten()
            .collect();
        Pod {
            annotations: pod
                .pointer("/metadata/annotations")
                .and_then(Value::as_object),
            spec,
            containers,
        }
    }

    fn pod_context(&self, path: &str) -> Option<&'a Value> {
        self.spec
            .get("securityContext")
            .and_then(|sc| sc.pointer(path))
            .filter(|v| !v.is_null())
    }

    fn is_windows(&self) -> bool {
        self.spec.pointer("/os/name").and_then(Value::as_str) == Some("windows")
    }

    /// The names of the containers for which `bad` holds.
    fn containers_where(&self, mut bad: impl FnMut(&Value) -> bool) -> Vec<String> {
        self.containers
            .iter()
            .filter(|c| bad(c))
            .map(|c| name(c))
            .collect()
    }
}

fn name(container: &Value) -> String {
    container
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// A field of a container's `securityContext`, if it is set.
fn context<'a>(container: &'a Value, path: &str) -> Option<&'a Value> {
    container
        .get("securityContext")
        .and_then(|sc| sc.pointer(path))
        .filter(|v| !v.is_null())
}

fn is_true(v: Option<&Value>) -> bool {
    v.and_then(Value::as_bool) == Some(true)
}

fn text(v: Option<&Value>) -> &str {
    v.and_then(Value::as_str).unwrap_or_default()
}

fn join_quote<S: AsRef<str>>(items: impl IntoIterator<Item = S>) -> String {
    let quoted: Vec<String> = items
        .into_iter()
        .map(|s| format!("\"{}\"", s.as_ref()))
        .collect();
    quoted.join(", ")
}

fn pluralize<'s>(singular: &'s str, plural: &'s str, count: usize) -> &'s str {
    if count == 1 { singular } else { plural }
}

/// `container "a"` or `containers "a", "b"`.
fn containers_phrase(names: &[String]) -> String {
    format!(
        "{} {}",
        pluralize("container", "containers", names.len()),
        join_quote(names)
    )
}

fn violation(reason: impl Into<String>, detail: impl Into<String>) -> Option<Violation> {
    Some(Violation {
        reason: reason.into(),
        detail: detail.into(),
    })
}

/// `setters` is `pod`, `containers "a"`, ...: who set a bad value.
fn setters(pod_is_bad: bool, containers: &[String]) -> Vec<String> {
    let mut setters = Vec::new();
    if pod_is_bad {
        setters.push("pod".to_string());
    }
    if !containers.is_empty() {
        setters.push(containers_phrase(containers));
    }
    setters
}

fn app_armor_profile(pod: &Pod<'_>) -> Option<Violation> {
    let allowed = |t: &str| matches!(t, "RuntimeDefault" | "Localhost");
    let mut bad_values = BTreeSet::new();
    let pod_type = pod
        .pod_context("/appArmorProfile")
        .map(|p| text(p.get("type")));
    let pod_bad = pod_type.is_some_and(|t| !allowed(t));
    if let Some(t) = pod_type.filter(|t| !allowed(t)) {
        bad_values.insert(t.to_string());
    }
    let mut bad_containers = Vec::new();
    for c in &pod.containers {
        if let Some(profile) = context(c, "/appArmorProfile") {
            let t = text(profile.get("type"));
            if !allowed(t) {
                bad_containers.push(name(c));
                bad_values.insert(t.to_string());
            }
        }
    }
    let mut bad_setters = setters(pod_bad, &bad_containers);
    let mut bad_list: Vec<String> = bad_values.into_iter().collect();
    let mut annotations: Vec<String> = pod
        .annotations
        .into_iter()
        .flatten()
        .filter(|(key, value)| {
            let value = value.as_str().unwrap_or_default();
            key.starts_with("container.apparmor.security.beta.kubernetes.io/")
                && !(value.is_empty()
                    || value == "runtime/default"
                    || value.starts_with("localhost/"))
        })
        // `%s=%q`: the value quoted (and quoted again by `joinQuote`).
        .map(|(key, value)| format!("{key}={}", Value::from(value.as_str().unwrap_or_default())))
        .collect();
    if !annotations.is_empty() {
        annotations.sort();
        bad_setters.push(pluralize("annotation", "annotations", annotations.len()).to_string());
        bad_list.extend(annotations);
    }
    if bad_setters.is_empty() {
        return None;
    }
    violation(
        pluralize(
            "forbidden AppArmor profile",
            "forbidden AppArmor profiles",
            bad_list.len(),
        ),
        format!(
            "{} must not set AppArmor profile type to {}",
            bad_setters.join(" and "),
            join_quote(&bad_list)
        ),
    )
}

const BASELINE_CAPABILITIES: [&str; 13] = [
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];

fn added_capabilities(container: &Value) -> Vec<String> {
    context(container, "/capabilities/add")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| c.as_str().unwrap_or_default().to_string())
        .collect()
}

fn capabilities_baseline(pod: &Pod<'_>) -> Option<Violation> {
    let mut forbidden = BTreeSet::new();
    let bad = pod.containers_where(|c| {
        let extra: Vec<String> = added_capabilities(c)
            .into_iter()
            .filter(|cap| !BASELINE_CAPABILITIES.contains(&cap.as_str()))
            .collect();
        let is_bad = !extra.is_empty();
        forbidden.extend(extra);
        is_bad
    });
    if bad.is_empty() {
        return None;
    }
    violation(
        "non-default capabilities",
        format!(
            "{} must not include {} in securityContext.capabilities.add",
            containers_phrase(&bad),
            join_quote(&forbidden)
        ),
    )
}

fn host_namespaces(pod: &Pod<'_>) -> Option<Violation> {
    let shared: Vec<String> = ["hostNetwork", "hostPID", "hostIPC"]
        .iter()
        .filter(|field| is_true(pod.spec.get(**field)))
        .map(|field| format!("{field}=true"))
        .collect();
    if shared.is_empty() {
        return None;
    }
    violation("host namespaces", shared.join(", "))
}

fn volumes<'a>(pod: &Pod<'a>) -> impl Iterator<Item = &'a Value> {
    pod.spec
        .get("volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

fn has(volume: &Value, source: &str) -> bool {
    volume.get(source).is_some_and(|v| !v.is_null())
}

fn host_path_volumes(pod: &Pod<'_>) -> Option<Violation> {
    let host: Vec<String> = volumes(pod)
        .filter(|v| has(v, "hostPath"))
        .map(name)
        .collect();
    if host.is_empty() {
        return None;
    }
    violation(
        "hostPath volumes",
        format!(
            "{} {}",
            pluralize("volume", "volumes", host.len()),
            join_quote(&host)
        ),
    )
}

fn host_ports(pod: &Pod<'_>) -> Option<Violation> {
    let mut ports = BTreeSet::new();
    let bad = pod.containers_where(|c| {
        let used: Vec<String> = c
            .get("ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|p| p.get("hostPort").and_then(Value::as_i64))
            .filter(|port| *port != 0)
            .map(|port| port.to_string())
            .collect();
        let is_bad = !used.is_empty();
        ports.extend(used);
        is_bad
    });
    if bad.is_empty() {
        return None;
    }
    let ports: Vec<String> = ports.into_iter().collect();
    violation(
        "hostPort",
        format!(
            "{} {} {} {}",
            containers_phrase(&bad),
            pluralize("uses", "use", bad.len()),
            pluralize("hostPort", "hostPorts", ports.len()),
            ports.join(", ")
        ),
    )
}

fn privileged(pod: &Pod<'_>) -> Option<Violation> {
    let bad = pod.containers_where(|c| is_true(context(c, "/privileged")));
    if bad.is_empty() {
        return None;
    }
    violation(
        "privileged",
        format!(
            "{} must not set securityContext.privileged=true",
            containers_phrase(&bad)
        ),
    )
}

fn proc_mount(pod: &Pod<'_>) -> Option<Violation> {
    let mut types = BTreeSet::new();
    let bad = pod.containers_where(|c| match context(c, "/procMount") {
        Some(t) if t.as_str() != Some("Default") => {
            types.insert(t.as_str().unwrap_or_default().to_string());
            true
        }
        _ => false,
    });
    if bad.is_empty() {
        return None;
    }
    violation(
        "procMount",
        format!(
            "{} must not set securityContext.procMount to {}",
            containers_phrase(&bad),
            join_quote(&types)
        ),
    )
}

fn se_linux_options(pod: &Pod<'_>) -> Option<Violation> {
    const ALLOWED_TYPES: [&str; 5] = [
        "",
        "container_t",
        "container_init_t",
        "container_kvm_t",
        "container_engine_t",
    ];
    let mut bad_types = BTreeSet::new();
    let (mut set_user, mut set_role) = (false, false);
    let mut valid = |options: &Value| {
        let mut ok = true;
        let t = text(options.get("type"));
        if !ALLOWED_TYPES.contains(&t) {
            ok = false;
            bad_types.insert(t.to_string());
        }
        if !text(options.get("user")).is_empty() {
            ok = false;
            set_user = true;
        }
        if !text(options.get("role")).is_empty() {
            ok = false;
            set_role = true;
        }
        ok
    };
    let pod_bad = pod
        .pod_context("/seLinuxOptions")
        .is_some_and(|o| !valid(o));
    let bad: Vec<String> = pod
        .containers
        .iter()
        .filter(|c| context(c, "/seLinuxOptions").is_some_and(|o| !valid(o)))
        .map(|c| name(c))
        .collect();
    let bad_setters = setters(pod_bad, &bad);
    if bad_setters.is_empty() {
        return None;
    }
    let mut data = Vec::new();
    if !bad_types.is_empty() {
        data.push(format!(
            "{} {}",
            pluralize("type", "types", bad_types.len()),
            join_quote(&bad_types)
        ));
    }
    if set_user {
        data.push("user may not be set".to_string());
    }
    if set_role {
        data.push("role may not be set".to_string());
    }
    violation(
        "seLinuxOptions",
        format!(
            "{} set forbidden securityContext.seLinuxOptions: {}",
            bad_setters.join(" and "),
            data.join("; ")
        ),
    )
}

fn valid_seccomp(profile: &Value) -> bool {
    matches!(text(profile.get("type")), "RuntimeDefault" | "Localhost")
}

/// Who set `seccompProfile.type` to a value other than `RuntimeDefault` or
/// `Localhost`, with the values; and the containers that set none.
struct Seccomp {
    setters: Vec<String>,
    values: BTreeSet<String>,
    unset: Vec<String>,
}

fn seccomp(pod: &Pod<'_>) -> Seccomp {
    let mut values = BTreeSet::new();
    let pod_profile = pod.pod_context("/seccompProfile");
    let pod_bad = pod_profile.is_some_and(|p| !valid_seccomp(p));
    if pod_bad {
        values.insert(text(pod_profile.and_then(|p| p.get("type"))).to_string());
    }
    let pod_set_valid = pod_profile.is_some() && !pod_bad;
    let mut bad = Vec::new();
    let mut unset = Vec::new();
    for c in &pod.containers {
        match context(c, "/seccompProfile") {
            Some(p) if !valid_seccomp(p) => {
                bad.push(name(c));
                values.insert(text(p.get("type")).to_string());
            }
            Some(_) => {}
            None if !pod_set_valid => unset.push(name(c)),
            None => {}
        }
    }
    Seccomp {
        setters: setters(pod_bad, &bad),
        values,
        unset,
    }
}

fn seccomp_setters_violation(found: &Seccomp) -> Option<Violation> {
    if found.setters.is_empty() {
        return None;
    }
    violation(
        "seccompProfile",
        format!(
            "{} must not set securityContext.seccompProfile.type to {}",
            found.setters.join(" and "),
            join_quote(&found.values)
        ),
    )
}

fn seccomp_baseline(pod: &Pod<'_>) -> Option<Violation> {
    seccomp_setters_violation(&seccomp(pod))
}

fn sysctls(pod: &Pod<'_>) -> Option<Violation> {
    const SAFE: [&str; 12] = [
        "kernel.shm_rmid_forced",
        "net.ipv4.ip_local_port_range",
        "net.ipv4.tcp_syncookies",
        "net.ipv4.ping_group_range",
        "net.ipv4.ip_unprivileged_port_start",
        "net.ipv4.ip_local_reserved_ports",
        "net.ipv4.tcp_keepalive_time",
        "net.ipv4.tcp_fin_timeout",
        "net.ipv4.tcp_keepalive_intvl",
        "net.ipv4.tcp_keepalive_probes",
        "net.ipv4.tcp_rmem",
        "net.ipv4.tcp_wmem",
    ];
    let forbidden: Vec<&str> = pod
        .pod_context("/sysctls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|s| text(s.get("name")))
        .filter(|name| !SAFE.contains(name))
        .collect();
    if forbidden.is_empty() {
        return None;
    }
    violation("forbidden sysctls", forbidden.join(", "))
}

fn windows_host_process(pod: &Pod<'_>) -> Option<Violation> {
    let bad = pod.containers_where(|c| is_true(context(c, "/windowsOptions/hostProcess")));
    let pod_bad = is_true(pod.pod_context("/windowsOptions/hostProcess"));
    let bad_setters = setters(pod_bad, &bad);
    if bad_setters.is_empty() {
        return None;
    }
    violation(
        "hostProcess",
        format!(
            "{} must not set securityContext.windowsOptions.hostProcess=true",
            bad_setters.join(" and ")
        ),
    )
}

fn allow_privilege_escalation(pod: &Pod<'_>) -> Option<Violation> {
    if pod.is_windows() {
        return None;
    }
    let bad = pod.containers_where(|c| {
        context(c, "/allowPrivilegeEscalation").and_then(Value::as_bool) != Some(false)
    });
    if bad.is_empty() {
        return None;
    }
    violation(
        "allowPrivilegeEscalation != false",
        format!(
            "{} must set securityContext.allowPrivilegeEscalation=false",
            containers_phrase(&bad)
        ),
    )
}

fn capabilities_restricted(pod: &Pod<'_>) -> Option<Violation> {
    if pod.is_windows() {
        return None;
    }
    let mut forbidden = BTreeSet::new();
    let missing_drop_all = pod.containers_where(|c| {
        !context(c, "/capabilities/drop")
            .and_then(Value::as_array)
            .is_some_and(|drop| drop.iter().any(|cap| cap == "ALL"))
    });
    let adding = pod.containers_where(|c| {
        let extra: Vec<String> = added_capabilities(c)
            .into_iter()
            .filter(|cap| cap != "NET_BIND_SERVICE")
            .collect();
        let is_bad = !extra.is_empty();
        forbidden.extend(extra);
        is_bad
    });
    let mut details = Vec::new();
    if !missing_drop_all.is_empty() {
        details.push(format!(
            "{} must set securityContext.capabilities.drop=[\"ALL\"]",
            containers_phrase(&missing_drop_all)
        ));
    }
    if !adding.is_empty() {
        details.push(format!(
            "{} must not include {} in securityContext.capabilities.add",
            containers_phrase(&adding),
            join_quote(&forbidden)
        ));
    }
    if details.is_empty() {
        return None;
    }
    violation("unrestricted capabilities", details.join("; "))
}

fn restricted_volumes(pod: &Pod<'_>) -> Option<Violation> {
    const ALLOWED: [&str; 9] = [
        "configMap",
        "csi",
        "downwardAPI",
        "emptyDir",
        "ephemeral",
        "image",
        "persistentVolumeClaim",
        "projected",
        "secret",
    ];
    // In the order the check looks for them (`check_restrictedVolumes.go`).
    const KNOWN: [&str; 21] = [
        "hostPath",
        "gcePersistentDisk",
        "awsElasticBlockStore",
        "gitRepo",
        "nfs",
        "iscsi",
        "glusterfs",
        "rbd",
        "flexVolume",
        "cinder",
        "cephfs",
        "flocker",
        "fc",
        "azureFile",
        "vsphereVolume",
        "quobyte",
        "azureDisk",
        "photonPersistentDisk",
        "portworxVolume",
        "scaleIO",
        "storageos",
    ];
    let mut bad = Vec::new();
    let mut types = BTreeSet::new();
    for volume in volumes(pod) {
        if ALLOWED.iter().any(|source| has(volume, source)) {
            continue;
        }
        bad.push(name(volume));
        types.insert(
            KNOWN
                .iter()
                .find(|source| has(volume, source))
                .copied()
                .unwrap_or("unknown"),
        );
    }
    if bad.is_empty() {
        return None;
    }
    violation(
        "restricted volume types",
        format!(
            "{} {} {} {} {}",
            pluralize("volume", "volumes", bad.len()),
            join_quote(&bad),
            pluralize("uses", "use", bad.len()),
            pluralize(
                "restricted volume type",
                "restricted volume types",
                types.len()
            ),
            join_quote(&types)
        ),
    )
}

fn run_as_non_root(pod: &Pod<'_>) -> Option<Violation> {
    let pod_value = pod.pod_context("/runAsNonRoot").and_then(Value::as_bool);
    let pod_bad = pod_value == Some(false);
    let pod_non_root = pod_value == Some(true);
    let explicitly_bad = pod
        .containers_where(|c| context(c, "/runAsNonRoot").and_then(Value::as_bool) == Some(false));
    let implicitly_bad =
        pod.containers_where(|c| context(c, "/runAsNonRoot").is_none() && !pod_non_root);
    let bad_setters = setters(pod_bad, &explicitly_bad);
    if !bad_setters.is_empty() {
        return violation(
            "runAsNonRoot != true",
            format!(
                "{} must not set securityContext.runAsNonRoot=false",
                bad_setters.join(" and ")
            ),
        );
    }
    if !implicitly_bad.is_empty() {
        return violation(
            "runAsNonRoot != true",
            format!(
                "pod or {} must set securityContext.runAsNonRoot=true",
                containers_phrase(&implicitly_bad)
            ),
        );
    }
    None
}

fn run_as_user(pod: &Pod<'_>) -> Option<Violation> {
    let root = |v: Option<&Value>| v.and_then(Value::as_i64) == Some(0);
    let bad = pod.containers_where(|c| root(context(c, "/runAsUser")));
    let bad_setters = setters(root(pod.pod_context("/runAsUser")), &bad);
    if bad_setters.is_empty() {
        return None;
    }
    violation(
        "runAsUser=0",
        format!("{} must not set runAsUser=0", bad_setters.join(" and ")),
    )
}

fn seccomp_restricted(pod: &Pod<'_>) -> Option<Violation> {
    if pod.is_windows() {
        return None;
    }
    let found = seccomp(pod);
    if let Some(v) = seccomp_setters_violation(&found) {
        return Some(v);
    }
    if found.unset.is_empty() {
        return None;
    }
    violation(
        "seccompProfile",
        format!(
            "pod or {} must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\"",
            containers_phrase(&found.unset)
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn restricted_container(name: &str) -> Value {
        json!({
            "name": name,
            "image": "x",
            "securityContext": {
                "allowPrivilegeEscalation": false,
                "capabilities": {"drop": ["ALL"]},
                "runAsNonRoot": true,
                "seccompProfile": {"type": "RuntimeDefault"},
            },
        })
    }

    #[test]
    fn no_label_is_privileged_and_a_bad_one_restricted() {
        assert_eq!(Level::enforced_by(&json!({})), Level::Privileged);
        let labelled = |v: &str| json!({"metadata": {"labels": {ENFORCE_LABEL: v}}});
        assert_eq!(Level::enforced_by(&labelled("baseline")), Level::Baseline);
        assert_eq!(Level::enforced_by(&labelled("nonsense")), Level::Restricted);
    }

    #[test]
    fn a_restricted_pod_passes_every_level() {
        let pod = json!({"spec": {"containers": [restricted_container("a")]}});
        for level in [Level::Privileged, Level::Baseline, Level::Restricted] {
            assert_eq!(violations(level, &pod), None);
        }
    }

    #[test]
    fn baseline_reasons_in_the_real_order_and_wording() {
        let pod = json!({
            "metadata": {"annotations": {
                "container.apparmor.security.beta.kubernetes.io/a": "unconfined"
            }},
            "spec": {
                "hostNetwork": true,
                "hostPID": true,
                "securityContext": {
                    "sysctls": [{"name": "kernel.msgmax", "value": "1"}],
                    "seLinuxOptions": {"user": "root"},
                },
                "volumes": [{"name": "root", "hostPath": {"path": "/"}}],
                "initContainers": [{"name": "init", "securityContext": {"privileged": true}}],
                "containers": [{
                    "name": "a",
                    "ports": [{"containerPort": 80, "hostPort": 8080}, {"containerPort": 443, "hostPort": 443}],
                    "securityContext": {
                        "capabilities": {"add": ["NET_ADMIN", "CHOWN", "SYS_TIME"]},
                        "procMount": "Unmasked",
                        "seccompProfile": {"type": "Unconfined"},
                    },
                }],
            },
        });
        assert_eq!(
            violations(Level::Baseline, &pod).unwrap(),
            "violates PodSecurity \"baseline:latest\": \
             forbidden AppArmor profile (annotation must not set AppArmor profile type to \
             \"container.apparmor.security.beta.kubernetes.io/a=\"unconfined\"\"), \
             non-default capabilities (container \"a\" must not include \"NET_ADMIN\", \"SYS_TIME\" in securityContext.capabilities.add), \
             host namespaces (hostNetwork=true, hostPID=true), \
             hostPath volumes (volume \"root\"), \
             hostPort (container \"a\" uses hostPorts 443, 8080), \
             privileged (container \"init\" must not set securityContext.privileged=true), \
             procMount (container \"a\" must not set securityContext.procMount to \"Unmasked\"), \
             seLinuxOptions (pod set forbidden securityContext.seLinuxOptions: user may not be set), \
             seccompProfile (container \"a\" must not set securityContext.seccompProfile.type to \"Unconfined\"), \
             forbidden sysctls (kernel.msgmax)"
        );
    }

    #[test]
    fn restricted_requires_every_hardening() {
        let pod = json!({"spec": {
            "securityContext": {"runAsUser": 0},
            "volumes": [{"name": "nfs", "nfs": {"server": "x", "path": "/"}}, {"name": "cfg", "configMap": {"name": "c"}}],
            "containers": [
                {"name": "a", "securityContext": {"capabilities": {"add": ["NET_BIND_SERVICE", "NET_RAW"]}}},
                restricted_container("b"),
            ],
        }});
        assert_eq!(
            violations(Level::Restricted, &pod).unwrap(),
            "violates PodSecurity \"restricted:latest\": \
             allowPrivilegeEscalation != false (container \"a\" must set securityContext.allowPrivilegeEscalation=false), \
             unrestricted capabilities (container \"a\" must set securityContext.capabilities.drop=[\"ALL\"]; \
             container \"a\" must not include \"NET_RAW\" in securityContext.capabilities.add), \
             restricted volume types (volume \"nfs\" uses restricted volume type \"nfs\"), \
             runAsNonRoot != true (pod or container \"a\" must set securityContext.runAsNonRoot=true), \
             runAsUser=0 (pod must not set runAsUser=0), \
             seccompProfile (pod or container \"a\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")"
        );
    }

    #[test]
    fn pod_level_settings_cover_containers() {
        let pod = json!({"spec": {
            "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "Localhost", "localhostProfile": "p"}},
            "containers": [{"name": "a", "securityContext": {
                "allowPrivilegeEscalation": false,
                "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]},
            }}],
        }});
        assert_eq!(violations(Level::Restricted, &pod), None);
    }
}
