//! Apps from source through the API: the source fields of an app, the
//! Build resources the API makes in `berth-builds` (read back with the
//! administrator's client), and the build operations: who may call them,
//! what they refuse, and what they show. Running a build is the
//! controller's (its tests play the kubelet for build pods); here a Build's
//! status is whatever the controller says, so only its spec is asserted.

use berth_kube_standin::LogKey;
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use crate::support::{TestApp, TestUser};
use berth_cluster::crd::{
    App, BUILDS_NAMESPACE, Build, LABEL_APP, LABEL_APP_UID, LABEL_BUILD, LABEL_ENVIRONMENT,
    LABEL_MANAGED_BY, LABEL_ORG, LABEL_PROJECT, MANAGER,
};
use berth_domain::Role;

const REPO: &str = "https://github.com/acme/shop.git";
const STATUSES: [&str; 5] = ["queued", "running", "succeeded", "failed", "cancelled"];

/// A provisioned environment's apps path, and its namespace.
async fn environment(app: &TestApp) -> (String, String) {
    let project = app.ready_environment("src", "dev").await;
    (
        format!("/api/v1/projects/{project}/environments/dev/apps"),
        format!("{project}-dev"),
    )
}

async fn builds_of(app: &TestApp, namespace: &str, name: &str) -> Vec<Build> {
    let apps: Api<App> = Api::namespaced(app.cluster().client.clone(), namespace);
    let uid = apps.get(name).await.expect("the App").uid().expect("a uid");
    let builds: Api<Build> = Api::namespaced(app.cluster().client.clone(), BUILDS_NAMESPACE);
    let mut found = builds
        .list(&ListParams::default().labels(&format!("{LABEL_APP_UID}={uid}")))
        .await
        .expect("listing Builds")
        .items;
    found.sort_by_key(|build| build.spec.number);
    found
}

async fn create_build(app: &TestApp, user: &TestUser, shop: &str, body: Option<Value>) -> Value {
    let mut request = app.post(&format!("{shop}/builds")).by(user);
    if let Some(body) = body {
        request = request.json(body);
    }
    let answer = request.send().await;
    answer.assert_status(202);
    let build = answer.json();
    let location = answer
        .headers
        .get("location")
        .and_then(|value| value.to_str().ok())
        .expect("a Location");
    assert_eq!(location, format!("{shop}/builds/{}", build["id"]));
    build
}

/// An image app `shop` with a source, and its build 1 (asked by the
/// owner): its environment's apps path, namespace and the app's path.
async fn shop_with_a_build(app: &TestApp) -> (String, String, String) {
    let (apps, namespace) = environment(app).await;
    app.create_app(
        &apps,
        json!({"name": "shop", "image": "nginx", "git_repo": REPO}),
    )
    .await;
    let shop = format!("{apps}/shop");
    create_build(app, &app.owner, &shop, None).await;
    (apps, namespace, shop)
}

