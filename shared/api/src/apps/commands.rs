//! One-off commands (`runCommand`, `berth run -- CMD`): a command run once
//! in a fresh pod of the app's current revision, its state, exit status and
//! output. The API records the request as a `Command` resource and answers
//! at once; the controller makes the Job and reports how it goes
//! (`berth_controller`'s `commands`). Running any code with the app's
//! secrets is `app-deploy`'s, as deploying an image is.
//!
//! Bounds, per environment: at most [`MAX_RUNNING`] commands that have not
//! ended, and at most [`MAX_KEPT`] kept in all (an ended one is kept an
//! hour); each stops after its timeout (at most a day).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::{Resource, ResourceExt};

use super::operate::{LogSource, LogWindow, read_logs};
use super::service;
use crate::ApiError;
use berth_cluster::apps::{self as cluster_apps, PodsOf};
use berth_cluster::commands as cluster_commands;
use berth_cluster::crd::{
    COMMAND_CONTAINER, COMMAND_KEPT_SECONDS, Command, CommandPhase, CommandSpec,
};
use berth_domain::clock;
use berth_domain::credentials::{DEPLOY_TOKEN_PREFIX, TOKEN_PREFIX};
use berth_domain::names::CommandName;
use berth_domain::paths::{AppPath, CommandPath};
use berth_records::apps::commands::{CommandRecord, CommandState, RunBody};
use berth_records::apps::record::LogEntry;
use berth_store::identity::Principal;

/// Commands of one environment that may be pending or running at once.
pub const MAX_RUNNING: usize = 5;
/// Commands one environment keeps, ended ones included.
pub const MAX_KEPT: usize = 50;
pub const DEFAULT_TIMEOUT_SECONDS: i64 = 60 * 60;
pub const MAX_TIMEOUT_SECONDS: i64 = 24 * 60 * 60;

/// A `runCommand` body, checked.
#[derive(Debug, Clone)]
pub struct NewCommand {
    command: Vec<String>,
    process: Option<String>,
    timeout_seconds: i64,
}

impl NewCommand {
    /// The body, checked.
    pub fn parse(body: RunBody) -> Result<Self, ApiError> {
        if body.command.is_empty() {
            return Err(ApiError::ValidationFailed(
                "command: must name what to run (at least one argument)".into(),
            ));
        }
        let command = super::body::parse_command(&body.command, "command")?;
        let timeout_seconds = body.timeout_seconds.unwrap_or(DEFAULT_TIMEOUT_SECONDS);
        if !(1..=MAX_TIMEOUT_SECONDS).contains(&timeout_seconds) {
            return Err(ApiError::ValidationFailed(format!(
                "timeout_seconds: must be 1 to {MAX_TIMEOUT_SECONDS} (a day)"
            )));
        }
        Ok(Self {
            command,
            process: body.process,
            timeout_seconds,
        })
    }
}

/// The command as its audit event holds it: the arguments as a JSON array,
/// but a Berth token in one (`brt_…`, `brd_…`) and the password of a URL
/// (`scheme://user:PASSWORD@host`) replaced by `[redacted]`, so that a
/// credential typed into a command does not reach the log.
pub fn for_audit(command: &[String]) -> String {
    let redacted: Vec<String> = command.iter().map(|argument| redacted(argument)).collect();
    serde_json::to_string(&redacted).unwrap_or_default()
}

