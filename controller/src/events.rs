//! Kubernetes Events (`events.k8s.io/v1`) on the Environments and Apps the
//! controller works on, through kube-rs's `Recorder`, so that `kubectl
//! describe` tells what happened to them. An App's Events are in its
//! namespace; an Environment's (cluster-scoped) in `default`, as kube-rs and
//! Kubernetes' own controllers put those of cluster-scoped objects.
//!
//! Repeats are aggregated as kube-rs does: an Event of the same object,
//! reason and type within 6 minutes is one Event whose `series` counts them
//! (a patch, not a new object); its note stays the first one's. Notes are
//! tenants' words ([`crate::error::Error::tenant_message`], the App's status
//! messages): never the cluster's own error text. Publishing is best effort:
//! a refused Event is logged and changes nothing else.

use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::{Client, Resource};

/// The `reportingController` of every Event (the instance is the replica).
pub const REPORTING_CONTROLLER: &str = "berth.dev/controller";

/// The longest note the apiserver takes (`events.k8s.io/v1`: 1 KiB).
const NOTE_LIMIT: usize = 1024;

/// Why an Event is published: its reason, and whether it is a warning.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
}

pub struct Events {
    recorder: Recorder,
}

impl Events {
    /// Events reported as this replica (`reportingInstance`).
    pub fn new(client: Client, instance: &str) -> Self {
        Self {
            recorder: Recorder::new(
                client,
                Reporter {
                    controller: REPORTING_CONTROLLER.to_owned(),
                    instance: Some(instance.chars().take(128).collect()),
                },
            ),
        }
    }

    /// Publishes an Event on `object`; a failure is only logged.
    pub async fn publish<K: Resource<DynamicType = ()>>(
        &self,
        object: &K,
        why: Reason,
        note: impl Into<String>,
    ) {
        let event = Event {
            type_: if why.warning {
                EventType::Warning
            } else {
                EventType::Normal
            },
            reason: why.reason.to_owned(),
            note: Some(bounded(note.into())),
            action: why.action.to_owned(),
            secondary: None,
        };
        let regarding = reference(object);
        if let Err(error) = self.recorder.publish(&event, &regarding).await {
            tracing::warn!(
                kind = %K::kind(&()),
                name = ?regarding.name,
                namespace = ?regarding.namespace,
                reason = why.reason,
                error = %error,
                "the Event could not be published"
            );
        }
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
    use super::*;

    #[test]
    fn notes_fit_the_apiservers_limit() {
        assert_eq!(bounded("short".into()), "short");
        let long = bounded("é".repeat(2000));
        assert!(long.len() <= NOTE_LIMIT, "{}", long.len());
        assert!(long.ends_with("..."));
    }
}
