//! What every handler shares, built once when the process starts.

use std::sync::Arc;
use std::time::Duration;

use aws_config::environment::{
    EnvironmentVariableCredentialsProvider, EnvironmentVariableRegionProvider,
};
use aws_config::meta::region::RegionProviderChain;
use aws_config::timeout::TimeoutConfig;
use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_sdk_dynamodb::config::{Credentials, SharedCredentialsProvider};

use berth_domain::config::{Config, ConfigError};
use berth_store::Store;
use berth_store::audit::AuditLog;
use berth_store::endpoint::Endpoint;

#[derive(Clone, Debug)]
pub struct AppState {
    pub store: Store,
    pub config: Arc<Config>,
    pub audit: Arc<AuditLog>,
    /// The cluster, reached on first use through the stored kubeconfig.
    #[cfg(feature = "cluster")]
    pub cluster: Arc<crate::access::ClusterAccess>,
    /// The domain check; its resolver is built on first use.
    #[cfg(feature = "dns")]
    pub domain_check: Arc<crate::domain_check::DomainChecker>,
}

impl AppState {
    pub fn new(client: aws_sdk_dynamodb::Client, config: Config) -> Self {
        let store = Store::new(client, config.table.as_str());
        Self {
            audit: Arc::new(AuditLog::new(store.clone())),
            #[cfg(feature = "cluster")]
            cluster: Arc::new(crate::access::ClusterAccess::new(
                store.clone(),
                config.cluster_timeout,
                config.kubeconfig_recheck,
            )),
            #[cfg(feature = "dns")]
            domain_check: Arc::new(crate::domain_check::DomainChecker::new(&config)),
            store,
            config: Arc::new(config),
        }
    }

    /// Configuration and the DynamoDB client from the environment
    /// (`BERTH_*`, `AWS_ENDPOINT_URL_DYNAMODB`, region, credentials).
    pub async fn from_env() -> Result<Self, ConfigError> {
        let config = Config::from_env()?;
        Ok(Self::new(dynamodb_client().await, config))
    }
}

/// Bounds on every DynamoDB call, well inside the request deadline: one
/// attempt may take 3 s (DynamoDB answers in milliseconds; a stuck
/// connection is retried), the call with its retries 10 s.
pub fn store_timeouts() -> TimeoutConfig {
    TimeoutConfig::builder()
        .operation_attempt_timeout(Duration::from_secs(3))
        .operation_timeout(Duration::from_secs(10))
        .build()
}

/// The DynamoDB client as [`aws_config`] describes it.
pub async fn dynamodb_client() -> aws_sdk_dynamodb::Client {
    aws_sdk_dynamodb::Client::new(&aws_config().await)
}

/// The AWS SDK's configuration, from its own chain, with two exceptions.
///
/// - DynamoDB Local (an endpoint on loopback) takes any credentials and
///   region: those of the environment if set, else `local` and `us-east-1`.
///   The default chain would look further, in the end at the instance
///   metadata service: seconds of timeouts off EC2, and a request to
///   169.254.169.254 that a local run has no business making.
/// - On Lambda, credentials and region come from the environment; the
///   default chain would also build the clients of profiles, SSO and STS,
///   which a function never uses, at every cold start.
pub async fn aws_config() -> SdkConfig {
    let mut loader =
        aws_config::defaults(BehaviorVersion::v2026_01_12()).timeout_config(store_timeouts());
    if Endpoint::from_env().is_loopback() {
        loader = loader.credentials_provider(local_credentials()).region(
            RegionProviderChain::first_try(EnvironmentVariableRegionProvider::new())
                .or_else(Region::from_static("us-east-1")),
        );
    } else if berth_domain::telemetry::on_lambda() {
        loader = loader
            .credentials_provider(EnvironmentVariableCredentialsProvider::new())
            .region(EnvironmentVariableRegionProvider::new());
    }
    loader.load().await
}

/// DynamoDB Local without `-sharedDb` keeps one set of tables per access key,
/// so the environment's key, when there is one, is the one to use.
fn local_credentials() -> SharedCredentialsProvider {
    if std::env::var_os("AWS_ACCESS_KEY_ID").is_some() {
        SharedCredentialsProvider::new(EnvironmentVariableCredentialsProvider::new())
    } else {
        SharedCredentialsProvider::new(Credentials::new(
            "local",
            "local",
            None,
            None,
            "dynamodb-local",
        ))
    }
}
