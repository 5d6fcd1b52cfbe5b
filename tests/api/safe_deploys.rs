//! Deploys that cannot take an app down: the release phase (a
//! release command's Job succeeding, failing and timing out) and the
//! automatic rollback of a rollout that never becomes available, through the
//! API, with the reasons and the release history after each step. They pass
//! on the stand-in and on a real cluster without nodes alike: the tests play
//! the kubelet (`support::kubelet`), and a real Job controller fails a Job
//! past its `activeDeadlineSeconds` as the stand-in's does.

use http::Method;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use kube::Api;
use serde_json::{Value, json};

use berth_cluster::crd::App;

use crate::controller_ops::{event, note};
use crate::support::cluster::RELEASE_DEADLINE_SECONDS;
use crate::support::kubelet::{end_pods, keep_pods_running, play_kubelet};
use crate::support::{TestApp, eventually};

/// An app's paths and its namespace, in a ready environment.
struct Shop {
    shop: String,
    namespace: String,
}

async fn shop(app: &TestApp, body: Value) -> Shop {
    let project = app.ready_environment("deploys", "prod").await;
    let apps = format!("/api/v1/projects/{project}/environments/prod/apps");
    app.create_app(&apps, body).await;
    Shop {
        shop: format!("{apps}/shop"),
        namespace: format!("{project}-prod"),
    }
}

/// The uid of the shop's App, which its Events regard.
async fn app_uid(app: &TestApp, shop: &Shop) -> String {
    Api::<App>::namespaced(app.cluster().client.clone(), &shop.namespace)
        .get("shop")
        .await
        .expect("the App")
        .metadata
        .uid
        .expect("a uid")
}

async fn get(app: &TestApp, path: &str) -> Value {
    let answer = app.get(path).by(&app.owner).send().await;
    answer.assert_status(200);
    answer.json()
}

async fn patch(app: &TestApp, path: &str, body: Value) -> Value {
    let answer = app
        .request(Method::PATCH, path)
        .by(&app.owner)
        .json(body)
        .send()
        .await;
    answer.assert_status(200);
    answer.json()
}

async fn reason(app: &TestApp, shop: &Shop) -> (String, String) {
    let detail = get(app, &shop.shop).await;
    let text = |field: &str| detail["app"][field].as_str().unwrap_or_default().to_owned();
    (text("reason"), text("message"))
}

/// An app created and Available.
async fn available_shop(app: &TestApp, body: Value) -> Shop {
    let shop = shop(app, body).await;
    until_available(app, &shop).await;
    shop
}

/// Waits until the app's reason is `wanted` and answers its message.
async fn until_reason(app: &TestApp, shop: &Shop, wanted: &str) -> String {
    eventually(&format!("the app is {wanted}"), || async {
        reason(app, shop).await.0 == wanted
    })
    .await;
    reason(app, shop).await.1
}

/// `(revision, status, current, running)` of each release, newest first.
async fn history(app: &TestApp, shop: &Shop) -> Vec<(i64, String, bool, bool)> {
    get(app, &format!("{}/releases", shop.shop))
        .await
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|release| {
            (
                release["revision"].as_i64().unwrap_or_default(),
                release["status"].as_str().unwrap_or_default().to_owned(),
                release["current"].as_bool().unwrap_or_default(),
                release["running"].as_bool().unwrap_or_default(),
            )
        })
        .collect()
}

/// A release as [`history`] lists it: `current` is the newest (the
/// specification's rule), `running` what runs.
fn entry(revision: i64, status: &str, current: bool, running: bool) -> (i64, String, bool, bool) {
    (revision, status.to_owned(), current, running)
}

/// The App record's `running_revision`.
async fn running_revision(app: &TestApp, shop: &Shop) -> Option<i64> {
    get(app, &shop.shop).await["app"]["running_revision"].as_i64()
}

async fn deployment_image(app: &TestApp, shop: &Shop) -> Option<String> {
    Api::<Deployment>::namespaced(app.cluster().client.clone(), &shop.namespace)
        .get_opt("shop-web")
        .await
        .expect("reading the Deployment")
        .and_then(|deployment| deployment.spec)
        .and_then(|spec| spec.template.spec)
        .and_then(|pod| pod.containers.first().and_then(|c| c.image.clone()))
}

async fn job(app: &TestApp, shop: &Shop, revision: i64) -> Option<Job> {
    Api::<Job>::namespaced(app.cluster().client.clone(), &shop.namespace)
        .get_opt(&format!("shop--release-{revision}"))
        .await
        .expect("reading the Job")
}

