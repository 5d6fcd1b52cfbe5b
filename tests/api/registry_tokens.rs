//! Berth as the registry's token service, judged by the registry itself:
//! Debian's `docker-registry` (CNCF Distribution 2.8), started by
//! `infra/registry/registry.sh` with `auth: token` naming Berth's realm
//! (the whole API served on loopback), issuer and certificate, and Debian's
//! skopeo as the client. Credentials are the ones the controller minted
//! into the cluster (a build's Secrets in `berth-builds`, an environment's
//! `berth-registry-pull`), read as a kubelet or a build step would; what the
//! registry accepts or refuses is the verdict.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, RwLock};

use axum::Router;
use base64::Engine;
use http::Method;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};
use tower::ServiceExt;

use berth_api::registry::RegistrySettings;
use berth_cluster::crd::{
    BUILD_SUCCEEDED, BUILDS_NAMESPACE, Build, LABEL_APP_UID, LABEL_BUILD, object_names,
};
use berth_cluster::registry::{self, Credentials, DOCKER_CONFIG_KEY, PULL_SECRET, Registry};
use berth_domain::Role;
use berth_records::audit::{ActorKind, Outcome};

use crate::support::cluster::hold_registry_settings_for_the_test;
use crate::support::kubelet::{BuildEnd, end_build_pods};
use crate::support::registry::{Access, Registry as TestRegistry, free_port, oci_image, said};
use crate::support::{TestApp, TestUser, eventually, stdout_of, unique};

const REALM_PATH: &str = "/api/v1/registry/token";

/// A fresh directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(unique(name));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

/// A P-256 signing key made with openssl, and its certificate made by
/// `berth-admin registry certificate` (signed by the key itself).
struct SigningKey {
    source: String,
    certificate: PathBuf,
}

fn signing_key(dir: &Path, name: &str) -> SigningKey {
    let key = dir.join(format!("{name}.key.pem"));
    stdout_of(
        Command::new("openssl")
            .args([
                "genpkey",
                "-algorithm",
                "EC",
                "-pkeyopt",
                "ec_paramgen_curve:P-256",
                "-out",
            ])
            .arg(&key),
    );
    let source = format!("file:{}", key.display());
    let pem = stdout_of(
        Command::new(crate::support::workspace_binary(
            "berth-admin",
            "berth-admin",
        ))
        .args([
            "registry",
            "certificate",
            "--signing-key",
            &source,
            "--days",
            "2",
        ])
        .env_clear()
        .env("HOME", dir),
    );
    let certificate = dir.join(format!("{name}.cert.pem"));
    std::fs::write(&certificate, format!("{pem}\n")).expect("the certificate");
    SigningKey {
        source,
        certificate,
    }
}

/// A bundle of certificates, as the registry's `rootcertbundle` holds them.
fn bundle(dir: &Path, name: &str, keys: &[&SigningKey]) -> PathBuf {
    let text: String = keys
        .iter()
        .map(|key| std::fs::read_to_string(&key.certificate).expect("a certificate"))
        .collect();
    let path = dir.join(name);
    std::fs::write(&path, text).expect("the bundle");
    path
}

/// The whole API served on a loopback port, as the registry's clients
/// reach the realm; the router can be swapped (a new configuration, as a
/// redeployed function's) while the port stays.
struct Realm {
    url: String,
    router: Arc<RwLock<Router>>,
    listener: Option<tokio::net::TcpListener>,
}

impl Realm {
    async fn bind() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port");
        let url = format!("http://{}", listener.local_addr().expect("an address"));
        Self {
            url,
            router: Arc::new(RwLock::new(Router::new())),
            listener: Some(listener),
        }
    }

    /// Serves `router` from now on (the first call starts serving).
    fn serve(&mut self, router: Router) {
        self.swap(router);
        let Some(listener) = self.listener.take() else {
            return;
        };
        let current = self.router.clone();
        let service = tower::service_fn(move |request: http::Request<axum::body::Body>| {
            let router = current.read().expect("the router").clone();
            router.oneshot(request)
        });
        let app = Router::new().fallback_service(service);
        tokio::spawn(async move {
            axum::serve(
                listener,
                app.into_make_service_with_connect_info::<SocketAddr>(),
            )
            .await
            .ok();
        });
    }

    fn swap(&self, router: Router) {
        *self.router.write().expect("the router") = router;
    }

    fn realm(&self) -> String {
        format!("{}{REALM_PATH}", self.url)
    }
}

/// The API with the token service configured (its public URL the realm's,
/// signing with `key`), the cluster and its controller, the registry's
/// settings as `berth-admin registry set` writes them for scoped
/// credentials, and a registry on loopback trusting `bundle`.
struct Setup {
    app: TestApp,
    realm: Realm,
    registry: TestRegistry,
    dir: PathBuf,
}

/// The registry on `host` (images under `{host}/berth`) with scoped
/// credentials, as `berth-admin registry set` writes it: for the token
/// service in the table, for the controller in the cluster.
async fn scoped_registry(app: &TestApp, host: &str) {
    hold_registry_settings_for_the_test(host).await;
    let settings = Registry::parse(&format!("{host}/berth"), host).expect("well formed");
    RegistrySettings {
        prefix: settings.prefix.clone(),
        server: settings.server.clone(),
        shared: Vec::new(),
    }
    .store(&app.state.store)
    .await
    .expect("the token service's settings");
    registry::set(&app.cluster().client, &settings, Credentials::Scoped)
        .await
        .expect("the cluster's settings");
}

impl Setup {
    /// Berth signing with one key, which the registry trusts.
    async fn with_one_key(name: &str) -> Self {
        Self::start(name, |dir| {
            let key = signing_key(dir, "current");
            let bundle = bundle(dir, "bundle.pem", &[&key]);
            (key, bundle)
        })
        .await
    }

    async fn start(name: &str, key: impl FnOnce(&Path) -> (SigningKey, PathBuf)) -> Self {
        let dir = scratch(name);
        let (key, bundle) = key(&dir);
        let mut realm = Realm::bind().await;
        let url = realm.url.clone();
        let app = TestApp::with_cluster_config(|config| {
            config.public_url = Some(url);
            config.registry_signing_key = Some(key.source.clone());
        })
        .await;
        realm.serve(app.app.clone());
        let port = free_port();
        let host = format!("127.0.0.1:{port}");
        let registry = TestRegistry::start_on(
            port,
            &dir.join("registry"),
            &Access::Tokens {
                realm: &realm.realm(),
                issuer: &realm.url,
                bundle: &bundle,
            },
        );
        scoped_registry(&app, &host).await;
        Self {
            app,
            realm,
            registry,
            dir,
        }
    }

