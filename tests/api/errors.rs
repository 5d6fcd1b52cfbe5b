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
