//! "The cluster" of `docs/deploy.md`, run as a reader runs it: its
//! `sh` blocks, in order, in one bash in the clone, from the image to a
//! controller whose rollout completed and the API's kubeconfig stored —
//! against a fresh stand-in cluster (or `BERTH_TEST_KUBECONFIG`), a registry
//! on loopback (Debian's `docker-registry`) and DynamoDB Local. Where it
//! differs from a reader's run (the pod is made Running by the test, the
//! registry speaks plain HTTP) the document says so.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use berth_api::access::client_from_kubeconfig;
use berth_cluster::crd::Project;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;

use crate::controller_image::{archive, target_dir};
use crate::guide::{run_steps, steps_from};
use crate::support::cluster::{bare_cluster, hold_registry_settings};
use crate::support::identities;
use crate::support::kubelet::keep_pods_running;
use crate::support::{TestApp, dynamodb_endpoint, eventually, stdout_of, unique};

const DEPLOY: &str = include_str!("../../docs/deploy.md");

/// The variables of the section's first block, which the reader fills in.
const FILLED_IN: [&str; 3] = ["REGISTRY", "APPS_DOMAIN", "INSTALLATION"];

/// Bound on the whole section: `make controller-image` is quick when `make
/// test` has just built the image, and about 4 minutes on a new machine.
const DEADLINE: Duration = Duration::from_secs(600);

/// The "## The cluster" section of `docs/deploy.md`, and the line it starts at.
fn section() -> (&'static str, usize) {
    let start = DEPLOY
        .find("\n## The cluster\n")
        .expect("docs/deploy.md has a \"## The cluster\" section")
        + 1;
    let rest = &DEPLOY[start..];
    let end = rest[1..].find("\n#").map_or(rest.len(), |at| at + 2);
    (&rest[..end], DEPLOY[..start].lines().count() + 1)
}

/// A registry on loopback, stopped when dropped.
struct Registry {
    child: Child,
    port: u16,
    _storage: PathBuf,
}

impl Registry {
    async fn start(dir: &Path) -> Registry {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free port")
            .port();
        let storage = dir.join("registry");
        std::fs::create_dir_all(&storage).expect("the registry's storage");
        let config = dir.join("registry.yml");
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: {}\n\
                 http:\n  addr: 127.0.0.1:{port}\n",
                storage.display()
            ),
        )
        .expect("the registry's configuration");
        let child = Command::new("docker-registry")
            .arg("serve")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("docker-registry runs (scripts/install-tools.sh image installs it)");
        let registry = Registry {
            child,
            port,
            _storage: storage,
        };
        eventually("the registry answers", || async {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        })
        .await;
        registry
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn which(tool: &str) -> PathBuf {
    PathBuf::from(stdout_of(
        Command::new("sh").args(["-c", &format!("command -v {tool}")]),
    ))
}

/// An image's digest, as skopeo reads it (`flags` before the image).
fn digest(flags: &[&str], image: &str) -> String {
    stdout_of(Command::new("skopeo").arg("inspect").args(flags).args([
        "--format",
        "{{.Digest}}",
        image,
    ]))
}

