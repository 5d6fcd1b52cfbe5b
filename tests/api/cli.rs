//! The `berth` CLI, run as its users run it: the built binary, against the
//! whole API served on a loopback port, with its sign-in in a directory of
//! the test's own (`BERTH_CONFIG_DIR`) and its link in another (the
//! current directory).
//!
//! The binary belongs to the `berth-cli` package, not to this test's
//! (`support::workspace_binary` builds it).

use std::path::{Path, PathBuf};
use std::process::Output;

use http::Method;
use k8s_openapi::api::core::v1::Secret;
use serde_json::{Value, json};

use crate::support::kubelet::{end_pods, keep_pods_running};
use crate::support::{Served, TestApp, TestUser, eventually, unique};

/// The `berth` binary, built once per test run (the guide runs it too).
pub fn binary() -> &'static Path {
    crate::support::workspace_binary("berth-cli", "berth")
}

/// One user's machine: a config directory and a working directory.
struct Machine {
    config: PathBuf,
    dir: PathBuf,
    env: Vec<(&'static str, String)>,
}

/// What a run of `berth` did.
#[derive(Debug)]
struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Ran {
    #[track_caller]
    fn ok(&self) -> &Self {
        assert_eq!(self.code, 0, "{self:?}");
        self
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {self:?}"))
    }

    /// The one line an error prints.
    #[track_caller]
    fn error_line(&self) -> &str {
        let lines: Vec<&str> = self
            .stderr
            .lines()
            .filter(|l| l.starts_with("error: "))
            .collect();
        assert_eq!(lines.len(), 1, "{self:?}");
        lines[0]
    }
}

impl From<Output> for Ran {
    fn from(output: Output) -> Self {
        Ran {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }
}

impl Machine {
    fn new() -> Self {
        let root = std::env::temp_dir().join(unique("berth-cli"));
        let (config, dir) = (root.join("config"), root.join("work"));
        std::fs::create_dir_all(&dir).expect("a working directory");
        Machine {
            config,
            dir,
            env: Vec::new(),
        }
    }

    /// A CI machine: `BERTH_URL` and `BERTH_TOKEN`, nothing stored.
    fn ci(served: &Served, user: &TestUser) -> Self {
        let mut machine = Self::new();
        machine.env = vec![
            ("BERTH_URL", served.url.clone()),
            ("BERTH_TOKEN", user.token.clone()),
        ];
        machine
    }

    fn std_command(&self, args: &[&str]) -> std::process::Command {
        let mut command = std::process::Command::new(binary());
        command
            .args(args)
            .current_dir(&self.dir)
            .env_remove("BERTH_URL")
            .env_remove("BERTH_TOKEN")
            .env_remove("BERTH_PROJECT")
            .env_remove("BERTH_ENVIRONMENT")
            .env_remove("BERTH_APP")
            .env("BERTH_CONFIG_DIR", &self.config)
            .envs(self.env.iter().map(|(k, v)| (*k, v.as_str())));
        command
    }

    fn command(&self, args: &[&str]) -> assert_cmd::Command {
        assert_cmd::Command::from_std(self.std_command(args))
    }

    /// Runs `berth args` with `stdin` as its standard input (not a
    /// terminal), off the runtime's thread, which serves the API meanwhile.
    async fn run_with(&self, args: &[&str], stdin: &str) -> Ran {
        let mut command = self.command(args);
        command.write_stdin(stdin.to_owned());
        tokio::task::spawn_blocking(move || command.output().expect("berth runs"))
            .await
            .expect("the run")
            .into()
    }

    async fn run(&self, args: &[&str]) -> Ran {
        self.run_with(args, "").await
    }
}

async fn api_json(app: &TestApp, user: &TestUser, path: &str) -> Value {
    let answer = app.get(path).by(user).send().await;
    answer.assert_status(200);
    answer.json()
}

/// The keys of a JSON text, in the order they are written (parsing it
/// into a `Value` would sort them).
fn keys_in_order(json: &str) -> Vec<String> {
    let mut keys = Vec::new();
    let mut chars = json.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '"' {
            continue;
        }
        let mut text = String::new();
        while let Some(c) = chars.next() {
            match c {
                '\\' => text.extend(chars.next()),
                '"' => break,
                c => text.push(c),
            }
        }
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        if chars.peek() == Some(&':') {
            keys.push(text);
        }
    }
    keys
}

/// A field of the sign-in `berth login` stored on `machine`.
fn stored(machine: &Machine, name: &str) -> String {
    let file = machine.config.join("credentials.toml");
    let stored = std::fs::read_to_string(&file).expect("a stored sign-in");
    stored
        .lines()
        .find_map(|line| line.strip_prefix(&format!("{name} = \"")))
        .and_then(|rest| rest.strip_suffix('"'))
        .unwrap_or_else(|| panic!("{name} in {stored}"))
        .to_owned()
}

#[tokio::test]
async fn login_replaces_a_temporary_password_and_logout_revokes_the_token() {
    let app = TestApp::new().await;
    let served = app.serve().await;
    let email = format!("{}@example.org", unique("dev"));
    let invited = app
        .post("/api/v1/members")
        .by(&app.owner)
        .json(json!({"email": email, "role": "developer"}))
        .send()
        .await;
    invited.assert_status(201);
    let temporary = invited.json()["temporary_password"]
        .as_str()
        .expect("a temporary password")
        .to_owned();
    let machine = Machine::new();

    // A wrong password: 401, one line, exit 3, nothing stored.
    let refused = machine
        .run_with(
            &["login", "--url", &served.url, "--email", &email],
            "not the password\n",
        )
        .await;
    assert_eq!(refused.code, 3, "{refused:?}");
    assert!(
        refused.error_line().ends_with("(invalid_credentials)"),
        "{refused:?}"
    );
    assert!(!machine.config.join("credentials.toml").exists());

    // The temporary password, then the new one, a line each.
    let new_password = "a new passphrase for the CLI";
    let login = machine
        .run_with(
            &[
                "login",
                "--url",
                &format!("{}/api/v1", served.url),
                "--email",
                &email,
            ],
            &format!("{temporary}\n{new_password}\n"),
        )
        .await;
    login.ok();
    assert!(
        login
            .stdout
            .starts_with(&format!("Signed in to {}/ as {email}", served.url)),
        "{login:?}"
    );
    assert!(!login.stdout.contains(&temporary) && !login.stderr.contains(new_password));
    let file = machine.config.join("credentials.toml");
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&file), 0o600);
        assert_eq!(mode(&machine.config), 0o700);
    }
    let (token, token_id) = (stored(&machine, "token"), stored(&machine, "token_id"));
    // The password changed: the new one signs in, the temporary one not.
    app.sign_in(&email, new_password).await;
    app.post("/api/v1/auth/login")
        .json(json!({"email": email, "password": temporary}))
        .send()
        .await
        .assert_status(401);

    // whoami -o json is the API's Identity as it answers the token.
    let user = TestUser {
        token: token.clone(),
        ..app.owner.clone()
    };
    let me = machine.run(&["whoami", "-o", "json"]).await;
    me.ok();
    assert_eq!(me.json(), api_json(&app, &user, "/api/v1/me").await);
    assert_eq!(me.json()["via"], "token");
    assert!(me.stderr.is_empty(), "no version warning: {me:?}");
    let tokens = machine.run(&["tokens"]).await;
    tokens.ok();
    assert!(tokens.stdout.contains("berth CLI (this CLI)"), "{tokens:?}");
    assert!(tokens.stdout.contains(&token_id), "{tokens:?}");

    // The session login opened was ended: only the token is left.
    let logout = machine.run(&["logout"]).await;
    logout.ok();
    assert!(!file.exists());
    app.get("/api/v1/me")
        .bearer(&token)
        .send()
        .await
        .assert_problem(401, "unauthenticated");
    let signed_out = machine.run(&["whoami"]).await;
    assert_eq!(signed_out.code, 3, "{signed_out:?}");
    assert!(
        signed_out.error_line().contains("not signed in"),
        "{signed_out:?}"
    );
}

