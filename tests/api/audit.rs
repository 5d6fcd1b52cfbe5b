//! The audit log: one event for every call and outcome, and paging that never
//! skips or repeats an event, even while events are written.

use std::collections::HashSet;

use serde_json::json;

use crate::support::{PASSWORD, TestApp};
use berth_api::AppState;
use berth_domain::Role;
use berth_records::audit::{ActorKind, Outcome};
use berth_store::audit::{Call, Recorded, parse_fallback_line};
use berth_store::keys::SYSTEM_ORG;

#[tokio::test]
async fn every_outcome_is_recorded_with_its_actor() {
    let app = TestApp::new().await;
    let viewer = app.user(Role::Viewer).await;

    let ok = app.get("/api/v1/me").by(&viewer).send().await;
    let event = app.last_audit_event("acme").await;
    assert_eq!(
        (event.action.as_str(), event.outcome, event.status),
        ("getCurrentUser", Outcome::Success, Some(200))
    );
    assert_eq!(
        (event.actor_kind, event.actor.as_deref()),
        (ActorKind::Token, Some(viewer.email.as_str()))
    );
    assert_eq!(
        event.request_id.as_deref(),
        ok.headers["x-request-id"].to_str().ok()
    );
    assert_eq!(event.ip.as_deref(), Some("203.0.113.7"));

    app.get("/api/v1/audit")
        .by(&viewer)
        .send()
        .await
        .assert_status(403);
    let event = app.last_audit_event("acme").await;
    assert_eq!(
        (event.action.as_str(), event.outcome, event.status),
        ("listAuditEvents", Outcome::Denied, Some(403))
    );

    app.post("/api/v1/tokens")
        .by(&viewer)
        .json(json!({ "name": "" }))
        .send()
        .await
        .assert_status(422);
    let event = app.last_audit_event("acme").await;
    assert_eq!(
        (event.action.as_str(), event.outcome),
        ("createToken", Outcome::Failure)
    );

    let session = app.sign_in(&viewer.email, PASSWORD).await;
    let event = app.last_audit_event("acme").await;
    assert_eq!(
        (event.action.as_str(), event.outcome, event.actor_kind),
        ("login", Outcome::Success, ActorKind::User)
    );
    assert_eq!(event.target.as_deref(), Some(viewer.id.as_str()));
    app.get("/api/v1/me")
        .session(&session)
        .send()
        .await
        .assert_status(200);
    assert_eq!(
        app.last_audit_event("acme").await.actor_kind,
        ActorKind::Session
    );

    for _ in 0..6 {
        app.post("/api/v1/auth/login")
            .json(json!({ "email": viewer.email, "password": "definitely wrong" }))
            .send()
            .await;
    }
    let event = app.last_audit_event("acme").await;
    assert_eq!(
        (event.action.as_str(), event.outcome, event.status),
        ("login", Outcome::Throttled, Some(429))
    );
    let system = app.last_audit_event(SYSTEM_ORG).await;
    assert_eq!(
        (system.action.as_str(), system.outcome),
        ("login", Outcome::Throttled)
    );
    assert_eq!(
        system.request_id, event.request_id,
        "one call, recorded in both partitions"
    );
}

