//! What the tests leave on a real cluster (`BERTH_TEST_KUBECONFIG`), and
//! what a run finds there: nothing it depends on.
//!
//! - **Each test removes what it made.** Every cluster-wide or
//!   platform-wide name a test gives comes from [`unique`], which notes it
//!   for the test's thread; when the test's cluster goes (`TestCluster`'s
//!   drop, also when the test failed), [`remove_named`] deletes the Projects
//!   of those names, their Environments (and so their namespaces, which the
//!   Environments own, and the Apps in them), their Builds, and namespaces
//!   of those names. It does not wait for them to go: the run's controller
//!   finishes what it must (a Project's finalizer), and a later run's does
//!   for the last tests of a run.
//! - **A run starts from nothing it depends on.** A run that was killed
//!   removed nothing, and its queued Builds would take `berth-builds`'
//!   build slots (its ResourceQuota of 8 pods) from this run's: before the
//!   first test touches the cluster, [`sweep_earlier_runs`] deletes every
//!   Berth object made before this run (the suite's cluster is a throwaway
//!   one, docs/testing.md), Builds and their Jobs first, and waits until
//!   the build pods they held are gone.
//!
//! On the stand-in nothing outlives the test (each has its own), but the
//! same [`remove_named`] runs there in `cleanup::a_test_leaves_nothing_behind`.

use std::cell::RefCell;
use std::collections::BTreeSet;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Namespace, Pod};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{DeleteParams, ListParams};
use kube::{Api, CustomResourceExt, Resource, ResourceExt};

use berth_cluster::crd::{
    App, BUILDS_NAMESPACE, Build, Environment, LABEL_MANAGED_BY, LABEL_PROJECT, MANAGER, Project,
};

use super::cluster::eventually;

thread_local! {
    /// The names [`unique`] gave out on this thread (one test's), not yet
    /// removed.
    static NAMED: RefCell<BTreeSet<String>> = const { RefCell::new(BTreeSet::new()) };
}

/// A name no other test (or earlier run on a real cluster) uses: every
/// cluster-wide or platform-wide name a test gives (projects, and so
/// environments' namespaces) comes from here, and the test's cluster
/// removes what bears it when it goes.
pub fn unique(prefix: &str) -> String {
    let name = format!(
        "{prefix}-{}",
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    );
    NAMED.with(|named| named.borrow_mut().insert(name.clone()));
    name
}

/// The names this thread's test gave out since the last call.
pub fn take_named() -> Vec<String> {
    NAMED
        .with(|named| std::mem::take(&mut *named.borrow_mut()))
        .into_iter()
        .collect()
}

fn background() -> DeleteParams {
    DeleteParams::background()
}

/// Deletes what `api` lists with `params` and `chosen` picks.
async fn delete_chosen<K>(
    api: &Api<K>,
    params: &ListParams,
    chosen: impl Fn(&K) -> bool,
) -> Result<(), kube::Error>
where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    for object in api.list(params).await? {
        if chosen(&object) {
            ignore_gone(api.delete(&object.name_any(), &background()).await)?;
        }
    }
    Ok(())
}

/// Deletes, without waiting for them to go, what bears one of `names`:
/// Projects of that name, the Environments and Builds of those projects,
/// and namespaces of that name or project (an Environment's goes with it
/// anyway; a test's own namespace of "another tool" only this way).
pub async fn remove_named(client: &kube::Client, names: &[String]) -> Result<(), kube::Error> {
    if names.is_empty() {
        return Ok(());
    }
    let named = |name: &str| names.iter().any(|n| n == name);
    let of_projects =
        ListParams::default().labels(&format!("{LABEL_PROJECT} in ({})", names.join(",")));

    let builds: Api<Build> = Api::namespaced(client.clone(), BUILDS_NAMESPACE);
    delete_chosen(&builds, &of_projects, |_| true).await?;
    let environments: Api<Environment> = Api::all(client.clone());
    delete_chosen(&environments, &of_projects, |_| true).await?;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    delete_chosen(&namespaces, &ListParams::default(), |namespace| {
        let project = namespace.labels().get(LABEL_PROJECT).map(String::as_str);
        named(&namespace.name_any()) || project.is_some_and(named)
    })
    .await?;
    let projects: Api<Project> = Api::all(client.clone());
    delete_chosen(&projects, &ListParams::default(), |project| {
        named(&project.name_any())
    })
    .await
}

