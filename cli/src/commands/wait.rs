//! `--wait`: polls the API until what was asked for is done, showing how it
//! goes, and fails with the API's reason when it cannot be.
//!
//! A revision is done when its release's `status` (the API's one rule,
//! docs/api-notes.md "Safe deploys") leaves `pending`: `released` is
//! success; `failed` (its release command or rollout failed),
//! `rolled_back` (its rollout failed and the controller rolled it back) and
//! `superseded` (a newer revision replaced it first) are failures.
//!
//! What a wait reports of the end comes from a read made after the end was
//! seen: a revision's wait reads the release history, then the app (so the
//! app shown is at least as new as the status that ended the wait); a
//! build's and a restart's wait decide and report from one read.

use std::time::{Duration, Instant};

use berth_records::apps::record::{AppDetail, ReleaseRecord};
use berth_records::builds::BuildRecord;
use berth_records::environments::EnvironmentRecord;

use super::Session;
use crate::api::Answer;
use crate::config::AppPath;
use crate::failure::{Failure, Result};
use crate::output::{Progress, or_dash};

/// How often a wait asks: each ask is two audited calls.
const POLL: Duration = Duration::from_secs(2);

/// When a wait gives up.
#[derive(Debug, Clone, Copy)]
pub struct Deadline {
    started: Instant,
    limit: Duration,
}

impl Deadline {
    pub fn after(seconds: u64) -> Self {
        Self {
            started: Instant::now(),
            limit: Duration::from_secs(seconds),
        }
    }

    fn check(&self, what: impl FnOnce() -> String) -> Result<()> {
        if self.started.elapsed() >= self.limit {
            return Err(Failure::GaveUp(format!(
                "gave up after {} s: {}",
                self.limit.as_secs(),
                what()
            )));
        }
        std::thread::sleep(POLL);
        Ok(())
    }
}

/// The app's state in a few words, as a wait shows it.
fn state(detail: &AppDetail) -> String {
    let app = &detail.app;
    let ready = detail.pods.iter().filter(|pod| pod.ready).count();
    let mut text = or_dash(app.reason.as_deref());
    if let Some(message) = app.message.as_deref().filter(|m| !m.is_empty()) {
        text.push_str(&format!(" ({message})"));
    }
    text.push_str(&format!(", {ready}/{} pods ready", detail.pods.len()));
    text
}

/// Waits until `revision` of the app is available; answers the app as last
/// read (the `app` of the API's `getApp` answer).
pub fn revision(
    session: &Session,
    app: &AppPath,
    revision: i64,
    deadline: Deadline,
) -> Result<Answer> {
    let mut progress = Progress::start();
    let answer = until_released(
        revision,
        || session.api.get(&app.path(&["releases"]))?.record(),
        || session.api.get(&app.path(&[])),
        |state| progress.show(state),
        |what| deadline.check(|| what),
    )?;
    progress.note(&format!("revision {revision} of {} is available", app.app));
    Ok(answer)
}

