//! Report: the App's status and its Events after each round (applied,
//! blocked, failed, held or awaiting a build), and when to look again.

use std::fmt::Debug;

use k8s_openapi::api::apps::v1::Deployment;
use kube::ResourceExt;
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::runtime::controller::Action;
use serde_json::json;

use berth_cluster::crd::{
    App, AppStatus, BUILD_CANCELLED, BUILD_FAILED, BUILD_RUNNING, BUILD_SUCCEEDED,
    BUILDS_NAMESPACE, Build, LABEL_APP_UID,
};
use berth_cluster::is_not_found;

use super::apply::{Applied, Blocked, Failure, Outcome};
use super::{
    AVAILABLE, AWAITING_BUILD, NAME_TAKEN, PROGRESSING, REASON_AVAILABLE, REASON_AWAITING_BUILD,
    REASON_PROGRESSING, REASON_RELEASING, REASON_ROLLOUT_FAILED, REASON_SCHEDULED, REFUSED,
    RELEASE_FAILED, RELEASING, RESYNC, ROLLED_BACK, ROLLOUT_FAILED, SCHEDULED, Target,
    WAITING_FOR_EARLIER_APP, WHILE_AN_EARLIER_APP_GOES, WHILE_BLOCKED, WHILE_PROGRESSING,
    WHILE_RELEASING, WHILE_REPLACING_A_CLAIM,
};
use crate::context::{Context, named};
use crate::error::{Error, namespace_terminating};
use crate::events::Reason;
use crate::releases::{self, Held, Recorded, Remembering, remembered};

/// The spec's revision is held and nothing ran before it: nothing to keep
/// running; the status says why.
pub(super) async fn report_nothing_runs(
    app: &App,
    context: &Context,
    held: &Held,
    memory: AppStatus,
) -> Result<Action, Error> {
    let why = held_event(held);
    let status = AppStatus {
        ready: false,
        reason: Some(why.reason.to_owned()),
        message: Some(held.message().to_owned()),
        url: None,
        observed_generation: app.metadata.generation,
        ..memory
    };
    report(app, context, status, why).await?;
    Ok(Action::requeue(match held {
        Held::Releasing(_) => WHILE_RELEASING,
        Held::Failed(_) => RESYNC,
    }))
}

/// The Event of a revision held back.
pub(super) fn held_event(held: &Held) -> Reason {
    match held {
        Held::Releasing(_) => RELEASING,
        Held::Failed(_) => RELEASE_FAILED,
    }
}

/// Report: the App's status once the target is applied (see
/// [`apply_all`]), and when to look again.
pub(super) async fn report_status(
    app: &App,
    context: &Context,
    target: Target<'_>,
    memory: AppStatus,
    applied: Result<Outcome, Failure>,
) -> Result<Action, Error> {
    match applied {
        Ok(Outcome::Gone) => {
            tracing::info!(app = %named(app), "the App was deleted meanwhile; no claim made");
            Ok(Action::await_change())
        }
        Ok(Outcome::Blocked(blocked)) => {
            report_blocked(app, context, target.rendered.url, memory, blocked).await
        }
        Ok(Outcome::Applied(applied)) => {
            report_applied(app, context, &target, memory, applied).await
        }
        Err(failure) => report_failure(app, context, target.rendered.url, memory, failure).await,
    }
}

/// Rendered names are held by objects this App does not control: nothing
/// was applied.
pub(super) async fn report_blocked(
    app: &App,
    context: &Context,
    url: Option<String>,
    memory: AppStatus,
    blocked: Blocked,
) -> Result<Action, Error> {
    tracing::warn!(app = %named(app), message = %blocked.message, "a rendered name is taken; nothing applied");
    // No URL while someone else's objects hold the app's names: nothing of
    // it serves there.
    let (status, why) = if blocked.waiting {
        let status = AppStatus {
            reason: Some(REASON_PROGRESSING.to_owned()),
            ..failure_status(app, url, blocked.message)
        };
        (status, WAITING_FOR_EARLIER_APP)
    } else {
        (failure_status(app, None, blocked.message), NAME_TAKEN)
    };
    report(app, context, status.remembering(memory), why).await?;
    Ok(Action::requeue(if blocked.waiting {
        WHILE_AN_EARLIER_APP_GOES
    } else {
        WHILE_BLOCKED
    }))
}

