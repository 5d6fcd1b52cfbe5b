//! HTTPS for apps' hosts through cert-manager (docs/api-notes.md,
//! "Hostnames"): the Ingress's `tls` entries and annotations, the
//! certificates the controller reads from the Secrets cert-manager writes
//! (made here as cert-manager makes them, with certificates from rcgen),
//! what the domain check says of each, and which Secrets go with their app.
//! The test controller names the ClusterIssuer `CLUSTER_ISSUER`; no
//! cert-manager runs, so every Secret here is the test's.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::networking::v1::Ingress;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ObjectMeta, PostParams};
use serde_json::{Value, json};

use berth_cluster::crd::object_names;
use berth_controller::certificates::{CERTIFICATE_NAME_ANNOTATION, ISSUER_KIND_ANNOTATION};
use berth_controller::render::tls::{CLUSTER_ISSUER_ANNOTATION, NGINX_SSL_REDIRECT};

use crate::support::cluster::{APPS_DOMAIN, CLUSTER_ISSUER};
use crate::support::dns::TestDns;
use crate::support::{TestApp, eventually, wait_bound};

/// A PEM certificate for `names`, ending `days` from now.
fn certificate(names: &[&str], days: i64) -> String {
    let mut params = rcgen::CertificateParams::new(
        names
            .iter()
            .map(|name| name.to_string())
            .collect::<Vec<_>>(),
    )
    .expect("names");
    let now = time::OffsetDateTime::now_utc();
    params.not_before = now - time::Duration::days(90);
    params.not_after = now + time::Duration::days(days);
    params
        .self_signed(&rcgen::KeyPair::generate().expect("a key"))
        .expect("a certificate")
        .pem()
}

/// The Secret cert-manager writes for app `app`'s host (its annotations
/// as cert-manager v1.21.1 sets them), holding `chain`; without them when
/// `cert_managers` is false.
fn tls_secret(app: &str, host: &str, chain: &str, cert_managers: bool) -> Secret {
    let name = object_names::certificate_secret(app, host);
    let annotations = cert_managers.then(|| {
        BTreeMap::from([
            (CERTIFICATE_NAME_ANNOTATION.to_owned(), name.clone()),
            (
                ISSUER_KIND_ANNOTATION.to_owned(),
                "ClusterIssuer".to_owned(),
            ),
            (
                "cert-manager.io/issuer-name".to_owned(),
                CLUSTER_ISSUER.to_owned(),
            ),
            (
                "cert-manager.io/issuer-group".to_owned(),
                "cert-manager.io".to_owned(),
            ),
            ("cert-manager.io/alt-names".to_owned(), host.to_owned()),
        ])
    });
    Secret {
        metadata: ObjectMeta {
            name: Some(name),
            annotations,
            labels: Some(BTreeMap::from([(
                "controller.cert-manager.io/fao".to_owned(),
                "true".to_owned(),
            )])),
            ..ObjectMeta::default()
        },
        type_: Some("kubernetes.io/tls".to_owned()),
        data: Some(BTreeMap::from([
            ("tls.crt".to_owned(), ByteString(chain.as_bytes().to_vec())),
            (
                "tls.key".to_owned(),
                ByteString(b"not-a-key-the-test-never-reads".to_vec()),
            ),
        ])),
        ..Secret::default()
    }
}

/// An API with the cluster asking `dns` for names, and a provisioned
/// environment: (the API, the apps' path, the namespace).
async fn environment(dns: &TestDns) -> (TestApp, String, String) {
    let server = dns.address;
    let app = TestApp::with_cluster_config(move |config| config.dns_servers = vec![server]).await;
    let project = app.ready_environment("tls", "prod").await;
    let apps = format!("/api/v1/projects/{project}/environments/prod/apps");
    (app, apps, format!("{project}-prod"))
}

