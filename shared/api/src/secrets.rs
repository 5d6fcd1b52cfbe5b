//! Secrets of an environment: Kubernetes Secrets of type Opaque that Berth
//! created (see [`berth_cluster::secrets`]), created and replaced as a whole.
//! Their values go from the request body into the cluster and nowhere else:
//! no answer, log line, error detail or release record holds one. That is
//! why the body is read as plain JSON and checked here, with messages that
//! name fields and rules only (serde's own messages quote the offending value).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Secret;
use kube::ResourceExt;
use serde_json::Value;

use crate::ApiError;
use crate::http::extract::body_words;
use berth_cluster::apps as cluster_apps;
use berth_cluster::crd::App;
use berth_cluster::secrets as cluster_secrets;
use berth_cluster::{environments as cluster_environments, timestamp};
use berth_domain::app::AppConfig;
use berth_domain::names::{OrgName, SecretKey, SecretName};
use berth_domain::paths::{AppPath, EnvironmentPath, SecretPath};
use berth_records::secrets::{PutAnswer, SecretSummary};
use berth_store::identity::Principal;

/// The most all values of one secret may hold together, in bytes.
pub const MAX_VALUES_BYTES: usize = 512 * 1024;

/// How often a put reads and writes again after losing a race.
const PUT_ATTEMPTS: usize = 5;

/// The body limit of `putSecret` alone: room for [`MAX_VALUES_BYTES`] of
/// values with their keys and JSON quoting, so that the 512 KiB rule (422) is
/// what a caller meets rather than the generic body limit (413).
pub const MAX_PUT_BODY_BYTES: usize = 768 * 1024;

/// Whether a put made the secret or replaced it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PutOutcome {
    Created,
    Replaced,
}

fn summary(secret: &Secret) -> SecretSummary {
    // BTreeMap keys: already sorted.
    let keys = secret
        .data
        .iter()
        .flat_map(|data| data.keys().cloned())
        .chain(
            secret
                .string_data
                .iter()
                .flat_map(|data| data.keys().cloned()),
        )
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    SecretSummary {
        name: secret.name_any(),
        keys,
        created_at: secret.metadata.creation_timestamp.as_ref().map(timestamp),
    }
}

/// The `data` of a put body: an object of 1 or more keys mapping to strings,
/// the values together at most [`MAX_VALUES_BYTES`]. A wrong shape is 400, a
/// broken rule 422; no message quotes a value.
pub fn parse_data(body: &Value) -> Result<BTreeMap<SecretKey, String>, ApiError> {
    let Value::Object(fields) = body else {
        return Err(ApiError::InvalidRequest(
            "the body must be an object with a `data` object".into(),
        ));
    };
    if let Some(unknown) = fields.keys().find(|field| *field != "data") {
        return Err(ApiError::InvalidRequest(body_words::unknown_field(
            unknown,
            Some("`data`"),
        )));
    }
    let Some(data) = fields.get("data") else {
        return Err(ApiError::InvalidRequest(body_words::required("data")));
    };
    let Value::Object(entries) = data else {
        return Err(ApiError::InvalidRequest(
            "data must be an object mapping keys to string values".into(),
        ));
    };
    // Shape first: a body that is not an object of strings is 400 whatever
    // else is wrong with it.
    if entries.values().any(|value| !value.is_string()) {
        return Err(ApiError::InvalidRequest(
            "data: every value must be a string".into(),
        ));
    }
    if entries.is_empty() {
        return Err(ApiError::ValidationFailed(
            "data: a secret needs at least one key".into(),
        ));
    }
    let mut parsed = BTreeMap::new();
    let mut total = 0usize;
    for (key, value) in entries {
        // The key is not quoted back: it may be anything a caller typed.
        let key = SecretKey::parse(key)
            .map_err(|e| ApiError::ValidationFailed(format!("data: a key {e}")))?;
        let value = value.as_str().unwrap_or_default();
        total = total.saturating_add(value.len());
        parsed.insert(key, value.to_owned());
    }
    if total > MAX_VALUES_BYTES {
        return Err(ApiError::ValidationFailed(format!(
            "data: the values together must be at most {} KiB",
            MAX_VALUES_BYTES / 1024
        )));
    }
    Ok(parsed)
}

