//! Environments and their lifecycle through the controller: provisioned as a
//! namespace with a quota, purged when deleted (production after its grace).

use std::time::Duration;

use http::Method;
use k8s_openapi::api::core::v1::{LimitRange, ResourceQuota};
use kube::Api;
use serde_json::{Value, json};

use crate::support::{TestApp, TestResponse, eventually};
use berth_domain::Role;

async fn wait_ready(app: &TestApp, project: &str, environment: &str) -> Value {
    let path = format!("/api/v1/projects/{project}/environments/{environment}");
    eventually("the environment becomes Ready", || async {
        app.get(&path).by(&app.owner).send().await.json()["phase"] == "Ready"
    })
    .await;
    app.get(&path).by(&app.owner).send().await.json()
}

/// A fresh project with a provisioned production environment `prod`; the
/// project and the environment's path.
async fn ready_production(app: &TestApp) -> (String, String) {
    let project = app.create_project("p").await;
    app.create_environment(
        &project,
        json!({ "name": "prod", "env_type": "production" }),
    )
    .await;
    wait_ready(app, &project, "prod").await;
    let path = format!("/api/v1/projects/{project}/environments/prod");
    (project, path)
}

/// Deletes the environment as the owner; when its purge is due, as sent
/// and in seconds.
async fn delete_by_owner(app: &TestApp, path: &str) -> (String, i64) {
    let deleted = app
        .request(Method::DELETE, path)
        .by(&app.owner)
        .send()
        .await;
    deleted.assert_status(202);
    let scheduled = deleted.json()["deletion_scheduled_at"]
        .as_str()
        .unwrap()
        .to_owned();
    let at = berth_domain::clock::parse_rfc3339(&scheduled).unwrap();
    (scheduled, at)
}

/// A restore refused because the purge has begun, which goes on.
async fn refused_while_purging(app: &TestApp, path: &str, refused: &TestResponse) {
    refused.assert_problem(409, "conflict");
    let detail = refused.json()["detail"].as_str().unwrap().to_owned();
    assert!(detail.contains("can no longer be restored"), "{detail}");
    let record = app.get(path).by(&app.owner).send().await.json();
    assert_eq!(
        (record["phase"].as_str(), record["deleting"].as_bool()),
        (Some("Terminating"), Some(true)),
        "{record}"
    );
}

/// Holds the namespace in deletion with a finalizer of the tests, as a slow
/// cleanup in the cluster would; or lets it go.
async fn hold_namespace(app: &TestApp, namespace: &str, hold: bool) {
    let finalizers = if hold {
        json!(["tests.berth.dev/hold"])
    } else {
        Value::Null
    };
    Api::<k8s_openapi::api::core::v1::Namespace>::all(app.cluster().client.clone())
        .patch(
            namespace,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({ "metadata": { "finalizers": finalizers } })),
        )
        .await
        .unwrap();
}

/// The record says the quota the environment was created with (beyond the
/// spec's record), in its create answer, when read and when listed; `null`
/// for one created without, which only the platform's defaults hold.
#[tokio::test]
async fn the_record_reports_the_quota_it_was_created_with() {
    let app = TestApp::with_cluster().await;
    let project = app.create_project("p").await;
    let quota =
        json!({ "cpu": "2", "memory": "4Gi", "pods": 20, "storage": "500Gi", "volumes": 5 });
    let created = app
        .create_environment(&project, json!({ "name": "limited", "quota": quota }))
        .await;
    assert_eq!(created["quota"], quota, "{created}");
    let created = app
        .create_environment(&project, json!({ "name": "open" }))
        .await;
    // Present and null, like the record's other fields without a value.
    assert_eq!(created.get("quota"), Some(&Value::Null), "{created}");

    let environments = format!("/api/v1/projects/{project}/environments");
    let read = |name: &str| {
        app.get(&format!("{environments}/{name}"))
            .by(&app.owner)
            .send()
    };
    let limited = read("limited").await;
    limited.assert_status(200);
    assert_eq!(limited.json()["quota"], quota);
    let open = read("open").await;
    open.assert_status(200);
    assert_eq!(open.json().get("quota"), Some(&Value::Null));
    let listed = app.get(&environments).by(&app.owner).send().await;
    listed.assert_status(200);
    let quotas: Vec<(Value, Value)> = listed
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["name"].clone(), e["quota"].clone()))
        .collect();
    assert_eq!(
        quotas,
        [
            (json!("limited"), quota.clone()),
            (json!("open"), Value::Null)
        ]
    );
}