/// The first `Some` of `look`, polled until the wait bound.
async fn until<T, Fut>(what: &str, mut look: impl FnMut() -> Fut) -> T
where
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + wait_bound();
    loop {
        if let Some(found) = look().await {
            return found;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}: not within the wait bound"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

async fn ingress_of(
    app: &TestApp,
    namespace: &str,
    what: &str,
    check: impl Fn(&Ingress) -> bool,
) -> Ingress {
    let ingresses: Api<Ingress> = Api::namespaced(app.cluster().client.clone(), namespace);
    until(what, || async {
        ingresses
            .get_opt("web")
            .await
            .ok()
            .flatten()
            .filter(|ingress| check(ingress))
    })
    .await
}

fn tls_hosts(ingress: &Ingress) -> Vec<(String, String)> {
    ingress
        .spec
        .as_ref()
        .and_then(|spec| spec.tls.clone())
        .unwrap_or_default()
        .into_iter()
        .map(|entry| {
            (
                entry.hosts.unwrap_or_default().join(","),
                entry.secret_name.unwrap_or_default(),
            )
        })
        .collect()
}

fn annotation(ingress: &Ingress, key: &str) -> Option<String> {
    ingress.annotations().get(key).cloned()
}

#[tokio::test]
async fn every_domain_has_a_tls_entry_of_its_own_and_a_removed_one_goes() {
    let dns = TestDns::start().await;
    let (app, apps, namespace) = environment(&dns).await;
    let shop = format!("{}.example.test", crate::support::unique("shop"));
    let www = format!("{}.example.test", crate::support::unique("www"));
    app.verify_domains(&app.owner, &[&shop, &www]).await;
    app.create_app(
        &apps,
        json!({ "name": "web", "image": "nginx:1.27", "port": 80, "domains": [shop, www] }),
    )
    .await;
    let ingress = ingress_of(
        &app,
        &namespace,
        "the Ingress with two tls entries",
        |ingress| tls_hosts(ingress).len() == 2,
    )
    .await;
    assert_eq!(
        tls_hosts(&ingress),
        [
            (shop.clone(), object_names::certificate_secret("web", &shop)),
            (www.clone(), object_names::certificate_secret("web", &www)),
        ]
    );
    assert_eq!(
        annotation(&ingress, CLUSTER_ISSUER_ANNOTATION).as_deref(),
        Some(CLUSTER_ISSUER)
    );
    // No certificate yet: no redirect to a placeholder certificate.
    assert_eq!(
        annotation(&ingress, NGINX_SSL_REDIRECT).as_deref(),
        Some("false")
    );
    // The default host is a rule, served by the ingress controller's
    // wildcard certificate: in no tls entry.
    let rules: Vec<String> = ingress
        .spec
        .as_ref()
        .and_then(|spec| spec.rules.clone())
        .unwrap_or_default()
        .into_iter()
        .filter_map(|rule| rule.host)
        .collect();
    assert_eq!(rules.len(), 3);
    assert!(rules[2].ends_with(&format!(".{APPS_DOMAIN}")));

    app.request(http::Method::PATCH, &format!("{apps}/web"))
        .by(&app.owner)
        .json(json!({ "domains": [shop] }))
        .send()
        .await
        .assert_status(200);
    let ingress = ingress_of(&app, &namespace, "one tls entry left", |ingress| {
        tls_hosts(ingress).len() == 1
    })
    .await;
    assert_eq!(tls_hosts(&ingress)[0].0, shop);
}

/// The domain check's `certificate` of each of `hostnames` (the app's, in
/// its order), by hostname.
async fn certificates(app: &TestApp, path: &str, hostnames: &[&str]) -> BTreeMap<String, Value> {
    crate::domains::check(app, path, hostnames)
        .await
        .into_iter()
        .map(|entry| {
            (
                entry["hostname"].as_str().unwrap().to_owned(),
                entry["certificate"].clone(),
            )
        })
        .collect()
}

#[tokio::test]
async fn the_domain_check_says_where_each_certificate_stands() {
    let dns = TestDns::start().await;
    let (app, apps, namespace) = environment(&dns).await;
    let host = |name: &str| format!("{}.example.test", crate::support::unique(name));
    let (valid, expiring, expired, garbage, foreign, pending) = (
        host("valid"),
        host("expiring"),
        host("expired"),
        host("garbage"),
        host("foreign"),
        host("pending"),
    );
    let secrets: Api<Secret> = Api::namespaced(app.cluster().client.clone(), &namespace);
    let wildcard = format!("*.{}", valid.split_once('.').unwrap().1);
    for secret in [
        tls_secret("shop", &valid, &certificate(&[&wildcard], 80), true),
        tls_secret("shop", &expiring, &certificate(&[&expiring], 10), true),
        tls_secret("shop", &expired, &certificate(&[&expired], -2), true),
        tls_secret("shop", &garbage, "hunter2-not-a-certificate", true),
        tls_secret("shop", &foreign, &certificate(&[&foreign], 80), false),
    ] {
        secrets
            .create(&PostParams::default(), &secret)
            .await
            .expect("a Secret");
    }
    let hostnames = [&valid, &expiring, &expired, &garbage, &foreign, &pending];
    let listed: Vec<&str> = hostnames.iter().map(|host| host.as_str()).collect();
    app.verify_domains(&app.owner, &listed).await;
    app.create_app(
        &apps,
        json!({ "name": "shop", "image": "nginx:1.27", "port": 80, "domains": hostnames }),
    )
    .await;
    let path = format!("{apps}/shop");
    let found = until("the controller looked at every certificate", || async {
        let found = certificates(&app, &path, &listed).await;
        found
            .values()
            .all(|certificate| {
                certificate["message"]
                    != "the controller has not looked at this hostname's certificate yet"
            })
            .then_some(found)
    })
    .await;
    let state = |host: &String| found[host]["state"].as_str().unwrap().to_owned();
    assert_eq!(state(&valid), "issued", "{:?}", found[&valid]);
    assert!(found[&valid]["not_after"].is_string());
    assert_eq!(state(&expiring), "expiring", "{:?}", found[&expiring]);
    assert_eq!(state(&expired), "expired", "{:?}", found[&expired]);
    assert_eq!(state(&garbage), "invalid");
    let said = found[&garbage]["message"].as_str().unwrap();
    assert!(
        !said.contains("hunter2"),
        "no content of a Secret is shown: {said}"
    );
    assert_eq!(state(&foreign), "invalid");
    assert!(
        found[&foreign]["message"]
            .as_str()
            .unwrap()
            .contains("leaves it as it is"),
        "{:?}",
        found[&foreign]
    );
    assert_eq!(state(&pending), "pending");
    assert_eq!(found[&pending]["not_after"], Value::Null);

    // Secrets cert-manager wrote for the app go with it; the one Berth
    // could not recognise stays as it is.
    let valid_secret = object_names::certificate_secret("shop", &valid);
    let foreign_secret = object_names::certificate_secret("shop", &foreign);
    let owned = secrets.get(&valid_secret).await.expect("the Secret");
    assert_eq!(owned.owner_references()[0].kind, "App");
    assert!(owned.owner_references()[0].controller.is_none());
    assert!(
        secrets
            .get(&foreign_secret)
            .await
            .expect("the Secret")
            .owner_references()
            .is_empty()
    );
    app.request(http::Method::DELETE, &path)
        .by(&app.owner)
        .send()
        .await
        .assert_status(204);
    eventually("the recognised certificates go with the app", || async {
        secrets
            .get_opt(&valid_secret)
            .await
            .ok()
            .flatten()
            .is_none()
    })
    .await;
    assert!(
        secrets
            .get_opt(&foreign_secret)
            .await
            .expect("a read")
            .is_some()
    );
    secrets
        .delete(&foreign_secret, &DeleteParams::default())
        .await
        .expect("cleaned up");
}

#[tokio::test]
async fn a_secret_cannot_take_a_certificates_name() {
    let dns = TestDns::start().await;
    let (app, apps, _) = environment(&dns).await;
    let secrets = apps.replace("/apps", "/secrets");
    let name = object_names::certificate_secret("shop", "shop.example.test");
    app.request(http::Method::PUT, &format!("{secrets}/{name}"))
        .by(&app.owner)
        .json(json!({ "data": { "a": "b" } }))
        .send()
        .await
        .assert_problem(409, "conflict");
    app.post(&apps)
        .by(&app.owner)
        .json(json!({ "name": "reader", "image": "nginx:1.27",
            "env": [{ "name": "KEY", "secret": { "name": name, "key": "tls.key" } }] }))
        .send()
        .await
        .assert_problem(422, "validation_failed");
}

/// cert-manager's Certificate kind, as far as Berth reads it: installed
/// here when the cluster has none (the stand-in; a real cluster without
/// cert-manager), and left in place (it is cluster-wide, like the real one).
async fn certificate_kind(client: &kube::Client) {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let name = "certificates.cert-manager.io";
    if crds.get_opt(name).await.expect("a read").is_none() {
        let definition: CustomResourceDefinition = serde_json::from_value(json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": { "name": name },
            "spec": {
                "group": "cert-manager.io",
                "names": { "kind": "Certificate", "listKind": "CertificateList",
                           "plural": "certificates", "singular": "certificate" },
                "scope": "Namespaced",
                "versions": [{
                    "name": "v1", "served": true, "storage": true,
                    "subresources": { "status": {} },
                    "schema": { "openAPIV3Schema": {
                        "type": "object", "x-kubernetes-preserve-unknown-fields": true
                    } }
                }]
            }
        }))
        .expect("a CRD");
        match crds.create(&PostParams::default(), &definition).await {
            Ok(_) => {}
            // Another test made it meanwhile.
            Err(kube::Error::Api(response)) if response.code == 409 => {}
            Err(error) => panic!("installing the Certificate CRD: {error}"),
        }
    }
    let resource = certificate_resource();
    eventually("the Certificate kind is served", || async {
        let api: Api<kube::api::DynamicObject> = Api::all_with(client.clone(), &resource);
        api.list(&kube::api::ListParams::default().limit(1))
            .await
            .is_ok()
    })
    .await;
}

