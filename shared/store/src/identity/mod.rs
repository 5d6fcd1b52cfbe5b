//! Who is calling: accounts, passwords, sessions, API tokens, members and
//! login throttling. Handlers call these; the HTTP pipeline calls
//! [`authenticate::authenticate`] once per request.

pub mod access;
pub mod authenticate;
pub mod deploy_tokens;
pub mod login;
pub mod members;
pub mod password;
pub mod profile;
pub mod project_roles;
pub mod sessions;
pub mod throttle;
pub mod tokens;

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::StoreError;
use berth_domain::names::{EnvironmentName, OrgName, ProjectName};
use berth_domain::roles::{Ceiling, Permission};
use berth_domain::scope::{self, Reach, ScopeEntry};
use berth_domain::{Missing, Operation, ProjectRole, Role};
use berth_records::auth::Identity;
use berth_records::members::ProjectGrantRecord;

/// An account as the rest of Berth sees it: never carries the password hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    pub id: String,
    pub email: String,
    pub display_name: Option<String>,
    pub org: OrgName,
    pub role: Role,
    /// Roles in single projects (a deploy token's: its project's).
    pub projects: Vec<ProjectGrant>,
    pub must_change_password: bool,
    pub active: bool,
    pub session_epoch: u64,
}

/// A role in one project, kept with the account (so that authenticating
/// reads it with the profile, in the same round trip) and keyed by the
/// project's uid: a project deleted and made again under its name is
/// another project, which the grant does not reach.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProjectGrant {
    pub project: ProjectName,
    pub uid: String,
    pub role: ProjectRole,
}

impl ProjectGrant {
    pub fn record(&self) -> ProjectGrantRecord {
        ProjectGrantRecord {
            project: self.project.clone(),
            role: self.role,
        }
    }
}

/// How a request proved who it is. Digests, never the secrets themselves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credential {
    Session {
        digest: String,
    },
    Token {
        id: String,
        /// When it expires (Unix seconds; none: never): what a token it
        /// makes while limited may live until at most.
        expires_at: Option<i64>,
    },
    /// A project's deploy token: a machine's, not a person's.
    DeployToken {
        id: String,
    },
}

/// An authenticated caller.
#[derive(Debug, Clone)]
pub struct Principal {
    pub user: User,
    pub credential: Credential,
    /// The token's ceiling (none for a session, or a token with its
    /// owner's rights).
    pub ceiling: Option<Ceiling>,
    /// The token's scope (none for a session, or a token reaching every
    /// project of its owner's).
    pub scope: Option<TokenScope>,
    /// The caller's role in the project the request acts in, from one of
    /// `user.projects` whose uid is that project's (the `Caller` extractor
    /// finds it, reading the project, only for a caller holding a grant of
    /// that name).
    pub project_role: Option<ProjectRole>,
}

/// Where a token may act, and since when: a project made after the token
/// (one deleted and made again under its name) is outside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenScope {
    pub entries: Vec<ScopeEntry>,
    /// When the token was made (Unix seconds).
    pub since: i64,
}

impl TokenScope {
    /// Whether a project made at `made` (Unix seconds; unknown: never) was
    /// there when the token was made: the only projects it may reach.
    pub fn predates(&self, made: Option<i64>) -> bool {
        made.is_some_and(|made| made <= self.since)
    }
}

/// The outcome of looking at a request's credentials, decided once per request.
#[derive(Debug, Clone)]
pub enum Authentication {
    /// No credentials were presented.
    Anonymous,
    /// Credentials were presented and are unknown, expired or revoked.
    Rejected,
    /// The store could not be asked.
    Unavailable,
    Authenticated(Arc<Principal>),
}