/// The names of the apps whose env reads this secret.
fn referencing(apps: &[App], secret: &str) -> Vec<String> {
    apps.iter()
        .filter(|app| {
            app.spec
                .config
                .env
                .iter()
                .any(|var| var.secret.as_ref().is_some_and(|r| r.name == secret))
                || app
                    .spec
                    .config
                    .source
                    .as_ref()
                    .is_some_and(|source| source.git_secret.as_deref() == Some(secret))
        })
        .map(ResourceExt::name_any)
        .collect()
}

/// Berth's secrets of the environment, by name, with their keys.
pub async fn list(
    client: &kube::Client,
    caller: &Principal,
    environment: &EnvironmentPath,
) -> Result<Vec<SecretSummary>, ApiError> {
    let org = &caller.user.org;
    let found = cluster_environments::get_visible(client, org, environment).await?;
    // Nothing can be in a namespace not provisioned yet, and Berth may not
    // read there before it is (see `cluster_environments::is_provisioned`).
    if !cluster_environments::is_provisioned(&found) {
        return Ok(Vec::new());
    }
    let secrets = cluster_secrets::list_managed(client, org, environment).await?;
    Ok(secrets.iter().map(summary).collect())
}

/// Creates the secret, or replaces the whole of a Berth-managed one and
/// restarts the apps of the environment that read it (their containers read
/// environment variables only when they start).
pub async fn put(
    client: &kube::Client,
    caller: &Principal,
    path: &SecretPath,
    body: &Value,
) -> Result<(PutOutcome, PutAnswer), ApiError> {
    let values = parse_data(body)?;
    if let Some(why) = kept_by_berth(path.secret.as_str()) {
        return Err(ApiError::Conflict(format!(
            "the secret {} is {why}: choose another name",
            path.secret
        )));
    }
    let org = &caller.user.org;
    let environment = path.environment_path();
    cluster_environments::writable(client, org, &environment).await?;
    let values: BTreeMap<String, String> = values
        .into_iter()
        .map(|(key, value)| (key.as_str().to_owned(), value))
        .collect();
    // A put replaces the whole secret, so losing a race to another write
    // (or to the secret's deletion) is cured by reading it again and writing
    // again: the outcome is what this request asked for.
    for _ in 0..PUT_ATTEMPTS {
        match cluster_secrets::get(client, path).await? {
            None => {
                if let Some(created) =
                    cluster_secrets::try_create(client, org, path, values.clone()).await?
                {
                    return Ok((
                        PutOutcome::Created,
                        PutAnswer {
                            secret: summary(&created),
                            restarted_apps: Vec::new(),
                        },
                    ));
                }
            }
            Some(current) if cluster_secrets::is_managed(&current, org, &environment) => {
                if let Some(replaced) =
                    cluster_secrets::replace(client, &current, values.clone()).await?
                {
                    let restarted_apps = restart_readers(client, org, path).await?;
                    return Ok((
                        PutOutcome::Replaced,
                        PutAnswer {
                            secret: summary(&replaced),
                            restarted_apps,
                        },
                    ));
                }
            }
            Some(_) => return Err(ApiError::SecretNotManaged),
        }
    }
    Err(ApiError::Conflict(format!(
        "the secret {} kept changing while it was written; try again",
        path.secret
    )))
}

/// Restarts every app of the environment whose env reads the secret; their
/// names. Every replacement restarts them, also one with the same values, so
/// that a put retried after a failed restart completes it.
async fn restart_readers(
    client: &kube::Client,
    org: &OrgName,
    path: &SecretPath,
) -> Result<Vec<String>, ApiError> {
    let apps = cluster_apps::list(client, org, &path.environment_path()).await?;
    let readers = referencing(&apps, path.secret.as_str());
    let stamp = berth_domain::clock::now_precise();
    let mut restarted = Vec::new();
    for app in apps.iter().filter(|app| readers.contains(&app.name_any())) {
        match cluster_apps::stamp_restart(client, app, &stamp).await {
            Ok(_) => restarted.push(app.name_any()),
            // Deleted meanwhile: nothing to restart.
            Err(berth_cluster::ClusterError::Missing(_)) => {}
            Err(error) => return Err(error.into()),
        }
    }
    Ok(restarted)
}

