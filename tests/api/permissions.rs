//! The permission matrix: every operation × each role, no credentials, the
//! owner of another organization, limited tokens, members holding roles in
//! single projects and a project's deploy token — with the expected
//! status, the error code, and the audit event each call leaves.

use http::Method;
use serde_json::{Value, json};

use crate::support::kubelet::{BuildEnd, KubeletLoop, keep_ending_build_pods};
use crate::support::{PASSWORD, TestApp, TestUser, unique};
use berth_cluster::crd::{BUILDS_NAMESPACE, LABEL_PROJECT};
use berth_domain::Role;

/// Who calls, in the order of the expectations below.
const CALLERS: [&str; 16] = [
    "viewer",
    "operator",
    "developer",
    "admin",
    "owner",
    "anonymous",
    "other-org",
    "owner's read token",
    "owner's deploy token",
    "owner's token scoped to the project",
    "owner's token scoped to another project",
    "member, the project's admin",
    "member, the project's viewer",
    "viewer, the project's developer",
    "member, another project's admin",
    "the project's deploy token (deploy)",
];

/// What a call acts on, made fresh for each call where the call consumes it.
#[derive(Clone, Copy)]
enum Target {
    Nothing,
    /// A viewer of `acme` (its id).
    Member,
    /// A project of `acme` shared by the calls (its name).
    Project,
    /// A fresh, empty project of `acme`.
    EmptyProject,
    /// A fresh standard environment in the shared project.
    StandardEnvironment,
    /// A fresh production environment in the shared project.
    ProductionEnvironment,
    /// A fresh production environment in the shared project, deleted (its
    /// purge waits out the grace).
    DeletedProductionEnvironment,
    /// The shared, provisioned environment (its path).
    Environment,
    /// A fresh app in the shared environment (its path).
    App,
    /// A fresh app in the shared environment with a webhook (its path).
    HookedApp,
    /// A fresh secret in the shared environment (its path).
    Secret,
    /// A fresh app with a source to build in the shared environment (its
    /// path).
    SourceApp,
    /// A build of a fresh app with a source (its path).
    Build,
    /// A `member` of `acme` without a role in the shared project (the
    /// project's path to it: `{project}/members/{id}`).
    ProjectMember,
    /// A `member` of `acme`, the shared project's viewer (as above).
    GrantedProjectMember,
    /// A deploy token of the shared project (`{project}/tokens/{id}`).
    DeployToken,
}

struct Case {
    operation: &'static str,
    method: Method,
    target: Target,
    path: fn(&str) -> String,
    body: Option<fn() -> Value>,
    expected: [u16; 16],
}

