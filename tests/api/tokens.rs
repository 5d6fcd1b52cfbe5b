//! Personal API tokens: created once, listed without secrets, revoked at once.

use serde_json::json;

use crate::support::TestApp;
use berth_domain::Role;

#[tokio::test]
async fn create_list_use_and_revoke() {
    let app = TestApp::new().await;
    let user = app.user(Role::Viewer).await;
    let created = app
        .post("/api/v1/tokens")
        .by(&user)
        .json(json!({ "name": "ci", "expires_in_days": 30 }))
        .send()
        .await;
    created.assert_status(201);
    let body = created.json();
    let token = body["token"].as_str().unwrap().to_owned();
    assert!(token.starts_with("brt_") && token.len() == 44, "{token}");
    assert_eq!(body["name"], "ci");
    assert_eq!(body["prefix"], &token[..8]);
    assert!(body["created_at"].as_str().is_some());
    assert!(body["expires_at"].as_str().is_some());
    assert!(body["last_used_at"].is_null());
    let id = body["id"].as_str().unwrap().to_owned();

    let me = app.get("/api/v1/me").bearer(&token).send().await;
    me.assert_status(200);
    assert_eq!(me.json()["id"], user.id);

    let listed = app.get("/api/v1/tokens").bearer(&token).send().await;
    listed.assert_status(200);
    let tokens = listed.json();
    let tokens = tokens.as_array().unwrap();
    assert_eq!(tokens.len(), 2, "the fixture token and the new one");
    let entry = tokens.iter().find(|t| t["id"] == id.as_str()).unwrap();
    assert!(
        entry.get("token").is_none(),
        "secrets are shown once: {entry}"
    );
    assert!(
        entry["last_used_at"].as_str().is_some(),
        "the use was recorded: {entry}"
    );
    assert!(!listed.text().contains(&token));

    app.request("DELETE".parse().unwrap(), &format!("/api/v1/tokens/{id}"))
        .by(&user)
        .send()
        .await
        .assert_status(204);
    app.get("/api/v1/me")
        .bearer(&token)
        .send()
        .await
        .assert_problem(401, "unauthenticated");
    app.request("DELETE".parse().unwrap(), &format!("/api/v1/tokens/{id}"))
        .by(&user)
        .send()
        .await
        .assert_problem(404, "not_found");
}

#[tokio::test]
async fn tokens_are_private_to_their_owner() {
    let app = TestApp::new().await;
    let alice = app.user(Role::Admin).await;
    let bob = app.user(Role::Admin).await;
    let created = app
        .post("/api/v1/tokens")
        .by(&alice)
        .json(json!({ "name": "mine" }))
        .send()
        .await;
    let id = created.json()["id"].as_str().unwrap().to_owned();
    let bobs = app.get("/api/v1/tokens").by(&bob).send().await.json();
    assert!(
        bobs.as_array()
            .unwrap()
            .iter()
            .all(|t| t["id"] != id.as_str())
    );
    app.request("DELETE".parse().unwrap(), &format!("/api/v1/tokens/{id}"))
        .by(&bob)
        .send()
        .await
        .assert_problem(404, "not_found");
    let alices = app.get("/api/v1/tokens").by(&alice).send().await.json();
    assert!(
        alices
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["id"] == id.as_str())
    );
}

#[tokio::test]
async fn invalid_token_requests() {
    let app = TestApp::new().await;
    let create = |body| app.post("/api/v1/tokens").by(&app.owner).json(body);
    create(json!({ "name": "" }))
        .send()
        .await
        .assert_problem(422, "validation_failed");
    create(json!({ "name": "x".repeat(65) }))
        .send()
        .await
        .assert_problem(422, "validation_failed");
    create(json!({ "name": "ci", "expires_in_days": 0 }))
        .send()
        .await
        .assert_problem(422, "validation_failed");
    create(json!({ "name": "ci", "expires_in_days": 366 }))
        .send()
        .await
        .assert_problem(422, "validation_failed");
    create(json!({ "name": "ci", "expires_in_days": "soon" }))
        .send()
        .await
        .assert_problem(400, "invalid_request");
    create(json!({ "name": "ci", "scopes": [] }))
        .send()
        .await
        .assert_problem(400, "invalid_request");
    create(json!({}))
        .send()
        .await
        .assert_problem(400, "invalid_request");
    let listed = app.get("/api/v1/tokens").by(&app.owner).send().await.json();
    assert_eq!(
        listed.as_array().unwrap().len(),
        1,
        "nothing was created: {listed}"
    );
    app.post("/api/v1/tokens")
        .json(json!({ "name": "ci" }))
        .send()
        .await
        .assert_problem(401, "unauthenticated");
}