/// Plays the kubelet for the app's processes (not its release commands,
/// which end) until the app is Available.
async fn until_available(app: &TestApp, shop: &Shop) {
    eventually("the app is Available", || async {
        play_kubelet(
            &app.cluster().client,
            &shop.namespace,
            "berth.dev/app=shop,!berth.dev/release",
        )
        .await;
        reason(app, shop).await.0 == "Available"
    })
    .await;
}

#[tokio::test]
async fn a_release_command_runs_before_the_workloads_change() {
    let app = TestApp::with_cluster().await;
    let shop = shop(
        &app,
        json!({"name": "shop", "image": "nginx:1.27", "port": 80, "release_command": ["./migrate", "up"]}),
    )
    .await;
    eventually("the release Job of revision 1", || async {
        job(&app, &shop, 1).await.is_some()
    })
    .await;
    until_reason(&app, &shop, "Releasing").await;
    assert_eq!(
        deployment_image(&app, &shop).await,
        None,
        "nothing runs yet"
    );
    let job = job(&app, &shop, 1).await.unwrap();
    let spec = job.spec.unwrap();
    assert_eq!(spec.backoff_limit, Some(1));
    assert_eq!(spec.active_deadline_seconds, Some(RELEASE_DEADLINE_SECONDS));
    let pod = spec.template.spec.unwrap();
    assert_eq!(pod.automount_service_account_token, Some(false));
    assert_eq!(
        pod.containers[0].command,
        Some(vec!["./migrate".to_owned(), "up".to_owned()])
    );
    let detail = get(&app, &shop.shop).await;
    assert_eq!(detail["app"]["release_command"], json!(["./migrate", "up"]));
    assert_eq!(detail["app"]["auto_rollback"], true);
    // Nothing runs while the first release command does.
    assert_eq!(
        history(&app, &shop).await,
        [entry(1, "pending", true, false)]
    );
    assert_eq!(running_revision(&app, &shop).await, None);

    // The release's output, and not the processes': the pod no node runs.
    eventually("the release's pod", || async {
        let logs = get(&app, &format!("{}/logs?release=1", shop.shop)).await;
        logs.as_array().is_some_and(|entries| entries.len() == 1)
    })
    .await;
    let logs = get(&app, &format!("{}/logs?release=1", shop.shop)).await;
    assert_eq!(logs[0]["process"], Value::Null);
    assert!(
        logs[0]["pod"]
            .as_str()
            .unwrap()
            .starts_with("shop--release-1-")
    );
    assert_eq!(get(&app, &format!("{}/logs", shop.shop)).await, json!([]));
    // A release's pods belong to no process.
    assert_eq!(
        get(&app, &format!("{}/logs?release=1&process=web", shop.shop)).await,
        json!([])
    );

    eventually("the release succeeds and the workloads follow", || async {
        end_pods(
            &app.cluster().client,
            &shop.namespace,
            "berth.dev/release=1",
            true,
        )
        .await;
        deployment_image(&app, &shop).await.as_deref() == Some("nginx:1.27")
    })
    .await;
    until_available(&app, &shop).await;
    assert_eq!(
        history(&app, &shop).await,
        [entry(1, "released", true, true)]
    );

    // A change of what runs only (replicas) needs no release.
    patch(&app, &shop.shop, json!({"replicas": 2})).await;
    until_available(&app, &shop).await;
    assert!(self::job(&app, &shop, 2).await.is_none());
    assert_eq!(
        history(&app, &shop).await,
        [
            entry(2, "released", true, true),
            entry(1, "released", false, false)
        ]
    );
    assert_eq!(running_revision(&app, &shop).await, Some(2));
}

