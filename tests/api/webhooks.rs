//! Per-app git webhooks: made and replaced by the app's team (the secret
//! shown once), called by GitHub (HMAC-SHA256 signature) and GitLab
//! (token); a signed push to the app's branch queues a Build of the pushed
//! commit, anything else is refused (401, the same whatever was wrong) or
//! ignored with the reason.

use http::Method;
use kube::Api;
use serde_json::{Value, json};

use berth_shared::audit::ActorKind;
use berth_shared::cluster::crd::{BUILDS_NAMESPACE, Build};
use berth_shared::webhooks::delivery::github_signature;

use crate::support::{TestApp, unique};

const COMMIT: &str = "9fceb02d0ae598e95dc970b74767f19372d61af8";
const OTHER_COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";
const REPO: &str = "https://github.com/acme/shop.git";

/// An app from source in a ready environment of a fresh project.
struct SourceApp {
    project: String,
    name: String,
    /// `/api/v1/projects/…/apps/{name}`.
    path: String,
}

async fn source_app(app: &TestApp, git_ref: Option<&str>) -> SourceApp {
    let project = app.ready_environment("hooks", "dev").await;
    let name = unique("shop");
    let apps = format!("/api/v1/projects/{project}/environments/dev/apps");
    let mut body = json!({ "name": name, "git_repo": REPO });
    if let Some(git_ref) = git_ref {
        body["git_ref"] = json!(git_ref);
    }
    app.create_app(&apps, body).await;
    SourceApp {
        path: format!("{apps}/{name}"),
        project,
        name,
    }
}

/// The app's hook: its receiver URL and secret.
async fn make_hook(app: &TestApp, source: &SourceApp) -> (String, String) {
    let made = app
        .post(&format!("{}/webhook", source.path))
        .by(&app.owner)
        .send()
        .await;
    made.assert_status(201);
    let body = made.json();
    let url = body["url"].as_str().expect("url").to_owned();
    let secret = body["secret"].as_str().expect("secret").to_owned();
    assert!(url.starts_with("/api/v1/hooks/"), "{url}");
    assert_eq!(secret.len(), 40);
    (url, secret)
}

fn push(git_ref: &str, after: &str) -> Vec<u8> {
    json!({
        "ref": git_ref,
        "before": OTHER_COMMIT,
        "after": after,
        "deleted": false,
        "repository": { "full_name": "acme/shop", "default_branch": "main" },
        "pusher": { "name": "someone" },
    })
    .to_string()
    .into_bytes()
}

/// A GitHub delivery of `body`, signed with `secret`.
async fn github(
    app: &TestApp,
    url: &str,
    secret: &str,
    event: &str,
    delivery: &str,
    body: Vec<u8>,
) -> crate::support::TestResponse {
    let signature = format!("sha256={}", github_signature(secret, &body));
    app.post(url)
        .header("content-type", "application/json")
        .header("x-github-event", event)
        .header("x-github-delivery", delivery)
        .header("x-hub-signature-256", &signature)
        .raw(body)
        .send()
        .await
}

/// The Builds of the app, in the cluster.
async fn builds_of(app: &TestApp, source: &SourceApp) -> Vec<Build> {
    let builds: Api<Build> = Api::namespaced(app.cluster().client.clone(), BUILDS_NAMESPACE);
    let mut found: Vec<Build> = builds
        .list(&Default::default())
        .await
        .expect("listing builds")
        .items
        .into_iter()
        .filter(|build| build.spec.project == source.project && build.spec.app == source.name)
        .collect();
    found.sort_by_key(|build| build.spec.number);
    found
}

fn assert_unauthenticated(response: &crate::support::TestResponse) {
    response.assert_problem(401, "unauthenticated");
}

