//! An API token: the body that makes one, its record, and the token made.

use berth_domain::Ceiling;
use berth_domain::names::{DeployTokenName, EnvironmentName, ProjectName};
use berth_domain::scope::ScopeEntry;
use serde::{Deserialize, Serialize};

#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewToken {
    /// Not only white space.
    #[schema(
        min_length = 1,
        max_length = 64,
        pattern = "[^\\t\\n\\u000b\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
    )]
    pub name: String,
    /// Never expires when omitted.
    #[schema(minimum = 1, maximum = 365)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_in_days: Option<u32>,
    /// The most the token may do: `read` or `deploy`; omitted, its owner's
    /// rights. A token with a ceiling may only create tokens with the
    /// same or a lower one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ceiling: Option<Ceiling>,
    /// The projects (and, in each, optionally the environments) the token
    /// may act in; omitted, every project of its owner's. A project made
    /// after the token is outside it, whatever its name. A scoped token may
    /// only create tokens within its scope. Entries add up.
    #[schema(min_items = 1)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<Vec<ScopeEntry>>,
}

/// The token record of the API.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct TokenRecord {
    pub id: String,
    pub name: String,
    pub prefix: String,
    pub created_at: String,
    pub expires_at: Option<String>,
    pub last_used_at: Option<String>,
    /// `read` or `deploy`; `null`: its owner's rights.
    pub ceiling: Option<Ceiling>,
    /// `null`: every project of its owner's.
    pub scope: Option<Vec<ScopeEntry>>,
    /// The id of the limited token (one with a ceiling or a scope) that
    /// made it: it expires no later than that one and is revoked with it.
    /// `null`: made by a session or an unlimited token.
    #[schema(required = true)]
    pub made_by: Option<String>,
}

/// A created token: its record, and the secret shown this once.
#[derive(Serialize, Deserialize, utoipa::ToSchema)]
pub struct CreatedToken {
    #[serde(flatten)]
    pub record: TokenRecord,
    /// The secret (`brt_` and 40 base62 characters), shown only here.
    pub token: String,
}

/// The body that makes a project's deploy token.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewDeployToken {
    /// Unique in the project; the token's calls are made as
    /// `{name}@{project}.deploy.invalid`.
    pub name: DeployTokenName,
    /// Never expires when omitted.
    #[schema(minimum = 1, maximum = 365)]
    pub expires_in_days: Option<u32>,
    /// The most the token may do: `read` or `deploy`; omitted, an admin's
    /// rights in the project.
    pub ceiling: Option<Ceiling>,
    /// Only these environments of the project; omitted, all of them.
    #[schema(min_items = 1)]
    pub environments: Option<Vec<EnvironmentName>>,
}

/// A project's deploy token: owned by the project, not by the member who
/// made it, whom it outlives.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct DeployTokenRecord {
    pub id: String,
    pub name: DeployTokenName,
    pub project: ProjectName,
    pub prefix: String,
    /// Who the token's calls are made as: `getCurrentUser`'s `email`, the
    /// audit events' and the releases' `actor`.
    pub actor: String,
    /// The email of the member who made it.
    pub created_by: String,
    pub created_at: String,
    pub expires_at: Option<String>,
    pub last_used_at: Option<String>,
    /// `read` or `deploy`; `null`: an admin's rights in the project.
    pub ceiling: Option<Ceiling>,
    /// `null`: every environment of the project.
    pub environments: Option<Vec<EnvironmentName>>,
}

/// A created deploy token: its record, and the secret shown this once.
#[derive(Serialize, Deserialize, utoipa::ToSchema)]
pub struct CreatedDeployToken {
    #[serde(flatten)]
    pub record: DeployTokenRecord,
    /// The secret (`brd_`, 32 base62 characters, `_`, the project's uid),
    /// shown only here.
    pub token: String,
}
