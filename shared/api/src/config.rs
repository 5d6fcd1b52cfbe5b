//! Process configuration, read once at start from the environment.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use berth_domain::name_rules::ReservedNamespaces;
use berth_domain::names::Hostname;

#[derive(Debug, Clone)]
pub struct Config {
    /// `BERTH_TABLE`: the DynamoDB table (default `berth`).
    pub table: String,
    /// `BERTH_INSECURE_COOKIES=true` drops the `Secure` cookie flag for plain-http local runs.
    pub secure_cookies: bool,
    /// `BERTH_SESSION_HOURS`: absolute session lifetime (default 12 h).
    pub session_lifetime: Duration,
    /// `BERTH_PRODUCTION_GRACE_SECONDS`: how long a deleted production
    /// environment waits before it is purged (default 72 h).
    pub production_grace: Duration,
    /// `BERTH_CLUSTER_TIMEOUT_SECONDS`: bound on connecting to the cluster and
    /// on each read and write (default 10 s, well under API Gateway's 29 s).
    pub cluster_timeout: Duration,
    /// `BERTH_REQUEST_DEADLINE_SECONDS`: how long one request may run, all
    /// its calls together, before it is answered `503 deadline_exceeded`
    /// (default 20 s). It must stay below the function's timeout (29 s in
    /// `template.yaml`, under API Gateway's 30 s) so that the answer and the
    /// audit event are still written.
    pub request_deadline: Duration,
    /// `BERTH_KUBECONFIG_RECHECK_SECONDS`: how soon a replaced stored
    /// kubeconfig is noticed (default 60 s).
    pub kubeconfig_recheck: Duration,
    /// `BERTH_RESERVED_NAMESPACES`: namespaces (`name`) and prefixes
    /// (`prefix*`) no environment may get, beyond the built-in `default`,
    /// `kube-*` and `berth-*` (comma-separated).
    pub reserved_namespaces: ReservedNamespaces,
    /// `BERTH_GATEWAY_HOSTNAME`: the hostname app domains are a CNAME of to
    /// reach the gateway (lowercase, without a trailing dot).
    pub gateway_hostname: Option<String>,
    /// `BERTH_GATEWAY_ADDRESSES`: the gateway's IPv4 and IPv6 addresses, for
    /// domains that point at it with A/AAAA records (comma-separated).
    pub gateway_addresses: Vec<IpAddr>,
    /// `BERTH_DNS_SERVERS`: the name servers the domain check asks
    /// (comma-separated `ip` or `ip:port`, `[ipv6]:port`); empty means the
    /// system's (`/etc/resolv.conf`).
    pub dns_servers: Vec<SocketAddr>,
    /// `BERTH_APPS_DOMAIN`: the domain of the apps' default hosts (the
    /// controller reads the same variable); no custom domain may be it or
    /// fall under it.
    pub apps_domain: Option<Hostname>,
    /// `BERTH_RESERVED_DOMAINS`: the operator's own names (comma-separated);
    /// no custom domain may be one or fall under one.
    pub reserved_domains: Vec<Hostname>,
    /// `BERTH_PUBLIC_URL`: where the API is reached from outside
    /// (`https://api.example.com`, no trailing slash): the registry's token
    /// service is `{it}/api/v1/registry/token` (the registry's `realm`),
    /// and its tokens' issuer is it (the registry's `issuer`).
    pub public_url: Option<String>,
    /// `BERTH_REGISTRY_SIGNING_KEY`: the key the registry's tokens are
    /// signed with, `kms:KEY` (an AWS KMS key id, ARN or alias of an
    /// `ECC_NIST_P256` signing key) or `file:PATH` (a PEM P-256 private key);
    /// without it the token service answers `503`.
    pub registry_signing_key: Option<String>,
}

impl Config {
    /// How long after it began a write may still land: the request deadline
    /// (which cancels the request) plus one cluster call sent just before
    /// it. What a younger write made may still be in the making (an App
    /// about to be created, a deletion about to be scheduled).
    pub fn write_in_flight(&self) -> Duration {
        self.request_deadline + self.cluster_timeout
    }

    /// What the store's sessions take of these settings.
    pub fn sessions(&self) -> berth_store::identity::sessions::SessionSettings {
        berth_store::identity::sessions::SessionSettings {
            lifetime: self.session_lifetime,
            secure_cookies: self.secure_cookies,
        }
    }
}

#[derive(Debug, thiserror::Error)]
#[error("invalid configuration: {0}")]
pub struct ConfigError(String);