#[tokio::test]
async fn a_failed_release_keeps_the_previous_revision_running() {
    let app = TestApp::with_cluster().await;
    let shop = available_shop(
        &app,
        json!({"name": "shop", "image": "nginx:1.27", "port": 80}),
    )
    .await;

    patch(
        &app,
        &shop.shop,
        json!({"image": "nginx:1.28", "release_command": ["./migrate"]}),
    )
    .await;
    until_reason(&app, &shop, "Releasing").await;
    // While its release command runs, revision 2 is the current one and
    // revision 1 runs.
    assert_eq!(
        history(&app, &shop).await,
        [
            entry(2, "pending", true, false),
            entry(1, "released", false, true)
        ]
    );
    assert_eq!(running_revision(&app, &shop).await, Some(1));
    // Its first try fails, and so does the one retry.
    eventually("the app is ReleaseFailed", || async {
        end_pods(
            &app.cluster().client,
            &shop.namespace,
            "berth.dev/release=2",
            false,
        )
        .await;
        reason(&app, &shop).await.0 == "ReleaseFailed"
    })
    .await;
    let (_, message) = reason(&app, &shop).await;
    assert!(
        message.contains("release command of revision 2 failed"),
        "{message}"
    );
    // Its retry failed too (BackoffLimitExceeded), not its deadline.
    assert!(message.contains("failed again when retried"), "{message}");
    assert!(message.contains("revision 1 keeps running"), "{message}");
    // `kubectl describe` tells it too.
    let uid = app_uid(&app, &shop).await;
    let client = &app.cluster().client;
    event(client, &shop.namespace, &uid, "Releasing").await;
    let failed = event(client, &shop.namespace, &uid, "ReleaseFailed").await;
    assert!(note(&failed).contains("revision 2"), "{failed:?}");
    assert_eq!(
        deployment_image(&app, &shop).await.as_deref(),
        Some("nginx:1.27")
    );
    assert_eq!(
        history(&app, &shop).await,
        [
            entry(2, "failed", true, false),
            entry(1, "released", false, true)
        ]
    );
    assert_eq!(running_revision(&app, &shop).await, Some(1));
    let job = job(&app, &shop, 2).await.unwrap();
    assert_eq!(
        job.status.and_then(|s| s.failed),
        Some(2),
        "one try and one retry"
    );

    // Never retried: the next change starts afresh.
    patch(&app, &shop.shop, json!({"release_command": []})).await;
    eventually("revision 3 runs", || async {
        deployment_image(&app, &shop).await.as_deref() == Some("nginx:1.28")
    })
    .await;
    until_available(&app, &shop).await;
    assert_eq!(
        history(&app, &shop).await,
        [
            entry(3, "released", true, true),
            entry(2, "failed", false, false),
            entry(1, "released", false, false)
        ]
    );
}

#[tokio::test]
async fn a_release_past_its_deadline_fails_and_nothing_runs() {
    let app = TestApp::with_cluster().await;
    let shop = shop(
        &app,
        json!({"name": "shop", "image": "nginx:1.27", "port": 80, "release_command": ["./migrate"]}),
    )
    .await;
    // No node runs its pod: the Job passes its deadline.
    let message = until_reason(&app, &shop, "ReleaseFailed").await;
    assert!(
        message.contains(&format!(
            "past its deadline of {RELEASE_DEADLINE_SECONDS} s"
        )),
        "{message}"
    );
    assert!(message.contains("nothing runs yet"), "{message}");
    assert_eq!(deployment_image(&app, &shop).await, None);
    assert_eq!(
        history(&app, &shop).await,
        [entry(1, "failed", true, false)]
    );
    assert_eq!(running_revision(&app, &shop).await, None);
}

#[tokio::test]
async fn a_rollout_that_never_becomes_available_is_rolled_back() {
    let app = TestApp::with_cluster().await;
    let shop = available_shop(
        &app,
        json!({"name": "shop", "image": "nginx:1.27", "port": 80}),
    )
    .await;

    // Revision 2's pods never become ready (no kubelet plays them): its
    // rollout passes its deadline while revision 1's pod keeps serving.
    patch(&app, &shop.shop, json!({"image": "nginx:1.28"})).await;
    eventually("revision 3 rolls revision 2 back", || async {
        get(&app, &shop.shop).await["app"]["revision"] == 3
    })
    .await;
    let message = until_reason(&app, &shop, "Available").await;
    assert!(
        message.starts_with("automatic: revision 2 did not become available"),
        "{message}"
    );
    assert!(message.ends_with("rolled back to revision 1"), "{message}");
    let uid = app_uid(&app, &shop).await;
    let rolled_back = event(&app.cluster().client, &shop.namespace, &uid, "RolledBack").await;
    assert!(note(&rolled_back).contains("revision 1"), "{rolled_back:?}");
    assert_eq!(
        deployment_image(&app, &shop).await.as_deref(),
        Some("nginx:1.27")
    );
    let releases = get(&app, &format!("{}/releases", shop.shop)).await;
    assert_eq!(releases[0]["reason"], "rollback");
    assert_eq!(releases[0]["image"], "nginx:1.27");
    assert_eq!(releases[0]["actor"], Value::Null);
    assert!(
        releases[0]["note"]
            .as_str()
            .unwrap()
            .starts_with("automatic:")
    );
    assert_eq!(
        history(&app, &shop).await,
        [
            entry(3, "released", true, true),
            entry(2, "rolled_back", false, false),
            entry(1, "released", false, false)
        ]
    );
    assert_eq!(running_revision(&app, &shop).await, Some(3));

    // The next change commits after it, like any other.
    let changed = patch(&app, &shop.shop, json!({"replicas": 2})).await;
    assert_eq!(changed["revision"], 4);
    let releases = get(&app, &format!("{}/releases", shop.shop)).await;
    assert_eq!(releases[1]["reason"], "rollback");
    assert_eq!(releases[1]["revision"], 3);
    assert_eq!(releases[2]["image"], "nginx:1.28");
}

