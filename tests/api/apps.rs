//! Apps through the API: every operation's answer and errors, release
//! history under concurrency and faults, permissions and hidden values.

use http::Method;
use serde_json::{Value, json};

use crate::support::{TestApp, unique};
use berth_domain::Role;
use berth_records::audit::Outcome;

fn apps_path(project: &str, environment: &str) -> String {
    format!("/api/v1/projects/{project}/environments/{environment}/apps")
}

/// A project with a provisioned environment `staging`, and the apps path.
async fn environment(app: &TestApp) -> (String, String) {
    let project = app.ready_environment("apps", "staging").await;
    let path = apps_path(&project, "staging");
    (project, path)
}

async fn create(app: &TestApp, apps: &str, body: Value) -> Value {
    let created = app.post(apps).by(&app.owner).json(body).send().await;
    created.assert_status(201);
    created.json()
}

async fn patch(app: &TestApp, path: &str, body: Value) -> crate::support::TestResponse {
    app.request(Method::PATCH, path)
        .by(&app.owner)
        .json(body)
        .send()
        .await
}

async fn releases(app: &TestApp, app_path: &str) -> Vec<Value> {
    let listed = app
        .get(&format!("{app_path}/releases"))
        .by(&app.owner)
        .send()
        .await;
    listed.assert_status(200);
    listed.json().as_array().cloned().unwrap_or_default()
}

fn revisions(listed: &[Value]) -> Vec<i64> {
    listed
        .iter()
        .map(|r| r["revision"].as_i64().unwrap())
        .collect()
}

#[tokio::test]
async fn create_get_list_and_the_records_shape() {
    let app = TestApp::with_cluster().await;
    let (project, apps) = environment(&app).await;
    let created = app
        .post(&apps)
        .by(&app.owner)
        .json(json!({
            "name": "shop", "image": "nginx:1.27", "port": 8080,
            "env": [{"name": "GREETING", "value": "hello"}],
            "domains": ["Shop.Example.com"], "health_check_path": "/healthz"
        }))
        .send()
        .await;
    created.assert_status(201);
    assert_eq!(created.headers["location"], format!("{apps}/shop").as_str());
    let record = created.json();
    assert_eq!(record["name"], "shop");
    assert_eq!(record["project"], project.as_str());
    assert_eq!(record["environment"], "staging");
    assert_eq!(record["namespace"], format!("{project}-staging").as_str());
    assert_eq!(record["image"], "nginx:1.27");
    assert_eq!(record["git_repo"], Value::Null);
    assert_eq!(record["revision"], 1);
    assert_eq!(record["ready"], false);
    assert_eq!(record["domains"], json!(["shop.example.com"]));
    assert_eq!(
        record["processes"],
        json!([{
            "name": "web", "command": [], "port": 8080, "size": "small",
            "min_replicas": 1, "max_replicas": 1, "schedule": null,
            "time_zone": null, "protocol": "http"
        }])
    );
    assert_eq!(
        record["env"],
        json!([{"name": "GREETING", "value": "hello"}])
    );
    assert!(record["created_at"].is_string());

    let detail = app.get(&format!("{apps}/shop")).by(&app.owner).send().await;
    detail.assert_status(200);
    let detail = detail.json();
    assert_eq!(detail["app"]["name"], "shop");
    assert!(detail["pods"].is_array());

    let listed = app.get(&apps).by(&app.owner).send().await;
    listed.assert_status(200);
    assert_eq!(listed.json().as_array().unwrap().len(), 1);

    // The same name again.
    app.post(&apps)
        .by(&app.owner)
        .json(json!({"name": "shop", "image": "nginx"}))
        .send()
        .await
        .assert_problem(409, "conflict");
    let event = app.last_audit_event("acme").await;
    assert_eq!(
        (
            event.action.as_str(),
            event.target_kind.as_deref(),
            event.target.as_deref()
        ),
        ("createApp", Some("app"), Some("shop"))
    );
}

