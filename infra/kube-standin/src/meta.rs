//! Helpers for object metadata: names, timestamps, finalizers, owner references.

use serde_json::{Map, Value};

use crate::registry::NameRule;

/// Now, as Kubernetes writes timestamps (`2024-05-01T12:00:00Z`).
pub fn now_timestamp() -> String {
    let secs = jiff::Timestamp::now().as_second();
    jiff::Timestamp::from_second(secs)
        .map(|t| t.to_string())
        .unwrap_or_else(|_| "1970-01-01T00:00:00Z".to_string())
}

/// A short human age (`5s`, `3m`, `2h`, `4d`) since an RFC 3339 timestamp.
pub fn age(timestamp: &str) -> String {
    let Ok(then) = timestamp.parse::<jiff::Timestamp>() else {
        return "<unknown>".to_string();
    };
    let secs = (jiff::Timestamp::now().as_second() - then.as_second()).max(0);
    match secs {
        s if s < 120 => format!("{s}s"),
        s if s < 2 * 3600 => format!("{}m", s / 60),
        s if s < 48 * 3600 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86400),
    }
}

pub fn metadata(obj: &Value) -> Option<&Map<String, Value>> {
    obj.get("metadata").and_then(Value::as_object)
}

/// The object's metadata map, created when missing. (Callers pass JSON objects; anything else
/// is replaced by an empty object rather than panicking.)
pub fn metadata_mut(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj.is_object() {
        *obj = Value::Object(Map::new());
    }
    let Value::Object(map) = obj else {
        unreachable!("made an object above")
    };
    let meta = map
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    let Value::Object(meta) = meta else {
        unreachable!("made an object above")
    };
    meta
}

pub fn meta_str<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    metadata(obj)
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
}

pub fn name(obj: &Value) -> &str {
    meta_str(obj, "name").unwrap_or_default()
}

/// The uid of the owner reference marked `controller: true`, if any.
pub fn controller_uid(obj: &Value) -> Option<&str> {
    metadata(obj)?
        .get("ownerReferences")?
        .as_array()?
        .iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))?
        .get("uid")?
        .as_str()
}

pub fn uid(obj: &Value) -> &str {
    meta_str(obj, "uid").unwrap_or_default()
}

pub fn resource_version(obj: &Value) -> &str {
    meta_str(obj, "resourceVersion").unwrap_or_default()
}

pub fn is_deleting(obj: &Value) -> bool {
    meta_str(obj, "deletionTimestamp").is_some_and(|s| !s.is_empty())
}

/// The strings of a JSON array (none when it is missing or not an array).
pub fn strings(list: Option<&Value>) -> Vec<String> {
    list.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

pub fn finalizers(obj: &Value) -> Vec<String> {
    strings(metadata(obj).and_then(|m| m.get("finalizers")))
}

pub fn labels(obj: &Value) -> Option<&Map<String, Value>> {
    metadata(obj)
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object)
}

