//! Every file in `events/` goes through its function as Lambda would deliver
//! it: the API Gateway event is converted by lambda_http, then served by that
//! function's router with the shared pipeline.

use std::collections::BTreeSet;
use std::path::Path;

use axum::Router;
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::support::{PASSWORD, TestApp, unique};
use berth_api::AppState;

fn function(name: &str) -> fn() -> Router<AppState> {
    berth_local::function(name).unwrap_or_else(|| panic!("events/{name}: no such function"))
}

/// Each event file and the status its function answers.
const EXPECTED: &[(&str, u16)] = &[
    ("auth/login.json", 200),
    ("auth/me.json", 200),
    ("auth/change-password.json", 200),
    ("auth/logout.json", 204),
    ("tokens/list.json", 200),
    ("tokens/create.json", 201),
    ("tokens/delete.json", 404),
    ("members/list.json", 200),
    ("members/invite.json", 201),
    ("members/update.json", 404),
    ("members/remove.json", 404),
    ("audit/list.json", 200),
    ("health/liveness.json", 200),
    ("health/details.json", 200),
    ("health/openapi.json", 200),
    ("projects/create.json", 201),
    ("projects/list.json", 200),
    ("projects/get.json", 200),
    ("environments/create.json", 201),
    ("environments/list.json", 200),
    ("environments/get.json", 200),
    ("apps/create.json", 201),
    ("apps/list.json", 200),
    ("apps/get.json", 200),
    // The sample update gives the app a git_repo: the builds' samples build it.
    ("apps/update.json", 200),
    ("builds/create.json", 202),
    ("builds/list.json", 200),
    ("builds/get.json", 200),
    // Its pod is the controller's to make: no output yet, or the pending pod's.
    ("builds/logs.json", 200),
    ("builds/webhook-create.json", 201),
    ("builds/webhook-get.json", 200),
    // No hook has the sample's id (and none could have its signature).
    ("builds/webhook-receive.json", 401),
    ("builds/webhook-delete.json", 204),
    ("apps/releases.json", 200),
    ("apps/rollback.json", 200),
    // The sample promotes to `production`, which this test does not create.
    ("apps/promote.json", 422),
    ("apps/logs.json", 200),
    ("apps/restart.json", 202),
    // The sample runs process `nightly`, which the sample app does not have.
    ("apps/run.json", 422),
    // The sample app has no domains, so no name server is asked.
    ("apps/domains.json", 200),
    ("apps/delete.json", 204),
    ("templates/list.json", 200),
    ("templates/deploy.json", 201),
    // Into the same, provisioned environment.
    ("secrets/put.json", 201),
    ("secrets/list.json", 200),
    ("secrets/delete.json", 204),
    // Not being deleted: restoring it changes nothing.
    ("environments/restore.json", 200),
    ("environments/delete.json", 202),
    ("projects/delete.json", 404),
];

/// The API Gateway events: of every function but the scheduled ones.
fn event_files() -> BTreeSet<String> {
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/..")).join("events");
    let mut files = BTreeSet::new();
    for function in std::fs::read_dir(&root).unwrap() {
        let function = function.unwrap().path();
        let scheduled = function
            .file_name()
            .is_some_and(|name| berth_local::SCHEDULED.iter().any(|s| name == *s));
        if function.is_dir() && !scheduled {
            for file in std::fs::read_dir(&function).unwrap() {
                let file = file.unwrap().path();
                files.insert(
                    file.strip_prefix(&root)
                        .unwrap()
                        .to_string_lossy()
                        .into_owned(),
                );
            }
        }
    }
    files
}

