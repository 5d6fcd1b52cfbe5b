//! A hostname belongs to one app of its organization: claimed at every
//! write that sets an app's domains, whichever project asks, released when
//! the app drops it or is deleted, never lost or doubled under concurrent
//! writes; custom domains stay out of the apps domain, and default hosts
//! name one app. (Across organizations, the proof of control decides:
//! `domain_proofs`.)
//!
//! Every hostname and project here is unique per run (`unique`): claims are
//! platform-wide, and a real cluster keeps earlier runs' objects.

use std::time::{Duration, Instant};

use futures::future::join_all;
use http::Method;
use kube::api::{Api, DeleteParams};
use serde_json::{Value, json};

use crate::support::table as store;
use berth_api::config::Config;
use berth_cluster::apps::ANNOTATION_HISTORY;
use berth_cluster::crd::App;
use berth_store::keys;

use crate::support::cluster::APPS_DOMAIN;
use crate::support::{TestApp, TestResponse, TestUser, eventually, unique};

/// A hostname no other test or run uses.
fn hostname(prefix: &str) -> String {
    format!("{}.example.test", unique(prefix))
}

/// A provisioned environment of `owner`'s organization.
pub(crate) struct Place {
    pub owner: TestUser,
    pub project: String,
    pub environment: String,
}

impl Place {
    /// A new project of `owner` with a provisioned environment `environment`.
    pub(crate) async fn new(app: &TestApp, owner: &TestUser, environment: &str) -> Self {
        Self::named(app, owner, unique("hosts"), environment).await
    }

    /// Project `project` of `owner` with a provisioned environment `environment`.
    pub(crate) async fn named(
        app: &TestApp,
        owner: &TestUser,
        project: String,
        environment: &str,
    ) -> Self {
        app.post("/api/v1/projects")
            .by(owner)
            .json(json!({ "name": project, "display_name": project }))
            .send()
            .await
            .assert_status(201);
        let place = Self {
            owner: owner.clone(),
            project,
            environment: environment.to_owned(),
        };
        place.add_environment(app, environment).await;
        place
    }

    pub(crate) async fn add_environment(&self, app: &TestApp, environment: &str) {
        let path = format!("/api/v1/projects/{}/environments", self.project);
        app.post(&path)
            .by(&self.owner)
            .json(json!({ "name": environment }))
            .send()
            .await
            .assert_status(201);
        let one = format!("{path}/{environment}");
        eventually("the environment becomes Ready", || async {
            app.get(&one).by(&self.owner).send().await.json()["phase"] == "Ready"
        })
        .await;
    }

    pub(crate) fn apps(&self) -> String {
        format!(
            "/api/v1/projects/{}/environments/{}/apps",
            self.project, self.environment
        )
    }

    pub(crate) fn app(&self, name: &str) -> String {
        format!("{}/{name}", self.apps())
    }

    /// Creates app `name` (no replicas, so it settles at once); the request
    /// is made at once, so many can be sent together.
    pub(crate) fn create<'a>(
        &self,
        app: &'a TestApp,
        name: &str,
        domains: &[&str],
    ) -> impl Future<Output = TestResponse> + use<'a> {
        app.post(&self.apps())
            .by(&self.owner)
            .json(json!({ "name": name, "image": "nginx:1.27", "port": 80,
                          "replicas": 0, "domains": domains }))
            .send()
    }

    pub(crate) fn set_domains<'a>(
        &self,
        app: &'a TestApp,
        name: &str,
        domains: &[&str],
    ) -> impl Future<Output = TestResponse> + use<'a> {
        app.request(Method::PATCH, &self.app(name))
            .by(&self.owner)
            .json(json!({ "domains": domains }))
            .send()
    }

    /// The app's record (its `domains`, `revision`), or None once it is gone.
    pub(crate) async fn read(&self, app: &TestApp, name: &str) -> Option<Value> {
        let answer = app.get(&self.app(name)).by(&self.owner).send().await;
        match answer.status.as_u16() {
            200 => Some(answer.json()["app"].clone()),
            404 => None,
            _ => panic!("reading {name}: {}", answer.text()),
        }
    }

    /// The App resource, as an administrator reads it.
    pub(crate) async fn resource(&self, app: &TestApp, name: &str) -> Option<App> {
        Api::<App>::namespaced(
            app.cluster().client.clone(),
            &format!("{}-{}", self.project, self.environment),
        )
        .get_opt(name)
        .await
        .expect("reading an App")
    }
}

