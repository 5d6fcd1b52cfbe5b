//! Who is asking, and whether they may: bearer tokens, ServiceAccount tokens
//! from the TokenRequest API, and RBAC evaluated from the ClusterRoles and
//! ClusterRoleBindings stored like any other object — as far as a real API
//! server's behaviour is needed to prove a least-privilege role, no further.
//!
//! - The kubeconfig's token ([`ADMIN_TOKEN`]) may do everything (a real
//!   cluster's `system:masters`), and so may a request without a token:
//!   kubectl (client-go) sends no bearer token over plain HTTP, which is all
//!   the stand-in speaks, so kubectl against the stand-in is its
//!   administrator. A real API server would call it `system:anonymous`.
//! - `POST .../serviceaccounts/{name}/token` issues a token for that
//!   ServiceAccount, valid until it expires or the ServiceAccount is deleted.
//!   Its requests are authorized by the ClusterRoles that ClusterRoleBindings
//!   grant to the ServiceAccount (subjects of kind `ServiceAccount`, or the
//!   `Group`s every ServiceAccount is in), and, in a namespace, by the Roles
//!   (of that namespace) and ClusterRoles that RoleBindings of that
//!   namespace grant it there (the controller's Lease).
//! - An unknown or expired token: 401.
//! - Discovery, `/version` and the health paths are open to every caller, as
//!   the bootstrap roles `system:discovery` and `system:public-info-viewer`
//!   make them on a real cluster.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use axum::http::{HeaderMap, header};
use serde_json::{Value, json};

use crate::meta;
use crate::status::{ApiError, ApiResult, qualified};
use crate::store::ObjKey;
use crate::verbs::State;

/// The token of the kubeconfig the stand-in hands out: full access.
pub const ADMIN_TOKEN: &str = "standin-token";

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// The shortest token a TokenRequest may ask for, as on a real API server.
const MIN_TOKEN_SECONDS: i64 = 600;
/// What a TokenRequest gets when it asks for no particular lifetime.
const DEFAULT_TOKEN_SECONDS: i64 = 3600;
/// The longest: 2^32 seconds, the real API server's bound.
const MAX_TOKEN_SECONDS: i64 = 1 << 32;

/// Who a request comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Identity {
    Admin,
    ServiceAccount { namespace: String, name: String },
}

impl Identity {
    /// The user name a real API server gives this identity.
    pub fn user(&self) -> String {
        match self {
            Identity::Admin => "kubernetes-admin".to_string(),
            Identity::ServiceAccount { namespace, name } => {
                format!("system:serviceaccount:{namespace}:{name}")
            }
        }
    }

    pub fn groups(&self) -> Vec<String> {
        match self {
            Identity::Admin => vec!["system:masters".into(), "system:authenticated".into()],
            Identity::ServiceAccount { namespace, .. } => vec![
                "system:serviceaccounts".into(),
                format!("system:serviceaccounts:{namespace}"),
                "system:authenticated".into(),
            ],
        }
    }

    /// Whether a binding's subject names this identity.
    fn is(&self, subject: &Value) -> bool {
        let field = |name: &str| subject.get(name).and_then(Value::as_str).unwrap_or("");
        match field("kind") {
            "ServiceAccount" => matches!(self, Identity::ServiceAccount { namespace, name }
                if field("name") == name && field("namespace") == namespace),
            "User" => field("name") == self.user(),
            "Group" => self.groups().iter().any(|group| group == field("name")),
            _ => false,
        }
    }
}

/// A token issued through the TokenRequest API.
#[derive(Debug, Clone)]
struct Issued {
    namespace: String,
    name: String,
    /// The ServiceAccount's uid: the token dies with it, even if one of the
    /// same name comes back.
    uid: String,
    expires: jiff::Timestamp,
}

/// The tokens issued so far (in memory only: they do not survive a restart).
#[derive(Debug, Clone, Default)]
pub struct Tokens {
    issued: Arc<Mutex<HashMap<String, Issued>>>,
}

impl Tokens {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Issued>> {
        self.issued
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The identity of a request, from its `Authorization` header.
    pub fn authenticate(&self, state: &State, headers: &HeaderMap) -> ApiResult<Identity> {
        let Some(value) = headers.get(header::AUTHORIZATION) else {
            return Ok(Identity::Admin);
        };
        let token = value
            .to_str()
            .ok()
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim)
            .ok_or_else(unauthorized)?;
        if token == ADMIN_TOKEN {
            return Ok(Identity::Admin);
        }
        let issued = self.lock().get(token).cloned().ok_or_else(unauthorized)?;
        let account = state.store.get(&ObjKey::new(
            "",
            "serviceaccounts",
            &issued.namespace,
            &issued.name,
        ));
        let alive = account.is_some_and(|a| {
            a.pointer("/metadata/uid").and_then(Value::as_str) == Some(issued.uid.as_str())
        });
        if !alive || jiff::Timestamp::now() >= issued.expires {
            return Err(unauthorized());
        }
        Ok(Identity::ServiceAccount {
            namespace: issued.namespace,
            name: issued.name,
        })
    }

