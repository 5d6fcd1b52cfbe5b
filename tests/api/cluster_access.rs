//! Reaching the cluster through the stored kubeconfig: `no_cluster` before one
//! is stored, and a replaced one noticed within the recheck interval.

use std::time::Duration;

use serde_json::json;

use crate::support::{TestApp, TestCluster, eventually};

#[tokio::test]
async fn without_a_stored_kubeconfig_cluster_calls_are_no_cluster() {
    let app = TestApp::new().await;
    app.get("/api/v1/projects")
        .by(&app.owner)
        .send()
        .await
        .assert_problem(503, "no_cluster");
    app.post("/api/v1/projects")
        .by(&app.owner)
        .json(json!({ "name": "web", "display_name": "Web" }))
        .send()
        .await
        .assert_problem(503, "no_cluster");
    app.get("/api/v1/projects/web")
        .by(&app.owner)
        .send()
        .await
        .assert_problem(503, "no_cluster");
    app.get("/api/v1/projects/web/environments")
        .by(&app.owner)
        .send()
        .await
        .assert_problem(503, "no_cluster");
    app.post("/api/v1/projects/web/environments")
        .by(&app.owner)
        .json(json!({ "name": "dev" }))
        .send()
        .await
        .assert_problem(503, "no_cluster");
    // Bad input is refused before the cluster is needed.
    app.post("/api/v1/projects")
        .by(&app.owner)
        .json(json!({ "name": "Bad Name", "display_name": "Web" }))
        .send()
        .await
        .assert_problem(422, "validation_failed");
    let event = app.last_audit_event("acme").await;
    assert_eq!(event.action, "createProject");

    let health = app
        .get("/api/v1/healthz/details")
        .by(&app.owner)
        .send()
        .await;
    health.assert_status(503);
    let report = health.json();
    assert_eq!(report["status"], "degraded");
    let cluster = report["subsystems"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "cluster")
        .unwrap()
        .clone();
    assert_eq!(
        (cluster["status"].as_str(), cluster["detail"].as_str()),
        (Some("down"), Some("no cluster configured"))
    );
}

#[tokio::test]
#[cfg_attr(
    berth_real_cluster,
    ignore = "needs a second cluster, which only the stand-in gives"
)]
async fn a_replaced_kubeconfig_is_noticed() {
    let app =
        TestApp::with_cluster_config(|config| config.kubeconfig_recheck = Duration::from_secs(1))
            .await;
    let name = app.create_project("first").await;
    let second = TestCluster::start().await;
    berth_api::kubeconfig::store_kubeconfig(&app.state.store, second.kubeconfig.clone(), None)
        .await
        .unwrap();
    let path = format!("/api/v1/projects/{name}");
    eventually("the second cluster is used", || async {
        app.get(&path).by(&app.owner).send().await.status == 404
    })
    .await;
    berth_api::kubeconfig::clear(&app.state.store)
        .await
        .unwrap();
    eventually("no cluster once the kubeconfig is cleared", || async {
        app.get("/api/v1/projects")
            .by(&app.owner)
            .send()
            .await
            .status
            == 503
    })
    .await;
    app.get("/api/v1/projects")
        .by(&app.owner)
        .send()
        .await
        .assert_problem(503, "no_cluster");
}

#[tokio::test]
async fn health_reports_the_cluster() {
    let app = TestApp::with_cluster().await;
    let response = app
        .get("/api/v1/healthz/details")
        .by(&app.owner)
        .send()
        .await;
    response.assert_status(200);
    let report = response.json();
    assert_eq!(report["status"], "ok");
    let names: Vec<_> = report["subsystems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names, ["dynamodb", "audit", "cluster"]);
    let cluster = &report["subsystems"][2];
    assert_eq!(cluster["status"], "up");
    assert!(
        cluster["detail"]
            .as_str()
            .is_some_and(|d| d.starts_with("Kubernetes ")),
        "{cluster}"
    );
}

/// A stored kubeconfig whose user runs a command (written before `cluster
/// set` refused them, or around it) is a misconfiguration the functions
/// refuse at load time: 503 naming the problem, and nothing is run.
#[tokio::test]
async fn a_stored_exec_kubeconfig_is_refused_as_misconfigured() {
    use crate::support::table as store;
    use berth_api::kubeconfig::StoredKubeconfig;
    use berth_store::keys;

    let app = TestApp::new().await;
    let marker =
        std::env::temp_dir().join(format!("berth-exec-ran-{}", uuid::Uuid::new_v4().simple()));
    let yaml = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {{server: 'https://127.0.0.1:1'}}\n\
         contexts:\n- name: c\n  context: {{cluster: c, user: u}}\ncurrent-context: c\n\
         users:\n- name: u\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1beta1\n      command: touch\n      args: [{}]\n",
        marker.display()
    );
    let item = StoredKubeconfig {
        pk: keys::CLUSTER_PK.to_owned(),
        sk: keys::KUBECONFIG_SK.to_owned(),
        kubeconfig: yaml,
        context: None,
        updated_at: 0,
    };
    app.dynamodb
        .put_item()
        .table_name(app.state.store.table())
        .set_item(Some(store::to_item(&item).unwrap()))
        .send()
        .await
        .unwrap();
    let response = app.get("/api/v1/projects").by(&app.owner).send().await;
    response.assert_problem(503, "cluster_unavailable");
    let detail = response.json()["detail"].as_str().unwrap().to_owned();
    assert!(
        detail.contains("`exec`") && detail.contains("cluster set"),
        "{detail}"
    );
    assert!(!marker.exists(), "the kubeconfig's command was not run");
}
