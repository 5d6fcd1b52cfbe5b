//! The cluster failing, hanging or unreachable during each write: a 503
//! `cluster_unavailable`, nothing half-made, and an audit event that says
//! `error`. These need the stand-in's knobs: built for a real cluster
//! (`BERTH_TEST_KUBECONFIG`), they are ignored, so reported as skipped.

use std::time::Duration;

use berth_kube_standin::{Fault, FaultKind};
use http::Method;
use serde_json::json;

use crate::support::{TestApp, eventually, unique};
use berth_records::audit::Outcome;

/// The cluster timeout of the tests whose calls hang: a hung call fails
/// after it, not after the production 10 s.
async fn app_whose_cluster_calls_time_out_soon() -> TestApp {
    TestApp::with_cluster_config(|config| config.cluster_timeout = Duration::from_secs(2)).await
}

async fn assert_error_recorded(app: &TestApp, action: &str) {
    let event = app.last_audit_event("acme").await;
    assert_eq!(
        (event.action.as_str(), event.outcome, event.status),
        (action, Outcome::Error, Some(503))
    );
}

#[tokio::test]
#[cfg_attr(berth_real_cluster, ignore = "needs the stand-in's fault knobs")]
async fn creating_a_project_while_the_cluster_fails() {
    let app = app_whose_cluster_calls_time_out_soon().await;
    let standin = app.standin();
    for kind in [
        FaultKind::ServiceUnavailable,
        FaultKind::InternalError,
        FaultKind::Hang,
    ] {
        let name = unique("fail");
        standin.add_fault(
            Fault::new(kind, 1)
                .method("POST")
                .path_contains("/projects"),
        );
        app.post("/api/v1/projects")
            .by(&app.owner)
            .json(json!({ "name": name, "display_name": "F" }))
            .send()
            .await
            .assert_problem(503, "cluster_unavailable");
        assert_error_recorded(&app, "createProject").await;
        app.get(&format!("/api/v1/projects/{name}"))
            .by(&app.owner)
            .send()
            .await
            .assert_problem(404, "not_found");
    }
}

#[tokio::test]
#[cfg_attr(berth_real_cluster, ignore = "needs the stand-in's fault knobs")]
async fn creating_an_environment_while_the_cluster_fails() {
    let app = app_whose_cluster_calls_time_out_soon().await;
    let standin = app.standin();
    let project = app.create_project("p").await;
    for (kind, method, path) in [
        (FaultKind::ServiceUnavailable, "POST", "/environments"),
        (FaultKind::Hang, "POST", "/environments"),
        // The project lookup before the create fails instead.
        (
            FaultKind::InternalError,
            "GET",
            &*format!("/projects/{project}"),
        ),
    ] {
        standin.add_fault(Fault::new(kind, 1).method(method).path_contains(path));
        app.post(&format!("/api/v1/projects/{project}/environments"))
            .by(&app.owner)
            .json(json!({ "name": "dev" }))
            .send()
            .await
            .assert_problem(503, "cluster_unavailable");
        assert_error_recorded(&app, "createEnvironment").await;
        standin.clear_faults();
        let listed = app
            .get(&format!("/api/v1/projects/{project}/environments"))
            .by(&app.owner)
            .send()
            .await
            .json();
        assert_eq!(listed, json!([]), "no environment resource was made");
        assert!(
            !app.cluster()
                .namespace_exists(&format!("{project}-dev"))
                .await,
            "no namespace was made"
        );
    }
}

#[tokio::test]
#[cfg_attr(berth_real_cluster, ignore = "needs the stand-in's fault knobs")]
async fn deleting_while_the_cluster_fails_changes_nothing() {
    let app = TestApp::with_cluster().await;
    let standin = app.standin();
    let project = app.create_project("p").await;
    app.post(&format!("/api/v1/projects/{project}/environments"))
        .by(&app.owner)
        .json(json!({ "name": "dev" }))
        .send()
        .await
        .assert_status(201);
    let environment = format!("/api/v1/projects/{project}/environments/dev");
    eventually("ready", || async {
        app.get(&environment).by(&app.owner).send().await.json()["phase"] == "Ready"
    })
    .await;

    standin.add_fault(
        Fault::new(FaultKind::ServiceUnavailable, 1)
            .method("PATCH")
            .path_contains(format!("/environments/{project}-dev")),
    );
    app.request(Method::DELETE, &environment)
        .by(&app.owner)
        .send()
        .await
        .assert_problem(503, "cluster_unavailable");
    assert_error_recorded(&app, "deleteEnvironment").await;
    standin.clear_faults();
    let record = app.get(&environment).by(&app.owner).send().await.json();
    assert_eq!(
        (
            record["deleting"].as_bool(),
            record["deletion_scheduled_at"].is_null()
        ),
        (Some(false), true)
    );

    // An empty project whose delete fails stays as it was.
    let empty = app.create_project("empty").await;
    standin.add_fault(
        Fault::new(FaultKind::ServiceUnavailable, 1)
            .method("DELETE")
            .path_contains(format!("/projects/{empty}")),
    );
    app.request(Method::DELETE, &format!("/api/v1/projects/{empty}"))
        .by(&app.owner)
        .send()
        .await
        .assert_problem(503, "cluster_unavailable");
    assert_error_recorded(&app, "deleteProject").await;
    standin.clear_faults();
    let record = app
        .get(&format!("/api/v1/projects/{empty}"))
        .by(&app.owner)
        .send()
        .await
        .json();
    assert_eq!(record["deleting"], false);
}

