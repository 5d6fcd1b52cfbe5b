//! Custom resources: CRD registration, namespaced and cluster-scoped CRUD, the status
//! subresource, discovery, and CRD deletion.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams,
};
use kube::discovery::Discovery;
use kube::runtime::{conditions, wait::await_condition};
use serde_json::json;

use crate::common::{
    Gadget, GadgetSpec, TestEnv, Widget, WidgetSpec, WidgetStatus, api_status, eventually,
    install_crds, patience,
};

#[tokio::test]
async fn namespaced_custom_resource_with_status() {
    let env = TestEnv::new().await;
    install_crds(&env.client).await;
    let widgets: Api<Widget> = env.api();

    let mut widget = Widget::new(
        "w1",
        WidgetSpec {
            size: 3,
            color: None,
        },
    );
    widget.status = Some(WidgetStatus {
        observed_size: 42,
        observed_generation: 0,
    });
    let created = widgets
        .create(&PostParams::default(), &widget)
        .await
        .unwrap();
    assert_eq!(created.metadata.generation, Some(1));
    assert_eq!(
        created.status, None,
        "status is dropped on create when it is a subresource"
    );
    let dup = api_status(widgets.create(&PostParams::default(), &widget).await);
    assert_eq!(dup.code, 409);

    let status = json!({"status": {"observedSize": 3, "observedGeneration": 1}});
    let with_status = widgets
        .patch_status("w1", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .unwrap();
    assert_eq!(with_status.status.as_ref().unwrap().observed_size, 3);
    assert_eq!(with_status.metadata.generation, Some(1));

    // Spec changes bump the generation and leave status alone.
    let patched = widgets
        .patch(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": 5}, "status": {"observedSize": 0}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.spec.size, 5);
    assert_eq!(patched.metadata.generation, Some(2));
    assert_eq!(patched.status.as_ref().unwrap().observed_size, 3);

    // Replacing the status with a stale resourceVersion conflicts.
    let mut stale = with_status.clone();
    stale.status.as_mut().unwrap().observed_size = 9;
    let err = api_status(
        widgets
            .replace_status("w1", &PostParams::default(), &stale)
            .await,
    );
    assert_eq!(err.code, 409);

    let listed = widgets.list(&ListParams::default()).await.unwrap();
    assert_eq!(listed.items.len(), 1);
    assert_eq!(listed.items[0].spec.size, 5);

    widgets
        .delete("w1", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the widget to be gone", || async {
        widgets.get_opt("w1").await.unwrap().is_none()
    })
    .await;
}

#[tokio::test]
async fn cluster_scoped_custom_resource() {
    let env = TestEnv::new().await;
    install_crds(&env.client).await;
    let gadgets: Api<Gadget> = Api::all(env.client.clone());
    let name = format!("g-{}", env.ns);

    let created = gadgets
        .create(
            &PostParams::default(),
            &Gadget::new(
                &name,
                GadgetSpec {
                    label: "one".into(),
                },
            ),
        )
        .await
        .unwrap();
    assert_eq!(created.metadata.namespace, None);
    assert_eq!(created.metadata.generation, Some(1));

    let mut edited = created.clone();
    edited.spec.label = "two".into();
    let replaced = gadgets
        .replace(&name, &PostParams::default(), &edited)
        .await
        .unwrap();
    assert_eq!(replaced.spec.label, "two");
    assert_eq!(replaced.metadata.generation, Some(2));

    let applied = json!({"apiVersion": "standin.berth.dev/v1", "kind": "Gadget", "metadata": {"name": name}, "spec": {"label": "three"}});
    let applied = gadgets
        .patch(
            &name,
            &PatchParams::apply("standin-tests").force(),
            &Patch::Apply(&applied),
        )
        .await
        .unwrap();
    assert_eq!(applied.spec.label, "three");

    let stale = api_status(
        gadgets
            .replace(&name, &PostParams::default(), &edited)
            .await,
    );
    assert_eq!(stale.code, 409);

    gadgets
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
    eventually("the gadget to be gone", || async {
        gadgets.get_opt(&name).await.unwrap().is_none()
    })
    .await;
}

#[tokio::test]
async fn crd_registration_discovery_and_deletion() {
    let env = TestEnv::new().await;
    let group = format!("{}.standin.berth.dev", env.ns);
    let crd_name = format!("things.{group}");
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": crd_name},
        "spec": {
            "group": group,
            "names": {"plural": "things", "singular": "thing", "kind": "Thing", "listKind": "ThingList"},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1alpha1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
                "subresources": {"status": {}}
            }]
        }
    }))
    .unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(env.client.clone());
    crds.create(&PostParams::default(), &crd).await.unwrap();
    tokio::time::timeout(
        patience(),
        await_condition(crds.clone(), &crd_name, conditions::is_crd_established()),
    )
    .await
    .expect("established in time")
    .unwrap();

    // Discovery may trail the Established condition a little on a real cluster.
    let gvk = kube::api::GroupVersionKind::gvk(&group, "v1alpha1", "Thing");
    eventually("the new type in discovery", || async {
        let discovery = Discovery::new(env.client.clone()).run().await.unwrap();
        discovery.resolve_gvk(&gvk).is_some()
    })
    .await;
    let discovery = Discovery::new(env.client.clone()).run().await.unwrap();
    let found = discovery.resolve_gvk(&gvk);
    let (resource, caps) = found.expect("Thing discovered");
    assert_eq!(resource.plural, "things");
    assert!(caps.subresources.iter().any(|(r, _)| r.plural == "status"));

    let things: Api<DynamicObject> = Api::namespaced_with(env.client.clone(), &env.ns, &resource);
    let thing: DynamicObject = serde_json::from_value(json!({
        "apiVersion": format!("{group}/v1alpha1"), "kind": "Thing",
        "metadata": {"name": "t1"}, "spec": {"anything": ["goes", 1]}
    }))
    .unwrap();
    let created = things.create(&PostParams::default(), &thing).await.unwrap();
    assert_eq!(created.data["spec"]["anything"], json!(["goes", 1]));

    // Deleting the CRD deletes its objects, then the type itself.
    crds.delete(&crd_name, &DeleteParams::default())
        .await
        .unwrap();
    eventually("the CRD to be gone", || async {
        crds.get_opt(&crd_name).await.unwrap().is_none()
    })
    .await;
    let ar = ApiResource {
        group: group.clone(),
        version: "v1alpha1".into(),
        api_version: format!("{group}/v1alpha1"),
        kind: "Thing".into(),
        plural: "things".into(),
    };
    let gone: Api<DynamicObject> = Api::namespaced_with(env.client.clone(), &env.ns, &ar);
    eventually("the type to stop being served", || async {
        matches!(gone.list(&ListParams::default()).await, Err(kube::Error::Api(s)) if s.code == 404)
    })
    .await;
}