fn certificate_resource() -> kube::api::ApiResource {
    kube::api::ApiResource::from_gvk_with_plural(
        &kube::core::GroupVersionKind::gvk("cert-manager.io", "v1", "Certificate"),
        "certificates",
    )
}

#[tokio::test]
async fn while_no_certificate_is_issued_cert_managers_reason_is_shown() {
    let dns = TestDns::start().await;
    let (app, apps, namespace) = environment(&dns).await;
    let client = app.cluster().client.clone();
    certificate_kind(&client).await;
    let host = format!("{}.example.test", crate::support::unique("failing"));
    let name = object_names::certificate_secret("shop", &host);
    // The Certificate ingress-shim makes, and what cert-manager says of a
    // failed request (its Issuing condition).
    let resources: Api<kube::api::DynamicObject> =
        Api::namespaced_with(client.clone(), &namespace, &certificate_resource());
    let certificate: kube::api::DynamicObject = serde_json::from_value(json!({
        "apiVersion": "cert-manager.io/v1",
        "kind": "Certificate",
        "metadata": { "name": name },
        "spec": { "secretName": name, "dnsNames": [host],
                  "issuerRef": { "name": CLUSTER_ISSUER, "kind": "ClusterIssuer" } }
    }))
    .expect("a Certificate");
    resources
        .create(&PostParams::default(), &certificate)
        .await
        .expect("the Certificate");
    let reason = "The certificate request has failed to complete and will be retried: \
                  Failed to wait for order resource to become ready: 403 urn:ietf:params:acme:error:unauthorized";
    resources
        .patch_status(
            &name,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({ "status": { "conditions": [
                { "type": "Ready", "status": "False", "reason": "DoesNotExist",
                  "message": "Issuing certificate as Secret does not exist" },
                { "type": "Issuing", "status": "False", "reason": "Failed", "message": reason }
            ] } })),
        )
        .await
        .expect("its status");

    app.verify_domains(&app.owner, &[&host]).await;
    app.create_app(
        &apps,
        json!({ "name": "shop", "image": "nginx:1.27", "port": 80, "domains": [host] }),
    )
    .await;
    let path = format!("{apps}/shop");
    let found = until("cert-manager's reason is shown", || async {
        let found = certificates(&app, &path, &[&host]).await;
        let message = found[&host]["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        message
            .starts_with("cert-manager has not issued the certificate yet: ")
            .then_some(found)
    })
    .await;
    assert_eq!(found[&host]["state"], "pending");
    // A real cert-manager would have said its own reason meanwhile.
    if app.cluster().standin.is_some() {
        assert_eq!(
            found[&host]["message"],
            format!("cert-manager has not issued the certificate yet: {reason}")
        );
    }
    resources
        .delete(&name, &DeleteParams::default())
        .await
        .expect("cleaned up");
}

