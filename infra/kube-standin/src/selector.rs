//! Label and field selectors, as accepted by list and watch.

use serde_json::Value;

use crate::meta;

#[derive(Debug, Clone, PartialEq)]
enum LabelOp {
    Equals(String),
    NotEquals(String),
    In(Vec<String>),
    NotIn(Vec<String>),
    Exists,
    DoesNotExist,
}

#[derive(Debug, Clone, PartialEq)]
struct Requirement {
    key: String,
    op: LabelOp,
}

/// A parsed `labelSelector`: all requirements must hold.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
}

/// Splits on commas that are not inside parentheses.
fn split_top_level(s: &str) -> Result<Vec<&str>, String> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth < 0 {
                    return Err(format!("unexpected ')' in selector {s:?}"));
                }
            }
            ',' if depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(format!("unbalanced parentheses in selector {s:?}"));
    }
    parts.push(&s[start..]);
    Ok(parts)
}

fn valid_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= 317
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
}

fn parse_set(rest: &str, whole: &str) -> Result<Vec<String>, String> {
    let rest = rest.trim();
    let inner = rest
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| {
            format!("unable to parse requirement: expected a parenthesized set in {whole:?}")
        })?;
    Ok(inner
        .split(',')
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .collect())
}

fn parse_requirement(raw: &str) -> Result<Requirement, String> {
    let s = raw.trim();
    if let Some(key) = s.strip_prefix('!') {
        let key = key.trim();
        if !valid_key(key) {
            return Err(format!("invalid label key {key:?}"));
        }
        return Ok(Requirement {
            key: key.to_string(),
            op: LabelOp::DoesNotExist,
        });
    }
    for (token, eq) in [("!=", false), ("==", true), ("=", true)] {
        if let Some((k, v)) = s.split_once(token) {
            let key = k.trim();
            if !valid_key(key) {
                return Err(format!("invalid label key {key:?}"));
            }
            let value = v.trim().to_string();
            let op = if eq {
                LabelOp::Equals(value)
            } else {
                LabelOp::NotEquals(value)
            };
            return Ok(Requirement {
                key: key.to_string(),
                op,
            });
        }
    }
    // `key in (a,b)` / `key notin (a,b)` / `key`
    let mut words = s.splitn(2, char::is_whitespace);
    let key = words.next().unwrap_or_default().trim();
    let rest = words.next().unwrap_or_default().trim();
    if !valid_key(key) {
        return Err(format!(
            "invalid label key {key:?} in selector requirement {raw:?}"
        ));
    }
    if rest.is_empty() {
        return Ok(Requirement {
            key: key.to_string(),
            op: LabelOp::Exists,
        });
    }
    if let Some(set) = rest.strip_prefix("notin") {
        return Ok(Requirement {
            key: key.to_string(),
            op: LabelOp::NotIn(parse_set(set, raw)?),
        });
    }
    if let Some(set) = rest.strip_prefix("in") {
        return Ok(Requirement {
            key: key.to_string(),
            op: LabelOp::In(parse_set(set, raw)?),
        });
    }
    Err(format!(
        "unable to parse requirement: found {rest:?}, expected: in, notin, =, ==, !="
    ))
}

impl LabelSelector {
    pub fn parse(s: &str) -> Result<Self, String> {
        let mut requirements = Vec::new();
        if s.trim().is_empty() {
            return Ok(LabelSelector { requirements });
        }
        for part in split_top_level(s)? {
            if part.trim().is_empty() {
                return Err(format!("empty requirement in selector {s:?}"));
            }
            requirements.push(parse_requirement(part)?);
        }
        Ok(LabelSelector { requirements })
    }

    pub fn matches(&self, obj: &Value) -> bool {
        let labels = meta::labels(obj);
        let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
        self.requirements.iter().all(|r| match &r.op {
            LabelOp::Equals(v) => get(&r.key) == Some(v.as_str()),
            LabelOp::NotEquals(v) => get(&r.key) != Some(v.as_str()),
            LabelOp::In(set) => get(&r.key).is_some_and(|x| set.iter().any(|s| s == x)),
            LabelOp::NotIn(set) => get(&r.key).is_none_or(|x| !set.iter().any(|s| s == x)),
            LabelOp::Exists => get(&r.key).is_some(),
            LabelOp::DoesNotExist => get(&r.key).is_none(),
        })
    }
}

/// A parsed `fieldSelector`: `path=value`, `path==value` or `path!=value`, comma-joined.
///
/// Unlike the real API server (which supports a per-resource set of fields), any dotted path into
/// the object works; a missing field compares as the empty string.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FieldSelector {
    requirements: Vec<(String, bool, String)>,
}

impl FieldSelector {
    pub fn parse(s: &str) -> Result<Self, String> {
        let mut requirements = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (path, equal, value) = if let Some((k, v)) = part.split_once("!=") {
                (k, false, v)
            } else if let Some((k, v)) = part.split_once("==") {
                (k, true, v)
            } else if let Some((k, v)) = part.split_once('=') {
                (k, true, v)
            } else {
                return Err(format!(
                    "invalid selector: '{s}'; can't understand '{part}'"
                ));
            };
            requirements.push((path.trim().to_string(), equal, v_trim(value)));
        }
        Ok(FieldSelector { requirements })
    }

    pub fn matches(&self, obj: &Value) -> bool {
        self.requirements.iter().all(|(path, equal, value)| {
            let mut cur = Some(obj);
            for part in path.split('.') {
                cur = cur.and_then(|c| c.get(part));
            }
            let actual = match cur {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => String::new(),
                Some(other) => other.to_string(),
            };
            (actual == *value) == *equal
        })
    }
}

fn v_trim(v: &str) -> String {
    v.trim().to_string()
}

/// The label and field selectors of one list or watch request.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub labels: LabelSelector,
    pub fields: FieldSelector,
}

impl Filter {
    pub fn parse(
        label_selector: Option<&str>,
        field_selector: Option<&str>,
    ) -> Result<Self, String> {
        Ok(Filter {
            labels: LabelSelector::parse(label_selector.unwrap_or_default())?,
            fields: FieldSelector::parse(field_selector.unwrap_or_default())?,
        })
    }

    pub fn matches(&self, obj: &Value) -> bool {
        self.labels.matches(obj) && self.fields.matches(obj)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(labels: Value) -> Value {
        json!({"metadata": {"name": "a", "namespace": "ns", "labels": labels}, "status": {"phase": "Running"}})
    }

    #[test]
    fn label_selectors() {
        let o = obj(json!({"app": "web", "tier": "front"}));
        let m = |s: &str| LabelSelector::parse(s).unwrap().matches(&o);
        assert!(m("app=web"));
        assert!(m("app==web,tier"));
        assert!(!m("app!=web"));
        assert!(m("missing!=x"));
        assert!(m("app in (web, db),tier notin (back)"));
        assert!(!m("app notin (web)"));
        assert!(m("!missing"));
        assert!(!m("!app"));
        assert!(m(""));
        assert!(LabelSelector::parse("app in web").is_err());
        assert!(LabelSelector::parse("app in (a").is_err());
    }

    #[test]
    fn field_selectors() {
        let o = obj(json!({}));
        let m = |s: &str| FieldSelector::parse(s).unwrap().matches(&o);
        assert!(m("metadata.name=a,metadata.namespace==ns"));
        assert!(!m("metadata.name!=a"));
        assert!(m("status.phase=Running"));
        assert!(m("spec.nodeName="));
        assert!(FieldSelector::parse("nonsense").is_err());
    }
}
