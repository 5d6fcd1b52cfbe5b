//! Name rules: display texts and reserved namespaces.

use crate::ApiError;

/// What [`text`] asks beyond its length, as the description states it
/// (ECMA-262's and Python's regular expressions alike): a character that
/// is not white space (`char::is_whitespace`, Unicode's `White_Space`).
/// Each text field's `#[schema(pattern = ...)]` repeats it (utoipa takes
/// only a literal); `tests/api/openapi.rs` checks that they do.
pub const NOT_BLANK: &str =
    r"[^\t\n\u000b\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]";

/// Text of 1 to `max` characters that is not only white space.
pub fn text(field: &str, value: &str, max: usize) -> Result<(), ApiError> {
    if value.trim().is_empty() || value.chars().count() > max {
        return Err(ApiError::ValidationFailed(format!(
            "{field}: must be 1 to {max} characters"
        )));
    }
    Ok(())
}

/// Namespaces no environment may be given (its namespace is
/// `{project}-{environment}`): `default`, every `kube-*` and `berth-*`
/// (Kubernetes' own and Berth's), and those of `BERTH_RESERVED_NAMESPACES`,
/// where `name` reserves one namespace and `prefix*` every one it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReservedNamespaces {
    exact: Vec<String>,
    prefixes: Vec<String>,
}

impl Default for ReservedNamespaces {
    fn default() -> Self {
        Self {
            exact: vec!["default".into()],
            prefixes: vec!["kube-".into(), "berth-".into()],
        }
    }
}

impl ReservedNamespaces {
    /// The built-in reservations plus a comma-separated list of `name` and
    /// `prefix*` entries (white space and empty entries ignored).
    pub fn with_configured(list: &str) -> Result<Self, String> {
        let mut reserved = Self::default();
        for entry in list.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let (name, is_prefix) = match entry.strip_suffix('*') {
                Some(prefix) => (prefix, true),
                None => (entry, false),
            };
            let valid = !name.is_empty()
                && name.len() <= 63
                && name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
            if !valid {
                return Err(format!(
                    "{entry:?} is not a namespace name or a prefix of one followed by *"
                ));
            }
            if is_prefix {
                reserved.prefixes.push(name.to_owned());
            } else {
                reserved.exact.push(name.to_owned());
            }
        }
        Ok(reserved)
    }

    pub fn is_reserved(&self, namespace: &str) -> bool {
        self.exact.iter().any(|name| name == namespace)
            || self
                .prefixes
                .iter()
                .any(|p| namespace.starts_with(p.as_str()))
    }

    /// A project whose every namespace (`{project}-…`) would be reserved:
    /// `kube` and `berth` themselves, and any `kube-…` or `berth-…`.
    pub fn reserves_project(&self, project: &str) -> bool {
        let every = format!("{project}-");
        self.prefixes.iter().any(|p| every.starts_with(p.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`NOT_BLANK`] holds of exactly the texts [`text`] takes (length
    /// aside), on every white space character and a few others.
    #[test]
    fn not_blank_says_what_text_asks() {
        let pattern = regex::Regex::new(NOT_BLANK).expect("a pattern");
        let spaces: Vec<char> = (0..=0x3000u32)
            .filter_map(char::from_u32)
            .filter(|c| c.is_whitespace())
            .collect();
        let mut samples: Vec<String> = spaces.iter().map(|c| c.to_string()).collect();
        samples.push(spaces.iter().collect());
        for other in ['a', '\u{1c}', '\u{feff}', '\u{180e}', '\u{200b}', '\0', '.'] {
            samples.push(other.to_string());
            samples.push(format!(" {other}\t"));
        }
        for sample in samples {
            assert_eq!(
                pattern.is_match(&sample),
                text("f", &sample, 1000).is_ok(),
                "{sample:?}"
            );
        }
    }

    #[test]
    fn reserved_namespaces() {
        let reserved = ReservedNamespaces::with_configured(" ingress-nginx, cert-manager* ,")
            .expect("a valid list");
        for name in [
            "default",
            "kube-system",
            "kube-public",
            "berth-system",
            "ingress-nginx",
            "cert-manager",
            "cert-manager-webhook",
        ] {
            assert!(reserved.is_reserved(name), "{name}");
        }
        for name in [
            "default-dev",
            "kubes-dev",
            "ingress-nginx-x",
            "berthing-dev",
        ] {
            assert!(!reserved.is_reserved(name), "{name}");
        }
        for project in ["kube", "berth", "kube-x", "berth-a-b", "cert-manager"] {
            assert!(reserved.reserves_project(project), "{project}");
        }
        // Only some of their environments would be reserved: checked at create.
        for project in ["ku", "kubes", "cert", "ingress", "default"] {
            assert!(!reserved.reserves_project(project), "{project}");
        }
        for bad in ["*", "Kube-*", "a b", "x_y"] {
            assert!(ReservedNamespaces::with_configured(bad).is_err(), "{bad}");
        }
        assert_eq!(
            ReservedNamespaces::with_configured("").unwrap(),
            ReservedNamespaces::default()
        );
    }

    #[test]
    fn texts() {
        assert!(text("display_name", "Web", 100).is_ok());
        assert!(text("display_name", "  ", 100).is_err());
        assert!(text("display_name", &"x".repeat(101), 100).is_err());
    }
}
