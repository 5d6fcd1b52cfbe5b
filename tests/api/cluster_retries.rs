//! What a real apiserver answers under load, played by the stand-in: a call
//! that meets throttling (`429` with `Retry-After`), a busy server, a slow
//! answer, a broken read or a conflict is carried through where another try
//! is safe (`shared/cluster/src/retry.rs`, and the read-modify-writes that
//! read again); what still fails at the request's deadline is a `503` within
//! it, whose log line names the apiserver's reason. A slow namespace deletion
//! still ends in a purge. These need the stand-in's knobs: built for a real
//! cluster (`BERTH_TEST_KUBECONFIG`), they are ignored, so reported as skipped.

use std::time::{Duration, Instant};

use berth_kube_standin::{Fault, FaultKind};
use http::Method;
use serde_json::json;

use crate::support::{TestApp, TestResponse, eventually, logs, unique};
use berth_records::audit::Outcome;

/// Asks the API for a project of a fresh name; the name and the answer.
async fn post_project(app: &TestApp, prefix: &str) -> (String, TestResponse) {
    let name = unique(prefix);
    let answer = app
        .post("/api/v1/projects")
        .by(&app.owner)
        .json(json!({ "name": name, "display_name": prefix }))
        .send()
        .await;
    (name, answer)
}

/// A fault for the next `count` calls of `method` on project paths (all of
/// them, or one project's).
fn on_projects(kind: FaultKind, count: usize, method: &str, project: Option<&str>) -> Fault {
    let path = project.map_or_else(|| "/projects".to_owned(), |p| format!("/projects/{p}"));
    Fault::new(kind, count).method(method).path_contains(path)
}

/// What reading the project answers.
async fn project_status(app: &TestApp, name: &str) -> u16 {
    let answer = app
        .get(&format!("/api/v1/projects/{name}"))
        .by(&app.owner)
        .send()
        .await;
    answer.status.as_u16()
}

/// A project created though its create meets the fault once: the fault is
/// used up, and the project is there.
async fn created_through(app: &TestApp, fault: FaultKind) {
    app.standin().add_fault(on_projects(fault, 1, "POST", None));
    let (name, answer) = post_project(app, "through").await;
    answer.assert_status(201);
    assert!(app.standin().pending_faults().is_empty(), "{fault:?}");
    assert_eq!(project_status(app, &name).await, 200);
}

/// The cluster requests one API call makes, and what it answered.
async fn counted(app: &TestApp, call: crate::support::TestRequest<'_>) -> (u64, u16) {
    let before = app.cluster_requests.get();
    let answer = call.send().await;
    (app.cluster_requests.get() - before, answer.status.as_u16())
}

#[tokio::test]
#[cfg_attr(berth_real_cluster, ignore = "needs the stand-in's fault knobs")]
async fn a_call_that_meets_throttling_is_asked_again_after_retry_after() {
    let app = TestApp::with_cluster().await;
    let standin = app.standin();
    let project = app.create_project("throttled").await;
    let path = format!("/api/v1/projects/{project}");
    let (plain, status) = counted(&app, app.get(&path).by(&app.owner)).await;
    assert_eq!(status, 200);

    // A read: one more request, sent after the apiserver's `Retry-After` (1 s).
    standin.add_fault(on_projects(
        FaultKind::TooManyRequests,
        1,
        "GET",
        Some(&project),
    ));
    let started = Instant::now();
    let (throttled, status) = counted(&app, app.get(&path).by(&app.owner)).await;
    assert_eq!((status, throttled), (200, plain + 1));
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    assert!(standin.pending_faults().is_empty());

    // A create too: the apiserver refused it before doing anything.
    created_through(&app, FaultKind::TooManyRequests).await;
}