impl Principal {
    pub fn via(&self) -> &'static str {
        match self.credential {
            Credential::Session { .. } => "session",
            Credential::Token { .. } | Credential::DeployToken { .. } => "token",
        }
    }

    pub fn is_deploy_token(&self) -> bool {
        matches!(self.credential, Credential::DeployToken { .. })
    }

    /// Whether the caller's roles (in the organization, and in the
    /// request's project) grant the permission, and its token's ceiling
    /// allows it: the one place they meet.
    pub fn can(&self, permission: Permission) -> bool {
        self.roles_grant(permission)
            && self
                .ceiling
                .is_none_or(|ceiling| ceiling.allows(permission))
    }

    /// Whether the caller's roles grant the permission, whatever its token's
    /// ceiling: the greater of its organization role and its role in the
    /// request's project.
    fn roles_grant(&self, permission: Permission) -> bool {
        self.user.role.grants(permission)
            || self
                .project_role
                .is_some_and(|role| role.grants(permission))
    }

    /// The caller's grant in the project of that name, whatever its uid.
    pub fn grant_named(&self, project: &str) -> Option<&ProjectGrant> {
        self.user
            .projects
            .iter()
            .find(|grant| grant.project.as_str() == project)
    }

    /// Whether the caller sees the project of that name, uid and creation
    /// time (Unix seconds) in the list of projects: every project, unless
    /// it is limited to some (its scope's, made before the token; those it
    /// holds a role in, for a `member`).
    pub fn sees_project(&self, name: &str, uid: Option<&str>, created: Option<i64>) -> bool {
        let in_scope = self.scope.as_ref().is_none_or(|scope| {
            scope::reach(&scope.entries, name, None) != scope::Reach::OutsideProject
                && scope.predates(created)
        });
        let granted = self.user.role != Role::Member
            || self
                .user
                .projects
                .iter()
                .any(|grant| Some(grant.uid.as_str()) == uid);
        in_scope && granted
    }

    /// Whether the caller acts only in projects it was given: a member
    /// whose organization role gives nothing, or a scoped token.
    pub fn limited_to_projects(&self) -> bool {
        self.user.role == Role::Member || self.scope.is_some()
    }

    /// `forbidden`, naming the permission, unless the caller holds it.
    pub fn require(&self, permission: Permission) -> Result<(), StoreError> {
        if self.can(permission) {
            return Ok(());
        }
        let needs = format!("this needs the {} permission", permission.as_str());
        // The roles would do: the token's ceiling is what stops it.
        let stopped_by = self.ceiling.filter(|_| self.roles_grant(permission));
        Err(StoreError::Forbidden(match stopped_by {
            Some(ceiling) => format!("{needs}, and this token is limited to {}", ceiling.as_str()),
            None => needs,
        }))
    }

    /// Whether the caller is held to changing its password first: every
    /// operation but `operation`s allowed before (none: any operation that
    /// needs a permission) is refused until it does.
    pub fn held_to_password_change(&self, operation: Option<Operation>) -> bool {
        self.user.must_change_password
            && !operation.is_some_and(Operation::allowed_before_password_change)
    }

    /// What the caller's credentials alone say of a call in `project` (and
    /// `environment`) that needs `needs`, before the project is read:
    /// missing (`404`, as another organization's) outside its token's
    /// scope or, for a `member`, in a project it holds no role in;
    /// forbidden on the project itself for a token limited to some of its
    /// environments, but to read it. The `Caller` extractor refuses calls
    /// with it, and [`Principal::access`] lists permissions with it: one
    /// rule for both.
    pub fn admits(
        &self,
        project: &ProjectName,
        environment: Option<&EnvironmentName>,
        needs: Option<Permission>,
    ) -> Result<(), StoreError> {
        let missing = || StoreError::Missing(Missing::project(project.as_str()));
        if let Some(scope) = &self.scope {
            match scope::reach(
                &scope.entries,
                project.as_str(),
                environment.map(EnvironmentName::as_str),
            ) {
                Reach::OutsideProject => return Err(missing()),
                Reach::OutsideEnvironment => {
                    return Err(StoreError::Missing(Missing::Environment {
                        project: project.to_string(),
                        environment: environment.map(ToString::to_string).unwrap_or_default(),
                    }));
                }
                Reach::ProjectOfLimitedEntry if needs != Some(Permission::Read) => {
                    return Err(StoreError::Forbidden(format!(
                        "this token is limited to {}: it cannot change the project itself",
                        scope::describe(&scope.entries)
                    )));
                }
                Reach::ProjectOfLimitedEntry | Reach::Inside => {}
            }
        }
        if self.user.role == Role::Member && self.grant_named(project.as_str()).is_none() {
            return Err(missing());
        }
        Ok(())
    }

    /// The caller as it stands in a project where it holds `project_role`
    /// (none: no role, or a grant of an earlier project of the name).
    pub fn in_project(&self, project_role: Option<ProjectRole>) -> Principal {
        Principal {
            project_role,
            ..self.clone()
        }
    }

    /// Whether the caller's scope reaches that environment of the project
    /// (a caller without a scope reaches all of them): what its lists and
    /// counts show, since an environment out of its reach is as if it did
    /// not exist.
    pub fn reaches_environment(&self, project: &str, environment: &str) -> bool {
        self.scope.as_ref().is_none_or(|scope| {
            scope::reach(&scope.entries, project, Some(environment)) == scope::Reach::Inside
        })
    }

    /// `forbidden` unless the caller's scope reaches that environment of
    /// the project: for an environment a body names (a promotion's
    /// target), which the path's check cannot see.
    pub fn require_reach(&self, project: &str, environment: &str) -> Result<(), StoreError> {
        match &self.scope {
            Some(scope) if !self.reaches_environment(project, environment) => {
                Err(StoreError::Forbidden(format!(
                    "this token is limited to {}: it cannot act in environment {environment}",
                    scope::describe(&scope.entries)
                )))
            }
            _ => Ok(()),
        }
    }

    /// `forbidden` for a token with a ceiling or a scope: what only the
    /// owner's full rights may do (`what`: "change the password", …).
    pub fn require_owners_rights(&self, what: &str) -> Result<(), StoreError> {
        match self.limits() {
            None => Ok(()),
            Some(limits) => Err(StoreError::Forbidden(format!(
                "this token is limited to {limits}: it cannot {what}"
            ))),
        }
    }

    /// What the token is limited to, in words (`read`, `projects web`,
    /// `deploy in projects web`); none when it has its owner's rights.
    pub fn limits(&self) -> Option<String> {
        let scope = self
            .scope
            .as_ref()
            .map(|scope| scope::describe(&scope.entries));
        match (self.ceiling, scope) {
            (None, None) => None,
            (Some(ceiling), None) => Some(ceiling.as_str().to_owned()),
            (None, Some(scope)) => Some(scope),
            (Some(ceiling), Some(scope)) => Some(format!("{} in {scope}", ceiling.as_str())),
        }
    }

    pub fn identity(&self) -> Identity {
        self.user.identity(self.via())
    }
}

