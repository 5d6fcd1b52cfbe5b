//! The init + first request baseline: a bare lambda_http function with the
//! stock AWS SDK client, built at init as the SDK's guide builds it, and one
//! route making the DynamoDB calls Berth's functions make for the cold start
//! bench's first request (`benches/cold_start.rs`): read a user's profile and
//! token in one `BatchGetItem`, take an audit sequence number (`UpdateItem`)
//! and store an event under it (`PutItem`).

use std::collections::HashMap;

use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes, ReturnValue};
use axum::Router;
use axum::extract::State;
use axum::routing::get;

async fn me(State(client): State<aws_sdk_dynamodb::Client>) -> &'static str {
    let table = "berth";
    let key = |sk: &str| {
        HashMap::from([
            (
                "pk".to_owned(),
                AttributeValue::S("USER#0123456789abcdef".into()),
            ),
            ("sk".to_owned(), AttributeValue::S(sk.into())),
        ])
    };
    let wanted = KeysAndAttributes::builder()
        .keys(key("PROFILE"))
        .keys(key("TOKEN#bench"))
        .consistent_read(true)
        .build()
        .expect("keys");
    let read = client
        .batch_get_item()
        .request_items(table, wanted)
        .send()
        .await;
    if read.is_err() {
        return "unavailable";
    }
    let audit = || AttributeValue::S("AUDIT#bare".into());
    let Ok(taken) = client
        .update_item()
        .table_name(table)
        .key("pk", audit())
        .key("sk", AttributeValue::S("COUNTER".into()))
        .update_expression("ADD seq :one")
        .expression_attribute_values(":one", AttributeValue::N("1".into()))
        .return_values(ReturnValue::UpdatedNew)
        .send()
        .await
    else {
        return "unavailable";
    };
    let seq = taken
        .attributes
        .and_then(|mut attributes| attributes.remove("seq"))
        .unwrap_or(AttributeValue::N("0".into()));
    let sk = format!("EVENT#{}", seq.as_n().map_or("0", String::as_str));
    let stored = client
        .put_item()
        .table_name(table)
        .item("pk", audit())
        .item("sk", AttributeValue::S(sk))
        .item("seq", seq)
        .item("action", AttributeValue::S("getCurrentUser".into()))
        .condition_expression("attribute_not_exists(pk)")
        .send()
        .await;
    if stored.is_err() { "unavailable" } else { "ok" }
}

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    let config = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
    let client = aws_sdk_dynamodb::Client::new(&config);
    let app = Router::new()
        .route("/api/v1/me", get(me))
        .with_state(client);
    lambda_http::run(app).await
}
