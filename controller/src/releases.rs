//! Deploys that cannot take an app down: the release phase, and the
//! automatic rollback of a failed rollout.
//!
//! The App's status remembers what the controller needs for both without
//! the API: the last configuration that became available, the revision
//! whose release command succeeded, and what became of each recent revision
//! (`AppStatus::revisions`, which `listReleases` shows).
//!
//! - A revision that changes what runs (`AppConfig::runs_like`) and has a
//!   release command first runs it as a Job (`render::render::release_job`); the
//!   workloads keep the last available configuration meanwhile (`Releasing`)
//!   and, should it fail, afterwards (`ReleaseFailed`; the revision is
//!   `failed` and never run again: the next change starts afresh).
//! - A revision whose rollout fails is rolled back: the controller writes
//!   the next revision, the last available configuration, with reason
//!   `rollback`, no actor, a note saying why, and `automaticRollbackOf`. The
//!   App resource is the commit point of the release history, so the API's
//!   next change copies that revision into it like any other. A revision
//!   that is itself an automatic rollback is never rolled back: no loop.
//!
//! Domains always stay the spec's when an older configuration runs: their
//! claims (`apps::hosts`) follow the revisions the API commits.
//!
//! A round of the App's reconcile asks two things of this module:
//! [`plan_release`] before anything is rendered (what the workloads run,
//! running the release command when one is due), and [`record_rollout`]
//! once they are applied (what became of the spec's revision, rolling it
//! back when its rollout failed).

use k8s_openapi::api::batch::v1::Job;
use kube::ResourceExt;
use kube::api::{Api, PostParams};

use berth_cluster::crd::{
    App, AppStatus, OUTCOME_FAILED, OUTCOME_PENDING, OUTCOME_RELEASED, OUTCOME_ROLLED_BACK,
    ReleaseMark, ReleaseReason, object_names,
};
use berth_cluster::ownership;
use berth_domain::app::AppConfig;

use berth_cluster::{is_conflict, is_not_found};

use crate::context::named;
use crate::error::Error;
use crate::events::bounded;
use crate::render::{CheckedApp, RenderSettings, release_job};

pub const REASON_RELEASING: &str = "Releasing";
pub const REASON_RELEASE_FAILED: &str = "ReleaseFailed";

/// This round's release plan: what the workloads run, and what the App's
/// status remembers as the round leaves it.
pub struct ReleasePlan {
    pub runs: Runs,
    pub memory: AppStatus,
}

/// What the workloads run this round.
pub enum Runs {
    /// The spec's revision.
    Spec,
    /// Not the spec's revision, for the reason `Held` says: the last
    /// configuration that became available runs meanwhile (see
    /// [`previous`]); None before any did, and then nothing runs.
    Held(Held, Option<Box<Previous>>),
}

/// Why the spec's revision does not run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Held {
    /// Its release command is still to succeed.
    Releasing(String),
    /// Its release command failed: the revision never runs.
    Failed(String),
}

impl Held {
    /// What the App's status says meanwhile.
    pub fn message(&self) -> &str {
        match self {
            Self::Releasing(message) | Self::Failed(message) => message,
        }
    }
}

/// Plans the spec's revision: remembers what an automatic rollback rolled
/// back, runs its release command when one is due (see [`plan`]), and says
/// what the workloads run.
pub async fn plan_release(
    app: &App,
    client: &kube::Client,
    settings: &RenderSettings,
) -> Result<ReleasePlan, Error> {
    let mut memory = remembered(app);
    remember_rollback(app, &mut memory);
    let held = match plan(app, &memory) {
        Plan::Apply => None,
        Plan::Failed(message) => Some(Held::Failed(message)),
        Plan::Release => release(app, client, settings, &mut memory).await?,
    };
    let runs = match held {
        None => Runs::Spec,
        Some(held) => Runs::Held(held, previous(app, &memory).map(Box::new)),
    };
    Ok(ReleasePlan { runs, memory })
}