    /// A Docker `config.json` file of the credential in `namespace`'s
    /// Secret `name`, as a kubelet or a build step reads it.
    async fn credential_file(&self, namespace: &str, name: &str) -> PathBuf {
        let secrets: Api<Secret> = Api::namespaced(self.app.cluster().client.clone(), namespace);
        let secret = eventually_get(&secrets, name).await;
        let config = secret.data.expect("data")[DOCKER_CONFIG_KEY].0.clone();
        let path = self.dir.join(unique(&format!("{name}-auth")));
        std::fs::write(&path, config).expect("the credential's file");
        path
    }

    /// The user name and password of the environment's pull credential.
    async fn environment_login(&self, namespace: &str) -> (String, String) {
        let pull = self.credential_file(namespace, PULL_SECRET).await;
        let config: Value = serde_json::from_slice(&std::fs::read(&pull).unwrap()).unwrap();
        let entry = &config["auths"][self.registry.host()];
        (
            entry["username"].as_str().unwrap().to_owned(),
            entry["password"].as_str().unwrap().to_owned(),
        )
    }
}

async fn eventually_get(secrets: &Api<Secret>, name: &str) -> Secret {
    eventually(&format!("the Secret {name} exists"), || async {
        secrets
            .get_opt(name)
            .await
            .expect("reading a Secret")
            .is_some()
    })
    .await;
    secrets.get(name).await.expect("the Secret")
}

/// An organization's project with a ready environment `prod` and an app
/// built from source in it (its first build queued, then started by the
/// controller).
struct Tenant {
    org: String,
    project: String,
    app: String,
    namespace: String,
    build: String,
}

/// A project of `user`'s with a ready environment `prod`: the project's name.
async fn ready_environment(app: &TestApp, user: &TestUser) -> String {
    app.ready_environment_of(user, "reg", json!({ "name": "prod" }))
        .await
}

impl Tenant {
    async fn new(setup: &Setup, user: &TestUser) -> Self {
        let app = &setup.app;
        let project = ready_environment(app, user).await;
        let environments = format!("/api/v1/projects/{project}/environments");
        app.post(&format!("{environments}/prod/apps"))
            .by(user)
            .json(
                json!({"name": "web", "git_repo": "https://git.berth.test/shop.git", "port": 8080}),
            )
            .send()
            .await
            .assert_status(201);
        let namespace = format!("{project}-prod");
        let build = object_names::build(&namespace, "web", 1);
        let builds: Api<Build> = Api::namespaced(app.cluster().client.clone(), BUILDS_NAMESPACE);
        eventually("the build runs", || async {
            builds
                .get_opt(&build)
                .await
                .expect("reading the Build")
                .is_some_and(|build| build.phase() == "running")
        })
        .await;
        Self {
            org: user.org.clone(),
            project,
            app: "web".to_owned(),
            namespace,
            build,
        }
    }

    /// The app's repository in the registry.
    fn repository(&self) -> String {
        format!("berth/{}/{}/{}", self.org, self.project, self.app)
    }

    /// The build's credential Secret `kind` (`push` or `pull`).
    fn build_secret(&self, kind: &str) -> String {
        format!("{}-{kind}", object_names::build_job(&self.build))
    }
}

fn accepted(output: &std::process::Output, what: &str) {
    assert!(output.status.success(), "{what}: {}", said(output));
}

/// Refused by the registry: skopeo ends in error, saying it was not
/// authorized (never that the image is missing or the registry unreachable).
fn refused(output: &std::process::Output, what: &str) {
    let text = said(output).to_lowercase();
    assert!(!output.status.success(), "{what}: it was accepted");
    assert!(
        text.contains("unauthorized")
            || text.contains("denied")
            || text.contains("authentication required"),
        "{what}: refused for another reason: {text}"
    );
}

// Multi-threaded: skopeo blocks its thread while the realm, served by this
// runtime, answers it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_builds_credential_pushes_its_own_repository_and_an_environments_pulls_its_projects() {
    let setup = Setup::with_one_key("berth-registry-tokens").await;
    let acme = Tenant::new(&setup, &setup.app.owner).await;
    let globex_owner = setup.app.other_org(&unique("globex")).await;
    let globex = Tenant::new(&setup, &globex_owner).await;
    let registry = &setup.registry;
    let image = oci_image(&setup.dir.join("made"), "hello from a build\n");

    let acme_push = setup
        .credential_file(BUILDS_NAMESPACE, &acme.build_secret("push"))
        .await;
    let acme_build_pull = setup
        .credential_file(BUILDS_NAMESPACE, &acme.build_secret("pull"))
        .await;
    let globex_push = setup
        .credential_file(BUILDS_NAMESPACE, &globex.build_secret("push"))
        .await;

    // A build pushes to its own app's repository, and nowhere else.
    accepted(
        &registry.push(&image, &acme.repository(), "v1", &acme_push),
        "acme's build pushes to its app's repository",
    );
    refused(
        &registry.push(
            &image,
            &format!("berth/{}/{}/other", acme.org, acme.project),
            "v1",
            &acme_push,
        ),
        "acme's build pushes to another app's repository",
    );
    refused(
        &registry.push(&image, &globex.repository(), "v1", &acme_push),
        "acme's build pushes to another organization's repository",
    );
    // Its pull credential (the one a Dockerfile can read) pushes nothing.
    refused(
        &registry.push(&image, &acme.repository(), "v2", &acme_build_pull),
        "acme's build's pull credential pushes",
    );
    accepted(
        &registry.push(&image, &globex.repository(), "v1", &globex_push),
        "globex's build pushes to its app's repository",
    );

    // An environment's pull credential pulls its project's images only.
    let acme_pull = setup.credential_file(&acme.namespace, PULL_SECRET).await;
    let globex_pull = setup.credential_file(&globex.namespace, PULL_SECRET).await;
    accepted(
        &registry.inspect(&acme.repository(), "v1", &acme_pull),
        "acme's environment pulls acme's image",
    );
    refused(
        &registry.inspect(&globex.repository(), "v1", &acme_pull),
        "acme's environment pulls globex's image",
    );
    accepted(
        &registry.inspect(&globex.repository(), "v1", &globex_pull),
        "globex's environment pulls globex's image",
    );
    refused(
        &registry.inspect(&acme.repository(), "v1", &globex_pull),
        "globex's environment pulls acme's image",
    );
    // A build's pull credential (private bases) reaches its project's.
    accepted(
        &registry.inspect(&acme.repository(), "v1", &acme_build_pull),
        "acme's build pulls acme's image",
    );
    refused(
        &registry.inspect(&globex.repository(), "v1", &acme_build_pull),
        "acme's build pulls globex's image",
    );

    // A sibling project of acme's (issue 46, part 2): its credentials get
    // from acme's project the answers another organization's get.
    sibling_projects_reach_no_more_than_other_organizations(&setup, &acme, &globex, &image).await;

    // Past its expiry (the build's deadline), a build's credential is
    // refused although the build still runs: time moved on, as the status
    // would see it.
    let builds: Api<Build> = Api::namespaced(setup.app.cluster().client.clone(), BUILDS_NAMESPACE);
    builds
        .patch_status(
            &acme.build,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"registry": {
                "expiresAt": berth_domain::clock::unix_seconds() - 1
            }}})),
        )
        .await
        .expect("the build's credentials expire");
    refused(
        &registry.push(&image, &acme.repository(), "v3", &acme_push),
        "acme's expired push credential pushes",
    );
    refused(
        &registry.inspect(&acme.repository(), "v1", &acme_build_pull),
        "acme's expired build pull credential pulls",
    );

    // A build that ended: its credentials are refused, and gone from the cluster.
    let selector = format!(
        "{LABEL_BUILD}=1,{LABEL_APP_UID}={}",
        builds
            .get(&globex.build)
            .await
            .expect("the Build")
            .spec
            .app_uid
    );
    let end = BuildEnd::Pushed {
        commit: "0123456789abcdef0123456789abcdef01234567",
        strategy: "dockerfile",
        digest: "sha256:1111111111111111111111111111111111111111111111111111111111111111",
    };
    eventually("globex's build pod ends", || async {
        end_build_pods(
            &setup.app.cluster().client,
            BUILDS_NAMESPACE,
            &selector,
            &end,
        )
        .await
            > 0
    })
    .await;
    eventually("globex's build succeeds", || async {
        builds.get(&globex.build).await.expect("the Build").phase() == BUILD_SUCCEEDED
    })
    .await;
    refused(
        &registry.push(&image, &globex.repository(), "v2", &globex_push),
        "globex's ended build's push credential pushes",
    );
    let secrets: Api<Secret> =
        Api::namespaced(setup.app.cluster().client.clone(), BUILDS_NAMESPACE);
    eventually("the ended build's credentials are deleted", || async {
        secrets
            .get_opt(&globex.build_secret("push"))
            .await
            .expect("reading")
            .is_none()
    })
    .await;
    // The environment's credential works on.
    accepted(
        &registry.inspect(&globex.repository(), "v1", &globex_pull),
        "globex's environment still pulls",
    );
    // Until its environment is purged: then it is refused (an
    // organization goes by its projects' environments going).
    let environment = format!("/api/v1/projects/{}/environments/prod", globex.project);
    setup
        .app
        .request(Method::DELETE, &environment)
        .by(&globex_owner)
        .send()
        .await
        .assert_status(202);
    let app = &setup.app;
    eventually("globex's environment is purged", || async {
        app.get(&environment).by(&globex_owner).send().await.status == 404
            && !app.cluster().namespace_exists(&globex.namespace).await
    })
    .await;
    refused(
        &registry.inspect(&globex.repository(), "v1", &globex_pull),
        "a purged environment's credential pulls",
    );

    // No password is in a log line (the controller's, the API's, at debug
    // level) or a Build's status (which holds their digests).
    let logs = crate::support::logs::captured();
    let acme_build = builds.get(&acme.build).await.expect("the Build");
    let status = serde_json::to_string(&acme_build.status).unwrap();
    let password_of = |file: &PathBuf| {
        let config: Value = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
        config["auths"][registry.host()]["password"]
            .as_str()
            .expect("a password")
            .to_owned()
    };
    for file in [
        &acme_push,
        &acme_build_pull,
        &globex_push,
        &acme_pull,
        &globex_pull,
    ] {
        let password = password_of(file);
        assert!(!logs.contains(&password), "a registry password was logged");
        assert!(!status.contains(&password));
    }
    let digest = berth_domain::credentials::digest(&password_of(&acme_push));
    assert!(
        status.contains(&digest),
        "the Build holds its push credential's digest"
    );
}

