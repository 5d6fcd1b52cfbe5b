//! The liveness probe and the per-subsystem health report.

use crate::support::TestApp;

#[tokio::test]
async fn liveness_needs_no_credentials() {
    let app = TestApp::new().await;
    let response = app.get("/api/v1/healthz").send().await;
    response.assert_status(200);
    assert_eq!(response.json(), serde_json::json!({ "status": "ok" }));
}

#[tokio::test]
async fn details_report_each_subsystem() {
    let app = TestApp::with_cluster().await;
    app.get("/api/v1/healthz/details")
        .send()
        .await
        .assert_problem(401, "unauthenticated");
    let response = app
        .get("/api/v1/healthz/details")
        .by(&app.owner)
        .send()
        .await;
    response.assert_status(200);
    let report = response.json();
    assert_eq!(report["status"], "ok");
    assert_eq!(report["version"], env!("CARGO_PKG_VERSION"));
    let subsystems = report["subsystems"].as_array().unwrap();
    let dynamodb = subsystems
        .iter()
        .find(|s| s["name"] == "dynamodb")
        .expect("dynamodb is reported");
    assert_eq!(dynamodb["status"], "up");
    assert!(dynamodb["latency_ms"].as_u64().is_some());
    assert!(dynamodb.get("detail").is_some());
}

#[tokio::test]
async fn details_answer_503_when_the_store_is_gone() {
    let app = TestApp::new().await;
    // The table disappears; the credentials were checked against it, so the
    // caller is told the store is unavailable rather than unauthenticated.
    app.dynamodb
        .delete_table()
        .table_name(app.state.store.table())
        .send()
        .await
        .unwrap();
    app.get("/api/v1/healthz/details")
        .by(&app.owner)
        .send()
        .await
        .assert_problem(503, "storage_unavailable");
    app.get("/api/v1/healthz").send().await.assert_status(200);
}

#[tokio::test]
async fn details_report_a_failing_store_as_down() {
    let app = TestApp::new().await;
    app.store_faults.fail_next("GetItem", 1);
    let response = app
        .get("/api/v1/healthz/details")
        .by(&app.owner)
        .send()
        .await;
    response.assert_status(503);
    let report = response.json();
    assert_eq!(report["status"], "down");
    let dynamodb = &report["subsystems"][0];
    assert_eq!(
        (dynamodb["name"].as_str(), dynamodb["status"].as_str()),
        (Some("dynamodb"), Some("down"))
    );
    assert!(
        dynamodb["detail"]
            .as_str()
            .is_some_and(|d| !d.contains("injected")),
        "{dynamodb}"
    );
    let event = app.last_audit_event("acme").await;
    assert_eq!(
        (event.action.as_str(), event.outcome),
        ("getHealthDetails", berth_records::audit::Outcome::Error)
    );
}
