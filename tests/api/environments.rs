//! Environments and their lifecycle through the controller: provisioned as a
//! namespace with a quota, purged when deleted (production after its grace).

use std::time::Duration;

use http::Method;
use k8s_openapi::api::core::v1::{LimitRange, ResourceQuota};
use kube::Api;
use serde_json::{Value, json};

use crate::support::{TestApp, eventually};
use berth_shared::Role;

async fn wait_ready(app: &TestApp, project: &str, environment: &str) -> Value {
    let path = format!("/api/v1/projects/{project}/environments/{environment}");
    eventually("the environment becomes Ready", 30, || async {
        app.get(&path).by(&app.owner).send().await.json()["phase"] == "Ready"
    })
    .await;
    app.get(&path).by(&app.owner).send().await.json()
}

#[tokio::test]
async fn an_environment_becomes_a_namespace_with_its_quota() {
    let app = TestApp::with_cluster().await;
    let project = app.create_project("p").await;
    let created = app
        .post(&format!("/api/v1/projects/{project}/environments"))
        .by(&app.owner)
        .json(json!({ "name": "staging", "env_type": "standard", "quota": { "cpu": "2", "memory": "4Gi", "pods": 20 } }))
        .send()
        .await;
    created.assert_status(201);
    assert_eq!(
        created.headers["location"],
        format!("/api/v1/projects/{project}/environments/staging")
    );
    let body = created.json();
    let resource_name = format!("{project}-staging");
    assert_eq!(body["name"], "staging");
    assert_eq!(body["resource_name"], resource_name.as_str());
    assert_eq!(body["namespace"], resource_name.as_str());
    assert_eq!(body["project"], project.as_str());
    assert_eq!(body["env_type"], "standard");
    assert_eq!(body["phase"], "Pending");
    assert_eq!(
        (body["ready"].as_bool(), body["deleting"].as_bool()),
        (Some(false), Some(false))
    );
    assert!(body["deletion_scheduled_at"].is_null());
    for field in ["message", "created_at"] {
        assert!(body.get(field).is_some(), "{field}");
    }

    let ready = wait_ready(&app, &project, "staging").await;
    assert_eq!(ready["ready"], true);
    let cluster = app.cluster();
    assert!(cluster.namespace_exists(&resource_name).await);
    // The controller logs the phase as a value, not a debug form
    // (`phase=Some("Ready")`) nor a quoted string.
    let logged = format!("status environment={resource_name} phase=Ready");
    eventually(&format!("the controller logs `{logged}`"), 10, || async {
        crate::support::logs::captured().contains(&logged)
    })
    .await;
    let quota = Api::<ResourceQuota>::namespaced(cluster.client.clone(), &resource_name)
        .get("berth-quota")
        .await
        .unwrap();
    let hard = quota.spec.unwrap().hard.unwrap();
    assert_eq!(hard["limits.cpu"].0, "2");
    assert_eq!(hard["limits.memory"].0, "4Gi");
    assert_eq!(hard["pods"].0, "20");
    Api::<LimitRange>::namespaced(cluster.client.clone(), &resource_name)
        .get("berth-defaults")
        .await
        .unwrap();
    let namespace = Api::<k8s_openapi::api::core::v1::Namespace>::all(cluster.client.clone())
        .get(&resource_name)
        .await
        .unwrap();
    let labels = namespace.metadata.labels.unwrap();
    assert_eq!(labels["berth.dev/project"], project.as_str());
    assert_eq!(labels["berth.dev/environment"], "staging");
    assert_eq!(labels["berth.dev/org"], "acme");

    let listed = app
        .get(&format!("/api/v1/projects/{project}/environments"))
        .by(&app.owner)
        .send()
        .await;
    listed.assert_status(200);
    assert_eq!(listed.json().as_array().unwrap().len(), 1);
    let project_record = app
        .get(&format!("/api/v1/projects/{project}"))
        .by(&app.owner)
        .send()
        .await
        .json();
    assert_eq!(project_record["environments"], 1);
}

#[tokio::test]
async fn deleting_a_standard_environment_purges_it() {
    let app = TestApp::with_cluster().await;
    let project = app.create_project("p").await;
    app.create_environment(&project, json!({ "name": "dev" }))
        .await;
    wait_ready(&app, &project, "dev").await;
    let path = format!("/api/v1/projects/{project}/environments/dev");
    let deleted = app
        .request(Method::DELETE, &path)
        .by(&app.owner)
        .send()
        .await;
    deleted.assert_status(202);
    let body = deleted.json();
    assert_eq!(body["deleting"], true);
    assert!(body["deletion_scheduled_at"].as_str().is_some());
    let namespace = format!("{project}-dev");
    eventually("the environment is purged", 30, || async {
        app.get(&path).by(&app.owner).send().await.status == 404
            && !app.cluster().namespace_exists(&namespace).await
    })
    .await;
    // Now the project is empty and can go.
    app.request(Method::DELETE, &format!("/api/v1/projects/{project}"))
        .by(&app.owner)
        .send()
        .await
        .assert_status(202);
}

