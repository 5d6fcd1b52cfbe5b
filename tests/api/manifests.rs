//! `infra/k8s/`: the CRDs file matches the code, every manifest applies to a
//! cluster, and the roles grant what the code uses and no more than that.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use crate::support::identities::{self, documents};
use crate::support::{TestCluster, stdout_of};

fn manifest(name: &str) -> String {
    std::fs::read_to_string(
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
            .join("infra/k8s")
            .join(name),
    )
    .unwrap()
}

#[test]
fn crds_file_matches_the_code() {
    let generated = berth_cluster::crd::definitions_yaml();
    if std::env::var_os("BERTH_WRITE_CRDS").is_some() {
        std::fs::write(
            Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/..")).join("infra/k8s/crds.yaml"),
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
    assert_eq!(
        kinds,
        ["Project", "Environment", "App", "Build", "Run", "Command"]
    );
    for crd in documents("crds.yaml") {
        let version = &crd["spec"]["versions"][0];
        assert_eq!(crd["spec"]["group"].as_str(), Some("berth.dev"));
        assert_eq!(version["name"].as_str(), Some("v1"));
        assert!(
            version["schema"]["openAPIV3Schema"]["properties"]["spec"].is_mapping(),
            "an OpenAPI schema"
        );
        // A Run has no status: it lives until its Job is made.
        if crd["spec"]["names"]["kind"].as_str() != Some("Run") {
            assert_eq!(
                version["subresources"]["status"],
                serde_yaml::Value::Mapping(Default::default())
            );
        }
    }
}

/// `kubectl kustomize infra/k8s`: the installation, as `kubectl apply -k`
/// sends it.
fn rendered() -> Vec<serde_yaml::Value> {
    // kubectl 1.14 or later has kustomize built in.
    let output = stdout_of(
        Command::new("kubectl")
            .args(["kustomize", "infra/k8s"])
            .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/..")),
    );
    serde_yaml::Deserializer::from_str(&output)
        .map(|doc| serde::Deserialize::deserialize(doc).expect("a YAML document"))
        .collect()
}

fn named<'a>(objects: &'a [serde_yaml::Value], kind: &str) -> Vec<&'a serde_yaml::Value> {
    objects
        .iter()
        .filter(|o| o["kind"].as_str() == Some(kind))
        .collect()
}

