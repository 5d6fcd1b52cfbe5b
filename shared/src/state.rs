//! What every handler shares, built once when the process starts.

use std::sync::Arc;
use std::time::Duration;

use aws_config::BehaviorVersion;
use aws_config::timeout::TimeoutConfig;

use crate::audit::AuditLog;
use crate::config::{Config, ConfigError};
use crate::store::Store;

#[derive(Clone, Debug)]
pub struct AppState {
    pub store: Store,
    pub config: Arc<Config>,
    pub audit: Arc<AuditLog>,
    /// The cluster, reached on first use through the stored kubeconfig.
    #[cfg(feature = "cluster")]
    pub cluster: Arc<crate::cluster::access::ClusterAccess>,
    /// The domain check; its resolver is built on first use.
    #[cfg(feature = "dns")]
    pub domains: Arc<crate::domains::DomainChecker>,
}

impl AppState {
    pub fn new(client: aws_sdk_dynamodb::Client, config: Config) -> Self {
        let store = Store::new(client, config.table.as_str());
        Self {
            audit: Arc::new(AuditLog::new(store.clone())),
            #[cfg(feature = "cluster")]
            cluster: Arc::new(crate::cluster::access::ClusterAccess::new(
                store.clone(),
                config.cluster_timeout,
                config.kubeconfig_recheck,
            )),
            #[cfg(feature = "dns")]
            domains: Arc::new(crate::domains::DomainChecker::new(&config)),
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

/// The DynamoDB client as the SDK's own configuration chain describes it.
/// On Lambda, credentials and region come from the environment; the default
/// chain would also build the clients of profiles, SSO and STS, which a
/// function never uses, at every cold start.
pub async fn dynamodb_client() -> aws_sdk_dynamodb::Client {
    let mut loader =
        aws_config::defaults(BehaviorVersion::v2026_01_12()).timeout_config(store_timeouts());
    if crate::telemetry::on_lambda() {
        loader = loader
            .credentials_provider(
                aws_config::environment::EnvironmentVariableCredentialsProvider::new(),
            )
            .region(aws_config::environment::EnvironmentVariableRegionProvider::new());
    }
    aws_sdk_dynamodb::Client::new(&loader.load().await)
}
