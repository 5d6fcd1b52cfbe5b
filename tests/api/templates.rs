//! The template catalogue and deploying each template: the app, its
//! generated secret, its release and its rendered objects; all or nothing.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::CronJob;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Secret};
use kube::Api;
use serde_json::json;

use crate::support::{TestApp, eventually};
use berth_domain::Role;

#[tokio::test]
async fn the_catalogue_lists_real_templates() {
    let app = TestApp::new().await;
    let viewer = app.user(Role::Viewer).await;
    let listed = app.get("/api/v1/templates").by(&viewer).send().await;
    listed.assert_status(200);
    let listed = listed.json();
    let names: Vec<_> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    for wanted in [
        "postgres",
        "redis",
        "mariadb",
        "nginx",
        "web-worker",
        "nightly-job",
    ] {
        assert!(names.iter().any(|n| n == wanted), "{wanted} in {names:?}");
    }
    let postgres = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "postgres")
        .unwrap();
    assert_eq!(postgres["image"], "postgres:16.4");
    assert_eq!(postgres["port"], 5432);
    assert!(
        postgres["env"]
            .as_array()
            .unwrap()
            .iter()
            .any(|v| v["generate"] == true)
    );
    assert_eq!(postgres["volumes"][0]["name"], "data");
    let pair = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "web-worker")
        .unwrap();
    assert_eq!(pair["processes"].as_array().map(Vec::len), Some(2));
}

/// Every template deploys into one environment, and becomes what it says.
#[tokio::test]
async fn every_template_deploys_and_renders() {
    let app = TestApp::with_cluster().await;
    let project = app.ready_environment("tpl", "dev").await;
    let environment = format!("/api/v1/projects/{project}/environments/dev");
    let namespace = format!("{project}-dev");
    let client = app.cluster().client.clone();
    let templates = app
        .get("/api/v1/templates")
        .by(&app.owner)
        .send()
        .await
        .json();
    for template in templates.as_array().unwrap() {
        let name = template["name"].as_str().unwrap();
        let deployed = app
            .post(&format!("{environment}/templates/{name}"))
            .by(&app.owner)
            .send()
            .await;
        deployed.assert_status(201);
        let deployed = deployed.json();
        assert_eq!(deployed["template"], name);
        let record = &deployed["apps"][0];
        assert_eq!(record["name"], name);
        assert_eq!(record["image"], template["image"]);
        let history = app
            .get(&format!("{environment}/apps/{name}/releases"))
            .by(&app.owner)
            .send()
            .await
            .json();
        assert_eq!(history[0]["reason"], "template");
        assert_eq!(history[0]["note"], format!("from template {name}").as_str());

        let generated: Vec<_> = template["env"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|v| v["generate"] == true)
            .map(|v| v["name"].as_str().unwrap().to_owned())
            .collect();
        if !generated.is_empty() {
            let secret: Secret = Api::namespaced(client.clone(), &namespace)
                .get(&format!("{name}-generated"))
                .await
                .unwrap();
            let data = secret.data.unwrap_or_default();
            for key in &generated {
                let value = data.get(key).unwrap_or_else(|| panic!("{name}: {key}"));
                assert!(value.0.len() >= 32, "{name}: {key} is long enough");
            }
            // The answer names the secret, never its values.
            assert!(
                record["env"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|v| v["secret"]["name"] == format!("{name}-generated").as_str())
            );
        }
        // What the controller renders from it.
        let scheduled = template["processes"]
            .as_array()
            .is_some_and(|p| p.iter().any(|p| p.get("schedule").is_some()));
        if scheduled {
            eventually(&format!("{name}: its CronJob"), || async {
                Api::<CronJob>::namespaced(client.clone(), &namespace)
                    .get_opt(&format!("{name}-job"))
                    .await
                    .unwrap()
                    .is_some()
            })
            .await;
        } else {
            let process = template["processes"][0]["name"].as_str().unwrap_or("web");
            eventually(&format!("{name}: its Deployment"), || async {
                Api::<Deployment>::namespaced(client.clone(), &namespace)
                    .get_opt(&format!("{name}-{process}"))
                    .await
                    .unwrap()
                    .is_some_and(|d| {
                        d.spec.unwrap().template.spec.unwrap().containers[0].image
                            == template["image"].as_str().map(str::to_owned)
                    })
            })
            .await;
        }
        for volume in template["volumes"].as_array().unwrap() {
            let claim = format!("{name}-{}", volume["name"].as_str().unwrap());
            eventually(&format!("{name}: claim {claim}"), || async {
                Api::<PersistentVolumeClaim>::namespaced(client.clone(), &namespace)
                    .get_opt(&claim)
                    .await
                    .unwrap()
                    .is_some()
            })
            .await;
        }
    }
}

#[tokio::test]
async fn a_deployment_is_all_or_nothing() {
    let app = TestApp::with_cluster().await;
    let project = app.ready_environment("tpl", "dev").await;
    let environment = format!("/api/v1/projects/{project}/environments/dev");
    let deploy = |template: &str, body: Option<serde_json::Value>| {
        let mut request = app
            .post(&format!("{environment}/templates/{template}"))
            .by(&app.owner);
        if let Some(body) = body {
            request = request.json(body);
        }
        request.send()
    };
    // Another name and values.
    let deployed = deploy(
        "postgres",
        Some(json!({"name": "db", "env": {"POSTGRES_DB": "shop"}})),
    )
    .await;
    deployed.assert_status(201);
    let record = &deployed.json()["apps"][0];
    assert_eq!(record["name"], "db");
    assert!(
        record["env"]
            .as_array()
            .unwrap()
            .iter()
            .any(|v| v["name"] == "POSTGRES_DB" && v["value"] == "shop")
    );

    // A taken app name: 409, and no secret made for it.
    deploy("postgres", Some(json!({"name": "db"})))
        .await
        .assert_problem(409, "conflict");
    app.post(&format!("{environment}/apps"))
        .by(&app.owner)
        .json(json!({"name": "taken", "image": "nginx"}))
        .send()
        .await
        .assert_status(201);
    deploy("mariadb", Some(json!({"name": "taken"})))
        .await
        .assert_problem(409, "conflict");
    let secrets = app
        .get(&format!("{environment}/secrets"))
        .by(&app.owner)
        .send()
        .await
        .json();
    let names: Vec<_> = secrets
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names, ["db-generated"]);
    // A taken secret name: 409, and no app.
    app.request(
        http::Method::PUT,
        &format!("{environment}/secrets/cache-generated"),
    )
    .by(&app.owner)
    .json(json!({"data": {"x": "y"}}))
    .send()
    .await
    .assert_status(201);
    deploy("mariadb", Some(json!({"name": "cache"})))
        .await
        .assert_problem(409, "conflict");
    app.get(&format!("{environment}/apps/cache"))
        .by(&app.owner)
        .send()
        .await
        .assert_problem(404, "not_found");

    deploy("nosuch", None)
        .await
        .assert_problem(404, "not_found");
    deploy("nginx", Some(json!({"env": {"NOPE": "x"}})))
        .await
        .assert_problem(422, "validation_failed");
    deploy("nginx", Some(json!({"name": "Bad Name"})))
        .await
        .assert_problem(422, "validation_failed");
    deploy("nginx", Some(json!({"colour": "red"})))
        .await
        .assert_problem(400, "invalid_request");
    let operator = app.user(Role::Operator).await;
    app.post(&format!("{environment}/templates/nginx"))
        .by(&operator)
        .send()
        .await
        .assert_problem(403, "forbidden");
}
