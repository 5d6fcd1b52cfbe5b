//! What a command needs before it touches the table, checked in order so that
//! the first thing missing is the one named: a region, credentials, DynamoDB
//! answering, the table.

use std::fmt;

use aws_config::SdkConfig;
use aws_sdk_dynamodb::config::ProvideCredentials;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};

use berth_store::endpoint::Endpoint;

use crate::failure::Failure;

/// The way to the local setup, for a CLI run without it.
const LOCAL_HINT: &str = "or, for the DynamoDB Local of `make dev`, run `make admin ARGS=\"…\"`";

/// Where the table is, as a person names it: the endpoint's URL, or AWS and
/// the region.
pub struct StoreLocation {
    endpoint: Endpoint,
    region: Option<String>,
}

impl StoreLocation {
    pub fn new(sdk: &SdkConfig) -> Self {
        Self {
            endpoint: Endpoint::from_env(),
            region: sdk.region().map(ToString::to_string),
        }
    }
}

impl fmt::Display for StoreLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.endpoint, &self.region) {
            (Endpoint::Aws, Some(region)) => write!(f, "AWS ({region})"),
            (endpoint, _) => write!(f, "{endpoint}"),
        }
    }
}

/// Whether the table exists, once a region and credentials are there and
/// DynamoDB answers.
pub async fn check(
    sdk: &SdkConfig,
    dynamodb: &aws_sdk_dynamodb::Client,
    table: &str,
    location: &StoreLocation,
) -> Result<bool, Failure> {
    if sdk.region().is_none() {
        return Err(Failure::plain(format!(
            "no AWS region: set AWS_REGION — {LOCAL_HINT}"
        )));
    }
    let no_credentials = || {
        format!(
            "no AWS credentials for DynamoDB at {location}: set AWS_PROFILE, or \
             AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY — {LOCAL_HINT}"
        )
    };
    let Some(credentials) = sdk.credentials_provider() else {
        return Err(Failure::plain(no_credentials()));
    };
    if let Err(error) = credentials.provide_credentials().await {
        return Err(Failure::chain(no_credentials(), &error));
    }
    match dynamodb.describe_table().table_name(table).send().await {
        Ok(_) => Ok(true),
        Err(SdkError::ServiceError(refusal)) if refusal.err().is_resource_not_found_exception() => {
            Ok(false)
        }
        Err(SdkError::ServiceError(refusal)) => {
            let error = refusal.err();
            Err(Failure::chain(
                format!(
                    "DynamoDB at {location} refused the request ({}): {}",
                    error.code().unwrap_or("no error code"),
                    error.message().unwrap_or("no message"),
                ),
                error,
            ))
        }
        Err(error @ SdkError::ConstructionFailure(_)) => Err(Failure::chain(
            format!("no request to {location} could be made: check AWS_ENDPOINT_URL_DYNAMODB"),
            &error,
        )),
        // Connection failures, timeouts and answers cut short.
        Err(error) => {
            let what_to_do = if location.endpoint.is_loopback() {
                "start DynamoDB Local, e.g. with `make dev`"
            } else {
                "check the network, and AWS_ENDPOINT_URL_DYNAMODB if it is set"
            };
            Err(Failure::chain(
                format!("DynamoDB is not reachable at {location}: {what_to_do}"),
                &error,
            ))
        }
    }
}

pub fn missing_table(table: &str, location: &StoreLocation) -> Failure {
    Failure::plain(format!(
        "table {table} not found at {location} — run `berth-admin create-table`"
    ))
}