#[tokio::test]
#[cfg_attr(berth_real_cluster, ignore = "needs the stand-in's fault knobs")]
async fn throttling_until_the_deadline_is_a_503_within_it_that_the_log_explains() {
    let deadline = Duration::from_secs(4);
    let app = TestApp::with_cluster_config(|config| config.request_deadline = deadline).await;
    let standin = app.standin();
    let project = app.create_project("shed").await;
    standin.add_fault(on_projects(
        FaultKind::TooManyRequests,
        100,
        "GET",
        Some(&project),
    ));
    let started = Instant::now();
    let answer = app
        .get(&format!("/api/v1/projects/{project}"))
        .by(&app.owner)
        .send()
        .await;
    let took = started.elapsed();
    answer.assert_problem(503, "cluster_unavailable");
    // Retried for most of the deadline, answered before it.
    assert!(
        took >= Duration::from_secs(2) && took < deadline,
        "answered after {took:?}"
    );
    let asked = 100 - standin.pending_faults()[0].count;
    assert!((3..=5).contains(&asked), "asked {asked} times");
    let detail = answer.json()["detail"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        !detail.contains("TooManyRequests"),
        "the answer keeps the cause: {detail}"
    );
    let event = app.last_audit_event("acme").await;
    assert_eq!(
        (event.action.as_str(), event.outcome, event.status),
        ("getProject", Outcome::Error, Some(503))
    );
    // The log says what the apiserver answered last, and how often it was asked.
    let logged = logs::captured();
    assert!(
        logged.lines().any(|line| line.contains(&project)
            && line.contains("still failed after its retries")
            && line.contains("status=429")
            && line.contains("reason=TooManyRequests")),
        "no log line names the apiserver's reason"
    );
    standin.clear_faults();

    // A create that meets it until the deadline made nothing.
    standin.add_fault(on_projects(FaultKind::TooManyRequests, 100, "POST", None));
    let started = Instant::now();
    let (name, answer) = post_project(&app, "shed").await;
    answer.assert_problem(503, "cluster_unavailable");
    assert!(started.elapsed() < deadline);
    standin.clear_faults();
    assert_eq!(project_status(&app, &name).await, 404);
}

/// A busy apiserver (`503`) and a read that hangs past the client's timeout
/// are asked again for reads; a write is not repeated, since it may have
/// been carried out: one attempt, and the `503`.
#[tokio::test]
#[cfg_attr(berth_real_cluster, ignore = "needs the stand-in's fault knobs")]
async fn reads_are_asked_again_and_writes_that_may_have_happened_are_not() {
    let app =
        TestApp::with_cluster_config(|config| config.cluster_timeout = Duration::from_secs(2))
            .await;
    let standin = app.standin();
    let project = app.create_project("busy").await;
    let path = format!("/api/v1/projects/{project}");
    for kind in [FaultKind::ServiceUnavailable, FaultKind::Hang] {
        standin.add_fault(on_projects(kind, 1, "GET", Some(&project)));
        app.get(&path)
            .by(&app.owner)
            .send()
            .await
            .assert_status(200);
        assert!(standin.pending_faults().is_empty(), "{kind:?}");
    }
    for kind in [FaultKind::ServiceUnavailable, FaultKind::Hang] {
        // Armed twice: a second attempt would use up the second.
        standin.add_fault(on_projects(kind, 2, "POST", None));
        post_project(&app, "once")
            .await
            .1
            .assert_problem(503, "cluster_unavailable");
        assert_eq!(
            standin.pending_faults()[0].count,
            1,
            "{kind:?}: the create was sent once"
        );
        standin.clear_faults();
    }
}

/// A connection that could not be made sent nothing: every call is tried
/// again, twice, before the `503` (a cluster that is down answers at once,
/// not at the deadline).
#[tokio::test]
#[cfg_attr(berth_real_cluster, ignore = "needs the stand-in's fault knobs")]
async fn a_connection_never_made_is_tried_again_whatever_the_call() {
    let app = TestApp::with_cluster().await;
    let project = app.create_project("down").await;
    app.standin().set_unreachable(true).await.unwrap();
    let started = Instant::now();
    let (read, status) = counted(
        &app,
        app.get(&format!("/api/v1/projects/{project}"))
            .by(&app.owner),
    )
    .await;
    assert_eq!((status, read), (503, 3));
    let (write, status) = counted(
        &app,
        app.post("/api/v1/projects")
            .by(&app.owner)
            .json(json!({ "name": unique("down"), "display_name": "Down" })),
    )
    .await;
    assert_eq!((status, write), (503, 3));
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
}

/// An apiserver slower than a stand-in (seconds, under a parallel test run)
/// is waited for, up to the client's timeout.
#[tokio::test]
#[cfg_attr(berth_real_cluster, ignore = "needs the stand-in's fault knobs")]
async fn a_slow_answer_is_waited_for() {
    let app = TestApp::with_cluster().await;
    let slow = FaultKind::Delay {
        delay: Duration::from_secs(3),
    };
    created_through(&app, slow).await;
}

