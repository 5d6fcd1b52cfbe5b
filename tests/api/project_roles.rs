//! Issue 32, part 1: roles in single projects. A member whose organization
//! role is `member` sees only the projects it holds a role in; a role is
//! the project's by uid, given and taken away by owners and organization
//! admins, at once; a project's admins read its audit log.

use std::time::Duration;

use http::Method;
use serde_json::{Value, json};

use crate::support::{TestApp, TestResponse, TestUser, unique};
use berth_domain::Role;

fn names(listed: &TestResponse) -> Vec<Value> {
    listed.assert_status(200);
    listed
        .json()
        .as_array()
        .expect("a list")
        .iter()
        .map(|record| record["name"].clone())
        .collect()
}

/// The member's record, as the organization's list shows it.
async fn member_record(app: &TestApp, id: &str) -> Value {
    let members = app
        .get("/api/v1/members")
        .by(&app.owner)
        .send()
        .await
        .json();
    members
        .as_array()
        .and_then(|members| members.iter().find(|m| m["id"] == id))
        .cloned()
        .expect("the member is listed")
}

async fn set_role(
    app: &TestApp,
    by: &TestUser,
    project: &str,
    member: &str,
    role: &str,
) -> TestResponse {
    app.request(
        Method::PUT,
        &format!("/api/v1/projects/{project}/members/{member}"),
    )
    .by(by)
    .json(json!({ "role": role }))
    .send()
    .await
}

#[tokio::test]
async fn a_member_sees_only_the_projects_it_holds_a_role_in() {
    let app = TestApp::with_cluster().await;
    let project = app.ready_environment("mine", "staging").await;
    let other = app.ready_environment("theirs", "staging").await;
    let member = app.user(Role::Member).await;
    let base = format!("/api/v1/projects/{project}");

    // Without a role, nothing: no project, no organization-wide operation.
    assert!(names(&app.get("/api/v1/projects").by(&member).send().await).is_empty());
    app.get(&base)
        .by(&member)
        .send()
        .await
        .assert_problem(404, "not_found");
    app.get("/api/v1/members")
        .by(&member)
        .send()
        .await
        .assert_problem(403, "forbidden");

    // A developer's role in one project: that project, with a developer's rights.
    let given = set_role(&app, &app.owner, &project, &member.id, "developer").await;
    given.assert_status(200);
    assert_eq!(
        given.json(),
        json!({ "id": member.id, "email": member.email, "display_name": null,
                "organization_role": "member", "role": "developer" })
    );
    assert_eq!(
        names(&app.get("/api/v1/projects").by(&member).send().await),
        [json!(project)]
    );
    app.get(&base).by(&member).send().await.assert_status(200);
    app.post(&format!("{base}/environments/staging/apps"))
        .by(&member)
        .json(json!({ "name": "web", "image": "nginx:1.27" }))
        .send()
        .await
        .assert_status(201);
    // Not an admin's: no secret values, no protected deletes, no audit.
    app.get(&format!("{base}/audit"))
        .by(&member)
        .send()
        .await
        .assert_problem(403, "forbidden");
    app.get(&format!("/api/v1/projects/{other}"))
        .by(&member)
        .send()
        .await
        .assert_problem(404, "not_found");
    app.get(&format!(
        "/api/v1/projects/{other}/environments/staging/apps"
    ))
    .by(&member)
    .send()
    .await
    .assert_problem(404, "not_found");
    // The shared catalogue and the caller itself stay open.
    app.get("/api/v1/templates")
        .by(&member)
        .send()
        .await
        .assert_status(200);
    app.get("/api/v1/me")
        .by(&member)
        .send()
        .await
        .assert_status(200);

    // The records say who holds what.
    let listed = app.get(&format!("{base}/members")).by(&member).send().await;
    listed.assert_status(200);
    assert_eq!(listed.json().as_array().map(Vec::len), Some(1));
    let record = member_record(&app, &member.id).await;
    assert_eq!(record["role"], "member");
    assert_eq!(
        record["projects"],
        json!([{ "project": project, "role": "developer" }])
    );

    // Changed at once, then taken away at once.
    set_role(&app, &app.owner, &project, &member.id, "viewer")
        .await
        .assert_status(200);
    app.post(&format!("{base}/environments/staging/apps"))
        .by(&member)
        .json(json!({ "name": "api", "image": "nginx:1.27" }))
        .send()
        .await
        .assert_problem(403, "forbidden");
    app.request(Method::DELETE, &format!("{base}/members/{}", member.id))
        .by(&app.owner)
        .send()
        .await
        .assert_status(204);
    app.get(&base)
        .by(&member)
        .send()
        .await
        .assert_problem(404, "not_found");
    app.request(Method::DELETE, &format!("{base}/members/{}", member.id))
        .by(&app.owner)
        .send()
        .await
        .assert_problem(404, "not_found");
}

/// A role in a project adds to the organization role: the greater applies
/// there, and only there.
#[tokio::test]
async fn a_project_role_adds_to_the_organization_role() {
    let app = TestApp::with_cluster().await;
    let project = app.ready_environment("added", "staging").await;
    let other = app.ready_environment("plain", "staging").await;
    let viewer = app
        .project_member(Role::Viewer, &project, "developer")
        .await;
    let create = |project: String| {
        let app = &app;
        let viewer = &viewer;
        async move {
            app.post(&format!(
                "/api/v1/projects/{project}/environments/staging/apps"
            ))
            .by(viewer)
            .json(json!({ "name": unique("a"), "image": "nginx:1.27" }))
            .send()
            .await
        }
    };
    create(project.clone()).await.assert_status(201);
    create(other.clone()).await.assert_problem(403, "forbidden");
    // Its organization role still reads every project.
    assert_eq!(
        names(&app.get("/api/v1/projects").by(&viewer).send().await).len(),
        names(&app.get("/api/v1/projects").by(&app.owner).send().await).len()
    );
}