/// Runs the release command of the spec's revision (see [`run`]) and
/// remembers how it ended: what still holds the revision back, if anything.
async fn release(
    app: &App,
    client: &kube::Client,
    settings: &RenderSettings,
    memory: &mut AppStatus,
) -> Result<Option<Held>, Error> {
    let revision = app.spec.release.revision;
    Ok(match run(app, client, settings).await? {
        ReleaseJob::Succeeded => {
            memory.released_command_of = Some(revision);
            None
        }
        ReleaseJob::Running(message) => Some(Held::Releasing(message)),
        ReleaseJob::Failed(why) => {
            let message = release_failed(app, &why, memory);
            tracing::warn!(app = %named(app), revision, why = %why, "release command failed");
            memory.record(revision, OUTCOME_FAILED, Some(message.clone()));
            Some(Held::Failed(message))
        }
    })
}

/// What became of the spec's revision once its workloads were applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recorded {
    /// Its outcome, in the status (see [`record_applied`]).
    Outcome,
    /// Its rollout failed and it was rolled back: the next revision is
    /// written, and the status's message is its note.
    RolledBack,
}

/// Records in `status` what became of the spec's revision, its workloads
/// applied; a rollout that `failed` (why) is rolled back instead when it
/// can be (see [`rollback`]).
pub async fn record_rollout(
    app: &App,
    client: &kube::Client,
    status: &mut AppStatus,
    failed: Option<&str>,
) -> Result<Recorded, Error> {
    if let Some(failure) = failed
        && let Some(next) = rollback(app, status, failure)
        && commit_rollback(client, &next).await?
    {
        status.message = next.spec.release.note.clone();
        remember_rollback(&next, status);
        return Ok(Recorded::RolledBack);
    }
    record_applied(app, status, failed);
    if status.ready && status.message.is_none() {
        status.message = rollback_note(app);
    }
    Ok(Recorded::Outcome)
}

/// What the App's status remembers across reconciles (see the module's
/// doc), without what it reports.
pub fn remembered(app: &App) -> AppStatus {
    let status = app.status.clone().unwrap_or_default();
    AppStatus {
        last_available: status.last_available,
        released_command_of: status.released_command_of,
        revisions: status.revisions,
        running_revision: status.running_revision,
        certificates: status.certificates,
        ..AppStatus::default()
    }
}

/// A reported status that keeps what `memory` remembers.
pub trait Remembering {
    fn remembering(self, memory: AppStatus) -> AppStatus;
}

impl Remembering for AppStatus {
    fn remembering(self, memory: AppStatus) -> AppStatus {
        AppStatus {
            last_available: memory.last_available,
            released_command_of: memory.released_command_of,
            revisions: memory.revisions,
            running_revision: memory.running_revision,
            certificates: memory.certificates,
            ..self
        }
    }
}

/// What the spec's revision needs before its workloads may change.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Plan {
    /// Its workloads may change: no release command to run, or it succeeded.
    Apply,
    /// Its release command has to run (or is running).
    Release,
    /// Its release command failed: it never runs.
    Failed(String),
}

/// Whether the spec's revision needs its release command run first
/// (`App::awaits_release`, with the status as this round has it).
fn plan(app: &App, status: &AppStatus) -> Plan {
    let mut seen = app.clone();
    seen.status = Some(status.clone());
    if !seen.awaits_release() {
        return Plan::Apply;
    }
    match status.outcome(app.spec.release.revision) {
        Some(outcome) if outcome.status == OUTCOME_FAILED => {
            Plan::Failed(outcome.message.clone().unwrap_or_default())
        }
        _ => Plan::Release,
    }
}

/// The App as it runs while its spec's revision waits or failed, and the
/// revision that is.
pub struct Previous {
    pub app: App,
    pub revision: i64,
}

/// The App as it runs while its spec's revision waits or failed: the last
/// configuration that became available, with the spec's domains and grown
/// volumes. None before any did (nothing runs yet).
fn previous(app: &App, status: &AppStatus) -> Option<Previous> {
    let available = status.last_available.as_ref()?;
    let mut previous = app.clone();
    previous.spec.config = restored(&available.config, &app.spec.config);
    Some(Previous {
        app: previous,
        revision: available.revision,
    })
}

/// `available` run again over `current`: the current domains (claimed for
/// the current revision), volumes never shrinking.
fn restored(available: &AppConfig, current: &AppConfig) -> AppConfig {
    let mut config = available.clone().with_grown_volumes(current);
    config.domains.clone_from(&current.domains);
    config
}

