//! Opt-in simulation of what runs beside a real API server: kube-controller-manager's
//! Deployment, ReplicaSet and Job controllers (with an unschedulable "scheduler"), and for
//! local dev runs a kubelet that "runs" pods.
//!
//! It is one task that, after every change to the store, syncs under the state lock what the
//! change touched: the changed object and its controllers up the chain (a pod's ReplicaSet or
//! Job, a ReplicaSet's Deployment), as each sync reads only an object and what it controls.
//! On a short tick it syncs only the objects with a time-based step due (a progress deadline,
//! a Job's deadline or back-off, the kubelet's delays, a write to retry). So a write costs what
//! it touches, not the size of the cluster. When the history no longer holds every change
//! since the last pass (a compaction, a restored state file), it syncs everything once.
//!
//! Its writes go through the verbs like any client's, so every write path (apply, patch,
//! replace, delete) is covered, and the effects are asynchronous but quick, as on a real
//! cluster.

mod conditions;
mod deployments;
mod jobs;
mod kubelet;
pub(crate) use kubelet::NODE_NAME;
mod objects;
mod replicasets;
mod scheduler;
mod template_hash;
mod writes;

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use jiff::Timestamp;
use serde_json::Value;

use crate::server::App;
use crate::store::{Event, ObjKey};
use crate::verbs::State;

/// What to simulate.
#[derive(Debug, Clone, Copy)]
pub struct Simulation {
    pub controllers: bool,
    pub kubelet: bool,
}

/// How often the simulation looks at the objects whose time-based step is due: progress
/// deadlines and the kubelet's one-second steps are measured against it.
const TICK: Duration = Duration::from_millis(200);

/// The kinds the simulation syncs, in the order a pass syncs them (owners first, as
/// kube-controller-manager's Deployment controller acts before its ReplicaSet controller sees
/// the result).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Kind {
    Deployment,
    ReplicaSet,
    Job,
    Pod,
}

impl Kind {
    fn of(key: &ObjKey) -> Option<Self> {
        match (key.group.as_str(), key.resource.as_str()) {
            ("apps", "deployments") => Some(Kind::Deployment),
            ("apps", "replicasets") => Some(Kind::ReplicaSet),
            ("batch", "jobs") => Some(Kind::Job),
            ("", "pods") => Some(Kind::Pod),
            _ => None,
        }
    }
}

type Item = (Kind, ObjKey);

/// The simulated controller of `object` (by its owner reference marked `controller`), if it is
/// one the simulation syncs.
fn controller_of(namespace: &str, object: &Value) -> Option<Item> {
    let owner = crate::meta::metadata(object)?
        .get("ownerReferences")?
        .as_array()?
        .iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))?;
    let group = owner
        .get("apiVersion")
        .and_then(Value::as_str)?
        .split_once('/')
        .map_or("", |(group, _)| group);
    let resource = match owner.get("kind").and_then(Value::as_str)? {
        "Deployment" => "deployments",
        "ReplicaSet" => "replicasets",
        "Job" => "jobs",
        _ => return None,
    };
    let name = owner.get("name").and_then(Value::as_str)?;
    let key = ObjKey::new(group, resource, namespace, name);
    Some((Kind::of(&key)?, key))
}

/// What the changes touched: each changed object and its controllers up the chain (before
/// and after the change, so a dependent that left its controller is counted by it too).
fn touched(state: &State, events: &[Arc<Event>]) -> BTreeSet<Item> {
    // Pod, ReplicaSet, Deployment: no chain the simulation knows is longer.
    const CHAIN: usize = 2;
    let mut work = BTreeSet::new();
    for event in events {
        let Some(kind) = Kind::of(&event.key) else {
            continue;
        };
        work.insert((kind, event.key.clone()));
        let states = [Some(&event.object), event.previous.as_ref()];
        for object in states.into_iter().flatten() {
            let mut owner = controller_of(&event.key.namespace, object);
            for _ in 0..CHAIN {
                let Some((kind, key)) = owner else { break };
                owner = state
                    .store
                    .get(&key)
                    .and_then(|o| controller_of(&key.namespace, o));
                work.insert((kind, key));
            }
        }
    }
    work
}

/// Every object the simulation syncs.
fn everything(state: &State) -> BTreeSet<Item> {
    [
        ("apps", "deployments"),
        ("apps", "replicasets"),
        ("batch", "jobs"),
        ("", "pods"),
    ]
    .into_iter()
    .flat_map(|(group, resource)| state.store.list(group, resource, None))
    .filter_map(|(key, _)| Some((Kind::of(key)?, key.clone())))
    .collect()
}

/// When each object with a time-based step pending is due to be synced again.
#[derive(Default)]
struct Timers {
    due: HashMap<Item, Instant>,
    queue: BTreeSet<(Instant, Item)>,
}

impl Timers {
    fn set(&mut self, item: Item, at: Option<Instant>) {
        if let Some(old) = self.due.remove(&item) {
            self.queue.remove(&(old, item.clone()));
        }
        if let Some(at) = at {
            self.queue.insert((at, item.clone()));
            self.due.insert(item, at);
        }
    }

    /// The objects due by `now`, taken out of the queue (a sync sets them again if need be).
    fn take_due(&mut self, now: Instant) -> Vec<Item> {
        let mut due = Vec::new();
        while let Some((at, _)) = self.queue.first()
            && *at <= now
        {
            if let Some((_, item)) = self.queue.pop_first() {
                self.due.remove(&item);
                due.push(item);
            }
        }
        due
    }
}

/// The instant a step due at wall-clock second `second` can be taken, seen from `now` (the
/// current second, truncated): never before the second has begun.
fn at_second(now: Timestamp, second: i64) -> Instant {
    let wait = u64::try_from(second - now.as_second()).unwrap_or(0);
    Instant::now() + Duration::from_secs(wait)
}

/// The next tick: a step to retry once the store had a moment to change.
fn next_tick() -> Instant {
    Instant::now() + TICK
}

pub async fn run(app: App, sim: Simulation) {
    let mut changes = app.state().store.subscribe();
    let mut kubelet = kubelet::Kubelet::default();
    let mut timers = Timers::default();
    // The version up to which changes were synced; none before the first pass.
    let mut synced: Option<u64> = None;
    loop {
        // Seconds, as Kubernetes writes timestamps.
        let now =
            Timestamp::from_second(Timestamp::now().as_second()).unwrap_or(Timestamp::UNIX_EPOCH);
        let stamp = now.to_string();
        {
            let mut state = app.state();
            let mut work = match synced.map(|rv| state.store.events_after(rv)) {
                Some(Ok(events)) => touched(&state, &events),
                _ => everything(&state),
            };
            synced = Some(state.store.current_rv());
            work.extend(timers.take_due(Instant::now()));
            if sim.kubelet {
                kubelet::ensure_node(&mut state, &stamp);
            }
            for (kind, key) in work {
                let again = match kind {
                    Kind::Deployment if sim.controllers => deployments::sync(&mut state, &key, now),
                    Kind::ReplicaSet if sim.controllers => replicasets::sync(&mut state, &key),
                    Kind::Job if sim.controllers => jobs::sync(&mut state, &key, now),
                    Kind::Pod if sim.kubelet => kubelet.sync(&mut state, &app.logs, &key, &stamp),
                    Kind::Pod if sim.controllers => {
                        scheduler::mark_unschedulable(&mut state, &key, &stamp);
                        None
                    }
                    _ => None,
                };
                timers.set((kind, key), again);
            }
        }
        tokio::select! {
            changed = changes.changed() => if changed.is_err() { return },
            _ = tokio::time::sleep(TICK) => {}
        }
    }
}