#[tokio::test]
async fn an_environment_becomes_a_namespace_with_its_quota() {
    let app = TestApp::with_cluster().await;
    let project = app.create_project("p").await;
    let created = app
        .post(&format!("/api/v1/projects/{project}/environments"))
        .by(&app.owner)
        .json(json!({ "name": "staging", "env_type": "standard", "quota": { "cpu": "2", "memory": "4Gi", "pods": 20 } }))
        .send()
        .await;
    created.assert_status(201);
    assert_eq!(
        created.headers["location"],
        format!("/api/v1/projects/{project}/environments/staging")
    );
    let body = created.json();
    let resource_name = format!("{project}-staging");
    assert_eq!(body["name"], "staging");
    assert_eq!(body["resource_name"], resource_name.as_str());
    assert_eq!(body["namespace"], resource_name.as_str());
    assert_eq!(body["project"], project.as_str());
    assert_eq!(body["env_type"], "standard");
    assert_eq!(body["phase"], "Pending");
    assert_eq!(
        (body["ready"].as_bool(), body["deleting"].as_bool()),
        (Some(false), Some(false))
    );
    assert!(body["deletion_scheduled_at"].is_null());
    for field in ["message", "created_at"] {
        assert!(body.get(field).is_some(), "{field}");
    }

    let ready = wait_ready(&app, &project, "staging").await;
    assert_eq!(ready["ready"], true);
    let cluster = app.cluster();
    assert!(cluster.namespace_exists(&resource_name).await);
    // The controller logs the phase as a value, not a debug form
    // (`phase=Some("Ready")`) nor a quoted string.
    let logged = format!("status environment={resource_name} phase=Ready");
    eventually(&format!("the controller logs `{logged}`"), || async {
        crate::support::logs::captured().contains(&logged)
    })
    .await;
    let quota = Api::<ResourceQuota>::namespaced(cluster.client.clone(), &resource_name)
        .get("berth-quota")
        .await
        .unwrap();
    let hard = quota.spec.unwrap().hard.unwrap();
    assert_eq!(hard["limits.cpu"].0, "2");
    assert_eq!(hard["limits.memory"].0, "4Gi");
    assert_eq!(hard["pods"].0, "20");
    Api::<LimitRange>::namespaced(cluster.client.clone(), &resource_name)
        .get("berth-defaults")
        .await
        .unwrap();
    let namespace = Api::<k8s_openapi::api::core::v1::Namespace>::all(cluster.client.clone())
        .get(&resource_name)
        .await
        .unwrap();
    let labels = namespace.metadata.labels.unwrap();
    assert_eq!(labels["berth.dev/project"], project.as_str());
    assert_eq!(labels["berth.dev/environment"], "staging");
    assert_eq!(labels["berth.dev/org"], "acme");

    let listed = app
        .get(&format!("/api/v1/projects/{project}/environments"))
        .by(&app.owner)
        .send()
        .await;
    listed.assert_status(200);
    assert_eq!(listed.json().as_array().unwrap().len(), 1);
    let project_record = app
        .get(&format!("/api/v1/projects/{project}"))
        .by(&app.owner)
        .send()
        .await
        .json();
    assert_eq!(project_record["environments"], 1);
}