/// The API with the cluster (`adjust` applied to its configuration), and an
/// environment in each of two projects of the owner's organization (where
/// claims are exclusive; across organizations, the proof of control decides:
/// `domain_proofs`).
async fn two_projects(adjust: impl FnOnce(&mut Config)) -> (TestApp, Place, Place) {
    let app = TestApp::with_cluster_config(adjust).await;
    let (acme, other) = tokio::join!(
        Place::new(&app, &app.owner, "dev"),
        Place::new(&app, &app.owner, "dev")
    );
    (app, acme, other)
}

/// Who holds the claim of `hostname` in the store: (organization, project,
/// environment, app, history id) of the one organization's claim there is.
async fn holder(app: &TestApp, hostname: &str) -> Option<[String; 5]> {
    let item = berth_store::hostnames::read(&app.state.store, hostname)
        .await
        .expect("reading a claim")?;
    assert!(
        item.claims.len() <= 1,
        "{hostname}: one organization claims it"
    );
    let claim = item.claims.into_values().next()?;
    Some([
        claim.org,
        claim.project,
        claim.environment,
        claim.app,
        claim.history,
    ])
}

/// Asserts that `hostname` is claimed by `name` at `place`, by the very
/// incarnation the cluster holds, and that it lists the hostname.
async fn assert_held_by(app: &TestApp, hostname: &str, place: &Place, name: &str) {
    let resource = place.resource(app, name).await.expect("the holder's App");
    let history = resource.metadata.annotations.unwrap()[ANNOTATION_HISTORY].clone();
    assert_eq!(
        holder(app, hostname).await,
        Some([
            place.owner.org.clone(),
            place.project.clone(),
            place.environment.clone(),
            name.to_owned(),
            history
        ]),
        "{hostname}"
    );
    assert!(
        (resource.spec.config.domains.iter()).any(|domain| domain.text() == hostname),
        "{hostname}: the holder lists it"
    );
}

/// Asserts a `domain_taken` answer that names the hostname and nothing of
/// who holds it.
#[track_caller]
fn assert_taken(answer: &TestResponse, hostname: &str, holder: &Place, holder_app: &str) {
    answer.assert_problem(409, "domain_taken");
    let detail = answer.json()["detail"].as_str().unwrap_or("").to_owned();
    assert!(detail.contains(hostname), "{detail}");
    // (The hostname itself may contain the holder's app name.)
    let rest = detail.replace(hostname, "");
    for secret in [
        holder.owner.org.as_str(),
        holder.owner.email.as_str(),
        holder.project.as_str(),
        holder_app,
    ] {
        assert!(!rest.contains(secret), "{detail} names {secret}");
    }
}

