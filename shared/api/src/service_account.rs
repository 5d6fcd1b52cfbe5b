//! A kubeconfig for a ServiceAccount (`berth-admin cluster set
//! --service-account`): an administrator's kubeconfig asks the cluster for a
//! token of the account (the TokenRequest API, `serviceaccounts/token`), and
//! the kubeconfig made of it reaches the same server with the same CA as the
//! administrator's, as that account only. The administrator's kubeconfig is
//! used for this and never stored.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use base64::Engine as _;
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::ServiceAccount;
use kube::api::{Api, PostParams};
use kube::config::Kubeconfig;
use serde_json::json;

use crate::ApiError;
use crate::access;
use crate::kubeconfig;
use berth_cluster::status_of;

/// A ServiceAccount, written `namespace/name`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceAccountRef {
    pub namespace: String,
    pub name: String,
}

impl ServiceAccountRef {
    /// The identity of Berth's API (`infra/k8s/api-rbac.yaml`).
    pub fn berth_api() -> Self {
        Self {
            namespace: "berth-system".into(),
            name: "berth-api".into(),
        }
    }
}

impl FromStr for ServiceAccountRef {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text.split_once('/') {
            Some((namespace, name))
                if !namespace.is_empty() && !name.is_empty() && !name.contains('/') =>
            {
                Ok(Self {
                    namespace: namespace.into(),
                    name: name.into(),
                })
            }
            _ => Err(format!(
                "{text:?} is not NAMESPACE/NAME (e.g. berth-system/berth-api)"
            )),
        }
    }
}

impl fmt::Display for ServiceAccountRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// A kubeconfig that signs in as a ServiceAccount with a token from the
/// TokenRequest API.
pub struct ServiceAccountKubeconfig {
    /// The kubeconfig YAML. Holds the token: never logged or printed.
    pub yaml: String,
    /// When the token stops working (RFC 3339), as the cluster decided: it
    /// may grant a shorter or longer lifetime than asked for.
    pub expires_at: String,
}

/// Asks the cluster of `admin_kubeconfig` (its `context`, else its current
/// one) for a token of `account` that lasts `lifetime`, and makes the
/// account's kubeconfig of it; checks that the cluster accepts the token.
pub async fn service_account_kubeconfig(
    admin_kubeconfig: &str,
    context: Option<&str>,
    account: &ServiceAccountRef,
    lifetime: Duration,
    timeout: Duration,
) -> Result<ServiceAccountKubeconfig, ApiError> {
    let (_, cluster_name, _) = kubeconfig::summarize(admin_kubeconfig, context)?;
    let cluster = cluster_entry(admin_kubeconfig, &cluster_name)?;
    let client = access::client_from_kubeconfig(admin_kubeconfig, context, timeout).await?;
    let request = TokenRequest {
        spec: TokenRequestSpec {
            expiration_seconds: Some(i64::try_from(lifetime.as_secs()).unwrap_or(i64::MAX)),
            ..TokenRequestSpec::default()
        },
        ..TokenRequest::default()
    };
    let issued = Api::<ServiceAccount>::namespaced(client, &account.namespace)
        .create_token_request(&account.name, &PostParams::default(), &request)
        .await
        .map_err(|error| refused(error, account))?;
    let status = issued.status.ok_or_else(|| {
        ApiError::ClusterUnavailable("the cluster answered a token request without a token".into())
    })?;
    let user = account.to_string();
    let yaml = serde_saphyr::to_string(&json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": cluster_name, "cluster": cluster}],
        "users": [{"name": user, "user": {"token": status.token}}],
        "contexts": [{"name": user, "context": {"cluster": cluster_name, "user": user}}],
        "current-context": user,
    }))
    .map_err(|error| ApiError::Internal(format!("writing the kubeconfig: {error}")))?;
    // The token works: the cluster says who it is to its bearer.
    access::client_from_kubeconfig(&yaml, None, timeout)
        .await?
        .apiserver_version()
        .await
        .map_err(|error| ApiError::ClusterMisconfigured {
            detail: format!("the cluster did not accept the token it issued for {account}"),
            cause: error.to_string(),
        })?;
    Ok(ServiceAccountKubeconfig {
        yaml,
        expires_at: status.expiration_timestamp.0.to_string(),
    })
}

/// The administrator's cluster entry, with a CA file read into
/// `certificate-authority-data`: the kubeconfig made of it is stored, and
/// read where that file is not.
fn cluster_entry(admin_kubeconfig: &str, name: &str) -> Result<serde_json::Value, ApiError> {
    let invalid = |why: String| ApiError::ValidationFailed(format!("kubeconfig: {why}"));
    let parsed = Kubeconfig::from_yaml(admin_kubeconfig)
        .map_err(|e| invalid(format!("not a kubeconfig ({e})")))?;
    let mut cluster = parsed
        .clusters
        .into_iter()
        .find(|c| c.name == name)
        .and_then(|c| c.cluster)
        .ok_or_else(|| invalid(format!("no cluster named {name:?}")))?;
    if let Some(path) = cluster.certificate_authority.take() {
        let pem = std::fs::read(&path)
            .map_err(|e| invalid(format!("cannot read certificate-authority {path}: {e}")))?;
        cluster.certificate_authority_data =
            Some(base64::engine::general_purpose::STANDARD.encode(pem));
    }
    serde_json::to_value(cluster)
        .map_err(|error| ApiError::Internal(format!("reading the cluster entry: {error}")))
}

fn refused(error: kube::Error, account: &ServiceAccountRef) -> ApiError {
    let detail = match status_of(&error) {
        Some(404) => format!(
            "service account {account} not found: install Berth's manifests first \
             (kubectl apply -k infra/k8s)"
        ),
        Some(403) => format!(
            "the administrator's kubeconfig may not request tokens for {account} \
             (create on serviceaccounts/token)"
        ),
        _ => return error.into(),
    };
    ApiError::ClusterMisconfigured {
        detail,
        cause: error.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::ServiceAccountRef;

    #[test]
    fn accounts_are_namespace_slash_name() {
        assert_eq!(
            "berth-system/berth-api".parse::<ServiceAccountRef>(),
            Ok(ServiceAccountRef::berth_api())
        );
        for bad in ["berth-api", "/berth-api", "berth-system/", "a/b/c"] {
            assert!(bad.parse::<ServiceAccountRef>().is_err(), "{bad}");
        }
    }
}
