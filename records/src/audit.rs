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
    /// The platform's operator, through `berth-admin` (the actor names the
    /// command).
    Operator,
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
            Self::Operator => "operator",
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
    /// The project the call's path names (events of calls made before
    /// events named their project have none).
    #[serde(default)]
    pub project: Option<String>,
}

#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct AuditPage {
    pub events: Vec<AuditEvent>,
    pub next_before: Option<u64>,
}

impl AuditPage {
    /// The page below the oldest event: nothing, and nothing older.
    pub fn empty() -> Self {
        Self {
            events: Vec::new(),
            next_before: None,
        }
    }
}

/// The most events a page holds.
pub const MAX_PAGE: u32 = 200;
/// The events a page holds unless `limit` says.
pub const DEFAULT_PAGE: u32 = 50;

/// Which page of a log to read.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct PageQuery {
    /// Events per page, 1 to 200; 50 by default.
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<u32>,
    /// Only events older than this `seq` (the previous page's `next_before`).
    pub before: Option<u64>,
}

impl PageQuery {
    /// The page's size and where it starts, or why they cannot be.
    pub fn checked(&self) -> Result<(u32, Option<u64>), berth_domain::ApiError> {
        let limit = self.limit.unwrap_or(DEFAULT_PAGE);
        if !(1..=MAX_PAGE).contains(&limit) {
            return Err(berth_domain::ApiError::InvalidRequest(format!(
                "limit: must be 1 to {MAX_PAGE}"
            )));
        }
        if self
            .before
            .is_some_and(|before| i64::try_from(before).is_err())
        {
            return Err(berth_domain::ApiError::InvalidRequest(format!(
                "before: must be 0 to {}",
                i64::MAX
            )));
        }
        Ok((limit, self.before))
    }
}
