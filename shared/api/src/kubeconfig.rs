//! The stored kubeconfig: how Berth reaches its cluster. The admin
//! CLI writes it; functions that need the cluster read it. What may be
//! stored is checked here; the item is the store's (`berth_store::kubeconfig`).

use kube::config::Kubeconfig;
use serde::Serialize;

use crate::ApiError;
use berth_domain::clock;
use berth_store::Store;
pub use berth_store::kubeconfig::{StoredKubeconfig, clear, load};

/// What may be shown of a stored kubeconfig: no credentials.
#[derive(Debug, Serialize, PartialEq, Eq)]
pub struct KubeconfigSummary {
    pub context: String,
    pub cluster: String,
    pub server: String,
    pub updated_at: String,
}

/// Refuses a kubeconfig any of whose users signs in by running a command
/// (`exec`) or through an `auth-provider`: a function has neither the command
/// nor the admin's cloud credentials, and must not run what a stored document
/// names. Stored kubeconfigs carry a token or a client certificate. The
/// error names the user and the kind, never any credential.
pub fn check_credentials(kubeconfig: &str) -> Result<(), String> {
    let Ok(parsed) = Kubeconfig::from_yaml(kubeconfig) else {
        // Not a kubeconfig at all: `summarize` says so.
        return Ok(());
    };
    for entry in parsed.auth_infos {
        let Some(user) = entry.auth_info else {
            continue;
        };
        let kind = if user.exec.is_some() {
            "exec"
        } else if user.auth_provider.is_some() {
            "auth-provider"
        } else {
            continue;
        };
        return Err(format!(
            "user {:?} signs in with `{kind}`, which Berth's functions cannot run; \
             use a kubeconfig with a token or client certificate (e.g. a service account's)",
            entry.name
        ));
    }
    Ok(())
}

/// Checks that a kubeconfig parses and that the context to use (the named one,
/// else its current context) leads to a cluster with a server.
pub fn summarize(
    kubeconfig: &str,
    context: Option<&str>,
) -> Result<(String, String, String), ApiError> {
    let invalid = |why: String| ApiError::ValidationFailed(format!("kubeconfig: {why}"));
    let parsed = Kubeconfig::from_yaml(kubeconfig)
        .map_err(|e| invalid(format!("not a kubeconfig ({e})")))?;
    let context_name = context
        .map(str::to_owned)
        .or(parsed.current_context)
        .filter(|name| !name.is_empty())
        .ok_or_else(|| invalid("no context named and no current-context".into()))?;
    let cluster_name = parsed
        .contexts
        .iter()
        .find(|c| c.name == context_name)
        .and_then(|c| c.context.as_ref())
        .map(|c| c.cluster.clone())
        .ok_or_else(|| invalid(format!("no context named {context_name:?}")))?;
    let server = parsed
        .clusters
        .iter()
        .find(|c| c.name == cluster_name)
        .and_then(|c| c.cluster.as_ref())
        .and_then(|c| c.server.clone())
        .ok_or_else(|| {
            invalid(format!(
                "context {context_name:?} names a missing cluster or one without a server"
            ))
        })?;
    Ok((context_name, cluster_name, server))
}

pub async fn store_kubeconfig(
    store: &Store,
    kubeconfig: String,
    context: Option<String>,
) -> Result<KubeconfigSummary, ApiError> {
    summarize(&kubeconfig, context.as_deref())?;
    check_credentials(&kubeconfig)
        .map_err(|why| ApiError::ValidationFailed(format!("kubeconfig: {why}")))?;
    let stored =
        berth_store::kubeconfig::put(store, kubeconfig, context, clock::unix_seconds()).await?;
    summary(&stored)
}

pub fn summary(stored: &StoredKubeconfig) -> Result<KubeconfigSummary, ApiError> {
    let (context, cluster, server) = summarize(&stored.kubeconfig, stored.context.as_deref())?;
    Ok(KubeconfigSummary {
        context,
        cluster,
        server,
        updated_at: clock::rfc3339(stored.updated_at),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const KUBECONFIG: &str = r#"
apiVersion: v1
kind: Config
clusters:
- name: a
  cluster: {server: "https://a.example:6443"}
- name: b
  cluster: {server: "http://127.0.0.1:6443"}
contexts:
- name: ctx-a
  context: {cluster: a, user: u}
- name: ctx-b
  context: {cluster: b, user: u}
current-context: ctx-a
users:
- name: u
  user: {token: SECRET-TOKEN}
"#;

    #[test]
    fn refuses_users_that_run_a_command_or_an_auth_provider() {
        assert_eq!(check_credentials(KUBECONFIG), Ok(()));
        let exec = KUBECONFIG.replace(
            "user: {token: SECRET-TOKEN}",
            "user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1beta1\n      command: aws\n      args: [eks, get-token, --cluster-name, SECRET-NAME]",
        );
        let provider = KUBECONFIG.replace(
            "user: {token: SECRET-TOKEN}",
            "user:\n    auth-provider:\n      name: gcp\n      config: {access-token: SECRET-TOKEN}",
        );
        for (config, kind) in [(exec, "`exec`"), (provider, "`auth-provider`")] {
            let error = check_credentials(&config).unwrap_err();
            assert!(error.contains(kind) && error.contains("\"u\""), "{error}");
            assert!(!error.contains("SECRET"), "{error}");
            assert!(!error.contains('\n'), "one line: {error}");
        }
        // Users without credentials, or without a user, are fine here.
        assert_eq!(check_credentials("users:\n- name: x\n"), Ok(()));
        assert_eq!(check_credentials("not: [yaml"), Ok(()));
    }

    #[test]
    fn uses_the_named_or_current_context() {
        let (context, cluster, server) = summarize(KUBECONFIG, None).unwrap();
        assert_eq!(
            (context.as_str(), cluster.as_str(), server.as_str()),
            ("ctx-a", "a", "https://a.example:6443")
        );
        let (context, _, server) = summarize(KUBECONFIG, Some("ctx-b")).unwrap();
        assert_eq!(
            (context.as_str(), server.as_str()),
            ("ctx-b", "http://127.0.0.1:6443")
        );
    }

    #[test]
    fn refuses_what_cannot_be_used_without_echoing_it() {
        for (config, context) in [
            ("not: [yaml", None),
            (KUBECONFIG, Some("nope")),
            ("clusters: []", None),
        ] {
            let error = summarize(config, context).unwrap_err();
            assert!(matches!(error, ApiError::ValidationFailed(_)));
            assert!(!error.to_string().contains("SECRET-TOKEN"));
        }
    }
}
