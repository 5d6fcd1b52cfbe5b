//! The `kube-standin` binary, driven by kubectl and by the kube client through the kubeconfig
//! it writes.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ListParams};

use crate::common::client_from_kubeconfig;

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn binary_serves_kubectl_and_kube() {
    let dir = std::env::temp_dir().join(format!("standin-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let kubeconfig = dir.join("kubeconfig");
    let mut child = Command::new(env!("CARGO_BIN_EXE_kube-standin"))
        .args([
            "--addr",
            "127.0.0.1:0",
            "--control-addr",
            "127.0.0.1:0",
            "--kubeconfig-out",
        ])
        .arg(&kubeconfig)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("binary starts");
    let stdout = child.stdout.take().unwrap();
    let server = Server(child);
    let mut lines = BufReader::new(stdout).lines();
    let url = lines.next().expect("prints its URL").unwrap();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");

    let yaml = std::fs::read_to_string(&kubeconfig).expect("kubeconfig written");
    assert!(yaml.contains(&url));
    let client = client_from_kubeconfig(&yaml, |_| {}).await;
    let namespaces: Api<Namespace> = Api::all(client);
    let names: Vec<String> = namespaces
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect();
    assert!(names.contains(&"default".to_string()), "{names:?}");

    let kubectl = Path::new("/usr/bin/kubectl");
    if kubectl.exists() {
        let out = Command::new(kubectl)
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(["get", "namespaces", "-o", "name"])
            .output()
            .expect("kubectl runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "kubectl failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(stdout.lines().any(|l| l == "namespace/default"), "{stdout}");
        let table = Command::new(kubectl)
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(["get", "namespaces"])
            .output()
            .unwrap();
        let table = String::from_utf8_lossy(&table.stdout);
        assert!(
            table.lines().next().is_some_and(|h| h.starts_with("NAME")),
            "{table}"
        );
        assert!(table.contains("kube-system"), "{table}");
    } else {
        eprintln!("kubectl not installed: skipped the kubectl part");
    }
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}
