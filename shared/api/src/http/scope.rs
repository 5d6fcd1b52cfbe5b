//! What the pipeline and the handler of one request share while it runs: the
//! request id (for error details) and notes for the audit event. It lives in a
//! task-local set by the pipeline, so handlers note things with one call.

use std::sync::{Arc, Mutex};

use tokio::time::Instant;

use berth_domain::Operation;
use berth_domain::ids::{RecordId, UserId};
use berth_domain::names::{
    AppName, DeployTokenName, OrgName, ProjectName, SecretName, TemplateName,
};
use berth_domain::paths::{BuildPath, CommandPath, EnvironmentPath};
use berth_domain::registry::RegistryUser;
use berth_records::members::MemberRecord;
use berth_records::tokens::TokenRecord;
use berth_store::identity::User;

tokio::task_local! {
    static SCOPE: Arc<RequestScope>;
}

#[derive(Debug, Default, Clone)]
pub struct AuditNotes {
    /// The route's operation, noted as soon as it is known: a request cut
    /// off by its deadline has no response to carry it.
    pub operation: Option<Operation>,
    pub target: Option<(String, String)>,
    /// The project the call concerns (its path's, or the one it made).
    pub project: Option<String>,
    /// What the call asked for beyond its target (see [`audit_detail`]).
    pub detail: Option<String>,
    /// Whether the call is a login attempt: its event follows the account
    /// the login names, whatever other credentials the request carries.
    pub login_attempted: bool,
    /// The account a login named, if the email belongs to one.
    pub login_account: Option<User>,
    pub login_succeeded: bool,
    /// The organization a call without credentials acts in: a webhook's.
    pub org: Option<OrgName>,
    /// The sender of a webhook delivery whose signature held (`github`,
    /// `gitlab`): the call's actor.
    pub webhook: Option<&'static str>,
    /// The registry credential a token request named (its user name): the
    /// call's actor, in its organization's log (`org`) when it names one
    /// Berth knows.
    pub registry_user: Option<String>,
    /// The call is summarised in an audit event written for an earlier one
    /// (a token grant after the first of its credential's hour): no event
    /// of its own, only its log line.
    pub summarised: bool,
}

#[derive(Debug)]
pub struct RequestScope {
    pub request_id: String,
    /// When the request must be answered (`BERTH_REQUEST_DEADLINE_SECONDS`
    /// after it arrived): retries of backend calls stop short of it.
    deadline: Instant,
    notes: Mutex<AuditNotes>,
}

impl RequestScope {
    pub fn new(request_id: String, deadline: Instant) -> Arc<Self> {
        Arc::new(Self {
            request_id,
            deadline,
            notes: Mutex::new(AuditNotes::default()),
        })
    }

    pub fn notes(&self) -> AuditNotes {
        self.notes
            .lock()
            .map(|notes| notes.clone())
            .unwrap_or_default()
    }

    /// Runs `future` in this scope, as the request the layers below see
    /// ([`berth_domain::request`]).
    pub async fn run<F: Future>(self: Arc<Self>, future: F) -> F::Output {
        let (id, deadline) = (self.request_id.clone(), self.deadline);
        berth_domain::request::serve(id, deadline, SCOPE.scope(self, future)).await
    }
}

fn with_notes(change: impl FnOnce(&mut AuditNotes)) {
    let _ = SCOPE.try_with(|scope| {
        if let Ok(mut notes) = scope.notes.lock() {
            change(&mut notes);
        }
    });
}

/// Notes the call's operation, for its audit event.
pub fn note_operation(operation: Operation) {
    with_notes(|notes| notes.operation = Some(operation));
}

/// What an audit event may name as a call's target: a value parsed as what
/// it must be (a name, an id, a path), or a record Berth made — never a
/// string as a caller sent it, which could be anything (a token's secret
/// put where its id belongs). The compiler holds every call to it.
pub trait AuditName {
    fn audit_name(&self) -> String;
}

/// Values whose text is their audit name.
macro_rules! audited_as_text {
    ($($name:ty),+) => {$(
        impl AuditName for $name {
            fn audit_name(&self) -> String {
                self.to_string()
            }
        }
    )+};
}

audited_as_text!(
    ProjectName,
    AppName,
    SecretName,
    TemplateName,
    DeployTokenName,
    UserId,
    RecordId
);

/// An environment: its namespace (`{project}-{environment}`).
impl AuditName for EnvironmentPath {
    fn audit_name(&self) -> String {
        self.namespace()
    }
}

/// A build: `{app}/{build}`.
impl AuditName for BuildPath {
    fn audit_name(&self) -> String {
        format!("{}/{}", self.app, self.build)
    }
}

/// A one-off command: `{app}/{command}`.
impl AuditName for CommandPath {
    fn audit_name(&self) -> String {
        format!("{}/{}", self.app, self.command)
    }
}

/// A registry credential: its user name.
impl AuditName for RegistryUser {
    fn audit_name(&self) -> String {
        self.username()
    }
}

/// A token Berth made: its id.
impl AuditName for TokenRecord {
    fn audit_name(&self) -> String {
        self.id.clone()
    }
}

/// A member Berth made: its id.
impl AuditName for MemberRecord {
    fn audit_name(&self) -> String {
        self.id.clone()
    }
}

/// An account: its id, as the table holds it.
impl AuditName for User {
    fn audit_name(&self) -> String {
        self.id.clone()
    }
}

/// Names what the call acts on, for its audit event.
pub fn audit_target(kind: &str, name: &impl AuditName) {
    let name = name.audit_name();
    with_notes(|notes| notes.target = Some((kind.to_owned(), name)));
}

/// The most of a detail an audit event keeps, in characters.
pub const MAX_AUDIT_DETAIL: usize = 1024;

/// Notes what the call asked for beyond its target, for its audit event
/// (cut at [`MAX_AUDIT_DETAIL`] characters, with `…`): only what the log
/// must say, never a secret's value or a command's output.
pub fn audit_detail(detail: &str) {
    let detail = match detail.char_indices().nth(MAX_AUDIT_DETAIL) {
        Some((cut, _)) => format!("{}…", &detail[..cut]),
        None => detail.to_owned(),
    };
    with_notes(|notes| notes.detail = Some(detail));
}

/// Notes the project the call concerns, for its audit event: what puts
/// the event in the project's log.
pub fn audit_project(project: &str) {
    let project = project.to_owned();
    with_notes(|notes| notes.project = Some(project));
}

/// Notes that the call is a login attempt, the account it was for (`None`
/// for an unknown email) and whether it signed in, for its audit event.
pub fn audit_login(account: Option<User>, succeeded: bool) {
    with_notes(|notes| {
        notes.login_attempted = true;
        notes.login_account = account;
        notes.login_succeeded = succeeded;
    });
}

/// Notes the organization an unauthenticated call acts in (a webhook's),
/// whose audit log gets its event.
pub fn audit_org(org: OrgName) {
    with_notes(|notes| notes.org = Some(org));
}

/// Notes the registry credential a token request named (never its
/// password): the call's actor.
pub fn audit_registry_user(username: String) {
    with_notes(|notes| notes.registry_user = Some(username));
}

/// Notes that the call's audit event is one written before (grants of a
/// registry credential, summarised per hour): it writes none of its own.
pub fn audit_summarised() {
    with_notes(|notes| notes.summarised = true);
}

/// Notes that the call is a webhook delivery signed by `sender`.
pub fn audit_webhook(sender: &'static str) {
    with_notes(|notes| notes.webhook = Some(sender));
}
