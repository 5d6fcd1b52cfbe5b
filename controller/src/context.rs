//! What every reconcile is given: the client, the settings the controller
//! was started with, its metrics and Events, and the per-namespace turns.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use kube::{Client, Resource, ResourceExt};

use crate::render::RenderSettings;
use crate::{backoff, build_engine, egress, events, isolation, metrics};

/// The field manager of everything the controller applies.
pub const FIELD_MANAGER: &str = "berth-controller";

/// What the controller is told at start (the binary reads it from the
/// environment).
#[derive(Clone, Debug)]
pub struct Settings {
    /// How apps are rendered: ingress class, default apps domain, progress
    /// deadline.
    pub render: RenderSettings,
    /// The namespace the ingress controller runs in: the one namespace whose
    /// pods may reach every environment's pods (see
    /// [`isolation`]).
    pub ingress_namespace: String,
    /// The images builds run, their deadline, shares and git hosts.
    pub builders: build_engine::BuilderSettings,
    /// Where build pods (and, when asked, app pods) may connect to.
    pub egress: egress::EgressSettings,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            render: RenderSettings::default(),
            ingress_namespace: isolation::DEFAULT_INGRESS_NAMESPACE.to_owned(),
            builders: build_engine::BuilderSettings::default(),
            egress: egress::EgressSettings::default(),
        }
    }
}

pub struct Context {
    pub client: Client,
    pub settings: Settings,
    pub metrics: Arc<metrics::Metrics>,
    pub events: events::Events,
    pub(crate) backoff: backoff::Backoff,
    /// One lock per namespace: its apps make objects one at a time.
    turns: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl Context {
    pub(crate) fn new(
        client: Client,
        settings: Settings,
        metrics: Arc<metrics::Metrics>,
        instance: &str,
    ) -> Arc<Self> {
        Arc::new(Self {
            events: events::Events::new(client.clone(), instance),
            client,
            settings,
            metrics,
            backoff: backoff::Backoff::default(),
            turns: Mutex::new(HashMap::new()),
        })
    }

    /// Waits until no other app of `namespace` is making objects, and holds
    /// the namespace until the guard is dropped: two apps then never both
    /// find a name free and both apply it.
    pub(crate) async fn namespace_turn(&self, namespace: &str) -> tokio::sync::OwnedMutexGuard<()> {
        let lock = {
            let mut turns = self
                .turns
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            turns.entry(namespace.to_owned()).or_default().clone()
        };
        lock.lock_owned().await
    }
}

/// `namespace/name` (or `name`) of an object, for the log.
pub(crate) fn named<K: Resource>(object: &K) -> String {
    match object.meta().namespace.as_deref() {
        Some(namespace) => format!("{namespace}/{}", object.name_any()),
        None => object.name_any(),
    }
}
