//! The DynamoDB table: one table for everything Berth keeps outside the cluster.
//!
//! - [`schema`]: the table definition (keys, index, TTL), in one place.
//! - [`keys`]: how each kind of item is addressed.
//! - [`round_trips`]: an SDK interceptor that counts requests (benchmarks, tests).
//!
//! Storage failures become [`ApiError::StorageUnavailable`] through `?`; call
//! sites that expect a condition to fail look at the error first.

pub mod keys;
pub mod round_trips;
pub mod schema;

use std::collections::HashMap;
use std::sync::Arc;

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::error::{DisplayErrorContext, SdkError};
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{AttributeValue, CancellationReason};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::ApiError;

pub type Item = HashMap<String, AttributeValue>;

/// The table and the client that reaches it. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Store {
    client: Client,
    table: Arc<str>,
}

impl Store {
    pub fn new(client: Client, table: impl Into<Arc<str>>) -> Self {
        Self {
            client,
            table: table.into(),
        }
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    pub fn table(&self) -> &str {
        &self.table
    }
}

impl<E, R> From<SdkError<E, R>> for ApiError
where
    E: std::error::Error + 'static,
    R: std::fmt::Debug,
{
    fn from(error: SdkError<E, R>) -> Self {
        ApiError::StorageUnavailable(DisplayErrorContext(&error).to_string())
    }
}

/// The primary key of an item.
pub fn key(pk: String, sk: &str) -> Item {
    HashMap::from([
        (keys::PK.to_owned(), AttributeValue::S(pk)),
        (keys::SK.to_owned(), AttributeValue::S(sk.to_owned())),
    ])
}

pub fn to_item<T: Serialize>(value: &T) -> Result<Item, ApiError> {
    serde_dynamo::to_item(value).map_err(|e| ApiError::Internal(format!("encoding an item: {e}")))
}

pub fn from_item<T: DeserializeOwned>(item: Item) -> Result<T, ApiError> {
    serde_dynamo::from_item(item).map_err(|e| ApiError::Internal(format!("decoding an item: {e}")))
}

pub fn s(value: impl Into<String>) -> AttributeValue {
    AttributeValue::S(value.into())
}

pub fn n(value: impl ToString) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

/// Whether an SDK error is a failed condition (the expected "already exists",
/// "changed meanwhile" outcomes of conditional writes).
pub fn is_condition_failure<E, R>(error: &SdkError<E, R>) -> bool
where
    E: aws_sdk_dynamodb::error::ProvideErrorMetadata,
{
    matches!(error, SdkError::ServiceError(service) if service.err().code() == Some("ConditionalCheckFailedException"))
}

/// For a cancelled transaction: why each of its items was refused.
pub fn cancellation_reasons<R>(
    error: &SdkError<TransactWriteItemsError, R>,
) -> Option<&[CancellationReason]> {
    match error {
        SdkError::ServiceError(service) => match service.err() {
            TransactWriteItemsError::TransactionCanceledException(cancelled) => {
                Some(cancelled.cancellation_reasons())
            }
            _ => None,
        },
        _ => None,
    }
}

/// For a cancelled transaction: which of its items failed their condition.
pub fn cancelled_conditions<R>(error: &SdkError<TransactWriteItemsError, R>) -> Option<Vec<bool>> {
    cancellation_reasons(error).map(|reasons| {
        reasons
            .iter()
            .map(|reason| reason.code() == Some("ConditionalCheckFailed"))
            .collect()
    })
}

/// A failed transaction that no condition explains: a concurrent transaction
/// on the same items won (409), or the store failed (503).
pub fn transaction_failure<R: std::fmt::Debug>(
    error: SdkError<TransactWriteItemsError, R>,
) -> ApiError {
    let conflicted = cancellation_reasons(&error).is_some_and(|reasons| {
        reasons
            .iter()
            .any(|r| r.code() == Some("TransactionConflict"))
    });
    if conflicted {
        ApiError::Conflict("a concurrent change won; try again".into())
    } else {
        error.into()
    }
}