#[tokio::test]
async fn a_production_environment_waits_for_its_grace() {
    let app =
        TestApp::with_cluster_config(|config| config.production_grace = Duration::from_secs(4))
            .await;
    let developer = app.user(Role::Developer).await;
    let project = app.create_project("p").await;
    app.create_environment(
        &project,
        json!({ "name": "prod", "env_type": "production" }),
    )
    .await;
    wait_ready(&app, &project, "prod").await;
    let path = format!("/api/v1/projects/{project}/environments/prod");
    app.request(Method::DELETE, &path)
        .by(&developer)
        .send()
        .await
        .assert_problem(403, "forbidden");

    let deleted = app
        .request(Method::DELETE, &path)
        .by(&app.owner)
        .send()
        .await;
    deleted.assert_status(202);
    let scheduled = deleted.json()["deletion_scheduled_at"]
        .as_str()
        .unwrap()
        .to_owned();
    let at = berth_shared::clock::parse_rfc3339(&scheduled).unwrap();
    let wait = at - berth_shared::clock::unix_seconds();
    assert!((2..=5).contains(&wait), "{scheduled}");

    // Still there, marked as deleting, until the time comes.
    let record = app.get(&path).by(&app.owner).send().await.json();
    assert_eq!(
        (
            record["deleting"].as_bool(),
            record["deletion_scheduled_at"].as_str()
        ),
        (Some(true), Some(scheduled.as_str()))
    );
    assert!(
        app.cluster()
            .namespace_exists(&format!("{project}-prod"))
            .await
    );
    // Deleting again changes nothing.
    let again = app
        .request(Method::DELETE, &path)
        .by(&app.owner)
        .send()
        .await;
    again.assert_status(202);
    assert_eq!(again.json()["deletion_scheduled_at"], scheduled.as_str());

    eventually(
        "the production environment is purged after its grace",
        30,
        || async { app.get(&path).by(&app.owner).send().await.status == 404 },
    )
    .await;
    assert!(
        berth_shared::clock::unix_seconds() >= at,
        "purged no earlier than scheduled"
    );
    assert!(
        !app.cluster()
            .namespace_exists(&format!("{project}-prod"))
            .await
    );
}

#[tokio::test]
async fn environment_requests_are_validated() {
    let app = TestApp::with_cluster().await;
    let project = app.create_project("p").await;
    let create = |body| {
        app.post(&format!("/api/v1/projects/{project}/environments"))
            .by(&app.owner)
            .json(body)
    };
    for bad in [
        json!({ "name": "Dev" }),
        json!({ "name": "a".repeat(23) }),
        json!({ "name": "dev", "env_type": "qa" }),
        json!({ "name": "dev", "quota": { "cpu": "two" } }),
        json!({ "name": "dev", "quota": { "memory": "4GB" } }),
        json!({ "name": "dev", "quota": { "pods": 0 } }),
    ] {
        create(bad.clone())
            .send()
            .await
            .assert_problem(422, "validation_failed");
    }
    create(json!({ "env_type": "standard" }))
        .send()
        .await
        .assert_problem(400, "invalid_request");
    create(json!({ "name": "dev", "quota": { "gpus": 1 } }))
        .send()
        .await
        .assert_problem(400, "invalid_request");
    create(json!({ "name": "dev", "quota": { "pods": "many" } }))
        .send()
        .await
        .assert_problem(400, "invalid_request");
    let listed = app
        .get(&format!("/api/v1/projects/{project}/environments"))
        .by(&app.owner)
        .send()
        .await
        .json();
    assert_eq!(listed, json!([]), "nothing was created");

    create(json!({ "name": "dev" }))
        .send()
        .await
        .assert_status(201);
    create(json!({ "name": "dev", "env_type": "preview" }))
        .send()
        .await
        .assert_problem(409, "conflict");
    app.post("/api/v1/projects/no-such-project/environments")
        .by(&app.owner)
        .json(json!({ "name": "dev" }))
        .send()
        .await
        .assert_problem(404, "not_found");
    app.get(&format!("/api/v1/projects/{project}/environments/nope"))
        .by(&app.owner)
        .send()
        .await
        .assert_problem(404, "not_found");
    app.request(
        Method::DELETE,
        &format!("/api/v1/projects/{project}/environments/nope"),
    )
    .by(&app.owner)
    .send()
    .await
    .assert_problem(404, "not_found");
}