#[tokio::test]
async fn every_command_of_the_clusters_deploy_works() {
    let (text, first_line) = section();
    let steps = steps_from(text, first_line);
    let settings = &steps[0];
    for name in FILLED_IN {
        assert!(
            settings.sets(name),
            "the section's first sh block sets {name}"
        );
    }
    let kubectl = which("kubectl");
    let skopeo = which("skopeo");
    which("docker-registry");

    let dir = std::env::temp_dir().join(unique("berth-deploy"));
    std::fs::create_dir_all(&dir).expect("a directory for the run");
    let registry = Registry::start(&dir).await;

    // A cluster with nothing of Berth's in it yet.
    let (_standin, admin_kubeconfig) = bare_cluster().await;
    let kubeconfig_path = dir.join("admin-kubeconfig");
    std::fs::write(&kubeconfig_path, &admin_kubeconfig).expect("the admin's kubeconfig");
    let admin = client_from_kubeconfig(&admin_kubeconfig, None, Duration::from_secs(10))
        .await
        .expect("the admin's client");
    // No kubelet runs here: the test marks the controller's pod Running.
    let _kubelet = keep_pods_running(admin.clone(), vec!["berth-system".to_owned()]);

    // The table the API uses, and berth-admin on PATH; the registry speaks
    // plain HTTP, so skopeo is told not to insist on TLS.
    let api = TestApp::new().await;
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).expect("a bin directory");
    let shim = bin.join("skopeo");
    std::fs::write(
        &shim,
        format!(
            "#!/bin/sh\n[ \"$1\" = copy ] && {{ shift; exec '{0}' copy --dest-tls-verify=false \"$@\"; }}\nexec '{0}' \"$@\"\n",
            skopeo.display()
        ),
    )
    .expect("the skopeo shim");
    Command::new("chmod")
        .arg("+x")
        .arg(&shim)
        .status()
        .expect("chmod");
    let admin_bin = Path::new(crate::support::workspace_binary(
        "berth-admin",
        "berth-admin",
    ))
    .parent()
    .expect("berth-admin's directory");
    let target_dir = target_dir();
    let path = format!(
        "{}:{}:{}:{}",
        bin.display(),
        admin_bin.display(),
        kubectl.parent().expect("kubectl's directory").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let env = [
        ("PATH", path),
        ("KUBECONFIG", kubeconfig_path.display().to_string()),
        ("CARGO_TARGET_DIR", target_dir.display().to_string()),
        // As `make test` builds it: unoptimized, since a release build takes
        // minutes after any change (docs/deploy.md says so).
        ("BERTH_IMAGE_PROFILE", "dev".to_owned()),
        ("BERTH_TABLE", api.state.store.table().to_owned()),
        ("AWS_ENDPOINT_URL_DYNAMODB", dynamodb_endpoint()),
        ("AWS_REGION", "us-east-1".to_owned()),
        ("AWS_ACCESS_KEY_ID", "local".to_owned()),
        ("AWS_SECRET_ACCESS_KEY", "local".to_owned()),
    ];
    let installation = unique("deploy-test");
    let registry_path = format!("127.0.0.1:{}/berth", registry.port);
    let values = [
        ("REGISTRY", registry_path.clone()),
        ("APPS_DOMAIN", "apps.deploy.test".to_owned()),
        ("INSTALLATION", installation.clone()),
    ];
    let clone = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
    // The section sets the registry: on a real cluster the run's other
    // tests wait meanwhile with theirs; a shared push credential one of them
    // left there is not this installation's.
    let _registry_settings = hold_registry_settings(&format!("127.0.0.1:{}", registry.port)).await;
    let push_secrets =
        Api::<k8s_openapi::api::core::v1::Secret>::namespaced(admin.clone(), "berth-builds");
    let version_of = |secret: Option<k8s_openapi::api::core::v1::Secret>| {
        secret.and_then(|secret| secret.metadata.resource_version)
    };
    let shared_before = version_of(
        push_secrets
            .get_opt("berth-registry-push")
            .await
            .expect("reading berth-builds"),
    );
    let printed = run_steps(
        "docs/deploy.md, The cluster",
        &steps,
        &values,
        &dir,
        clone,
        &env,
        DEADLINE,
    )
    .await;
    let kustomization =
        std::fs::read_to_string(clone.join(&installation).join("kustomization.yaml"))
            .expect("the installation's kustomization");
    let _ = std::fs::remove_dir_all(clone.join(&installation));

    // The image in the registry is the one built.
    let built = digest(&[], &format!("oci-archive:{}", archive().display()));
    let image = format!(
        "{registry_path}/berth-controller:{}",
        env!("CARGO_PKG_VERSION")
    );
    assert_eq!(
        digest(&["--tls-verify=false"], &format!("docker://{image}")),
        built
    );
    assert!(
        printed.iter().any(|out| out.contains(&built)),
        "make controller-image prints the digest"
    );

    // The controller's Deployment runs that image with the settings given.
    let deployment = Api::<Deployment>::namespaced(admin.clone(), "berth-system")
        .get("berth-controller")
        .await
        .expect("the controller's Deployment");
    let pod = deployment
        .spec
        .expect("a spec")
        .template
        .spec
        .expect("a pod spec");
    let container = &pod.containers[0];
    assert_eq!(container.image.as_deref(), Some(image.as_str()));
    let settings_name = container.env_from.as_ref().expect("envFrom")[0]
        .config_map_ref
        .as_ref()
        .expect("a ConfigMap")
        .name
        .clone();
    let settings = Api::<ConfigMap>::namespaced(admin.clone(), "berth-system")
        .get(&settings_name)
        .await
        .expect("the controller's settings")
        .data
        .expect("data");
    assert_eq!(settings["BERTH_APPS_DOMAIN"], "apps.deploy.test");
    assert_eq!(settings["BERTH_PROGRESS_DEADLINE_SECONDS"], "600");
    assert_eq!(
        deployment
            .status
            .and_then(|status| status.available_replicas),
        Some(2),
        "the rollout completed: both replicas (one leads, one stands by)"
    );

    // The admission policy, at the version the cluster serves it: the
    // component `admission-v1beta1` was added where only `v1beta1` is
    // (Kubernetes 1.28, 1.29), as the section says.
    let version = identities::admission_version(&admin).await;
    for binding in [false, true] {
        identities::admission_api_at(&admin, version, binding)
            .get(identities::ADMISSION_POLICY)
            .await
            .unwrap_or_else(|e| panic!("the policy (binding: {binding}) at {version}: {e}"));
    }
    assert_eq!(
        kustomization.contains("../infra/k8s/admission-v1beta1"),
        version == "v1beta1",
        "the component is added where the cluster serves the policy only at v1beta1:\n{kustomization}"
    );

    // The registry builds push to, as `berth-admin registry set` wrote it.
    let registry_settings = Api::<ConfigMap>::namespaced(admin.clone(), "berth-system")
        .get("berth-registry")
        .await
        .expect("the registry's settings")
        .data
        .expect("data");
    assert_eq!(registry_settings["prefix"], format!("{registry_path}/apps"));
    assert_eq!(
        registry_settings["server"],
        format!("127.0.0.1:{}", registry.port)
    );
    // Berth mints every credential: none is shared (on a fresh cluster
    // there is none; on a real cluster's run, one an earlier test left is
    // as it was).
    assert_eq!(registry_settings["credentials"], "scoped");
    assert_eq!(
        version_of(
            push_secrets
                .get_opt("berth-registry-push")
                .await
                .expect("reading berth-builds")
        ),
        shared_before,
        "no shared push credential"
    );
    // And the token service's settings, in the table.
    let token_service = berth_api::registry::RegistrySettings::load(&api.state.store)
        .await
        .expect("reading the table")
        .expect("the token service's settings");
    assert_eq!(token_service.prefix, format!("{registry_path}/apps"));
    assert!(token_service.shared.is_empty());

    // The API's stored kubeconfig is berth-api's.
    let stored = berth_api::kubeconfig::load(&api.state.store)
        .await
        .expect("reading the table")
        .expect("a stored kubeconfig");
    let berth_api = client_from_kubeconfig(&stored.kubeconfig, None, Duration::from_secs(10))
        .await
        .expect("the API's client");
    Api::<Project>::all(berth_api.clone())
        .list(&Default::default())
        .await
        .expect("berth-api lists projects: the CRDs and its role are installed");
    match Api::<Deployment>::all(berth_api)
        .list(&Default::default())
        .await
    {
        Err(kube::Error::Api(status)) => assert_eq!(status.code, 403),
        other => panic!("berth-api read Deployments: {other:?}"),
    }
    drop(registry);
    let _ = std::fs::remove_dir_all(&dir);
}
