//! What a purged environment leaves in the table, and the sweep that
//! removes it.
//!
//! An environment's apps keep, besides their App resources, their release
//! histories, hostname claims and webhooks in DynamoDB
//! (`apps::leftovers`). The purge that removes the namespace is the
//! controller's (at once, or after a production environment's grace), and
//! the controller cannot write DynamoDB; the API can, but no request runs
//! when a purge happens. So the work is split:
//!
//! - `deleteEnvironment` records the deletion ([`record`], `PURGES` /
//!   `ENV#{namespace}#{uid}`) before it schedules the purge: a deletion is
//!   never scheduled unrecorded, and a record whose deletion was never
//!   scheduled (the write after it failed) is dropped by the sweep;
//! - a sweep ([`sweep`]: the scheduled `cleanup` function every five
//!   minutes on AWS, `berth-local` every minute) takes each record in turn:
//!   while the environment is still there and deleting, it waits; restored,
//!   the record goes; once the environment and its namespace are gone (or
//!   the name is another environment's now), it removes the leftovers of
//!   every app the environment's list names whose App is not there, one app
//!   at a time, and then the record.
//!
//! Every step is idempotent and the record goes last, so a sweep cut short
//! (its deadline, a crash, a fault) leaves a state the next one finishes.
//! Nothing is removed on the cluster's word alone: only an environment the
//! API was asked to delete is ever cleaned up after, so a kubeconfig that
//! names the wrong cluster cannot make the sweep take histories away.

use std::collections::HashSet;
use std::time::Duration;

use kube::ResourceExt;
use serde::Serialize;

use crate::ApiError;
use crate::apps::leftovers;
use berth_cluster::apps as cluster_apps;
use berth_cluster::apps::ANNOTATION_HISTORY;
use berth_cluster::crd::{App, Environment};
use berth_cluster::environments as cluster_environments;
use berth_cluster::ownership;
use berth_domain::clock;
use berth_store::Store;
use berth_store::app_entries;
use berth_store::purges::{self as store_purges, PurgeRecord};

/// Records that `environment`, holding `apps`, is to be deleted; written
/// before its purge is scheduled (again at every deletion request: a
/// repeated one, or one after a restore, renews it). The apps' entries are
/// put again with it, so that an app whose entry is missing (last written
/// before entries existed) is cleaned up after too.
pub async fn record(
    store: &Store,
    environment: &Environment,
    apps: &[App],
) -> Result<(), ApiError> {
    let record = PurgeRecord::new(
        environment.spec.org.clone(),
        environment.spec.project.clone(),
        environment.spec.name.clone(),
        environment.name_any(),
        environment.uid().unwrap_or_default(),
        clock::unix_millis(),
    );
    let entries: Vec<_> = apps.iter().filter_map(leftovers::entry_of).collect();
    Ok(store_purges::record(store, &record, &entries).await?)
}

/// How a sweep runs.
#[derive(Debug, Clone, Copy)]
pub struct Sweep {
    /// How young a deletion request or an app's write may be and still be
    /// in the making (`Config::write_in_flight`): younger ones wait.
    pub in_flight: Duration,
    /// When to stop starting work (a Lambda's time runs out): what is left
    /// waits for the next sweep.
    pub deadline: tokio::time::Instant,
}

/// What a sweep did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Swept {
    /// Purged environments whose leftovers are now all gone.
    pub environments: usize,
    /// Apps whose leftovers were removed.
    pub apps: usize,
    /// Records of deletions that did not happen (restored, or never
    /// scheduled), dropped.
    pub restored: usize,
    /// Records still waiting: the environment is still there, or something
    /// of it is too young to tell.
    pub waiting: usize,
    /// Records whose turn failed (in the log); the next sweep tries again.
    pub failed: usize,
    /// Whether the sweep got through every record before its deadline.
    pub finished: bool,
}

/// Sweeps every recorded deletion, oldest first (see the module docs).
pub async fn sweep(store: &Store, client: &kube::Client, how: Sweep) -> Result<Swept, ApiError> {
    let mut records = store_purges::all(store).await?;
    records.sort_by_key(|record| record.at);
    let mut swept = Swept::default();
    for record in &records {
        if tokio::time::Instant::now() >= how.deadline {
            tracing::info!(?swept, "the sweep's time is up; the next one goes on");
            return Ok(swept);
        }
        match sweep_one(store, client, how, record, &mut swept).await {
            Ok(Turn::Done) => {}
            Ok(Turn::OutOfTime) => return Ok(swept),
            Err(error) => {
                swept.failed += 1;
                tracing::warn!(
                    environment = %record.namespace,
                    error = %error.cause(),
                    "cleaning up after a purged environment failed; the next sweep goes on"
                );
            }
        }
    }
    swept.finished = true;
    tracing::info!(?swept, "swept");
    Ok(swept)
}

enum Turn {
    Done,
    OutOfTime,
}

fn young(at: i64, in_flight: Duration) -> bool {
    let age = clock::unix_millis().saturating_sub(at);
    u128::try_from(age).map_or(true, |age| age < in_flight.as_millis())
}

async fn sweep_one(
    store: &Store,
    client: &kube::Client,
    how: Sweep,
    record: &PurgeRecord,
    swept: &mut Swept,
) -> Result<Turn, ApiError> {
    // Its purge may not be scheduled yet: the request may still be running.
    if young(record.at, how.in_flight) {
        swept.waiting += 1;
        return Ok(Turn::Done);
    }
    let (environment, namespace) = tokio::join!(
        cluster_environments::by_name(client, &record.namespace),
        cluster_environments::namespace(client, &record.namespace)
    );
    match environment? {
        Some(found) if found.uid().as_deref() == Some(record.uid.as_str()) => {
            if found.is_deleting() {
                swept.waiting += 1;
            } else {
                store_purges::forget(store, record).await?;
                swept.restored += 1;
            }
            return Ok(Turn::Done);
        }
        // Gone, or the name is another environment's now.
        _ => {}
    }
    let namespace = namespace?;
    // The purged environment's namespace still going away: its Apps too.
    if namespace
        .as_ref()
        .is_some_and(|namespace| ownership::is_controlled_by(&namespace.metadata, &record.uid))
    {
        swept.waiting += 1;
        return Ok(Turn::Done);
    }
    // A namespace of that name now is a newer environment's: its Apps are
    // alive, and their entries stay.
    let alive: HashSet<String> = match namespace {
        Some(_) => cluster_apps::in_namespace(client, &record.namespace)
            .await?
            .iter()
            .filter_map(|app| app.annotations().get(ANNOTATION_HISTORY).cloned())
            .collect(),
        None => HashSet::new(),
    };
    let mut left = false;
    for entry in app_entries::in_environment(store, &record.namespace).await? {
        if alive.contains(&entry.history) {
            continue;
        }
        // A newer environment's app whose App may be about to be created.
        if young(entry.at, how.in_flight) {
            left = true;
            continue;
        }
        if tokio::time::Instant::now() >= how.deadline {
            tracing::info!(?swept, "the sweep's time is up; the next one goes on");
            return Ok(Turn::OutOfTime);
        }
        leftovers::remove(store, &entry.org, &record.namespace, &entry.history).await?;
        swept.apps += 1;
        tracing::info!(
            environment = %record.namespace,
            app = %entry.app,
            history = %entry.history,
            "removed what a purged environment's app left"
        );
    }
    if left {
        swept.waiting += 1;
    } else {
        store_purges::forget(store, record).await?;
        swept.environments += 1;
    }
    Ok(Turn::Done)
}