/// Where the release Job of the spec's revision stands.
#[derive(Debug, Clone, PartialEq, Eq)]
enum ReleaseJob {
    Running(String),
    Succeeded,
    Failed(String),
}

/// Creates the release Job of the spec's revision if it is not there, and
/// says where it stands. Only a Job this App controls is ever read as its
/// release; another of that name is left alone and waited out.
async fn run(
    app: &App,
    client: &kube::Client,
    settings: &RenderSettings,
) -> Result<ReleaseJob, Error> {
    let revision = app.spec.release.revision;
    let name = object_names::release_job(&app.name_any(), revision);
    let jobs: Api<Job> = Api::namespaced(client.clone(), &app.namespace().unwrap_or_default());
    let running = |what: &str| {
        ReleaseJob::Running(format!(
            "The release command of revision {revision} {what} (Job {name}); the workloads change once it succeeds."
        ))
    };
    let Some(job) = jobs.get_opt(&name).await? else {
        let job = match CheckedApp::of(app).map(|checked| release_job(&checked, settings)) {
            Ok(Some(job)) => job,
            Ok(None) => return Ok(ReleaseJob::Succeeded),
            Err(error) => {
                return Ok(ReleaseJob::Failed(format!(
                    "its Job cannot be made: the App's {error}"
                )));
            }
        };
        match jobs.create(&PostParams::default(), &job).await {
            Ok(_) => tracing::info!(app = %app.name_any(), job = %name, "release command started"),
            // Made meanwhile: read at the next round.
            Err(error) if is_conflict(&error) => {}
            Err(error) => return Err(error.into()),
        }
        return Ok(running("is starting"));
    };
    let uid = app.uid().unwrap_or_default();
    if !ownership::is_controlled_by(&job.metadata, &uid) {
        return Ok(ReleaseJob::Running(format!(
            "Job {name} exists and is not this app's release; Berth leaves it untouched and waits for it to go."
        )));
    }
    Ok(job_state(&job, settings).unwrap_or_else(|| running("is running")))
}

/// A finished Job's outcome; None while it runs.
fn job_state(job: &Job, settings: &RenderSettings) -> Option<ReleaseJob> {
    let conditions = job.status.as_ref()?.conditions.as_ref()?;
    let holds = |kind: &str| {
        conditions
            .iter()
            .find(|condition| condition.type_ == kind && condition.status == "True")
    };
    if holds("Complete").is_some() {
        return Some(ReleaseJob::Succeeded);
    }
    let failed = holds("Failed")?;
    let why = match failed.reason.as_deref() {
        Some("DeadlineExceeded") => format!(
            "it ran past its deadline of {} s",
            settings.release_deadline_seconds
        ),
        Some("BackoffLimitExceeded") => "it failed, and failed again when retried".to_owned(),
        Some(reason) => format!("its Job failed ({reason})"),
        None => "its Job failed".to_owned(),
    };
    Some(ReleaseJob::Failed(why))
}

/// The message of a revision whose release command failed.
fn release_failed(app: &App, why: &str, status: &AppStatus) -> String {
    let revision = app.spec.release.revision;
    let keeps = match &status.last_available {
        Some(available) => format!("revision {} keeps running", available.revision),
        None => "nothing runs yet".to_owned(),
    };
    bounded(format!(
        "The release command of revision {revision} failed: {why}; {keeps}. Its output: the app's logs with release={revision}."
    ))
}

/// What a revision that is itself an automatic rollback says while it
/// runs: the note the controller wrote.
fn rollback_note(app: &App) -> Option<String> {
    app.spec
        .release
        .automatic_rollback_of
        .and(app.spec.release.note.clone())
}

/// Outcomes the spec alone says: the revision an automatic rollback rolled
/// back (written before its outcome could be) is `rolled_back`.
fn remember_rollback(app: &App, status: &mut AppStatus) {
    if let Some(rolled_back) = app.spec.release.automatic_rollback_of
        && status
            .outcome(rolled_back)
            .is_none_or(|outcome| outcome.status != OUTCOME_ROLLED_BACK)
    {
        status.record(
            rolled_back,
            OUTCOME_ROLLED_BACK,
            app.spec.release.note.clone(),
        );
    }
}