#[tokio::test]
async fn without_auto_rollback_a_failed_rollout_stays_failed() {
    let app = TestApp::with_cluster().await;
    let shop = available_shop(
        &app,
        json!({"name": "shop", "image": "nginx:1.27", "port": 80, "auto_rollback": false}),
    )
    .await;
    patch(&app, &shop.shop, json!({"image": "nginx:1.28"})).await;
    until_reason(&app, &shop, "RolloutFailed").await;
    assert_eq!(get(&app, &shop.shop).await["app"]["revision"], 2);
    // Revision 2's configuration is the one applied (its Deployment's),
    // though its new pods never became ready.
    assert_eq!(
        history(&app, &shop).await,
        [
            entry(2, "failed", true, true),
            entry(1, "released", false, false)
        ]
    );
    assert_eq!(running_revision(&app, &shop).await, Some(2));
    // Its old pod still serves (maxUnavailable 0): the new one came first.
    let deployment = Api::<Deployment>::namespaced(app.cluster().client.clone(), &shop.namespace)
        .get("shop-web")
        .await
        .expect("the Deployment");
    assert_eq!(
        deployment
            .status
            .and_then(|status| status.available_replicas),
        Some(1)
    );
    // Once its pods run, it is released after all.
    let _kubelet = keep_pods_running(app.cluster().client.clone(), vec![shop.namespace.clone()]);
    eventually("revision 2 is released", || async {
        history(&app, &shop).await.first() == Some(&entry(2, "released", true, true))
    })
    .await;
}

/// `released` means seen available: on a cluster where no pod ever becomes
/// ready, a revision replaced by a rollback before its rollout ended is
/// `superseded`, before and after the replacement runs — never `released`.
#[tokio::test]
async fn a_revision_replaced_before_it_became_available_is_superseded() {
    let app = TestApp::with_cluster().await;
    // No kubelet plays its pods: nothing ever becomes ready.
    let shop = shop(
        &app,
        json!({"name": "shop", "image": "nginx:1.27", "port": 80}),
    )
    .await;
    eventually("revision 1 rolls out", || async {
        running_revision(&app, &shop).await == Some(1)
    })
    .await;
    patch(&app, &shop.shop, json!({"image": "nginx:1.28"})).await;
    eventually("revision 2 rolls out", || async {
        running_revision(&app, &shop).await == Some(2)
    })
    .await;
    let seen = history(&app, &shop).await;
    assert_eq!(seen[0], entry(2, "pending", true, true));
    // Replaced before it was seen available (or failed first, should its
    // progress deadline have passed before the change).
    assert!(
        seen[1] == entry(1, "superseded", false, false)
            || seen[1] == entry(1, "failed", false, false),
        "{seen:?}"
    );

    // Rolled back before revision 2's rollout ended (its progress deadline).
    let answer = app
        .post(&format!("{}/rollback", shop.shop))
        .by(&app.owner)
        .json(json!({"revision": 1}))
        .send()
        .await;
    answer.assert_status(200);
    assert_eq!(answer.json()["revision"], 3);
    let replaced = |history: &[(i64, String, bool, bool)]| {
        history
            .iter()
            .filter(|entry| entry.0 < 3)
            .all(|entry| entry.1 != "released")
    };
    eventually("revision 3 rolls out", || async {
        let seen = history(&app, &shop).await;
        assert!(replaced(&seen), "{seen:?}");
        running_revision(&app, &shop).await == Some(3)
    })
    .await;
    let seen = history(&app, &shop).await;
    assert_eq!(seen[0], entry(3, "pending", true, true));
    assert_eq!(seen[1], entry(2, "superseded", false, false));
    // Its own rollout fails in turn (nothing became available to roll back
    // to); the replaced revision stays superseded.
    until_reason(&app, &shop, "RolloutFailed").await;
    let seen = history(&app, &shop).await;
    assert_eq!(seen[0], entry(3, "failed", true, true));
    assert_eq!(seen[1], entry(2, "superseded", false, false));
    assert!(replaced(&seen), "{seen:?}");
}
