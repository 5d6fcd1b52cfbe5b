//! No password, temporary password, token or session secret is shown after its
//! one-time display: not in responses, not in the audit log, not in the logs.

use serde_json::json;

use crate::support::{PASSWORD, TestApp, TestResponse, logs, unique};

#[tokio::test]
async fn secrets_never_leak() {
    let app = TestApp::new().await;
    let mut secrets = vec![PASSWORD.to_owned(), app.owner.token.clone()];
    let mut later_bodies = Vec::new();

    let invited = app
        .post("/api/v1/members")
        .by(&app.owner)
        .json(json!({ "email": "leak-check@example.org", "role": "developer" }))
        .send()
        .await;
    let temporary = invited.json()["temporary_password"]
        .as_str()
        .unwrap()
        .to_owned();
    secrets.push(temporary.clone());
    let session = app.sign_in("leak-check@example.org", &temporary).await;
    secrets.push(session.clone());
    let new_password = "leak check new passphrase";
    secrets.push(new_password.to_owned());
    later_bodies.push(
        app.post("/api/v1/me/password")
            .session(&session)
            .json(json!({ "current_password": temporary, "new_password": new_password }))
            .send()
            .await,
    );
    let created = app
        .post("/api/v1/tokens")
        .session(&session)
        .json(json!({ "name": "leak" }))
        .send()
        .await;
    let token = created.json()["token"].as_str().unwrap().to_owned();
    secrets.push(token.clone());
    // Failed attempts carry secrets too.
    later_bodies.push(
        app.post("/api/v1/auth/login")
            .json(
                json!({ "email": "leak-check@example.org", "password": "leak check wrong guess" }),
            )
            .send()
            .await,
    );
    secrets.push("leak check wrong guess".to_owned());
    later_bodies.push(
        app.post("/api/v1/auth/login")
            .json(json!({ "email": "leak check typed into email", "password": "x" }))
            .send()
            .await,
    );
    secrets.push("leak check typed into email".to_owned());
    later_bodies.push(app.get("/api/v1/tokens").bearer(&token).send().await);
    later_bodies.push(app.get("/api/v1/members").bearer(&token).send().await);
    later_bodies.push(app.get("/api/v1/me").session(&session).send().await);
    later_bodies.push(
        app.get("/api/v1/audit?limit=200")
            .by(&app.owner)
            .send()
            .await,
    );
    later_bodies.push(
        app.get("/api/v1/me")
            .bearer(&format!("{token}x"))
            .send()
            .await,
    );
    later_bodies.push(
        app.post("/api/v1/auth/logout")
            .session(&session)
            .send()
            .await,
    );

    assert_never_shown(&app, &secrets, &later_bodies).await;
}

/// No secret in a response shown after its one-time display, in the audit
/// log of the owner's organization or the system partition, or in the logs.
async fn assert_never_shown(app: &TestApp, secrets: &[String], later_bodies: &[TestResponse]) {
    for response in later_bodies {
        let text = format!("{:?} {}", response.headers, response.text());
        for secret in secrets {
            assert!(
                !text.contains(secret.as_str()),
                "a response shows a secret: {text}"
            );
        }
    }
    let mut audit = String::new();
    for org in ["acme", berth_store::keys::SYSTEM_ORG] {
        audit.push_str(&format!("{:?}", app.audit_events(org).await));
    }
    let logged = logs::captured();
    assert!(logged.contains("request"), "the capture works");
    for secret in secrets {
        assert!(
            !audit.contains(secret.as_str()),
            "the audit log holds a secret"
        );
        assert!(!logged.contains(secret.as_str()), "the log holds a secret");
    }
}