/// One installation: the CRDs, the controller's namespace, identity, role,
/// settings and Deployment, the API's identity and role, the roles bound in
/// each environment's namespace, and the admission policy; the image and
/// the settings as `kustomization.yaml` sets them; the RBAC the tests run
/// under is exactly what is installed.
#[test]
fn the_kustomization_renders_one_installation() {
    let objects = rendered();
    let mut kinds: Vec<&str> = objects.iter().filter_map(|o| o["kind"].as_str()).collect();
    kinds.sort_unstable();
    assert_eq!(
        kinds,
        [
            "ClusterRole",
            "ClusterRole",
            "ClusterRole",
            "ClusterRole",
            "ClusterRoleBinding",
            "ClusterRoleBinding",
            "ConfigMap",
            "CustomResourceDefinition",
            "CustomResourceDefinition",
            "CustomResourceDefinition",
            "CustomResourceDefinition",
            "CustomResourceDefinition",
            "CustomResourceDefinition",
            "Deployment",
            "LimitRange",
            "Namespace",
            "Namespace",
            "NetworkPolicy",
            "ResourceQuota",
            "Role",
            "Role",
            "Role",
            "RoleBinding",
            "RoleBinding",
            "RoleBinding",
            "ServiceAccount",
            "ServiceAccount",
            "ValidatingAdmissionPolicy",
            "ValidatingAdmissionPolicyBinding",
        ]
    );
    // The tests apply the installation's RBAC, as kustomize renders it.
    let applied_by_tests = identities::rbac_objects();
    let rendered_rbac = objects
        .iter()
        .filter(|o| identities::RBAC_KINDS.contains(&o["kind"].as_str().unwrap_or_default()))
        .count();
    assert_eq!(rendered_rbac, applied_by_tests.len());
    for object in &applied_by_tests {
        assert!(objects.contains(object), "rendered unchanged: {object:?}");
    }

    let deployment = named(&objects, "Deployment")[0];
    let pod = &deployment["spec"]["template"]["spec"];
    let container = &pod["containers"][0];
    assert_eq!(
        container["image"].as_str(),
        Some(format!("berth-controller:{}", env!("CARGO_PKG_VERSION")).as_str()),
        "kustomization.yaml's images: tags the controller's version (make controller-image builds it)"
    );
    assert_eq!(pod["securityContext"]["runAsUser"].as_u64(), Some(65532));
    // Two replicas, one leading; probed on the controller's own endpoint.
    assert_eq!(deployment["spec"]["replicas"].as_u64(), Some(2));
    assert_eq!(container["ports"][0]["containerPort"].as_u64(), Some(8080));
    assert_eq!(
        container["livenessProbe"]["httpGet"]["path"].as_str(),
        Some("/healthz")
    );
    assert_eq!(
        container["readinessProbe"]["httpGet"]["path"].as_str(),
        Some("/readyz")
    );
    for probe in ["livenessProbe", "readinessProbe"] {
        assert_eq!(container[probe]["httpGet"]["port"].as_str(), Some("http"));
    }
    let downward: Vec<&str> = container["env"]
        .as_sequence()
        .expect("the pod's name, namespace and uid")
        .iter()
        .filter_map(|variable| variable["name"].as_str())
        .collect();
    assert_eq!(
        downward,
        [
            "BERTH_REPLICA",
            "BERTH_LEASE_NAMESPACE",
            "BERTH_REPLICA_UID"
        ]
    );
    for variable in &downward {
        assert!(
            controller_main_reads(variable),
            "the controller reads {variable}"
        );
    }
    assert!(container["resources"]["requests"].is_mapping());
    assert!(container["resources"]["limits"].is_mapping());
    let config_map = named(&objects, "ConfigMap")[0];
    let generated_name = config_map["metadata"]["name"].as_str().unwrap();
    assert!(
        generated_name.starts_with("berth-controller-"),
        "kustomize names it with a hash of its data: {generated_name}"
    );
    assert_eq!(
        container["envFrom"][0]["configMapRef"]["name"].as_str(),
        Some(generated_name)
    );
    // Every setting is one the controller reads and docs/configuration.md documents.
    let documented = include_str!("../../docs/configuration.md");
    let settings: Vec<&str> = config_map["data"]
        .as_mapping()
        .unwrap()
        .keys()
        .map(|key| key.as_str().unwrap())
        .collect();
    for setting in [
        "BERTH_INGRESS_CLASS",
        "BERTH_APPS_DOMAIN",
        "BERTH_PROGRESS_DEADLINE_SECONDS",
        "BERTH_RELEASE_DEADLINE_SECONDS",
        "BERTH_CONTROLLER_ADDR",
        "BERTH_LEASE_DURATION_SECONDS",
        "RUST_LOG",
    ] {
        assert!(settings.contains(&setting), "{setting} is set in one place");
    }
    for setting in settings {
        assert!(
            setting == "RUST_LOG" || controller_main_reads(setting),
            "the controller reads {setting}"
        );
        assert!(
            documented.contains(&format!("| `{setting}` |")),
            "the Configuration table of docs/configuration.md has {setting}"
        );
    }
}

fn controller_main_reads(variable: &str) -> bool {
    include_str!("../../controller/src/main.rs").contains(&format!("\"{variable}\""))
}

/// What `kubectl apply -k` of an installation installs, a cluster accepts:
/// `infra/k8s`, with the component `admission-v1beta1` where the cluster
/// serves the admission policy only at `v1beta1` (Kubernetes 1.28, 1.29).
#[tokio::test]
async fn the_rendered_installation_applies() {
    let cluster = TestCluster::start().await;
    identities::apply(
        &cluster.client,
        &identities::installation_for(&cluster.client).await,
    )
    .await;
}