/// The uids an object's owner references point at.
pub fn owner_uids(obj: &Value) -> Vec<String> {
    metadata(obj)
        .and_then(|m| m.get("ownerReferences"))
        .and_then(Value::as_array)
        .map(|refs| {
            refs.iter()
                .filter_map(|r| r.get("uid").and_then(Value::as_str))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Removes owner references to any of `uids`; returns whether anything changed.
pub fn drop_owner_refs(obj: &mut Value, uids: &[String]) -> bool {
    let meta = metadata_mut(obj);
    let Some(refs) = meta
        .get_mut("ownerReferences")
        .and_then(Value::as_array_mut)
    else {
        return false;
    };
    let before = refs.len();
    refs.retain(|r| {
        !r.get("uid")
            .and_then(Value::as_str)
            .is_some_and(|u| uids.iter().any(|x| x == u))
    });
    let changed = refs.len() != before;
    if refs.is_empty() {
        meta.remove("ownerReferences");
    }
    changed
}

const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const DNS1035_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

fn is_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

/// Checks a name against a rule; on failure returns the API server's explanation.
pub fn validate_name(name: &str, rule: NameRule) -> Result<(), String> {
    match rule {
        NameRule::Subdomain => {
            if name.len() > 253 {
                return Err("must be no more than 253 characters".to_string());
            }
            if !name.split('.').all(is_label_part) {
                return Err(SUBDOMAIN_MSG.to_string());
            }
        }
        NameRule::Label => {
            if name.len() > 63 {
                return Err("must be no more than 63 characters".to_string());
            }
            if !is_label(name) {
                return Err(LABEL_MSG.to_string());
            }
        }
        NameRule::Dns1035Label => {
            if name.len() > 63 {
                return Err("must be no more than 63 characters".to_string());
            }
            if !is_label(name) || !name.starts_with(|c: char| c.is_ascii_lowercase()) {
                return Err(DNS1035_MSG.to_string());
            }
        }
        NameRule::PathSegment => {
            if name == "." || name == ".." {
                return Err(format!("may not be '{name}'"));
            }
            if let Some(c) = name.chars().find(|c| *c == '/' || *c == '%') {
                return Err(format!("may not contain '{c}'"));
            }
        }
    }
    Ok(())
}

/// One dot-separated part of a subdomain (no 63-character limit: the whole name has one).
fn is_label_part(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

const NAME_PART_MSG: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

/// `[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?`, at most 63 characters.
fn is_qualified_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
}

/// Checks a label or annotation key (`[prefix/]name`).
fn validate_key(key: &str) -> Result<(), String> {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if let Some(p) = prefix
        && (p.is_empty() || validate_name(p, NameRule::Subdomain).is_err())
    {
        return Err(format!(
            "Invalid value: \"{key}\": prefix part {SUBDOMAIN_MSG}"
        ));
    }
    if !is_qualified_name_part(name) {
        return Err(format!("Invalid value: \"{key}\": {NAME_PART_MSG}"));
    }
    Ok(())
}

/// Checks labels and annotation keys as the API server does; on failure returns the field and
/// the explanation.
pub fn validate_labels_and_annotations(obj: &Value) -> Result<(), (&'static str, String)> {
    let Some(meta) = metadata(obj) else {
        return Ok(());
    };
    if let Some(labels) = meta.get("labels").filter(|l| !l.is_null()) {
        let labels = labels.as_object().ok_or((
            "metadata.labels",
            "Invalid value: must be a map of strings".to_string(),
        ))?;
        for (k, v) in labels {
            validate_key(k).map_err(|e| ("metadata.labels", e))?;
            let v = v.as_str().ok_or((
                "metadata.labels",
                format!("Invalid value: the value of {k:?} must be a string"),
            ))?;
            if !(v.is_empty() || is_qualified_name_part(v)) {
                return Err((
                    "metadata.labels",
                    format!("Invalid value: \"{v}\": {LABEL_VALUE_MSG}"),
                ));
            }
        }
    }
    if let Some(annotations) = meta.get("annotations").filter(|a| !a.is_null()) {
        let annotations = annotations.as_object().ok_or((
            "metadata.annotations",
            "Invalid value: must be a map of strings".to_string(),
        ))?;
        for (k, v) in annotations {
            validate_key(k).map_err(|e| ("metadata.annotations", e))?;
            if !v.is_string() {
                return Err((
                    "metadata.annotations",
                    format!("Invalid value: the value of {k:?} must be a string"),
                ));
            }
        }
    }
    Ok(())
}

/// The random suffix `generateName` gets: five characters from the API server's alphabet.
pub fn random_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let bytes = uuid::Uuid::new_v4().into_bytes();
    bytes
        .iter()
        .take(5)
        .map(|b| ALPHABET[*b as usize % ALPHABET.len()] as char)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(validate_name("my-app.example", NameRule::Subdomain).is_ok());
        assert!(validate_name("My-App", NameRule::Subdomain).is_err());
        assert!(validate_name("-x", NameRule::Subdomain).is_err());
        assert!(validate_name("a..b", NameRule::Subdomain).is_err());
        assert!(validate_name("a.b", NameRule::Label).is_err());
        assert!(validate_name("1abc", NameRule::Dns1035Label).is_err());
        assert!(validate_name("system:controller:x", NameRule::PathSegment).is_ok());
        assert!(validate_name("a/b", NameRule::PathSegment).is_err());
    }

    #[test]
    fn labels() {
        let ok = serde_json::json!({"metadata": {"labels": {"app.kubernetes.io/name": "web", "empty": ""}, "annotations": {"example.com/x": "any thing"}}});
        assert!(validate_labels_and_annotations(&ok).is_ok());
        for bad in [
            serde_json::json!({"metadata": {"labels": {"app": "has space"}}}),
            serde_json::json!({"metadata": {"labels": {"-app": "x"}}}),
            serde_json::json!({"metadata": {"labels": {"Bad_Prefix/app": "x"}}}),
            serde_json::json!({"metadata": {"labels": {"app": "x".repeat(64)}}}),
            serde_json::json!({"metadata": {"annotations": {"a b": "x"}}}),
        ] {
            assert!(validate_labels_and_annotations(&bad).is_err(), "{bad}");
        }
    }
}
