//! Berth's two identities in the test cluster, as an installation has them:
//! the RBAC objects of the kustomization in `infra/k8s` applied with the
//! administrator's client, and a kubeconfig of each ServiceAccount made with a
//! token from the TokenRequest API (the code of `berth-admin cluster set
//! --service-account`). The API and the controller run as these; only the
//! tests' own moves (another tool's objects, the kubelet's pod status) and
//! their looking use the administrator's client.

use std::path::{Path, PathBuf};
use std::time::Duration;

use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::core::GroupVersionKind;
use kube::discovery::{Scope, pinned_kind};
use serde::Deserialize;

use berth_api::service_account::{ServiceAccountRef, service_account_kubeconfig};

/// The identity of Berth's API (`infra/k8s/api-rbac.yaml`).
pub fn api_account() -> ServiceAccountRef {
    ServiceAccountRef::berth_api()
}

/// The identity of the controller (`infra/k8s/controller.yaml`).
pub fn controller_account() -> ServiceAccountRef {
    ServiceAccountRef {
        namespace: "berth-system".into(),
        name: "berth-controller".into(),
    }
}

/// The kinds that make up who may do what: RBAC, and the admission policy
/// that holds Berth's identities to what Berth owns.
pub const RBAC_KINDS: [&str; 8] = [
    "Namespace",
    "ServiceAccount",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
];

fn k8s_dir() -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/..")).join("infra/k8s")
}

/// Every document of a manifest of `infra/k8s`.
pub fn documents(file: &str) -> Vec<serde_yaml::Value> {
    let text = std::fs::read_to_string(k8s_dir().join(file))
        .unwrap_or_else(|e| panic!("infra/k8s/{file}: {e}"));
    serde_yaml::Deserializer::from_str(&text)
        .map(|doc| serde_yaml::Value::deserialize(doc).expect("a YAML document"))
        .filter(|doc| !doc.is_null())
        .collect()
}

/// The files the kustomization lists, in its order.
pub fn kustomization_resources() -> Vec<String> {
    let kustomization = documents("kustomization.yaml").remove(0);
    kustomization["resources"]
        .as_sequence()
        .expect("kustomization.yaml lists resources")
        .iter()
        .map(|file| file.as_str().expect("a file name").to_owned())
        .collect()
}

/// The namespace, ServiceAccounts, roles and bindings of the kustomization,
/// as its files state them (kustomize changes none of them; `manifests.rs`
/// checks that against `kubectl kustomize`).
pub fn rbac_objects() -> Vec<serde_yaml::Value> {
    kustomization_resources()
        .iter()
        .flat_map(|file| documents(file))
        .filter(|doc| RBAC_KINDS.contains(&doc["kind"].as_str().unwrap_or_default()))
        .collect()
}

/// The component of `infra/k8s` an installation adds where the cluster
/// serves ValidatingAdmissionPolicy only at `admissionregistration.k8s.io/v1beta1`
/// (Kubernetes 1.28 and 1.29: docs/deploy.md, "Supported Kubernetes versions").
pub const ADMISSION_V1BETA1_COMPONENT: &str = "admission-v1beta1";

/// The version of `admissionregistration.k8s.io` at which the cluster serves
/// ValidatingAdmissionPolicy, as discovery says: `v1` (Kubernetes 1.30 or
/// later, and the stand-in), else `v1beta1` (1.28 and 1.29 with the feature
/// on). A cluster serving neither is not one Berth installs on.
pub async fn admission_version(client: &kube::Client) -> &'static str {
    for version in ["v1", "v1beta1"] {
        let served = match client
            .list_api_group_resources(&format!("admissionregistration.k8s.io/{version}"))
            .await
        {
            Ok(list) => list
                .resources
                .iter()
                .any(|resource| resource.name == "validatingadmissionpolicies"),
            Err(kube::Error::Api(status)) if status.code == 404 => false,
            Err(error) => panic!("discovery of admissionregistration.k8s.io/{version}: {error}"),
        };
        if served {
            return version;
        }
    }
    panic!("{}", berth_cluster::install::ADMISSION_POLICY_NEEDED)
}

