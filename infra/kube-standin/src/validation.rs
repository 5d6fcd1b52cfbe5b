//! Rules of built-in types that a client can trip over: immutable fields on
//! update, and a NetworkPolicy's spec on every write.
//!
//! A subset of the API server's validation: see the README for what isn't checked.

use serde_json::{Value, json};

use crate::quantity::{self, Quantity};
use crate::registry::ResourceType;
use crate::status::{ApiError, ApiResult};

fn invalid(rt: &ResourceType, name: &str, field: &str, reason: &str, detail: String) -> ApiError {
    ApiError::invalid(&rt.kind, &rt.group, name, field, reason, &detail)
}

fn immutable(rt: &ResourceType, name: &str, field: &str, value: Option<&Value>) -> ApiError {
    let shown = value
        .map(Value::to_string)
        .unwrap_or_else(|| "null".to_string());
    invalid(
        rt,
        name,
        field,
        "FieldValueInvalid",
        format!("Invalid value: {shown}: field is immutable"),
    )
}

/// `value` without the listed top-level keys.
fn without(value: Option<&Value>, keys: &[&str]) -> Value {
    let mut v = value.cloned().unwrap_or_else(|| json!({}));
    if let Some(m) = v.as_object_mut() {
        for k in keys {
            m.remove(*k);
        }
    }
    v
}

/// A claim's spec is immutable, except:
/// - `resources.requests.storage`, and only while the claim is `Bound` (expansion);
/// - `volumeName`, once, while it is empty (the binder sets it);
/// - `volumeAttributesClassName`.
///
/// Quantities compare by value (`1Gi` == `1024Mi`). A bound claim may shrink only while it stays
/// above `status.capacity`: that is 1.33's rule, with `RecoverVolumeExpansionFailure` on by
/// default (beta since 1.32), and its message.
fn check_claim_update(rt: &ResourceType, name: &str, old: &Value, new: &Value) -> ApiResult<()> {
    let bound = old.pointer("/status/phase").and_then(Value::as_str) == Some("Bound");
    let old_requests = old.pointer("/spec/resources/requests");
    let new_requests = new.pointer("/spec/resources/requests");
    let old_storage = old_requests.and_then(|r| r.get("storage"));
    let new_storage = new_requests.and_then(|r| r.get("storage"));

    // The new requests as they are allowed to be compared: storage may differ on a bound claim.
    let mut comparable_requests = new_requests.cloned();
    if bound && let Some(reqs) = comparable_requests.as_mut().and_then(Value::as_object_mut) {
        match old_storage {
            Some(s) => reqs.insert("storage".into(), s.clone()),
            None => reqs.remove("storage"),
        };
    }
    let rest = |spec: Option<&Value>, keep_volume_name: bool| {
        let mut v = without(spec, &["volumeAttributesClassName", "resources"]);
        if !keep_volume_name && let Some(m) = v.as_object_mut() {
            m.remove("volumeName");
        }
        v
    };
    let old_volume_name = old
        .pointer("/spec/volumeName")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let other_resources =
        |v: &Value| without(v.pointer("/spec/resources"), &["requests", "limits"]);
    let spec_same = rest(old.get("spec"), !old_volume_name.is_empty())
        == rest(new.get("spec"), !old_volume_name.is_empty())
        && quantity::same_map(old_requests, comparable_requests.as_ref())
        && quantity::same_map(
            old.pointer("/spec/resources/limits"),
            new.pointer("/spec/resources/limits"),
        )
        && other_resources(old) == other_resources(new);
    if !spec_same {
        return Err(invalid(
            rt,
            name,
            "spec",
            "FieldValueForbidden",
            "Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims".to_string(),
        ));
    }
    let (Some(old_size), Some(new_size)) = (
        old_storage.and_then(Quantity::from_value),
        new_storage.and_then(Quantity::from_value),
    ) else {
        return Ok(());
    };
    let capacity = old
        .pointer("/status/capacity/storage")
        .and_then(Quantity::from_value)
        .unwrap_or(Quantity::ZERO);
    if new_size < old_size && new_size <= capacity {
        return Err(invalid(
            rt,
            name,
            "spec.resources.requests.storage",
            "FieldValueForbidden",
            "Forbidden: field can not be less than status.capacity".to_string(),
        ));
    }
    Ok(())
}

