//! The controller's image, as `make controller-image` writes it (`make test`
//! builds it before the tests): read back from the OCI archive with nothing
//! but `tar`, the way any registry or runtime reads it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use berth_controller::DEFAULT_LEASE_NAME;
use serde_json::Value;

use crate::controller_ops::{held_by, holder, http_get};
use crate::support::cluster::LEASE_DURATION_SECONDS;
use crate::support::identities::documents;
use crate::support::{TestApp, eventually, stdout_of};

const BINARY: &str = "usr/local/bin/berth-controller";

/// The cargo target directory: the test binary is `{it}/debug/deps/api-…`.
pub fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    exe.ancestors()
        .nth(3)
        .expect("the cargo target directory")
        .to_path_buf()
}

/// What `make controller-image` writes.
pub fn archive() -> PathBuf {
    target_dir().join("controller-image/berth-controller.oci.tar")
}

fn tar(args: &[&str], dir: &Path) {
    stdout_of(Command::new("tar").args(args).current_dir(dir));
}

fn blob(dir: &Path, digest: &str) -> PathBuf {
    let hex = digest.strip_prefix("sha256:").expect("a sha256 digest");
    dir.join("blobs/sha256").join(hex)
}

fn json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).expect("a blob")).expect("JSON")
}

/// Every regular file under `root`, by path relative to it, with its size.
fn files(root: &Path) -> BTreeMap<String, u64> {
    let mut found = BTreeMap::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("a directory") {
            let entry = entry.expect("an entry");
            let kind = entry.file_type().expect("a file type");
            if kind.is_dir() {
                pending.push(entry.path());
            } else {
                let path = entry.path();
                let relative = path.strip_prefix(root).expect("under the root");
                let size = entry.metadata().expect("metadata").len();
                found.insert(relative.to_string_lossy().into_owned(), size);
            }
        }
    }
    found
}

/// Whether an ELF executable asks for a program interpreter (a dynamic
/// loader, which a `FROM scratch` image does not have): a `PT_INTERP`
/// program header.
fn needs_a_loader(elf: &[u8]) -> bool {
    assert_eq!(&elf[..4], b"\x7fELF", "an ELF file");
    assert_eq!(elf[4], 2, "64-bit");
    let u16_at = |at: usize| u16::from_le_bytes([elf[at], elf[at + 1]]) as usize;
    let phoff = u64::from_le_bytes(elf[0x20..0x28].try_into().expect("8 bytes")) as usize;
    let (entry_size, entries) = (u16_at(0x36), u16_at(0x38));
    (0..entries).any(|i| {
        let at = phoff + i * entry_size;
        u32::from_le_bytes(elf[at..at + 4].try_into().expect("4 bytes")) == 3
    })
}

/// The image's archive unpacked into a directory of its own: the image's
/// manifest, its configuration and the root of its file system.
struct Unpacked {
    dir: PathBuf,
    manifest: Value,
    config: Value,
}

impl Unpacked {
    fn new() -> Self {
        let archive = archive();
        assert!(
            archive.exists(),
            "{} is missing: build it with `make controller-image` (`make test` does)",
            archive.display()
        );
        let dir = std::env::temp_dir().join(crate::support::unique("berth-image"));
        let root = dir.join("rootfs");
        std::fs::create_dir_all(&root).expect("a directory");
        tar(&["-xf", archive.to_str().expect("a UTF-8 path")], &dir);
        let index = json(&dir.join("index.json"));
        let manifest = json(&blob(
            &dir,
            index["manifests"][0]["digest"]
                .as_str()
                .expect("a manifest"),
        ));
        let config = json(&blob(
            &dir,
            manifest["config"]["digest"].as_str().expect("a config"),
        ));
        for layer in manifest["layers"].as_array().expect("layers") {
            let path = blob(&dir, layer["digest"].as_str().expect("a layer digest"));
            tar(&["-xf", path.to_str().expect("a UTF-8 path")], &root);
        }
        Self {
            dir,
            manifest,
            config,
        }
    }

    fn root(&self) -> PathBuf {
        self.dir.join("rootfs")
    }
}

impl Drop for Unpacked {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn the_controller_image_holds_the_static_controller_run_as_its_user() {
    let unpacked = Unpacked::new();
    let (manifest, root) = (&unpacked.manifest, unpacked.root());
    let image = &unpacked.config["config"];
    assert_eq!(
        image["Entrypoint"],
        serde_json::json!([format!("/{BINARY}")])
    );
    assert!(image["Cmd"].is_null(), "no arguments: {}", image["Cmd"]);
    assert_eq!(
        image["Labels"]["org.opencontainers.image.version"],
        env!("CARGO_PKG_VERSION")
    );
    // The user the Deployment runs it as.
    let deployment = documents("controller.yaml")
        .into_iter()
        .find(|d| d["kind"].as_str() == Some("Deployment"))
        .expect("the controller's Deployment");
    let uid = deployment["spec"]["template"]["spec"]["securityContext"]["runAsUser"]
        .as_u64()
        .expect("runAsUser");
    assert_ne!(uid, 0);
    assert_eq!(image["User"], format!("{uid}:{uid}"));

