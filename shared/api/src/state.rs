//! What every handler shares, built once when the process starts.

use std::sync::Arc;
use std::time::Duration;

use aws_config::environment::{
    EnvironmentVariableCredentialsProvider, EnvironmentVariableRegionProvider,
};
use aws_config::meta::region::RegionProviderChain;
use aws_config::timeout::TimeoutConfig;
use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_credential_types::Credentials;
use aws_credential_types::provider::SharedCredentialsProvider;
use aws_smithy_http_client::ConnectorBuilder;
use aws_smithy_http_client::proxy::ProxyConfig;
use aws_smithy_http_client::tls::{self, TlsContext, TrustStore};
use aws_smithy_runtime_api::client::http::SharedHttpClient;

use crate::config::{AwsTrustRoots, Config, ConfigError};
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
    pub fn new(client: berth_store::Client, config: Config) -> Self {
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
        Ok(Self::new(dynamodb_client().await?, config))
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
pub async fn dynamodb_client() -> Result<berth_store::Client, ConfigError> {
    Ok(berth_store::Client::new(&aws_config().await?))
}

/// The AWS SDK's configuration, from its own chain, with three exceptions.
///
/// - Its HTTPS client trusts the roots `BERTH_AWS_TRUST_ROOTS` names
///   ([`aws_http_client`]).
/// - DynamoDB Local (an endpoint on loopback) takes any credentials and
///   region: those of the environment if set, else `local` and `us-east-1`.
///   The default chain would look further, in the end at the instance
///   metadata service: seconds of timeouts off EC2, and a request to
///   169.254.169.254 that a local run has no business making.
/// - On Lambda, credentials and region come from the environment; the
///   default chain would also build the clients of profiles, SSO and STS,
///   which a function never uses, at every cold start.
pub async fn aws_config() -> Result<SdkConfig, ConfigError> {
    let mut loader = aws_config::defaults(BehaviorVersion::v2026_01_12())
        .timeout_config(store_timeouts())
        .http_client(aws_http_client(AwsTrustRoots::from_env()?));
    if Endpoint::from_env().is_loopback() {
        loader = loader.credentials_provider(local_credentials()).region(
            RegionProviderChain::first_try(EnvironmentVariableRegionProvider::new())
                .or_else(Region::from_static("us-east-1")),
        );
    } else if crate::telemetry::on_lambda() {
        loader = loader
            .credentials_provider(EnvironmentVariableCredentialsProvider::new())
            .region(EnvironmentVariableRegionProvider::new());
    }
    Ok(loader.load().await)
}

/// The five Amazon Trust Services roots (Amazon Root CA 1 to 4 and
/// Starfield Services Root Certificate Authority - G2, as Mozilla's store
/// has them), which every AWS endpoint's certificate chains to: the set
/// <https://www.amazontrust.com/repository/> tells a custom trust store to
/// hold.
pub const AMAZON_TRUST_SERVICES_ROOTS: &str = include_str!("aws_roots/amazon_trust_services.pem");

/// The HTTPS client the SDK builds by default (aws-smithy-runtime's
/// `default_https_client`: hyper 1 and rustls on aws-lc, proxies from the
/// environment), trusting `roots`.
///
/// The SDK builds its TLS configuration, roots and all, when a client is
/// made (`validate_base_client_config` of aws-smithy-http-client's
/// `HyperClient` builds a connector "so that native certs load at client
/// initialization time") and again for the first request's timeout
/// settings (`http_connector`, one connector per settings), whatever the
/// endpoint's scheme. With the platform's store, that is every root of the
/// system's bundle read, decoded from PEM and parsed, twice over: most of a
/// function's cold start. The Amazon roots are five certificates.
pub fn aws_http_client(roots: AwsTrustRoots) -> SharedHttpClient {
    let trust_store = match roots {
        AwsTrustRoots::Amazon => {
            TrustStore::empty().with_pem_certificate(AMAZON_TRUST_SERVICES_ROOTS.as_bytes())
        }
        AwsTrustRoots::Platform => TrustStore::default(),
    };
    let tls_context = TlsContext::builder()
        .with_trust_store(trust_store)
        .build()
        .expect("a TLS context of a trust store");
    aws_smithy_http_client::Builder::new().build_with_connector_fn(
        move |settings, runtime_components| {
            let mut connector = ConnectorBuilder::default()
                .tls_provider(tls::Provider::Rustls(
                    tls::rustls_provider::CryptoMode::AwsLc,
                ))
                .tls_context(tls_context.clone());
            connector.set_connector_settings(settings.cloned());
            if let Some(components) = runtime_components {
                connector.set_sleep_impl(components.sleep_impl());
            }
            connector.set_proxy_config(Some(ProxyConfig::from_env()));
            connector.build()
        },
    )
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use rustls::client::WebPkiServerVerifier;
    use rustls::client::danger::ServerCertVerifier;
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, ServerName, UnixTime};

    use super::AMAZON_TRUST_SERVICES_ROOTS;

    fn amazon_roots() -> rustls::RootCertStore {
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(AMAZON_TRUST_SERVICES_ROOTS.as_bytes()) {
            roots.add(cert.expect("a PEM certificate")).expect("a root");
        }
        roots
    }

    /// Checks a server's chain against `roots` on 1 August 2026, a day
    /// inside every stored certificate's validity: no clock, no network.
    fn verify(
        roots: rustls::RootCertStore,
        leaf: &[u8],
        intermediate: &[u8],
        name: &str,
    ) -> Result<(), rustls::Error> {
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let verifier = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
            .build()
            .expect("a verifier");
        verifier
            .verify_server_cert(
                &CertificateDer::from(leaf),
                &[CertificateDer::from(intermediate)],
                &ServerName::try_from(name).unwrap(),
                &[],
                UnixTime::since_unix_epoch(std::time::Duration::from_secs(1_785_542_400)),
            )
            .map(|_| ())
    }

    #[test]
    fn the_five_amazon_trust_services_roots_are_compiled_in() {
        assert_eq!(amazon_roots().len(), 5);
    }

    /// aws.amazon.com's chain (Amazon RSA 2048 M04, issued by Amazon Root
    /// CA 1), as rustls-platform-verifier 0.7.1 stores it for its own
    /// real-world tests: AWS endpoints are issued the same way.
    #[test]
    fn an_aws_endpoints_chain_validates_against_the_amazon_roots() {
        verify(
            amazon_roots(),
            include_bytes!("aws_roots/aws_amazon_com_leaf.der"),
            include_bytes!("aws_roots/aws_amazon_com_intermediate.der"),
            "aws.amazon.com",
        )
        .expect("the chain validates");
    }

    /// What `BERTH_AWS_TRUST_ROOTS=platform` is for: an endpoint another
    /// authority certified (letsencrypt.org's chain, stored likewise) is
    /// refused by the Amazon roots.
    #[test]
    fn another_authoritys_chain_is_refused_by_the_amazon_roots() {
        let refused = verify(
            amazon_roots(),
            include_bytes!("aws_roots/letsencrypt_org_leaf.der"),
            include_bytes!("aws_roots/letsencrypt_org_intermediate.der"),
            "letsencrypt.org",
        )
        .unwrap_err();
        assert_eq!(
            refused,
            rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer)
        );
    }
}