/// A sibling project P2 of `acme`'s project P1, in the same organization:
/// a member whose only role is in P2 is answered `404` for P1, and the API
/// takes an app of P2 naming P1's image (an `image` is any reference; what
/// Berth's registry holds is the token service's to give), but P2's
/// credentials get from P1's repository what `globex`'s get: nothing. P2's
/// environment credential (its pods') pulls nothing of P1's, its build's
/// pull credential (a Dockerfile's `FROM`) neither, and its build's push
/// credential pushes nothing there; each is refused exactly where
/// `globex`'s is, and works on P2's own repository. The pods of the app
/// naming P1's image are given no pull credential for it.
async fn sibling_projects_reach_no_more_than_other_organizations(
    setup: &Setup,
    acme: &Tenant,
    globex: &Tenant,
    image: &Path,
) {
    let app = &setup.app;
    let registry = &setup.registry;
    let sibling = Tenant::new(setup, &app.owner).await;
    assert_eq!(sibling.org, acme.org, "a project of the same organization");
    let sibling_push = setup
        .credential_file(BUILDS_NAMESPACE, &sibling.build_secret("push"))
        .await;
    let sibling_build_pull = setup
        .credential_file(BUILDS_NAMESPACE, &sibling.build_secret("pull"))
        .await;
    let sibling_pull = setup.credential_file(&sibling.namespace, PULL_SECRET).await;
    let globex_push = setup
        .credential_file(BUILDS_NAMESPACE, &globex.build_secret("push"))
        .await;
    let globex_build_pull = setup
        .credential_file(BUILDS_NAMESPACE, &globex.build_secret("pull"))
        .await;
    let globex_pull = setup.credential_file(&globex.namespace, PULL_SECRET).await;

    // Its own repository: pushed and pulled.
    accepted(
        &registry.push(image, &sibling.repository(), "v1", &sibling_push),
        "the sibling's build pushes to its app's repository",
    );
    accepted(
        &registry.inspect(&sibling.repository(), "v1", &sibling_pull),
        "the sibling's environment pulls its own image",
    );
    accepted(
        &registry.inspect(&sibling.repository(), "v1", &sibling_build_pull),
        "the sibling's build pulls its own image",
    );

    // A member of the sibling alone: acme's project is not found, yet an
    // app naming its image is taken (the API governs no image's source).
    let member = app
        .project_member(Role::Member, &sibling.project, "developer")
        .await;
    app.get(&format!("/api/v1/projects/{}", acme.project))
        .by(&member)
        .send()
        .await
        .assert_status(404);
    let acme_image = format!("{}/{}:v1", registry.host(), acme.repository());
    app.post(&format!(
        "/api/v1/projects/{}/environments/prod/apps",
        sibling.project
    ))
    .by(&member)
    .json(json!({"name": "copy", "image": acme_image, "port": 8080}))
    .send()
    .await
    .assert_status(201);

    // What the registry answers, acme's repository asked for with the
    // sibling's credentials and with globex's: refused alike.
    for (what, sibling_file, globex_file) in [
        ("environment's pull", &sibling_pull, &globex_pull),
        (
            "build's pull (FROM)",
            &sibling_build_pull,
            &globex_build_pull,
        ),
    ] {
        refused(
            &registry.inspect(&acme.repository(), "v1", sibling_file),
            &format!("the sibling's {what} credential pulls acme's image"),
        );
        refused(
            &registry.inspect(&acme.repository(), "v1", globex_file),
            &format!("globex's {what} credential pulls acme's image"),
        );
    }
    for (who, file) in [("the sibling", &sibling_push), ("globex", &globex_push)] {
        refused(
            &registry.push(image, &acme.repository(), "v9", file),
            &format!("{who}'s build pushes to acme's repository"),
        );
    }

    // The pods of the app naming acme's image name no pull credential (the
    // shared credential of before, copied there, would pull it).
    let deployments: Api<Deployment> =
        Api::namespaced(app.cluster().client.clone(), &sibling.namespace);
    eventually("the copy's Deployment exists", || async {
        deployments
            .get_opt("copy-web")
            .await
            .expect("reading a Deployment")
            .is_some()
    })
    .await;
    let rendered = deployments.get("copy-web").await.expect("the Deployment");
    let pod = rendered
        .spec
        .and_then(|spec| spec.template.spec)
        .expect("a pod template");
    assert_eq!(
        pod.image_pull_secrets, None,
        "{:?}",
        pod.containers[0].image
    );
}

