//! Builds that follow the app (issue 29), through the API with the
//! controller running them and the test playing the kubelet: a decision of
//! the app (a rollback, an image set by hand, the source removed, the
//! webhook deleted) cancels its pending builds, saying why, and no build
//! writes its image over it; `cancelBuild`; fair shares between
//! organizations; the egress policies; the credential copy's name taken by
//! another; the addresses a `git_repo` may name; what a webhook's receiver
//! refuses and remembers.

use std::collections::BTreeMap;

use http::Method;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

use crate::support::table as store;
use berth_cluster::crd::{App, BUILDS_NAMESPACE, Build, LABEL_APP_UID, LABEL_BUILD, object_names};
use berth_cluster::registry::{self, Registry};
use berth_domain::Role;
use berth_domain::app::AppSource;
use berth_store::keys;

use crate::builds_running::{PREFIX, set_registry, token_secret};
use crate::support::cluster::hold_registry_settings_for_the_test;
use crate::support::kubelet::{BuildEnd, end_build_pods};
use crate::support::{TestApp, TestUser, eventually, unique};
use crate::webhooks::{Hook, source_app};

const REPO: &str = "https://github.com/acme/shop.git";
const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";
const DIGEST: &str = "sha256:abababababababababababababababababababababababababababababababab";

/// An app of the owner's in a ready environment of a fresh project.
struct Shop {
    /// `/api/v1/projects/…/apps/{name}`.
    path: String,
    namespace: String,
    name: String,
}

impl Shop {
    /// An image app with a source (so the registry is set, and its builds
    /// run): revision 1.
    async fn new(test: &TestApp, user: &TestUser) -> Shop {
        Self::in_environment(test, user, json!({"name": "dev"})).await
    }

    /// The same, in an environment made with `environment` (named `dev`).
    async fn in_environment(test: &TestApp, user: &TestUser, environment: Value) -> Shop {
        set_registry(&test.cluster().client).await;
        let project = test.ready_environment_of(user, "follow", environment).await;
        let environments = format!("/api/v1/projects/{project}/environments");
        let apps = format!("{environments}/dev/apps");
        test.post(&apps)
            .by(user)
            .json(json!({"name": "shop", "image": "nginx", "git_repo": REPO, "port": 8080}))
            .send()
            .await
            .assert_status(201);
        Shop {
            path: format!("{apps}/shop"),
            namespace: format!("{project}-dev"),
            name: "shop".to_owned(),
        }
    }

    /// The app's new webhook, made by the owner.
    async fn hook(&self, test: &TestApp) -> Hook {
        Hook::make_for(test, &self.path).await
    }

    async fn record(&self, test: &TestApp) -> Value {
        let answer = test.get(&self.path).by(&test.owner).send().await;
        answer.assert_status(200);
        answer.json()["app"].clone()
    }

    async fn build(&self, test: &TestApp, number: i64) -> Value {
        let answer = test
            .get(&format!("{}/builds/{number}", self.path))
            .by(&test.owner)
            .send()
            .await;
        answer.assert_status(200);
        answer.json()
    }

    async fn create_build(&self, test: &TestApp, user: &TestUser) -> i64 {
        let answer = test
            .post(&format!("{}/builds", self.path))
            .by(user)
            .send()
            .await;
        answer.assert_status(202);
        answer.json()["id"].as_i64().expect("an id")
    }

    /// Waits until build `number` is `status`, and returns it.
    async fn until_build(&self, test: &TestApp, number: i64, status: &str) -> Value {
        eventually(&format!("build {number} is {status}"), || async {
            self.build(test, number).await["status"] == status
        })
        .await;
        self.build(test, number).await
    }

    fn job_name(&self, number: i64) -> String {
        object_names::build_job(&object_names::build(&self.namespace, &self.name, number))
    }

    async fn job(&self, test: &TestApp, number: i64) -> Option<Job> {
        Api::<Job>::namespaced(test.cluster().client.clone(), BUILDS_NAMESPACE)
            .get_opt(&self.job_name(number))
            .await
            .expect("reading a Job")
    }

    async fn uid(&self, test: &TestApp) -> String {
        Api::<App>::namespaced(test.cluster().client.clone(), &self.namespace)
            .get(&self.name)
            .await
            .expect("the App")
            .metadata
            .uid
            .expect("a uid")
    }

