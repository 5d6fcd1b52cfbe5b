//! The API verbs (create, get, list, replace, patch, delete) with Kubernetes' object semantics:
//! system metadata, resourceVersion preconditions, generation, the status subresource,
//! finalizers and CRD registration.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::admission::{self, Attributes, Requester};
use crate::managed::{self, Operation};
use crate::meta::{self, metadata_mut};
use crate::patch::{self, PatchType};
use crate::registry::{CRD_GROUP, CRD_RESOURCE, Registry, ResourceType, crd_type};
use crate::selector::Filter;
use crate::status::{ApiError, ApiResult, success_status};
use crate::store::{ObjKey, Store};
use crate::{defaults, validation};

/// The finalizer the API server puts on every CRD so its custom resources go first.
pub const CRD_CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// Namespaces created at start, as on a fresh cluster.
pub const DEFAULT_NAMESPACES: &[&str] =
    &["default", "kube-system", "kube-public", "kube-node-lease"];

/// Which part of an object a write addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subresource {
    Main,
    Status,
}

#[derive(Debug, Clone, Default)]
pub struct WriteOptions {
    pub dry_run: bool,
    /// The `fieldManager`; required by server-side apply. (`force` is accepted and ignored:
    /// the stand-in records managers in `managedFields` but moves no field ownership, so
    /// applies never conflict.)
    pub field_manager: Option<String>,
    /// Who a write without `fieldManager` is recorded as (from the `User-Agent`).
    pub user_agent_manager: Option<String>,
    /// How the write is recorded in `managedFields`.
    pub operation: Operation,
    /// Who asks, for admission; `None` for the stand-in's own writes (the
    /// simulated controllers), which no policy of Berth's concerns.
    pub requester: Option<Requester>,
}