/// A rotation: the registry trusts the new key's certificate beside the
/// old one's before Berth signs with it, and drops the old one after; pulls
/// work at every step. Signing with a key the registry does not trust yet
/// is refused, which is why the order matters.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotation_of_the_signing_key_keeps_pulls_working() {
    let mut keys = None;
    let setup = Setup::start("berth-registry-rotation", |dir| {
        let old = signing_key(dir, "old");
        let new = signing_key(dir, "new");
        let bundle = bundle(dir, "old.pem", &[&old]);
        let source = old.source.clone();
        keys = Some((
            SigningKey {
                source: old.source.clone(),
                certificate: old.certificate.clone(),
            },
            new,
        ));
        (
            SigningKey {
                source,
                certificate: old.certificate,
            },
            bundle,
        )
    })
    .await;
    let (old, new) = keys.expect("the keys");
    let acme = Tenant::new(&setup, &setup.app.owner).await;
    let image = oci_image(&setup.dir.join("made"), "before the rotation\n");
    let push = setup
        .credential_file(BUILDS_NAMESPACE, &acme.build_secret("push"))
        .await;
    accepted(
        &setup.registry.push(&image, &acme.repository(), "v1", &push),
        "a push signed with the old key",
    );
    let pull = setup.credential_file(&acme.namespace, PULL_SECRET).await;
    let pulls = |what: &str| {
        accepted(
            &setup.registry.inspect(&acme.repository(), "v1", &pull),
            what,
        )
    };
    pulls("a pull signed with the old key");

    // Berth signing with a key the registry does not trust yet: refused.
    setup.sign_with(&new.source);
    refused(
        &setup.registry.inspect(&acme.repository(), "v1", &pull),
        "a pull signed with a key the registry does not know yet",
    );
    setup.sign_with(&old.source);

    // 1. The registry trusts both certificates; Berth still signs with the old key.
    let both = bundle(&setup.dir, "both.pem", &[&old, &new]);
    setup.restart_registry(&both);
    pulls("old key, both certificates");
    // 2. Berth signs with the new key.
    setup.sign_with(&new.source);
    pulls("new key, both certificates");
    // 3. The registry drops the old certificate.
    let only_new = bundle(&setup.dir, "new.pem", &[&new]);
    setup.restart_registry(&only_new);
    pulls("new key, the new certificate only");
}

impl Setup {
    /// The API as redeployed with another signing key (its configuration
    /// read again), at the same address.
    fn sign_with(&self, source: &str) {
        let mut config = (*self.app.state.config).clone();
        config.registry_signing_key = Some(source.to_owned());
        let state = berth_api::AppState {
            config: Arc::new(config),
            ..self.app.state.clone()
        };
        self.realm.swap(berth_local::app(state));
    }

    fn restart_registry(&self, bundle: &Path) {
        self.registry.restart(&Access::Tokens {
            realm: &self.realm.realm(),
            issuer: &self.realm.url,
            bundle,
        });
    }
}

