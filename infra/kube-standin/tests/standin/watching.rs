//! Watches: kube's `watcher` (list+watch and streaming lists), raw watch events, bookmarks,
//! 410 Gone, and a `Controller` reconciling a custom resource.

use std::sync::Arc;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher::{self, Event};
use kube::{Resource, ResourceExt};
use serde_json::json;

use berth_kube_standin::Config as StandInConfig;

use crate::common::{TestEnv, Widget, WidgetSpec, eventually, install_crds, patience};

fn cm(name: &str, labels: serde_json::Value) -> ConfigMap {
    serde_json::from_value(
        json!({"metadata": {"name": name, "labels": labels}, "data": {"v": "1"}}),
    )
    .unwrap()
}

/// Reads watcher events until `done` says enough, with a deadline.
async fn collect_until<S>(stream: &mut S, mut done: impl FnMut(&[String]) -> bool) -> Vec<String>
where
    S: futures::Stream<Item = Result<Event<ConfigMap>, watcher::Error>> + Unpin,
{
    let mut seen = Vec::new();
    let deadline = tokio::time::Instant::now() + patience();
    while !done(&seen) {
        let next = tokio::time::timeout_at(deadline, stream.next())
            .await
            .expect("watch events in time");
        let event = next.expect("stream goes on").expect("no watch error");
        let entry = match event {
            Event::Init => "init".to_string(),
            Event::InitApply(o) => format!("init-apply {}", o.name_any()),
            Event::InitDone => "init-done".to_string(),
            Event::Apply(o) => format!(
                "apply {} {}",
                o.name_any(),
                o.data
                    .unwrap_or_default()
                    .get("v")
                    .cloned()
                    .unwrap_or_default()
            ),
            Event::Delete(o) => format!("delete {}", o.name_any()),
        };
        seen.push(entry);
    }
    seen
}

#[tokio::test]
async fn watcher_sees_added_modified_deleted() {
    let env = TestEnv::new().await;
    let cms: Api<ConfigMap> = env.api();
    cms.create(&PostParams::default(), &cm("before", json!({"w": "yes"})))
        .await
        .unwrap();

    let mut stream =
        watcher::watcher(cms.clone(), watcher::Config::default().labels("w=yes")).boxed();
    let init = collect_until(&mut stream, |s| s.last().is_some_and(|e| e == "init-done")).await;
    assert_eq!(init, ["init", "init-apply before", "init-done"]);

    cms.create(&PostParams::default(), &cm("c", json!({"w": "yes"})))
        .await
        .unwrap();
    cms.create(&PostParams::default(), &cm("ignored", json!({"w": "no"})))
        .await
        .unwrap();
    cms.patch(
        "c",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"v": "2"}})),
    )
    .await
    .unwrap();
    cms.delete("c", &DeleteParams::default()).await.unwrap();
    // Leaving the selector looks like a deletion to the watcher.
    cms.patch(
        "before",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"w": "no"}}})),
    )
    .await
    .unwrap();
    let changes = collect_until(&mut stream, |s| s.len() >= 4).await;
    assert_eq!(
        changes,
        ["apply c 1", "apply c 2", "delete c", "delete before"]
    );
}

#[tokio::test]
#[cfg_attr(
    berth_real_cluster,
    ignore = "streaming lists need the WatchList feature gate, off by default before Kubernetes \
              1.32 (a real 1.28 refuses sendInitialEvents with 422); Berth does not use them"
)]
async fn watcher_with_streaming_lists() {
    let env = TestEnv::new().await;
    let cms: Api<ConfigMap> = env.api();
    cms.create(&PostParams::default(), &cm("existing", json!({})))
        .await
        .unwrap();

    let mut stream =
        watcher::watcher(cms.clone(), watcher::Config::default().streaming_lists()).boxed();
    let init = collect_until(&mut stream, |s| s.last().is_some_and(|e| e == "init-done")).await;
    assert!(
        init.contains(&"init-apply existing".to_string()),
        "{init:?}"
    );

    cms.create(&PostParams::default(), &cm("new", json!({})))
        .await
        .unwrap();
    let changes = collect_until(&mut stream, |s| !s.is_empty()).await;
    assert_eq!(changes, ["apply new 1"]);
}