impl User {
    /// The Identity record of this user, signed in `via` a session or a token.
    pub fn identity(&self, via: &str) -> Identity {
        Identity {
            id: self.id.clone(),
            email: self.email.clone(),
            display_name: self.display_name.clone(),
            via: via.to_owned(),
            must_change_password: self.must_change_password,
        }
    }
}

/// Emails are compared case-insensitively and without surrounding space.
pub fn normalize_email(email: &str) -> String {
    email.trim().to_lowercase()
}

/// The longest email address there can be (RFC 5321's path limit less the
/// brackets). Every email that becomes a key is held to it.
pub const MAX_EMAIL_LEN: usize = 254;

pub fn validate_email(email: &str) -> Result<(), StoreError> {
    let valid = email.len() <= MAX_EMAIL_LEN
        && !email.chars().any(|c| c.is_whitespace() || c.is_control())
        && matches!(email.split_once('@'), Some((local, domain))
            if !local.is_empty() && !domain.is_empty() && !domain.contains('@'));
    if valid {
        Ok(())
    } else {
        Err(StoreError::Invalid(
            "email: not a valid email address".into(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emails_are_normalized_and_checked() {
        assert_eq!(normalize_email("  Ada@Example.ORG "), "ada@example.org");
        assert!(validate_email("ada@example.org").is_ok());
        assert!(validate_email("admin@localhost").is_ok());
        for bad in [
            "",
            "ada",
            "@example.org",
            "ada@",
            "a b@example.org",
            "a@b@c",
        ] {
            assert!(validate_email(bad).is_err(), "{bad}");
        }
    }
}