/// Records where the spec's revision stands once its configuration is
/// applied: `released` (and the last available configuration) when ready,
/// `failed` when its rollout failed, `pending` until then.
fn record_applied(app: &App, status: &mut AppStatus, failed: Option<&str>) {
    let revision = app.spec.release.revision;
    if let Some(message) = failed {
        status.record(revision, OUTCOME_FAILED, Some(bounded(message.to_owned())));
    } else if status.ready {
        status.record(revision, OUTCOME_RELEASED, None);
        status.last_available = Some(berth_cluster::crd::AvailableConfig {
            revision,
            config: app.spec.config.clone(),
        });
    } else if status.outcome(revision).is_none() {
        status.record(revision, OUTCOME_PENDING, None);
    }
}

/// The App rolled back from its failed revision to the last configuration
/// that became available, as the next revision; None when there is nothing
/// to roll back to, rolling back is off, or the revision is itself an
/// automatic rollback (never a loop).
fn rollback(app: &App, status: &AppStatus, why: &str) -> Option<App> {
    let spec = &app.spec;
    if !spec.config.auto_rollback || spec.release.automatic_rollback_of.is_some() {
        return None;
    }
    let available = status.last_available.as_ref()?;
    let config = restored(&available.config, &spec.config);
    if available.revision == spec.release.revision || config == spec.config {
        return None;
    }
    let revision = spec.release.revision;
    let note = bounded(format!(
        "automatic: revision {revision} did not become available ({}); rolled back to revision {}",
        why.trim_end_matches('.'),
        available.revision
    ));
    let release = ReleaseMark {
        automatic_rollback_of: Some(revision),
        ..ReleaseMark::now(
            app.next_revision(),
            ReleaseReason::Rollback,
            Some(note),
            None,
        )
    };
    Some(app.superseded(config, release))
}

