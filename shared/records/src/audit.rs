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
    /// What the call asked for beyond its target, where the log must say
    /// it: the command a `runCommand` ran (never its output), at most 1024
    /// characters. None for every other call.
    #[serde(default)]
    pub detail: Option<String>,
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

/// Which page of a log to read, and which of its events.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct PageQuery {
    /// Events per page, 1 to 200; 50 by default.
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<u32>,
    /// Only events older than this `seq` (the previous page's `next_before`).
    pub before: Option<u64>,
    /// Only events of this actor (an email, a deploy token's or registry
    /// credential's name, `github`…), compared ignoring ASCII case.
    #[param(
        min_length = 1,
        max_length = 254,
        pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]+$"
    )]
    pub actor: Option<String>,
    /// Only events of this action: an operation id (`createApp`), or an
    /// operator's action (`verifyDomain`).
    #[param(value_type = Option<ActionFilter>, inline)]
    pub action: Option<String>,
    /// Only events whose `target` is this value, or, ending in `*`, starts
    /// with what precedes it (`web-*`: the environments of project `web`,
    /// whose targets are their namespaces `{project}-{environment}`).
    #[param(
        min_length = 1,
        max_length = 254,
        pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]+$"
    )]
    pub target: Option<String>,
    /// Only events whose `target_kind` is this (`app`, `environment`,
    /// `project`, `secret`, `member`, `token`…).
    #[param(min_length = 1, max_length = 32, pattern = "^[a-z][a-z_-]*$")]
    pub target_kind: Option<String>,
}

/// A page request, as checked: its size, where it starts, and its filter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageRequest {
    pub limit: u32,
    pub before: Option<u64>,
    pub filter: AuditFilter,
}

impl PageQuery {
    /// The page's size, where it starts and its filter, or why they cannot be.
    pub fn checked(&self) -> Result<PageRequest, InvalidPageQuery> {
        let limit = self.limit.unwrap_or(DEFAULT_PAGE);
        if !(1..=MAX_PAGE).contains(&limit) {
            return Err(InvalidPageQuery(format!("limit: must be 1 to {MAX_PAGE}")));
        }
        if self
            .before
            .is_some_and(|before| i64::try_from(before).is_err())
        {
            return Err(InvalidPageQuery(format!(
                "before: must be 0 to {}",
                i64::MAX
            )));
        }
        let filter = AuditFilter {
            actor: (self.actor.as_deref())
                .map(ActorFilter::parse)
                .transpose()
                .map_err(InvalidPageQuery)?,
            action: (self.action.as_deref())
                .map(ActionFilter::parse)
                .transpose()
                .map_err(InvalidPageQuery)?,
            target: (self.target.as_deref())
                .map(TargetFilter::parse)
                .transpose()
                .map_err(InvalidPageQuery)?,
            target_kind: (self.target_kind.as_deref())
                .map(TargetKindFilter::parse)
                .transpose()
                .map_err(InvalidPageQuery)?,
        };
        Ok(PageRequest {
            limit,
            before: self.before,
            filter,
        })
    }
}

/// Why a page's query cannot be served, naming the parameter (the API
/// answers `invalid_request`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidPageQuery(pub String);

impl std::fmt::Display for InvalidPageQuery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InvalidPageQuery {}

/// Which events of a log a page shows: those matching every filter given
/// (none: every event).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditFilter {
    pub actor: Option<ActorFilter>,
    pub action: Option<ActionFilter>,
    pub target: Option<TargetFilter>,
    pub target_kind: Option<TargetKindFilter>,
}

impl AuditFilter {
    /// Whether any filter is given.
    pub fn is_set(&self) -> bool {
        self.actor.is_some()
            || self.action.is_some()
            || self.target.is_some()
            || self.target_kind.is_some()
    }

    pub fn matches(&self, event: &AuditEvent) -> bool {
        self.actor.as_ref().is_none_or(|actor| {
            (event.actor.as_deref()).is_some_and(|a| a.eq_ignore_ascii_case(&actor.0))
        }) && self
            .action
            .as_ref()
            .is_none_or(|action| event.action == action.0)
            && self
                .target
                .as_ref()
                .is_none_or(|target| event.target.as_deref().is_some_and(|t| target.matches(t)))
            && self
                .target_kind
                .as_ref()
                .is_none_or(|kind| event.target_kind.as_deref() == Some(kind.0.as_str()))
    }
}