#[tokio::test]
async fn a_signed_github_push_to_the_apps_branch_builds_the_commit() {
    let app = TestApp::with_cluster().await;
    let source = source_app(&app, Some("main")).await;
    let (url, secret) = make_hook(&app, &source).await;
    let before = builds_of(&app, &source).await.len();

    let answer = github(
        &app,
        &url,
        &secret,
        "push",
        &unique("d"),
        push("refs/heads/main", COMMIT),
    )
    .await;
    answer.assert_status(202);
    let build = answer.json();
    assert_eq!(build["ref"], COMMIT);
    assert_eq!(build["actor"], "webhook");
    assert_eq!(build["status"], "queued");
    let builds = builds_of(&app, &source).await;
    assert_eq!(builds.len(), before + 1);
    let newest = builds.last().expect("a build");
    assert_eq!(newest.spec.source.git_ref.as_deref(), Some(COMMIT));
    assert_eq!(newest.spec.source.git_repo, REPO);
    assert_eq!(newest.spec.actor.as_deref(), Some("webhook"));
    assert_eq!(build["id"], json!(newest.spec.number));

    // Audited in the app's organization, the sender as its actor, with
    // neither the secret nor the signature.
    let event = app.last_audit_event("acme").await;
    assert_eq!(event.action, "receiveWebhook");
    assert_eq!(event.status, Some(202));
    assert_eq!(event.actor_kind, ActorKind::Webhook);
    assert_eq!(event.actor.as_deref(), Some("github"));
    assert_eq!(event.target.as_deref(), Some(source.name.as_str()));
}

#[tokio::test]
async fn wrong_missing_and_unknown_credentials_are_the_same_401_and_build_nothing() {
    let app = TestApp::with_cluster().await;
    let source = source_app(&app, Some("main")).await;
    let (url, secret) = make_hook(&app, &source).await;
    let before = builds_of(&app, &source).await.len();
    let body = push("refs/heads/main", COMMIT);

    let wrong = github(
        &app,
        &url,
        "not the secret",
        "push",
        &unique("d"),
        body.clone(),
    )
    .await;
    let unsigned = app
        .post(&url)
        .header("content-type", "application/json")
        .header("x-github-event", "push")
        .raw(body.clone())
        .send()
        .await;
    let unknown = github(
        &app,
        "/api/v1/hooks/aaaaaaaaaaaa",
        &secret,
        "push",
        &unique("d"),
        body.clone(),
    )
    .await;
    let malformed = github(
        &app,
        "/api/v1/hooks/..%2Fx",
        &secret,
        "push",
        &unique("d"),
        body.clone(),
    )
    .await;
    let gitlab_wrong = app
        .post(&url)
        .header("content-type", "application/json")
        .header("x-gitlab-event", "Push Hook")
        .header("x-gitlab-token", "not the secret")
        .raw(body.clone())
        .send()
        .await;
    let mut problems = Vec::new();
    for answer in [&wrong, &unsigned, &unknown, &malformed, &gitlab_wrong] {
        assert_unauthenticated(answer);
        problems.push(answer.json());
    }
    // Word for word the same: nothing says which check failed.
    assert!(
        problems.windows(2).all(|pair| pair[0] == pair[1]),
        "{problems:?}"
    );
    assert_eq!(builds_of(&app, &source).await.len(), before);

    // A refused delivery to a known hook is in its organization's log, anonymous.
    let event = app.last_audit_event("acme").await;
    assert_eq!(event.action, "receiveWebhook");
    assert_eq!(
        (event.actor_kind, event.status),
        (ActorKind::Anonymous, Some(401))
    );
}

#[tokio::test]
async fn a_gitlab_token_is_accepted_and_a_wrong_one_refused() {
    let app = TestApp::with_cluster().await;
    let source = source_app(&app, None).await;
    let (url, secret) = make_hook(&app, &source).await;
    let before = builds_of(&app, &source).await.len();
    let gitlab = |token: String, event: &'static str, body: Value| {
        app.post(&url)
            .header("content-type", "application/json")
            .header("x-gitlab-event", event)
            .header("x-gitlab-event-uuid", &unique("uuid"))
            .header("x-gitlab-token", &token)
            .raw(body.to_string())
            .send()
    };
    let body = json!({
        "object_kind": "push", "ref": "refs/heads/main", "after": COMMIT,
        "checkout_sha": COMMIT, "project": { "default_branch": "main" },
    });
    assert_unauthenticated(&gitlab(format!("{secret}x"), "Push Hook", body.clone()).await);
    assert_eq!(builds_of(&app, &source).await.len(), before);

    // No git_ref: the repository's default branch, as the payload names it.
    let accepted = gitlab(secret.clone(), "Push Hook", body).await;
    accepted.assert_status(202);
    assert_eq!(accepted.json()["ref"], COMMIT);
    assert_eq!(builds_of(&app, &source).await.len(), before + 1);

    let tag = json!({
        "object_kind": "tag_push", "ref": "refs/tags/v1", "after": COMMIT,
        "project": { "default_branch": "main" },
    });
    let ignored = gitlab(secret.clone(), "Tag Push Hook", tag).await;
    ignored.assert_status(200);
    assert!(
        ignored.json()["ignored"]
            .as_str()
            .unwrap_or_default()
            .contains("tag")
    );
    assert_eq!(builds_of(&app, &source).await.len(), before + 1);
}

