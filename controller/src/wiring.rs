//! The controllers, wired: what each watches, the one error policy, and a
//! reconcile counted and timed. `replica` runs them while it leads.

use std::fmt::Debug;
use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use berth_cluster::apps::ANNOTATION_VERIFIED;
use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::runtime::controller::{Action, Config, Controller};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{Predicate, WatchStreamExt, predicates, watcher};
use kube::{Api, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use tokio::sync::watch;

use berth_cluster::crd::{
    App, BUILDS_NAMESPACE, Build, Command, Environment, LABEL_MANAGED_BY, MANAGER, Project, Run,
};

use crate::context::Context;
use crate::error::Error;
use crate::{apps, backoff, builds, commands, environments, projects, runs};

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

/// How many reconciles each controller runs at once. Each App reconcile
/// lists its namespace's six kinds at once, and every request in flight is
/// an HTTP/1.1 connection whose read buffer stays in the pool after it.
/// Unbounded, a cold start at 1,000 apps held 271 MiB; at 64, 80 MiB; at
/// 16, 46 MiB, with deploys no slower (50 at once still within the floor,
/// rendering no slower: docs/benchmarks.md, "Controller at scale"). 16 also
/// keeps a cold start's ~100 lists at once well inside what an apiserver
/// serves at once by default (`--max-requests-inflight` 400 and
/// `--max-mutating-requests-inflight` 200, shared by every client).
const CONCURRENT_RECONCILES: u16 = 16;

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
        .with_config(Config::default().concurrency(CONCURRENT_RECONCILES))
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

/// The objects of `api` as they change, cached in `writer`'s store, each
/// passed on only when its `metadata.generation`, its finalizers or its
/// verified domains (an App's `berth.dev/verified-domains`, which the API
/// writes as an organization's proof of a domain comes or goes) moved: a
/// change of its spec, a finalizer added or removed, a domain to serve or
/// to stop serving, or its deletion (the API server bumps the generation when it sets
/// `deletionTimestamp` on an object its finalizers hold). A status write
/// (the controller's own report) wakes no reconcile, nor does the list
/// after a watch restarts; the owned and watched objects still do.
fn spec_changes<K>(
    api: Api<K>,
    writer: reflector::store::Writer<K>,
) -> impl futures::Stream<Item = Result<K, watcher::Error>> + Send + 'static
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    watcher(api, watcher::Config::default())
        // Nothing here reads what the field managers wrote; cached, it
        // would be the larger part of every App's memory.
        .modify(|object| object.meta_mut().managed_fields = None)
        .reflect(writer)
        .applied_objects()
        // Finalizers too: kube-runtime's `finalizer` adds its own and waits
        // for that change to come back before it reconciles further.
        .predicate_filter(
            predicates::generation
                .combine(predicates::finalizers)
                .combine(verified_domains::<K>),
            Default::default(),
        )
}

/// A hash of the object's `berth.dev/verified-domains`, if it has one.
fn verified_domains<K: Resource>(object: &K) -> Option<u64> {
    use std::hash::{Hash, Hasher};
    let listed = object
        .meta()
        .annotations
        .as_ref()?
        .get(ANNOTATION_VERIFIED)?;
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    listed.hash(&mut hasher);
    Some(hasher.finish())
}

/// A controller of `api`'s objects woken by their [`spec_changes`].
fn on_spec_changes<K>(api: Api<K>) -> Controller<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    let (reader, writer) = reflector::store();
    Controller::for_stream(spec_changes(api, writer), reader)
}

/// The caches of the controllers.
pub(crate) struct Stores {
    projects: Store<Project>,
    environments: Store<Environment>,
    pub(crate) apps: Store<App>,
    builds: Store<Build>,
    runs: Store<Run>,
    commands: Store<Command>,
}

impl Stores {
    /// Once every watch has listed what there is.
    pub(crate) async fn ready(&self) {
        let _ = tokio::join!(
            self.projects.wait_until_ready(),
            self.environments.wait_until_ready(),
            self.apps.wait_until_ready(),
            self.builds.wait_until_ready(),
            self.runs.wait_until_ready(),
            self.commands.wait_until_ready()
        );
    }
}

