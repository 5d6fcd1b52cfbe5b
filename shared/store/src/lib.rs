//! Berth's storage layer, on `berth-domain` alone: the DynamoDB table (one
//! table for everything Berth keeps outside the cluster), the audit log
//! ([`audit`]) and identity ([`identity`]: users, passwords, sessions,
//! tokens, members, login throttling).
//!
//! - [`schema`]: the table definition (keys, index, TTL), in one place.
//! - [`endpoint`]: where the client points, and whether that is DynamoDB Local.
//! - [`keys`]: how each kind of item is addressed.
//! - [`round_trips`]: an SDK interceptor that counts requests (benchmarks, tests).
//!
//! Every failure is a [`StoreError`], in the store's own words: DynamoDB's
//! errors become one through `?` (by cause: [`StoreError::Unavailable`] for
//! what a retry may cure); call sites that expect a condition to fail look
//! at the error first and say what it means. The HTTP layer turns a
//! `StoreError` into what the caller reads.

pub mod app_entries;
pub mod audit;
pub mod endpoint;
mod error;
pub mod hooks;
pub mod hostnames;
pub mod identity;
pub mod keys;
pub mod kubeconfig;
pub mod purges;
pub mod registry_grants;
pub mod registry_settings;
pub mod releases;
pub mod round_trips;
pub mod schema;

pub use error::StoreError;

use std::collections::HashMap;
use std::sync::Arc;

/// The SDK's client a [`Store`] is made from: the process builds it from
/// its AWS configuration, the tests with their interceptors; nothing else
/// of the SDK leaves this crate.
pub use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::config::http::HttpResponse;
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::builders::{
    ConditionCheckBuilder, DeleteBuilder, PutBuilder, UpdateBuilder,
};
use aws_sdk_dynamodb::types::{AttributeValue, CancellationReason, TransactWriteItem};
use serde::Serialize;
use serde::de::DeserializeOwned;

pub(crate) type Item = HashMap<String, AttributeValue>;

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

    pub(crate) fn client(&self) -> &Client {
        &self.client
    }

    pub fn table(&self) -> &str {
        &self.table
    }
}

/// The primary key of an item.
pub(crate) fn key(pk: String, sk: &str) -> Item {
    HashMap::from([
        (keys::PK.to_owned(), AttributeValue::S(pk)),
        (keys::SK.to_owned(), AttributeValue::S(sk.to_owned())),
    ])
}

/// An item's sort key (empty if it has none).
pub(crate) fn sort_key(item: &Item) -> &str {
    item.get(keys::SK)
        .and_then(|v| v.as_s().ok())
        .map_or("", String::as_str)
}

pub(crate) fn to_item<T: Serialize>(value: &T) -> Result<Item, StoreError> {
    serde_dynamo::to_item(value)
        .map_err(|e| StoreError::Malformed(format!("encoding an item: {e}")))
}

pub(crate) fn from_item<T: DeserializeOwned>(item: Item) -> Result<T, StoreError> {
    serde_dynamo::from_item(item)
        .map_err(|e| StoreError::Malformed(format!("decoding an item: {e}")))
}

/// One value of an item (a map attribute, for a struct).
pub(crate) fn to_attribute<T: Serialize>(value: &T) -> Result<AttributeValue, StoreError> {
    serde_dynamo::to_attribute_value(value)
        .map_err(|e| StoreError::Malformed(format!("encoding an attribute: {e}")))
}

pub(crate) fn from_attribute<T: DeserializeOwned>(value: AttributeValue) -> Result<T, StoreError> {
    serde_dynamo::from_attribute_value(value)
        .map_err(|e| StoreError::Malformed(format!("decoding an attribute: {e}")))
}

pub(crate) fn s(value: impl Into<String>) -> AttributeValue {
    AttributeValue::S(value.into())
}

pub(crate) fn n(value: impl ToString) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

/// Whether an SDK error is a failed condition (the expected "already exists",
/// "changed meanwhile" outcomes of conditional writes).
pub(crate) fn is_condition_failure<E, R>(error: &SdkError<E, R>) -> bool
where
    E: aws_sdk_dynamodb::error::ProvideErrorMetadata,
{
    matches!(error, SdkError::ServiceError(service) if service.err().code() == Some("ConditionalCheckFailedException"))
}

