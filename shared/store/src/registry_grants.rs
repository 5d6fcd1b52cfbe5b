//! The registry token service's grants per credential and clock hour: which
//! grant is a credential's first of an hour (and so audited) is decided once
//! across all instances, by a conditional put of `REGGRANT#{user}` /
//! `HOUR#{hour}` that the table's TTL removes.

use aws_sdk_dynamodb::types::AttributeValue;

use crate::StoreError;

use crate::{Store, keys, s, written};

/// Records `username`'s grant in `hour` (Unix hours) unless one is recorded
/// already: whether this grant is the hour's first. The record expires at
/// `expires_at` (Unix seconds).
pub async fn first_of_hour(
    store: &Store,
    username: &str,
    hour: i64,
    expires_at: i64,
) -> Result<bool, StoreError> {
    let put = store
        .client()
        .put_item()
        .table_name(store.table())
        .item(keys::PK, s(format!("REGGRANT#{username}")))
        .item(keys::SK, s(format!("HOUR#{hour}")))
        .item(keys::TTL, AttributeValue::N(expires_at.to_string()))
        .condition_expression("attribute_not_exists(pk)")
        .send()
        .await;
    written(put)
}