/// The polling of [`revision`], over its two reads: each round reads the
/// release history first and the app after it, so that when the history
/// shows the end, what is reported of the app was read after the end was
/// seen (never a state older than it). `show` shows each round's state;
/// `pause` waits before the next round, or gives up with its text.
fn until_released(
    revision: i64,
    mut releases: impl FnMut() -> Result<Vec<ReleaseRecord>>,
    mut read_app: impl FnMut() -> Result<Answer>,
    mut show: impl FnMut(String),
    mut pause: impl FnMut(String) -> Result<()>,
) -> Result<Answer> {
    loop {
        let releases = releases()?;
        let answer = read_app()?;
        let detail: AppDetail = answer.record()?;
        let state = state(&detail);
        show(format!("revision {revision}: {state}"));
        let reason = || or_dash(detail.app.reason.as_deref());
        let message = || detail.app.message.clone().unwrap_or_default();
        let Some(release) = releases.iter().find(|r| r.revision == revision) else {
            return Err(Failure::failed(format!(
                "revision {revision} is not in the history of {}",
                detail.app.name
            )));
        };
        match release.status.as_str() {
            "released" => return Ok(answer.part("app")),
            "failed" => {
                let output = if detail.app.reason.as_deref() == Some("ReleaseFailed") {
                    format!("; its output: berth logs --release {revision}")
                } else {
                    String::new()
                };
                return Err(Failure::failed(format!(
                    "revision {revision} failed: {}: {}{output}",
                    reason(),
                    message()
                )));
            }
            "rolled_back" => {
                // The controller's rollback revision, the first after it,
                // says why in its note.
                let note = releases
                    .iter()
                    .filter(|r| r.revision > revision && r.reason == "rollback")
                    .min_by_key(|r| r.revision)
                    .and_then(|r| r.note.clone())
                    .unwrap_or_else(message);
                return Err(Failure::failed(format!(
                    "revision {revision} failed: RolloutFailed, rolled back automatically: {note}"
                )));
            }
            "superseded" => {
                return Err(Failure::failed(format!(
                    "revision {revision} was replaced by revision {} before it became available",
                    detail.app.revision
                )));
            }
            _ => {}
        }
        pause(format!("revision {revision} is not available yet: {state}"))?;
    }
}

/// Waits for a build to end; answers the revision its image became.
pub fn build(
    session: &Session,
    app: &AppPath,
    build: &BuildRecord,
    deadline: Deadline,
) -> Result<i64> {
    let id = build.id.to_string();
    let mut progress = Progress::start();
    let mut last_status = String::new();
    loop {
        let build: BuildRecord = session.api.get(&app.path(&["builds", &id]))?.record()?;
        let message = build
            .message
            .as_deref()
            .map(|m| format!(": {m}"))
            .unwrap_or_default();
        if build.status != last_status {
            progress.note(&format!("build {id}: {}{message}", build.status));
            last_status = build.status.clone();
        }
        progress.show(format!("build {id}: {}{message}", build.status));
        match (build.status.as_str(), build.revision) {
            ("succeeded", Some(revision)) => return Ok(revision),
            ("failed" | "cancelled", _) => {
                return Err(Failure::failed(format!(
                    "build {id} {}{message}; its logs: berth builds logs {id}",
                    build.status
                )));
            }
            _ => {}
        }
        deadline.check(|| format!("build {id} is {}", build.status))?;
    }
}

/// Waits until a new environment is ready for apps (its namespace, quota
/// and isolation provisioned); answers it as last read.
pub fn environment(
    session: &Session,
    project: &str,
    name: &str,
    deadline: Deadline,
) -> Result<Answer> {
    let mut progress = Progress::start();
    loop {
        let answer = session
            .api
            .get(&["projects", project, "environments", name])?;
        let environment: EnvironmentRecord = answer.record()?;
        if environment.ready {
            progress.note(&format!("{project}/{name} is ready"));
            return Ok(answer);
        }
        let state = format!(
            "{}{}",
            or_dash(environment.phase.as_deref()).to_lowercase(),
            environment
                .message
                .map(|message| format!(" ({message})"))
                .unwrap_or_default()
        );
        progress.show(format!("provisioning {project}/{name}: {state}"));
        deadline.check(|| format!("{project}/{name} is not ready: {state}"))?;
    }
}

/// Waits until a deleted environment is gone (its namespace and all in it).
pub fn environment_gone(
    session: &Session,
    project: &str,
    name: &str,
    deadline: Deadline,
) -> Result<()> {
    let mut progress = Progress::start();
    loop {
        match session
            .api
            .get(&["projects", project, "environments", name])
        {
            Err(failure) if failure.status() == Some(404) => {
                progress.note(&format!("{project}/{name} is gone"));
                return Ok(());
            }
            Err(failure) => return Err(failure),
            Ok(_) => progress.show(format!("removing {project}/{name}")),
        }
        deadline.check(|| format!("{project}/{name} is not gone yet"))?;
    }
}

