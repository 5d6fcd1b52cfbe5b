//! Names in the cluster are platform-wide, and some are not Berth's to give:
//! reserved namespaces are refused, a name taken by anyone is a conflict that
//! says so, and a namespace Berth did not create is never touched.

use http::Method;
use k8s_openapi::api::core::v1::{LimitRange, Namespace, ResourceQuota};
use kube::Api;
use kube::api::{DeleteParams, ListParams, ObjectMeta, PostParams};
use serde_json::json;

use crate::support::{TestApp, eventually, unique};
use berth_domain::name_rules::ReservedNamespaces;

#[tokio::test]
async fn names_that_would_give_a_reserved_namespace_are_refused() {
    let app = TestApp::with_cluster_config(|config| {
        config.reserved_namespaces =
            ReservedNamespaces::with_configured("ops-monitoring, cert-manager*").unwrap();
    })
    .await;
    for name in [
        "kube",
        "berth",
        "kube-system",
        "berth-tools",
        "cert-manager",
    ] {
        let refused = app
            .post("/api/v1/projects")
            .by(&app.owner)
            .json(json!({ "name": name, "display_name": name }))
            .send()
            .await;
        refused.assert_problem(422, "validation_failed");
        assert!(
            refused.json()["detail"]
                .as_str()
                .is_some_and(|d| d.starts_with("name:")),
            "{}",
            refused.text()
        );
    }
    // Only some of a project's environments would be reserved: those are
    // refused one by one, before the project is even looked up.
    for (project, environment) in [
        ("ops", "monitoring"),
        ("cert", "manager"),
        ("cert", "manager-webhook"),
    ] {
        let refused = app
            .post(&format!("/api/v1/projects/{project}/environments"))
            .by(&app.owner)
            .json(json!({ "name": environment }))
            .send()
            .await;
        refused.assert_problem(422, "validation_failed");
        let detail = refused.json()["detail"].as_str().unwrap_or("").to_owned();
        assert!(
            detail.contains(&format!("{project}-{environment}")),
            "{detail}"
        );
    }
    // Names beside them are fine.
    let project = app.create_project("ops").await;
    app.create_environment(&project, json!({ "name": "monitoring" }))
        .await;
}

#[tokio::test]
async fn project_names_are_unique_across_the_platform() {
    let app = TestApp::with_cluster().await;
    let other = app.other_org("globex").await;
    let name = unique("shared");
    app.post("/api/v1/projects")
        .by(&other)
        .json(json!({ "name": name, "display_name": "Theirs" }))
        .send()
        .await
        .assert_status(201);
    let taken = app
        .post("/api/v1/projects")
        .by(&app.owner)
        .json(json!({ "name": name, "display_name": "Ours" }))
        .send()
        .await;
    taken.assert_problem(409, "conflict");
    let detail = taken.json()["detail"].as_str().unwrap_or("").to_owned();
    assert!(detail.contains("unique across the platform"), "{detail}");
    for secret in ["globex", other.email.as_str(), "Theirs"] {
        assert!(!detail.contains(secret), "{detail} reveals {secret}");
    }
    // Nothing tells the owner apart: the same answer as for one's own.
    let again = app
        .post("/api/v1/projects")
        .by(&other)
        .json(json!({ "name": name, "display_name": "Theirs" }))
        .send()
        .await;
    again.assert_problem(409, "conflict");
    assert_eq!(again.json()["detail"], detail.as_str());
    app.get(&format!("/api/v1/projects/{name}"))
        .by(&app.owner)
        .send()
        .await
        .assert_problem(404, "not_found");
}

#[tokio::test]
async fn two_environments_never_share_a_cluster_name() {
    let app = TestApp::with_cluster().await;
    // `{a}` + `b-c` and `{a}-b` + `c` both map to `{a}-b-c`.
    let a = app.create_project("a").await;
    let a_b = format!("{a}-b");
    app.post("/api/v1/projects")
        .by(&app.owner)
        .json(json!({ "name": a_b, "display_name": a_b }))
        .send()
        .await
        .assert_status(201);
    app.create_environment(&a, json!({ "name": "b-c" })).await;
    let taken = app
        .post(&format!("/api/v1/projects/{a_b}/environments"))
        .by(&app.owner)
        .json(json!({ "name": "c" }))
        .send()
        .await;
    taken.assert_problem(409, "conflict");
    let detail = taken.json()["detail"].as_str().unwrap_or("").to_owned();
    assert!(
        detail.contains(&format!("cluster name {a}-b-c is taken")),
        "{detail}"
    );
    app.get(&format!("/api/v1/projects/{a_b}/environments/c"))
        .by(&app.owner)
        .send()
        .await
        .assert_problem(404, "not_found");
    let listed = app
        .get(&format!("/api/v1/projects/{a_b}/environments"))
        .by(&app.owner)
        .send()
        .await
        .json();
    assert_eq!(listed, json!([]));
    // The environment that has the name keeps it, and its own project.
    let kept = app
        .get(&format!("/api/v1/projects/{a}/environments/b-c"))
        .by(&app.owner)
        .send()
        .await
        .json();
    assert_eq!(
        (kept["project"].as_str(), kept["name"].as_str()),
        (Some(a.as_str()), Some("b-c"))
    );
    // One's own duplicate still says just that.
    let duplicate = app
        .post(&format!("/api/v1/projects/{a}/environments"))
        .by(&app.owner)
        .json(json!({ "name": "b-c" }))
        .send()
        .await;
    duplicate.assert_problem(409, "conflict");
    assert!(
        duplicate.json()["detail"]
            .as_str()
            .is_some_and(|d| d.contains("already exists")),
        "{}",
        duplicate.text()
    );
}