    /// `POST /api/v1/namespaces/{ns}/serviceaccounts/{name}/token`: a
    /// `TokenRequest` answered with a token for that ServiceAccount.
    pub fn request(
        &self,
        state: &State,
        namespace: &str,
        name: &str,
        body: &Value,
    ) -> ApiResult<Value> {
        let account = state
            .store
            .get(&ObjKey::new("", "serviceaccounts", namespace, name))
            .ok_or_else(|| ApiError::not_found("serviceaccounts", "", name))?;
        let uid = account
            .pointer("/metadata/uid")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let spec = body.get("spec").cloned().unwrap_or_else(|| json!({}));
        if spec.get("boundObjectRef").is_some_and(|r| !r.is_null()) {
            return Err(ApiError::bad_request(
                "the stand-in does not bind tokens to objects (spec.boundObjectRef)",
            ));
        }
        let seconds = match spec.get("expirationSeconds") {
            None | Some(Value::Null) => DEFAULT_TOKEN_SECONDS,
            Some(v) => v.as_i64().ok_or_else(|| {
                ApiError::bad_request("spec.expirationSeconds must be an integer")
            })?,
        };
        let too = |what: &str| {
            ApiError::invalid(
                "TokenRequest",
                "authentication.k8s.io",
                name,
                "spec.expirationSeconds",
                "FieldValueInvalid",
                &format!("Invalid value: {seconds}: may not specify a duration {what}"),
            )
        };
        if seconds < MIN_TOKEN_SECONDS {
            return Err(too("less than 10 minutes"));
        }
        if seconds > MAX_TOKEN_SECONDS {
            return Err(too("larger than 2^32 seconds"));
        }
        // Whole seconds, as Kubernetes writes timestamps.
        let expires = jiff::Timestamp::from_second(jiff::Timestamp::now().as_second() + seconds)
            .map_err(|e| ApiError::internal(e.to_string()))?;
        let token = format!(
            "standin-sa-{}{}",
            uuid::Uuid::new_v4().simple(),
            uuid::Uuid::new_v4().simple()
        );
        self.lock().insert(
            token.clone(),
            Issued {
                namespace: namespace.to_string(),
                name: name.to_string(),
                uid,
                expires,
            },
        );
        let audiences = spec
            .get("audiences")
            .and_then(Value::as_array)
            .filter(|a| !a.is_empty())
            .cloned()
            .unwrap_or_else(|| vec![json!("https://kubernetes.default.svc.cluster.local")]);
        Ok(json!({
            "kind": "TokenRequest",
            "apiVersion": "authentication.k8s.io/v1",
            "metadata": {"name": name, "namespace": namespace, "creationTimestamp": null},
            "spec": {"audiences": audiences, "expirationSeconds": seconds, "boundObjectRef": null},
            "status": {"token": token, "expirationTimestamp": expires.to_string()},
        }))
    }
}

fn unauthorized() -> ApiError {
    ApiError::new(401, "Unauthorized", "Unauthorized")
}

/// What a request does, in RBAC's terms.
#[derive(Debug, Clone)]
pub enum Action<'a> {
    Resource {
        verb: &'a str,
        group: &'a str,
        resource: &'a str,
        subresource: Option<&'a str>,
        namespace: Option<&'a str>,
        name: Option<&'a str>,
    },
    NonResource {
        verb: &'a str,
        path: &'a str,
    },
}

/// A permission a ServiceAccount used: a request RBAC let through.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RbacUse {
    /// `system:serviceaccount:{namespace}:{name}`.
    pub user: String,
    pub verb: String,
    /// Empty for the core group and for paths.
    pub api_group: String,
    /// `pods`, `pods/log`, or a path (`/version`).
    pub resource: String,
}

/// The permissions ServiceAccounts used so far, so that tests can tell a
/// role's grants that nothing needs.
#[derive(Debug, Clone, Default)]
pub struct Uses {
    seen: Arc<Mutex<BTreeSet<RbacUse>>>,
}

impl Uses {
    fn record(&self, identity: &Identity, action: &Action<'_>) {
        let (verb, api_group, resource) = match *action {
            Action::NonResource { verb, path } => (verb, "", path.to_string()),
            Action::Resource {
                verb,
                group,
                resource,
                subresource,
                ..
            } => (verb, group, combined(resource, subresource)),
        };
        self.seen
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .insert(RbacUse {
                user: identity.user(),
                verb: verb.to_string(),
                api_group: api_group.to_string(),
                resource,
            });
    }