/// Whether a conditional write was made: false when its condition failed
/// (another got there first, or it was already so), the store's error for
/// any other failure.
pub(crate) fn written<T, E>(
    outcome: Result<T, SdkError<E, HttpResponse>>,
) -> Result<bool, StoreError>
where
    E: std::error::Error + aws_sdk_dynamodb::error::ProvideErrorMetadata + 'static,
{
    match outcome {
        Ok(_) => Ok(true),
        Err(error) if is_condition_failure(&error) => Ok(false),
        Err(error) => Err(error.into()),
    }
}

/// For a cancelled transaction: why each of its items was refused.
pub(crate) fn cancellation_reasons<R>(
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
pub(crate) fn cancelled_conditions<R>(
    error: &SdkError<TransactWriteItemsError, R>,
) -> Option<Vec<bool>> {
    cancellation_reasons(error).map(|reasons| {
        reasons
            .iter()
            .map(|reason| reason.code() == Some("ConditionalCheckFailed"))
            .collect()
    })
}

/// A failed transaction that no condition explains: a concurrent transaction
/// on the same items won (409), or the store failed (503).
pub(crate) fn transaction_failure(
    error: SdkError<TransactWriteItemsError, HttpResponse>,
) -> StoreError {
    let conflicted = cancellation_reasons(&error).is_some_and(|reasons| {
        reasons
            .iter()
            .any(|r| r.code() == Some("TransactionConflict"))
    });
    if conflicted {
        StoreError::Conflict("a concurrent change won; try again".into())
    } else {
        error.into()
    }
}

fn built<T>(result: Result<T, aws_sdk_dynamodb::error::BuildError>) -> Result<T, StoreError> {
    result.map_err(|e| StoreError::Broken(format!("building a request: {e}")))
}

/// One item of a `TransactWriteItems` call, from its builder.
pub(crate) fn tx_put(put: PutBuilder) -> Result<TransactWriteItem, StoreError> {
    Ok(TransactWriteItem::builder()
        .put(built(put.build())?)
        .build())
}

pub(crate) fn tx_update(update: UpdateBuilder) -> Result<TransactWriteItem, StoreError> {
    Ok(TransactWriteItem::builder()
        .update(built(update.build())?)
        .build())
}

pub(crate) fn tx_delete(delete: DeleteBuilder) -> Result<TransactWriteItem, StoreError> {
    Ok(TransactWriteItem::builder()
        .delete(built(delete.build())?)
        .build())
}

pub(crate) fn tx_check(check: ConditionCheckBuilder) -> Result<TransactWriteItem, StoreError> {
    Ok(TransactWriteItem::builder()
        .condition_check(built(check.build())?)
        .build())
}

/// Every item a query finds, following its pages.
/// Every item of partition `gsi1pk` of index `gsi1` (eventually consistent,
/// as an index is).
pub(crate) async fn index_partition(
    store: &Store,
    gsi1pk: String,
) -> Result<Vec<Item>, StoreError> {
    query_all(
        store
            .client()
            .query()
            .table_name(store.table())
            .index_name(keys::GSI1)
            .key_condition_expression("gsi1pk = :partition")
            .expression_attribute_values(":partition", s(gsi1pk)),
    )
    .await
}

pub(crate) async fn query_all(query: QueryFluentBuilder) -> Result<Vec<Item>, StoreError> {
    let mut items = Vec::new();
    let mut start = None;
    loop {
        let page = query.clone().set_exclusive_start_key(start).send().await?;
        items.extend(page.items.unwrap_or_default());
        start = page.last_evaluated_key;
        if start.is_none() {
            return Ok(items);
        }
    }
}

/// The error of a `TransactWriteItems` call.
pub(crate) type TransactError =
    SdkError<TransactWriteItemsError, aws_sdk_dynamodb::config::http::HttpResponse>;

impl Store {
    /// Writes items in one transaction: all of them or none.
    pub(crate) async fn transact(
        &self,
        writes: Vec<TransactWriteItem>,
    ) -> Result<(), TransactError> {
        self.client
            .transact_write_items()
            .set_transact_items(Some(writes))
            .send()
            .await?;
        Ok(())
    }

    /// Deletes an item, if it is there.
    pub(crate) async fn delete(&self, key: Item) -> Result<(), StoreError> {
        self.client
            .delete_item()
            .table_name(self.table())
            .set_key(Some(key))
            .send()
            .await?;
        Ok(())
    }

    /// Deletes items by key ([`Store::write_batch`]).
    pub(crate) async fn delete_batch(&self, keys: Vec<Item>) -> Result<(), StoreError> {
        let requests = keys
            .into_iter()
            .map(|key| {
                let delete = built(
                    aws_sdk_dynamodb::types::DeleteRequest::builder()
                        .set_key(Some(key))
                        .build(),
                )?;
                Ok(aws_sdk_dynamodb::types::WriteRequest::builder()
                    .delete_request(delete)
                    .build())
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        self.write_batch(requests).await
    }

    /// Puts items whole ([`Store::write_batch`]).
    pub(crate) async fn put_batch(&self, items: Vec<Item>) -> Result<(), StoreError> {
        let requests = items
            .into_iter()
            .map(|item| {
                let put = built(
                    aws_sdk_dynamodb::types::PutRequest::builder()
                        .set_item(Some(item))
                        .build(),
                )?;
                Ok(aws_sdk_dynamodb::types::WriteRequest::builder()
                    .put_request(put)
                    .build())
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        self.write_batch(requests).await
    }

    /// Writes, 25 to a `BatchWriteItem` (its limit); those DynamoDB leaves
    /// unprocessed under load are sent again. Not atomic: an error may
    /// leave some of them undone.
    async fn write_batch(
        &self,
        requests: Vec<aws_sdk_dynamodb::types::WriteRequest>,
    ) -> Result<(), StoreError> {
        for chunk in requests.chunks(25) {
            let mut requests = chunk.to_vec();
            for attempt in 1.. {
                let output = self
                    .client
                    .batch_write_item()
                    .request_items(self.table(), requests)
                    .send()
                    .await?;
                match output
                    .unprocessed_items
                    .and_then(|mut left| left.remove(self.table()))
                {
                    Some(left) if !left.is_empty() => {
                        if attempt == 5 {
                            return Err(StoreError::Unavailable(
                                "DynamoDB kept writes of a batch unprocessed".into(),
                            ));
                        }
                        requests = left;
                    }
                    _ => break,
                }
            }
        }
        Ok(())
    }

    /// Reads several items in one round trip, consistently. DynamoDB may
    /// leave keys unprocessed under load; those are asked for again.
    pub(crate) async fn get_many(&self, keys: Vec<Item>) -> Result<Vec<Item>, StoreError> {
        let mut wanted = built(
            aws_sdk_dynamodb::types::KeysAndAttributes::builder()
                .set_keys(Some(keys))
                .consistent_read(true)
                .build(),
        )?;
        let mut found = Vec::new();
        for _ in 0..5 {
            let output = self
                .client
                .batch_get_item()
                .request_items(self.table(), wanted)
                .send()
                .await?;
            if let Some(mut responses) = output.responses {
                found.extend(responses.remove(self.table()).unwrap_or_default());
            }
            match output
                .unprocessed_keys
                .and_then(|mut left| left.remove(self.table()))
            {
                Some(left) if !left.keys().is_empty() => wanted = left,
                _ => return Ok(found),
            }
        }
        Err(StoreError::Unavailable(
            "DynamoDB kept keys of a batch read unprocessed".into(),
        ))
    }

    /// One item, read consistently.
    pub(crate) async fn get(&self, key: Item) -> Result<Option<Item>, StoreError> {
        let output = self
            .client
            .get_item()
            .table_name(self.table())
            .set_key(Some(key))
            .consistent_read(true)
            .send()
            .await?;
        Ok(output.item)
    }

    /// Every item of partition `pk`, read consistently and decoded.
    pub(crate) async fn partition_as<T: DeserializeOwned>(
        &self,
        pk: String,
    ) -> Result<Vec<T>, StoreError> {
        query_all(
            self.client
                .query()
                .table_name(self.table())
                .key_condition_expression("pk = :pk")
                .expression_attribute_values(":pk", s(pk))
                .consistent_read(true),
        )
        .await?
        .into_iter()
        .map(from_item)
        .collect()
    }

    /// One item, read consistently and decoded.
    pub(crate) async fn get_as<T: DeserializeOwned>(
        &self,
        key: Item,
    ) -> Result<Option<T>, StoreError> {
        self.get(key).await?.map(from_item).transpose()
    }

    /// One item, replacing what has its key.
    pub(crate) async fn put(&self, item: Item) -> Result<(), StoreError> {
        self.client
            .put_item()
            .table_name(self.table())
            .set_item(Some(item))
            .send()
            .await?;
        Ok(())
    }

    /// Writes a new item; fails (as a storage error) if one with its key exists.
    pub(crate) async fn put_new(&self, item: Item) -> Result<(), StoreError> {
        self.client
            .put_item()
            .table_name(self.table())
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(pk)")
            .send()
            .await?;
        Ok(())
    }
}
