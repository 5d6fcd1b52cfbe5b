//! A throwaway image registry on loopback over HTTPS (Debian's `docker-registry`),
//! started and stopped by the project's script `infra/registry/registry.sh`,
//! as DynamoDB Local is by `infra/dynamodb-local/dynamodb-local.sh`.

use std::path::{Path, PathBuf};
use std::process::Command;

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/infra/registry/registry.sh");

/// A registry on `127.0.0.1` and a free port, storing under `dir`; stopped
/// when dropped.
pub struct Registry {
    pub port: u16,
    dir: PathBuf,
}

impl Registry {
    /// Open to anyone, or (`htpasswd`: a user and password) to that
    /// credential only.
    pub fn start(dir: &Path, htpasswd: Option<(&str, &str)>) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free port")
            .port();
        std::fs::create_dir_all(dir).expect("the registry's directory");
        let mut command = Command::new(SCRIPT);
        command.arg("start").arg(port.to_string()).arg(dir);
        if let Some((user, password)) = htpasswd {
            let hash = bcrypt::hash(password, 4).expect("a bcrypt hash");
            let file = dir.join("htpasswd");
            std::fs::write(&file, format!("{user}:{hash}\n")).expect("the htpasswd file");
            command.arg(file);
        }
        let status = command.status().expect("infra/registry/registry.sh runs");
        assert!(status.success(), "the registry started");
        Self {
            port,
            dir: dir.to_owned(),
        }
    }

    /// `127.0.0.1:PORT`.
    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The registry's certificate (self-signed, made when it started): what
    /// a client trusts it by (`SSL_CERT_FILE` for skopeo, as for any Go
    /// program; the one thing the tests add to the steps' environment, as a
    /// cluster's nodes would trust a private registry's CA).
    pub fn certificate(&self) -> PathBuf {
        self.dir.join("tls/cert.pem")
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = Command::new(SCRIPT).arg("stop").arg(&self.dir).status();
    }
}
