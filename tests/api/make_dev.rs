//! `make dev`, the README's first command, run the way a newcomer runs it:
//! from the clone, with neither `HOSTNAME` nor `BERTH_REPLICA` in the
//! environment (bash sets `HOSTNAME` without exporting it, on Debian in a
//! login shell too), no `KUBECONFIG`, and nothing else exported — only its
//! ports (free ones) and its state directory (a temporary one, never the
//! clone's `.local/`) moved, so that it meets neither a developer's running
//! `make dev` nor another test. Then what the README says to do: sign in
//! with the printed temporary password, replace it, make a project and an
//! environment, which becomes `Ready`. And when a part of it dies, `make
//! dev` says which, with its log, and stops everything.
//!
//! `make dev` runs `cargo build` on the cargo target directory of the tests
//! (as the deploy test runs `make controller-image`): cargo holds its build
//! lock only while it builds, never while the tests run, so the nested build
//! waits for nobody; `make test` builds the same binaries before the tests,
//! so there it only finds them fresh.

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::controller_image::target_dir;
use crate::support::{eventually, unique, wait_bound};

/// Bound on `make dev` getting ready: quick when `make test` has built the
/// binaries, a few minutes when it builds them itself.
const READY_WITHIN: Duration = Duration::from_secs(600);

const PASSWORD_LINE: &str = "temporary password (shown once; change it at first sign-in): ";

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port()
}

/// A running `make dev` in a process group of its own, stopped (the whole
/// group) when dropped.
struct MakeDev {
    child: Child,
    state: PathBuf,
    api_port: u16,
    controller_port: u16,
    /// What it printed, stdout and stderr together.
    output: Arc<Mutex<String>>,
}

impl MakeDev {
    fn start() -> Self {
        let clone = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
        let state = std::env::temp_dir().join(unique("berth-make-dev"));
        let (api_port, controller_port) = (free_port(), free_port());
        let mut command = Command::new("make");
        command
            .arg("dev")
            .current_dir(clone)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        // What a newcomer's shell does not export, or the tests' run has set.
        for name in [
            "HOSTNAME",
            "BERTH_REPLICA",
            "BERTH_LEASE_NAMESPACE",
            "BERTH_CONTROLLER_ADDR",
            "BERTH_TABLE",
            "KUBECONFIG",
            "MAKEFLAGS",
            "MFLAGS",
            "MAKELEVEL",
        ] {
            command.env_remove(name);
        }
        command
            .env("CARGO_TARGET_DIR", target_dir())
            .env("BERTH_LOCAL_DIR", &state)
            .env("BERTH_PORT", api_port.to_string())
            .env("BERTH_CONTROLLER_PORT", controller_port.to_string())
            .env("BERTH_DYNAMODB_PORT", free_port().to_string())
            .env("BERTH_STANDIN_PORT", free_port().to_string());
        let mut child = command.spawn().expect("make runs");
        let output = Arc::new(Mutex::new(String::new()));
        let stdout = child.stdout.take().expect("its stdout");
        let stderr = child.stderr.take().expect("its stderr");
        for stream in [
            Box::new(stdout) as Box<dyn Read + Send>,
            Box::new(stderr) as Box<dyn Read + Send>,
        ] {
            let output = output.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    let mut output = output.lock().unwrap();
                    output.push_str(&line);
                    output.push('\n');
                }
            });
        }
        MakeDev {
            child,
            state,
            api_port,
            controller_port,
            output,
        }
    }

    fn output(&self) -> String {
        self.output.lock().unwrap().clone()
    }

    /// Waits until it has printed a line starting with `prefix`; the rest
    /// of that line. Fails, with everything it printed, if it exits first.
    async fn printed(&mut self, prefix: &str, within: Duration) -> String {
        let deadline = Instant::now() + within;
        loop {
            if let Some(line) = self.output().lines().find(|l| l.starts_with(prefix)) {
                return line[prefix.len()..].trim().to_owned();
            }
            if let Some(status) = self.child.try_wait().expect("make's status") {
                panic!(
                    "make dev exited ({status}) before printing {prefix:?}:\n{}",
                    self.output()
                );
            }
            assert!(
                Instant::now() < deadline,
                "make dev did not print {prefix:?} within {within:?}:\n{}",
                self.output()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Waits until it is ready; the owner's temporary password.
    async fn ready(&mut self) -> String {
        let password = self.printed(PASSWORD_LINE, READY_WITHIN).await;
        let api = format!("Berth: http://127.0.0.1:{}/api/v1 ", self.api_port);
        self.printed(&api, READY_WITHIN).await;
        password
    }

    /// Waits until it has exited by itself; its status.
    async fn exited(&mut self, within: Duration) -> ExitStatus {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().expect("make's status") {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "make dev still runs {within:?} later:\n{}",
                self.output()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// The pid it recorded for `name` (`$BERTH_LOCAL_DIR/pids/NAME.pid`).
    fn pid_of(&self, name: &str) -> u32 {
        let file = if name == "DynamoDB Local" {
            self.state.join("dynamodb/dynamodb.pid")
        } else {
            self.state.join(format!("pids/{name}.pid"))
        };
        std::fs::read_to_string(&file)
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()))
            .trim()
            .parse()
            .expect("a pid")
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.api_port)
    }

    /// One request with curl, as the README sends them (its cookie jar in
    /// the state directory); the status and the answer.
    fn curl(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let jar = self.state.join("cookies");
        let mut command = Command::new("curl");
        command
            .args(["-sS", "-X", method, "-w", "\n%{http_code}"])
            .arg("-b")
            .arg(&jar)
            .arg("-c")
            .arg(&jar);
        if let Some(body) = body {
            command
                .args(["-H", "content-type: application/json", "-d"])
                .arg(body.to_string());
        }
        let answer = crate::support::stdout_of(command.arg(self.url(path)));
        let (body, status) = answer.rsplit_once('\n').unwrap_or(("", &answer));
        let status = status.parse().expect("curl prints the status");
        (status, serde_json::from_str(body).unwrap_or(Value::Null))
    }
}

impl Drop for MakeDev {
    fn drop(&mut self) {
        // The whole group: make, scripts/dev.sh and all it started
        // (procps' kill reads a negative pid only after `--`).
        let _ = Command::new("kill")
            .args(["-s", "TERM", "--", &format!("-{}", self.child.id())])
            .stderr(Stdio::null())
            .status();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.state);
    }
}

fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            stat.rsplit_once(") ")
                .is_some_and(|(_, rest)| rest.starts_with('Z'))
        })
}

#[tokio::test]
async fn a_newcomers_make_dev_provisions_an_environment() {
    let mut dev = MakeDev::start();
    let temporary = dev.ready().await;

    let (status, _) = dev.curl(
        "POST",
        "/api/v1/auth/login",
        Some(json!({ "email": "admin@localhost", "password": temporary })),
    );
    assert_eq!(status, 200, "signing in with the printed password");
    let (status, _) = dev.curl(
        "POST",
        "/api/v1/me/password",
        Some(json!({ "current_password": temporary, "new_password": "a newcomer's own password" })),
    );
    assert_eq!(status, 200, "replacing the temporary password");
    let (status, _) = dev.curl(
        "POST",
        "/api/v1/projects",
        Some(json!({ "name": "shop", "display_name": "Shop" })),
    );
    assert_eq!(status, 201, "creating a project");
    let asked = Instant::now();
    let (status, _) = dev.curl(
        "POST",
        "/api/v1/projects/shop/environments",
        Some(json!({ "name": "staging" })),
    );
    assert_eq!(status, 201, "creating an environment");
    eventually("the environment becomes Ready", || async {
        let (_, environment) = dev.curl("GET", "/api/v1/projects/shop/environments/staging", None);
        environment["phase"] == "Ready"
    })
    .await;
    eprintln!(
        "make dev: the environment was Ready {:?} after it was asked for",
        asked.elapsed()
    );

    // The controller: named by make dev, its endpoint on loopback, where
    // make dev said.
    let log = std::fs::read_to_string(dev.state.join("controller.log")).expect("its log");
    assert!(log.contains("identity=make-dev"), "{log}");
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], dev.controller_port));
    let (status, body) = crate::controller_ops::http_get(addr, "/readyz").await;
    assert_eq!((status, body.trim()), (200, "leader"));
}

#[tokio::test]
async fn make_dev_stops_when_its_controller_dies() {
    let mut dev = MakeDev::start();
    dev.ready().await;
    let pids: Vec<(&str, u32)> = ["berth-local", "kube-standin", "DynamoDB Local"]
        .into_iter()
        .map(|name| (name, dev.pid_of(name)))
        .collect();
    let controller = dev.pid_of("berth-controller");
    crate::support::stdout_of(Command::new("kill").args(["-s", "KILL", &controller.to_string()]));

    let status = dev.exited(wait_bound()).await;
    let output = dev.output();
    assert!(!status.success(), "make dev exits non-zero:\n{output}");
    let said = format!("make dev: the controller (pid {controller}) exited");
    assert!(
        output.contains(&said),
        "it says which process died:\n{output}"
    );
    assert!(
        output.contains("the last lines of") && output.contains("berth-controller started"),
        "with the last lines of its log:\n{output}"
    );
    for (name, pid) in pids {
        assert!(!alive(pid), "{name} (pid {pid}) was stopped too:\n{output}");
    }
}