/// A second `berth login` of the same user to the same API revokes the
/// first's token, and only it (not a token made with it for CI); one
/// already gone is passed over in silence, another user's is kept. A
/// stored token the API refuses says so, and `logout` says it was already
/// revoked.
#[tokio::test]
async fn a_second_login_revokes_the_first_sign_in_only() {
    use crate::support::PASSWORD;

    let app = TestApp::new().await;
    let served = app.serve().await;
    let user = app.user(berth_domain::Role::Developer).await;
    let machine = Machine::new();
    let login = |email: String| {
        let machine = &machine;
        let url = served.url.clone();
        async move {
            let ran = machine
                .run_with(
                    &["login", "--url", &url, "--email", &email],
                    &format!("{PASSWORD}\n"),
                )
                .await;
            ran.ok();
            assert!(!ran.stderr.contains("warning"), "{ran:?}");
            ran
        }
    };
    let me = |token: String| {
        let app = &app;
        async move { app.get("/api/v1/me").bearer(&token).send().await }
    };

    login(user.email.clone()).await;
    let (first, first_id) = (stored(&machine, "token"), stored(&machine, "token_id"));
    let made = app
        .post("/api/v1/tokens")
        .bearer(&first)
        .json(json!({"name": "ci"}))
        .send()
        .await;
    made.assert_status(201);
    let ci = made.json()["token"].as_str().expect("a token").to_owned();

    let again = login(user.email.clone()).await;
    assert!(
        again
            .stdout
            .contains(&format!("Revoked this CLI's earlier token {first_id}")),
        "{again:?}"
    );
    let (second, second_id) = (stored(&machine, "token"), stored(&machine, "token_id"));
    assert_ne!(second_id, first_id);
    me(first).await.assert_problem(401, "unauthenticated");
    me(ci.clone()).await.assert_status(200);
    me(second.clone()).await.assert_status(200);

    // The stored token revoked elsewhere: the CLI says its sign-in is no
    // longer valid; a login then has nothing to revoke, and says nothing.
    app.request(Method::DELETE, &format!("/api/v1/tokens/{second_id}"))
        .bearer(&second)
        .send()
        .await
        .assert_status(204);
    let refused = machine.run(&["whoami"]).await;
    assert_eq!(refused.code, 3, "{refused:?}");
    let line = refused.error_line();
    assert!(
        line.contains("the stored sign-in is no longer valid") && !line.contains("BERTH_TOKEN"),
        "{refused:?}"
    );
    let third = login(user.email.clone()).await;
    assert!(!third.stdout.contains("Revoked"), "{third:?}");
    let third_token = stored(&machine, "token");

    // Another user signing in on the same machine keeps the first's token.
    let other = login(app.owner.email.clone()).await;
    assert!(!other.stdout.contains("Revoked"), "{other:?}");
    me(third_token).await.assert_status(200);

    // logout of a token already revoked: said so, and forgotten.
    let (owners, owners_id) = (stored(&machine, "token"), stored(&machine, "token_id"));
    app.request(Method::DELETE, &format!("/api/v1/tokens/{owners_id}"))
        .bearer(&owners)
        .send()
        .await
        .assert_status(204);
    let logout = machine.run(&["logout"]).await;
    logout.ok();
    assert!(
        logout
            .stdout
            .contains(&format!("token {owners_id} was already revoked")),
        "{logout:?}"
    );
    assert!(!machine.config.join("credentials.toml").exists());
    me(ci).await.assert_status(200);
}

/// A reader that closes the pipe before the output ends (`| head -1`) ends
/// `berth` quietly with 141, as a shell reports a tool SIGPIPE ended: no
/// panic. Each output is longer than the pipe and the line reader hold
/// together, so `berth` is still writing when the reader goes.
#[tokio::test]
async fn a_reader_closing_the_pipe_ends_berth_quietly() {
    let app = TestApp::new().await;
    let served = app.serve().await;
    // Events enough for a page of 200.
    for _ in 0..200 {
        app.get("/api/v1/me")
            .by(&app.owner)
            .send()
            .await
            .assert_status(200);
    }
    let machine = Machine::ci(&served, &app.owner);
    for args in [&["audit", "--limit", "200", "-o", "json"][..]] {
        let whole = machine.run(args).await;
        whole.ok();
        // A pipe holds 64 KiB, the reader's buffer 8 KiB.
        assert!(
            whole.stdout.len() > 80 * 1024,
            "{args:?}: {} bytes",
            whole.stdout.len()
        );
        let mut command = machine.std_command(args);
        let (status, stderr) = tokio::task::spawn_blocking(move || {
            use std::io::BufRead as _;
            let mut child = command
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("berth runs");
            let mut reader = std::io::BufReader::new(child.stdout.take().expect("its output"));
            let mut first = String::new();
            reader.read_line(&mut first).expect("a first line");
            assert!(!first.is_empty());
            drop(reader);
            let output = child.wait_with_output().expect("berth ends");
            (
                output.status,
                String::from_utf8_lossy(&output.stderr).into_owned(),
            )
        })
        .await
        .expect("the run");
        assert_eq!(status.code(), Some(141), "{args:?}: {status:?} {stderr}");
        assert!(stderr.is_empty(), "{args:?}: {stderr}");
    }
}

/// The whole API with a cluster, served, and an app `shop` in a ready
/// environment `staging` of a new project, which a CI machine (the owner's
/// `BERTH_URL` and `BERTH_TOKEN`) has linked.
struct Linked {
    app: TestApp,
    /// Serves until dropped.
    _served: Served,
    machine: Machine,
    project: String,
    namespace: String,
    /// `/api/v1/…/apps/shop`.
    shop_path: String,
}

impl Linked {
    /// A web app with no replica: the test makes its pods, as a
    /// ReplicaSet and a kubelet would, and writes their logs.
    async fn without_pods() -> Self {
        Self::new(
            json!({"name": "shop", "image": "nginx:1.27", "port": 80, "replicas": 0}),
            false,
        )
        .await
    }

    /// `body` makes the app; `registry`: builds have a registry to push to.
    async fn new(body: Value, registry: bool) -> Self {
        let app = TestApp::with_cluster().await;
        let served = app.serve().await;
        if registry {
            crate::builds_running::set_registry(&app.cluster().client).await;
        }
        let project = app.ready_environment("cli", "staging").await;
        let apps = format!("/api/v1/projects/{project}/environments/staging/apps");
        app.create_app(&apps, body).await;
        let machine = Machine::ci(&served, &app.owner);
        machine
            .run(&["link", &project, "staging", "shop"])
            .await
            .ok();
        Linked {
            namespace: format!("{project}-staging"),
            shop_path: format!("{apps}/shop"),
            app,
            _served: served,
            machine,
            project,
        }
    }
}

