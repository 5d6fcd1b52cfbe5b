//! What the rules refuse, in the caller's words and with no HTTP in it: a
//! value that breaks a rule ([`InvalidInput`]) and a thing that is not there
//! ([`Missing`]). They are here, below every layer, because the domain's own
//! rules refuse for these reasons and so do the store and the cluster layer:
//! each of those holds them in its own error (`berth_store::StoreError`,
//! `berth_cluster::ClusterError`) beside what only it knows, and only the
//! HTTP layer (`berth_api::error::ApiError`) says which status each is and
//! what the caller reads (crates.io's rule: a lower layer returns its own
//! errors; the top one turns them into an answer).

use crate::ids::{RecordId, UserId};
use crate::names::TemplateName;

/// A value of the request that breaks a rule, named by where it was sent:
/// `field: what it must be` (never the value, which may be a secret sent
/// in the wrong field). The API answers it `validation_failed`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidInput(pub String);

/// What a 404 names. Every name is one the caller gave in the path, so a
/// 404 tells nothing the caller did not know; an object that exists but is
/// not the caller's organization's reads exactly like one that is absent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Missing {
    /// A path no operation serves: a generic 404, naming nothing.
    Route,
    /// A cluster object that went away while the request ran.
    Gone,
    Organization {
        org: String,
    },
    Project {
        project: String,
    },
    Environment {
        project: String,
        environment: String,
    },
    App {
        project: String,
        environment: String,
        app: String,
    },
    Secret {
        project: String,
        environment: String,
        secret: String,
    },
    Build {
        project: String,
        environment: String,
        app: String,
        build: String,
    },
    Command {
        project: String,
        environment: String,
        app: String,
        command: String,
    },
    Template {
        template: TemplateName,
    },
    Token {
        token: RecordId,
    },
    Member {
        member: UserId,
    },
    /// A member without a role in the project (`removeProjectMember`).
    ProjectMember {
        project: String,
        member: UserId,
    },
    /// A deploy token of a project, by id.
    DeployToken {
        project: String,
        token: RecordId,
    },
    /// A path whose `{param}` does not parse as what it must be (a token's
    /// secret where its id belongs): the value is repeated nowhere.
    Unparsed {
        param: &'static str,
    },
    /// An app without a webhook (`getWebhook`, `deleteWebhook`).
    Webhook {
        project: String,
        environment: String,
        app: String,
    },
}

impl std::fmt::Display for Missing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Route => f.write_str("no such resource"),
            Self::Gone => f.write_str("it was removed while the request ran"),
            Self::Organization { org } => write!(f, "organization `{org}` not found"),
            Self::Project { project } => write!(f, "project `{project}` not found"),
            Self::Environment {
                project,
                environment,
            } => write!(
                f,
                "environment `{environment}` not found in project `{project}`"
            ),
            Self::App {
                project,
                environment,
                app,
            } => write!(
                f,
                "app `{app}` not found in environment `{environment}` of project `{project}`"
            ),
            Self::Secret {
                project,
                environment,
                secret,
            } => write!(
                f,
                "secret `{secret}` not found in environment `{environment}` of project `{project}`"
            ),
            Self::Build {
                project,
                environment,
                app,
                build,
            } => write!(
                f,
                "build {build} not found of app `{app}` in environment `{environment}` of \
                 project `{project}`"
            ),
            Self::Command {
                project,
                environment,
                app,
                command,
            } => write!(
                f,
                "command `{command}` not found of app `{app}` in environment `{environment}` of \
                 project `{project}` (an ended command is kept for an hour)"
            ),
            Self::Template { template } => write!(f, "template `{template}` not found"),
            Self::Token { token } => write!(f, "token `{token}` not found"),
            Self::Member { member } => write!(f, "member `{member}` not found"),
            Self::ProjectMember { project, member } => {
                write!(f, "member `{member}` has no role in project `{project}`")
            }
            Self::DeployToken { project, token } => {
                write!(f, "deploy token `{token}` not found in project `{project}`")
            }
            Self::Webhook {
                project,
                environment,
                app,
            } => write!(
                f,
                "app `{app}` in environment `{environment}` of project `{project}` has no webhook"
            ),
            Self::Unparsed { param } => write!(
                f,
                "no such resource: the path's {{{param}}} is not {}",
                match *param {
                    "token" => "a token's id (from its list; never the token itself)",
                    "member" => "a user's id (from the list of members)",
                    "build" => "a build's number",
                    _ => "a name such a resource can have",
                }
            ),
        }
    }
}

impl Missing {
    pub fn project(project: &str) -> Self {
        Self::Project {
            project: project.to_owned(),
        }
    }

    pub fn environment(project: &str, environment: &str) -> Self {
        Self::Environment {
            project: project.to_owned(),
            environment: environment.to_owned(),
        }
    }
}