#[tokio::test]
async fn expired_tokens_stop_working() {
    let app = TestApp::new().await;
    let created = app
        .post("/api/v1/tokens")
        .by(&app.owner)
        .json(json!({ "name": "short" }))
        .send()
        .await;
    let token = created.json()["token"].as_str().unwrap().to_owned();
    // Age the token in the store: expiry is checked on read, whatever TTL does.
    let digest = berth_domain::credentials::digest(&token);
    app.dynamodb
        .update_item()
        .table_name(app.state.store.table())
        .set_key(Some(crate::support::table::key(
            berth_store::keys::user(&app.owner.id),
            &berth_store::keys::token_sk(&digest),
        )))
        .update_expression("SET expires_at = :past")
        .expression_attribute_values(":past", crate::support::table::n(1_000))
        .send()
        .await
        .unwrap();
    app.get("/api/v1/me")
        .bearer(&token)
        .send()
        .await
        .assert_problem(401, "unauthenticated");
    let listed = app.get("/api/v1/tokens").by(&app.owner).send().await.json();
    assert_eq!(
        listed.as_array().unwrap().len(),
        1,
        "expired tokens are not listed"
    );
}

/// A token's ceiling (`read`, `deploy`) bounds it below its owner's role,
/// at every request: what the token record shows, what it may create and
/// revoke, and a demotion of its owner that takes effect at once.
#[tokio::test]
async fn a_ceiling_bounds_a_token_below_its_owner() {
    let app = TestApp::with_cluster().await;
    let developer = app.user(Role::Developer).await;
    let token_of = |ceiling: &'static str| {
        let body = json!({ "name": format!("ci {ceiling}"), "ceiling": ceiling });
        let app = &app;
        let developer = &developer;
        async move {
            let created = app
                .post("/api/v1/tokens")
                .by(developer)
                .json(body)
                .send()
                .await;
            created.assert_status(201);
            assert_eq!(created.json()["ceiling"], ceiling);
            crate::support::TestUser {
                token: created.json()["token"].as_str().unwrap().to_owned(),
                ..developer.clone()
            }
        }
    };
    let read = token_of("read").await;
    let deploy = token_of("deploy").await;

    // Listed with its ceiling; a token without one shows null.
    let listed = app.get("/api/v1/tokens").by(&developer).send().await;
    let ceilings: Vec<_> = listed
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["ceiling"].clone())
        .collect();
    assert!(ceilings.contains(&json!("read")) && ceilings.contains(&json!(null)));

    // Reads, yes; beyond its ceiling, 403 saying so.
    app.get("/api/v1/projects")
        .by(&read)
        .send()
        .await
        .assert_status(200);
    let refused = app
        .post("/api/v1/tokens")
        .by(&read)
        .json(json!({ "name": "wider" }))
        .send()
        .await;
    refused.assert_forbidden_saying("limited to read");
    app.post("/api/v1/tokens")
        .by(&read)
        .json(json!({ "name": "wider", "ceiling": "deploy" }))
        .send()
        .await
        .assert_problem(403, "forbidden");
    app.post("/api/v1/tokens")
        .by(&deploy)
        .json(json!({ "name": "narrower", "ceiling": "read" }))
        .send()
        .await
        .assert_status(201);
    app.post("/api/v1/me/password")
        .by(&deploy)
        .json(json!({ "current_password": crate::support::PASSWORD, "new_password": "a whole new password" }))
        .send()
        .await
        .assert_problem(403, "forbidden");

    // A deploy token may not do what a developer does beyond deploying.
    let created = app
        .post("/api/v1/projects")
        .by(&app.owner)
        .json(json!({ "name": crate::support::unique("c"), "display_name": "C" }))
        .send()
        .await;
    created.assert_status(201);
    let project = created.json()["name"].as_str().unwrap().to_owned();
    let refused = app
        .post(&format!("/api/v1/projects/{project}/environments"))
        .by(&deploy)
        .json(json!({ "name": "staging" }))
        .send()
        .await;
    refused.assert_forbidden_saying("env-write");

    // A limited token revokes itself, not another.
    let ids: Vec<(String, String)> = app
        .get("/api/v1/tokens")
        .by(&developer)
        .send()
        .await
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap().to_owned(),
                t["id"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let id_of = |name: &str| ids.iter().find(|(n, _)| n == name).unwrap().1.clone();
    app.request(
        http::Method::DELETE,
        &format!("/api/v1/tokens/{}", id_of("ci deploy")),
    )
    .by(&read)
    .send()
    .await
    .assert_problem(403, "forbidden");
    app.request(
        http::Method::DELETE,
        &format!("/api/v1/tokens/{}", id_of("ci read")),
    )
    .by(&read)
    .send()
    .await
    .assert_status(204);
    app.get("/api/v1/projects")
        .by(&read)
        .send()
        .await
        .assert_problem(401, "unauthenticated");

    // Its owner demoted to viewer: the deploy token reads, and no more, at once.
    app.request(
        http::Method::PATCH,
        &format!("/api/v1/members/{}", developer.id),
    )
    .by(&app.owner)
    .json(json!({ "role": "viewer" }))
    .send()
    .await
    .assert_status(200);
    app.get("/api/v1/projects")
        .by(&deploy)
        .send()
        .await
        .assert_status(200);
    let refused = app
        .post(&format!(
            "/api/v1/projects/{project}/environments/staging/apps"
        ))
        .by(&deploy)
        .json(json!({ "name": "web", "image": "nginx:1.27" }))
        .send()
        .await;
    refused.assert_problem(403, "forbidden");
}