#[tokio::test]
async fn an_app_from_source_shows_it_and_queues_build_one() {
    let app = TestApp::with_cluster().await;
    let (apps, namespace) = environment(&app).await;
    let answer = app
        .post(&apps)
        .by(&app.owner)
        .json(json!({
            "name": "shop", "git_repo": REPO, "git_ref": "main", "port": 8080,
            "build": {"strategy": "dockerfile", "context_dir": "web", "dockerfile": "Dockerfile.prod"}
        }))
        .send()
        .await;
    answer.assert_status(201);
    let record = answer.json();
    assert_eq!(record["image"], Value::Null);
    assert_eq!(record["git_repo"], REPO);
    assert_eq!(record["git_ref"], "main");
    assert_eq!(
        record["build"],
        json!({"strategy": "dockerfile", "context_dir": "web", "dockerfile": "Dockerfile.prod"})
    );
    assert_eq!(record["git_secret"], Value::Null);
    assert_eq!(record["reason"], "AwaitingBuild");

    let builds = builds_of(&app, &namespace, "shop").await;
    assert_eq!(builds.len(), 1, "build 1 is queued with the app");
    let build = &builds[0];
    assert_eq!(build.name_any(), format!("{namespace}.shop.1"));
    assert_eq!(build.spec.number, 1);
    assert_eq!(build.spec.app, "shop");
    assert_eq!(build.spec.namespace, namespace);
    assert_eq!(build.spec.source.git_repo, REPO);
    assert_eq!(build.spec.source.git_ref.as_deref(), Some("main"));
    assert_eq!(build.spec.source.build.context_dir.as_deref(), Some("web"));
    assert_eq!(build.spec.actor.as_deref(), Some(app.owner.email.as_str()));
    let labels = build.labels();
    let project = apps.split('/').nth(4).unwrap();
    for (key, value) in [
        (LABEL_MANAGED_BY, MANAGER),
        (LABEL_ORG, app.owner.org.as_str()),
        (LABEL_PROJECT, project),
        (LABEL_ENVIRONMENT, "dev"),
        (LABEL_APP, "shop"),
        (LABEL_APP_UID, build.spec.app_uid.as_str()),
    ] {
        assert_eq!(labels.get(key).map(String::as_str), Some(value), "{key}");
    }

    // The API shows it as its record.
    let shop = format!("{apps}/shop");
    let listed = app
        .get(&format!("{shop}/builds"))
        .by(&app.owner)
        .send()
        .await;
    listed.assert_status(200);
    let page = listed.json();
    assert_eq!(page["next_before"], Value::Null);
    let shown = &page["builds"][0];
    assert_eq!(shown["id"], 1);
    assert_eq!(shown["ref"], "main");
    assert_eq!(shown["actor"], app.owner.email.as_str());
    assert!(shown["created_at"].as_i64().is_some_and(|at| at > 0));
    assert!(STATUSES.contains(&shown["status"].as_str().unwrap()));
    let one = app
        .get(&format!("{shop}/builds/1"))
        .by(&app.owner)
        .send()
        .await;
    one.assert_status(200);
    assert_eq!(one.json()["id"], 1);
    assert_eq!(one.json()["ref"], "main");

    let event = app.last_audit_event(&app.owner.org).await;
    assert_eq!(event.action, "getBuild");
}

#[tokio::test]
async fn create_build_builds_the_apps_ref_or_the_one_asked() {
    let app = TestApp::with_cluster().await;
    let (apps, namespace) = environment(&app).await;
    // With an image, nothing is built until asked.
    app.create_app(
        &apps,
        json!({"name": "shop", "image": "nginx:1.27", "git_repo": REPO, "git_ref": "main"}),
    )
    .await;
    let shop = format!("{apps}/shop");
    assert!(builds_of(&app, &namespace, "shop").await.is_empty());

    let first = create_build(&app, &app.owner, &shop, None).await;
    assert_eq!(first["id"], 1);
    assert_eq!(first["ref"], "main");
    assert_eq!(first["strategy"], "auto");
    assert_eq!(first["image"], Value::Null);
    let event = app.last_audit_event(&app.owner.org).await;
    assert_eq!(event.action, "createBuild");
    assert_eq!(event.outcome, berth_records::audit::Outcome::Success);
    assert_eq!(event.target.as_deref(), Some("shop/1"));

    let second = create_build(&app, &app.owner, &shop, Some(json!({"ref": "v1.2.3"}))).await;
    assert_eq!(second["id"], 2);
    assert_eq!(second["ref"], "v1.2.3");
    let builds = builds_of(&app, &namespace, "shop").await;
    assert_eq!(builds.len(), 2);
    assert_eq!(builds[1].spec.source.git_ref.as_deref(), Some("v1.2.3"));
    assert_eq!(
        builds[1].spec.source.git_repo, REPO,
        "the rest of the source is the app's"
    );

    // A bad ref, or an unknown field: refused, nothing made.
    for body in [
        json!({"ref": "a..b"}),
        json!({"ref": "-x"}),
        json!({"ref": ""}),
    ] {
        app.post(&format!("{shop}/builds"))
            .by(&app.owner)
            .json(body)
            .send()
            .await
            .assert_problem(422, "validation_failed");
    }
    app.post(&format!("{shop}/builds"))
        .by(&app.owner)
        .json(json!({"branch": "main"}))
        .send()
        .await
        .assert_status(400);
    assert_eq!(builds_of(&app, &namespace, "shop").await.len(), 2);

    // An app with no source has nothing to build.
    app.create_app(&apps, json!({"name": "plain", "image": "nginx"}))
        .await;
    let answer = app
        .post(&format!("{apps}/plain/builds"))
        .by(&app.owner)
        .send()
        .await;
    answer.assert_problem(409, "conflict");
    assert!(
        answer.json()["detail"]
            .as_str()
            .unwrap()
            .contains("git_repo")
    );
}