/// Checks an update of the main resource against the type's immutability rules.
pub fn check_update(rt: &ResourceType, name: &str, old: &Value, new: &Value) -> ApiResult<()> {
    let same = |ptr: &str| old.pointer(ptr) == new.pointer(ptr);
    match (rt.group.as_str(), rt.plural.as_str()) {
        ("apps", "deployments" | "replicasets" | "daemonsets") if !same("/spec/selector") => {
            return Err(immutable(
                rt,
                name,
                "spec.selector",
                new.pointer("/spec/selector"),
            ));
        }
        ("apps", "statefulsets") => {
            const MUTABLE: &[&str] = &[
                "replicas",
                "ordinals",
                "template",
                "updateStrategy",
                "revisionHistoryLimit",
                "persistentVolumeClaimRetentionPolicy",
                "minReadySeconds",
            ];
            if without(old.get("spec"), MUTABLE) != without(new.get("spec"), MUTABLE) {
                return Err(invalid(rt, name, "spec", "FieldValueForbidden", "Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden".to_string()));
            }
        }
        ("batch", "jobs") => {
            for (ptr, field) in [
                ("/spec/selector", "spec.selector"),
                ("/spec/template", "spec.template"),
                ("/spec/completions", "spec.completions"),
            ] {
                if !same(ptr) {
                    return Err(immutable(rt, name, field, new.pointer(ptr)));
                }
            }
        }
        ("", "pods") => {
            let strip = |v: &Value| {
                let mut spec = without(
                    v.get("spec"),
                    &[
                        "activeDeadlineSeconds",
                        "tolerations",
                        "terminationGracePeriodSeconds",
                    ],
                );
                for list in ["containers", "initContainers"] {
                    if let Some(cs) = spec.get_mut(list).and_then(Value::as_array_mut) {
                        for c in cs.iter_mut().filter_map(Value::as_object_mut) {
                            c.remove("image");
                        }
                    }
                }
                spec
            };
            if strip(old) != strip(new) {
                return Err(invalid(rt, name, "spec", "FieldValueForbidden", "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)".to_string()));
            }
        }
        ("", "configmaps" | "secrets") => {
            if old.get("immutable") == Some(&Value::Bool(true)) {
                if !same("/immutable") {
                    return Err(invalid(
                        rt,
                        name,
                        "immutable",
                        "FieldValueForbidden",
                        "Forbidden: field is immutable when `immutable` is set".to_string(),
                    ));
                }
                for field in ["data", "binaryData"] {
                    if old.get(field) != new.get(field) {
                        return Err(invalid(
                            rt,
                            name,
                            field,
                            "FieldValueForbidden",
                            "Forbidden: field is immutable when `immutable` is set".to_string(),
                        ));
                    }
                }
            }
            if rt.plural == "secrets" && !same("/type") {
                return Err(immutable(rt, name, "type", new.get("type")));
            }
        }
        ("", "services")
            if !same("/spec/clusterIP") && old.pointer("/spec/clusterIP").is_some() =>
        {
            return Err(immutable(
                rt,
                name,
                "spec.clusterIPs[0]",
                new.pointer("/spec/clusterIP"),
            ));
        }
        ("", "persistentvolumeclaims") => check_claim_update(rt, name, old, new)?,
        ("rbac.authorization.k8s.io", "rolebindings" | "clusterrolebindings")
            if !same("/roleRef") =>
        {
            return Err(invalid(
                rt,
                name,
                "roleRef",
                "FieldValueInvalid",
                "Invalid value: cannot change roleRef".to_string(),
            ));
        }
        _ => {}
    }
    Ok(())
}

