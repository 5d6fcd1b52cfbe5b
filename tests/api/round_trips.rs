//! DynamoDB round trips: authenticating a request costs one, and its audit
//! event two (take the next `seq`, store the event), so an audited read costs
//! three in all.

use crate::support::{PASSWORD, TestApp};

#[tokio::test]
async fn an_authenticated_read_costs_three_round_trips() {
    let app = TestApp::new().await;
    let session = app.sign_in(&app.owner.email, PASSWORD).await;
    // Warm up: the token's first use is recorded.
    app.get("/api/v1/me")
        .by(&app.owner)
        .send()
        .await
        .assert_status(200);

    for (label, request) in [
        ("token", app.get("/api/v1/me").by(&app.owner)),
        ("session", app.get("/api/v1/me").session(&session)),
    ] {
        let before = app.round_trips.get();
        request.send().await.assert_status(200);
        assert_eq!(
            app.round_trips.get() - before,
            3,
            "{label}: authentication (1) + audit (2)"
        );
    }
    let before = app.round_trips.get();
    app.get("/api/v1/healthz").send().await.assert_status(200);
    app.get("/api/v1/healthz").send().await.assert_status(200);
    assert_eq!(
        app.round_trips.get() - before,
        4,
        "liveness costs only its audit writes"
    );
}

/// The Kubernetes budgets count the calls Berth makes. Where nothing fails
/// (the stand-in) each is sent once: retries add no round trip. On a real
/// cluster under load a call the apiserver sheds (`429`) is sent again, which
/// is its load, not Berth's design.
fn assert_sent_once(app: &TestApp, sent_before: u64, calls: u64) {
    if app.cluster().standin.is_some() {
        assert_eq!(
            app.cluster_requests.get() - sent_before,
            calls,
            "a call was sent more than once"
        );
    }
}

/// A call whose round trips are counted: (operation, method, path, body,
/// DynamoDB budget, Kubernetes budget).
type Call = (
    &'static str,
    http::Method,
    String,
    Option<serde_json::Value>,
    u64,
    u64,
);

/// Makes the call as the owner and checks its round trips against its
/// budgets; the line of the table printed.
async fn within_budget(app: &TestApp, call: Call) -> String {
    let (operation, method, path, body, dynamodb_budget, kube_budget) = call;
    let (dynamodb, kube, sent) = (
        app.round_trips.get(),
        app.cluster_requests.calls(),
        app.cluster_requests.get(),
    );
    let mut request = app.request(method, &path).by(&app.owner);
    if let Some(body) = body {
        request = request.json(body);
    }
    let answer = request.send().await;
    assert!(answer.status.is_success(), "{operation}: {}", answer.text());
    let used = (
        app.round_trips.get() - dynamodb,
        app.cluster_requests.calls() - kube,
    );
    assert_sent_once(app, sent, used.1);
    assert!(
        used.0 <= dynamodb_budget && used.1 <= kube_budget,
        "{operation} used {used:?}, budget ({dynamodb_budget}, {kube_budget})"
    );
    format!("{operation}: {} DynamoDB, {} Kubernetes", used.0, used.1)
}