#[tokio::test]
async fn a_hostname_serves_one_app_of_its_organization() {
    let (app, acme, other) = two_projects(|_| {}).await;
    let shop = hostname("shop");
    // Given in any case, with the root's dot: one hostname, kept in its normal form.
    let created = acme
        .create(&app, "shop", &[&format!("{}.", shop.to_uppercase())])
        .await;
    created.assert_status(201);
    assert_eq!(created.json()["domains"], json!([shop]));
    assert_held_by(&app, &shop, &acme, "shop").await;

    // Another project's app: taken, in every spelling, and nothing is made.
    for spelling in [shop.clone(), shop.to_uppercase(), format!("{shop}.")] {
        let refused = other.create(&app, "web", &[&spelling]).await;
        assert_taken(&refused, &shop, &acme, "shop");
        assert!(other.read(&app, "web").await.is_none());
    }
    // Nor by an update of an app it has: the app keeps its revision.
    other.create(&app, "web", &[]).await.assert_status(201);
    let refused = other
        .set_domains(&app, "web", &["www.example.test", &shop])
        .await;
    assert_taken(&refused, &shop, &acme, "shop");
    let web = other.read(&app, "web").await.unwrap();
    assert_eq!(
        (web["revision"].clone(), web["domains"].clone()),
        (json!(1), json!([]))
    );
    // The same organization's other app: taken as well.
    let refused = acme.create(&app, "blog", &[&shop]).await;
    assert_taken(&refused, &shop, &acme, "shop");
    // Who holds the name is unchanged, and the app that has it can still
    // change (its own claim is no obstacle).
    assert_held_by(&app, &shop, &acme, "shop").await;
    acme.set_domains(&app, "shop", &[&shop, &hostname("www")])
        .await
        .assert_status(200);
    assert_held_by(&app, &shop, &acme, "shop").await;
}

#[tokio::test]
async fn a_dropped_or_deleted_hostname_is_free_for_another_app() {
    let (app, acme, other) = two_projects(|_| {}).await;
    let (old, new) = (hostname("old"), hostname("new"));
    acme.create(&app, "shop", &[&old]).await.assert_status(201);
    other.create(&app, "web", &[]).await.assert_status(201);
    assert_taken(
        &other.set_domains(&app, "web", &[&old]).await,
        &old,
        &acme,
        "shop",
    );

    // Dropped by an update: released once the change is committed.
    acme.set_domains(&app, "shop", &[&new])
        .await
        .assert_status(200);
    assert_eq!(holder(&app, &old).await, None);
    other
        .set_domains(&app, "web", &[&old])
        .await
        .assert_status(200);
    assert_held_by(&app, &old, &other, "web").await;
    assert_held_by(&app, &new, &acme, "shop").await;

    // Deleted with its app: every claim of it goes.
    app.request(Method::DELETE, &acme.app("shop"))
        .by(&acme.owner)
        .send()
        .await
        .assert_status(204);
    assert_eq!(holder(&app, &new).await, None);
    other.create(&app, "next", &[&new]).await.assert_status(201);
    assert_held_by(&app, &new, &other, "next").await;
    // An app created again under the same name is another app.
    assert_taken(
        &acme.create(&app, "shop", &[&new]).await,
        &new,
        &other,
        "next",
    );
}

#[tokio::test]
async fn a_rollback_to_a_hostname_taken_since_changes_nothing() {
    let (app, acme, other) = two_projects(|_| {}).await;
    let shop = hostname("shop");
    acme.create(&app, "shop", &[&shop]).await.assert_status(201);
    acme.set_domains(&app, "shop", &[]).await.assert_status(200);
    other.create(&app, "web", &[&shop]).await.assert_status(201);

    let rollback = || {
        app.post(&format!("{}/rollback", acme.app("shop")))
            .by(&acme.owner)
            .json(json!({ "revision": 1 }))
    };
    assert_taken(&rollback().send().await, &shop, &other, "web");
    let now = acme.read(&app, "shop").await.unwrap();
    assert_eq!(
        (now["revision"].clone(), now["domains"].clone()),
        (json!(2), json!([]))
    );
    let releases = app
        .get(&format!("{}/releases", acme.app("shop")))
        .by(&acme.owner)
        .send()
        .await
        .json();
    let revisions: Vec<&Value> = releases
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["revision"])
        .collect();
    assert_eq!(revisions, [&json!(2), &json!(1)], "no revision was added");
    assert_held_by(&app, &shop, &other, "web").await;

    // Once the other app lets it go, the same rollback takes it back.
    other.set_domains(&app, "web", &[]).await.assert_status(200);
    let restored = rollback().send().await;
    restored.assert_status(200);
    assert_eq!(restored.json()["domains"], json!([shop]));
    assert_held_by(&app, &shop, &acme, "shop").await;
}