/// A token's scope: the projects (and environments) it may act in, checked
/// before every handler; a project made after the token is outside it,
/// whatever its name.
#[tokio::test]
async fn a_scope_holds_a_token_to_its_projects() {
    let app = TestApp::with_cluster().await;
    let project = app.ready_environment("scoped", "staging").await;
    let other = app.ready_environment("other", "staging").await;
    let base = format!("/api/v1/projects/{project}");
    app.post(&format!("{base}/environments"))
        .by(&app.owner)
        .json(json!({ "name": "prod" }))
        .send()
        .await
        .assert_status(201);
    let token = app
        .owners_token(json!({ "scope": [{ "project": project, "environments": ["staging"] }] }))
        .await;

    // Its environment, yes; the project's other environment and another
    // project are missing, as another organization's are.
    app.get(&format!("{base}/environments/staging/apps"))
        .by(&token)
        .send()
        .await
        .assert_status(200);
    app.get(&format!("{base}/environments/prod/apps"))
        .by(&token)
        .send()
        .await
        .assert_problem(404, "not_found");
    app.get(&format!("/api/v1/projects/{other}"))
        .by(&token)
        .send()
        .await
        .assert_problem(404, "not_found");
    // The project itself may be read, not changed; the organization not acted on.
    app.get(&base).by(&token).send().await.assert_status(200);
    app.post(&format!("{base}/environments"))
        .by(&token)
        .json(json!({ "name": "qa" }))
        .send()
        .await
        .assert_forbidden_saying("cannot change the project itself");
    app.get("/api/v1/members")
        .by(&token)
        .send()
        .await
        .assert_forbidden_saying("whole organization");
    // The list of projects is its scope.
    let listed = app.get("/api/v1/projects").by(&token).send().await;
    let names: Vec<_> = listed
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].clone())
        .collect();
    assert_eq!(names, [json!(project)]);
    // It makes tokens within its scope only.
    app.post("/api/v1/tokens")
        .by(&token)
        .json(json!({ "name": "narrow", "scope": [{ "project": project, "environments": ["staging"] }] }))
        .send()
        .await
        .assert_status(201);
    app.post("/api/v1/tokens")
        .by(&token)
        .json(json!({ "name": "wide", "scope": [{ "project": project }] }))
        .send()
        .await
        .assert_forbidden_saying("within it");
    let record = app.get("/api/v1/tokens").by(&app.owner).send().await.json();
    assert!(
        record
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["scope"] == json!([{ "project": project, "environments": ["staging"] }]))
    );

    // A bad scope is a body error.
    app.post("/api/v1/tokens")
        .by(&app.owner)
        .json(json!({ "name": "bad", "scope": [] }))
        .send()
        .await
        .assert_problem(422, "validation_failed");

    // A token scoped to a project made after it (the name deleted and
    // made again) reaches nothing there.
    let later = crate::support::unique("later");
    let early = app
        .owners_token(json!({ "scope": [{ "project": later }] }))
        .await;
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    app.post("/api/v1/projects")
        .by(&app.owner)
        .json(json!({ "name": later, "display_name": "Later" }))
        .send()
        .await
        .assert_status(201);
    app.get(&format!("/api/v1/projects/{later}"))
        .by(&early)
        .send()
        .await
        .assert_problem(404, "not_found");
    let listed = app.get("/api/v1/projects").by(&early).send().await.json();
    assert_eq!(listed, json!([]));
}