    /// Ends whatever pods build `number` still has as if it pushed its
    /// image (a build pod may outlive its deleted Job a moment): none of
    /// it may reach the app.
    async fn push_anyway(&self, test: &TestApp, number: i64) {
        let selector = format!(
            "{LABEL_APP_UID}={},{LABEL_BUILD}={number}",
            self.uid(test).await
        );
        let end = BuildEnd::Pushed {
            commit: COMMIT,
            strategy: "dockerfile",
            digest: DIGEST,
        };
        end_build_pods(&test.cluster().client, BUILDS_NAMESPACE, &selector, &end).await;
    }
}

/// A test with an app `shop` whose build (its number) runs.
async fn a_running_build() -> (TestApp, Shop, i64) {
    let test = TestApp::with_cluster().await;
    let shop = Shop::new(&test, &test.owner).await;
    let number = shop.create_build(&test, &test.owner).await;
    shop.until_build(&test, number, "running").await;
    (test, shop, number)
}

/// A running build of `shop`, asked for before `decide`; once the decision
/// is made, the build is `cancelled` saying `why`, its Job is gone, and
/// the app stays as the decision left it even when the build's pod ends
/// as if it pushed.
async fn a_decision_cancels_the_running_build(
    test: &TestApp,
    shop: &Shop,
    number: i64,
    decide: impl AsyncFnOnce(),
    why: &str,
) {
    shop.until_build(test, number, "running").await;
    assert!(shop.job(test, number).await.is_some(), "its Job runs");
    decide().await;
    let decided = shop.record(test).await;
    let cancelled = shop.until_build(test, number, "cancelled").await;
    let message = cancelled["message"].as_str().unwrap_or_default();
    assert!(message.contains(why), "{message:?} should say {why:?}");
    assert!(cancelled["finished_at"].as_i64().is_some());
    assert_eq!(cancelled["image"], Value::Null);
    eventually("the cancelled build's Job is deleted", || async {
        shop.job(test, number).await.is_none()
    })
    .await;
    shop.push_anyway(test, number).await;
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    let after = shop.record(test).await;
    assert_eq!(
        after["revision"], decided["revision"],
        "nothing written over"
    );
    assert_eq!(after["image"], decided["image"]);
    assert_eq!(shop.build(test, number).await["status"], "cancelled");
}

#[tokio::test]
async fn a_rollback_during_a_build_cancels_it_and_is_not_overwritten() {
    let test = TestApp::with_cluster().await;
    let shop = Shop::new(&test, &test.owner).await;
    test.request(Method::PATCH, &shop.path)
        .by(&test.owner)
        .json(json!({"image": "nginx:2"}))
        .send()
        .await
        .assert_status(200);
    let number = shop.create_build(&test, &test.owner).await;
    a_decision_cancels_the_running_build(
        &test,
        &shop,
        number,
        async || {
            test.post(&format!("{}/rollback", shop.path))
                .by(&test.owner)
                .json(json!({"revision": 1}))
                .send()
                .await
                .assert_status(200);
        },
        "rolled back to revision 1",
    )
    .await;
    assert_eq!(shop.record(&test).await["image"], "nginx");
}

/// An update of `shop` that is a decision, made while its build runs.
async fn an_update_cancels_the_running_build(update: Value, why: &str) -> Value {
    let (test, shop, number) = a_running_build().await;
    a_decision_cancels_the_running_build(
        &test,
        &shop,
        number,
        async || {
            test.request(Method::PATCH, &shop.path)
                .by(&test.owner)
                .json(update)
                .send()
                .await
                .assert_status(200);
        },
        why,
    )
    .await;
    shop.record(&test).await
}

#[tokio::test]
async fn an_image_set_by_hand_during_a_build_cancels_it_and_is_not_overwritten() {
    let after = an_update_cancels_the_running_build(
        json!({"image": "nginx:3"}),
        "the image was set by hand",
    )
    .await;
    assert_eq!(after["image"], "nginx:3");
}

#[tokio::test]
async fn removing_the_source_during_a_build_cancels_it_and_is_not_overwritten() {
    let after =
        an_update_cancels_the_running_build(json!({"git_repo": null}), "the source was removed")
            .await;
    assert_eq!(after["image"], "nginx");
    assert_eq!(after["git_repo"], Value::Null);
}

