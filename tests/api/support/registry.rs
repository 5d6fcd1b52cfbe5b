//! A throwaway image registry on loopback over HTTPS (Debian's `docker-registry`),
//! started and stopped by the project's script `infra/registry/registry.sh`,
//! as DynamoDB Local is by `infra/dynamodb-local/dynamodb-local.sh`; and
//! what the tests do with it through Debian's skopeo and umoci.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const SCRIPT: &str = concat!(
    concat!(env!("CARGO_MANIFEST_DIR"), "/.."),
    "/infra/registry/registry.sh"
);

/// How the registry lets clients in.
pub enum Access<'a> {
    /// Anyone.
    Open,
    /// That user and password only (an htpasswd file).
    Password(&'a str, &'a str),
    /// Bearer tokens of a token service (Docker Registry token
    /// authentication): its realm, its issuer, and the PEM bundle of the
    /// certificates whose keys may sign them. The service is the registry's
    /// host (`127.0.0.1:PORT`).
    Tokens {
        realm: &'a str,
        issuer: &'a str,
        bundle: &'a Path,
    },
}

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
        let access = match htpasswd {
            Some((user, password)) => Access::Password(user, password),
            None => Access::Open,
        };
        Self::start_on(free_port(), dir, &access)
    }

    /// On `port` (see [`free_port`]), letting clients in as `access` says.
    pub fn start_on(port: u16, dir: &Path, access: &Access<'_>) -> Self {
        std::fs::create_dir_all(dir).expect("the registry's directory");
        let registry = Self {
            port,
            dir: dir.to_owned(),
        };
        registry.run(access);
        registry
    }

    /// Stops it and starts it again on the same port and storage, letting
    /// clients in as `access` now says (a registry reads its configuration
    /// once, when it starts).
    pub fn restart(&self, access: &Access<'_>) {
        let _ = Command::new(SCRIPT).arg("stop").arg(&self.dir).status();
        self.run(access);
    }

    fn run(&self, access: &Access<'_>) {
        let mut command = Command::new(SCRIPT);
        command
            .arg("start")
            .arg(self.port.to_string())
            .arg(&self.dir);
        match access {
            Access::Open => {}
            Access::Password(user, password) => {
                let hash = bcrypt::hash(password, 4).expect("a bcrypt hash");
                let file = self.dir.join("htpasswd");
                std::fs::write(&file, format!("{user}:{hash}\n")).expect("the htpasswd file");
                command.arg(file);
            }
            Access::Tokens {
                realm,
                issuer,
                bundle,
            } => {
                command.arg("token").arg(realm).arg(issuer).arg(bundle);
            }
        }
        let status = command.status().expect("infra/registry/registry.sh runs");
        assert!(status.success(), "the registry started");
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

    /// Runs skopeo with `args`, trusting this registry.
    pub fn skopeo(&self, args: &[&str]) -> Output {
        Command::new("skopeo")
            .env("SSL_CERT_FILE", self.certificate())
            .args(args)
            .output()
            .expect("skopeo runs")
    }

    /// Pushes the OCI layout `layout` (its image `latest`) to
    /// `{host}/{repository}:{tag}` with the Docker `config.json` `auth`.
    pub fn push(&self, layout: &Path, repository: &str, tag: &str, auth: &Path) -> Output {
        let policy = insecure_policy(layout.parent().unwrap_or(layout));
        self.skopeo(&[
            "--policy",
            &policy.display().to_string(),
            "copy",
            "--quiet",
            "--dest-authfile",
            &auth.display().to_string(),
            &format!("oci:{}:latest", layout.display()),
            &format!("docker://{}/{repository}:{tag}", self.host()),
        ])
    }

    /// Reads `{host}/{repository}:{tag}`'s manifest digest with the Docker
    /// `config.json` `auth` (a pull: the manifest is what a pull reads
    /// first).
    pub fn inspect(&self, repository: &str, tag: &str, auth: &Path) -> Output {
        self.skopeo(&[
            "inspect",
            "--format",
            "{{.Digest}}",
            "--authfile",
            &auth.display().to_string(),
            &format!("docker://{}/{repository}:{tag}", self.host()),
        ])
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = Command::new(SCRIPT).arg("stop").arg(&self.dir).status();
    }
}

/// A loopback port free now (bound, then released).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port()
}

/// A small OCI image layout made with umoci under `dir` (image `latest`,
/// one layer holding one file that says `text`).
pub fn oci_image(dir: &Path, text: &str) -> PathBuf {
    std::fs::create_dir_all(dir).expect("the image's directory");
    let umoci = |args: &[&str]| {
        let output = Command::new("umoci")
            .current_dir(dir)
            .args(args)
            .output()
            .expect("umoci runs");
        assert!(
            output.status.success(),
            "umoci {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    };
    umoci(&["init", "--layout", "image"]);
    umoci(&["new", "--image", "image:latest"]);
    std::fs::write(dir.join("hello.txt"), text).expect("the layer's file");
    umoci(&[
        "insert",
        "--rootless",
        "--image",
        "image:latest",
        "hello.txt",
        "/hello.txt",
    ]);
    dir.join("image")
}

/// A signature policy that accepts what the reference names (the tests
/// sign nothing).
fn insecure_policy(dir: &Path) -> PathBuf {
    let policy = dir.join("policy.json");
    std::fs::write(
        &policy,
        r#"{"default":[{"type":"insecureAcceptAnything"}]}"#,
    )
    .expect("the policy");
    policy
}

/// What a command said, both streams.
pub fn said(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}