/// The answers of the token service itself: the scheme's 401 with its
/// challenge, scopes narrowed to what the credential may have (decoded from
/// the token), another service refused, grants audited once per credential
/// and hour, denials each time.
#[tokio::test]
async fn the_token_service_answers_as_the_scheme_says_and_audits_without_drowning() {
    let setup = Setup::with_one_key("berth-registry-answers").await;
    let app = &setup.app;
    let acme = Tenant::new(&setup, &app.owner).await;
    let (username, password) = setup.environment_login(&acme.namespace).await;
    assert_eq!(username, format!("environment/{}", acme.namespace));
    let basic = |user: &str, password: &str| {
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
        )
    };
    let service = setup.registry.host();
    let own = acme.repository();
    let query = format!(
        "{REALM_PATH}?service={service}&scope=repository:{own}:pull,push&scope=repository:berth/other/x/y:pull"
    );

    // No credential, a wrong password, an unknown user: 401 with the challenge.
    for authorization in [
        None,
        Some(basic(&username, "not-it")),
        Some(basic("environment/nobody-here", &password)),
        Some("Bearer brt_not-a-registry-credential".to_owned()),
    ] {
        let mut request = app.get(&query);
        if let Some(value) = &authorization {
            request = request.header("authorization", value);
        }
        let answer = request.send().await;
        answer.assert_problem(401, "unauthenticated");
        assert!(
            answer
                .headers
                .get("www-authenticate")
                .is_some_and(|v| v.to_str().unwrap().starts_with("Basic realm=")),
            "the challenge"
        );
    }

    // Granted: only pull of its own organization's repository.
    let grant = || async {
        let answer = app
            .get(&query)
            .header("authorization", &basic(&username, &password))
            .send()
            .await;
        answer.assert_status(200);
        answer
    };
    let answer = grant().await;
    assert_eq!(answer.headers.get("cache-control").unwrap(), "no-store");
    let body = answer.json();
    assert_eq!(body["token"], body["access_token"]);
    assert_eq!(body["expires_in"], 300);
    assert!(body["issued_at"].as_str().unwrap().ends_with('Z'));
    let token = body["token"].as_str().unwrap();
    let claims: Value = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(token.split('.').nth(1).unwrap())
            .unwrap(),
    )
    .unwrap();
    assert_eq!(claims["iss"], setup.realm.url);
    assert_eq!(claims["aud"], service);
    assert_eq!(claims["sub"], username);
    assert_eq!(
        claims["access"],
        json!([{"type": "repository", "name": own, "actions": ["pull"]}])
    );

    // The OAuth2 form (containerd's first try): the same grant, with `scope`.
    let form = format!(
        "grant_type=password&username={}&password={password}&service={service}&scope=repository:{own}:pull%20repository:berth/other/x/y:pull&client_id=containerd-client",
        username.replace('/', "%2F")
    );
    let answer = app
        .request(Method::POST, REALM_PATH)
        .header("content-type", "application/x-www-form-urlencoded")
        .raw(form)
        .send()
        .await;
    answer.assert_status(200);
    assert_eq!(answer.json()["scope"], format!("repository:{own}:pull"));
    let answer = app
        .request(Method::POST, REALM_PATH)
        .header("content-type", "application/x-www-form-urlencoded")
        .raw("grant_type=refresh_token&refresh_token=x&service=x")
        .send()
        .await;
    answer.assert_problem(400, "invalid_request");

    // Another registry's service, a malformed scope: 400 — the service
    // judged only once the credential holds (to anyone else: the 401).
    app.get(&format!(
        "{REALM_PATH}?service=elsewhere.example.com&scope=repository:{own}:pull"
    ))
    .header("authorization", &basic(&username, "not-the-password"))
    .send()
    .await
    .assert_problem(401, "unauthenticated");
    app.get(&format!(
        "{REALM_PATH}?service=elsewhere.example.com&scope=repository:{own}:pull"
    ))
    .header("authorization", &basic(&username, &password))
    .send()
    .await
    .assert_problem(400, "invalid_request");
    app.get(&format!("{REALM_PATH}?service={service}&scope=repository"))
        .header("authorization", &basic(&username, &password))
        .send()
        .await
        .assert_problem(400, "invalid_request");
    // A malformed scope is judged after the credential too: every failed
    // credential gets the one 401 (issue 46, part 6).
    for credential in [
        basic(&username, "not-the-password"),
        basic("environment/nobody-here", &password),
    ] {
        app.get(&format!("{REALM_PATH}?service={service}&scope=repository"))
            .header("authorization", &credential)
            .send()
            .await
            .assert_problem(401, "unauthenticated");
    }

    // The organization's log: the hour's first grant once, every denial.
    grant().await;
    grant().await;
    let events = app.audit_events(&acme.org).await;
    let of = |action: &str, outcome: Outcome| {
        events
            .iter()
            .filter(|e| {
                e.action == action
                    && e.outcome == outcome
                    && e.actor.as_deref() == Some(username.as_str())
            })
            .count()
    };
    assert_eq!(
        of("getRegistryToken", Outcome::Success),
        1,
        "grants summarised per hour"
    );
    assert_eq!(
        of("requestRegistryToken", Outcome::Success),
        0,
        "the same hour's grant"
    );
    // The wrong passwords (the unknown user's environment is no one's).
    assert_eq!(of("getRegistryToken", Outcome::Denied), 3);
    let granted = events
        .iter()
        .find(|e| e.action == "getRegistryToken" && e.outcome == Outcome::Success)
        .unwrap();
    assert_eq!(granted.actor_kind, ActorKind::Registry);
    assert_eq!(granted.target_kind.as_deref(), Some("registry_credential"));
    // No password and no token in any event.
    let text = serde_json::to_string(&events).unwrap();
    assert!(!text.contains(&password) && !text.contains(token));

    // What a token costs a warm instance, past the hour's first grant: one
    // DynamoDB round trip (the throttle's read of the source's and the
    // name's failures; the settings are kept a minute, the hour's first
    // grant is known, no audit event is written) and one cluster request
    // (the Environment holding the digest). Then how long one takes here.
    let (trips, asked) = (app.round_trips.get(), app.cluster_requests.get());
    grant().await;
    assert_eq!(app.round_trips.get() - trips, 1, "DynamoDB round trips");
    if app.cluster().standin.is_some() {
        assert_eq!(app.cluster_requests.get() - asked, 1, "cluster requests");
    }
    let mut took = Vec::new();
    for _ in 0..50 {
        let started = std::time::Instant::now();
        grant().await;
        took.push(started.elapsed());
    }
    took.sort();
    eprintln!(
        "a warm token (file key, stand-in cluster): median {:?}, p90 {:?}",
        took[took.len() / 2],
        took[took.len() * 9 / 10]
    );
}

/// `berth-admin` over the test's table, with the administrator's
/// kubeconfig at `kubeconfig` and `input` on standard input.
fn berth_admin(app: &TestApp, args: &[&str], input: &str) -> std::process::Output {
    use std::io::Write;
    let mut child = Command::new(crate::support::workspace_binary(
        "berth-admin",
        "berth-admin",
    ))
    .args(args)
    .env("BERTH_TABLE", app.state.store.table())
    .env(
        "AWS_ENDPOINT_URL_DYNAMODB",
        crate::support::dynamodb_endpoint(),
    )
    .env("AWS_REGION", "us-east-1")
    .env("AWS_ACCESS_KEY_ID", "local")
    .env("AWS_SECRET_ACCESS_KEY", "local")
    .env_remove("AWS_PROFILE")
    .stdin(std::process::Stdio::piped())
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .expect("berth-admin runs");
    child
        .stdin
        .take()
        .expect("its standard input")
        .write_all(input.as_bytes())
        .expect("writing its standard input");
    child.wait_with_output().expect("berth-admin ends")
}