#[tokio::test]
async fn builds_are_listed_newest_first_a_page_at_a_time() {
    let app = TestApp::with_cluster().await;
    let (_, _, shop) = shop_with_a_build(&app).await;
    for _ in 0..4 {
        create_build(&app, &app.owner, &shop, None).await;
    }
    let page = async |query: &str| {
        let answer = app
            .get(&format!("{shop}/builds?{query}"))
            .by(&app.owner)
            .send()
            .await;
        answer.assert_status(200);
        let page = answer.json();
        let ids: Vec<i64> = page["builds"]
            .as_array()
            .unwrap()
            .iter()
            .map(|build| build["id"].as_i64().unwrap())
            .collect();
        (ids, page["next_before"].as_i64())
    };
    assert_eq!(page("").await, (vec![5, 4, 3, 2, 1], None));
    assert_eq!(page("limit=2").await, (vec![5, 4], Some(4)));
    assert_eq!(page("limit=2&before=4").await, (vec![3, 2], Some(2)));
    assert_eq!(page("limit=2&before=2").await, (vec![1], None));
    for query in ["limit=0", "limit=51", "before=0", "limit=x", "page=2"] {
        app.get(&format!("{shop}/builds?{query}"))
            .by(&app.owner)
            .send()
            .await
            .assert_status(400);
    }
}

/// Another organization's app, an unknown build and a build of another
/// App of the same name all read as not found, alike.
#[tokio::test]
async fn builds_are_the_apps_own() {
    let app = TestApp::with_cluster().await;
    let (apps, namespace, shop) = shop_with_a_build(&app).await;

    let stranger = app.other_org(&crate::support::unique("rival")).await;
    let missing_app = app
        .get(&format!("{apps}/nothing/builds/1"))
        .by(&stranger)
        .send()
        .await;
    for (method, path) in [
        (http::Method::GET, format!("{shop}/builds")),
        (http::Method::GET, format!("{shop}/builds/1")),
        (http::Method::GET, format!("{shop}/builds/1/logs")),
        (http::Method::POST, format!("{shop}/builds")),
    ] {
        let answer = app
            .request(method.clone(), &path)
            .by(&stranger)
            .send()
            .await;
        answer.assert_status(404);
        assert_eq!(
            answer.json()["code"],
            missing_app.json()["code"],
            "{method} {path}"
        );
    }
    for unknown in ["2", "999", "0", "-1", "latest"] {
        let answer = app
            .get(&format!("{shop}/builds/{unknown}"))
            .by(&app.owner)
            .send()
            .await;
        answer.assert_status(404);
        app.get(&format!("{shop}/builds/{unknown}/logs"))
            .by(&app.owner)
            .send()
            .await
            .assert_status(404);
    }
    assert_eq!(builds_of(&app, &namespace, "shop").await.len(), 1);

    // An app made again under the same name has none of the old one's builds.
    app.request(http::Method::DELETE, &shop)
        .by(&app.owner)
        .send()
        .await
        .assert_status(204);
    app.create_app(
        &apps,
        json!({"name": "shop", "image": "nginx", "git_repo": REPO}),
    )
    .await;
    let listed = app
        .get(&format!("{shop}/builds"))
        .by(&app.owner)
        .send()
        .await;
    assert_eq!(listed.json()["builds"], json!([]));
    app.get(&format!("{shop}/builds/1"))
        .by(&app.owner)
        .send()
        .await
        .assert_status(404);
}

