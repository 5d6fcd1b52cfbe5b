//! Validating admission policies (`admissionregistration.k8s.io/v1`
//! `ValidatingAdmissionPolicy` and `ValidatingAdmissionPolicyBinding`,
//! Kubernetes 1.30), evaluated as a real API server's admission does, with
//! the CEL of the stored policies themselves (the `cel` crate): a write is
//! checked after RBAC let it through and after the object it would store is
//! complete, before anything is stored (dry runs included), against every
//! policy whose `matchConstraints` match it, once per binding of that
//! policy whose `matchResources` match too.
//!
//! What the expressions see, as the Kubernetes documentation states it
//! (Validating Admission Policy, "Validation Expression"):
//! - `object`: the object the write would store; null for a DELETE;
//! - `oldObject`: the stored object; null for a CREATE;
//! - `request`: the admission request's attributes (`kind`, `resource`,
//!   `subResource`, `requestKind`, `requestResource`, `name`, `namespace`,
//!   `operation`, `userInfo` with `username` and `groups`, `dryRun`),
//!   empty strings left out as the apiserver's JSON leaves them out;
//! - `namespaceObject`: the namespace of a namespaced object, as the
//!   apiserver trims it (`CreateNamespaceObject`: its name, uid, labels,
//!   annotations, finalizers, timestamps, spec and status; no owner
//!   references); null for a cluster-scoped object and for a Namespace;
//! - `params`: null (`paramKind` is not supported: such a policy fails as a
//!   misconfigured one does);
//! - `variables`: the policy's `variables`, in order, each seeing those
//!   before it; one that fails is left out, so an expression using it fails.
//!
//! Outcomes, as the apiserver's (`validating/dispatcher.go`):
//! - every `matchCondition` true, or the policy is skipped (one false skips
//!   it whatever the others do; an error with `failurePolicy: Fail` denies);
//! - a validation false denies with its `reason` (default `Invalid`) and
//!   that reason's code (`Forbidden` 403, `Invalid` 422, `Unauthorized` 401,
//!   `RequestEntityTooLarge` 413); one that fails to evaluate denies with
//!   `Invalid` unless `failurePolicy` is `Ignore`;
//! - the answer: `<resource>.<group> "<name>" is forbidden:
//!   ValidatingAdmissionPolicy '<policy>' with binding '<binding>' denied
//!   request: <message>` (the validation's `message`, else `failed
//!   expression: <expression>`), its details naming the object and holding
//!   one cause with that message;
//! - only the bindings' `Deny` action refuses (`Warn` and `Audit` change
//!   nothing here); the policies' own types are never subject to policies.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value, json};

use crate::meta;
use crate::rbac::Identity;
use crate::registry::ResourceType;
use crate::selector::LabelSelector;
use crate::status::{ApiError, ApiResult, Details, qualified};
use crate::verbs::State;

pub const GROUP: &str = "admissionregistration.k8s.io";
pub const POLICIES: &str = "validatingadmissionpolicies";
pub const BINDINGS: &str = "validatingadmissionpolicybindings";

/// Who makes a request, as admission sees it (`request.userInfo`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requester {
    pub username: String,
    pub groups: Vec<String>,
}

impl From<&Identity> for Requester {
    fn from(identity: &Identity) -> Self {
        Requester {
            username: identity.user(),
            groups: identity.groups(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Create,
    Update,
    Delete,
}

impl Operation {
    fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
        }
    }
}

/// One write, as admission is asked about it.
pub struct Attributes<'a> {
    pub rt: &'a ResourceType,
    pub version: &'a str,
    pub operation: Operation,
    pub namespace: Option<&'a str>,
    pub name: &'a str,
    pub subresource: Option<&'a str>,
    pub object: Option<&'a Value>,
    pub old_object: Option<&'a Value>,
    pub dry_run: bool,
    pub requester: &'a Requester,
}

