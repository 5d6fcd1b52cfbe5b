//! Finalizers, owner-reference garbage collection and namespace deletion.

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, PropagationPolicy};
use serde_json::json;

use crate::common::{TestEnv, Widget, WidgetSpec, api_status, eventually, install_crds, is_gone};
use crate::crud::deployment;

fn cm(value: serde_json::Value) -> ConfigMap {
    serde_json::from_value(value).unwrap()
}

fn owner_ref(owner: &ConfigMap) -> serde_json::Value {
    json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "name": owner.metadata.name, "uid": owner.metadata.uid,
    })
}

#[tokio::test]
async fn finalizers_hold_deletion_until_removed() {
    let env = TestEnv::new().await;
    let cms: Api<ConfigMap> = env.api();
    cms.create(
        &PostParams::default(),
        &cm(json!({"metadata": {"name": "held", "finalizers": ["berth.dev/hold"]}})),
    )
    .await
    .unwrap();

    let deleted = cms.delete("held", &DeleteParams::default()).await.unwrap();
    let pending = deleted
        .left()
        .expect("still there: the object comes back, not a Status");
    assert!(pending.metadata.deletion_timestamp.is_some());

    let still = cms.get("held").await.unwrap();
    assert!(still.metadata.deletion_timestamp.is_some());
    assert_eq!(
        still.metadata.finalizers.as_deref(),
        Some(&["berth.dev/hold".to_string()][..])
    );

    // No new finalizers on an object being deleted.
    let add = json!({"metadata": {"finalizers": ["berth.dev/hold", "berth.dev/another"]}});
    let refused = api_status(
        cms.patch("held", &PatchParams::default(), &Patch::Merge(add))
            .await,
    );
    assert_eq!((refused.code, refused.reason.as_str()), (422, "Invalid"));

    // Other updates still work while it waits.
    cms.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"k": "v"}})),
    )
    .await
    .unwrap();

    cms.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    eventually("the object to go with its last finalizer", || {
        is_gone(&cms, "held")
    })
    .await;
}

#[tokio::test]
async fn owner_references_garbage_collection() {
    let env = TestEnv::new().await;
    let cms: Api<ConfigMap> = env.api();
    let secrets: Api<Secret> = env.api();
    let pp = PostParams::default();

    let owner = cms
        .create(&pp, &cm(json!({"metadata": {"name": "owner"}})))
        .await
        .unwrap();
    cms.create(
        &pp,
        &cm(json!({"metadata": {"name": "child", "ownerReferences": [owner_ref(&owner)]}})),
    )
    .await
    .unwrap();
    let child_secret: Secret = serde_json::from_value(
        json!({"metadata": {"name": "child-secret", "ownerReferences": [owner_ref(&owner)]}}),
    )
    .unwrap();
    secrets.create(&pp, &child_secret).await.unwrap();
    // A grandchild goes too (cascading).
    let child = cms.get("child").await.unwrap();
    cms.create(
        &pp,
        &cm(json!({"metadata": {"name": "grandchild", "ownerReferences": [owner_ref(&child)]}})),
    )
    .await
    .unwrap();
    // A dependent with another, live owner stays (minus the dead reference).
    let other_owner = cms
        .create(&pp, &cm(json!({"metadata": {"name": "other-owner"}})))
        .await
        .unwrap();
    cms.create(
        &pp,
        &cm(json!({"metadata": {"name": "shared", "ownerReferences": [owner_ref(&owner), owner_ref(&other_owner)]}})),
    )
    .await
    .unwrap();

    cms.delete("owner", &DeleteParams::background())
        .await
        .unwrap();
    eventually("the dependents to be collected", || async {
        is_gone(&cms, "child").await
            && is_gone(&secrets, "child-secret").await
            && is_gone(&cms, "grandchild").await
    })
    .await;
    eventually("the dead owner reference to be dropped", || async {
        let shared = cms.get("shared").await.unwrap();
        shared.metadata.owner_references.unwrap_or_default().len() == 1
    })
    .await;
    assert!(cms.get_opt("other-owner").await.unwrap().is_some());

    // Written after its owner went (as by a controller that read the owner just before), a
    // dependent is collected too: the collector finds its owner gone on looking it up.
    cms.create(
        &pp,
        &cm(json!({"metadata": {"name": "late", "ownerReferences": [owner_ref(&owner)]}})),
    )
    .await
    .unwrap();
    eventually("the late dependent to be collected", || {
        is_gone(&cms, "late")
    })
    .await;
}

#[tokio::test]
async fn orphan_propagation_keeps_dependents() {
    let env = TestEnv::new().await;
    let cms: Api<ConfigMap> = env.api();
    let pp = PostParams::default();
    let owner = cms
        .create(&pp, &cm(json!({"metadata": {"name": "owner"}})))
        .await
        .unwrap();
    cms.create(
        &pp,
        &cm(json!({"metadata": {"name": "orphan", "ownerReferences": [owner_ref(&owner)]}})),
    )
    .await
    .unwrap();

    let orphan = DeleteParams {
        propagation_policy: Some(PropagationPolicy::Orphan),
        ..Default::default()
    };
    cms.delete("owner", &orphan).await.unwrap();
    eventually("the owner to be gone", || is_gone(&cms, "owner")).await;
    eventually("the orphan to lose its owner reference", || async {
        cms.get("orphan")
            .await
            .unwrap()
            .metadata
            .owner_references
            .unwrap_or_default()
            .is_empty()
    })
    .await;
}