#[tokio::test]
async fn bad_bodies_change_nothing() {
    let app = TestApp::with_cluster().await;
    let (_, apps) = environment(&app).await;
    for (body, status, code, field) in [
        (json!({"image": "nginx"}), 400, "invalid_request", ""),
        (
            json!({"name": "shop", "image": "nginx", "colour": "red"}),
            400,
            "invalid_request",
            "",
        ),
        (
            json!({"name": "shop", "image": "nginx", "port": "80"}),
            400,
            "invalid_request",
            "",
        ),
        (
            json!({"name": "Shop", "image": "nginx"}),
            422,
            "validation_failed",
            "name:",
        ),
        (
            json!({"name": "shop", "image": "nginx", "schedule": "61 * * * *"}),
            422,
            "validation_failed",
            "schedule:",
        ),
        (
            json!({"name": "shop", "image": "nginx", "port": 80, "processes": [{"name": "web"}]}),
            422,
            "validation_failed",
            "processes:",
        ),
        (
            json!({"name": "shop", "image": "nginx", "replicas": 2, "volumes": [{"name": "data", "mount_path": "/data"}]}),
            422,
            "validation_failed",
            "processes[0].replicas:",
        ),
    ] {
        let answer = app
            .post(&apps)
            .by(&app.owner)
            .json(body.clone())
            .send()
            .await;
        answer.assert_problem(status, code);
        let detail = answer.json()["detail"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(detail.starts_with(field), "{body}: {detail}");
    }
    let listed = app.get(&apps).by(&app.owner).send().await;
    assert_eq!(listed.json(), json!([]));
}

#[tokio::test]
async fn every_change_is_a_revision_and_rollback_restores_one() {
    let app = TestApp::with_cluster().await;
    let (_, apps) = environment(&app).await;
    create(
        &app,
        &apps,
        json!({"name": "shop", "image": "nginx:1.27", "port": 80}),
    )
    .await;
    let shop = format!("{apps}/shop");

    let deployed = patch(&app, &shop, json!({"image": "nginx:1.28"})).await;
    deployed.assert_status(200);
    assert_eq!(deployed.json()["revision"], 2);
    let scaled = patch(&app, &shop, json!({"replicas": 3})).await;
    assert_eq!(scaled.json()["processes"][0]["min_replicas"], 3);
    assert_eq!(scaled.json()["revision"], 3);
    // Nothing to change: no revision.
    let same = patch(&app, &shop, json!({"replicas": 3})).await;
    assert_eq!(same.json()["revision"], 3);

    let history = releases(&app, &shop).await;
    assert_eq!(revisions(&history), [3, 2, 1]);
    let reasons: Vec<_> = history
        .iter()
        .map(|r| r["reason"].as_str().unwrap())
        .collect();
    assert_eq!(reasons, ["config", "deploy", "create"]);
    let current: Vec<_> = history
        .iter()
        .map(|r| r["current"].as_bool().unwrap())
        .collect();
    assert_eq!(current, [true, false, false]);
    assert_eq!(history[1]["image"], "nginx:1.28");
    assert_eq!(history[0]["actor"], app.owner.email.as_str());
    assert!(history[0]["created_at"].as_i64().unwrap() > 1_700_000_000_000);

    let rolled = app
        .post(&format!("{shop}/rollback"))
        .by(&app.owner)
        .json(json!({"revision": 1}))
        .send()
        .await;
    rolled.assert_status(200);
    let rolled = rolled.json();
    assert_eq!(
        (
            rolled["revision"].as_i64(),
            rolled["image"].as_str(),
            rolled["processes"][0]["min_replicas"].as_i64()
        ),
        (Some(4), Some("nginx:1.27"), Some(1))
    );
    let history = releases(&app, &shop).await;
    assert_eq!(revisions(&history), [4, 3, 2, 1]);
    assert_eq!(
        (history[0]["reason"].as_str(), history[0]["note"].as_str()),
        (Some("rollback"), Some("rollback to revision 1"))
    );

    for missing in [0, 5, 99] {
        app.post(&format!("{shop}/rollback"))
            .by(&app.owner)
            .json(json!({"revision": missing}))
            .send()
            .await
            .assert_problem(422, "validation_failed");
    }
    assert_eq!(revisions(&releases(&app, &shop).await), [4, 3, 2, 1]);
}

#[tokio::test]
async fn a_rollback_never_shrinks_a_volume() {
    let app = TestApp::with_cluster().await;
    let (_, apps) = environment(&app).await;
    create(
        &app,
        &apps,
        json!({
            "name": "db", "image": "postgres:16.4", "port": 5432, "protocol": "tcp",
            "volumes": [{"name": "data", "mount_path": "/var/lib/postgresql/data", "size": "1Gi"}]
        }),
    )
    .await;
    let db = format!("{apps}/db");
    patch(&app, &db, json!({"volumes": [{"name": "data", "mount_path": "/var/lib/postgresql/data", "size": "2Gi"}]}))
        .await
        .assert_status(200);
    patch(&app, &db, json!({"volumes": [{"name": "data", "mount_path": "/var/lib/postgresql/data", "size": "1Gi"}]}))
        .await
        .assert_problem(422, "validation_failed");
    let rolled = app
        .post(&format!("{db}/rollback"))
        .by(&app.owner)
        .json(json!({"revision": 1}))
        .send()
        .await;
    rolled.assert_status(200);
    assert_eq!(rolled.json()["volumes"][0]["size"], "2Gi");
}

/// The App resource can be edited in the cluster: a value its parser
/// refuses is shown as stored, and no change carries it into a new release
/// until it is given anew.
#[tokio::test]
async fn a_value_edited_in_the_cluster_is_given_anew_before_a_change() {
    use kube::api::{Api, Patch, PatchParams};

    let app = TestApp::with_cluster().await;
    let (project, apps) = environment(&app).await;
    create(
        &app,
        &apps,
        json!({"name": "web", "image": "nginx:1.27", "port": 80}),
    )
    .await;
    let resources: Api<berth_cluster::crd::App> =
        Api::namespaced(app.cluster().client.clone(), &format!("{project}-staging"));
    let edit = json!([{"op": "replace", "path": "/spec/processes/0/size", "value": "32/1Gi"}]);
    resources
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Json::<()>(serde_json::from_value(edit).unwrap()),
        )
        .await
        .unwrap();
    let web = format!("{apps}/web");
    let shown = app.get(&web).by(&app.owner).send().await;
    shown.assert_status(200);
    assert_eq!(shown.json()["app"]["processes"][0]["size"], "32/1Gi");

    let refused = patch(&app, &web, json!({"replicas": 2})).await;
    refused.assert_problem(422, "validation_failed");
    let detail = refused.json()["detail"].as_str().unwrap().to_owned();
    assert!(
        detail.starts_with(
            "processes[0].size: the value stored in the cluster must be at most 16 CPU"
        ),
        "{detail}"
    );
    assert_eq!(
        revisions(&releases(&app, &web).await),
        [1],
        "nothing released"
    );
    // Revision 1 is the current one: what the App holds now.
    let rollback = app
        .post(&format!("{web}/rollback"))
        .by(&app.owner)
        .json(json!({"revision": 1}))
        .send()
        .await;
    rollback.assert_problem(422, "validation_failed");

    let fixed = patch(&app, &web, json!({"replicas": 2, "size": "nano"})).await;
    fixed.assert_status(200);
    assert_eq!(fixed.json()["processes"][0]["size"], "nano");
}

