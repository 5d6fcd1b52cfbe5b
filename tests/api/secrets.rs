//! Secrets through the API: every answer and error, foreign secrets left
//! alone, apps restarted when a secret they read is replaced, references
//! checked, and values that never leave the cluster.

use std::collections::BTreeMap;

use http::Method;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::{ObjectMeta, PostParams};
use serde_json::{Value, json};

use crate::support::{TestApp, TestResponse, eventually, logs};
use berth_cluster::crd::App;

fn env_path(project: &str, environment: &str) -> String {
    format!("/api/v1/projects/{project}/environments/{environment}")
}

/// A project with a provisioned environment `staging`; the project and the
/// environment's path.
async fn environment(app: &TestApp) -> (String, String) {
    let project = app.ready_environment("secrets", "staging").await;
    let path = env_path(&project, "staging");
    (project, path)
}

async fn put(app: &TestApp, env: &str, name: &str, body: Value) -> TestResponse {
    app.request(Method::PUT, &format!("{env}/secrets/{name}"))
        .by(&app.owner)
        .json(body)
        .send()
        .await
}

async fn delete(app: &TestApp, env: &str, name: &str) -> TestResponse {
    app.request(Method::DELETE, &format!("{env}/secrets/{name}"))
        .by(&app.owner)
        .send()
        .await
}

async fn listed(app: &TestApp, env: &str) -> Value {
    let listed = app
        .get(&format!("{env}/secrets"))
        .by(&app.owner)
        .send()
        .await;
    listed.assert_status(200);
    listed.json()
}

async fn create_app(app: &TestApp, env: &str, body: Value) -> TestResponse {
    app.post(&format!("{env}/apps"))
        .by(&app.owner)
        .json(body)
        .send()
        .await
}

fn secrets_api(app: &TestApp, namespace: &str) -> Api<Secret> {
    Api::namespaced(app.cluster().client.clone(), namespace)
}

#[tokio::test]
async fn put_list_delete_and_their_answers() {
    let app = TestApp::with_cluster().await;
    let (project, env) = environment(&app).await;

    let created = put(
        &app,
        &env,
        "db",
        json!({"data": {"user": "shop", "url": "postgres://db/shop"}}),
    )
    .await;
    created.assert_status(201);
    assert_eq!(
        created.headers["location"],
        format!("{env}/secrets/db").as_str()
    );
    let body = created.json();
    let fields: Vec<&String> = body.as_object().unwrap().keys().collect();
    assert_eq!(
        fields,
        ["created_at", "keys", "name", "restarted_apps"],
        "{body}"
    );
    assert_eq!(body["name"], "db");
    assert_eq!(body["keys"], json!(["url", "user"]));
    assert!(body["created_at"].is_string(), "{body}");
    assert_eq!(body["restarted_apps"], json!([]));
    let event = app.last_audit_event("acme").await;
    assert_eq!(
        (
            event.action.as_str(),
            event.target_kind.as_deref(),
            event.target.as_deref()
        ),
        ("putSecret", Some("secret"), Some("db"))
    );

    // In the cluster: an Opaque Secret with Berth's labels.
    let stored = secrets_api(&app, &format!("{project}-staging"))
        .get("db")
        .await
        .unwrap();
    assert_eq!(stored.type_.as_deref(), Some("Opaque"));
    let labels = stored.metadata.labels.clone().unwrap_or_default();
    assert_eq!(labels["app.kubernetes.io/managed-by"], "berth");
    assert_eq!(labels["berth.dev/org"], "acme");
    assert_eq!(labels["berth.dev/project"], project.as_str());
    assert_eq!(labels["berth.dev/environment"], "staging");
    assert_eq!(
        stored.data.unwrap()["url"],
        ByteString(b"postgres://db/shop".to_vec())
    );

    // Replaced as a whole: the old keys go.
    let replaced = put(&app, &env, "db", json!({"data": {"password": "p"}})).await;
    replaced.assert_status(200);
    assert!(replaced.headers.get("location").is_none());
    let body = replaced.json();
    assert_eq!(body["keys"], json!(["password"]));
    assert_eq!(body["restarted_apps"], json!([]));

    put(&app, &env, "api.key-2", json!({"data": {"k": "v"}}))
        .await
        .assert_status(201);
    let all = listed(&app, &env).await;
    let names: Vec<&str> = all
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["api.key-2", "db"]);
    assert_eq!(all[1]["keys"], json!(["password"]));
    assert!(all[1].get("data").is_none() && all[1].get("restarted_apps").is_none());

    delete(&app, &env, "db").await.assert_status(204);
    delete(&app, &env, "db")
        .await
        .assert_problem(404, "not_found");
    let event = app.last_audit_event("acme").await;
    assert_eq!(
        (event.action.as_str(), event.target.as_deref()),
        ("deleteSecret", Some("db"))
    );
    assert_eq!(listed(&app, &env).await.as_array().unwrap().len(), 1);

    // Not a method of this path.
    app.post(&format!("{env}/secrets/db"))
        .by(&app.owner)
        .json(json!({}))
        .send()
        .await
        .assert_problem(405, "method_not_allowed");
}

