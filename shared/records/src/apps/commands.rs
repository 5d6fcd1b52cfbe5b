//! One-off commands (`runCommand`): the body that starts one and the record
//! the API answers, with how it goes.

use serde::{Deserialize, Serialize};

use berth_domain::CommandArg;

/// The body of `runCommand`.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = RunCommandBody)]
#[serde(deny_unknown_fields)]
pub struct RunBody {
    /// What runs: the container's command and its arguments, as `execve`
    /// takes them (no shell unless it names one: `["sh", "-c", "…"]`).
    #[schema(value_type = Vec<CommandArg>, min_items = 1, max_items = 100)]
    pub command: Vec<String>,
    /// The process whose size (CPU and memory) the command's pod gets; the
    /// app's first process when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<String>,
    /// The command is stopped after this many seconds (and then `failed`,
    /// `reason` `DeadlineExceeded`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1, maximum = 86400, default = 3600)]
    pub timeout_seconds: Option<i64>,
}

/// How a one-off command goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum CommandState {
    /// Its pod is not running yet (`reason` says what it waits for, such as
    /// `ImagePullBackOff`).
    Pending,
    Running,
    /// It exited with status 0.
    Succeeded,
    /// It exited with another status (`exit_code`), ran past its timeout,
    /// or could not start (`reason`, `message`).
    Failed,
}

/// A one-off command of an app.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct CommandRecord {
    /// Its id, in its app's paths (`…/commands/{command}`); also the name of
    /// its Job and the label of its pod.
    pub name: String,
    pub app: String,
    pub command: Vec<String>,
    /// The process whose size its pod has.
    pub process: String,
    pub state: CommandState,
    /// The command's exit status, once it ended in its container.
    pub exit_code: Option<i32>,
    pub reason: Option<String>,
    pub message: Option<String>,
    /// The app's revision whose image, env and secrets it runs with, once
    /// its pod is made.
    pub revision: Option<i64>,
    pub timeout_seconds: i64,
    /// RFC 3339.
    pub created_at: Option<String>,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    /// When Berth forgets it (an hour after it ended): its record, pod and
    /// log go then.
    pub expires_at: Option<String>,
}