#[tokio::test]
#[cfg_attr(berth_real_cluster, ignore = "needs the stand-in's fault knobs")]
async fn an_unreachable_cluster_is_a_503_and_recovers() {
    let app = TestApp::with_cluster().await;
    let standin = app.standin();
    // Use the cluster once, so that the client is built and kept.
    app.get("/api/v1/projects")
        .by(&app.owner)
        .send()
        .await
        .assert_status(200);
    standin.set_unreachable(true).await.unwrap();
    let name = unique("down");
    app.post("/api/v1/projects")
        .by(&app.owner)
        .json(json!({ "name": name, "display_name": "D" }))
        .send()
        .await
        .assert_problem(503, "cluster_unavailable");
    assert_error_recorded(&app, "createProject").await;
    app.get("/api/v1/projects")
        .by(&app.owner)
        .send()
        .await
        .assert_problem(503, "cluster_unavailable");
    let health = app
        .get("/api/v1/healthz/details")
        .by(&app.owner)
        .send()
        .await;
    health.assert_status(503);
    assert_eq!(health.json()["status"], "degraded");

    standin.set_unreachable(false).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    app.get(&format!("/api/v1/projects/{name}"))
        .by(&app.owner)
        .send()
        .await
        .assert_problem(404, "not_found");
    app.post("/api/v1/projects")
        .by(&app.owner)
        .json(json!({ "name": name, "display_name": "D" }))
        .send()
        .await
        .assert_status(201);
}

/// A change of an app whose commit (the App's replacement) fails: 503, the
/// app as it was, and no new revision in its history — also when the
/// cluster fails after the history was written.
#[tokio::test]
#[cfg_attr(berth_real_cluster, ignore = "needs the stand-in's fault knobs")]
async fn an_app_change_the_cluster_refuses_leaves_the_old_state() {
    let app = app_whose_cluster_calls_time_out_soon().await;
    let standin = app.standin();
    let project = app.ready_environment("f", "dev").await;
    let apps = format!("/api/v1/projects/{project}/environments/dev/apps");
    app.post(&apps)
        .by(&app.owner)
        .json(json!({ "name": "shop", "image": "nginx:1" }))
        .send()
        .await
        .assert_status(201);
    let shop = format!("{apps}/shop");
    // The replacement (PUT of the App) fails, or the read before it (a list
    // of the namespace's Apps, in which the update finds its own).
    let namespace_apps = format!("/namespaces/{project}-dev/apps");
    for (kind, method, path) in [
        (FaultKind::ServiceUnavailable, "PUT", "/apps/shop"),
        (FaultKind::Hang, "PUT", "/apps/shop"),
        (FaultKind::InternalError, "GET", namespace_apps.as_str()),
    ] {
        standin.add_fault(Fault::new(kind, 1).method(method).path_contains(path));
        app.request(Method::PATCH, &shop)
            .by(&app.owner)
            .json(json!({ "image": "nginx:2" }))
            .send()
            .await
            .assert_problem(503, "cluster_unavailable");
        assert_error_recorded(&app, "updateApp").await;
        standin.clear_faults();
        let record = app.get(&shop).by(&app.owner).send().await.json()["app"].clone();
        assert_eq!(
            (record["image"].as_str(), record["revision"].as_i64()),
            (Some("nginx:1"), Some(1))
        );
        let history = app
            .get(&format!("{shop}/releases"))
            .by(&app.owner)
            .send()
            .await
            .json();
        assert_eq!(history.as_array().map(Vec::len), Some(1), "{history}");
    }
    // The revision an attempt wrote but never committed is replaced.
    let updated = app
        .request(Method::PATCH, &shop)
        .by(&app.owner)
        .json(json!({ "image": "nginx:3" }))
        .send()
        .await;
    updated.assert_status(200);
    let history = app
        .get(&format!("{shop}/releases"))
        .by(&app.owner)
        .send()
        .await
        .json();
    assert_eq!(history[0]["image"], "nginx:3");
    assert_eq!(history[0]["revision"], 2);
    // Creating one while the cluster fails leaves nothing behind.
    standin.add_fault(
        Fault::new(FaultKind::ServiceUnavailable, 1)
            .method("POST")
            .path_contains("/apps"),
    );
    app.post(&apps)
        .by(&app.owner)
        .json(json!({ "name": "other", "image": "nginx" }))
        .send()
        .await
        .assert_problem(503, "cluster_unavailable");
    app.get(&format!("{apps}/other"))
        .by(&app.owner)
        .send()
        .await
        .assert_problem(404, "not_found");
}

#[tokio::test]
#[cfg_attr(berth_real_cluster, ignore = "needs the stand-in's fault knobs")]
async fn a_request_past_its_deadline_is_answered_and_audited() {
    // The deadline (1 s) comes before the cluster call's own timeout (10 s).
    let app = TestApp::with_cluster_config(|config| {
        config.request_deadline = Duration::from_secs(1);
    })
    .await;
    app.standin().add_fault(
        Fault::new(FaultKind::Hang, 1)
            .method("POST")
            .path_contains("/projects"),
    );
    let started = std::time::Instant::now();
    let answered = app
        .post("/api/v1/projects")
        .by(&app.owner)
        .json(json!({ "name": unique("slow"), "display_name": "S" }))
        .send()
        .await;
    let took = started.elapsed();
    answered.assert_problem(503, "deadline_exceeded");
    assert_eq!(answered.json()["title"], "Request took too long");
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_millis(1900),
        "answered after {took:?}"
    );
    assert!(answered.headers.contains_key("x-request-id"));
    let event = app.last_audit_event("acme").await;
    assert_eq!(
        (event.action.as_str(), event.outcome, event.status),
        ("createProject", Outcome::Error, Some(503))
    );
}
