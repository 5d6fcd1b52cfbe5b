//! What the request benchmarks share: a counting DynamoDB client for DynamoDB
//! Local, a router to send requests through, and the interleaved comparison
//! of Berth against a hand-written baseline.

#![allow(dead_code)]

use std::time::{Duration, Instant};

use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
use axum::Router;
use axum::body::Body;
use http::{Method, Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::Value;
use tower::ServiceExt;

use std::collections::HashMap;

use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes, ReturnValue};

use berth_store::keys;
use berth_store::round_trips::RoundTripCounter;

pub fn client(counter: &RoundTripCounter) -> aws_sdk_dynamodb::Client {
    let endpoint = std::env::var("BERTH_TEST_DYNAMODB_ENDPOINT")
        .expect("BERTH_TEST_DYNAMODB_ENDPOINT: run the benchmark with `make bench`");
    aws_sdk_dynamodb::Client::from_conf(
        aws_sdk_dynamodb::Config::builder()
            .behavior_version(BehaviorVersion::v2026_01_12())
            .region(Region::new("us-east-1"))
            .credentials_provider(Credentials::new("local", "local", None, None, "bench"))
            .endpoint_url(endpoint)
            .interceptor(counter.clone())
            .build(),
    )
}

pub struct Call {
    pub router: Router,
}

impl Call {
    /// The organization's first owner, made in `store`, its password set
    /// through the API (a temporary password only lets it do that): an API
    /// token of theirs, and their member id.
    pub async fn signed_in_owner(&self, store: &berth_store::Store) -> (String, String) {
        let owner =
            berth_store::identity::members::bootstrap(store, "bench", "owner@bench.example")
                .await
                .unwrap();
        let token = berth_store::identity::tokens::create(
            store,
            &owner.member.id,
            berth_store::identity::tokens::NewToken::unlimited("bench"),
        )
        .await
        .unwrap()
        .token;
        let (status, _) = self
            .send(
                Method::POST,
                "/api/v1/me/password",
                Some(&token),
                Some(serde_json::json!({
                    "current_password": owner.temporary_password,
                    "new_password": "benchmark passphrase"
                })),
            )
            .await;
        assert_eq!(status, StatusCode::OK);
        (token, owner.member.id)
    }

    pub async fn send(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let mut request = Request::builder().method(method).uri(path);
        if let Some(token) = token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        let body = match body {
            Some(body) => {
                request = request.header("content-type", "application/json");
                Body::from(body.to_string())
            }
            None => Body::empty(),
        };
        let response = self
            .router
            .clone()
            .oneshot(request.body(body).unwrap())
            .await
            .unwrap();
        let status = response.status();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        (
            status,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        )
    }
}

pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// `request` through `baseline` and `berth`, `iterations` times each,
/// interleaved in rounds of 100 so that drift hits both alike; prints the
/// figures and their ratio.
pub async fn compare(
    label: &str,
    iterations: usize,
    baseline: &Call,
    berth: &Call,
    request: impl AsyncFn(&Call),
) {
    for _ in 0..100 {
        request(berth).await;
        request(baseline).await;
    }
    let mut berth_times = Vec::with_capacity(iterations);
    let mut baseline_times = Vec::with_capacity(iterations);
    let round = 100;
    for _ in 0..iterations.div_ceil(round) {
        for (call, times) in [(berth, &mut berth_times), (baseline, &mut baseline_times)] {
            for _ in 0..round {
                let started = Instant::now();
                request(call).await;
                times.push(started.elapsed());
            }
        }
    }
    berth_times.sort();
    baseline_times.sort();
    let mean = |times: &[Duration]| times.iter().sum::<Duration>() / times.len() as u32;
    println!();
    println!(
        "{label}, {} requests each, interleaved in rounds of {round}",
        berth_times.len()
    );
    println!(
        "{:<28} {:>10} {:>10} {:>10} {:>10}",
        "", "mean", "p50", "p90", "p99"
    );
    for (name, times) in [
        ("baseline (same calls, bare)", &baseline_times),
        ("berth (full router)", &berth_times),
    ] {
        println!(
            "{name:<28} {:>10.3?} {:>10.3?} {:>10.3?} {:>10.3?}",
            mean(times),
            percentile(times, 0.5),
            percentile(times, 0.9),
            percentile(times, 0.99)
        );
    }
    let ratio = |f: &dyn Fn(&[Duration]) -> Duration| {
        f(&berth_times).as_secs_f64() / f(&baseline_times).as_secs_f64()
    };
    println!(
        "ratio berth / baseline: mean {:.3}x, p50 {:.3}x, p90 {:.3}x (goal <= 1.2x)",
        ratio(&|t| mean(t)),
        ratio(&|t| percentile(t, 0.5)),
        ratio(&|t| percentile(t, 0.9))
    );
}

/// What a baseline handler does to authenticate: the profile and the token
/// in one consistent read. Answers the items.
pub async fn baseline_authenticate(
    client: &aws_sdk_dynamodb::Client,
    table: &str,
    user_id: &str,
    token_digest: &str,
) -> Vec<HashMap<String, AttributeValue>> {
    let user = keys::user(user_id);
    let key = |sk: String| {
        HashMap::from([
            ("pk".to_owned(), AttributeValue::S(user.clone())),
            ("sk".to_owned(), AttributeValue::S(sk)),
        ])
    };
    let wanted = KeysAndAttributes::builder()
        .keys(key(keys::PROFILE_SK.to_owned()))
        .keys(key(keys::token_sk(token_digest)))
        .consistent_read(true)
        .build()
        .unwrap();
    let read = client
        .batch_get_item()
        .request_items(table, wanted)
        .send()
        .await
        .unwrap();
    read.responses.unwrap().remove(table).unwrap()
}

/// What a baseline handler does to audit: take the organization's next
/// sequence number, then store the event under it.
pub async fn baseline_audit(client: &aws_sdk_dynamodb::Client, table: &str, action: &str) {
    let org = "baseline";
    let taken = client
        .update_item()
        .table_name(table)
        .key("pk", AttributeValue::S(keys::audit(org)))
        .key("sk", AttributeValue::S(keys::AUDIT_COUNTER_SK.into()))
        .update_expression("ADD seq :one")
        .expression_attribute_values(":one", AttributeValue::N("1".into()))
        .return_values(ReturnValue::UpdatedNew)
        .send()
        .await
        .unwrap();
    let seq = taken.attributes.unwrap()["seq"].as_n().unwrap().clone();
    let event = HashMap::from([
        ("pk".to_owned(), AttributeValue::S(keys::audit(org))),
        (
            "sk".to_owned(),
            AttributeValue::S(keys::audit_event_sk(seq.parse().unwrap())),
        ),
        ("seq".to_owned(), AttributeValue::N(seq)),
        ("action".to_owned(), AttributeValue::S(action.into())),
        ("outcome".to_owned(), AttributeValue::S("success".into())),
    ]);
    client
        .put_item()
        .table_name(table)
        .set_item(Some(event))
        .condition_expression("attribute_not_exists(pk)")
        .send()
        .await
        .unwrap();
}

/// The image of a Deployment's first container.
pub fn first_image(deployment: &k8s_openapi::api::apps::v1::Deployment) -> Option<&str> {
    deployment
        .spec
        .as_ref()?
        .template
        .spec
        .as_ref()?
        .containers
        .first()?
        .image
        .as_deref()
}