/// Round trips of the app operations (DynamoDB, Kubernetes), counted so that
/// they cannot silently grow. The budgets: `getApp` at most 3 + 2 (App,
/// pods); `updateApp` at most 4 + 4 (environment, its namespace and the
/// namespace's Apps, read at once; the replacement). A write reads the
/// namespace with the environment (is it the environment's own?) and the
/// Apps (whose object names are taken), so it waits for no more round trips
/// than before; a read reads neither.
/// Every DynamoDB budget includes the call's audit event (2).
/// The apps have custom domains: their claims ride in the transaction that
/// writes the release history (no round trip), a write that adds one reads
/// whose the new hostnames are (one batch read: the App lists the verified
/// ones; docs/api-notes.md, "Domain ownership"), and a write that drops
/// hostnames (or deletes the app) releases them in one more transaction.
/// Each call is measured once the controller has settled the app's status:
/// a status write racing a change costs that change one more read and write.
#[tokio::test]
async fn app_operations_stay_within_their_round_trips() {
    use http::Method;
    use serde_json::json;

    let app = TestApp::with_cluster().await;
    let project = app.ready_environment("rt", "dev").await;
    let apps = format!("/api/v1/projects/{project}/environments/dev/apps");
    let shop = format!("{apps}/shop");
    let host = |prefix: &str| format!("{}.example.test", crate::support::unique(prefix));
    let (first, second) = (host("first"), host("second"));
    app.post(&apps)
        .by(&app.owner)
        // No replicas: the app is Available at once, so its status settles.
        .json(
            json!({ "name": "shop", "image": "nginx:1", "port": 80, "replicas": 0,
                      "domains": [first] }),
        )
        .send()
        .await
        .assert_status(201);
    let mut image = 1;
    let mut next_image = || {
        image += 1;
        json!({ "image": format!("nginx:{image}") })
    };
    // A hostname release: the one transaction hostname claims may add.
    const RELEASE: u64 = 1;
    // Whose the hostnames new to the app are: one batch read.
    const NEW_HOSTNAMES: u64 = 1;
    let calls: Vec<Call> = vec![
        ("getApp", Method::GET, shop.clone(), None, 3, 2),
        // App and pods; one log request per pod (none here), read at once.
        (
            "getAppLogs",
            Method::GET,
            format!("{shop}/logs"),
            None,
            3,
            2,
        ),
        // Its hostname claimed again, in the release history's transaction.
        (
            "updateApp",
            Method::PATCH,
            shop.clone(),
            Some(next_image()),
            4,
            4,
        ),
        (
            "updateApp (another domain)",
            Method::PATCH,
            shop.clone(),
            Some(json!({ "domains": [second] })),
            4 + RELEASE + NEW_HOSTNAMES,
            4,
        ),
        ("listApps", Method::GET, apps.clone(), None, 3, 2),
        (
            "listReleases",
            Method::GET,
            format!("{shop}/releases"),
            None,
            4,
            1,
        ),
        // Back to the first domain (new again to the app): the second is
        // released.
        (
            "rollbackApp",
            Method::POST,
            format!("{shop}/rollback"),
            Some(json!({"revision": 1})),
            5 + RELEASE + NEW_HOSTNAMES,
            4,
        ),
        (
            "createApp",
            Method::POST,
            apps.clone(),
            Some(json!({"name": "cart", "image": "nginx",
                        "domains": [host("cart"), host("www-cart")]})),
            4 + NEW_HOSTNAMES,
            4,
        ),
        // The App (is it the caller's?), then the app's pointer to its
        // hook read and the new hook with the pointer written at once.
        (
            "createWebhook",
            Method::POST,
            format!("{apps}/cart/webhook"),
            None,
            5,
            1,
        ),
        // What it kept in the table, in an order a cut can resume: its
        // history read, its hostnames released, its revisions deleted, its
        // hook's delivery records read (and deleted, when there are any),
        // and last its hook and its entry in its environment's list, at
        // once.
        (
            "deleteApp",
            Method::DELETE,
            format!("{apps}/cart"),
            None,
            7 + RELEASE,
            2,
        ),
    ];
    let mut table = Vec::new();
    for call in calls {
        crate::support::eventually("the app's status settles", || async {
            app.get(&shop).by(&app.owner).send().await.json()["app"]["ready"] == true
        })
        .await;
        table.push(within_budget(&app, call).await);
    }
    println!("{}", table.join("\n"));
}

