//! Operation ids: the `action` of audit events and the OpenAPI
//! `operationId`, stable once released; and who may call each.

use serde::Serialize;

use crate::Permission;

macro_rules! operations {
    ($($variant:ident => $id:literal, $access:expr;)*) => {
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
        pub enum Operation { $($variant,)* }

        impl Operation {
            pub const ALL: &'static [Operation] = &[$(Operation::$variant,)*];

            pub const fn id(self) -> &'static str {
                match self { $(Operation::$variant => $id,)* }
            }

            /// Who may call the operation at all, checked by
            /// the `Caller` extractor before the body is read, so that a
            /// caller who may not make the call learns that first. What a
            /// particular request needs beyond it (a new image, a
            /// production environment) its rules require of the caller the
            /// same way, with `Principal::require`.
            pub const fn access(self) -> Access {
                match self { $(Operation::$variant => $access,)* }
            }
        }
    };
}

/// Who may call an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Anyone: the description says so with an empty `security`.
    Public,
    /// Any signed-in caller (a session or an API token).
    SignedIn,
    /// A signed-in caller whose role grants the permission.
    Needs(Permission),
    /// A Berth-issued registry credential (HTTP Basic), which the handler
    /// checks itself: never a session or an API token.
    RegistryCredential,
}

use Access::{Needs, Public, RegistryCredential, SignedIn};
use Permission::*;

operations! {
    Login => "login", Public;
    Logout => "logout", SignedIn;
    GetCurrentUser => "getCurrentUser", SignedIn;
    ChangePassword => "changePassword", SignedIn;
    ListProjects => "listProjects", Needs(Read);
    CreateProject => "createProject", Needs(ProjectWrite);
    GetProject => "getProject", Needs(Read);
    DeleteProject => "deleteProject", Needs(ProjectWrite);
    ListProjectMembers => "listProjectMembers", Needs(Read);
    // `member-manage` is the organization's: no project role gives it.
    SetProjectMember => "setProjectMember", Needs(MemberManage);
    RemoveProjectMember => "removeProjectMember", Needs(MemberManage);
    ListDeployTokens => "listDeployTokens", Needs(ProjectWrite);
    CreateDeployToken => "createDeployToken", Needs(ProjectWrite);
    DeleteDeployToken => "deleteDeployToken", Needs(ProjectWrite);
    ListProjectAuditEvents => "listProjectAuditEvents", Needs(AuditRead);
    ListEnvironments => "listEnvironments", Needs(Read);
    CreateEnvironment => "createEnvironment", Needs(EnvWrite);
    GetEnvironment => "getEnvironment", Needs(Read);
    // A production environment needs `env-delete-protected` (its rules).
    DeleteEnvironment => "deleteEnvironment", Needs(EnvWrite);
    RestoreEnvironment => "restoreEnvironment", Needs(EnvDeleteProtected);
    ListApps => "listApps", Needs(Read);
    CreateApp => "createApp", Needs(AppDeploy);
    GetApp => "getApp", Needs(Read);
    // Beyond `app-operate`: `app-write` or `app-deploy`, by field (its rules).
    UpdateApp => "updateApp", Needs(AppOperate);
    DeleteApp => "deleteApp", Needs(EnvWrite);
    GetAppLogs => "getAppLogs", Needs(Read);
    ListReleases => "listReleases", Needs(Read);
    RollbackApp => "rollbackApp", Needs(AppDeploy);
    PromoteApp => "promoteApp", Needs(AppDeploy);
    RestartApp => "restartApp", Needs(AppOperate);
    RunApp => "runApp", Needs(AppOperate);
    // Any code, with the app's secrets: as deploying an image.
    RunCommand => "runCommand", Needs(AppDeploy);
    ListCommands => "listCommands", Needs(Read);
    GetCommand => "getCommand", Needs(Read);
    // A command's output is an app's log, as `getAppLogs`.
    GetCommandLogs => "getCommandLogs", Needs(Read);
    CheckAppDomains => "checkAppDomains", Needs(Read);
    CreateBuild => "createBuild", Needs(AppDeploy);
    CancelBuild => "cancelBuild", Needs(AppDeploy);
    ListBuilds => "listBuilds", Needs(Read);
    GetBuild => "getBuild", Needs(Read);
    GetBuildLogs => "getBuildLogs", Needs(Read);
    CreateWebhook => "createWebhook", Needs(AppDeploy);
    GetWebhook => "getWebhook", Needs(Read);
    DeleteWebhook => "deleteWebhook", Needs(AppDeploy);
    // No credentials: the hook's signature, checked by its rules.
    ReceiveWebhook => "receiveWebhook", Public;
    // The registry's token service (Docker Registry token authentication).
    GetRegistryToken => "getRegistryToken", RegistryCredential;
    RequestRegistryToken => "requestRegistryToken", RegistryCredential;
    ListSecrets => "listSecrets", Needs(Read);
    PutSecret => "putSecret", Needs(SecretWrite);
    DeleteSecret => "deleteSecret", Needs(SecretWrite);
    ListTemplates => "listTemplates", Needs(Read);
    DeployTemplate => "deployTemplate", Needs(AppDeploy);
    ListTokens => "listTokens", SignedIn;
    CreateToken => "createToken", SignedIn;
    DeleteToken => "deleteToken", SignedIn;
    ListMembers => "listMembers", Needs(Read);
    InviteMember => "inviteMember", Needs(MemberManage);
    UpdateMember => "updateMember", Needs(MemberManage);
    RemoveMember => "removeMember", Needs(MemberManage);
    ListAuditEvents => "listAuditEvents", Needs(AuditRead);
    GetHealthDetails => "getHealthDetails", SignedIn;
    GetHealth => "getHealth", Public;
    GetApiDescription => "getApiDescription", Public;
    UnknownRoute => "unknownRoute", Public;
}

