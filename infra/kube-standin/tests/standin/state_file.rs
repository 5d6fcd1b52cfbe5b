//! `state_file`: objects survive a restart.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use serde_json::json;

use berth_kube_standin::{Config, StandIn};

use crate::common::client_from_kubeconfig;

#[tokio::test]
#[cfg_attr(berth_real_cluster, ignore = "restarts the stand-in")]
async fn objects_survive_a_restart() {
    let dir = std::env::temp_dir().join(format!("standin-state-{}", uuid::Uuid::new_v4().simple()));
    let path = dir.join("state.json");
    let config = || Config {
        state_file: Some(path.clone()),
        ..Config::default()
    };

    let first = StandIn::start_with(config()).await.unwrap();
    let client = client_from_kubeconfig(&first.kubeconfig_yaml(), |_| {}).await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    let cm: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "kept"}, "data": {"k": "v"}})).unwrap();
    let created = cms.create(&PostParams::default(), &cm).await.unwrap();
    let rv = first.resource_version();
    first.shutdown();
    assert!(path.exists(), "saved on shutdown");

    let second = StandIn::start_with(config()).await.unwrap();
    assert_eq!(second.resource_version(), rv);
    let client = client_from_kubeconfig(&second.kubeconfig_yaml(), |_| {}).await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    let kept = cms.get("kept").await.unwrap();
    assert_eq!(kept.metadata.uid, created.metadata.uid);
    assert_eq!(kept.data.unwrap()["k"], "v");

    // Writes go on from the saved resourceVersion, and are saved within the debounce.
    let other: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "later"}})).unwrap();
    let later = cms.create(&PostParams::default(), &other).await.unwrap();
    let later_rv: u64 = later.metadata.resource_version.unwrap().parse().unwrap();
    assert!(later_rv > rv);
    let mut saved = false;
    for _ in 0..40 {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        if std::fs::read_to_string(&path).is_ok_and(|s| s.contains("\"later\"")) {
            saved = true;
            break;
        }
    }
    assert!(saved, "saved after a change, without a shutdown");
    second.shutdown();
    let _ = std::fs::remove_dir_all(&dir);
}