/// A refused login costs the same round trips before its answer whether the
/// email is known or not: a known one writes its event to two
/// partitions, an unknown one to one and makes up the other.
#[tokio::test]
async fn a_refused_login_costs_the_same_round_trips_for_known_and_unknown_emails() {
    use serde_json::json;

    let app = TestApp::new().await;
    let known = app.user(berth_domain::Role::Viewer).await;
    let attempt = |email: &str| {
        app.post("/api/v1/auth/login")
            .json(json!({ "email": email, "password": "a password guess" }))
    };
    // Warm up both paths.
    attempt(&known.email)
        .send()
        .await
        .assert_problem(401, "invalid_credentials");
    attempt("warm-up@example.org")
        .send()
        .await
        .assert_problem(401, "invalid_credentials");

    let mut costs = Vec::new();
    for email in [known.email.as_str(), "nobody@example.org"] {
        let before = app.round_trips.get();
        attempt(email)
            .send()
            .await
            .assert_problem(401, "invalid_credentials");
        costs.push(app.round_trips.get() - before);
    }
    assert_eq!(costs[0], costs[1], "known, unknown: {costs:?}");
}

/// A refused login takes about as long for a known email as for an unknown
/// one: both verify a password with argon2 (the unknown one against the
/// decoy hash). Interleaved, 20 of each; the medians may differ by less than
/// half of what one argon2 verification costs, measured here too. So skipping
/// argon2 on either path fails, while the rest of a request's noise does not.
#[tokio::test]
async fn a_refused_login_takes_as_long_for_known_and_unknown_emails() {
    use std::net::{IpAddr, Ipv4Addr};
    use std::time::{Duration, Instant};

    use berth_store::identity::password;
    use serde_json::json;

    const TRIES: usize = 20;
    let app = TestApp::new().await;
    // Five failures throttle an email: four per known account, and each try
    // from an address of its own.
    let mut known = Vec::new();
    for _ in 0..TRIES.div_ceil(4) {
        known.push(app.user(berth_domain::Role::Viewer).await);
    }
    let timed = |email: String, n: usize| {
        let request = app
            .post("/api/v1/auth/login")
            .client_ip(IpAddr::V4(Ipv4Addr::new(198, 51, 100, n as u8)))
            .json(json!({ "email": email, "password": "a password guess" }));
        async move {
            let started = Instant::now();
            request
                .send()
                .await
                .assert_problem(401, "invalid_credentials");
            started.elapsed()
        }
    };
    let median = |times: &mut Vec<Duration>| {
        times.sort();
        times[times.len() / 2]
    };
    let real_hash = password::hash(crate::support::PASSWORD.to_owned())
        .await
        .unwrap();
    // Warm up both paths.
    timed("warm-up@example.org".into(), 250).await;
    timed(known[0].email.clone(), 251).await;
    let (mut known_times, mut unknown_times, mut argon2_times) = (vec![], vec![], vec![]);
    for n in 0..TRIES {
        let email = known[n / 4].email.clone();
        let stranger = format!("nobody-{n}@example.org");
        // Alternate which goes first, so neither always follows the other.
        if n % 2 == 0 {
            known_times.push(timed(email, 2 * n).await);
            unknown_times.push(timed(stranger, 2 * n + 1).await);
        } else {
            unknown_times.push(timed(stranger, 2 * n + 1).await);
            known_times.push(timed(email, 2 * n).await);
        }
        let started = Instant::now();
        password::verify("a password guess".into(), Some(real_hash.clone()))
            .await
            .unwrap();
        argon2_times.push(started.elapsed());
    }
    let known = median(&mut known_times);
    let unknown = median(&mut unknown_times);
    let argon2 = median(&mut argon2_times);
    let difference = known.abs_diff(unknown);
    assert!(
        difference < argon2 / 2,
        "medians: known {known:?}, unknown {unknown:?}, one argon2 verification {argon2:?}"
    );
}

