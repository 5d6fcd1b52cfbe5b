//! Backend faults mapped by cause: only what a retry may
//! cure is "unavailable"; input that would break a key is refused before any
//! call; a misconfigured cluster says what to fix; one undecodable resource
//! is skipped, not a failed list.

use berth_kube_standin::{Fault, FaultKind};
use kube::api::{Api, ApiResource, DynamicObject, PostParams};
use serde_json::{Value, json};

use crate::support::TestApp;
use crate::support::table as store;
use berth_api::ApiError;
use berth_cluster::crd::{App, Environment};
use berth_records::audit::Outcome;

const OVERLONG: usize = 3 * 1024;

fn overlong_email() -> String {
    format!("{}@example.com", "a".repeat(OVERLONG))
}

#[tokio::test]
async fn a_dynamodb_validation_error_is_internal_not_unavailable() {
    let app = TestApp::new().await;
    // A partition key over DynamoDB's 2048-byte limit: the service refuses it
    // with a ValidationException, which no retry cures.
    let refused = app
        .dynamodb
        .get_item()
        .table_name(app.state.store.table())
        .set_key(Some(store::key("k".repeat(OVERLONG), "sk")))
        .send()
        .await
        .expect_err("DynamoDB refuses an oversized key");
    let error = ApiError::from(berth_store::StoreError::from(refused));
    assert_eq!(
        (error.status().as_u16(), error.code()),
        (500, "internal"),
        "{error:?}"
    );

    // A request that never reached DynamoDB (a broken connection) is still
    // unavailable.
    app.store_faults.fail_next("GetItem", 1);
    let failed = app
        .dynamodb
        .get_item()
        .table_name(app.state.store.table())
        .set_key(Some(store::key("k".into(), "sk")))
        .send()
        .await
        .expect_err("the injected fault");
    let error = ApiError::from(berth_store::StoreError::from(failed));
    assert_eq!(
        (error.status().as_u16(), error.code()),
        (503, "storage_unavailable")
    );
}

#[tokio::test]
async fn an_overlong_email_at_login_is_a_wrong_login_and_counted() {
    let app = TestApp::new().await;
    let email = overlong_email();
    let login = || {
        app.post("/api/v1/auth/login")
            .json(json!({ "email": email, "password": "not the password at all" }))
            .send()
    };
    // The same answer as a wrong password: such an email cannot exist.
    for _ in 0..5 {
        login().await.assert_problem(401, "invalid_credentials");
    }
    // And it is counted by the throttle like any other guess.
    login().await.assert_problem(429, "too_many_requests");
}

#[tokio::test]
async fn overlong_emails_and_member_ids_are_refused_before_any_call() {
    let app = TestApp::new().await;
    app.post("/api/v1/members")
        .by(&app.owner)
        .json(json!({ "email": overlong_email(), "role": "viewer" }))
        .send()
        .await
        .assert_problem(422, "validation_failed");
    let member = format!("/api/v1/members/{}", "m".repeat(OVERLONG));
    app.request(http::Method::PATCH, &member)
        .by(&app.owner)
        .json(json!({ "role": "viewer" }))
        .send()
        .await
        .assert_problem(404, "not_found");
    app.request(http::Method::DELETE, &member)
        .by(&app.owner)
        .send()
        .await
        .assert_problem(404, "not_found");
}

/// A copy of a resource Berth made, renamed, with `change` applied: what a
/// hand edit or an older Berth could leave behind.
async fn copy_resource<K>(
    client: &kube::Client,
    namespace: Option<&str>,
    from: &str,
    to: &str,
    change: impl FnOnce(&mut Value),
) where
    K: kube::Resource<DynamicType = ()>,
{
    let resource = ApiResource::erase::<K>(&());
    let api: Api<DynamicObject> = match namespace {
        Some(namespace) => Api::namespaced_with(client.clone(), namespace, &resource),
        None => Api::all_with(client.clone(), &resource),
    };
    let original = api.get(from).await.expect("the original resource");
    let mut copy = DynamicObject::new(to, &resource);
    copy.metadata.namespace = original.metadata.namespace.clone();
    copy.metadata.labels = original.metadata.labels.clone();
    copy.metadata.annotations = original.metadata.annotations.clone();
    copy.data = original.data.clone();
    if let Some(status) = copy.data.as_object_mut() {
        status.remove("status");
    }
    change(&mut copy.data);
    api.create(&PostParams::default(), &copy)
        .await
        .expect("the stand-in keeps what it is given");
}