/// Runs [`remove_named`] from a `Drop`: on a thread and a runtime of its own,
/// with a client of its own (the test's runtime, which its clients' tasks
/// live on, is the one dropping), waiting until the deletions are sent.
pub fn remove_named_now(admin_kubeconfig: &str, names: Vec<String>) {
    if names.is_empty() {
        return;
    }
    let kubeconfig = admin_kubeconfig.to_owned();
    let removed = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime for the cleanup");
        runtime.block_on(async {
            let client = berth_api::access::client_from_kubeconfig(
                &kubeconfig,
                None,
                std::time::Duration::from_secs(10),
            )
            .await
            .map_err(|e| e.to_string())?;
            remove_named(&client, &names)
                .await
                .map_err(|e| e.to_string())
        })
    })
    .join();
    match removed {
        Ok(Ok(())) => {}
        // Left for the next run's sweep; the test's own outcome stands.
        Ok(Err(error)) => eprintln!("removing what the test made: {error}"),
        Err(_) => eprintln!("removing what the test made: the cleanup panicked"),
    }
}

fn ignore_gone<T>(result: Result<T, kube::Error>) -> Result<(), kube::Error> {
    match result {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(error) => Err(error),
    }
}

/// Made before `cutoff` (and so by an earlier run).
fn older<K: Resource>(object: &K, cutoff: &Time) -> bool {
    object
        .meta()
        .creation_timestamp
        .as_ref()
        .is_some_and(|created| created.0 < cutoff.0)
}

/// Deletes every Berth object an earlier run left on the cluster (made
/// before `cutoff`), and waits until the build pods they held are gone, so
/// that none takes a build slot from this run. The Builds and their Jobs
/// first; then Apps, Environments (their namespaces go with them) and
/// Projects (this run's controller releases them); the earlier runs'
/// controller Leases (`berth-tests-…`). On a cluster where no run installed
/// Berth's CRDs yet there is nothing to sweep (their resources are not
/// even served).
pub async fn sweep_earlier_runs(client: &kube::Client, cutoff: &Time) -> Result<(), kube::Error> {
    let definitions: Api<CustomResourceDefinition> = Api::all(client.clone());
    for kind in [
        Build::crd_name(),
        App::crd_name(),
        Environment::crd_name(),
        Project::crd_name(),
    ] {
        if definitions.get_opt(kind).await?.is_none() {
            return Ok(());
        }
    }
    let all = ListParams::default();
    let managed = ListParams::default().labels(&format!("{LABEL_MANAGED_BY}={MANAGER}"));
    let builds: Api<Build> = Api::namespaced(client.clone(), BUILDS_NAMESPACE);
    delete_chosen(&builds, &all, |build| older(build, cutoff)).await?;
    let jobs: Api<Job> = Api::namespaced(client.clone(), BUILDS_NAMESPACE);
    delete_chosen(&jobs, &managed, |job| older(job, cutoff)).await?;
    for app in Api::<App>::all(client.clone()).list(&all).await? {
        if older(&app, cutoff) {
            let namespaced: Api<App> =
                Api::namespaced(client.clone(), &app.namespace().unwrap_or_default());
            ignore_gone(namespaced.delete(&app.name_any(), &background()).await)?;
        }
    }
    let environments: Api<Environment> = Api::all(client.clone());
    delete_chosen(&environments, &all, |environment| {
        older(environment, cutoff)
    })
    .await?;
    let projects: Api<Project> = Api::all(client.clone());
    delete_chosen(&projects, &all, |project| older(project, cutoff)).await?;
    let leases: Api<Lease> =
        Api::namespaced(client.clone(), berth_controller::DEFAULT_LEASE_NAMESPACE);
    delete_chosen(&leases, &all, |lease| {
        lease.name_any().starts_with("berth-tests-") && older(lease, cutoff)
    })
    .await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), BUILDS_NAMESPACE);
    eventually("the earlier runs' build pods are gone", || async {
        pods.list(&ListParams::default())
            .await
            .is_ok_and(|pods| !pods.items.iter().any(|pod| older(pod, cutoff)))
    })
    .await;
    Ok(())
}
