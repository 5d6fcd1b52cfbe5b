//! Berth's controller: reconciles `Environment` resources into namespaces with a
//! quota, default limits and their isolation, purges them when their deletion is due, keeps
//! `Project` resources until their environments are gone, and turns `App`
//! resources into the workloads that run them ([`render`]).
//!
//! Reconciles are idempotent (server-side apply; status written only when it
//! changes) and failures back off exponentially per object (`backoff`); a
//! write refused because the namespace is being deleted waits for a change
//! instead. What happens is told as Kubernetes Events on the objects
//! (`events`) and counted in Prometheus metrics (`metrics`); of several
//! replicas only the one holding the Lease reconciles (`replica`).

pub mod apps;
mod backoff;
pub mod build_engine;
mod build_secrets;
pub mod builds;
pub mod egress;
mod environments;
pub mod events;
pub mod grants;
pub mod isolation;
pub mod metrics;
mod projects;
pub mod registry;
pub mod releases;
pub mod render;
mod replica;
mod runs;
pub mod shares;

use std::collections::HashMap;
use std::fmt::Debug;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use kube::{Api, Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use tokio::sync::watch;

use berth_shared::cluster::crd::{
    App, BUILDS_NAMESPACE, Build, Environment, LABEL_MANAGED_BY, MANAGER, Project, Run,
};

use crate::render::RenderSettings;

pub use replica::{
    DEFAULT_LEASE_DURATION_SECONDS, DEFAULT_LEASE_NAME, DEFAULT_LEASE_NAMESPACE, Replica,
    ReplicaSettings, replica_identity,
};

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

    /// The `error` label of `reconcile_failures_total`.
    pub fn kind(&self) -> &'static str {
        if self.is_namespace_terminating() {
            return "namespace_terminating";
        }
        match self {
            Error::Kube(_) => "kube",
            Error::ProjectNotEmpty(_) => "project_not_empty",
            Error::BadSchedule(_) => "bad_schedule",
            Error::Finalizer(_) => "finalizer",
            Error::NamespaceNotManaged(_) => "namespace_not_managed",
            Error::NamespaceOfEarlierEnvironment(_) => "namespace_of_earlier_environment",
            Error::Manifest(_) => "manifest",
            Error::Apply { .. } => "apply",
        }
    }

    /// Whether the apiserver refused a write because the namespace is being
    /// deleted: retrying cannot help until the namespace has gone.
    pub fn is_namespace_terminating(&self) -> bool {
        match self {
            Error::Kube(error) | Error::Apply { source: error, .. } => namespace_terminating(error),
            _ => false,
        }
    }
}

/// A refusal of new content in a namespace being deleted (the apiserver's
/// `NamespaceTerminating` cause).
pub fn namespace_terminating(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == 403
        && status.details.iter().flat_map(|details| &details.causes)
            .any(|cause| cause.reason == "NamespaceTerminating"))
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
    /// The images builds run, their deadline, shares and git hosts.
    pub builders: build_engine::BuilderSettings,
    /// Where build pods (and, when asked, app pods) may connect to.
    pub egress: egress::EgressSettings,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            render: RenderSettings::default(),
            ingress_namespace: isolation::DEFAULT_INGRESS_NAMESPACE.to_owned(),
            builders: build_engine::BuilderSettings::default(),
            egress: egress::EgressSettings::default(),
        }
    }
}