#[tokio::test]
#[cfg_attr(berth_real_cluster, ignore = "needs the stand-in's bookmark knob")]
async fn raw_watch_bookmarks_timeout_and_gone() {
    let env = TestEnv::standin_only_with(StandInConfig {
        bookmark_interval: Duration::from_millis(100),
        ..StandInConfig::default()
    })
    .await;
    let cms: Api<ConfigMap> = env.api();
    let first = cms
        .create(&PostParams::default(), &cm("a", json!({})))
        .await
        .unwrap();
    let rv = first.resource_version().unwrap();
    cms.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"v": "2"}})),
    )
    .await
    .unwrap();

    // From a resourceVersion: what happened after it, bookmarks, and the end at the timeout.
    let started = tokio::time::Instant::now();
    let params = WatchParams::default().timeout(1);
    let events: Vec<WatchEvent<ConfigMap>> = cms
        .watch(&params, &rv)
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert!(
        started.elapsed() >= Duration::from_millis(900)
            && started.elapsed() < Duration::from_secs(5)
    );
    assert!(
        matches!(&events[0], WatchEvent::Modified(o) if o.data.as_ref().unwrap()["v"] == "2"),
        "{events:?}"
    );
    assert!(
        events.iter().any(|e| matches!(e, WatchEvent::Bookmark(_))),
        "{events:?}"
    );

    // After a compaction, old versions are gone.
    env.standin().compact_history();
    let events: Vec<WatchEvent<ConfigMap>> = cms
        .watch(&WatchParams::default().timeout(1), &rv)
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    match &events[..] {
        [WatchEvent::Error(status)] => assert_eq!(status.code, 410),
        other => panic!("expected a 410 error event, got {other:?}"),
    }
}

struct Ctx {
    widgets: Api<Widget>,
}

async fn reconcile(widget: Arc<Widget>, ctx: Arc<Ctx>) -> Result<Action, kube::Error> {
    let status = json!({"status": {"observedSize": widget.spec.size, "observedGeneration": widget.meta().generation}});
    ctx.widgets
        .patch_status(
            &widget.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&status),
        )
        .await?;
    Ok(Action::await_change())
}

fn error_policy(_: Arc<Widget>, _: &kube::Error, _: Arc<Ctx>) -> Action {
    Action::requeue(Duration::from_millis(200))
}

#[tokio::test]
async fn controller_reconciles_custom_resource() {
    let env = TestEnv::new().await;
    install_crds(&env.client).await;
    let widgets: Api<Widget> = env.api();
    let ctx = Arc::new(Ctx {
        widgets: widgets.clone(),
    });
    let controller = tokio::spawn(
        Controller::new(widgets.clone(), watcher::Config::default())
            .run(reconcile, error_policy, ctx)
            .for_each(|_| async {}),
    );

    widgets
        .create(
            &PostParams::default(),
            &Widget::new(
                "w",
                WidgetSpec {
                    size: 2,
                    color: None,
                },
            ),
        )
        .await
        .unwrap();
    eventually("the controller to write status", || async {
        widgets
            .get("w")
            .await
            .unwrap()
            .status
            .is_some_and(|s| s.observed_size == 2 && s.observed_generation == 1)
    })
    .await;

    widgets
        .patch(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": 7}})),
        )
        .await
        .unwrap();
    eventually("the controller to catch up with the change", || async {
        widgets
            .get("w")
            .await
            .unwrap()
            .status
            .is_some_and(|s| s.observed_size == 7 && s.observed_generation == 2)
    })
    .await;
    controller.abort();
}
