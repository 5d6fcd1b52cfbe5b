//! `infra/k8s/`: the CRDs file matches the code, every manifest applies to a
//! cluster, and the roles grant what the code uses and no more than that.

use std::collections::BTreeSet;
use std::path::Path;

use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::core::GroupVersionKind;
use kube::discovery::{Scope, pinned_kind};
use serde::Deserialize;

use crate::support::TestCluster;

fn manifest(name: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("infra/k8s")
            .join(name),
    )
    .unwrap()
}

fn documents(name: &str) -> Vec<serde_yaml::Value> {
    serde_yaml::Deserializer::from_str(&manifest(name))
        .map(|doc| serde_yaml::Value::deserialize(doc).unwrap())
        .filter(|doc| !doc.is_null())
        .collect()
}

#[test]
fn crds_file_matches_the_code() {
    let generated = berth_shared::cluster::crd::definitions_yaml();
    if std::env::var_os("BERTH_WRITE_CRDS").is_some() {
        std::fs::write(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("infra/k8s/crds.yaml"),
            &generated,
        )
        .unwrap();
    }
    assert_eq!(
        manifest("crds.yaml"),
        generated,
        "regenerate with BERTH_WRITE_CRDS=1 cargo test --test api crds"
    );
    // Structural schemas without a field kept as it comes: the apiserver
    // prunes whatever Berth's types do not have, so nothing written into an
    // App by hand (a `hostNetwork`, a `securityContext`) is even stored.
    assert!(!generated.contains("x-kubernetes-preserve-unknown-fields"));
    assert!(!generated.contains("additionalProperties: true"));
    let kinds: Vec<_> = documents("crds.yaml")
        .iter()
        .map(|d| d["spec"]["names"]["kind"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(kinds, ["Project", "Environment", "App"]);
    for crd in documents("crds.yaml") {
        let version = &crd["spec"]["versions"][0];
        assert_eq!(crd["spec"]["group"].as_str(), Some("berth.dev"));
        assert_eq!(version["name"].as_str(), Some("v1"));
        assert!(
            version["schema"]["openAPIV3Schema"]["properties"]["spec"].is_mapping(),
            "an OpenAPI schema"
        );
        assert_eq!(
            version["subresources"]["status"],
            serde_yaml::Value::Mapping(Default::default())
        );
    }
}

#[tokio::test]
async fn every_manifest_applies() {
    let cluster = TestCluster::start().await;
    let params = PatchParams::apply("berth-tests").force();
    for file in ["controller.yaml", "api-rbac.yaml"] {
        for document in documents(file) {
            let object: DynamicObject = serde_yaml::from_value(document.clone()).unwrap();
            let types = object.types.clone().expect("apiVersion and kind");
            let gvk = GroupVersionKind::try_from(&types).unwrap();
            let (resource, capabilities) = pinned_kind(&cluster.client, &gvk).await.unwrap();
            let api: Api<DynamicObject> = match capabilities.scope {
                Scope::Namespaced => Api::namespaced_with(
                    cluster.client.clone(),
                    object.metadata.namespace.as_deref().unwrap(),
                    &resource,
                ),
                Scope::Cluster => Api::all_with(cluster.client.clone(), &resource),
            };
            let name = object.metadata.name.clone().unwrap();
            api.patch(&name, &params, &Patch::Apply(&object))
                .await
                .unwrap_or_else(|e| panic!("{file}: {} {name}: {e}", types.kind));
        }
    }
}

/// What each identity does in the cluster, as (API group, resource, verb).
const API_USES: &[(&str, &str, &str)] = &[
    ("berth.dev", "projects", "get"),
    ("berth.dev", "projects", "list"),
    ("berth.dev", "projects", "create"),
    ("berth.dev", "projects", "delete"),
    ("berth.dev", "environments", "get"),
    ("berth.dev", "environments", "list"),
    ("berth.dev", "environments", "create"),
    ("berth.dev", "environments", "patch"),
    ("berth.dev", "apps", "get"),
    ("berth.dev", "apps", "list"),
    ("berth.dev", "apps", "create"),
    ("berth.dev", "apps", "update"),
    ("berth.dev", "apps", "patch"),
    ("berth.dev", "apps", "delete"),
    ("", "pods", "list"),
    ("", "pods/log", "get"),
    ("", "persistentvolumeclaims", "list"),
    ("", "persistentvolumeclaims", "delete"),
    ("batch", "cronjobs", "get"),
    ("batch", "jobs", "create"),
    ("", "secrets", "get"),
    ("", "secrets", "list"),
    ("", "secrets", "create"),
    ("", "secrets", "update"),
    ("", "secrets", "delete"),
];

const CONTROLLER_USES: &[(&str, &str, &str)] = &[
    ("berth.dev", "projects", "list"),
    ("berth.dev", "projects", "watch"),
    ("berth.dev", "projects", "patch"),
    ("berth.dev", "projects/status", "patch"),
    ("berth.dev", "environments", "list"),
    ("berth.dev", "environments", "watch"),
    ("berth.dev", "environments", "delete"),
    ("berth.dev", "environments/status", "patch"),
    ("", "namespaces", "list"),
    ("", "namespaces", "watch"),
    ("", "namespaces", "get"),
    ("", "namespaces", "create"),
    ("", "namespaces", "patch"),
    ("", "namespaces", "delete"),
    ("", "resourcequotas", "create"),
    ("", "resourcequotas", "patch"),
    ("", "limitranges", "create"),
    ("", "limitranges", "patch"),
    ("networking.k8s.io", "networkpolicies", "list"),
    ("networking.k8s.io", "networkpolicies", "watch"),
    ("networking.k8s.io", "networkpolicies", "create"),
    ("networking.k8s.io", "networkpolicies", "patch"),
    ("berth.dev", "apps", "list"),
    ("berth.dev", "apps", "watch"),
    ("berth.dev", "apps/status", "patch"),
    ("apps", "deployments", "list"),
    ("apps", "deployments", "watch"),
    ("apps", "deployments", "create"),
    ("apps", "deployments", "patch"),
    ("apps", "deployments", "delete"),
    ("batch", "cronjobs", "list"),
    ("batch", "cronjobs", "watch"),
    ("batch", "cronjobs", "create"),
    ("batch", "cronjobs", "patch"),
    ("batch", "cronjobs", "delete"),
    ("", "services", "list"),
    ("", "services", "create"),
    ("", "services", "patch"),
    ("", "services", "delete"),
    ("autoscaling", "horizontalpodautoscalers", "list"),
    ("autoscaling", "horizontalpodautoscalers", "create"),
    ("autoscaling", "horizontalpodautoscalers", "patch"),
    ("autoscaling", "horizontalpodautoscalers", "delete"),
    ("networking.k8s.io", "ingresses", "list"),
    ("networking.k8s.io", "ingresses", "create"),
    ("networking.k8s.io", "ingresses", "patch"),
    ("networking.k8s.io", "ingresses", "delete"),
    ("", "persistentvolumeclaims", "list"),
    ("", "persistentvolumeclaims", "get"),
    ("", "persistentvolumeclaims", "create"),
    ("", "persistentvolumeclaims", "patch"),
    ("", "persistentvolumeclaims", "delete"),
];

fn granted(file: &str, role: &str) -> BTreeSet<(String, String, String)> {
    let document = documents(file)
        .into_iter()
        .find(|d| {
            d["kind"].as_str() == Some("ClusterRole")
                && d["metadata"]["name"].as_str() == Some(role)
        })
        .unwrap();
    let mut grants = BTreeSet::new();
    for rule in document["rules"].as_sequence().unwrap() {
        let list = |field: &str| -> Vec<String> {
            rule[field]
                .as_sequence()
                .map(|s| s.iter().map(|v| v.as_str().unwrap().to_owned()).collect())
                .unwrap_or_default()
        };
        for group in list("apiGroups") {
            for resource in list("resources") {
                for verb in list("verbs") {
                    grants.insert((group.clone(), resource.clone(), verb));
                }
            }
        }
    }
    grants
}

#[test]
fn roles_grant_what_the_code_uses_and_nothing_wildcard() {
    for (file, role, uses) in [
        ("api-rbac.yaml", "berth-api", API_USES),
        ("controller.yaml", "berth-controller", CONTROLLER_USES),
    ] {
        let grants = granted(file, role);
        for (group, resource, verb) in uses {
            assert!(
                grants.contains(&(
                    (*group).to_owned(),
                    (*resource).to_owned(),
                    (*verb).to_owned()
                )),
                "{role} lacks {verb} {group}/{resource}"
            );
        }
        assert!(
            grants
                .iter()
                .all(|(g, r, v)| g != "*" && r != "*" && v != "*"),
            "{role} uses wildcards"
        );
        // Only the API touches secrets, and only as its uses list.
        assert!(
            grants
                .iter()
                .filter(|(_, r, _)| r == "secrets")
                .all(|(g, r, v)| uses.contains(&(g.as_str(), r.as_str(), v.as_str()))),
            "{role} does more with secrets than it needs"
        );
    }
    let bindings: Vec<_> = documents("api-rbac.yaml")
        .into_iter()
        .chain(documents("controller.yaml"))
        .filter(|d| d["kind"].as_str() == Some("ClusterRoleBinding"))
        .collect();
    assert!(
        bindings
            .iter()
            .all(|b| b["roleRef"]["name"].as_str() != Some("cluster-admin"))
    );
}
