//! Purges leave nothing behind: once an environment is purged, the sweep
//! (the scheduled `cleanup` function) removes what its apps kept in the
//! table — release histories, hostname claims, webhooks — so a hostname is
//! anyone's again; a sweep cut short finishes at the next; an environment
//! in its grace, or restored, keeps everything; a newer environment of the
//! same name keeps its own apps.

use std::time::Duration;

use http::Method;
use kube::api::Api;
use serde_json::{Value, json};

use crate::support::table as store;
use berth_api::environments::purges::{self, Sweep, Swept};
use berth_cluster::apps::ANNOTATION_HISTORY;
use berth_cluster::crd::App;
use berth_store::keys;

use crate::support::{TestApp, TestUser, eventually, unique};
use crate::webhooks::Hook;

/// A hostname no other test or run uses.
fn hostname(prefix: &str) -> String {
    format!("{}.example.test", unique(prefix))
}

/// A commit a push builds (any full id will do: the hook is gone).
const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";

/// An environment of `owner`'s, and the names in it.
struct Place {
    owner: TestUser,
    project: String,
    environment: String,
}

impl Place {
    fn path(&self) -> String {
        format!(
            "/api/v1/projects/{}/environments/{}",
            self.project, self.environment
        )
    }

    fn app(&self, name: &str) -> String {
        format!("{}/apps/{name}", self.path())
    }

    fn namespace(&self) -> String {
        format!("{}-{}", self.project, self.environment)
    }

    /// A new provisioned environment `environment` of `env_type` in `project`.
    async fn make(
        app: &TestApp,
        owner: &TestUser,
        project: &str,
        environment: &str,
        env_type: &str,
    ) -> Place {
        let place = Place {
            owner: owner.clone(),
            project: project.to_owned(),
            environment: environment.to_owned(),
        };
        app.post(&format!("/api/v1/projects/{project}/environments"))
            .by(owner)
            .json(json!({ "name": environment, "env_type": env_type }))
            .send()
            .await
            .assert_status(201);
        let path = place.path();
        eventually("the environment becomes Ready", || async {
            app.get(&path).by(owner).send().await.json()["phase"] == "Ready"
        })
        .await;
        place
    }

    /// A new project of `owner`'s with a provisioned environment.
    async fn new(app: &TestApp, owner: &TestUser, env_type: &str) -> Place {
        let project = unique("purge");
        app.post("/api/v1/projects")
            .by(owner)
            .json(json!({ "name": project, "display_name": project }))
            .send()
            .await
            .assert_status(201);
        Self::make(app, owner, &project, "dev", env_type).await
    }

    /// Creates app `name` with `hostname`, gives it a second revision and,
    /// if asked, a webhook: what it keeps in the table.
    async fn shop(&self, app: &TestApp, name: &str, hostname: &str, hooked: bool) -> Kept {
        app.post(&format!("{}/apps", self.path()))
            .by(&self.owner)
            .json(json!({ "name": name, "image": "nginx:1.27", "port": 80,
                          "replicas": 0, "domains": [hostname] }))
            .send()
            .await
            .assert_status(201);
        app.request(Method::PATCH, &self.app(name))
            .by(&self.owner)
            .json(json!({ "image": "nginx:1.28" }))
            .send()
            .await
            .assert_status(200);
        let hook = if hooked {
            let made = app
                .post(&format!("{}/webhook", self.app(name)))
                .by(&self.owner)
                .send()
                .await;
            made.assert_status(201);
            let body = made.json();
            Some(Hook {
                url: body["url"].as_str().expect("url").to_owned(),
                secret: body["secret"].as_str().expect("secret").to_owned(),
            })
        } else {
            None
        };
        let history = Api::<App>::namespaced(app.cluster().client.clone(), &self.namespace())
            .get(name)
            .await
            .expect("the App")
            .metadata
            .annotations
            .and_then(|annotations| annotations.get(ANNOTATION_HISTORY).cloned())
            .expect("a history id");
        Kept {
            namespace: self.namespace(),
            hostname: hostname.to_owned(),
            history,
            hook,
        }
    }

    async fn delete(&self, app: &TestApp) {
        app.request(Method::DELETE, &self.path())
            .by(&self.owner)
            .send()
            .await
            .assert_status(202);
    }

    async fn until_purged(&self, app: &TestApp) {
        let path = self.path();
        eventually("the environment is purged", || async {
            app.get(&path).by(&self.owner).send().await.status == 404
        })
        .await;
    }
}

/// What an app keeps in the table, and where.
struct Kept {
    namespace: String,
    hostname: String,
    history: String,
    hook: Option<Hook>,
}