#[tokio::test]
async fn promote_claims_the_targets_hostnames() {
    let (app, dev, other) = two_projects(|_| {}).await;
    dev.add_environment(&app, "prod").await;
    let prod = Place {
        owner: dev.owner.clone(),
        project: dev.project.clone(),
        environment: "prod".to_owned(),
    };
    let shop = hostname("shop");
    dev.create(&app, "shop", &[]).await.assert_status(201);
    prod.create(&app, "shop", &[&shop]).await.assert_status(201);
    let promote = || {
        app.post(&format!("{}/promote", dev.app("shop")))
            .by(&dev.owner)
            .json(json!({ "environment": "prod" }))
    };
    let promoted = promote().send().await;
    promoted.assert_status(200);
    assert_eq!(promoted.json()["domains"], json!([shop]));
    assert_held_by(&app, &shop, &prod, "shop").await;
    assert_taken(
        &other.create(&app, "web", &[&shop]).await,
        &shop,
        &prod,
        "shop",
    );

    // An app from before claims existed holds none: here its claim is
    // removed by hand, and another organization takes the free name. Its
    // next write, a promotion, finds the name taken and changes nothing.
    app.dynamodb
        .delete_item()
        .table_name(app.state.store.table())
        .set_key(Some(store::key(keys::host(&shop), keys::HOST_SK)))
        .send()
        .await
        .unwrap();
    other.create(&app, "web", &[&shop]).await.assert_status(201);
    let before = prod.read(&app, "shop").await.unwrap()["revision"].clone();
    assert_taken(&promote().send().await, &shop, &other, "web");
    assert_eq!(prod.read(&app, "shop").await.unwrap()["revision"], before);
    assert_held_by(&app, &shop, &other, "web").await;
}

/// A claim whose app no longer serves its hostname (the App deleted behind
/// Berth's back, an app created again under its name, a release that
/// failed) is taken over, but only once no write that made it can still be
/// running: the request deadline plus one cluster call (8 s + 2 s here).
#[tokio::test]
async fn stale_claims_are_taken_over_once_their_writes_are_over() {
    let (app, acme, other) = two_projects(|config| {
        config.request_deadline = Duration::from_secs(8);
    })
    .await;
    // The bound of a claim's writes: the request deadline plus one cluster call.
    let in_flight = app.state.config.request_deadline + app.state.config.cluster_timeout;
    let (gone, again, dropped) = (hostname("gone"), hostname("again"), hostname("dropped"));
    // Each claim is written while its create runs: between these instants.
    let gone_asked = Instant::now();
    acme.create(&app, "gone", &[&gone]).await.assert_status(201);
    acme.create(&app, "again", &[&again])
        .await
        .assert_status(201);
    acme.create(&app, "kept", &[&dropped])
        .await
        .assert_status(201);
    let all_claimed = Instant::now();

    // The App resource deleted directly, so the API never released its claim.
    let apps = Api::<App>::namespaced(
        app.cluster().client.clone(),
        &format!("{}-dev", acme.project),
    );
    apps.delete("gone", &DeleteParams::default()).await.unwrap();
    apps.delete("again", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the Apps are gone", || async {
        acme.resource(&app, "gone").await.is_none() && acme.resource(&app, "again").await.is_none()
    })
    .await;
    // Created again without its domain: another incarnation.
    acme.create(&app, "again", &[]).await.assert_status(201);
    // Dropped by an update whose release fails (the second transaction of
    // the call; the change itself succeeds).
    app.store_faults.fail_after("TransactWriteItems", 1, 1);
    acme.set_domains(&app, "kept", &[]).await.assert_status(200);
    app.store_faults.heal();
    for hostname in [&gone, &again, &dropped] {
        assert!(
            holder(&app, hostname).await.is_some(),
            "{hostname}: left behind"
        );
    }

    // Young claims are kept: their writes could still be under way. The
    // answer is judged only where it is certain whatever the machine's
    // load: if even the latest moment the server could have looked at the
    // claim is younger than the bound (the claim is no older than the time
    // since `gone` was asked for).
    if gone_asked.elapsed() < in_flight {
        let early = other.create(&app, "early", &[&gone]).await;
        if gone_asked.elapsed() < in_flight {
            assert_taken(&early, &gone, &acme, "gone");
        } else if early.status.as_u16() == 201 {
            // Answered past the bound (a slow machine): taking it over was
            // right. The takers below take it from a live holder then, so
            // it lets go first.
            app.request(Method::DELETE, &other.app("early"))
                .by(&other.owner)
                .send()
                .await
                .assert_status(204);
        }
    }
    // Every claim was written before `all_claimed`: past the bound after it.
    tokio::time::sleep(
        in_flight.saturating_sub(all_claimed.elapsed()) + Duration::from_millis(500),
    )
    .await;
    for (name, hostname) in [
        ("taker-a", &gone),
        ("taker-b", &again),
        ("taker-c", &dropped),
    ] {
        other
            .create(&app, name, &[hostname])
            .await
            .assert_status(201);
        assert_held_by(&app, hostname, &other, name).await;
    }
    // A live holder is never stale, however old its claim.
    assert_taken(
        &acme.create(&app, "late", &[&gone]).await,
        &gone,
        &other,
        "taker-a",
    );
}