/// `BERTH_AWS_TRUST_ROOTS`: the certificate authorities the AWS SDK's clients
/// (DynamoDB, KMS) trust for their HTTPS endpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AwsTrustRoots {
    /// `amazon` (the default): the five Amazon Trust Services roots, compiled
    /// in, that every AWS endpoint's certificate chains to. Nothing is read
    /// or parsed from the machine's certificate store at start.
    #[default]
    Amazon,
    /// `platform`: the machine's certificate store, as the SDK loads it by
    /// default (`SSL_CERT_FILE`, `SSL_CERT_DIR`, the system's bundle): for an
    /// endpoint whose certificate another authority issued, a private CA
    /// among them.
    Platform,
}

impl AwsTrustRoots {
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        match lookup("BERTH_AWS_TRUST_ROOTS").as_deref().map(str::trim) {
            None | Some("") | Some("amazon") => Ok(Self::Amazon),
            Some("platform") => Ok(Self::Platform),
            Some(other) => Err(ConfigError(format!(
                "BERTH_AWS_TRUST_ROOTS must be amazon or platform, not {other:?}"
            ))),
        }
    }
}

impl Config {
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let table = lookup("BERTH_TABLE").unwrap_or_else(|| "berth".to_owned());
        if table.len() < 3 {
            return Err(ConfigError(
                "BERTH_TABLE needs at least 3 characters".into(),
            ));
        }
        let insecure = match lookup("BERTH_INSECURE_COOKIES").as_deref() {
            None | Some("") | Some("false") | Some("0") => false,
            Some("true") | Some("1") => true,
            Some(other) => {
                return Err(ConfigError(format!(
                    "BERTH_INSECURE_COOKIES must be true or false, not {other:?}"
                )));
            }
        };
        let session_hours = match lookup("BERTH_SESSION_HOURS") {
            None => 12,
            Some(v) => v
                .parse::<u64>()
                .ok()
                .filter(|h| (1..=24 * 30).contains(h))
                .ok_or_else(|| ConfigError("BERTH_SESSION_HOURS must be 1 to 720".into()))?,
        };
        let seconds = |name: &str, default: u64, max: u64| -> Result<Duration, ConfigError> {
            match lookup(name) {
                None => Ok(Duration::from_secs(default)),
                Some(v) => v
                    .parse::<u64>()
                    .ok()
                    .filter(|s| (1..=max).contains(s))
                    .map(Duration::from_secs)
                    .ok_or_else(|| ConfigError(format!("{name} must be 1 to {max}"))),
            }
        };
        Ok(Self {
            table,
            secure_cookies: !insecure,
            session_lifetime: Duration::from_secs(session_hours * 3600),
            production_grace: seconds("BERTH_PRODUCTION_GRACE_SECONDS", 72 * 3600, 90 * 86_400)?,
            cluster_timeout: seconds("BERTH_CLUSTER_TIMEOUT_SECONDS", 10, 25)?,
            request_deadline: seconds("BERTH_REQUEST_DEADLINE_SECONDS", 20, 25)?,
            kubeconfig_recheck: seconds("BERTH_KUBECONFIG_RECHECK_SECONDS", 60, 60)?,
            reserved_namespaces: ReservedNamespaces::with_configured(
                &lookup("BERTH_RESERVED_NAMESPACES").unwrap_or_default(),
            )
            .map_err(|e| ConfigError(format!("BERTH_RESERVED_NAMESPACES: {e}")))?
            .with_ingress(
                &lookup("BERTH_INGRESS_NAMESPACE").unwrap_or_else(|| "ingress-nginx".into()),
            ),
            gateway_hostname: hostname_setting(
                "BERTH_GATEWAY_HOSTNAME",
                lookup("BERTH_GATEWAY_HOSTNAME"),
            )?
            .map(Hostname::into_inner),
            gateway_addresses: parse_list("BERTH_GATEWAY_ADDRESSES", &lookup, |item| {
                item.parse::<IpAddr>().map_err(|_| {
                    ConfigError(format!(
                        "BERTH_GATEWAY_ADDRESSES: {item:?} is not an IPv4 or IPv6 address"
                    ))
                })
            })?,
            dns_servers: parse_list("BERTH_DNS_SERVERS", &lookup, parse_dns_server)?,
            apps_domain: apps_domain(lookup("BERTH_APPS_DOMAIN"))?,
            reserved_domains: parse_list("BERTH_RESERVED_DOMAINS", &lookup, |item| {
                Hostname::parse(item)
                    .map_err(|e| ConfigError(format!("BERTH_RESERVED_DOMAINS: {e}")))
            })?,
            public_url: public_url(lookup("BERTH_PUBLIC_URL"))?,
            registry_signing_key: signing_key(lookup("BERTH_REGISTRY_SIGNING_KEY"))?,
        })
    }

    /// The configuration tests use: a given table, plain-http cookies.
    pub fn for_table(table: impl Into<String>) -> Self {
        Self {
            table: table.into(),
            secure_cookies: false,
            session_lifetime: Duration::from_secs(12 * 3600),
            production_grace: Duration::from_secs(72 * 3600),
            cluster_timeout: Duration::from_secs(10),
            request_deadline: Duration::from_secs(20),
            kubeconfig_recheck: Duration::from_secs(60),
            reserved_namespaces: ReservedNamespaces::default(),
            gateway_hostname: None,
            gateway_addresses: Vec::new(),
            dns_servers: Vec::new(),
            apps_domain: None,
            reserved_domains: Vec::new(),
            public_url: None,
            registry_signing_key: None,
        }
    }
}

