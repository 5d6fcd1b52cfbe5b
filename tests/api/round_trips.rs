//! DynamoDB round trips: authenticating a request costs one, and an audited
//! read costs two in all.

use crate::support::{PASSWORD, TestApp};

#[tokio::test]
async fn an_authenticated_read_costs_two_round_trips() {
    let app = TestApp::new().await;
    let session = app.sign_in(&app.owner.email, PASSWORD).await;
    // Warm up: the token's first use is recorded, and the instance learns the
    // organization's audit sequence.
    app.get("/api/v1/me")
        .by(&app.owner)
        .send()
        .await
        .assert_status(200);

    for (label, request) in [
        ("token", app.get("/api/v1/me").by(&app.owner)),
        ("session", app.get("/api/v1/me").session(&session)),
    ] {
        let before = app.round_trips.get();
        request.send().await.assert_status(200);
        assert_eq!(
            app.round_trips.get() - before,
            2,
            "{label}: authentication (1) + audit (1)"
        );
    }
    let before = app.round_trips.get();
    app.get("/api/v1/healthz").send().await.assert_status(200);
    app.get("/api/v1/healthz").send().await.assert_status(200);
    assert_eq!(
        app.round_trips.get() - before,
        2,
        "liveness costs only its audit write"
    );
}