/// Restoring a deleted environment: authentication and the audit event (3)
/// in DynamoDB; the Environment read and its conditioned write (2) in
/// Kubernetes. Measured once the controller has seen the deletion (its
/// status write would cost the restore one more read and write).
#[tokio::test]
async fn restoring_an_environment_stays_within_its_round_trips() {
    use http::Method;
    use serde_json::json;

    let app = TestApp::with_cluster().await;
    let project = app.create_project("rt").await;
    app.create_environment(
        &project,
        json!({ "name": "prod", "env_type": "production" }),
    )
    .await;
    app.wait_for_environment(&project, "prod").await;
    let path = format!("/api/v1/projects/{project}/environments/prod");
    app.request(Method::DELETE, &path)
        .by(&app.owner)
        .send()
        .await
        .assert_status(202);
    let environments: kube::Api<berth_cluster::crd::Environment> =
        kube::Api::all(app.cluster().client.clone());
    let name = format!("{project}-prod");
    crate::support::eventually("the controller sees the deletion", || async {
        let environment = environments.get(&name).await.unwrap();
        environment.status.and_then(|s| s.observed_generation) == environment.metadata.generation
    })
    .await;
    let (dynamodb, kube, sent) = (
        app.round_trips.get(),
        app.cluster_requests.calls(),
        app.cluster_requests.get(),
    );
    app.post(&format!("{path}/restore"))
        .by(&app.owner)
        .send()
        .await
        .assert_status(200);
    let used = (
        app.round_trips.get() - dynamodb,
        app.cluster_requests.calls() - kube,
    );
    assert_sent_once(&app, sent, used.1);
    println!(
        "restoreEnvironment: {} DynamoDB, {} Kubernetes",
        used.0, used.1
    );
    assert!(used.0 <= 3 && used.1 <= 2, "used {used:?}, budget (3, 2)");
}

/// The webhook receiver: a delivery that builds reads the hook, records the
/// delivery (one transaction) and is audited (2), and in the cluster reads
/// the App with its environment and namespace (at once: the environment
/// must take writes, as for `createBuild`) and queues the Build (the app's
/// Builds listed for the next number, the Build created). A refused one costs the same whether the
/// hook exists or not: its read and its audit event.
#[tokio::test]
async fn the_webhook_receiver_stays_within_its_round_trips() {
    use crate::webhooks::{COMMIT, Hook, UNKNOWN_HOOK, source_app};

    let app = TestApp::with_cluster().await;
    let source = source_app(&app, Some("main")).await;
    let hook = Hook::make(&app, &source).await;
    let deliver = |hook: Hook| {
        let app = &app;
        async move {
            let before = (app.round_trips.get(), app.cluster_requests.calls());
            let status = hook.push(app, "refs/heads/main", COMMIT).await.status;
            let used = (
                app.round_trips.get() - before.0,
                app.cluster_requests.calls() - before.1,
            );
            (status.as_u16(), used)
        }
    };
    let unknown = deliver(hook.at(UNKNOWN_HOOK)).await;
    let wrong = deliver(hook.signed_with("not the secret")).await;
    assert_eq!(unknown, (401, (3, 0)), "unknown hook");
    assert_eq!(
        wrong, unknown,
        "a wrong signature costs what an unknown hook does"
    );
    let sent = app.cluster_requests.get();
    let built = deliver(hook).await;
    assert_eq!(built, (202, (4, 5)), "a delivery that builds");
    assert_sent_once(&app, sent, built.1.1);
    println!(
        "receiveWebhook: refused {:?}, building {:?}",
        wrong.1, built.1
    );
}

