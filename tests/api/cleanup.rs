//! A test removes what it made (`support::cleanup`): here on the stand-in,
//! where the same code runs that every test's cluster runs as it goes on a
//! real one, and then nothing of the test is listed any more.

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{ListParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::json;

use berth_cluster::crd::{App, BUILDS_NAMESPACE, Build, Environment, LABEL_PROJECT, Project};

use crate::support::cleanup::{remove_named, take_named};
use crate::support::{TestApp, eventually, unique};

#[tokio::test]
async fn a_test_leaves_nothing_behind() {
    let app = TestApp::with_cluster().await;
    let client = app.cluster().client.clone();
    let project = app.ready_environment("tidy", "dev").await;
    let apps = format!("/api/v1/projects/{project}/environments/dev/apps");
    app.create_app(
        &apps,
        json!({"name": "shop", "image": "nginx", "git_repo": "https://github.com/acme/shop.git"}),
    )
    .await;
    app.post(&format!("{apps}/shop/builds"))
        .by(&app.owner)
        .send()
        .await
        .assert_status(202);
    // A namespace of "another tool", as some tests make.
    let other = unique("other");
    Api::<Namespace>::all(client.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": other}})).unwrap(),
        )
        .await
        .expect("creating a namespace");
    let of_project = ListParams::default().labels(&format!("{LABEL_PROJECT}={project}"));
    let builds: Api<Build> = Api::namespaced(client.clone(), BUILDS_NAMESPACE);
    assert_eq!(builds.list(&of_project).await.unwrap().items.len(), 1);

    let named = take_named();
    assert!(
        named.contains(&project) && named.contains(&other),
        "{named:?}"
    );
    remove_named(&client, &named).await.expect("removing");

    eventually("nothing of the test is left", || async {
        let projects = Api::<Project>::all(client.clone())
            .list(&ListParams::default())
            .await
            .unwrap();
        let namespaces = Api::<Namespace>::all(client.clone())
            .list(&ListParams::default())
            .await
            .unwrap();
        !projects.items.iter().any(|p| p.name_any() == project)
            && Api::<Environment>::all(client.clone())
                .list(&of_project)
                .await
                .unwrap()
                .items
                .is_empty()
            && Api::<App>::all(client.clone())
                .list(&of_project)
                .await
                .unwrap()
                .items
                .is_empty()
            && builds.list(&of_project).await.unwrap().items.is_empty()
            && !namespaces.items.iter().any(|namespace| {
                named.contains(&namespace.name_any())
                    || namespace.labels().get(LABEL_PROJECT) == Some(&project)
            })
    })
    .await;
}
