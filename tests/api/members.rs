//! Members: invitations, roles, removal, and the organization's last owner.

use serde_json::json;

use crate::support::{PASSWORD, TestApp};
use berth_domain::Role;

#[tokio::test]
async fn invite_then_sign_in_with_the_temporary_password() {
    let app = TestApp::new().await;
    let admin = app.user(Role::Admin).await;
    let invited = app
        .post("/api/v1/members")
        .by(&admin)
        .json(json!({ "email": " Dev@Example.org ", "role": "developer", "display_name": "Dev" }))
        .send()
        .await;
    invited.assert_status(201);
    let body = invited.json();
    assert_eq!(body["email"], "dev@example.org");
    assert_eq!(body["role"], "developer");
    assert_eq!(body["display_name"], "Dev");
    assert_eq!(body["must_change_password"], true);
    assert_eq!(body["active"], true);
    let id = body["id"].as_str().unwrap().to_owned();
    let temporary = body["temporary_password"].as_str().unwrap().to_owned();
    assert!(temporary.len() >= 12);

    let listed = app.get("/api/v1/members").by(&admin).send().await;
    listed.assert_status(200);
    let members = listed.json();
    let entry = members
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == id.as_str())
        .unwrap()
        .clone();
    assert_eq!(
        entry,
        json!({
            "id": id, "email": "dev@example.org", "display_name": "Dev", "role": "developer",
            "must_change_password": true, "active": true, "projects": []
        })
    );
    assert!(
        !listed.text().contains(&temporary),
        "the temporary password is shown once"
    );
    app.sign_in("dev@example.org", &temporary).await;
}

#[tokio::test]
async fn invitations_are_validated() {
    let app = TestApp::new().await;
    let invite = |body| app.post("/api/v1/members").by(&app.owner).json(body);
    invite(json!({ "email": "not-an-email", "role": "viewer" }))
        .send()
        .await
        .assert_problem(422, "validation_failed");
    invite(json!({ "email": "a@example.org", "role": "superuser" }))
        .send()
        .await
        .assert_problem(422, "validation_failed");
    invite(json!({ "email": "a@example.org", "role": "viewer", "display_name": "" }))
        .send()
        .await
        .assert_problem(422, "validation_failed");
    invite(json!({ "email": "a@example.org" }))
        .send()
        .await
        .assert_problem(400, "invalid_request");
    invite(json!({ "email": app.owner.email.to_uppercase(), "role": "viewer" }))
        .send()
        .await
        .assert_problem(409, "conflict");
    let members = app
        .get("/api/v1/members")
        .by(&app.owner)
        .send()
        .await
        .json();
    assert_eq!(
        members.as_array().unwrap().len(),
        1,
        "nothing was created: {members}"
    );
}

#[tokio::test]
async fn emails_are_unique_across_organizations() {
    let app = TestApp::new().await;
    let other = app.other_org("globex").await;
    app.post("/api/v1/members")
        .by(&other)
        .json(json!({ "email": app.owner.email, "role": "viewer" }))
        .send()
        .await
        .assert_problem(409, "conflict");
}

#[tokio::test]
async fn role_changes_take_effect_at_once() {
    let app = TestApp::new().await;
    let member = app.user(Role::Viewer).await;
    app.get("/api/v1/audit")
        .by(&member)
        .send()
        .await
        .assert_problem(403, "forbidden");
    let changed = app
        .request(
            "PATCH".parse().unwrap(),
            &format!("/api/v1/members/{}", member.id),
        )
        .by(&app.owner)
        .json(json!({ "role": "admin" }))
        .send()
        .await;
    changed.assert_status(200);
    assert_eq!(changed.json()["role"], "admin");
    assert_eq!(changed.json()["id"], member.id);
    app.get("/api/v1/audit")
        .by(&member)
        .send()
        .await
        .assert_status(200);
    let patch = |body| {
        app.request(
            "PATCH".parse().unwrap(),
            &format!("/api/v1/members/{}", member.id),
        )
        .by(&app.owner)
        .json(body)
    };
    patch(json!({ "role": "emperor" }))
        .send()
        .await
        .assert_problem(422, "validation_failed");
    patch(json!({ "role": 3 }))
        .send()
        .await
        .assert_problem(400, "invalid_request");
    app.request("PATCH".parse().unwrap(), "/api/v1/members/nosuchmember0000")
        .by(&app.owner)
        .json(json!({ "role": "viewer" }))
        .send()
        .await
        .assert_problem(404, "not_found");
}

#[tokio::test]
async fn only_owners_manage_owners() {
    let app = TestApp::new().await;
    let admin = app.user(Role::Admin).await;
    let second_owner = app.user(Role::Owner).await;
    let target = app.user(Role::Viewer).await;
    let path = |user: &crate::support::TestUser| format!("/api/v1/members/{}", user.id);
    // An admin may not make, change or remove owners.
    app.post("/api/v1/members")
        .by(&admin)
        .json(json!({ "email": "boss@example.org", "role": "owner" }))
        .send()
        .await
        .assert_problem(403, "forbidden");
    app.request("PATCH".parse().unwrap(), &path(&target))
        .by(&admin)
        .json(json!({ "role": "owner" }))
        .send()
        .await
        .assert_problem(403, "forbidden");
    app.request("PATCH".parse().unwrap(), &path(&second_owner))
        .by(&admin)
        .json(json!({ "role": "viewer" }))
        .send()
        .await
        .assert_problem(403, "forbidden");
    app.request("DELETE".parse().unwrap(), &path(&second_owner))
        .by(&admin)
        .send()
        .await
        .assert_problem(403, "forbidden");
    // An admin manages everyone else.
    app.request("PATCH".parse().unwrap(), &path(&target))
        .by(&admin)
        .json(json!({ "role": "operator" }))
        .send()
        .await
        .assert_status(200);
    // An owner manages owners.
    app.request("PATCH".parse().unwrap(), &path(&target))
        .by(&second_owner)
        .json(json!({ "role": "owner" }))
        .send()
        .await
        .assert_status(200);
    app.post("/api/v1/members")
        .by(&second_owner)
        .json(json!({ "email": "boss@example.org", "role": "owner" }))
        .send()
        .await
        .assert_status(201);
}