#[tokio::test]
async fn a_namespace_berth_did_not_create_is_never_touched() {
    let app = TestApp::with_cluster().await;
    let cluster = app.cluster();
    let project = app.create_project("p").await;
    let name = format!("{project}-dev");
    // Someone else's namespace, with the name the environment would get.
    let namespaces: Api<Namespace> = Api::all(cluster.client.clone());
    let foreign = Namespace {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            labels: Some([("team".to_owned(), "someone-else".to_owned())].into()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    let foreign = namespaces
        .create(&PostParams::default(), &foreign)
        .await
        .expect("creating the foreign namespace");

    // The API refuses it (`owned_namespaces`); made behind its back, as if
    // the namespace had come between the API's look and the controller's.
    let quota = berth_domain::parts::Quota {
        cpu: Some("1".into()),
        ..Default::default()
    };
    app.create_environment_resource(&project, "dev", Some(quota))
        .await;
    let path = format!("/api/v1/projects/{project}/environments/dev");
    let expected = format!("namespace {name} already exists and is not managed by Berth");
    eventually("the environment shows as Degraded", || async {
        let record = app.get(&path).by(&app.owner).send().await.json();
        record["phase"] == "Degraded"
            && record["ready"] == false
            && record["message"] == expected.as_str()
    })
    .await;
    let assert_untouched = || async {
        let now = namespaces
            .get(&name)
            .await
            .expect("the foreign namespace is still there");
        assert_eq!(now.metadata.uid, foreign.metadata.uid, "the very same one");
        assert_eq!(
            now.metadata.labels, foreign.metadata.labels,
            "no label added"
        );
        assert!(
            now.metadata.owner_references.unwrap_or_default().is_empty(),
            "not adopted"
        );
        assert!(now.metadata.deletion_timestamp.is_none(), "not deleted");
        let quotas = Api::<ResourceQuota>::namespaced(cluster.client.clone(), &name)
            .list(&ListParams::default())
            .await
            .unwrap();
        assert!(quotas.items.is_empty(), "no quota added");
        let limits = Api::<LimitRange>::namespaced(cluster.client.clone(), &name)
            .list(&ListParams::default())
            .await
            .unwrap();
        assert!(limits.items.is_empty(), "no limit range added");
    };
    assert_untouched().await;

    // Deleting the environment purges it, and leaves the namespace alone.
    app.request(Method::DELETE, &path)
        .by(&app.owner)
        .send()
        .await
        .assert_status(202);
    eventually("the environment is purged", || async {
        app.get(&path).by(&app.owner).send().await.status == 404
    })
    .await;
    // Time for a wrong delete or a garbage collection to show, had there been one.
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    assert_untouched().await;

    namespaces
        .delete(&name, &DeleteParams::default())
        .await
        .expect("cleaning up");
}

/// A path name that cannot name an object of the cluster names nothing: 404
/// before the cluster is asked, which would refuse it as a URL or a label
/// selector (schemathesis found these as 503s).
#[tokio::test]
async fn a_path_name_that_cannot_be_an_object_is_not_found_without_asking_the_cluster() {
    let app = TestApp::with_cluster().await;
    let project = app.create_project("names").await;
    let long = "a".repeat(64);
    let calls = [
        (Method::GET, "/api/v1/projects/%40%ED%80%A5".to_owned()),
        (Method::GET, format!("/api/v1/projects/{long}/environments")),
        (
            Method::GET,
            format!("/api/v1/projects/{project}/environments/Prod"),
        ),
        (
            Method::GET,
            format!("/api/v1/projects/{project}/environments/dev/apps/shop%20x"),
        ),
        (
            Method::DELETE,
            format!("/api/v1/projects/{project}/environments/dev/secrets/a..b"),
        ),
        (
            Method::GET,
            format!("/api/v1/projects/{project}/environments/dev/apps/{long}/releases"),
        ),
    ];
    for (method, path) in calls {
        let asked = app.cluster_requests.get();
        app.request(method, &path)
            .by(&app.owner)
            .send()
            .await
            .assert_problem(404, "not_found");
        assert_eq!(app.cluster_requests.get(), asked, "{path}");
    }
}
