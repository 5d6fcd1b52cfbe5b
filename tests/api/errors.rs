//! Errors are Problem Details everywhere, including axum's own rejections, and
//! every response names its request.

use http::Method;

use crate::support::TestApp;

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
    let event = app
        .last_audit_event(berth_shared::store::keys::SYSTEM_ORG)
        .await;
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
    app.post("/api/v1/tokens")
        .by(&app.owner)
        .raw("")
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
    let developer = app.user(berth_shared::Role::Developer).await;
    let viewer = app.user(berth_shared::Role::Viewer).await;
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
            "/api/v1/members/nosuchmember".into(),
            "member `nosuchmember` not found".into(),
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