pub struct Context {
    pub client: Client,
    pub settings: Settings,
    pub metrics: Arc<metrics::Metrics>,
    pub events: events::Events,
    backoff: backoff::Backoff,
    /// One lock per namespace: its apps are applied one at a time.
    turns: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl Context {
    fn new(
        client: Client,
        settings: Settings,
        metrics: Arc<metrics::Metrics>,
        instance: &str,
    ) -> Arc<Self> {
        Arc::new(Self {
            events: events::Events::new(client.clone(), instance),
            client,
            settings,
            metrics,
            backoff: backoff::Backoff::default(),
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
}

/// `namespace/name` (or `name`) of an object, for the log.
fn named<K: Resource>(object: &K) -> String {
    match object.meta().namespace.as_deref() {
        Some(namespace) => format!("{namespace}/{}", object.name_any()),
        None => object.name_any(),
    }
}

/// The one error policy of the three controllers: a write refused because
/// the namespace is being deleted waits for a change (the namespace's
/// deletion ends it: an Environment watches its namespace, an App goes with
/// it), anything else is retried after the object's backoff.
fn error_policy<K: Resource<DynamicType = ()>>(
    object: Arc<K>,
    error: &Error,
    context: Arc<Context>,
) -> Action {
    if error.is_namespace_terminating() {
        return Action::await_change();
    }
    Action::requeue(
        context
            .backoff
            .failed(backoff::key(object.as_ref()), Instant::now()),
    )
}

/// A reconcile, counted and timed; a success forgets the object's backoff.
async fn measured(
    kind: &'static str,
    key: String,
    context: Arc<Context>,
    reconcile: impl Future<Output = Result<Action, Error>>,
) -> Result<Action, Error> {
    let started = Instant::now();
    let result = reconcile.await;
    context
        .metrics
        .reconciled(kind, started.elapsed(), result.as_ref().map(|_| ()));
    if result.is_ok() {
        context.backoff.succeeded(&key);
    }
    result
}

/// A controller running `reconcile` (counted, timed, with the one error
/// policy), its failures logged.
fn running<K, Reconciled>(
    controller: Controller<K>,
    kind: &'static str,
    reconcile: fn(Arc<K>, Arc<Context>) -> Reconciled,
    context: Arc<Context>,
) -> impl Future<Output = ()> + Send
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    Reconciled: Future<Output = Result<Action, Error>> + Send + 'static,
{
    controller
        .run(
            move |object, context: Arc<Context>| {
                measured(
                    kind,
                    backoff::key(object.as_ref()),
                    context.clone(),
                    reconcile(object, context),
                )
            },
            error_policy,
            context,
        )
        .for_each(move |result| async move {
            match result {
                // A deleted project waiting for its environments is no news.
                Err(error) if kind == "Project" => {
                    tracing::debug!(error = %error, "project reconcile deferred")
                }
                Err(error) => tracing::warn!(kind, error = %error, "reconcile failed"),
                Ok(_) => {}
            }
        })
}

/// The caches of the controllers.
struct Stores {
    projects: Store<Project>,
    environments: Store<Environment>,
    apps: Store<App>,
    builds: Store<Build>,
    runs: Store<Run>,
}

impl Stores {
    /// Once every watch has listed what there is.
    async fn ready(&self) {
        let _ = tokio::join!(
            self.projects.wait_until_ready(),
            self.environments.wait_until_ready(),
            self.apps.wait_until_ready(),
            self.builds.wait_until_ready(),
            self.runs.wait_until_ready()
        );
    }
}

/// The three controllers, until `stop` turns true: then no new reconcile
/// starts, and the future ends once those running have finished
/// (kube-runtime's graceful shutdown).
fn controllers(
    context: Arc<Context>,
    stop: watch::Receiver<bool>,
) -> (impl Future<Output = ()> + Send, Stores) {
    let client = context.client.clone();
    let stopped = move || {
        let mut stop = stop.clone();
        async move {
            let _ = stop.wait_for(|stop| *stop).await;
        }
    };
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
    .graceful_shutdown_on(stopped());
    // The workloads it owns are watched too, so an App's status follows
    // their rollouts.
    let apps = Controller::new(Api::<App>::all(client.clone()), watcher::Config::default())
        .owns(Api::<Deployment>::all(client.clone()), managed.clone())
        .owns(Api::<CronJob>::all(client.clone()), managed.clone())
        // Release commands: the Job's end moves the app on.
        .owns(Api::<Job>::all(client.clone()), managed.clone())
        // An app awaiting its first build says how its builds go.
        .watches(
            Api::<Build>::namespaced(client.clone(), BUILDS_NAMESPACE),
            watcher::Config::default(),
            |build: Build| {
                Some(ObjectRef::<App>::new(&build.spec.app).within(&build.spec.namespace))
            },
        )
        .graceful_shutdown_on(stopped());
    // Builds, in their own namespace: the end of a build's Job moves it on,
    // and a change of its App (a decision that makes it moot) is seen at
    // once.
    let builds = Controller::new(
        Api::<Build>::namespaced(client.clone(), BUILDS_NAMESPACE),
        watcher::Config::default(),
    );
    let known_builds = builds.store();
    let builds = builds
        .owns(
            Api::<Job>::namespaced(client.clone(), BUILDS_NAMESPACE),
            managed.clone(),
        )
        .watches(
            Api::<App>::all(client.clone()),
            watcher::Config::default(),
            move |app: App| {
                let uid = app.uid();
                known_builds
                    .state()
                    .into_iter()
                    .filter(|build| {
                        Some(&build.spec.app_uid) == uid.as_ref() && !build.is_finished()
                    })
                    .map(|build| ObjectRef::from_obj(build.as_ref()))
                    .collect::<Vec<_>>()
            },
        )
        .graceful_shutdown_on(stopped());
    // Runs: each becomes a Job, then goes.
    let runs = Controller::new(Api::<Run>::all(client.clone()), watcher::Config::default())
        .graceful_shutdown_on(stopped());
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
    .graceful_shutdown_on(stopped());
    let stores = Stores {
        projects: projects.store(),
        environments: environments.store(),
        apps: apps.store(),
        builds: builds.store(),
        runs: runs.store(),
    };
    let environments = running(
        environments,
        "Environment",
        environments::reconcile,
        context.clone(),
    );
    let apps = running(apps, "App", apps::reconcile, context.clone());
    let builds = running(builds, "Build", builds::reconcile, context.clone());
    let runs = running(runs, "Run", runs::reconcile, context.clone());
    let projects = running(projects, "Project", projects::reconcile, context);
    let running = async move {
        tokio::join!(environments, apps, builds, runs, projects);
    };
    (running, stores)
}
