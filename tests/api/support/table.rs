//! The table as the tests reach it around the API, through their own
//! client (`TestApp::dynamodb`): the store keeps its raw helpers to itself.

use std::collections::HashMap;

use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::query::QueryError;
use aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder;
use aws_sdk_dynamodb::types::AttributeValue;

pub type Item = HashMap<String, AttributeValue>;

/// The primary key of an item.
pub fn key(pk: String, sk: &str) -> Item {
    HashMap::from([
        (berth_store::keys::PK.to_owned(), s(pk)),
        (berth_store::keys::SK.to_owned(), s(sk)),
    ])
}

/// An item's sort key (empty if it has none).
pub fn sort_key(item: &Item) -> &str {
    item.get(berth_store::keys::SK)
        .and_then(|v| v.as_s().ok())
        .map_or("", String::as_str)
}

pub fn s(value: impl Into<String>) -> AttributeValue {
    AttributeValue::S(value.into())
}

pub fn n(value: impl ToString) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

pub fn to_item<T: serde::Serialize>(value: &T) -> Result<Item, serde_dynamo::Error> {
    serde_dynamo::to_item(value)
}

/// Every item a query finds, following its pages.
pub async fn query_all(query: QueryFluentBuilder) -> Result<Vec<Item>, SdkError<QueryError>> {
    query.into_paginator().items().send().try_collect().await
}
