//! `Command` → a one-off command's Job, and how it goes. The API records the
//! request (`runCommand`) and answers the Command's name; the controller
//! makes the Job (from the App as it is then: its image, env, secrets and a
//! process's size, see [`render::one_off_job`]), owned by the Command, and
//! writes to the Command's status what its pod shows: pending (and why it
//! waits), running, or ended with the container's exit status. A Job that
//! ran past its timeout failed with `DeadlineExceeded`. Once ended, the
//! Command is kept [`COMMAND_KEPT_SECONDS`], then deleted with its Job and
//! pod (so its log goes too).
//!
//! Pods are not watched (that would take a cluster-wide watch of pods):
//! while a command has not ended it is looked at again every
//! [`WHILE_RUNNING`], and its Job's changes wake it at once.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ContainerState, Pod};
use kube::ResourceExt;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use serde_json::json;

use berth_cluster::crd::{
    ANNOTATION_REVISION, App, COMMAND_CONTAINER, COMMAND_KEPT_SECONDS, Command, CommandPhase,
    CommandStatus, LABEL_COMMAND,
};
use berth_cluster::{delete_only, is_conflict, is_not_found};
use berth_domain::clock;

use crate::apps::{Namespace, namespace_of, render_settings};
use crate::context::Context;
use crate::error::Error;
use crate::render::{self, CheckedApp};

/// How soon a command that has not ended is looked at again.
const WHILE_RUNNING: Duration = Duration::from_secs(2);

pub async fn reconcile(command: Arc<Command>, context: Arc<Context>) -> Result<Action, Error> {
    if command.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let status = command.status.clone().unwrap_or_default();
    if status.phase.is_finished() {
        return expire(&command, &status, &context).await;
    }
    let namespace = command.namespace().unwrap_or_default();
    let name = command.name_any();
    let app = Api::<App>::namespaced(context.client.clone(), &namespace)
        .get_opt(&command.spec.app)
        .await?
        .filter(|app| app.uid().as_deref() == Some(command.spec.app_uid.as_str()));
    let Some(app) = app else {
        // Its App is gone, and the App owns it: it goes too.
        delete(&command, &context).await?;
        return Ok(Action::await_change());
    };
    let job = Api::<Job>::namespaced(context.client.clone(), &namespace)
        .get_opt(&name)
        .await?;
    let observed = match job {
        // Not made yet. The Job is read live, so a status the cache has not
        // caught up with never makes it twice (a create that meets it is
        // taken as made), and the Job names the revision it runs.
        None if status.revision.is_none() => match start(&command, &app, &context).await? {
            Ok(revision) => CommandStatus {
                revision: Some(revision),
                message: Some("Waiting for its pod.".into()),
                ..CommandStatus::default()
            },
            Err(why) => ended(&status, "NotStarted", why),
        },
        None => ended(
            &status,
            "JobDeleted",
            "Its Job was deleted before the command ended.".into(),
        ),
        Some(job) => {
            let pods = Api::<Pod>::namespaced(context.client.clone(), &namespace)
                .list(&ListParams::default().labels(&format!("{LABEL_COMMAND}={name}")))
                .await?;
            observe(&status, &job, pods.items.first(), &command)
        }
    };
    if observed != status {
        // The whole status at once: a merge patch would keep a reason the
        // pod no longer shows.
        let patch: json_patch::Patch = serde_json::from_value(json!([
            { "op": "add", "path": "/status", "value": observed }
        ]))?;
        match Api::<Command>::namespaced(context.client.clone(), &namespace)
            .patch_status(&name, &PatchParams::default(), &Patch::<()>::Json(patch))
            .await
        {
            Ok(_) => {}
            Err(error) if is_not_found(&error) => return Ok(Action::await_change()),
            Err(error) => return Err(error.into()),
        }
    }
    Ok(if observed.phase.is_finished() {
        Action::requeue(Duration::from_secs(COMMAND_KEPT_SECONDS.unsigned_abs()))
    } else {
        Action::requeue(WHILE_RUNNING)
    })
}

/// Makes the command's Job; `Ok(Ok(revision))` with the App's revision it
/// runs with, `Ok(Err(why))` when it cannot, in a tenant's words.
async fn start(
    command: &Command,
    app: &App,
    context: &Context,
) -> Result<Result<i64, String>, Error> {
    let (settings, namespace) = tokio::join!(render_settings(context), namespace_of(app, context));
    match namespace? {
        Namespace::Berths => {}
        Namespace::Terminating => {
            return Ok(Err("Its environment is being deleted.".into()));
        }
        Namespace::Foreign(why) => return Ok(Err(why)),
    }
    let checked = match CheckedApp::of(app) {
        Ok(checked) => checked,
        Err(error) => return Ok(Err(format!("The app's spec is invalid: {error}."))),
    };
    let Some(job) = render::one_off_job(&checked, &settings?, command) else {
        return Ok(Err("The app has no process to take a size from.".into()));
    };
    match Api::<Job>::namespaced(
        context.client.clone(),
        &command.namespace().unwrap_or_default(),
    )
    .create(&PostParams::default(), &job)
    .await
    {
        Ok(_) => context.metrics.applied("Job"),
        // Made already, by a reconcile whose status write did not happen.
        Err(error) if is_conflict(&error) => {}
        Err(error) => return Err(error.into()),
    }
    Ok(Ok(app.spec.release.revision))
}

