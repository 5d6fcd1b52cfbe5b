//! One-off commands (`runCommand`, `berth run -- CMD`): the Job the
//! controller makes from the app's current revision, the state and exit
//! status it reports as the pod goes, the bounds and the permission.
//! Pods are played as a kubelet would report them (no node runs them here
//! or on a real cluster without nodes).

use http::Method;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::ListParams;
use serde_json::{Value, json};

use crate::support::kubelet::{end_pods_with, play_kubelet};
use crate::support::{TestApp, eventually};
use berth_domain::Role;

struct Shop {
    app: TestApp,
    namespace: String,
    /// `…/apps/shop`.
    shop: String,
}

/// An app with two processes, a literal variable and a secret's.
async fn shop() -> Shop {
    let app = TestApp::with_cluster().await;
    let project = app.ready_environment("cmd", "dev").await;
    let environment = format!("/api/v1/projects/{project}/environments/dev");
    app.request(Method::PUT, &format!("{environment}/secrets/db"))
        .by(&app.owner)
        .json(json!({"data": {"url": "postgres://db/shop"}}))
        .send()
        .await
        .assert_status(201);
    app.create_app(
        &format!("{environment}/apps"),
        json!({"name": "shop", "image": "busybox:1.36",
            "env": [{"name": "GREETING", "value": "hi"}, {"name": "DB", "secret": {"name": "db", "key": "url"}}],
            "processes": [
                {"name": "web", "port": 80},
                {"name": "worker", "size": "medium", "command": ["sh", "-c", "sleep 1d"]}
            ]}),
    )
    .await;
    Shop {
        app,
        namespace: format!("{project}-dev"),
        shop: format!("{environment}/apps/shop"),
    }
}

impl Shop {
    async fn run(&self, body: Value) -> Value {
        let answer = self
            .app
            .post(&format!("{}/commands", self.shop))
            .by(&self.app.owner)
            .json(body)
            .send()
            .await;
        answer.assert_status(202);
        let command = answer.json();
        let location = answer.headers["location"].to_str().unwrap();
        assert_eq!(
            location,
            format!(
                "{}/commands/{}",
                self.shop,
                command["name"].as_str().unwrap()
            )
        );
        command
    }

    async fn command(&self, name: &str) -> Value {
        let answer = self
            .app
            .get(&format!("{}/commands/{name}", self.shop))
            .by(&self.app.owner)
            .send()
            .await;
        answer.assert_status(200);
        answer.json()
    }

    async fn until_state(&self, name: &str, state: &str) -> Value {
        eventually(&format!("the command is {state}"), || async {
            self.command(name).await["state"] == state
        })
        .await;
        self.command(name).await
    }

    async fn job(&self, name: &str) -> Job {
        let jobs: Api<Job> = Api::namespaced(self.app.cluster().client.clone(), &self.namespace);
        eventually("the controller makes the command's Job", || async {
            jobs.get_opt(name).await.unwrap().is_some()
        })
        .await;
        jobs.get(name).await.unwrap()
    }
}