/// Values the API server allocated that an update may leave out (they are kept, not cleared).
pub fn carry_allocated(rt: &ResourceType, old: &Value, new: &mut Value) {
    if rt.is("", "services")
        && let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut)
    {
        for field in ["clusterIP", "clusterIPs"] {
            if spec.get(field).is_none_or(|v| v.is_null() || v == "")
                && let Some(v) = old.pointer(&format!("/spec/{field}"))
            {
                spec.insert(field.to_string(), v.clone());
            }
        }
    }
}

/// What every write of an object must satisfy, beyond its metadata: a
/// NetworkPolicy's spec, as kubernetes' `ValidateNetworkPolicySpec`
/// (`pkg/apis/networking/validation/validation.go`) checks it: policy
/// types, ports (protocol, port, `endPort`), peers (at least one selector
/// or an `ipBlock`, and an `ipBlock` alone), and `ipBlock`s (a CIDR, each
/// `except` a CIDR that is a strict subset of it).
pub fn check_object(rt: &ResourceType, name: &str, obj: &Value) -> ApiResult<()> {
    if rt.kind != "NetworkPolicy" || rt.group != "networking.k8s.io" {
        return Ok(());
    }
    let spec = obj.get("spec").cloned().unwrap_or_else(|| json!({}));
    let fail = |field: String, reason: &str, detail: String| {
        Err(invalid(rt, name, &field, reason, detail))
    };
    if let Some(types) = spec.get("policyTypes").and_then(Value::as_array) {
        if types.len() > 2 {
            return fail(
                "spec.policyTypes".into(),
                "FieldValueInvalid",
                "may not specify more than two policyTypes".into(),
            );
        }
        for (i, kind) in types.iter().enumerate() {
            if !matches!(kind.as_str(), Some("Ingress" | "Egress")) {
                return fail(
                    format!("spec.policyTypes[{i}]"),
                    "FieldValueNotSupported",
                    format!("Unsupported value: {kind}: supported values: \"Ingress\", \"Egress\""),
                );
            }
        }
    }
    for (direction, peers_key) in [("ingress", "from"), ("egress", "to")] {
        let rules = spec.get(direction).and_then(Value::as_array).cloned();
        for (i, rule) in rules.unwrap_or_default().iter().enumerate() {
            let at = format!("spec.{direction}[{i}]");
            for (j, port) in rule
                .get("ports")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
                .iter()
                .enumerate()
            {
                if let Err((field, reason, detail)) = check_port(port) {
                    return fail(format!("{at}.ports[{j}]{field}"), reason, detail);
                }
            }
            for (j, peer) in rule
                .get(peers_key)
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
                .iter()
                .enumerate()
            {
                if let Err((field, reason, detail)) = check_peer(peer) {
                    return fail(format!("{at}.{peers_key}[{j}]{field}"), reason, detail);
                }
            }
        }
    }
    Ok(())
}