/// The HTTP-01 solver's Pod as cert-manager v1.21.1 makes it in the
/// Certificate's namespace (`pkg/issuer/acme/http/pod.go`, with the
/// controller's default flags: its resources, `runAsNonRoot`).
fn solver_pod() -> k8s_openapi::api::core::v1::Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "generateName": "cm-acme-http-solver-",
            "labels": {
                "acme.cert-manager.io/http-domain": "1385353417",
                "acme.cert-manager.io/http-token": "1144712348",
                "acme.cert-manager.io/http01-solver": "true"
            },
            "annotations": {
                "sidecar.istio.io/inject": "false",
                "cluster-autoscaler.kubernetes.io/safe-to-evict": "true"
            }
        },
        "spec": {
            "automountServiceAccountToken": false,
            "enableServiceLinks": false,
            "nodeSelector": { "kubernetes.io/os": "linux" },
            "restartPolicy": "OnFailure",
            "securityContext": {
                "runAsNonRoot": true,
                "seccompProfile": { "type": "RuntimeDefault" }
            },
            "containers": [{
                "name": "acmesolver",
                "image": "quay.io/jetstack/cert-manager-acmesolver:v1.21.1",
                "imagePullPolicy": "IfNotPresent",
                "args": ["--listen-port=8089", "--domain=shop.example.test",
                         "--token=token", "--key=token.thumbprint"],
                "ports": [{ "name": "http", "containerPort": 8089 }],
                "resources": {
                    "requests": { "cpu": "10m", "memory": "64Mi" },
                    "limits": { "cpu": "100m", "memory": "64Mi" }
                },
                "securityContext": {
                    "readOnlyRootFilesystem": true,
                    "allowPrivilegeEscalation": false,
                    "capabilities": { "drop": ["ALL"] }
                }
            }]
        }
    }))
    .expect("a Pod")
}