/// The image, a schedule and its time zone are parsed values too: edited in
/// the cluster into what the API refuses, the App is still read (and listed,
/// beside the others), shows what is stored, and a change needs them anew.
#[tokio::test]
async fn an_image_and_a_schedule_edited_in_the_cluster_are_read_and_given_anew() {
    use kube::api::{Api, Patch, PatchParams};

    let app = TestApp::with_cluster().await;
    let (project, apps) = environment(&app).await;
    create(
        &app,
        &apps,
        json!({"name": "web", "image": "nginx:1.27", "port": 80}),
    )
    .await;
    create(
        &app,
        &apps,
        json!({"name": "nightly", "image": "nginx:1.27", "schedule": "0 3 * * *"}),
    )
    .await;
    let resources: Api<berth_cluster::crd::App> =
        Api::namespaced(app.cluster().client.clone(), &format!("{project}-staging"));
    for (name, edit) in [
        (
            "web",
            json!([{"op": "replace", "path": "/spec/image", "value": "Nginx:Latest"}]),
        ),
        (
            "nightly",
            json!([
                {"op": "replace", "path": "/spec/processes/0/schedule", "value": "every night"},
                {"op": "replace", "path": "/spec/processes/0/timeZone", "value": "Mars/Base"}
            ]),
        ),
    ] {
        resources
            .patch(
                name,
                &PatchParams::default(),
                &Patch::Json::<()>(serde_json::from_value(edit).unwrap()),
            )
            .await
            .unwrap();
    }
    let listed = app.get(&apps).by(&app.owner).send().await;
    listed.assert_status(200);
    assert_eq!(
        listed.json().as_array().unwrap().len(),
        2,
        "{}",
        listed.json()
    );
    let web = format!("{apps}/web");
    let shown = app.get(&web).by(&app.owner).send().await;
    assert_eq!(shown.json()["app"]["image"], "Nginx:Latest");
    let nightly = format!("{apps}/nightly");
    let shown = app.get(&nightly).by(&app.owner).send().await;
    assert_eq!(
        shown.json()["app"]["processes"][0]["schedule"],
        "every night"
    );
    assert_eq!(
        shown.json()["app"]["processes"][0]["time_zone"],
        "Mars/Base"
    );

    for (path, field) in [(&web, "image"), (&nightly, "processes[0].schedule")] {
        let refused = patch(&app, path, json!({"replicas": 2})).await;
        refused.assert_problem(422, "validation_failed");
        let detail = refused.json()["detail"].as_str().unwrap().to_owned();
        assert!(
            detail.starts_with(&format!("{field}: the value stored in the cluster must be")),
            "{detail}"
        );
        assert!(
            !detail.contains("Nginx") && !detail.contains("every night"),
            "{detail}"
        );
    }
    patch(&app, &web, json!({"image": "nginx:1.28"}))
        .await
        .assert_status(200);
    let fixed = patch(
        &app,
        &nightly,
        json!({"schedule": "0 4 * * *", "time_zone": "UTC"}),
    )
    .await;
    fixed.assert_status(200);
    assert_eq!(fixed.json()["processes"][0]["time_zone"], "UTC");
}