/// `BERTH_PUBLIC_URL`: an `http` or `https` URL of a host (and port, and a
/// path if the API is served under one), without query, fragment or
/// credentials; a trailing slash is dropped.
fn public_url(value: Option<String>) -> Result<Option<String>, ConfigError> {
    let Some(value) = value.filter(|v| !v.trim().is_empty()) else {
        return Ok(None);
    };
    let url = value.trim().trim_end_matches('/');
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"));
    let well_formed = rest.is_some_and(|rest| {
        let host = rest.split('/').next().unwrap_or_default();
        !host.is_empty()
            && !rest.contains(['?', '#', '@', ' ', '"', '\\'])
            && rest.chars().all(|c| c.is_ascii_graphic())
    });
    if !well_formed {
        return Err(ConfigError(
            "BERTH_PUBLIC_URL must be the API's http(s) URL, like https://api.example.com".into(),
        ));
    }
    Ok(Some(url.to_owned()))
}

/// `BERTH_REGISTRY_SIGNING_KEY`: `kms:KEY` or `file:PATH`.
fn signing_key(value: Option<String>) -> Result<Option<String>, ConfigError> {
    let Some(value) = value.filter(|v| !v.trim().is_empty()) else {
        return Ok(None);
    };
    let value = value.trim();
    match value.split_once(':') {
        Some(("kms" | "file", rest)) if !rest.is_empty() => Ok(Some(value.to_owned())),
        _ => Err(ConfigError(
            "BERTH_REGISTRY_SIGNING_KEY must be kms:KEY (an AWS KMS key id, ARN or alias) or file:PATH (a PEM P-256 private key)".into(),
        )),
    }
}

/// A hostname setting, unset when blank; a trailing dot (the DNS root) is
/// accepted and dropped, as operators often copy names from zone files.
fn hostname_setting(name: &str, value: Option<String>) -> Result<Option<Hostname>, ConfigError> {
    let Some(value) = value.filter(|v| !v.trim().is_empty()) else {
        return Ok(None);
    };
    Hostname::parse(value.trim())
        .map(Some)
        .map_err(|e| ConfigError(format!("{name}: {e}")))
}

/// `BERTH_APPS_DOMAIN` as the API reads it (the controller, which links no
/// HTTP layer, parses the same setting as a `Hostname` in its own `main`).
pub fn apps_domain(value: Option<String>) -> Result<Option<Hostname>, ConfigError> {
    hostname_setting("BERTH_APPS_DOMAIN", value)
}

/// A comma-separated list; unset or blank is empty, an empty item is an error
/// (a stray comma is more likely a mistake than an intent).
fn parse_list<T>(
    name: &str,
    lookup: &impl Fn(&str) -> Option<String>,
    parse: impl Fn(&str) -> Result<T, ConfigError>,
) -> Result<Vec<T>, ConfigError> {
    match lookup(name) {
        None => Ok(Vec::new()),
        Some(v) if v.trim().is_empty() => Ok(Vec::new()),
        Some(v) => v
            .split(',')
            .map(|item| {
                let item = item.trim();
                if item.is_empty() {
                    Err(ConfigError(format!("{name}: an empty item in the list")))
                } else {
                    parse(item)
                }
            })
            .collect(),
    }
}