/// Several apps of several organizations claim one hostname at once, by
/// create and by update: exactly one wins each time, the others are 409, and
/// the store ends with the winner's claim alone.
#[tokio::test]
async fn parallel_claims_of_one_hostname_have_one_winner() {
    let app = TestApp::with_cluster().await;
    let places = join_all(
        [&app.owner, &app.owner, &app.owner]
            .into_iter()
            .map(|owner| Place::new(&app, owner, "dev")),
    )
    .await;
    let names = ["a", "b"];
    let contenders: Vec<(&Place, &str)> = places
        .iter()
        .flat_map(|place| names.iter().map(move |name| (place, *name)))
        .collect();

    // By create, then by update of apps that all exist.
    let contested = hostname("contested");
    let answers = join_all(
        contenders
            .iter()
            .map(|(place, name)| place.create(&app, name, &[&contested])),
    )
    .await;
    assert_one_holder(&app, &contenders, &contested, one_winner(&answers, 201)).await;
    for (place, name) in &contenders {
        if place.read(&app, name).await.is_none() {
            place.create(&app, name, &[]).await.assert_status(201);
        }
    }
    let raced = hostname("raced");
    let answers = join_all(
        contenders
            .iter()
            .map(|(place, name)| place.set_domains(&app, name, &[&raced])),
    )
    .await;
    assert_one_holder(&app, &contenders, &raced, one_winner(&answers, 200)).await;
}

/// The winner holds the claim, and it alone of the contenders lists the
/// hostname (a loser of a create does not exist).
async fn assert_one_holder(
    app: &TestApp,
    contenders: &[(&Place, &str)],
    hostname: &str,
    winner: usize,
) {
    let (place, name) = contenders[winner];
    assert_held_by(app, hostname, place, name).await;
    for (i, (place, name)) in contenders.iter().enumerate() {
        let listed = place.read(app, name).await.is_some_and(|record| {
            record["domains"]
                .as_array()
                .is_some_and(|domains| domains.contains(&json!(hostname)))
        });
        assert_eq!(listed, i == winner, "{name}");
    }
}