impl Kept {
    fn hook_id(&self) -> Option<&str> {
        self.hook
            .as_ref()
            .and_then(|hook| hook.url.rsplit('/').next())
    }

    /// Items of its release history's partition (revisions, hook pointer).
    async fn history_items(&self, app: &TestApp) -> usize {
        partition_size(app, keys::releases(&self.history)).await
    }

    async fn has_entry(&self, app: &TestApp) -> bool {
        berth_store::app_entries::in_environment(&app.state.store, &self.namespace)
            .await
            .expect("reading the entries")
            .iter()
            .any(|entry| entry.history == self.history)
    }

    /// The release history id of the claim of its hostname, if claimed.
    async fn claimed_by(&self, app: &TestApp) -> Option<String> {
        berth_store::hostnames::read(&app.state.store, &self.hostname)
            .await
            .expect("reading the claim")
            .and_then(|item| Some(item.claims.into_values().next()?.history))
    }

    async fn hook_stored(&self, app: &TestApp) -> bool {
        match self.hook_id() {
            Some(id) => berth_store::hooks::find(
                &app.state.store,
                berth_domain::ids::RecordId::parse(id).ok().as_ref(),
            )
            .await
            .expect("reading the hook")
            .is_some(),
            None => false,
        }
    }

    /// Everything it kept is there.
    async fn assert_kept(&self, app: &TestApp) {
        assert!(self.history_items(app).await >= 2, "its revisions");
        assert!(self.has_entry(app).await, "its entry");
        assert_eq!(self.claimed_by(app).await, Some(self.history.clone()));
        if self.hook.is_some() {
            assert!(self.hook_stored(app).await, "its hook");
        }
    }

    /// Nothing it kept is left.
    async fn assert_gone(&self, app: &TestApp) {
        assert_eq!(self.history_items(app).await, 0, "its revisions");
        assert!(!self.has_entry(app).await, "its entry");
        assert_ne!(self.claimed_by(app).await, Some(self.history.clone()));
        assert!(!self.hook_stored(app).await, "its hook");
    }
}

/// A sweep as the `cleanup` function runs it, with `in_flight` for how
/// young a write may be and still be under way.
async fn sweep_with(app: &TestApp, in_flight: Duration, time: Duration) -> Swept {
    let client = app.state.cluster.client().await.expect("the API's client");
    purges::sweep(
        &app.state.store,
        &client,
        Sweep {
            in_flight,
            deadline: tokio::time::Instant::now() + time,
        },
    )
    .await
    .expect("a sweep")
}

/// A sweep once this test's writes are over (they are: each was answered),
/// so nothing it made can still be in the making.
async fn sweep(app: &TestApp) -> Swept {
    sweep_with(app, Duration::ZERO, Duration::from_secs(60)).await
}

/// How many items the table holds under `pk`.
async fn partition_size(app: &TestApp, pk: String) -> usize {
    store::query_all(
        app.dynamodb
            .query()
            .table_name(app.state.store.table())
            .key_condition_expression("pk = :pk")
            .expression_attribute_values(":pk", store::s(pk))
            .consistent_read(true),
    )
    .await
    .expect("reading a partition")
    .len()
}

async fn purge_records(app: &TestApp) -> usize {
    partition_size(app, keys::PURGES_PK.to_owned()).await
}

