//! An installation made with the manifests of before issue 26 (the API and
//! the controller with cluster-wide roles, no RoleBinding in environments'
//! namespaces, no admission policy) moves to the new grants as
//! docs/deploy.md says: `kubectl apply -k infra/k8s`, and the controller's
//! next start (the rollout of its new version) — every environment gets its
//! RoleBindings, every app reconciles, and the old grants are gone.

use std::time::Duration;

use http::Method;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::rbac::v1::{ClusterRole, RoleBinding};
use kube::api::{Api, DeleteParams, ListParams};
use serde_json::json;
use tokio::process::Command;

use berth_api::access::client_from_kubeconfig;

use crate::support::identities::{ADMISSION_POLICY, admission_api};
use crate::support::{TestApp, eventually, unique};

/// `kubectl` as the cluster's administrator, from the clone (not blocking:
/// the stand-in answers from this test's runtime).
async fn kubectl(admin_kubeconfig: &std::path::Path, args: &[&str]) {
    let output = Command::new("kubectl")
        .args(args)
        .env("KUBECONFIG", admin_kubeconfig)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .output()
        .await
        .expect("kubectl runs");
    assert!(
        output.status.success(),
        "kubectl {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[tokio::test]
#[cfg_attr(
    berth_real_cluster,
    ignore = "puts the cluster-wide roles of Berth's identities back as they were, which every other test runs as"
)]
async fn an_installation_from_before_moves_to_the_new_grants() {
    let app = TestApp::with_cluster().await;
    let cluster = app.cluster();
    let admin = cluster.client.clone();
    let project = app.ready_environment("upgrade", "dev").await;
    app.create_environment(&project, json!({"name": "prod", "env_type": "standard"}))
        .await;
    app.wait_for_environment(&project, "prod").await;
    let environments = ["dev", "prod"];
    for environment in environments {
        let base = format!("/api/v1/projects/{project}/environments/{environment}");
        app.create_app(
            &format!("{base}/apps"),
            json!({"name": "shop", "image": "nginx:1.27", "port": 80}),
        )
        .await;
        app.request(Method::PUT, &format!("{base}/secrets/db"))
            .by(&app.owner)
            .json(json!({"data": {"password": "s3cret"}}))
            .send()
            .await
            .assert_status(201);
    }

    // The installation as it was: the controller stopped, no RoleBindings
    // in environments' namespaces, no admission policy, no environment
    // roles, and the roles of before applied with kubectl.
    cluster.stop_controller().await;
    let kubeconfig = std::env::temp_dir().join(unique("upgrade-kubeconfig"));
    std::fs::write(&kubeconfig, &cluster.admin_kubeconfig).expect("the admin's kubeconfig");
    for environment in environments {
        let namespace = format!("{project}-{environment}");
        let bindings = Api::<RoleBinding>::namespaced(admin.clone(), &namespace);
        for name in ["berth-api", "berth-controller"] {
            bindings
                .delete(name, &DeleteParams::default())
                .await
                .expect("the controller made it");
        }
    }
    for role in ["berth-api-environment", "berth-controller-environment"] {
        Api::<ClusterRole>::all(admin.clone())
            .delete(role, &DeleteParams::default())
            .await
            .expect("the new role");
    }
    for binding in [true, false] {
        admission_api(&admin, binding)
            .delete(ADMISSION_POLICY, &DeleteParams::default())
            .await
            .expect("the admission policy");
    }
    kubectl(
        &kubeconfig,
        &[
            "apply",
            "-f",
            "tests/api/fixtures/rbac-before-issue-26.yaml",
        ],
    )
    .await;
    let api = client_from_kubeconfig(
        &cluster.kubeconfig,
        None,
        std::time::Duration::from_secs(10),
    )
    .await
    .expect("the API's client");
    eventually(
        "the old roles are in force: the API lists every Secret",
        || async {
            Api::<Secret>::all(api.clone())
                .list(&ListParams::default())
                .await
                .is_ok()
        },
    )
    .await;

    // The upgrade, as docs/deploy.md says it.
    kubectl(&kubeconfig, &["apply", "-k", "infra/k8s"]).await;
    cluster.restart_controller().await;

    for environment in environments {
        let namespace = format!("{project}-{environment}");
        let bindings = Api::<RoleBinding>::namespaced(admin.clone(), &namespace);
        eventually("the environment gets its RoleBindings back", || async {
            bindings
                .list(&ListParams::default())
                .await
                .is_ok_and(|list| {
                    let mut names: Vec<String> = list
                        .items
                        .iter()
                        .filter_map(|binding| binding.metadata.name.clone())
                        .collect();
                    names.sort();
                    names == ["berth-api", "berth-controller"]
                })
        })
        .await;
        // Every app still reconciles: a change reaches its Deployment.
        let base = format!("/api/v1/projects/{project}/environments/{environment}");
        app.request(Method::PATCH, &format!("{base}/apps/shop"))
            .by(&app.owner)
            .json(json!({"replicas": 2}))
            .send()
            .await
            .assert_status(200);
        let deployments = Api::<Deployment>::namespaced(admin.clone(), &namespace);
        eventually("the app's change is rendered", || async {
            deployments
                .get_opt("shop-web")
                .await
                .ok()
                .flatten()
                .is_some_and(|deployment| deployment.spec.and_then(|spec| spec.replicas) == Some(2))
        })
        .await;
        // The API reads the environment's secrets through the new binding.
        let listed = app
            .get(&format!("{base}/secrets"))
            .by(&app.owner)
            .send()
            .await;
        listed.assert_status(200);
        assert_eq!(listed.json()[0]["name"], "db", "{}", listed.text());
    }
    // The old grants are gone: no Secret is listed cluster-wide any more,
    // and the admission policy is in force.
    eventually("the old grants are gone", || async {
        matches!(
            Api::<Secret>::all(api.clone()).list(&ListParams::default()).await,
            Err(kube::Error::Api(status)) if status.code == 403
        )
    })
    .await;
    let refused = Api::<Secret>::namespaced(api.clone(), "kube-system")
        .get("any")
        .await;
    assert!(
        matches!(&refused, Err(kube::Error::Api(status)) if status.code == 403),
        "{refused:?}"
    );
    let _ = std::fs::remove_file(&kubeconfig);
}