#[tokio::test]
async fn deleting_a_standard_environment_purges_it() {
    let app = TestApp::with_cluster().await;
    let project = app.create_project("p").await;
    app.create_environment(&project, json!({ "name": "dev" }))
        .await;
    wait_ready(&app, &project, "dev").await;
    let path = format!("/api/v1/projects/{project}/environments/dev");
    let deleted = app
        .request(Method::DELETE, &path)
        .by(&app.owner)
        .send()
        .await;
    deleted.assert_status(202);
    let body = deleted.json();
    assert_eq!(body["deleting"], true);
    assert!(body["deletion_scheduled_at"].as_str().is_some());
    let namespace = format!("{project}-dev");
    eventually("the environment is purged", || async {
        app.get(&path).by(&app.owner).send().await.status == 404
            && !app.cluster().namespace_exists(&namespace).await
    })
    .await;
    // Now the project is empty and can go.
    app.request(Method::DELETE, &format!("/api/v1/projects/{project}"))
        .by(&app.owner)
        .send()
        .await
        .assert_status(202);
}

#[tokio::test]
async fn a_production_environment_waits_for_its_grace() {
    let app =
        TestApp::with_cluster_config(|config| config.production_grace = Duration::from_secs(4))
            .await;
    let developer = app.user(Role::Developer).await;
    let (project, path) = ready_production(&app).await;
    app.request(Method::DELETE, &path)
        .by(&developer)
        .send()
        .await
        .assert_problem(403, "forbidden");

    let (scheduled, at) = delete_by_owner(&app, &path).await;
    let wait = at - berth_domain::clock::unix_seconds();
    assert!((2..=5).contains(&wait), "{scheduled}");

    // Still there, marked as deleting, until the time comes.
    let record = app.get(&path).by(&app.owner).send().await.json();
    assert_eq!(
        (
            record["deleting"].as_bool(),
            record["deletion_scheduled_at"].as_str()
        ),
        (Some(true), Some(scheduled.as_str()))
    );
    assert!(
        app.cluster()
            .namespace_exists(&format!("{project}-prod"))
            .await
    );
    // Deleting again changes nothing.
    let again = app
        .request(Method::DELETE, &path)
        .by(&app.owner)
        .send()
        .await;
    again.assert_status(202);
    assert_eq!(again.json()["deletion_scheduled_at"], scheduled.as_str());

    eventually(
        "the production environment is purged after its grace",
        || async { app.get(&path).by(&app.owner).send().await.status == 404 },
    )
    .await;
    assert!(
        berth_domain::clock::unix_seconds() >= at,
        "purged no earlier than scheduled"
    );
    assert!(
        !app.cluster()
            .namespace_exists(&format!("{project}-prod"))
            .await
    );
}

async fn environments_of(app: &TestApp, project: &str) -> Value {
    app.get(&format!("/api/v1/projects/{project}/environments"))
        .by(&app.owner)
        .send()
        .await
        .json()
}

/// serde would take a struct as the array of its fields (`[null, null]`,
/// every field left out): a body's objects are objects only.
#[tokio::test]
async fn an_object_given_as_an_array_is_refused() {
    let app = TestApp::with_cluster().await;
    let project = app.create_project("p").await;
    for quota in [json!([null, null]), json!(["2", "4Gi"])] {
        let response = app
            .post(&format!("/api/v1/projects/{project}/environments"))
            .by(&app.owner)
            .json(json!({ "name": "dev", "quota": quota }))
            .send()
            .await;
        response.assert_problem(400, "invalid_request");
        assert_eq!(
            response.json()["detail"],
            "quota must be an object, not an array"
        );
    }
    app.post(&format!("/api/v1/projects/{project}/environments"))
        .by(&app.owner)
        .json(json!(["dev", "standard"]))
        .send()
        .await
        .assert_problem(400, "invalid_request");
    assert_eq!(
        environments_of(&app, &project).await,
        json!([]),
        "nothing was created"
    );
}