/// Waits until every pod there was before a restart has been replaced and
/// the app is available again.
pub fn restart(
    session: &Session,
    app: &AppPath,
    before: &AppDetail,
    deadline: Deadline,
) -> Result<Answer> {
    let old: Vec<&str> = before.pods.iter().map(|pod| pod.name.as_str()).collect();
    let mut progress = Progress::start();
    loop {
        let answer = session.api.get(&app.path(&[]))?;
        let detail: AppDetail = answer.record()?;
        let state = state(&detail);
        progress.show(format!("restarting: {state}"));
        let replaced = detail
            .pods
            .iter()
            .all(|pod| !old.contains(&pod.name.as_str()));
        let serving = detail.app.reason.as_deref() == Some("Available")
            && detail.pods.iter().all(|pod| pod.ready);
        if replaced && serving {
            progress.note(&format!("{} restarted", app.app));
            return Ok(answer.part("app"));
        }
        deadline.check(|| format!("the restart is not done: {state}"))?;
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use berth_records::apps::record::AppRecord;
    use serde_json::json;

    use super::*;

    fn release(revision: i64, status: &str) -> ReleaseRecord {
        serde_json::from_value(json!({
            "revision": revision, "image": "nginx:1.28", "reason": "update", "note": null,
            "actor": "ci@example.org", "created_at": 0, "current": true, "running": true,
            "status": status,
        }))
        .unwrap()
    }

    fn app(revision: i64, reason: &str, ready: bool) -> Answer {
        let app = json!({
            "name": "shop", "project": "p", "environment": "staging", "namespace": "p-staging",
            "image": "nginx:1.28", "git_repo": null, "git_ref": null, "build": null,
            "git_secret": null, "url": null, "ready": ready, "reason": reason, "message": null,
            "processes": [], "env": [], "domains": [], "volumes": [], "health_check_path": null,
            "fs_group": null, "release_command": [], "auto_rollback": true,
            "revision": revision, "running_revision": revision, "created_at": null,
        });
        Answer::new(json!({"app": app, "pods": []}).to_string().into_bytes())
    }

    /// The app and its history as a wait reads them, in a world that moves
    /// on at every read: revision 2 becomes released, and the app
    /// available, with the second read, whichever read that is. A wait
    /// that read the app, then the history, would see the end with the
    /// app's older state.
    #[test]
    fn the_end_is_reported_from_a_read_made_after_it_was_seen() {
        let reads = Cell::new(0);
        let done = || {
            let now = reads.get();
            reads.set(now + 1);
            now >= 1
        };
        let mut shown = Vec::new();
        let mut pauses = 0;
        let answer = until_released(
            2,
            || {
                Ok(vec![release(
                    2,
                    if done() { "released" } else { "pending" },
                )])
            },
            || {
                Ok(if done() {
                    app(2, "Available", true)
                } else {
                    app(2, "Progressing", false)
                })
            },
            |state| shown.push(state),
            |_| {
                pauses += 1;
                Ok(())
            },
        )
        .unwrap();
        let record: AppRecord = answer.record().unwrap();
        assert_eq!(record.reason.as_deref(), Some("Available"));
        assert_eq!((record.revision, pauses, reads.get()), (2, 1, 4));
        // `-o json` prints that same read's app.
        assert!(
            answer
                .pretty()
                .unwrap()
                .contains("\"reason\": \"Available\"")
        );
    }

    #[test]
    fn a_wait_that_cannot_end_gives_up_with_the_state_last_seen() {
        let failure = until_released(
            2,
            || Ok(vec![release(2, "pending")]),
            || Ok(app(2, "Progressing", false)),
            |_| {},
            |what| Err(Failure::failed(what)),
        )
        .unwrap_err();
        assert_eq!(
            failure.to_string(),
            "revision 2 is not available yet: Progressing, 0/0 pods ready"
        );
    }
}
