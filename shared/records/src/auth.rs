//! Signing in and changing one's password.

use serde::{Deserialize, Serialize};

use berth_domain::names::{EnvironmentName, OrgName, ProjectName};
use berth_domain::{Ceiling, Permission, ProjectRole, Role};

/// No `Debug`: it holds a password.
#[derive(Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LoginBody {
    #[schema(min_length = 1)]
    pub email: String,
    #[schema(min_length = 1, format = Password)]
    pub password: String,
}

/// No `Debug`: it holds passwords.
#[derive(Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PasswordChange {
    #[schema(format = Password)]
    pub current_password: String,
    /// 12 to 256 characters, different from the current one.
    #[schema(format = Password, min_length = 12, max_length = 256)]
    pub new_password: String,
}

#[derive(Serialize, Deserialize, utoipa::ToSchema)]
pub struct PasswordChanged {
    pub changed: bool,
}

/// The Identity record of login and `GET /api/v1/me`.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Identity {
    pub id: String,
    pub email: String,
    pub display_name: Option<String>,
    /// How the caller is signed in: `session` or `token`.
    #[schema(value_type = String, pattern = "^(session|token)$")]
    pub via: String,
    pub must_change_password: bool,
}

/// `GET /api/v1/me`: the Identity, and what the caller may do, as the
/// checks that enforce it decide for these credentials.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct CurrentUser {
    #[serde(flatten)]
    pub identity: Identity,
    pub access: Access,
}

/// What the caller may do: permission names of the table of roles
/// (`read`, `app-operate`, `app-write`, `app-deploy`, `secret-write`,
/// `env-write`, `secret-read`, `env-delete-protected`, `project-write`,
/// `member-manage`, `audit-read`, `manage-owners`), after its role, its
/// project roles, its token's ceiling and scope. Every list is empty while
/// the password must change.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Access {
    /// The caller's organization (each account belongs to one).
    pub organization: OrgName,
    /// The caller's role in it (`member`: none outside its projects).
    pub role: Role,
    /// The token's ceiling; `null` for a session or a token with its
    /// owner's rights.
    #[schema(required = true)]
    pub ceiling: Option<Ceiling>,
    /// On the organization itself: calls naming no project (members, the
    /// organization's audit log, creating a project).
    pub permissions: Vec<Permission>,
    /// In every project of the organization that `projects` does not list
    /// (empty for a caller limited to some projects: a `member`, a scoped
    /// token, a deploy token).
    pub project_permissions: Vec<Permission>,
    /// The projects where the caller's rights are its own: those it holds a
    /// role in, or its token's scope; by name, at most 500.
    pub projects: Vec<ProjectAccess>,
    /// Whether `projects` was cut at 500.
    pub projects_truncated: bool,
}

/// The caller's rights in one project.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ProjectAccess {
    pub project: ProjectName,
    /// The caller's role in the project, if it holds one.
    #[schema(required = true)]
    pub role: Option<ProjectRole>,
    /// In the project: its own operations and, unless `environments` is
    /// given, in every environment of it.
    pub permissions: Vec<Permission>,
    /// `null`: every environment of the project. Otherwise the only
    /// environments the caller's token reaches, each with what it may do
    /// there; `permissions` then holds for the project itself only.
    #[schema(required = true)]
    pub environments: Option<Vec<EnvironmentAccess>>,
}

/// The caller's rights in one environment its token is limited to.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct EnvironmentAccess {
    pub environment: EnvironmentName,
    pub permissions: Vec<Permission>,
}
