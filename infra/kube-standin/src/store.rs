//! The object store: objects by key, the global resourceVersion counter and a bounded history of
//! change events that watches replay from.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::watch;

/// Where an object lives. Cluster-scoped objects have an empty namespace.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjKey {
    pub group: String,
    pub resource: String,
    pub namespace: String,
    pub name: String,
}

impl ObjKey {
    pub fn new(group: &str, resource: &str, namespace: &str, name: &str) -> Self {
        ObjKey {
            group: group.to_string(),
            resource: resource.to_string(),
            namespace: namespace.to_string(),
            name: name.to_string(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One change, as recorded in the history.
#[derive(Debug)]
pub struct Event {
    pub rv: u64,
    pub kind: EventType,
    pub key: ObjKey,
    /// The object after the change (for `Deleted`, its last state at the deletion's version).
    pub object: Arc<Value>,
    /// The object before the change, for watches whose selector it may have stopped matching.
    pub previous: Option<Arc<Value>>,
}

/// The requested resourceVersion is older than the history kept.
#[derive(Debug, Clone, Copy)]
pub struct Expired {
    pub oldest_available: u64,
}

pub struct Store {
    rv: u64,
    objects: BTreeMap<ObjKey, Arc<Value>>,
    /// The names of the objects each controller controls (by its owner reference marked
    /// `controller`), by resource, namespace and controller uid: what the simulated controllers
    /// look up for every object on every pass, which a scan would make quadratic in the
    /// number of objects.
    controlled: HashMap<Controller, BTreeSet<String>>,
    /// The uids of the stored objects: the garbage collector looks up every owner a written
    /// object names, which a scan would make quadratic in the number of objects too.
    uids: HashSet<String>,
    /// The objects naming each uid among their owners: what the garbage collector looks up
    /// when an owner goes.
    dependents: HashMap<String, BTreeSet<ObjKey>>,
    history: VecDeque<Arc<Event>>,
    history_limit: usize,
    /// Events at or below this version are no longer in the history.
    compacted_rv: u64,
    notify: watch::Sender<u64>,
}

/// A controller's objects of one resource in one namespace.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Controller {
    group: String,
    resource: String,
    namespace: String,
    uid: String,
}

impl Controller {
    /// The controller of the object under `key`, if it has one.
    fn of(key: &ObjKey, object: &Value) -> Option<Self> {
        Some(Controller {
            group: key.group.clone(),
            resource: key.resource.clone(),
            namespace: key.namespace.clone(),
            uid: crate::meta::controller_uid(object)?.to_owned(),
        })
    }
}

pub fn set_resource_version(obj: &mut Value, rv: u64) {
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("resourceVersion".into(), json!(rv.to_string()));
    }
}

impl Store {
    pub fn new(history_limit: usize) -> Self {
        let (notify, _) = watch::channel(0);
        Store {
            rv: 0,
            objects: BTreeMap::new(),
            controlled: HashMap::new(),
            uids: HashSet::new(),
            dependents: HashMap::new(),
            history: VecDeque::new(),
            history_limit: history_limit.max(1),
            compacted_rv: 0,
            notify,
        }
    }

    pub fn current_rv(&self) -> u64 {
        self.rv
    }

    pub fn get(&self, key: &ObjKey) -> Option<&Arc<Value>> {
        self.objects.get(key)
    }

    /// Objects of one resource, optionally in one namespace, in key order.
    pub fn list<'a>(
        &'a self,
        group: &'a str,
        resource: &'a str,
        namespace: Option<&'a str>,
    ) -> impl Iterator<Item = (&'a ObjKey, &'a Arc<Value>)> + 'a {
        let start = ObjKey::new(group, resource, namespace.unwrap_or(""), "");
        self.objects.range(start..).take_while(move |(k, _)| {
            k.group == group
                && k.resource == resource
                && namespace.is_none_or(|ns| k.namespace == ns)
        })
    }