fn cases() -> Vec<Case> {
    use Target::*;
    let case = |operation, method, target, path, body, expected| Case {
        operation,
        method,
        target,
        path,
        body,
        expected,
    };
    vec![
        case(
            "getCurrentUser",
            Method::GET,
            Nothing,
            |_| "/api/v1/me".into(),
            None,
            [
                200, 200, 200, 200, 200, 401, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200,
            ],
        ),
        // A wrong current password: 422 shows the call got past authorization.
        case(
            "changePassword",
            Method::POST,
            Nothing,
            |_| "/api/v1/me/password".into(),
            Some(
                || json!({ "current_password": "not my password", "new_password": "whatever comes next" }),
            ),
            [
                422, 422, 422, 422, 422, 401, 422, 403, 403, 403, 403, 422, 422, 422, 422, 403,
            ],
        ),
        case(
            "logout",
            Method::POST,
            Nothing,
            |_| "/api/v1/auth/logout".into(),
            None,
            [
                204, 204, 204, 204, 204, 401, 204, 204, 204, 204, 204, 204, 204, 204, 204, 204,
            ],
        ),
        case(
            "listTokens",
            Method::GET,
            Nothing,
            |_| "/api/v1/tokens".into(),
            None,
            [
                200, 200, 200, 200, 200, 401, 200, 200, 200, 200, 200, 200, 200, 200, 200, 403,
            ],
        ),
        case(
            "createToken",
            Method::POST,
            Nothing,
            |_| "/api/v1/tokens".into(),
            Some(|| json!({ "name": "matrix" })),
            [
                201, 201, 201, 201, 201, 401, 201, 403, 403, 403, 403, 201, 201, 201, 201, 403,
            ],
        ),
        case(
            "deleteToken",
            Method::DELETE,
            Nothing,
            |_| "/api/v1/tokens/nosuchtoken0".into(),
            None,
            [
                404, 404, 404, 404, 404, 401, 404, 403, 403, 403, 403, 404, 404, 404, 404, 403,
            ],
        ),
        case(
            "listMembers",
            Method::GET,
            Nothing,
            |_| "/api/v1/members".into(),
            None,
            [
                200, 200, 200, 200, 200, 401, 200, 200, 200, 403, 403, 403, 403, 200, 403, 403,
            ],
        ),
        case(
            "inviteMember",
            Method::POST,
            Nothing,
            |_| "/api/v1/members".into(),
            Some(
                || json!({ "email": format!("{}@example.org", uuid::Uuid::new_v4().simple()), "role": "viewer" }),
            ),
            [
                403, 403, 403, 201, 201, 401, 201, 403, 403, 403, 403, 403, 403, 403, 403, 403,
            ],
        ),
        case(
            "updateMember",
            Method::PATCH,
            Member,
            |id| format!("/api/v1/members/{id}"),
            Some(|| json!({ "role": "operator" })),
            [
                403, 403, 403, 200, 200, 401, 404, 403, 403, 403, 403, 403, 403, 403, 403, 403,
            ],
        ),
        case(
            "removeMember",
            Method::DELETE,
            Member,
            |id| format!("/api/v1/members/{id}"),
            None,
            [
                403, 403, 403, 204, 204, 401, 404, 403, 403, 403, 403, 403, 403, 403, 403, 403,
            ],
        ),
        case(
            "listAuditEvents",
            Method::GET,
            Nothing,
            |_| "/api/v1/audit".into(),
            None,
            [
                403, 403, 403, 200, 200, 401, 200, 403, 403, 403, 403, 403, 403, 403, 403, 403,
            ],
        ),
        case(
            "getHealthDetails",
            Method::GET,
            Nothing,
            |_| "/api/v1/healthz/details".into(),
            None,
            [
                200, 200, 200, 200, 200, 401, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200,
            ],
        ),
        case(
            "getHealth",
            Method::GET,
            Nothing,
            |_| "/api/v1/healthz".into(),
            None,
            [
                200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200,
            ],
        ),
        case(
            "listProjects",
            Method::GET,
            Nothing,
            |_| "/api/v1/projects".into(),
            None,
            [
                200, 200, 200, 200, 200, 401, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200,
            ],
        ),
        case(
            "createProject",
            Method::POST,
            Nothing,
            |_| "/api/v1/projects".into(),
            Some(|| json!({ "name": unique("m"), "display_name": "Matrix" })),
            [
                403, 403, 403, 201, 201, 401, 201, 403, 403, 403, 403, 403, 403, 403, 403, 403,
            ],
        ),
        case(
            "getProject",
            Method::GET,
            Project,
            |p| format!("/api/v1/projects/{p}"),
            None,
            [
                200, 200, 200, 200, 200, 401, 404, 200, 200, 200, 404, 200, 200, 200, 404, 200,
            ],
        ),
        case(
            "deleteProject",
            Method::DELETE,
            EmptyProject,
            |p| format!("/api/v1/projects/{p}"),
            None,
            [
                403, 403, 403, 202, 202, 401, 404, 403, 403, 404, 404, 404, 404, 403, 404, 404,
            ],
        ),
        case(
            "listEnvironments",
            Method::GET,
            Project,
            |p| format!("/api/v1/projects/{p}/environments"),
            None,
            [
                200, 200, 200, 200, 200, 401, 404, 200, 200, 200, 404, 200, 200, 200, 404, 200,
            ],
        ),
        case(
            "createEnvironment",
            Method::POST,
            Project,
            |p| format!("/api/v1/projects/{p}/environments"),
            Some(|| json!({ "name": unique("e") })),
            [
                403, 403, 201, 201, 201, 401, 404, 403, 403, 201, 404, 201, 403, 201, 404, 403,
            ],
        ),
        case(
            "getEnvironment",
            Method::GET,
            StandardEnvironment,
            |e| e.to_owned(),
            None,
            [
                200, 200, 200, 200, 200, 401, 404, 200, 200, 200, 404, 200, 200, 200, 404, 200,
            ],
        ),
        case(
            "deleteEnvironment",
            Method::DELETE,
            StandardEnvironment,
            |e| e.to_owned(),
            None,
            [
                403, 403, 202, 202, 202, 401, 404, 403, 403, 202, 404, 202, 403, 202, 404, 403,
            ],
        ),
        case(
            "deleteEnvironment",
            Method::DELETE,
            ProductionEnvironment,
            |e| e.to_owned(),
            None,
            [
                403, 403, 403, 202, 202, 401, 404, 403, 403, 202, 404, 202, 403, 403, 404, 403,
            ],
        ),
        case(
            "restoreEnvironment",
            Method::POST,
            DeletedProductionEnvironment,
            |e| format!("{e}/restore"),
            None,
            [
                403, 403, 403, 200, 200, 401, 404, 403, 403, 200, 404, 200, 403, 403, 404, 403,
            ],
        ),
        case(
            "listApps",
            Method::GET,
            Environment,
            |e| format!("{e}/apps"),
            None,
            [
                200, 200, 200, 200, 200, 401, 404, 200, 200, 200, 404, 200, 200, 200, 404, 200,
            ],
        ),
        case(
            "createApp",
            Method::POST,
            Environment,
            |e| format!("{e}/apps"),
            Some(|| json!({ "name": unique("a"), "image": "nginx:1.27" })),
            [
                403, 403, 201, 201, 201, 401, 404, 403, 201, 201, 404, 201, 403, 201, 404, 201,
            ],
        ),
        case(
            "getApp",
            Method::GET,
            App,
            |a| a.to_owned(),
            None,
            [
                200, 200, 200, 200, 200, 401, 404, 200, 200, 200, 404, 200, 200, 200, 404, 200,
            ],
        ),
        // Replicas alone need app-operate; a new image needs app-deploy.
        case(
            "updateApp",
            Method::PATCH,
            App,
            |a| a.to_owned(),
            Some(|| json!({ "replicas": 2 })),
            [
                403, 200, 200, 200, 200, 401, 404, 403, 200, 200, 404, 200, 403, 200, 404, 200,
            ],
        ),
        case(
            "updateApp",
            Method::PATCH,
            App,
            |a| a.to_owned(),
            Some(|| json!({ "image": "nginx:1.28" })),
            [
                403, 403, 200, 200, 200, 401, 404, 403, 200, 200, 404, 200, 403, 200, 404, 200,
            ],
        ),
        // env decides what code does (NODE_OPTIONS, LD_PRELOAD…): a deploy.
        case(
            "updateApp",
            Method::PATCH,
            App,
            |a| a.to_owned(),
            Some(|| json!({ "env": [{ "name": "NODE_OPTIONS", "value": "--require ./x.js" }] })),
            [
                403, 403, 200, 200, 200, 401, 404, 403, 200, 200, 404, 200, 403, 200, 404, 200,
            ],
        ),
        case(
            "updateApp",
            Method::PATCH,
            App,
            |a| a.to_owned(),
            // Each caller's app its own hostname: a hostname serves one app.
            Some(|| json!({ "domains": [format!("{}.example.com", unique("matrix"))] })),
            [
                403, 200, 200, 200, 200, 401, 404, 403, 200, 200, 404, 200, 403, 200, 404, 200,
            ],
        ),
        case(
            "deleteApp",
            Method::DELETE,
            App,
            |a| a.to_owned(),
            None,
            // `env-write`, which a `deploy` ceiling excludes: a pipeline
            // deploys, it never destroys.
            [
                403, 403, 204, 204, 204, 401, 404, 403, 403, 204, 404, 204, 403, 204, 404, 403,
            ],
        ),
        case(
            "listReleases",
            Method::GET,
            App,
            |a| format!("{a}/releases"),
            None,
            [
                200, 200, 200, 200, 200, 401, 404, 200, 200, 200, 404, 200, 200, 200, 404, 200,
            ],
        ),
        case(
            "rollbackApp",
            Method::POST,
            App,
            |a| format!("{a}/rollback"),
            Some(|| json!({ "revision": 1 })),
            [
                403, 403, 200, 200, 200, 401, 404, 403, 200, 200, 404, 200, 403, 200, 404, 200,
            ],
        ),
        case(
            "getAppLogs",
            Method::GET,
            App,
            |a| format!("{a}/logs"),
            None,
            [
                200, 200, 200, 200, 200, 401, 404, 200, 200, 200, 404, 200, 200, 200, 404, 200,
            ],
        ),
        case(
            "restartApp",
            Method::POST,
            App,
            |a| format!("{a}/restart"),
            None,
            [
                403, 202, 202, 202, 202, 401, 404, 403, 202, 202, 404, 202, 403, 202, 404, 202,
            ],
        ),
        // The app has no scheduled process: 422 shows the call got past
        // authorization.
        case(
            "runApp",
            Method::POST,
            App,
            |a| format!("{a}/run"),
            None,
            [
                403, 422, 422, 422, 422, 401, 404, 403, 422, 422, 404, 422, 403, 422, 404, 422,
            ],
        ),
        // No such process: 422 shows the call got past authorization.
        case(
            "runCommand",
            Method::POST,
            App,
            |a| format!("{a}/commands"),
            Some(|| json!({ "command": ["true"], "process": "nosuch" })),
            [
                403, 403, 422, 422, 422, 401, 404, 403, 422, 422, 404, 422, 403, 422, 404, 422,
            ],
        ),
        case(
            "listCommands",
            Method::GET,
            App,
            |a| format!("{a}/commands"),
            None,
            [
                200, 200, 200, 200, 200, 401, 404, 200, 200, 200, 404, 200, 200, 200, 404, 200,
            ],
        ),
        // No such command: its 404 (`commands` tests a command's own).
        case(
            "getCommand",
            Method::GET,
            App,
            |a| format!("{a}/commands/cmd-bbbbbbbbbbbb"),
            None,
            [
                404, 404, 404, 404, 404, 401, 404, 404, 404, 404, 404, 404, 404, 404, 404, 404,
            ],
        ),
        case(
            "getCommandLogs",
            Method::GET,
            App,
            |a| format!("{a}/commands/cmd-bbbbbbbbbbbb/logs"),
            None,
            [
                404, 404, 404, 404, 404, 401, 404, 404, 404, 404, 404, 404, 404, 404, 404, 404,
            ],
        ),
        case(
            "listTemplates",
            Method::GET,
            Nothing,
            |_| "/api/v1/templates".into(),
            None,
            [
                200, 200, 200, 200, 200, 401, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200,
            ],
        ),
        case(
            "deployTemplate",
            Method::POST,
            Environment,
            |e| format!("{e}/templates/nginx"),
            Some(|| json!({ "name": unique("t") })),
            [
                403, 403, 201, 201, 201, 401, 404, 403, 201, 201, 404, 201, 403, 201, 404, 201,
            ],
        ),
        // No such environment: 422 shows the call got past authorization.
        case(
            "promoteApp",
            Method::POST,
            App,
            |a| format!("{a}/promote"),
            Some(|| json!({ "environment": "nosuch" })),
            [
                403, 403, 422, 422, 422, 401, 404, 403, 422, 422, 404, 422, 403, 422, 404, 422,
            ],
        ),
        case(
            "listSecrets",
            Method::GET,
            Environment,
            |e| format!("{e}/secrets"),
            None,
            [
                200, 200, 200, 200, 200, 401, 404, 200, 200, 200, 404, 200, 200, 200, 404, 200,
            ],
        ),
        case(
            "putSecret",
            Method::PUT,
            Environment,
            |e| format!("{e}/secrets/{}", unique("s")),
            Some(|| json!({ "data": { "password": "matrix" } })),
            [
                403, 403, 201, 201, 201, 401, 404, 403, 403, 201, 404, 201, 403, 201, 404, 403,
            ],
        ),
        case(
            "deleteSecret",
            Method::DELETE,
            Secret,
            |s| s.to_owned(),
            None,
            [
                403, 403, 204, 204, 204, 401, 404, 403, 403, 204, 404, 204, 403, 204, 404, 403,
            ],
        ),
        // The app has no domains: no name server is asked.
        case(
            "checkAppDomains",
            Method::GET,
            App,
            |a| format!("{a}/domains"),
            None,
            [
                200, 200, 200, 200, 200, 401, 404, 200, 200, 200, 404, 200, 200, 200, 404, 200,
            ],
        ),
        case(
            "createWebhook",
            Method::POST,
            App,
            |a| format!("{a}/webhook"),
            None,
            [
                403, 403, 201, 201, 201, 401, 404, 403, 201, 201, 404, 201, 403, 201, 404, 201,
            ],
        ),
        case(
            "getWebhook",
            Method::GET,
            HookedApp,
            |a| format!("{a}/webhook"),
            None,
            [
                200, 200, 200, 200, 200, 401, 404, 200, 200, 200, 404, 200, 200, 200, 404, 200,
            ],
        ),
        case(
            "deleteWebhook",
            Method::DELETE,
            HookedApp,
            |a| format!("{a}/webhook"),
            None,
            [
                403, 403, 204, 204, 204, 401, 404, 403, 204, 204, 404, 204, 403, 204, 404, 204,
            ],
        ),
        case(
            "listBuilds",
            Method::GET,
            SourceApp,
            |a| format!("{a}/builds"),
            None,
            [
                200, 200, 200, 200, 200, 401, 404, 200, 200, 200, 404, 200, 200, 200, 404, 200,
            ],
        ),
        case(
            "createBuild",
            Method::POST,
            SourceApp,
            |a| format!("{a}/builds"),
            Some(|| json!({ "ref": "main" })),
            [
                403, 403, 202, 202, 202, 401, 404, 403, 202, 202, 404, 202, 403, 202, 404, 202,
            ],
        ),
        case(
            "getBuild",
            Method::GET,
            Build,
            |b| b.to_owned(),
            None,
            [
                200, 200, 200, 200, 200, 401, 404, 200, 200, 200, 404, 200, 200, 200, 404, 200,
            ],
        ),
        case(
            "getBuildLogs",
            Method::GET,
            Build,
            |b| format!("{b}/logs"),
            None,
            [
                200, 200, 200, 200, 200, 401, 404, 200, 200, 200, 404, 200, 200, 200, 404, 200,
            ],
        ),
        // The build has finished (its source cannot be fetched): 409 shows
        // the call got past authorization.
        case(
            "cancelBuild",
            Method::POST,
            Build,
            |b| format!("{b}/cancel"),
            None,
            [
                403, 403, 409, 409, 409, 401, 404, 403, 409, 409, 404, 409, 403, 409, 404, 409,
            ],
        ),
        case(
            "listProjectMembers",
            Method::GET,
            Project,
            |p| format!("/api/v1/projects/{p}/members"),
            None,
            [
                200, 200, 200, 200, 200, 401, 404, 200, 200, 200, 404, 200, 200, 200, 404, 200,
            ],
        ),
        // `member-manage` is the organization's: no project role gives it.
        case(
            "setProjectMember",
            Method::PUT,
            ProjectMember,
            |m| format!("/api/v1/projects/{m}"),
            Some(|| json!({ "role": "viewer" })),
            [
                403, 403, 403, 200, 200, 401, 404, 403, 403, 200, 404, 403, 403, 403, 404, 403,
            ],
        ),
        case(
            "removeProjectMember",
            Method::DELETE,
            GrantedProjectMember,
            |m| format!("/api/v1/projects/{m}"),
            None,
            [
                403, 403, 403, 204, 204, 401, 404, 403, 403, 204, 404, 403, 403, 403, 404, 403,
            ],
        ),
        case(
            "listDeployTokens",
            Method::GET,
            Project,
            |p| format!("/api/v1/projects/{p}/tokens"),
            None,
            [
                403, 403, 403, 200, 200, 401, 404, 403, 403, 200, 404, 200, 403, 403, 404, 403,
            ],
        ),
        case(
            "createDeployToken",
            Method::POST,
            Project,
            |p| format!("/api/v1/projects/{p}/tokens"),
            Some(|| json!({ "name": unique("m") })),
            [
                403, 403, 403, 201, 201, 401, 404, 403, 403, 201, 404, 201, 403, 403, 404, 403,
            ],
        ),
        case(
            "deleteDeployToken",
            Method::DELETE,
            DeployToken,
            |t| format!("/api/v1/projects/{t}"),
            None,
            [
                403, 403, 403, 204, 204, 401, 404, 403, 403, 204, 404, 204, 403, 403, 404, 403,
            ],
        ),
        case(
            "listProjectAuditEvents",
            Method::GET,
            Project,
            |p| format!("/api/v1/projects/{p}/audit"),
            None,
            [
                403, 403, 403, 200, 200, 401, 404, 403, 403, 200, 404, 200, 403, 403, 404, 403,
            ],
        ),
        // No role signs a delivery: only the hook's secret does. Audited in
        // the caller's organization (an unknown hook has none).
        case(
            "receiveWebhook",
            Method::POST,
            Nothing,
            |_| "/api/v1/hooks/aaaaaaaaaaaa".into(),
            Some(|| json!({ "ref": "refs/heads/main" })),
            [
                401, 401, 401, 401, 401, 401, 401, 401, 401, 401, 401, 401, 401, 401, 401, 401,
            ],
        ),
    ]
}

