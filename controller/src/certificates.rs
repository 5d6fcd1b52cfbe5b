//! The certificates of an app's hosts, as the controller finds them before
//! each render: what the domain check reports, and whether the Ingress
//! redirects to HTTPS yet (`render::tls`).
//!
//! cert-manager, not Berth, makes a certificate's Secret, under the name
//! Berth chose in its Ingress (`object_names::certificate_secret`). Checked
//! at cert-manager v1.21.1: it writes the Secret only once the certificate
//! is signed (`pkg/controller/certificates/issuing/issuing_controller.go`),
//! annotated `cert-manager.io/certificate-name` (ingress-shim names the
//! Certificate after the Secret) and `cert-manager.io/issuer-kind`
//! (`issuing/internal/secret.go`), and by default with no owner, so it
//! would outlive the app. Berth recognises its Secret by both — the name it
//! chose, and those annotations saying cert-manager wrote it for a
//! ClusterIssuer's Certificate of that name — and then adds the App to its
//! owners, so that it goes with the app. A Secret of that name it cannot so
//! recognise is reported and left exactly as it is.
//!
//! The certificate is parsed with x509-parser; only `tls.crt` is read, and
//! nothing of a Secret but hostnames and dates is ever logged or reported.
//! While there is none, cert-manager's own reason may be read (never
//! written) from its Certificate (`cert-manager.io/v1`), where the kind
//! exists.

use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use kube::core::GroupVersionKind;
use kube::{Resource, ResourceExt};
use serde_json::json;
use x509_parser::extensions::GeneralName;
use x509_parser::pem::Pem;

use berth_cluster::crd::App;
use berth_domain::certificate::{CertificateFinding, CertificateState};

use crate::render::tls::{HostCertificate, ServedHost};

/// cert-manager's annotation naming the Certificate a Secret holds.
pub const CERTIFICATE_NAME_ANNOTATION: &str = "cert-manager.io/certificate-name";
/// cert-manager's annotation naming the kind of the Certificate's issuer.
pub const ISSUER_KIND_ANNOTATION: &str = "cert-manager.io/issuer-kind";
/// The key of the certificate chain in a `kubernetes.io/tls` Secret.
pub const CERTIFICATE_KEY: &str = "tls.crt";

const NO_ISSUER: &str = "no certificate issuer is configured (BERTH_TLS_CLUSTER_ISSUER): the \
                         hostname is served over plain HTTP only";

const NOT_SERVED: &str = "the app has no web process (an http process with a port), so no \
                          Ingress serves the hostname and no certificate is asked for";

/// What was found of each host's certificate, in the hosts' order: one
/// finding per host that is plain HTTP or takes its certificate from the
/// issuer (the ingress controller's and the operator's certificates are
/// not Berth's to look at). A host whose Secret could not be read keeps
/// what was found before.
pub async fn look(
    app: &App,
    hosts: &[ServedHost],
    client: &kube::Client,
) -> Vec<CertificateFinding> {
    let namespace = app.namespace().unwrap_or_default();
    let before = app
        .status
        .as_ref()
        .map(|status| status.certificates.as_slice())
        .unwrap_or_default();
    let looks = hosts.iter().map(|served| async {
        match &served.certificate {
            HostCertificate::None => Some(CertificateFinding::new(
                &served.host,
                CertificateState::None,
                None,
                NO_ISSUER,
            )),
            HostCertificate::NotServed => Some(CertificateFinding::new(
                &served.host,
                CertificateState::None,
                None,
                NOT_SERVED,
            )),
            HostCertificate::Issued { secret } => {
                match look_at(app, &namespace, &served.host, secret, client).await {
                    Ok(finding) => Some(finding),
                    Err(error) => {
                        tracing::warn!(app = %app.name_any(), secret = %secret, error = %error,
                            "the certificate's Secret could not be read; the last finding stands");
                        before
                            .iter()
                            .find(|finding| finding.hostname == served.host)
                            .cloned()
                    }
                }
            }
            HostCertificate::IngressDefault | HostCertificate::Operator { .. } => None,
        }
    });
    futures::future::join_all(looks)
        .await
        .into_iter()
        .flatten()
        .collect()
}