#[tokio::test]
async fn calls_without_an_organization_go_to_the_system_partition() {
    let app = TestApp::new().await;
    let before = app.audit_events("acme").await.len();
    app.get("/api/v1/me").send().await.assert_status(401);
    let event = app.last_audit_event(SYSTEM_ORG).await;
    assert_eq!(
        (event.action.as_str(), event.outcome, event.actor_kind),
        ("getCurrentUser", Outcome::Denied, ActorKind::Anonymous)
    );
    assert_eq!(event.actor, None);

    app.get("/api/v1/nowhere").send().await.assert_status(404);
    let event = app.last_audit_event(SYSTEM_ORG).await;
    assert_eq!(
        (event.action.as_str(), event.outcome),
        ("unknownRoute", Outcome::Failure)
    );

    app.get("/api/v1/healthz").send().await.assert_status(200);
    assert_eq!(app.last_audit_event(SYSTEM_ORG).await.action, "getHealth");

    app.post("/api/v1/auth/login")
        .json(json!({ "email": "nobody@example.org", "password": "a password guess" }))
        .send()
        .await;
    let event = app.last_audit_event(SYSTEM_ORG).await;
    assert_eq!(
        (event.action.as_str(), event.outcome, event.actor_kind),
        ("login", Outcome::Denied, ActorKind::Anonymous)
    );
    assert_eq!(
        event.actor, None,
        "an unknown email is not recorded: it may be a password typed in the wrong field"
    );
    assert_eq!(
        app.audit_events("acme").await.len(),
        before,
        "nothing reached the organization's log"
    );

    // A failed login for a known email reaches its organization too.
    app.post("/api/v1/auth/login")
        .json(json!({ "email": app.owner.email, "password": "a password guess" }))
        .send()
        .await;
    let event = app.last_audit_event("acme").await;
    assert_eq!(
        (event.action.as_str(), event.outcome, event.actor_kind),
        ("login", Outcome::Denied, ActorKind::User)
    );
    assert_eq!(event.actor.as_deref(), Some(app.owner.email.as_str()));
    assert_eq!(
        app.last_audit_event(SYSTEM_ORG).await.request_id,
        event.request_id
    );
}

/// A login attempt is recorded for the account it names, even when the
/// request also carries another account's valid token or session: a refused
/// guess at B's password cannot hide in A's log.
#[tokio::test]
async fn a_login_carrying_other_credentials_is_recorded_for_the_account_it_names() {
    let app = TestApp::new().await;
    let a = app.owner.clone();
    let b = app.other_org("hooli").await;
    let a_session = app.sign_in(&a.email, PASSWORD).await;
    let a_before = app.audit_events(&a.org).await.len();

    for (label, request) in [
        ("token", app.post("/api/v1/auth/login").by(&a)),
        (
            "session",
            app.post("/api/v1/auth/login").session(&a_session),
        ),
    ] {
        let refused = request
            .json(json!({ "email": b.email, "password": "a password guess" }))
            .send()
            .await;
        refused.assert_problem(401, "invalid_credentials");
        let request_id = refused.headers["x-request-id"].to_str().unwrap().to_owned();
        for org in [b.org.as_str(), SYSTEM_ORG] {
            let event = app.last_audit_event(org).await;
            assert_eq!(
                event.request_id.as_deref(),
                Some(request_id.as_str()),
                "{label}: recorded in {org}"
            );
            assert_eq!(
                (event.action.as_str(), event.outcome, event.actor_kind),
                ("login", Outcome::Denied, ActorKind::User),
                "{label}: {org}"
            );
            assert_eq!(event.actor.as_deref(), Some(b.email.as_str()), "{label}");
            assert_eq!(event.target.as_deref(), Some(b.id.as_str()), "{label}");
        }
    }
    // An unknown email goes to the system partition, anonymous.
    app.post("/api/v1/auth/login")
        .by(&a)
        .json(json!({ "email": "nobody@example.org", "password": "a password guess" }))
        .send()
        .await
        .assert_problem(401, "invalid_credentials");
    let event = app.last_audit_event(SYSTEM_ORG).await;
    assert_eq!(
        (event.action.as_str(), event.actor_kind, event.actor),
        ("login", ActorKind::Anonymous, None)
    );
    assert_eq!(
        app.audit_events(&a.org).await.len(),
        a_before,
        "nothing was attributed to A"
    );

    // A successful login of B carrying A's token goes to B's organization.
    let b_before = app.audit_events(&b.org).await.len();
    app.post("/api/v1/auth/login")
        .by(&a)
        .json(json!({ "email": b.email, "password": PASSWORD }))
        .send()
        .await
        .assert_status(200);
    let event = app.last_audit_event(&b.org).await;
    assert_eq!(
        (event.action.as_str(), event.outcome, event.actor.as_deref()),
        ("login", Outcome::Success, Some(b.email.as_str()))
    );
    assert_eq!(app.audit_events(&b.org).await.len(), b_before + 1);
    assert_eq!(app.audit_events(&a.org).await.len(), a_before);
}