#[tokio::test]
async fn namespace_deletion_removes_contents() {
    let env = TestEnv::new().await;
    install_crds(&env.client).await;
    let namespaces: Api<Namespace> = Api::all(env.client.clone());
    let ns = env.extra_namespace().await;
    let pp = PostParams::default();
    let cms: Api<ConfigMap> = Api::namespaced(env.client.clone(), &ns);
    let deploys: Api<Deployment> = Api::namespaced(env.client.clone(), &ns);
    let widgets: Api<Widget> = Api::namespaced(env.client.clone(), &ns);
    cms.create(&pp, &cm(json!({"metadata": {"name": "plain"}})))
        .await
        .unwrap();
    cms.create(
        &pp,
        &cm(json!({"metadata": {"name": "held", "finalizers": ["berth.dev/hold"]}})),
    )
    .await
    .unwrap();
    deploys.create(&pp, &deployment("web", 1)).await.unwrap();
    widgets
        .create(
            &pp,
            &Widget::new(
                "w",
                WidgetSpec {
                    size: 1,
                    color: None,
                },
            ),
        )
        .await
        .unwrap();

    let deleted = namespaces
        .delete(&ns, &DeleteParams::default())
        .await
        .unwrap();
    let terminating = deleted
        .left()
        .expect("a namespace is deleted in the background");
    assert!(terminating.metadata.deletion_timestamp.is_some());

    // The finalizer keeps the namespace terminating, and closed to new objects.
    eventually("the contents to be deleted", || async {
        is_gone(&cms, "plain").await
            && is_gone(&deploys, "web").await
            && is_gone(&widgets, "w").await
    })
    .await;
    let ns_obj = namespaces.get(&ns).await.unwrap();
    assert_eq!(ns_obj.status.unwrap().phase.as_deref(), Some("Terminating"));
    let refused = api_status(
        cms.create(&pp, &cm(json!({"metadata": {"name": "late"}})))
            .await,
    );
    assert_eq!((refused.code, refused.reason.as_str()), (403, "Forbidden"));

    cms.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    eventually("the namespace to be gone", || is_gone(&namespaces, &ns)).await;
    assert!(is_gone(&cms, "held").await);
}

/// A real cluster takes seconds to delete a namespace, longer under load: the
/// stand-in's knob keeps a deleted namespace `Terminating` for a while, its
/// contents gone at once, closed to new objects, then lets it go.
#[tokio::test]
#[cfg_attr(berth_real_cluster, ignore = "needs the stand-in's namespace knob")]
async fn a_namespace_deletion_can_be_slow() {
    let env = TestEnv::standin_only().await;
    let delay = Duration::from_secs(2);
    env.standin().set_namespace_deletion_delay(delay);
    let namespaces: Api<Namespace> = Api::all(env.client.clone());
    let ns = env.extra_namespace().await;
    let cms: Api<ConfigMap> = Api::namespaced(env.client.clone(), &ns);
    cms.create(
        &PostParams::default(),
        &cm(json!({"metadata": {"name": "plain"}})),
    )
    .await
    .unwrap();
    let started = std::time::Instant::now();
    namespaces
        .delete(&ns, &DeleteParams::default())
        .await
        .unwrap();
    assert!(is_gone(&cms, "plain").await, "the contents go at once");
    let terminating = namespaces.get(&ns).await.unwrap();
    assert_eq!(
        terminating.status.unwrap().phase.as_deref(),
        Some("Terminating")
    );
    let refused = api_status(
        cms.create(
            &PostParams::default(),
            &cm(json!({"metadata": {"name": "late"}})),
        )
        .await,
    );
    assert_eq!((refused.code, refused.reason.as_str()), (403, "Forbidden"));
    eventually("the namespace to be gone", || is_gone(&namespaces, &ns)).await;
    // Timestamps have whole seconds: the wait is between delay - 1 s and
    // delay plus a tick.
    let took = started.elapsed();
    assert!(
        took >= delay - Duration::from_secs(1) && took < delay + Duration::from_secs(2),
        "{took:?}"
    );
}

#[tokio::test]
async fn kube_finalizer_helper_runs_apply_then_cleanup() {
    use kube::runtime::controller::Action;
    use kube::runtime::finalizer::{Event as Finalizer, finalizer};
    use std::sync::{Arc, Mutex};

    let env = TestEnv::new().await;
    let cms: Api<ConfigMap> = env.api();
    cms.create(
        &PostParams::default(),
        &cm(json!({"metadata": {"name": "managed"}})),
    )
    .await
    .unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let step = |obj: ConfigMap| {
        let (cms, seen) = (cms.clone(), seen.clone());
        async move {
            finalizer(
                &cms,
                "berth.dev/cleanup",
                Arc::new(obj),
                |event| async move {
                    seen.lock().unwrap().push(match event {
                        Finalizer::Apply(_) => "apply",
                        Finalizer::Cleanup(_) => "cleanup",
                    });
                    Ok::<_, kube::Error>(Action::await_change())
                },
            )
            .await
            .expect("finalizer step")
        }
    };

    step(cms.get("managed").await.unwrap()).await; // adds the finalizer
    assert_eq!(
        cms.get("managed").await.unwrap().metadata.finalizers,
        Some(vec!["berth.dev/cleanup".to_string()])
    );
    step(cms.get("managed").await.unwrap()).await; // reconciles
    cms.delete("managed", &DeleteParams::default())
        .await
        .unwrap();
    step(cms.get("managed").await.unwrap()).await; // cleans up and removes the finalizer
    assert_eq!(*seen.lock().unwrap(), ["apply", "cleanup"]);
    eventually("the object to go once cleaned up", || {
        is_gone(&cms, "managed")
    })
    .await;
}