#[tokio::test]
async fn environment_requests_are_validated() {
    let app = TestApp::with_cluster().await;
    let project = app.create_project("p").await;
    let create = |body| {
        app.post(&format!("/api/v1/projects/{project}/environments"))
            .by(&app.owner)
            .json(body)
    };
    for bad in [
        json!({ "name": "Dev" }),
        json!({ "name": "a".repeat(23) }),
        json!({ "name": "dev", "env_type": "qa" }),
        json!({ "name": "dev", "quota": { "cpu": "two" } }),
        json!({ "name": "dev", "quota": { "memory": "4GB" } }),
        json!({ "name": "dev", "quota": { "pods": 0 } }),
    ] {
        create(bad.clone())
            .send()
            .await
            .assert_problem(422, "validation_failed");
    }
    create(json!({ "env_type": "standard" }))
        .send()
        .await
        .assert_problem(400, "invalid_request");
    create(json!({ "name": "dev", "quota": { "gpus": 1 } }))
        .send()
        .await
        .assert_problem(400, "invalid_request");
    create(json!({ "name": "dev", "quota": { "pods": "many" } }))
        .send()
        .await
        .assert_problem(400, "invalid_request");
    assert_eq!(
        environments_of(&app, &project).await,
        json!([]),
        "nothing was created"
    );

    create(json!({ "name": "dev" }))
        .send()
        .await
        .assert_status(201);
    create(json!({ "name": "dev", "env_type": "preview" }))
        .send()
        .await
        .assert_problem(409, "conflict");
    app.post("/api/v1/projects/no-such-project/environments")
        .by(&app.owner)
        .json(json!({ "name": "dev" }))
        .send()
        .await
        .assert_problem(404, "not_found");
    app.get(&format!("/api/v1/projects/{project}/environments/nope"))
        .by(&app.owner)
        .send()
        .await
        .assert_problem(404, "not_found");
    app.request(
        Method::DELETE,
        &format!("/api/v1/projects/{project}/environments/nope"),
    )
    .by(&app.owner)
    .send()
    .await
    .assert_problem(404, "not_found");
}

#[tokio::test]
async fn a_deleting_project_takes_no_new_environments() {
    let app = TestApp::with_cluster().await;
    let project = app.create_project("p").await;
    let path = format!("/api/v1/projects/{project}");
    // Wait for the controller's finalizer, which keeps the project while it is deleting.
    eventually("the project becomes ready", || async {
        app.get(&path).by(&app.owner).send().await.json()["ready"] == true
    })
    .await;
    // Hold the project in deletion with a finalizer of our own, as a slow cleanup would.
    let projects: Api<berth_cluster::crd::Project> = Api::all(app.cluster().client.clone());
    projects
        .patch(&project, &kube::api::PatchParams::default(), &kube::api::Patch::Merge(json!({ "metadata": { "finalizers": ["berth.dev/project-protection", "tests.berth.dev/hold"] } })))
        .await
        .unwrap();
    app.request(Method::DELETE, &path)
        .by(&app.owner)
        .send()
        .await
        .assert_status(202);
    app.post(&format!("{path}/environments"))
        .by(&app.owner)
        .json(json!({ "name": "late" }))
        .send()
        .await
        .assert_problem(409, "conflict");
    // Let go of the hold, conditioned on the version read: the controller
    // may drop its own finalizer meanwhile, which must not come back.
    loop {
        let held = projects.get(&project).await.unwrap();
        let rest: Vec<String> = held
            .metadata
            .finalizers
            .unwrap_or_default()
            .into_iter()
            .filter(|f| f != "tests.berth.dev/hold")
            .collect();
        let patch = json!({ "metadata": {
            "finalizers": rest,
            "resourceVersion": held.metadata.resource_version,
        } });
        match projects
            .patch(
                &project,
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(patch),
            )
            .await
        {
            Ok(_) => break,
            Err(kube::Error::Api(status)) if status.code == 409 => continue,
            Err(error) => panic!("letting go of the project: {error}"),
        }
    }
    eventually("the project is gone", || async {
        app.get(&path).by(&app.owner).send().await.status == 404
    })
    .await;
}

