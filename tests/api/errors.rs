//! Errors are Problem Details everywhere, including axum's own rejections, and
//! every response names its request.

use http::Method;
use serde_json::json;

use crate::support::{TestApp, TestRequest, TestUser};

#[tokio::test]
async fn unknown_routes_and_methods() {
    let app = TestApp::new().await;
    app.get("/api/v1/nowhere")
        .send()
        .await
        .assert_problem(404, "not_found");
    app.get("/").send().await.assert_problem(404, "not_found");
    app.request(Method::DELETE, "/api/v1/me")
        .by(&app.owner)
        .send()
        .await
        .assert_problem(405, "method_not_allowed");
    app.request(Method::PUT, "/api/v1/members")
        .send()
        .await
        .assert_problem(405, "method_not_allowed");
    app.get("/api/v1/auth/login")
        .send()
        .await
        .assert_problem(405, "method_not_allowed");
    let event = app.last_audit_event(berth_store::keys::SYSTEM_ORG).await;
    assert_eq!(
        (event.action.as_str(), event.status),
        ("unknownRoute", Some(405))
    );
    let event = app.last_audit_event("acme").await;
    assert_eq!(
        (event.action.as_str(), event.status),
        ("unknownRoute", Some(405)),
        "recorded for the caller's organization"
    );
}

#[tokio::test]
async fn every_response_carries_a_request_id() {
    let app = TestApp::new().await;
    let responses = [
        app.get("/api/v1/healthz").send().await,
        app.get("/api/v1/me").send().await,
        app.get("/api/v1/me").by(&app.owner).send().await,
        app.get("/api/v1/nowhere").send().await,
        app.post("/api/v1/auth/login").raw("{").send().await,
    ];
    let mut ids = std::collections::HashSet::new();
    for response in &responses {
        let id = response
            .headers
            .get("x-request-id")
            .expect("X-Request-Id")
            .to_str()
            .unwrap()
            .to_owned();
        assert!(!id.is_empty());
        ids.insert(id);
    }
    assert_eq!(ids.len(), responses.len(), "each request has its own id");
}