/// Owners and organization admins manage project roles; nobody else,
/// not even the project's admins (`member-manage` is the organization's).
#[tokio::test]
async fn owners_and_admins_manage_project_roles() {
    let app = TestApp::with_cluster().await;
    let project = app.create_project("managed").await;
    let admin = app.user(Role::Admin).await;
    let developer = app.user(Role::Developer).await;
    let project_admin = app.project_member(Role::Member, &project, "admin").await;
    let member = app.user(Role::Member).await;

    set_role(&app, &admin, &project, &member.id, "operator")
        .await
        .assert_status(200);
    for refused in [&developer, &project_admin] {
        set_role(&app, refused, &project, &member.id, "admin")
            .await
            .assert_problem(403, "forbidden");
    }
    // Only organization roles' names below owner are project roles.
    for role in ["owner", "member", "root"] {
        set_role(&app, &app.owner, &project, &member.id, role)
            .await
            .assert_problem(400, "invalid_request");
    }
    // Someone else's member, or no one, is not found.
    let stranger = app.other_org("umbrella").await;
    set_role(&app, &app.owner, &project, &stranger.id, "viewer")
        .await
        .assert_problem(404, "not_found");
    set_role(&app, &app.owner, &project, "nosuchmember0000", "viewer")
        .await
        .assert_problem(404, "not_found");
    // An owner's roles are changed by owners only.
    let owner = app.user(Role::Owner).await;
    set_role(&app, &admin, &project, &owner.id, "viewer")
        .await
        .assert_problem(403, "forbidden");
    // Each change is audited as its operation, naming the project.
    let event = app.last_audit_event(&app.owner.org).await;
    assert_eq!(event.action, "setProjectMember");
    assert_eq!(event.project.as_deref(), Some(project.as_str()));
}

/// A role is the project's by uid: a project deleted and made again under
/// its name is another, which the role does not reach; deleting a project
/// takes its roles off the members' records.
#[tokio::test]
async fn a_role_does_not_reach_a_project_made_again_under_its_name() {
    let app = TestApp::with_cluster().await;
    let project = app.create_project("again").await;
    let member = app.project_member(Role::Member, &project, "admin").await;
    let base = format!("/api/v1/projects/{project}");
    app.get(&base).by(&member).send().await.assert_status(200);

    app.request(Method::DELETE, &base)
        .by(&app.owner)
        .send()
        .await
        .assert_status(202);
    let gone = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let made = app
            .post("/api/v1/projects")
            .by(&app.owner)
            .json(json!({ "name": project, "display_name": "Again" }))
            .send()
            .await;
        if made.status == 201 {
            break;
        }
        made.assert_problem(409, "conflict");
        assert!(
            tokio::time::Instant::now() < gone,
            "the project was never deleted"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    app.get(&base)
        .by(&member)
        .send()
        .await
        .assert_problem(404, "not_found");
    assert!(names(&app.get("/api/v1/projects").by(&member).send().await).is_empty());
    let record = member_record(&app, &member.id).await;
    assert_eq!(record["projects"], json!([]));
}

/// A project's admins read its audit log: the events of calls concerning
/// it, and no other's; the organization's log stays the organization
/// admins'.
#[tokio::test]
async fn a_projects_admins_read_its_audit_log() {
    let app = TestApp::with_cluster().await;
    let project = app.ready_environment("audited", "staging").await;
    let other = app.ready_environment("unaudited", "staging").await;
    let admin = app.project_member(Role::Member, &project, "admin").await;
    for name in [&project, &other] {
        app.post(&format!(
            "/api/v1/projects/{name}/environments/staging/apps"
        ))
        .by(&app.owner)
        .json(json!({ "name": "web", "image": "nginx:1.27" }))
        .send()
        .await
        .assert_status(201);
    }
    app.get("/api/v1/audit")
        .by(&admin)
        .send()
        .await
        .assert_problem(403, "forbidden");

    // Events show once settled (about eight seconds after their call).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let events = loop {
        let page = app
            .get(&format!("/api/v1/projects/{project}/audit?limit=200"))
            .by(&admin)
            .send()
            .await;
        page.assert_status(200);
        let events = page.json()["events"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if events.iter().any(|e| e["action"] == "createApp") {
            break events;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no createApp event: {events:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    assert!(
        events.iter().all(|e| e["project"] == project.as_str()),
        "only the project's events: {events:?}"
    );
    let actions: Vec<&str> = events.iter().filter_map(|e| e["action"].as_str()).collect();
    for action in [
        "createProject",
        "createEnvironment",
        "createApp",
        "setProjectMember",
    ] {
        assert!(actions.contains(&action), "{action} in {actions:?}");
    }
    // Newest first, paged by `before`.
    let seqs: Vec<u64> = events.iter().filter_map(|e| e["seq"].as_u64()).collect();
    assert!(seqs.windows(2).all(|pair| pair[0] > pair[1]), "{seqs:?}");
    let first = app
        .get(&format!("/api/v1/projects/{project}/audit?limit=1"))
        .by(&admin)
        .send()
        .await
        .json();
    let before = first["next_before"].as_u64().expect("an older page");
    let second = app
        .get(&format!(
            "/api/v1/projects/{project}/audit?limit=1&before={before}"
        ))
        .by(&admin)
        .send()
        .await
        .json();
    assert!(second["events"][0]["seq"].as_u64() < Some(before));
    // Not another project's log.
    app.get(&format!("/api/v1/projects/{other}/audit"))
        .by(&admin)
        .send()
        .await
        .assert_problem(404, "not_found");
}