#[tokio::test]
async fn changing_the_source_during_a_build_cancels_it_and_is_not_overwritten() {
    let after =
        an_update_cancels_the_running_build(json!({"git_ref": "release"}), "the source changed")
            .await;
    assert_eq!(after["git_ref"], "release");
}

#[tokio::test]
async fn deleting_the_webhook_cancels_the_builds_it_started() {
    let test = TestApp::with_cluster().await;
    let shop = Shop::new(&test, &test.owner).await;
    let hook = shop.hook(&test).await;
    let pushed = hook.push(&test, "refs/heads/main", COMMIT).await;
    pushed.assert_status(202);
    let number = pushed.json()["id"].as_i64().expect("an id");
    a_decision_cancels_the_running_build(
        &test,
        &shop,
        number,
        async || {
            test.request(Method::DELETE, &format!("{}/webhook", shop.path))
                .by(&test.owner)
                .send()
                .await
                .assert_status(204);
        },
        "its webhook was deleted",
    )
    .await;
    assert_eq!(shop.record(&test).await["image"], "nginx");
}

/// A promotion is a decision of the target app only: its running build is
/// cancelled, the source app's goes on.
#[tokio::test]
async fn a_promotion_cancels_the_targets_builds_only() {
    let test = TestApp::with_cluster().await;
    let dev = Shop::new(&test, &test.owner).await;
    let project = dev.path.split('/').nth(4).unwrap().to_owned();
    let environments = format!("/api/v1/projects/{project}/environments");
    test.post(&environments)
        .by(&test.owner)
        .json(json!({"name": "prod"}))
        .send()
        .await
        .assert_status(201);
    test.wait_for_environment(&project, "prod").await;
    let prod = Shop {
        path: format!("{environments}/prod/apps/shop"),
        namespace: format!("{project}-prod"),
        name: "shop".to_owned(),
    };
    test.post(&format!("{environments}/prod/apps"))
        .by(&test.owner)
        .json(json!({"name": "shop", "image": "nginx", "git_repo": REPO, "port": 8080}))
        .send()
        .await
        .assert_status(201);
    let theirs = dev.create_build(&test, &test.owner).await;
    dev.until_build(&test, theirs, "running").await;
    let number = prod.create_build(&test, &test.owner).await;
    a_decision_cancels_the_running_build(
        &test,
        &prod,
        number,
        async || {
            test.post(&format!("{}/promote", dev.path))
                .by(&test.owner)
                .json(json!({"environment": "prod"}))
                .send()
                .await
                .assert_status(200);
        },
        "promoted from dev",
    )
    .await;
    assert_eq!(dev.build(&test, theirs).await["status"], "running");
    assert!(dev.job(&test, theirs).await.is_some());
}

/// `cancelBuild`: `app-deploy`, `202` with the build being cancelled, then
/// `cancelled` saying who; `409` once it finished; audited.
#[tokio::test]
async fn cancel_build_stops_a_build_and_refuses_a_finished_one() {
    let (test, shop, number) = a_running_build().await;
    let cancel = format!("{}/builds/{number}/cancel", shop.path);

    let operator = test.user(Role::Operator).await;
    test.post(&cancel)
        .by(&operator)
        .send()
        .await
        .assert_problem(403, "forbidden");
    assert_eq!(shop.build(&test, number).await["status"], "running");

    let developer = test.user(Role::Developer).await;
    let answer = test.post(&cancel).by(&developer).send().await;
    answer.assert_status(202);
    let shown = answer.json();
    assert_eq!(shown["id"], number);
    assert!(
        ["running", "cancelled"].contains(&shown["status"].as_str().unwrap_or_default()),
        "{shown}"
    );
    let event = test.last_audit_event(&test.owner.org).await;
    assert_eq!(event.action, "cancelBuild");
    assert_eq!(event.status, Some(202));

    let cancelled = shop.until_build(&test, number, "cancelled").await;
    let message = cancelled["message"].as_str().unwrap_or_default();
    assert!(message.contains(&developer.email), "{message}");
    eventually("the Job is deleted", || async {
        shop.job(&test, number).await.is_none()
    })
    .await;
    test.post(&cancel)
        .by(&developer)
        .send()
        .await
        .assert_problem(409, "conflict");

    // A build that succeeded is past cancelling too.
    let next = shop.create_build(&test, &test.owner).await;
    shop.until_build(&test, next, "running").await;
    shop.push_anyway(&test, next).await;
    shop.until_build(&test, next, "succeeded").await;
    test.post(&format!("{}/builds/{next}/cancel", shop.path))
        .by(&test.owner)
        .send()
        .await
        .assert_problem(409, "conflict");
    test.post(&format!("{}/builds/999/cancel", shop.path))
        .by(&test.owner)
        .send()
        .await
        .assert_status(404);
}