    let files = files(&root);
    assert_eq!(
        files.keys().map(String::as_str).collect::<Vec<_>>(),
        [
            "etc/group",
            "etc/passwd",
            "etc/ssl/certs/ca-certificates.crt",
            BINARY,
        ],
        "the image holds the controller, its user and the CA bundle, nothing else"
    );
    let passwd = std::fs::read_to_string(root.join("etc/passwd")).expect("/etc/passwd");
    assert!(
        passwd.contains(&format!(":{uid}:{uid}:")),
        "/etc/passwd names the user: {passwd}"
    );
    let certificates =
        std::fs::read_to_string(root.join("etc/ssl/certs/ca-certificates.crt")).expect("CAs");
    assert!(certificates.matches("BEGIN CERTIFICATE").count() > 10);

    let binary = std::fs::read(root.join(BINARY)).expect("the binary");
    assert!(
        !needs_a_loader(&binary),
        "statically linked: the image has no dynamic loader or libraries"
    );
    let version = Command::new(root.join(BINARY))
        .arg("--version")
        .output()
        .expect("the image's binary runs");
    assert!(version.status.success());
    assert_eq!(
        String::from_utf8_lossy(&version.stdout).trim(),
        format!("berth-controller {}", env!("CARGO_PKG_VERSION"))
    );
    let layers: u64 = manifest["layers"]
        .as_array()
        .expect("layers")
        .iter()
        .map(|layer| layer["size"].as_u64().expect("a size"))
        .sum();
    println!(
        "image: {} layer bytes compressed, binary {} bytes, all files {} bytes",
        layers,
        files[BINARY],
        files.values().sum::<u64>()
    );
}

/// The image's controller as the Deployment runs it (its settings in the
/// environment, the pod's name as its replica's): it leads, reconciles, and
/// at SIGTERM (what the kubelet sends a pod's container) finishes, releases
/// the Lease and exits 0.
#[tokio::test]
#[cfg_attr(
    berth_real_cluster,
    ignore = "stops the test's own controller, and would contend for the Lease of an installed one"
)]
async fn the_images_controller_leads_and_stops_cleanly_at_sigterm() {
    let app = TestApp::with_cluster().await;
    let cluster = app.cluster();
    let admin = &cluster.client;
    let unpacked = Unpacked::new();
    let kubeconfig = unpacked.dir.join("kubeconfig");
    std::fs::write(&kubeconfig, &cluster.controller_kubeconfig).expect("writing the kubeconfig");
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port");
    let identity = crate::support::unique("berth-controller-pod");
    let pod_uid = uuid::Uuid::new_v4().to_string();
    cluster.stop_controller().await;
    let child = Command::new(unpacked.root().join(BINARY))
        .env_clear()
        .env("KUBECONFIG", &kubeconfig)
        .env("BERTH_REPLICA", &identity)
        .env("BERTH_REPLICA_UID", &pod_uid)
        .env("BERTH_CONTROLLER_ADDR", addr.to_string())
        .env(
            "BERTH_LEASE_DURATION_SECONDS",
            LEASE_DURATION_SECONDS.to_string(),
        )
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the image's controller starts");
    let mut child = KilledOnDrop(child);
    let wait = crate::support::wait_bound();
    // The stopped controller's Lease expires first (it did not release it).
    held_by(admin, DEFAULT_LEASE_NAME, &identity, wait).await;
    // Ready, and saying, as an installation that has not set it yet is
    // told, that no range of the cluster's own is closed to tenant pods.
    let warning = berth_controller::egress::EgressSettings::default()
        .warning()
        .expect("unset egress ranges are warned about");
    eventually("it leads with its caches filled", || async {
        http_get(addr, "/readyz").await == (200, format!("leader; warning: {warning}"))
    })
    .await;
    // ...and as a Warning Event on its pod, which `kubectl describe pod`
    // finds by the pod's name, namespace, kind and uid.
    let events: kube::Api<k8s_openapi::api::events::v1::Event> =
        kube::Api::namespaced(admin.clone(), berth_controller::DEFAULT_LEASE_NAMESPACE);
    let unsafe_settings = || async {
        events
            .list(&Default::default())
            .await
            .expect("listing berth-system's Events")
            .items
            .into_iter()
            .find(|event| {
                event.reason.as_deref() == Some("UnsafeSettings")
                    && event.reporting_instance.as_deref() == Some(identity.as_str())
            })
    };
    eventually("an UnsafeSettings Event on the replica's pod", || async {
        unsafe_settings().await.is_some()
    })
    .await;
    let said = unsafe_settings().await.expect("the Event");
    let regarding = said.regarding.expect("what the Event regards");
    assert_eq!(
        (regarding.kind.as_deref(), regarding.name.as_deref()),
        (Some("Pod"), Some(identity.as_str()))
    );
    assert_eq!(regarding.uid.as_deref(), Some(pod_uid.as_str()));
    assert_eq!(said.type_.as_deref(), Some("Warning"));
    assert_eq!(said.note.as_deref(), Some(warning.as_str()));
    app.ready_environment("image", "dev").await;

    let terminated = Command::new("kill")
        .args(["-TERM", &child.0.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(terminated.success());
    let stopping = Instant::now();
    let status = loop {
        if let Some(status) = child.0.try_wait().expect("the controller's status") {
            break status;
        }
        assert!(
            stopping.elapsed() < wait,
            "still running {wait:?} after SIGTERM"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    eprintln!("SIGTERM to exit: {} ms", stopping.elapsed().as_millis());
    assert!(status.success(), "a clean exit: {status}");
    assert_eq!(
        holder(admin, DEFAULT_LEASE_NAME).await,
        None,
        "the Lease is released"
    );
}

/// A child process killed if the test ends before it does.
struct KilledOnDrop(std::process::Child);

impl Drop for KilledOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