/// The component for Kubernetes 1.28 and 1.29 changes only the admission
/// policy's and its binding's version.
#[test]
fn the_v1beta1_component_changes_only_the_policys_version() {
    let plain = rendered();
    let with = identities::kustomize(&[identities::ADMISSION_V1BETA1_COMPONENT]);
    assert_eq!(plain.len(), with.len());
    let mut changed = 0;
    for (plain, with) in plain.iter().zip(&with) {
        if plain["apiVersion"].as_str() == Some("admissionregistration.k8s.io/v1") {
            changed += 1;
            assert_eq!(
                with["apiVersion"].as_str(),
                Some("admissionregistration.k8s.io/v1beta1")
            );
            let mut with = with.clone();
            with["apiVersion"] = plain["apiVersion"].clone();
            assert_eq!(plain, &with);
        } else {
            assert_eq!(plain, with);
        }
    }
    assert_eq!(changed, 2, "the policy and its binding");
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
    ("", "namespaces", "get"),
    ("berth.dev", "apps", "get"),
    ("berth.dev", "apps", "list"),
    ("berth.dev", "apps", "create"),
    ("berth.dev", "apps", "update"),
    ("berth.dev", "apps", "patch"),
    ("berth.dev", "apps", "delete"),
    ("berth.dev", "runs", "create"),
    ("berth.dev", "commands", "create"),
    ("berth.dev", "commands", "get"),
    ("berth.dev", "commands", "list"),
    ("", "pods", "list"),
    ("", "pods/log", "get"),
    ("", "persistentvolumeclaims", "list"),
    ("", "persistentvolumeclaims", "delete"),
    ("batch", "cronjobs", "get"),
    ("", "secrets", "get"),
    ("", "secrets", "list"),
    ("", "secrets", "create"),
    ("", "secrets", "update"),
    ("", "secrets", "delete"),
    ("berth.dev", "builds", "get"),
    ("berth.dev", "builds", "list"),
    ("berth.dev", "builds", "create"),
    ("berth.dev", "builds", "delete"),
];

const CONTROLLER_USES: &[(&str, &str, &str)] = &[
    ("berth.dev", "projects", "list"),
    ("berth.dev", "projects", "watch"),
    ("berth.dev", "projects", "patch"),
    ("berth.dev", "projects/status", "patch"),
    ("berth.dev", "environments", "list"),
    ("berth.dev", "environments", "watch"),
    ("berth.dev", "environments", "get"),
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
    ("berth.dev", "apps", "get"),
    ("berth.dev", "apps", "list"),
    ("berth.dev", "apps", "watch"),
    ("berth.dev", "apps/status", "patch"),
    ("events.k8s.io", "events", "create"),
    ("events.k8s.io", "events", "patch"),
    ("coordination.k8s.io", "leases", "get"),
    ("coordination.k8s.io", "leases", "create"),
    ("coordination.k8s.io", "leases", "patch"),
    ("apps", "deployments", "list"),
    ("apps", "deployments", "watch"),
    ("apps", "deployments", "create"),
    ("apps", "deployments", "patch"),
    ("apps", "deployments", "delete"),
    ("batch", "cronjobs", "get"),
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
    ("", "secrets", "get"),
    ("", "secrets", "patch"),
    ("", "secrets", "create"),
    ("", "secrets", "delete"),
    ("cert-manager.io", "certificates", "get"),
    ("berth.dev", "runs", "list"),
    ("berth.dev", "runs", "watch"),
    ("berth.dev", "runs", "delete"),
    ("berth.dev", "commands", "list"),
    ("berth.dev", "commands", "watch"),
    ("berth.dev", "commands", "delete"),
    ("berth.dev", "commands/status", "patch"),
    ("rbac.authorization.k8s.io", "rolebindings", "create"),
    ("rbac.authorization.k8s.io", "rolebindings", "patch"),
    ("rbac.authorization.k8s.io", "clusterroles", "bind"),
    ("", "configmaps", "get"),
    ("", "pods", "list"),
    ("berth.dev", "builds", "list"),
    ("berth.dev", "builds", "watch"),
    ("berth.dev", "builds", "delete"),
    ("berth.dev", "builds/status", "update"),
    ("berth.dev", "apps", "update"),
    ("batch", "jobs", "get"),
    ("batch", "jobs", "create"),
];

/// The roles of an identity in `file`: the ClusterRole and the Roles named
/// after it, and the ClusterRole `{name}-environment` bound in each
/// environment's namespace.
fn roles(file: &str, name: &str) -> Vec<serde_yaml::Value> {
    let environment = format!("{name}-environment");
    documents(file)
        .into_iter()
        .filter(|d| {
            let named = d["metadata"]["name"].as_str();
            match d["kind"].as_str() {
                Some("ClusterRole") => named == Some(name) || named == Some(environment.as_str()),
                Some("Role") => named == Some(name),
                _ => false,
            }
        })
        .collect()
}