#[tokio::test]
async fn a_deleting_project_takes_no_new_environments() {
    let app = TestApp::with_cluster().await;
    let project = app.create_project("p").await;
    let path = format!("/api/v1/projects/{project}");
    // Wait for the controller's finalizer, which keeps the project while it is deleting.
    eventually("the project becomes ready", 20, || async {
        app.get(&path).by(&app.owner).send().await.json()["ready"] == true
    })
    .await;
    // Hold the project in deletion with a finalizer of our own, as a slow cleanup would.
    let projects: Api<berth_shared::cluster::crd::Project> = Api::all(app.cluster().client.clone());
    projects
        .patch(&project, &kube::api::PatchParams::default(), &kube::api::Patch::Merge(json!({ "metadata": { "finalizers": ["berth.dev/project-protection", "tests.berth.dev/hold"] } })))
        .await
        .unwrap();
    app.request(Method::DELETE, &path)
        .by(&app.owner)
        .send()
        .await
        .assert_status(202);
    app.post(&format!("{path}/environments"))
        .by(&app.owner)
        .json(json!({ "name": "late" }))
        .send()
        .await
        .assert_problem(409, "conflict");
    let held = projects.get(&project).await.unwrap();
    let rest: Vec<String> = held
        .metadata
        .finalizers
        .unwrap_or_default()
        .into_iter()
        .filter(|f| f != "tests.berth.dev/hold")
        .collect();
    projects
        .patch(
            &project,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({ "metadata": { "finalizers": rest } })),
        )
        .await
        .unwrap();
    eventually("the project is gone", 20, || async {
        app.get(&path).by(&app.owner).send().await.status == 404
    })
    .await;
}

#[tokio::test]
async fn a_scheduled_purge_survives_a_controller_restart() {
    let app =
        TestApp::with_cluster_config(|config| config.production_grace = Duration::from_secs(4))
            .await;
    let project = app.create_project("p").await;
    app.create_environment(
        &project,
        json!({ "name": "prod", "env_type": "production" }),
    )
    .await;
    wait_ready(&app, &project, "prod").await;
    let path = format!("/api/v1/projects/{project}/environments/prod");
    app.request(Method::DELETE, &path)
        .by(&app.owner)
        .send()
        .await
        .assert_status(202);
    app.cluster().restart_controller().await;
    eventually(
        "the new controller purges it when its time comes",
        30,
        || async { app.get(&path).by(&app.owner).send().await.status == 404 },
    )
    .await;
    assert!(
        !app.cluster()
            .namespace_exists(&format!("{project}-prod"))
            .await
    );
}

#[tokio::test]
#[cfg_attr(berth_real_cluster, ignore = "needs the stand-in's fault knobs")]
async fn a_provisioning_failure_shows_as_degraded_until_it_heals() {
    let app = TestApp::with_cluster().await;
    let standin = app.standin();
    let project = app.create_project("p").await;
    standin.add_fault(
        berth_kube_standin::Fault::new(berth_kube_standin::FaultKind::InternalError, 2)
            .method("PATCH")
            .path_contains("/resourcequotas/"),
    );
    app.create_environment(&project, json!({ "name": "dev", "quota": { "cpu": "1" } }))
        .await;
    let path = format!("/api/v1/projects/{project}/environments/dev");
    eventually("the environment shows as Degraded", 20, || async {
        let record = app.get(&path).by(&app.owner).send().await.json();
        record["phase"] == "Degraded"
            && record["ready"] == false
            && record["message"].as_str().is_some_and(|m| !m.is_empty())
    })
    .await;
    // The controller backs off and tries again; the fault is spent.
    let healed = wait_ready(&app, &project, "dev").await;
    assert!(healed["message"].is_null(), "{healed}");
}

#[tokio::test]
async fn a_purge_shows_terminating_while_the_namespace_goes() {
    let app = TestApp::with_cluster().await;
    let project = app.create_project("p").await;
    app.create_environment(&project, json!({ "name": "dev" }))
        .await;
    wait_ready(&app, &project, "dev").await;
    // Something in the cluster holds the namespace, as a slow cleanup would.
    let namespace = format!("{project}-dev");
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> =
        Api::all(app.cluster().client.clone());
    let hold =
        kube::api::Patch::Merge(json!({ "metadata": { "finalizers": ["tests.berth.dev/hold"] } }));
    namespaces
        .patch(&namespace, &kube::api::PatchParams::default(), &hold)
        .await
        .unwrap();

    let path = format!("/api/v1/projects/{project}/environments/dev");
    app.request(Method::DELETE, &path)
        .by(&app.owner)
        .send()
        .await
        .assert_status(202);
    eventually("the environment shows Terminating", 20, || async {
        let record = app.get(&path).by(&app.owner).send().await.json();
        record["phase"] == "Terminating" && record["ready"] == false && record["deleting"] == true
    })
    .await;
    assert!(app.cluster().namespace_exists(&namespace).await);

    let release = kube::api::Patch::Merge(json!({ "metadata": { "finalizers": null } }));
    namespaces
        .patch(&namespace, &kube::api::PatchParams::default(), &release)
        .await
        .unwrap();
    eventually("the environment is purged", 30, || async {
        app.get(&path).by(&app.owner).send().await.status == 404
    })
    .await;
}