async fn make_target(app: &TestApp, target: Target, project: &str, shared: &str) -> String {
    let environment = |env_type: &'static str| async move {
        let name = unique("e");
        app.post(&format!("/api/v1/projects/{project}/environments"))
            .by(&app.owner)
            .json(json!({ "name": name, "env_type": env_type }))
            .send()
            .await
            .assert_status(201);
        format!("/api/v1/projects/{project}/environments/{name}")
    };
    match target {
        Target::Nothing => String::new(),
        Target::Member => app.user(Role::Viewer).await.id,
        Target::Project => project.to_owned(),
        Target::EmptyProject => app.create_project("empty").await,
        Target::StandardEnvironment => environment("standard").await,
        Target::ProductionEnvironment => environment("production").await,
        Target::DeletedProductionEnvironment => {
            let path = environment("production").await;
            app.request(Method::DELETE, &path)
                .by(&app.owner)
                .send()
                .await
                .assert_status(202);
            path
        }
        Target::Environment => shared.to_owned(),
        Target::App | Target::HookedApp => {
            let name = unique("a");
            app.post(&format!("{shared}/apps"))
                .by(&app.owner)
                .json(json!({ "name": name, "image": "nginx:1.27" }))
                .send()
                .await
                .assert_status(201);
            let path = format!("{shared}/apps/{name}");
            if matches!(target, Target::HookedApp) {
                app.post(&format!("{path}/webhook"))
                    .by(&app.owner)
                    .send()
                    .await
                    .assert_status(201);
            }
            path
        }
        Target::SourceApp => {
            let name = unique("a");
            app.post(&format!("{shared}/apps"))
                .by(&app.owner)
                .json(json!({ "name": name, "image": "nginx:1.27",
                              "git_repo": "https://git.example.com/acme/shop.git" }))
                .send()
                .await
                .assert_status(201);
            format!("{shared}/apps/{name}")
        }
        Target::Build => {
            let source = Box::pin(make_target(app, Target::SourceApp, project, shared)).await;
            let build = app
                .post(&format!("{source}/builds"))
                .by(&app.owner)
                .send()
                .await;
            build.assert_status(202);
            let path = format!("{source}/builds/{}", build.json()["id"]);
            // Finished, so that every call meets it alike.
            crate::support::eventually("the build finishes", || async {
                let shown = app.get(&path).by(&app.owner).send().await.json();
                ["failed", "succeeded", "cancelled"]
                    .contains(&shown["status"].as_str().unwrap_or_default())
            })
            .await;
            path
        }
        Target::ProjectMember => {
            format!("{project}/members/{}", app.user(Role::Member).await.id)
        }
        Target::GrantedProjectMember => {
            let member = app.project_member(Role::Member, project, "viewer").await;
            format!("{project}/members/{}", member.id)
        }
        Target::DeployToken => {
            let token = app.deploy_token(project, json!({})).await;
            format!("{project}/tokens/{}", token.id)
        }
        Target::Secret => {
            let path = format!("{shared}/secrets/{}", unique("s"));
            app.request(Method::PUT, &path)
                .by(&app.owner)
                .json(json!({ "data": { "password": "matrix" } }))
                .send()
                .await
                .assert_status(201);
            path
        }
    }
}

