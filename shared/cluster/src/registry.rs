//! The image registry builds push to and apps pull from, as the operator
//! sets it once (`berth-admin registry set`) and the controller reads it:
//!
//! - ConfigMap [`CONFIG_MAP`] in [`SYSTEM_NAMESPACE`], keys `prefix`
//!   (`registry.example.com/berth`: no scheme, no trailing slash; images are
//!   `{prefix}/{org}/{project}/{app}`), `server` (the registry's host) and
//!   `credentials` ([`CredentialMode`]);
//! - with `credentials: scoped`, the registry trusts Berth's token service
//!   (`berth_domain::registry`) and every credential is the controller's: a push
//!   and a pull credential per build, in Secrets of the builds namespace
//!   owned by the Build, and a pull credential per environment,
//!   [`PULL_SECRET`] in its namespace; all of type
//!   `kubernetes.io/dockerconfigjson`, their passwords nowhere else;
//! - with `credentials: shared` (or none: installations from before), the
//!   installation's one push credential [`PUSH_SECRET`] in the builds
//!   namespace and one pull credential [`PULL_SECRET`] in `berth-system`,
//!   copied into every environment's namespace, and a pull-only
//!   credential's copy in the builds namespace. This is only a step of the
//!   upgrade to `scoped` (docs/deploy.md): those credentials reach every
//!   organization's images.

use std::collections::BTreeMap;

use base64::Engine;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, Patch, PatchParams};

use super::crd::{BUILDS_NAMESPACE, LABEL_MANAGED_BY, MANAGER};
use crate::ClusterError;
use berth_domain::registry::app_path;

/// Where Berth's own configuration lives.
pub const SYSTEM_NAMESPACE: &str = "berth-system";
pub const CONFIG_MAP: &str = "berth-registry";
pub const PUSH_SECRET: &str = "berth-registry-push";
pub const PULL_SECRET: &str = "berth-registry-pull";
/// The type of both credentials: a Docker `config.json`.
pub const DOCKER_CONFIG_TYPE: &str = "kubernetes.io/dockerconfigjson";
pub const DOCKER_CONFIG_KEY: &str = ".dockerconfigjson";

/// Whose credentials builds and pods use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CredentialMode {
    /// Minted by the controller per build and per environment, checked by
    /// Berth's token service.
    Scoped,
    /// The installation's one push and one pull credential (before the
    /// upgrade to scoped ones).
    Shared,
}

impl CredentialMode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Scoped => "scoped",
            Self::Shared => "shared",
        }
    }
}

/// The registry's settings, well formed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Registry {
    pub prefix: String,
    pub server: String,
    pub credentials: CredentialMode,
}

impl Registry {
    /// A prefix (host and path, no scheme, no trailing slash) and the
    /// server (a host, with a port perhaps); why not, in a sentence.
    pub fn parse(prefix: &str, server: &str) -> Result<Self, String> {
        let (prefix, server) = (prefix.trim(), server.trim());
        let well_formed = |value: &str| {
            !value.is_empty()
                && !value.contains("://")
                && !value.starts_with('/')
                && !value.ends_with('/')
                && !value.contains("//")
                && value
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._-/:".contains(c))
        };
        if !well_formed(prefix) || prefix.chars().any(|c| c.is_ascii_uppercase()) {
            return Err(
                "the prefix must be a registry host and path in lowercase, like registry.example.com/berth (no scheme, no trailing slash)"
                    .to_owned(),
            );
        }
        if !well_formed(server) || server.contains('/') {
            return Err(
                "the server must be the registry's host (and port), like registry.example.com"
                    .to_owned(),
            );
        }
        Ok(Self {
            prefix: prefix.to_owned(),
            server: server.to_owned(),
            credentials: CredentialMode::Scoped,
        })
    }

    /// The settings of the ConfigMap; None when missing or malformed (the
    /// controller then builds nothing rather than push somewhere odd). A
    /// ConfigMap without `credentials` is an installation's from before
    /// scoped credentials: shared.
    pub fn of(config: &ConfigMap) -> Option<Self> {
        let data = config.data.as_ref()?;
        let credentials = match data.get("credentials").map(String::as_str) {
            None | Some("shared") => CredentialMode::Shared,
            Some("scoped") => CredentialMode::Scoped,
            Some(_) => return None,
        };
        Self::parse(data.get("prefix")?, data.get("server")?)
            .ok()
            .map(|registry| Self {
                credentials,
                ..registry
            })
    }

