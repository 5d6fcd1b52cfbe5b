//! Issue 15, part 5: permissions that mean what they say. A change made with
//! the session cookie must come from the API's own origin (so a page of
//! another site cannot borrow the cookie); a new command is new code
//! (`app-deploy`); the promote body's environment is parsed before it reaches
//! the cluster; audit targets come from parsed values only.

use http::Method;
use serde_json::json;

use berth_domain::Role;
use berth_records::audit::{ActorKind, Outcome};

use crate::support::{PASSWORD, TestApp, eventually};

/// What `make dev`'s API answers at, as the browser names it.
const HOST: &str = "berth.example.com";
const OWN_ORIGIN: &str = "http://berth.example.com";
/// A page on a sibling subdomain: the same site, another origin.
const SIBLING: &str = "http://pages.example.com";

/// Issue 25, part 3: every change with the session cookie that a browser
/// says comes from another origin (`Origin`) or another site, the same
/// site included (`Sec-Fetch-Site`), is refused (403), and so is a body
/// that is not JSON (415): nothing changes, and each is audited as its
/// operation. The same changes with neither header — curl, a script, a
/// generated client — go through without a content type, and so do
/// body-less ones from the API's own origin; a token never meets the rule.
#[tokio::test]
async fn changes_with_the_cookie_must_come_from_the_apis_own_origin() {
    let app = TestApp::with_cluster().await;
    let project = app.ready_environment("csrf", "dev").await;
    let environment = format!("/api/v1/projects/{project}/environments/dev");
    let apps = format!("{environment}/apps");
    app.create_app(
        &apps,
        json!({"name": "shop", "image": "busybox:1.37", "schedule": "0 3 * * *"}),
    )
    .await;
    let secret = format!("{environment}/secrets/db");
    app.request(Method::PUT, &secret)
        .by(&app.owner)
        .json(json!({"data": {"password": "hunter2"}}))
        .send()
        .await
        .assert_status(201);
    let session = app.sign_in(&app.owner.email, PASSWORD).await;
    let shop = format!("{apps}/shop");

    let cookie = |method: Method, path: &str| {
        app.request(method, path)
            .session(&session)
            .header("host", HOST)
    };
    let forged: Vec<(&str, Method, String)> = vec![
        ("restartApp", Method::POST, format!("{shop}/restart")),
        ("runApp", Method::POST, format!("{shop}/run")),
        (
            "restoreEnvironment",
            Method::POST,
            format!("{environment}/restore"),
        ),
        (
            "deployTemplate",
            Method::POST,
            format!("{environment}/templates/nginx"),
        ),
        ("deleteSecret", Method::DELETE, secret.clone()),
        ("deleteApp", Method::DELETE, shop.clone()),
        ("updateApp", Method::PATCH, shop.clone()),
        ("putSecret", Method::PUT, secret.clone()),
        ("logout", Method::POST, "/api/v1/auth/logout".to_owned()),
    ];
    // What a browser says of a page of another origin: the sibling's
    // origin, another scheme's, an opaque one; the site's relation alone
    // (each header is a defence of its own); and both, disagreeing.
    let elsewhere: [&[(&'static str, &str)]; 7] = [
        &[("origin", SIBLING)],
        &[("origin", "https://berth.example.com")],
        &[("origin", "null")],
        &[("sec-fetch-site", "same-site")],
        &[("sec-fetch-site", "cross-site")],
        &[("origin", SIBLING), ("sec-fetch-site", "same-site")],
        &[("origin", OWN_ORIGIN), ("sec-fetch-site", "same-site")],
    ];
    let audited = |action: &str, status: u16, outcome: Outcome| {
        let app = &app;
        let action = action.to_owned();
        async move {
            let event = app.last_audit_event(&app.owner.org).await;
            assert_eq!(
                (
                    event.action.as_str(),
                    event.status,
                    event.outcome,
                    event.actor_kind
                ),
                (action.as_str(), Some(status), outcome, ActorKind::Session)
            );
        }
    };
    for (action, method, path) in &forged {
        for headers in elsewhere {
            for body in [None, Some(json!({"replicas": 0}))] {
                let mut request = cookie(method.clone(), path);
                for (name, value) in headers {
                    request = request.header(name, value);
                }
                if let Some(body) = body {
                    request = request.json(body);
                }
                request.send().await.assert_problem(403, "forbidden");
                audited(action, 403, Outcome::Denied).await;
            }
        }
        // A body a page can send unasked (a form's, or text/plain), even
        // where the browser hides where it comes from.
        for content_type in ["text/plain", "application/x-www-form-urlencoded"] {
            cookie(method.clone(), path)
                .header("content-type", content_type)
                .raw(r#"{"name":"stolen"}"#)
                .send()
                .await
                .assert_problem(415, "unsupported_media_type");
            audited(action, 415, Outcome::Failure).await;
        }
    }
    cookie(Method::POST, "/api/v1/tokens")
        .raw(r#"{"name":"stolen"}"#)
        .header("content-type", "text/plain")
        .send()
        .await
        .assert_problem(415, "unsupported_media_type");

    // Nothing changed: the app is there, not restarted, never run; no nginx;
    // the secret is there; the session still works; no token was made.
    let detail = app.get(&shop).by(&app.owner).send().await;
    detail.assert_status(200);
    assert_eq!(detail.json()["app"]["processes"][0]["min_replicas"], 1);
    let listed = app.get(&apps).by(&app.owner).send().await.json();
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");
    let secrets = app
        .get(&format!("{environment}/secrets"))
        .by(&app.owner)
        .send()
        .await
        .json();
    assert_eq!(secrets.as_array().map(Vec::len), Some(1), "{secrets}");
    let tokens = app.get("/api/v1/tokens").session(&session).send().await;
    tokens.assert_status(200);
    assert_eq!(
        tokens.json().as_array().map(Vec::len),
        Some(1),
        "only the fixture's"
    );

    // Reads with the cookie need neither.
    app.get(&shop)
        .session(&session)
        .header("origin", SIBLING)
        .header("sec-fetch-site", "same-site")
        .send()
        .await
        .assert_status(200);
    // Neither header (curl, a script, a generated client), no content
    // type, no body: accepted.
    let cron_jobs: kube::Api<k8s_openapi::api::batch::v1::CronJob> =
        kube::Api::namespaced(app.cluster().client.clone(), &format!("{project}-dev"));
    eventually("the CronJob is there", || async {
        cron_jobs.get_opt("shop-job").await.unwrap().is_some()
    })
    .await;
    cookie(Method::POST, &format!("{shop}/run"))
        .send()
        .await
        .assert_status(202);
    cookie(Method::POST, &format!("{shop}/restart"))
        .send()
        .await
        .assert_status(202);
    // From the API's own origin, as a browser's fetch sends it.
    let own = |method: Method, path: &str| {
        cookie(method, path)
            .header("origin", OWN_ORIGIN)
            .header("sec-fetch-site", "same-origin")
    };
    own(Method::POST, &format!("{shop}/run"))
        .send()
        .await
        .assert_status(202);
    own(Method::PATCH, &shop)
        .json(json!({"replicas": 0}))
        .send()
        .await
        .assert_status(200);
    // A body-less PATCH or PUT gets past the rule to its operation, which
    // wants a body.
    own(Method::PATCH, &shop)
        .send()
        .await
        .assert_problem(400, "invalid_request");
    own(Method::PUT, &secret)
        .send()
        .await
        .assert_problem(400, "invalid_request");
    own(Method::DELETE, &secret).send().await.assert_status(204);
    audited("deleteSecret", 204, Outcome::Success).await;
    // A token is never sent by a browser on its own: no such rule.
    let token_restart = |origin: &'static str| {
        app.post(&format!("{shop}/restart"))
            .by(&app.owner)
            .header("origin", origin)
            .header("sec-fetch-site", "cross-site")
            .send()
    };
    token_restart(SIBLING).await.assert_status(202);
    app.post(&format!("{environment}/templates/nginx"))
        .by(&app.owner)
        .send()
        .await
        .assert_status(201);
    // The login itself takes JSON whatever cookie it carries.
    app.post("/api/v1/auth/login")
        .session(&session)
        .header("origin", SIBLING)
        .json(json!({"email": app.owner.email, "password": PASSWORD}))
        .send()
        .await
        .assert_status(200);
    // As `curl -X POST -b cookies …` logs out.
    cookie(Method::POST, "/api/v1/auth/logout")
        .send()
        .await
        .assert_status(204);
}

/// A new command is new code, and so is the env that decides what code
/// does: an operator, who may change everything else of a process, can
/// make it run neither something else nor with another environment.
#[tokio::test]
async fn a_new_command_needs_app_deploy() {
    let app = TestApp::with_cluster().await;
    let project = app.ready_environment("cmd", "dev").await;
    let apps = format!("/api/v1/projects/{project}/environments/dev/apps");
    app.create_app(
        &apps,
        json!({"name": "shop", "image": "nginx:1.27", "port": 80,
                     "env": [{"name": "TOKEN", "value": "s3cr3t"}]}),
    )
    .await;
    let shop = format!("{apps}/shop");
    let operator = app.user(Role::Operator).await;
    let developer = app.user(Role::Developer).await;
    let patch = |user, body| app.request(Method::PATCH, &shop).by(user).json(body).send();
    for body in [
        json!({"command": ["sh", "-c", "env"]}),
        json!({"processes": [{"name": "web", "port": 80, "command": ["env"]}]}),
        json!({"processes": [{"name": "web", "port": 80}, {"name": "spy", "command": ["env"]}]}),
        json!({"env": [{"name": "TOKEN"}, {"name": "LD_PRELOAD", "value": "/tmp/spy.so"}]}),
        json!({"env": [{"name": "TOKEN", "value": "another"}]}),
        json!({"env": []}),
    ] {
        patch(&operator, body.clone())
            .await
            .assert_problem(403, "forbidden");
    }
    let record = app.get(&shop).by(&app.owner).send().await.json();
    assert_eq!(record["app"]["processes"].as_array().map(Vec::len), Some(1));
    assert_eq!(record["app"]["processes"][0]["command"], json!([]));
    assert_eq!(
        record["app"]["env"],
        json!([{"name": "TOKEN", "value": "s3cr3t"}])
    );
    // What an operator may still do: processes without a new command, with
    // the env sent back as it is (by name: an operator is not shown values).
    patch(
        &operator,
        json!({"processes": [{"name": "web", "port": 80}, {"name": "worker"}],
               "env": [{"name": "TOKEN"}]}),
    )
    .await
    .assert_status(200);
    patch(
        &developer,
        json!({"command": ["nginx", "-g", "daemon off;"]}),
    )
    .await
    .assert_status(200);
}

/// The promote body's environment is a name before it is anything else; the
/// call is audited by the app it promotes.
#[tokio::test]
async fn an_impossible_promote_target_is_refused_before_the_cluster() {
    let app = TestApp::with_cluster().await;
    let project = app.ready_environment("prom", "dev").await;
    let apps = format!("/api/v1/projects/{project}/environments/dev/apps");
    app.create_app(
        &apps,
        json!({"name": "shop", "image": "nginx:1.27", "port": 80}),
    )
    .await;
    for target in [
        "Prod",
        "../../kube-system",
        "a".repeat(23).as_str(),
        "",
        "-x",
        "prod/x",
    ] {
        let before = app.cluster_requests.get();
        let refused = app
            .post(&format!("{apps}/shop/promote"))
            .by(&app.owner)
            .json(json!({"environment": target}))
            .send()
            .await;
        refused.assert_problem(422, "validation_failed");
        let detail = refused.json()["detail"].as_str().unwrap().to_owned();
        assert!(
            detail.starts_with("environment: must be a DNS label"),
            "{detail}"
        );
        if !target.is_empty() {
            assert!(!detail.contains(target), "{detail}");
        }
        assert_eq!(
            app.cluster_requests.get(),
            before,
            "the cluster was not asked"
        );
        let event = app.last_audit_event(&app.owner.org).await;
        assert_eq!(
            (
                event.action.as_str(),
                event.target_kind.as_deref(),
                event.target.as_deref()
            ),
            ("promoteApp", Some("app"), Some("shop"))
        );
    }
}

/// What the audit log names as a call's target is a value that parsed:
/// never a raw body field or path segment that could be anything (a token's
/// secret put where its id belongs, a name with control characters).
#[tokio::test]
async fn audit_targets_are_parsed_values_only() {
    let app = TestApp::with_cluster().await;
    let project = app.ready_environment("aud", "dev").await;
    let environment = format!("/api/v1/projects/{project}/environments/dev");
    let target_of_last = || async {
        let event = app.last_audit_event(&app.owner.org).await;
        (event.action, event.target_kind, event.target)
    };
    app.post(&format!("{environment}/apps"))
        .by(&app.owner)
        .json(json!({"name": "Bad\nName", "image": "nginx"}))
        .send()
        .await
        .assert_problem(422, "validation_failed");
    assert_eq!(target_of_last().await, ("createApp".into(), None, None));
    app.post("/api/v1/projects")
        .by(&app.owner)
        .json(json!({"name": "NOT a name", "display_name": "x"}))
        .send()
        .await
        .assert_problem(422, "validation_failed");
    assert_eq!(target_of_last().await, ("createProject".into(), None, None));
    app.post(&format!("/api/v1/projects/{project}/environments"))
        .by(&app.owner)
        .json(json!({"name": "x_y"}))
        .send()
        .await
        .assert_problem(422, "validation_failed");
    assert_eq!(
        target_of_last().await,
        ("createEnvironment".into(), None, None)
    );
    app.request(
        Method::DELETE,
        &format!("/api/v1/tokens/{}", app.owner.token),
    )
    .by(&app.owner)
    .send()
    .await
    .assert_problem(404, "not_found");
    assert_eq!(target_of_last().await, ("deleteToken".into(), None, None));
    app.request(Method::DELETE, "/api/v1/members/NOT-AN-ID")
        .by(&app.owner)
        .send()
        .await
        .assert_problem(404, "not_found");
    assert_eq!(target_of_last().await, ("removeMember".into(), None, None));
    app.request(Method::PUT, &format!("{environment}/secrets/Not_A_Secret"))
        .by(&app.owner)
        .json(json!({"data": {"a": "b"}}))
        .send()
        .await
        .assert_problem(422, "validation_failed");
    assert_eq!(target_of_last().await, ("putSecret".into(), None, None));

    // Parsed, they are named as ever.
    app.post(&format!("{environment}/apps"))
        .by(&app.owner)
        .json(json!({"name": "shop", "image": "nginx"}))
        .send()
        .await
        .assert_status(201);
    assert_eq!(
        target_of_last().await,
        ("createApp".into(), Some("app".into()), Some("shop".into()))
    );
    app.request(Method::DELETE, "/api/v1/tokens/abcdefghijkl")
        .by(&app.owner)
        .send()
        .await
        .assert_problem(404, "not_found");
    assert_eq!(
        target_of_last().await,
        (
            "deleteToken".into(),
            Some("token".into()),
            Some("abcdefghijkl".into())
        )
    );
}