/// The upgrade of an installation with the shared credentials of before
/// (a registry with a password; one push credential, which apps pull with,
/// copied into every environment) to scoped ones, as docs/deploy.md's steps
/// say, while an app's environment keeps pulling at every step: the token
/// service first learns the shared credential, the registry then trusts
/// the token service, the controller then gives the environment its own
/// credential, and the shared one is forgotten last.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_installation_moves_from_shared_to_scoped_credentials_and_keeps_pulling() {
    let dir = scratch("berth-registry-upgrade");
    let key = signing_key(&dir, "current");
    let bundle = bundle(&dir, "bundle.pem", &[&key]);
    let mut realm = Realm::bind().await;
    let url = realm.url.clone();
    let app = TestApp::with_cluster_config(|config| {
        config.public_url = Some(url);
        config.registry_signing_key = Some(key.source.clone());
        // The token service reads the registry's settings again this soon.
        config.kubeconfig_recheck = std::time::Duration::from_secs(1);
    })
    .await;
    realm.serve(app.app.clone());
    let admin_kubeconfig = dir.join("admin.yaml");
    std::fs::write(&admin_kubeconfig, &app.cluster().admin_kubeconfig).expect("the kubeconfig");
    let kubeconfig = admin_kubeconfig.display().to_string();

    // Today: a registry with one user, whose credential Berth shares.
    let port = free_port();
    let host = format!("127.0.0.1:{port}");
    let registry = TestRegistry::start_on(
        port,
        &dir.join("registry"),
        &Access::Password("pusher", "push-s3cret"),
    );
    let prefix = format!("{host}/berth");
    // The registry's settings are this test's until it ends (on a real
    // cluster the run's tests share them), shared or scoped.
    hold_registry_settings_for_the_test(&host).await;
    let set = |extra: &[&str], input: &str| {
        let mut args = vec![
            "registry",
            "set",
            "--prefix",
            &prefix,
            "--server",
            &host,
            "--kubeconfig",
            &kubeconfig,
        ];
        args.extend_from_slice(extra);
        let output = berth_admin(&app, &args, input);
        assert!(
            output.status.success(),
            "registry set {extra:?}: {}",
            said(&output)
        );
    };
    // 1. The shared credential, as before, which the token service now accepts too.
    set(&["--shared"], "pusher\npush-s3cret\n");
    let project = ready_environment(&app, &app.owner).await;
    let namespace = format!("{project}-prod");
    let repository = format!("berth/{}/{project}/web", app.owner.org);
    let shared = dir.join("shared-auth.json");
    let shared_config = registry::Credential {
        username: "pusher".into(),
        password: "push-s3cret".into(),
    }
    .docker_config(&host);
    std::fs::write(&shared, shared_config).expect("the shared credential's file");
    let image = oci_image(&dir.join("made"), "built before the upgrade\n");
    accepted(
        &registry.push(&image, &repository, "v1", &shared),
        "a build of before pushes with the shared credential",
    );
    let pull_secret_of = |namespace: &str| {
        let client = app.cluster().client.clone();
        let dir = dir.clone();
        let namespace = namespace.to_owned();
        async move {
            let secrets: Api<Secret> = Api::namespaced(client, &namespace);
            let secret = eventually_get(&secrets, PULL_SECRET).await;
            let path = dir.join(unique("env-auth"));
            std::fs::write(&path, &secret.data.expect("data")[DOCKER_CONFIG_KEY].0)
                .expect("the credential's file");
            path
        }
    };
    let env_copy = pull_secret_of(&namespace).await;
    let env_config = std::fs::read_to_string(&env_copy).unwrap();
    assert!(
        env_config.contains("pusher"),
        "the environment holds the shared copy"
    );
    accepted(
        &registry.inspect(&repository, "v1", &env_copy),
        "the app pulls with the shared copy (the registry checks the password)",
    );

    // 2. The registry trusts Berth's token service: the copy still pulls.
    registry.restart(&Access::Tokens {
        realm: &realm.realm(),
        issuer: &realm.url,
        bundle: &bundle,
    });
    accepted(
        &registry.inspect(&repository, "v1", &env_copy),
        "the app pulls with the shared copy (through Berth's token service)",
    );

    // 3. Scoped credentials; the controller gives each environment its own
    //    (at its next resync, or at once when it restarts).
    set(&[], "");
    app.cluster().restart_controller().await;
    let environments: Api<berth_cluster::crd::Environment> = Api::all(app.cluster().client.clone());
    eventually("the environment gets its own pull credential", || async {
        environments
            .get(&namespace)
            .await
            .expect("the Environment")
            .status
            .and_then(|status| status.registry_pull_digest)
            .is_some()
    })
    .await;
    let own = pull_secret_of(&namespace).await;
    assert!(
        std::fs::read_to_string(&own)
            .unwrap()
            .contains(&format!("environment/{namespace}")),
        "the environment's own credential replaced the copy"
    );
    accepted(
        &registry.inspect(&repository, "v1", &own),
        "the app pulls with its environment's own credential",
    );
    let status = berth_admin(
        &app,
        &["registry", "status", "--kubeconfig", &kubeconfig],
        "",
    );
    let status = said(&status);
    assert!(
        status.contains(&format!("{prefix} ({host}), credentials scoped")),
        "{status}"
    );
    // The cluster's every environment: on a real cluster the run's other
    // tests' too, which this one does not wait for.
    if app.cluster().standin.is_some() {
        assert!(
            status.contains("1 of 1 have their own pull credential"),
            "{status}"
        );
    }
    assert!(
        !status.contains(&format!("waiting:    {namespace}")),
        "the environment has its own pull credential: {status}"
    );

    // 4. The shared credential is forgotten: refused, and gone from the
    //    cluster; the environment's own pulls on.
    set(&["--forget-shared"], "");
    // The token service reads the settings again within a second.
    eventually(
        "the token service forgets the shared credential",
        || async {
            !registry
                .inspect(&repository, "v1", &shared)
                .status
                .success()
        },
    )
    .await;
    refused(
        &registry.inspect(&repository, "v1", &shared),
        "the forgotten shared credential pulls",
    );
    let system: Api<Secret> = Api::namespaced(app.cluster().client.clone(), "berth-system");
    assert!(
        system
            .get_opt(PULL_SECRET)
            .await
            .expect("reading")
            .is_none(),
        "the shared pull Secret is deleted"
    );
    accepted(
        &registry.inspect(&repository, "v1", &own),
        "the app still pulls with its environment's own credential",
    );
}

/// moto's KMS on a loopback port (`moto_server`, installed by
/// `scripts/install-tools.sh`); stopped when dropped.
struct MotoKms {
    child: std::process::Child,
    endpoint: String,
}

impl MotoKms {
    async fn start() -> Self {
        let cache = std::env::var("BERTH_CACHE").unwrap_or_else(|_| {
            format!("{}/.cache/berth", std::env::var("HOME").unwrap_or_default())
        });
        let server = Path::new(&cache).join("bin/moto_server");
        assert!(
            server.exists(),
            "{} is missing: run scripts/install-tools.sh (make test does)",
            server.display()
        );
        let port = free_port();
        let child = Command::new(server)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("moto_server starts");
        let endpoint = format!("http://127.0.0.1:{port}");
        eventually("moto's KMS answers", || async {
            tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .is_ok()
        })
        .await;
        Self { child, endpoint }
    }

    fn client(&self) -> aws_sdk_kms::Client {
        let config = aws_sdk_kms::Config::builder()
            .behavior_version(aws_sdk_kms::config::BehaviorVersion::v2026_01_12())
            .region(aws_sdk_kms::config::Region::new("us-east-1"))
            .credentials_provider(aws_sdk_kms::config::Credentials::new(
                "local", "local", None, None, "moto",
            ))
            .endpoint_url(&self.endpoint)
            .build();
        aws_sdk_kms::Client::from_conf(config)
    }