/// What the Job and its pod show, after `status` (an end is never undone).
fn observe(
    status: &CommandStatus,
    job: &Job,
    pod: Option<&Pod>,
    command: &Command,
) -> CommandStatus {
    let container = pod
        .and_then(|pod| pod.status.as_ref())
        .and_then(|status| status.container_statuses.as_ref())
        .and_then(|statuses| statuses.iter().find(|c| c.name == COMMAND_CONTAINER));
    let state = container.and_then(|c| c.state.clone()).unwrap_or_default();
    let pod_name = pod.map(ResourceExt::name_any).or(status.pod.clone());
    let job_failed = job_condition(job, "Failed");
    let revision = job
        .annotations()
        .get(ANNOTATION_REVISION)
        .and_then(|revision| revision.parse().ok())
        .or(status.revision);
    let mut next = CommandStatus {
        pod: pod_name,
        revision,
        ..status.clone()
    };
    match (&state, job_failed) {
        (
            ContainerState {
                terminated: Some(end),
                ..
            },
            _,
        ) => {
            next.started_at = end
                .started_at
                .as_ref()
                .map(|at| at.0.as_millisecond())
                .or(status.started_at);
            let finished_at = end.finished_at.as_ref().map(|at| at.0.as_millisecond());
            let (reason, message) = if end.exit_code == 0 {
                (None, None)
            } else {
                (
                    Some(end.reason.clone().unwrap_or_else(|| "Error".into())),
                    Some(format!("The command exited with status {}.", end.exit_code)),
                )
            };
            let phase = if end.exit_code == 0 {
                CommandPhase::Succeeded
            } else {
                CommandPhase::Failed
            };
            CommandStatus {
                phase,
                exit_code: Some(end.exit_code),
                reason,
                message,
                finished_at: finished_at.or(Some(clock::unix_millis())),
                ..next
            }
        }
        (_, Some((reason, message))) => {
            let message = if reason == "DeadlineExceeded" {
                format!(
                    "The command was stopped after its timeout of {} s.",
                    command.spec.timeout_seconds
                )
            } else {
                message
            };
            ended(&next, &reason, message)
        }
        (
            ContainerState {
                running: Some(running),
                ..
            },
            None,
        ) => CommandStatus {
            phase: CommandPhase::Running,
            started_at: running
                .started_at
                .as_ref()
                .map(|at| at.0.as_millisecond())
                .or(status.started_at)
                .or(Some(clock::unix_millis())),
            reason: None,
            message: None,
            ..next
        },
        (
            ContainerState {
                waiting: Some(waiting),
                ..
            },
            None,
        ) => CommandStatus {
            phase: CommandPhase::Pending,
            reason: waiting.reason.clone(),
            message: waiting.message.clone(),
            ..next
        },
        _ if job_condition(job, "Complete").is_some() => CommandStatus {
            phase: CommandPhase::Succeeded,
            exit_code: Some(0),
            finished_at: Some(clock::unix_millis()),
            ..next
        },
        _ => next,
    }
}

/// The reason and message of the Job's condition `kind`, if it holds.
fn job_condition(job: &Job, kind: &str) -> Option<(String, String)> {
    job.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|condition| condition.type_ == kind && condition.status == "True")
        .map(|condition| {
            (
                condition.reason.clone().unwrap_or_else(|| kind.to_owned()),
                condition.message.clone().unwrap_or_default(),
            )
        })
}

/// Failed, without an exit status of its container's.
fn ended(status: &CommandStatus, reason: &str, message: String) -> CommandStatus {
    CommandStatus {
        phase: CommandPhase::Failed,
        reason: Some(reason.to_owned()),
        message: Some(message),
        finished_at: Some(clock::unix_millis()),
        ..status.clone()
    }
}

/// An ended command is deleted [`COMMAND_KEPT_SECONDS`] after it ended.
async fn expire(
    command: &Command,
    status: &CommandStatus,
    context: &Context,
) -> Result<Action, Error> {
    if let Some(left) = kept_for(status, clock::unix_millis()) {
        return Ok(Action::requeue(left));
    }
    delete(command, context).await?;
    Ok(Action::await_change())
}

/// How much longer an ended command is kept at `now` (Unix ms); None once
/// its time is up.
fn kept_for(status: &CommandStatus, now: i64) -> Option<Duration> {
    let ends = status.finished_at.unwrap_or_default() + COMMAND_KEPT_SECONDS * 1000;
    (ends > now).then(|| Duration::from_millis((ends - now).unsigned_abs()))
}

