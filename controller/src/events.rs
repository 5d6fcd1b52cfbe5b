//! Kubernetes Events (`events.k8s.io/v1`) on the Environments and Apps the
//! controller works on, so that `kubectl describe` tells what happened to
//! them. An App's Events are in its namespace; an Environment's
//! (cluster-scoped) in `default`, as kube-rs and Kubernetes' own controllers
//! put those of cluster-scoped objects.
//!
//! Repeats are aggregated as kube-rs's `Recorder` does: an Event of the same
//! object, reason and type within 6 minutes of the last is one Event whose
//! `series` counts them (a patch, not a new object); its note stays the
//! first one's. Unlike that recorder, which keeps every Event it published
//! whole for those minutes (6.4 KB an App after a cold start, most of the
//! controller's memory per App: docs/benchmarks.md, "Controller at scale"),
//! only the Event's key, name and count are kept. Notes are
//! tenants' words ([`crate::error::Error::tenant_message`], the App's status
//! messages): never the cluster's own error text. Publishing is best effort:
//! a refused Event is logged and changes nothing else.

use std::collections::HashMap;
use std::sync::Mutex;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Api, Client, Resource};
use serde_json::json;

/// The `reportingController` of every Event (the instance is the replica).
pub const REPORTING_CONTROLLER: &str = "berth.dev/controller";

/// The longest note the apiserver takes (`events.k8s.io/v1`: 1 KiB).
const NOTE_LIMIT: usize = 1024;

/// How long after its last occurrence a repeat still counts in an Event's
/// series (kube-runtime's `CACHE_TTL`, and Kubernetes' own recorder's).
const SERIES_WINDOW: SignedDuration = SignedDuration::from_mins(6);

/// Why an Event is published: its reason, and whether it is a warning.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Reason {
    pub reason: &'static str,
    pub warning: bool,
    /// What the controller was doing (`action`).
    pub action: &'static str,
}

impl Reason {
    pub const fn normal(reason: &'static str, action: &'static str) -> Self {
        Self {
            reason,
            warning: false,
            action,
        }
    }

    pub const fn warning(reason: &'static str, action: &'static str) -> Self {
        Self {
            reason,
            warning: true,
            action,
        }
    }

    fn event_type(self) -> &'static str {
        if self.warning { "Warning" } else { "Normal" }
    }
}

/// What makes two Events one series: the same reason about the same object.
#[derive(PartialEq, Eq, Hash)]
struct SeriesKey {
    reason: Reason,
    kind: Option<String>,
    namespace: Option<String>,
    name: Option<String>,
    uid: Option<String>,
}

/// An Event published within the window: where it is and how often.
struct Published {
    name: String,
    count: i32,
    last: Timestamp,
}

/// The controller's Events, one recorder for every controller.
pub struct Events {
    client: Client,
    /// Events reported as this replica (`reportingInstance`).
    instance: String,
    published: Mutex<HashMap<SeriesKey, Published>>,
}

impl Events {
    pub fn new(client: Client, instance: &str) -> Self {
        Self {
            client,
            instance: instance.chars().take(128).collect(),
            published: Mutex::default(),
        }
    }

    /// Publishes an Event on `object`; a failure is only logged.
    pub async fn publish<K: Resource<DynamicType = ()>>(
        &self,
        object: &K,
        why: Reason,
        note: impl Into<String>,
    ) {
        self.publish_regarding(reference(object), why, note).await;
    }

    /// Publishes an Event on the object `regarding` names, one the
    /// controller knows only by name (its own pod); a failure is only logged.
    pub async fn publish_regarding(
        &self,
        regarding: ObjectReference,
        why: Reason,
        note: impl Into<String>,
    ) {
        let namespace = regarding
            .namespace
            .clone()
            .unwrap_or_else(|| "default".to_owned());
        let key = SeriesKey {
            reason: why,
            kind: regarding.kind.clone(),
            namespace: regarding.namespace.clone(),
            name: regarding.name.clone(),
            uid: regarding.uid.clone(),
        };
        let now = Timestamp::now();
        let events: Api<Event> = Api::namespaced(self.client.clone(), &namespace);
        let published = match self.repeat_of(&key, now) {
            Some((name, count)) => match self.count(&events, name, count, now).await {
                Ok(Some(counted)) => Ok(counted),
                // Gone meanwhile (deleted by hand, or an `--event-ttl`
                // shorter than the window): made again.
                Ok(None) => {
                    self.create(&events, why, regarding.clone(), note.into(), now)
                        .await
                }
                Err(error) => Err(error),
            },
            None => {
                self.create(&events, why, regarding.clone(), note.into(), now)
                    .await
            }
        };
        match published {
            Ok(published) => {
                let mut known = self.published.lock().unwrap_or_else(|e| e.into_inner());
                known.insert(key, published);
            }
            Err(error) => tracing::warn!(
                kind = ?regarding.kind,
                name = ?regarding.name,
                namespace = ?regarding.namespace,
                reason = why.reason,
                error = %error,
                "the Event could not be published"
            ),
        }
    }

    /// The name and next count of the Event `key` published within the
    /// window, forgetting those whose window has passed.
    fn repeat_of(&self, key: &SeriesKey, now: Timestamp) -> Option<(String, i32)> {
        let mut known = self.published.lock().unwrap_or_else(|e| e.into_inner());
        known.retain(|_, published| published.last + SERIES_WINDOW > now);
        known
            .get(key)
            .map(|published| (published.name.clone(), published.count + 1))
    }

