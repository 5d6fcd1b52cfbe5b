//! Berth's controller: reconciles `Environment` resources into namespaces with a
//! quota, default limits and their isolation, purges them when their deletion is due, keeps
//! `Project` resources until their environments are gone, and turns `App`
//! resources into the workloads that run them ([`render`]).
//!
//! Reconciles are idempotent (server-side apply; status written only when it
//! changes) and failures back off exponentially per object.

pub mod apps;
mod environments;
pub mod isolation;
mod projects;
pub mod render;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::CronJob;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Api, Client, Resource, ResourceExt};

use berth_shared::cluster::crd::{App, Environment, LABEL_MANAGED_BY, MANAGER, Project};

use crate::render::RenderSettings;

/// The field manager of everything the controller applies.
pub const FIELD_MANAGER: &str = "berth-controller";

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("kubernetes: {0}")]
    Kube(#[from] kube::Error),
    #[error("project {0} still has environments")]
    ProjectNotEmpty(String),
    #[error("deletion time {0:?} is not RFC 3339")]
    BadSchedule(String),
    #[error("finalizer: {0}")]
    Finalizer(String),
    #[error("namespace {0} already exists and is not managed by Berth")]
    NamespaceNotManaged(String),
    #[error(
        "namespace {0} still belongs to an earlier environment of that name; waiting for it to go"
    )]
    NamespaceOfEarlierEnvironment(String),
    #[error("encoding a manifest: {0}")]
    Manifest(#[from] serde_json::Error),
    /// An object rendered from an App could not be written (the App's status
    /// says which, in words a user can read).
    #[error("{object}: {source}")]
    Apply {
        object: String,
        #[source]
        source: kube::Error,
    },
}

impl Error {
    /// What a tenant may read in a status: plain words, never the cluster's
    /// own error text (the log has that).
    pub fn tenant_message(&self) -> String {
        match self {
            Error::Kube(_) | Error::Finalizer(_) => {
                "the cluster could not be reached or refused a change; retrying".to_owned()
            }
            Error::Manifest(_) => "Berth could not encode an object; retrying".to_owned(),
            Error::Apply { object, .. } => format!("{object} could not be written; retrying"),
            Error::ProjectNotEmpty(_)
            | Error::BadSchedule(_)
            | Error::NamespaceNotManaged(_)
            | Error::NamespaceOfEarlierEnvironment(_) => self.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Error;

    #[test]
    fn tenants_never_read_the_clusters_error_text() {
        let raw =
            "namespaces is forbidden: User \"system:serviceaccount:berth-system:berth-controller\"";
        let error = Error::Kube(kube::Error::Api(Box::new(
            kube::core::Status::failure(raw, "Forbidden").with_code(403),
        )));
        assert!(error.to_string().contains("system:serviceaccount"));
        let message = error.tenant_message();
        assert!(
            !message.contains("serviceaccount") && !message.contains("forbidden"),
            "{message}"
        );
        assert_eq!(
            Error::NamespaceNotManaged("web-dev".into()).tenant_message(),
            "namespace web-dev already exists and is not managed by Berth"
        );
    }
}

/// What the controller is told at start (the binary reads it from the
/// environment).
#[derive(Clone, Debug)]
pub struct Settings {
    /// How apps are rendered: ingress class, default apps domain, progress
    /// deadline.
    pub render: RenderSettings,
    /// The namespace the ingress controller runs in: the one namespace whose
    /// pods may reach every environment's pods (see
    /// [`isolation`]).
    pub ingress_namespace: String,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            render: RenderSettings::default(),
            ingress_namespace: isolation::DEFAULT_INGRESS_NAMESPACE.to_owned(),
        }
    }
}

pub struct Context {
    pub client: Client,
    pub settings: Settings,
    failures: Mutex<HashMap<String, u32>>,
    /// One lock per namespace: its apps are applied one at a time.
    turns: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

/// The backoff key of an object: kind, namespace and name, so that objects of
/// different kinds or namespaces never share a count.
fn backoff_key<K: Resource<DynamicType = ()>>(object: &K) -> String {
    format!(
        "{}/{}/{}",
        K::kind(&()),
        object.namespace().unwrap_or_default(),
        object.name_any()
    )
}

impl Context {
    fn new(client: Client, settings: Settings) -> Arc<Self> {
        Arc::new(Self {
            client,
            settings,
            failures: Mutex::new(HashMap::new()),
            turns: Mutex::new(HashMap::new()),
        })
    }

    /// Waits until no other app of `namespace` is being applied, and holds
    /// the namespace until the guard is dropped: two apps then never both
    /// find a name free and both apply it.
    async fn namespace_turn(&self, namespace: &str) -> tokio::sync::OwnedMutexGuard<()> {
        let lock = {
            let mut turns = self
                .turns
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            turns.entry(namespace.to_owned()).or_default().clone()
        };
        lock.lock_owned().await
    }

    /// 1 s, 2 s, 4 s … up to 5 minutes, per object.
    fn backoff(&self, key: String) -> Action {
        let mut failures = self
            .failures
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let count = failures.entry(key).or_insert(0);
        *count = (*count + 1).min(9);
        Action::requeue(Duration::from_secs(1 << (*count - 1)).min(Duration::from_secs(300)))
    }

    fn succeeded(&self, key: &str) {
        if let Ok(mut failures) = self.failures.lock() {
            failures.remove(key);
        }
    }
}

/// Runs the controllers until the watches end.
pub async fn run(client: Client, settings: Settings) {
    let context = Context::new(client.clone(), settings);
    let managed = watcher::Config::default().labels(&format!("{LABEL_MANAGED_BY}={MANAGER}"));
    let environments = Controller::new(
        Api::<Environment>::all(client.clone()),
        watcher::Config::default(),
    )
    .owns(
        Api::<k8s_openapi::api::core::v1::Namespace>::all(client.clone()),
        managed.clone(),
    )
    // A changed or deleted NetworkPolicy is put back at once, not at the
    // next resync: it is what keeps other namespaces' pods out.
    .watches(
        Api::<NetworkPolicy>::all(client.clone()),
        managed.clone(),
        |policy: NetworkPolicy| {
            policy
                .namespace()
                .map(|namespace| ObjectRef::<Environment>::new(&namespace))
        },
    )
    .run(
        environments::reconcile,
        environments::error_policy,
        context.clone(),
    )
    .for_each(|result| async move {
        if let Err(error) = result {
            tracing::warn!(error = %error, "environment reconcile failed");
        }
    });
    // The workloads it owns are watched too, so an App's status follows
    // their rollouts.
    let apps = Controller::new(Api::<App>::all(client.clone()), watcher::Config::default())
        .owns(Api::<Deployment>::all(client.clone()), managed.clone())
        .owns(Api::<CronJob>::all(client.clone()), managed.clone())
        .run(apps::reconcile, apps::error_policy, context.clone())
        .for_each(|result| async move {
            if let Err(error) = result {
                tracing::warn!(error = %error, "app reconcile failed");
            }
        });
    // A deleted project waits for its last environment to go: watching
    // environments wakes it the moment that happens, not at its next backoff.
    let projects = Controller::new(
        Api::<Project>::all(client.clone()),
        watcher::Config::default(),
    )
    .watches(
        Api::<Environment>::all(client),
        watcher::Config::default(),
        |environment: Environment| Some(ObjectRef::<Project>::new(&environment.spec.project)),
    )
    .run(projects::reconcile, projects::error_policy, context)
    .for_each(|result| async move {
        if let Err(error) = result {
            tracing::debug!(error = %error, "project reconcile deferred");
        }
    });
    tokio::join!(environments, apps, projects);
}