#[tokio::test]
async fn a_scheduled_purge_survives_a_controller_restart() {
    let app =
        TestApp::with_cluster_config(|config| config.production_grace = Duration::from_secs(4))
            .await;
    let (project, path) = ready_production(&app).await;
    app.request(Method::DELETE, &path)
        .by(&app.owner)
        .send()
        .await
        .assert_status(202);
    app.cluster().restart_controller().await;
    eventually(
        "the new controller purges it when its time comes",
        || async { app.get(&path).by(&app.owner).send().await.status == 404 },
    )
    .await;
    assert!(
        !app.cluster()
            .namespace_exists(&format!("{project}-prod"))
            .await
    );
}

#[tokio::test]
#[cfg_attr(berth_real_cluster, ignore = "needs the stand-in's fault knobs")]
async fn a_provisioning_failure_shows_as_degraded_until_it_heals() {
    let app = TestApp::with_cluster().await;
    let standin = app.standin();
    let project = app.create_project("p").await;
    // Four refusals: the first reconciles follow at once (the status
    // written, the namespace made, each a watch event), so two could be
    // spent and healed within milliseconds; the last are a backoff apart.
    standin.add_fault(
        berth_kube_standin::Fault::new(berth_kube_standin::FaultKind::InternalError, 4)
            .method("PATCH")
            .path_contains("/resourcequotas/"),
    );
    app.create_environment(&project, json!({ "name": "dev", "quota": { "cpu": "1" } }))
        .await;
    let path = format!("/api/v1/projects/{project}/environments/dev");
    eventually("the environment shows as Degraded", || async {
        let record = app.get(&path).by(&app.owner).send().await.json();
        record["phase"] == "Degraded"
            && record["ready"] == false
            && record["message"].as_str().is_some_and(|m| !m.is_empty())
    })
    .await;
    // The controller backs off and tries again; the fault is spent.
    let healed = wait_ready(&app, &project, "dev").await;
    assert!(healed["message"].is_null(), "{healed}");
}

/// While the namespace goes the environment shows `Terminating`; a restore
/// is refused then (the purge has begun) and not found once it is purged.
#[tokio::test]
async fn a_purge_shows_terminating_while_the_namespace_goes() {
    let app = TestApp::with_cluster().await;
    let project = app.create_project("p").await;
    app.create_environment(&project, json!({ "name": "dev" }))
        .await;
    wait_ready(&app, &project, "dev").await;
    // Something in the cluster holds the namespace, as a slow cleanup would.
    let namespace = format!("{project}-dev");
    hold_namespace(&app, &namespace, true).await;

    let path = format!("/api/v1/projects/{project}/environments/dev");
    app.request(Method::DELETE, &path)
        .by(&app.owner)
        .send()
        .await
        .assert_status(202);
    eventually("the environment shows Terminating", || async {
        let record = app.get(&path).by(&app.owner).send().await.json();
        record["phase"] == "Terminating" && record["ready"] == false && record["deleting"] == true
    })
    .await;
    assert!(app.cluster().namespace_exists(&namespace).await);

    // A purge that has begun cannot be undone, and goes on.
    let refused = app
        .post(&format!("{path}/restore"))
        .by(&app.owner)
        .send()
        .await;
    refused_while_purging(&app, &path, &refused).await;

    hold_namespace(&app, &namespace, false).await;
    eventually("the environment is purged", || async {
        app.get(&path).by(&app.owner).send().await.status == 404
    })
    .await;
    let gone = app
        .post(&format!("{path}/restore"))
        .by(&app.owner)
        .send()
        .await;
    gone.assert_problem(404, "not_found");
    assert_eq!(
        gone.json()["detail"],
        format!("environment `dev` not found in project `{project}`").as_str()
    );
}

