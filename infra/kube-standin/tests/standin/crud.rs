//! Create, get, list, replace, patch and delete on built-in resources, and their errors.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::discovery::Discovery;
use serde_json::json;

use crate::common::{TestEnv, api_status, assert_refused};

fn configmap(name: &str, labels: &[(&str, &str)], data: &[(&str, &str)]) -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": {
            "name": name,
            "labels": labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>(),
        },
        "data": data.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>(),
    }))
    .unwrap()
}

pub fn deployment(name: &str, replicas: i32) -> Deployment {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.9"}]}
            }
        }
    }))
    .unwrap()
}

fn rv(meta: &kube::core::ObjectMeta) -> u64 {
    meta.resource_version
        .as_deref()
        .expect("resourceVersion set")
        .parse()
        .expect("numeric resourceVersion")
}

#[tokio::test]
async fn configmap_crud_and_errors() {
    let env = TestEnv::new().await;
    let cms: Api<ConfigMap> = env.api();
    let pp = PostParams::default();

    let created = cms
        .create(&pp, &configmap("settings", &[("app", "x")], &[("a", "1")]))
        .await
        .unwrap();
    let meta = &created.metadata;
    assert!(meta.uid.as_deref().is_some_and(|u| !u.is_empty()));
    assert!(meta.creation_timestamp.is_some());
    assert_eq!(meta.namespace.as_deref(), Some(env.ns.as_str()));

    let dup = api_status(cms.create(&pp, &configmap("settings", &[], &[])).await);
    assert_eq!((dup.code, dup.reason.as_str()), (409, "AlreadyExists"));

    let fetched = cms.get("settings").await.unwrap();
    assert_eq!(fetched.data.as_ref().unwrap()["a"], "1");
    assert_eq!(fetched.metadata.uid, created.metadata.uid);

    let missing = api_status(cms.get("nope").await);
    assert_refused(&missing, 404, "NotFound", "configmaps", "nope");

    // Replace bumps resourceVersion; a stale resourceVersion conflicts.
    let mut edited = fetched.clone();
    edited.data.as_mut().unwrap().insert("a".into(), "2".into());
    let replaced = cms.replace("settings", &pp, &edited).await.unwrap();
    assert!(rv(&replaced.metadata) > rv(&fetched.metadata));
    assert_eq!(replaced.metadata.uid, created.metadata.uid);
    let stale = api_status(cms.replace("settings", &pp, &edited).await);
    assert_eq!((stale.code, stale.reason.as_str()), (409, "Conflict"));

    // The name in the body must match the URL.
    let mut renamed = replaced.clone();
    renamed.metadata.name = Some("other".into());
    let mismatch = api_status(cms.replace("settings", &pp, &renamed).await);
    assert_eq!(mismatch.code, 400);

    let listed = cms.list(&ListParams::default()).await.unwrap();
    assert_eq!(
        listed
            .items
            .iter()
            .filter(|c| c.metadata.name.as_deref() == Some("settings"))
            .count(),
        1
    );
    assert!(listed.metadata.resource_version.is_some());

    cms.delete("settings", &DeleteParams::default())
        .await
        .unwrap();
    assert!(cms.get_opt("settings").await.unwrap().is_none());
    let again = api_status(cms.delete("settings", &DeleteParams::default()).await);
    assert_eq!(again.code, 404);
}