    /// The environment an AWS SDK program reaches this KMS with.
    fn env(&self) -> [(&'static str, String); 4] {
        [
            ("AWS_ENDPOINT_URL_KMS", self.endpoint.clone()),
            ("AWS_REGION", "us-east-1".to_owned()),
            ("AWS_ACCESS_KEY_ID", "local".to_owned()),
            ("AWS_SECRET_ACCESS_KEY", "local".to_owned()),
        ]
    }
}

impl Drop for MotoKms {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The KMS signer, end to end with its SDK, against moto's KMS (a stand-in:
/// no AWS KMS endpoint is reachable here; moto signs with a real P-256
/// key, DER-encoded as KMS does): `berth-admin registry certificate`
/// makes the registry's certificate with the KMS key, and the real
/// `berth-local` binary, with `BERTH_REGISTRY_SIGNING_KEY=kms:…`, is the
/// realm whose tokens the registry accepts for a build's push and an
/// environment's pull.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kms_key_signs_tokens_the_registry_trusts() {
    let kms = MotoKms::start().await;
    let key_id = kms
        .client()
        .create_key()
        .key_spec(aws_sdk_kms::types::KeySpec::EccNistP256)
        .key_usage(aws_sdk_kms::types::KeyUsageType::SignVerify)
        .send()
        .await
        .expect("a KMS key")
        .key_metadata
        .expect("its metadata")
        .key_id;
    let source = format!("kms:{key_id}");
    let dir = scratch("berth-registry-kms");
    let pem = stdout_of(
        Command::new(crate::support::workspace_binary(
            "berth-admin",
            "berth-admin",
        ))
        .args([
            "registry",
            "certificate",
            "--signing-key",
            &source,
            "--days",
            "2",
        ])
        .env_clear()
        .env("HOME", &dir)
        .envs(kms.env()),
    );
    let certificate = dir.join("kms.cert.pem");
    std::fs::write(&certificate, format!("{pem}\n")).expect("the certificate");
    // A key of another curve is refused, saying why.
    let p384 = kms
        .client()
        .create_key()
        .key_spec(aws_sdk_kms::types::KeySpec::EccNistP384)
        .key_usage(aws_sdk_kms::types::KeyUsageType::SignVerify)
        .send()
        .await
        .expect("a KMS key")
        .key_metadata
        .expect("its metadata")
        .key_id;
    let refused_key = Command::new(crate::support::workspace_binary(
        "berth-admin",
        "berth-admin",
    ))
    .args([
        "registry",
        "certificate",
        "--signing-key",
        &format!("kms:{p384}"),
    ])
    .env_clear()
    .env("HOME", &dir)
    .envs(kms.env())
    .output()
    .expect("berth-admin runs");
    assert!(!refused_key.status.success());
    assert!(
        said(&refused_key).contains("its key spec must be ECC_NIST_P256"),
        "{}",
        said(&refused_key)
    );

    // The whole API as its own process, signing with the KMS key.
    let app = TestApp::with_cluster().await;
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}");
    let mut server = Command::new(crate::support::workspace_binary(
        "berth-local",
        "berth-local",
    ))
    .env_clear()
    .env("HOME", &dir)
    .env("PATH", std::env::var("PATH").unwrap_or_default())
    .env("BERTH_PORT", port.to_string())
    .env("BERTH_TABLE", app.state.store.table())
    .env(
        "AWS_ENDPOINT_URL_DYNAMODB",
        crate::support::dynamodb_endpoint(),
    )
    .env("BERTH_PUBLIC_URL", &url)
    .env("BERTH_REGISTRY_SIGNING_KEY", &source)
    .envs(kms.env())
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null())
    .spawn()
    .expect("berth-local starts");
    eventually("berth-local answers", || async {
        tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
    })
    .await;

    let registry_port = free_port();
    let host = format!("127.0.0.1:{registry_port}");
    let registry = TestRegistry::start_on(
        registry_port,
        &dir.join("registry"),
        &Access::Tokens {
            realm: &format!("{url}{REALM_PATH}"),
            issuer: &url,
            bundle: &certificate,
        },
    );
    scoped_registry(&app, &host).await;
    let setup = Setup {
        realm: Realm {
            url,
            router: Arc::new(RwLock::new(Router::new())),
            listener: None,
        },
        registry,
        dir,
        app,
    };
    let acme = Tenant::new(&setup, &setup.app.owner).await;
    let image = oci_image(&setup.dir.join("made"), "signed by KMS\n");
    let push = setup
        .credential_file(BUILDS_NAMESPACE, &acme.build_secret("push"))
        .await;
    accepted(
        &setup.registry.push(&image, &acme.repository(), "v1", &push),
        "a push with a KMS-signed token",
    );
    let pull = setup.credential_file(&acme.namespace, PULL_SECRET).await;
    accepted(
        &setup.registry.inspect(&acme.repository(), "v1", &pull),
        "a pull with a KMS-signed token",
    );
    refused(
        &setup.registry.push(
            &image,
            &format!("berth/{}/{}/other", acme.org, acme.project),
            "v1",
            &push,
        ),
        "a push beyond the credential, with a KMS-signed token",
    );
    let _ = server.kill();
    let _ = server.wait();
}

/// A live secret of every kind — a session, a personal token, a deploy
/// token, a registry password, a webhook's secret — sent as every path
/// parameter of every operation (each call with one parameter replaced,
/// the others naming what exists) is repeated nowhere: not in any answer,
/// not in the audit log (the project's events are the organization's), not
/// in the logs (issue 45). Every path parameter is parsed as the id or name
/// it must be before anything reads it (`ObjectPath`, `scope::AuditName`).
#[tokio::test]
async fn a_secret_put_where_an_id_belongs_is_repeated_nowhere() {
    crate::support::logs::capture();
    let setup = Setup::with_one_key("berth-registry-path-secrets").await;
    let app = &setup.app;
    let owner = &app.owner;
    let acme = Tenant::new(&setup, owner).await;
    let base = format!("/api/v1/projects/{}", acme.project);
    let app_path = format!("{base}/environments/prod/apps/{}", acme.app);

    let session = app.sign_in(&owner.email, crate::support::PASSWORD).await;
    let personal = app
        .post("/api/v1/tokens")
        .by(owner)
        .json(json!({ "name": "ci" }))
        .send()
        .await;
    personal.assert_status(201);
    let deploy = app
        .deploy_token(&acme.project, json!({ "name": "ci" }))
        .await;
    let hook = app
        .post(&format!("{app_path}/webhook"))
        .by(owner)
        .send()
        .await;
    hook.assert_status(201);
    let (_, registry_password) = setup.environment_login(&acme.namespace).await;
    let secrets = [
        session,
        owner.token.clone(),
        personal.json()["token"].as_str().unwrap().to_owned(),
        deploy.token.clone(),
        registry_password,
        hook.json()["secret"].as_str().unwrap().to_owned(),
    ];
    let hook_id = hook.json()["url"]
        .as_str()
        .and_then(|url| url.rsplit('/').next())
        .unwrap()
        .to_owned();
    app.request(Method::PUT, &format!("{base}/environments/prod/secrets/db"))
        .by(owner)
        .json(json!({ "data": { "password": "kept" } }))
        .send()
        .await
        .assert_status(201);
    // What each parameter names when it is not the one replaced.
    let existing = |param: &str| -> String {
        match param {
            "project" => acme.project.clone(),
            "environment" => "prod".into(),
            "app" => acme.app.clone(),
            "secret" => "db".into(),
            "template" => "nginx".into(),
            "member" => owner.id.clone(),
            "token" => deploy.id.clone(),
            "build" => "1".into(),
            "hook" => hook_id.clone(),
            // A command's name, of none there is: each answers 404.
            "command" => "cmd-bbbbbbbbbbbb".into(),
            other => panic!("a path parameter this test does not know: {other}"),
        }
    };

    let document: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            concat!(env!("CARGO_MANIFEST_DIR"), "/.."),
            "/openapi/openapi.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let mut calls = 0;
    for (template, item) in document["paths"].as_object().unwrap() {
        let params: Vec<&str> = template
            .split('{')
            .skip(1)
            .filter_map(|rest| rest.split('}').next())
            .collect();
        for (method, _) in item.as_object().unwrap() {
            let method: Method = method.to_uppercase().parse().unwrap();
            for replaced in &params {
                for secret in &secrets {
                    let path = params.iter().fold(template.clone(), |path, param| {
                        let value = if param == replaced {
                            secret.clone()
                        } else {
                            existing(param)
                        };
                        path.replace(&format!("{{{param}}}"), &value)
                    });
                    let answer = app
                        .request(method.clone(), &path)
                        .by(owner)
                        .json(json!({}))
                        .send()
                        .await;
                    let text = format!("{:?} {}", answer.headers, answer.text());
                    for secret in &secrets {
                        assert!(
                            !text.contains(secret.as_str()),
                            "{method} {template} with a secret as {{{replaced}}} repeats it: {text}"
                        );
                    }
                    calls += 1;
                }
            }
        }
    }
    assert!(calls > 300, "every operation was called: {calls} calls");
    let audit = format!(
        "{:?}{:?}",
        app.audit_events(&owner.org).await,
        app.audit_events(berth_store::keys::SYSTEM_ORG).await
    );
    let logged = crate::support::logs::captured();
    for secret in &secrets {
        assert!(
            !audit.contains(secret.as_str()),
            "the audit log holds a secret"
        );
        assert!(!logged.contains(secret.as_str()), "the log holds a secret");
    }
}