    /// The objects of one resource in `namespace` whose controller is `controller_uid`, in
    /// key order.
    pub fn controlled_by<'a>(
        &'a self,
        group: &str,
        resource: &str,
        namespace: &str,
        controller_uid: &str,
    ) -> impl Iterator<Item = (ObjKey, &'a Arc<Value>)> + 'a {
        let controller = Controller {
            group: group.to_owned(),
            resource: resource.to_owned(),
            namespace: namespace.to_owned(),
            uid: controller_uid.to_owned(),
        };
        let names = self.controlled.get(&controller);
        names.into_iter().flatten().filter_map(move |name| {
            let key = ObjKey::new(
                &controller.group,
                &controller.resource,
                &controller.namespace,
                name,
            );
            let object = self.objects.get(&key)?;
            Some((key, object))
        })
    }

    /// Whether an object of this uid is stored.
    pub fn holds_uid(&self, uid: &str) -> bool {
        self.uids.contains(uid)
    }

    /// The objects naming `owner_uid` among their owners, in key order.
    pub fn dependents_of(&self, owner_uid: &str) -> Vec<(ObjKey, Arc<Value>)> {
        self.dependents
            .get(owner_uid)
            .into_iter()
            .flatten()
            .filter_map(|key| Some((key.clone(), self.objects.get(key)?.clone())))
            .collect()
    }

    fn index(&mut self, key: &ObjKey, before: Option<&Value>, after: Option<&Value>) {
        let owners_were = before.map(crate::meta::owner_uids).unwrap_or_default();
        let owners_are = after.map(crate::meta::owner_uids).unwrap_or_default();
        if owners_were != owners_are {
            for owner in &owners_were {
                if let Some(keys) = self.dependents.get_mut(owner) {
                    keys.remove(key);
                    if keys.is_empty() {
                        self.dependents.remove(owner);
                    }
                }
            }
            for owner in owners_are {
                self.dependents
                    .entry(owner)
                    .or_default()
                    .insert(key.clone());
            }
        }
        let uid_was = before.map(crate::meta::uid).filter(|uid| !uid.is_empty());
        let uid_is = after.map(crate::meta::uid).filter(|uid| !uid.is_empty());
        if uid_was != uid_is {
            if let Some(uid) = uid_was {
                self.uids.remove(uid);
            }
            if let Some(uid) = uid_is {
                self.uids.insert(uid.to_owned());
            }
        }
        let was = before.and_then(|object| Controller::of(key, object));
        let is = after.and_then(|object| Controller::of(key, object));
        if was == is {
            return;
        }
        if let Some(was) = was
            && let Some(names) = self.controlled.get_mut(&was)
        {
            names.remove(&key.name);
            if names.is_empty() {
                self.controlled.remove(&was);
            }
        }
        if let Some(is) = is {
            self.controlled
                .entry(is)
                .or_default()
                .insert(key.name.clone());
        }
    }

    /// Every object, in key order.
    pub fn all(&self) -> impl Iterator<Item = (&ObjKey, &Arc<Value>)> {
        self.objects.iter()
    }

    /// Stores `object` under `key` at a new resourceVersion and records the change.
    pub fn put(&mut self, key: ObjKey, mut object: Value) -> Arc<Value> {
        self.rv += 1;
        set_resource_version(&mut object, self.rv);
        let object = Arc::new(object);
        let previous = self.objects.insert(key.clone(), object.clone());
        self.index(&key, previous.as_deref(), Some(&object));
        let kind = if previous.is_some() {
            EventType::Modified
        } else {
            EventType::Added
        };
        self.record(Event {
            rv: self.rv,
            kind,
            key,
            object: object.clone(),
            previous,
        });
        object
    }

    /// Removes the object under `key`; returns its last state, stamped with the deletion's version.
    pub fn remove(&mut self, key: &ObjKey) -> Option<Arc<Value>> {
        let old = self.objects.remove(key)?;
        self.index(key, Some(&old), None);
        self.rv += 1;
        let mut last = (*old).clone();
        set_resource_version(&mut last, self.rv);
        let last = Arc::new(last);
        self.record(Event {
            rv: self.rv,
            kind: EventType::Deleted,
            key: key.clone(),
            object: last.clone(),
            previous: Some(old),
        });
        Some(last)
    }

    fn record(&mut self, event: Event) {
        self.history.push_back(Arc::new(event));
        while self.history.len() > self.history_limit {
            if let Some(dropped) = self.history.pop_front() {
                self.compacted_rv = dropped.rv;
            }
        }
        self.notify.send_replace(self.rv);
    }

    /// The recorded events after `rv`, or `Expired` when some of them are no longer kept.
    pub fn events_after(&self, rv: u64) -> Result<Vec<Arc<Event>>, Expired> {
        if rv < self.compacted_rv {
            return Err(Expired {
                oldest_available: self.compacted_rv,
            });
        }
        let start = self.history.partition_point(|e| e.rv <= rv);
        Ok(self.history.range(start..).cloned().collect())
    }

    /// Forgets the whole history, as an etcd compaction would: watches from any earlier version
    /// then get `410 Gone`.
    pub fn compact(&mut self) {
        self.history.clear();
        self.compacted_rv = self.rv;
    }

    /// Replaces every object with saved ones, at the saved resourceVersion. The history starts
    /// empty there: watches from before it get `410 Gone`, as after a compaction.
    pub fn restore(&mut self, rv: u64, objects: impl IntoIterator<Item = (ObjKey, Value)>) {
        self.objects = objects.into_iter().map(|(k, o)| (k, Arc::new(o))).collect();
        self.controlled.clear();
        self.uids.clear();
        self.dependents.clear();
        let objects: Vec<(ObjKey, Arc<Value>)> = self
            .objects
            .iter()
            .map(|(k, o)| (k.clone(), o.clone()))
            .collect();
        for (key, object) in objects {
            self.index(&key, None, Some(&object));
        }
        self.rv = rv;
        self.history.clear();
        self.compacted_rv = self.rv;
        self.notify.send_replace(self.rv);
    }

    /// A receiver that changes whenever something is written.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.notify.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str, controller: Option<&str>) -> Value {
        let owners: Vec<Value> = controller
            .map(
                |uid| json!({ "kind": "ReplicaSet", "name": "rs", "uid": uid, "controller": true }),
            )
            .into_iter()
            .collect();
        json!({ "metadata": { "name": name, "namespace": "ns", "ownerReferences": owners } })
    }

    fn controlled(store: &Store, uid: &str) -> Vec<String> {
        store
            .controlled_by("", "pods", "ns", uid)
            .map(|(key, _)| key.name)
            .collect()
    }

    /// The controller index follows every write: a new object, a changed
    /// controller, a removal, a restore.
    #[test]
    fn the_controller_index_follows_writes() {
        let mut store = Store::new(10);
        let key = |name: &str| ObjKey::new("", "pods", "ns", name);
        store.put(key("a"), pod("a", Some("one")));
        store.put(key("b"), pod("b", Some("one")));
        store.put(key("c"), pod("c", None));
        assert_eq!(controlled(&store, "one"), ["a", "b"]);
        store.put(key("b"), pod("b", Some("two")));
        assert_eq!(controlled(&store, "one"), ["a"]);
        assert_eq!(controlled(&store, "two"), ["b"]);
        store.remove(&key("a"));
        assert!(controlled(&store, "one").is_empty());
        assert!(
            store
                .controlled_by("", "pods", "other", "two")
                .next()
                .is_none()
        );
        store.restore(7, [(key("d"), pod("d", Some("one")))]);
        assert_eq!(controlled(&store, "one"), ["d"]);
        assert!(controlled(&store, "two").is_empty());
    }
}