type Refusal = (String, &'static str, String);

fn check_port(port: &Value) -> Result<(), Refusal> {
    if let Some(protocol) = port.get("protocol").filter(|p| !p.is_null())
        && !matches!(protocol.as_str(), Some("TCP" | "UDP" | "SCTP"))
    {
        return Err((
            ".protocol".into(),
            "FieldValueNotSupported",
            format!("Unsupported value: {protocol}: supported values: \"SCTP\", \"TCP\", \"UDP\""),
        ));
    }
    let number = match port.get("port").filter(|p| !p.is_null()) {
        None => None,
        Some(Value::Number(n)) => match n.as_i64().filter(|n| (1..=65535).contains(n)) {
            Some(n) => Some(n),
            None => {
                return Err((
                    ".port".into(),
                    "FieldValueInvalid",
                    format!("Invalid value: {n}: must be between 1 and 65535, inclusive"),
                ));
            }
        },
        Some(Value::String(service)) => {
            let ok = (1..=15).contains(&service.len())
                && service
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && service.bytes().any(|b| b.is_ascii_lowercase())
                && !service.starts_with('-')
                && !service.ends_with('-')
                && !service.contains("--");
            if !ok {
                return Err((
                    ".port".into(),
                    "FieldValueInvalid",
                    format!(
                        "Invalid value: \"{service}\": must be a port number or an IANA service name"
                    ),
                ));
            }
            None
        }
        Some(other) => {
            return Err((
                ".port".into(),
                "FieldValueInvalid",
                format!("Invalid value: {other}: must be a port number or name"),
            ));
        }
    };
    if let Some(end) = port.get("endPort").filter(|p| !p.is_null()) {
        let Some(start) = number else {
            return Err((
                ".endPort".into(),
                "FieldValueInvalid",
                format!("Invalid value: {end}: may not be specified when `port` is non-numeric"),
            ));
        };
        if end.as_i64().is_none_or(|end| end < start) {
            return Err((
                ".endPort".into(),
                "FieldValueInvalid",
                format!("Invalid value: {end}: must be greater than or equal to `port`"),
            ));
        }
    }
    Ok(())
}

fn check_peer(peer: &Value) -> Result<(), Refusal> {
    let present = |key: &str| peer.get(key).is_some_and(|v| !v.is_null());
    let peers = ["podSelector", "namespaceSelector", "ipBlock"]
        .iter()
        .filter(|key| present(key))
        .count();
    if peers == 0 {
        return Err((
            String::new(),
            "FieldValueRequired",
            "Required value: must specify a peer".into(),
        ));
    }
    if !present("ipBlock") {
        return Ok(());
    }
    if peers > 1 {
        return Err((
            String::new(),
            "FieldValueForbidden",
            "Forbidden: may not specify both ipBlock and another peer".into(),
        ));
    }
    let block = &peer["ipBlock"];
    let Some(cidr) = block
        .get("cidr")
        .and_then(Value::as_str)
        .filter(|c| !c.is_empty())
    else {
        return Err((
            ".ipBlock.cidr".into(),
            "FieldValueRequired",
            "Required value".into(),
        ));
    };
    let Some(network) = parse_cidr(cidr) else {
        return Err((
            ".ipBlock.cidr".into(),
            "FieldValueInvalid",
            format!(
                "Invalid value: \"{cidr}\": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"
            ),
        ));
    };
    for (i, except) in block
        .get("except")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        let text = except.as_str().unwrap_or_default();
        let field = format!(".ipBlock.except[{i}]");
        let Some(inner) = parse_cidr(text) else {
            return Err((
                field,
                "FieldValueInvalid",
                format!(
                    "Invalid value: \"{text}\": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"
                ),
            ));
        };
        if !network.strictly_contains(&inner) {
            return Err((
                field,
                "FieldValueInvalid",
                format!("Invalid value: \"{text}\": must be a strict subset of `cidr`"),
            ));
        }
    }
    Ok(())
}

/// An address and prefix length, as `net.ParseCIDR` reads `a.b.c.d/n` or
/// `x::y/n` (the network is the address with the host bits cleared).
struct Cidr {
    bits: u128,
    width: u32,
    prefix: u32,
}

fn parse_cidr(text: &str) -> Option<Cidr> {
    let (address, prefix) = text.split_once('/')?;
    if prefix.is_empty() || !prefix.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let prefix: u32 = prefix.parse().ok()?;
    let (bits, width) = match address.parse::<std::net::IpAddr>().ok()? {
        std::net::IpAddr::V4(v4) => (u128::from(u32::from(v4)), 32),
        std::net::IpAddr::V6(v6) => (u128::from(v6), 128),
    };
    (prefix <= width).then_some(Cidr {
        bits,
        width,
        prefix,
    })
}

impl Cidr {
    fn network(&self) -> u128 {
        let host_bits = self.width - self.prefix;
        if host_bits >= 128 {
            0
        } else {
            (self.bits >> host_bits) << host_bits
        }
    }

    /// Go's `cidr.Contains(except.IP) && cidrLen < exceptLen`.
    fn strictly_contains(&self, inner: &Cidr) -> bool {
        if self.width != inner.width || self.prefix >= inner.prefix {
            return false;
        }
        let host_bits = self.width - self.prefix;
        let shifted = |bits: u128| {
            if host_bits >= 128 {
                0
            } else {
                bits >> host_bits
            }
        };
        shifted(inner.bits) == shifted(self.network())
    }
}
