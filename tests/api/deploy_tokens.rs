//! Issue 32, part 3: deploy tokens, a machine's credentials owned by a
//! project: made, listed and revoked by its admins, limited to it (and to
//! some of its environments), acting under their own name, and outliving
//! the member who made them.

use http::Method;
use serde_json::json;

use crate::support::TestApp;
use berth_domain::Role;

#[tokio::test]
async fn a_deploy_token_deploys_to_its_environment_as_itself() {
    let app = TestApp::with_cluster().await;
    let project = app.ready_environment("piped", "staging").await;
    let base = format!("/api/v1/projects/{project}");
    app.post(&format!("{base}/environments"))
        .by(&app.owner)
        .json(json!({ "name": "prod" }))
        .send()
        .await
        .assert_status(201);
    app.wait_for_environment(&project, "prod").await;
    for environment in ["staging", "prod"] {
        app.create_app(
            &format!("{base}/environments/{environment}/apps"),
            json!({ "name": "web", "image": "nginx:1.27" }),
        )
        .await;
    }
    // Made by an admin of the organization, who then leaves it.
    let admin = app.user(Role::Admin).await;
    let created = app
        .post(&format!("{base}/tokens"))
        .by(&admin)
        .json(
            json!({ "name": "github", "ceiling": "deploy", "environments": ["staging"],
                      "expires_in_days": 30 }),
        )
        .send()
        .await;
    created.assert_status(201);
    let record = created.json();
    let token = record["token"].as_str().unwrap().to_owned();
    assert!(token.starts_with("brd_"), "{token}");
    let actor = format!("github@{project}.deploy.invalid");
    assert_eq!(record["actor"], actor.as_str());
    assert_eq!(record["name"], "github");
    assert_eq!(record["project"], project.as_str());
    assert_eq!(record["created_by"], admin.email.as_str());
    assert_eq!(record["ceiling"], "deploy");
    assert_eq!(record["environments"], json!(["staging"]));
    assert_eq!(record["prefix"], &token[..8]);
    app.request(Method::DELETE, &format!("/api/v1/members/{}", admin.id))
        .by(&app.owner)
        .send()
        .await
        .assert_status(204);

    // Who it is: its own name, never a person's email.
    let me = app.get("/api/v1/me").bearer(&token).send().await;
    me.assert_status(200);
    assert_eq!(me.json()["email"], actor.as_str());
    assert_eq!(me.json()["via"], "token");

    // It deploys to staging; the release and the audit event name it.
    app.request(
        Method::PATCH,
        &format!("{base}/environments/staging/apps/web"),
    )
    .bearer(&token)
    .json(json!({ "image": "nginx:1.28" }))
    .send()
    .await
    .assert_status(200);
    let releases = app
        .get(&format!("{base}/environments/staging/apps/web/releases"))
        .bearer(&token)
        .send()
        .await
        .json();
    let newest = releases
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["current"] == true)
        .unwrap()
        .clone();
    assert_eq!(newest["actor"], actor.as_str());
    let event = app.last_audit_event(&app.owner.org).await;
    assert_eq!(event.action, "listReleases");
    assert_eq!(event.actor.as_deref(), Some(actor.as_str()));
    assert_eq!(event.project.as_deref(), Some(project.as_str()));

    // Prod is outside it; so is promoting into prod, and its ceiling holds.
    app.request(Method::PATCH, &format!("{base}/environments/prod/apps/web"))
        .bearer(&token)
        .json(json!({ "image": "nginx:1.28" }))
        .send()
        .await
        .assert_problem(404, "not_found");
    app.post(&format!("{base}/environments/staging/apps/web/promote"))
        .bearer(&token)
        .json(json!({ "environment": "prod" }))
        .send()
        .await
        .assert_forbidden_saying("cannot act in environment prod");
    app.request(
        Method::PUT,
        &format!("{base}/environments/staging/secrets/db"),
    )
    .bearer(&token)
    .json(json!({ "data": { "password": "x" } }))
    .send()
    .await
    .assert_forbidden_saying("limited to deploy");
    // A pipeline deploys and never destroys: deleting an app needs
    // `env-write`, which its ceiling excludes (issue 45).
    app.request(
        Method::DELETE,
        &format!("{base}/environments/staging/apps/web"),
    )
    .bearer(&token)
    .send()
    .await
    .assert_forbidden_saying("env-write");
    // Prod is as if it did not exist: not listed, not counted (issue 45).
    let listed = app
        .get(&format!("{base}/environments"))
        .bearer(&token)
        .send()
        .await
        .json();
    let names: Vec<_> = (listed.as_array().unwrap().iter())
        .map(|e| e["name"].clone())
        .collect();
    assert_eq!(names, [json!("staging")]);
    let counted = app.get(&base).bearer(&token).send().await.json();
    assert_eq!(counted["environments"], 1);
    let everything = app.get(&base).by(&app.owner).send().await.json();
    assert_eq!(everything["environments"], 2);
    // No person's operations: no tokens, no password, no members.
    for (method, path) in [
        (Method::GET, "/api/v1/tokens"),
        (Method::POST, "/api/v1/tokens"),
        (Method::GET, "/api/v1/members"),
    ] {
        app.request(method, path)
            .bearer(&token)
            .json(json!({ "name": "more" }))
            .send()
            .await
            .assert_problem(403, "forbidden");
    }
    let listed = app
        .get("/api/v1/projects")
        .bearer(&token)
        .send()
        .await
        .json();
    let names: Vec<_> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].clone())
        .collect();
    assert_eq!(names, [json!(project)]);
    assert_eq!(listed[0]["environments"], 1, "prod is not counted");

    // Listed without its secret, revoked at once.
    let tokens = app
        .get(&format!("{base}/tokens"))
        .by(&app.owner)
        .send()
        .await;
    tokens.assert_status(200);
    assert!(!tokens.text().contains(&token));
    let id = record["id"].as_str().unwrap();
    assert!(
        tokens
            .json()
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["id"] == id && t["last_used_at"].is_string())
    );
    app.request(Method::DELETE, &format!("{base}/tokens/{id}"))
        .by(&app.owner)
        .send()
        .await
        .assert_status(204);
    app.get("/api/v1/me")
        .bearer(&token)
        .send()
        .await
        .assert_problem(401, "unauthenticated");
}

