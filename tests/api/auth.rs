//! Sign-in, sessions, the current user, password changes, throttling and the
//! must-change-password gate.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use http::{StatusCode, header};
use serde_json::json;

use crate::support::{PASSWORD, TestApp};
use berth_domain::Role;
use berth_store::identity::password;

#[tokio::test]
async fn login_sets_a_session_cookie_and_returns_the_identity() {
    let app = TestApp::new().await;
    let response = app
        .post("/api/v1/auth/login")
        .json(json!({ "email": app.owner.email.to_uppercase(), "password": PASSWORD }))
        .send()
        .await;
    response.assert_status(200);
    let body = response.json();
    assert_eq!(body["id"], app.owner.id);
    assert_eq!(body["email"], app.owner.email);
    assert_eq!(body["via"], "session");
    assert_eq!(body["must_change_password"], false);
    assert!(body.get("display_name").is_some());
    let cookie = response.set_cookie().expect("Set-Cookie");
    for attribute in ["HttpOnly", "SameSite=Lax", "Path=/", "Max-Age=43200"] {
        assert!(cookie.contains(attribute), "{cookie}");
    }
    assert!(
        !cookie.contains("Secure"),
        "tests run with plain-http cookies: {cookie}"
    );

    let me = app
        .get("/api/v1/me")
        .session(&response.session_cookie().unwrap())
        .send()
        .await;
    me.assert_status(200);
    assert_eq!(me.json()["via"], "session");
    assert_eq!(me.json()["email"], app.owner.email);
}

#[tokio::test]
async fn secure_cookies_unless_configured_off() {
    let app = TestApp::with_config(|config| config.secure_cookies = true).await;
    let response = app
        .post("/api/v1/auth/login")
        .json(json!({ "email": app.owner.email, "password": PASSWORD }))
        .send()
        .await;
    assert!(response.set_cookie().unwrap().ends_with("; Secure"));
}

#[tokio::test]
async fn wrong_password_and_unknown_email_look_the_same() {
    let app = TestApp::new().await;
    let wrong = app
        .post("/api/v1/auth/login")
        .json(json!({ "email": app.owner.email, "password": "not the password at all" }))
        .send()
        .await;
    let unknown = app
        .post("/api/v1/auth/login")
        .json(json!({ "email": "nobody@example.org", "password": "not the password at all" }))
        .send()
        .await;
    wrong.assert_problem(401, "invalid_credentials");
    unknown.assert_problem(401, "invalid_credentials");
    assert_eq!(wrong.body, unknown.body);
    assert!(wrong.set_cookie().is_none() && unknown.set_cookie().is_none());
}