/// A deleted production environment waits out its grace; restoring it in
/// that time cancels the purge and keeps everything in it.
#[tokio::test]
async fn a_deleted_production_environment_can_be_restored_with_everything_in_it() {
    let app =
        TestApp::with_cluster_config(|config| config.production_grace = Duration::from_secs(6))
            .await;
    let developer = app.user(Role::Developer).await;
    let admin = app.user(Role::Admin).await;
    let (project, path) = ready_production(&app).await;
    let namespace = format!("{project}-prod");
    app.request(Method::PUT, &format!("{path}/secrets/db"))
        .by(&app.owner)
        .json(json!({ "data": { "password": "kept" } }))
        .send()
        .await
        .assert_status(201);
    app.post(&format!("{path}/apps"))
        .by(&app.owner)
        .json(json!({ "name": "web", "image": "nginx:1.27", "replicas": 0 }))
        .send()
        .await
        .assert_status(201);
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> =
        Api::all(app.cluster().client.clone());
    let uid_before = namespaces.get(&namespace).await.unwrap().metadata.uid;

    let (scheduled, purge_at) = delete_by_owner(&app, &path).await;

    // While it waits, the project cannot go, and says until when.
    let not_empty = app
        .request(Method::DELETE, &format!("/api/v1/projects/{project}"))
        .by(&app.owner)
        .send()
        .await;
    not_empty.assert_problem(409, "project_not_empty");
    let detail = not_empty.json()["detail"].as_str().unwrap().to_owned();
    assert!(
        detail.contains(&format!("`prod` (deleted; purged at {scheduled})"))
            && detail.contains("once they are purged"),
        "{detail}"
    );

    let restore = format!("{path}/restore");
    app.post(&restore)
        .by(&developer)
        .send()
        .await
        .assert_problem(403, "forbidden");
    let event = app.last_audit_event("acme").await;
    assert_eq!(
        (event.action.as_str(), event.status),
        ("restoreEnvironment", Some(403))
    );
    let restored = app.post(&restore).by(&admin).send().await;
    restored.assert_status(200);
    let record = restored.json();
    assert_eq!(
        (
            record["name"].as_str(),
            record["deleting"].as_bool(),
            record["deletion_scheduled_at"].is_null()
        ),
        (Some("prod"), Some(false), true),
        "{record}"
    );
    let event = app.last_audit_event("acme").await;
    assert_eq!(
        (event.action.as_str(), event.status, event.target.as_deref()),
        ("restoreEnvironment", Some(200), Some(namespace.as_str()))
    );
    assert!(
        berth_domain::clock::unix_seconds() < purge_at,
        "restored within the grace (the test ran too slowly to show anything)"
    );

    // Past the time the purge was due, it is still there, Ready, with all it had.
    tokio::time::sleep(Duration::from_secs(
        u64::try_from(purge_at - berth_domain::clock::unix_seconds() + 3).unwrap_or(3),
    ))
    .await;
    let ready = wait_ready(&app, &project, "prod").await;
    assert_eq!(
        (ready["ready"].as_bool(), ready["deleting"].as_bool()),
        (Some(true), Some(false)),
        "{ready}"
    );
    assert_eq!(
        namespaces.get(&namespace).await.unwrap().metadata.uid,
        uid_before,
        "the very same namespace"
    );
    let secrets = app
        .get(&format!("{path}/secrets"))
        .by(&app.owner)
        .send()
        .await
        .json();
    assert_eq!(secrets[0]["name"], "db", "{secrets}");
    app.get(&format!("{path}/apps/web"))
        .by(&app.owner)
        .send()
        .await
        .assert_status(200);

    // Restoring what is not being deleted changes nothing.
    let again = app.post(&restore).by(&app.owner).send().await;
    again.assert_status(200);
    assert_eq!(
        (
            again.json()["deleting"].as_bool(),
            again.json()["ready"].as_bool()
        ),
        (Some(false), Some(true))
    );
}

/// A production environment of a fresh project, Ready, then deleted (its
/// grace 3 s); the project, its path and when the purge is due (seconds).
async fn deleted_production(app: &TestApp) -> (String, String, i64) {
    let (project, path) = ready_production(app).await;
    let (_, at) = delete_by_owner(app, &path).await;
    (project, path, at)
}