/// At most `BuilderSettings::per_organization` (3 by default) builds of one
/// organization run at once: its fourth waits queued, with no Job (so no
/// deadline runs), while another organization's build starts at once.
#[tokio::test]
async fn one_organization_cannot_take_every_build_slot() {
    let test = TestApp::with_cluster().await;
    let shop = Shop::new(&test, &test.owner).await;
    let cap = berth_controller::build_engine::DEFAULT_BUILDS_PER_ORGANIZATION as i64;
    let apps = shop.path.rsplit_once('/').unwrap().0.to_owned();
    let mut shops = vec![shop];
    for n in 1..=cap {
        let name = format!("shop{n}");
        test.post(&apps)
            .by(&test.owner)
            .json(json!({"name": name, "image": "nginx", "git_repo": REPO}))
            .send()
            .await
            .assert_status(201);
        shops.push(Shop {
            path: format!("{apps}/{name}"),
            namespace: shops[0].namespace.clone(),
            name,
        });
    }
    for shop in &shops[..cap as usize] {
        let number = shop.create_build(&test, &test.owner).await;
        shop.until_build(&test, number, "running").await;
    }
    let last = &shops[cap as usize];
    let waiting = last.create_build(&test, &test.owner).await;
    eventually("the organization's next build says it waits", || async {
        last.build(&test, waiting).await["message"]
            .as_str()
            .is_some_and(|message| message.contains(&format!("at most {cap}")))
    })
    .await;
    let shown = last.build(&test, waiting).await;
    assert_eq!(shown["status"], "queued");
    assert_eq!(shown["started_at"], Value::Null);
    assert!(
        last.job(&test, waiting).await.is_none(),
        "no Job, no deadline"
    );

    // Another organization builds meanwhile.
    let other = test.other_org("globex").await;
    let theirs = Shop::new(&test, &other).await;
    let number = theirs.create_build(&test, &other).await;
    eventually("the other organization's build runs", || async {
        let shown = test
            .get(&format!("{}/builds/{number}", theirs.path))
            .by(&other)
            .send()
            .await
            .json();
        shown["status"] == "running"
    })
    .await;

    // One of the first ends: the waiting one starts.
    shops[0].push_anyway(&test, 1).await;
    shops[0].until_build(&test, 1, "succeeded").await;
    last.until_build(&test, waiting, "running").await;
    assert!(last.job(&test, waiting).await.is_some());
}