fn granted(file: &str, role: &str) -> BTreeSet<(String, String, String)> {
    let rules: Vec<serde_yaml::Value> = roles(file, role)
        .iter()
        .flat_map(|role| role["rules"].as_sequence().unwrap().clone())
        .collect();
    assert!(!rules.is_empty(), "{role} has rules in {file}");
    let mut grants = BTreeSet::new();
    for rule in &rules {
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
        // Secrets only as each role's uses list.
        assert!(
            grants
                .iter()
                .filter(|(_, r, _)| r == "secrets")
                .all(|(g, r, v)| uses.contains(&(g.as_str(), r.as_str(), v.as_str()))),
            "{role} does more with secrets than it needs"
        );
    }
    // The Lease only in the controller's own namespace: a cluster-wide grant
    // would let it take any other controller's Lease.
    for role in roles("controller.yaml", "berth-controller") {
        let leases = role["rules"]
            .as_sequence()
            .unwrap()
            .iter()
            .any(|rule| serde_yaml::to_string(rule).unwrap().contains("leases"));
        match role["kind"].as_str() {
            Some("Role") => assert_eq!(
                leases,
                role["metadata"]["namespace"].as_str() == Some("berth-system")
            ),
            _ => assert!(!leases, "the ClusterRole grants no leases"),
        }
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
    // No Secret is read cluster-wide: the roles bound everywhere grant no
    // read of them (an environment's are read through the RoleBindings the
    // controller makes in its namespace; the pull credential by name, in
    // berth-system), and the environments' roles are bound nowhere else.
    for binding in &bindings {
        let role = binding["roleRef"]["name"].as_str().unwrap();
        assert!(
            !role.ends_with("-environment"),
            "{role} is bound cluster-wide"
        );
        for cluster_role in documents("api-rbac.yaml")
            .into_iter()
            .chain(documents("controller.yaml"))
            .filter(|d| {
                d["kind"].as_str() == Some("ClusterRole")
                    && d["metadata"]["name"].as_str() == Some(role)
            })
        {
            for rule in cluster_role["rules"].as_sequence().unwrap() {
                let strings = |field: &str| serde_yaml::to_string(&rule[field]).unwrap();
                if strings("resources").contains("secrets") {
                    for read in ["get", "list", "watch"] {
                        assert!(
                            !strings("verbs").contains(read),
                            "{role} may {read} secrets everywhere"
                        );
                    }
                }
            }
        }
    }
}

/// No more than needed: every permission the two roles grant was used by
/// the API or the controller somewhere in the suite. The stand-in records
/// what RBAC let each ServiceAccount do (`StandIn::rbac_uses`), the tests
/// write it down (`identities::record_uses`), and `make test` runs this check
/// over the whole run's record. A grant nothing used is either not needed
/// (remove it) or not tested (test it).
#[test]
#[ignore = "make test runs it after the whole suite, over the suite's record (BERTH_TEST_RBAC_USES)"]
fn every_grant_of_the_roles_is_used() {
    let dir = std::env::var(identities::USES_DIR_ENV)
        .expect("the directory where the suite recorded what Berth's identities did");
    let mut used = BTreeSet::new();
    for entry in std::fs::read_dir(&dir).expect("the record's directory") {
        let text = std::fs::read_to_string(entry.expect("an entry").path()).expect("a record");
        used.extend(text.lines().map(str::to_owned));
    }
    assert!(!used.is_empty(), "nothing recorded in {dir}");
    let mut unused = Vec::new();
    for (file, account) in [
        ("api-rbac.yaml", identities::api_account()),
        ("controller.yaml", identities::controller_account()),
    ] {
        let rules: Vec<serde_yaml::Value> = roles(file, &account.name)
            .iter()
            .flat_map(|role| role["rules"].as_sequence().expect("rules").clone())
            .collect();
        assert!(!rules.is_empty(), "the account's roles");
        let user = format!(
            "system:serviceaccount:{}:{}",
            account.namespace, account.name
        );
        for rule in &rules {
            let list = |field: &str| -> Vec<String> {
                rule[field]
                    .as_sequence()
                    .map(|s| s.iter().map(|v| v.as_str().unwrap().to_owned()).collect())
                    .unwrap_or_default()
            };
            let mut targets: Vec<(String, String)> = list("nonResourceURLs")
                .into_iter()
                .map(|path| ("-".to_owned(), path))
                .collect();
            for group in list("apiGroups") {
                for resource in list("resources") {
                    let group = if group.is_empty() {
                        "-".into()
                    } else {
                        group.clone()
                    };
                    targets.push((group, resource));
                }
            }
            for (group, resource) in targets {
                for verb in list("verbs") {
                    let grant = format!("{user} {verb} {group} {resource}");
                    if !used.contains(&grant) {
                        unused.push(grant);
                    }
                }
            }
        }
    }
    assert!(
        unused.is_empty(),
        "granted in infra/k8s but used by no test: remove them, or test what needs them:\n{}",
        unused.join("\n")
    );
}