/// The target's workloads are applied: the status follows their rollout,
/// says why while the spec's revision is held, and records what became of
/// it; a failed rollout is rolled back when it can be (see
/// [`releases::record_rollout`]).
pub(super) async fn report_applied(
    app: &App,
    context: &Context,
    target: &Target<'_>,
    memory: AppStatus,
    applied: Applied,
) -> Result<Action, Error> {
    let url = target.rendered.url.clone();
    let mut status =
        app_status(app, url, &applied.deployments, applied.waiting_for.clone()).remembering(memory);
    // Its workloads now carry the target's configuration.
    status.running_revision = Some(target.revision);
    let why = if let Some(held) = target.held {
        // The previous revision serves; the status says why.
        status.reason = Some(held_event(held).reason.to_owned());
        status.message = Some(held.message().to_owned());
        held_event(held)
    } else {
        let failed = (status.reason.as_deref() == Some(REASON_ROLLOUT_FAILED))
            .then(|| status.message.clone().unwrap_or_default());
        let recorded =
            releases::record_rollout(app, &context.client, &mut status, failed.as_deref()).await?;
        if recorded == Recorded::RolledBack {
            status.reason = Some(REASON_PROGRESSING.to_owned());
            report(app, context, status, ROLLED_BACK).await?;
            return Ok(Action::requeue(WHILE_PROGRESSING));
        }
        rollout_event(&status)
    };
    let progressing = matches!(
        status.reason.as_deref(),
        Some(REASON_PROGRESSING | REASON_RELEASING)
    );
    report(app, context, status, why).await?;
    Ok(Action::requeue(if applied.waiting_for.is_some() {
        WHILE_REPLACING_A_CLAIM
    } else if progressing {
        WHILE_PROGRESSING
    } else {
        RESYNC
    }))
}

/// The Event of a rollout's status.
pub(super) fn rollout_event(status: &AppStatus) -> Reason {
    match status.reason.as_deref() {
        Some(REASON_AVAILABLE) => AVAILABLE,
        Some(REASON_SCHEDULED) => SCHEDULED,
        Some(REASON_ROLLOUT_FAILED) => ROLLOUT_FAILED,
        _ => PROGRESSING,
    }
}

/// Applying failed: the raw error for operators; the status and the Event
/// get a sentence.
pub(super) async fn report_failure(
    app: &App,
    context: &Context,
    url: Option<String>,
    memory: AppStatus,
    failure: Failure,
) -> Result<Action, Error> {
    tracing::warn!(app = %named(app), object = %failure.object, error = %failure.error, "applying failed");
    // A refusal is the app's failure; a cluster that is briefly
    // unavailable is not, and is only retried. A namespace being
    // deleted refuses everything, Events too.
    if failure.is_refusal() && !namespace_terminating(&failure.error) {
        let message = failure.message();
        let status = failure_status(app, url, message.clone()).remembering(memory);
        // Best effort: the error is what gets retried.
        let _ = set_status(app, context, status).await;
        // Every refusal, not only the first: repeats are counted in one
        // Event (`crate::events`).
        context.events.publish(app, REFUSED, message).await;
    }
    Err(Error::Apply {
        object: failure.object,
        source: failure.error,
    })
}

/// An app built from source with no image yet: nothing runs (nothing is
/// rendered, so nothing is created), and its status says which build it
/// awaits, or why the latest failed.
pub(super) async fn awaiting_build(app: &App, context: &Context) -> Result<Action, Error> {
    let uid = app.uid().unwrap_or_default();
    let latest = Api::<Build>::namespaced(context.client.clone(), BUILDS_NAMESPACE)
        .list(&ListParams::default().labels(&format!("{LABEL_APP_UID}={uid}")))
        .await?
        .items
        .into_iter()
        .max_by_key(|build| build.spec.number);
    let message = awaiting_message(latest.as_ref());
    let status = AppStatus {
        ready: false,
        reason: Some(REASON_AWAITING_BUILD.to_owned()),
        message: Some(message),
        url: None,
        observed_generation: app.metadata.generation,
        ..remembered(app)
    };
    report(app, context, status, AWAITING_BUILD).await?;
    // Its builds' changes are watched; a build's end wakes it.
    Ok(Action::requeue(RESYNC))
}

/// What an app awaiting its first image says, from its latest build.
pub fn awaiting_message(latest: Option<&Build>) -> String {
    let Some(build) = latest else {
        return "The app awaits its first build: nothing runs until one succeeds.".to_owned();
    };
    let number = build.spec.number;
    let said = build
        .status
        .as_ref()
        .and_then(|status| status.message.as_deref())
        .map(|message| format!(" {message}"))
        .unwrap_or_default();
    match build.phase() {
        BUILD_FAILED => {
            format!("The app awaits its first successful build: build {number} failed.{said}")
        }
        BUILD_CANCELLED => {
            format!("The app awaits its first successful build: build {number} was cancelled.")
        }
        BUILD_RUNNING => format!("The app awaits its first build: build {number} is running."),
        BUILD_SUCCEEDED => {
            format!("Build {number} succeeded; the app's revision with its image is on its way.")
        }
        _ => format!("The app awaits its first build: build {number} is queued."),
    }
}

/// Where one Deployment's rollout stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Rollout {
    Done,
    Progressing(String),
    Failed(String),
}