#[tokio::test]
async fn other_branches_tags_pings_and_replays_are_ignored() {
    let app = TestApp::with_cluster().await;
    let source = source_app(&app, Some("main")).await;
    let (url, secret) = make_hook(&app, &source).await;
    let before = builds_of(&app, &source).await.len();
    let ignored = |answer: crate::support::TestResponse, why: &str| {
        answer.assert_status(200);
        let reason = answer.json()["ignored"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(reason.contains(why), "{reason:?} should say {why:?}");
    };

    let ping = json!({ "zen": "Design for failure.", "hook_id": 1 })
        .to_string()
        .into_bytes();
    ignored(
        github(&app, &url, &secret, "ping", &unique("d"), ping).await,
        "ping",
    );
    ignored(
        github(
            &app,
            &url,
            &secret,
            "push",
            &unique("d"),
            push("refs/heads/dev", COMMIT),
        )
        .await,
        "\"dev\"",
    );
    ignored(
        github(
            &app,
            &url,
            &secret,
            "push",
            &unique("d"),
            push("refs/tags/v1.0", COMMIT),
        )
        .await,
        "tag",
    );
    let deleted = json!({
        "ref": "refs/heads/main", "after": "0".repeat(40), "deleted": true,
        "repository": { "default_branch": "main" },
    });
    ignored(
        github(
            &app,
            &url,
            &secret,
            "push",
            &unique("d"),
            deleted.to_string().into_bytes(),
        )
        .await,
        "deleted",
    );
    ignored(
        github(
            &app,
            &url,
            &secret,
            "pull_request",
            &unique("d"),
            push("refs/heads/main", COMMIT),
        )
        .await,
        "not a push",
    );
    assert_eq!(builds_of(&app, &source).await.len(), before);

    // The same delivery twice builds once; so does its body under a new
    // delivery id (GitHub signs the body only).
    let delivery = unique("d");
    github(
        &app,
        &url,
        &secret,
        "push",
        &delivery,
        push("refs/heads/main", COMMIT),
    )
    .await
    .assert_status(202);
    ignored(
        github(
            &app,
            &url,
            &secret,
            "push",
            &delivery,
            push("refs/heads/main", COMMIT),
        )
        .await,
        "received before",
    );
    ignored(
        github(
            &app,
            &url,
            &secret,
            "push",
            &unique("d"),
            push("refs/heads/main", COMMIT),
        )
        .await,
        "received before",
    );
    assert_eq!(builds_of(&app, &source).await.len(), before + 1);
    // The same delivery id with another body is a replay too.
    ignored(
        github(
            &app,
            &url,
            &secret,
            "push",
            &delivery,
            push("refs/heads/main", OTHER_COMMIT),
        )
        .await,
        "received before",
    );
    assert_eq!(builds_of(&app, &source).await.len(), before + 1);
}

#[tokio::test]
async fn the_secret_is_shown_once_and_a_replacement_invalidates_the_old_hook() {
    let app = TestApp::with_cluster().await;
    let source = source_app(&app, Some("main")).await;
    let hook = format!("{}/webhook", source.path);
    app.get(&hook)
        .by(&app.owner)
        .send()
        .await
        .assert_problem(404, "not_found");
    let (old_url, old_secret) = make_hook(&app, &source).await;
    let shown = app.get(&hook).by(&app.owner).send().await;
    shown.assert_status(200);
    assert_eq!(shown.json()["url"], old_url);
    assert!(shown.json().get("secret").is_none(), "{}", shown.text());
    assert!(!shown.text().contains(&old_secret));

    let (new_url, new_secret) = make_hook(&app, &source).await;
    assert_ne!((&new_url, &new_secret), (&old_url, &old_secret));
    assert_eq!(
        app.get(&hook).by(&app.owner).send().await.json()["url"],
        new_url
    );
    let body = push("refs/heads/main", COMMIT);
    // The old URL is gone, and the old secret does not sign for the new one.
    assert_unauthenticated(
        &github(
            &app,
            &old_url,
            &old_secret,
            "push",
            &unique("d"),
            body.clone(),
        )
        .await,
    );
    assert_unauthenticated(
        &github(
            &app,
            &new_url,
            &old_secret,
            "push",
            &unique("d"),
            body.clone(),
        )
        .await,
    );
    github(
        &app,
        &new_url,
        &new_secret,
        "push",
        &unique("d"),
        body.clone(),
    )
    .await
    .assert_status(202);

    app.request(Method::DELETE, &hook)
        .by(&app.owner)
        .send()
        .await
        .assert_status(204);
    app.get(&hook)
        .by(&app.owner)
        .send()
        .await
        .assert_problem(404, "not_found");
    app.request(Method::DELETE, &hook)
        .by(&app.owner)
        .send()
        .await
        .assert_problem(404, "not_found");
    assert_unauthenticated(
        &github(
            &app,
            &new_url,
            &new_secret,
            "push",
            &unique("d"),
            push("refs/heads/main", OTHER_COMMIT),
        )
        .await,
    );
}

#[tokio::test]
async fn deleting_the_app_deletes_its_hook() {
    let app = TestApp::with_cluster().await;
    let source = source_app(&app, Some("main")).await;
    let (url, secret) = make_hook(&app, &source).await;
    app.request(Method::DELETE, &source.path)
        .by(&app.owner)
        .send()
        .await
        .assert_status(204);
    assert_unauthenticated(
        &github(
            &app,
            &url,
            &secret,
            "push",
            &unique("d"),
            push("refs/heads/main", COMMIT),
        )
        .await,
    );
    let hook_id = url.rsplit('/').next().expect("an id");
    let stored = berth_shared::webhooks::hooks::find(&app.state.store, hook_id)
        .await
        .expect("reading the hook");
    assert!(stored.is_none(), "the hook's item outlived its app");

    // An app made again under the name has no hook.
    let apps = source
        .path
        .rsplit_once('/')
        .expect("apps path")
        .0
        .to_owned();
    app.create_app(&apps, json!({ "name": source.name, "git_repo": REPO }))
        .await;
    app.get(&format!("{}/webhook", source.path))
        .by(&app.owner)
        .send()
        .await
        .assert_problem(404, "not_found");
}

#[tokio::test]
async fn another_organizations_app_has_no_webhook_to_manage() {
    let app = TestApp::with_cluster().await;
    let source = source_app(&app, Some("main")).await;
    make_hook(&app, &source).await;
    let stranger = app.other_org("umbrella").await;
    let hook = format!("{}/webhook", source.path);
    for method in [Method::POST, Method::GET, Method::DELETE] {
        app.request(method.clone(), &hook)
            .by(&stranger)
            .send()
            .await
            .assert_problem(404, "not_found");
    }
    // Its hook is still there and unchanged.
    app.get(&hook)
        .by(&app.owner)
        .send()
        .await
        .assert_status(200);
}

#[tokio::test]
async fn an_oversized_delivery_is_413() {
    let app = TestApp::with_cluster().await;
    let source = source_app(&app, Some("main")).await;
    let (url, secret) = make_hook(&app, &source).await;
    let padding = "x".repeat(berth_shared::webhooks::service::MAX_DELIVERY_BYTES);
    let mut body: Value = serde_json::from_slice(&push("refs/heads/main", COMMIT)).expect("json");
    body["padding"] = json!(padding);
    let big = body.to_string().into_bytes();
    github(&app, &url, &secret, "push", &unique("d"), big)
        .await
        .assert_problem(413, "payload_too_large");
    // Under the limit, a large payload is read.
    body["padding"] = json!("x".repeat(512 * 1024));
    github(
        &app,
        &url,
        &secret,
        "push",
        &unique("d"),
        body.to_string().into_bytes(),
    )
    .await
    .assert_status(202);
}