/// A webhook's secret is shown when the hook is made, and never again: not
/// by getWebhook, not in the receiver's answers (signed, wrongly signed,
/// GitLab's token), not in the audit log or the logs; nor are the
/// signatures made with it.
#[tokio::test]
async fn webhook_secrets_never_leak() {
    use crate::webhooks::{COMMIT, Hook, push, source_app};
    use berth_api::webhooks::delivery::github_signature;

    let app = TestApp::with_cluster().await;
    let source = source_app(&app, Some("main")).await;
    let hook = Hook::make(&app, &source).await;
    let path = format!("{}/webhook", source.path);
    let wrong = format!("{}-wrong", hook.secret);
    let mut secrets = vec![hook.secret.clone(), wrong.clone()];
    let mut later_bodies = vec![app.get(&path).by(&app.owner).send().await];
    for (event, git_ref) in [
        ("push", "refs/heads/main"),
        ("push", "refs/heads/dev"),
        ("ping", ""),
    ] {
        let body = push(git_ref, COMMIT);
        secrets.push(github_signature(&hook.secret, &body));
        later_bodies.push(hook.github(&app, event, &unique("d"), body).await);
    }
    later_bodies.push(
        hook.signed_with(&wrong)
            .push(&app, "refs/heads/main", COMMIT)
            .await,
    );
    for token in [&hook.secret, &wrong] {
        later_bodies.push(
            app.post(&hook.url)
                .header("content-type", "application/json")
                .header("x-gitlab-event", "Push Hook")
                .header("x-gitlab-token", token)
                .raw(json!({ "ref": "refs/heads/other" }).to_string())
                .send()
                .await,
        );
    }
    // Replaced: the old secret is shown nowhere after, the new one only once.
    let replaced = Hook::make(&app, &source).await;
    secrets.push(replaced.secret);
    later_bodies.push(app.get(&path).by(&app.owner).send().await);
    later_bodies.push(
        app.get("/api/v1/audit?limit=200")
            .by(&app.owner)
            .send()
            .await,
    );
    assert!(
        later_bodies
            .iter()
            .any(|response| response.status.as_u16() == 202),
        "a signed push was accepted"
    );
    assert_never_shown(&app, &secrets, &later_bodies).await;
}

/// A git credential (an app's `git_secret`) is the build's alone: its value
/// is in no response, audit event or log line of the app and build
/// operations, nor in a refusal of a URL that carried one.
#[tokio::test]
async fn git_credentials_never_leak() {
    use http::Method;

    let app = TestApp::with_cluster().await;
    let project = app.ready_environment("gitleak", "dev").await;
    let env = format!("/api/v1/projects/{project}/environments/dev");
    let apps = format!("{env}/apps");
    let shop = format!("{apps}/shop");
    let token = format!("ghp_SENTINEL{}", uuid::Uuid::new_v4().simple());
    let in_url = format!("ghp_URLSENTINEL{}", uuid::Uuid::new_v4().simple());
    let mut answers = vec![
        app.request(Method::PUT, &format!("{env}/secrets/git-cred"))
            .by(&app.owner)
            .json(json!({ "data": { "token": token, "username": "bot" } }))
            .send()
            .await,
    ];
    answers.push(
        app.post(&apps)
            .by(&app.owner)
            .json(json!({ "name": "leak", "git_repo": format!("https://bot:{in_url}@github.com/acme/shop") }))
            .send()
            .await,
    );
    let created = app
        .post(&apps)
        .by(&app.owner)
        .json(
            json!({ "name": "shop", "git_repo": "https://github.com/acme/private",
                      "git_secret": "git-cred" }),
        )
        .send()
        .await;
    assert_eq!(
        created.json()["git_secret"],
        "git-cred",
        "its name is shown"
    );
    answers.push(created);
    for (method, path, body) in [
        (Method::GET, shop.clone(), None),
        (Method::GET, apps.clone(), None),
        (
            Method::PATCH,
            shop.clone(),
            Some(json!({ "git_ref": "release" })),
        ),
        (
            Method::POST,
            format!("{shop}/builds"),
            Some(json!({ "ref": "main" })),
        ),
        (Method::GET, format!("{shop}/builds"), None),
        (Method::GET, format!("{shop}/builds/1"), None),
        (Method::GET, format!("{shop}/builds/1/logs"), None),
        (Method::GET, format!("{shop}/releases"), None),
        (Method::GET, "/api/v1/audit?limit=200".to_owned(), None),
    ] {
        let mut request = app.request(method, &path).by(&app.owner);
        if let Some(body) = body {
            request = request.json(body);
        }
        let answer = request.send().await;
        assert!(answer.status.is_success(), "{path}: {}", answer.text());
        answers.push(answer);
    }
    let audit = format!("{:?}", app.audit_events(&app.owner.org).await);
    assert!(audit.contains("createBuild"), "the build is audited");
    let logged = logs::captured();
    for secret in [&token, &in_url] {
        for answer in &answers {
            let text = format!("{:?} {}", answer.headers, answer.text());
            assert!(
                !text.contains(secret.as_str()),
                "a response shows a git credential: {text}"
            );
        }
        assert!(
            !audit.contains(secret.as_str()),
            "the audit log holds a git credential"
        );
        assert!(
            !logged.contains(secret.as_str()),
            "the log holds a git credential"
        );
    }
}