fn redacted(argument: &str) -> String {
    let mut text = argument.to_owned();
    for prefix in [TOKEN_PREFIX, DEPLOY_TOKEN_PREFIX] {
        let mut from = 0;
        while let Some(found) = text[from..].find(prefix) {
            let start = from + found + prefix.len();
            let end = text[start..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
                .map_or(text.len(), |length| start + length);
            text.replace_range(start..end, REDACTED);
            from = start + REDACTED.len();
        }
    }
    let mut from = 0;
    while let Some(found) = text[from..].find("://") {
        let authority = from + found + 3;
        let end = text[authority..]
            .find(|c: char| c == '/' || c.is_whitespace())
            .map_or(text.len(), |length| authority + length);
        let next = match text[authority..end].rfind('@') {
            Some(at) => match text[authority..authority + at].find(':') {
                Some(colon) => {
                    let (password, at) = (authority + colon + 1, authority + at);
                    text.replace_range(password..at, REDACTED);
                    password + REDACTED.len()
                }
                None => end,
            },
            None => end,
        };
        from = next.min(text.len());
    }
    text
}

const REDACTED: &str = "[redacted]";

/// Starts the command: the controller makes its pod within moments.
pub async fn run(
    client: &kube::Client,
    caller: &Principal,
    path: &AppPath,
    new: NewCommand,
) -> Result<CommandRecord, ApiError> {
    let org = &caller.user.org;
    let namespace = path.namespace();
    let (app, commands) = tokio::join!(
        service::app_to_change(client, org, path),
        cluster_commands::in_namespace(client, &namespace)
    );
    let (app, commands) = (app?, commands?);
    let config = &app.spec.config;
    if config.image.is_none() {
        return Err(ApiError::Conflict(
            "the app has no image yet (its first build has not finished): nothing to run".into(),
        ));
    }
    let names: Vec<&str> = config.processes.iter().map(|p| p.name.as_str()).collect();
    let process = match new.process {
        Some(wanted) if names.contains(&wanted.as_str()) => wanted,
        Some(_) => {
            return Err(ApiError::ValidationFailed(format!(
                "process: the app's processes are: {}",
                names.join(", ")
            )));
        }
        None => names
            .first()
            .map(|name| (*name).to_owned())
            .ok_or_else(|| ApiError::Conflict("the app has no process".into()))?,
    };
    let running = commands
        .iter()
        .filter(|command| !phase(command).is_finished())
        .count();
    if running >= MAX_RUNNING {
        return Err(ApiError::Conflict(format!(
            "{running} commands have not ended in this environment, the most at once; \
             try again when one has"
        )));
    }
    if commands.len() >= MAX_KEPT {
        return Err(ApiError::Conflict(format!(
            "this environment keeps {MAX_KEPT} commands, the most; an ended one goes an \
             hour after it ended"
        )));
    }
    let command = Command {
        metadata: ObjectMeta {
            name: Some(CommandName::random(|| rand::random_range(0..usize::MAX)).to_string()),
            namespace: Some(path.namespace()),
            labels: app.metadata.labels.clone(),
            owner_references: app.controller_owner_ref(&()).map(|owner| vec![owner]),
            ..ObjectMeta::default()
        },
        spec: CommandSpec {
            app: path.app.to_string(),
            app_uid: app.uid().unwrap_or_default(),
            command: new.command,
            process,
            timeout_seconds: new.timeout_seconds,
            requested_at: clock::unix_millis(),
        },
        status: None,
    };
    // 12 characters of 27: a name taken already is as likely as a
    // collision of two UUIDs; it is refused, never written over.
    let made = cluster_commands::create(client, &command)
        .await?
        .ok_or_else(|| ApiError::Conflict("a command of that name exists; try again".into()))?;
    Ok(record(&made))
}

/// The app's commands, newest first.
pub async fn list(
    client: &kube::Client,
    caller: &Principal,
    path: &AppPath,
) -> Result<Vec<CommandRecord>, ApiError> {
    let namespace = path.namespace();
    let (app, commands) = tokio::join!(
        cluster_apps::get_visible(client, &caller.user.org, path),
        cluster_commands::in_namespace(client, &namespace)
    );
    Ok(cluster_commands::of_app(commands?, &app?)
        .iter()
        .map(record)
        .collect())
}

/// One command of the app.
pub async fn get(
    client: &kube::Client,
    caller: &Principal,
    path: &CommandPath,
) -> Result<CommandRecord, ApiError> {
    Ok(record(&find(client, caller, path).await?))
}

/// The command's output: its pod's log (`tail` and `since` as `getAppLogs`
/// takes them).
pub async fn logs(
    client: &kube::Client,
    caller: &Principal,
    path: &CommandPath,
    window: LogWindow,
) -> Result<Vec<LogEntry>, ApiError> {
    let command = find(client, caller, path).await?;
    let pods = cluster_apps::pods(
        client,
        &caller.user.org,
        &path.app_path(),
        PodsOf::Command(path.command.as_str()),
    )
    .await?;
    let sources = pods
        .into_iter()
        .take(1)
        .map(|pod| LogSource {
            pod,
            container: Some(COMMAND_CONTAINER.to_owned()),
            process: Some(command.spec.process.clone()),
        })
        .collect();
    let api = kube::Api::namespaced(client.clone(), &path.app_path().namespace());
    Ok(read_logs(&api, sources, window).await)
}

async fn find(
    client: &kube::Client,
    caller: &Principal,
    path: &CommandPath,
) -> Result<Command, ApiError> {
    let app = cluster_apps::get_visible(client, &caller.user.org, &path.app_path()).await?;
    cluster_commands::get(client, &app, path.command.as_str())
        .await?
        .ok_or_else(|| path.missing().into())
}

fn phase(command: &Command) -> CommandPhase {
    command
        .status
        .as_ref()
        .map(|status| status.phase)
        .unwrap_or_default()
}

fn record(command: &Command) -> CommandRecord {
    let status = command.status.clone().unwrap_or_default();
    let at = |millis: Option<i64>| millis.map(|millis| clock::rfc3339(millis.div_euclid(1000)));
    CommandRecord {
        name: command.name_any(),
        app: command.spec.app.clone(),
        command: command.spec.command.clone(),
        process: command.spec.process.clone(),
        state: match status.phase {
            CommandPhase::Pending => CommandState::Pending,
            CommandPhase::Running => CommandState::Running,
            CommandPhase::Succeeded => CommandState::Succeeded,
            CommandPhase::Failed => CommandState::Failed,
        },
        exit_code: status.exit_code,
        reason: status.reason,
        message: status.message,
        revision: status.revision,
        timeout_seconds: command.spec.timeout_seconds,
        created_at: command
            .metadata
            .creation_timestamp
            .as_ref()
            .map(berth_cluster::timestamp),
        started_at: at(status.started_at),
        finished_at: at(status.finished_at),
        expires_at: at(status
            .finished_at
            .map(|finished| finished + COMMAND_KEPT_SECONDS * 1000)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_credential_in_a_command_does_not_reach_the_audit_log() {
        let command = [
            "sh",
            "-c",
            "curl -H 'Authorization: Bearer brt_abc-DEF_123' https://api/x; psql postgres://shop:s3cret@db:5432/shop",
            "brd_xyz",
            "https://nobody@example.com/",
        ]
        .map(String::from);
        assert_eq!(
            for_audit(&command),
            r#"["sh","-c","curl -H 'Authorization: Bearer brt_[redacted]' https://api/x; psql postgres://shop:[redacted]@db:5432/shop","brd_[redacted]","https://nobody@example.com/"]"#
        );
        assert_eq!(for_audit(&["true".to_owned()]), r#"["true"]"#);
    }
}