#[tokio::test]
async fn validation_and_missing_namespace() {
    let env = TestEnv::new().await;
    let cms: Api<ConfigMap> = env.api();
    let pp = PostParams::default();

    let invalid = api_status(cms.create(&pp, &configmap("Not_Valid", &[], &[])).await);
    assert_eq!((invalid.code, invalid.reason.as_str()), (422, "Invalid"));

    let elsewhere: Api<ConfigMap> =
        Api::namespaced(env.client.clone(), "no-such-namespace-standin");
    let missing = api_status(elsewhere.create(&pp, &configmap("x", &[], &[])).await);
    assert_refused(
        &missing,
        404,
        "NotFound",
        "namespaces",
        "no-such-namespace-standin",
    );

    // generateName picks a unique name.
    let mut generated = configmap("", &[], &[]);
    generated.metadata.name = None;
    generated.metadata.generate_name = Some("gen-".into());
    let a = cms.create(&pp, &generated).await.unwrap();
    let b = cms.create(&pp, &generated).await.unwrap();
    let (a, b) = (a.metadata.name.unwrap(), b.metadata.name.unwrap());
    assert!(
        a.starts_with("gen-") && b.starts_with("gen-") && a != b,
        "{a} {b}"
    );

    // A dry run validates but stores nothing.
    let dry = PostParams {
        dry_run: true,
        ..Default::default()
    };
    cms.create(&dry, &configmap("dry", &[], &[])).await.unwrap();
    assert!(cms.get_opt("dry").await.unwrap().is_none());
}

#[tokio::test]
async fn deployment_generation_and_status_subresource() {
    let env = TestEnv::new().await;
    let deploys: Api<Deployment> = env.api();
    let created = deploys
        .create(&PostParams::default(), &deployment("web", 1))
        .await
        .unwrap();
    assert_eq!(created.metadata.generation, Some(1));

    // A spec change bumps the generation ...
    let patched = deploys
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 3}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.spec.as_ref().unwrap().replicas, Some(3));
    assert_eq!(patched.metadata.generation, Some(2));

    // ... a metadata-only change doesn't.
    let labelled = deploys
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"team": "a"}}})),
        )
        .await
        .unwrap();
    assert_eq!(labelled.metadata.generation, Some(2));

    // On a real cluster the deployment controller owns the status: the rest needs the stand-in.
    if env.standin.is_none() {
        return;
    }
    // The status subresource writes status only, without bumping the generation.
    let with_status = deploys
        .patch_status(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 7}, "status": {"observedGeneration": 2, "replicas": 3}})),
        )
        .await
        .unwrap();
    assert_eq!(with_status.status.as_ref().unwrap().replicas, Some(3));
    assert_eq!(
        with_status.spec.as_ref().unwrap().replicas,
        Some(3),
        "spec untouched by a status write"
    );
    assert_eq!(with_status.metadata.generation, Some(2));

    // A write to the main resource ignores status.
    let mut edited = with_status.clone();
    edited.status.as_mut().unwrap().replicas = Some(99);
    edited
        .metadata
        .labels
        .get_or_insert_with(Default::default)
        .insert("team".into(), "b".into());
    let replaced = deploys
        .replace("web", &PostParams::default(), &edited)
        .await
        .unwrap();
    assert_eq!(replaced.status.as_ref().unwrap().replicas, Some(3));
    assert_eq!(replaced.metadata.labels.unwrap()["team"], "b");

    let status = deploys.get_status("web").await.unwrap();
    assert_eq!(status.status.unwrap().observed_generation, Some(2));
}