impl WriteOptions {
    /// The entry this write leaves in `managedFields`.
    fn write<'a>(&'a self, api_version: &'a str, subresource: Subresource) -> managed::Write<'a> {
        managed::Write {
            manager: self
                .field_manager
                .as_deref()
                .or(self.user_agent_manager.as_deref())
                .unwrap_or("unknown"),
            operation: self.operation,
            subresource,
            api_version,
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Propagation {
    #[default]
    Background,
    Foreground,
    Orphan,
}

#[derive(Debug, Clone, Default)]
pub struct DeleteOptions {
    pub dry_run: bool,
    pub propagation: Propagation,
    pub precondition_uid: Option<String>,
    pub precondition_rv: Option<String>,
    /// Who asks, for admission (see [`WriteOptions::requester`]).
    pub requester: Option<Requester>,
}

/// Everything the API serves from, guarded by one lock.
pub struct State {
    pub registry: Registry,
    pub store: Store,
    /// The configuration each field manager last applied to each object (server-side apply).
    pub(crate) applied: HashMap<(ObjKey, String), Value>,
    /// Uids of removed objects whose dependents the garbage collector has yet to look at.
    pub(crate) gc_queue: Vec<String>,
    /// How many service cluster IPs have been handed out.
    pub(crate) services_allocated: u64,
    /// How long a deleted namespace stays `Terminating` once empty, as on a
    /// real cluster whose namespace controller is busy (zero: it goes at once).
    pub(crate) namespace_deletion_delay: std::time::Duration,
    /// The validating admission policies, compiled.
    pub(crate) admission: admission::Cache,
}

/// Sets `apiVersion` and `kind` as served at `version`.
pub fn present(rt: &ResourceType, version: &str, obj: &Value) -> Value {
    let mut out = obj.clone();
    if let Some(map) = out.as_object_mut() {
        map.insert("apiVersion".into(), json!(rt.api_version(version)));
        map.insert("kind".into(), json!(rt.kind));
    }
    out
}

pub fn object_key(rt: &ResourceType, namespace: Option<&str>, name: &str) -> ObjKey {
    let ns = if rt.namespaced {
        namespace.unwrap_or_default()
    } else {
        ""
    };
    ObjKey::new(&rt.group, &rt.plural, ns, name)
}

/// The part of an object whose changes bump `metadata.generation`.
fn spec_part(rt: &ResourceType, obj: &Value) -> Value {
    let mut out = obj.clone();
    if let Some(map) = out.as_object_mut() {
        map.remove("metadata");
        map.remove("apiVersion");
        map.remove("kind");
        if rt.status_subresource {
            map.remove("status");
        }
    }
    out
}

/// The status a freshly created object starts with, for types with a status subresource.
fn initial_status(rt: &ResourceType) -> Option<Value> {
    match (rt.group.as_str(), rt.plural.as_str()) {
        ("", "pods") => Some(json!({"phase": "Pending"})),
        ("", "namespaces") => Some(json!({"phase": "Active"})),
        ("", "services") => Some(json!({"loadBalancer": {}})),
        ("", "persistentvolumeclaims") => Some(json!({"phase": "Pending"})),
        ("", "persistentvolumes") => Some(json!({"phase": "Pending"})),
        _ if rt.crd.is_some() => None,
        _ => Some(json!({})),
    }
}

fn crd_status(crd: &Value, old_status: Option<&Value>) -> Value {
    let mut names = crd
        .pointer("/spec/names")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let kind = names
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if names.get("singular").is_none() {
        names["singular"] = json!(kind.to_lowercase());
    }
    if names.get("listKind").is_none() {
        names["listKind"] = json!(format!("{kind}List"));
    }
    let storage = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .and_then(|vs| {
            vs.iter()
                .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        })
        .and_then(|v| v.get("name"))
        .cloned()
        .unwrap_or(Value::Null);
    let mut stored: Vec<Value> = old_status
        .and_then(|s| s.get("storedVersions"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if !stored.contains(&storage) {
        stored.push(storage);
    }
    let conditions = old_status.and_then(|s| s.get("conditions")).cloned().unwrap_or_else(|| {
        let now = meta::now_timestamp();
        json!([
            {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found", "lastTransitionTime": now},
            {"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted", "lastTransitionTime": now},
        ])
    });
    json!({"acceptedNames": names, "conditions": conditions, "storedVersions": stored})
}

impl State {
    /// The stored object a request names, or the NotFound a real API server answers.
    pub(crate) fn existing(
        &self,
        rt: &ResourceType,
        namespace: Option<&str>,
        name: &str,
    ) -> ApiResult<(ObjKey, Arc<Value>)> {
        let key = object_key(rt, namespace, name);
        let object = self
            .store
            .get(&key)
            .cloned()
            .ok_or_else(|| ApiError::not_found(&rt.plural, &rt.group, name))?;
        Ok((key, object))
    }

    pub fn new(history_limit: usize) -> Self {
        let mut state = State {
            registry: Registry::builtin(),
            store: Store::new(history_limit),
            applied: HashMap::new(),
            gc_queue: Vec::new(),
            services_allocated: 0,
            namespace_deletion_delay: std::time::Duration::ZERO,
            admission: admission::Cache::default(),
        };
        for ns in DEFAULT_NAMESPACES {
            let body = json!({"metadata": {"name": ns}});
            if let Some(rt) = state.registry.by_resource("", "namespaces").cloned()
                && let Err(e) = state.create(&rt, "v1", None, body, &WriteOptions::default())
            {
                tracing::error!("creating namespace {ns}: {e}");
            }
        }
        state
    }

    pub fn get(
        &self,
        rt: &ResourceType,
        version: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> ApiResult<Value> {
        let (_, object) = self.existing(rt, namespace, name)?;
        Ok(present(rt, version, &object))
    }

    /// A `XList` of the matching objects, with the store's current resourceVersion.
    pub fn list(
        &self,
        rt: &ResourceType,
        version: &str,
        namespace: Option<&str>,
        filter: &Filter,
    ) -> Value {
        let ns = if rt.namespaced { namespace } else { None };
        let items: Vec<Value> = self
            .store
            .list(&rt.group, &rt.plural, ns)
            .filter(|(_, o)| filter.matches(o))
            .map(|(_, o)| present(rt, version, o))
            .collect();
        json!({
            "kind": rt.list_kind,
            "apiVersion": rt.api_version(version),
            "metadata": {"resourceVersion": self.store.current_rv().to_string()},
            "items": items,
        })
    }

    /// Checks that a namespace exists and accepts new objects.
    fn check_namespace_open(
        &self,
        rt: &ResourceType,
        namespace: &str,
        name: &str,
    ) -> ApiResult<()> {
        match self
            .store
            .get(&ObjKey::new("", "namespaces", "", namespace))
        {
            None => Err(ApiError::not_found("namespaces", "", namespace)),
            Some(ns) if meta::is_deleting(ns) => {
                let mut e = ApiError::forbidden(
                    &rt.plural,
                    &rt.group,
                    name,
                    format!(
                        "{} \"{name}\" is forbidden: unable to create new content in namespace {namespace} because it is being terminated",
                        crate::status::qualified(&rt.plural, &rt.group)
                    ),
                );
                if let Some(d) = e.details.as_mut() {
                    d.causes.push(json!({"reason": "NamespaceTerminating", "message": format!("namespace {namespace} is being terminated"), "field": "metadata.namespace"}));
                }
                Err(e)
            }
            Some(_) => Ok(()),
        }
    }

    /// Checks the body's type and namespace against the URL and fills them in.
    fn normalize_body(
        rt: &ResourceType,
        version: &str,
        namespace: Option<&str>,
        mut body: Value,
    ) -> ApiResult<Value> {
        let Some(map) = body.as_object_mut() else {
            return Err(ApiError::bad_request(
                "the body of the request was in an unknown format - expected a JSON object",
            ));
        };
        let expected = rt.api_version(version);
        if let Some(v) = map
            .get("apiVersion")
            .and_then(Value::as_str)
            .filter(|v| !v.is_empty())
            && v != expected
        {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({v}) does not match the expected API version ({expected})"
            )));
        }
        if let Some(k) = map
            .get("kind")
            .and_then(Value::as_str)
            .filter(|k| !k.is_empty())
            && k != rt.kind
        {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({k}) does not match the expected kind ({})",
                rt.kind
            )));
        }
        map.insert("apiVersion".into(), json!(expected));
        map.insert("kind".into(), json!(rt.kind));
        if map
            .get("metadata")
            .is_some_and(|m| !m.is_object() && !m.is_null())
        {
            return Err(ApiError::bad_request("metadata must be an object"));
        }
        let meta = metadata_mut(&mut body);
        if rt.namespaced {
            let url_ns = namespace.unwrap_or_default();
            match meta.get("namespace").and_then(Value::as_str) {
                Some(ns) if !ns.is_empty() && ns != url_ns => {
                    return Err(ApiError::bad_request(
                        "the namespace of the provided object does not match the namespace sent on the request",
                    ));
                }
                _ => {
                    meta.insert("namespace".into(), json!(url_ns));
                }
            }
        } else {
            meta.remove("namespace");
        }
        Ok(body)
    }

    fn apply_defaults(&mut self, rt: &ResourceType, obj: &mut Value) {
        let needs_ip = rt.is("", "services")
            && obj
                .pointer("/spec/clusterIP")
                .is_none_or(|ip| ip.is_null() || ip == "");
        defaults::apply(rt, obj, self.services_allocated);
        if needs_ip {
            self.services_allocated += 1;
        }
    }

    fn validate_metadata(rt: &ResourceType, name: &str, obj: &Value) -> ApiResult<()> {
        meta::validate_labels_and_annotations(obj).map_err(|(field, why)| {
            ApiError::invalid(&rt.kind, &rt.group, name, field, "FieldValueInvalid", &why)
        })
    }

    fn invalid_name(rt: &ResourceType, name: &str, why: &str) -> ApiError {
        ApiError::invalid(
            &rt.kind,
            &rt.group,
            name,
            "metadata.name",
            "FieldValueInvalid",
            &format!("Invalid value: \"{name}\": {why}"),
        )
    }

    pub fn create(
        &mut self,
        rt: &ResourceType,
        version: &str,
        namespace: Option<&str>,
        body: Value,
        opts: &WriteOptions,
    ) -> ApiResult<Value> {
        let mut obj = Self::normalize_body(rt, version, namespace, body)?;
        let meta = metadata_mut(&mut obj);
        let mut name = meta
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if name.is_empty() {
            let generate = meta
                .get("generateName")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            if generate.is_empty() {
                return Err(ApiError::invalid(
                    &rt.kind,
                    &rt.group,
                    "",
                    "metadata.name",
                    "FieldValueRequired",
                    "Required value: name or generateName is required",
                ));
            }
            name = (0..8)
                .map(|_| format!("{generate}{}", meta::random_suffix()))
                .find(|n| self.store.get(&object_key(rt, namespace, n)).is_none())
                .ok_or_else(|| ApiError::already_exists(&rt.plural, &rt.group, &generate))?;
            meta.insert("name".into(), json!(name));
        }
        if meta
            .get("resourceVersion")
            .and_then(Value::as_str)
            .is_some_and(|rv| !rv.is_empty())
        {
            // The real API server answers this with a 500 too.
            return Err(ApiError::internal(
                "resourceVersion should not be set on objects to be created",
            ));
        }
        meta::validate_name(&name, rt.name_rule)
            .map_err(|why| Self::invalid_name(rt, &name, &why))?;
        Self::validate_metadata(rt, &name, &obj)?;
        validation::check_object(rt, &name, &obj)?;
        if rt.namespaced {
            self.check_namespace_open(rt, namespace.unwrap_or_default(), &name)?;
        }
        if let Some(crd) = &rt.crd
            && self
                .store
                .get(&ObjKey::new(CRD_GROUP, CRD_RESOURCE, "", crd))
                .is_some_and(|c| meta::is_deleting(c))
        {
            return Err(ApiError::method_not_allowed(
                "create not allowed while custom resource definition is terminating",
            ));
        }
        let key = object_key(rt, namespace, &name);

        let meta = metadata_mut(&mut obj);
        meta.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
        meta.insert("creationTimestamp".into(), json!(meta::now_timestamp()));
        for field in [
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "managedFields",
            "selfLink",
            "resourceVersion",
        ] {
            meta.remove(field);
        }
        if rt.has_generation {
            meta.insert("generation".into(), json!(1));
        } else {
            meta.remove("generation");
        }
        if rt.is("", "namespaces") {
            let labels = meta.entry("labels").or_insert_with(|| json!({}));
            if let Some(l) = labels.as_object_mut() {
                l.insert("kubernetes.io/metadata.name".into(), json!(name));
            }
            let map = obj
                .as_object_mut()
                .ok_or_else(|| ApiError::internal("object is not a map"))?;
            let spec = map.entry("spec").or_insert_with(|| json!({}));
            if !spec.is_object() {
                *spec = json!({});
            }
            if let Some(spec) = spec.as_object_mut() {
                spec.entry("finalizers")
                    .or_insert_with(|| json!(["kubernetes"]));
            }
        }
        self.apply_defaults(rt, &mut obj);
        if rt.is("batch", "jobs") {
            defaults::job_selector(&mut obj);
        }
        if rt.status_subresource {
            let map = obj
                .as_object_mut()
                .ok_or_else(|| ApiError::internal("object is not a map"))?;
            match initial_status(rt) {
                Some(s) => map.insert("status".into(), s),
                None => map.remove("status"),
            };
        }
        if rt.is(CRD_GROUP, CRD_RESOURCE) {
            crd_type(&obj)?;
            obj["status"] = crd_status(&obj, None);
            let meta = metadata_mut(&mut obj);
            let fins = meta.entry("finalizers").or_insert_with(|| json!([]));
            if let Some(f) = fins.as_array_mut()
                && !f.iter().any(|x| x == CRD_CLEANUP_FINALIZER)
            {
                f.push(json!(CRD_CLEANUP_FINALIZER));
            }
        }
        // A client's pod (not one of the simulated controllers') goes through
        // the admission plugins a real server runs for pods.
        let admitted_pod =
            (rt.is("", "pods") && opts.requester.is_some()).then(|| namespace.unwrap_or_default());
        if let Some(namespace) = admitted_pod {
            self.admit_new_pod(namespace, &name, &mut obj)?;
        }
        let api_version = rt.api_version(version);
        managed::record(None, &mut obj, &opts.write(&api_version, Subresource::Main));
        if let Some(requester) = &opts.requester {
            self.admit(&Attributes {
                rt,
                version,
                operation: admission::Operation::Create,
                namespace,
                name: &name,
                subresource: None,
                object: Some(&present(rt, version, &obj)),
                old_object: None,
                dry_run: opts.dry_run,
                requester,
            })?;
        }
        if let Some(namespace) = admitted_pod {
            self.charge_quota(namespace, &name, &obj)?;
        }
        // After admission, as the apiserver's storage finds it.
        if self.store.get(&key).is_some() {
            return Err(ApiError::already_exists(&rt.plural, &rt.group, &name));
        }
        if opts.dry_run {
            return Ok(present(rt, version, &obj));
        }
        if rt.is(CRD_GROUP, CRD_RESOURCE) {
            self.registry.register_crd(&obj)?;
        }
        let stored = self.store.put(key, obj);
        self.queue_dangling_owners(&stored);
        self.settle();
        Ok(present(rt, version, &stored))
    }

    #[allow(clippy::too_many_arguments)]
    pub fn replace(
        &mut self,
        rt: &ResourceType,
        version: &str,
        namespace: Option<&str>,
        name: &str,
        body: Value,
        sub: Subresource,
        opts: &WriteOptions,
    ) -> ApiResult<Value> {
        let (key, old) = self.existing(rt, namespace, name)?;
        self.replace_existing(rt, version, &key, old, body, sub, opts)
    }

    /// A replace of an existing object, also the second half of every patch.
    #[allow(clippy::too_many_arguments)]
    fn replace_existing(
        &mut self,
        rt: &ResourceType,
        version: &str,
        key: &ObjKey,
        old: Arc<Value>,
        body: Value,
        sub: Subresource,
        opts: &WriteOptions,
    ) -> ApiResult<Value> {
        let name = key.name.as_str();
        let body = Self::normalize_body(rt, version, Some(&key.namespace), body)?;
        let body_name = meta::name(&body);
        if body_name != name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({name})"
            )));
        }
        let rv = meta::resource_version(&body);
        if !rv.is_empty() && rv != meta::resource_version(&old) {
            return Err(ApiError::conflict(&rt.plural, &rt.group, name));
        }
        let new = match sub {
            Subresource::Main => {
                let mut new = body;
                let old_meta = meta::metadata(&old).cloned().unwrap_or_default();
                let meta = metadata_mut(&mut new);
                for field in [
                    "uid",
                    "creationTimestamp",
                    "deletionTimestamp",
                    "deletionGracePeriodSeconds",
                    "generation",
                ] {
                    match old_meta.get(field) {
                        Some(v) => meta.insert(field.into(), v.clone()),
                        None => meta.remove(field),
                    };
                }
                meta.insert(
                    "resourceVersion".into(),
                    json!(meta::resource_version(&old)),
                );
                let keep_status = rt.status_subresource;
                let keep_spec = rt.is("", "namespaces");
                let map = new
                    .as_object_mut()
                    .ok_or_else(|| ApiError::internal("object is not a map"))?;
                for (field, keep) in [("status", keep_status), ("spec", keep_spec)] {
                    if keep {
                        match old.get(field) {
                            Some(v) => map.insert(field.into(), v.clone()),
                            None => map.remove(field),
                        };
                    }
                }
                if rt.is("", "namespaces") {
                    let labels = metadata_mut(&mut new)
                        .entry("labels")
                        .or_insert_with(|| json!({}));
                    if let Some(l) = labels.as_object_mut() {
                        l.insert("kubernetes.io/metadata.name".into(), json!(name));
                    }
                }
                managed::carry(&old, &mut new);
                validation::carry_allocated(rt, &old, &mut new);
                self.apply_defaults(rt, &mut new);
                validation::check_update(rt, name, &old, &new)?;
                new
            }
            Subresource::Status => {
                let mut new = (*old).clone();
                let map = new
                    .as_object_mut()
                    .ok_or_else(|| ApiError::internal("object is not a map"))?;
                match body.get("status") {
                    Some(s) => map.insert("status".into(), s.clone()),
                    None => map.remove("status"),
                };
                new
            }
        };
        self.commit_update(rt, version, key, &old, new, sub, opts)
    }

    /// Validates and stores an updated object (or drops it when its last finalizer went away).
    #[allow(clippy::too_many_arguments)]
    fn commit_update(
        &mut self,
        rt: &ResourceType,
        version: &str,
        key: &ObjKey,
        old: &Value,
        mut new: Value,
        sub: Subresource,
        opts: &WriteOptions,
    ) -> ApiResult<Value> {
        Self::validate_metadata(rt, &key.name, &new)?;
        validation::check_object(rt, &key.name, &new)?;
        if meta::is_deleting(old) {
            let old_fins = meta::finalizers(old);
            let added: Vec<String> = meta::finalizers(&new)
                .into_iter()
                .filter(|f| !old_fins.contains(f))
                .collect();
            if !added.is_empty() {
                return Err(ApiError::invalid(
                    &rt.kind,
                    &rt.group,
                    &key.name,
                    "metadata.finalizers",
                    "FieldValueForbidden",
                    &format!(
                        "Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers {added:?}"
                    ),
                ));
            }
        }
        if rt.has_generation {
            let old_gen = meta::metadata(old)
                .and_then(|m| m.get("generation"))
                .and_then(Value::as_i64)
                .unwrap_or(1);
            let bump = spec_part(rt, old) != spec_part(rt, &new);
            metadata_mut(&mut new).insert(
                "generation".into(),
                json!(if bump { old_gen + 1 } else { old_gen }),
            );
        }
        if rt.is(CRD_GROUP, CRD_RESOURCE) {
            crd_type(&new)?;
            let status = crd_status(&new, old.get("status"));
            new["status"] = status;
        }
        let api_version = rt.api_version(version);
        managed::record(Some(old), &mut new, &opts.write(&api_version, sub));
        if let Some(requester) = &opts.requester {
            self.admit(&Attributes {
                rt,
                version,
                operation: admission::Operation::Update,
                namespace: Some(key.namespace.as_str()).filter(|ns| !ns.is_empty()),
                name: &key.name,
                subresource: (sub == Subresource::Status).then_some("status"),
                object: Some(&present(rt, version, &new)),
                old_object: Some(&present(rt, version, old)),
                dry_run: opts.dry_run,
                requester,
            })?;
        }
        if new == *old {
            return Ok(present(rt, version, old));
        }
        if opts.dry_run {
            return Ok(present(rt, version, &new));
        }
        if meta::is_deleting(&new) && meta::finalizers(&new).is_empty() {
            self.remove_object(key);
            self.settle();
            return Ok(present(rt, version, &new));
        }
        if rt.is(CRD_GROUP, CRD_RESOURCE) {
            self.registry.register_crd(&new)?;
        }
        let stored = self.store.put(key.clone(), new);
        self.queue_dangling_owners(&stored);
        self.settle();
        Ok(present(rt, version, &stored))
    }

    /// Applies a patch; server-side apply may create the object (the bool says so).
    #[allow(clippy::too_many_arguments)]
    pub fn patch(
        &mut self,
        rt: &ResourceType,
        version: &str,
        namespace: Option<&str>,
        name: &str,
        patch_type: PatchType,
        patch: &Value,
        sub: Subresource,
        opts: &WriteOptions,
    ) -> ApiResult<(Value, bool)> {
        let key = object_key(rt, namespace, name);
        let old = self.store.get(&key).cloned();
        if patch_type == PatchType::Apply {
            return self.apply(rt, version, namespace, &key, old, patch, sub, opts);
        }
        let old = old.ok_or_else(|| ApiError::not_found(&rt.plural, &rt.group, name))?;
        let mut candidate = (*old).clone();
        match patch_type {
            PatchType::Json => patch::json_patch(&mut candidate, patch).map_err(|e| {
                ApiError::invalid(
                    &rt.kind,
                    &rt.group,
                    name,
                    "",
                    "FieldValueInvalid",
                    &format!("the JSON patch could not be applied: {e}"),
                )
            })?,
            _ => {
                if !patch.is_object() {
                    return Err(ApiError::bad_request("a merge patch must be a JSON object"));
                }
                patch::merge_patch(&mut candidate, patch);
            }
        }
        if !candidate.is_object() {
            return Err(ApiError::bad_request(
                "the patched object is not a JSON object",
            ));
        }
        let out = self.replace_existing(rt, version, &key, old, candidate, sub, opts)?;
        Ok((out, false))
    }

    #[allow(clippy::too_many_arguments)]
    fn apply(
        &mut self,
        rt: &ResourceType,
        version: &str,
        namespace: Option<&str>,
        key: &ObjKey,
        old: Option<Arc<Value>>,
        applied: &Value,
        sub: Subresource,
        opts: &WriteOptions,
    ) -> ApiResult<(Value, bool)> {
        let manager = opts
            .field_manager
            .clone()
            .filter(|m| !m.is_empty())
            .ok_or_else(|| {
                ApiError::bad_request("PATCH requests for apply must specify a fieldManager")
            })?;
        if !applied.is_object() {
            return Err(ApiError::bad_request(
                "the applied configuration must be an object",
            ));
        }
        for field in ["apiVersion", "kind"] {
            if applied
                .get(field)
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
            {
                return Err(ApiError::bad_request(format!(
                    "invalid object type: {field} must be set"
                )));
            }
        }
        // The name is checked on the object the apply makes: an applied
        // configuration may leave it out when the object exists (it is
        // merged into the live one, whose name it keeps), not when it
        // creates it.
        let applied_name = meta::name(applied);
        if applied_name != key.name && (old.is_none() || !applied_name.is_empty()) {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({applied_name}) does not match the name on the URL ({})",
                key.name
            )));
        }
        let opts = &WriteOptions {
            field_manager: Some(manager.clone()),
            operation: Operation::Apply,
            ..opts.clone()
        };
        let manager_key = match sub {
            Subresource::Main => manager,
            Subresource::Status => format!("{manager}/status"),
        };
        let result = match old {
            None if sub == Subresource::Status => {
                return Err(ApiError::not_found(&rt.plural, &rt.group, &key.name));
            }
            None => (
                self.create(rt, version, namespace, applied.clone(), opts)?,
                true,
            ),
            Some(old) => {
                let mut candidate = (*old).clone();
                let previous = self.applied.get(&(key.clone(), manager_key.clone()));
                patch::apply(&mut candidate, previous, applied);
                (
                    self.replace_existing(rt, version, key, old, candidate, sub, opts)?,
                    false,
                )
            }
        };
        if !opts.dry_run && self.store.get(key).is_some() {
            self.applied
                .insert((key.clone(), manager_key), applied.clone());
        }
        Ok(result)
    }

    pub fn delete(
        &mut self,
        rt: &ResourceType,
        version: &str,
        namespace: Option<&str>,
        name: &str,
        opts: &DeleteOptions,
    ) -> ApiResult<Value> {
        match self.delete_one(rt, namespace, name, opts)? {
            Deletion::Pending(obj) => Ok(present(rt, version, &obj)),
            Deletion::Removed(last) if rt.return_deleted_object => Ok(present(rt, version, &last)),
            Deletion::Removed(last) => Ok(success_status(
                name,
                &rt.group,
                &rt.plural,
                meta::uid(&last),
            )),
        }
    }

    /// Checks preconditions and starts deleting one object.
    fn delete_one(
        &mut self,
        rt: &ResourceType,
        namespace: Option<&str>,
        name: &str,
        opts: &DeleteOptions,
    ) -> ApiResult<Deletion> {
        let (key, old) = self.existing(rt, namespace, name)?;
        if let Some(uid) = &opts.precondition_uid
            && uid != meta::uid(&old)
        {
            return Err(ApiError::conflict_msg(
                &rt.plural,
                &rt.group,
                name,
                &format!(
                    "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                    meta::uid(&old)
                ),
            ));
        }
        if let Some(rv) = &opts.precondition_rv
            && rv != meta::resource_version(&old)
        {
            return Err(ApiError::conflict_msg(
                &rt.plural,
                &rt.group,
                name,
                &format!(
                    "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
                    meta::resource_version(&old)
                ),
            ));
        }
        if let Some(requester) = &opts.requester {
            let version = rt.versions.first().map(String::as_str).unwrap_or("v1");
            self.admit(&Attributes {
                rt,
                version,
                operation: admission::Operation::Delete,
                namespace,
                name,
                subresource: None,
                object: None,
                old_object: Some(&present(rt, version, &old)),
                dry_run: opts.dry_run,
                requester,
            })?;
        }
        if opts.dry_run {
            return Ok(if meta::finalizers(&old).is_empty() {
                Deletion::Removed(old)
            } else {
                Deletion::Pending(old)
            });
        }
        if opts.propagation == Propagation::Orphan {
            self.orphan_dependents(meta::uid(&old));
        }
        let outcome = self.request_deletion(&key, opts.propagation != Propagation::Orphan);
        self.settle();
        outcome.ok_or_else(|| ApiError::not_found(&rt.plural, &rt.group, name))
    }

    /// `DELETE` on a collection: deletes every matching object, answers with the list of them.
    pub fn delete_collection(
        &mut self,
        rt: &ResourceType,
        version: &str,
        namespace: Option<&str>,
        filter: &Filter,
        opts: &DeleteOptions,
    ) -> ApiResult<Value> {
        let ns = if rt.namespaced { namespace } else { None };
        let targets: Vec<(String, String)> = self
            .store
            .list(&rt.group, &rt.plural, ns)
            .filter(|(_, o)| filter.matches(o))
            .map(|(k, _)| (k.namespace.clone(), k.name.clone()))
            .collect();
        let mut items = Vec::new();
        for (ns, name) in targets {
            let ns = (!ns.is_empty()).then_some(ns);
            match self.delete_one(rt, ns.as_deref(), &name, opts) {
                Ok(Deletion::Pending(obj) | Deletion::Removed(obj)) => {
                    items.push(present(rt, version, &obj))
                }
                Err(e) if e.code == 404 => {}
                Err(e) => return Err(e),
            }
        }
        Ok(json!({
            "kind": rt.list_kind,
            "apiVersion": rt.api_version(version),
            "metadata": {"resourceVersion": self.store.current_rv().to_string()},
            "items": items,
        }))
    }

    /// Starts deleting an object: marks it (finalizers, namespaces) or removes it.
    pub(crate) fn request_deletion(&mut self, key: &ObjKey, cascade: bool) -> Option<Deletion> {
        let old = self.store.get(key).cloned()?;
        let is_namespace = key.group.is_empty() && key.resource == "namespaces";
        if !meta::finalizers(&old).is_empty() || is_namespace {
            if meta::is_deleting(&old) {
                return Some(Deletion::Pending(old));
            }
            let mut new = (*old).clone();
            let meta = metadata_mut(&mut new);
            meta.insert("deletionTimestamp".into(), json!(meta::now_timestamp()));
            meta.insert("deletionGracePeriodSeconds".into(), json!(0));
            let rt = self.registry.by_resource(&key.group, &key.resource);
            if rt.is_some_and(|rt| rt.has_generation) {
                let generation = meta.get("generation").and_then(Value::as_i64).unwrap_or(1);
                meta.insert("generation".into(), json!(generation + 1));
            }
            if is_namespace {
                new["status"] = json!({"phase": "Terminating"});
            }
            return Some(Deletion::Pending(self.store.put(key.clone(), new)));
        }
        let last = self.remove_object(key)?;
        if !cascade {
            self.gc_queue.retain(|u| u != meta::uid(&last));
        }
        Some(Deletion::Removed(last))
    }

    /// Takes an object out of the store for good and queues its dependents for collection.
    pub(crate) fn remove_object(&mut self, key: &ObjKey) -> Option<Arc<Value>> {
        let last = self.store.remove(key)?;
        self.applied.retain(|(k, _), _| k != key);
        self.gc_queue.push(meta::uid(&last).to_string());
        if key.group == CRD_GROUP && key.resource == CRD_RESOURCE {
            self.drop_custom_resources(&last);
            self.registry.unregister_crd(&key.name);
        }
        Some(last)
    }

    /// Removes every object of the type a (now gone) CRD defined.
    fn drop_custom_resources(&mut self, crd: &Value) {
        let (Some(group), Some(plural)) = (
            crd.pointer("/spec/group").and_then(Value::as_str),
            crd.pointer("/spec/names/plural").and_then(Value::as_str),
        ) else {
            return;
        };
        let keys: Vec<ObjKey> = self
            .store
            .list(group, plural, None)
            .map(|(k, _)| k.clone())
            .collect();
        for k in keys {
            self.remove_object(&k);
        }
    }

    /// Drops the history watches replay from (watches from older versions get `410 Gone`).
    pub fn compact(&mut self) {
        self.store.compact();
    }

    /// The names of the containers of a pod, in spec order (init containers last).
    pub fn pod_containers(&self, namespace: &str, pod: &str) -> Option<Vec<String>> {
        let obj = self.store.get(&ObjKey::new("", "pods", namespace, pod))?;
        let names = |field: &str| -> Vec<String> {
            obj.pointer(&format!("/spec/{field}"))
                .and_then(Value::as_array)
                .map(|cs| {
                    cs.iter()
                        .filter_map(|c| c.get("name").and_then(Value::as_str))
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default()
        };
        let mut all = names("containers");
        all.extend(names("initContainers"));
        Some(all)
    }

    pub(crate) fn put_raw(&mut self, key: ObjKey, obj: Value) {
        self.store.put(key, obj);
    }

    /// Objects of one resource (any namespace) that satisfy `pred`.
    pub(crate) fn of_resource_where(
        &self,
        group: &str,
        resource: &str,
        pred: impl Fn(&Value) -> bool,
    ) -> Vec<(ObjKey, Arc<Value>)> {
        self.store
            .list(group, resource, None)
            .filter(|(_, o)| pred(o))
            .map(|(k, o)| (k.clone(), o.clone()))
            .collect()
    }

    pub(crate) fn objects_where(
        &self,
        pred: impl Fn(&ObjKey, &Value) -> bool,
    ) -> Vec<(ObjKey, Arc<Value>)> {
        self.store
            .all()
            .filter(|(k, o)| pred(k, o))
            .map(|(k, o)| (k.clone(), o.clone()))
            .collect()
    }
}

/// What a delete did.
pub(crate) enum Deletion {
    /// The object stays, marked for deletion, until its finalizers are gone.
    Pending(Arc<Value>),
    /// The object is gone; this was its last state.
    Removed(Arc<Value>),
}
