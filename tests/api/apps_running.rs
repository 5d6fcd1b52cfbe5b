//! Running apps: logs, restart and run-now, through the API and checked in
//! the cluster.

use std::time::Duration;

use berth_kube_standin::LogKey;
use http::Method;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::{ListParams, PostParams};
use serde_json::{Value, json};

use crate::support::{TestApp, eventually};
use berth_domain::Role;

async fn app_in_environment(app: &TestApp, body: Value) -> (String, String) {
    let project = app.ready_environment("run", "dev").await;
    let apps = format!("/api/v1/projects/{project}/environments/dev/apps");
    app.create_app(&apps, body).await;
    (project, apps)
}

/// Pods Berth did not schedule (no node runs them, on the stand-in and a real
/// cluster alike) answer why they have no log, and the call still answers 200.
#[tokio::test]
async fn logs_of_pods_no_node_runs_say_why() {
    let app = TestApp::with_cluster().await;
    let (project, apps) = app_in_environment(
        &app,
        json!({"name": "shop", "image": "nginx:1.27", "port": 80, "replicas": 2}),
    )
    .await;
    let namespace = format!("{project}-dev");
    let pods: Api<Pod> = Api::namespaced(app.cluster().client.clone(), &namespace);
    eventually("the Deployment's pods exist", || async {
        pods.list(&ListParams::default().labels("berth.dev/app=shop"))
            .await
            .is_ok_and(|list| list.items.len() == 2)
    })
    .await;
    let answer = app
        .get(&format!("{apps}/shop/logs"))
        .by(&app.owner)
        .send()
        .await;
    answer.assert_status(200);
    let entries = answer.json();
    let entries = entries.as_array().unwrap();
    assert_eq!(entries.len(), 2);
    for entry in entries {
        assert_eq!(entry["process"], "web");
        assert_eq!(entry["lines"], json!([]));
        assert_eq!(entry["error"], "the pod is not scheduled on a node yet");
    }
    for (query, code) in [
        ("tail=0", 400),
        ("tail=2001", 400),
        ("tail=x", 400),
        ("colour=red", 400),
    ] {
        app.get(&format!("{apps}/shop/logs?{query}"))
            .by(&app.owner)
            .send()
            .await
            .assert_problem(code, "invalid_request");
    }
    let viewer = app.user(Role::Viewer).await;
    app.get(&format!("{apps}/shop/logs"))
        .by(&viewer)
        .send()
        .await
        .assert_status(200);
}

/// A pod of `process` of app `shop`, running on a node, as the test says.
fn running_pod(name: &str, process: &str, org: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {
            "name": name,
            "labels": {"berth.dev/org": org, "berth.dev/app": "shop", "berth.dev/process": process},
        },
        "spec": {"nodeName": "node-1", "containers": [{"name": process, "image": "nginx"}]},
    }))
    .unwrap()
}

/// A chatty pod's answer holds at most 512 KiB of its log, its newest lines;
/// ten of them, logging what JSON escapes most, still answer within 5 MiB
/// as Lambda returns it. Every cut is marked. Needs the stand-in's log knob.
#[tokio::test]
#[cfg_attr(berth_real_cluster, ignore = "needs the stand-in's log knob")]
async fn logs_are_bounded_per_pod_and_in_all() {
    let app = TestApp::with_cluster().await;
    let (project, apps) = app_in_environment(
        &app,
        json!({"name": "shop", "image": "nginx", "port": 80, "replicas": 0}),
    )
    .await;
    let namespace = format!("{project}-dev");
    let pods: Api<Pod> = Api::namespaced(app.cluster().client.clone(), &namespace);
    let standin = app.standin();
    let logs = async || {
        let answer = app
            .get(&format!("{apps}/shop/logs?tail=2000"))
            .by(&app.owner)
            .send()
            .await;
        answer.assert_status(200);
        answer
    };
    let lines_of = |entry: &Value| -> Vec<String> {
        entry["lines"]
            .as_array()
            .unwrap()
            .iter()
            .map(|line| line.as_str().unwrap().to_owned())
            .collect()
    };
    /// The newest lines of a log of 2000 numbered ones, whole and in order.
    fn assert_newest(lines: &[String], text: &str) {
        assert!(lines.len() > 50, "{}", lines.len());
        for (at, line) in lines.iter().enumerate() {
            let expected = 2000 - lines.len() + at;
            assert_eq!(*line, format!("{expected:04} {text}"));
        }
    }

    // One pod, 2000 lines of 1 KiB: 512 KiB of it are read, its newest lines.
    let plain = "x".repeat(1019);
    pods.create(
        &PostParams::default(),
        &running_pod("shop-web-00", "web", "acme"),
    )
    .await
    .unwrap();
    standin.set_pod_logs(
        LogKey::new(&namespace, "shop-web-00", "web"),
        (0..2000).map(|line| format!("{line:04} {plain}")),
    );
    let one = logs().await.json();
    assert_eq!(one[0]["truncated"], true);
    let kept = lines_of(&one[0]);
    let bytes: usize = kept.iter().map(|line| line.len() + 1).sum();
    assert!(bytes <= 512 * 1024 && bytes > 500 * 1024, "{bytes}");
    assert_newest(&kept, &plain);

    // Ten of them, logging what JSON escapes most (quotes and control
    // characters take 5.5 bytes each once answered through Lambda).
    let noisy = "\u{1}\"".repeat(500);
    for pod in 0..10 {
        let name = format!("shop-web-{pod:02}");
        if pod > 0 {
            pods.create(&PostParams::default(), &running_pod(&name, "web", "acme"))
                .await
                .unwrap();
        }
        standin.set_pod_logs(
            LogKey::new(&namespace, &name, "web"),
            (0..2000).map(|line| format!("{line:04} {noisy}")),
        );
    }
    let answer = logs().await;
    // The body as Lambda returns it: a string of the response document.
    let enveloped = serde_json::to_string(&answer.text()).unwrap().len();
    assert!(enveloped <= 5 * 1024 * 1024, "{enveloped} bytes");
    assert!(
        enveloped > 4 * 1024 * 1024,
        "the budget is used: {enveloped}"
    );
    let entries = answer.json();
    let entries = entries.as_array().unwrap();
    assert_eq!(entries.len(), 10);
    for entry in entries {
        assert_eq!(entry["truncated"], true, "{}", entry["pod"]);
        assert_newest(&lines_of(entry), &noisy);
    }

    // A log that fits is whole and unmarked.
    standin.set_pod_logs(LogKey::new(&namespace, "shop-web-09", "web"), ["quiet"]);
    let quiet = app
        .get(&format!("{apps}/shop/logs"))
        .by(&app.owner)
        .send()
        .await
        .json();
    let quiet = quiet
        .as_array()
        .unwrap()
        .iter()
        .find(|entry| entry["pod"] == "shop-web-09")
        .unwrap()
        .clone();
    assert_eq!(
        (quiet["lines"].clone(), quiet["truncated"].clone()),
        (json!(["quiet"]), json!(false))
    );
}