/// The one answer with `status` among 409s; its position.
#[track_caller]
fn one_winner(answers: &[TestResponse], status: u16) -> usize {
    let won: Vec<usize> = (0..answers.len())
        .filter(|&i| answers[i].status.as_u16() == status)
        .collect();
    assert_eq!(
        won.len(),
        1,
        "exactly one wins: {:?}",
        answers.iter().map(TestResponse::text).collect::<Vec<_>>()
    );
    for (i, answer) in answers.iter().enumerate() {
        if i != won[0] {
            assert_eq!(answer.status.as_u16(), 409, "{}", answer.text());
            let code = answer.json()["code"].clone();
            assert!(code == "domain_taken" || code == "conflict", "{code}");
        }
    }
    won[0]
}

/// Two apps trying to swap hostnames at once both find the other's still
/// served (each releases only after its own change), so both are refused and
/// nothing moves; a swap through a free name works, and a race for a name
/// one of them is dropping never leaves it with two apps or with none that
/// lists it and holds it.
#[tokio::test]
async fn racing_swaps_lose_and_double_nothing() {
    let (app, acme, other) = two_projects(|_| {}).await;
    let (one, two, three) = (hostname("one"), hostname("two"), hostname("three"));
    acme.create(&app, "a", &[&one]).await.assert_status(201);
    other.create(&app, "b", &[&two]).await.assert_status(201);

    let (a, b) = tokio::join!(
        acme.set_domains(&app, "a", &[&two]),
        other.set_domains(&app, "b", &[&one])
    );
    a.assert_problem(409, "domain_taken");
    b.assert_problem(409, "domain_taken");
    assert_held_by(&app, &one, &acme, "a").await;
    assert_held_by(&app, &two, &other, "b").await;

    // In turns, through a free name.
    acme.set_domains(&app, "a", &[&three])
        .await
        .assert_status(200);
    other
        .set_domains(&app, "b", &[&one])
        .await
        .assert_status(200);
    acme.set_domains(&app, "a", &[&two])
        .await
        .assert_status(200);
    assert_held_by(&app, &two, &acme, "a").await;
    assert_held_by(&app, &one, &other, "b").await;
    assert_eq!(holder(&app, &three).await, None);

    // A races B for the name B is dropping, several times.
    for round in 0..3 {
        let (give, take) = if round % 2 == 0 {
            ((&other, "b"), (&acme, "a"))
        } else {
            ((&acme, "a"), (&other, "b"))
        };
        let wanted = give.0.read(&app, give.1).await.unwrap()["domains"][0]
            .as_str()
            .unwrap()
            .to_owned();
        let kept = take.0.read(&app, take.1).await.unwrap()["domains"][0]
            .as_str()
            .unwrap()
            .to_owned();
        let fresh = hostname("fresh");
        let (gave, took) = tokio::join!(
            give.0.set_domains(&app, give.1, &[&fresh]),
            take.0.set_domains(&app, take.1, &[&kept, &wanted])
        );
        gave.assert_status(200);
        assert_held_by(&app, &fresh, give.0, give.1).await;
        if took.status.as_u16() == 200 {
            assert_held_by(&app, &wanted, take.0, take.1).await;
        } else {
            took.assert_problem(409, "domain_taken");
            assert_eq!(holder(&app, &wanted).await, None, "released, not doubled");
            take.0
                .set_domains(&app, take.1, &[&kept, &wanted])
                .await
                .assert_status(200);
        }
        assert_held_by(&app, &kept, take.0, take.1).await;
        // Back to one name each for the next round.
        take.0
            .set_domains(&app, take.1, &[&wanted])
            .await
            .assert_status(200);
        assert_eq!(holder(&app, &kept).await, None);
    }
}