#[tokio::test]
async fn link_json_secrets_env_and_exit_codes() {
    let Linked {
        app,
        machine,
        project,
        namespace,
        shop_path,
        _served,
    } = Linked::new(
        json!({"name": "shop", "image": "nginx:1.27", "port": 80}),
        false,
    )
    .await;
    let served_url = machine.env[0].1.clone();

    // Without a link: which project?
    let unlinked = Machine {
        env: machine.env.clone(),
        ..Machine::new()
    };
    let refused = unlinked.run(&["apps"]).await;
    assert_eq!(refused.code, 2, "{refused:?}");
    assert!(refused.error_line().contains("berth link"), "{refused:?}");
    assert!(machine.dir.join(".berth.toml").exists());
    // A subdirectory uses the link too.
    let below = Machine {
        dir: machine.dir.join("src"),
        config: machine.config.clone(),
        env: machine.env.clone(),
    };
    std::fs::create_dir_all(&below.dir).unwrap();

    // -o json is the API's answer as it is: its values, and its keys in
    // the order the API wrote them (pretty-printed).
    let mut unsorted = false;
    for (args, path) in [
        (
            vec!["releases", "-o", "json"],
            format!("{shop_path}/releases"),
        ),
        (
            vec!["projects", "-o", "json"],
            "/api/v1/projects".to_owned(),
        ),
        (
            vec!["envs", "-o", "json"],
            format!("/api/v1/projects/{project}/environments"),
        ),
        (
            vec!["secrets", "list", "-o", "json"],
            format!("/api/v1/projects/{project}/environments/staging/secrets"),
        ),
    ] {
        let ran = below.run(&args).await;
        ran.ok();
        let answer = app.get(&path).by(&app.owner).send().await;
        answer.assert_status(200);
        let (mut printed, mut answered) = (ran.json(), answer.json());
        // The controller moves the release (`status`, `running`) on its own
        // time, which may fall between the two reads; nothing else of a
        // release can change here.
        if args[0] == "releases" {
            for release in printed
                .as_array_mut()
                .into_iter()
                .chain(answered.as_array_mut())
                .flatten()
            {
                let release = release.as_object_mut().expect("a release");
                assert!(release.remove("status").is_some() && release.remove("running").is_some());
            }
        }
        assert_eq!(printed, answered, "{args:?}");
        let keys = keys_in_order(&answer.text());
        assert_eq!(keys_in_order(&ran.stdout), keys, "{args:?}");
        // What printing it read into a `Value` would show.
        let sorted = keys_in_order(&serde_json::to_string_pretty(&answer.json()).unwrap());
        unsorted |= !keys.is_empty() && keys != sorted;
        if !keys.is_empty() {
            assert!(ran.stdout.starts_with("[\n  {\n    \""), "pretty: {ran:?}");
        }
    }
    assert!(unsorted, "an answer whose keys are not in sorted order");
    // Plain text off a terminal: columns, no borders or colours.
    let apps = machine.run(&["apps"]).await;
    apps.ok();
    let header = apps.stdout.lines().next().unwrap_or_default();
    assert!(
        header.starts_with("NAME") && header.contains("REVISION"),
        "{apps:?}"
    );
    assert!(
        apps.stdout
            .lines()
            .nth(1)
            .is_some_and(|l| l.starts_with("shop ")),
        "{apps:?}"
    );
    assert!(
        !apps.stdout.contains('\u{1b}') && !apps.stdout.contains('│'),
        "{apps:?}"
    );

    // Flags override the link: another app is 404, exit 4, one line.
    let missing = machine.run(&["ps", "--app", "nope"]).await;
    assert_eq!(missing.code, 4, "{missing:?}");
    assert_eq!(
        missing.error_line(),
        format!(
            "error: Not found: app `nope` not found in environment `staging` of project `{project}` (not_found)"
        )
    );
    // Usage: 2; not signed in: 3.
    assert_eq!(machine.run(&["deploy"]).await.code, 2);
    let nobody = Machine {
        env: Vec::new(),
        ..Machine::new()
    };
    let signed_out = nobody.run(&["projects"]).await;
    assert_eq!(signed_out.code, 3, "{signed_out:?}");
    // A token the API does not know: 401, exit 3.
    let forged = Machine {
        env: vec![
            ("BERTH_URL", served_url),
            ("BERTH_TOKEN", "brt_nope".into()),
        ],
        ..Machine::new()
    };
    let refused = forged.run(&["projects"]).await;
    assert_eq!(refused.code, 3, "{refused:?}");
    let line = refused.error_line();
    assert!(
        line.contains("(unauthenticated); the token in BERTH_TOKEN was refused"),
        "{refused:?}"
    );
    assert!(!line.contains("berth login"), "{refused:?}");

    // A secret's values come from standard input: the process's arguments
    // never hold them (its /proc/PID/cmdline, while it reads them).
    let value = format!("s3cr3t-{}", unique("v"));
    let mut child = machine
        .std_command(&["secrets", "set", "db"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("berth runs");
    let cmdline = std::fs::read(format!("/proc/{}/cmdline", child.id())).expect("its arguments");
    assert!(!String::from_utf8_lossy(&cmdline).contains(&value));
    {
        use std::io::Write as _;
        let mut stdin = child.stdin.take().unwrap();
        writeln!(stdin, "# the database\nPASSWORD={value}\nUSER=shop").unwrap();
    }
    let set: Ran = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap()
        .into();
    set.ok();
    assert_eq!(set.stdout.trim(), "Secret db set: keys PASSWORD, USER");
    assert!(!set.stdout.contains(&value) && !set.stderr.contains(&value));
    let stored = kube::Api::<Secret>::namespaced(app.cluster().client.clone(), &namespace)
        .get("db")
        .await
        .expect("the Secret");
    let password = stored.data.unwrap()["PASSWORD"].0.clone();
    assert_eq!(String::from_utf8(password).unwrap(), value);
    // From a file, one key's whole value.
    let certificate = machine.dir.join("cert.pem");
    std::fs::write(&certificate, "-----BEGIN-----\nabc\n-----END-----\n").unwrap();
    machine
        .run(&[
            "secrets",
            "set",
            "tls",
            "--key",
            "cert.pem",
            "--from-file",
            "cert.pem",
        ])
        .await
        .ok();
    let secrets = machine.run(&["secrets", "list"]).await;
    assert!(
        secrets.stdout.contains("tls ") && secrets.stdout.contains("cert.pem"),
        "{secrets:?}"
    );
    // There is no way to give a value as an argument.
    assert_eq!(
        machine
            .run(&["secrets", "set", "db", "PASSWORD=x"])
            .await
            .code,
        2
    );
    machine.run(&["secrets", "rm", "tls"]).await.ok();

    // env set and unset keep what they do not name.
    machine
        .run(&["env", "set", "MODE=production", "WORKERS=4"])
        .await
        .ok();
    machine.run(&["env", "set", "WORKERS=8"]).await.ok();
    machine.run(&["env", "unset", "MODE"]).await.ok();
    let env = api_json(&app, &app.owner, &shop_path).await["app"]["env"].clone();
    assert_eq!(env, json!([{"name": "WORKERS", "value": "8"}]));
    let listed = machine.run(&["env", "list", "-o", "json"]).await;
    assert_eq!(listed.json(), env);
    let unknown = machine.run(&["env", "unset", "NOPE"]).await;
    assert_eq!(unknown.code, 1, "{unknown:?}");
}

#[tokio::test]
async fn deploy_waits_until_available_or_says_why_not() {
    let Linked {
        app,
        machine,
        namespace,
        project,
        shop_path,
        _served,
        ..
    } = Linked::new(
        json!({"name": "shop", "image": "nginx:1.27", "port": 80}),
        false,
    )
    .await;

    // Pods that become ready: the deploy waits for revision 2 and succeeds.
    let kubelet = keep_pods_running(app.cluster().client.clone(), vec![namespace.clone()]);
    let deployed = machine
        .run(&["deploy", "--image", "nginx:1.28", "--wait"])
        .await;
    deployed.ok();
    assert!(
        deployed.stdout.starts_with(&format!(
            "Deployed shop in {project}/staging at revision 2: Available"
        )),
        "{deployed:?}"
    );
    assert!(
        deployed.stderr.starts_with(&format!(
            "Deploying revision 2 of shop to {project}/staging (nginx:1.28)"
        )),
        "{deployed:?}"
    );
    assert!(
        deployed.stderr.contains("revision 2 of shop is available"),
        "{deployed:?}"
    );
    // -o json: the app as the API answers it.
    let again = machine
        .run(&["deploy", "--image", "nginx:1.28", "--wait", "-o", "json"])
        .await;
    again.ok();
    assert_eq!(
        again.json(),
        api_json(&app, &app.owner, &shop_path).await["app"]
    );

    // A rollout that never becomes available is rolled back: exit 1, why.
    drop(kubelet);
    let rolled_back = machine
        .run(&["deploy", "--image", "nginx:1.29", "--wait"])
        .await;
    assert_eq!(rolled_back.code, 1, "{rolled_back:?}");
    let line = rolled_back.error_line();
    assert!(
        line.starts_with("error: revision 3 failed: RolloutFailed, rolled back automatically: automatic: revision 3 did not become available"),
        "{line}"
    );

    // A release command that fails: exit 1 with ReleaseFailed and the
    // API's message.
    app.request(Method::PATCH, &shop_path)
        .by(&app.owner)
        .json(json!({"release_command": ["./migrate"], "auto_rollback": false}))
        .send()
        .await
        .assert_status(200);
    let mut deploy = machine.command(&["deploy", "--image", "nginx:1.30", "--wait"]);
    let run = tokio::task::spawn_blocking(move || deploy.output().expect("berth runs"));
    while !run.is_finished() {
        end_pods(
            &app.cluster().client,
            &namespace,
            "berth.dev/release",
            false,
        )
        .await;
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    let failed: Ran = run.await.unwrap().into();
    assert_eq!(failed.code, 1, "{failed:?}");
    let line = failed.error_line();
    assert!(
        line.contains("failed: ReleaseFailed: The release command of revision"),
        "{line}"
    );
    assert!(
        line.ends_with("; its output: berth logs --release 6"),
        "{line}"
    );

    // And a rollback to a revision that ran waits for it too.
    let _kubelet = keep_pods_running(app.cluster().client.clone(), vec![namespace.clone()]);
    let rollback = machine.run(&["rollback", "2", "--wait"]).await;
    rollback.ok();
    eventually("the app runs nginx:1.28 again", || async {
        api_json(&app, &app.owner, &shop_path).await["app"]["image"] == "nginx:1.28"
    })
    .await;

    // A change of the environment waits the same way: it says what it
    // deploys where, then how the revision ends. (Whether that rollout
    // ends available within the tests' 10 s progress deadline depends on
    // the machine's load, so either end is a wait that worked.)
    let set = machine.run(&["env", "set", "WELCOME=hi", "--wait"]).await;
    assert!(set.stderr.starts_with("Deploying revision "), "{set:?}");
    assert!(
        set.stderr
            .contains(&format!(" of shop to {project}/staging")),
        "{set:?}"
    );
    match set.code {
        0 => assert!(
            set.stdout
                .starts_with(&format!("Deployed shop in {project}/staging at revision ")),
            "{set:?}"
        ),
        _ => assert!(
            set.error_line().contains("failed: RolloutFailed"),
            "{set:?}"
        ),
    }
}

/// Lines a running `berth` printed so far, read as it prints them.
struct Printed {
    child: std::process::Child,
    lines: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Printed {
    fn start(mut command: std::process::Command) -> Self {
        let mut child = command
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("berth runs");
        let stdout = child.stdout.take().expect("its output");
        let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let collected = lines.clone();
        std::thread::spawn(move || {
            use std::io::BufRead as _;
            for line in std::io::BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
            {
                collected.lock().unwrap().push(line);
            }
        });
        Printed { child, lines }
    }

    fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }

    async fn until_printed(&self, line: &str) {
        eventually(&format!("berth prints `{line}`"), || async {
            self.lines().iter().any(|printed| printed.ends_with(line))
        })
        .await;
    }
}

impl Printed {
    /// How berth ended, once it has (within the tests' bound).
    async fn exit_code(&mut self) -> Option<i32> {
        let mut status = None;
        eventually("berth ends", || {
            status = self.child.try_wait().expect("berth's status");
            std::future::ready(status.is_some())
        })
        .await;
        status.and_then(|status| status.code())
    }
}

impl Drop for Printed {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A pod of the shop's `web` process, scheduled on a node (the stand-in
/// schedules none: a pod without a node has no log).
fn web_pod(name: &str, org: &str) -> k8s_openapi::api::core::v1::Pod {
    serde_json::from_value(json!({
        "metadata": {
            "name": name,
            "labels": {"berth.dev/org": org, "berth.dev/app": "shop", "berth.dev/process": "web"},
        },
        "spec": {"nodeName": "node-1", "containers": [{"name": "web", "image": "nginx"}]},
    }))
    .expect("a pod")
}

/// `logs --follow` as a rollout goes, as the logs API sees one: lines
/// written between polls, in the same instant, just before a container
/// restarts, a new pod logging while the old one still serves, then the old
/// one deleted. The stand-in schedules no Deployment's pod on a node (and a
/// pod on no node has no log), so the test makes the pods, as a
/// ReplicaSet and a kubelet would, and writes their logs with the
/// stand-in's knob.
#[tokio::test]
#[cfg_attr(
    berth_real_cluster,
    ignore = "writes pods' logs with the stand-in's knobs"
)]
async fn logs_follow_a_restart_and_a_rollout_losing_and_repeating_nothing() {
    use berth_kube_standin::LogKey;
    use k8s_openapi::api::core::v1::Pod;
    use kube::api::{DeleteParams, PostParams};

    use crate::support::kubelet::report_restarts;

    let Linked {
        app,
        machine,
        namespace,
        _served,
        ..
    } = Linked::without_pods().await;
    let client = app.cluster().client.clone();
    let pods: kube::Api<Pod> = kube::Api::namespaced(client.clone(), &namespace);
    let standin = app.standin();
    let (first, second) = ("shop-web-1-aaaaa", "shop-web-2-bbbbb");
    pods.create(&PostParams::default(), &web_pod(first, &app.owner.org))
        .await
        .expect("the first pod");
    let old = LogKey::new(&namespace, first, "web");
    // Two lines the same instant: both are printed, once each.
    standin.set_pod_logs(old.clone(), ["started", "started"]);

    let printed = Printed::start(machine.std_command(&["logs", "--follow"]));
    printed.until_printed("started").await;
    standin.append_pod_logs(old.clone(), ["request 1"]);
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    standin.append_pod_logs(old.clone(), ["request 2"]);
    printed.until_printed("request 2").await;

    // The container crashes right after a line and restarts: its last line
    // is read from the previous instance.
    standin.append_pod_logs(old.clone(), ["last words"]);
    standin.restart_pod_logs(old.clone());
    report_restarts(&client, &namespace, first, 1).await;
    standin.append_pod_logs(old.clone(), ["restarted"]);
    printed.until_printed("restarted").await;

    // The rollout: a new pod logs while the old one still serves, then the
    // old one goes.
    pods.create(&PostParams::default(), &web_pod(second, &app.owner.org))
        .await
        .expect("the second pod");
    let new = LogKey::new(&namespace, second, "web");
    standin.set_pod_logs(new.clone(), ["new pod starting"]);
    standin.append_pod_logs(old.clone(), ["old pod still serving"]);
    printed.until_printed("old pod still serving").await;
    printed.until_printed("new pod starting").await;
    pods.delete(first, &DeleteParams::default())
        .await
        .expect("deleting the old pod");
    standin.append_pod_logs(new.clone(), ["new pod serving"]);
    printed.until_printed("new pod serving").await;
    // Two more polls: nothing is printed again.
    tokio::time::sleep(std::time::Duration::from_secs(5)).await;

    let of = |pod: &str| -> Vec<String> {
        printed
            .lines()
            .iter()
            .filter_map(|line| line.strip_prefix(&format!("{pod} | ")))
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(
        of(first),
        [
            "started",
            "started",
            "request 1",
            "request 2",
            "last words",
            "restarted",
            "old pod still serving"
        ],
        "{:#?}",
        printed.lines()
    );
    assert_eq!(of(second), ["new pod starting", "new pod serving"]);
    assert_eq!(printed.lines().len(), 9, "{:#?}", printed.lines());
}

/// `secrets set NAME --to-app`: the secret, and a variable per key in the
/// app's env from it, in one step; a key that cannot name a variable is
/// refused before anything is written.
#[tokio::test]
async fn secrets_reach_the_app_in_one_step() {
    let Linked {
        app,
        machine,
        project,
        shop_path,
        _served,
        ..
    } = Linked::without_pods().await;
    let refused = machine
        .run_with(
            &["secrets", "set", "db", "--to-app"],
            "URL=postgres://db/shop\ntls.crt=a certificate\n",
        )
        .await;
    assert_eq!(refused.code, 2, "{refused:?}");
    assert!(
        refused.error_line().contains("--to-app: key tls.crt"),
        "{refused:?}"
    );
    let secrets = format!("/api/v1/projects/{project}/environments/staging/secrets");
    assert_eq!(api_json(&app, &app.owner, &secrets).await, json!([]));

    machine
        .run_with(
            &["secrets", "set", "db", "--to-app"],
            "DATABASE_URL=postgres://db/shop\nREDIS_URL=redis://cache\n",
        )
        .await
        .ok();
    let env = api_json(&app, &app.owner, &shop_path).await["app"]["env"].clone();
    for key in ["DATABASE_URL", "REDIS_URL"] {
        let entry = env
            .as_array()
            .unwrap()
            .iter()
            .find(|entry| entry["name"] == key)
            .unwrap_or_else(|| panic!("{key} in {env}"));
        assert_eq!(entry["secret"], json!({"name": "db", "key": key}), "{env}");
    }
}

/// The commands `berth` has, as its help lists them: each top-level
/// command, and each of its subcommands (`help` left out).
fn command_paths() -> Vec<Vec<String>> {
    let listed = |args: &[&str]| -> Vec<String> {
        let output = std::process::Command::new(binary())
            .args(args)
            .arg("--help")
            .output()
            .expect("berth --help");
        let help = String::from_utf8_lossy(&output.stdout).into_owned();
        help.split("Commands:\n")
            .nth(1)
            .and_then(|rest| rest.split("\n\n").next())
            .unwrap_or_default()
            .lines()
            .filter_map(|line| line.split_whitespace().next())
            .filter(|name| *name != "help")
            .map(str::to_owned)
            .collect()
    };
    let mut paths = Vec::new();
    for command in listed(&[]) {
        for sub in listed(&[&command]) {
            paths.push(vec![command.clone(), sub]);
        }
        paths.push(vec![command]);
    }
    paths
}

/// Every command is in docs/cli.md and run by a black-box test here or by
/// the walkthrough (a default subcommand, `list` or `domains check`, is
/// what its command alone runs, so its command stands for it).
#[test]
fn every_command_is_documented_and_tried() {
    let guide = include_str!("../../docs/cli.md");
    let walkthrough = guide
        .split("\n## ")
        .find(|section| section.starts_with("A first app"))
        .expect("the walkthrough");
    let tests: String = [include_str!("cli.rs")]
        .concat()
        .split_whitespace()
        .collect();
    let paths = command_paths();
    assert!(paths.len() > 50, "{paths:?}");
    let mut missing = Vec::new();
    for path in &paths {
        let path: Vec<&str> = match path.as_slice() {
            [command, default] if default == "list" || default == "check" => {
                vec![command.as_str()]
            }
            path => path.iter().map(String::as_str).collect(),
        };
        let name = path.join(" ");
        if !guide.contains(&format!("`{name}")) && !guide.contains(&format!("berth {name}")) {
            missing.push(format!("{name}: not in docs/cli.md"));
        }
        let literal = path
            .iter()
            .map(|word| format!("\"{word}\""))
            .collect::<Vec<_>>()
            .join(",");
        let tried = tests.contains(&format!("[{literal},"))
            || tests.contains(&format!("[{literal}]"))
            || walkthrough.contains(&format!("berth {name}"));
        if !tried {
            missing.push(format!("{name}: no test runs it"));
        }
    }
    assert!(missing.is_empty(), "{missing:#?}");
}

/// What bash completes after `words` (the last one being typed), through
/// the script `berth completions bash` prints, run in `machine`'s
/// directory with its variables.
async fn bash_completes(machine: &Machine, words: &[&str]) -> Vec<String> {
    let berth = binary().display().to_string();
    let quoted: Vec<String> = words.iter().map(|word| format!("'{word}'")).collect();
    let script = format!(
        "source <('{berth}' completions bash)\n\
         COMP_WORDS=({})\n\
         COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))\n\
         COMP_TYPE=9\n\
         _clap_complete_berth berth \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"\n\
         printf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
        quoted.join(" ")
    );
    let mut bash = std::process::Command::new("bash");
    bash.args(["-c", &script])
        .current_dir(&machine.dir)
        .env_remove("BERTH_PROJECT")
        .env_remove("BERTH_ENVIRONMENT")
        .env_remove("BERTH_APP")
        .env("BERTH_CONFIG_DIR", &machine.config)
        .envs(machine.env.iter().map(|(k, v)| (*k, v.as_str())));
    let output = tokio::task::spawn_blocking(move || bash.output().expect("bash runs"))
        .await
        .expect("the run");
    assert!(output.status.success(), "{output:?}");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter(|line| !line.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Completion knows Berth's names: projects, the environments of the
/// project given (or linked), the apps of the environment, as the API lists
/// them for the signed-in caller.
#[tokio::test]
async fn completion_completes_project_environment_and_app_names() {
    let Linked {
        app,
        machine,
        project,
        _served,
        ..
    } = Linked::without_pods().await;
    let other = app.create_project("other").await;
    app.create_environment(&other, json!({"name": "qa"})).await;

    let script = machine
        .run(&["completions", "bash"])
        .await
        .ok()
        .stdout
        .clone();
    assert!(script.contains("_clap_complete_berth"), "{script}");
    let projects = bash_completes(&machine, &["berth", "status", "-p", ""]).await;
    assert!(
        projects.contains(&project) && projects.contains(&other),
        "{projects:?}"
    );
    let prefix = &project[..project.len() - 2];
    let some = bash_completes(&machine, &["berth", "status", "--project", prefix]).await;
    assert!(some.iter().all(|name| name.starts_with(prefix)), "{some:?}");
    assert!(some.contains(&project), "{some:?}");
    // The linked project's environments, or those of the project typed.
    assert_eq!(
        bash_completes(&machine, &["berth", "logs", "-e", ""]).await,
        ["staging"]
    );
    assert_eq!(
        bash_completes(&machine, &["berth", "-p", &other, "apps", "-e", ""]).await,
        ["qa"]
    );
    assert_eq!(
        bash_completes(&machine, &["berth", "status", "-a", "sh"]).await,
        ["shop"]
    );
    // Signed out, nothing (and no error).
    let nobody = Machine::new();
    assert!(
        bash_completes(&nobody, &["berth", "status", "-p", ""])
            .await
            .is_empty()
    );
}

/// `run -- CMD` starts a one-off command, prints its output as its pod
/// writes it (the test plays the pod: the Job controller makes it, the test
/// binds it to a node, runs it and writes its log with the stand-in's knob,
/// then ends it) and exits with the command's exit status.
#[tokio::test]
#[cfg_attr(
    berth_real_cluster,
    ignore = "writes pods' logs with the stand-in's knobs"
)]
async fn run_prints_a_commands_output_and_exits_with_its_status() {
    use berth_kube_standin::LogKey;
    use k8s_openapi::api::core::v1::Pod;
    use kube::api::ListParams;

    use crate::support::kubelet::{end_pods_with, play_kubelet};

    let Linked {
        app,
        machine,
        namespace,
        _served,
        ..
    } = Linked::without_pods().await;
    let client = app.cluster().client.clone();
    let standin = app.standin();
    let mut printed =
        Printed::start(machine.std_command(&["run", "--", "sh", "-c", "echo migrating; exit 3"]));
    let pods: kube::Api<Pod> = kube::Api::namespaced(client.clone(), &namespace);
    let command_pods = || async {
        pods.list(&ListParams::default().labels("berth.dev/command"))
            .await
            .unwrap()
            .items
    };
    eventually("the command's pod is made", || async {
        !command_pods().await.is_empty()
    })
    .await;
    let pod = command_pods().await[0].metadata.name.clone().unwrap();
    assert!(standin.bind_pod(&namespace, &pod));
    play_kubelet(&client, &namespace, "berth.dev/command").await;
    standin.set_pod_logs(
        LogKey::new(&namespace, &pod, "command"),
        ["migrating", "3 tables"],
    );
    printed.until_printed("3 tables").await;
    end_pods_with(&client, &namespace, "berth.dev/command", 3).await;
    assert_eq!(printed.exit_code().await, Some(3));
    assert_eq!(printed.lines(), ["migrating", "3 tables"]);
}

/// `deploy --ref --wait` follows the build (the test plays the build's
/// pod, as the builds tests do), then the revision its image became; a
/// failed build fails the deploy, naming its logs.
#[tokio::test]
async fn deploy_of_a_ref_waits_for_its_build_and_its_revision() {
    use berth_cluster::crd::{App, BUILDS_NAMESPACE, LABEL_APP_UID, LABEL_BUILD};

    use crate::support::kubelet::{BuildEnd, end_build_pods};

    let Linked {
        app,
        machine,
        namespace,
        project,
        shop_path,
        _served,
        ..
    } = Linked::new(
        json!({"name": "shop", "image": "nginx", "git_repo": "https://github.com/acme/shop.git", "port": 8080}),
        true,
    )
    .await;
    let client = app.cluster().client.clone();
    let uid = kube::Api::<App>::namespaced(client.clone(), &namespace)
        .get("shop")
        .await
        .expect("the App")
        .metadata
        .uid
        .expect("a uid");
    let _kubelet = keep_pods_running(client.clone(), vec![namespace.clone()]);

    // Runs `berth args` while ending build `number`'s pod as `end` says.
    let deploy = |args: &'static [&'static str], number: i64, end: BuildEnd<'static>| {
        let mut command = machine.command(args);
        let client = client.clone();
        let selector = format!("{LABEL_APP_UID}={uid},{LABEL_BUILD}={number}");
        async move {
            let run = tokio::task::spawn_blocking(move || command.output().expect("berth runs"));
            while !run.is_finished() {
                end_build_pods(&client, BUILDS_NAMESPACE, &selector, &end).await;
                tokio::time::sleep(std::time::Duration::from_millis(250)).await;
            }
            Ran::from(run.await.expect("the run"))
        }
    };
    let built = deploy(
        &["deploy", "--ref", "main", "--wait"],
        1,
        BuildEnd::Pushed {
            commit: "0123456789abcdef0123456789abcdef01234567",
            strategy: "dockerfile",
            digest: "sha256:abababababababababababababababababababababababababababababababab",
        },
    )
    .await;
    built.ok();
    assert!(built.stderr.contains("build 1: succeeded"), "{built:?}");
    assert!(
        built.stdout.starts_with(&format!(
            "Deployed shop in {project}/staging at revision 2: Available"
        )),
        "{built:?}"
    );
    let listed = machine.run(&["builds", "list", "-o", "json"]).await;
    listed.ok();
    assert_eq!(
        listed.json(),
        api_json(&app, &app.owner, &format!("{shop_path}/builds")).await
    );
    let logs = machine.run(&["builds", "logs", "1", "-o", "json"]).await;
    assert_eq!(
        logs.ok().json(),
        api_json(
            &app,
            &app.owner,
            &format!("{shop_path}/builds/1/logs?tail=200")
        )
        .await
    );

    let broken = deploy(
        &["deploy", "--ref", "broken", "--wait"],
        2,
        BuildEnd::Failed {
            step: "build",
            message: "no Dockerfile",
        },
    )
    .await;
    assert_eq!(broken.code, 1, "{broken:?}");
    let line = broken.error_line();
    assert!(line.starts_with("error: build 2 failed: "), "{line}");
    assert!(line.ends_with("its logs: berth builds logs 2"), "{line}");
}

/// `promote --wait` waits for the target environment's app; `restart
/// --wait` until every pod has been replaced.
#[tokio::test]
async fn promote_and_restart_wait_too() {
    let Linked {
        app,
        machine,
        project,
        namespace,
        shop_path,
        _served,
    } = Linked::new(
        json!({"name": "shop", "image": "nginx:1.27", "port": 80}),
        false,
    )
    .await;
    app.create_environment(&project, json!({"name": "production"}))
        .await;
    app.wait_for_environment(&project, "production").await;
    let _kubelet = keep_pods_running(
        app.cluster().client.clone(),
        vec![namespace.clone(), format!("{project}-production")],
    );

    let promoted = machine
        .run(&["promote", "--to", "production", "--wait"])
        .await;
    promoted.ok();
    assert!(
        promoted.stdout.starts_with(&format!(
            "Deployed shop in {project}/production at revision 1: Available"
        )),
        "{promoted:?}"
    );
    let production = format!("/api/v1/projects/{project}/environments/production/apps/shop");
    assert_eq!(
        api_json(&app, &app.owner, &production).await["app"]["image"],
        "nginx:1.27"
    );

    let before: Vec<Value> = api_json(&app, &app.owner, &shop_path).await["pods"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(!before.is_empty());
    let restarted = machine
        .run(&["restart", "--wait", "--timeout", "120"])
        .await;
    restarted.ok();
    assert!(
        restarted.stdout.starts_with("Restarted shop"),
        "{restarted:?}"
    );
    let after = api_json(&app, &app.owner, &shop_path).await["pods"].clone();
    for pod in &before {
        assert!(
            after
                .as_array()
                .unwrap()
                .iter()
                .all(|p| p["name"] != pod["name"]),
            "{after}"
        );
    }
}

/// `berth audit` reads the project's log (`listProjectAuditEvents`) with
/// `--project` or in a linked directory, the organization's with `--org`
/// or where nothing is linked.
#[tokio::test]
async fn audit_reads_the_projects_log_or_the_organizations() {
    let Linked {
        app: _app,
        machine,
        project,
        _served,
        ..
    } = Linked::new(
        json!({"name": "shop", "image": "nginx:1.27", "port": 80}),
        false,
    )
    .await;
    // A call concerning no project, in the organization's log at once.
    let other_call = || machine.run(&["projects"]);
    other_call().await.ok();
    let events = |ran: &Ran| -> Vec<Value> {
        ran.ok();
        ran.json()["events"].as_array().cloned().unwrap_or_default()
    };
    let of_project = |events: &[Value]| events.iter().all(|e| e["project"] == project.as_str());

    // A project's events show once settled (about eight seconds).
    eventually("the project's log shows createApp", || async {
        let linked = events(
            &machine
                .run(&["audit", "--limit", "200", "-o", "json"])
                .await,
        );
        assert!(of_project(&linked), "only the project's events: {linked:?}");
        linked.iter().any(|e| e["action"] == "createApp")
    })
    .await;
    let unlinked = Machine {
        env: machine.env.clone(),
        ..Machine::new()
    };
    let flagged = events(
        &unlinked
            .run(&["audit", "-p", &project, "--limit", "200", "-o", "json"])
            .await,
    );
    assert!(
        of_project(&flagged) && flagged.iter().any(|e| e["action"] == "createApp"),
        "{flagged:?}"
    );
    other_call().await.ok();
    for organization in [
        machine.run(&["audit", "--org", "-o", "json"]).await,
        unlinked.run(&["audit", "-o", "json"]).await,
    ] {
        let events = events(&organization);
        assert!(
            events
                .iter()
                .any(|e| e["action"] == "listProjects" && e["project"].is_null()),
            "{events:?}"
        );
    }
    // The next page's command names the log.
    let paged = unlinked
        .run(&["audit", "-p", &project, "--limit", "1"])
        .await;
    paged.ok();
    assert!(
        paged
            .stderr
            .contains(&format!("older: berth audit --project {project} --before ")),
        "{paged:?}"
    );
}

/// What a tenant's code writes cannot drive a reader's terminal (issue 46,
/// part 7): `logs` shows its escape sequences and other control characters
/// as `less` does; `--raw` prints them as they came, and `-o json` keeps
/// them (escaped by JSON).
#[tokio::test]
#[cfg_attr(
    berth_real_cluster,
    ignore = "writes pods' logs with the stand-in's knobs"
)]
async fn logs_show_control_characters_visibly_unless_raw() {
    use berth_kube_standin::LogKey;
    use k8s_openapi::api::core::v1::Pod;
    use kube::api::PostParams;

    let Linked {
        app,
        machine,
        namespace,
        _served,
        ..
    } = Linked::without_pods().await;
    let pods: kube::Api<Pod> = kube::Api::namespaced(app.cluster().client.clone(), &namespace);
    let pod = "shop-web-1-ccccc";
    pods.create(&PostParams::default(), &web_pod(pod, &app.owner.org))
        .await
        .expect("the pod");
    let hostile = "ok\u{1b}]0;owned\u{7}\u{1b}[2J\rgone\u{9b}31m";
    app.standin()
        .set_pod_logs(LogKey::new(&namespace, pod, "web"), [hostile]);

    let shown = machine.run(&["logs"]).await;
    shown.ok();
    assert!(
        shown.stdout.contains("ok^[]0;owned^G^[[2J^Mgone<9B>31m"),
        "{shown:?}"
    );
    assert!(
        !shown.stdout.contains('\u{1b}') && !shown.stdout.contains('\r'),
        "{shown:?}"
    );
    let raw = machine.run(&["logs", "--raw"]).await;
    raw.ok();
    assert!(raw.stdout.contains(hostile), "{raw:?}");
    let json = machine.run(&["logs", "-o", "json"]).await;
    json.ok();
    let entries: Value = serde_json::from_str(&json.stdout).expect("JSON");
    assert_eq!(entries[0]["lines"][0], hostile);
}