#[tokio::test]
#[cfg_attr(berth_real_cluster, ignore = "a real apiserver validates the schema")]
async fn an_undecodable_environment_is_skipped_not_a_failed_list() {
    let app = TestApp::with_cluster().await;
    let project = app.create_project("p").await;
    app.create_environment(&project, json!({ "name": "dev" }))
        .await;
    copy_resource::<Environment>(
        &app.cluster().client,
        None,
        &format!("{project}-dev"),
        &format!("{project}-broken"),
        |data| {
            data["spec"]["name"] = json!("broken");
            data["spec"]["envType"] = json!(42);
        },
    )
    .await;
    let listed = app
        .get(&format!("/api/v1/projects/{project}/environments"))
        .by(&app.owner)
        .send()
        .await;
    listed.assert_status(200);
    let names: Vec<_> = listed
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names, ["dev"]);
    // The project list reads every environment of the organization too.
    let projects = app.get("/api/v1/projects").by(&app.owner).send().await;
    projects.assert_status(200);
    let listed = projects.json();
    let record = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == project.as_str())
        .expect("the project is listed");
    assert_eq!(record["environments"], 1);
    assert!(
        crate::support::logs::captured().contains("skipping a resource that does not decode"),
        "the skipped resource is logged"
    );
}

#[tokio::test]
#[cfg_attr(berth_real_cluster, ignore = "a real apiserver validates the schema")]
async fn an_undecodable_app_is_skipped_not_a_failed_list() {
    let app = TestApp::with_cluster().await;
    let project = app.ready_environment("apps", "staging").await;
    let apps = format!("/api/v1/projects/{project}/environments/staging/apps");
    app.post(&apps)
        .by(&app.owner)
        .json(json!({ "name": "shop", "image": "nginx:1.27", "port": 8080 }))
        .send()
        .await
        .assert_status(201);
    copy_resource::<App>(
        &app.cluster().client,
        Some(&format!("{project}-staging")),
        "shop",
        "broken",
        |data| data["spec"]["image"] = json!({ "not": "a string" }),
    )
    .await;
    let listed = app.get(&apps).by(&app.owner).send().await;
    listed.assert_status(200);
    let names: Vec<_> = listed
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names, ["shop"]);
}

#[tokio::test]
#[cfg_attr(berth_real_cluster, ignore = "needs the stand-in's fault knobs")]
async fn a_cluster_that_refuses_berth_says_what_to_fix() {
    let app = TestApp::with_cluster().await;
    // On a write: the controller's own reads would take a fault on a read.
    app.standin().add_fault(
        Fault::new(FaultKind::Forbidden, 1)
            .method("POST")
            .path_contains("/projects"),
    );
    let refused = app
        .post("/api/v1/projects")
        .by(&app.owner)
        .json(json!({ "name": crate::support::unique("rbac"), "display_name": "R" }))
        .send()
        .await;
    refused.assert_problem(503, "cluster_unavailable");
    let detail = refused.json()["detail"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        detail.contains("403") && detail.contains("api-rbac.yaml"),
        "{detail}"
    );
    let event = app.last_audit_event("acme").await;
    assert_eq!((event.outcome, event.status), (Outcome::Error, Some(503)));
    assert!(
        crate::support::logs::captured().contains("cluster_misconfigured"),
        "logged as a misconfiguration"
    );
}
