//! The audit log's records: an event as the API returns it (and the table
//! stores it), and a page of them.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ActorKind {
    Session,
    Token,
    User,
    Anonymous,
    /// A git webhook delivery whose signature held; the actor is its
    /// sender, `github` or `gitlab`.
    Webhook,
    /// A request to the registry's token service; the actor is the registry
    /// credential it named (`build/…/push`, `environment/…`), whether or
    /// not its password held.
    Registry,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Success,
    Denied,
    Failure,
    Throttled,
    Error,
}

impl ActorKind {
    /// The name stored in the audit log and written in log lines.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Session => "session",
            Self::Token => "token",
            Self::User => "user",
            Self::Anonymous => "anonymous",
            Self::Webhook => "webhook",
            Self::Registry => "registry",
        }
    }
}

impl Outcome {
    /// The name stored in the audit log and written in log lines.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::Denied => "denied",
            Self::Failure => "failure",
            Self::Throttled => "throttled",
            Self::Error => "error",
        }
    }

    pub fn of_status(status: u16) -> Self {
        match status {
            200..=399 => Outcome::Success,
            401 | 403 => Outcome::Denied,
            429 => Outcome::Throttled,
            400..=499 => Outcome::Failure,
            _ => Outcome::Error,
        }
    }
}

/// An audit event as the API returns it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct AuditEvent {
    pub seq: u64,
    pub id: String,
    pub at: i64,
    pub actor_kind: ActorKind,
    pub actor: Option<String>,
    pub action: String,
    pub target_kind: Option<String>,
    pub target: Option<String>,
    pub outcome: Outcome,
    pub status: Option<u16>,
    pub ip: Option<String>,
    pub request_id: Option<String>,
}

#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct AuditPage {
    pub events: Vec<AuditEvent>,
    pub next_before: Option<u64>,
}