/// One host's certificate Secret, read; owned by the App once recognised.
async fn look_at(
    app: &App,
    namespace: &str,
    host: &str,
    secret_name: &str,
    client: &kube::Client,
) -> Result<CertificateFinding, kube::Error> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let Some(secret) = secrets.get_opt(secret_name).await? else {
        let why = cert_manager_says(client, namespace, secret_name).await;
        let message = match why {
            Some(why) => format!("cert-manager has not issued the certificate yet: {why}"),
            None => format!(
                "waiting for cert-manager to issue the certificate into Secret {secret_name}"
            ),
        };
        return Ok(CertificateFinding::new(
            host,
            CertificateState::Pending,
            None,
            message,
        ));
    };
    if !is_cert_managers(&secret, secret_name) {
        return Ok(CertificateFinding::new(
            host,
            CertificateState::Invalid,
            None,
            format!(
                "Secret {secret_name} was not written by cert-manager for this hostname's \
                 certificate (its annotations {CERTIFICATE_NAME_ANNOTATION} and \
                 {ISSUER_KIND_ANNOTATION} do not say so); Berth leaves it as it is"
            ),
        ));
    }
    own(app, &secrets, &secret).await?;
    let chain = secret
        .data
        .as_ref()
        .and_then(|data| data.get(CERTIFICATE_KEY))
        .map(|bytes| bytes.0.as_slice())
        .unwrap_or_default();
    Ok(match examine(chain, host) {
        Ok(not_after) => CertificateFinding::new(
            host,
            CertificateState::Issued,
            Some(not_after),
            format!("issued by cert-manager into Secret {secret_name}"),
        ),
        Err(why) => CertificateFinding::new(
            host,
            CertificateState::Invalid,
            None,
            format!("Secret {secret_name} {why}"),
        ),
    })
}

/// Whether cert-manager wrote the Secret for the Certificate Berth's
/// Ingress asks for: named as Berth named it, from a ClusterIssuer.
pub fn is_cert_managers(secret: &Secret, name: &str) -> bool {
    let annotations = secret.annotations();
    secret.metadata.name.as_deref() == Some(name)
        && annotations
            .get(CERTIFICATE_NAME_ANNOTATION)
            .map(String::as_str)
            == Some(name)
        && annotations.get(ISSUER_KIND_ANNOTATION).map(String::as_str) == Some("ClusterIssuer")
}

/// Adds the App to the Secret's owners (not as its controller: cert-manager
/// may be that), so the Secret is deleted with the app. A JSON patch whose
/// test holds it to the version read: a Secret changed or replaced since
/// is looked at again next round, never written over.
async fn own(app: &App, secrets: &Api<Secret>, secret: &Secret) -> Result<(), kube::Error> {
    let Some(owner) = owner_of(app) else {
        return Ok(());
    };
    let mut owners = secret.owner_references().to_vec();
    if owners.iter().any(|existing| existing.uid == owner.uid) {
        return Ok(());
    }
    owners.push(owner);
    let patch: json_patch::Patch = serde_json::from_value(json!([
        { "op": "test", "path": "/metadata/resourceVersion", "value": secret.resource_version() },
        { "op": "add", "path": "/metadata/ownerReferences", "value": owners },
    ]))
    .map_err(kube::Error::SerdeError)?;
    match secrets
        .patch(
            &secret.name_any(),
            &PatchParams::default(),
            &Patch::<()>::Json(patch),
        )
        .await
    {
        Ok(_) => Ok(()),
        // Changed since it was read (the test failed, 422) or gone: next round.
        Err(kube::Error::Api(response)) if matches!(response.code, 404 | 409 | 422) => Ok(()),
        Err(error) => Err(error),
    }
}

/// The App as a plain owner: no controller, and no blocking of its
/// deletion (which would need a grant on Apps' finalizers).
fn owner_of(app: &App) -> Option<OwnerReference> {
    Some(OwnerReference {
        api_version: App::api_version(&()).into_owned(),
        kind: App::kind(&()).into_owned(),
        name: app.metadata.name.clone()?,
        uid: app.metadata.uid.clone()?,
        controller: None,
        block_owner_deletion: None,
    })
}