#[tokio::test]
async fn a_failing_dependency_is_recorded_as_an_error() {
    let app = TestApp::new().await;
    // DynamoDB refuses the member list's query; authentication and the audit
    // write still reach it.
    app.store_faults.fail_next("Query", 1);
    let response = app.get("/api/v1/members").by(&app.owner).send().await;
    response.assert_problem(503, "storage_unavailable");
    let detail = response.json()["detail"].as_str().unwrap().to_owned();
    assert!(
        !detail.contains("Query") && !detail.contains("127.0.0.1"),
        "{detail}"
    );
    let event = app.last_audit_event("acme").await;
    assert_eq!(
        (event.action.as_str(), event.outcome, event.status),
        ("listMembers", Outcome::Error, Some(503))
    );
    app.get("/api/v1/members")
        .by(&app.owner)
        .send()
        .await
        .assert_status(200);
}

#[tokio::test]
async fn pages_newest_first_with_limit_and_before() {
    let app = TestApp::new().await;
    for _ in 0..9 {
        app.get("/api/v1/me")
            .by(&app.owner)
            .send()
            .await
            .assert_status(200);
    }
    let first = app.get("/api/v1/audit?limit=4").by(&app.owner).send().await;
    first.assert_status(200);
    let page = first.json();
    let seqs: Vec<u64> = page["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(
        seqs,
        vec![9, 8, 7, 6],
        "the listing call itself is recorded after it answers"
    );
    assert_eq!(page["next_before"], 6);
    let event = &page["events"][0];
    for field in [
        "id",
        "at",
        "actor_kind",
        "actor",
        "action",
        "target_kind",
        "target",
        "outcome",
        "status",
        "ip",
        "request_id",
    ] {
        assert!(event.get(field).is_some(), "{field} missing: {event}");
    }
    assert!(
        event["at"].as_i64().unwrap() > 1_700_000_000_000,
        "Unix milliseconds"
    );

    let last = app
        .get("/api/v1/audit?limit=50&before=3")
        .by(&app.owner)
        .send()
        .await
        .json();
    let seqs: Vec<u64> = last["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, vec![2, 1]);
    assert!(last["next_before"].is_null());

    let default = app.get("/api/v1/audit").by(&app.owner).send().await.json();
    assert_eq!(
        default["events"].as_array().unwrap().len(),
        11,
        "ten calls so far, all on one default page"
    );

    for bad in ["limit=0", "limit=201", "limit=ten", "before=-1", "sort=asc"] {
        app.get(&format!("/api/v1/audit?{bad}"))
            .by(&app.owner)
            .send()
            .await
            .assert_problem(400, "invalid_request");
    }
}

/// `before` is an int64, as every `seq` is: one past it is out of range,
/// not a page of everything.
#[tokio::test]
async fn a_before_past_the_largest_seq_is_refused() {
    let app = TestApp::new().await;
    app.get("/api/v1/audit?before=9223372036854775807")
        .by(&app.owner)
        .send()
        .await
        .assert_status(200);
    let response = app
        .get("/api/v1/audit?before=9223372036854775808")
        .by(&app.owner)
        .send()
        .await;
    response.assert_problem(400, "invalid_request");
    assert_eq!(
        response.json()["detail"],
        "before: must be 0 to 9223372036854775807"
    );
}

#[tokio::test]
async fn organizations_see_only_their_own_events() {
    let app = TestApp::new().await;
    let stranger = app.other_org("hooli").await;
    app.get("/api/v1/me").by(&stranger).send().await;
    let theirs = app
        .get("/api/v1/audit?limit=200")
        .by(&stranger)
        .send()
        .await
        .json();
    let ours = app
        .get("/api/v1/audit?limit=200")
        .by(&app.owner)
        .send()
        .await
        .json();
    let actors = |page: &serde_json::Value| -> HashSet<String> {
        page["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|e| e["actor"].as_str().map(str::to_owned))
            .collect()
    };
    assert_eq!(actors(&theirs), HashSet::from([stranger.email.clone()]));
    assert!(!actors(&ours).contains(&stranger.email));
}

/// Two processes (each with its own sequence cache, as two Lambda instances
/// would be) write events while a reader pages through the log: every page
/// continues exactly where the previous one stopped, down to the first event.
#[tokio::test]
async fn paging_while_others_write_never_skips_or_repeats() {
    let app = TestApp::new().await;
    let second_instance = berth_local::app(AppState::new(
        app.dynamodb.clone(),
        (*app.state.config).clone(),
    ));
    for _ in 0..30 {
        app.get("/api/v1/me")
            .by(&app.owner)
            .send()
            .await
            .assert_status(200);
    }
    let writer = |router: axum::Router, token: String| async move {
        use tower::ServiceExt;
        for _ in 0..40 {
            let request = http::Request::get("/api/v1/me")
                .header("authorization", format!("Bearer {token}"))
                .body(axum::body::Body::empty())
                .unwrap();
            let response = router.clone().oneshot(request).await.unwrap();
            assert_eq!(response.status(), 200);
        }
    };
    let writers = tokio::spawn({
        let (first, second, token) = (
            app.app.clone(),
            second_instance.clone(),
            app.owner.token.clone(),
        );
        async move { tokio::join!(writer(first, token.clone()), writer(second, token)) }
    });

    let mut seen = Vec::new();
    let mut path = "/api/v1/audit?limit=7".to_owned();
    loop {
        let page = app.get(&path).by(&app.owner).send().await.json();
        seen.extend(
            page["events"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e["seq"].as_u64().unwrap()),
        );
        match page["next_before"].as_u64() {
            Some(before) => path = format!("/api/v1/audit?limit=7&before={before}"),
            None => break,
        }
    }
    writers.await.unwrap();
    let newest = seen[0];
    assert!(newest >= 30);
    assert_eq!(
        seen,
        (1..=newest).rev().collect::<Vec<_>>(),
        "pages must be contiguous"
    );

    let all = app.audit_events("acme").await;
    let seqs: Vec<u64> = all.iter().map(|e| e.seq).collect();
    assert_eq!(
        seqs,
        (1..=all.len() as u64).collect::<Vec<_>>(),
        "dense, unique sequence numbers"
    );
    let ids: HashSet<_> = all.iter().map(|e| e.id.clone()).collect();
    assert_eq!(ids.len(), all.len());
    assert!(all.len() >= 30 + 80);
}

fn call_of(action: &'static str) -> Call {
    Call {
        actor_kind: ActorKind::User,
        actor: Some("someone@acme.example".into()),
        action,
        target_kind: None,
        target: None,
        status: 200,
        ip: None,
        request_id: uuid::Uuid::new_v4().to_string(),
        project: None,
        detail: None,
    }
}

async fn audit_health_detail(app: &TestApp) -> String {
    let report = app
        .get("/api/v1/healthz/details")
        .by(&app.owner)
        .send()
        .await
        .json();
    let audit = report["subsystems"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "audit")
        .expect("the audit subsystem is reported")
        .clone();
    audit["detail"].as_str().unwrap().to_owned()
}

/// An event whose write keeps failing after its `seq` was taken is logged
/// whole, counted in the health report, and replayed into its place.
#[tokio::test]
async fn an_event_that_cannot_be_stored_is_logged_then_replayed() {
    let app = TestApp::new().await;
    assert_eq!(audit_health_detail(&app).await, "every event is stored");

    app.store_faults.fail_next("PutItem", 10_000);
    let recorded = app.state.audit.record("acme", &call_of("lostAction")).await;
    app.store_faults.heal();
    let Recorded::LoggedForReplay(line) = recorded else {
        panic!("the write was refused, yet {recorded:?}");
    };
    assert!(line.starts_with("audit_fallback {"), "{line}");
    let logged = parse_fallback_line(&line).expect("the line parses back");
    let seq = logged
        .seq
        .expect("the seq was taken before the write failed");
    assert_eq!(
        (logged.org.as_str(), logged.event.action.as_str()),
        ("acme", "lostAction")
    );
    // As the Lambda's JSON log format writes it, it parses the same.
    let json_line = json!({ "level": "ERROR", "message": line }).to_string();
    assert_eq!(parse_fallback_line(&json_line).unwrap().event, logged.event);
    assert!(
        audit_health_detail(&app)
            .await
            .starts_with("1 events could not be stored"),
    );

    let log = format!("START RequestId: x\n{json_line}\nsome other line\n");
    assert_eq!(app.state.audit.replay(&log).await.unwrap(), 1);
    assert_eq!(
        app.state.audit.replay(&log).await.unwrap(),
        0,
        "stored once"
    );
    let events = app.audit_events("acme").await;
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=events.len() as u64).collect::<Vec<_>>());
    let replayed = events.iter().find(|e| e.seq == seq).unwrap();
    assert_eq!(replayed, &logged.event);
    assert_eq!(audit_health_detail(&app).await, "every event is stored");
}

