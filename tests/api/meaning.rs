//! Issue 15, part 5: permissions that mean what they say. A change made with
//! the session cookie must say JSON and come from the API's own origin (so a
//! page of another site cannot borrow the cookie); a new command is new code
//! (`app-deploy`); the promote body's environment is parsed before it reaches
//! the cluster; audit targets come from parsed values only.

use http::Method;
use serde_json::json;

use berth_shared::Role;
use berth_shared::audit::{ActorKind, Outcome};

use crate::support::{PASSWORD, TestApp, eventually};

/// What `make dev`'s API answers at, as the browser names it.
const HOST: &str = "berth.example.com";
const OWN_ORIGIN: &str = "http://berth.example.com";
/// A page on a sibling subdomain: the same site, another origin.
const SIBLING: &str = "http://pages.example.com";

/// Every body-less change with the session cookie and no content type is
/// refused (415), every change from another origin too (403): nothing
/// changes, and each is audited as its operation. The same requests with a
/// token, or from the API's own origin with JSON, go through.
#[tokio::test]
async fn changes_with_the_cookie_must_say_json_and_come_from_the_api() {
    let app = TestApp::with_cluster().await;
    let project = app.ready_environment("csrf", "dev").await;
    let environment = format!("/api/v1/projects/{project}/environments/dev");
    let apps = format!("{environment}/apps");
    app.create_app(
        &apps,
        json!({"name": "shop", "image": "busybox:1.37", "schedule": "0 3 * * *"}),
    )
    .await;
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
        ("deleteApp", Method::DELETE, shop.clone()),
        ("logout", Method::POST, "/api/v1/auth/logout".to_owned()),
    ];
    for (action, method, path) in &forged {
        // No content type at all, or a form's: what a page can send unasked.
        for content_type in [
            None,
            Some("text/plain"),
            Some("application/x-www-form-urlencoded"),
        ] {
            let mut request = cookie(method.clone(), path);
            if let Some(content_type) = content_type {
                request = request.header("content-type", content_type);
            }
            request
                .send()
                .await
                .assert_problem(415, "unsupported_media_type");
            let event = app.last_audit_event(&app.owner.org).await;
            assert_eq!(
                (
                    event.action.as_str(),
                    event.status,
                    event.outcome,
                    event.actor_kind
                ),
                (*action, Some(415), Outcome::Failure, ActorKind::Session)
            );
        }
        // JSON, from another origin (or one the browser hides).
        for origin in [SIBLING, "https://berth.example.com", "null"] {
            cookie(method.clone(), path)
                .says_json()
                .header("origin", origin)
                .send()
                .await
                .assert_problem(403, "forbidden");
            let event = app.last_audit_event(&app.owner.org).await;
            assert_eq!(
                (event.action.as_str(), event.status, event.outcome),
                (*action, Some(403), Outcome::Denied)
            );
        }
    }
    // A JSON body from another origin too.
    cookie(Method::PATCH, &shop)
        .json(json!({"replicas": 0}))
        .header("origin", SIBLING)
        .send()
        .await
        .assert_problem(403, "forbidden");
    cookie(Method::POST, "/api/v1/tokens")
        .raw(r#"{"name":"stolen"}"#)
        .header("content-type", "text/plain")
        .send()
        .await
        .assert_problem(415, "unsupported_media_type");

    // Nothing changed: the app is there, not restarted, never run; no nginx;
    // the session still works; no token was made.
    let detail = app.get(&shop).by(&app.owner).send().await;
    detail.assert_status(200);
    let listed = app.get(&apps).by(&app.owner).send().await.json();
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");
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
        .send()
        .await
        .assert_status(200);
    // From the API's own origin, with JSON and without a body: accepted.
    let cron_jobs: kube::Api<k8s_openapi::api::batch::v1::CronJob> =
        kube::Api::namespaced(app.cluster().client.clone(), &format!("{project}-dev"));
    eventually("the CronJob is there", || async {
        cron_jobs.get_opt("shop-job").await.unwrap().is_some()
    })
    .await;
    cookie(Method::POST, &format!("{shop}/run"))
        .says_json()
        .header("origin", OWN_ORIGIN)
        .send()
        .await
        .assert_status(202);
    cookie(Method::POST, &format!("{shop}/restart"))
        .says_json()
        .send()
        .await
        .assert_status(202);
    // A token is never sent by a browser on its own: no such rule.
    let token_restart = |origin: &'static str| {
        app.post(&format!("{shop}/restart"))
            .by(&app.owner)
            .header("origin", origin)
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
    cookie(Method::POST, "/api/v1/auth/logout")
        .says_json()
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