/// Whether a selector (its `matchLabels`, and the `In`, `NotIn`, `Exists`
/// and `DoesNotExist` expressions Kubernetes defines) selects `labels`.
fn selects(
    selector: &k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector,
    labels: &BTreeMap<String, String>,
) -> bool {
    let matched = selector
        .match_labels
        .iter()
        .flatten()
        .all(|(key, value)| labels.get(key) == Some(value));
    matched
        && selector
            .match_expressions
            .iter()
            .flatten()
            .all(|requirement| {
                let value = labels.get(&requirement.key);
                let listed = || {
                    value.is_some_and(|value| {
                        requirement.values.iter().flatten().any(|v| v == value)
                    })
                };
                match requirement.operator.as_str() {
                    "In" => listed(),
                    "NotIn" => !listed(),
                    "Exists" => value.is_some(),
                    "DoesNotExist" => value.is_none(),
                    other => panic!("no such selector operator: {other}"),
                }
            })
}

#[tokio::test]
async fn cert_managers_http01_solver_fits_an_environments_fences() {
    use k8s_openapi::api::core::v1::Pod;
    use k8s_openapi::api::networking::v1::NetworkPolicy;

    let app = TestApp::with_cluster().await;
    let project = app
        .ready_environment_of(
            &app.owner,
            "acme",
            json!({ "name": "prod", "quota": { "cpu": "1", "memory": "1Gi", "pods": 4 } }),
        )
        .await;
    let namespace = format!("{project}-prod");
    let client = app.cluster().client.clone();
    let pods: Api<Pod> = Api::namespaced(client.clone(), &namespace);
    // A real apiserver admits a pod under a quota only once the quota
    // controller has counted the namespace.
    let quotas: Api<k8s_openapi::api::core::v1::ResourceQuota> =
        Api::namespaced(client.clone(), &namespace);
    eventually("the quota is counted", || async {
        quotas
            .get_opt("berth-quota")
            .await
            .ok()
            .flatten()
            .and_then(|quota| quota.status)
            .is_some_and(|status| status.hard.is_some())
            || app.cluster().standin.is_some()
    })
    .await;

    // Pod Security (baseline enforced), the quota and the limit range
    // admit it as cert-manager makes it.
    let solver = pods
        .create(&PostParams::default(), &solver_pod())
        .await
        .expect("the solver pod is admitted");
    // ...and the same fences are up: a host-network pod is refused.
    let mut host_network = solver_pod();
    host_network.spec.as_mut().unwrap().host_network = Some(true);
    match pods.create(&PostParams::default(), &host_network).await {
        Err(kube::Error::Api(response)) => {
            assert_eq!(
                (response.code, response.reason.as_str()),
                (403, "Forbidden")
            );
        }
        other => panic!("a host-network pod was not refused: {other:?}"),
    }

    // The environment's NetworkPolicy lets the ingress controller's
    // namespace reach it, on any port (the solver listens on 8089).
    let policies: Api<NetworkPolicy> = Api::namespaced(client.clone(), &namespace);
    let policy = policies
        .get(berth_controller::isolation::NETWORK_POLICY_NAME)
        .await
        .expect("the isolation policy");
    let spec = policy.spec.expect("a spec");
    let labels = solver.labels().clone();
    assert!(selects(
        spec.pod_selector.as_ref().expect("a selector"),
        &labels
    ));
    let reaches = spec.ingress.iter().flatten().any(|rule| {
        rule.ports.is_none()
            && rule.from.iter().flatten().any(|peer| {
                peer.pod_selector.is_none()
                    && peer.namespace_selector.as_ref().is_some_and(|namespaces| {
                        selects(
                            namespaces,
                            &BTreeMap::from([(
                                "kubernetes.io/metadata.name".to_owned(),
                                crate::support::cluster::INGRESS_NAMESPACE.to_owned(),
                            )]),
                        )
                    })
            })
    });
    assert!(reaches, "the ingress controller reaches the solver");

    pods.delete(&solver.name_any(), &DeleteParams::default())
        .await
        .expect("cleaned up");
}