    /// The repository of an app's images: `{prefix}/{org}/{project}/{app}`.
    pub fn repository(&self, org: &str, project: &str, app: &str) -> String {
        format!("{}/{}", self.prefix, app_path(org, project, app))
    }
}

/// A user name and password (or token) for the registry.
pub struct Credential {
    pub username: String,
    pub password: String,
}

impl Credential {
    /// The credentials from standard input's text: the push credential's
    /// user name and password on the first two lines, and optionally a
    /// pull-only credential's on the next two (else pulls use the push
    /// credential). Nothing of the values is ever in the error.
    pub fn parse_input(text: &str) -> Result<(Credential, Option<Credential>), String> {
        let lines: Vec<&str> = text
            .lines()
            .map(|line| line.trim_end_matches('\r'))
            .filter(|line| !line.is_empty())
            .collect();
        let pair = |username: &str, password: &str| Credential {
            username: username.to_owned(),
            password: password.to_owned(),
        };
        match lines.as_slice() {
            [username, password] => Ok((pair(username, password), None)),
            [username, password, pull_username, pull_password] => Ok((
                pair(username, password),
                Some(pair(pull_username, pull_password)),
            )),
            _ => Err(
                "standard input must hold the push credential's user name and password on two lines, \
                 and optionally a pull-only credential's on two more"
                    .to_owned(),
            ),
        }
    }

    /// A Docker `config.json` with this credential for `server`.
    pub fn docker_config(&self, server: &str) -> String {
        let auth = base64::engine::general_purpose::STANDARD
            .encode(format!("{}:{}", self.username, self.password));
        serde_json::json!({
            "auths": { server: {
                "username": self.username,
                "password": self.password,
                "auth": auth,
            }}
        })
        .to_string()
    }
}

/// The credentials `berth-admin registry set` is given.
pub enum Credentials<'a> {
    /// None: the controller mints them (`credentials: scoped`).
    Scoped,
    /// The installation's shared ones (`credentials: shared`): apps pull
    /// with `pull`, or with `push` when there is no pull-only credential;
    /// builds pull with `pull` only (its copy in the builds namespace is
    /// deleted when there is none).
    Shared {
        push: &'a Credential,
        pull: Option<&'a Credential>,
    },
}

/// `ClusterMisconfigured` naming what is missing unless the namespaces the
/// registry's settings and credentials live in are there: infra/k8s makes
/// them (`kubectl apply -k`), not `berth-admin cluster install`, which
/// installs only the CRDs. Asked before anything is written, so that a
/// cluster without them is left as it was, and the table too.
pub async fn check_namespaces(client: &kube::Client) -> Result<(), ClusterError> {
    let namespaces = Api::<Namespace>::all(client.clone());
    let mut missing = Vec::new();
    for name in [SYSTEM_NAMESPACE, BUILDS_NAMESPACE] {
        if namespaces.get_opt(name).await?.is_none() {
            missing.push(name);
        }
    }
    if missing.is_empty() {
        return Ok(());
    }
    Err(ClusterError::Misconfigured {
        detail: format!(
            "the cluster has no namespace {}: apply infra/k8s first (`kubectl apply -k \
             infra/k8s`, or your installation's kustomization, docs/deploy.md); `berth-admin \
             cluster install` installs only the CRDs. Nothing was written",
            missing.join(" and no namespace ")
        ),
        cause: format!("namespaces not found: {}", missing.join(", ")),
    })
}

