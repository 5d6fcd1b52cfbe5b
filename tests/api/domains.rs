//! The domain check (`GET ENV/apps/{app}/domains`) against a real DNS server
//! on loopback (`support::dns`): CNAME chains, A and AAAA records, NXDOMAIN
//! and a name server that never answers.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::TestApp;
use crate::support::dns::{GATEWAY_ADDRESS, GATEWAY_HOSTNAME, TestDns};
use berth_api::config::Config;

const NO_GATEWAY: &str = "no gateway is configured (BERTH_GATEWAY_HOSTNAME or \
                          BERTH_GATEWAY_ADDRESSES), so this name cannot be checked";

/// The API with the cluster, asking `dns` for names, and `gateway` applied.
async fn app_asking(dns: &TestDns, gateway: impl FnOnce(&mut Config)) -> TestApp {
    let server = dns.address;
    TestApp::with_cluster_config(move |config| {
        config.dns_servers = vec![server];
        gateway(config);
    })
    .await
}

/// A provisioned environment and an app in it with `domains`; the app's path.
async fn app_with_domains(app: &TestApp, domains: &[&str]) -> String {
    let project = app.ready_environment("dns", "staging").await;
    let apps = format!("/api/v1/projects/{project}/environments/staging/apps");
    app.post(&apps)
        .by(&app.owner)
        .json(json!({ "name": "shop", "image": "nginx:1.27", "port": 80, "domains": domains }))
        .send()
        .await
        .assert_status(201);
    format!("{apps}/shop")
}

/// The entries of a check, by hostname, after checking the order.
pub(crate) async fn check(app: &TestApp, path: &str, hostnames: &[&str]) -> Vec<Value> {
    let answer = app
        .get(&format!("{path}/domains"))
        .by(&app.owner)
        .send()
        .await;
    answer.assert_status(200);
    let entries = answer.json().as_array().cloned().expect("a list");
    let listed: Vec<&str> = entries
        .iter()
        .map(|entry| entry["hostname"].as_str().unwrap())
        .collect();
    assert_eq!(
        listed, hostnames,
        "one entry per hostname, in the app's order"
    );
    entries
}

fn entry(ok: bool, records: &[&str], expected: &[&str], message: &str) -> Value {
    json!({ "ok": ok, "records": records, "expected": expected, "message": message })
}

/// The DNS part of an entry (the certificate's is `certificates`').
fn without_hostname(mut entry: Value) -> Value {
    entry.as_object_mut().unwrap().remove("hostname");
    entry.as_object_mut().unwrap().remove("certificate");
    entry.as_object_mut().unwrap().remove("verification");
    entry
}

#[tokio::test]
async fn every_kind_of_answer_in_one_bounded_call() {
    let dns = TestDns::start().await;
    let app = app_asking(&dns, |config| {
        config.gateway_hostname = Some(GATEWAY_HOSTNAME.into());
        config.gateway_addresses = vec![GATEWAY_ADDRESS.parse().unwrap()];
    })
    .await;
    let hostnames = [
        "shop.example.test",
        "alias.example.test",
        "apex.example.test",
        "v6.example.test",
        "split.example.test",
        "elsewhere.example.test",
        "txt.example.test",
        "nosuch.example.test",
        "www.hang.example.test",
        "api.hang.example.test",
    ];
    let path = app_with_domains(&app, &hostnames).await;

    let started = Instant::now();
    let entries = check(&app, &path, &hostnames).await;
    let took = started.elapsed();
    // Two names are never answered: each waits out its 2 s bound, at the
    // same time as each other and as every other name.
    assert!(
        took >= Duration::from_millis(1900) && took < Duration::from_secs(3),
        "the check took {took:?}"
    );

    let expected = [GATEWAY_HOSTNAME, GATEWAY_ADDRESS];
    let want = [
        entry(
            true,
            &["gw.example.test", "192.0.2.10"],
            &expected,
            "points at the gateway",
        ),
        entry(
            true,
            &["shop.example.test", "gw.example.test", "192.0.2.10"],
            &expected,
            "points at the gateway",
        ),
        entry(true, &["192.0.2.10"], &expected, "points at the gateway"),
        entry(
            false,
            &["2001:db8::99"],
            &expected,
            "resolves to 2001:db8::99, not the gateway",
        ),
        entry(
            false,
            &["192.0.2.10", "203.0.113.9"],
            &expected,
            "resolves to 203.0.113.9 besides the gateway, so some requests would miss it",
        ),
        entry(
            false,
            &["203.0.113.9"],
            &expected,
            "resolves to 203.0.113.9, not the gateway",
        ),
        entry(
            false,
            &[],
            &expected,
            "the name has no CNAME, A or AAAA record",
        ),
        entry(false, &[], &expected, "no such name (NXDOMAIN)"),
        entry(false, &[], &expected, "the DNS lookup timed out"),
        entry(false, &[], &expected, "the DNS lookup timed out"),
    ];
    for ((hostname, got), want) in hostnames.iter().zip(entries).zip(want) {
        assert_eq!(without_hostname(got), want, "{hostname}");
    }

    let event = app.last_audit_event("acme").await;
    assert_eq!(
        (
            event.action.as_str(),
            event.target_kind.as_deref(),
            event.target.as_deref(),
            event.status
        ),
        ("checkAppDomains", Some("app"), Some("shop"), Some(200))
    );
}

#[tokio::test]
async fn a_gateway_known_only_by_hostname_needs_a_cname() {
    let dns = TestDns::start().await;
    let app = app_asking(&dns, |config| {
        config.gateway_hostname = Some(GATEWAY_HOSTNAME.into());
    })
    .await;
    let hostnames = ["alias.example.test", "apex.example.test"];
    let path = app_with_domains(&app, &hostnames).await;
    let entries = check(&app, &path, &hostnames).await;
    assert_eq!(entries[0]["ok"], true);
    assert_eq!(entries[0]["expected"], json!([GATEWAY_HOSTNAME]));
    // On the gateway's address, but the gateway's address is not configured:
    // Berth cannot know it is the gateway's.
    assert_eq!(
        without_hostname(entries[1].clone()),
        entry(
            false,
            &["192.0.2.10"],
            &[GATEWAY_HOSTNAME],
            "resolves to 192.0.2.10, not the gateway"
        )
    );
}

#[tokio::test]
async fn without_a_gateway_every_entry_says_so() {
    let dns = TestDns::start().await;
    let app = app_asking(&dns, |_| {}).await;
    let hostnames = ["shop.example.test", "nosuch.example.test"];
    let path = app_with_domains(&app, &hostnames).await;
    let entries = check(&app, &path, &hostnames).await;
    // What the names resolve to is still shown.
    assert_eq!(
        without_hostname(entries[0].clone()),
        entry(false, &["gw.example.test", "192.0.2.10"], &[], NO_GATEWAY)
    );
    assert_eq!(
        without_hostname(entries[1].clone()),
        entry(false, &[], &[], NO_GATEWAY)
    );

    // An app without domains has no entries; an unknown app is 404.
    let apps = path.trim_end_matches("/shop");
    app.post(apps)
        .by(&app.owner)
        .json(json!({ "name": "plain", "image": "nginx:1.27" }))
        .send()
        .await
        .assert_status(201);
    let answer = app
        .get(&format!("{apps}/plain/domains"))
        .by(&app.owner)
        .send()
        .await;
    answer.assert_status(200);
    assert_eq!(answer.json(), json!([]));
    app.get(&format!("{apps}/nosuch/domains"))
        .by(&app.owner)
        .send()
        .await
        .assert_problem(404, "not_found");
}
