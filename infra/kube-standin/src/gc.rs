//! The only controllers the stand-in runs: garbage collection through owner references,
//! namespace deletion and CRD cleanup. They run synchronously after every write, so their
//! effects are visible as soon as the write's response is.

use serde_json::{Value, json};

use crate::meta;
use crate::registry::{CRD_GROUP, CRD_RESOURCE};
use crate::store::ObjKey;
use crate::verbs::{CRD_CLEANUP_FINALIZER, State};

/// A bound on settle rounds, against any cycle in the owner graph.
const MAX_ROUNDS: usize = 10_000;

impl State {
    /// Runs the controllers until nothing more changes.
    pub(crate) fn settle(&mut self) {
        for _ in 0..MAX_ROUNDS {
            let mut progressed = false;
            while let Some(uid) = self.gc_queue.pop() {
                progressed |= self.collect_dependents(&uid);
            }
            progressed |= self.finalize_namespaces();
            progressed |= self.cleanup_crds();
            if !progressed && self.gc_queue.is_empty() {
                return;
            }
        }
        tracing::warn!("controllers did not settle after {MAX_ROUNDS} rounds");
    }

    /// Deletes the dependents of a removed owner, or drops the dangling reference from those that
    /// still have another live owner.
    fn collect_dependents(&mut self, owner_uid: &str) -> bool {
        if owner_uid.is_empty() {
            return false;
        }
        let dependents = self.store.dependents_of(owner_uid);
        if dependents.is_empty() {
            return false;
        }
        for (key, obj) in dependents {
            if meta::is_deleting(&obj) {
                continue;
            }
            let owners = meta::owner_uids(&obj);
            let dead: Vec<String> = owners
                .iter()
                .filter(|u| !self.store.holds_uid(u))
                .cloned()
                .collect();
            if dead.len() == owners.len() {
                self.request_deletion(&key, true);
            } else {
                let mut new = (*obj).clone();
                if meta::drop_owner_refs(&mut new, &dead) {
                    self.put_raw(key, new);
                }
            }
        }
        true
    }

    /// Queues for collection the owners a just-written object names that do not exist (never
    /// did, or went before it was written), as the real garbage collector looks each new
    /// owner up: the object is then deleted, or only loses the dangling reference when another
    /// owner lives.
    pub(crate) fn queue_dangling_owners(&mut self, obj: &Value) {
        for uid in meta::owner_uids(obj) {
            if !self.store.holds_uid(&uid) && !self.gc_queue.contains(&uid) {
                self.gc_queue.push(uid);
            }
        }
    }

    /// For `propagationPolicy=Orphan`: removes references to the owner from its dependents.
    pub(crate) fn orphan_dependents(&mut self, owner_uid: &str) {
        let dependents = self.store.dependents_of(owner_uid);
        let uids = [owner_uid.to_string()];
        for (key, obj) in dependents {
            let mut new = (*obj).clone();
            if meta::drop_owner_refs(&mut new, &uids) {
                self.put_raw(key, new);
            }
        }
    }

    /// Empties terminating namespaces and removes those that are empty.
    fn finalize_namespaces(&mut self) -> bool {
        let terminating = self.of_resource_where("", "namespaces", meta::is_deleting);
        let mut progressed = false;
        for (ns_key, ns_obj) in terminating {
            let ns = ns_key.name.as_str();
            let contents = self.objects_where(|k, _| k.namespace == ns);
            for (key, obj) in &contents {
                if !meta::is_deleting(obj) {
                    self.request_deletion(key, true);
                    progressed = true;
                }
            }
            let empty = self.objects_where(|k, _| k.namespace == ns).is_empty();
            if empty && meta::finalizers(&ns_obj).is_empty() && self.deletion_delay_over(&ns_obj) {
                self.remove_object(&ns_key);
                progressed = true;
            }
        }
        progressed
    }

    /// Whether a terminating namespace has waited out the configured delay
    /// since its deletion began (the server's tick settles it again later).
    fn deletion_delay_over(&self, namespace: &Value) -> bool {
        if self.namespace_deletion_delay.is_zero() {
            return true;
        }
        let began = meta::meta_str(namespace, "deletionTimestamp")
            .and_then(|stamp| stamp.parse::<jiff::Timestamp>().ok());
        let delay = jiff::SignedDuration::try_from(self.namespace_deletion_delay)
            .unwrap_or(jiff::SignedDuration::MAX);
        began.is_none_or(|began| {
            began
                .checked_add(delay)
                .is_ok_and(|due| due <= jiff::Timestamp::now())
        })
    }

    /// Deletes the custom resources of terminating CRDs, then lets the CRDs go.
    fn cleanup_crds(&mut self) -> bool {
        let terminating = self.of_resource_where(CRD_GROUP, CRD_RESOURCE, |o| {
            meta::is_deleting(o)
                && meta::finalizers(o)
                    .iter()
                    .any(|f| f == CRD_CLEANUP_FINALIZER)
        });
        let mut progressed = false;
        for (crd_key, crd) in terminating {
            let group = crd
                .pointer("/spec/group")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let plural = crd
                .pointer("/spec/names/plural")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let instances: Vec<(ObjKey, bool)> = self
                .of_resource_where(&group, &plural, |_| true)
                .into_iter()
                .map(|(k, o)| (k, meta::is_deleting(&o)))
                .collect();
            for (key, deleting) in &instances {
                if !deleting {
                    self.request_deletion(key, true);
                    progressed = true;
                }
            }
            let remaining = self.of_resource_where(&group, &plural, |_| true).len();
            if remaining == 0 {
                let mut new = (*crd).clone();
                let fins: Vec<String> = meta::finalizers(&new)
                    .into_iter()
                    .filter(|f| f != CRD_CLEANUP_FINALIZER)
                    .collect();
                if fins.is_empty() {
                    meta::metadata_mut(&mut new).remove("finalizers");
                    self.remove_object(&crd_key);
                } else {
                    meta::metadata_mut(&mut new).insert("finalizers".into(), json!(fins));
                    self.put_raw(crd_key, new);
                }
                progressed = true;
            }
        }
        progressed
    }
}