/// Building is `app-deploy`; reading builds is what reading logs is.
#[tokio::test]
async fn who_may_build_and_read_builds() {
    let app = TestApp::with_cluster().await;
    let (_, namespace, shop) = shop_with_a_build(&app).await;
    // A `member` without project roles reaches no project at all
    // (`project_roles`).
    let roles = Role::ALL.into_iter().filter(|role| *role != Role::Member);
    for role in roles.clone() {
        let user = app.user(role).await;
        let may_build = role.grants(berth_domain::Permission::AppDeploy);
        let answer = app.post(&format!("{shop}/builds")).by(&user).send().await;
        if may_build {
            answer.assert_status(202);
        } else {
            answer.assert_problem(403, "forbidden");
        }
        for path in [
            format!("{shop}/builds"),
            format!("{shop}/builds/1"),
            format!("{shop}/builds/1/logs"),
        ] {
            app.get(&path).by(&user).send().await.assert_status(200);
        }
        // Changing the source is a deploy too.
        let changed = app
            .request(http::Method::PATCH, &shop)
            .by(&user)
            .json(json!({"git_ref": format!("{}-branch", role.as_str())}))
            .send()
            .await;
        if may_build {
            changed.assert_status(200);
        } else {
            changed.assert_status(403);
        }
    }
    let deployers = roles
        .filter(|role| role.grants(berth_domain::Permission::AppDeploy))
        .count();
    assert_eq!(
        builds_of(&app, &namespace, "shop").await.len(),
        1 + deployers
    );
}

/// Every bad source is 422 with the field named, and nothing is made or
/// changed.
#[tokio::test]
async fn bad_sources_are_refused_and_change_nothing() {
    let app = TestApp::with_cluster().await;
    let (apps, namespace) = environment(&app).await;
    for (body, field) in [
        (
            json!({"name": "bad", "git_repo": "http://github.com/acme/shop"}),
            "git_repo",
        ),
        (
            json!({"name": "bad", "git_repo": "https://me:ghp_x@github.com/acme/shop"}),
            "git_repo",
        ),
        (
            json!({"name": "bad", "git_repo": REPO, "build": {"context_dir": "../etc"}}),
            "build.context_dir",
        ),
        (
            json!({"name": "bad", "git_repo": REPO, "git_ref": "main..x"}),
            "git_ref",
        ),
        (json!({"name": "bad", "port": 80}), "image"),
        (
            json!({"name": "bad", "git_repo": REPO, "git_secret": "nowhere"}),
            "git_secret",
        ),
    ] {
        let answer = app
            .post(&apps)
            .by(&app.owner)
            .json(body.clone())
            .send()
            .await;
        answer.assert_problem(422, "validation_failed");
        let detail = answer.json()["detail"].as_str().unwrap().to_owned();
        assert!(detail.starts_with(&format!("{field}:")), "{body}: {detail}");
        assert!(!detail.contains("ghp_x"), "a refused URL is not echoed");
    }
    app.get(&format!("{apps}/bad"))
        .by(&app.owner)
        .send()
        .await
        .assert_status(404);
    let builds: Api<Build> = Api::namespaced(app.cluster().client.clone(), BUILDS_NAMESPACE);
    let made = builds
        .list(&ListParams::default().labels(&format!("{LABEL_APP}=bad")))
        .await
        .unwrap()
        .items;
    assert!(
        made.iter().all(|build| build.spec.namespace != namespace),
        "no build was queued"
    );

    // An update: refused whole, the app as it was.
    app.create_app(&apps, json!({"name": "shop", "git_repo": REPO}))
        .await;
    let shop = format!("{apps}/shop");
    let before = app.get(&shop).by(&app.owner).send().await.json()["app"].clone();
    for body in [
        json!({"git_repo": null}),
        json!({"git_ref": "a b"}),
        json!({"build": {"dockerfile": "/Dockerfile"}}),
        json!({"git_secret": "nowhere"}),
    ] {
        app.request(http::Method::PATCH, &shop)
            .by(&app.owner)
            .json(body)
            .send()
            .await
            .assert_problem(422, "validation_failed");
    }
    let after = app.get(&shop).by(&app.owner).send().await.json()["app"].clone();
    assert_eq!(after["revision"], before["revision"]);
    assert_eq!(after["git_repo"], REPO);
}