/// A newcomer's start without `curl` (issue 48): a project, environments
/// and an app made and removed from the CLI, `init` linking the directory,
/// the link checked, shown and removed, the context from `BERTH_*`
/// variables, a deploy to a missing app saying how to make it, removals
/// that ask (or want `--yes`), a production environment restored, and a
/// token shown once.
#[tokio::test]
async fn a_newcomer_makes_what_they_deploy_to_and_removes_it() {
    let app = TestApp::with_cluster().await;
    let served = app.serve().await;
    let machine = Machine::ci(&served, &app.owner);
    let project = unique("mk");

    machine
        .run(&["projects", "create", &project, "--display-name", "The shop"])
        .await
        .ok();
    let listed = machine.run(&["projects", "-o", "json"]).await;
    let shown = listed.ok().json();
    let made = shown
        .as_array()
        .and_then(|projects| projects.iter().find(|p| p["name"] == project.as_str()))
        .expect("the new project is listed");
    assert_eq!(made["display_name"], "The shop");

    let created = machine
        .run(&["envs", "create", "staging", "-p", &project])
        .await;
    assert!(
        created.ok().stdout.contains("berth apps create"),
        "{created:?}"
    );
    eventually("the environment becomes ready", || async {
        let listed = machine.run(&["envs", "-p", &project, "-o", "json"]).await;
        listed.ok().json()[0]["ready"] == true
    })
    .await;

    // An empty list says what to do.
    let none = machine
        .run(&["apps", "-p", &project, "-e", "staging"])
        .await;
    assert!(
        none.ok()
            .stdout
            .starts_with("No apps here yet: make one with"),
        "{none:?}"
    );
    // An app made without linking anything.
    let api = machine
        .run(&[
            "apps",
            "create",
            "api",
            "--image",
            "nginx:1.27",
            "-p",
            &project,
            "-e",
            "staging",
        ])
        .await;
    assert!(api.ok().stdout.starts_with("Created app api"), "{api:?}");
    assert!(!machine.dir.join(".berth.toml").exists());
    machine
        .run(&[
            "apps", "rm", "api", "--yes", "-p", &project, "-e", "staging",
        ])
        .await
        .ok();
    // An API that is not there: the reason, in the system's words.
    let mut nowhere = Machine::ci(&served, &app.owner);
    nowhere.env[0].1 = "http://127.0.0.1:1".to_owned();
    let refused = nowhere.run(&["projects"]).await;
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(
        refused.error_line().contains("Connection refused"),
        "{refused:?}"
    );

    // `link` checks what it names: nothing is written for a missing one.
    let missing = machine.run(&["link", &project, "nope"]).await;
    assert_eq!(missing.code, 4, "{missing:?}");
    assert!(!machine.dir.join(".berth.toml").exists());

    // `init`: the app made and this directory linked to it.
    let init = machine
        .run(&[
            "init",
            "web",
            "--image",
            "nginx:1.27",
            "--port",
            "80",
            "-p",
            &project,
            "-e",
            "staging",
        ])
        .await;
    assert!(
        init.ok().stdout.contains("linked this directory"),
        "{init:?}"
    );
    let shown = machine.run(&["link", "--show"]).await;
    assert!(
        shown
            .ok()
            .stdout
            .starts_with(&format!("app web in {project}/staging (")),
        "{shown:?}"
    );
    machine.run(&["deploy", "--image", "nginx:1.28"]).await.ok();
    // Linking again says what it replaced.
    let relinked = machine.run(&["link", &project, "staging"]).await;
    assert!(
        relinked
            .ok()
            .stdout
            .contains(&format!("(it was linked to app web in {project}/staging)")),
        "{relinked:?}"
    );

    // A deploy to an app that is not there says how to make it.
    let nowhere = machine
        .run(&["deploy", "-a", "nope", "--image", "nginx:1.27"])
        .await;
    assert_eq!(nowhere.code, 4, "{nowhere:?}");
    assert!(
        nowhere.error_line().contains(&format!(
            "berth apps create nope --image nginx:1.27 -p {project}"
        )),
        "{nowhere:?}"
    );

    // The context from the environment, as CI sets it, with no link.
    let mut ci = Machine::ci(&served, &app.owner);
    ci.env.extend([
        ("BERTH_PROJECT", project.clone()),
        ("BERTH_ENVIRONMENT", "staging".to_owned()),
        ("BERTH_APP", "web".to_owned()),
    ]);
    let ps = ci.run(&["ps", "-o", "json"]).await;
    assert_eq!(ps.ok().json()["app"]["image"], "nginx:1.28");
    // A flag still wins over the variable.
    let other = ci.run(&["ps", "-a", "nope"]).await;
    assert_eq!(other.code, 4, "{other:?}");

    // Removing asks; a script without --yes is told to add it.
    let unasked = ci.run(&["apps", "rm", "web"]).await;
    assert_eq!(unasked.code, 2, "{unasked:?}");
    assert!(unasked.error_line().contains("--yes"), "{unasked:?}");
    ci.run(&["apps", "rm", "web", "--yes"]).await.ok();
    let gone = ci.run(&["ps"]).await;
    assert_eq!(gone.code, 4, "{gone:?}");

    // A production environment comes back within its grace.
    ci.run(&[
        "envs",
        "create",
        "prod",
        "--type",
        "production",
        "--pods",
        "10",
    ])
    .await
    .ok();
    let removed = ci.run(&["envs", "rm", "prod", "--yes"]).await;
    assert!(
        removed.ok().stdout.contains("berth envs restore prod"),
        "{removed:?}"
    );
    ci.run(&["envs", "restore", "prod"]).await.ok();

    // A token, shown once: alone on standard output, so `$(…)` takes it.
    let token = machine
        .run(&["tokens", "create", "ci", "--ceiling", "read", "-o", "plain"])
        .await;
    let secret = token.ok().stdout.trim().to_owned();
    assert!(secret.starts_with("brt_"), "{token:?}");
    assert!(token.stderr.contains("shown this once"), "{token:?}");
    let reader = Machine::ci(
        &served,
        &TestUser {
            token: secret,
            ..app.owner.clone()
        },
    );
    reader.run(&["projects"]).await.ok();
    let refused = reader.run(&["projects", "create", &unique("mk")]).await;
    assert_eq!(refused.code, 1, "{refused:?}");
    // Revoked: refused from then on (exit 3).
    let tokens = machine.run(&["tokens", "-o", "json"]).await.ok().json();
    let id = tokens
        .as_array()
        .and_then(|tokens| tokens.iter().find(|token| token["name"] == "ci"))
        .and_then(|token| token["id"].as_str())
        .expect("the token is listed")
        .to_owned();
    machine.run(&["tokens", "revoke", &id]).await.ok();
    assert_eq!(reader.run(&["projects"]).await.code, 3);
    // This CLI's version and the API's.
    let version = machine.run(&["version", "-o", "json"]).await.ok().json();
    let api = version["api"].as_str().unwrap_or_default();
    assert!(!api.is_empty() && !api.starts_with("unknown"), "{version}");

    // `unlink`, then nothing to show.
    machine.run(&["unlink"]).await.ok();
    let unlinked = machine.run(&["link", "--show"]).await;
    assert_eq!(unlinked.code, 2, "{unlinked:?}");

    // A standard environment goes at once; an empty project too.
    ci.run(&["envs", "rm", "staging", "--yes"]).await.ok();
    let empty = unique("mk");
    machine.run(&["projects", "create", &empty]).await.ok();
    let unasked = machine.run(&["projects", "rm", &empty]).await;
    assert_eq!(unasked.code, 2, "{unasked:?}");
    machine.run(&["projects", "rm", &empty, "--yes"]).await.ok();
}