#[tokio::test]
async fn a_body_where_none_is_expected_is_ignored_but_bad_json_is_not() {
    let app = TestApp::new().await;
    app.post("/api/v1/tokens")
        .by(&app.owner)
        .header("content-type", "application/json")
        .raw("[1, 2")
        .send()
        .await
        .assert_problem(400, "invalid_request");
    // No body where one is required: a lesson about the body, not its type.
    app.post("/api/v1/tokens")
        .by(&app.owner)
        .raw("")
        .send()
        .await
        .assert_problem(400, "invalid_request");
    app.post("/api/v1/tokens")
        .by(&app.owner)
        .header("content-type", "text/plain")
        .raw(r#"{"name": "t"}"#)
        .send()
        .await
        .assert_problem(415, "unsupported_media_type");
    app.post("/api/v1/tokens")
        .by(&app.owner)
        .json(serde_json::json!(["not", "an", "object"]))
        .send()
        .await
        .assert_problem(400, "invalid_request");
}

/// A body field of the wrong type is named with the type it should have;
/// the value sent is never repeated (it may be a password or a secret).
#[tokio::test]
async fn a_wrong_type_names_the_field_but_never_echoes_the_value() {
    use serde_json::json;

    let app = TestApp::new().await;
    let cases = [
        (
            "/api/v1/auth/login",
            json!({ "email": "someone@example.org", "password": 987654321 }),
            "987654321",
            "password",
        ),
        (
            "/api/v1/auth/login",
            json!({ "email": ["hunter2-secret"], "password": "a long enough guess" }),
            "hunter2-secret",
            "email",
        ),
        (
            "/api/v1/tokens",
            json!({ "name": "ci", "expires_in_days": "hunter2-secret" }),
            "hunter2-secret",
            "expires_in_days",
        ),
        (
            "/api/v1/tokens",
            json!({ "name": "ci", "expires_in_days": -424242 }),
            "424242",
            "expires_in_days",
        ),
    ];
    for (path, body, secret, field) in cases {
        let response = app.post(path).by(&app.owner).json(body).send().await;
        response.assert_problem(400, "invalid_request");
        let detail = response.json()["detail"].as_str().unwrap().to_owned();
        assert!(!detail.contains(secret), "{path}: {detail}");
        assert!(
            detail.starts_with(&format!("{field} must be ")),
            "{path}: {detail}"
        );
    }
}

/// Body errors in the API's words: a missing field is required, a wrong
/// type names what it should be, bad JSON says where; no value is repeated.
#[tokio::test]
async fn body_errors_speak_the_apis_words() {
    use serde_json::json;

    let app = TestApp::new().await;
    let cases = [
        (json!({ "name": "web" }), "display_name is required"),
        (
            json!({ "name": "web", "display_name": ["hunter2-secret"] }),
            "display_name must be a string, not an array",
        ),
        (
            json!({ "name": "web", "display_name": "Web", "colour": "hunter2-secret" }),
            "colour is not a field here; the fields are `name`, `display_name`, `description`",
        ),
        (
            json!("hunter2-secret"),
            "the body must be an object, not a string",
        ),
    ];
    for (body, detail) in cases {
        let response = app
            .post("/api/v1/projects")
            .by(&app.owner)
            .json(body.clone())
            .send()
            .await;
        response.assert_problem(400, "invalid_request");
        assert_eq!(response.json()["detail"], detail, "{body}");
    }
    let broken = app
        .post("/api/v1/auth/login")
        .header("content-type", "application/json")
        .raw("{\"email\": \"a@example.org\",\n \"password\": hunter2-secret}")
        .send()
        .await;
    broken.assert_problem(400, "invalid_request");
    assert_eq!(
        broken.json()["detail"],
        "the body is not valid JSON: expected value at line 2 column 14"
    );
}

/// A caller who may not make a call learns that before anything about the
/// body.
#[tokio::test]
async fn forbidden_comes_before_any_lesson_about_the_body() {
    let app = TestApp::new().await;
    let developer = app.user(berth_domain::Role::Developer).await;
    let viewer = app.user(berth_domain::Role::Viewer).await;
    for (user, method, path) in [
        (&developer, Method::POST, "/api/v1/projects"),
        (&viewer, Method::POST, "/api/v1/members"),
        (
            &developer,
            Method::POST,
            "/api/v1/projects/web/environments/prod/restore",
        ),
    ] {
        app.request(method, path)
            .by(user)
            .header("content-type", "application/json")
            .raw("{ not json")
            .send()
            .await
            .assert_problem(403, "forbidden");
    }
}

/// A 404 names what is missing, in the caller's words; another
/// organization's objects read exactly like absent ones, and an unknown
/// route names nothing.
#[tokio::test]
async fn not_found_names_what_is_missing() {
    let app = TestApp::with_cluster().await;
    let project = app.ready_environment("web", "staging").await;
    let stranger = app.other_org("umbrella").await;
    let env = format!("/api/v1/projects/{project}/environments/staging");
    let absent_project = "nosuch-project".to_owned();
    let cases: Vec<(Method, String, String)> = vec![
        (
            Method::GET,
            format!("/api/v1/projects/{absent_project}"),
            format!("project `{absent_project}` not found"),
        ),
        (
            Method::GET,
            format!("/api/v1/projects/{absent_project}/environments/staging"),
            format!("project `{absent_project}` not found"),
        ),
        (
            Method::GET,
            format!("/api/v1/projects/{project}/environments/prod"),
            format!("environment `prod` not found in project `{project}`"),
        ),
        (
            Method::GET,
            format!("/api/v1/projects/{project}/environments/prod/apps/shop"),
            format!("environment `prod` not found in project `{project}`"),
        ),
        (
            Method::GET,
            format!("{env}/apps/shop"),
            format!("app `shop` not found in environment `staging` of project `{project}`"),
        ),
        (
            Method::DELETE,
            format!("{env}/secrets/db"),
            format!("secret `db` not found in environment `staging` of project `{project}`"),
        ),
        (
            Method::POST,
            format!("{env}/templates/nosuch"),
            "template `nosuch` not found".into(),
        ),
        (
            Method::DELETE,
            "/api/v1/tokens/nosuchtoken0".into(),
            "token `nosuchtoken0` not found".into(),
        ),
        (
            Method::DELETE,
            "/api/v1/members/nosuchmember0000".into(),
            "member `nosuchmember0000` not found".into(),
        ),
        // A value that cannot be an id is repeated nowhere (issue 45).
        (
            Method::DELETE,
            "/api/v1/members/nosuchmember".into(),
            "no such resource: the path's {member} is not a user's id (from the list of members)"
                .into(),
        ),
        (
            Method::GET,
            "/api/v1/nowhere".into(),
            "no such resource".into(),
        ),
    ];
    for (method, path, detail) in cases {
        let response = app
            .request(method.clone(), &path)
            .by(&app.owner)
            .send()
            .await;
        response.assert_problem(404, "not_found");
        assert_eq!(
            response.json()["detail"],
            detail.as_str(),
            "{method} {path}"
        );
    }

    // A token put where its id belongs is not repeated.
    let token = app.owner.token.clone();
    let response = app
        .request(Method::DELETE, &format!("/api/v1/tokens/{token}"))
        .by(&app.owner)
        .send()
        .await;
    response.assert_problem(404, "not_found");
    assert!(!response.text().contains(&token), "{}", response.text());

    // Acme's project and environment, asked for by another organization,
    // read exactly as absent ones do.
    for path in [
        format!("/api/v1/projects/{project}"),
        env.clone(),
        format!("{env}/apps/shop"),
        format!("{env}/restore"),
    ] {
        let method = if path.ends_with("/restore") {
            Method::POST
        } else {
            Method::GET
        };
        let response = app.request(method, &path).by(&stranger).send().await;
        response.assert_problem(404, "not_found");
        assert_eq!(
            response.json()["detail"],
            format!("project `{project}` not found").as_str(),
            "{path}"
        );
    }
}

/// Issue 25, part 4: a whole number is an integer however it is written
/// (JSON Schema 2020-12, which the description uses, counts `8.0` as one,
/// and Python's `json` writes whole floats so), in every body that takes
/// integers; a fraction is still refused (400).
#[tokio::test]
async fn whole_numbers_are_integers_however_they_are_written() {
    let app = TestApp::with_cluster().await;
    let project = app.create_project("whole").await;
    let created = app
        .post(&format!("/api/v1/projects/{project}/environments"))
        .by(&app.owner)
        .raw(r#"{"name": "dev", "quota": {"pods": 20.0, "volumes": 4e0}}"#)
        .header("content-type", "application/json")
        .send()
        .await;
    created.assert_status(201);
    app.wait_for_environment(&project, "dev").await;
    let apps = format!("/api/v1/projects/{project}/environments/dev/apps");
    fn as_written<'a>(request: TestRequest<'a>, owner: &TestUser, body: &str) -> TestRequest<'a> {
        request
            .by(owner)
            .header("content-type", "application/json")
            .raw(body.to_owned())
    }
    let json = |request, body| as_written(request, &app.owner, body);
    let shop = json(
        app.post(&apps),
        r#"{"name": "shop", "image": "nginx:1.27", "port": 8080.0, "replicas": 2.0,
            "max_replicas": 8.0}"#,
    )
    .send()
    .await;
    shop.assert_status(201);
    let process = &shop.json()["processes"][0];
    assert_eq!(
        (
            &process["port"],
            &process["min_replicas"],
            &process["max_replicas"]
        ),
        (&json!(8080), &json!(2), &json!(8))
    );
    let shop_path = format!("{apps}/shop");
    json(
        app.request(Method::PATCH, &shop_path),
        r#"{"processes": [{"name": "web", "replicas": 1.0, "max_replicas": 30e-1}]}"#,
    )
    .send()
    .await
    .assert_status(200);
    json(
        app.post(&format!("{shop_path}/rollback")),
        r#"{"revision": 1.0}"#,
    )
    .send()
    .await
    .assert_status(200);
    let token = json(
        app.post("/api/v1/tokens"),
        r#"{"name": "whole", "expires_in_days": 30.0}"#,
    )
    .send()
    .await;
    token.assert_status(201);
    assert!(token.json()["expires_at"].is_string(), "{}", token.text());

    for fraction in [
        r#"{"max_replicas": 8.5}"#,
        r#"{"replicas": 1.000001}"#,
        r#"{"fs_group": 15e-1}"#,
    ] {
        let refused = json(app.request(Method::PATCH, &shop_path), fraction)
            .send()
            .await;
        refused.assert_problem(400, "invalid_request");
        let detail = refused.json()["detail"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(detail.contains("must be an integer"), "{detail}");
    }
    let releases = app
        .get(&format!("{shop_path}/releases"))
        .by(&app.owner)
        .send()
        .await
        .json();
    assert_eq!(releases.as_array().map(Vec::len), Some(3), "{releases}");
}
