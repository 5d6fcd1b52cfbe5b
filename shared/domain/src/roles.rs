//! Roles and the permissions each grants.

use serde::{Deserialize, Serialize};

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// No permission in the organization: what a member holding only
    /// project roles has outside those projects.
    Member,
    Viewer,
    Operator,
    Developer,
    Admin,
    Owner,
}

/// A permission of the table of roles, named as the guide, the errors and
/// `getCurrentUser`'s `access` name it (`app-deploy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Permission {
    Read,
    AppOperate,
    AppWrite,
    AppDeploy,
    SecretWrite,
    EnvWrite,
    SecretRead,
    EnvDeleteProtected,
    ProjectWrite,
    MemberManage,
    AuditRead,
    ManageOwners,
}

impl Role {
    pub const ALL: [Role; 6] = [
        Role::Member,
        Role::Viewer,
        Role::Operator,
        Role::Developer,
        Role::Admin,
        Role::Owner,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Member => "member",
            Role::Viewer => "viewer",
            Role::Operator => "operator",
            Role::Developer => "developer",
            Role::Admin => "admin",
            Role::Owner => "owner",
        }
    }

    pub fn parse(value: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|role| role.as_str() == value)
    }

    /// The least role that holds each permission; roles are strictly
    /// ordered, and `member` holds none.
    pub fn grants(self, permission: Permission) -> bool {
        use Permission::*;
        let least = match permission {
            Read => Role::Viewer,
            AppOperate | AppWrite => Role::Operator,
            AppDeploy | SecretWrite | EnvWrite => Role::Developer,
            SecretRead | EnvDeleteProtected | ProjectWrite | MemberManage | AuditRead => {
                Role::Admin
            }
            ManageOwners => Role::Owner,
        };
        self >= least
    }
}

/// A member's role in one project: the organization roles below `owner`,
/// whose permissions hold in that project's environments, apps, secrets,
/// builds, webhooks and deploy tokens, and on the project itself. The
/// organization's own permissions (`member-manage`, `manage-owners`) are
/// never a project's to give.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum ProjectRole {
    Viewer,
    Operator,
    Developer,
    Admin,
}

impl ProjectRole {
    pub const ALL: [ProjectRole; 4] = [
        ProjectRole::Viewer,
        ProjectRole::Operator,
        ProjectRole::Developer,
        ProjectRole::Admin,
    ];

    /// The organization role whose permissions this one gives, in its project.
    pub fn role(self) -> Role {
        match self {
            ProjectRole::Viewer => Role::Viewer,
            ProjectRole::Operator => Role::Operator,
            ProjectRole::Developer => Role::Developer,
            ProjectRole::Admin => Role::Admin,
        }
    }

    pub fn as_str(self) -> &'static str {
        self.role().as_str()
    }

    pub fn grants(self, permission: Permission) -> bool {
        !permission.is_organizational() && self.role().grants(permission)
    }
}

impl Permission {
    /// A permission over the organization itself, which no project role
    /// gives: managing its members (and their project roles), and its owners.
    pub fn is_organizational(self) -> bool {
        matches!(self, Permission::MemberManage | Permission::ManageOwners)
    }

    /// Every permission, in the order of the guide's table of roles.
    pub const ALL: [Permission; 12] = [
        Permission::Read,
        Permission::AppOperate,
        Permission::AppWrite,
        Permission::AppDeploy,
        Permission::SecretWrite,
        Permission::EnvWrite,
        Permission::SecretRead,
        Permission::EnvDeleteProtected,
        Permission::ProjectWrite,
        Permission::MemberManage,
        Permission::AuditRead,
        Permission::ManageOwners,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Permission::Read => "read",
            Permission::AppOperate => "app-operate",
            Permission::AppWrite => "app-write",
            Permission::AppDeploy => "app-deploy",
            Permission::SecretWrite => "secret-write",
            Permission::EnvWrite => "env-write",
            Permission::SecretRead => "secret-read",
            Permission::EnvDeleteProtected => "env-delete-protected",
            Permission::ProjectWrite => "project-write",
            Permission::MemberManage => "member-manage",
            Permission::AuditRead => "audit-read",
            Permission::ManageOwners => "manage-owners",
        }
    }
}

/// The most an API token may do, whatever its owner may: `read` (the
/// `read` permission only) or `deploy` (`read`, `app-operate`,
/// `app-write`, `app-deploy`). A token without one has its owner's
/// rights. Either way a token never does more than its owner may at the
/// time of the call: the two are intersected at every request.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Ceiling {
    Read,
    Deploy,
}