/// Deletes a Berth-managed secret that no app of the environment reads.
pub async fn delete(
    client: &kube::Client,
    caller: &Principal,
    path: &SecretPath,
) -> Result<(), ApiError> {
    let org = &caller.user.org;
    let environment = path.environment_path();
    cluster_environments::writable(client, org, &environment).await?;
    let current = cluster_secrets::get(client, path)
        .await?
        .ok_or_else(|| path.missing())?;
    if !cluster_secrets::is_managed(&current, org, &environment) {
        return Err(ApiError::SecretNotManaged);
    }
    let apps = cluster_apps::list(client, org, &environment).await?;
    let readers = referencing(&apps, path.secret.as_str());
    if !readers.is_empty() {
        return Err(ApiError::Conflict(format!(
            "the secret {} is still used by the env or git_secret of: {}; remove those references first",
            path.secret,
            readers.join(", ")
        )));
    }
    Ok(cluster_secrets::delete(client, &current).await?)
}

/// Why `name` is a secret Berth keeps in every environment's namespace for
/// itself, if it is: the registry's pull credential, shared by every
/// organization's pods, which no app may read and no one may replace.
fn kept_by_berth(name: &str) -> Option<&'static str> {
    if name == berth_cluster::registry::PULL_SECRET {
        return Some("Berth's own (the image registry's pull credential)");
    }
    berth_cluster::crd::object_names::is_certificate_secret(name)
        .then_some("named as the certificates of apps' hostnames are ({app}--tls-{16 hex digits})")
}

/// The key of an app's `git_secret` a build clones with (and `username`,
/// optionally).
pub const GIT_TOKEN_KEY: &str = "token";

/// Refuses a configuration whose env (or `git_secret`: its `token`) reads
/// a secret or key that does not exist in the app's environment: its pods
/// (or builds) would never start. Costs one
/// cluster request when the env has secret references (a get for one secret,
/// a list for several) and none otherwise. Any secret of the namespace counts,
/// Berth's or not: secrets made by other tools may be read too.
pub async fn check_references(
    client: &kube::Client,
    path: &AppPath,
    config: &AppConfig,
) -> Result<(), ApiError> {
    let env = config.env.iter().enumerate().filter_map(|(i, var)| {
        var.secret
            .as_ref()
            .map(|r| (format!("env[{i}].secret"), r.name.as_str(), r.key.as_str()))
    });
    // A build clones with the git secret's `token`.
    let git = config
        .source
        .iter()
        .filter_map(|source| source.git_secret.as_deref())
        .map(|name| ("git_secret".to_owned(), name, GIT_TOKEN_KEY));
    let references: Vec<(String, &str, &str)> = env.chain(git).collect();
    if let Some((field, name, why)) = references
        .iter()
        .find_map(|(field, name, _)| kept_by_berth(name).map(|why| (field, name, why)))
    {
        return Err(ApiError::ValidationFailed(format!(
            "{field}: the secret {name} is {why}; apps cannot read it"
        )));
    }
    let Some((first_field, first, _)) = references.first() else {
        return Ok(());
    };
    let first = *first;
    let namespace = path.namespace();
    let found: Vec<Secret> = if references.iter().all(|(_, name, _)| *name == first) {
        let secret_path = SecretPath {
            project: path.project.clone(),
            environment: path.environment.clone(),
            secret: SecretName::parse(first).map_err(|invalid| invalid.at(first_field))?,
        };
        cluster_secrets::get(client, &secret_path)
            .await?
            .into_iter()
            .collect()
    } else {
        cluster_secrets::list_all(client, &namespace).await?
    };
    for (field, name, key) in references {
        let Some(secret) = found.iter().find(|s| s.name_any() == name) else {
            return Err(ApiError::ValidationFailed(format!(
                "{field}: there is no secret {name} in this environment; create it first"
            )));
        };
        let has_key = secret.data.as_ref().is_some_and(|d| d.contains_key(key))
            || secret
                .string_data
                .as_ref()
                .is_some_and(|d| d.contains_key(key));
        if !has_key {
            return Err(ApiError::ValidationFailed(format!(
                "{field}: the secret {name} has no key {key}"
            )));
        }
    }
    Ok(())
}