/// A build's pod is bounded in ephemeral storage (requests and limits on
/// every container), and the builds' namespace and (with
/// `BERTH_APP_EGRESS=restricted`, as the tests' controller runs) the
/// environment's get the egress policy: DNS, the internet but link-local,
/// the apiserver and the denied ranges, and the allowed ranges inside them.
#[tokio::test]
async fn build_pods_are_bounded_and_their_egress_closed() {
    use crate::support::cluster::{APISERVER_ADDRESS, DNS_ADDRESS, EGRESS_ALLOWED};
    let (test, shop, number) = a_running_build().await;
    let job = shop.job(&test, number).await.expect("the Job");
    let pod = job.spec.unwrap().template.spec.unwrap();
    for container in pod.init_containers.iter().flatten().chain(&pod.containers) {
        let resources = container.resources.clone().unwrap_or_default();
        for side in [resources.requests, resources.limits] {
            assert!(
                side.is_some_and(|side| side.contains_key("ephemeral-storage")),
                "{}: ephemeral storage bounded",
                container.name
            );
        }
    }

    let policy = |namespace: String| {
        let client = test.cluster().client.clone();
        async move {
            let policies: Api<NetworkPolicy> = Api::namespaced(client, &namespace);
            eventually(&format!("{namespace} has its egress policy"), || async {
                policies
                    .get_opt("berth-egress")
                    .await
                    .expect("reading")
                    .is_some()
            })
            .await;
            policies
                .get("berth-egress")
                .await
                .expect("the policy")
                .spec
                .expect("a spec")
        }
    };
    for (namespace, own_pods) in [
        (BUILDS_NAMESPACE.to_owned(), false),
        (shop.namespace.clone(), true),
    ] {
        let spec = policy(namespace.clone()).await;
        assert_eq!(spec.policy_types, Some(vec!["Egress".to_owned()]));
        assert_eq!(
            spec.pod_selector
                .unwrap_or_default()
                .match_labels
                .unwrap_or_default(),
            BTreeMap::new()
        );
        let rules = spec.egress.unwrap_or_default();
        let blocks: Vec<(String, Vec<String>, bool)> = rules
            .iter()
            .flat_map(|rule| {
                let dns = rule.ports.is_some();
                rule.to.iter().flatten().filter_map(move |peer| {
                    peer.ip_block.as_ref().map(|block| {
                        (
                            block.cidr.clone(),
                            block.except.clone().unwrap_or_default(),
                            dns,
                        )
                    })
                })
            })
            .collect();
        let open = |cidr: &str| {
            blocks
                .iter()
                .find(|(found, _, dns)| found == cidr && !dns)
                .map(|(_, except, _)| except.clone())
                .unwrap_or_else(|| panic!("{namespace}: {cidr} open: {blocks:?}"))
        };
        let v4 = open("0.0.0.0/0");
        for closed in [
            "169.254.0.0/16",
            "100.100.100.200/32",
            "10.0.0.0/8",
            &format!("{APISERVER_ADDRESS}/32"),
        ] {
            assert!(
                v4.iter().any(|c| c == closed),
                "{namespace}: {closed} closed: {v4:?}"
            );
        }
        let v6 = open("::/0");
        for closed in ["fe80::/10", "fd00:ec2::254/128", "fd00:10::/64"] {
            assert!(
                v6.iter().any(|c| c == closed),
                "{namespace}: {closed} closed: {v6:?}"
            );
        }
        assert!(open(EGRESS_ALLOWED).is_empty());
        // DNS: on port 53 only, to the DNS address.
        let dns_rule = rules
            .iter()
            .find(|rule| rule.ports.is_some())
            .expect("a DNS rule");
        let ports: Vec<(Option<String>, Option<String>)> = dns_rule
            .ports
            .iter()
            .flatten()
            .map(|port| {
                (
                    port.protocol.clone(),
                    port.port.as_ref().map(|port| match port {
                        k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(n) => {
                            n.to_string()
                        }
                        k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::String(s) => {
                            s.clone()
                        }
                    }),
                )
            })
            .collect();
        assert_eq!(
            ports,
            [
                (Some("UDP".to_owned()), Some("53".to_owned())),
                (Some("TCP".to_owned()), Some("53".to_owned()))
            ]
        );
        assert!(
            blocks
                .iter()
                .any(|(cidr, _, dns)| cidr == DNS_ADDRESS && *dns),
            "{blocks:?}"
        );
        // An environment's pods reach each other.
        let same_namespace = rules.iter().any(|rule| {
            rule.to.iter().flatten().any(|peer| {
                peer.namespace_selector.is_none()
                    && peer.ip_block.is_none()
                    && peer.pod_selector.is_some()
            })
        });
        assert_eq!(same_namespace, own_pods, "{namespace}");
    }
}

/// The copy of the git credential is the Build's own: a Secret of its name
/// that someone else made fails the build, is never used nor changed.
#[tokio::test]
async fn a_secret_in_the_way_of_the_credential_copy_fails_the_build() {
    let test = TestApp::with_cluster().await;
    let shop = Shop::new(&test, &test.owner).await;
    let client = test.cluster().client.clone();
    token_secret(&client, &shop.namespace, "git-token", "ghp-real-s3cret").await;
    test.request(Method::PATCH, &shop.path)
        .by(&test.owner)
        .json(json!({"git_secret": "git-token"}))
        .send()
        .await
        .assert_status(200);
    // Build 1's copy's name, taken before it runs.
    planted_secret_fails_the_build(&test, &shop, &shop.job_name(1)).await;
}