/// The everyday commands of a linked directory (issue 48): `status`,
/// `open`, `scale`, `releases --limit`, `rollback` to the revision before,
/// `domains add|rm`, `env get` and a secret into the env in one step,
/// `templates`, members and project roles, deploy tokens.
#[tokio::test]
async fn everyday_commands_of_a_linked_app() {
    let Linked {
        app,
        machine,
        project,
        shop_path,
        _served,
        ..
    } = Linked::new(
        json!({"name": "shop", "image": "nginx:1.27", "port": 80}),
        false,
    )
    .await;
    let api_app = || async { api_json(&app, &app.owner, &shop_path).await["app"].clone() };

    let status = machine.run(&["status"]).await;
    let said = &status.ok().stdout;
    assert!(
        said.contains(&format!("shop ({project}/staging)")),
        "{said}"
    );
    assert!(said.contains("ready"), "{said}");
    let url = api_app().await["url"].clone();
    let opened = machine.run(&["open", "--print"]).await;
    match url.as_str() {
        Some(url) => assert_eq!(opened.ok().stdout.trim(), url),
        None => assert!(opened.error_line().contains("has no URL"), "{opened:?}"),
    }

    // Scale: replicas, a range that autoscales, a size; a wrong process.
    machine.run(&["scale", "web=2"]).await.ok();
    assert_eq!(api_app().await["processes"][0]["min_replicas"], 2);
    let note = || async {
        machine
            .run(&["releases", "--limit", "1", "-o", "json"])
            .await
            .ok()
            .json()[0]["note"]
            .clone()
    };
    // A configuration's release says what changed, as Heroku's do.
    assert_eq!(note().await, "scale web to 2");
    machine.run(&["scale", "web=1-3:small"]).await.ok();
    let web = api_app().await["processes"][0].clone();
    assert_eq!(
        (&web["min_replicas"], &web["max_replicas"], &web["size"]),
        (&json!(1), &json!(3), &json!("small"))
    );
    let wrong = machine.run(&["scale", "nope=1"]).await;
    assert_eq!(wrong.code, 2, "{wrong:?}");
    assert!(wrong.error_line().contains("it has web"), "{wrong:?}");

    // Releases, newest first, as many as asked; rollback goes back one.
    let newest = machine
        .run(&["releases", "--limit", "1", "-o", "json"])
        .await;
    let newest = newest.ok().json();
    assert_eq!(newest.as_array().map(Vec::len), Some(1), "{newest}");
    let current = newest[0]["revision"].as_i64().expect("a revision");
    machine.run(&["rollback"]).await.ok();
    let releases = machine.run(&["releases", "-o", "json"]).await.ok().json();
    assert_eq!(releases[0]["reason"], "rollback", "{releases}");
    assert_eq!(releases[0]["revision"], current + 1, "{releases}");

    // Domains, one at a time.
    machine
        .run(&["domains", "add", "shop.example.com"])
        .await
        .ok();
    assert_eq!(api_app().await["domains"], json!(["shop.example.com"]));
    assert_eq!(note().await, "add domain shop.example.com");
    machine
        .run(&["domains", "rm", "shop.example.com"])
        .await
        .ok();
    assert_eq!(api_app().await["domains"], json!([]));
    let absent = machine.run(&["domains", "rm", "shop.example.com"]).await;
    assert_eq!(absent.code, 1, "{absent:?}");

    // A variable's value; a secret's key into the env in one step.
    machine.run(&["env", "set", "WELCOME=hi"]).await.ok();
    assert_eq!(note().await, "set WELCOME");
    assert_eq!(
        machine.run(&["env", "get", "WELCOME"]).await.ok().stdout,
        "hi\n"
    );
    machine
        .run_with(&["secrets", "set", "db"], "url=postgres://db/shop\n")
        .await
        .ok();
    machine
        .run(&["env", "set", "DATABASE_URL", "--secret", "db/url"])
        .await
        .ok();
    let entry = api_app().await["env"]
        .as_array()
        .and_then(|env| env.iter().find(|e| e["name"] == "DATABASE_URL").cloned())
        .expect("the variable");
    assert_eq!(entry["secret"], json!({"name": "db", "key": "url"}));
    let listed = machine.run(&["env"]).await;
    assert!(
        listed.ok().stdout.contains("(secret db key url)"),
        "{listed:?}"
    );
    let both = machine
        .run(&["env", "set", "A=1", "--secret", "db/url"])
        .await;
    assert_eq!(both.code, 2, "{both:?}");

    // The catalogue, and one template deployed.
    let catalogue = machine.run(&["templates", "-o", "json"]).await.ok().json();
    let template = catalogue[0]["name"]
        .as_str()
        .expect("a template")
        .to_owned();
    machine
        .run(&["templates", "deploy", &template, "--name", "fromtpl"])
        .await
        .ok();
    api_json(
        &app,
        &app.owner,
        &format!("/api/v1/projects/{project}/environments/staging/apps/fromtpl"),
    )
    .await;

    // Members: invited (the temporary password alone on stdout), given a
    // project role, listed there, removed from it and from the organization.
    let email = format!("{}@example.com", unique("ana"));
    let invited = machine
        .run(&["members", "invite", &email, "--role", "member"])
        .await;
    assert!(!invited.ok().stdout.trim().is_empty(), "{invited:?}");
    machine
        .run(&[
            "members",
            "role",
            &email,
            "developer",
            "--project",
            &project,
        ])
        .await
        .ok();
    let in_project = machine
        .run(&["members", "--project", &project, "-o", "json"])
        .await
        .ok()
        .json();
    let member = in_project
        .as_array()
        .and_then(|members| {
            members
                .iter()
                .find(|m| m["email"] == email.as_str())
                .cloned()
        })
        .expect("the project's member");
    assert_eq!(member["role"], "developer");
    machine
        .run(&["members", "rm", &email, "--project", &project, "--yes"])
        .await
        .ok();
    machine.run(&["members", "rm", &email, "--yes"]).await.ok();
    let members = machine.run(&["members", "-o", "json"]).await.ok().json();
    assert!(
        !members
            .as_array()
            .is_some_and(|members| members.iter().any(|m| m["email"] == email.as_str())),
        "{members}"
    );

    // Deploy tokens: made (shown once), listed, revoked.
    let made = machine
        .run(&["deploy-tokens", "create", "ci", "--ceiling", "deploy"])
        .await;
    assert!(made.ok().stdout.starts_with("brd_"), "{made:?}");
    let tokens = machine
        .run(&["deploy-tokens", "-o", "json"])
        .await
        .ok()
        .json();
    let id = tokens[0]["id"].as_str().expect("the token's id").to_owned();
    machine.run(&["deploy-tokens", "rm", &id]).await.ok();
    let none = machine
        .run(&["deploy-tokens", "-o", "json"])
        .await
        .ok()
        .json();
    assert_eq!(none, json!([]));

    // An app without builds has none to cancel.
    let cancel = machine.run(&["builds", "cancel"]).await;
    assert!(cancel.error_line().contains("has no builds"), "{cancel:?}");
}