/// `kubectl kustomize` of an installation over `infra/k8s` with the given
/// components of it (`components: - ../infra/k8s/NAME`): what `kubectl
/// apply -k` sends for it.
pub fn kustomize(components: &[&str]) -> Vec<serde_yaml::Value> {
    // kustomize takes an installation's resources and components by relative
    // path only (as docs/deploy.md's `../infra/k8s`).
    let dir = std::env::temp_dir().join(format!(
        "berth-installation-{}",
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::create_dir_all(&dir).expect("a directory for the installation");
    let dir = dir.canonicalize().expect("the installation's directory");
    let up = "../".repeat(dir.components().count() - 1);
    let k8s = k8s_dir().canonicalize().expect("infra/k8s");
    let relative = |path: &Path| {
        format!(
            "{up}{}",
            path.strip_prefix("/").expect("absolute").display()
        )
    };
    let mut kustomization = format!(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - {}\n",
        relative(&k8s)
    );
    if !components.is_empty() {
        kustomization.push_str("components:\n");
        for component in components {
            kustomization.push_str(&format!("  - {}\n", relative(&k8s.join(component))));
        }
    }
    std::fs::write(dir.join("kustomization.yaml"), kustomization).expect("the kustomization");
    // kubectl 1.14 or later has kustomize built in (components: 1.21).
    let output = crate::support::stdout_of(
        std::process::Command::new("kubectl")
            .arg("kustomize")
            .arg(&dir),
    );
    let _ = std::fs::remove_dir_all(&dir);
    serde_yaml::Deserializer::from_str(&output)
        .map(|doc| serde_yaml::Value::deserialize(doc).expect("a YAML document"))
        .filter(|doc| !doc.is_null())
        .collect()
}

/// The installation as an operator of this cluster renders it
/// (docs/deploy.md): `infra/k8s`, with the component `admission-v1beta1`
/// where the cluster serves ValidatingAdmissionPolicy only at `v1beta1`.
pub async fn installation_for(client: &kube::Client) -> Vec<serde_yaml::Value> {
    match admission_version(client).await {
        "v1" => kustomize(&[]),
        _ => kustomize(&[ADMISSION_V1BETA1_COMPONENT]),
    }
}

/// The RBAC objects and admission policy of the installation as an operator
/// of this cluster installs them: the kustomization's files
/// (`rbac_objects`) where the cluster serves the policy at `v1`; where it
/// serves it only at `v1beta1`, as kustomize renders them with the
/// component `admission-v1beta1` (rendered once a process).
pub async fn rbac_objects_for(client: &kube::Client) -> Vec<serde_yaml::Value> {
    static WITH_V1BETA1: std::sync::OnceLock<Vec<serde_yaml::Value>> = std::sync::OnceLock::new();
    match admission_version(client).await {
        "v1" => rbac_objects(),
        _ => WITH_V1BETA1
            .get_or_init(|| {
                kustomize(&[ADMISSION_V1BETA1_COMPONENT])
                    .into_iter()
                    .filter(|doc| RBAC_KINDS.contains(&doc["kind"].as_str().unwrap_or_default()))
                    .collect()
            })
            .clone(),
    }
}

/// Applies objects (server-side apply, so every test may do it again).
pub async fn apply(client: &kube::Client, objects: &[serde_yaml::Value]) {
    let params = PatchParams::apply("berth-tests").force();
    for document in objects {
        let object: DynamicObject =
            serde_yaml::from_value(document.clone()).expect("a Kubernetes object");
        let types = object.types.clone().expect("apiVersion and kind");
        let gvk = GroupVersionKind::try_from(&types).expect("a group, version and kind");
        let (resource, capabilities) = pinned_kind(client, &gvk)
            .await
            .unwrap_or_else(|e| panic!("the cluster serves {}: {e}", types.kind));
        let api: Api<DynamicObject> = match capabilities.scope {
            Scope::Namespaced => Api::namespaced_with(
                client.clone(),
                object.metadata.namespace.as_deref().expect("a namespace"),
                &resource,
            ),
            Scope::Cluster => Api::all_with(client.clone(), &resource),
        };
        let name = object.metadata.name.clone().expect("a name");
        api.patch(&name, &params, &Patch::Apply(&object))
            .await
            .unwrap_or_else(|e| panic!("applying {} {name}: {e}", types.kind));
    }
}

/// A kubeconfig of `account`, its token asked for with the administrator's
/// kubeconfig.
pub async fn kubeconfig_of(admin_kubeconfig: &str, account: &ServiceAccountRef) -> String {
    service_account_kubeconfig(
        admin_kubeconfig,
        None,
        account,
        Duration::from_secs(3600),
        Duration::from_secs(10),
    )
    .await
    .unwrap_or_else(|e| panic!("a token for {account}: {e:?}"))
    .yaml
}

/// Where the test run keeps what Berth's identities did (`make test` sets it,
/// and checks after the run that every grant of the roles was used:
/// `manifests::every_grant_of_the_roles_is_used`).
pub const USES_DIR_ENV: &str = "BERTH_TEST_RBAC_USES";

/// One line per permission a ServiceAccount used: `user verb group resource`
/// (the group `-` for the core group and for paths).
pub fn use_line(used: &berth_kube_standin::RbacUse) -> String {
    let group = if used.api_group.is_empty() {
        "-"
    } else {
        &used.api_group
    };
    format!("{} {} {group} {}", used.user, used.verb, used.resource)
}

/// Adds what Berth's identities did in this stand-in to the run's record.
pub fn record_uses(standin: &berth_kube_standin::StandIn) {
    let Some(dir) = std::env::var_os(USES_DIR_ENV) else {
        return;
    };
    let lines: Vec<String> = standin.rbac_uses().iter().map(use_line).collect();
    let file = Path::new(&dir).join(format!("{}.txt", uuid::Uuid::new_v4().simple()));
    if let Err(error) = std::fs::write(&file, lines.join("\n")) {
        eprintln!("recording RBAC uses in {}: {error}", file.display());
    }
}

/// The name of the admission policy and of its binding (`infra/k8s/admission.yaml`).
pub const ADMISSION_POLICY: &str = "berth-owned-namespaces";

/// The ValidatingAdmissionPolicies (`binding: false`) or their bindings, as
/// the administrator reaches them at `admissionregistration.k8s.io/v1` (the
/// stand-in's; `admission_api_at` with `admission_version` for any cluster).
pub fn admission_api(client: &kube::Client, binding: bool) -> Api<DynamicObject> {
    admission_api_at(client, "v1", binding)
}

/// The ValidatingAdmissionPolicies (`binding: false`) or their bindings at
/// `admissionregistration.k8s.io/{version}`.
pub fn admission_api_at(client: &kube::Client, version: &str, binding: bool) -> Api<DynamicObject> {
    let (kind, plural) = if binding {
        (
            "ValidatingAdmissionPolicyBinding",
            "validatingadmissionpolicybindings",
        )
    } else {
        ("ValidatingAdmissionPolicy", "validatingadmissionpolicies")
    };
    let gvk = GroupVersionKind::gvk("admissionregistration.k8s.io", version, kind);
    Api::all_with(
        client.clone(),
        &kube::api::ApiResource::from_gvk_with_plural(&gvk, plural),
    )
}
