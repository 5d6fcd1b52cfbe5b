//! Per-app git webhooks: made and replaced by the app's team (the secret
//! shown once), called by GitHub (HMAC-SHA256 signature) and GitLab
//! (token); a signed push to the app's branch queues a Build of the pushed
//! commit, anything else is refused (401, the same whatever was wrong) or
//! ignored with the reason.

use http::Method;
use kube::Api;
use serde_json::{Value, json};

use berth_api::webhooks::delivery::github_signature;
use berth_cluster::crd::{BUILDS_NAMESPACE, Build};
use berth_records::audit::ActorKind;

use crate::support::{TestApp, TestResponse, unique};

pub const COMMIT: &str = "9fceb02d0ae598e95dc970b74767f19372d61af8";
const OTHER_COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";
const REPO: &str = "https://github.com/acme/shop.git";
/// A hook id no hook has (the form of one).
pub const UNKNOWN_HOOK: &str = "/api/v1/hooks/aaaaaaaaaaaa";

/// An app from source in a ready environment of a fresh project.
pub struct SourceApp {
    project: String,
    pub name: String,
    /// `/api/v1/projects/…/apps/{name}`.
    pub path: String,
}

pub async fn source_app(app: &TestApp, git_ref: Option<&str>) -> SourceApp {
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

/// A hook's receiver URL and the secret a sender signs with (the hook's,
/// or another to try).
#[derive(Clone)]
pub struct Hook {
    pub url: String,
    pub secret: String,
}

impl Hook {
    /// The app's new hook, made by the owner.
    pub async fn make(app: &TestApp, source: &SourceApp) -> Hook {
        Self::make_for(app, &source.path).await
    }

    /// The new hook of the app at `path`, made by the owner.
    pub async fn make_for(app: &TestApp, path: &str) -> Hook {
        let made = app
            .post(&format!("{path}/webhook"))
            .by(&app.owner)
            .send()
            .await;
        made.assert_status(201);
        let body = made.json();
        let hook = Hook {
            url: body["url"].as_str().expect("url").to_owned(),
            secret: body["secret"].as_str().expect("secret").to_owned(),
        };
        assert!(hook.url.starts_with("/api/v1/hooks/"), "{}", hook.url);
        assert_eq!(hook.secret.len(), 40);
        hook
    }

    /// The same URL, signed with another secret.
    pub fn signed_with(&self, secret: &str) -> Hook {
        Hook {
            url: self.url.clone(),
            secret: secret.to_owned(),
        }
    }

    /// Another URL, signed with this secret.
    pub fn at(&self, url: &str) -> Hook {
        Hook {
            url: url.to_owned(),
            secret: self.secret.clone(),
        }
    }

    /// A GitHub delivery of `body`, signed.
    pub async fn github(
        &self,
        app: &TestApp,
        event: &str,
        delivery: &str,
        body: Vec<u8>,
    ) -> TestResponse {
        let signature = format!("sha256={}", github_signature(&self.secret, &body));
        app.post(&self.url)
            .header("content-type", "application/json")
            .header("x-github-event", event)
            .header("x-github-delivery", delivery)
            .header("x-hub-signature-256", &signature)
            .raw(body)
            .send()
            .await
    }

    /// A GitHub push of `after` to `git_ref`, a delivery of its own.
    pub async fn push(&self, app: &TestApp, git_ref: &str, after: &str) -> TestResponse {
        self.github(app, "push", &unique("d"), push(git_ref, after))
            .await
    }

    /// A GitLab delivery of `body`, with this secret as its token.
    async fn gitlab(&self, app: &TestApp, event: &'static str, body: Value) -> TestResponse {
        app.post(&self.url)
            .header("content-type", "application/json")
            .header("x-gitlab-event", event)
            .header("x-gitlab-event-uuid", &unique("uuid"))
            .header("x-gitlab-token", &self.secret)
            .raw(body.to_string())
            .send()
            .await
    }
}

/// GitHub's push payload, as far as Berth reads it and a little more.
pub fn push(git_ref: &str, after: &str) -> Vec<u8> {
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

fn assert_unauthenticated(response: &TestResponse) {
    response.assert_problem(401, "unauthenticated");
}

fn assert_ignored(response: &TestResponse, why: &str) {
    response.assert_status(200);
    let reason = response.json()["ignored"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(reason.contains(why), "{reason:?} should say {why:?}");
}

#[tokio::test]
async fn a_signed_github_push_to_the_apps_branch_builds_the_commit() {
    let app = TestApp::with_cluster().await;
    let source = source_app(&app, Some("main")).await;
    let hook = Hook::make(&app, &source).await;
    let before = builds_of(&app, &source).await.len();

    let answer = hook.push(&app, "refs/heads/main", COMMIT).await;
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

    // Audited in the app's organization, the sender as its actor.
    let event = app.last_audit_event("acme").await;
    assert_eq!(event.action, "receiveWebhook");
    assert_eq!(event.status, Some(202));
    assert_eq!(event.actor_kind, ActorKind::Webhook);
    assert_eq!(event.actor.as_deref(), Some("github"));
    assert_eq!(event.target.as_deref(), Some(source.name.as_str()));
    // In the project's log too: its admins see what pushes built.
    assert_eq!(event.project.as_deref(), Some(source.project.as_str()));
}

#[tokio::test]
async fn wrong_missing_and_unknown_credentials_are_the_same_401_and_build_nothing() {
    let app = TestApp::with_cluster().await;
    let source = source_app(&app, Some("main")).await;
    let hook = Hook::make(&app, &source).await;
    let before = builds_of(&app, &source).await.len();
    let (main, wrong) = ("refs/heads/main", "not the secret");

    let unsigned = app
        .post(&hook.url)
        .header("content-type", "application/json")
        .header("x-github-event", "push")
        .raw(push(main, COMMIT))
        .send()
        .await;
    let answers = [
        hook.signed_with(wrong).push(&app, main, COMMIT).await,
        unsigned,
        hook.at(UNKNOWN_HOOK).push(&app, main, COMMIT).await,
        hook.at("/api/v1/hooks/..%2Fx")
            .push(&app, main, COMMIT)
            .await,
        hook.signed_with(wrong)
            .gitlab(&app, "Push Hook", json!({ "ref": main }))
            .await,
    ];
    let mut problems = Vec::new();
    for answer in &answers {
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
    let hook = Hook::make(&app, &source).await;
    let before = builds_of(&app, &source).await.len();
    let body = json!({
        "object_kind": "push", "ref": "refs/heads/main", "after": COMMIT,
        "checkout_sha": COMMIT, "project": { "default_branch": "main" },
    });
    let almost = hook.signed_with(&format!("{}x", hook.secret));
    assert_unauthenticated(&almost.gitlab(&app, "Push Hook", body.clone()).await);
    assert_eq!(builds_of(&app, &source).await.len(), before);

    // No git_ref: the repository's default branch, as the payload names it.
    let accepted = hook.gitlab(&app, "Push Hook", body).await;
    accepted.assert_status(202);
    assert_eq!(accepted.json()["ref"], COMMIT);
    assert_eq!(builds_of(&app, &source).await.len(), before + 1);

    let tag = json!({
        "object_kind": "tag_push", "ref": "refs/tags/v1", "after": COMMIT,
        "project": { "default_branch": "main" },
    });
    assert_ignored(&hook.gitlab(&app, "Tag Push Hook", tag).await, "tag");
    assert_eq!(builds_of(&app, &source).await.len(), before + 1);
}

#[tokio::test]
async fn other_branches_tags_pings_and_replays_are_ignored() {
    let app = TestApp::with_cluster().await;
    let source = source_app(&app, Some("main")).await;
    let hook = Hook::make(&app, &source).await;
    let before = builds_of(&app, &source).await.len();

    let ping = json!({ "zen": "Design for failure.", "hook_id": 1 });
    let ping = hook
        .github(&app, "ping", &unique("d"), ping.to_string().into_bytes())
        .await;
    assert_ignored(&ping, "ping");
    assert_ignored(&hook.push(&app, "refs/heads/dev", COMMIT).await, "\"dev\"");
    assert_ignored(&hook.push(&app, "refs/tags/v1.0", COMMIT).await, "tag");
    let deleted = json!({
        "ref": "refs/heads/main", "after": "0".repeat(40), "deleted": true,
        "repository": { "default_branch": "main" },
    });
    let deleted = hook
        .github(&app, "push", &unique("d"), deleted.to_string().into_bytes())
        .await;
    assert_ignored(&deleted, "deleted");
    let pull_request = hook
        .github(
            &app,
            "pull_request",
            &unique("d"),
            push("refs/heads/main", COMMIT),
        )
        .await;
    assert_ignored(&pull_request, "not a push");
    assert_eq!(builds_of(&app, &source).await.len(), before);

    // The same delivery twice builds once; so does its body under a new
    // delivery id (GitHub signs the body only), and its id with another body.
    let delivery = unique("d");
    let main = |after| push("refs/heads/main", after);
    hook.github(&app, "push", &delivery, main(COMMIT))
        .await
        .assert_status(202);
    for replay in [
        hook.github(&app, "push", &delivery, main(COMMIT)).await,
        hook.push(&app, "refs/heads/main", COMMIT).await,
        hook.github(&app, "push", &delivery, main(OTHER_COMMIT))
            .await,
    ] {
        assert_ignored(&replay, "received before");
    }
    assert_eq!(builds_of(&app, &source).await.len(), before + 1);
}

/// Issue 46, part 6: the payload's signer may call any branch the
/// default, so a push to an app following its repository's default branch
/// is held to the repository's HEAD (`HEAD`, which the build's `source`
/// step resolves from the repository), never to the branch the payload
/// names.
#[tokio::test]
async fn a_push_for_the_default_branch_is_held_to_the_repositorys_head() {
    let app = TestApp::with_cluster().await;
    let source = source_app(&app, None).await;
    let hook = Hook::make(&app, &source).await;
    let renamed = json!({
        "ref": "refs/heads/evil", "after": COMMIT, "deleted": false,
        "repository": { "full_name": "acme/shop", "default_branch": "evil" },
    });
    let answer = hook
        .github(&app, "push", &unique("d"), renamed.to_string().into_bytes())
        .await;
    answer.assert_status(202);
    let builds = builds_of(&app, &source).await;
    let newest = builds.last().expect("a build");
    assert_eq!(newest.spec.source.git_ref.as_deref(), Some(COMMIT));
    assert_eq!(
        newest.spec.branch.as_deref(),
        Some(berth_domain::git::REPOSITORY_HEAD),
        "held to the repository's HEAD, not to the payload's word"
    );
}

/// Issue 46, part 6: a delivery whose build could not be started may come
/// again as it was (the sender's retry), but its id does not come back
/// with another body: another commit under it is a replay, and the retry
/// builds once.
#[tokio::test]
#[cfg_attr(berth_real_cluster, ignore = "needs the stand-in's fault knobs")]
async fn a_delivery_whose_build_failed_to_start_is_retried_only_as_it_was() {
    use berth_kube_standin::{Fault, FaultKind};
    let app = TestApp::with_cluster().await;
    let source = source_app(&app, Some("main")).await;
    let hook = Hook::make(&app, &source).await;
    let before = builds_of(&app, &source).await.len();
    let delivery = unique("d");
    let main = |after| push("refs/heads/main", after);

    app.standin().add_fault(
        Fault::new(FaultKind::Forbidden, 1)
            .method("POST")
            .path_contains("/builds"),
    );
    let failed = hook.github(&app, "push", &delivery, main(COMMIT)).await;
    assert!(
        !failed.status.is_success(),
        "the build could not start: {}",
        failed.status
    );
    assert_eq!(builds_of(&app, &source).await.len(), before);

    // Its id with another commit: a replay.
    assert_ignored(
        &hook
            .github(&app, "push", &delivery, main(OTHER_COMMIT))
            .await,
        "received before",
    );
    // The same delivery again: built, once.
    hook.github(&app, "push", &delivery, main(COMMIT))
        .await
        .assert_status(202);
    assert_ignored(
        &hook.github(&app, "push", &delivery, main(COMMIT)).await,
        "received before",
    );
    let builds = builds_of(&app, &source).await;
    assert_eq!(builds.len(), before + 1);
    assert_eq!(
        builds.last().and_then(|b| b.spec.source.git_ref.as_deref()),
        Some(COMMIT)
    );
}

#[tokio::test]
async fn the_secret_is_shown_once_and_a_replacement_invalidates_the_old_hook() {
    let app = TestApp::with_cluster().await;
    let source = source_app(&app, Some("main")).await;
    let path = format!("{}/webhook", source.path);
    let get = || app.get(&path).by(&app.owner).send();
    get().await.assert_problem(404, "not_found");
    let old = Hook::make(&app, &source).await;
    let shown = get().await;
    shown.assert_status(200);
    assert_eq!(shown.json()["url"], old.url);
    assert!(shown.json().get("secret").is_none(), "{}", shown.text());
    assert!(!shown.text().contains(&old.secret));

    let new = Hook::make(&app, &source).await;
    assert_ne!((&new.url, &new.secret), (&old.url, &old.secret));
    assert_eq!(get().await.json()["url"], new.url);
    // The old URL is gone, and the old secret does not sign for the new one.
    let main = "refs/heads/main";
    assert_unauthenticated(&old.push(&app, main, COMMIT).await);
    assert_unauthenticated(&new.signed_with(&old.secret).push(&app, main, COMMIT).await);
    new.push(&app, main, COMMIT).await.assert_status(202);

    let delete = || app.request(Method::DELETE, &path).by(&app.owner).send();
    delete().await.assert_status(204);
    get().await.assert_problem(404, "not_found");
    delete().await.assert_problem(404, "not_found");
    assert_unauthenticated(&new.push(&app, main, OTHER_COMMIT).await);
}

#[tokio::test]
async fn deleting_the_app_deletes_its_hook() {
    let app = TestApp::with_cluster().await;
    let source = source_app(&app, Some("main")).await;
    let hook = Hook::make(&app, &source).await;
    app.request(Method::DELETE, &source.path)
        .by(&app.owner)
        .send()
        .await
        .assert_status(204);
    assert_unauthenticated(&hook.push(&app, "refs/heads/main", COMMIT).await);
    let hook_id = hook.url.rsplit('/').next().expect("an id");
    let stored = berth_store::hooks::find(
        &app.state.store,
        berth_domain::ids::RecordId::parse(hook_id).ok().as_ref(),
    )
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
    let hook = Hook::make(&app, &source).await;
    let stranger = app.other_org("umbrella").await;
    let path = format!("{}/webhook", source.path);
    for method in [Method::POST, Method::GET, Method::DELETE] {
        app.request(method.clone(), &path)
            .by(&stranger)
            .send()
            .await
            .assert_problem(404, "not_found");
    }
    // Its hook is still there and unchanged.
    let shown = app.get(&path).by(&app.owner).send().await;
    assert_eq!(shown.json()["url"], hook.url);
}

#[tokio::test]
async fn an_oversized_delivery_is_413() {
    let app = TestApp::with_cluster().await;
    let source = source_app(&app, Some("main")).await;
    let hook = Hook::make(&app, &source).await;
    let limit = berth_api::webhooks::service::MAX_DELIVERY_BYTES;
    let mut body: Value = serde_json::from_slice(&push("refs/heads/main", COMMIT)).expect("json");
    body["padding"] = json!("x".repeat(limit));
    let big = body.to_string().into_bytes();
    hook.github(&app, "push", &unique("d"), big)
        .await
        .assert_problem(413, "payload_too_large");
    // Under the limit, a large payload is read.
    body["padding"] = json!("x".repeat(limit / 2));
    let large = body.to_string().into_bytes();
    hook.github(&app, "push", &unique("d"), large)
        .await
        .assert_status(202);
}