/// A restore that reads the environment just before its purge is due, but
/// whose write arrives after the controller has begun the purge, is refused:
/// its write was conditioned on the version it read.
#[tokio::test]
#[cfg_attr(berth_real_cluster, ignore = "needs the stand-in's fault knobs")]
async fn a_restore_that_loses_the_race_to_the_purge_is_refused() {
    let app = TestApp::with_cluster_config(|config| {
        config.production_grace = Duration::from_secs(3);
        config.cluster_timeout = Duration::from_secs(10);
    })
    .await;
    let (project, path, at) = deleted_production(&app).await;
    let namespace = format!("{project}-prod");
    hold_namespace(&app, &namespace, true).await;
    let wait = at * 1000 - 600 - berth_domain::clock::unix_millis();
    assert!(wait > 0, "the test ran too slowly to race");
    tokio::time::sleep(Duration::from_millis(wait.unsigned_abs())).await;
    // The restore's write (the first PATCH of the environment from now on)
    // waits 3 s, past the moment the controller begins the purge.
    app.standin().add_fault(
        berth_kube_standin::Fault::new(
            berth_kube_standin::FaultKind::Delay {
                delay: Duration::from_secs(3),
            },
            1,
        )
        .method("PATCH")
        .path_contains(format!("/environments/{namespace}")),
    );
    let refused = app
        .post(&format!("{path}/restore"))
        .by(&app.owner)
        .send()
        .await;
    assert!(
        app.standin().pending_faults().is_empty(),
        "the restore wrote"
    );
    refused_while_purging(&app, &path, &refused).await;

    hold_namespace(&app, &namespace, false).await;
    eventually("the environment is purged", || async {
        app.get(&path).by(&app.owner).send().await.status == 404
            && !app.cluster().namespace_exists(&namespace).await
    })
    .await;
}

/// A purge whose `Terminating` mark arrives after a restore cleared the
/// schedule (a restore by an API whose clock is behind the controller's) is
/// not carried out: the mark was conditioned on the version the controller
/// read, and the environment stays whole.
#[tokio::test]
#[cfg_attr(berth_real_cluster, ignore = "needs the stand-in's fault knobs")]
async fn a_purge_that_loses_the_race_to_a_restore_leaves_the_environment_whole() {
    let app =
        TestApp::with_cluster_config(|config| config.production_grace = Duration::from_secs(3))
            .await;
    let (project, path, _) = deleted_production(&app).await;
    let namespace = format!("{project}-prod");
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> =
        Api::all(app.cluster().client.clone());
    let uid_before = namespaces.get(&namespace).await.unwrap().metadata.uid;
    app.standin().add_fault(
        berth_kube_standin::Fault::new(
            berth_kube_standin::FaultKind::Delay {
                delay: Duration::from_secs(2),
            },
            1,
        )
        .method("PATCH")
        .path_contains(format!("/environments/{namespace}/status")),
    );
    eventually("the controller begins the purge", || async {
        app.standin().pending_faults().is_empty()
    })
    .await;
    // Its mark is on the way; the schedule is cleared before it arrives.
    let environments: Api<berth_cluster::crd::Environment> = Api::all(app.cluster().client.clone());
    environments
        .patch(
            &namespace,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({ "spec": { "deletionScheduledAt": null } })),
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(4)).await;
    let record = wait_ready(&app, &project, "prod").await;
    assert_eq!(
        (record["ready"].as_bool(), record["deleting"].as_bool()),
        (Some(true), Some(false)),
        "{record}"
    );
    assert_eq!(
        namespaces.get(&namespace).await.unwrap().metadata.uid,
        uid_before,
        "the namespace was never deleted"
    );
    assert!(
        namespaces
            .get(&namespace)
            .await
            .unwrap()
            .metadata
            .deletion_timestamp
            .is_none()
    );
    app.get(&path)
        .by(&app.owner)
        .send()
        .await
        .assert_status(200);
}