/// Round trips of the build operations (DynamoDB, Kubernetes). DynamoDB:
/// authentication and the audit event (3), and for `createApp` its release
/// history (4, as an image app's). Kubernetes: `createBuild` reads the
/// environment, its namespace and the App at once (3), then the app's
/// Builds and creates the next (2); `listBuilds` the App and the app's
/// Builds (2); `getBuild` the App and the Build (2); `getBuildLogs` the App,
/// then the Build and the build's pods at once (3), and one log request
/// per step of the pod (none here: no pod yet). An app from source costs
/// `createApp`'s 4 and queuing build 1 (2).
#[tokio::test]
async fn build_operations_stay_within_their_round_trips() {
    use http::Method;
    use serde_json::json;

    let app = TestApp::with_cluster().await;
    let project = app.ready_environment("rtb", "dev").await;
    let apps = format!("/api/v1/projects/{project}/environments/dev/apps");
    let shop = format!("{apps}/shop");
    app.create_app(
        &apps,
        json!({ "name": "shop", "image": "nginx:1", "replicas": 0,
                "git_repo": "https://github.com/acme/shop" }),
    )
    .await;
    let calls: Vec<Call> = vec![
        (
            "createBuild",
            Method::POST,
            format!("{shop}/builds"),
            Some(json!({ "ref": "main" })),
            3,
            5,
        ),
        (
            "listBuilds",
            Method::GET,
            format!("{shop}/builds"),
            None,
            3,
            2,
        ),
        (
            "getBuild",
            Method::GET,
            format!("{shop}/builds/1"),
            None,
            3,
            2,
        ),
        (
            "getBuildLogs",
            Method::GET,
            format!("{shop}/builds/1/logs"),
            None,
            3,
            3,
        ),
        (
            "createApp (from source)",
            Method::POST,
            apps.clone(),
            Some(json!({ "name": "cart", "git_repo": "https://github.com/acme/cart" })),
            4,
            6,
        ),
    ];
    let mut table = Vec::new();
    for call in calls {
        table.push(within_budget(&app, call).await);
    }
    println!("{}", table.join("\n"));
}

/// Issue 32: where a caller may act is checked without a round trip for a
/// caller with organization roles only, and with one Kubernetes read (the
/// project: its uid and creation time) for a caller limited to projects
/// or holding a role in the one it calls in. DynamoDB's share is the same
/// for all: the profile read to authenticate carries the roles.
#[tokio::test]
async fn a_limited_callers_check_costs_one_cluster_read() {
    use berth_domain::Role;
    use serde_json::json;

    let app = TestApp::with_cluster().await;
    let project = app.ready_environment("limits", "dev").await;
    let apps = format!("/api/v1/projects/{project}/environments/dev/apps");
    app.create_app(
        &apps,
        json!({ "name": "shop", "image": "nginx:1", "replicas": 0 }),
    )
    .await;
    let shop = format!("{apps}/shop");
    let callers = [
        ("owner", app.owner.clone(), 0),
        ("viewer", app.user(Role::Viewer).await, 0),
        (
            "member, the project's viewer",
            app.project_member(Role::Member, &project, "viewer").await,
            1,
        ),
        (
            "viewer, the project's developer",
            app.project_member(Role::Viewer, &project, "developer")
                .await,
            1,
        ),
        (
            "token scoped to the project",
            app.owners_token(json!({ "scope": [{ "project": project }] }))
                .await,
            1,
        ),
        (
            "the project's deploy token",
            app.deploy_token(&project, json!({ "ceiling": "read" }))
                .await,
            1,
        ),
    ];
    let mut kube_base = None;
    for (label, caller, extra) in callers {
        // Warm up: a token's first use is recorded.
        app.get(&shop).by(&caller).send().await.assert_status(200);
        let (dynamodb, kube, sent) = (
            app.round_trips.get(),
            app.cluster_requests.calls(),
            app.cluster_requests.get(),
        );
        app.get(&shop).by(&caller).send().await.assert_status(200);
        let used = (
            app.round_trips.get() - dynamodb,
            app.cluster_requests.calls() - kube,
        );
        assert_sent_once(&app, sent, used.1);
        assert_eq!(used.0, 3, "{label}: authentication (1) + audit (2)");
        let base = *kube_base.get_or_insert(used.1);
        assert_eq!(used.1, base + extra, "{label}: Kubernetes calls");
    }
}
