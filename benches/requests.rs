//! `make bench`: Berth's request path against DynamoDB Local.
//!
//! 1. `GET /api/v1/me` through the full router (pipeline, authentication,
//!    handler, audit) against a baseline: a bare axum handler making the same
//!    DynamoDB calls directly with the SDK. Both run in this process against
//!    the same DynamoDB Local, interleaved in rounds so drift hits both alike.
//! 2. The DynamoDB round trips of every operation, counted by an SDK
//!    interceptor, warm (the steady state of a Lambda instance).
//!
//! `BERTH_BENCH_ITERATIONS` (default 2000) sets the requests per contender.

mod common;

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use http::{Method, StatusCode};
use serde_json::{Value, json};

use berth_api::AppState;
use berth_api::config::Config;
use berth_domain::credentials;
use berth_store::identity::members;
use berth_store::round_trips::RoundTripCounter;
use berth_store::{keys, schema};

/// The baseline: what `GET /api/v1/me` asks of DynamoDB, written by hand.
#[derive(Clone)]
struct Baseline {
    client: aws_sdk_dynamodb::Client,
    table: String,
    user_id: String,
    token_digest: String,
}

async fn baseline_me(State(baseline): State<Baseline>) -> Json<Value> {
    let items = common::baseline_authenticate(
        &baseline.client,
        &baseline.table,
        &baseline.user_id,
        &baseline.token_digest,
    )
    .await;
    let profile = items
        .iter()
        .find(|i| i["sk"].as_s().unwrap() == keys::PROFILE_SK)
        .unwrap();
    common::baseline_audit(&baseline.client, &baseline.table, "getCurrentUser").await;
    Json(json!({
        "id": baseline.user_id,
        "email": profile["email"].as_s().unwrap(),
        "display_name": null,
        "via": "token",
        "must_change_password": profile["must_change_password"].as_bool().unwrap(),
    }))
}

