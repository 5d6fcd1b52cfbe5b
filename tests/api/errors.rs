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
        assert!(detail.contains(field), "{path}: {detail}");
        assert!(detail.contains("expected"), "{path}: {detail}");
    }
}
