//! A custom domain is served only once its organization has proven it
//! controls the name: a TXT record `_berth-challenge.{hostname}` holding the
//! organization's value, found by the domain check or the scheduled sweep
//! (against a real DNS server on loopback, `support::dns`). Pending claims
//! of several organizations stand side by side; the first proof wins; a
//! proof that disappears is reported and, after its grace, ends.

use k8s_openapi::api::networking::v1::Ingress;
use kube::api::Api;
use serde_json::Value;

use crate::support::table as store;
use berth_cluster::apps::ANNOTATION_VERIFIED;
use berth_store::keys;

use crate::hostnames::Place;
use crate::support::dns::TestDns;
use crate::support::{TestApp, eventually, unique};

/// The API asking `dns` for names, and one environment in each of two
/// organizations: the owner's and globex's.
pub(crate) async fn two_organizations(dns: &TestDns) -> (TestApp, Place, Place) {
    let server = dns.address;
    let app = TestApp::with_cluster_config(move |config| config.dns_servers = vec![server]).await;
    let globex = app.other_org("globex").await;
    let (acme, other) = tokio::join!(
        Place::new(&app, &app.owner, "dev"),
        Place::new(&app, &globex, "dev")
    );
    (app, acme, other)
}

/// The verification part of `place`'s check of its app `name`'s only domain.
async fn verification(app: &TestApp, place: &Place, name: &str) -> Value {
    let answer = app
        .get(&format!("{}/domains", place.app(name)))
        .by(&place.owner)
        .send()
        .await;
    answer.assert_status(200);
    answer.json()[0]["verification"].clone()
}

/// The hostnames the app's App says are verified (None without the annotation).
async fn annotated(app: &TestApp, place: &Place, name: &str) -> Option<String> {
    let resource = place.resource(app, name).await.expect("the App");
    resource
        .metadata
        .annotations?
        .get(ANNOTATION_VERIFIED)
        .cloned()
}

/// Whether the Ingress of the app `name` at `place` has a rule for `host`.
async fn serves(app: &TestApp, place: &Place, name: &str, host: &str) -> bool {
    let namespace = format!("{}-{}", place.project, place.environment);
    let ingresses = Api::<Ingress>::namespaced(app.cluster().client.clone(), &namespace);
    let Some(ingress) = ingresses.get_opt(name).await.expect("reading an Ingress") else {
        return false;
    };
    let rules = ingress.spec.and_then(|spec| spec.rules).unwrap_or_default();
    rules.iter().any(|rule| rule.host.as_deref() == Some(host))
}

/// The Ingress of the app exists (its default host), so a missing rule
/// says the domain is not served, not that nothing was rendered yet.
async fn rendered(app: &TestApp, place: &Place, name: &str) {
    let namespace = format!("{}-{}", place.project, place.environment);
    let ingresses = Api::<Ingress>::namespaced(app.cluster().client.clone(), &namespace);
    eventually("the app's Ingress", || async {
        ingresses
            .get_opt(name)
            .await
            .expect("reading an Ingress")
            .is_some()
    })
    .await;
}