#[tokio::main]
async fn main() {
    if std::env::args().any(|arg| arg == "--list") {
        return; // `cargo bench -- --list` and `cargo test --benches` ask this.
    }
    let iterations: usize = std::env::var("BERTH_BENCH_ITERATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let counter = RoundTripCounter::default();
    let client = common::client(&counter);
    let table = format!("bench-{}", uuid::Uuid::new_v4().simple());
    schema::create_table(&client, &table).await.unwrap();
    let state = AppState::new(client.clone(), Config::for_table(&table));
    let berth = common::Call {
        router: berth_local::app(state.clone()),
    };

    // Every operation once, through the API, counting round trips (warm).
    let owner = members::bootstrap(&state.store, "bench", "owner@bench.example")
        .await
        .unwrap();
    let mut trips: Vec<(&str, u64, StatusCode)> = Vec::new();
    let mut measure = async |name: &'static str,
                             method: Method,
                             path: &str,
                             token: Option<&str>,
                             body: Option<Value>| {
        let before = counter.get();
        let (status, value) = berth.send(method, path, token, body).await;
        trips.push((name, counter.get() - before, status));
        value
    };
    let login = json!({ "email": "owner@bench.example", "password": owner.temporary_password });
    measure(
        "login",
        Method::POST,
        "/api/v1/auth/login",
        None,
        Some(login.clone()),
    )
    .await;
    measure(
        "login",
        Method::POST,
        "/api/v1/auth/login",
        None,
        Some(login),
    )
    .await;
    let bootstrap_token = berth_store::identity::tokens::create(
        &state.store,
        &owner.member.id,
        berth_store::identity::tokens::NewToken::unlimited("bench"),
    )
    .await
    .unwrap()
    .token;
    let new_password = "benchmark passphrase";
    measure(
        "changePassword (token)",
        Method::POST,
        "/api/v1/me/password",
        Some(&bootstrap_token),
        Some(json!({ "current_password": owner.temporary_password, "new_password": new_password })),
    )
    .await;
    let created = measure(
        "createToken",
        Method::POST,
        "/api/v1/tokens",
        Some(&bootstrap_token),
        Some(json!({ "name": "bench" })),
    )
    .await;
    let token = created["token"].as_str().unwrap().to_owned();
    measure(
        "getCurrentUser (token's first use)",
        Method::GET,
        "/api/v1/me",
        Some(&token),
        None,
    )
    .await;
    measure(
        "getCurrentUser",
        Method::GET,
        "/api/v1/me",
        Some(&token),
        None,
    )
    .await;
    measure(
        "listTokens",
        Method::GET,
        "/api/v1/tokens",
        Some(&token),
        None,
    )
    .await;
    let other = created["id"].as_str().unwrap().to_owned();
    let spare = measure(
        "createToken",
        Method::POST,
        "/api/v1/tokens",
        Some(&token),
        Some(json!({ "name": "spare" })),
    )
    .await;
    measure(
        "deleteToken",
        Method::DELETE,
        &format!("/api/v1/tokens/{}", spare["id"].as_str().unwrap()),
        Some(&token),
        None,
    )
    .await;
    let invited = measure(
        "inviteMember",
        Method::POST,
        "/api/v1/members",
        Some(&token),
        Some(json!({ "email": "dev@bench.example", "role": "developer" })),
    )
    .await;
    let member = invited["id"].as_str().unwrap().to_owned();
    measure(
        "listMembers",
        Method::GET,
        "/api/v1/members",
        Some(&token),
        None,
    )
    .await;
    measure(
        "updateMember",
        Method::PATCH,
        &format!("/api/v1/members/{member}"),
        Some(&token),
        Some(json!({ "role": "admin" })),
    )
    .await;
    measure(
        "removeMember",
        Method::DELETE,
        &format!("/api/v1/members/{member}"),
        Some(&token),
        None,
    )
    .await;
    measure(
        "listAuditEvents",
        Method::GET,
        "/api/v1/audit",
        Some(&token),
        None,
    )
    .await;
    measure(
        "getHealthDetails (no cluster: 503)",
        Method::GET,
        "/api/v1/healthz/details",
        Some(&token),
        None,
    )
    .await;
    measure("getHealth", Method::GET, "/api/v1/healthz", None, None).await;
    measure("getHealth", Method::GET, "/api/v1/healthz", None, None).await;
    measure(
        "getCurrentUser, no credentials",
        Method::GET,
        "/api/v1/me",
        None,
        None,
    )
    .await;
    measure("unknownRoute", Method::GET, "/api/v1/nowhere", None, None).await;
    let session_login = json!({ "email": "owner@bench.example", "password": new_password });
    let _ = other;
    measure(
        "login",
        Method::POST,
        "/api/v1/auth/login",
        None,
        Some(session_login),
    )
    .await;
    measure(
        "logout (token)",
        Method::POST,
        "/api/v1/auth/logout",
        Some(&token),
        None,
    )
    .await;

    println!("DynamoDB round trips per call (SDK requests, counted by an interceptor)");
    println!("{:<42} {:>6} {:>7}", "operation", "trips", "status");
    for (name, count, status) in &trips {
        println!("{name:<42} {count:>6} {:>7}", status.as_u16());
    }

    // GET /api/v1/me: Berth against the bare baseline.
    let profile_id = owner.member.id.clone();
    let baseline_state = Baseline {
        client: client.clone(),
        table: table.clone(),
        user_id: profile_id,
        token_digest: credentials::digest(&token),
    };
    let baseline = common::Call {
        router: Router::new()
            .route("/api/v1/me", get(baseline_me))
            .with_state(baseline_state),
    };
    for _ in 0..100 {
        assert_eq!(
            berth
                .send(Method::GET, "/api/v1/me", Some(&token), None)
                .await
                .0,
            StatusCode::OK
        );
        assert_eq!(
            baseline
                .send(Method::GET, "/api/v1/me", Some(&token), None)
                .await
                .0,
            StatusCode::OK
        );
    }
    common::compare(
        "GET /api/v1/me",
        iterations,
        &baseline,
        &berth,
        async |call| {
            let (status, _) = call
                .send(Method::GET, "/api/v1/me", Some(&token), None)
                .await;
            assert_eq!(status, StatusCode::OK);
        },
    )
    .await;
}