#[tokio::test]
async fn patches_merge_json_strategic_and_apply() {
    let env = TestEnv::new().await;
    let cms: Api<ConfigMap> = env.api();
    cms.create(
        &PostParams::default(),
        &configmap("p", &[("a", "1")], &[("k1", "v1"), ("k2", "v2")]),
    )
    .await
    .unwrap();

    let merged = cms
        .patch(
            "p",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"k1": null, "k3": "v3"}})),
        )
        .await
        .unwrap();
    let data = merged.data.unwrap();
    assert!(!data.contains_key("k1"));
    assert_eq!(data["k3"], "v3");

    let json_patch: json_patch_ops::Ops = serde_json::from_value(json!([
        {"op": "test", "path": "/data/k2", "value": "v2"},
        {"op": "add", "path": "/metadata/labels/b", "value": "2"},
        {"op": "replace", "path": "/data/k2", "value": "changed"},
    ]))
    .unwrap();
    let patched = cms
        .patch("p", &PatchParams::default(), &Patch::<()>::Json(json_patch))
        .await
        .unwrap();
    assert_eq!(patched.data.unwrap()["k2"], "changed");
    assert_eq!(patched.metadata.labels.unwrap()["b"], "2");

    let failing: json_patch_ops::Ops =
        serde_json::from_value(json!([{"op": "test", "path": "/data/k2", "value": "nope"}]))
            .unwrap();
    let err = api_status(
        cms.patch("p", &PatchParams::default(), &Patch::<()>::Json(failing))
            .await,
    );
    assert!(
        err.code == 422 || err.code == 500,
        "a failed JSON patch test is rejected: {err:?}"
    );

    let strategic = cms
        .patch(
            "p",
            &PatchParams::default(),
            &Patch::Strategic(json!({"metadata": {"labels": {"c": "3"}}})),
        )
        .await
        .unwrap();
    let labels = strategic.metadata.labels.unwrap();
    assert_eq!((labels["a"].as_str(), labels["c"].as_str()), ("1", "3"));

    // Server-side apply creates ...
    let ssa = PatchParams::apply("standin-tests").force();
    let applied = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied"}, "data": {"x": "1", "y": "2"}});
    let created = cms
        .patch("applied", &ssa, &Patch::Apply(&applied))
        .await
        .unwrap();
    assert_eq!(created.data.as_ref().unwrap()["y"], "2");
    // ... merges, and drops what the same manager stopped applying.
    let applied = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied"}, "data": {"x": "10"}});
    let updated = cms
        .patch("applied", &ssa, &Patch::Apply(&applied))
        .await
        .unwrap();
    let data = updated.data.unwrap();
    assert_eq!(data["x"], "10");
    assert!(!data.contains_key("y"), "{data:?}");
    assert_eq!(updated.metadata.uid, created.metadata.uid);

    // A patch carrying a stale resourceVersion conflicts.
    let stale = json!({"metadata": {"resourceVersion": created.metadata.resource_version}, "data": {"z": "1"}});
    let conflict = api_status(
        cms.patch("applied", &PatchParams::default(), &Patch::Merge(stale))
            .await,
    );
    assert_eq!(conflict.code, 409);

    let missing = api_status(
        cms.patch("absent", &PatchParams::default(), &Patch::Merge(json!({})))
            .await,
    );
    assert_eq!(missing.code, 404);
}

/// `metadata.managedFields` names every writer: the manager of a create or patch (`Update`), of a
/// server-side apply (`Apply`), of a status write (subresource `status`); a write that changes
/// nothing changes no entry.
#[tokio::test]
async fn managed_fields_name_every_writer() {
    let env = TestEnv::new().await;
    let deployments: Api<Deployment> = env.api();
    let by = |manager: &str| PostParams {
        field_manager: Some(manager.to_owned()),
        ..PostParams::default()
    };
    let created = deployments
        .create(&by("someone-else"), &deployment("owned", 0))
        .await
        .unwrap();
    let entries = |d: &Deployment| -> Vec<(String, String, String)> {
        d.metadata
            .managed_fields
            .iter()
            .flatten()
            .map(|e| {
                (
                    e.manager.clone().unwrap_or_default(),
                    e.operation.clone().unwrap_or_default(),
                    e.subresource.clone().unwrap_or_default(),
                )
            })
            .collect()
    };
    let entry = |manager: &str, operation: &str, subresource: &str| {
        (
            manager.to_owned(),
            operation.to_owned(),
            subresource.to_owned(),
        )
    };
    assert!(
        entries(&created).contains(&entry("someone-else", "Update", "")),
        "{:?}",
        entries(&created)
    );
    assert!(
        created
            .metadata
            .managed_fields
            .iter()
            .flatten()
            .all(|e| e.time.is_some()
                && e.api_version.as_deref() == Some("apps/v1")
                && e.fields_type.as_deref() == Some("FieldsV1")),
        "{:?}",
        created.metadata.managed_fields
    );

    let applied = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "owned", "labels": {"applied": "yes"}},
    });
    let ssa = PatchParams::apply("an-applier").force();
    let after_apply = deployments
        .patch("owned", &ssa, &Patch::Apply(&applied))
        .await
        .unwrap();
    let now = entries(&after_apply);
    assert!(
        now.contains(&entry("someone-else", "Update", "")),
        "{now:?}"
    );
    assert!(now.contains(&entry("an-applier", "Apply", "")), "{now:?}");

    // The same apply again changes nothing, managedFields included.
    let again = deployments
        .patch("owned", &ssa, &Patch::Apply(&applied))
        .await
        .unwrap();
    assert_eq!(
        again.metadata.resource_version,
        after_apply.metadata.resource_version
    );
    assert_eq!(
        again.metadata.managed_fields,
        after_apply.metadata.managed_fields
    );

    let status = deployments
        .patch_status(
            "owned",
            &PatchParams {
                field_manager: Some("a-status-writer".to_owned()),
                ..PatchParams::default()
            },
            &Patch::Merge(json!({"status": {"observedGeneration": 7}})),
        )
        .await
        .unwrap();
    assert!(
        entries(&status).contains(&entry("a-status-writer", "Update", "status")),
        "{:?}",
        entries(&status)
    );
}

