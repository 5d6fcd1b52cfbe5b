//! HTTPS for an app's hosts: which certificate serves each, the Ingress's
//! `tls` entries, and the annotations that ask cert-manager for
//! certificates and the ingress controller for a redirect.
//!
//! cert-manager's ingress-shim (checked at cert-manager v1.21.1,
//! `pkg/controller/certificate-shim/sync.go`) makes one Certificate per
//! `tls` entry of an Ingress annotated `cert-manager.io/cluster-issuer`,
//! named after the entry's `secretName`, for the entry's hosts, owned by
//! the Ingress; it deletes the Certificate of an entry that is gone. So
//! Berth writes no cert-manager resource: where cert-manager is absent the
//! annotation is inert. Each custom domain has an entry of its own, so one
//! domain whose DNS is not ready yet holds back no other's certificate.

use std::collections::BTreeMap;

use k8s_openapi::api::networking::v1::IngressTLS;

use berth_cluster::crd::object_names;
use berth_domain::certificate::{CertificateFinding, CertificateState};
use berth_domain::names::{NamespaceName, SecretName};

/// The annotation that has cert-manager issue every `tls` entry's
/// certificate from a ClusterIssuer (Berth writes no Issuer into tenants'
/// namespaces).
pub const CLUSTER_ISSUER_ANNOTATION: &str = "cert-manager.io/cluster-issuer";
/// ingress-nginx: redirect plain HTTP to HTTPS for hosts with a `tls`
/// entry (its default is `true`, even while the entry's Secret is missing
/// and the host is served the default certificate).
pub const NGINX_SSL_REDIRECT: &str = "nginx.ingress.kubernetes.io/ssl-redirect";
/// ingress-nginx: redirect plain HTTP to HTTPS whether or not the host has
/// a `tls` entry (a default host served by the default certificate has none).
pub const NGINX_FORCE_SSL_REDIRECT: &str = "nginx.ingress.kubernetes.io/force-ssl-redirect";
/// ingress-nginx: response headers from a ConfigMap (`namespace/name`):
/// its only per-Ingress way to send `Strict-Transport-Security` without
/// snippets.
pub const NGINX_CUSTOM_HEADERS: &str = "nginx.ingress.kubernetes.io/custom-headers";

/// The operator's HTTPS settings (`BERTH_TLS_*`, see docs/configuration.md).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TlsSettings {
    /// The ClusterIssuer every custom domain's certificate comes from; none:
    /// custom domains are served over plain HTTP only.
    pub cluster_issuer: Option<String>,
    pub default_host: DefaultHostCertificate,
    pub redirect: Redirect,
    /// ingress-nginx's `custom-headers` ConfigMap (`namespace/name`) holding
    /// `Strict-Transport-Security`, sent once the app redirects; none: Berth
    /// asks for no HSTS.
    pub hsts_headers: Option<String>,
}