/// What the log endpoint gives: tail, previous, the process filter, the cap
/// of ten pods (the newest), lines as written and cut at 16 KiB, and a pod
/// whose container is still starting. Needs the stand-in's log knob.
#[tokio::test]
#[cfg_attr(berth_real_cluster, ignore = "needs the stand-in's log knob")]
async fn logs_follow_the_query() {
    let app = TestApp::with_cluster().await;
    let (project, apps) = app_in_environment(
        &app,
        json!({"name": "shop", "image": "nginx", "processes": [{"name": "web", "port": 80, "replicas": 0}, {"name": "worker", "replicas": 0}]}),
    )
    .await;
    let namespace = format!("{project}-dev");
    let pods: Api<Pod> = Api::namespaced(app.cluster().client.clone(), &namespace);
    let standin = app.standin();
    for i in 0..12 {
        let name = format!("shop-web-{i:02}");
        pods.create(&PostParams::default(), &running_pod(&name, "web", "acme"))
            .await
            .unwrap();
        if i != 5 {
            standin.set_pod_logs(
                LogKey::new(&namespace, &name, "web"),
                [
                    format!("{{\"pod\": {i}, \"line\": 1}}"),
                    format!("pod {i} line 2"),
                    format!("pod {i} line 3"),
                ],
            );
        }
        // Pods created within one second have the same creation time.
        tokio::time::sleep(Duration::from_millis(1050)).await;
    }
    pods.create(
        &PostParams::default(),
        &running_pod("shop-worker-1", "worker", "acme"),
    )
    .await
    .unwrap();
    let long_line = "x".repeat(20_000);
    standin.set_pod_logs(
        LogKey::new(&namespace, "shop-worker-1", "worker"),
        ["started", long_line.as_str()],
    );
    standin.set_pod_logs(
        LogKey::new(&namespace, "shop-worker-1", "worker").previous(),
        ["crashed: out of memory"],
    );

    let logs = async |query: &str| {
        let answer = app
            .get(&format!("{apps}/shop/logs?{query}"))
            .by(&app.owner)
            .send()
            .await;
        answer.assert_status(200);
        answer.json().as_array().cloned().unwrap()
    };
    let all = logs("").await;
    assert_eq!(all.len(), 10, "at most ten pods");
    assert_eq!(all[0]["pod"], "shop-worker-1", "the newest first");
    assert_eq!(all[1]["pod"], "shop-web-11");
    let worker = &all[0];
    assert_eq!(worker["lines"][0], "started");
    let cut = worker["lines"][1].as_str().unwrap();
    assert!(
        cut.len() < long_line.len() && cut.starts_with("xxxx") && cut.contains("cut at 16 KiB")
    );
    assert_eq!(worker["truncated"], true, "a cut line is marked");
    assert!(all[1..].iter().all(|entry| entry["truncated"] == false));

    let web = logs("process=web&tail=2").await;
    assert_eq!(web.len(), 10);
    assert!(web.iter().all(|entry| entry["process"] == "web"));
    assert_eq!(web[0]["lines"], json!(["pod 11 line 2", "pod 11 line 3"]));
    let starting = web
        .iter()
        .find(|entry| entry["pod"] == "shop-web-05")
        .unwrap();
    assert_eq!(starting["lines"], json!([]));
    assert_eq!(starting["error"], "the container is still starting");
    // A line is returned as written, never parsed.
    let first = logs("process=web&tail=3").await;
    assert_eq!(first[0]["lines"][0], "{\"pod\": 11, \"line\": 1}");

    let previous = logs("process=worker&previous=true").await;
    assert_eq!(previous[0]["lines"], json!(["crashed: out of memory"]));
    let no_previous = logs("process=web&previous=true").await;
    assert_eq!(
        no_previous[0]["error"],
        "the container has no previous instance"
    );
}

