//! Who is calling: accounts, passwords, sessions, API tokens, members and
//! login throttling. Handlers call these; the HTTP pipeline calls
//! [`authenticate::authenticate`] once per request.

pub mod authenticate;
pub mod login;
pub mod members;
pub mod password;
pub mod profile;
pub mod sessions;
pub mod throttle;
pub mod tokens;

use std::sync::Arc;

use berth_domain::Role;
use berth_domain::names::OrgName;
use berth_domain::roles::{Ceiling, Permission};
use berth_domain::scope::{self, ScopeEntry};
use berth_records::auth::Identity;

/// An account as the rest of Berth sees it: never carries the password hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    pub id: String,
    pub email: String,
    pub display_name: Option<String>,
    pub org: OrgName,
    pub role: Role,
    pub must_change_password: bool,
    pub active: bool,
    pub session_epoch: u64,
}

/// How a request proved who it is. Digests, never the secrets themselves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credential {
    Session { digest: String },
    Token { id: String },
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
            Credential::Token { .. } => "token",
        }
    }

    /// Whether the caller's role grants the permission, and its token's
    /// ceiling allows it: the one place the two meet.
    pub fn can(&self, permission: Permission) -> bool {
        self.user.role.grants(permission)
            && self
                .ceiling
                .is_none_or(|ceiling| ceiling.allows(permission))
    }

    /// `forbidden`, naming the permission, unless the caller holds it.
    pub fn require(&self, permission: Permission) -> Result<(), berth_domain::ApiError> {
        if self.can(permission) {
            return Ok(());
        }
        let needs = format!("this needs the {} permission", permission.as_str());
        // The role would do: the token's ceiling is what stops it.
        let stopped_by = self.ceiling.filter(|_| self.user.role.grants(permission));
        Err(berth_domain::ApiError::Forbidden(match stopped_by {
            Some(ceiling) => format!("{needs}, and this token is limited to {}", ceiling.as_str()),
            None => needs,
        }))
    }

    /// `forbidden` for a token with a ceiling or a scope: what only the
    /// owner's full rights may do (`what`: "change the password", …).
    pub fn require_owners_rights(&self, what: &str) -> Result<(), berth_domain::ApiError> {
        match self.limits() {
            None => Ok(()),
            Some(limits) => Err(berth_domain::ApiError::Forbidden(format!(
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

pub fn validate_email(email: &str) -> Result<(), berth_domain::ApiError> {
    let valid = email.len() <= MAX_EMAIL_LEN
        && !email.chars().any(|c| c.is_whitespace() || c.is_control())
        && matches!(email.split_once('@'), Some((local, domain))
            if !local.is_empty() && !domain.is_empty() && !domain.contains('@'));
    if valid {
        Ok(())
    } else {
        Err(berth_domain::ApiError::ValidationFailed(
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