impl TlsSettings {
    /// The settings from the operator's texts (`BERTH_TLS_CLUSTER_ISSUER`,
    /// `BERTH_TLS_DEFAULT_HOST_CERTIFICATE`, `BERTH_TLS_REDIRECT`,
    /// `BERTH_TLS_HSTS_HEADERS`; each `None` when unset), or what is wrong
    /// with them.
    pub fn parse(
        cluster_issuer: Option<&str>,
        default_host: Option<&str>,
        redirect: Option<&str>,
        hsts_headers: Option<&str>,
    ) -> Result<Self, String> {
        let cluster_issuer = cluster_issuer
            .map(|issuer| {
                SecretName::parse(issuer)
                    .map(|_| issuer.to_owned())
                    .map_err(|why| {
                        format!("BERTH_TLS_CLUSTER_ISSUER (a ClusterIssuer's name) {why}")
                    })
            })
            .transpose()?;
        let default_host = match (default_host, &cluster_issuer) {
            (None, Some(_)) | (Some("ingress-default"), _) => {
                DefaultHostCertificate::IngressDefault
            }
            (None, None) | (Some("none"), _) => DefaultHostCertificate::None,
            (Some("issuer"), Some(_)) => DefaultHostCertificate::Issuer,
            (Some("issuer"), None) => {
                return Err("BERTH_TLS_DEFAULT_HOST_CERTIFICATE=issuer needs \
                            BERTH_TLS_CLUSTER_ISSUER"
                    .to_owned());
            }
            (Some(secret), None) => DefaultHostCertificate::Secret(
                SecretName::parse(secret)
                    .map(|_| secret.to_owned())
                    .map_err(|why| {
                        format!(
                            "BERTH_TLS_DEFAULT_HOST_CERTIFICATE must be none, ingress-default, \
                             issuer or a Secret's name, which {why}"
                        )
                    })?,
            ),
            (Some(_), Some(_)) => {
                return Err(
                    "BERTH_TLS_DEFAULT_HOST_CERTIFICATE cannot name a Secret while \
                            BERTH_TLS_CLUSTER_ISSUER is set: cert-manager issues a certificate \
                            into the Secret of every tls entry of an Ingress it is asked to \
                            serve, and would write over the wildcard one; use ingress-default"
                        .to_owned(),
                );
            }
        };
        let redirect = match redirect {
            None | Some("ingress-nginx") => Redirect::IngressNginx,
            Some("off") => Redirect::Off,
            Some(_) => return Err("BERTH_TLS_REDIRECT must be ingress-nginx or off".to_owned()),
        };
        let hsts_headers = match (hsts_headers, redirect) {
            (None, _) => None,
            (Some(_), Redirect::Off) => {
                return Err(
                    "BERTH_TLS_HSTS_HEADERS names ingress-nginx's custom-headers \
                            ConfigMap: it needs BERTH_TLS_REDIRECT=ingress-nginx"
                        .to_owned(),
                );
            }
            (Some(reference), Redirect::IngressNginx) => {
                let valid = reference.split_once('/').is_some_and(|(namespace, name)| {
                    NamespaceName::parse(namespace).is_ok() && SecretName::parse(name).is_ok()
                });
                if !valid {
                    return Err(
                        "BERTH_TLS_HSTS_HEADERS must be a ConfigMap as namespace/name".to_owned(),
                    );
                }
                Some(reference.to_owned())
            }
        };
        Ok(Self {
            cluster_issuer,
            default_host,
            redirect,
            hsts_headers,
        })
    }
}

/// Which certificate serves the default host `{app}--{environment}--{project}.{BERTH_APPS_DOMAIN}`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum DefaultHostCertificate {
    /// None: the default host is plain HTTP (no `tls` entry, no redirect).
    #[default]
    None,
    /// The ingress controller's default certificate (a wildcard the
    /// operator gave it, e.g. ingress-nginx's `--default-ssl-certificate`):
    /// the host is in no `tls` entry, since cert-manager would warn on an
    /// entry without a `secretName`, and skip the whole Ingress for two.
    IngressDefault,
    /// A certificate of its own from the cluster issuer, as a custom domain.
    Issuer,
    /// This Secret of the app's namespace, which the operator provides: the
    /// same in every app's `tls` entry. Never with an issuer (cert-manager
    /// would issue a certificate into it), and never a wildcard shared by
    /// tenants: an app may read any Secret of its namespace.
    Secret(String),
}

/// Whether Berth asks the ingress controller to redirect plain HTTP.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Redirect {
    /// With ingress-nginx's annotations.
    #[default]
    IngressNginx,
    /// No annotation: the ingress controller does as it is configured.
    Off,
}

/// How one host of the app is served.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostCertificate {
    /// Not served at all: the app has no web process, so no Ingress.
    NotServed,
    /// Plain HTTP only.
    None,
    /// A certificate cert-manager issues into this Secret, named by Berth.
    Issued { secret: String },
    /// The ingress controller's default certificate.
    IngressDefault,
    /// The operator's Secret.
    Operator { secret: String },
}

/// A host of the app and its certificate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServedHost {
    pub host: String,
    pub certificate: HostCertificate,
}

impl ServedHost {
    /// A custom domain's.
    pub fn custom(app: &str, host: &str, settings: &TlsSettings) -> Self {
        let certificate = match &settings.cluster_issuer {
            Some(_) => HostCertificate::Issued {
                secret: object_names::certificate_secret(app, host),
            },
            None => HostCertificate::None,
        };
        Self {
            host: host.to_owned(),
            certificate,
        }
    }

    /// The default host's.
    pub fn default_host(app: &str, host: &str, settings: &TlsSettings) -> Self {
        let certificate = match &settings.default_host {
            DefaultHostCertificate::None => HostCertificate::None,
            DefaultHostCertificate::IngressDefault => HostCertificate::IngressDefault,
            DefaultHostCertificate::Issuer => HostCertificate::Issued {
                secret: object_names::certificate_secret(app, host),
            },
            DefaultHostCertificate::Secret(secret) => HostCertificate::Operator {
                secret: secret.clone(),
            },
        };
        Self {
            host: host.to_owned(),
            certificate,
        }
    }