/// RFC 6902 operations, as kube's `Patch::Json` takes them.
mod json_patch_ops {
    pub type Ops = json_patch::Patch;
}

#[tokio::test]
async fn label_and_field_selectors() {
    let env = TestEnv::new().await;
    let cms: Api<ConfigMap> = env.api();
    let pp = PostParams::default();
    for (name, labels) in [
        ("a", vec![("app", "web"), ("tier", "front")]),
        ("b", vec![("app", "web"), ("tier", "back")]),
        ("c", vec![("app", "db")]),
        ("d", vec![]),
    ] {
        cms.create(&pp, &configmap(name, &labels, &[]))
            .await
            .unwrap();
    }
    let names = |selector: &'static str| {
        let cms = cms.clone();
        async move {
            let mut names: Vec<String> = cms
                .list(&ListParams::default().labels(selector))
                .await
                .unwrap()
                .items
                .into_iter()
                .filter_map(|c| c.metadata.name)
                .filter(|n| n.len() == 1)
                .collect();
            names.sort();
            names.join(",")
        }
    };
    assert_eq!(names("app=web").await, "a,b");
    assert_eq!(names("app==web,tier=back").await, "b");
    assert_eq!(names("app!=web").await, "c,d");
    assert_eq!(names("app in (web,db)").await, "a,b,c");
    assert_eq!(names("tier notin (front)").await, "b,c,d");
    assert_eq!(names("tier").await, "a,b");
    assert_eq!(names("!tier").await, "c,d");
    assert_eq!(names("app=web,!tier").await, "");

    let by_name = cms
        .list(&ListParams::default().fields("metadata.name=c"))
        .await
        .unwrap();
    assert_eq!(by_name.items.len(), 1);
    assert_eq!(by_name.items[0].metadata.name.as_deref(), Some("c"));

    let bad = api_status(cms.list(&ListParams::default().labels("app in web")).await);
    assert_eq!(bad.code, 400);

    // Across namespaces: /api/v1/configmaps.
    let other = env.extra_namespace().await;
    let other_cms: Api<ConfigMap> = Api::namespaced(env.client.clone(), &other);
    other_cms
        .create(&pp, &configmap("e", &[("app", "web")], &[]))
        .await
        .unwrap();
    let all: Api<ConfigMap> = Api::all(env.client.clone());
    let everywhere = all
        .list(&ListParams::default().labels("app=web"))
        .await
        .unwrap();
    let mut seen: Vec<(String, String)> = everywhere
        .items
        .into_iter()
        .filter(|c| {
            [env.ns.as_str(), other.as_str()]
                .contains(&c.metadata.namespace.as_deref().unwrap_or_default())
        })
        .map(|c| (c.metadata.namespace.unwrap(), c.metadata.name.unwrap()))
        .collect();
    seen.sort();
    let mut expected = vec![
        (env.ns.clone(), "a".to_string()),
        (env.ns.clone(), "b".to_string()),
        (other.clone(), "e".to_string()),
    ];
    expected.sort();
    assert_eq!(seen, expected);
    let _ = Api::<Namespace>::all(env.client.clone())
        .delete(&other, &DeleteParams::default())
        .await;
}

