//! Operation ids (DESIGN §3): the `action` of audit events and the OpenAPI
//! `operationId`. Stable once released.

use serde::Serialize;

use crate::Permission;

macro_rules! operations {
    ($($variant:ident => $id:literal,)*) => {
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
        pub enum Operation { $($variant,)* }

        impl Operation {
            pub const ALL: &'static [Operation] = &[$(Operation::$variant,)*];

            pub fn id(self) -> &'static str {
                match self { $(Operation::$variant => $id,)* }
            }
        }
    };
}

operations! {
    Login => "login",
    Logout => "logout",
    GetCurrentUser => "getCurrentUser",
    ChangePassword => "changePassword",
    ListProjects => "listProjects",
    CreateProject => "createProject",
    GetProject => "getProject",
    DeleteProject => "deleteProject",
    ListEnvironments => "listEnvironments",
    CreateEnvironment => "createEnvironment",
    GetEnvironment => "getEnvironment",
    DeleteEnvironment => "deleteEnvironment",
    RestoreEnvironment => "restoreEnvironment",
    ListApps => "listApps",
    CreateApp => "createApp",
    GetApp => "getApp",
    UpdateApp => "updateApp",
    DeleteApp => "deleteApp",
    GetAppLogs => "getAppLogs",
    ListReleases => "listReleases",
    RollbackApp => "rollbackApp",
    PromoteApp => "promoteApp",
    RestartApp => "restartApp",
    RunApp => "runApp",
    CheckAppDomains => "checkAppDomains",
    ListSecrets => "listSecrets",
    PutSecret => "putSecret",
    DeleteSecret => "deleteSecret",
    ListTemplates => "listTemplates",
    DeployTemplate => "deployTemplate",
    ListTokens => "listTokens",
    CreateToken => "createToken",
    DeleteToken => "deleteToken",
    ListMembers => "listMembers",
    InviteMember => "inviteMember",
    UpdateMember => "updateMember",
    RemoveMember => "removeMember",
    ListAuditEvents => "listAuditEvents",
    GetHealthDetails => "getHealthDetails",
    GetHealth => "getHealth",
    UnknownRoute => "unknownRoute",
}

impl Operation {
    /// The least permission a caller needs for the operation at all (DESIGN
    /// §5), checked before the body is read, so that a caller who may not
    /// make the call learns that first. Handlers check what a particular
    /// request needs beyond it (a new image, a production environment).
    pub fn minimum_permission(self) -> Option<Permission> {
        use Operation::*;
        Some(match self {
            ListProjects | GetProject | ListEnvironments | GetEnvironment | ListApps | GetApp
            | GetAppLogs | ListReleases | CheckAppDomains | ListSecrets | ListTemplates
            | ListMembers => Permission::Read,
            CreateProject | DeleteProject => Permission::ProjectWrite,
            CreateEnvironment | DeleteEnvironment => Permission::EnvWrite,
            RestoreEnvironment => Permission::EnvDeleteProtected,
            CreateApp | DeleteApp | RollbackApp | PromoteApp | DeployTemplate => {
                Permission::AppDeploy
            }
            UpdateApp | RestartApp | RunApp => Permission::AppOperate,
            PutSecret | DeleteSecret => Permission::SecretWrite,
            InviteMember | UpdateMember | RemoveMember => Permission::MemberManage,
            ListAuditEvents => Permission::AuditRead,
            Login | Logout | GetCurrentUser | ChangePassword | ListTokens | CreateToken
            | DeleteToken | GetHealthDetails | GetHealth | UnknownRoute => return None,
        })
    }

    /// What a caller whose password must change may still do (DESIGN §4).
    pub fn allowed_before_password_change(self) -> bool {
        matches!(
            self,
            Operation::GetCurrentUser | Operation::ChangePassword | Operation::Logout
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique() {
        let mut ids: Vec<_> = Operation::ALL.iter().map(|op| op.id()).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), Operation::ALL.len());
    }
}