/// Plays the kubelet for `project`'s builds: each build pod fails at its
/// `source` step (`git.example.com` cannot be reached), so that every build
/// finishes as on the stand-in, where builds fail before they have a pod
/// (no registry is set there): on a real cluster, whose registry settings
/// another test may have written, a build's pod would stay `Pending`.
fn builds_end(app: &TestApp, project: &str) -> KubeletLoop {
    keep_ending_build_pods(
        app.cluster().client.clone(),
        BUILDS_NAMESPACE.to_owned(),
        format!("{LABEL_PROJECT}={project}"),
        BuildEnd::Failed {
            step: "source",
            message: "fatal: unable to access 'https://git.example.com/acme/shop.git/': \
                      Could not resolve host: git.example.com",
        },
    )
}

/// The callers of [`CALLERS`], in its order (`None`: no credentials).
/// Every kind of caller; the scoped tokens' scope is `shared_project` or
/// another.
async fn callers(app: &TestApp, shared_project: &str) -> Vec<Option<TestUser>> {
    let mut callers: Vec<Option<TestUser>> = Vec::new();
    for role in [Role::Viewer, Role::Operator, Role::Developer, Role::Admin] {
        callers.push(Some(app.user(role).await));
    }
    callers.push(Some(app.owner.clone()));
    callers.push(None);
    callers.push(Some(app.other_org("umbrella").await));
    for ceiling in ["read", "deploy"] {
        callers.push(Some(app.owners_token(json!({ "ceiling": ceiling })).await));
    }
    for project in [shared_project, "elsewhere"] {
        callers.push(Some(
            app.owners_token(json!({ "scope": [{ "project": project }] }))
                .await,
        ));
    }
    let elsewhere = app.create_project("elsewhere").await;
    for (organization, project, role) in [
        (Role::Member, shared_project, "admin"),
        (Role::Member, shared_project, "viewer"),
        (Role::Viewer, shared_project, "developer"),
        (Role::Member, elsewhere.as_str(), "admin"),
    ] {
        callers.push(Some(app.project_member(organization, project, role).await));
    }
    callers.push(Some(
        app.deploy_token(shared_project, json!({ "ceiling": "deploy" }))
            .await,
    ));
    callers
}

