//! An app from source through the API, from its first build to a promotion:
//! nothing runs until a build succeeds; each build that succeeds becomes a
//! revision whose image is pinned by digest; a rollback and a promotion
//! reuse that image and never build; a failed build leaves the app running
//! what it ran. The tests play the kubelet for the build pods and the
//! app's (`support::kubelet`), so they pass on a real cluster too.

use kube::ResourceExt;
use kube::api::Api;
use serde_json::{Value, json};

use berth_cluster::crd::{App, BUILDS_NAMESPACE, Build, LABEL_APP_UID, LABEL_BUILD};

use crate::builds_running::{PREFIX, set_registry};
use crate::support::kubelet::{BuildEnd, end_build_pods, keep_pods_running};
use crate::support::{TestApp, eventually};

const FIRST_COMMIT: &str = "1111111111111111111111111111111111111111";
const SECOND_COMMIT: &str = "2222222222222222222222222222222222222222";

fn digest(fill: char) -> String {
    format!("sha256:{}", fill.to_string().repeat(64))
}

async fn get(test: &TestApp, path: &str) -> Value {
    let answer = test.get(path).by(&test.owner).send().await;
    answer.assert_status(200);
    answer.json()
}

async fn post(test: &TestApp, path: &str, body: Value, status: u16) -> Value {
    let answer = test.post(path).by(&test.owner).json(body).send().await;
    answer.assert_status(status);
    answer.json()
}

/// The app `shop` of `namespace`'s uid, which its builds are labelled with.
async fn app_uid(test: &TestApp, namespace: &str) -> String {
    Api::<App>::namespaced(test.cluster().client.clone(), namespace)
        .get("shop")
        .await
        .expect("the App")
        .uid()
        .expect("a uid")
}

/// Ends build `number`'s pod as `end` says, once its Job has made one.
async fn end_build(test: &TestApp, uid: &str, number: i64, end: BuildEnd<'_>) {
    let selector = format!("{LABEL_APP_UID}={uid},{LABEL_BUILD}={number}");
    let client = test.cluster().client.clone();
    eventually(&format!("build {number}'s pod ends"), || async {
        end_build_pods(&client, BUILDS_NAMESPACE, &selector, &end).await > 0
    })
    .await;
}

/// Waits until the API says build `number` of `shop` is `status`.
async fn until_build(test: &TestApp, shop: &str, number: i64, status: &str) -> Value {
    let path = format!("{shop}/builds/{number}");
    eventually(&format!("build {number} is {status}"), || async {
        get(test, &path).await["status"] == status
    })
    .await;
    get(test, &path).await
}

async fn until_reason(test: &TestApp, shop: &str, reason: &str) -> Value {
    eventually(&format!("the app is {reason}"), || async {
        get(test, shop).await["app"]["reason"] == reason
    })
    .await;
    get(test, shop).await["app"].clone()
}

async fn releases(test: &TestApp, shop: &str) -> Vec<Value> {
    get(test, &format!("{shop}/releases"))
        .await
        .as_array()
        .cloned()
        .expect("a list of releases")
}