/// A Secret `name` of the builds namespace, made before build 1 runs,
/// fails that build with why, is never used (no Job), and is left as it
/// was.
async fn planted_secret_fails_the_build(test: &TestApp, shop: &Shop, name: &str) {
    let client = test.cluster().client.clone();
    let planted = token_secret(&client, BUILDS_NAMESPACE, name, "planted").await;
    let number = shop.create_build(test, &test.owner).await;
    assert_eq!(number, 1);
    let failed = shop.until_build(test, number, "failed").await;
    let message = failed["message"].as_str().unwrap_or_default();
    assert!(message.contains("did not make"), "{message}");
    assert!(!message.contains("s3cret") && !message.contains("planted"));
    assert!(shop.job(test, number).await.is_none(), "never used");
    let after = Api::<Secret>::namespaced(client, BUILDS_NAMESPACE)
        .get(name)
        .await
        .expect("left as it was");
    assert_eq!(
        after.metadata.resource_version,
        planted.metadata.resource_version
    );
}

/// With a scoped registry, a build's own registry credentials are written
/// the same way: a Secret in the way of one (its name taken before the
/// build runs) fails the build, is never used, and is left as it was.
#[tokio::test]
async fn a_secret_in_the_way_of_a_registry_credential_fails_the_build() {
    let test = TestApp::with_cluster().await;
    let shop = Shop::new(&test, &test.owner).await;
    let client = test.cluster().client.clone();
    let settings = Registry::parse(PREFIX, "registry.berth.test").expect("well formed");
    hold_registry_settings_for_the_test(&format!("scoped {PREFIX}")).await;
    registry::set(&client, &settings, registry::Credentials::Scoped)
        .await
        .expect("scoped credentials");
    // Build 1's push credential's name, taken before it runs.
    planted_secret_fails_the_build(&test, &shop, &format!("{}-push", shop.job_name(1))).await;
}