async fn delete(command: &Command, context: &Context) -> Result<(), Error> {
    match Api::<Command>::namespaced(
        context.client.clone(),
        &command.namespace().unwrap_or_default(),
    )
    .delete(&command.name_any(), &delete_only(command.uid()))
    .await
    {
        Ok(_) => Ok(()),
        Err(error) if is_not_found(&error) || is_conflict(&error) => Ok(()),
        Err(error) => Err(error.into()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn command() -> Command {
        serde_json::from_value(json!({
            "apiVersion": "berth.dev/v1", "kind": "Command",
            "metadata": {"name": "cmd-bbbbbbbbbbbb", "namespace": "shop-dev"},
            "spec": {"app": "shop", "appUid": "u", "command": ["true"], "process": "web", "timeoutSeconds": 60},
        }))
        .unwrap()
    }

    fn job(conditions: Value) -> Job {
        serde_json::from_value(json!({
            "metadata": {"name": "cmd-bbbbbbbbbbbb", "annotations": {"berth.dev/revision": "7"}},
            "status": {"conditions": conditions},
        }))
        .unwrap()
    }

    fn pod(state: Value) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": "cmd-bbbbbbbbbbbb-x7k2p"},
            "status": {"containerStatuses": [{
                "name": "command", "image": "busybox", "imageID": "", "ready": false,
                "restartCount": 0, "state": state,
            }]},
        }))
        .unwrap()
    }

    fn observed(job: &Job, pod: Option<&Pod>) -> CommandStatus {
        observe(&CommandStatus::default(), job, pod, &command())
    }

    #[test]
    fn a_waiting_container_is_pending_with_its_reason() {
        let status = observed(
            &job(json!([])),
            Some(&pod(
                json!({"waiting": {"reason": "ImagePullBackOff", "message": "no such image"}}),
            )),
        );
        assert_eq!(status.phase, CommandPhase::Pending);
        assert_eq!(status.reason.as_deref(), Some("ImagePullBackOff"));
        assert_eq!(status.message.as_deref(), Some("no such image"));
        assert_eq!(status.pod.as_deref(), Some("cmd-bbbbbbbbbbbb-x7k2p"));
    }

    #[test]
    fn a_running_container_is_running_since_it_started() {
        let status = observed(
            &job(json!([])),
            Some(&pod(
                json!({"running": {"startedAt": "2026-11-29T12:00:00Z"}}),
            )),
        );
        assert_eq!(status.phase, CommandPhase::Running);
        assert_eq!(status.started_at, Some(1_795_953_600_000));
        assert_eq!(
            status.revision,
            Some(7),
            "the Job's, whatever the status said"
        );
    }

    #[test]
    fn the_containers_exit_status_is_the_commands() {
        let ended = |code: i32| {
            observed(
                &job(
                    json!([{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}]),
                ),
                Some(&pod(
                    json!({"terminated": {"exitCode": code, "reason": "Error",
                    "startedAt": "2026-11-29T12:00:00Z", "finishedAt": "2026-11-29T12:00:05Z"}}),
                )),
            )
        };
        let failed = ended(3);
        assert_eq!(failed.phase, CommandPhase::Failed);
        assert_eq!(failed.exit_code, Some(3));
        assert_eq!(failed.reason.as_deref(), Some("Error"));
        assert_eq!(failed.finished_at, Some(1_795_953_605_000));
        let succeeded = ended(0);
        assert_eq!(succeeded.phase, CommandPhase::Succeeded);
        assert_eq!((succeeded.reason, succeeded.message), (None, None));
    }

    #[test]
    fn a_job_past_its_deadline_failed_without_an_exit_status() {
        let status = observed(
            &job(
                json!([{"type": "Failed", "status": "True", "reason": "DeadlineExceeded",
                "message": "Job was active longer than specified deadline"}]),
            ),
            None,
        );
        assert_eq!(status.phase, CommandPhase::Failed);
        assert_eq!(status.exit_code, None);
        assert_eq!(status.reason.as_deref(), Some("DeadlineExceeded"));
        assert_eq!(
            status.message.as_deref(),
            Some("The command was stopped after its timeout of 60 s.")
        );
    }

    #[test]
    fn a_complete_job_without_its_pod_succeeded() {
        let status = observed(&job(json!([{"type": "Complete", "status": "True"}])), None);
        assert_eq!(status.phase, CommandPhase::Succeeded);
        assert_eq!(status.exit_code, Some(0));
    }

    #[test]
    fn an_ended_command_is_kept_an_hour() {
        let status = CommandStatus {
            finished_at: Some(1_000_000),
            ..CommandStatus::default()
        };
        let hour = COMMAND_KEPT_SECONDS * 1000;
        assert_eq!(
            kept_for(&status, 1_000_000),
            Some(Duration::from_secs(COMMAND_KEPT_SECONDS.unsigned_abs()))
        );
        assert_eq!(
            kept_for(&status, 1_000_000 + hour - 1),
            Some(Duration::from_millis(1))
        );
        assert_eq!(kept_for(&status, 1_000_000 + hour), None);
    }
}
