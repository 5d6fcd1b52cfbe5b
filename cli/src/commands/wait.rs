//! `--wait`: polls the API until what was asked for is done, showing how it
//! goes, and fails with the API's reason when it cannot be.
//!
//! A revision is done when its release's `status` (the API's one rule,
//! docs/api-notes.md "Safe deploys") leaves `pending`: `released` is
//! success; `failed` (its release command or rollout failed),
//! `rolled_back` (its rollout failed and the controller rolled it back) and
//! `superseded` (a newer revision replaced it first) are failures.

use std::time::{Duration, Instant};

use berth_records::apps::record::{AppDetail, ReleaseRecord};
use berth_records::builds::BuildRecord;

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
            return Err(Failure::failed(format!(
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
/// read (the API's `getApp` answer).
pub fn revision(
    session: &Session,
    app: &AppPath,
    revision: i64,
    deadline: Deadline,
) -> Result<Answer> {
    let mut progress = Progress::start();
    loop {
        let answer = session.api.get(&app.path(&[]))?;
        let detail: AppDetail = answer.record()?;
        let releases: Vec<ReleaseRecord> = session.api.get(&app.path(&["releases"]))?.record()?;
        let state = state(&detail);
        progress.show(format!("revision {revision}: {state}"));
        let reason = || or_dash(detail.app.reason.as_deref());
        let message = || detail.app.message.clone().unwrap_or_default();
        let Some(release) = releases.iter().find(|r| r.revision == revision) else {
            return Err(Failure::failed(format!(
                "revision {revision} is not in the history of {}",
                app.app
            )));
        };
        match release.status.as_str() {
            "released" => {
                progress.note(&format!("revision {revision} of {} is available", app.app));
                return Ok(Answer(answer.0["app"].clone()));
            }
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
        deadline.check(|| format!("revision {revision} is not available yet: {state}"))?;
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
            return Ok(Answer(answer.0["app"].clone()));
        }
        deadline.check(|| format!("the restart is not done: {state}"))?;
    }
}
