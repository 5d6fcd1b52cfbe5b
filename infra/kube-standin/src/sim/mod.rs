//! Opt-in simulation of what runs beside a real API server: kube-controller-manager's
//! Deployment, ReplicaSet and Job controllers (with an unschedulable "scheduler"), and for
//! local dev runs a kubelet that "runs" pods.
//!
//! It is one task that, after every change to the store and on a short tick (for progress
//! deadlines and the kubelet's delays), reconciles every object under the state lock. Its
//! writes go through the verbs like any client's, so every write path (apply, patch, replace,
//! delete) is covered, and the effects are asynchronous but quick, as on a real cluster.

mod conditions;
mod deployments;
mod jobs;
mod kubelet;
mod objects;
mod replicasets;
mod scheduler;
mod template_hash;
mod writes;

use std::time::Duration;

use jiff::Timestamp;

use crate::server::App;

/// What to simulate.
#[derive(Debug, Clone, Copy)]
pub struct Simulation {
    pub controllers: bool,
    pub kubelet: bool,
}

/// How often the simulation looks again when nothing changes: progress deadlines and the
/// kubelet's one-second steps are measured against it.
const TICK: Duration = Duration::from_millis(200);

pub async fn run(app: App, sim: Simulation) {
    let mut changes = app.state().store.subscribe();
    let mut kubelet = kubelet::Kubelet::default();
    loop {
        // Seconds, as Kubernetes writes timestamps.
        let now =
            Timestamp::from_second(Timestamp::now().as_second()).unwrap_or(Timestamp::UNIX_EPOCH);
        let stamp = now.to_string();
        {
            let mut state = app.state();
            if sim.controllers {
                deployments::sync_all(&mut state, now);
                replicasets::sync_all(&mut state);
                jobs::sync_all(&mut state, &stamp);
                if !sim.kubelet {
                    scheduler::mark_unschedulable(&mut state, &stamp);
                }
            }
            if sim.kubelet {
                kubelet.sync(&mut state, &app.logs, &stamp);
            }
        }
        tokio::select! {
            changed = changes.changed() => if changed.is_err() { return },
            _ = tokio::time::sleep(TICK) => {}
        }
    }
}