/// When not even a `seq` can be taken, the event is logged without one and
/// the replay gives it the next `seq`, once.
#[tokio::test]
async fn an_event_without_a_seq_is_replayed_once() {
    let app = TestApp::new().await;
    app.store_faults.fail_next("UpdateItem", 10_000);
    let recorded = app.state.audit.record("acme", &call_of("lostEarly")).await;
    app.store_faults.heal();
    let Recorded::LoggedForReplay(line) = recorded else {
        panic!("the counter was refused, yet {recorded:?}");
    };
    assert_eq!(parse_fallback_line(&line).unwrap().seq, None);
    assert_eq!(app.state.audit.replay(&line).await.unwrap(), 1);
    assert_eq!(app.state.audit.replay(&line).await.unwrap(), 0);
    let events = app.audit_events("acme").await;
    assert_eq!(events.iter().filter(|e| e.action == "lostEarly").count(), 1);
    assert_eq!(events.last().unwrap().action, "lostEarly");
}

/// A call still answers when its event cannot be stored, and the event is not
/// lost: the health report counts it until it is replayed.
#[tokio::test]
async fn a_call_whose_event_cannot_be_stored_still_answers() {
    let app = TestApp::new().await;
    app.store_faults.fail_next("PutItem", 10_000);
    app.get("/api/v1/me")
        .by(&app.owner)
        .send()
        .await
        .assert_status(200);
    app.store_faults.heal();
    assert!(app.state.audit.fallbacks() >= 1);
    assert!(
        audit_health_detail(&app)
            .await
            .starts_with("1 events could not be stored"),
    );
}

