//! The kinds of resources the stand-in serves: the built-in table plus whatever CRDs register.

use serde_json::Value;

use crate::status::{ApiError, ApiResult};

/// How `metadata.name` is validated for a resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameRule {
    /// RFC 1123 subdomain: most resources.
    Subdomain,
    /// RFC 1123 label: namespaces.
    Label,
    /// RFC 1035 label: services.
    Dns1035Label,
    /// Anything usable as a path segment: RBAC objects (`system:controller:foo`).
    PathSegment,
}

/// One resource type, served at one or more versions of its group.
#[derive(Debug, Clone)]
pub struct ResourceType {
    pub group: String,
    /// Served versions; the first is the preferred one.
    pub versions: Vec<String>,
    pub plural: String,
    pub singular: String,
    pub kind: String,
    pub list_kind: String,
    pub namespaced: bool,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    pub status_subresource: bool,
    /// Whether `metadata.generation` is maintained (not for e.g. ConfigMaps and Pods).
    pub has_generation: bool,
    /// Whether a delete that removes the object answers with it (otherwise with a `Status`).
    pub return_deleted_object: bool,
    pub name_rule: NameRule,
    /// Set for types registered by a CustomResourceDefinition: the CRD's name.
    pub crd: Option<String>,
}

impl ResourceType {
    pub fn api_version(&self, version: &str) -> String {
        if self.group.is_empty() {
            version.to_string()
        } else {
            format!("{}/{version}", self.group)
        }
    }

    pub fn is(&self, group: &str, plural: &str) -> bool {
        self.group == group && self.plural == plural
    }

    /// Whether objects of this type have a `log` subresource.
    pub fn has_log(&self) -> bool {
        self.is("", "pods")
    }

    /// Whether objects of this type have a `scale` subresource (`autoscaling/v1` `Scale`).
    pub fn has_scale(&self) -> bool {
        self.group == "apps"
            && matches!(
                self.plural.as_str(),
                "deployments" | "statefulsets" | "replicasets"
            )
    }
}

/// All resource types currently served.
#[derive(Debug, Clone)]
pub struct Registry {
    types: Vec<ResourceType>,
}

/// `(group, version, plural, kind, namespaced, status subresource, generation, short names)`.
type Builtin = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    bool,
    bool,
    bool,
    &'static [&'static str],
);

#[rustfmt::skip]
const BUILTINS: &[Builtin] = &[
    ("", "v1", "namespaces", "Namespace", false, true, false, &["ns"]),
    ("", "v1", "pods", "Pod", true, true, false, &["po"]),
    ("", "v1", "services", "Service", true, true, false, &["svc"]),
    ("", "v1", "configmaps", "ConfigMap", true, false, false, &["cm"]),
    ("", "v1", "secrets", "Secret", true, false, false, &[]),
    ("", "v1", "resourcequotas", "ResourceQuota", true, true, false, &["quota"]),
    ("", "v1", "limitranges", "LimitRange", true, false, false, &["limits"]),
    ("", "v1", "serviceaccounts", "ServiceAccount", true, false, false, &["sa"]),
    ("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", true, true, false, &["pvc"]),
    ("", "v1", "persistentvolumes", "PersistentVolume", false, true, false, &["pv"]),
    ("", "v1", "events", "Event", true, false, false, &["ev"]),
    ("", "v1", "endpoints", "Endpoints", true, false, false, &["ep"]),
    ("", "v1", "nodes", "Node", false, true, false, &["no"]),
    ("apps", "v1", "deployments", "Deployment", true, true, true, &["deploy"]),
    ("apps", "v1", "statefulsets", "StatefulSet", true, true, true, &["sts"]),
    ("apps", "v1", "replicasets", "ReplicaSet", true, true, true, &["rs"]),
    ("apps", "v1", "daemonsets", "DaemonSet", true, true, true, &["ds"]),
    ("apps", "v1", "controllerrevisions", "ControllerRevision", true, false, false, &[]),
    ("batch", "v1", "jobs", "Job", true, true, true, &[]),
    ("batch", "v1", "cronjobs", "CronJob", true, true, true, &["cj"]),
    ("autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler", true, true, true, &["hpa"]),
    ("networking.k8s.io", "v1", "ingresses", "Ingress", true, true, true, &["ing"]),
    ("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", true, false, true, &["netpol"]),
    ("networking.k8s.io", "v1", "ingressclasses", "IngressClass", false, false, false, &[]),
    ("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", true, true, true, &["pdb"]),
    ("rbac.authorization.k8s.io", "v1", "roles", "Role", true, false, false, &[]),
    ("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", true, false, false, &[]),
    ("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", false, false, false, &[]),
    ("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", false, false, false, &[]),
    ("admissionregistration.k8s.io", "v1", "validatingadmissionpolicies", "ValidatingAdmissionPolicy", false, true, true, &[]),
    ("admissionregistration.k8s.io", "v1", "validatingadmissionpolicybindings", "ValidatingAdmissionPolicyBinding", false, false, true, &[]),
    ("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", false, true, true, &["crd", "crds"]),
    ("coordination.k8s.io", "v1", "leases", "Lease", true, false, false, &[]),
    ("events.k8s.io", "v1", "events", "Event", true, false, false, &[]),
    ("storage.k8s.io", "v1", "storageclasses", "StorageClass", false, false, false, &["sc"]),
    ("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", false, false, false, &["pc"]),
];

