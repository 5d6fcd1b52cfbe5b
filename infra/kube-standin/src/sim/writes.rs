//! How the simulated controllers write: through the same verbs as API requests, so defaulting,
//! validation, generation, "no change, no write" and watch events are those of any client.
//! Failures are logged at debug level only: a controller retries on the next pass, and a
//! namespace being deleted refuses new pods on every pass until it is gone.

use std::sync::Arc;

use serde_json::Value;

use crate::meta;
use crate::store::ObjKey;
use crate::verbs::{DeleteOptions, State, Subresource, WriteOptions};

/// The simulated controllers write as kube-controller-manager does, under its name.
fn controller_writes() -> WriteOptions {
    WriteOptions {
        field_manager: Some("kube-controller-manager".to_owned()),
        ..WriteOptions::default()
    }
}

impl State {
    /// Creates an object as a controller would; returns it as stored.
    pub(crate) fn sim_create(
        &mut self,
        group: &str,
        plural: &str,
        namespace: &str,
        body: Value,
    ) -> Option<Arc<Value>> {
        let rt = self.registry.by_resource(group, plural)?.clone();
        let version = rt.versions.first()?.clone();
        let ns = (!namespace.is_empty()).then_some(namespace);
        match self.create(&rt, &version, ns, body, &controller_writes()) {
            Ok(created) => {
                let key = ObjKey::new(group, plural, namespace, meta::name(&created));
                self.store.get(&key).cloned()
            }
            Err(e) => {
                tracing::debug!("simulated controller: creating {plural} in {namespace}: {e}");
                None
            }
        }
    }

    /// Replaces the main resource (spec, metadata) of a stored object.
    pub(crate) fn sim_update(&mut self, key: &ObjKey, new: Value) {
        self.sim_replace(key, new, Subresource::Main);
    }

    /// Sets `.status` through the status subresource; unchanged status writes nothing.
    pub(crate) fn sim_set_status(&mut self, key: &ObjKey, status: Value) {
        let Some(current) = self.store.get(key).cloned() else {
            return;
        };
        if current.get("status") == Some(&status) {
            return;
        }
        let mut new = (*current).clone();
        new["status"] = status;
        self.sim_replace(key, new, Subresource::Status);
    }

    fn sim_replace(&mut self, key: &ObjKey, new: Value, sub: Subresource) {
        let Some(rt) = self
            .registry
            .by_resource(&key.group, &key.resource)
            .cloned()
        else {
            return;
        };
        let Some(version) = rt.versions.first().cloned() else {
            return;
        };
        let ns = (!key.namespace.is_empty()).then_some(key.namespace.as_str());
        if let Err(e) = self.replace(&rt, &version, ns, &key.name, new, sub, &controller_writes()) {
            tracing::debug!(
                "simulated controller: updating {}/{}: {e}",
                key.resource,
                key.name
            );
        }
    }

    /// Deletes an object in the background, as a controller scaling down does.
    pub(crate) fn sim_delete(&mut self, key: &ObjKey) {
        let Some(rt) = self
            .registry
            .by_resource(&key.group, &key.resource)
            .cloned()
        else {
            return;
        };
        let Some(version) = rt.versions.first().cloned() else {
            return;
        };
        let ns = (!key.namespace.is_empty()).then_some(key.namespace.as_str());
        if let Err(e) = self.delete(&rt, &version, ns, &key.name, &DeleteOptions::default()) {
            tracing::debug!(
                "simulated controller: deleting {}/{}: {e}",
                key.resource,
                key.name
            );
        }
    }
}