/// What the platform's operator does through `berth-admin` that the
/// organization's audit log records (beside the API's operations).
pub const OPERATOR_ACTIONS: &[&str] = &[VERIFY_DOMAIN];
/// `berth-admin domains verify`.
pub const VERIFY_DOMAIN: &str = "verifyDomain";

/// Every `action` an audit event can hold: the operation ids, and the
/// operator's actions.
pub fn audited_actions() -> impl Iterator<Item = &'static str> {
    (Operation::ALL.iter().map(|operation| operation.id())).chain(OPERATOR_ACTIONS.iter().copied())
}

impl Operation {
    /// The operation a handler serves: the one it is named after
    /// (`list_secrets` serves `listSecrets`).
    pub fn of_handler(name: &str) -> Option<Operation> {
        Operation::ALL.iter().copied().find(|operation| {
            let mut id = operation.id().chars();
            let mut words = name.chars().filter(|c| *c != '_');
            loop {
                match (id.next(), words.next()) {
                    (None, None) => return true,
                    (Some(a), Some(b)) if a.eq_ignore_ascii_case(&b) => {}
                    _ => return false,
                }
            }
        })
    }

    /// The permission the operation needs at all, if any.
    pub fn minimum_permission(self) -> Option<Permission> {
        match self.access() {
            Needs(permission) => Some(permission),
            Public | SignedIn | RegistryCredential => None,
        }
    }

    /// What a caller whose password must change may still do.
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

    #[test]
    fn handlers_are_named_after_their_operations() {
        assert_eq!(
            Operation::of_handler("list_secrets"),
            Some(Operation::ListSecrets)
        );
        assert_eq!(
            Operation::of_handler("get_api_description"),
            Some(Operation::GetApiDescription)
        );
        assert_eq!(Operation::of_handler("list_secret"), None);
        assert_eq!(Operation::of_handler("list_secretss"), None);
        for operation in Operation::ALL {
            assert_eq!(
                Operation::of_handler(operation.id()),
                Some(*operation),
                "{operation:?}"
            );
        }
    }
}