#[tokio::test]
async fn secrets_and_discovery() {
    let env = TestEnv::new().await;
    let secrets: Api<Secret> = env.api();
    let secret: Secret = serde_json::from_value(
        json!({"metadata": {"name": "creds"}, "stringData": {"password": "hunter2"}}),
    )
    .unwrap();
    secrets
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    assert!(secrets.get("creds").await.is_ok());

    let version = env.client.apiserver_version().await.unwrap();
    assert_eq!(version.major, "1");

    let discovery = Discovery::new(env.client.clone()).run().await.unwrap();
    let (deploy, caps) = discovery
        .groups()
        .flat_map(|g| g.recommended_resources())
        .find(|(r, _)| r.group == "apps" && r.kind == "Deployment")
        .expect("apps/v1 Deployment discovered");
    assert_eq!(deploy.plural, "deployments");
    assert!(
        caps.subresources.iter().any(|(r, _)| r.plural == "status"),
        "{:?}",
        caps.subresources
    );
    let (_, pod_caps) = discovery
        .groups()
        .flat_map(|g| g.recommended_resources())
        .find(|(r, _)| r.group.is_empty() && r.kind == "Pod")
        .expect("pods discovered");
    assert!(
        pod_caps.subresources.iter().any(|(r, _)| r.plural == "log"),
        "{:?}",
        pod_caps.subresources
    );
    assert!(discovery.has_group("rbac.authorization.k8s.io"));
    assert!(discovery.has_group("batch"));
}

#[tokio::test]
async fn defaults_and_immutable_fields() {
    let env = TestEnv::new().await;
    let pp = PostParams::default();

    // Defaults the API server fills in.
    let deploys: Api<Deployment> = env.api();
    let mut d = deployment("defaulted", 1);
    d.spec.as_mut().unwrap().replicas = None;
    let created = deploys.create(&pp, &d).await.unwrap();
    let spec = created.spec.unwrap();
    assert_eq!(spec.replicas, Some(1));
    assert_eq!(
        spec.strategy.unwrap().type_.as_deref(),
        Some("RollingUpdate")
    );
    let container = &spec.template.spec.unwrap().containers[0];
    assert_eq!(container.image_pull_policy.as_deref(), Some("IfNotPresent"));

    let secrets: Api<Secret> = env.api();
    let secret: Secret = serde_json::from_value(
        json!({"metadata": {"name": "s"}, "stringData": {"password": "hunter2"}}),
    )
    .unwrap();
    let created = secrets.create(&pp, &secret).await.unwrap();
    assert_eq!(created.type_.as_deref(), Some("Opaque"));
    assert!(
        created.string_data.is_none(),
        "stringData is folded into data"
    );
    assert_eq!(created.data.unwrap()["password"].0, b"hunter2");

    let services: Api<k8s_openapi::api::core::v1::Service> = env.api();
    let svc = serde_json::from_value(json!({"metadata": {"name": "svc"}, "spec": {"selector": {"app": "x"}, "ports": [{"port": 80}]}})).unwrap();
    let created = services.create(&pp, &svc).await.unwrap();
    let spec = created.spec.unwrap();
    assert_eq!(spec.type_.as_deref(), Some("ClusterIP"));
    assert!(spec.cluster_ip.is_some_and(|ip| !ip.is_empty()));
    assert_eq!(spec.ports.unwrap()[0].protocol.as_deref(), Some("TCP"));

    // Immutable fields.
    let selector = json!({"spec": {"selector": {"matchLabels": {"app": "other"}}, "template": {"metadata": {"labels": {"app": "other"}}}}});
    let err = api_status(
        deploys
            .patch(
                "defaulted",
                &PatchParams::default(),
                &Patch::Merge(selector),
            )
            .await,
    );
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));

    let cms: Api<ConfigMap> = env.api();
    let mut frozen = configmap("frozen", &[], &[("k", "v")]);
    frozen.immutable = Some(true);
    cms.create(&pp, &frozen).await.unwrap();
    let err = api_status(
        cms.patch(
            "frozen",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"k": "w"}})),
        )
        .await,
    );
    assert_eq!(err.code, 422);
    cms.patch(
        "frozen",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"ok": "yes"}}})),
    )
    .await
    .expect("metadata stays mutable");

    // Label syntax is validated.
    let bad = api_status(
        cms.create(&pp, &configmap("labelled", &[("app", "not valid")], &[]))
            .await,
    );
    assert_eq!((bad.code, bad.reason.as_str()), (422, "Invalid"));
}