    /// Counts a repeat in the Event's series; `None` if the Event is gone.
    async fn count(
        &self,
        events: &Api<Event>,
        name: String,
        count: i32,
        now: Timestamp,
    ) -> Result<Option<Published>, kube::Error> {
        let series = EventSeries {
            count,
            last_observed_time: MicroTime(now),
        };
        let patch = Patch::Merge(json!({ "series": series }));
        match events.patch(&name, &PatchParams::default(), &patch).await {
            Ok(_) => Ok(Some(Published {
                name,
                count,
                last: now,
            })),
            Err(error) if berth_cluster::is_not_found(&error) => Ok(None),
            Err(error) => Err(error),
        }
    }

    async fn create(
        &self,
        events: &Api<Event>,
        why: Reason,
        regarding: ObjectReference,
        note: String,
        now: Timestamp,
    ) -> Result<Published, kube::Error> {
        let name = format!(
            "{}.{:x}",
            regarding.name.as_deref().unwrap_or(REPORTING_CONTROLLER),
            now.as_nanosecond()
        );
        let event = Event {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: regarding.namespace.clone(),
                ..ObjectMeta::default()
            },
            action: Some(why.action.to_owned()),
            reason: Some(why.reason.to_owned()),
            type_: Some(why.event_type().to_owned()),
            note: Some(bounded(note)),
            event_time: Some(MicroTime(now)),
            regarding: Some(regarding),
            reporting_controller: Some(REPORTING_CONTROLLER.to_owned()),
            reporting_instance: Some(self.instance.clone()),
            ..Event::default()
        };
        events.create(&PostParams::default(), &event).await?;
        Ok(Published {
            name,
            count: 1,
            last: now,
        })
    }
}

/// The object an Event regards, without its resourceVersion: Events of every
/// version of the object are one series, and `kubectl describe` matches them
/// by kind, name, namespace and uid.
pub fn reference<K: Resource<DynamicType = ()>>(object: &K) -> ObjectReference {
    ObjectReference {
        resource_version: None,
        ..object.object_ref(&())
    }
}

/// A note cut to the apiserver's limit, at a character boundary (also what
/// an App's status keeps of a revision's outcome, `crate::releases`).
pub(crate) fn bounded(mut note: String) -> String {
    if note.len() > NOTE_LIMIT {
        let mut end = NOTE_LIMIT - 3;
        while !note.is_char_boundary(end) {
            end -= 1;
        }
        note.truncate(end);
        note.push_str("...");
    }
    note
}

#[cfg(test)]
mod tests {
    use berth_kube_standin::StandIn;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::{DeleteParams, ListParams};

    use super::*;
    use crate::testing::client_of;

    /// The Events in `default`, by name.
    async fn events(client: &Client) -> Vec<Event> {
        Api::<Event>::namespaced(client.clone(), "default")
            .list(&ListParams::default())
            .await
            .expect("Events")
            .items
    }

    /// A repeat within the window counts in the first Event's series (its
    /// note stays the first); another reason is another Event; a repeat
    /// whose Event is gone meanwhile makes it again.
    #[tokio::test]
    async fn repeats_count_in_one_series_until_the_event_is_gone() {
        let cluster = StandIn::start().await.expect("stand-in");
        let client = client_of(&cluster).await;
        let recorder = Events::new(client.clone(), "replica-1");
        let object = ConfigMap {
            metadata: ObjectMeta {
                name: Some("settings".to_owned()),
                namespace: Some("default".to_owned()),
                uid: Some("uid-1".to_owned()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        };
        let failed = Reason::warning("Failed", "Apply");
        recorder.publish(&object, failed, "first").await;
        recorder.publish(&object, failed, "second").await;
        recorder.publish(&object, failed, "third").await;
        let listed = events(&client).await;
        assert_eq!(listed.len(), 1, "{listed:?}");
        let event = &listed[0];
        assert_eq!(event.series.as_ref().map(|series| series.count), Some(3));
        assert_eq!(event.note.as_deref(), Some("first"));
        assert_eq!(event.type_.as_deref(), Some("Warning"));
        assert_eq!(event.reporting_instance.as_deref(), Some("replica-1"));
        assert_eq!(
            event.regarding.as_ref().and_then(|r| r.uid.as_deref()),
            Some("uid-1")
        );

        recorder
            .publish(&object, Reason::normal("Applied", "Apply"), "done")
            .await;
        assert_eq!(events(&client).await.len(), 2);

        let name = event.metadata.name.clone().expect("a name");
        Api::<Event>::namespaced(client.clone(), "default")
            .delete(&name, &DeleteParams::default())
            .await
            .expect("deleted");
        recorder.publish(&object, failed, "again").await;
        let again: Vec<Event> = events(&client)
            .await
            .into_iter()
            .filter(|event| event.reason.as_deref() == Some("Failed"))
            .collect();
        assert_eq!(again.len(), 1, "{again:?}");
        assert_eq!(again[0].note.as_deref(), Some("again"));
        assert_eq!(again[0].series, None);
    }

    #[test]
    fn notes_fit_the_apiservers_limit() {
        assert_eq!(bounded("short".into()), "short");
        let long = bounded("é".repeat(2000));
        assert!(long.len() <= NOTE_LIMIT, "{}", long.len());
        assert!(long.ends_with("..."));
    }
}