/// Policies compiled once per version of each (by uid and resourceVersion).
#[derive(Default)]
pub struct Cache {
    compiled: Mutex<HashMap<(String, String), Arc<Compiled>>>,
}

/// A policy's expressions, parsed.
struct Compiled {
    failure_policy_ignore: bool,
    /// Set when the policy cannot be used as written (an expression that
    /// does not parse, a `paramKind`): every request it matches fails.
    misconfigured: Option<String>,
    match_conditions: Vec<(String, cel::Program)>,
    variables: Vec<(String, cel::Program)>,
    validations: Vec<Validation>,
}

struct Validation {
    expression: String,
    program: cel::Program,
    message: Option<String>,
    reason: Option<String>,
}

fn compile(policy: &Value) -> Compiled {
    let spec = policy.get("spec").cloned().unwrap_or_default();
    let mut problems = Vec::new();
    let mut program = |field: &str, expression: &str| match cel::Program::compile(expression) {
        Ok(program) => Some(program),
        Err(error) => {
            problems.push(format!("{field}: {error}"));
            None
        }
    };
    let text = |item: &Value, field: &str| {
        item.get(field)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let items = |field: &str| {
        spec.get(field)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let mut match_conditions = Vec::new();
    for (i, condition) in items("matchConditions").iter().enumerate() {
        let expression = text(condition, "expression");
        if let Some(p) = program(&format!("spec.matchConditions[{i}]"), &expression) {
            match_conditions.push((text(condition, "name"), p));
        }
    }
    let mut variables = Vec::new();
    for (i, variable) in items("variables").iter().enumerate() {
        let expression = text(variable, "expression");
        if let Some(p) = program(&format!("spec.variables[{i}]"), &expression) {
            variables.push((text(variable, "name"), p));
        }
    }
    let mut validations = Vec::new();
    for (i, validation) in items("validations").iter().enumerate() {
        let expression = text(validation, "expression");
        if let Some(p) = program(&format!("spec.validations[{i}]"), &expression) {
            validations.push(Validation {
                expression,
                program: p,
                message: Some(text(validation, "message")).filter(|m| !m.is_empty()),
                reason: Some(text(validation, "reason")).filter(|r| !r.is_empty()),
            });
        }
    }
    if spec.get("paramKind").is_some_and(|kind| !kind.is_null()) {
        problems.push("paramKind: the stand-in does not support parameters".into());
    }
    Compiled {
        failure_policy_ignore: spec.get("failurePolicy").and_then(Value::as_str) == Some("Ignore"),
        misconfigured: (!problems.is_empty()).then(|| problems.join("; ")),
        match_conditions,
        variables,
        validations,
    }
}

/// A policy's decision on one request.
struct Denial {
    reason: &'static str,
    message: String,
}

fn reason_of(reason: Option<&str>) -> &'static str {
    match reason {
        Some("Forbidden") => "Forbidden",
        Some("Unauthorized") => "Unauthorized",
        Some("RequestEntityTooLarge") => "RequestEntityTooLarge",
        _ => "Invalid",
    }
}

fn code_of(reason: &str) -> u16 {
    match reason {
        "Forbidden" => 403,
        "Unauthorized" => 401,
        "RequestEntityTooLarge" => 413,
        _ => 422,
    }
}

impl State {
    /// Lets a write through the stored validating admission policies, or
    /// refuses it as the apiserver does.
    pub(crate) fn admit(&self, attributes: &Attributes<'_>) -> ApiResult<()> {
        if attributes.rt.group == GROUP {
            return Ok(());
        }
        let policies: Vec<Arc<Value>> = self
            .store
            .list(GROUP, POLICIES, None)
            .map(|(_, policy)| policy.clone())
            .collect();
        if policies.is_empty() {
            return Ok(());
        }
        let bindings: Vec<Arc<Value>> = self
            .store
            .list(GROUP, BINDINGS, None)
            .map(|(_, binding)| binding.clone())
            .collect();
        let namespace_object = self.namespace_object(attributes);
        for policy in &policies {
            let spec = policy.get("spec").cloned().unwrap_or_default();
            if !constraints_match(spec.get("matchConstraints"), attributes, &namespace_object) {
                continue;
            }
            let policy_name = meta::name(policy);
            let compiled = self.admission.compiled(policy);
            for binding in bindings.iter().filter(|binding| {
                binding.pointer("/spec/policyName").and_then(Value::as_str) == Some(policy_name)
            }) {
                let binding_spec = binding.get("spec").cloned().unwrap_or_default();
                if !constraints_match(
                    binding_spec.get("matchResources"),
                    attributes,
                    &namespace_object,
                ) {
                    continue;
                }
                let denies = meta::strings(binding_spec.get("validationActions"))
                    .iter()
                    .any(|action| action == "Deny");
                if !denies {
                    continue;
                }
                if let Some(denial) = decide(&compiled, attributes, &namespace_object) {
                    return Err(refusal(
                        attributes,
                        policy_name,
                        meta::name(binding),
                        denial,
                    ));
                }
            }
        }
        Ok(())
    }

    /// `namespaceObject`: the request's namespace, trimmed as the apiserver
    /// trims it; null for a cluster-scoped object and for a Namespace.
    fn namespace_object(&self, attributes: &Attributes<'_>) -> Value {
        let Some(namespace) = attributes.namespace.filter(|_| attributes.rt.namespaced) else {
            return Value::Null;
        };
        let Some(found) =
            self.store
                .get(&crate::store::ObjKey::new("", "namespaces", "", namespace))
        else {
            return Value::Null;
        };
        let mut metadata = Map::new();
        if let Some(stored) = meta::metadata(found) {
            for field in [
                "name",
                "generateName",
                "namespace",
                "uid",
                "resourceVersion",
                "generation",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "labels",
                "annotations",
                "finalizers",
            ] {
                if let Some(value) = stored.get(field) {
                    metadata.insert(field.into(), value.clone());
                }
            }
        }
        let mut trimmed = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": metadata});
        for field in ["spec", "status"] {
            if let Some(value) = found.get(field) {
                trimmed[field] = value.clone();
            }
        }
        trimmed
    }
}

impl Cache {
    fn compiled(&self, policy: &Value) -> Arc<Compiled> {
        let key = (
            meta::uid(policy).to_string(),
            meta::resource_version(policy).to_string(),
        );
        let mut compiled = self
            .compiled
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        compiled.retain(|(uid, _), _| *uid != key.0 || key.1.is_empty());
        compiled
            .entry(key)
            .or_insert_with(|| Arc::new(compile(policy)))
            .clone()
    }
}

/// `request`, as the apiserver's `CreateAdmissionRequest` makes it.
fn request_of(attributes: &Attributes<'_>) -> Value {
    let rt = attributes.rt;
    let kind = json!({"group": rt.group, "version": attributes.version, "kind": rt.kind});
    let resource = json!({"group": rt.group, "version": attributes.version, "resource": rt.plural});
    let mut request = json!({
        "uid": uuid::Uuid::new_v4().to_string(),
        "kind": kind,
        "resource": resource,
        "requestKind": kind,
        "requestResource": resource,
        "operation": attributes.operation.as_str(),
        "userInfo": {
            "username": attributes.requester.username,
            "groups": attributes.requester.groups,
        },
        "dryRun": attributes.dry_run,
    });
    let mut optional = |field: &str, value: Option<&str>| {
        if let Some(value) = value.filter(|v| !v.is_empty()) {
            request[field] = json!(value);
        }
    };
    optional("name", Some(attributes.name));
    optional("namespace", attributes.namespace);
    optional("subResource", attributes.subresource);
    optional("requestSubResource", attributes.subresource);
    request
}

fn to_cel(value: &Value) -> cel::Value {
    cel::to_value(value).unwrap_or(cel::Value::Null)
}

/// Runs a policy's expressions on one request: its denial, if it denies.
fn decide(
    compiled: &Compiled,
    attributes: &Attributes<'_>,
    namespace_object: &Value,
) -> Option<Denial> {
    let fail = |message: String| {
        (!compiled.failure_policy_ignore).then_some(Denial {
            reason: "Invalid",
            message,
        })
    };
    if let Some(problem) = &compiled.misconfigured {
        return fail(format!("failed to configure policy: {problem}"));
    }
    let mut context = cel::Context::default();
    let null = Value::Null;
    context.add_variable_from_value("object", to_cel(attributes.object.unwrap_or(&null)));
    context.add_variable_from_value("oldObject", to_cel(attributes.old_object.unwrap_or(&null)));
    context.add_variable_from_value("request", to_cel(&request_of(attributes)));
    context.add_variable_from_value("namespaceObject", to_cel(namespace_object));
    context.add_variable_from_value("params", cel::Value::Null);
    // Match conditions: one false skips the policy; else an error fails it.
    let mut condition_error = None;
    for (name, program) in &compiled.match_conditions {
        match program.execute(&context) {
            Ok(cel::Value::Bool(true)) => {}
            Ok(cel::Value::Bool(false)) => return None,
            Ok(other) => {
                condition_error.get_or_insert(format!(
                    "matchCondition '{name}': expression evaluated to {other:?}, not a bool"
                ));
            }
            Err(error) => {
                condition_error.get_or_insert(format!(
                    "matchCondition '{name}' resulted in error: {error}"
                ));
            }
        }
    }
    if let Some(error) = condition_error {
        return fail(error);
    }
    let mut variables: HashMap<String, cel::Value> = HashMap::new();
    for (name, program) in &compiled.variables {
        context.add_variable_from_value("variables", cel::Value::from(variables.clone()));
        if let Ok(value) = program.execute(&context) {
            variables.insert(name.clone(), value);
        }
    }
    context.add_variable_from_value("variables", cel::Value::from(variables));
    for validation in &compiled.validations {
        match validation.program.execute(&context) {
            Ok(cel::Value::Bool(true)) => {}
            Ok(cel::Value::Bool(false)) => {
                return Some(Denial {
                    reason: reason_of(validation.reason.as_deref()),
                    message: validation
                        .message
                        .clone()
                        .unwrap_or_else(|| format!("failed expression: {}", validation.expression)),
                });
            }
            Ok(other) => {
                if let Some(denial) = fail(format!(
                    "expression '{}' resulted in error: expected a bool, got {other:?}",
                    validation.expression
                )) {
                    return Some(denial);
                }
            }
            Err(error) => {
                if let Some(denial) = fail(format!(
                    "expression '{}' resulted in error: {error}",
                    validation.expression
                )) {
                    return Some(denial);
                }
            }
        }
    }
    None
}

/// The apiserver's answer to a denied request.
fn refusal(attributes: &Attributes<'_>, policy: &str, binding: &str, denial: Denial) -> ApiError {
    let rt = attributes.rt;
    let denied = format!(
        "ValidatingAdmissionPolicy '{policy}' with binding '{binding}' denied request: {}",
        denial.message
    );
    let resource = qualified(&rt.plural, &rt.group);
    let message = if attributes.name.is_empty() {
        format!("{resource} is forbidden: {denied}")
    } else {
        format!("{resource} \"{}\" is forbidden: {denied}", attributes.name)
    };
    let mut error = ApiError::new(code_of(denial.reason), denial.reason, message);
    error.details = Some(Box::new(Details {
        name: attributes.name.to_string(),
        group: rt.group.clone(),
        kind: rt.plural.clone(),
        causes: vec![json!({ "message": denied })],
    }));
    error
}

/// Whether `matchConstraints` (or a binding's `matchResources`) take the
/// request: its resource rules (less the excluded ones), namespace selector
/// and object selector. Absent: everything.
fn constraints_match(
    constraints: Option<&Value>,
    attributes: &Attributes<'_>,
    namespace_object: &Value,
) -> bool {
    let Some(constraints) = constraints.filter(|c| c.is_object()) else {
        return true;
    };
    let rules = |field: &str| {
        constraints
            .get(field)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let included = rules("resourceRules");
    if constraints.get("resourceRules").is_some()
        && !included.iter().any(|rule| rule_matches(rule, attributes))
    {
        return false;
    }
    if rules("excludeResourceRules")
        .iter()
        .any(|rule| rule_matches(rule, attributes))
    {
        return false;
    }
    let selected = |field: &str, object: &Value| {
        constraints
            .get(field)
            .and_then(selector_of)
            .is_none_or(|selector| selector.matches(object))
    };
    // A Namespace is selected by its own labels; a cluster-scoped object by
    // every namespace selector.
    let namespace_selected = if attributes.rt.is("", "namespaces") {
        selected(
            "namespaceSelector",
            attributes
                .object
                .or(attributes.old_object)
                .unwrap_or(&Value::Null),
        )
    } else {
        namespace_object.is_null() || selected("namespaceSelector", namespace_object)
    };
    let object_selected = [attributes.object, attributes.old_object]
        .into_iter()
        .flatten()
        .any(|object| selected("objectSelector", object));
    namespace_selected && object_selected
}

/// A `LabelSelector` object (`matchLabels`, `matchExpressions`), as a
/// selector; none for an empty one (it selects everything).
fn selector_of(selector: &Value) -> Option<LabelSelector> {
    let mut requirements = Vec::new();
    if let Some(labels) = selector.get("matchLabels").and_then(Value::as_object) {
        for (key, value) in labels {
            requirements.push(format!("{key}={}", value.as_str().unwrap_or_default()));
        }
    }
    for expression in selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let key = expression
            .get("key")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let values = meta::strings(expression.get("values")).join(",");
        requirements.push(match expression.get("operator").and_then(Value::as_str) {
            Some("In") => format!("{key} in ({values})"),
            Some("NotIn") => format!("{key} notin ({values})"),
            Some("DoesNotExist") => format!("!{key}"),
            _ => key.to_string(),
        });
    }
    if requirements.is_empty() {
        return None;
    }
    // A selector that does not parse selects nothing, as an invalid one
    // would never have been stored by a real apiserver.
    Some(
        LabelSelector::parse(&requirements.join(",")).unwrap_or_else(|_| {
            LabelSelector::parse("berth.dev/never-matches,!berth.dev/never-matches")
                .unwrap_or_default()
        }),
    )
}

/// A `NamedRuleWithOperations`: operations, groups, versions, resources
/// (`*`, `*/*`, `r/*`, `*/s`, `r/s`) and scope.
fn rule_matches(rule: &Value, attributes: &Attributes<'_>) -> bool {
    let has = |field: &str, wanted: &str| {
        meta::strings(rule.get(field))
            .iter()
            .any(|value| value == "*" || value == wanted)
    };
    let rt = attributes.rt;
    let resource_matches = meta::strings(rule.get("resources")).iter().any(|entry| {
        if entry == "*/*" {
            return true;
        }
        let (resource, sub) = entry.split_once('/').unwrap_or((entry.as_str(), ""));
        let resource_ok = resource == "*" || resource == rt.plural;
        match attributes.subresource {
            None => resource_ok && sub.is_empty(),
            Some(subresource) => resource_ok && (sub == "*" || sub == subresource),
        }
    });
    let scope_matches = match rule.get("scope").and_then(Value::as_str) {
        Some("Cluster") => !rt.namespaced,
        Some("Namespaced") => rt.namespaced,
        _ => true,
    };
    has("operations", attributes.operation.as_str())
        && has("apiGroups", &rt.group)
        && has("apiVersions", attributes.version)
        && resource_matches
        && scope_matches
}