impl Ceiling {
    pub fn as_str(self) -> &'static str {
        match self {
            Ceiling::Read => "read",
            Ceiling::Deploy => "deploy",
        }
    }

    pub fn allows(self, permission: Permission) -> bool {
        use Permission::*;
        match self {
            Ceiling::Read => permission == Read,
            Ceiling::Deploy => matches!(permission, Read | AppOperate | AppWrite | AppDeploy),
        }
    }

    /// Whether a token limited to `ceiling` (none: unlimited) may do no
    /// more than one limited to `self`: what a limited token may create.
    pub fn covers(self, ceiling: Option<Ceiling>) -> bool {
        ceiling.is_some_and(|ceiling| ceiling <= self)
    }
}

#[cfg(test)]
mod tests {
    use super::Permission::*;
    use super::*;

    /// The table of roles (`docs/guide.md`), row by row: which roles hold each permission.
    #[test]
    fn matches_the_design_table() {
        let table: [(Permission, [bool; 6]); 12] = [
            (Read, [false, true, true, true, true, true]),
            (AppOperate, [false, false, true, true, true, true]),
            (AppWrite, [false, false, true, true, true, true]),
            (AppDeploy, [false, false, false, true, true, true]),
            (SecretWrite, [false, false, false, true, true, true]),
            (EnvWrite, [false, false, false, true, true, true]),
            (SecretRead, [false, false, false, false, true, true]),
            (EnvDeleteProtected, [false, false, false, false, true, true]),
            (ProjectWrite, [false, false, false, false, true, true]),
            (MemberManage, [false, false, false, false, true, true]),
            (AuditRead, [false, false, false, false, true, true]),
            (ManageOwners, [false, false, false, false, false, true]),
        ];
        assert_eq!(table.map(|(permission, _)| permission), Permission::ALL);
        for (permission, expected) in table {
            for (role, want) in Role::ALL.into_iter().zip(expected) {
                assert_eq!(
                    role.grants(permission),
                    want,
                    "{role:?} {}",
                    permission.as_str()
                );
            }
        }
    }

    /// Permission ids are kebab-case, like the operation table's permissions.
    #[test]
    fn permission_ids_are_kebab_case() {
        for permission in Permission::ALL {
            let id = permission.as_str();
            assert!(
                !id.is_empty() && id.chars().all(|c| c.is_ascii_lowercase() || c == '-'),
                "{id:?}"
            );
        }
        assert_eq!(ManageOwners.as_str(), "manage-owners");
        for permission in Permission::ALL {
            assert_eq!(
                serde_json::to_value(permission).ok(),
                Some(serde_json::Value::from(permission.as_str())),
                "serialized as named"
            );
        }
    }

    /// A project role gives its organization role's permissions, but never
    /// the organization's own.
    #[test]
    fn a_project_role_gives_no_organizational_permission() {
        for role in ProjectRole::ALL {
            for permission in Permission::ALL {
                assert_eq!(
                    role.grants(permission),
                    role.role().grants(permission) && !permission.is_organizational(),
                    "{role:?} {}",
                    permission.as_str()
                );
            }
        }
        assert!(ProjectRole::Admin.grants(AuditRead));
        assert!(ProjectRole::Admin.grants(ProjectWrite));
        assert!(!ProjectRole::Admin.grants(MemberManage));
        assert!(!Role::Member.grants(Read));
    }

    #[test]
    fn a_ceiling_allows_what_its_name_says() {
        let allowed = |ceiling: Ceiling| -> Vec<&str> {
            Permission::ALL
                .into_iter()
                .filter(|permission| ceiling.allows(*permission))
                .map(Permission::as_str)
                .collect()
        };
        assert_eq!(allowed(Ceiling::Read), ["read"]);
        assert_eq!(
            allowed(Ceiling::Deploy),
            ["read", "app-operate", "app-write", "app-deploy"]
        );
        assert!(Ceiling::Deploy.covers(Some(Ceiling::Read)));
        assert!(Ceiling::Deploy.covers(Some(Ceiling::Deploy)));
        assert!(!Ceiling::Read.covers(Some(Ceiling::Deploy)));
        assert!(!Ceiling::Deploy.covers(None), "an unlimited token is more");
    }

    #[test]
    fn parses_only_known_roles() {
        for role in Role::ALL {
            assert_eq!(Role::parse(role.as_str()), Some(role));
        }
        assert_eq!(Role::parse("root"), None);
        assert_eq!(Role::parse("Owner"), None);
    }
}