/// Several sign-ins (issue 48): `login --context` keeps each under its
/// name, `contexts` lists them with the current one marked, `--context`
/// and `BERTH_CONTEXT` choose one per command, `contexts use` changes the
/// current one, `logout` forgets only the one it signs out of, a context
/// that is not there is no fallback, and a sign-in stored before contexts
/// is still read.
#[tokio::test]
async fn several_sign_ins_side_by_side() {
    use crate::support::PASSWORD;

    let app = TestApp::new().await;
    let served = app.serve().await;
    let (dev, viewer) = (
        app.user(berth_domain::Role::Developer).await,
        app.user(berth_domain::Role::Viewer).await,
    );
    let machine = Machine::new();
    for (context, user) in [("dev", &dev), ("view", &viewer)] {
        machine
            .run_with(
                &[
                    "login",
                    "--context",
                    context,
                    "--url",
                    &served.url,
                    "--email",
                    &user.email,
                ],
                &format!("{PASSWORD}\n"),
            )
            .await
            .ok();
    }
    let whoami = |args: Vec<&'static str>| {
        let machine = &machine;
        async move {
            let mut args = args;
            args.extend(["whoami", "-o", "json"]);
            machine.run(&args).await.ok().json()["email"].clone()
        }
    };
    // The last sign-in is the current one; another is a flag away.
    assert_eq!(whoami(vec![]).await, viewer.email.as_str());
    assert_eq!(whoami(vec!["--context", "dev"]).await, dev.email.as_str());
    let listed = machine.run(&["contexts"]).await;
    let lines: Vec<&str> = listed.ok().stdout.lines().collect();
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("*") && l.contains("view")),
        "{lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| !l.starts_with("*") && l.contains("dev")),
        "{lines:?}"
    );

    machine.run(&["contexts", "use", "dev"]).await.ok();
    assert_eq!(whoami(vec![]).await, dev.email.as_str());
    let mut chosen = Machine {
        config: machine.config.clone(),
        dir: machine.dir.clone(),
        env: vec![("BERTH_CONTEXT", "view".to_owned())],
    };
    let by_variable = chosen.run(&["whoami", "-o", "json"]).await;
    assert_eq!(by_variable.ok().json()["email"], viewer.email.as_str());
    chosen.env = vec![("BERTH_CONTEXT", "typo".to_owned())];
    let typo = chosen.run(&["whoami"]).await;
    assert_eq!(typo.code, 3, "{typo:?}");
    assert!(
        typo.error_line().contains("no sign-in named typo"),
        "{typo:?}"
    );

    // Signing out of one keeps the other.
    machine.run(&["--context", "view", "logout"]).await.ok();
    assert_eq!(whoami(vec![]).await, dev.email.as_str());
    let gone = machine.run(&["--context", "view", "whoami"]).await;
    assert_eq!(gone.code, 3, "{gone:?}");

    // A sign-in stored before contexts: one flat sign-in, read as `default`.
    let old = Machine::new();
    std::fs::create_dir_all(&old.config).unwrap();
    std::fs::write(
        old.config.join("credentials.toml"),
        format!("url = \"{}\"\ntoken = \"{}\"\n", served.url, dev.token),
    )
    .unwrap();
    let read = old.run(&["whoami", "-o", "json"]).await;
    assert_eq!(read.ok().json()["email"], dev.email.as_str());
    let contexts = old.run(&["contexts"]).await;
    assert!(contexts.ok().stdout.contains("default"), "{contexts:?}");
}