#[tokio::test]
async fn promotion_copies_image_and_processes() {
    let app = TestApp::with_cluster().await;
    let (project, apps) = environment(&app).await;
    app.create_environment(&project, json!({"name": "prod", "env_type": "production"}))
        .await;
    app.wait_for_environment(&project, "prod").await;
    create(
        &app,
        &apps,
        json!({
            "name": "shop", "image": "nginx:1.27", "port": 80,
            "domains": ["staging.example.com"], "env": [{"name": "MODE", "value": "staging"}]
        }),
    )
    .await;
    let shop = format!("{apps}/shop");
    patch(&app, &shop, json!({"image": "nginx:1.28"}))
        .await
        .assert_status(200);

    let promoted = app
        .post(&format!("{shop}/promote"))
        .by(&app.owner)
        .json(json!({"environment": "prod"}))
        .send()
        .await;
    promoted.assert_status(200);
    let promoted = promoted.json();
    assert_eq!(promoted["environment"], "prod");
    assert_eq!(promoted["image"], "nginx:1.28");
    assert_eq!(
        promoted["domains"],
        json!([]),
        "created there without domains"
    );
    let prod_shop = format!("{}/shop", apps_path(&project, "prod"));
    let history = releases(&app, &prod_shop).await;
    assert_eq!(revisions(&history), [1]);
    assert_eq!(
        (history[0]["reason"].as_str(), history[0]["note"].as_str()),
        (Some("promote"), Some("promoted from staging revision 2"))
    );

    // Promoting again updates the target, which keeps its own env and domains.
    patch(
        &app,
        &prod_shop,
        json!({"domains": ["shop.example.com"], "env": [{"name": "MODE", "value": "prod"}]}),
    )
    .await
    .assert_status(200);
    patch(&app, &shop, json!({"image": "nginx:1.29", "replicas": 2}))
        .await
        .assert_status(200);
    let again = app
        .post(&format!("{shop}/promote"))
        .by(&app.owner)
        .json(json!({"environment": "prod"}))
        .send()
        .await
        .json();
    assert_eq!(again["image"], "nginx:1.29");
    assert_eq!(again["processes"][0]["min_replicas"], 2);
    assert_eq!(again["domains"], json!(["shop.example.com"]));
    assert_eq!(again["env"], json!([{"name": "MODE", "value": "prod"}]));
    assert_eq!(again["revision"], 3);

    app.post(&format!("{shop}/promote"))
        .by(&app.owner)
        .json(json!({"environment": "staging"}))
        .send()
        .await
        .assert_problem(422, "validation_failed");
    app.post(&format!("{shop}/promote"))
        .by(&app.owner)
        .json(json!({"environment": "nowhere"}))
        .send()
        .await
        .assert_problem(422, "validation_failed");
    // A target being deleted takes no changes.
    app.request(
        Method::DELETE,
        &format!("/api/v1/projects/{project}/environments/prod"),
    )
    .by(&app.owner)
    .send()
    .await
    .assert_status(202);
    app.post(&format!("{shop}/promote"))
        .by(&app.owner)
        .json(json!({"environment": "prod"}))
        .send()
        .await
        .assert_problem(409, "environment_deleting");
}