    /// Whether the host has its certificate: the operator's always do; one
    /// from the issuer once the controller found it issued.
    pub fn certified(&self, findings: &[CertificateFinding]) -> bool {
        match &self.certificate {
            HostCertificate::NotServed | HostCertificate::None => false,
            HostCertificate::IngressDefault | HostCertificate::Operator { .. } => true,
            HostCertificate::Issued { .. } => CertificateFinding::for_host(findings, &self.host)
                .is_some_and(|finding| finding.state == CertificateState::Issued),
        }
    }
}

/// The Ingress's `tls` entries: one per host with a Secret, in the hosts'
/// order.
pub fn entries(hosts: &[ServedHost]) -> Vec<IngressTLS> {
    hosts
        .iter()
        .filter_map(|served| match &served.certificate {
            HostCertificate::Issued { secret } | HostCertificate::Operator { secret } => {
                Some(IngressTLS {
                    hosts: Some(vec![served.host.clone()]),
                    secret_name: Some(secret.clone()),
                })
            }
            HostCertificate::NotServed
            | HostCertificate::None
            | HostCertificate::IngressDefault => None,
        })
        .collect()
}

/// The Ingress's annotations: the issuer, when a host takes a certificate
/// from it; and, when any host is served over HTTPS, the redirect, on once
/// every host has its certificate (before, the redirect would send
/// visitors to the ingress controller's placeholder certificate), with
/// HSTS from then on. ingress-nginx's redirect is one setting per Ingress,
/// so one host still waiting for its certificate keeps all of the app's on
/// plain HTTP as well.
pub fn annotations(
    hosts: &[ServedHost],
    settings: &TlsSettings,
    findings: &[CertificateFinding],
) -> BTreeMap<String, String> {
    let mut annotations = BTreeMap::new();
    let issued = hosts
        .iter()
        .any(|served| matches!(served.certificate, HostCertificate::Issued { .. }));
    if let (true, Some(issuer)) = (issued, &settings.cluster_issuer) {
        annotations.insert(CLUSTER_ISSUER_ANNOTATION.to_owned(), issuer.clone());
    }
    let https = hosts.iter().any(|served| {
        !matches!(
            served.certificate,
            HostCertificate::None | HostCertificate::NotServed
        )
    });
    if !https || settings.redirect == Redirect::Off {
        return annotations;
    }
    let redirect = hosts.iter().all(|served| served.certified(findings));
    for key in [NGINX_SSL_REDIRECT, NGINX_FORCE_SSL_REDIRECT] {
        annotations.insert(key.to_owned(), redirect.to_string());
    }
    if let (true, Some(headers)) = (redirect, &settings.hsts_headers) {
        annotations.insert(NGINX_CUSTOM_HEADERS.to_owned(), headers.clone());
    }
    annotations
}

#[cfg(test)]
mod tests {
    use super::*;

    fn issuer() -> TlsSettings {
        TlsSettings {
            cluster_issuer: Some("letsencrypt".to_owned()),
            default_host: DefaultHostCertificate::IngressDefault,
            ..TlsSettings::default()
        }
    }

    fn issued(host: &str) -> CertificateFinding {
        CertificateFinding::new(host, CertificateState::Issued, None, "issued")
    }

    #[test]
    fn a_custom_domain_takes_a_secret_of_its_own_from_the_issuer() {
        let settings = issuer();
        let shop = ServedHost::custom("shop", "shop.example.com", &settings);
        let www = ServedHost::custom("shop", "www.example.com", &settings);
        let default = ServedHost::default_host("shop", "shop--prod--store.apps.net", &settings);
        let hosts = [shop.clone(), www.clone(), default];
        let entries = entries(&hosts);
        assert_eq!(
            entries.len(),
            2,
            "the default host is served by the default certificate"
        );
        assert_eq!(entries[0].hosts, Some(vec!["shop.example.com".to_owned()]));
        assert_eq!(
            entries[0].secret_name.as_deref(),
            Some(object_names::certificate_secret("shop", "shop.example.com").as_str())
        );
        assert_ne!(entries[0].secret_name, entries[1].secret_name);
        // Another app's Secret for the same host is another Secret.
        assert_ne!(
            object_names::certificate_secret("shop", "shop.example.com"),
            object_names::certificate_secret("shop2", "shop.example.com")
        );
    }