#[tokio::test]
async fn the_last_owner_stays() {
    let app = TestApp::new().await;
    let owner_path = format!("/api/v1/members/{}", app.owner.id);
    app.request("PATCH".parse().unwrap(), &owner_path)
        .by(&app.owner)
        .json(json!({ "role": "admin" }))
        .send()
        .await
        .assert_problem(409, "conflict");
    app.request("DELETE".parse().unwrap(), &owner_path)
        .by(&app.owner)
        .send()
        .await
        .assert_problem(409, "conflict");
    app.get("/api/v1/me")
        .by(&app.owner)
        .send()
        .await
        .assert_status(200);
    // With a second owner, the first may step down.
    let second = app.user(Role::Owner).await;
    app.request("PATCH".parse().unwrap(), &owner_path)
        .by(&app.owner)
        .json(json!({ "role": "admin" }))
        .send()
        .await
        .assert_status(200);
    // Now the second is the last one.
    app.request(
        "DELETE".parse().unwrap(),
        &format!("/api/v1/members/{}", second.id),
    )
    .by(&second)
    .send()
    .await
    .assert_problem(409, "conflict");
}

#[tokio::test]
async fn two_owners_demoting_each_other_at_once_leave_one() {
    let app = TestApp::new().await;
    let second = app.user(Role::Owner).await;
    let demote = |actor: &crate::support::TestUser, target: &crate::support::TestUser| {
        app.request(
            "PATCH".parse().unwrap(),
            &format!("/api/v1/members/{}", target.id),
        )
        .by(actor)
        .json(json!({ "role": "viewer" }))
        .send()
    };
    let (a, b) = tokio::join!(demote(&app.owner, &second), demote(&second, &app.owner));
    let statuses = [a.status.as_u16(), b.status.as_u16()];
    assert!(statuses.contains(&200), "{statuses:?}");
    let members = app.get("/api/v1/members").by(&app.owner).send().await;
    let owners = members
        .json()
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "owner")
        .count();
    // The one demoted first may no longer read members with owner rights, but
    // listing needs only `read`.
    assert_eq!(owners, 1, "{}", members.text());
}

#[tokio::test]
async fn removing_a_member_revokes_everything_at_once() {
    let app = TestApp::new().await;
    let member = app.user(Role::Developer).await;
    let session = app.sign_in(&member.email, PASSWORD).await;
    app.get("/api/v1/me")
        .session(&session)
        .send()
        .await
        .assert_status(200);
    app.request(
        "DELETE".parse().unwrap(),
        &format!("/api/v1/members/{}", member.id),
    )
    .by(&app.owner)
    .send()
    .await
    .assert_status(204);
    app.get("/api/v1/me")
        .session(&session)
        .send()
        .await
        .assert_problem(401, "unauthenticated");
    app.get("/api/v1/me")
        .by(&member)
        .send()
        .await
        .assert_problem(401, "unauthenticated");
    app.post("/api/v1/auth/login")
        .json(json!({ "email": member.email, "password": PASSWORD }))
        .send()
        .await
        .assert_problem(401, "invalid_credentials");
    let members = app
        .get("/api/v1/members")
        .by(&app.owner)
        .send()
        .await
        .json();
    assert!(
        members
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["id"] != member.id.as_str())
    );
    app.request(
        "DELETE".parse().unwrap(),
        &format!("/api/v1/members/{}", member.id),
    )
    .by(&app.owner)
    .send()
    .await
    .assert_problem(404, "not_found");
    // The email is free again.
    app.post("/api/v1/members")
        .by(&app.owner)
        .json(json!({ "email": member.email, "role": "viewer" }))
        .send()
        .await
        .assert_status(201);
}

#[tokio::test]
async fn another_organizations_members_are_invisible() {
    let app = TestApp::new().await;
    let stranger = app.other_org("initech").await;
    let listed = app.get("/api/v1/members").by(&stranger).send().await.json();
    let emails: Vec<_> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["email"].clone())
        .collect();
    assert_eq!(emails, vec![json!(stranger.email)]);
    let path = format!("/api/v1/members/{}", app.owner.id);
    app.request("PATCH".parse().unwrap(), &path)
        .by(&stranger)
        .json(json!({ "role": "viewer" }))
        .send()
        .await
        .assert_problem(404, "not_found");
    app.request("DELETE".parse().unwrap(), &path)
        .by(&stranger)
        .send()
        .await
        .assert_problem(404, "not_found");
    app.get("/api/v1/me")
        .by(&app.owner)
        .send()
        .await
        .assert_status(200);
}