/// Writes the registry's ConfigMap and, when shared, the credentials
/// (server-side apply: running it again replaces them). Scoped leaves the
/// shared Secrets of before where they are (pods pull with their copies
/// until the controller has replaced each); [`forget_shared`] removes them.
pub async fn set(
    client: &kube::Client,
    registry: &Registry,
    credentials: Credentials<'_>,
) -> Result<(), ClusterError> {
    let params = PatchParams::apply(MANAGER).force();
    let mode = match credentials {
        Credentials::Scoped => CredentialMode::Scoped,
        Credentials::Shared { .. } => CredentialMode::Shared,
    };
    let config = ConfigMap {
        metadata: ObjectMeta {
            name: Some(CONFIG_MAP.to_owned()),
            namespace: Some(SYSTEM_NAMESPACE.to_owned()),
            labels: berths_labels(),
            ..Default::default()
        },
        data: Some(BTreeMap::from([
            ("prefix".to_owned(), registry.prefix.clone()),
            ("server".to_owned(), registry.server.clone()),
            ("credentials".to_owned(), mode.as_str().to_owned()),
        ])),
        ..Default::default()
    };
    if let Credentials::Shared { push, pull } = credentials {
        let secret = |name: &str, namespace: &str, credential: &Credential| {
            docker_config_secret(name, namespace, &credential.docker_config(&registry.server))
        };
        // Credentials first: a build started once the ConfigMap is there
        // finds its push credential.
        Api::<Secret>::namespaced(client.clone(), BUILDS_NAMESPACE)
            .patch(
                PUSH_SECRET,
                &params,
                &Patch::Apply(secret(PUSH_SECRET, BUILDS_NAMESPACE, push)),
            )
            .await?;
        Api::<Secret>::namespaced(client.clone(), SYSTEM_NAMESPACE)
            .patch(
                PULL_SECRET,
                &params,
                &Patch::Apply(secret(PULL_SECRET, SYSTEM_NAMESPACE, pull.unwrap_or(push))),
            )
            .await?;
        let builds = Api::<Secret>::namespaced(client.clone(), BUILDS_NAMESPACE);
        match pull {
            Some(pull) => {
                builds
                    .patch(
                        PULL_SECRET,
                        &params,
                        &Patch::Apply(secret(PULL_SECRET, BUILDS_NAMESPACE, pull)),
                    )
                    .await?;
            }
            None => delete_if_there(&builds, PULL_SECRET).await?,
        }
    }
    Api::<ConfigMap>::namespaced(client.clone(), SYSTEM_NAMESPACE)
        .patch(CONFIG_MAP, &params, &Patch::Apply(&config))
        .await?;
    Ok(())
}

/// Deletes the shared credentials' Secrets (`berth-system` and the builds
/// namespace): the last step of the upgrade to scoped credentials, once
/// every environment has its own.
pub async fn forget_shared(client: &kube::Client) -> Result<(), ClusterError> {
    let builds = Api::<Secret>::namespaced(client.clone(), BUILDS_NAMESPACE);
    delete_if_there(&builds, PUSH_SECRET).await?;
    delete_if_there(&builds, PULL_SECRET).await?;
    let system = Api::<Secret>::namespaced(client.clone(), SYSTEM_NAMESPACE);
    delete_if_there(&system, PULL_SECRET).await
}

/// How far an installation has come to scoped credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    pub registry: Option<Registry>,
    pub environments: usize,
    pub environments_with_own: usize,
    /// The environments (cluster names) still without a pull credential of
    /// their own.
    pub waiting: Vec<String>,
}

/// The registry's settings and which environments have their own pull
/// credential (its digest in their status).
pub async fn status(client: &kube::Client) -> Result<Status, ClusterError> {
    let config = Api::<ConfigMap>::namespaced(client.clone(), SYSTEM_NAMESPACE)
        .get_opt(CONFIG_MAP)
        .await?;
    let environments = Api::<super::crd::Environment>::all(client.clone())
        .list(&Default::default())
        .await?
        .items;
    let waiting: Vec<String> = environments
        .iter()
        .filter(|environment| {
            environment
                .status
                .as_ref()
                .and_then(|status| status.registry_pull_digest.as_ref())
                .is_none()
        })
        .filter_map(|environment| environment.metadata.name.clone())
        .collect();
    Ok(Status {
        registry: config.as_ref().and_then(Registry::of),
        environments: environments.len(),
        environments_with_own: environments.len() - waiting.len(),
        waiting,
    })
}

async fn delete_if_there(api: &Api<Secret>, name: &str) -> Result<(), ClusterError> {
    match api.delete(name, &Default::default()).await {
        Ok(_) => Ok(()),
        Err(error) if super::is_not_found(&error) => Ok(()),
        Err(error) => Err(error.into()),
    }
}

