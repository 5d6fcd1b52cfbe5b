//! Issue 47: `GET /api/v1/me` tells the caller what it may do (`access`),
//! as the checks that refuse calls decide it for these credentials: its
//! role, its project roles, its token's ceiling and scope. (The permission
//! matrix checks the report against every operation: `permissions.rs`.)

use serde_json::{Value, json};

use crate::support::{PASSWORD, TestApp, TestUser};
use berth_domain::Role;

const ALL: [&str; 12] = [
    "read",
    "app-operate",
    "app-write",
    "app-deploy",
    "secret-write",
    "env-write",
    "secret-read",
    "env-delete-protected",
    "project-write",
    "member-manage",
    "audit-read",
    "manage-owners",
];
const DEPLOY: [&str; 4] = ["read", "app-operate", "app-write", "app-deploy"];
const DEVELOPER: [&str; 6] = [
    "read",
    "app-operate",
    "app-write",
    "app-deploy",
    "secret-write",
    "env-write",
];

async fn access(app: &TestApp, user: &TestUser) -> Value {
    let me = app.get("/api/v1/me").by(user).send().await;
    me.assert_status(200);
    let me = me.json();
    assert_eq!(me["email"], user.email.as_str(), "still the Identity: {me}");
    me["access"].clone()
}

#[tokio::test]
async fn each_role_is_told_its_permissions() {
    let app = TestApp::new().await;
    let owner = access(&app, &app.owner).await;
    assert_eq!(
        owner,
        json!({
            "organization": "acme",
            "role": "owner",
            "ceiling": null,
            "permissions": ALL,
            "project_permissions": ALL,
            "projects": [],
            "projects_truncated": false,
        })
    );
    let viewer = app.user(Role::Viewer).await;
    let viewer = access(&app, &viewer).await;
    assert_eq!(viewer["role"], "viewer");
    assert_eq!(viewer["permissions"], json!(["read"]));
    assert_eq!(viewer["project_permissions"], json!(["read"]));
    let developer = app.user(Role::Developer).await;
    assert_eq!(
        access(&app, &developer).await["project_permissions"],
        json!(DEVELOPER)
    );
}

/// A token with a ceiling is told the ceiling's permissions, whatever its
/// owner's role: what it may do, not what its owner may.
#[tokio::test]
async fn a_tokens_ceiling_lowers_what_it_is_told() {
    let app = TestApp::new().await;
    for (ceiling, permissions) in [("read", &["read"][..]), ("deploy", &DEPLOY[..])] {
        let token = app.owners_token(json!({ "ceiling": ceiling })).await;
        let told = access(&app, &token).await;
        assert_eq!(told["ceiling"], ceiling);
        assert_eq!(told["role"], "owner", "the owner's role, capped");
        assert_eq!(told["permissions"], json!(permissions));
        assert_eq!(told["project_permissions"], json!(permissions));
    }
}

/// A scoped token reaches only its scope's projects: nothing on the
/// organization, nothing in other projects; in a project whose
/// environments it names, only those, and the project itself read only.
#[tokio::test]
async fn a_scoped_token_is_told_only_its_scope() {
    let app = TestApp::new().await;
    let token = app
        .owners_token(json!({
            "ceiling": "deploy",
            "scope": [
                { "project": "web" },
                { "project": "api", "environments": ["staging"] },
                { "project": "api", "environments": ["qa", "staging"] },
            ],
        }))
        .await;
    let told = access(&app, &token).await;
    assert_eq!(
        told,
        json!({
            "organization": "acme",
            "role": "owner",
            "ceiling": "deploy",
            "permissions": [],
            "project_permissions": [],
            "projects": [
                {
                    "project": "api",
                    "role": null,
                    "permissions": ["read"],
                    "environments": [
                        { "environment": "qa", "permissions": DEPLOY },
                        { "environment": "staging", "permissions": DEPLOY },
                    ],
                },
                { "project": "web", "role": null, "permissions": DEPLOY, "environments": null },
            ],
            "projects_truncated": false,
        })
    );
    // As enforced: the organization's operations are refused.
    app.get("/api/v1/members")
        .by(&token)
        .send()
        .await
        .assert_problem(403, "forbidden");
}

/// A member whose organization role is `member` is told its projects'
/// roles only; a deploy token its project, as far as its environments
/// and ceiling go.
#[tokio::test]
async fn a_project_only_member_and_a_deploy_token_are_told_their_projects() {
    let app = TestApp::with_cluster().await;
    let project = app.ready_environment("told", "staging").await;
    let member = app
        .project_member(Role::Member, &project, "developer")
        .await;
    let told = access(&app, &member).await;
    assert_eq!(
        told,
        json!({
            "organization": "acme",
            "role": "member",
            "ceiling": null,
            "permissions": [],
            "project_permissions": [],
            "projects": [
                { "project": project, "role": "developer", "permissions": DEVELOPER, "environments": null },
            ],
            "projects_truncated": false,
        })
    );
    // An organization viewer who is a project's admin: its role there is
    // the greater, but never the organization's own permissions.
    let viewer = app.project_member(Role::Viewer, &project, "admin").await;
    let told = access(&app, &viewer).await;
    assert_eq!(told["permissions"], json!(["read"]));
    assert_eq!(told["project_permissions"], json!(["read"]));
    assert_eq!(told["projects"][0]["role"], "admin");
    let in_project: Vec<&str> = ALL
        .into_iter()
        .filter(|p| !["member-manage", "manage-owners"].contains(p))
        .collect();
    assert_eq!(told["projects"][0]["permissions"], json!(in_project));

    let deploy = app
        .deploy_token(
            &project,
            json!({ "ceiling": "deploy", "environments": ["staging"] }),
        )
        .await;
    let told = access(&app, &deploy).await;
    assert_eq!(
        told["projects"],
        json!([{
            "project": project,
            "role": "admin",
            "permissions": ["read"],
            "environments": [{ "environment": "staging", "permissions": DEPLOY }],
        }])
    );
    assert_eq!(told["permissions"], json!([]));
    assert_eq!(told["project_permissions"], json!([]));
    assert_eq!(told["ceiling"], "deploy");
}

/// While the password must change, every other call is refused: the
/// caller is told it may do nothing yet.
#[tokio::test]
async fn a_password_to_change_leaves_no_permission() {
    let app = TestApp::new().await;
    let invited = app
        .post("/api/v1/members")
        .by(&app.owner)
        .json(json!({ "email": "new-admin@example.org", "role": "admin" }))
        .send()
        .await;
    invited.assert_status(201);
    let temporary = invited.json()["temporary_password"]
        .as_str()
        .expect("a temporary password")
        .to_owned();
    let session = app.sign_in("new-admin@example.org", &temporary).await;
    let me = app.get("/api/v1/me").session(&session).send().await;
    me.assert_status(200);
    let me = me.json();
    assert_eq!(me["must_change_password"], true);
    assert_eq!(me["access"]["role"], "admin");
    assert_eq!(me["access"]["permissions"], json!([]));
    assert_eq!(me["access"]["project_permissions"], json!([]));

    app.post("/api/v1/me/password")
        .session(&session)
        .json(json!({ "current_password": temporary, "new_password": PASSWORD }))
        .send()
        .await
        .assert_status(200);
    let me = app.get("/api/v1/me").session(&session).send().await.json();
    assert_eq!(
        me["access"]["permissions"].as_array().map(Vec::len),
        Some(11)
    );
}