#[tokio::test]
async fn every_event_file_is_answered_by_its_function() {
    let expected: BTreeSet<String> = EXPECTED
        .iter()
        .map(|(file, _)| (*file).to_owned())
        .collect();
    assert_eq!(
        event_files(),
        expected,
        "every event file has an expectation, and every expectation a file"
    );

    let app = TestApp::with_cluster().await;
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/..")).join("events");
    // The samples' project `web`, under a name of this run's: project names
    // are platform-wide, and a real cluster keeps earlier runs' projects.
    let project = unique("web");
    for (file, status) in EXPECTED {
        if *file == "apps/create.json" {
            // Apps go into the environment's namespace, once it is provisioned.
            app.wait_for_environment(&project, "staging").await;
        }
        let sample = std::fs::read_to_string(root.join(file)).unwrap();
        let mut event: Value = serde_json::from_str(
            &sample
                .replace("/projects/web", &format!("/projects/{project}"))
                .replace(
                    r#"{\"name\": \"web\","#,
                    &format!(r#"{{\"name\": \"{project}\","#),
                ),
        )
        .unwrap();
        if event["headers"].get("authorization").is_some() {
            event["headers"]["authorization"] = json!(format!("Bearer {}", app.owner.token));
        }
        match *file {
            "auth/login.json" => {
                event["body"] =
                    json!(json!({ "email": app.owner.email, "password": PASSWORD }).to_string());
            }
            "auth/change-password.json" => {
                event["body"] = json!(json!({ "current_password": PASSWORD, "new_password": "a brand new passphrase" }).to_string());
            }
            _ => {}
        }
        let request = lambda_http::request::from_str(&event.to_string())
            .unwrap_or_else(|e| panic!("{file}: not an API Gateway event: {e}"));
        let function_name = file.split('/').next().unwrap();
        let router = berth_api::http::serve(function(function_name)(), app.state.clone());
        let response = router.oneshot(request).await.unwrap();
        let (parts, body) = response.into_parts();
        let body = body.collect().await.unwrap().to_bytes();
        assert_eq!(
            parts.status.as_u16(),
            *status,
            "{file}: {}",
            String::from_utf8_lossy(&body)
        );
        assert_eq!(
            parts.headers["x-request-id"],
            event["requestContext"]["requestId"].as_str().unwrap(),
            "{file}"
        );
        let recorded = app
            .last_audit_event(if *file == "health/liveness.json" {
                "_system"
            } else {
                "acme"
            })
            .await;
        assert_eq!(
            recorded.ip.as_deref(),
            Some("192.0.2.10"),
            "{file}: the gateway's source address is recorded"
        );
        assert_ne!(recorded.action, "unknownRoute", "{file}");
    }
}

/// A scheduled function's sample is the EventBridge event its schedule
/// sends, which Lambda hands it as JSON; each invocation runs one sweep.
#[tokio::test]
async fn the_scheduled_event_runs_a_sweep() {
    let app = TestApp::with_cluster().await;
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/..")).join("events/cleanup");
    let mut samples = 0;
    for file in std::fs::read_dir(&root).unwrap() {
        let event: Value =
            serde_json::from_str(&std::fs::read_to_string(file.unwrap().path()).unwrap())
                .expect("an event Lambda can hand over as JSON");
        assert_eq!(event["detail-type"], "Scheduled Event");
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(60);
        let swept = berth_fn_cleanup::run(app.state.clone(), deadline)
            .await
            .expect("a sweep");
        assert!(swept.purges.finished, "{swept:?}");
        assert!(swept.domains.is_some(), "{swept:?}");
        samples += 1;
    }
    assert_eq!(samples, 1);
}

/// On AWS the `$default` route sends every path and method no other route
/// matches to the health function: it answers them as the local server does,
/// a Problem Details 404 (405 for a known path), audited as `unknownRoute`.
#[tokio::test]
async fn the_health_function_answers_the_default_route() {
    let app = TestApp::new().await;
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/..")).join("events");
    let sample: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("health/liveness.json")).unwrap())
            .unwrap();
    for (method, path, status, code) in [
        ("GET", "/api/v1/nowhere", 404, "not_found"),
        ("DELETE", "/somewhere/else", 404, "not_found"),
        ("POST", "/api/v1/healthz", 405, "method_not_allowed"),
    ] {
        let mut event = sample.clone();
        event["rawPath"] = json!(path);
        event["requestContext"]["http"]["path"] = json!(path);
        event["requestContext"]["http"]["method"] = json!(method);
        event["requestContext"]["requestId"] = json!(format!("default-{status}-{method}"));
        let request = lambda_http::request::from_str(&event.to_string()).unwrap();
        let router = berth_api::http::serve(function("health")(), app.state.clone());
        let response = router.oneshot(request).await.unwrap();
        let (parts, body) = response.into_parts();
        let body: Value = serde_json::from_slice(&body.collect().await.unwrap().to_bytes())
            .unwrap_or_else(|e| panic!("{method} {path}: not JSON: {e}"));
        assert_eq!(parts.status.as_u16(), status, "{method} {path}: {body}");
        assert_eq!(
            parts.headers["content-type"], "application/json",
            "{method} {path}"
        );
        assert_eq!(body["code"], code, "{method} {path}");
        assert_eq!(body["status"], status, "{method} {path}");
        let recorded = app.last_audit_event("_system").await;
        assert_eq!(
            (recorded.action.as_str(), recorded.status),
            ("unknownRoute", Some(status)),
            "{method} {path}"
        );
    }
}

/// `make invoke` (scripts/lambda.sh) puts a real token in place of its
/// placeholder: every event that names a caller carries exactly that one.
#[test]
fn authenticated_events_carry_the_placeholder_make_invoke_replaces() {
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
    let script = std::fs::read_to_string(root.join("scripts/lambda.sh")).unwrap();
    let placeholder = script
        .lines()
        .find_map(|line| line.strip_prefix("placeholder="))
        .expect("scripts/lambda.sh names its placeholder");
    let mut authenticated = 0;
    for file in event_files() {
        let event: Value = serde_json::from_str(
            &std::fs::read_to_string(root.join("events").join(&file)).unwrap(),
        )
        .unwrap();
        if let Some(authorization) = event["headers"].get("authorization") {
            assert_eq!(
                authorization,
                &json!(format!("Bearer {placeholder}")),
                "{file}"
            );
            authenticated += 1;
        }
    }
    assert!(authenticated > 10, "{authenticated} authenticated events");
}