/// A `seq` that was taken but is not stored yet holds back the newer events,
/// so a reader paging down cannot pass it by; once it is stored, all show.
#[tokio::test]
async fn newer_events_wait_for_a_missing_seq() {
    let app = TestApp::new().await;
    app.get("/api/v1/me")
        .by(&app.owner)
        .send()
        .await
        .assert_status(200);
    let before = app.audit_events("acme").await.len();
    app.store_faults.fail_next("PutItem", 10_000);
    let Recorded::LoggedForReplay(line) =
        app.state.audit.record("acme", &call_of("slowWrite")).await
    else {
        panic!("the write was refused");
    };
    app.store_faults.heal();
    for _ in 0..3 {
        app.state.audit.record("acme", &call_of("afterIt")).await;
    }
    let shown = app.audit_events("acme").await;
    assert_eq!(shown.len(), before, "nothing above the missing seq yet");
    assert!(shown.iter().all(|e| e.action != "afterIt"));

    app.state.audit.replay(&line).await.unwrap();
    let shown = app.audit_events("acme").await;
    assert_eq!(shown.len(), before + 4);
    assert_eq!(
        shown.iter().map(|e| e.seq).collect::<Vec<_>>(),
        (1..=shown.len() as u64).collect::<Vec<_>>()
    );
}

