//! Operation ids (DESIGN §3): the `action` of audit events and the OpenAPI
//! `operationId`. Stable once released.

use serde::Serialize;

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