/// Every operation that takes a role is walked: only those that take none
/// (signing in, the description, the registry's token service, which a
/// registry credential calls) are left out.
#[test]
fn the_matrix_walks_every_operation() {
    let walked: std::collections::BTreeSet<&str> =
        cases().iter().map(|case| case.operation).collect();
    let taking_no_role = [
        "login",
        "getApiDescription",
        "unknownRoute",
        "getRegistryToken",
        "requestRegistryToken",
    ];
    for operation in berth_domain::Operation::ALL {
        let id = operation.id();
        assert!(
            walked.contains(id) || taking_no_role.contains(&id),
            "{id} is not in the matrix"
        );
    }
}

#[tokio::test]
async fn every_operation_for_every_kind_of_caller() {
    let app = TestApp::with_cluster().await;
    let project = app.ready_environment("matrix", "shared").await;
    let _kubelet = builds_end(&app, &project);
    let callers = callers(&app, &project).await;
    let shared = format!("/api/v1/projects/{project}/environments/shared");

    let mut failures = Vec::new();
    for case in cases() {
        // A read consumes nothing: its callers share one target.
        let read_target = match case.method {
            Method::GET => Some(make_target(&app, case.target, &project, &shared).await),
            _ => None,
        };
        for (index, caller) in callers.iter().enumerate() {
            let target = match &read_target {
                Some(target) => target.clone(),
                None => make_target(&app, case.target, &project, &shared).await,
            };
            let mut request = app.request(case.method.clone(), &(case.path)(&target));
            if let Some(user) = caller {
                request = request.by(user);
            }
            if let Some(body) = case.body {
                request = request.json(body());
            }
            let response = request.send().await;
            let want = case.expected[index];
            if response.status.as_u16() != want {
                failures.push(format!(
                    "{} as {}: want {want}, got {} {}",
                    case.operation,
                    CALLERS[index],
                    response.status,
                    response.text()
                ));
            } else if want >= 400 {
                let code = response.json()["code"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                let expected_code = match want {
                    401 => "unauthenticated",
                    403 => "forbidden",
                    404 => "not_found",
                    409 => "conflict",
                    422 => "validation_failed",
                    _ => unreachable!(),
                };
                if code != expected_code {
                    failures.push(format!(
                        "{} as {}: code {code}, want {expected_code}",
                        case.operation, CALLERS[index]
                    ));
                }
            }
            let org = caller
                .as_ref()
                .map_or(berth_store::keys::SYSTEM_ORG, |user| user.org.as_str());
            let event = app.last_audit_event(org).await;
            if event.action != case.operation || event.status != Some(want) {
                failures.push(format!(
                    "{} as {}: audit recorded {} {:?}",
                    case.operation, CALLERS[index], event.action, event.status
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Issue 25, part 3: every `DELETE` and body-less `POST` with the session
/// cookie, as curl, a script or a generated client sends it — no
/// `Content-Type`, no `Origin` — answers as it does with a token; with the
/// `Origin` of another site or of a sibling subdomain (the same site, which
/// `SameSite=Lax` lets the cookie reach) it is `403 forbidden` whoever
/// calls, and nothing changes. Each is audited as its operation.
#[tokio::test]
async fn every_body_less_change_with_the_session_cookie() {
    /// The API's host, as a browser names it, and pages elsewhere.
    const HOST: &str = "berth.example.com";
    const ELSEWHERE: [&str; 2] = ["http://evil.example.net", "http://pages.example.com"];
    use Target::*;
    let app = TestApp::with_cluster().await;
    let project = app.ready_environment("cookie", "shared").await;
    let _kubelet = builds_end(&app, &project);
    let callers = callers(&app, &project).await;
    let shared = format!("/api/v1/projects/{project}/environments/shared");

    let body_less = cases()
        .into_iter()
        .filter(|case| case.body.is_none())
        .filter(|case| case.method == Method::DELETE || case.method == Method::POST)
        // The body-less forms of operations whose body is optional.
        .chain([
            Case {
                operation: "deployTemplate",
                method: Method::POST,
                target: Environment,
                path: |e| format!("{e}/templates/nginx"),
                body: None,
                expected: [
                    403, 403, 201, 201, 201, 401, 404, 403, 201, 201, 404, 201, 403, 201, 404, 201,
                ],
            },
            Case {
                operation: "createBuild",
                method: Method::POST,
                target: SourceApp,
                path: |a| format!("{a}/builds"),
                body: None,
                expected: [
                    403, 403, 202, 202, 202, 401, 404, 403, 202, 202, 404, 202, 403, 202, 404, 202,
                ],
            },
        ]);
    let mut failures = Vec::new();
    for case in body_less {
        // A session is its user's; the token callers' sessions would be
        // the owner's.
        for (index, caller) in callers.iter().enumerate().take(7) {
            let Some(user) = caller else {
                continue;
            };
            let target = make_target(&app, case.target, &project, &shared).await;
            let path = (case.path)(&target);
            let session = app.sign_in(&user.email, PASSWORD).await;
            let mut outcomes = Vec::new();
            for origin in ELSEWHERE {
                let response = app
                    .request(case.method.clone(), &path)
                    .session(&session)
                    .header("host", HOST)
                    .header("origin", origin)
                    .send()
                    .await;
                let code = response.json()["code"].as_str().map(str::to_owned);
                outcomes.push((
                    format!("from {origin}"),
                    403,
                    response.status.as_u16(),
                    code,
                ));
            }
            let response = app
                .request(case.method.clone(), &path)
                .session(&session)
                .header("host", HOST)
                .send()
                .await;
            let code = (!response.body.is_empty())
                .then(|| response.json()["code"].as_str().map(str::to_owned))
                .flatten();
            let want = case.expected[index];
            outcomes.push((
                "without Origin".into(),
                want,
                response.status.as_u16(),
                code,
            ));
            for (how, want, got, code) in outcomes {
                let expected_code = match want {
                    403 => Some("forbidden"),
                    404 => Some("not_found"),
                    409 => Some("conflict"),
                    422 => Some("validation_failed"),
                    _ => None,
                };
                if got != want || code.as_deref() != expected_code {
                    failures.push(format!(
                        "{} as {} {how}: want {want} {expected_code:?}, got {got} {code:?}",
                        case.operation, CALLERS[index]
                    ));
                }
            }
            let event = app.last_audit_event(&user.org).await;
            if event.action != case.operation || event.status != Some(want) {
                failures.push(format!(
                    "{} as {}: audit recorded {} {:?}",
                    case.operation, CALLERS[index], event.action, event.status
                ));
            }
            // A template deployed under its own name: the next caller's
            // deploy must not meet it.
            if case.operation == "deployTemplate" && want == 201 {
                app.request(Method::DELETE, &format!("{shared}/apps/nginx"))
                    .by(&app.owner)
                    .send()
                    .await
                    .assert_status(204);
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Issue 47: what `GET /api/v1/me` tells each caller it may do agrees with
/// the matrix above, which the test before checks against the API: where
/// the caller is told it lacks an operation's permission, the operation
/// is refused (`403`/`404`), and where it is told it holds it, the
/// operation gets past authorization — but for the cases that need more
/// than their operation's least permission, named here.
#[tokio::test]
async fn the_permissions_each_caller_is_told_agree_with_the_matrix() {
    use Target::*;
    let app = TestApp::with_cluster().await;
    let project = app.ready_environment("told", "shared").await;
    let callers = callers(&app, &project).await;

    let mut failures = Vec::new();
    for (index, caller) in callers.iter().enumerate() {
        // No credentials; another organization's owner, whose report is of
        // its own organization.
        let Some(user) = caller.as_ref().filter(|_| !matches!(index, 5 | 6)) else {
            continue;
        };
        let me = app.get("/api/v1/me").by(user).send().await;
        me.assert_status(200);
        let access = me.json()["access"].clone();
        let listed = access["projects"]
            .as_array()
            .and_then(|projects| projects.iter().find(|p| p["project"] == project.as_str()))
            .cloned();
        let holds = |list: &Value, permission: &str| {
            list.as_array()
                .is_some_and(|list| list.iter().any(|p| p == permission))
        };
        for case in cases() {
            let Some(operation) = berth_domain::Operation::ALL
                .iter()
                .find(|operation| operation.id() == case.operation)
            else {
                continue;
            };
            let Some(least) = operation.minimum_permission() else {
                continue; // any signed-in caller's, or a registry credential's
            };
            // What the case needs: more than its operation's least for
            // some (a production environment's deletion, an app's fields
            // by what they change).
            let body = case.body.map(|body| body());
            let changes = |field: &str| body.as_ref().is_some_and(|body| body.get(field).is_some());
            let needs = match (case.operation, case.target) {
                ("deleteEnvironment", ProductionEnvironment) => "env-delete-protected",
                ("updateApp", _) if changes("image") || changes("env") => "app-deploy",
                ("updateApp", _) if changes("domains") => "app-write",
                _ => least.as_str(),
            };
            // The matrix's apps have no command: every caller's 404 is
            // the command's (`commands` tests who reads one).
            if matches!(case.operation, "getCommand" | "getCommandLogs") {
                continue;
            }
            let told = match case.target {
                // Open to every caller, cut to what it reaches.
                Nothing if matches!(case.operation, "listProjects" | "listTemplates") => continue,
                Nothing | Member => holds(&access["permissions"], needs),
                // Another project than the one the callers' roles name.
                EmptyProject => continue,
                _ => match &listed {
                    None => holds(&access["project_permissions"], needs),
                    Some(listed) if listed["environments"].is_null() => {
                        holds(&listed["permissions"], needs)
                    }
                    // No caller here is limited to some environments.
                    Some(listed) => panic!("unexpected environments: {listed}"),
                },
            };
            let want = case.expected[index];
            let refused = matches!(want, 403 | 404);
            if told == refused {
                failures.push(format!(
                    "{} on {} as {}: told {} {needs}, the matrix says {want}",
                    case.operation,
                    case.target.name(),
                    CALLERS[index],
                    if told { "it holds" } else { "it lacks" },
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

impl Target {
    fn name(self) -> &'static str {
        use Target::*;
        match self {
            Nothing => "nothing",
            Member => "member",
            Project => "project",
            EmptyProject => "empty project",
            StandardEnvironment => "standard environment",
            ProductionEnvironment => "production environment",
            DeletedProductionEnvironment => "deleted production environment",
            Environment => "environment",
            App => "app",
            HookedApp => "hooked app",
            Secret => "secret",
            SourceApp => "source app",
            Build => "build",
            ProjectMember => "project member",
            GrantedProjectMember => "granted project member",
            DeployToken => "deploy token",
        }
    }
}
