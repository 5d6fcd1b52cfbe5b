//! DynamoDB round trips: authenticating a request costs one, and its audit
//! event two (take the next `seq`, store the event), so an audited read costs
//! three in all.

use crate::support::{PASSWORD, TestApp};

#[tokio::test]
async fn an_authenticated_read_costs_three_round_trips() {
    let app = TestApp::new().await;
    let session = app.sign_in(&app.owner.email, PASSWORD).await;
    // Warm up: the token's first use is recorded.
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
            3,
            "{label}: authentication (1) + audit (2)"
        );
    }
    let before = app.round_trips.get();
    app.get("/api/v1/healthz").send().await.assert_status(200);
    app.get("/api/v1/healthz").send().await.assert_status(200);
    assert_eq!(
        app.round_trips.get() - before,
        4,
        "liveness costs only its audit writes"
    );
}

/// Round trips of the app operations (DynamoDB, Kubernetes), counted so that
/// they cannot silently grow. The budgets: `getApp` at most 3 + 2 (App,
/// pods); `updateApp` at most 4 + 3 (environment, App, its replacement).
/// Every DynamoDB budget includes the call's audit event (2).
/// Each call is measured once the controller has settled the app's status:
/// a status write racing a change costs that change one more read and write.
#[tokio::test]
async fn app_operations_stay_within_their_round_trips() {
    use http::Method;
    use serde_json::json;

    let app = TestApp::with_cluster().await;
    let project = app.ready_environment("rt", "dev").await;
    let apps = format!("/api/v1/projects/{project}/environments/dev/apps");
    let shop = format!("{apps}/shop");
    app.post(&apps)
        .by(&app.owner)
        // No replicas: the app is Available at once, so its status settles.
        .json(json!({ "name": "shop", "image": "nginx:1", "port": 80, "replicas": 0 }))
        .send()
        .await
        .assert_status(201);
    let mut image = 1;
    let mut next_image = || {
        image += 1;
        json!({ "image": format!("nginx:{image}") })
    };
    // (operation, method, path, body, DynamoDB budget, Kubernetes budget)
    type Call = (
        &'static str,
        Method,
        String,
        Option<serde_json::Value>,
        u64,
        u64,
    );
    let calls: Vec<Call> = vec![
        ("getApp", Method::GET, shop.clone(), None, 3, 2),
        // App and pods; one log request per pod (none here), read at once.
        (
            "getAppLogs",
            Method::GET,
            format!("{shop}/logs"),
            None,
            3,
            2,
        ),
        (
            "updateApp",
            Method::PATCH,
            shop.clone(),
            Some(next_image()),
            4,
            3,
        ),
        ("listApps", Method::GET, apps.clone(), None, 3, 2),
        (
            "listReleases",
            Method::GET,
            format!("{shop}/releases"),
            None,
            4,
            1,
        ),
        (
            "rollbackApp",
            Method::POST,
            format!("{shop}/rollback"),
            Some(json!({"revision": 1})),
            5,
            3,
        ),
        (
            "createApp",
            Method::POST,
            apps.clone(),
            Some(json!({"name": "cart", "image": "nginx"})),
            4,
            2,
        ),
        (
            "deleteApp",
            Method::DELETE,
            format!("{apps}/cart"),
            None,
            5,
            2,
        ),
    ];
    let mut table = Vec::new();
    for (operation, method, path, body, dynamodb_budget, kube_budget) in calls {
        crate::support::eventually("the app's status settles", 30, || async {
            app.get(&shop).by(&app.owner).send().await.json()["app"]["ready"] == true
        })
        .await;
        let (dynamodb, kube) = (app.round_trips.get(), app.cluster_requests.get());
        let mut request = app.request(method, &path).by(&app.owner);
        if let Some(body) = body {
            request = request.json(body);
        }
        let answer = request.send().await;
        assert!(answer.status.is_success(), "{operation}: {}", answer.text());
        let used = (
            app.round_trips.get() - dynamodb,
            app.cluster_requests.get() - kube,
        );
        table.push(format!(
            "{operation}: {} DynamoDB, {} Kubernetes",
            used.0, used.1
        ));
        assert!(
            used.0 <= dynamodb_budget && used.1 <= kube_budget,
            "{operation} used {used:?}, budget ({dynamodb_budget}, {kube_budget})"
        );
    }
    println!("{}", table.join("\n"));
}