#[tokio::test]
async fn login_rejects_malformed_bodies() {
    let app = TestApp::new().await;
    app.post("/api/v1/auth/login")
        .header("content-type", "application/json")
        .raw("{not json")
        .send()
        .await
        .assert_problem(400, "invalid_request");
    app.post("/api/v1/auth/login")
        .json(json!({ "email": "a@example.org" }))
        .send()
        .await
        .assert_problem(400, "invalid_request");
    app.post("/api/v1/auth/login")
        .json(json!({ "email": 5, "password": "x" }))
        .send()
        .await
        .assert_problem(400, "invalid_request");
    app.post("/api/v1/auth/login")
        .json(json!({ "email": "a@example.org", "password": "x", "remember": true }))
        .send()
        .await
        .assert_problem(400, "invalid_request");
    app.post("/api/v1/auth/login")
        .header("content-type", "text/plain")
        .raw(r#"{"email":"a@example.org","password":"x"}"#)
        .send()
        .await
        .assert_problem(415, "unsupported_media_type");
    let huge = format!(
        r#"{{"email":"a@example.org","password":"{}"}}"#,
        "x".repeat(300 * 1024)
    );
    app.post("/api/v1/auth/login")
        .header("content-type", "application/json")
        .raw(huge)
        .send()
        .await
        .assert_problem(413, "payload_too_large");
}

#[tokio::test]
async fn current_user_needs_valid_credentials() {
    let app = TestApp::new().await;
    app.get("/api/v1/me")
        .send()
        .await
        .assert_problem(401, "unauthenticated");
    app.get("/api/v1/me")
        .bearer("brt_nonsense")
        .send()
        .await
        .assert_problem(401, "unauthenticated");
    let forged = format!("brt_{}{}", "A".repeat(24), app.owner.id);
    app.get("/api/v1/me")
        .bearer(&forged)
        .send()
        .await
        .assert_problem(401, "unauthenticated");
    app.get("/api/v1/me")
        .session("garbage")
        .send()
        .await
        .assert_problem(401, "unauthenticated");
    app.get("/api/v1/me")
        .header("authorization", "Basic YWxhZGRpbjpvcGVuc2VzYW1l")
        .send()
        .await
        .assert_problem(401, "unauthenticated");
    let me = app.get("/api/v1/me").by(&app.owner).send().await;
    me.assert_status(200);
    assert_eq!(me.json()["via"], "token");
}

#[tokio::test]
async fn logout_revokes_the_session_and_clears_the_cookie() {
    let app = TestApp::new().await;
    let session = app.sign_in(&app.owner.email, PASSWORD).await;
    let response = app
        .post("/api/v1/auth/logout")
        .session(&session)
        .send()
        .await;
    response.assert_status(204);
    let cleared = response.set_cookie().unwrap();
    assert!(
        cleared.starts_with("berth_session=;") && cleared.contains("Max-Age=0"),
        "{cleared}"
    );
    app.get("/api/v1/me")
        .session(&session)
        .send()
        .await
        .assert_problem(401, "unauthenticated");
    app.post("/api/v1/auth/logout")
        .send()
        .await
        .assert_problem(401, "unauthenticated");
}

#[tokio::test]
async fn changing_the_password_signs_out_every_other_session() {
    let app = TestApp::new().await;
    let user = app.user(Role::Developer).await;
    let kept = app.sign_in(&user.email, PASSWORD).await;
    let other = app.sign_in(&user.email, PASSWORD).await;
    let new_password = "a much better passphrase";
    let response = app
        .post("/api/v1/me/password")
        .session(&kept)
        .json(json!({ "current_password": PASSWORD, "new_password": new_password }))
        .send()
        .await;
    response.assert_status(200);
    assert_eq!(response.json(), json!({ "changed": true }));
    app.get("/api/v1/me")
        .session(&kept)
        .send()
        .await
        .assert_status(200);
    app.get("/api/v1/me")
        .session(&other)
        .send()
        .await
        .assert_problem(401, "unauthenticated");
    // Tokens are not sessions: they keep working.
    app.get("/api/v1/me")
        .by(&user)
        .send()
        .await
        .assert_status(200);
    app.post("/api/v1/auth/login")
        .json(json!({ "email": user.email, "password": PASSWORD }))
        .send()
        .await
        .assert_problem(401, "invalid_credentials");
    app.sign_in(&user.email, new_password).await;
}

#[tokio::test]
async fn password_change_errors() {
    let app = TestApp::new().await;
    let change = |current: &str, new: &str| {
        app.post("/api/v1/me/password")
            .by(&app.owner)
            .json(json!({ "current_password": current, "new_password": new }))
    };
    change("wrong current password", "a fine new password")
        .send()
        .await
        .assert_problem(422, "validation_failed");
    change(PASSWORD, "short")
        .send()
        .await
        .assert_problem(422, "validation_failed");
    change(PASSWORD, &"x".repeat(257))
        .send()
        .await
        .assert_problem(422, "validation_failed");
    change(PASSWORD, PASSWORD)
        .send()
        .await
        .assert_problem(422, "validation_failed");
    app.post("/api/v1/me/password")
        .by(&app.owner)
        .json(json!({ "current_password": PASSWORD }))
        .send()
        .await
        .assert_problem(400, "invalid_request");
    app.post("/api/v1/me/password")
        .json(json!({ "current_password": PASSWORD, "new_password": "a fine new password" }))
        .send()
        .await
        .assert_problem(401, "unauthenticated");
    // Nothing changed.
    app.sign_in(&app.owner.email, PASSWORD).await;
}

#[tokio::test]
async fn temporary_passwords_must_be_replaced_first() {
    let app = TestApp::new().await;
    let invited = app
        .post("/api/v1/members")
        .by(&app.owner)
        .json(json!({ "email": "new@example.org", "role": "admin" }))
        .send()
        .await;
    invited.assert_status(201);
    let temporary = invited.json()["temporary_password"]
        .as_str()
        .unwrap()
        .to_owned();
    let login = app
        .post("/api/v1/auth/login")
        .json(json!({ "email": "new@example.org", "password": temporary }))
        .send()
        .await;
    login.assert_status(200);
    assert_eq!(login.json()["must_change_password"], true);
    let session = login.session_cookie().unwrap();

    let me = app.get("/api/v1/me").session(&session).send().await;
    me.assert_status(200);
    assert_eq!(me.json()["must_change_password"], true);
    for (method, path) in [
        ("GET", "/api/v1/members"),
        ("GET", "/api/v1/tokens"),
        ("GET", "/api/v1/audit"),
        ("GET", "/api/v1/healthz/details"),
    ] {
        app.request(method.parse().unwrap(), path)
            .session(&session)
            .send()
            .await
            .assert_problem(403, "password_change_required");
    }
    app.post("/api/v1/me/password")
        .session(&session)
        .json(json!({ "current_password": temporary, "new_password": "my own passphrase" }))
        .send()
        .await
        .assert_status(200);
    let me = app.get("/api/v1/me").session(&session).send().await;
    assert_eq!(me.json()["must_change_password"], false);
    app.get("/api/v1/members")
        .session(&session)
        .send()
        .await
        .assert_status(200);
    app.post("/api/v1/auth/logout")
        .session(&session)
        .send()
        .await
        .assert_status(204);
}

#[tokio::test]
async fn five_failures_throttle_an_email_even_for_the_right_password() {
    let app = TestApp::new().await;
    let attempt = |password: &'static str| {
        app.post("/api/v1/auth/login")
            .json(json!({ "email": app.owner.email, "password": password }))
    };
    for _ in 0..5 {
        attempt("a wrong password!")
            .send()
            .await
            .assert_problem(401, "invalid_credentials");
    }
    let throttled = attempt(PASSWORD).send().await;
    throttled.assert_problem(429, "too_many_requests");
    let retry_after: u64 = throttled.headers[header::RETRY_AFTER]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=900).contains(&retry_after), "{retry_after}");
    assert!(throttled.set_cookie().is_none());
    // Other accounts are not affected.
    let other = app.user(Role::Viewer).await;
    app.sign_in(&other.email, PASSWORD).await;
}