/// The seqs of a page's events, and its `next_before`.
fn seqs_of(page: &serde_json::Value) -> (Vec<u64>, Option<u64>) {
    let seqs = page["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| e["seq"].as_u64().expect("a seq"))
        .collect();
    (seqs, page["next_before"].as_u64())
}

/// Every event of `path` (with its filters) older than `before`, read
/// page by page, `limit` a page, newest first; and how many pages it took.
async fn page_through(
    app: &TestApp,
    path: &str,
    limit: u32,
    mut before: Option<u64>,
) -> (Vec<serde_json::Value>, usize) {
    let (mut events, mut pages) = (Vec::new(), 0);
    loop {
        let mut url = format!("{path}&limit={limit}");
        if let Some(before) = before {
            url.push_str(&format!("&before={before}"));
        }
        let page = app.get(&url).by(&app.owner).send().await;
        page.assert_status(200);
        let page = page.json();
        pages += 1;
        events.extend(page["events"].as_array().cloned().unwrap_or_default());
        match page["next_before"].as_u64() {
            Some(next) => before = Some(next),
            None => return (events, pages),
        }
        assert!(pages < 100, "paging ends");
    }
}

/// Issue 47: the log filtered by actor, action and target (exact, or a
/// prefix ending in `*`), each alone or together, paged as the whole log
/// is: every matching event once, newest first, none other.
#[tokio::test]
async fn filters_pick_events_and_page_with_them() {
    let app = TestApp::new().await;
    let viewer = app.user(Role::Viewer).await;
    for _ in 0..5 {
        app.get("/api/v1/me").by(&app.owner).send().await;
    }
    for _ in 0..4 {
        app.get("/api/v1/me").by(&viewer).send().await;
    }
    for _ in 0..3 {
        app.get("/api/v1/tokens").by(&viewer).send().await;
    }
    for _ in 0..2 {
        app.sign_in(&viewer.email, PASSWORD).await;
    }
    let all = app.audit_events("acme").await;

    // The events a filter must give, from the whole log as it stood.
    let expect = |wanted: &dyn Fn(&berth_records::audit::AuditEvent) -> bool| -> Vec<u64> {
        all.iter().filter(|e| wanted(e)).map(|e| e.seq).collect()
    };
    let by_viewer =
        |e: &berth_records::audit::AuditEvent| e.actor.as_deref() == Some(viewer.email.as_str());
    let prefix: String = viewer.id.chars().take(6).collect();
    let cases: Vec<(String, Vec<u64>)> = vec![
        (
            // Compared ignoring ASCII case.
            format!("actor={}", viewer.email.to_uppercase()),
            expect(&by_viewer),
        ),
        (
            format!("actor={}&action=listTokens", viewer.email),
            expect(&|e| by_viewer(e) && e.action == "listTokens"),
        ),
        (
            "action=getCurrentUser".into(),
            expect(&|e| e.action == "getCurrentUser"),
        ),
        (
            format!("target={}", viewer.id),
            expect(&|e| e.target.as_deref() == Some(viewer.id.as_str())),
        ),
        (
            format!("target={prefix}*&target_kind=user&action=login"),
            expect(&|e| {
                e.target.as_deref().is_some_and(|t| t.starts_with(&prefix))
                    && e.target_kind.as_deref() == Some("user")
                    && e.action == "login"
            }),
        ),
    ];
    for (filter, mut want) in cases {
        want.reverse();
        assert!(!want.is_empty(), "{filter} matches something");
        // Newer events (these listings) come in above: only those older
        // than the log as it stood are compared.
        let top = all.last().map_or(0, |e| e.seq) + 1;
        let (events, pages) =
            page_through(&app, &format!("/api/v1/audit?{filter}"), 2, Some(top)).await;
        let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
        assert_eq!(seqs, want, "{filter}");
        assert_eq!(pages, want.len().div_ceil(2), "{filter}: full pages of 2");
    }
    assert_eq!(
        page_through(
            &app,
            "/api/v1/audit?action=login&actor=nobody@example.org",
            50,
            None
        )
        .await
        .0,
        Vec::<serde_json::Value>::new()
    );

    for bad in [
        "action=nope",
        "action=createapp",
        "action=",
        "actor=",
        "target=*",
        "target=a*b",
        "target=ab**",
        "target_kind=App",
        "target_kind=a%20b",
        "actor=a%07b",
        "outcome=denied",
    ] {
        app.get(&format!("/api/v1/audit?{bad}"))
            .by(&app.owner)
            .send()
            .await
            .assert_problem(400, "invalid_request");
    }
}

/// A filter holds back what is above a missing `seq`, as the whole log
/// does: the gap is in the log, whichever events match.
#[tokio::test]
async fn a_filtered_page_waits_for_a_missing_seq_too() {
    let app = TestApp::new().await;
    app.store_faults.fail_next("PutItem", 10_000);
    let Recorded::LoggedForReplay(line) = app
        .state
        .audit
        .record("acme", &call_of("getCurrentUser"))
        .await
    else {
        panic!("the write was refused");
    };
    app.store_faults.heal();
    for _ in 0..3 {
        app.state
            .audit
            .record("acme", &call_of("listProjects"))
            .await;
    }
    let filtered = "/api/v1/audit?actor=someone@acme.example";
    let page = app.get(filtered).by(&app.owner).send().await.json();
    assert_eq!(
        seqs_of(&page),
        (vec![], None),
        "nothing above the missing seq"
    );
    app.state.audit.replay(&line).await.unwrap();
    let page = app.get(filtered).by(&app.owner).send().await.json();
    assert_eq!(seqs_of(&page).0.len(), 4);
}

/// A filter that matches little of a long log: a page reads at most
/// `FILTER_READ_BUDGET` events, then answers with what it found — here
/// nothing — and a `next_before` below the last event it read, so the
/// next page goes on from there and the one match deep down is found,
/// once.
#[tokio::test]
async fn a_filter_matching_little_pages_on_from_where_it_stopped() {
    use berth_store::audit::FILTER_READ_BUDGET;
    let app = TestApp::new().await;
    let needle = Call {
        actor: Some("needle@acme.example".into()),
        ..call_of("getCurrentUser")
    };
    app.state.audit.record("acme", &needle).await;
    let mut writers = tokio::task::JoinSet::new();
    for writer in 0..16 {
        let audit = app.state.audit.clone();
        writers.spawn(async move {
            for _ in (writer..FILTER_READ_BUDGET + 100).step_by(16) {
                audit.record("acme", &call_of("listProjects")).await;
            }
        });
    }
    while let Some(done) = writers.join_next().await {
        done.expect("a writer");
    }
    // Once settled, a read stops at its budget (before, it reads on until
    // no missing seq can still arrive).
    tokio::time::sleep(berth_store::audit::SETTLED_AFTER + std::time::Duration::from_secs(1)).await;

    let first = app
        .get("/api/v1/audit?actor=needle@acme.example&limit=10")
        .by(&app.owner)
        .send()
        .await;
    first.assert_status(200);
    let (seqs, next) = seqs_of(&first.json());
    assert!(
        seqs.is_empty(),
        "the needle lies beyond the budget: {seqs:?}"
    );
    let next = next.expect("a cut page says where to go on");
    assert!(next > 1, "{next}");

    let (events, pages) =
        page_through(&app, "/api/v1/audit?actor=needle@acme.example", 10, None).await;
    assert_eq!(pages, 2, "one cut page, then the rest of the log");
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, vec![1]);
}