/// `ip` (port 53) or `ip:port`; an IPv6 address with a port is `[ip]:port`.
fn parse_dns_server(item: &str) -> Result<SocketAddr, ConfigError> {
    item.parse::<SocketAddr>()
        .or_else(|_| item.parse::<IpAddr>().map(|ip| SocketAddr::new(ip, 53)))
        .ok()
        .filter(|server| server.port() != 0)
        .ok_or_else(|| {
            ConfigError(format!(
                "BERTH_DNS_SERVERS: {item:?} is not an address with an optional port \
                 (ip, ip:port or [ipv6]:port)"
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults() {
        let config = Config::from_lookup(|_| None).expect("defaults are valid");
        assert_eq!(config.table, "berth");
        assert!(config.secure_cookies);
        assert_eq!(config.session_lifetime, Duration::from_secs(12 * 3600));
        assert_eq!(config.production_grace, Duration::from_secs(72 * 3600));
        assert_eq!(config.cluster_timeout, Duration::from_secs(10));
        assert_eq!(config.request_deadline, Duration::from_secs(20));
        assert_eq!(
            config.reserved_namespaces,
            ReservedNamespaces::default().with_ingress("ingress-nginx")
        );
        assert_eq!(config.gateway_hostname, None);
        assert!(config.gateway_addresses.is_empty());
        assert!(config.dns_servers.is_empty());
        assert_eq!(config.apps_domain, None);
    }

    #[test]
    fn aws_trust_roots_are_amazons_unless_the_platform_is_asked_for() {
        let roots = |value: Option<&str>| {
            AwsTrustRoots::from_lookup(|n| {
                (n == "BERTH_AWS_TRUST_ROOTS").then(|| value.map(str::to_owned))?
            })
        };
        assert_eq!(roots(None).unwrap(), AwsTrustRoots::Amazon);
        assert_eq!(roots(Some("")).unwrap(), AwsTrustRoots::Amazon);
        assert_eq!(roots(Some("amazon")).unwrap(), AwsTrustRoots::Amazon);
        assert_eq!(roots(Some("platform")).unwrap(), AwsTrustRoots::Platform);
        let refused = roots(Some("system")).unwrap_err().to_string();
        assert!(refused.contains("BERTH_AWS_TRUST_ROOTS"), "{refused}");
    }

    #[test]
    fn reads_the_reserved_domains_in_their_normal_form() {
        let config = Config::from_lookup(|name| {
            (name == "BERTH_RESERVED_DOMAINS").then(|| "Example.NET., status.example.org".into())
        })
        .unwrap();
        let reserved: Vec<&str> = config
            .reserved_domains
            .iter()
            .map(Hostname::as_str)
            .collect();
        assert_eq!(reserved, ["example.net", "status.example.org"]);
        let err = Config::from_lookup(|name| {
            (name == "BERTH_RESERVED_DOMAINS").then(|| "example.net,*.example.org".into())
        })
        .unwrap_err();
        assert!(
            err.to_string().contains("BERTH_RESERVED_DOMAINS: "),
            "{err}"
        );
    }

    #[test]
    fn reads_the_apps_domain_in_its_normal_form() {
        let config = Config::from_lookup(|n| {
            (n == "BERTH_APPS_DOMAIN").then(|| " Apps.Example.NET. ".into())
        })
        .expect("a valid domain");
        assert_eq!(
            config.apps_domain.as_ref().map(Hostname::as_str),
            Some("apps.example.net")
        );
        assert_eq!(apps_domain(Some("  ".into())).unwrap(), None);
        for bad in [
            "*.apps.example.net",
            "apps",
            "192.0.2.1",
            "apps example.net",
        ] {
            let err = apps_domain(Some(bad.into())).unwrap_err();
            assert!(
                err.to_string().contains("BERTH_APPS_DOMAIN"),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn reads_the_gateway_and_dns_servers() {
        let config = Config::from_lookup(|n| match n {
            "BERTH_GATEWAY_HOSTNAME" => Some("Gateway.Example.NET.".into()),
            "BERTH_GATEWAY_ADDRESSES" => Some("192.0.2.10, 2001:db8::10".into()),
            "BERTH_DNS_SERVERS" => Some("10.0.0.2,127.0.0.1:5353,[::1]:5300,::1".into()),
            _ => None,
        })
        .expect("valid values");
        assert_eq!(
            config.gateway_hostname.as_deref(),
            Some("gateway.example.net")
        );
        assert_eq!(
            config.gateway_addresses,
            vec![
                "192.0.2.10".parse::<IpAddr>().unwrap(),
                "2001:db8::10".parse().unwrap()
            ]
        );
        assert_eq!(
            config.dns_servers,
            vec![
                "10.0.0.2:53".parse::<SocketAddr>().unwrap(),
                "127.0.0.1:5353".parse().unwrap(),
                "[::1]:5300".parse().unwrap(),
                "[::1]:53".parse().unwrap()
            ]
        );
        for (name, bad) in [
            ("BERTH_GATEWAY_HOSTNAME", "not a host"),
            ("BERTH_GATEWAY_HOSTNAME", "192.0.2.1"),
            ("BERTH_GATEWAY_ADDRESSES", "192.0.2.300"),
            ("BERTH_GATEWAY_ADDRESSES", "192.0.2.1,,192.0.2.2"),
            ("BERTH_GATEWAY_ADDRESSES", "gateway.example.net"),
            ("BERTH_DNS_SERVERS", "127.0.0.1:0"),
            ("BERTH_DNS_SERVERS", "dns.example.net"),
            ("BERTH_DNS_SERVERS", "::1:53:x"),
        ] {
            assert!(
                Config::from_lookup(|n| (n == name).then(|| bad.into())).is_err(),
                "{name}={bad}"
            );
        }
    }

    #[test]
    fn reads_reserved_namespaces() {
        let config = Config::from_lookup(|n| {
            (n == "BERTH_RESERVED_NAMESPACES").then(|| "ingress-nginx,cert-manager*".into())
        })
        .expect("a valid list");
        assert!(config.reserved_namespaces.is_reserved("ingress-nginx"));
        assert!(config.reserved_namespaces.is_reserved("cert-manager-x"));
        assert!(config.reserved_namespaces.is_reserved("kube-system"));
        assert!(
            Config::from_lookup(|n| (n == "BERTH_RESERVED_NAMESPACES").then(|| "Nope".into()))
                .is_err()
        );
    }

    #[test]
    fn rejects_bad_values() {
        assert!(Config::from_lookup(|n| (n == "BERTH_SESSION_HOURS").then(|| "0".into())).is_err());
        assert!(
            Config::from_lookup(|n| (n == "BERTH_INSECURE_COOKIES").then(|| "yes".into())).is_err()
        );
        assert!(Config::from_lookup(|n| (n == "BERTH_TABLE").then(|| "ab".into())).is_err());
        assert!(
            Config::from_lookup(|n| (n == "BERTH_CLUSTER_TIMEOUT_SECONDS").then(|| "30".into()))
                .is_err()
        );
        assert!(
            Config::from_lookup(|n| (n == "BERTH_PRODUCTION_GRACE_SECONDS").then(|| "x".into()))
                .is_err()
        );
        // The deadline must leave the function time to answer and audit.
        assert!(
            Config::from_lookup(|n| (n == "BERTH_REQUEST_DEADLINE_SECONDS").then(|| "29".into()))
                .is_err()
        );
        let config =
            Config::from_lookup(|n| (n == "BERTH_REQUEST_DEADLINE_SECONDS").then(|| "5".into()))
                .expect("a valid deadline");
        assert_eq!(config.request_deadline, Duration::from_secs(5));
    }

    #[test]
    fn reads_the_public_url_and_the_signing_key() {
        let config = Config::from_lookup(|n| match n {
            "BERTH_PUBLIC_URL" => Some(" https://api.example.com/ ".into()),
            "BERTH_REGISTRY_SIGNING_KEY" => Some("kms:alias/berth-registry".into()),
            _ => None,
        })
        .expect("valid");
        assert_eq!(
            config.public_url.as_deref(),
            Some("https://api.example.com")
        );
        assert_eq!(
            config.registry_signing_key.as_deref(),
            Some("kms:alias/berth-registry")
        );
        for (name, value) in [
            ("BERTH_PUBLIC_URL", "api.example.com"),
            ("BERTH_PUBLIC_URL", "ftp://api.example.com"),
            ("BERTH_PUBLIC_URL", "https://"),
            ("BERTH_PUBLIC_URL", "https://user@api.example.com"),
            ("BERTH_PUBLIC_URL", "https://api.example.com/?x=1"),
            ("BERTH_REGISTRY_SIGNING_KEY", "/etc/key.pem"),
            ("BERTH_REGISTRY_SIGNING_KEY", "file:"),
            ("BERTH_REGISTRY_SIGNING_KEY", "vault:x"),
        ] {
            assert!(
                Config::from_lookup(|n| (n == name).then(|| value.into())).is_err(),
                "{name}={value}"
            );
        }
    }
}