#[tokio::test]
#[cfg_attr(berth_real_cluster, ignore = "runs a controller of its own settings")]
async fn without_an_issuer_custom_domains_stay_plain_http() {
    use crate::support::cluster::{controller_client, controller_settings};
    let dns = TestDns::start().await;
    let (app, apps, namespace) = environment(&dns).await;
    // The controller as an installation without BERTH_TLS_* runs it.
    let cluster = app.cluster();
    cluster.stop_controller().await;
    let mut settings = controller_settings();
    settings.render.tls = berth_controller::render::tls::TlsSettings::default();
    let replica = berth_controller::Replica::bind(
        controller_client(&cluster.controller_kubeconfig).await,
        settings,
        cluster.controller_replica(),
        std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
    )
    .await
    .expect("a replica");
    let running = tokio::spawn(replica.run(std::future::pending()));

    let shop = format!("{}.example.test", crate::support::unique("plain"));
    app.verify_domains(&app.owner, &[&shop]).await;
    app.create_app(
        &apps,
        json!({ "name": "web", "image": "nginx:1.27", "port": 80, "domains": [shop] }),
    )
    .await;
    let ingress = ingress_of(&app, &namespace, "the Ingress", |_| true).await;
    assert_eq!(ingress.spec.as_ref().unwrap().tls, None);
    assert_eq!(ingress.metadata.annotations, None, "no issuer, no redirect");
    let path = format!("{apps}/web");
    let found = until("the controller looked at the domain", || async {
        let found = certificates(&app, &path, &[&shop]).await;
        (found[&shop]["state"] == "none").then_some(found)
    })
    .await;
    assert!(
        found[&shop]["message"]
            .as_str()
            .unwrap()
            .contains("BERTH_TLS_CLUSTER_ISSUER"),
        "{:?}",
        found[&shop]
    );
    running.abort();
}