/// Commits an automatic rollback: replaces the App read (its
/// `resourceVersion`), so a change made meanwhile wins and is not undone.
/// Answers whether it was written.
async fn commit_rollback(client: &kube::Client, next: &App) -> Result<bool, Error> {
    let api: Api<App> = Api::namespaced(client.clone(), &next.namespace().unwrap_or_default());
    match api
        .replace(&next.name_any(), &PostParams::default(), next)
        .await
    {
        Ok(_) => {
            tracing::info!(
                app = %next.name_any(),
                revision = next.spec.release.revision,
                "rolled back automatically"
            );
            Ok(true)
        }
        Err(error) if is_conflict(&error) || is_not_found(&error) => Ok(false),
        Err(error) => Err(error.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_cluster::crd::AvailableConfig;
    use berth_domain::app::AppProcess;
    use berth_domain::stored::Stored;

    fn app(revision: i64, image: &str, release_command: &[&str]) -> App {
        let mut config = AppConfig::test(vec![AppProcess::test("web", Some(8080))]);
        config.image = Some(Stored::read(image));
        config.release_command = release_command.iter().map(|s| (*s).to_owned()).collect();
        config.domains = vec![Stored::read(&format!("r{revision}.example.com"))];
        let mut app = App::test("shop", config).stored();
        app.spec.release.revision = revision;
        app
    }

    fn available(app: &App) -> AppStatus {
        AppStatus {
            last_available: Some(AvailableConfig {
                revision: app.spec.release.revision,
                config: app.spec.config.clone(),
            }),
            ..AppStatus::default()
        }
    }

    #[test]
    fn a_release_runs_when_what_runs_changes_and_never_again_once_failed() {
        let first = app(1, "shop:1", &[]);
        let status = available(&first);
        // No command, or nothing that runs changed: straight on.
        assert_eq!(plan(&app(2, "shop:2", &[]), &status), Plan::Apply);
        let mut resized = app(2, "shop:1", &["./migrate"]);
        let mut with_command = status.clone();
        with_command.last_available.as_mut().unwrap().config = resized.spec.config.clone();
        resized.spec.config.processes[0].min_replicas = 3;
        assert_eq!(plan(&resized, &with_command), Plan::Apply);
        // A new image with a command: release first, on a first deploy too.
        let next = app(2, "shop:2", &["./migrate"]);
        assert_eq!(plan(&next, &status), Plan::Release);
        assert_eq!(plan(&next, &AppStatus::default()), Plan::Release);
        let mut passed = status.clone();
        passed.released_command_of = Some(2);
        assert_eq!(plan(&next, &passed), Plan::Apply);
        let mut failed = status.clone();
        failed.record(2, OUTCOME_FAILED, Some("it failed".to_owned()));
        assert_eq!(plan(&next, &failed), Plan::Failed("it failed".to_owned()));
        // The API's view agrees: revision 2 waits, or failed, until its
        // command succeeded.
        let mut seen = next.clone();
        seen.status = Some(failed);
        assert!(seen.awaits_release());
        seen.status = Some(passed);
        assert!(!seen.awaits_release());
        // What runs meanwhile: revision 1's config, revision 2's domains.
        let previous = previous(&next, &status).unwrap();
        assert_eq!(previous.revision, 1);
        assert_eq!(
            previous.app.spec.config.image.as_ref().map(Stored::text),
            Some("shop:1")
        );
        assert_eq!(
            previous.app.spec.config.domains,
            [Stored::read("r2.example.com")]
        );
        assert!(super::previous(&next, &AppStatus::default()).is_none());
    }

    #[test]
    fn a_failed_rollout_rolls_back_once_and_never_loops() {
        let first = app(1, "shop:1", &[]);
        let status = available(&first);
        let broken = app(2, "shop:2", &[]);
        let why = "Deployment shop-web made no progress within its deadline (600 s): its pods did not become ready.";
        let back = rollback(&broken, &status, why).expect("a rollback");
        assert_eq!(back.spec.release.revision, 3);
        assert_eq!(back.spec.release.reason, "rollback");
        assert_eq!(back.spec.release.actor, None);
        assert_eq!(back.spec.release.automatic_rollback_of, Some(2));
        assert_eq!(
            back.spec.release.note.as_deref(),
            Some(
                "automatic: revision 2 did not become available (Deployment shop-web made no progress within its deadline (600 s): its pods did not become ready); rolled back to revision 1"
            )
        );
        assert_eq!(
            back.spec.config.image.as_ref().map(Stored::text),
            Some("shop:1")
        );
        assert_eq!(back.spec.config.domains, [Stored::read("r2.example.com")]);
        // Revision 3 failing in turn is not rolled back: no loop.
        assert!(rollback(&back, &status, why).is_none());
        // Nothing to roll back to, the available revision itself, or off.
        assert!(rollback(&broken, &AppStatus::default(), why).is_none());
        assert!(rollback(&first, &status, why).is_none());
        let mut off = broken.clone();
        off.spec.config.auto_rollback = false;
        assert!(rollback(&off, &status, why).is_none());

        // The rolled-back revision's outcome follows from the spec alone.
        let mut after = status.clone();
        remember_rollback(&back, &mut after);
        let outcome = after.outcome(2).unwrap();
        assert_eq!(outcome.status, OUTCOME_ROLLED_BACK);
        assert_eq!(outcome.message, back.spec.release.note);
        assert_eq!(rollback_note(&back), back.spec.release.note);
        assert_eq!(rollback_note(&broken), None);
    }

    #[test]
    fn outcomes_follow_the_rollout_and_stay_bounded() {
        let app = app(2, "shop:2", &[]);
        let mut status = AppStatus::default();
        record_applied(&app, &mut status, None);
        assert_eq!(status.outcome(2).unwrap().status, OUTCOME_PENDING);
        assert!(status.last_available.is_none());
        record_applied(&app, &mut status, Some("stuck"));
        assert_eq!(status.outcome(2).unwrap().status, OUTCOME_FAILED);
        status.ready = true;
        record_applied(&app, &mut status, None);
        assert_eq!(status.outcome(2).unwrap().status, OUTCOME_RELEASED);
        assert_eq!(status.last_available.as_ref().unwrap().revision, 2);
        for revision in 3..100 {
            status.record(revision, OUTCOME_RELEASED, None);
        }
        assert_eq!(status.revisions.len(), 50);
        assert_eq!(status.revisions[0].revision, 99);
        assert!(status.outcome(49).is_none());
        let mut fresh = AppStatus::default();
        record_applied(&app, &mut fresh, Some(&"x".repeat(5000)));
        assert!(fresh.outcome(2).unwrap().message.as_ref().unwrap().len() <= 1024);
    }
}