#[tokio::test]
async fn changes_inside_a_deleting_environment_are_refused() {
    let app = TestApp::with_cluster().await;
    let project = app.create_project("apps").await;
    app.create_environment(&project, json!({"name": "prod", "env_type": "production"}))
        .await;
    app.wait_for_environment(&project, "prod").await;
    let apps = apps_path(&project, "prod");
    create(&app, &apps, json!({"name": "shop", "image": "nginx"})).await;
    app.request(
        Method::DELETE,
        &format!("/api/v1/projects/{project}/environments/prod"),
    )
    .by(&app.owner)
    .send()
    .await
    .assert_status(202);
    app.post(&apps)
        .by(&app.owner)
        .json(json!({"name": "other", "image": "nginx"}))
        .send()
        .await
        .assert_problem(409, "environment_deleting");
    patch(&app, &format!("{apps}/shop"), json!({"image": "nginx:2"}))
        .await
        .assert_problem(409, "environment_deleting");
    // Reading still works during the grace period.
    app.get(&format!("{apps}/shop"))
        .by(&app.owner)
        .send()
        .await
        .assert_status(200);
}

#[tokio::test]
async fn deleting_an_app_removes_it_and_its_history() {
    let app = TestApp::with_cluster().await;
    let (_, apps) = environment(&app).await;
    create(&app, &apps, json!({"name": "shop", "image": "nginx"})).await;
    let shop = format!("{apps}/shop");
    patch(&app, &shop, json!({"image": "nginx:2"}))
        .await
        .assert_status(200);
    app.request(Method::DELETE, &shop)
        .by(&app.owner)
        .send()
        .await
        .assert_status(204);
    app.get(&shop)
        .by(&app.owner)
        .send()
        .await
        .assert_problem(404, "not_found");
    app.request(Method::DELETE, &shop)
        .by(&app.owner)
        .send()
        .await
        .assert_problem(404, "not_found");
    // A new app of the same name starts its own history.
    create(&app, &apps, json!({"name": "shop", "image": "nginx:3"})).await;
    assert_eq!(revisions(&releases(&app, &shop).await), [1]);
    let items = app
        .dynamodb
        .scan()
        .table_name(app.state.store.table())
        .filter_expression("begins_with(pk, :releases)")
        .expression_attribute_values(":releases", crate::support::table::s("RELEASES#"))
        .send()
        .await
        .expect("scanning the test table");
    assert_eq!(items.count, 1, "the deleted app's history is gone");
}