/// A revision without an image is not rolled back to over a running one,
/// an unbuilt app is not promoted, and a source is removed only from an
/// app that has an image.
#[tokio::test]
async fn what_an_app_without_an_image_cannot_do() {
    let app = TestApp::with_cluster().await;
    let project = app.ready_environment("src", "dev").await;
    app.create_environment(&project, json!({"name": "prod"}))
        .await;
    let apps = format!("/api/v1/projects/{project}/environments/dev/apps");
    app.create_app(&apps, json!({"name": "shop", "git_repo": REPO}))
        .await;
    let shop = format!("{apps}/shop");
    let promoted = app
        .post(&format!("{shop}/promote"))
        .by(&app.owner)
        .json(json!({"environment": "prod"}))
        .send()
        .await;
    promoted.assert_problem(409, "conflict");
    assert!(
        promoted.json()["detail"]
            .as_str()
            .unwrap()
            .contains("no image")
    );

    // Given an image by hand (as a build would), revision 2.
    let updated = app
        .request(http::Method::PATCH, &shop)
        .by(&app.owner)
        .json(json!({"image": "nginx:1.27"}))
        .send()
        .await;
    updated.assert_status(200);
    assert_eq!(updated.json()["revision"], 2);
    let rolled = app
        .post(&format!("{shop}/rollback"))
        .by(&app.owner)
        .json(json!({"revision": 1}))
        .send()
        .await;
    rolled.assert_problem(409, "conflict");
    assert!(
        rolled.json()["detail"]
            .as_str()
            .unwrap()
            .contains("would stop the app")
    );
    let now = app.get(&shop).by(&app.owner).send().await.json()["app"].clone();
    assert_eq!(now["revision"], 2);
    assert_eq!(now["image"], "nginx:1.27");

    // With an image, the source may go: an image app again.
    let unsourced = app
        .request(http::Method::PATCH, &shop)
        .by(&app.owner)
        .json(json!({"git_repo": null}))
        .send()
        .await;
    unsourced.assert_status(200);
    let record = unsourced.json();
    assert_eq!(record["git_repo"], Value::Null);
    assert_eq!(record["build"], Value::Null);
    assert_eq!(record["revision"], 3);
    let releases = app
        .get(&format!("{shop}/releases"))
        .by(&app.owner)
        .send()
        .await
        .json();
    assert_eq!(releases[0]["reason"], "deploy", "a source change deploys");
}

/// A build pod's steps, in the order they run, as the stand-in serves
/// their logs (the knob getAppLogs' tests use). Needs the stand-in's log
/// knob.
#[tokio::test]
#[cfg_attr(berth_real_cluster, ignore = "needs the stand-in's log knob")]
async fn build_logs_are_the_build_pods_steps_in_order() {
    let app = TestApp::with_cluster().await;
    let (_, namespace, shop) = shop_with_a_build(&app).await;
    let logs = async |query: &str| {
        let answer = app
            .get(&format!("{shop}/builds/1/logs{query}"))
            .by(&app.owner)
            .send()
            .await;
        answer.assert_status(200);
        answer.json().as_array().cloned().unwrap()
    };
    let uid = builds_of(&app, &namespace, "shop").await[0]
        .spec
        .app_uid
        .clone();
    // Until the controller made its pod, a build has no output (a pod the
    // controller made meanwhile is not scheduled: no node runs it).
    let no_node = logs("").await;
    assert!(no_node.iter().all(|entry| entry["lines"] == json!([])));

    let pod_name = crate::support::unique("build-pod");
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {
            "name": pod_name,
            "labels": {LABEL_APP_UID: uid, LABEL_BUILD: "1", LABEL_APP: "shop"},
        },
        "spec": {
            "nodeName": "node-1",
            "initContainers": [{"name": "clone", "image": "git"}, {"name": "build", "image": "buildkit"}],
            "containers": [{"name": "result", "image": "busybox"}],
        },
    }))
    .unwrap();
    let pods: Api<Pod> = Api::namespaced(app.cluster().client.clone(), BUILDS_NAMESPACE);
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let standin = app.standin();
    standin.set_pod_logs(
        LogKey::new(BUILDS_NAMESPACE, &pod_name, "clone"),
        ["Cloning into '/workspace'...", "HEAD is now at 0123abc"],
    );
    standin.set_pod_logs(
        LogKey::new(BUILDS_NAMESPACE, &pod_name, "build"),
        [
            "#1 [internal] load build definition",
            "#2 DONE 0.1s",
            "pushed",
        ],
    );
    standin.set_pod_logs(
        LogKey::new(BUILDS_NAMESPACE, &pod_name, "result"),
        ["sha256:feed"],
    );
    let entries = logs("").await;
    let steps: Vec<&str> = entries
        .iter()
        .map(|entry| entry["container"].as_str().unwrap())
        .collect();
    assert_eq!(steps, ["clone", "build", "result"]);
    assert!(
        entries
            .iter()
            .all(|entry| entry["pod"] == pod_name.as_str())
    );
    assert_eq!(entries[1]["lines"][2], "pushed");
    let tailed = logs("?tail=1").await;
    assert_eq!(tailed[0]["lines"], json!(["HEAD is now at 0123abc"]));
    for query in ["?tail=0", "?tail=2001", "?previous=true"] {
        app.get(&format!("{shop}/builds/1/logs{query}"))
            .by(&app.owner)
            .send()
            .await
            .assert_status(400);
    }
    pods.delete(&pod_name, &Default::default()).await.unwrap();
}

