//! Name rules: display texts and reserved namespaces.

use crate::InvalidInput;

/// What [`text`] asks beyond its length, as the description states it
/// (ECMA-262's and Python's regular expressions alike): a character that
/// is not white space (`char::is_whitespace`, Unicode's `White_Space`).
/// Each text field's `#[schema(pattern = ...)]` repeats it (utoipa takes
/// only a literal); `tests/api/openapi.rs` checks that they do.
pub const NOT_BLANK: &str =
    r"[^\t\n\u000b\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]";

/// Text of 1 to `max` characters that is not only white space.
pub fn text(field: &str, value: &str, max: usize) -> Result<(), InvalidInput> {
    if value.trim().is_empty() || value.chars().count() > max {
        return Err(InvalidInput(format!(
            "{field}: must be 1 to {max} characters"
        )));
    }
    Ok(())
}

/// Namespaces no environment may be given (its namespace is
/// `{project}-{environment}`): `default`, every `kube-*` and `berth-*`
/// (Kubernetes' own and Berth's), the well-known namespaces of the tools a
/// cluster runs beside Berth ([`WELL_KNOWN_NAMESPACES`]: a tenant's
/// environment named like the ingress controller's, made before it is
/// installed, would be let in by every environment's NetworkPolicy), the
/// ingress controller's (`BERTH_INGRESS_NAMESPACE`), and those of
/// `BERTH_RESERVED_NAMESPACES`, where `name` reserves one namespace and
/// `prefix*` every one it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReservedNamespaces {
    exact: Vec<String>,
    prefixes: Vec<String>,
}

/// The namespaces of tools a cluster commonly runs, which Berth reserves
/// whether or not they are installed yet: ingress controllers, cert-manager,
/// service meshes, policy engines, GitOps, monitoring, networking and
/// storage add-ons. `prefix*` reserves every namespace it starts.
pub const WELL_KNOWN_NAMESPACES: &[&str] = &[
    "ingress-nginx",
    "nginx-ingress",
    "ingress",
    "traefik",
    "haproxy-controller",
    "contour",
    "projectcontour",
    "envoy-gateway-system",
    "gateway-system",
    "cert-manager",
    "external-dns",
    "istio-*",
    "linkerd",
    "linkerd-*",
    "cilium-secrets",
    "calico-*",
    "tigera-operator",
    "metallb-system",
    "kyverno",
    "gatekeeper-system",
    "flux-system",
    "argocd",
    "argo-*",
    "monitoring",
    "prometheus",
    "grafana",
    "loki",
    "logging",
    "observability",
    "opentelemetry-operator-system",
    "velero",
    "longhorn-system",
    "rook-ceph",
    "local-path-storage",
    "openebs",
    "vault",
    "external-secrets",
    "sealed-secrets",
    "keda",
    "knative-*",
    "tekton-*",
    "amazon-cloudwatch",
    "aws-observability",
    "gke-*",
    "gmp-*",
    "azure-*",
];

impl Default for ReservedNamespaces {
    fn default() -> Self {
        let mut reserved = Self {
            exact: vec!["default".into()],
            prefixes: vec!["kube-".into(), "berth-".into()],
        };
        for entry in WELL_KNOWN_NAMESPACES {
            reserved.add(entry);
        }
        reserved
    }
}

impl ReservedNamespaces {
    /// The built-in reservations plus a comma-separated list of `name` and
    /// `prefix*` entries (white space and empty entries ignored).
    pub fn with_configured(list: &str) -> Result<Self, String> {
        let mut reserved = Self::default();
        for entry in list.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let name = entry.strip_suffix('*').unwrap_or(entry);
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
            reserved.add(entry);
        }
        Ok(reserved)
    }

    /// Reserves one more: `name`, or with `*` every name it starts.
    fn add(&mut self, entry: &str) {
        match entry.strip_suffix('*') {
            Some(prefix) => self.prefixes.push(prefix.to_owned()),
            None => self.exact.push(entry.to_owned()),
        }
    }

    /// These, and the ingress controller's namespace
    /// (`BERTH_INGRESS_NAMESPACE`), which every environment admits.
    pub fn with_ingress(mut self, ingress_namespace: &str) -> Self {
        self.add(ingress_namespace);
        self
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

    /// The namespaces of tools installed later are reserved before they
    /// are there (issue 46, part 4): a tenant's project `ingress` and
    /// environment `nginx` would otherwise be the namespace every
    /// environment admits traffic from.
    #[test]
    fn well_known_and_the_ingress_controllers_namespaces_are_reserved() {
        let reserved = ReservedNamespaces::default().with_ingress("edge-gateway");
        for name in [
            "ingress-nginx",
            "cert-manager",
            "istio-system",
            "linkerd-viz",
            "argo-rollouts",
            "gke-managed-system",
            "edge-gateway",
        ] {
            assert!(reserved.is_reserved(name), "{name}");
        }
        for name in ["shop-dev", "linkerdemo-dev", "edge-prod", "monitor-dev"] {
            assert!(!reserved.is_reserved(name), "{name}");
        }
        assert!(reserved.reserves_project("istio"));
    }

    #[test]
    fn texts() {
        assert!(text("display_name", "Web", 100).is_ok());
        assert!(text("display_name", "  ", 100).is_err());
        assert!(text("display_name", &"x".repeat(101), 100).is_err());
    }
}