/// A project's log takes the same filters, paged the same way.
#[tokio::test]
async fn a_projects_log_takes_the_filters_too() {
    let app = TestApp::with_cluster().await;
    let project = app.ready_environment("filtered", "staging").await;
    let apps = format!("/api/v1/projects/{project}/environments/staging/apps");
    for name in ["web", "worker", "webhooks"] {
        app.post(&apps)
            .by(&app.owner)
            .json(json!({ "name": name, "image": "nginx:1.27" }))
            .send()
            .await
            .assert_status(201);
    }
    let log = format!("/api/v1/projects/{project}/audit?action=createApp&target=web*");
    // Events show once settled (about eight seconds after their call).
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    let (events, pages) = loop {
        let (events, pages) = page_through(&app, &log, 1, None).await;
        if events.len() == 2 || tokio::time::Instant::now() > deadline {
            break (events, pages);
        }
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    };
    let targets: Vec<&str> = events.iter().filter_map(|e| e["target"].as_str()).collect();
    assert_eq!(targets, ["webhooks", "web"], "newest first, by prefix");
    assert_eq!(pages, 2);
    assert!(
        events
            .iter()
            .all(|e| e["action"] == "createApp" && e["project"] == project.as_str())
    );

    app.get(&format!(
        "/api/v1/projects/{project}/audit?action=deployEverything"
    ))
    .by(&app.owner)
    .send()
    .await
    .assert_problem(400, "invalid_request");
}