/// Resources whose delete answers with the deleted object rather than a `Status`.
const RETURNS_DELETED_OBJECT: &[&str] = &[
    "pods",
    "services",
    "serviceaccounts",
    "storageclasses",
    "namespaces",
];

/// The order groups are listed in by `/apis` (CRD groups follow, sorted).
const GROUP_ORDER: &[&str] = &[
    "apps",
    "batch",
    "autoscaling",
    "networking.k8s.io",
    "policy",
    "rbac.authorization.k8s.io",
    "admissionregistration.k8s.io",
    "apiextensions.k8s.io",
    "coordination.k8s.io",
    "events.k8s.io",
    "storage.k8s.io",
    "scheduling.k8s.io",
];

pub const CRD_GROUP: &str = "apiextensions.k8s.io";
pub const CRD_RESOURCE: &str = "customresourcedefinitions";

impl Default for Registry {
    fn default() -> Self {
        Self::builtin()
    }
}

impl Registry {
    pub fn builtin() -> Self {
        let types = BUILTINS
            .iter()
            .map(
                |&(group, version, plural, kind, namespaced, status, generation, short)| {
                    let name_rule = match (group, plural) {
                        ("", "namespaces") => NameRule::Label,
                        ("", "services") => NameRule::Dns1035Label,
                        ("rbac.authorization.k8s.io", _) => NameRule::PathSegment,
                        _ => NameRule::Subdomain,
                    };
                    ResourceType {
                        group: group.to_string(),
                        versions: vec![version.to_string()],
                        plural: plural.to_string(),
                        singular: kind.to_lowercase(),
                        kind: kind.to_string(),
                        list_kind: format!("{kind}List"),
                        namespaced,
                        short_names: short.iter().map(|s| s.to_string()).collect(),
                        categories: if group == "apps" || plural == "pods" || plural == "services" {
                            vec!["all".to_string()]
                        } else {
                            vec![]
                        },
                        status_subresource: status,
                        has_generation: generation,
                        return_deleted_object: RETURNS_DELETED_OBJECT.contains(&plural),
                        name_rule,
                        crd: None,
                    }
                },
            )
            .collect();
        Registry { types }
    }

    /// The type served at `group/version` under `plural`.
    pub fn lookup(&self, group: &str, version: &str, plural: &str) -> Option<&ResourceType> {
        self.types.iter().find(|t| {
            t.group == group && t.plural == plural && t.versions.iter().any(|v| v == version)
        })
    }

    /// The type stored under `group` and `plural`, at any version.
    pub fn by_resource(&self, group: &str, plural: &str) -> Option<&ResourceType> {
        self.types.iter().find(|t| t.is(group, plural))
    }

    /// Groups with their served versions (preferred first), in discovery order.
    pub fn groups(&self) -> Vec<(String, Vec<String>)> {
        let mut groups: Vec<(String, Vec<String>)> = Vec::new();
        for t in &self.types {
            if t.group.is_empty() {
                continue;
            }
            match groups.iter_mut().find(|(g, _)| *g == t.group) {
                Some((_, versions)) => {
                    for v in &t.versions {
                        if !versions.contains(v) {
                            versions.push(v.clone());
                        }
                    }
                }
                None => groups.push((t.group.clone(), t.versions.clone())),
            }
        }
        let rank = |g: &str| {
            GROUP_ORDER
                .iter()
                .position(|o| *o == g)
                .unwrap_or(GROUP_ORDER.len())
        };
        groups.sort_by(|(a, _), (b, _)| rank(a).cmp(&rank(b)).then_with(|| a.cmp(b)));
        groups
    }