    #[test]
    fn the_redirect_waits_for_every_hosts_certificate() {
        let settings = TlsSettings {
            hsts_headers: Some("ingress-nginx/berth-hsts".to_owned()),
            ..issuer()
        };
        let hosts = [
            ServedHost::custom("shop", "shop.example.com", &settings),
            ServedHost::custom("shop", "www.example.com", &settings),
            ServedHost::default_host("shop", "shop--prod--store.apps.net", &settings),
        ];
        let waiting = annotations(&hosts, &settings, &[issued("shop.example.com")]);
        assert_eq!(waiting[CLUSTER_ISSUER_ANNOTATION], "letsencrypt");
        assert_eq!(waiting[NGINX_SSL_REDIRECT], "false");
        assert_eq!(waiting[NGINX_FORCE_SSL_REDIRECT], "false");
        assert!(!waiting.contains_key(NGINX_CUSTOM_HEADERS));
        let pending = CertificateFinding::new(
            "www.example.com",
            CertificateState::Pending,
            None,
            "pending",
        );
        let still = annotations(&hosts, &settings, &[issued("shop.example.com"), pending]);
        assert_eq!(still[NGINX_SSL_REDIRECT], "false");
        let all = annotations(
            &hosts,
            &settings,
            &[issued("shop.example.com"), issued("www.example.com")],
        );
        assert_eq!(all[NGINX_SSL_REDIRECT], "true");
        assert_eq!(all[NGINX_FORCE_SSL_REDIRECT], "true");
        assert_eq!(all[NGINX_CUSTOM_HEADERS], "ingress-nginx/berth-hsts");
    }

    #[test]
    fn without_tls_settings_nothing_is_asked() {
        let settings = TlsSettings::default();
        let hosts = [
            ServedHost::custom("shop", "shop.example.com", &settings),
            ServedHost::default_host("shop", "shop--prod--store.apps.net", &settings),
        ];
        assert!(entries(&hosts).is_empty());
        assert!(annotations(&hosts, &settings, &[]).is_empty());
    }

    #[test]
    fn a_default_host_alone_on_the_wildcard_redirects_at_once() {
        let settings = TlsSettings {
            default_host: DefaultHostCertificate::IngressDefault,
            ..TlsSettings::default()
        };
        let hosts = [ServedHost::default_host(
            "shop",
            "shop--prod--store.apps.net",
            &settings,
        )];
        assert!(entries(&hosts).is_empty());
        let annotations = annotations(&hosts, &settings, &[]);
        assert!(!annotations.contains_key(CLUSTER_ISSUER_ANNOTATION));
        assert_eq!(annotations[NGINX_FORCE_SSL_REDIRECT], "true");
        let off = TlsSettings {
            redirect: Redirect::Off,
            ..settings.clone()
        };
        assert!(super::annotations(&hosts, &off, &[]).is_empty());
    }

    #[test]
    fn settings_are_parsed_whole() {
        let parse = |issuer, default_host, redirect, hsts| {
            TlsSettings::parse(issuer, default_host, redirect, hsts)
        };
        assert_eq!(parse(None, None, None, None), Ok(TlsSettings::default()));
        assert_eq!(parse(Some("letsencrypt"), None, None, None), Ok(issuer()));
        assert_eq!(
            parse(Some("letsencrypt"), Some("issuer"), Some("off"), None)
                .map(|settings| (settings.default_host, settings.redirect)),
            Ok((DefaultHostCertificate::Issuer, Redirect::Off))
        );
        assert_eq!(
            parse(
                None,
                Some("wildcard-apps"),
                None,
                Some("ingress-nginx/berth-hsts")
            )
            .map(|settings| (settings.default_host, settings.hsts_headers)),
            Ok((
                DefaultHostCertificate::Secret("wildcard-apps".to_owned()),
                Some("ingress-nginx/berth-hsts".to_owned())
            ))
        );
        for refused in [
            parse(Some("Lets Encrypt"), None, None, None),
            parse(None, Some("issuer"), None, None),
            parse(Some("letsencrypt"), Some("wildcard-apps"), None, None),
            parse(None, Some("Wildcard"), None, None),
            parse(None, None, Some("traefik"), None),
            parse(None, None, Some("off"), Some("ingress-nginx/berth-hsts")),
            parse(None, None, None, Some("berth-hsts")),
        ] {
            assert!(refused.is_err(), "{refused:?}");
        }
    }

    #[test]
    fn an_operators_secret_serves_the_default_host() {
        let settings = TlsSettings {
            default_host: DefaultHostCertificate::Secret("wildcard-apps".to_owned()),
            ..TlsSettings::default()
        };
        let hosts = [ServedHost::default_host(
            "shop",
            "shop--prod--store.apps.net",
            &settings,
        )];
        let entries = entries(&hosts);
        assert_eq!(entries[0].secret_name.as_deref(), Some("wildcard-apps"));
        assert_eq!(
            annotations(&hosts, &settings, &[])[NGINX_SSL_REDIRECT],
            "true"
        );
    }
}