/// `Authorization: Basic` of a user name and password.
fn basic(user: &str, password: &str) -> String {
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
    )
}

/// Issue 46, part 6: the token service under a flood of wrong passwords.
/// A user name (guessable: `environment/{namespace}`) is never locked — past
/// its budget of failures its correct password still works, and its further
/// failures leave its organization's log alone (one event each in the
/// system partition); a source address past its budget is `429` with
/// `Retry-After`, one event, answered without reading the cluster, a
/// correct credential too, while another address is served; and a missing
/// user costs what a wrong password does. Counts, never clocks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_wrong_passwords_is_throttled_by_source_and_never_locks_a_name() {
    use berth_store::identity::throttle::Subject;
    use berth_store::keys::SYSTEM_ORG;
    use std::net::{IpAddr, Ipv4Addr};

    let setup = Setup::with_one_key("berth-registry-flood").await;
    let app = &setup.app;
    let acme = Tenant::new(&setup, &app.owner).await;
    let (username, password) = setup.environment_login(&acme.namespace).await;
    let service = setup.registry.host();
    let query = format!(
        "{REALM_PATH}?service={service}&scope=repository:{}:pull",
        acme.repository()
    );
    let from = |ip: IpAddr, authorization: &str| {
        app.get(&query)
            .client_ip(ip)
            .header("authorization", authorization)
    };
    let address = |n: u8| IpAddr::V4(Ipv4Addr::new(198, 51, 100, n));

    // A missing user costs what a wrong password does: the same cluster
    // requests and DynamoDB round trips, the same answer; for each kind of
    // user name Berth mints.
    let stand_in = app.cluster().standin.is_some();
    // Warm: the registry's settings and the kubeconfig are read once an
    // instance, and not by what is measured.
    from(address(9), &basic(&username, &password))
        .send()
        .await
        .assert_status(200);
    let cost = |authorization: String, ip: IpAddr| async move {
        let (trips, asked) = (app.round_trips.get(), app.cluster_requests.get());
        let answer = from(ip, &authorization).send().await;
        answer.assert_problem(401, "unauthenticated");
        (
            app.round_trips.get() - trips,
            app.cluster_requests.get() - asked,
            answer.json(),
        )
    };
    for (n, (existing, missing)) in [
        (username.clone(), "environment/nobody-here".to_owned()),
        (
            format!("build/{}/pull", acme.build),
            "build/nobody-here-1/pull".to_owned(),
        ),
        (
            format!("build/{}/push", acme.build),
            "build/nobody-here-1/push".to_owned(),
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let ip = address(10 + u8::try_from(n).unwrap());
        let wrong = cost(basic(&existing, "not-the-password"), ip).await;
        let unknown = cost(basic(&missing, "not-the-password"), ip).await;
        if stand_in {
            assert_eq!(wrong.1, 1, "{existing}: one cluster read");
        }
        assert_eq!(
            wrong, unknown,
            "{existing} and {missing}: the same work and answer"
        );
    }

    // A name past its budget: every failure still one event, the first
    // ones in its organization's log and the rest in the system
    // partition's; its correct password still works.
    let name_limit = Subject::RegistryUser.limit();
    let guesser = address(1);
    for _ in 0..name_limit + 3 {
        from(guesser, &basic(&username, "a-guess"))
            .send()
            .await
            .assert_problem(401, "unauthenticated");
    }
    from(guesser, &basic(&username, &password))
        .send()
        .await
        .assert_status(200);
    let denied_from = |events: &[berth_records::audit::AuditEvent], ip: IpAddr| {
        events
            .iter()
            .filter(|e| {
                e.outcome == Outcome::Denied
                    && e.ip.as_deref() == Some(ip.to_string().as_str())
                    && e.actor.as_deref() == Some(username.as_str())
            })
            .count()
    };
    // The cost check's wrong password counts against the name as well.
    let org_log = app.audit_events(&acme.org).await;
    let system_log = app.audit_events(SYSTEM_ORG).await;
    assert_eq!(
        denied_from(&org_log, guesser) + denied_from(&org_log, address(10)),
        name_limit,
        "the organization's log: the name's budget"
    );
    assert_eq!(
        denied_from(&system_log, guesser),
        4,
        "the rest, one event each, in the system partition"
    );

    // A source past its budget: 429 with Retry-After, without reading the
    // cluster, one event, even for a correct password; another address is
    // served.
    let flooder = address(2);
    for n in 0..Subject::RegistrySource.limit() {
        from(flooder, &basic(&format!("environment/guess-{n}"), "x"))
            .send()
            .await
            .assert_problem(401, "unauthenticated");
    }
    let asked = app.cluster_requests.get();
    let throttled = from(flooder, &basic(&username, &password)).send().await;
    throttled.assert_problem(429, "too_many_requests");
    let retry_after: u64 = throttled.headers[http::header::RETRY_AFTER]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(retry_after > 0 && retry_after <= 15 * 60, "{retry_after}");
    if stand_in {
        assert_eq!(app.cluster_requests.get(), asked, "no cluster read");
    }
    let throttled_events: Vec<_> = app
        .audit_events(SYSTEM_ORG)
        .await
        .into_iter()
        .filter(|e| e.outcome == Outcome::Throttled)
        .collect();
    assert_eq!(throttled_events.len(), 1, "one event");
    assert_eq!(throttled_events[0].status, Some(429));
    assert_eq!(
        throttled_events[0].actor.as_deref(),
        Some(username.as_str())
    );
    from(address(3), &basic(&username, &password))
        .send()
        .await
        .assert_status(200);
}