/// Like `kubectl rollout status`: the spec observed, then the deadline, then
/// the replica counts.
pub(super) fn rollout(deployment: &Deployment) -> Rollout {
    let name = deployment.name_any();
    let status = deployment.status.clone().unwrap_or_default();
    let generation = deployment.metadata.generation.unwrap_or(0);
    if status.observed_generation.unwrap_or(0) < generation {
        return Rollout::Progressing(format!(
            "Deployment {name} is rolling out: its new spec is not yet picked up."
        ));
    }
    let spec = deployment.spec.clone().unwrap_or_default();
    let deadline_exceeded = status.conditions.iter().flatten().any(|condition| {
        condition.type_ == "Progressing"
            && condition.reason.as_deref() == Some("ProgressDeadlineExceeded")
    });
    if deadline_exceeded {
        let deadline = spec
            .progress_deadline_seconds
            .map(|seconds| format!(" ({seconds} s)"))
            .unwrap_or_default();
        return Rollout::Failed(format!(
            "Deployment {name} made no progress within its deadline{deadline}: its pods did not become ready."
        ));
    }
    let desired = spec.replicas.unwrap_or(1);
    let updated = status.updated_replicas.unwrap_or(0);
    let total = status.replicas.unwrap_or(0);
    let available = status.available_replicas.unwrap_or(0);
    if updated < desired {
        Rollout::Progressing(format!(
            "Deployment {name} is rolling out: {updated} of {desired} replicas updated."
        ))
    } else if total > updated {
        Rollout::Progressing(format!(
            "Deployment {name} is rolling out: {} old replicas are still stopping.",
            total - updated
        ))
    } else if available < updated {
        Rollout::Progressing(format!(
            "Deployment {name} is rolling out: {available} of {updated} replicas available."
        ))
    } else {
        Rollout::Done
    }
}

/// The App's status from its Deployments as they are now (none: the app
/// only has scheduled processes) and what is still being waited for.
pub fn app_status(
    app: &App,
    url: Option<String>,
    deployments: &[Deployment],
    waiting_for: Option<String>,
) -> AppStatus {
    let status = |ready: bool, reason: &str, message: Option<String>| AppStatus {
        ready,
        reason: Some(reason.to_owned()),
        message,
        url: url.clone(),
        observed_generation: app.metadata.generation,
        ..remembered(app)
    };
    let rollouts: Vec<Rollout> = deployments.iter().map(rollout).collect();
    if let Some(message) = rollouts.iter().find_map(|rollout| match rollout {
        Rollout::Failed(message) => Some(message.clone()),
        _ => None,
    }) {
        return status(false, REASON_ROLLOUT_FAILED, Some(message));
    }
    if let Some(message) = waiting_for {
        return status(false, REASON_PROGRESSING, Some(message));
    }
    if let Some(message) = rollouts.iter().find_map(|rollout| match rollout {
        Rollout::Progressing(message) => Some(message.clone()),
        _ => None,
    }) {
        return status(false, REASON_PROGRESSING, Some(message));
    }
    if deployments.is_empty() {
        return status(true, REASON_SCHEDULED, None);
    }
    status(true, REASON_AVAILABLE, None)
}

/// The App's status when it cannot be rendered or applied.
pub fn failure_status(app: &App, url: Option<String>, message: String) -> AppStatus {
    AppStatus {
        ready: false,
        reason: Some(REASON_ROLLOUT_FAILED.to_owned()),
        message: Some(message),
        url,
        observed_generation: app.metadata.generation,
        ..remembered(app)
    }
}

/// Writes the status when it differs, and then publishes an Event of
/// `why`: one Event per change of the App's state.
pub(super) async fn report(
    app: &App,
    context: &Context,
    status: AppStatus,
    why: Reason,
) -> Result<(), Error> {
    let note = event_note(&status);
    if set_status(app, context, status).await? {
        context.events.publish(app, why, note).await;
    }
    Ok(())
}

/// An Event's note: the status's message, or what a ready status means.
pub(super) fn event_note(status: &AppStatus) -> String {
    if let Some(message) = &status.message {
        return message.clone();
    }
    match (status.reason.as_deref(), &status.url) {
        (Some(REASON_SCHEDULED), _) => "The app's scheduled processes are set up.".to_owned(),
        (_, Some(url)) => format!("Every process of the app is rolled out; it answers at {url}."),
        _ => "Every process of the app is rolled out.".to_owned(),
    }
}

/// Writes the status only when it differs, so writing it starts no new
/// round; whether it was written.
pub(super) async fn set_status(
    app: &App,
    context: &Context,
    status: AppStatus,
) -> Result<bool, Error> {
    if app.status.as_ref() == Some(&status) {
        return Ok(false);
    }
    let api: Api<App> =
        Api::namespaced(context.client.clone(), &app.namespace().unwrap_or_default());
    // The whole status at once: a merge patch would keep the fields of a
    // remembered configuration that the new one no longer has.
    let patch: json_patch::Patch = serde_json::from_value(json!([
        { "op": "add", "path": "/status", "value": status }
    ]))?;
    match api
        .patch_status(
            &app.name_any(),
            &PatchParams::default(),
            &Patch::<()>::Json(patch),
        )
        .await
    {
        Ok(_) => {}
        // Deleted meanwhile: nothing to report to.
        Err(error) if is_not_found(&error) => return Ok(false),
        Err(error) => return Err(error.into()),
    }
    tracing::info!(
        app = %named(app),
        reason = %status.reason.as_deref().unwrap_or("none"),
        "status"
    );
    Ok(true)
}
