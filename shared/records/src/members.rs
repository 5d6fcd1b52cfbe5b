//! A member of an organization: the bodies that invite one and change a
//! member's role, its record, and the account an invitation made.

use serde::{Deserialize, Serialize};

use berth_domain::names::ProjectName;
use berth_domain::{ProjectRole, Role};

#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Invitation {
    #[schema(format = Email)]
    pub email: String,
    #[schema(value_type = Role)]
    pub role: String,
    /// Not only white space.
    #[schema(
        min_length = 1,
        max_length = 100,
        pattern = "[^\\t\\n\\u000b\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
    )]
    pub display_name: Option<String>,
}

#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RoleChange {
    #[schema(value_type = Role)]
    pub role: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, utoipa::ToSchema)]
pub struct MemberRecord {
    pub id: String,
    pub email: String,
    pub display_name: Option<String>,
    /// The role in the organization; `member` gives nothing beyond the
    /// member's project roles.
    pub role: Role,
    pub must_change_password: bool,
    pub active: bool,
    /// The member's roles in single projects, by project name.
    pub projects: Vec<ProjectGrantRecord>,
}

/// A member's role in one project.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, utoipa::ToSchema)]
pub struct ProjectGrantRecord {
    pub project: ProjectName,
    pub role: ProjectRole,
}

/// The body that gives a member a role in a project, or changes it.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProjectRoleChange {
    pub role: ProjectRole,
}

/// A member holding a role in a project: who, and the two roles that
/// together decide what the member may do there (the greater wins).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, utoipa::ToSchema)]
pub struct ProjectMemberRecord {
    pub id: String,
    pub email: String,
    pub display_name: Option<String>,
    /// The role in the organization.
    pub organization_role: Role,
    /// The role in this project.
    pub role: ProjectRole,
}

/// A new account and the temporary password it was given, shown this once.
#[derive(Serialize, Deserialize, utoipa::ToSchema)]
pub struct NewMember {
    #[serde(flatten)]
    pub member: MemberRecord,
    pub temporary_password: String,
}