/// Text a caller sent that ends up compared, never stored nor echoed:
/// held to a length and free of control characters, so that a value that
/// cannot match anything is said to be wrong rather than answered with an
/// empty page.
fn plain_text(field: &str, value: &str, max: usize) -> Result<(), String> {
    // Characters, as the document's maxLength counts them.
    if value.is_empty() || value.chars().count() > max {
        return Err(format!("{field}: must be 1 to {max} characters"));
    }
    if value.chars().any(char::is_control) {
        return Err(format!("{field}: must not hold control characters"));
    }
    Ok(())
}

/// The `actor` filter: an actor as the log names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActorFilter(String);

impl ActorFilter {
    pub fn parse(value: &str) -> Result<Self, String> {
        plain_text("actor", value, 254)?;
        Ok(Self(value.to_owned()))
    }
}

/// The `action` filter: an action the log can hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActionFilter(&'static str);

impl ActionFilter {
    pub fn parse(value: &str) -> Result<Self, String> {
        berth_domain::operation::audited_actions()
            .find(|action| *action == value)
            .map(Self)
            .ok_or_else(|| {
                "action: must be an operation id (as `action` of an event, e.g. createApp)".into()
            })
    }
}

/// The document says which actions there are, so that a client (and a
/// generated one) knows an action the log cannot hold is refused.
impl utoipa::PartialSchema for ActionFilter {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::schema::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .enum_values(Some(berth_domain::operation::audited_actions()))
            .into()
    }
}

impl utoipa::ToSchema for ActionFilter {}

/// The `target` filter: a target, or a prefix of targets (`web-*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetFilter {
    Exactly(String),
    StartsWith(String),
}

impl TargetFilter {
    pub fn parse(value: &str) -> Result<Self, String> {
        plain_text("target", value, 254)?;
        match value.strip_suffix('*') {
            _ if value.matches('*').count() > 1 => {
                Err("target: `*` may only end it, once (a prefix)".into())
            }
            Some("") => Err("target: a prefix needs at least one character before `*`".into()),
            Some(prefix) => Ok(Self::StartsWith(prefix.to_owned())),
            None if value.contains('*') => {
                Err("target: `*` may only end it, once (a prefix)".into())
            }
            None => Ok(Self::Exactly(value.to_owned())),
        }
    }

    fn matches(&self, target: &str) -> bool {
        match self {
            Self::Exactly(wanted) => target == wanted,
            Self::StartsWith(prefix) => target.starts_with(prefix.as_str()),
        }
    }
}

/// The `target_kind` filter: a kind of target (`app`, `environment`…).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetKindFilter(String);

impl TargetKindFilter {
    pub fn parse(value: &str) -> Result<Self, String> {
        let well_formed = (1..=32).contains(&value.len())
            && value.starts_with(|c: char| c.is_ascii_lowercase())
            && value
                .chars()
                .all(|c| c.is_ascii_lowercase() || c == '_' || c == '-');
        if well_formed {
            Ok(Self(value.to_owned()))
        } else {
            Err("target_kind: must be a kind of target, e.g. app or environment".into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_parse_or_say_why_not() {
        assert!(ActionFilter::parse("createApp").is_ok());
        assert!(ActionFilter::parse("verifyDomain").is_ok());
        assert!(ActionFilter::parse("createapp").is_err());
        assert_eq!(
            TargetFilter::parse("web-*"),
            Ok(TargetFilter::StartsWith("web-".into()))
        );
        assert_eq!(
            TargetFilter::parse("web"),
            Ok(TargetFilter::Exactly("web".into()))
        );
        for bad in ["*", "w*b", "web**", "", "a\u{7}b"] {
            assert!(TargetFilter::parse(bad).is_err(), "{bad:?}");
        }
        assert!(ActorFilter::parse("").is_err());
        assert!(ActorFilter::parse(&"a".repeat(255)).is_err());
        assert!(TargetKindFilter::parse("deploy-token").is_ok());
        assert!(TargetKindFilter::parse("App").is_err());
    }
}