#[tokio::test]
async fn metadata_only_requests() {
    let env = TestEnv::new().await;
    let cms: Api<ConfigMap> = env.api();
    cms.create(
        &PostParams::default(),
        &configmap("m", &[("app", "meta")], &[("big", "data")]),
    )
    .await
    .unwrap();

    let meta = cms.get_metadata("m").await.unwrap();
    assert_eq!(meta.metadata.labels.unwrap()["app"], "meta");
    let list = cms
        .list_metadata(&ListParams::default().labels("app=meta"))
        .await
        .unwrap();
    assert_eq!(list.items.len(), 1);
    assert_eq!(list.items[0].metadata.name.as_deref(), Some("m"));

    use futures::StreamExt;
    use kube::core::PartialObjectMeta;
    use kube::runtime::{WatchStreamExt, watcher};
    let metas: Api<PartialObjectMeta<ConfigMap>> = Api::namespaced(env.client.clone(), &env.ns);
    let mut stream = watcher(metas, watcher::Config::default().labels("app=meta"))
        .applied_objects()
        .boxed();
    let first = tokio::time::timeout(crate::common::patience(), stream.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(first.metadata.name.as_deref(), Some("m"));
    cms.patch(
        "m",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"annotations": {"seen": "yes"}}})),
    )
    .await
    .unwrap();
    let second = tokio::time::timeout(crate::common::patience(), stream.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(second.metadata.annotations.unwrap()["seen"], "yes");
}

#[tokio::test]
async fn deployment_scale_subresource() {
    let env = TestEnv::new().await;
    let deploys: Api<Deployment> = env.api();
    deploys
        .create(&PostParams::default(), &deployment("scaled", 2))
        .await
        .unwrap();

    let scale = deploys.get_scale("scaled").await.unwrap();
    assert_eq!(scale.spec.unwrap().replicas, Some(2));
    assert_eq!(
        scale.status.unwrap().selector.as_deref(),
        Some("app=scaled")
    );

    let scaled = deploys
        .patch_scale(
            "scaled",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 5}})),
        )
        .await
        .unwrap();
    assert_eq!(scaled.spec.unwrap().replicas, Some(5));
    let d = deploys.get("scaled").await.unwrap();
    assert_eq!(d.spec.unwrap().replicas, Some(5));
    assert_eq!(d.metadata.generation, Some(2));
}

/// An applied configuration may leave the name out when the object exists
/// (kube-lease-manager applies a Lease so); one that creates must name it.
#[tokio::test]
async fn an_apply_may_leave_out_the_name_of_an_existing_object() {
    let env = TestEnv::new().await;
    let maps: Api<ConfigMap> = env.api();
    let ssa = PatchParams::apply("nameless");
    let nameless = json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "v"}});
    let refused = api_status(maps.patch("absent", &ssa, &Patch::Apply(&nameless)).await);
    assert_eq!(refused.code, 400, "{}", refused.message);
    maps.create(&PostParams::default(), &configmap("present", &[], &[]))
        .await
        .unwrap();
    let applied = maps
        .patch("present", &ssa, &Patch::Apply(&nameless))
        .await
        .unwrap();
    assert_eq!(applied.metadata.name.as_deref(), Some("present"));
    assert_eq!(applied.data.unwrap()["k"], "v");
    let other = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "other"}});
    let refused = api_status(maps.patch("present", &ssa, &Patch::Apply(&other)).await);
    assert_eq!(refused.code, 400, "{}", refused.message);
}