#[tokio::test]
async fn unknown_emails_are_throttled_alike() {
    let app = TestApp::new().await;
    for _ in 0..5 {
        app.post("/api/v1/auth/login")
            .json(json!({ "email": "ghost@example.org", "password": "whatever it is" }))
            .send()
            .await
            .assert_problem(401, "invalid_credentials");
    }
    app.post("/api/v1/auth/login")
        .json(json!({ "email": "ghost@example.org", "password": "whatever it is" }))
        .send()
        .await
        .assert_problem(429, "too_many_requests");
}

#[tokio::test]
async fn fifty_failures_throttle_a_client_address() {
    let app = TestApp::new().await;
    let attacker = IpAddr::V4(Ipv4Addr::new(198, 51, 100, 9));
    for n in 0..50 {
        app.post("/api/v1/auth/login")
            .client_ip(attacker)
            .json(json!({ "email": format!("guess{n}@example.org"), "password": "password guess" }))
            .send()
            .await
            .assert_problem(401, "invalid_credentials");
    }
    let blocked = app
        .post("/api/v1/auth/login")
        .client_ip(attacker)
        .json(json!({ "email": app.owner.email, "password": PASSWORD }))
        .send()
        .await;
    blocked.assert_problem(429, "too_many_requests");
    assert!(blocked.headers.contains_key(header::RETRY_AFTER));
    // The same account from elsewhere signs in.
    let elsewhere = app
        .post("/api/v1/auth/login")
        .json(json!({ "email": app.owner.email, "password": PASSWORD }))
        .send()
        .await;
    assert_eq!(elsewhere.status, StatusCode::OK);
}

/// An IPv6 caller is counted by its /64: a subscriber holds the whole /64 and
/// could otherwise guess from a new address every time.
#[tokio::test]
async fn an_ipv6_caller_is_throttled_by_its_64() {
    let app = TestApp::new().await;
    let in_the_64 = |n: u16| IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 7, 7, n, 0, 0, n));
    for n in 0..50 {
        app.post("/api/v1/auth/login")
            .client_ip(in_the_64(n))
            .json(json!({ "email": format!("guess{n}@example.org"), "password": "password guess" }))
            .send()
            .await
            .assert_problem(401, "invalid_credentials");
    }
    app.post("/api/v1/auth/login")
        .client_ip(in_the_64(999))
        .json(json!({ "email": app.owner.email, "password": PASSWORD }))
        .send()
        .await
        .assert_problem(429, "too_many_requests");
    let next_64 = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 7, 8, 0, 0, 0, 1));
    let elsewhere = app
        .post("/api/v1/auth/login")
        .client_ip(next_64)
        .json(json!({ "email": app.owner.email, "password": PASSWORD }))
        .send()
        .await;
    assert_eq!(elsewhere.status, StatusCode::OK);
}