/// Hostnames claimed before domains were proven (docs/api-notes.md,
/// "Domain ownership", upgrades): each claim of before is adopted — by the
/// scheduled sweep, or by the first write that meets it — as its
/// organization's, verified by the upgrade; its app, written before, keeps
/// serving it, and so does every later write; its owner has thirty days to
/// publish the proof (the domain check says so), and another organization's
/// claim is refused from the adoption on.
#[tokio::test]
async fn domains_claimed_before_stay_served_and_are_to_be_proven() {
    use crate::support::table as store;
    use berth_cluster::apps::ANNOTATION_VERIFIED;
    use berth_store::keys;
    use k8s_openapi::api::networking::v1::Ingress;

    use crate::support::dns::TestDns;

    let dns = TestDns::start().await;
    let (app, acme, other) = crate::domain_proofs::two_organizations(&dns).await;
    let swept = format!("{}.example.test", unique("swept"));
    let met = format!("{}.example.test", unique("met"));
    acme.create(&app, "shop", &[&swept, &met])
        .await
        .assert_status(201);

    // As before: one claim per hostname in top-level fields, and the App
    // without the annotation of verified domains.
    let resource = acme.resource(&app, "shop").await.expect("the App");
    let history = resource.metadata.annotations.clone().unwrap()
        [berth_cluster::apps::ANNOTATION_HISTORY]
        .clone();
    for hostname in [&swept, &met] {
        let key = store::key(keys::host(hostname), keys::HOST_SK);
        app.dynamodb
            .delete_item()
            .table_name(app.state.store.table())
            .set_key(Some(key))
            .send()
            .await
            .expect("the new item goes");
        let mut item = store::key(keys::host(hostname), keys::HOST_SK);
        for (name, value) in [
            ("org", acme.owner.org.as_str()),
            ("project", acme.project.as_str()),
            ("environment", "dev"),
            ("app", "shop"),
            ("history", history.as_str()),
            ("claim", "claim-of-before"),
        ] {
            item.insert(name.to_owned(), store::s(value));
        }
        item.insert("revision".to_owned(), store::n(1));
        item.insert("claimed_at".to_owned(), store::n(1));
        app.dynamodb
            .put_item()
            .table_name(app.state.store.table())
            .set_item(Some(item))
            .send()
            .await
            .expect("a claim of before");
    }
    let namespace = format!("{}-dev", acme.project);
    let apps = Api::<berth_cluster::crd::App>::namespaced(app.cluster().client.clone(), &namespace);
    apps.patch(
        "shop",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(
            json!({ "metadata": { "annotations": { ANNOTATION_VERIFIED: null } } }),
        ),
    )
    .await
    .expect("the App as it was");
    let ingresses = Api::<Ingress>::namespaced(app.cluster().client.clone(), &namespace);
    let served = || async {
        let ingress = ingresses
            .get_opt("shop")
            .await
            .expect("reading the Ingress");
        let rules = (ingress.and_then(|i| i.spec).and_then(|s| s.rules)).unwrap_or_default();
        rules
            .into_iter()
            .filter_map(|rule| rule.host)
            .filter(|host| *host == swept || *host == met)
            .count()
    };
    eventually("an App of before serves its domains", || async {
        served().await == 2
    })
    .await;

    // The first write that meets a claim of before adopts it: another
    // organization's is refused.
    let refused = other.create(&app, "web", &[&met]).await;
    refused.assert_problem(409, "domain_taken");
    assert!(other.read(&app, "web").await.is_none());
    // The sweep adopts the rest, once.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let run = berth_fn_cleanup::run(app.state.clone(), deadline)
        .await
        .expect("a sweep");
    assert_eq!(run.domains.expect("the domains' sweep").adopted, 1);
    other
        .create(&app, "web", &[&swept])
        .await
        .assert_problem(409, "domain_taken");

    // Served still, and by every later write; the check says what to
    // publish, and by when.
    let answer = app
        .get(&format!("{}/domains", acme.app("shop")))
        .by(&acme.owner)
        .send()
        .await;
    answer.assert_status(200);
    for entry in answer.json().as_array().unwrap() {
        let proof = &entry["verification"];
        assert_eq!(proof["state"], "lapsing", "{entry}");
        let ends: jiff::Timestamp = proof["lapses_at"].as_str().unwrap().parse().unwrap();
        let left = ends.duration_since(jiff::Timestamp::now());
        let day = jiff::SignedDuration::from_hours(24);
        assert!(left > day * 29 && left <= day * 30, "thirty days: {entry}");
    }
    app.request(Method::PATCH, &acme.app("shop"))
        .by(&acme.owner)
        .json(json!({ "env": [{ "name": "AFTER", "value": "upgrade" }] }))
        .send()
        .await
        .assert_status(200);
    let resource = acme.resource(&app, "shop").await.expect("the App");
    let verified = resource.metadata.annotations.unwrap()[ANNOTATION_VERIFIED].clone();
    assert_eq!(verified, format!("{swept},{met}"));
    assert_eq!(served().await, 2);

    // Its proof published: verified for good.
    let value = answer.json()[0]["verification"]["record_value"]
        .as_str()
        .unwrap()
        .to_owned();
    dns.publish_txt(&format!("_berth-challenge.{swept}"), &value)
        .await;
    let answer = app
        .get(&format!("{}/domains", acme.app("shop")))
        .by(&acme.owner)
        .send()
        .await;
    let proof = &answer.json()[0]["verification"];
    assert_eq!(proof["state"], "verified", "{proof}");
    assert_eq!(proof["lapses_at"], serde_json::Value::Null);
}