#[tokio::test]
async fn bad_bodies_and_names_change_nothing() {
    let app = TestApp::with_cluster().await;
    let (_, env) = environment(&app).await;
    let half = "x".repeat(300 * 1024);
    for (name, body, status, code, field) in [
        ("s", json!({}), 400, "invalid_request", "data"),
        ("s", json!({"data": "text"}), 400, "invalid_request", "data"),
        ("s", json!({"data": ["a"]}), 400, "invalid_request", "data"),
        (
            "s",
            json!({"data": {"k": 1}}),
            400,
            "invalid_request",
            "data",
        ),
        (
            "s",
            json!({"data": {"k": null}}),
            400,
            "invalid_request",
            "data",
        ),
        (
            "s",
            json!({"data": {"k": "v"}, "type": "x"}),
            400,
            "invalid_request",
            "type",
        ),
        ("s", json!({"data": {}}), 422, "validation_failed", "data"),
        (
            "s",
            json!({"data": {"bad key": "v"}}),
            422,
            "validation_failed",
            "data",
        ),
        (
            "s",
            json!({"data": {"..": "v"}}),
            422,
            "validation_failed",
            "data",
        ),
        (
            "s",
            json!({"data": {"a": half, "b": half}}),
            422,
            "validation_failed",
            "512 KiB",
        ),
        (
            "Bad_Name",
            json!({"data": {"k": "v"}}),
            422,
            "validation_failed",
            "secret",
        ),
        (
            "-s",
            json!({"data": {"k": "v"}}),
            422,
            "validation_failed",
            "secret",
        ),
        (
            &"s".repeat(254),
            json!({"data": {"k": "v"}}),
            422,
            "validation_failed",
            "secret",
        ),
    ] {
        let answer = put(&app, &env, name, body.clone()).await;
        answer.assert_problem(status, code);
        let detail = answer.json()["detail"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(detail.contains(field), "{body}: {detail}");
    }
    // Not JSON, not JSON's content type, too large for even this route.
    app.request(Method::PUT, &format!("{env}/secrets/s"))
        .by(&app.owner)
        .header("content-type", "application/json")
        .raw("{nope")
        .send()
        .await
        .assert_problem(400, "invalid_request");
    app.request(Method::PUT, &format!("{env}/secrets/s"))
        .by(&app.owner)
        .raw(r#"{"data": {"k": "v"}}"#)
        .send()
        .await
        .assert_problem(415, "unsupported_media_type");
    let huge = "x".repeat(800 * 1024);
    put(&app, &env, "s", json!({"data": {"k": huge}}))
        .await
        .assert_problem(413, "payload_too_large");
    // Every other route keeps the common 256 KiB limit.
    create_app(
        &app,
        &env,
        json!({"name": "big", "image": "nginx", "padding": half}),
    )
    .await
    .assert_problem(413, "payload_too_large");
    assert_eq!(listed(&app, &env).await, json!([]));

    // Exactly 512 KiB of values is allowed.
    let exact = "y".repeat(256 * 1024);
    put(&app, &env, "big", json!({"data": {"a": exact, "b": exact}}))
        .await
        .assert_status(201);
}

#[tokio::test]
async fn only_a_visible_writable_environment_takes_secrets() {
    let app = TestApp::with_cluster().await;
    let project = app.create_project("secrets").await;
    put(
        &app,
        &env_path(&project, "nowhere"),
        "s",
        json!({"data": {"k": "v"}}),
    )
    .await
    .assert_problem(404, "not_found");
    app.get(&format!("{}/secrets", env_path(&project, "nowhere")))
        .by(&app.owner)
        .send()
        .await
        .assert_problem(404, "not_found");
    // A production environment being deleted (kept for its grace period).
    app.create_environment(&project, json!({"name": "prod", "env_type": "production"}))
        .await;
    app.wait_for_environment(&project, "prod").await;
    let prod = env_path(&project, "prod");
    put(&app, &prod, "s", json!({"data": {"k": "v"}}))
        .await
        .assert_status(201);
    app.request(Method::DELETE, &prod)
        .by(&app.owner)
        .send()
        .await
        .assert_status(202);
    put(&app, &prod, "s", json!({"data": {"k": "w"}}))
        .await
        .assert_problem(409, "environment_deleting");
    delete(&app, &prod, "s")
        .await
        .assert_problem(409, "environment_deleting");
    // Another organization sees nothing.
    let other = app.other_org("umbrella").await;
    app.get(&format!("{prod}/secrets"))
        .by(&other)
        .send()
        .await
        .assert_problem(404, "not_found");
}

#[tokio::test]
async fn a_secret_berth_did_not_create_is_left_untouched() {
    let app = TestApp::with_cluster().await;
    let (project, env) = environment(&app).await;
    let namespace = format!("{project}-staging");
    let api = secrets_api(&app, &namespace);
    let foreign = Secret {
        metadata: ObjectMeta {
            name: Some("foreign".into()),
            labels: Some(BTreeMap::from([("team".to_owned(), "ops".to_owned())])),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([(
            "token".to_owned(),
            ByteString(b"theirs".to_vec()),
        )])),
        ..Secret::default()
    };
    let before = api.create(&PostParams::default(), &foreign).await.unwrap();

    let refused = put(&app, &env, "foreign", json!({"data": {"token": "mine"}})).await;
    refused.assert_problem(409, "secret_not_managed");
    delete(&app, &env, "foreign")
        .await
        .assert_problem(409, "secret_not_managed");
    assert_eq!(listed(&app, &env).await, json!([]));
    let after = api.get("foreign").await.unwrap();
    assert_eq!(
        after.metadata.resource_version,
        before.metadata.resource_version
    );
    assert_eq!(after.data, before.data);
    assert_eq!(after.metadata.labels, before.metadata.labels);

    // Apps may still read it: other tools make secrets too.
    create_app(
        &app,
        &env,
        json!({
            "name": "shop", "image": "nginx",
            "env": [{"name": "TOKEN", "secret": {"name": "foreign", "key": "token"}}]
        }),
    )
    .await
    .assert_status(201);
}

#[tokio::test]
async fn replacing_a_secret_restarts_the_apps_that_read_it() {
    let app = TestApp::with_cluster().await;
    let (project, env) = environment(&app).await;
    put(
        &app,
        &env,
        "db",
        json!({"data": {"url": "u1", "user": "shop"}}),
    )
    .await
    .assert_status(201);
    put(&app, &env, "other", json!({"data": {"k": "v"}}))
        .await
        .assert_status(201);
    for body in [
        json!({"name": "shop", "image": "nginx", "env": [{"name": "DB", "secret": {"name": "db", "key": "url"}}]}),
        json!({"name": "cache", "image": "nginx", "env": [
            {"name": "K", "secret": {"name": "other", "key": "k"}},
            {"name": "U", "secret": {"name": "db", "key": "user"}}
        ]}),
        json!({"name": "plain", "image": "nginx", "env": [{"name": "K", "secret": {"name": "other", "key": "k"}}]}),
    ] {
        create_app(&app, &env, body).await.assert_status(201);
    }

    let replaced = put(
        &app,
        &env,
        "db",
        json!({"data": {"url": "u2", "user": "shop"}}),
    )
    .await;
    replaced.assert_status(200);
    assert_eq!(replaced.json()["restarted_apps"], json!(["cache", "shop"]));

    let apps: Api<App> =
        Api::namespaced(app.cluster().client.clone(), &format!("{project}-staging"));
    let restarted_at = |found: &App| found.spec.restarted_at.clone();
    let mut first = BTreeMap::new();
    for name in ["shop", "cache"] {
        let found = apps.get(name).await.unwrap();
        let at = restarted_at(&found).unwrap_or_else(|| panic!("{name} was not restarted"));
        assert!(berth_domain::clock::parse_rfc3339(&at).is_some(), "{at}");
        assert_eq!(found.spec.release.revision, 1, "no new revision");
        first.insert(name, at);
    }
    assert_eq!(restarted_at(&apps.get("plain").await.unwrap()), None);
    for name in ["shop", "cache"] {
        let record = app
            .get(&format!("{env}/apps/{name}"))
            .by(&app.owner)
            .send()
            .await
            .json();
        assert_eq!(record["app"]["revision"], 1);
        let history = app
            .get(&format!("{env}/apps/{name}/releases"))
            .by(&app.owner)
            .send()
            .await
            .json();
        assert_eq!(history.as_array().unwrap().len(), 1);
    }

    // Each replacement rolls them again.
    put(
        &app,
        &env,
        "db",
        json!({"data": {"url": "u3", "user": "shop"}}),
    )
    .await
    .assert_status(200);
    for name in ["shop", "cache"] {
        let again = restarted_at(&apps.get(name).await.unwrap()).unwrap();
        assert_ne!(again, first[name], "{name} restarted again");
    }
    // An app changed after a restart keeps working as usual.
    app.request(Method::PATCH, &format!("{env}/apps/shop"))
        .by(&app.owner)
        .json(json!({"image": "nginx:2"}))
        .send()
        .await
        .assert_status(200);
    // A new secret restarts nothing.
    let created = put(&app, &env, "fresh", json!({"data": {"k": "v"}})).await;
    created.assert_status(201);
    assert_eq!(created.json()["restarted_apps"], json!([]));
}

#[tokio::test]
async fn a_secret_an_app_reads_cannot_be_deleted() {
    let app = TestApp::with_cluster().await;
    let (_, env) = environment(&app).await;
    put(&app, &env, "db", json!({"data": {"url": "u"}}))
        .await
        .assert_status(201);
    for name in ["shop", "admin"] {
        create_app(
            &app,
            &env,
            json!({
                "name": name, "image": "nginx",
                "env": [{"name": "DB", "secret": {"name": "db", "key": "url"}}]
            }),
        )
        .await
        .assert_status(201);
    }
    let refused = delete(&app, &env, "db").await;
    refused.assert_problem(409, "conflict");
    let detail = refused.json()["detail"].as_str().unwrap().to_owned();
    assert!(
        detail.contains("shop") && detail.contains("admin"),
        "{detail}"
    );
    assert_eq!(listed(&app, &env).await.as_array().unwrap().len(), 1);

    app.request(Method::DELETE, &format!("{env}/apps/shop"))
        .by(&app.owner)
        .send()
        .await
        .assert_status(204);
    app.request(Method::PATCH, &format!("{env}/apps/admin"))
        .by(&app.owner)
        .json(json!({"env": []}))
        .send()
        .await
        .assert_status(200);
    // Deleting the app is asynchronous on a real cluster (owner references).
    eventually("the secret can be deleted", || async {
        delete(&app, &env, "db").await.status.as_u16() == 204
    })
    .await;
}

#[tokio::test]
async fn apps_refuse_references_to_missing_secrets_and_keys() {
    let app = TestApp::with_cluster().await;
    let (project, env) = environment(&app).await;
    put(&app, &env, "db", json!({"data": {"url": "u"}}))
        .await
        .assert_status(201);
    for (env_vars, field, missing) in [
        (
            json!([{"name": "A", "secret": {"name": "nosuch", "key": "url"}}]),
            "env[0].secret",
            "nosuch",
        ),
        (
            json!([{"name": "A", "secret": {"name": "db", "key": "password"}}]),
            "env[0].secret",
            "password",
        ),
        (
            json!([
                {"name": "P", "value": "plain"},
                {"name": "A", "secret": {"name": "db", "key": "url"}},
                {"name": "B", "secret": {"name": "cache", "key": "host"}}
            ]),
            "env[2].secret",
            "cache",
        ),
    ] {
        let refused = create_app(
            &app,
            &env,
            json!({"name": "shop", "image": "nginx", "env": env_vars}),
        )
        .await;
        refused.assert_problem(422, "validation_failed");
        let detail = refused.json()["detail"].as_str().unwrap().to_owned();
        assert!(
            detail.contains(field) && detail.contains(missing),
            "{detail}"
        );
        assert!(!detail.contains("plain"), "{detail}");
    }
    app.get(&format!("{env}/apps/shop"))
        .by(&app.owner)
        .send()
        .await
        .assert_problem(404, "not_found");

    create_app(
        &app,
        &env,
        json!({
            "name": "shop", "image": "nginx",
            "env": [{"name": "A", "secret": {"name": "db", "key": "url"}}]
        }),
    )
    .await
    .assert_status(201);
    let shop = format!("{env}/apps/shop");
    let refused = app
        .request(Method::PATCH, &shop)
        .by(&app.owner)
        .json(json!({"env": [{"name": "A"}, {"name": "B", "secret": {"name": "db", "key": "nokey"}}]}))
        .send()
        .await;
    refused.assert_problem(422, "validation_failed");
    assert!(
        refused.text().contains("env[1].secret"),
        "{}",
        refused.text()
    );
    let record = app.get(&shop).by(&app.owner).send().await.json();
    assert_eq!(record["app"]["revision"], 1, "nothing changed");

    // Promotion checks the target environment's secrets.
    app.create_environment(&project, json!({"name": "prod", "env_type": "production"}))
        .await;
    app.wait_for_environment(&project, "prod").await;
    let prod = env_path(&project, "prod");
    let promote = || async {
        app.post(&format!("{shop}/promote"))
            .by(&app.owner)
            .json(json!({"environment": "prod"}))
            .send()
            .await
    };
    let refused = promote().await;
    refused.assert_problem(422, "validation_failed");
    assert!(
        refused.text().contains("env[0].secret"),
        "{}",
        refused.text()
    );
    put(&app, &prod, "db", json!({"data": {"url": "prod-u"}}))
        .await
        .assert_status(201);
    promote().await.assert_status(200);
}

/// Standard base64, as the cluster stores the value.
fn base64_of(value: &str) -> String {
    serde_json::to_value(ByteString(value.as_bytes().to_vec()))
        .unwrap()
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn values_never_leave() {
    let app = TestApp::with_cluster().await;
    let (_, env) = environment(&app).await;
    let sentinel = format!("sentinel-{}", uuid::Uuid::new_v4().simple());
    let mut answers = Vec::new();

    answers.push(put(&app, &env, "db", json!({"data": {"url": sentinel}})).await);
    answers.push(
        put(
            &app,
            &env,
            "db",
            json!({"data": {"url": sentinel, "user": "u"}}),
        )
        .await,
    );
    // Refused bodies carrying the value.
    for body in [
        json!({"data": sentinel}),
        json!({"data": [sentinel]}),
        json!({"data": {"url": sentinel, "n": 1}}),
        json!({"data": {"bad key": sentinel}}),
        json!({"data": {"url": sentinel}, "extra": sentinel}),
        json!({"data": {"url": sentinel, "big": "x".repeat(600 * 1024)}}),
    ] {
        let refused = put(&app, &env, "db", body).await;
        assert!(refused.status.is_client_error(), "{}", refused.text());
        answers.push(refused);
    }
    answers.push(put(&app, &env, "Bad_Name", json!({"data": {"url": sentinel}})).await);
    answers.push(listed_response(&app, &env).await);
    // Apps reading it, and their every answer.
    answers.push(
        create_app(
            &app,
            &env,
            json!({
                "name": "shop", "image": "nginx",
                "env": [{"name": "DB", "secret": {"name": "db", "key": "url"}}]
            }),
        )
        .await,
    );
    let shop = format!("{env}/apps/shop");
    answers.push(
        app.request(Method::PATCH, &shop)
            .by(&app.owner)
            .json(json!({"image": "nginx:2"}))
            .send()
            .await,
    );
    answers.push(
        put(
            &app,
            &env,
            "db",
            json!({"data": {"url": sentinel, "user": "v"}}),
        )
        .await,
    );
    answers.push(app.get(&shop).by(&app.owner).send().await);
    answers.push(app.get(&format!("{env}/apps")).by(&app.owner).send().await);
    answers.push(
        app.get(&format!("{shop}/releases"))
            .by(&app.owner)
            .send()
            .await,
    );
    answers.push(
        app.post(&format!("{shop}/rollback"))
            .by(&app.owner)
            .json(json!({"revision": 1}))
            .send()
            .await,
    );
    answers.push(delete(&app, &env, "db").await);
    answers.push(
        app.get("/api/v1/audit?limit=200")
            .by(&app.owner)
            .send()
            .await,
    );

    let encoded = base64_of(&sentinel);
    for answer in &answers {
        let text = format!("{:?} {}", answer.headers, answer.text());
        assert!(
            !text.contains(&sentinel) && !text.contains(&encoded),
            "an answer shows the value: {text}"
        );
    }
    let audit = format!("{:?}", app.audit_events("acme").await);
    assert!(audit.contains("putSecret"), "the audit log was read");
    assert!(
        !audit.contains(&sentinel) && !audit.contains(&encoded),
        "the audit log holds the value"
    );
    let logged = logs::captured();
    assert!(logged.contains("putSecret"), "the capture works");
    assert!(
        !logged.contains(&sentinel) && !logged.contains(&encoded),
        "the log holds the value"
    );
    // Nothing in Berth's table either (release records, audit events).
    let items = app
        .dynamodb
        .scan()
        .table_name(app.state.store.table())
        .send()
        .await
        .expect("scanning the test table");
    let table = format!("{:?}", items.items);
    assert!(table.contains("RELEASES#"), "the scan reads the releases");
    assert!(
        !table.contains(&sentinel) && !table.contains(&encoded),
        "the table holds the value"
    );
}

async fn listed_response(app: &TestApp, env: &str) -> TestResponse {
    app.get(&format!("{env}/secrets"))
        .by(&app.owner)
        .send()
        .await
}

/// The registry's pull credential, which the controller copies into every
/// environment's namespace for the pods of built images, is Berth's: shared
/// by every organization, so no app may read it and no one may replace it.
#[tokio::test]
async fn the_registrys_pull_credential_is_neither_readable_nor_replaceable() {
    let app = TestApp::with_cluster().await;
    crate::builds_running::set_registry(&app.cluster().client).await;
    let (project, env) = environment(&app).await;
    let api = secrets_api(&app, &format!("{project}-staging"));
    let pull = berth_cluster::registry::PULL_SECRET;
    eventually("the pull credential is copied", || async {
        api.get_opt(pull).await.ok().flatten().is_some()
    })
    .await;
    let before = api.get(pull).await.unwrap();

    put(&app, &env, pull, json!({"data": {"token": "mine"}}))
        .await
        .assert_problem(409, "conflict");
    for body in [
        json!({
            "name": "shop", "image": "nginx",
            "env": [{"name": "PULL", "secret": {"name": pull, "key": ".dockerconfigjson"}}]
        }),
        json!({"name": "shop", "git_repo": "https://git.berth.test/acme/shop.git", "git_secret": pull}),
    ] {
        create_app(&app, &env, body)
            .await
            .assert_problem(422, "validation_failed");
    }
    let after = api.get(pull).await.unwrap();
    assert_eq!(after.data, before.data);
    assert_eq!(
        after.metadata.resource_version,
        before.metadata.resource_version
    );
}