#[tokio::test]
async fn other_sessions_are_signed_out_even_when_tidying_up_fails() {
    let app = TestApp::new().await;
    let kept = app.sign_in(&app.owner.email, PASSWORD).await;
    let other = app.sign_in(&app.owner.email, PASSWORD).await;
    // The signed-out sessions' items cannot be deleted: they must be dead anyway.
    app.store_faults.fail_next("DeleteItem", 10);
    app.post("/api/v1/me/password")
        .session(&kept)
        .json(json!({ "current_password": PASSWORD, "new_password": "another good passphrase" }))
        .send()
        .await
        .assert_status(200);
    app.get("/api/v1/me")
        .session(&other)
        .send()
        .await
        .assert_problem(401, "unauthenticated");
    app.get("/api/v1/me")
        .session(&kept)
        .send()
        .await
        .assert_status(200);
}

/// Many guesses at once: each is counted before its password is checked, so
/// at most the limit of them is ever verified, and the rest are throttled.
#[tokio::test]
async fn parallel_guesses_are_counted_before_they_are_checked() {
    let app = TestApp::new().await;
    let before = password::verifications_on_this_thread();
    let guesses = (0..50).map(|n| {
        app.post("/api/v1/auth/login")
            .json(json!({ "email": app.owner.email, "password": format!("wrong guess {n:02}") }))
            .send()
    });
    let answers = futures::future::join_all(guesses).await;
    let verified = password::verifications_on_this_thread() - before;
    let refused = answers.iter().filter(|a| a.status == 401).count();
    let throttled = answers.iter().filter(|a| a.status == 429).count();
    assert!(verified <= 5, "{verified} passwords were verified");
    assert!(refused <= 5, "{refused} answers were 401");
    assert_eq!(refused + throttled, 50, "every other answer is 429");
    for answer in answers.iter().filter(|a| a.status == 429) {
        answer.assert_problem(429, "too_many_requests");
        assert!(answer.headers.contains_key(header::RETRY_AFTER));
    }
    // The right password is throttled now too, and is not even checked.
    let before = password::verifications_on_this_thread();
    app.post("/api/v1/auth/login")
        .json(json!({ "email": app.owner.email, "password": PASSWORD }))
        .send()
        .await
        .assert_problem(429, "too_many_requests");
    assert_eq!(password::verifications_on_this_thread(), before);
}

/// The current password of a password change is a guess like a login's.
#[tokio::test]
async fn parallel_guesses_at_the_current_password_are_bounded_too() {
    let app = TestApp::new().await;
    let before = password::verifications_on_this_thread();
    let guesses = (0..20).map(|n| {
        app.post("/api/v1/me/password")
            .by(&app.owner)
            .json(json!({
                "current_password": format!("wrong guess {n:02}"),
                "new_password": "a fine new passphrase",
            }))
            .send()
    });
    let answers = futures::future::join_all(guesses).await;
    let verified = password::verifications_on_this_thread() - before;
    assert!(verified <= 5, "{verified} passwords were verified");
    let refused = answers.iter().filter(|a| a.status == 422).count();
    let throttled = answers.iter().filter(|a| a.status == 429).count();
    assert!(refused <= 5, "{refused} answers were 422");
    assert_eq!(refused + throttled, 20, "every other answer is 429");
}

/// A success gives its attempt back: signing in many times from one address
/// never throttles it, and it forgets the email's earlier failures.
#[tokio::test]
async fn successful_logins_are_not_counted() {
    let app = TestApp::new().await;
    for _ in 0..4 {
        app.post("/api/v1/auth/login")
            .json(json!({ "email": app.owner.email, "password": "a wrong password!" }))
            .send()
            .await
            .assert_problem(401, "invalid_credentials");
    }
    app.sign_in(&app.owner.email, PASSWORD).await;
    for _ in 0..4 {
        app.post("/api/v1/auth/login")
            .json(json!({ "email": app.owner.email, "password": "a wrong password!" }))
            .send()
            .await
            .assert_problem(401, "invalid_credentials");
    }
    for _ in 0..55 {
        app.sign_in(&app.owner.email, PASSWORD).await;
    }
}