/// 50 builds are kept per app: making the 51st deletes the oldest finished
/// one.
#[tokio::test]
async fn fifty_builds_are_kept() {
    let app = TestApp::with_cluster().await;
    let (_, namespace, shop) = shop_with_a_build(&app).await;
    for _ in 2..=50 {
        create_build(&app, &app.owner, &shop, None).await;
    }
    let builds: Api<Build> = Api::namespaced(app.cluster().client.clone(), BUILDS_NAMESPACE);
    let finish = async |number: i64| {
        // As the controller would end it.
        builds
            .patch_status(
                &format!("{namespace}.shop.{number}"),
                &PatchParams::default(),
                &Patch::Merge(json!({"status": {"phase": "failed", "message": "test"}})),
            )
            .await
            .expect("ending a build");
    };
    // All ended (that unfinished ones are never deleted for room is the
    // unit test's `keeps_fifty_deleting_the_oldest_finished`: here the
    // controller may end queued ones meanwhile).
    for number in 1..=50 {
        finish(number).await;
    }
    let newest = create_build(&app, &app.owner, &shop, None).await;
    assert_eq!(newest["id"], 51);
    let numbers: Vec<i64> = builds_of(&app, &namespace, "shop")
        .await
        .iter()
        .map(|build| build.spec.number)
        .collect();
    assert_eq!(numbers, (2..=51).collect::<Vec<i64>>());
}

/// A `git_secret` must exist with the key a build clones with (`token`),
/// only its name is shown, and a secret an app clones with is not deleted
/// from under it.
#[tokio::test]
async fn a_git_secret_is_checked_and_kept() {
    let app = TestApp::with_cluster().await;
    let (apps, _) = environment(&app).await;
    let env = apps.trim_end_matches("/apps").to_owned();
    let put = async |name: &str, data: Value| {
        app.request(http::Method::PUT, &format!("{env}/secrets/{name}"))
            .by(&app.owner)
            .json(json!({ "data": data }))
            .send()
            .await
            .assert_status(201);
    };
    put("no-token", json!({"password": "p"})).await;
    put("git-cred", json!({"token": "t0ken", "username": "bot"})).await;
    let refused = app
        .post(&apps)
        .by(&app.owner)
        .json(json!({"name": "shop", "git_repo": REPO, "git_secret": "no-token"}))
        .send()
        .await;
    refused.assert_problem(422, "validation_failed");
    assert!(
        refused.json()["detail"]
            .as_str()
            .unwrap()
            .contains("has no key token")
    );
    let created = app
        .post(&apps)
        .by(&app.owner)
        .json(json!({"name": "shop", "git_repo": REPO, "git_secret": "git-cred"}))
        .send()
        .await;
    created.assert_status(201);
    assert_eq!(created.json()["git_secret"], "git-cred");
    assert!(!created.text().contains("t0ken"));
    app.request(http::Method::DELETE, &format!("{env}/secrets/git-cred"))
        .by(&app.owner)
        .send()
        .await
        .assert_problem(409, "conflict");
}