#[tokio::test]
async fn a_command_runs_once_with_the_apps_revision_and_reports_its_exit_status() {
    let shop = shop().await;
    let started = shop
        .run(json!({"command": ["sh", "-c", "echo migrating; exit 3"], "process": "worker", "timeout_seconds": 600}))
        .await;
    let name = started["name"].as_str().unwrap().to_owned();
    assert!(name.starts_with("cmd-") && name.len() == 16, "{name}");
    assert_eq!(started["state"], "pending");
    assert_eq!(started["process"], "worker");
    assert_eq!(started["timeout_seconds"], 600);
    assert_eq!(started["exit_code"], Value::Null);

    // The audit event holds the command as it was sent.
    let event = shop.app.last_audit_event(&shop.app.owner.org).await;
    assert_eq!(event.action, "runCommand");
    assert_eq!(
        event.detail.as_deref(),
        Some(r#"["sh","-c","echo migrating; exit 3"]"#)
    );

    // Its Job: the worker's container as the Deployment has it (image, env
    // with the secret's reference, size), the command instead, run once.
    let job = shop.job(&name).await;
    let client = shop.app.cluster().client.clone();
    let worker = Api::<Deployment>::namespaced(client.clone(), &shop.namespace)
        .get("shop-worker")
        .await
        .unwrap();
    let worker = &worker.spec.unwrap().template.spec.unwrap().containers[0];
    let spec = job.spec.clone().unwrap();
    let pod = spec.template.spec.clone().unwrap();
    let container = &pod.containers[0];
    assert_eq!(container.name, "command");
    assert_eq!(
        container.command.as_deref(),
        Some(
            &[
                "sh".to_owned(),
                "-c".to_owned(),
                "echo migrating; exit 3".to_owned()
            ][..]
        )
    );
    assert_eq!(container.image, worker.image);
    assert_eq!(container.env, worker.env);
    assert_eq!(container.resources, worker.resources);
    assert!(container.ports.is_none() && container.readiness_probe.is_none());
    assert_eq!(spec.backoff_limit, Some(0));
    assert_eq!(spec.active_deadline_seconds, Some(600));
    assert_eq!(pod.restart_policy.as_deref(), Some("Never"));
    assert_eq!(pod.automount_service_account_token, Some(false));
    let owner = &job.metadata.owner_references.clone().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("Command", name.as_str())
    );
    assert_eq!(owner.controller, Some(true));

    // Its pod, once the Job controller made it: running, then exited 3.
    let selector = format!("berth.dev/command={name}");
    let pods: Api<Pod> = Api::namespaced(client.clone(), &shop.namespace);
    eventually("the Job's pod exists", || async {
        !pods
            .list(&ListParams::default().labels(&selector))
            .await
            .unwrap()
            .items
            .is_empty()
    })
    .await;
    play_kubelet(&client, &shop.namespace, &selector).await;
    let running = shop.until_state(&name, "running").await;
    assert!(running["started_at"].is_string(), "{running}");
    assert_eq!(running["revision"], 1);
    // Not one of the app's processes' pods.
    let detail = shop
        .app
        .get(&shop.shop)
        .by(&shop.app.owner)
        .send()
        .await
        .json();
    let pod_names: Vec<&str> = detail["pods"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|pod| pod["name"].as_str())
        .collect();
    assert!(
        pod_names.iter().all(|pod| !pod.starts_with(&name)),
        "{pod_names:?}"
    );
    // Its output: the pod's one log (no node runs it here, so it says why).
    let logs = shop
        .app
        .get(&format!("{}/commands/{name}/logs?since=0", shop.shop))
        .by(&shop.app.owner)
        .send()
        .await;
    logs.assert_status(200);
    let logs = logs.json();
    assert_eq!(logs.as_array().unwrap().len(), 1, "{logs}");
    assert_eq!(logs[0]["container"], "command");

    end_pods_with(&client, &shop.namespace, &selector, 3).await;
    let ended = shop.until_state(&name, "failed").await;
    assert_eq!(ended["exit_code"], 3, "{ended}");
    assert_eq!(ended["message"], "The command exited with status 3.");
    assert!(ended["finished_at"].is_string() && ended["expires_at"].is_string());

    // Listed with the app's commands, newest first.
    let second = shop.run(json!({"command": ["true"]})).await;
    assert_eq!(
        second["process"], "web",
        "the first process's size by default"
    );
    let listed = shop
        .app
        .get(&format!("{}/commands", shop.shop))
        .by(&shop.app.owner)
        .send()
        .await
        .json();
    let names: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|command| command["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, [second["name"].as_str().unwrap(), name.as_str()]);
    // A command that exits 0 succeeded.
    let second = second["name"].as_str().unwrap().to_owned();
    shop.job(&second).await;
    let selector = format!("berth.dev/command={second}");
    eventually("the second command's pod exists and ends", || async {
        end_pods_with(&client, &shop.namespace, &selector, 0).await > 0
    })
    .await;
    let succeeded = shop.until_state(&second, "succeeded").await;
    assert_eq!(succeeded["exit_code"], 0);
}

#[tokio::test]
async fn a_command_past_its_timeout_is_stopped() {
    let shop = shop().await;
    let name = shop
        .run(json!({"command": ["sleep", "3600"], "timeout_seconds": 1}))
        .await["name"]
        .as_str()
        .unwrap()
        .to_owned();
    let job = shop.job(&name).await;
    assert_eq!(job.spec.unwrap().active_deadline_seconds, Some(1));
    let ended = shop.until_state(&name, "failed").await;
    assert_eq!(ended["reason"], "DeadlineExceeded", "{ended}");
    assert_eq!(
        ended["message"],
        "The command was stopped after its timeout of 1 s."
    );
}

#[tokio::test]
async fn running_a_command_takes_app_deploy_and_reading_it_takes_read() {
    let shop = shop().await;
    let name = shop.run(json!({"command": ["true"]})).await["name"]
        .as_str()
        .unwrap()
        .to_owned();
    for role in [Role::Viewer, Role::Operator] {
        let user = shop.app.user(role).await;
        shop.app
            .post(&format!("{}/commands", shop.shop))
            .by(&user)
            .json(json!({"command": ["env"]}))
            .send()
            .await
            .assert_problem(403, "forbidden");
        for path in [
            "commands".to_owned(),
            format!("commands/{name}"),
            format!("commands/{name}/logs"),
        ] {
            shop.app
                .get(&format!("{}/{path}", shop.shop))
                .by(&user)
                .send()
                .await
                .assert_status(200);
        }
    }
    let developer = shop.app.user(Role::Developer).await;
    shop.app
        .post(&format!("{}/commands", shop.shop))
        .by(&developer)
        .json(json!({"command": ["true"]}))
        .send()
        .await
        .assert_status(202);
}

#[tokio::test]
async fn bad_commands_are_refused_and_change_nothing() {
    let shop = shop().await;
    let commands = format!("{}/commands", shop.shop);
    for (body, status, kind) in [
        (json!({"command": []}), 422, "validation_failed"),
        (json!({"command": ["a\u{0}b"]}), 422, "validation_failed"),
        (
            json!({"command": ["true"], "timeout_seconds": 0}),
            422,
            "validation_failed",
        ),
        (
            json!({"command": ["true"], "timeout_seconds": 86401}),
            422,
            "validation_failed",
        ),
        (
            json!({"command": ["true"], "process": "nosuch"}),
            422,
            "validation_failed",
        ),
        (
            json!({"command": ["true"], "shell": true}),
            400,
            "invalid_request",
        ),
        (json!({}), 400, "invalid_request"),
    ] {
        shop.app
            .post(&commands)
            .by(&shop.app.owner)
            .json(body)
            .send()
            .await
            .assert_problem(status, kind);
    }
    let listed = shop
        .app
        .get(&commands)
        .by(&shop.app.owner)
        .send()
        .await
        .json();
    assert_eq!(listed, json!([]));
    for name in ["cmd-bbbbbbbbbbbb", "not-a-command", "cmd-BBBBBBBBBBBB"] {
        shop.app
            .get(&format!("{commands}/{name}"))
            .by(&shop.app.owner)
            .send()
            .await
            .assert_problem(404, "not_found");
    }
    shop.app
        .request(
            Method::POST,
            "/api/v1/projects/nosuch/environments/dev/apps/shop/commands",
        )
        .by(&shop.app.owner)
        .json(json!({"command": ["true"]}))
        .send()
        .await
        .assert_problem(404, "not_found");
}

#[tokio::test]
async fn an_environment_runs_at_most_five_commands_at_once() {
    let shop = shop().await;
    for _ in 0..5 {
        shop.run(json!({"command": ["sleep", "60"]})).await;
    }
    let refused = shop
        .app
        .post(&format!("{}/commands", shop.shop))
        .by(&shop.app.owner)
        .json(json!({"command": ["sleep", "60"]}))
        .send()
        .await;
    refused.assert_problem(409, "conflict");
    assert!(
        refused.json()["detail"]
            .as_str()
            .unwrap()
            .contains("5 commands have not ended in this environment"),
        "{}",
        refused.json()
    );
}

/// A Command whose App is not its own (another App of the name, made since
/// it was asked for) runs nothing: the controller deletes it.
#[tokio::test]
async fn a_command_of_another_app_of_the_name_runs_nothing() {
    use berth_cluster::crd::{Command, CommandSpec};
    use kube::api::PostParams;

    let shop = shop().await;
    let client = shop.app.cluster().client.clone();
    let commands: Api<Command> = Api::namespaced(client.clone(), &shop.namespace);
    let stale = Command::new(
        "cmd-bbbbbbbbbbbb",
        CommandSpec {
            app: "shop".into(),
            app_uid: "the-uid-of-an-app-deleted-since".into(),
            command: vec!["true".into()],
            process: "web".into(),
            timeout_seconds: 60,
            requested_at: 0,
        },
    );
    commands
        .create(&PostParams::default(), &stale)
        .await
        .expect("the stale command");
    eventually("the controller deletes the stale command", || async {
        commands
            .get_opt("cmd-bbbbbbbbbbbb")
            .await
            .unwrap()
            .is_none()
    })
    .await;
    let jobs: Api<Job> = Api::namespaced(client, &shop.namespace);
    assert!(jobs.get_opt("cmd-bbbbbbbbbbbb").await.unwrap().is_none());
}