    pub fn all(&self) -> Vec<RbacUse> {
        self.seen
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .iter()
            .cloned()
            .collect()
    }
}

/// Paths of `system:discovery` and `system:public-info-viewer`, which a real
/// cluster binds to every authenticated caller.
const DISCOVERY_PATHS: &[&str] = &[
    "/api",
    "/api/*",
    "/apis",
    "/apis/*",
    "/openapi",
    "/openapi/*",
    "/healthz",
    "/livez",
    "/readyz",
    "/version",
    "/version/",
];

/// Lets the request through, or refuses it with the 403 a real API server
/// sends. What a ServiceAccount is let do is recorded in `uses`.
pub fn authorize(
    state: &State,
    uses: &Uses,
    identity: &Identity,
    action: &Action<'_>,
) -> ApiResult<()> {
    if allows(state, identity, action) {
        if *identity != Identity::Admin {
            uses.record(identity, action);
        }
        Ok(())
    } else {
        Err(forbidden(identity, action))
    }
}

/// Whether RBAC lets `identity` do `action` (nothing recorded).
fn allows(state: &State, identity: &Identity, action: &Action<'_>) -> bool {
    if *identity == Identity::Admin || discovery(action) {
        return true;
    }
    let namespace = match *action {
        Action::Resource { namespace, .. } => namespace,
        Action::NonResource { .. } => None,
    };
    // A ClusterRoleBinding grants everywhere; a RoleBinding only in its
    // namespace, a Role of that namespace or a ClusterRole.
    let bindings = state
        .store
        .list(RBAC_GROUP, "clusterrolebindings", None)
        .map(|(_, binding)| (binding, ""))
        .chain(namespace.into_iter().flat_map(|namespace| {
            state
                .store
                .list(RBAC_GROUP, "rolebindings", Some(namespace))
                .map(move |(_, binding)| (binding, namespace))
        }));
    bindings
        .filter(|(binding, _)| {
            binding
                .get("subjects")
                .and_then(Value::as_array)
                .is_some_and(|subjects| subjects.iter().any(|s| identity.is(s)))
        })
        .filter_map(|(binding, namespace)| role_of(state, binding, namespace))
        .flat_map(|role| {
            role.get("rules")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        })
        .any(|rule| rule_allows(&rule, action))
}

/// The Role or ClusterRole a binding of `namespace` (empty: a
/// ClusterRoleBinding) refers to, if it exists.
fn role_of(state: &State, binding: &Value, namespace: &str) -> Option<Arc<Value>> {
    let name = binding.pointer("/roleRef/name").and_then(Value::as_str)?;
    match binding.pointer("/roleRef/kind").and_then(Value::as_str)? {
        "ClusterRole" => state
            .store
            .get(&ObjKey::new(RBAC_GROUP, "clusterroles", "", name))
            .cloned(),
        "Role" if !namespace.is_empty() => state
            .store
            .get(&ObjKey::new(RBAC_GROUP, "roles", namespace, name))
            .cloned(),
        _ => None,
    }
}

