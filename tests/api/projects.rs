//! Projects: listing, creating, reading and deleting, scoped to the caller's
//! organization, against a cluster.

use http::Method;
use serde_json::json;

use crate::support::{TestApp, eventually, unique};
use berth_domain::Role;

#[tokio::test]
async fn create_get_list_and_delete() {
    let app = TestApp::with_cluster().await;
    let name = unique("web");
    let created = app
        .post("/api/v1/projects")
        .by(&app.owner)
        .json(json!({ "name": name, "display_name": "Web", "description": "The shop" }))
        .send()
        .await;
    created.assert_status(201);
    assert_eq!(
        created.headers["location"],
        format!("/api/v1/projects/{name}")
    );
    let body = created.json();
    assert_eq!(body["name"], name.as_str());
    assert_eq!(body["display_name"], "Web");
    assert_eq!(body["description"], "The shop");
    assert_eq!(body["org"], "acme");
    assert_eq!(body["environments"], 0);
    assert_eq!(body["deleting"], false);
    assert!(body["uid"].as_str().is_some());
    assert!(body["created_at"].as_str().is_some());
    for field in [
        "name",
        "uid",
        "display_name",
        "description",
        "org",
        "environments",
        "ready",
        "deleting",
        "created_at",
    ] {
        assert!(body.get(field).is_some(), "{field}");
    }

    // The controller marks it ready.
    let path = format!("/api/v1/projects/{name}");
    eventually("the project becomes ready", || async {
        app.get(&path).by(&app.owner).send().await.json()["ready"] == true
    })
    .await;

    let listed = app.get("/api/v1/projects").by(&app.owner).send().await;
    listed.assert_status(200);
    let listed = listed.json();
    assert!(
        listed
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == name.as_str())
    );

    let deleted = app
        .request(Method::DELETE, &path)
        .by(&app.owner)
        .send()
        .await;
    deleted.assert_status(202);
    assert_eq!(deleted.json()["deleting"], true);
    assert_eq!(deleted.json()["name"], name.as_str());
    eventually("the project is gone", || async {
        app.get(&path).by(&app.owner).send().await.status == 404
    })
    .await;
}

#[tokio::test]
async fn names_are_validated_and_unique() {
    let app = TestApp::with_cluster().await;
    let create = |body| app.post("/api/v1/projects").by(&app.owner).json(body);
    for bad in [
        json!({ "name": "Web", "display_name": "x" }),
        json!({ "name": "a".repeat(41), "display_name": "x" }),
        json!({ "name": "-web", "display_name": "x" }),
        json!({ "name": "ok-name", "display_name": "" }),
    ] {
        create(bad)
            .send()
            .await
            .assert_problem(422, "validation_failed");
    }
    create(json!({ "name": "ok-name" }))
        .send()
        .await
        .assert_problem(400, "invalid_request");
    create(json!({ "name": "ok-name", "display_name": "x", "color": "red" }))
        .send()
        .await
        .assert_problem(400, "invalid_request");
    let name = unique("dup");
    create(json!({ "name": name, "display_name": "One" }))
        .send()
        .await
        .assert_status(201);
    create(json!({ "name": name, "display_name": "Two" }))
        .send()
        .await
        .assert_problem(409, "conflict");
    let project = app
        .get(&format!("/api/v1/projects/{name}"))
        .by(&app.owner)
        .send()
        .await
        .json();
    assert_eq!(
        project["display_name"], "One",
        "the refused create changed nothing"
    );
    // No project was made by the refused requests.
    let listed = app
        .get("/api/v1/projects")
        .by(&app.owner)
        .send()
        .await
        .json();
    assert_eq!(
        listed
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["name"] == name.as_str())
            .count(),
        1
    );
    assert!(
        listed
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["name"] != "ok-name")
    );
}

#[tokio::test]
async fn a_project_with_environments_cannot_be_deleted() {
    let app = TestApp::with_cluster().await;
    let name = app.create_project("busy").await;
    app.post(&format!("/api/v1/projects/{name}/environments"))
        .by(&app.owner)
        .json(json!({ "name": "dev" }))
        .send()
        .await
        .assert_status(201);
    let path = format!("/api/v1/projects/{name}");
    app.request(Method::DELETE, &path)
        .by(&app.owner)
        .send()
        .await
        .assert_problem(409, "project_not_empty");
    let project = app.get(&path).by(&app.owner).send().await.json();
    assert_eq!(
        (
            project["deleting"].as_bool(),
            project["environments"].as_i64()
        ),
        (Some(false), Some(1))
    );
}

#[tokio::test]
async fn other_organizations_projects_are_not_found() {
    let app = TestApp::with_cluster().await;
    let stranger = app.other_org("wayne").await;
    let name = app.create_project("secret").await;
    let path = format!("/api/v1/projects/{name}");
    app.get(&path)
        .by(&stranger)
        .send()
        .await
        .assert_problem(404, "not_found");
    app.request(Method::DELETE, &path)
        .by(&stranger)
        .send()
        .await
        .assert_problem(404, "not_found");
    app.get(&format!("{path}/environments"))
        .by(&stranger)
        .send()
        .await
        .assert_problem(404, "not_found");
    app.post(&format!("{path}/environments"))
        .by(&stranger)
        .json(json!({ "name": "dev" }))
        .send()
        .await
        .assert_problem(404, "not_found");
    let theirs = app
        .get("/api/v1/projects")
        .by(&stranger)
        .send()
        .await
        .json();
    assert!(
        theirs
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["name"] != name.as_str())
    );
    app.get(&path)
        .by(&app.owner)
        .send()
        .await
        .assert_status(200);
    app.get("/api/v1/projects/no-such-project")
        .by(&app.owner)
        .send()
        .await
        .assert_problem(404, "not_found");
}

#[tokio::test]
async fn project_changes_need_project_write() {
    let app = TestApp::with_cluster().await;
    let developer = app.user(Role::Developer).await;
    let name = unique("perm");
    app.post("/api/v1/projects")
        .by(&developer)
        .json(json!({ "name": name, "display_name": "P" }))
        .send()
        .await
        .assert_problem(403, "forbidden");
    app.get(&format!("/api/v1/projects/{name}"))
        .by(&app.owner)
        .send()
        .await
        .assert_problem(404, "not_found");
    let event = app.last_audit_event("acme").await;
    assert_eq!(
        (event.action.as_str(), event.target.as_deref()),
        ("getProject", Some(name.as_str()))
    );
}