/// A write that loses a race to another (`409 Conflict`) reads again and
/// writes again where its change is safe to repeat: an app's change (only a
/// change of its spec by someone else is a real conflict), a secret's put (it
/// replaces the whole secret), an environment's deletion. A conflict that
/// keeps coming is the API's `409`, and nothing changed.
#[tokio::test]
#[cfg_attr(berth_real_cluster, ignore = "needs the stand-in's fault knobs")]
async fn a_write_that_meets_a_conflict_reads_again_where_that_is_safe() {
    let app = TestApp::with_cluster().await;
    let standin = app.standin();
    let project = app.ready_environment("race", "dev").await;
    let environment = format!("/api/v1/projects/{project}/environments/dev");
    let shop = format!("{environment}/apps/shop");
    app.post(&format!("{environment}/apps"))
        .by(&app.owner)
        .json(json!({ "name": "shop", "image": "nginx:1" }))
        .send()
        .await
        .assert_status(201);
    let conflict = |count, method: &str, path: &str| {
        Fault::new(FaultKind::Conflict, count)
            .method(method)
            .path_contains(path)
    };

    standin.add_fault(conflict(1, "PUT", "/apps/shop"));
    let updated = app
        .request(Method::PATCH, &shop)
        .by(&app.owner)
        .json(json!({ "image": "nginx:2" }))
        .send()
        .await;
    updated.assert_status(200);
    assert_eq!(
        (
            updated.json()["image"].as_str(),
            updated.json()["revision"].as_i64()
        ),
        (Some("nginx:2"), Some(2))
    );
    assert!(standin.pending_faults().is_empty());

    standin.add_fault(conflict(10, "PUT", "/apps/shop"));
    app.request(Method::PATCH, &shop)
        .by(&app.owner)
        .json(json!({ "image": "nginx:3" }))
        .send()
        .await
        .assert_problem(409, "conflict");
    standin.clear_faults();
    let kept = app.get(&shop).by(&app.owner).send().await.json()["app"].clone();
    assert_eq!(
        (kept["image"].as_str(), kept["revision"].as_i64()),
        (Some("nginx:2"), Some(2))
    );

    let secret = format!("{environment}/secrets/db");
    let put = |value: &str| {
        app.request(Method::PUT, &secret)
            .by(&app.owner)
            .json(json!({ "data": { "password": value } }))
            .send()
    };
    put("one").await.assert_status(201);
    standin.add_fault(conflict(1, "PUT", "/secrets/db"));
    put("two").await.assert_status(200);
    assert!(standin.pending_faults().is_empty());
    standin.add_fault(conflict(10, "PUT", "/secrets/db"));
    put("three").await.assert_problem(409, "conflict");
    standin.clear_faults();

    standin.add_fault(conflict(
        1,
        "PATCH",
        &format!("/environments/{project}-dev"),
    ));
    app.request(Method::DELETE, &environment)
        .by(&app.owner)
        .send()
        .await
        .assert_status(202);
    assert!(standin.pending_faults().is_empty());
}

/// A real cluster takes tens of seconds to delete a namespace when many go at
/// once: the environment shows `Terminating` all that time, and is purged
/// when its namespace has gone.
#[tokio::test]
#[cfg_attr(berth_real_cluster, ignore = "needs the stand-in's namespace knob")]
async fn a_slow_namespace_deletion_still_ends_in_a_purge() {
    let app = TestApp::with_cluster().await;
    let project = app.ready_environment("slow", "dev").await;
    let namespace = format!("{project}-dev");
    let delay = Duration::from_secs(6);
    app.standin().set_namespace_deletion_delay(delay);
    let path = format!("/api/v1/projects/{project}/environments/dev");
    let started = Instant::now();
    app.request(Method::DELETE, &path)
        .by(&app.owner)
        .send()
        .await
        .assert_status(202);
    eventually("the environment shows Terminating", || async {
        app.get(&path).by(&app.owner).send().await.json()["phase"] == "Terminating"
    })
    .await;
    // Well into the delay, the namespace and the environment are still there.
    tokio::time::sleep(delay / 2).await;
    assert!(app.cluster().namespace_exists(&namespace).await);
    let record = app.get(&path).by(&app.owner).send().await.json();
    assert_eq!(
        (record["phase"].as_str(), record["deleting"].as_bool()),
        (Some("Terminating"), Some(true)),
        "{record}"
    );
    eventually("the environment is purged", || async {
        app.get(&path).by(&app.owner).send().await.status == 404
            && !app.cluster().namespace_exists(&namespace).await
    })
    .await;
    assert!(
        started.elapsed() >= delay - Duration::from_secs(1),
        "purged after {:?}, before its namespace went",
        started.elapsed()
    );
    app.request(Method::DELETE, &format!("/api/v1/projects/{project}"))
        .by(&app.owner)
        .send()
        .await
        .assert_status(202);
}