/// When the certificate ends, if `chain` (PEM) starts with a certificate
/// for `host`; otherwise why not, in words that follow "Secret NAME".
pub fn examine(chain: &[u8], host: &str) -> Result<jiff::Timestamp, String> {
    let pem = Pem::iter_from_buffer(chain)
        .next()
        .and_then(Result::ok)
        .ok_or_else(|| format!("holds no PEM certificate in {CERTIFICATE_KEY}"))?;
    let certificate = pem
        .parse_x509()
        .map_err(|_| format!("holds no X.509 certificate that can be read in {CERTIFICATE_KEY}"))?;
    let names: Vec<String> = certificate
        .subject_alternative_name()
        .ok()
        .flatten()
        .map(|extension| {
            extension
                .value
                .general_names
                .iter()
                .filter_map(|name| match name {
                    GeneralName::DNSName(dns) => Some(dns.to_ascii_lowercase()),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default();
    if !names.iter().any(|name| covers(name, host)) {
        return Err(if names.is_empty() {
            "holds a certificate that names no DNS host".to_owned()
        } else {
            format!(
                "holds a certificate for {}, not for {host}",
                names.join(", ")
            )
        });
    }
    jiff::Timestamp::from_second(certificate.validity().not_after.timestamp())
        .map_err(|_| "holds a certificate whose end cannot be read".to_owned())
}

/// Whether a certificate's DNS name covers `host`: the same name, or a
/// wildcard standing for exactly its first label (RFC 6125, 6.4.3).
fn covers(name: &str, host: &str) -> bool {
    match name.strip_prefix("*.") {
        Some(parent) => host
            .split_once('.')
            .is_some_and(|(first, rest)| !first.is_empty() && rest == parent),
        None => name == host,
    }
}

/// cert-manager's reason, when its Certificate of that name says why it
/// is not ready (its `Issuing` condition carries a failed request's
/// message, `Ready` the rest); none where cert-manager is not installed,
/// or the Certificate is not there or says nothing.
async fn cert_manager_says(client: &kube::Client, namespace: &str, name: &str) -> Option<String> {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("cert-manager.io", "v1", "Certificate"),
        "certificates",
    );
    let certificates: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), namespace, &resource);
    let certificate = certificates.get_opt(name).await.ok().flatten()?;
    let conditions = certificate.data.pointer("/status/conditions")?.as_array()?;
    let message_of = |kind: &str| {
        conditions.iter().find_map(|condition| {
            (condition.get("type")?.as_str()? == kind
                && condition.get("status")?.as_str()? == "False")
                .then(|| condition.get("message")?.as_str().map(str::to_owned))
                .flatten()
        })
    };
    message_of("Issuing").or_else(|| message_of("Ready"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{CertificateParams, KeyPair};

    /// A PEM certificate for `names`, ending `days` from now.
    fn certificate(names: &[&str], days: i64) -> String {
        let mut params =
            CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
                .unwrap();
        let now = time::OffsetDateTime::now_utc();
        params.not_before = now - time::Duration::days(90);
        params.not_after = now + time::Duration::days(days);
        params
            .self_signed(&KeyPair::generate().unwrap())
            .unwrap()
            .pem()
    }

    #[test]
    fn a_certificate_for_the_host_is_read_to_its_end() {
        let pem = certificate(&["shop.example.com", "www.example.com"], 60);
        let end = examine(pem.as_bytes(), "www.example.com").unwrap();
        let days = end.duration_since(jiff::Timestamp::now()).as_hours() / 24;
        assert!((59..=60).contains(&days), "{days}");
        let expired = examine(
            certificate(&["shop.example.com"], -1).as_bytes(),
            "shop.example.com",
        );
        assert!(expired.unwrap() < jiff::Timestamp::now());
    }

    #[test]
    fn a_wildcard_covers_one_label() {
        let pem = certificate(&["*.example.com"], 60);
        assert!(examine(pem.as_bytes(), "shop.example.com").is_ok());
        assert!(examine(pem.as_bytes(), "a.shop.example.com").is_err());
        assert!(examine(pem.as_bytes(), "example.com").is_err());
    }

    #[test]
    fn anything_else_is_said_without_its_content() {
        let other = examine(
            certificate(&["other.example.com"], 60).as_bytes(),
            "shop.example.com",
        );
        assert_eq!(
            other,
            Err("holds a certificate for other.example.com, not for shop.example.com".to_owned())
        );
        let not_pem = examine(b"hunter2-not-a-certificate", "shop.example.com").unwrap_err();
        assert!(!not_pem.contains("hunter2"), "{not_pem}");
        let garbage = "-----BEGIN CERTIFICATE-----\naHVudGVyMg==\n-----END CERTIFICATE-----\n";
        let unreadable = examine(garbage.as_bytes(), "shop.example.com").unwrap_err();
        assert!(unreadable.contains("no X.509 certificate"), "{unreadable}");
        assert!(examine(b"", "shop.example.com").is_err());
    }

    #[test]
    fn a_secret_is_cert_managers_by_its_name_and_annotations() {
        let secret = |name: &str, annotations: &[(&str, &str)]| Secret {
            metadata: kube::api::ObjectMeta {
                name: Some(name.to_owned()),
                annotations: Some(
                    annotations
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect(),
                ),
                ..Default::default()
            },
            ..Default::default()
        };
        let name = "shop--tls-0123456789abcdef";
        let written = [
            (CERTIFICATE_NAME_ANNOTATION, name),
            (ISSUER_KIND_ANNOTATION, "ClusterIssuer"),
        ];
        assert!(is_cert_managers(&secret(name, &written), name));
        assert!(!is_cert_managers(&secret(name, &written[..1]), name));
        assert!(!is_cert_managers(
            &secret(name, &[(CERTIFICATE_NAME_ANNOTATION, "other"), written[1]]),
            name
        ));
        assert!(!is_cert_managers(
            &secret(name, &[written[0], (ISSUER_KIND_ANNOTATION, "Issuer")]),
            name
        ));
        assert!(!is_cert_managers(&secret(name, &[]), name));
    }
}