/// A project's admins manage its deploy tokens: names are unique in it, a
/// deploy token makes none, and deleting the project ends them.
#[tokio::test]
async fn a_projects_admins_manage_its_deploy_tokens() {
    let app = TestApp::with_cluster().await;
    let project = app.ready_environment("tokened", "staging").await;
    let base = format!("/api/v1/projects/{project}");
    let project_admin = app.project_member(Role::Member, &project, "admin").await;
    let developer = app
        .project_member(Role::Member, &project, "developer")
        .await;

    let made = app
        .post(&format!("{base}/tokens"))
        .by(&project_admin)
        .json(json!({ "name": "deploy" }))
        .send()
        .await;
    made.assert_status(201);
    assert!(made.json()["ceiling"].is_null());
    assert!(made.json()["environments"].is_null());
    app.post(&format!("{base}/tokens"))
        .by(&project_admin)
        .json(json!({ "name": "deploy" }))
        .send()
        .await
        .assert_problem(409, "conflict");
    for bad in [
        json!({ "name": "Not A Label" }),
        json!({ "name": "x", "environments": [] }),
        json!({ "name": "x", "expires_in_days": 0 }),
    ] {
        let refused = app
            .post(&format!("{base}/tokens"))
            .by(&project_admin)
            .json(bad.clone())
            .send()
            .await;
        assert!(
            matches!(refused.status.as_u16(), 400 | 422),
            "{bad}: {}",
            refused.text()
        );
    }
    app.get(&format!("{base}/tokens"))
        .by(&developer)
        .send()
        .await
        .assert_problem(403, "forbidden");

    // Without a ceiling: an admin's rights in the project, and no more.
    let unlimited = app.deploy_token(&project, json!({})).await;
    app.get(&format!("{base}/environments/staging/secrets"))
        .by(&unlimited)
        .send()
        .await
        .assert_status(200);
    app.post(&format!("{base}/tokens"))
        .by(&unlimited)
        .json(json!({ "name": "child" }))
        .send()
        .await
        .assert_forbidden_saying("deploy token cannot make");
    app.request(Method::PUT, &format!("{base}/members/{}", developer.id))
        .by(&unlimited)
        .json(json!({ "role": "admin" }))
        .send()
        .await
        .assert_problem(403, "forbidden");

    // A revoked id, and a token put where its id belongs, are not found.
    app.request(Method::DELETE, &format!("{base}/tokens/nosuchtoken0"))
        .by(&app.owner)
        .send()
        .await
        .assert_problem(404, "not_found");
    let missing = app
        .request(
            Method::DELETE,
            &format!("{base}/tokens/{}", unlimited.token),
        )
        .by(&app.owner)
        .send()
        .await;
    missing.assert_problem(404, "not_found");
    assert!(!missing.text().contains(&unlimited.token));

    // The project gone, its tokens are too.
    let empty = app.create_project("emptied").await;
    let doomed = app.deploy_token(&empty, json!({})).await;
    app.get("/api/v1/me")
        .by(&doomed)
        .send()
        .await
        .assert_status(200);
    app.request(Method::DELETE, &format!("/api/v1/projects/{empty}"))
        .by(&app.owner)
        .send()
        .await
        .assert_status(202);
    app.get("/api/v1/me")
        .by(&doomed)
        .send()
        .await
        .assert_problem(401, "unauthenticated");
}