/// RBAC's escalation check of a RoleBinding (in `namespace`) or
/// ClusterRoleBinding (`None`) being written: its role may be bound only by
/// whoever may `bind` that role, or already holds every permission it
/// grants there (a rule with a wildcard is held only through the same
/// wildcard). Refused as the apiserver does: 403 Forbidden, "attempting to
/// grant RBAC permissions not currently held".
pub fn may_bind(
    state: &State,
    uses: &Uses,
    identity: &Identity,
    namespace: Option<&str>,
    binding: &Value,
) -> ApiResult<()> {
    if *identity == Identity::Admin {
        return Ok(());
    }
    let role_kind = binding
        .pointer("/roleRef/kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let role_name = binding
        .pointer("/roleRef/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let bind = Action::Resource {
        verb: "bind",
        group: RBAC_GROUP,
        resource: if role_kind == "Role" {
            "roles"
        } else {
            "clusterroles"
        },
        subresource: None,
        namespace,
        name: Some(role_name),
    };
    if allows(state, identity, &bind) {
        uses.record(identity, &bind);
        return Ok(());
    }
    let held = role_of(state, binding, namespace.unwrap_or_default()).is_some_and(|role| {
        role.get("rules")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .all(|rule| rule_held(state, identity, namespace, rule))
    });
    if held {
        return Ok(());
    }
    let (resource, what) = match namespace {
        Some(_) => ("rolebindings", "RoleBinding"),
        None => ("clusterrolebindings", "ClusterRoleBinding"),
    };
    let name = meta::name(binding);
    Err(ApiError::forbidden(
        resource,
        RBAC_GROUP,
        name,
        format!(
            "{} \"{name}\" is forbidden: user \"{}\" (groups={:?}) is attempting to grant \
             RBAC permissions not currently held ({what} of {role_kind} {role_name})",
            qualified(resource, RBAC_GROUP),
            identity.user(),
            identity.groups(),
        ),
    ))
}

/// Whether `identity` holds everything one rule grants, in `namespace`.
fn rule_held(state: &State, identity: &Identity, namespace: Option<&str>, rule: &Value) -> bool {
    let list = |field: &str| strings(rule, field);
    let names = list("resourceNames");
    let names: Vec<Option<&str>> = if names.is_empty() {
        vec![None]
    } else {
        names.iter().map(|n| Some(n.as_str())).collect()
    };
    let paths = list("nonResourceURLs");
    list("verbs").iter().all(|verb| {
        paths.iter().all(|path| {
            allows(
                state,
                identity,
                &Action::NonResource {
                    verb,
                    path: path.as_str(),
                },
            )
        }) && list("apiGroups").iter().all(|group| {
            list("resources").iter().all(|resource| {
                let (resource, subresource) = match resource.split_once('/') {
                    Some((resource, sub)) => (resource, Some(sub)),
                    None => (resource.as_str(), None),
                };
                names.iter().all(|name| {
                    allows(
                        state,
                        identity,
                        &Action::Resource {
                            verb,
                            group,
                            resource,
                            subresource,
                            namespace,
                            name: *name,
                        },
                    )
                })
            })
        })
    })
}

fn discovery(action: &Action<'_>) -> bool {
    matches!(action, Action::NonResource { verb: "get", path }
        if DISCOVERY_PATHS.iter().any(|pattern| path_matches(pattern, path)))
}

fn path_matches(pattern: &str, path: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => path.starts_with(prefix),
        None => pattern == path,
    }
}

fn strings(rule: &Value, field: &str) -> Vec<String> {
    crate::meta::strings(rule.get(field))
}

/// `pods`, or `pods/log` for a subresource: how RBAC names what a request is for.
fn combined(resource: &str, subresource: Option<&str>) -> String {
    match subresource {
        Some(sub) => format!("{resource}/{sub}"),
        None => resource.to_string(),
    }
}

/// RBAC's rule matching (`rbac/v1` helpers of the real authorizer).
fn rule_allows(rule: &Value, action: &Action<'_>) -> bool {
    let has =
        |field: &str, wanted: &str| strings(rule, field).iter().any(|v| v == "*" || v == wanted);
    match *action {
        Action::NonResource { verb, path } => {
            has("verbs", verb)
                && strings(rule, "nonResourceURLs")
                    .iter()
                    .any(|pattern| pattern == "*" || path_matches(pattern, path))
        }
        Action::Resource {
            verb,
            group,
            resource,
            subresource,
            name,
            ..
        } => {
            let combined = combined(resource, subresource);
            let resource_matches = strings(rule, "resources").iter().any(|r| {
                r == "*"
                    || *r == combined
                    || subresource.is_some_and(|sub| *r == format!("*/{sub}"))
            });
            let names = strings(rule, "resourceNames");
            let name_matches =
                names.is_empty() || name.is_some_and(|n| names.iter().any(|v| v == n));
            has("verbs", verb) && has("apiGroups", group) && resource_matches && name_matches
        }
    }
}

/// An update or apply that would create the object, refused for want of
/// `create`: a real API server (its create check in the update handler)
/// says no more than `configmaps "applied" is forbidden: `.
pub fn forbidden_to_create(group: &str, resource: &str, name: &str) -> ApiError {
    let message = format!("{} \"{name}\" is forbidden: ", qualified(resource, group));
    ApiError::forbidden(resource, group, name, message)
}

/// The real API server's `Forbidden`, word for word.
fn forbidden(identity: &Identity, action: &Action<'_>) -> ApiError {
    let user = identity.user();
    match *action {
        Action::NonResource { verb, path } => ApiError::new(
            403,
            "Forbidden",
            format!("forbidden: User \"{user}\" cannot {verb} path \"{path}\""),
        ),
        Action::Resource {
            verb,
            group,
            resource,
            subresource,
            namespace,
            name,
        } => {
            let combined = combined(resource, subresource);
            let scope = match namespace {
                Some(ns) => format!("in the namespace \"{ns}\""),
                None => "at the cluster scope".to_string(),
            };
            let why = format!(
                "User \"{user}\" cannot {verb} resource \"{combined}\" in API group \"{group}\" {scope}"
            );
            let what = qualified(resource, group);
            let message = match name {
                Some(name) => format!("{what} \"{name}\" is forbidden: {why}"),
                None => format!("{what} is forbidden: {why}"),
            };
            ApiError::forbidden(resource, group, name.unwrap_or_default(), message)
        }
    }
}