#[tokio::test]
async fn custom_domains_may_not_fall_under_the_apps_domain() {
    let app = TestApp::with_cluster().await;
    let acme = Place::new(&app, &app.owner, "dev").await;
    let default_like = format!("shop--dev--{}.{APPS_DOMAIN}", acme.project);
    for domain in [
        APPS_DOMAIN.to_owned(),
        default_like.clone(),
        format!("{}.", default_like.to_uppercase()),
        format!("a.b.{APPS_DOMAIN}"),
    ] {
        let refused = acme
            .create(&app, "shop", &["ok.example.test", &domain])
            .await;
        refused.assert_problem(422, "validation_failed");
        let detail = refused.json()["detail"].as_str().unwrap().to_owned();
        assert!(detail.starts_with("domains[1]: "), "{detail}");
        assert!(detail.contains(APPS_DOMAIN), "{detail}");
        assert!(acme.read(&app, "shop").await.is_none());
    }
    // A name that merely ends like it is another domain.
    let lookalike = format!("{}-{APPS_DOMAIN}.example.test", unique("x"));
    acme.create(&app, "shop", &[&lookalike])
        .await
        .assert_status(201);
    acme.set_domains(&app, "shop", &[&default_like])
        .await
        .assert_problem(422, "validation_failed");
    assert_eq!(acme.read(&app, "shop").await.unwrap()["revision"], 1);
}

#[track_caller]
fn assert_name_refused(answer: &TestResponse) {
    answer.assert_problem(422, "validation_failed");
    let detail = answer.json()["detail"].as_str().unwrap_or("").to_owned();
    assert!(
        detail.starts_with("name: ") && detail.contains("'--'"),
        "{detail}"
    );
}

#[tokio::test]
async fn new_names_may_not_contain_the_default_hosts_separator() {
    let app = TestApp::with_cluster().await;
    let project = format!("{}--x", unique("p"));
    let refused = app
        .post("/api/v1/projects")
        .by(&app.owner)
        .json(json!({ "name": project, "display_name": "p" }))
        .send()
        .await;
    assert_name_refused(&refused);

    let acme = Place::new(&app, &app.owner, "dev").await;
    let refused = app
        .post(&format!("/api/v1/projects/{}/environments", acme.project))
        .by(&app.owner)
        .json(json!({ "name": "qa--eu" }))
        .send()
        .await;
    assert_name_refused(&refused);

    assert_name_refused(&acme.create(&app, "web--x", &[]).await);
    let refused = app
        .post(&format!(
            "/api/v1/projects/{}/environments/dev/templates/nginx",
            acme.project
        ))
        .by(&app.owner)
        .json(json!({ "name": "site--x" }))
        .send()
        .await;
    assert_name_refused(&refused);
    // A single hyphen is a name like any other.
    acme.create(&app, "web-x", &[]).await.assert_status(201);
}

/// Issue 15's example: project `store`/environment `acme`/app `web-staging`
/// and project `acme-store`/environment `staging`/app `web` once shared a
/// default host; now each has its own.
#[tokio::test]
async fn default_hosts_name_one_app() {
    let app = TestApp::with_cluster().await;
    let suffix = unique("s");
    let (store_acme, acme_store_staging) = tokio::join!(
        Place::named(&app, &app.owner, format!("store-{suffix}"), "acme"),
        Place::named(&app, &app.owner, format!("acme-store-{suffix}"), "staging")
    );
    store_acme
        .create(&app, "web-staging", &[])
        .await
        .assert_status(201);
    acme_store_staging
        .create(&app, "web", &[])
        .await
        .assert_status(201);
    let expected = [
        (
            &store_acme,
            "web-staging",
            format!("web-staging--acme--store-{suffix}"),
        ),
        (
            &acme_store_staging,
            "web",
            format!("web--staging--acme-store-{suffix}"),
        ),
    ];
    for (place, name, label) in &expected {
        let url = format!("https://{label}.{APPS_DOMAIN}");
        eventually("the app reports its default host", || async {
            place.read(&app, name).await.unwrap()["url"] == json!(url)
        })
        .await;
    }
    assert_ne!(expected[0].2, expected[1].2);
}
