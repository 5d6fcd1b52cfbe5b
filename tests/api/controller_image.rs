//! The controller's image, as `make controller-image` writes it (`make test`
//! builds it before the tests): read back from the OCI archive with nothing
//! but `tar`, the way any registry or runtime reads it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::support::identities::documents;
use crate::support::stdout_of;

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

#[test]
fn the_controller_image_holds_the_static_controller_run_as_its_user() {
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
    let image = &config["config"];
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

    for layer in manifest["layers"].as_array().expect("layers") {
        let path = blob(&dir, layer["digest"].as_str().expect("a layer digest"));
        tar(&["-xf", path.to_str().expect("a UTF-8 path")], &root);
    }
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
    let _ = std::fs::remove_dir_all(&dir);
}