#[tokio::test]
async fn a_purged_environment_leaves_nothing_behind_and_its_hostname_is_anyones() {
    let app = TestApp::with_cluster().await;
    let place = Place::new(&app, &app.owner, "standard").await;
    let purged = hostname("purged");
    let shop = place.shop(&app, "shop", &purged, true).await;
    shop.assert_kept(&app).await;
    let hook = shop.hook.clone().expect("a hook");
    // As an app last written before entries existed: the deletion puts its
    // entry back.
    app.dynamodb
        .delete_item()
        .table_name(app.state.store.table())
        .set_key(Some(store::key(
            keys::environment_apps(&shop.namespace),
            &keys::environment_app_sk(&shop.history),
        )))
        .send()
        .await
        .expect("deleting the entry");
    assert!(!shop.has_entry(&app).await);

    place.delete(&app).await;
    assert!(shop.has_entry(&app).await);
    assert_eq!(purge_records(&app).await, 1, "the deletion is recorded");
    place.until_purged(&app).await;
    // A newer environment of the same name, with an app of the same name:
    // its own, which the sweep leaves alone.
    let again = Place::make(&app, &app.owner, &place.project, "dev", "standard").await;
    let newer = again.shop(&app, "shop", &hostname("newer"), false).await;

    let swept = sweep(&app).await;
    assert_eq!(
        (swept.environments, swept.apps, swept.failed, swept.finished),
        (1, 1, 0, true),
        "{swept:?}"
    );
    shop.assert_gone(&app).await;
    newer.assert_kept(&app).await;
    assert_eq!(purge_records(&app).await, 0);
    // Its history is gone with it: the newer app's is its own.
    let releases = app
        .get(&format!("{}/releases", again.app("shop")))
        .by(&app.owner)
        .send()
        .await;
    releases.assert_status(200);
    assert_eq!(
        releases.json().as_array().map(Vec::len),
        Some(2),
        "{:?}",
        releases.json()
    );
    // Its hook is unknown: the same 401 as any unknown hook's.
    let pushed = hook.push(&app, "refs/heads/main", COMMIT).await;
    pushed.assert_problem(401, "unauthenticated");

    // Another organization claims the hostname at once.
    let globex = app.other_org("globex").await;
    let theirs = Place::new(&app, &globex, "standard").await;
    let taken = app
        .post(&format!("{}/apps", theirs.path()))
        .by(&globex)
        .json(json!({ "name": "web", "image": "nginx:1.27", "port": 80,
                      "replicas": 0, "domains": [purged] }))
        .send()
        .await;
    taken.assert_status(201);
    let record: Value = taken.json();
    assert_eq!(record["domains"], json!([purged]));

    // Nothing more to do.
    assert_eq!(
        sweep(&app).await,
        Swept {
            finished: true,
            ..Swept::default()
        }
    );
}

#[tokio::test]
async fn a_sweep_cut_short_finishes_at_the_next() {
    let app = TestApp::with_cluster().await;
    let place = Place::new(&app, &app.owner, "standard").await;
    let shops = [
        place.shop(&app, "shop", &hostname("cut"), true).await,
        place.shop(&app, "cart", &hostname("cut"), false).await,
    ];
    place.delete(&app).await;
    place.until_purged(&app).await;

    // Out of time before it starts: nothing done, nothing lost.
    let swept = sweep_with(&app, Duration::ZERO, Duration::ZERO).await;
    assert!(!swept.finished, "{swept:?}");
    for shop in &shops {
        shop.assert_kept(&app).await;
    }

    // Cut in the middle of the first app: its claims released, then the
    // store fails deleting its revisions.
    app.store_faults.fail_next("BatchWriteItem", 1);
    let swept = sweep(&app).await;
    app.store_faults.heal();
    assert_eq!((swept.failed, swept.environments), (1, 0), "{swept:?}");
    assert_eq!(purge_records(&app).await, 1, "the record stays");
    let mut released = 0;
    for shop in &shops {
        // Whatever the cut left, its entry still leads to.
        assert!(shop.has_entry(&app).await);
        assert!(shop.history_items(&app).await >= 2);
        if shop.claimed_by(&app).await.is_none() {
            released += 1;
        }
    }
    assert_eq!(released, 1, "the first app's claim went before the cut");

    // The next sweep finishes it.
    let swept = sweep(&app).await;
    assert_eq!(
        (swept.environments, swept.apps, swept.failed, swept.finished),
        (1, 2, 0, true),
        "{swept:?}"
    );
    for shop in &shops {
        shop.assert_gone(&app).await;
    }
    assert_eq!(purge_records(&app).await, 0);
}

#[tokio::test]
async fn an_environment_in_its_grace_or_restored_keeps_everything() {
    let app = TestApp::with_cluster().await;
    let place = Place::new(&app, &app.owner, "production").await;
    let shop = place.shop(&app, "shop", &hostname("grace"), true).await;
    place.delete(&app).await;

    // Just asked: the deletion may not even be scheduled yet.
    let swept = sweep_with(
        &app,
        app.state.config.write_in_flight(),
        Duration::from_secs(60),
    )
    .await;
    assert_eq!((swept.waiting, swept.apps), (1, 0), "{swept:?}");
    // In its grace: still there, and deleting.
    let swept = sweep(&app).await;
    assert_eq!((swept.waiting, swept.apps), (1, 0), "{swept:?}");
    shop.assert_kept(&app).await;

    app.post(&format!("{}/restore", place.path()))
        .by(&app.owner)
        .send()
        .await
        .assert_status(200);
    let swept = sweep(&app).await;
    assert_eq!((swept.restored, swept.apps), (1, 0), "{swept:?}");
    assert_eq!(purge_records(&app).await, 0);
    shop.assert_kept(&app).await;
    app.get(&format!("{}/releases", place.app("shop")))
        .by(&app.owner)
        .send()
        .await
        .assert_status(200);
}