#[tokio::test]
async fn an_app_from_source_runs_its_builds_and_rolls_back_and_promotes_without_building() {
    let test = TestApp::with_cluster().await;
    let client = test.cluster().client.clone();
    // Before the environments, so their namespaces get the pull credential.
    set_registry(&client).await;
    let project = test.ready_environment("source", "staging").await;
    test.create_environment(&project, json!({"name": "prod", "env_type": "production"}))
        .await;
    test.wait_for_environment(&project, "prod").await;
    let staging = format!("{project}-staging");
    let _kubelet = keep_pods_running(
        client.clone(),
        vec![staging.clone(), format!("{project}-prod")],
    );
    let apps = format!("/api/v1/projects/{project}/environments/staging/apps");
    let shop = format!("{apps}/shop");
    test.create_app(
        &apps,
        json!({"name": "shop", "git_repo": "https://git.berth.test/acme/shop.git", "git_ref": "main", "port": 8080}),
    )
    .await;

    // Nothing runs until the first build succeeds.
    let awaiting = until_reason(&test, &shop, "AwaitingBuild").await;
    assert_eq!(awaiting["image"], Value::Null);
    assert_eq!(awaiting["git_repo"], "https://git.berth.test/acme/shop.git");
    let uid = app_uid(&test, &staging).await;
    until_build(&test, &shop, 1, "running").await;

    // Build 1 pushes: the app's revision 2 runs the image pinned by digest.
    end_build(
        &test,
        &uid,
        1,
        BuildEnd::Pushed {
            commit: FIRST_COMMIT,
            strategy: "dockerfile",
            digest: &digest('a'),
        },
    )
    .await;
    let first = until_build(&test, &shop, 1, "succeeded").await;
    let first_image = format!("{PREFIX}/{}/{project}/shop@{}", test.owner.org, digest('a'));
    assert_eq!(
        (
            &first["commit"],
            &first["image"],
            &first["strategy"],
            &first["revision"]
        ),
        (
            &json!(FIRST_COMMIT),
            &json!(first_image),
            &json!("dockerfile"),
            &json!(2)
        )
    );
    assert!(first["finished_at"].as_i64().is_some());
    let running = until_reason(&test, &shop, "Available").await;
    assert_eq!(running["image"], first_image.as_str());
    let history = releases(&test, &shop).await;
    assert_eq!(
        (
            &history[0]["revision"],
            &history[0]["reason"],
            &history[0]["note"],
            &history[0]["image"]
        ),
        (
            &json!(2),
            &json!("deploy"),
            &json!("build 1 of 111111111111"),
            &json!(first_image)
        )
    );
    assert_eq!(history[0]["actor"], test.owner.email.as_str());

    // Build 2, of a ref asked for, becomes revision 3.
    let second = post(
        &test,
        &format!("{shop}/builds"),
        json!({"ref": SECOND_COMMIT}),
        202,
    )
    .await;
    assert_eq!(
        (&second["id"], &second["ref"]),
        (&json!(2), &json!(SECOND_COMMIT))
    );
    end_build(
        &test,
        &uid,
        2,
        BuildEnd::Pushed {
            commit: SECOND_COMMIT,
            strategy: "buildpacks",
            digest: &digest('b'),
        },
    )
    .await;
    let second = until_build(&test, &shop, 2, "succeeded").await;
    let second_image = format!("{PREFIX}/{}/{project}/shop@{}", test.owner.org, digest('b'));
    assert_eq!(
        (&second["image"], &second["revision"]),
        (&json!(second_image), &json!(3))
    );
    eventually("the app runs build 2", || async {
        get(&test, &shop).await["app"]["image"] == second_image.as_str()
    })
    .await;

    // Two revisions the controller wrote in a row: the history has both
    // (the one written over is kept in the App until the API records it).
    let numbers = |history: Vec<Value>| -> Vec<i64> {
        history
            .iter()
            .filter_map(|r| r["revision"].as_i64())
            .collect()
    };
    assert_eq!(numbers(releases(&test, &shop).await), [3, 2, 1]);

    // A rollback to revision 2 runs build 1's image again, building nothing.
    let rolled = post(
        &test,
        &format!("{shop}/rollback"),
        json!({"revision": 2}),
        200,
    )
    .await;
    assert_eq!(
        (&rolled["revision"], &rolled["image"]),
        (&json!(4), &json!(first_image))
    );
    assert_eq!(numbers(releases(&test, &shop).await), [4, 3, 2, 1]);
    let recorded = Api::<App>::namespaced(client.clone(), &staging)
        .get("shop")
        .await
        .expect("the App");
    assert!(
        recorded.spec.unrecorded.is_empty(),
        "the rollback recorded them"
    );
    let builds = get(&test, &format!("{shop}/builds")).await;
    assert_eq!(
        builds["builds"].as_array().map(Vec::len),
        Some(2),
        "{builds}"
    );

    // Promoting it copies the pinned image; nothing is built for prod.
    let promoted = post(
        &test,
        &format!("{shop}/promote"),
        json!({"environment": "prod"}),
        200,
    )
    .await;
    assert_eq!(promoted["image"], first_image.as_str());
    let prod_shop = format!("/api/v1/projects/{project}/environments/prod/apps/shop");
    until_reason(&test, &prod_shop, "Available").await;
    let prod_builds = get(&test, &format!("{prod_shop}/builds")).await;
    assert_eq!(prod_builds["builds"], json!([]));
    let prod_uid = app_uid(&test, &format!("{project}-prod")).await;
    let all_builds = Api::<Build>::namespaced(client.clone(), BUILDS_NAMESPACE)
        .list(&kube::api::ListParams::default().labels(&format!("{LABEL_APP_UID}={prod_uid}")))
        .await
        .expect("listing Builds");
    assert!(all_builds.items.is_empty());

    // A failed build says why and leaves revision 4 running.
    post(&test, &format!("{shop}/builds"), json!({}), 202).await;
    end_build(
        &test,
        &uid,
        3,
        BuildEnd::Failed {
            step: "dockerfile",
            message: "ERROR: failed to solve: no such file: app.py",
        },
    )
    .await;
    let failed = until_build(&test, &shop, 3, "failed").await;
    let message = failed["message"].as_str().unwrap_or_default();
    assert!(message.contains("no such file: app.py"), "{message}");
    assert_eq!(
        (&failed["image"], &failed["revision"]),
        (&Value::Null, &Value::Null)
    );
    let app = get(&test, &shop).await["app"].clone();
    assert_eq!(
        (&app["revision"], &app["image"]),
        (&json!(4), &json!(first_image))
    );
    assert_eq!(releases(&test, &shop).await.len(), 4);
}
