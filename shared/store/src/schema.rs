//! The table definition: the one place in code that says what the table is.
//! `berth-admin create-table`, `make dev` and the tests all create it from here;
//! `template.yaml` declares the same shape for AWS (a test compares the two).

use std::time::Duration;

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType, Projection,
    ProjectionType, ScalarAttributeType, TableStatus, TimeToLiveSpecification,
};

use super::keys::{GSI1, GSI1_PK, GSI1_SK, PK, SK, TTL};
use crate::StoreError;

#[derive(Debug, PartialEq, Eq)]
pub enum TableCreation {
    Created,
    AlreadyExisted,
}

fn key(name: &str, kind: KeyType) -> Result<KeySchemaElement, StoreError> {
    KeySchemaElement::builder()
        .attribute_name(name)
        .key_type(kind)
        .build()
        .map_err(|e| StoreError::Broken(e.to_string()))
}

fn string_attribute(name: &str) -> Result<AttributeDefinition, StoreError> {
    AttributeDefinition::builder()
        .attribute_name(name)
        .attribute_type(ScalarAttributeType::S)
        .build()
        .map_err(|e| StoreError::Broken(e.to_string()))
}

/// Creates the store's table ([`create_table`]).
pub async fn create(store: &crate::Store) -> Result<TableCreation, StoreError> {
    create_table(store.client(), store.table()).await
}

/// Creates the table (on-demand billing, index `gsi1`, TTL on `ttl`) and waits
/// until it is active. An existing table is left as it is.
pub async fn create_table(client: &Client, table: &str) -> Result<TableCreation, StoreError> {
    let members_index = GlobalSecondaryIndex::builder()
        .index_name(GSI1)
        .key_schema(key(GSI1_PK, KeyType::Hash)?)
        .key_schema(key(GSI1_SK, KeyType::Range)?)
        .projection(
            Projection::builder()
                .projection_type(ProjectionType::All)
                .build(),
        )
        .build()
        .map_err(|e| StoreError::Broken(e.to_string()))?;
    let created = client
        .create_table()
        .table_name(table)
        .billing_mode(BillingMode::PayPerRequest)
        .attribute_definitions(string_attribute(PK)?)
        .attribute_definitions(string_attribute(SK)?)
        .attribute_definitions(string_attribute(GSI1_PK)?)
        .attribute_definitions(string_attribute(GSI1_SK)?)
        .key_schema(key(PK, KeyType::Hash)?)
        .key_schema(key(SK, KeyType::Range)?)
        .global_secondary_indexes(members_index)
        .send()
        .await;
    let creation = match created {
        Ok(_) => TableCreation::Created,
        Err(SdkError::ServiceError(e)) if e.err().is_resource_in_use_exception() => {
            TableCreation::AlreadyExisted
        }
        Err(e) => return Err(e.into()),
    };
    wait_until_active(client, table).await?;
    if creation == TableCreation::Created {
        client
            .update_time_to_live()
            .table_name(table)
            .time_to_live_specification(
                TimeToLiveSpecification::builder()
                    .attribute_name(TTL)
                    .enabled(true)
                    .build()
                    .map_err(|e| StoreError::Broken(e.to_string()))?,
            )
            .send()
            .await?;
    }
    Ok(creation)
}

async fn wait_until_active(client: &Client, table: &str) -> Result<(), StoreError> {
    for _ in 0..600 {
        let described = client.describe_table().table_name(table).send().await?;
        if described.table().and_then(|t| t.table_status()) == Some(&TableStatus::Active) {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Err(StoreError::Unavailable(format!(
        "table {table} did not become active"
    )))
}