fn berths_labels() -> Option<BTreeMap<String, String>> {
    Some(BTreeMap::from([(
        LABEL_MANAGED_BY.to_owned(),
        MANAGER.to_owned(),
    )]))
}

/// A Secret of type `kubernetes.io/dockerconfigjson`, labelled as Berth's.
pub fn docker_config_secret(name: &str, namespace: &str, docker_config: &str) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some(namespace.to_owned()),
            labels: berths_labels(),
            ..Default::default()
        },
        type_: Some(DOCKER_CONFIG_TYPE.to_owned()),
        data: Some(BTreeMap::from([(
            DOCKER_CONFIG_KEY.to_owned(),
            ByteString(docker_config.as_bytes().to_vec()),
        )])),
        ..Default::default()
    }
}

/// The user name and password a Docker `config.json` holds for `server`;
/// None when it holds none (or is not one).
pub fn credential_of(docker_config: &[u8], server: &str) -> Option<Credential> {
    let config: serde_json::Value = serde_json::from_slice(docker_config).ok()?;
    let auth = config.get("auths")?.get(server)?;
    Some(Credential {
        username: auth.get("username")?.as_str()?.to_owned(),
        password: auth.get("password")?.as_str()?.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_taken_only_when_well_formed() {
        let registry = Registry::parse("registry.example.com/berth", "registry.example.com")
            .expect("well formed");
        assert_eq!(
            registry.repository("acme", "shop", "web"),
            "registry.example.com/berth/acme/shop/web"
        );
        assert!(Registry::parse("localhost:5000", "localhost:5000").is_ok());
        for (prefix, server) in [
            ("https://registry.example.com/berth", "registry.example.com"),
            ("registry.example.com/berth/", "registry.example.com"),
            ("", "registry.example.com"),
            ("Registry.example.com/berth", "registry.example.com"),
            ("registry.example.com/berth", "registry.example.com/x"),
            ("registry.example.com/be rth", "registry.example.com"),
        ] {
            assert!(
                Registry::parse(prefix, server).is_err(),
                "{prefix} {server}"
            );
        }
        assert_eq!(Registry::of(&ConfigMap::default()), None);
        let config = |credentials: Option<&str>| ConfigMap {
            data: Some(
                [
                    ("prefix", Some("registry.example.com/berth")),
                    ("server", Some("registry.example.com")),
                    ("credentials", credentials),
                ]
                .into_iter()
                .filter_map(|(k, v)| v.map(|v| (k.to_owned(), v.to_owned())))
                .collect(),
            ),
            ..Default::default()
        };
        // From before scoped credentials: shared.
        assert_eq!(
            Registry::of(&config(None)).map(|r| r.credentials),
            Some(CredentialMode::Shared)
        );
        assert_eq!(
            Registry::of(&config(Some("scoped"))).map(|r| r.credentials),
            Some(CredentialMode::Scoped)
        );
        assert_eq!(Registry::of(&config(Some("everyone"))), None);
    }

    #[test]
    fn credentials_come_as_two_or_four_lines_and_errors_never_hold_them() {
        let (push, pull) = Credential::parse_input("robot\ns3cret\n").expect("two lines");
        assert_eq!(
            (push.username.as_str(), push.password.as_str()),
            ("robot", "s3cret")
        );
        assert!(pull.is_none());
        let (_, pull) = Credential::parse_input("robot\ns3cret\nreader\nr3ad\n").expect("four");
        assert_eq!(pull.expect("a pull credential").username, "reader");
        let error = Credential::parse_input("only-a-s3cret\n")
            .err()
            .expect("refused");
        assert!(!error.contains("s3cret"));
        let text = push.docker_config("registry.example.com");
        let config: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            config["auths"]["registry.example.com"]["auth"],
            "cm9ib3Q6czNjcmV0"
        );
        let read = credential_of(text.as_bytes(), "registry.example.com").expect("read back");
        assert_eq!(
            (read.username.as_str(), read.password.as_str()),
            ("robot", "s3cret")
        );
        assert!(credential_of(text.as_bytes(), "elsewhere.example.com").is_none());
    }
}