    /// Types served at `group/version`.
    pub fn in_group_version<'a>(
        &'a self,
        group: &'a str,
        version: &'a str,
    ) -> impl Iterator<Item = &'a ResourceType> {
        self.types
            .iter()
            .filter(move |t| t.group == group && t.versions.iter().any(|v| v == version))
    }

    /// Registers (or re-registers) the types a CRD defines. The CRD must already be validated.
    pub fn register_crd(&mut self, crd: &Value) -> ApiResult<()> {
        let t = crd_type(crd)?;
        self.types.retain(|x| x.crd.as_deref() != t.crd.as_deref());
        self.types.push(t);
        Ok(())
    }

    /// Stops serving a built-in group (as a cluster with its API turned off).
    pub fn withdraw_group(&mut self, group: &str) {
        self.types.retain(|t| t.group != group || t.crd.is_some());
    }

    /// Drops the types a CRD registered.
    pub fn unregister_crd(&mut self, crd_name: &str) {
        self.types.retain(|t| t.crd.as_deref() != Some(crd_name));
    }
}

fn crd_invalid(name: &str, field: &str, detail: &str) -> ApiError {
    ApiError::invalid(
        "CustomResourceDefinition",
        CRD_GROUP,
        name,
        field,
        "FieldValueInvalid",
        detail,
    )
}

fn str_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    let mut cur = v;
    for p in path {
        cur = cur.get(p)?;
    }
    cur.as_str().filter(|s| !s.is_empty())
}

/// Reads the resource type a CRD defines, checking the fields the API server requires.
pub fn crd_type(crd: &Value) -> ApiResult<ResourceType> {
    let name = str_at(crd, &["metadata", "name"]).unwrap_or_default();
    let required = |path: &[&str], field: &str| {
        str_at(crd, path).map(str::to_string).ok_or_else(|| {
            ApiError::invalid(
                "CustomResourceDefinition",
                CRD_GROUP,
                name,
                field,
                "FieldValueRequired",
                "Required value",
            )
        })
    };
    let group = required(&["spec", "group"], "spec.group")?;
    let plural = required(&["spec", "names", "plural"], "spec.names.plural")?;
    let kind = required(&["spec", "names", "kind"], "spec.names.kind")?;
    if name != format!("{plural}.{group}") {
        return Err(crd_invalid(
            name,
            "metadata.name",
            &format!("Invalid value: \"{name}\": must be spec.names.plural+\".\"+spec.group"),
        ));
    }
    if plural
        .chars()
        .any(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'))
    {
        return Err(crd_invalid(
            name,
            "spec.names.plural",
            &format!("Invalid value: \"{plural}\": a lowercase RFC 1123 label is required"),
        ));
    }
    let namespaced = match str_at(crd, &["spec", "scope"]) {
        Some("Namespaced") => true,
        Some("Cluster") => false,
        other => {
            return Err(crd_invalid(
                name,
                "spec.scope",
                &format!(
                    "Unsupported value: \"{}\": supported values: \"Cluster\", \"Namespaced\"",
                    other.unwrap_or_default()
                ),
            ));
        }
    };
    let versions = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if versions.is_empty() {
        return Err(crd_invalid(
            name,
            "spec.versions",
            "Invalid value: null: must have exactly one version marked as storage version",
        ));
    }
    let storage: Vec<&Value> = versions
        .iter()
        .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .collect();
    if storage.len() != 1 {
        return Err(crd_invalid(
            name,
            "spec.versions",
            "Invalid value: must have exactly one version marked as storage version",
        ));
    }
    let mut served = Vec::new();
    for v in &versions {
        let Some(vname) = v
            .get("name")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
        else {
            return Err(crd_invalid(name, "spec.versions[].name", "Required value"));
        };
        if v.get("served").and_then(Value::as_bool) == Some(true) {
            served.push(vname.to_string());
        }
    }
    let status_subresource = storage[0].pointer("/subresources/status").is_some();
    let strings = |path: &str| crate::meta::strings(crd.pointer(path));
    Ok(ResourceType {
        group,
        versions: served,
        singular: str_at(crd, &["spec", "names", "singular"])
            .map(str::to_string)
            .unwrap_or_else(|| kind.to_lowercase()),
        list_kind: str_at(crd, &["spec", "names", "listKind"])
            .map(str::to_string)
            .unwrap_or_else(|| format!("{kind}List")),
        plural,
        kind,
        namespaced,
        short_names: strings("/spec/names/shortNames"),
        categories: strings("/spec/names/categories"),
        status_subresource,
        has_generation: true,
        return_deleted_object: true,
        name_rule: NameRule::Subdomain,
        crd: Some(name.to_string()),
    })
}