#[tokio::test]
async fn a_restart_rolls_the_pods_without_a_revision() {
    let app = TestApp::with_cluster().await;
    let (project, apps) = app_in_environment(
        &app,
        json!({"name": "shop", "image": "nginx:1.27", "port": 80}),
    )
    .await;
    let deployments: Api<Deployment> =
        Api::namespaced(app.cluster().client.clone(), &format!("{project}-dev"));
    let stamp = || async {
        deployments
            .get_opt("shop-web")
            .await
            .unwrap()
            .and_then(|d| d.spec?.template.metadata?.annotations)
            .and_then(|a| a.get("kubectl.kubernetes.io/restartedAt").cloned())
    };
    eventually("the Deployment exists", || async {
        deployments.get_opt("shop-web").await.unwrap().is_some()
    })
    .await;
    assert_eq!(stamp().await, None);
    let mut seen = Vec::new();
    for _ in 0..2 {
        let restarted = app
            .post(&format!("{apps}/shop/restart"))
            .by(&app.owner)
            .send()
            .await;
        restarted.assert_status(202);
        assert_eq!(restarted.json()["revision"], 1, "no new revision");
        eventually("the pod template gets a new restart stamp", || async {
            stamp().await.is_some_and(|s| !seen.contains(&s))
        })
        .await;
        seen.push(stamp().await.unwrap());
    }
    let history = app
        .get(&format!("{apps}/shop/releases"))
        .by(&app.owner)
        .send()
        .await
        .json();
    assert_eq!(history.as_array().map(Vec::len), Some(1));
    let viewer = app.user(Role::Viewer).await;
    app.post(&format!("{apps}/shop/restart"))
        .by(&viewer)
        .send()
        .await
        .assert_problem(403, "forbidden");
}

#[tokio::test]
async fn run_now_makes_a_job_from_the_cron_job() {
    let app = TestApp::with_cluster().await;
    let (project, apps) = app_in_environment(
        &app,
        json!({"name": "shop", "image": "busybox:1.36", "processes": [
            {"name": "web", "port": 80},
            {"name": "nightly", "schedule": "0 3 * * *", "time_zone": "Europe/Berlin", "command": ["sh", "-c", "echo hi"]}
        ]}),
    )
    .await;
    let namespace = format!("{project}-dev");
    let client = app.cluster().client.clone();
    eventually("the CronJob exists", || async {
        Api::<k8s_openapi::api::batch::v1::CronJob>::namespaced(client.clone(), &namespace)
            .get_opt("shop-nightly")
            .await
            .unwrap()
            .is_some()
    })
    .await;
    let run = |body: Option<Value>| {
        let mut request = app
            .request(Method::POST, &format!("{apps}/shop/run"))
            .by(&app.owner);
        if let Some(body) = body {
            request = request.json(body);
        }
        request.send()
    };
    let mut jobs = Vec::new();
    for body in [None, Some(json!({"process": "nightly"}))] {
        let answer = run(body).await;
        answer.assert_status(202);
        jobs.push(answer.json()["job"].as_str().unwrap().to_owned());
    }
    assert_ne!(jobs[0], jobs[1], "two runs in one second do not collide");
    // The controller makes them (the API records the runs): soon, both.
    let job_api: Api<Job> = Api::namespaced(client.clone(), &namespace);
    for name in &jobs {
        eventually("the controller makes the run's Job", || async {
            job_api.get_opt(name).await.unwrap().is_some()
        })
        .await;
    }
    let job = job_api.get(&jobs[0]).await.unwrap();
    let annotations = job.metadata.annotations.clone().unwrap_or_default();
    assert_eq!(annotations["cronjob.kubernetes.io/instantiate"], "manual");
    let owner = &job.metadata.owner_references.clone().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("CronJob", "shop-nightly")
    );
    let container = &job.spec.unwrap().template.spec.unwrap().containers[0];
    assert_eq!(
        container.command.as_deref(),
        Some(&["sh".to_owned(), "-c".to_owned(), "echo hi".to_owned()][..])
    );

    for body in [json!({"process": "web"}), json!({"process": "nosuch"})] {
        run(Some(body))
            .await
            .assert_problem(422, "validation_failed");
    }
    app.request(Method::POST, &format!("{apps}/shop/run"))
        .by(&app.owner)
        .json(json!({"process": "nightly", "extra": 1}))
        .send()
        .await
        .assert_problem(400, "invalid_request");
}