/// The three controllers, until `stop` turns true: then no new reconcile
/// starts, and the future ends once those running have finished
/// (kube-runtime's graceful shutdown).
pub(crate) fn controllers(
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
    // Each controller but the Builds' is woken by a change of its object's
    // spec, not by its own status writes (no reconcile storm). A Build's
    // phases move on by its own status writes (its result recorded, then
    // deployed), so every change of a Build wakes it: there are few, and a
    // finished one does nothing.
    let environments = on_spec_changes(Api::<Environment>::all(client.clone()))
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
    let apps = on_spec_changes(Api::<App>::all(client.clone()))
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
    let runs = on_spec_changes(Api::<Run>::all(client.clone())).graceful_shutdown_on(stopped());
    // One-off commands: each becomes a Job it owns, whose changes say how
    // it goes.
    let commands = on_spec_changes(Api::<Command>::all(client.clone()))
        .owns(Api::<Job>::all(client.clone()), managed.clone())
        .graceful_shutdown_on(stopped());
    // A deleted project waits for its last environment to go: watching
    // environments wakes it the moment that happens, not at its next backoff.
    let projects = on_spec_changes(Api::<Project>::all(client.clone()))
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
        commands: commands.store(),
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
    let commands = running(commands, "Command", commands::reconcile, context.clone());
    let projects = running(projects, "Project", projects::reconcile, context);
    let running = async move {
        tokio::join!(environments, apps, builds, runs, commands, projects);
    };
    (running, stores)
}

#[cfg(test)]
mod tests {
    use std::pin::pin;

    use berth_domain::app::{AppConfig, AppProcess};
    use berth_kube_standin::testing::wait_bound;
    use futures::Stream;
    use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
    use serde_json::json;

    use super::*;
    use crate::testing::cluster_with_namespace;

    /// The next object the stream passes on (within the tests' one bound on
    /// a cluster's effects: a stream that passes nothing fails the test).
    async fn next_change(
        changes: &mut (impl Stream<Item = Result<App, watcher::Error>> + Unpin),
    ) -> App {
        tokio::time::timeout(wait_bound(), changes.next())
            .await
            .expect("a change within the bound")
            .expect("the stream goes on")
            .expect("no watch error")
    }

    /// No reconcile storm: a status write (what the controller itself writes
    /// after each reconcile) wakes no reconcile of the App, a spec change and
    /// a deletion do. Timing plays no part: the watch delivers changes in
    /// order, so the change passed on after the status write and the spec
    /// change is the spec change's, carrying the status written before it.
    #[tokio::test]
    async fn only_a_spec_change_or_a_deletion_wakes_a_controller() {
        let (_cluster, client) = cluster_with_namespace("store-prod").await;
        let (_cache, writer) = reflector::store();
        let mut changes = pin!(spec_changes(Api::<App>::all(client.clone()), writer));
        let apps: Api<App> = Api::namespaced(client.clone(), "store-prod");
        let mut app = App::test("shop", AppConfig::test(vec![AppProcess::test("web", None)]));
        // Held by a finalizer, as a deletion is then a change of the object.
        app.metadata.finalizers = Some(vec!["test.berth.dev/hold".to_owned()]);
        apps.create(&PostParams::default(), &app)
            .await
            .expect("App");
        let created = next_change(&mut changes).await;
        assert_eq!(created.metadata.generation, Some(1));

        let params = PatchParams::default();
        let report = json!({"status": {"ready": false, "reason": "Progressing"}});
        apps.patch_status("shop", &params, &Patch::Merge(&report))
            .await
            .expect("status");
        let decision = json!({"spec": {"release": {"revision": 2}}});
        apps.patch("shop", &params, &Patch::Merge(&decision))
            .await
            .expect("spec");
        let changed = next_change(&mut changes).await;
        assert_eq!(
            changed.metadata.generation,
            Some(2),
            "the spec change, not the status write"
        );
        assert_eq!(
            changed.status.and_then(|status| status.reason).as_deref(),
            Some("Progressing"),
            "the status write came before it"
        );

        apps.delete("shop", &DeleteParams::default())
            .await
            .expect("delete");
        let deleting = next_change(&mut changes).await;
        assert!(deleting.metadata.deletion_timestamp.is_some());
        apps.patch(
            "shop",
            &params,
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .expect("finalizer removed");
    }
}