#[tokio::test]
async fn env_values_are_shown_only_with_secret_read() {
    let app = TestApp::with_cluster().await;
    let (project, apps) = environment(&app).await;
    let secret_value = format!("sentinel-{}", unique("v"));
    // The reference must name a secret and key that exist.
    app.request(
        Method::PUT,
        &format!("/api/v1/projects/{project}/environments/staging/secrets/db"),
    )
    .by(&app.owner)
    .json(json!({"data": {"url": "postgres://db/shop"}}))
    .send()
    .await
    .assert_status(201);
    create(&app, &apps, json!({
        "name": "shop", "image": "nginx",
        "env": [{"name": "TOKEN", "value": secret_value}, {"name": "DB", "secret": {"name": "db", "key": "url"}}]
    }))
    .await;
    let shop = format!("{apps}/shop");
    let developer = app.user(Role::Developer).await;
    let admin = app.user(Role::Admin).await;
    for (user, shown) in [(&developer, false), (&admin, true)] {
        for answer in [
            app.get(&shop).by(user).send().await.json()["app"].clone(),
            app.get(&apps).by(user).send().await.json()[0].clone(),
        ] {
            assert_eq!(answer["env"][0]["value"].is_string(), shown, "{answer}");
            assert_eq!(
                answer["env"][1]["secret"],
                json!({"name": "db", "key": "url"})
            );
        }
    }
    // Without seeing the value, a developer still edits the list: an entry
    // with only a name keeps its value.
    let edited = app
        .request(Method::PATCH, &shop)
        .by(&developer)
        .json(json!({"env": [{"name": "TOKEN"}, {"name": "EXTRA", "value": "x"}]}))
        .send()
        .await;
    edited.assert_status(200);
    assert!(!edited.text().contains(&secret_value));
    let seen = app.get(&shop).by(&admin).send().await.json();
    assert_eq!(seen["app"]["env"][0]["value"], secret_value.as_str());
    assert_eq!(seen["app"]["env"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn what_each_role_may_change() {
    let app = TestApp::with_cluster().await;
    let (_, apps) = environment(&app).await;
    create(
        &app,
        &apps,
        json!({"name": "shop", "image": "nginx:1", "port": 80}),
    )
    .await;
    let shop = format!("{apps}/shop");
    let viewer = app.user(Role::Viewer).await;
    let operator = app.user(Role::Operator).await;
    let developer = app.user(Role::Developer).await;
    let send = |user, body: Value| app.request(Method::PATCH, &shop).by(user).json(body).send();
    send(&viewer, json!({"replicas": 2}))
        .await
        .assert_problem(403, "forbidden");
    send(&operator, json!({"replicas": 2}))
        .await
        .assert_status(200);
    send(&operator, json!({"domains": ["a.example.com"]}))
        .await
        .assert_status(200);
    // Mixing fields needs every permission: nothing changes when one lacks.
    send(&operator, json!({"image": "nginx:2", "replicas": 4}))
        .await
        .assert_problem(403, "forbidden");
    let record = app.get(&shop).by(&app.owner).send().await.json()["app"].clone();
    assert_eq!(
        (
            record["image"].as_str(),
            record["processes"][0]["min_replicas"].as_i64()
        ),
        (Some("nginx:1"), Some(2))
    );
    send(&developer, json!({"image": "nginx:2", "replicas": 4}))
        .await
        .assert_status(200);
    for path in [format!("{shop}/rollback"), format!("{shop}/promote")] {
        app.post(&path)
            .by(&operator)
            .json(json!({"revision": 1, "environment": "x"}))
            .send()
            .await
            .assert_problem(403, "forbidden");
    }
    app.request(Method::DELETE, &shop)
        .by(&operator)
        .send()
        .await
        .assert_problem(403, "forbidden");
    app.get(&shop).by(&viewer).send().await.assert_status(200);
    app.get(&format!("{shop}/releases"))
        .by(&viewer)
        .send()
        .await
        .assert_status(200);

    // Another organization sees nothing.
    let stranger = app.other_org("globex").await;
    app.get(&shop)
        .by(&stranger)
        .send()
        .await
        .assert_problem(404, "not_found");
    app.request(Method::PATCH, &shop)
        .by(&stranger)
        .json(json!({"replicas": 1}))
        .send()
        .await
        .assert_problem(404, "not_found");
    app.get(&apps)
        .by(&stranger)
        .send()
        .await
        .assert_problem(404, "not_found");
}

#[tokio::test]
async fn concurrent_changes_never_share_or_skip_a_revision() {
    let app = TestApp::with_cluster().await;
    let (_, apps) = environment(&app).await;
    create(&app, &apps, json!({"name": "shop", "image": "nginx:0"})).await;
    let shop = format!("{apps}/shop");
    let answers = futures::future::join_all((1..=8).map(|i| {
        app.request(Method::PATCH, &shop)
            .by(&app.owner)
            .json(json!({"image": format!("nginx:{i}")}))
            .send()
    }))
    .await;
    let mut won = 0;
    for answer in &answers {
        match answer.status.as_u16() {
            200 => won += 1,
            409 => answer.assert_problem(409, "conflict"),
            other => panic!("unexpected {other}: {}", answer.text()),
        }
    }
    assert!(won >= 1);
    let history = releases(&app, &shop).await;
    let expected: Vec<i64> = (1..=won + 1).rev().collect();
    assert_eq!(revisions(&history), expected, "consecutive, no duplicates");
    let current = app.get(&shop).by(&app.owner).send().await.json()["app"].clone();
    assert_eq!(
        current["image"], history[0]["image"],
        "the newest revision is what runs"
    );
}

#[tokio::test]
async fn a_store_fault_mid_change_leaves_the_old_state() {
    let app = TestApp::with_cluster().await;
    let (_, apps) = environment(&app).await;
    create(&app, &apps, json!({"name": "shop", "image": "nginx:1"})).await;
    let shop = format!("{apps}/shop");
    app.store_faults.fail_next("TransactWriteItems", 1);
    patch(&app, &shop, json!({"image": "nginx:2"}))
        .await
        .assert_problem(503, "storage_unavailable");
    let event = app.last_audit_event("acme").await;
    assert_eq!(
        (event.action.as_str(), event.outcome),
        ("updateApp", Outcome::Error)
    );
    let record = app.get(&shop).by(&app.owner).send().await.json()["app"].clone();
    assert_eq!(
        (record["image"].as_str(), record["revision"].as_i64()),
        (Some("nginx:1"), Some(1))
    );
    assert_eq!(revisions(&releases(&app, &shop).await), [1]);
    // A new app is not created either.
    app.store_faults.fail_next("TransactWriteItems", 1);
    app.post(&apps)
        .by(&app.owner)
        .json(json!({"name": "other", "image": "nginx"}))
        .send()
        .await
        .assert_problem(503, "storage_unavailable");
    app.get(&format!("{apps}/other"))
        .by(&app.owner)
        .send()
        .await
        .assert_problem(404, "not_found");
    // And the next change works.
    patch(&app, &shop, json!({"image": "nginx:2"}))
        .await
        .assert_status(200);
    assert_eq!(revisions(&releases(&app, &shop).await), [2, 1]);
}

/// A volume's claim outlives its app unless the delete asks otherwise.
#[tokio::test]
async fn volumes_are_kept_on_delete_unless_asked() {
    use k8s_openapi::api::core::v1::PersistentVolumeClaim;
    use kube::Api;

    let app = TestApp::with_cluster().await;
    let (project, apps) = environment(&app).await;
    let claims: Api<PersistentVolumeClaim> =
        Api::namespaced(app.cluster().client.clone(), &format!("{project}-staging"));
    let body = json!({
        "name": "db", "image": "postgres:16.4", "port": 5432, "protocol": "tcp",
        "volumes": [{"name": "data", "mount_path": "/var/lib/postgresql/data"}]
    });
    let claim_exists = || async { claims.get_opt("db-data").await.unwrap().is_some() };
    create(&app, &apps, body.clone()).await;
    crate::support::eventually("the claim is made", &claim_exists).await;
    app.request(Method::DELETE, &format!("{apps}/db"))
        .by(&app.owner)
        .send()
        .await
        .assert_status(204);
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    assert!(claim_exists().await, "kept without delete_volumes");

    // The same name mounts the same claim again; then both go.
    create(&app, &apps, body).await;
    app.request(Method::DELETE, &format!("{apps}/db?delete_volumes=true"))
        .by(&app.owner)
        .send()
        .await
        .assert_status(204);
    crate::support::cluster::until_claim_deleted(&claims, "db-data").await;
    app.request(Method::DELETE, &format!("{apps}/db?delete_volumes=maybe"))
        .by(&app.owner)
        .send()
        .await
        .assert_problem(400, "invalid_request");
}