#[tokio::test]
async fn a_domain_is_served_once_its_organization_proves_it_and_the_first_proof_wins() {
    let dns = TestDns::start().await;
    let (app, acme, globex) = two_organizations(&dns).await;
    let shop = format!("{}.example.test", unique("proof"));

    // Both organizations may list it: pending, served by neither.
    acme.create(&app, "shop", &[&shop]).await.assert_status(201);
    globex
        .create(&app, "web", &[&shop])
        .await
        .assert_status(201);
    let (mine, theirs) = (
        verification(&app, &acme, "shop").await,
        verification(&app, &globex, "web").await,
    );
    for pending in [&mine, &theirs] {
        assert_eq!(pending["state"], "pending", "{pending}");
        assert_eq!(pending["record_type"], "TXT");
        assert_eq!(pending["record_name"], format!("_berth-challenge.{shop}"));
        assert_eq!(pending["verified_at"], Value::Null);
    }
    assert_ne!(
        mine["record_value"], theirs["record_value"],
        "each organization proves with a value of its own"
    );
    assert_eq!(annotated(&app, &acme, "shop").await.as_deref(), Some(""));
    rendered(&app, &acme, "shop").await;
    assert!(
        !serves(&app, &acme, "shop", &shop).await,
        "not served while pending"
    );

    // The other organization's value proves nothing for this one.
    let record = format!("_berth-challenge.{shop}");
    dns.publish_txt(&record, theirs["record_value"].as_str().unwrap())
        .await;
    dns.withdraw_txt(&record).await;
    dns.publish_txt(&record, mine["record_value"].as_str().unwrap())
        .await;
    let verified = verification(&app, &acme, "shop").await;
    assert_eq!(verified["state"], "verified", "{verified}");
    assert!(verified["verified_at"].is_string());
    assert_eq!(
        annotated(&app, &acme, "shop").await.as_deref(),
        Some(shop.as_str())
    );
    eventually("the verified domain is served", || async {
        serves(&app, &acme, "shop", &shop).await
    })
    .await;

    // The first proof wins: the other organization's, published now, is
    // too late; its app never serves the name, and its writes that list
    // it are refused from now on, with nothing written.
    dns.publish_txt(&record, theirs["record_value"].as_str().unwrap())
        .await;
    assert_eq!(verification(&app, &globex, "web").await["state"], "taken");
    assert_eq!(annotated(&app, &globex, "web").await.as_deref(), Some(""));
    let refused = globex.create(&app, "blog", &[&shop]).await;
    refused.assert_problem(409, "domain_taken");
    let detail = refused.json()["detail"].as_str().unwrap().to_owned();
    assert!(
        detail.contains("verified by another organization"),
        "{detail}"
    );
    assert!(!detail.contains(&acme.owner.org), "{detail}");
    assert!(globex.read(&app, "blog").await.is_none());
    let before = globex.read(&app, "web").await.unwrap()["revision"].clone();
    globex
        .set_domains(&app, "web", &[&shop, "www.example.test"])
        .await
        .assert_problem(409, "domain_taken");
    assert_eq!(globex.read(&app, "web").await.unwrap()["revision"], before);
    // Dropping it is its way out.
    globex
        .set_domains(&app, "web", &[])
        .await
        .assert_status(200);
}

#[tokio::test]
async fn a_proof_that_disappears_is_reported_and_after_its_grace_ends() {
    let dns = TestDns::start().await;
    let (app, acme, globex) = two_organizations(&dns).await;
    let shop = format!("{}.example.test", unique("lapse"));
    let record = format!("_berth-challenge.{shop}");
    acme.create(&app, "shop", &[&shop]).await.assert_status(201);
    let value = verification(&app, &acme, "shop").await["record_value"]
        .as_str()
        .unwrap()
        .to_owned();
    dns.publish_txt(&record, &value).await;
    // The scheduled sweep finds it too.
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(60);
    let run = berth_fn_cleanup::run(app.state.clone(), deadline)
        .await
        .expect("a sweep");
    assert!(run.domains.unwrap().verified >= 1);
    assert_eq!(verification(&app, &acme, "shop").await["state"], "verified");

    // Withdrawn: still served, reported with the time it ends.
    dns.withdraw_txt(&record).await;
    let lapsing = verification(&app, &acme, "shop").await;
    assert_eq!(lapsing["state"], "lapsing", "{lapsing}");
    let ends: jiff::Timestamp = lapsing["lapses_at"].as_str().unwrap().parse().unwrap();
    let grace = ends.duration_since(jiff::Timestamp::now());
    let day = jiff::SignedDuration::from_hours(24);
    assert!(
        grace > day * 6 && grace <= day * 7,
        "a grace of seven days: {lapsing}"
    );
    assert_eq!(
        annotated(&app, &acme, "shop").await.as_deref(),
        Some(shop.as_str())
    );

    // The grace over (its end moved to the past, as seven days would):
    // the sweep ends it, the app stops serving it, and the name is open
    // to whoever proves it next.
    app.dynamodb
        .update_item()
        .table_name(app.state.store.table())
        .set_key(Some(store::key(keys::host(&shop), keys::HOST_SK)))
        .update_expression("SET #owner.#lapses = :past")
        .expression_attribute_names("#owner", "owner")
        .expression_attribute_names("#lapses", "lapses_at")
        .expression_attribute_values(":past", store::n(1))
        .send()
        .await
        .expect("the grace ends");
    berth_fn_cleanup::run(app.state.clone(), deadline)
        .await
        .expect("a sweep");
    assert_eq!(verification(&app, &acme, "shop").await["state"], "pending");
    assert_eq!(annotated(&app, &acme, "shop").await.as_deref(), Some(""));
    eventually("the lapsed domain is no longer served", || async {
        !serves(&app, &acme, "shop", &shop).await
    })
    .await;
    globex
        .create(&app, "web", &[&shop])
        .await
        .assert_status(201);
    let theirs = verification(&app, &globex, "web").await["record_value"]
        .as_str()
        .unwrap()
        .to_owned();
    dns.publish_txt(&record, &theirs).await;
    assert_eq!(
        verification(&app, &globex, "web").await["state"],
        "verified"
    );
}