/// A token made by a limited token (issue 46, part 3) cannot outlive or
/// outreach its maker: it expires no later than it (an omitted expiry
/// takes the maker's), keeps its scope's start (a project made again
/// under a scoped name is outside it too), records its maker, and is
/// revoked with it, its own tokens too. A token made by a session or by an
/// unlimited token (the CLI's sign-in) is its own.
#[tokio::test]
async fn a_limited_tokens_tokens_go_with_it() {
    let app = TestApp::with_cluster().await;
    let project = app.create_project("lineage").await;
    let made = |by: String, body: serde_json::Value| {
        let app = &app;
        async move {
            let created = app
                .post("/api/v1/tokens")
                .bearer(&by)
                .json(body)
                .send()
                .await;
            created.assert_status(201);
            created.json()
        }
    };
    let secret = |record: &serde_json::Value| record["token"].as_str().unwrap().to_owned();
    let stolen = made(
        app.owner.token.clone(),
        json!({ "name": "ci", "ceiling": "deploy", "expires_in_days": 10,
                "scope": [{ "project": project }] }),
    )
    .await;
    assert_eq!(stolen["made_by"], serde_json::Value::Null);
    let scope = json!([{ "project": project }]);
    let child = made(
        secret(&stolen),
        json!({ "name": "child", "ceiling": "read", "scope": scope }),
    )
    .await;
    assert_eq!(child["made_by"], stolen["id"]);
    assert_eq!(child["expires_at"], stolen["expires_at"], "the maker's end");
    let longer = made(
        secret(&stolen),
        json!({ "name": "longer", "ceiling": "read", "scope": scope, "expires_in_days": 300 }),
    )
    .await;
    assert_eq!(
        longer["expires_at"], stolen["expires_at"],
        "no later than it"
    );
    let grandchild = made(
        secret(&child),
        json!({ "name": "grandchild", "ceiling": "read", "scope": scope }),
    )
    .await;
    assert_eq!(grandchild["made_by"], child["id"]);

    // The project deleted and made again: outside the stolen token, and
    // outside a token it makes after.
    app.request(http::Method::DELETE, &format!("/api/v1/projects/{project}"))
        .by(&app.owner)
        .send()
        .await
        .assert_status(202);
    // Times are whole seconds: the project made again in a later one than
    // the stolen token, as it would be in any real theft.
    let stolen_at = stolen["created_at"]
        .as_str()
        .and_then(berth_domain::clock::parse_rfc3339)
        .unwrap();
    crate::support::eventually("a second has passed since the token", || async {
        berth_domain::clock::unix_seconds() > stolen_at
    })
    .await;
    crate::support::eventually("the project is made again", || async {
        app.post("/api/v1/projects")
            .by(&app.owner)
            .json(json!({ "name": project, "display_name": "again" }))
            .send()
            .await
            .status
            .as_u16()
            == 201
    })
    .await;
    let after = made(
        secret(&stolen),
        json!({ "name": "after", "ceiling": "read", "scope": scope }),
    )
    .await;
    for token in [&stolen, &after] {
        app.get(&format!("/api/v1/projects/{project}"))
            .bearer(&secret(token))
            .send()
            .await
            .assert_problem(404, "not_found");
    }
    app.get(&format!("/api/v1/projects/{project}"))
        .by(&app.owner)
        .send()
        .await
        .assert_status(200);

    // Revoked (it may revoke itself): every token it made goes too.
    let id = stolen["id"].as_str().unwrap();
    app.request(http::Method::DELETE, &format!("/api/v1/tokens/{id}"))
        .bearer(&secret(&stolen))
        .send()
        .await
        .assert_status(204);
    for token in [&stolen, &child, &longer, &grandchild, &after] {
        app.get("/api/v1/me")
            .bearer(&secret(token))
            .send()
            .await
            .assert_problem(401, "unauthenticated");
    }

    // An unlimited token's token is its own: signing in again with the CLI
    // (which revokes its earlier sign-in token) ends no pipeline's token.
    let sign_in = made(app.owner.token.clone(), json!({ "name": "berth CLI" })).await;
    let pipeline = made(secret(&sign_in), json!({ "name": "pipeline" })).await;
    assert_eq!(pipeline["made_by"], serde_json::Value::Null);
    let id = sign_in["id"].as_str().unwrap();
    app.request(http::Method::DELETE, &format!("/api/v1/tokens/{id}"))
        .by(&app.owner)
        .send()
        .await
        .assert_status(204);
    app.get("/api/v1/me")
        .bearer(&secret(&pipeline))
        .send()
        .await
        .assert_status(200);
}