/// A `git_repo` names a DNS name with a dot: IP literals, `localhost` and
/// single-label hosts are refused (`422`); an app whose stored `git_repo`
/// the rule refuses (written before it) keeps working, and a change of its
/// source must satisfy it.
#[tokio::test]
async fn a_git_repo_names_a_public_dns_name() {
    let test = TestApp::with_cluster().await;
    let shop = Shop::new(&test, &test.owner).await;
    let apps = shop.path.rsplit_once('/').unwrap().0.to_owned();
    for repo in [
        "https://10.0.0.1/x",
        "https://169.254.169.254/x",
        "https://localhost/x",
        "https://intranet/x",
        "https://[::1]/x",
    ] {
        let answer = test
            .post(&apps)
            .by(&test.owner)
            .json(json!({"name": "bad", "git_repo": repo}))
            .send()
            .await;
        answer.assert_problem(422, "validation_failed");
        let detail = answer.json()["detail"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(detail.starts_with("git_repo:"), "{repo}: {detail}");
        test.request(Method::PATCH, &shop.path)
            .by(&test.owner)
            .json(json!({"git_repo": repo}))
            .send()
            .await
            .assert_problem(422, "validation_failed");
    }
    test.get(&format!("{apps}/bad"))
        .by(&test.owner)
        .send()
        .await
        .assert_status(404);
    assert_eq!(shop.record(&test).await["git_repo"], REPO);

    // A stored value from before the rule, as the App holds it.
    let apps_api: Api<App> = Api::namespaced(test.cluster().client.clone(), &shop.namespace);
    let mut stored = apps_api.get(&shop.name).await.expect("the App");
    let old = "https://intranet/acme/shop.git";
    stored.spec.config.source = Some(AppSource {
        git_repo: old.to_owned(),
        ..stored.spec.config.source.clone().expect("a source")
    });
    apps_api
        .replace(&shop.name, &PostParams::default(), &stored)
        .await
        .expect("the old value written");
    assert_eq!(shop.record(&test).await["git_repo"], old);
    test.request(Method::PATCH, &shop.path)
        .by(&test.owner)
        .json(json!({"env": [{"name": "MODE", "value": "x"}]}))
        .send()
        .await
        .assert_status(200);
    let number = shop.create_build(&test, &test.owner).await;
    let builds: Api<Build> = Api::namespaced(test.cluster().client.clone(), BUILDS_NAMESPACE);
    let build = builds
        .get(&object_names::build(&shop.namespace, &shop.name, number))
        .await
        .expect("the Build");
    assert_eq!(build.spec.source.git_repo, old);
    test.request(Method::PATCH, &shop.path)
        .by(&test.owner)
        .json(json!({"git_ref": "release", "git_repo": "https://10.0.0.1/x"}))
        .send()
        .await
        .assert_problem(422, "validation_failed");
    assert_eq!(shop.record(&test).await["git_repo"], old);
}

/// A delivery is remembered for as long as its hook exists, with no expiry
/// (GitHub's signature carries no time): replayed at any later time, by
/// its id or by its body, it builds nothing; a force-push's new head builds
/// as any push.
#[tokio::test]
async fn a_replayed_delivery_never_builds_and_a_force_push_does() {
    let test = TestApp::with_cluster().await;
    let source = source_app(&test, Some("main")).await;
    let hook = Hook::make(&test, &source).await;
    let body = crate::webhooks::push("refs/heads/main", COMMIT);
    let first = hook.github(&test, "push", "delivery-1", body.clone()).await;
    first.assert_status(202);

    // Its records carry no expiry: DynamoDB never removes them.
    let hook_id = hook.url.rsplit('/').next().unwrap();
    let records = test
        .dynamodb
        .query()
        .table_name(test.state.store.table())
        .key_condition_expression("pk = :pk")
        .expression_attribute_values(":pk", store::s(keys::hook(hook_id)))
        .send()
        .await
        .expect("reading the hook's partition")
        .items
        .unwrap_or_default();
    let deliveries: Vec<_> = records
        .iter()
        .filter(|item| store::sort_key(item) != keys::HOOK_SK)
        .collect();
    assert_eq!(deliveries.len(), 2, "its id and its body");
    assert!(deliveries.iter().all(|item| !item.contains_key(keys::TTL)));

    for (delivery, body) in [
        ("delivery-1", body.clone()),
        ("delivery-2", body.clone()),
        (
            "delivery-1",
            crate::webhooks::push("refs/heads/main", DIGEST_COMMIT),
        ),
    ] {
        let again = hook.github(&test, "push", delivery, body).await;
        again.assert_status(200);
        assert!(
            again.json()["ignored"].as_str().is_some(),
            "{}",
            again.text()
        );
    }

    // A force-push: `forced`, `before` not an ancestor; its new head builds.
    let mut forced: Value =
        serde_json::from_slice(&crate::webhooks::push("refs/heads/main", DIGEST_COMMIT)).unwrap();
    forced["forced"] = json!(true);
    forced["before"] = json!(COMMIT);
    let answer = hook
        .github(&test, "push", "delivery-3", forced.to_string().into_bytes())
        .await;
    answer.assert_status(202);
    assert_eq!(answer.json()["ref"], DIGEST_COMMIT);
}

const DIGEST_COMMIT: &str = "fedcba9876543210fedcba9876543210fedcba98";

/// The receiver holds the environment's state as `createBuild` does: an
/// environment being deleted takes no build (`409`), and the delivery is
/// not remembered, so the sender's retry is judged afresh.
#[tokio::test]
async fn the_receiver_builds_nothing_in_an_environment_being_deleted() {
    let test = TestApp::with_cluster().await;
    // A production environment: deleted after a grace period, during which
    // it is being deleted.
    let shop = Shop::in_environment(
        &test,
        &test.owner,
        json!({"name": "dev", "env_type": "production"}),
    )
    .await;
    let hook = shop.hook(&test).await;
    let environment = shop.path.rsplit_once("/apps/").unwrap().0.to_owned();
    test.request(Method::DELETE, &environment)
        .by(&test.owner)
        .send()
        .await
        .assert_status(202);
    let delivery = crate::webhooks::push("refs/heads/main", COMMIT);
    let answer = hook
        .github(&test, "push", "delivery-1", delivery.clone())
        .await;
    answer.assert_problem(409, "environment_deleting");
    let builds: Api<Build> = Api::namespaced(test.cluster().client.clone(), BUILDS_NAMESPACE);
    let made = builds
        .get_opt(&object_names::build(&shop.namespace, &shop.name, 1))
        .await
        .expect("reading a Build");
    assert!(made.is_none(), "no build was made");
    // Not remembered: the sender's retry is refused for the same reason,
    // not ignored as a replay.
    hook.github(&test, "push", "delivery-1", delivery)
        .await
        .assert_problem(409, "environment_deleting");
}

/// A build's Job is made only when the builds namespace's quota (as
/// `infra/k8s/builds.yaml` installs it: 8 pods) has room for its pod:
/// three organizations with three builds each (their share) ask for 9, and
/// what does not fit waits queued with no Job (so no deadline runs) until
/// a build ends.
#[tokio::test]
async fn a_build_waits_for_the_quotas_room_without_a_job() {
    let test = TestApp::with_cluster().await;
    // It fills the builds' room, which on a real cluster every test's
    // builds share.
    test.cluster().alone().await;
    let quota = crate::support::identities::documents("builds.yaml")
        .into_iter()
        .filter(|doc| doc["kind"] == "ResourceQuota")
        .collect::<Vec<_>>();
    assert_eq!(quota.len(), 1);
    crate::support::identities::apply(&test.cluster().client, &quota).await;
    let pods: usize = quota[0]["spec"]["hard"]["pods"]
        .as_str()
        .and_then(|pods| pods.parse().ok())
        .expect("a pod count");

    let mut shops = Vec::new();
    for org in ["initech", "hooli", "umbrella"] {
        let user = test.other_org(&unique(org)).await;
        let first = Shop::new(&test, &user).await;
        let apps = first.path.rsplit_once('/').unwrap().0.to_owned();
        let namespace = first.namespace.clone();
        shops.push((user.clone(), first));
        for name in ["cart", "till"] {
            test.post(&apps)
                .by(&user)
                .json(json!({"name": name, "image": "nginx", "git_repo": REPO}))
                .send()
                .await
                .assert_status(201);
            shops.push((
                user.clone(),
                Shop {
                    path: format!("{apps}/{name}"),
                    namespace: namespace.clone(),
                    name: name.to_owned(),
                },
            ));
        }
    }
    for (user, shop) in &shops {
        shop.create_build(&test, user).await;
    }
    let status = |user: &TestUser, shop: &Shop| {
        let path = format!("{}/builds/1", shop.path);
        let user = user.clone();
        let test = &test;
        async move { test.get(&path).by(&user).send().await.json() }
    };
    let mut waiting = Vec::new();
    eventually(
        "the builds that fit run, the others wait for room",
        || async {
            let mut running = 0;
            let mut waits = Vec::new();
            for (index, (user, shop)) in shops.iter().enumerate() {
                let shown = status(user, shop).await;
                if shown["status"] == "running" {
                    running += 1;
                } else if shown["message"]
                    .as_str()
                    .is_some_and(|message| message.contains("waiting for room"))
                {
                    waits.push(index);
                }
            }
            running + waits.len() == shops.len() && !waits.is_empty() && running <= pods
        },
    )
    .await;
    for (index, (user, shop)) in shops.iter().enumerate() {
        let shown = status(user, shop).await;
        if shown["status"] == "queued" {
            assert_eq!(shown["started_at"], Value::Null);
            assert!(shop.job(&test, 1).await.is_none(), "no Job, no deadline");
            waiting.push(index);
        }
    }
    assert!(!waiting.is_empty());

    // A build ends: one waiting gets its room.
    let (user, ended) = shops
        .iter()
        .enumerate()
        .find(|(index, _)| !waiting.contains(index))
        .map(|(_, pair)| pair)
        .expect("a running build");
    ended.push_anyway(&test, 1).await;
    eventually("a waiting build starts", || async {
        let mut started = false;
        for index in &waiting {
            let (user, shop) = &shops[*index];
            started |= status(user, shop).await["status"] == "running";
        }
        started
    })
    .await;
    eventually("the ended build succeeded", || async {
        status(user, ended).await["status"] == "succeeded"
    })
    .await;
}
