//! The kube-rs client, built from the stored kubeconfig: loaded on
//! first use, kept for the life of the instance, and replaced within a minute
//! of the stored kubeconfig changing.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use kube::config::{KubeConfigOptions, Kubeconfig};
use tokio::sync::Mutex;

use crate::ApiError;
use crate::kubeconfig;
use berth_cluster::retry::RetryLayer;
use berth_store::Store;

struct Loaded {
    client: kube::Client,
    /// Digest of the kubeconfig and context the client was built from.
    fingerprint: String,
    checked: Instant,
}

pub struct ClusterAccess {
    store: Store,
    timeout: Duration,
    /// How often the stored kubeconfig is looked at again.
    recheck: Duration,
    loaded: Mutex<Option<Loaded>>,
    counter: Option<RequestCounter>,
}

/// Counts the requests a client sends to the cluster (benchmarks and the
/// round-trip tests), as `store::round_trips` does for DynamoDB.
#[derive(Debug, Clone, Default)]
pub struct RequestCounter {
    sent: Arc<AtomicU64>,
    calls: Arc<AtomicU64>,
}

impl RequestCounter {
    /// Requests sent, every retry included.
    pub fn get(&self) -> u64 {
        self.sent.load(Ordering::SeqCst)
    }

    /// Calls Berth made, each counted once however often it was sent.
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::SeqCst)
    }
}

impl std::fmt::Debug for ClusterAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterAccess")
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl ClusterAccess {
    /// `timeout` bounds connecting and each read and write, well under API
    /// Gateway's 29 s; `recheck` is how soon a replaced kubeconfig is noticed.
    pub fn new(store: Store, timeout: Duration, recheck: Duration) -> Self {
        Self {
            store,
            timeout,
            recheck,
            loaded: Mutex::new(None),
            counter: None,
        }
    }

    /// Counts every request of the clients it builds.
    pub fn counting(mut self, counter: RequestCounter) -> Self {
        self.counter = Some(counter);
        self
    }

    /// The client for the stored kubeconfig; `no_cluster` when there is none.
    pub async fn client(&self) -> Result<kube::Client, ApiError> {
        let mut loaded = self.loaded.lock().await;
        if let Some(current) = loaded.as_ref()
            && current.checked.elapsed() < self.recheck
        {
            return Ok(current.client.clone());
        }
        let Some(stored) = kubeconfig::load(&self.store).await? else {
            *loaded = None;
            return Err(ApiError::NoCluster);
        };
        let fingerprint = berth_domain::credentials::digest(&format!(
            "{:?}\n{}",
            stored.context, stored.kubeconfig
        ));
        if let Some(current) = loaded.as_mut()
            && current.fingerprint == fingerprint
        {
            current.checked = Instant::now();
            return Ok(current.client.clone());
        }
        // Set before this check existed, or written around the CLI: refused
        // here too, before kube-rs could run the command it names.
        kubeconfig::check_credentials(&stored.kubeconfig).map_err(|why| {
            ApiError::ClusterMisconfigured {
                detail: format!(
                    "the stored kubeconfig cannot be used: {why}; replace it with `berth-admin cluster set`"
                ),
                cause: "the stored kubeconfig uses exec or auth-provider credentials".into(),
            }
        })?;
        let config =
            config_from_kubeconfig(&stored.kubeconfig, stored.context.as_deref(), self.timeout)
                .await?;
        let client = build_client(config, self.counter.clone())?;
        *loaded = Some(Loaded {
            client: client.clone(),
            fingerprint,
            checked: Instant::now(),
        });
        Ok(client)
    }
}

/// How long a call made outside a request (the admin CLI, tests) may keep
/// retrying: a request's calls stop at its deadline instead.
pub const RETRY_BUDGET_OUTSIDE_REQUESTS: Duration = Duration::from_secs(30);

/// A kube client from kubeconfig YAML, with Berth's timeouts and retries
/// (`retry`): an API call answers in time, or fails as `cluster_unavailable`
/// once what a retry may cure has had its retries.
pub async fn client_from_kubeconfig(
    yaml: &str,
    context: Option<&str>,
    timeout: Duration,
) -> Result<kube::Client, ApiError> {
    build_client(config_from_kubeconfig(yaml, context, timeout).await?, None)
}

fn unusable(error: &dyn std::fmt::Display) -> ApiError {
    ApiError::ClusterUnavailable(format!("the stored kubeconfig is unusable: {error}"))
}

async fn config_from_kubeconfig(
    yaml: &str,
    context: Option<&str>,
    timeout: Duration,
) -> Result<kube::Config, ApiError> {
    let parsed = Kubeconfig::from_yaml(yaml).map_err(|e| unusable(&e))?;
    let options = KubeConfigOptions {
        context: context.map(str::to_owned),
        ..KubeConfigOptions::default()
    };
    let mut config = kube::Config::from_custom_kubeconfig(parsed, &options)
        .await
        .map_err(|e| unusable(&e))?;
    config.connect_timeout = Some(timeout);
    config.read_timeout = Some(timeout);
    config.write_timeout = Some(timeout);
    // kube's own retries know no deadline and no verb: `retry` replaces them.
    config.default_retry = false;
    Ok(config)
}

fn build_client(
    config: kube::Config,
    counter: Option<RequestCounter>,
) -> Result<kube::Client, ApiError> {
    // Inside the retries each attempt is counted, outside each call.
    let count = |of: fn(&RequestCounter) -> &Arc<AtomicU64>| {
        tower::util::option_layer(counter.as_ref().map(|counter| {
            let count = of(counter).clone();
            tower::util::MapRequestLayer::new(move |request| {
                count.fetch_add(1, Ordering::SeqCst);
                request
            })
        }))
    };
    Ok(kube::client::ClientBuilder::try_from(config)
        .map_err(|e| unusable(&e))?
        .with_layer(&count(|counter| &counter.sent))
        .with_layer(&RetryLayer::new(RETRY_BUDGET_OUTSIDE_REQUESTS))
        .with_layer(&count(|counter| &counter.calls))
        .build())
}
