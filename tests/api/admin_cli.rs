//! The real `berth-admin` binary against DynamoDB Local.

use std::process::{Command, Output};

use crate::support::{self, TestApp};

fn admin(table: &str, args: &[&str]) -> Output {
    Command::new(crate::support::workspace_binary(
        "berth-admin",
        "berth-admin",
    ))
    .args(args)
    .env("BERTH_TABLE", table)
    .env("AWS_ENDPOINT_URL_DYNAMODB", support::dynamodb_endpoint())
    .env("AWS_REGION", "us-east-1")
    .env("AWS_ACCESS_KEY_ID", "local")
    .env("AWS_SECRET_ACCESS_KEY", "local")
    .env_remove("AWS_PROFILE")
    .output()
    .expect("running berth-admin")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[tokio::test]
async fn create_table_and_bootstrap() {
    let table = format!("cli-{}", uuid::Uuid::new_v4().simple());
    let created = admin(&table, &["create-table"]);
    assert!(created.status.success(), "{}", stderr(&created));
    assert_eq!(stdout(&created).trim(), format!("created table {table}"));
    let again = admin(&table, &["create-table"]);
    assert!(again.status.success());
    assert_eq!(
        stdout(&again).trim(),
        format!("table {table} already exists")
    );

    let boot = admin(
        &table,
        &[
            "bootstrap",
            "--org",
            "default",
            "--email",
            "admin@localhost",
            "--json",
        ],
    );
    assert!(boot.status.success(), "{}", stderr(&boot));
    let shown: serde_json::Value = serde_json::from_slice(&boot.stdout).expect("JSON");
    assert_eq!(shown["email"], "admin@localhost");
    let password = shown["temporary_password"].as_str().unwrap().to_owned();
    assert_eq!(shown.as_object().unwrap().len(), 2);

    let app = TestApp::over_table(&table).await;
    let login = app
        .post("/api/v1/auth/login")
        .json(serde_json::json!({ "email": "admin@localhost", "password": password }))
        .send()
        .await;
    login.assert_status(200);
    assert_eq!(login.json()["must_change_password"], true);

    let twice = admin(
        &table,
        &[
            "bootstrap",
            "--org",
            "default",
            "--email",
            "other@localhost",
        ],
    );
    assert!(!twice.status.success());
    assert!(
        stderr(&twice).contains("already exists"),
        "{}",
        stderr(&twice)
    );
    let taken = admin(
        &table,
        &["bootstrap", "--org", "second", "--email", "admin@localhost"],
    );
    assert!(!taken.status.success());
    let bad = admin(
        &table,
        &[
            "bootstrap",
            "--org",
            "Not A Label",
            "--email",
            "x@localhost",
        ],
    );
    assert!(!bad.status.success());
    assert!(stderr(&bad).contains("DNS label"), "{}", stderr(&bad));

    let plain = admin(
        &table,
        &["bootstrap", "--org", "third", "--email", "third@localhost"],
    );
    assert!(plain.status.success());
    assert!(
        stdout(&plain).contains("temporary password"),
        "{}",
        stdout(&plain)
    );
}

#[tokio::test]
async fn stores_shows_and_clears_the_kubeconfig() {
    let table = format!("cli-{}", uuid::Uuid::new_v4().simple());
    assert!(admin(&table, &["create-table"]).status.success());
    let none = admin(&table, &["cluster", "show"]);
    assert!(none.status.success());
    assert_eq!(stdout(&none).trim(), "no kubeconfig stored");

    let dir = std::env::temp_dir().join(format!(
        "berth-kubeconfig-{}",
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("config");
    std::fs::write(
        &path,
        "apiVersion: v1\nkind: Config\nclusters:\n- name: dev\n  cluster: {server: 'http://127.0.0.1:6443'}\n\
         - name: prod\n  cluster: {server: 'https://prod.example:6443'}\n\
         contexts:\n- name: dev\n  context: {cluster: dev, user: me}\n- name: prod\n  context: {cluster: prod, user: me}\n\
         current-context: dev\nusers:\n- name: me\n  user: {token: VERY-SECRET-TOKEN}\n",
    )
    .unwrap();
    let path = path.to_str().unwrap();
    let set = admin(
        &table,
        &["cluster", "set", "--kubeconfig", path, "--context", "prod"],
    );
    assert!(set.status.success(), "{}", stderr(&set));
    assert!(
        stdout(&set).contains("https://prod.example:6443"),
        "{}",
        stdout(&set)
    );
    let shown = admin(&table, &["cluster", "show"]);
    let text = stdout(&shown);
    assert!(
        text.contains("context:    prod") && text.contains("server:     https://prod.example:6443"),
        "{text}"
    );
    assert!(!text.contains("VERY-SECRET-TOKEN"));

    let wrong_context = admin(
        &table,
        &["cluster", "set", "--kubeconfig", path, "--context", "nope"],
    );
    assert!(!wrong_context.status.success());
    assert!(
        stderr(&wrong_context).contains("no context named"),
        "{}",
        stderr(&wrong_context)
    );
    assert!(!stderr(&wrong_context).contains("VERY-SECRET-TOKEN"));
    // A user that runs a command (or an auth provider) is refused, in one
    // line naming the problem.
    let exec_path = dir.join("exec-config");
    std::fs::write(
        &exec_path,
        "apiVersion: v1\nkind: Config\nclusters:\n- name: eks\n  cluster: {server: 'https://eks.example'}\n\
         contexts:\n- name: eks\n  context: {cluster: eks, user: admin}\ncurrent-context: eks\n\
         users:\n- name: admin\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1beta1\n      command: aws\n      args: [eks, get-token, --cluster-name, VERY-SECRET-NAME]\n",
    )
    .unwrap();
    let exec = admin(
        &table,
        &[
            "cluster",
            "set",
            "--kubeconfig",
            exec_path.to_str().unwrap(),
        ],
    );
    assert!(!exec.status.success());
    let message = stderr(&exec);
    assert!(message.contains("`exec`"), "{message}");
    assert_eq!(message.trim_end().lines().count(), 1, "{message}");
    assert!(!message.contains("VERY-SECRET-NAME"), "{message}");
    let missing = admin(
        &table,
        &["cluster", "set", "--kubeconfig", "/nonexistent/kubeconfig"],
    );
    assert!(!missing.status.success());
    // The refused writes left the stored one as it was.
    assert!(stdout(&admin(&table, &["cluster", "show"])).contains("context:    prod"));

    let cleared = admin(&table, &["cluster", "clear"]);
    assert_eq!(stdout(&cleared).trim(), "stored kubeconfig removed");
    assert_eq!(
        stdout(&admin(&table, &["cluster", "show"])).trim(),
        "no kubeconfig stored"
    );
    assert_eq!(
        stdout(&admin(&table, &["cluster", "clear"])).trim(),
        "no kubeconfig was stored"
    );
    std::fs::remove_dir_all(dir).ok();
}

/// `berth-admin` with only the given environment and an empty home, so that
/// nothing of this machine's (profiles, credentials) is read.
fn admin_alone(vars: &[(&str, &str)], args: &[&str]) -> Output {
    let home = std::env::temp_dir().join(format!(
        "berth-admin-home-{}",
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::create_dir_all(&home).unwrap();
    let output = Command::new(crate::support::workspace_binary(
        "berth-admin",
        "berth-admin",
    ))
    .args(args)
    .env_clear()
    .env("HOME", &home)
    .envs(vars.iter().copied())
    .output()
    .expect("running berth-admin");
    std::fs::remove_dir_all(&home).ok();
    output
}

/// A loopback port nothing listens on (bound, then released).
fn closed_loopback_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The one line a failed command printed.
fn one_line(output: &Output) -> String {
    assert!(!output.status.success(), "it should have failed");
    assert!(output.stdout.is_empty(), "{}", stdout(output));
    let message = stderr(output);
    assert_eq!(message.lines().count(), 1, "one line: {message}");
    message.trim_end().to_owned()
}

#[tokio::test]
async fn names_a_missing_table_and_what_to_run() {
    let table = format!("nosuch-{}", uuid::Uuid::new_v4().simple());
    let endpoint = support::dynamodb_endpoint();
    let shown = admin(&table, &["cluster", "show"]);
    assert_eq!(
        one_line(&shown),
        format!(
            "berth-admin: table {table} not found at {endpoint} — run `berth-admin create-table`"
        )
    );
    let bootstrap = admin(
        &table,
        &["bootstrap", "--org", "default", "--email", "a@localhost"],
    );
    assert!(one_line(&bootstrap).contains(&format!("table {table} not found")));
}

/// DynamoDB Local takes any credentials: a run against it needs none set,
/// and never asks the instance metadata service (here a loopback listener
/// that would notice).
#[tokio::test]
async fn a_local_store_needs_no_credentials_nor_instance_metadata() {
    let metadata = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    metadata.set_nonblocking(true).unwrap();
    let metadata_url = format!("http://{}", metadata.local_addr().unwrap());
    let table = format!("cli-{}", uuid::Uuid::new_v4().simple());
    let endpoint = support::dynamodb_endpoint();
    let vars = [
        ("BERTH_TABLE", table.as_str()),
        ("AWS_ENDPOINT_URL_DYNAMODB", endpoint.as_str()),
        ("AWS_EC2_METADATA_SERVICE_ENDPOINT", metadata_url.as_str()),
    ];
    let created = admin_alone(&vars, &["create-table"]);
    assert!(created.status.success(), "{}", stderr(&created));
    assert_eq!(stdout(&created).trim(), format!("created table {table}"));
    let shown = admin_alone(&vars, &["cluster", "show"]);
    assert!(shown.status.success(), "{}", stderr(&shown));
    assert_eq!(stdout(&shown).trim(), "no kubeconfig stored");
    assert!(
        matches!(metadata.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "the instance metadata service was asked"
    );
}

#[tokio::test]
async fn explains_an_unreachable_store() {
    let endpoint = format!("http://127.0.0.1:{}", closed_loopback_port());
    let vars = [
        ("BERTH_TABLE", "berth"),
        ("AWS_ENDPOINT_URL_DYNAMODB", endpoint.as_str()),
    ];
    let output = admin_alone(&vars, &["cluster", "show"]);
    assert_eq!(
        one_line(&output),
        format!(
            "berth-admin: DynamoDB is not reachable at {endpoint}: start DynamoDB Local, \
             e.g. with `make dev` (--verbose shows why)"
        )
    );
    // --verbose adds the cause, one error of the chain a line.
    let verbose = admin_alone(&vars, &["--verbose", "create-table"]);
    assert!(!verbose.status.success());
    let text = stderr(&verbose);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        format!(
            "berth-admin: DynamoDB is not reachable at {endpoint}: start DynamoDB Local, \
             e.g. with `make dev`"
        )
    );
    assert!(lines.len() > 2, "{text}");
    assert!(
        lines[1..]
            .iter()
            .all(|line| line.starts_with("  caused by: ")),
        "{text}"
    );
    assert!(text.to_lowercase().contains("connect"), "{text}");
}

/// Away from loopback the SDK's own chain finds credentials, or says there
/// are none. Nothing here leaves the machine: credentials are looked for
/// before any request (the endpoint's port is invalid anyway), and the
/// instance metadata service is a closed loopback port.
#[tokio::test]
async fn says_when_credentials_or_region_are_missing() {
    let metadata = format!("http://127.0.0.1:{}", closed_loopback_port());
    let endpoint = "http://dynamodb.invalid:99999";
    let no_credentials = admin_alone(
        &[
            ("AWS_ENDPOINT_URL_DYNAMODB", endpoint),
            ("AWS_REGION", "us-east-1"),
            ("AWS_EC2_METADATA_SERVICE_ENDPOINT", metadata.as_str()),
        ],
        &["cluster", "show"],
    );
    assert_eq!(
        one_line(&no_credentials),
        format!(
            "berth-admin: no AWS credentials for DynamoDB at {endpoint}: set AWS_PROFILE, or \
             AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY — or, for the DynamoDB Local of \
             `make dev`, run `make admin ARGS=\"…\"` (--verbose shows why)"
        )
    );
    let no_region = admin_alone(
        &[("AWS_EC2_METADATA_SERVICE_ENDPOINT", metadata.as_str())],
        &["cluster", "show"],
    );
    assert_eq!(
        one_line(&no_region),
        "berth-admin: no AWS region: set AWS_REGION — or, for the DynamoDB Local of `make dev`, \
         run `make admin ARGS=\"…\"`"
    );
}

#[tokio::test]
async fn installs_the_crds_into_the_stored_clusters() {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

    let table = format!("cli-{}", uuid::Uuid::new_v4().simple());
    assert!(admin(&table, &["create-table"]).status.success());
    // It needs an administrator's kubeconfig of its own.
    let without = admin(&table, &["cluster", "install"]);
    assert!(!without.status.success());
    assert!(
        stderr(&without).contains("--kubeconfig"),
        "{}",
        stderr(&without)
    );

    let (standin, kubeconfig) = match std::env::var(crate::support::cluster::REAL_CLUSTER_ENV) {
        Ok(path) => (None, std::fs::read_to_string(path).unwrap()),
        Err(_) => {
            let standin = berth_kube_standin::StandIn::start().await.unwrap();
            let kubeconfig = standin.kubeconfig_yaml();
            (Some(standin), kubeconfig)
        }
    };
    let path = std::env::temp_dir().join(format!(
        "berth-kubeconfig-{}",
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::write(&path, &kubeconfig).unwrap();
    let admin_path = path.to_str().unwrap().to_owned();
    let install_table = table.clone();
    let installed = tokio::task::spawn_blocking(move || {
        admin(
            &install_table,
            &["cluster", "install", "--kubeconfig", &admin_path],
        )
    })
    .await
    .unwrap();
    assert!(installed.status.success(), "{}", stderr(&installed));
    // The administrator's kubeconfig was used, never stored.
    assert_eq!(
        stdout(&admin(&table, &["cluster", "show"])).trim(),
        "no kubeconfig stored"
    );
    for crd in [
        "projects.berth.dev",
        "environments.berth.dev",
        "apps.berth.dev",
    ] {
        assert!(
            stdout(&installed).contains(&format!("installed CRD {crd}")),
            "{}",
            stdout(&installed)
        );
    }
    let client = berth_api::access::client_from_kubeconfig(
        &kubeconfig,
        None,
        std::time::Duration::from_secs(10),
    )
    .await
    .unwrap();
    let crds: kube::Api<CustomResourceDefinition> = kube::Api::all(client);
    crds.get("environments.berth.dev")
        .await
        .expect("the CRD is in the cluster");
    std::fs::remove_file(path).ok();
    drop(standin);
}

/// A log written to a file or pipe is plain text: colour only on a terminal.
#[tokio::test]
async fn logs_written_to_a_file_carry_no_colour_codes() {
    let app = TestApp::new().await;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let log = std::env::temp_dir().join(format!("berth-local-{port}.log"));
    let file = std::fs::File::create(&log).unwrap();
    let mut server = Command::new(crate::support::workspace_binary(
        "berth-local",
        "berth-local",
    ))
    .env("BERTH_PORT", port.to_string())
    .env("BERTH_TABLE", app.state.store.table())
    .env("AWS_ENDPOINT_URL_DYNAMODB", support::dynamodb_endpoint())
    .env("AWS_REGION", "us-east-1")
    .env("AWS_ACCESS_KEY_ID", "local")
    .env("AWS_SECRET_ACCESS_KEY", "local")
    .env_remove("RUST_LOG")
    .stdout(file.try_clone().unwrap())
    .stderr(file)
    .spawn()
    .unwrap();
    support::eventually("berth-local logs a request", || async {
        use std::io::Write;
        if let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", port)) {
            let _ = stream.write_all(
                b"GET /api/v1/healthz HTTP/1.1\r\nHost: local\r\nConnection: close\r\n\r\n",
            );
            let _ = std::io::Read::read_to_end(&mut stream, &mut Vec::new());
        }
        std::fs::read_to_string(&log).is_ok_and(|text| text.contains("request"))
    })
    .await;
    server.kill().unwrap();
    let _ = server.wait();
    let text = std::fs::read_to_string(&log).unwrap();
    let _ = std::fs::remove_file(&log);
    assert!(text.contains("INFO"), "{text}");
    // Fields are values, named as the audit log names them, not debug forms.
    assert!(
        text.contains("outcome=success") && text.contains("actor_kind=anonymous"),
        "{text}"
    );
    assert!(!text.contains("Some("), "{text}");
    assert!(
        !text.contains('\u{1b}'),
        "escape codes in the log file: {text:?}"
    );
}

/// `cluster set --service-account`: the stored kubeconfig is made from a
/// token of the `berth-api` ServiceAccount, asked for with an administrator's
/// kubeconfig that is not stored; it reaches the same server as that account
/// only; running it again renews the token.
#[tokio::test]
async fn makes_the_apis_kubeconfig_from_its_service_account() {
    use berth_cluster::crd::Project;
    use k8s_openapi::api::apps::v1::Deployment;

    let table = format!("cli-{}", uuid::Uuid::new_v4().simple());
    assert!(admin(&table, &["create-table"]).status.success());
    let cluster = support::TestCluster::start().await;
    let path = std::env::temp_dir().join(format!(
        "berth-admin-kubeconfig-{}",
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::write(&path, &cluster.admin_kubeconfig).unwrap();
    let admin_path = path.to_str().unwrap().to_owned();
    let run = |args: Vec<String>| {
        let table = table.clone();
        tokio::task::spawn_blocking(move || {
            admin(&table, &args.iter().map(String::as_str).collect::<Vec<_>>())
        })
    };
    let set = |extra: &[&str]| {
        let mut args: Vec<String> = ["cluster", "set", "--kubeconfig", &admin_path]
            .into_iter()
            .map(str::to_owned)
            .collect();
        args.extend(extra.iter().map(|arg| (*arg).to_owned()));
        run(args)
    };

    let made = set(&["--service-account", "--token-duration", "2h"])
        .await
        .unwrap();
    assert!(made.status.success(), "{}", stderr(&made));
    let printed = stdout(&made);
    assert!(
        printed.contains("service account berth-system/berth-api")
            && printed.contains("expires at")
            && printed.contains("run this command again"),
        "{printed}"
    );
    let app = TestApp::over_table(&table).await;
    let first = berth_api::kubeconfig::load(&app.state.store)
        .await
        .unwrap()
        .expect("a stored kubeconfig");
    assert_ne!(first.kubeconfig, cluster.admin_kubeconfig);
    let server = berth_api::kubeconfig::summarize(&cluster.admin_kubeconfig, None)
        .unwrap()
        .2;
    let shown = stdout(&run(vec!["cluster".into(), "show".into()]).await.unwrap());
    assert!(
        shown.contains("context:    berth-system/berth-api")
            && shown.contains(&format!("server:     {server}")),
        "{shown}"
    );
    // It is berth-api: what its role grants, and nothing else.
    let client = berth_api::access::client_from_kubeconfig(
        &first.kubeconfig,
        None,
        std::time::Duration::from_secs(10),
    )
    .await
    .unwrap();
    kube::Api::<Project>::all(client.clone())
        .list(&Default::default())
        .await
        .expect("berth-api lists projects");
    match kube::Api::<Deployment>::all(client)
        .list(&Default::default())
        .await
    {
        Err(kube::Error::Api(status)) => assert_eq!(status.code, 403),
        other => panic!("berth-api read Deployments: {other:?}"),
    }

    // Again: a new token, stored in place of the old one.
    let renewed = set(&["--service-account", "berth-system/berth-api"])
        .await
        .unwrap();
    assert!(renewed.status.success(), "{}", stderr(&renewed));
    let second = berth_api::kubeconfig::load(&app.state.store)
        .await
        .unwrap()
        .expect("a stored kubeconfig");
    assert_ne!(second.kubeconfig, first.kubeconfig);

    let missing = set(&["--service-account", "berth-system/nosuch"])
        .await
        .unwrap();
    assert!(!missing.status.success());
    assert!(
        stderr(&missing).contains("service account berth-system/nosuch not found")
            && stderr(&missing).contains("kubectl apply -k infra/k8s"),
        "{}",
        stderr(&missing)
    );
    for (args, says) in [
        (
            &["--service-account", "--token-duration", "5m"][..],
            "at least 10 minutes",
        ),
        (&["--token-duration", "2h"][..], "--service-account"),
        (&["--service-account", "berth-api"][..], "NAMESPACE/NAME"),
    ] {
        let refused = set(args).await.unwrap();
        assert!(!refused.status.success(), "{args:?}");
        assert!(stderr(&refused).contains(says), "{}", stderr(&refused));
    }
    // The administrator's kubeconfig was never stored.
    let stored = berth_api::kubeconfig::load(&app.state.store)
        .await
        .unwrap()
        .expect("a stored kubeconfig");
    assert_eq!(stored.kubeconfig, second.kubeconfig);
    std::fs::remove_file(path).ok();
}

/// `registry set` refuses a malformed prefix, and (`--shared`) standard
/// input that is not two (or four) lines, saying what it wants and never
/// echoing it; neither
/// DynamoDB nor the cluster is asked (the kubeconfig is not even read).
#[test]
fn registry_set_says_what_it_wants_before_touching_anything() {
    let args = |prefix: &'static str| {
        [
            "registry",
            "set",
            "--kubeconfig",
            "/nonexistent/kubeconfig",
            "--prefix",
            prefix,
            "--server",
            "registry.example.com",
        ]
    };
    let scheme = one_line(&admin_alone(
        &[],
        &args("https://registry.example.com/berth"),
    ));
    assert!(
        scheme.contains("the prefix must be a registry host and path"),
        "{scheme}"
    );
    // With --shared (an upgrade's first step), standard input holds the
    // installation's credentials; it is empty here (not inherited).
    let mut shared = args("registry.example.com/berth").to_vec();
    shared.push("--shared");
    let empty = one_line(&admin_alone(&[], &shared));
    assert!(
        empty.contains("standard input must hold the push credential's user name and password"),
        "{empty}"
    );
}

/// A cluster that serves no ValidatingAdmissionPolicy (1.28 or 1.29 without
/// the feature gate, or older): `cluster install` installs nothing and says
/// what the cluster needs.
#[tokio::test]
#[cfg_attr(
    berth_real_cluster,
    ignore = "needs a cluster without ValidatingAdmissionPolicy (the stand-in's admission_policies: false)"
)]
async fn install_refuses_a_cluster_without_admission_policies() {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

    let table = format!("cli-{}", uuid::Uuid::new_v4().simple());
    let standin = berth_kube_standin::StandIn::start_with(berth_kube_standin::Config {
        admission_policies: false,
        ..berth_kube_standin::Config::default()
    })
    .await
    .unwrap();
    let kubeconfig = standin.kubeconfig_yaml();
    let path = std::env::temp_dir().join(format!(
        "berth-kubeconfig-{}",
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::write(&path, &kubeconfig).unwrap();
    let admin_path = path.to_str().unwrap().to_owned();
    let refused = tokio::task::spawn_blocking(move || {
        admin(&table, &["cluster", "install", "--kubeconfig", &admin_path])
    })
    .await
    .unwrap();
    assert!(!refused.status.success(), "{}", stdout(&refused));
    let said = stderr(&refused);
    for needed in [
        "ValidatingAdmissionPolicy",
        "--feature-gates=ValidatingAdmissionPolicy=true",
        "--runtime-config=admissionregistration.k8s.io/v1beta1=true",
        "1.30",
    ] {
        assert!(said.contains(needed), "{said}");
    }
    let client = berth_api::access::client_from_kubeconfig(
        &kubeconfig,
        None,
        std::time::Duration::from_secs(10),
    )
    .await
    .unwrap();
    let crds = kube::Api::<CustomResourceDefinition>::all(client)
        .list(&Default::default())
        .await
        .unwrap();
    assert!(crds.items.is_empty(), "nothing was installed");
    let _ = std::fs::remove_file(&path);
}

/// Without Berth's admission policy in force (here: its binding deleted),
/// `cluster set --service-account` stores no kubeconfig: the account could
/// write outside what Berth owns.
#[tokio::test]
#[cfg_attr(
    berth_real_cluster,
    ignore = "deletes the admission policy's binding, which every other test relies on"
)]
async fn the_apis_kubeconfig_is_stored_only_once_it_is_confined() {
    use crate::support::identities::{ADMISSION_POLICY, admission_api};

    let table = format!("cli-{}", uuid::Uuid::new_v4().simple());
    assert!(admin(&table, &["create-table"]).status.success());
    let cluster = support::TestCluster::start().await;
    admission_api(&cluster.client, true)
        .delete(ADMISSION_POLICY, &kube::api::DeleteParams::default())
        .await
        .unwrap();
    neither_identity_is_confined(&cluster).await;
    let path = std::env::temp_dir().join(format!(
        "berth-admin-kubeconfig-{}",
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::write(&path, &cluster.admin_kubeconfig).unwrap();
    let admin_path = path.to_str().unwrap().to_owned();
    let set_table = table.clone();
    let refused = tokio::task::spawn_blocking(move || {
        admin(
            &set_table,
            &[
                "cluster",
                "set",
                "--kubeconfig",
                &admin_path,
                "--service-account",
            ],
        )
    })
    .await
    .unwrap();
    assert!(!refused.status.success(), "{}", stdout(&refused));
    assert!(
        stderr(&refused).contains("berth-owned-namespaces"),
        "{}",
        stderr(&refused)
    );
    assert_eq!(
        stdout(&admin(&table, &["cluster", "show"])).trim(),
        "no kubeconfig stored"
    );
    let _ = std::fs::remove_file(&path);
}

/// `registry set` on a cluster where infra/k8s was never applied (only
/// the CRDs, as `cluster install` leaves it): it says which namespaces are
/// missing and how to make them, and writes nothing — neither the table's
/// settings (`registry status` still says none) nor the cluster's (issue
/// 45: it wrote half, then failed "not found: it was removed while the
/// request ran").
#[tokio::test]
#[cfg_attr(
    berth_real_cluster,
    ignore = "needs a cluster without infra/k8s's namespaces (a second cluster, the stand-in's)"
)]
async fn registry_set_names_what_infra_k8s_makes_and_writes_nothing_without_it() {
    let table = format!("cli-{}", uuid::Uuid::new_v4().simple());
    let standin = berth_kube_standin::StandIn::start().await.unwrap();
    let path = std::env::temp_dir().join(format!(
        "berth-kubeconfig-{}",
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::write(&path, standin.kubeconfig_yaml()).unwrap();
    let kubeconfig = path.to_str().unwrap().to_owned();
    let (refused, status) = tokio::task::spawn_blocking(move || {
        let created = admin(&table, &["create-table"]);
        assert!(created.status.success(), "{}", stderr(&created));
        let installed = admin(&table, &["cluster", "install", "--kubeconfig", &kubeconfig]);
        assert!(installed.status.success(), "{}", stderr(&installed));
        let refused = admin(
            &table,
            &[
                "registry",
                "set",
                "--prefix",
                "registry.example.com/berth",
                "--server",
                "registry.example.com",
                "--kubeconfig",
                &kubeconfig,
            ],
        );
        let status = admin(&table, &["registry", "status", "--kubeconfig", &kubeconfig]);
        (refused, status)
    })
    .await
    .unwrap();
    assert!(!refused.status.success(), "{}", stdout(&refused));
    let said = stderr(&refused);
    for needed in [
        "berth-system",
        "berth-builds",
        "kubectl apply -k infra/k8s",
        "installs only the CRDs",
        "Nothing was written",
    ] {
        assert!(said.contains(needed), "{said}");
    }
    assert!(!said.contains("removed while the request ran"), "{said}");
    assert!(status.status.success(), "{}", stderr(&status));
    assert!(
        stdout(&status).contains("not set"),
        "nothing was stored: {}",
        stdout(&status)
    );
    let _ = std::fs::remove_file(&path);
}

/// The confinement check is not fooled by a cluster that protects
/// `kube-system` by itself (some managed clusters refuse every write there,
/// whoever asks; issue 46, part 5): with Berth's policy gone and such a
/// platform policy in force, the check still fails, since it probes
/// `default`, which clusters leave to their users.
#[tokio::test]
#[cfg_attr(
    berth_real_cluster,
    ignore = "deletes the admission policy, which every other test relies on"
)]
async fn the_confinement_check_probes_a_namespace_no_cluster_protects() {
    use crate::support::identities::{ADMISSION_POLICY, admission_api};

    let cluster = support::TestCluster::start().await;
    let platform = "platform-protects-kube-system";
    let policy: kube::api::DynamicObject = serde_json::from_value(serde_json::json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": { "name": platform },
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": { "resourceRules": [{
                "apiGroups": ["", "berth.dev"],
                "apiVersions": ["*"],
                "operations": ["CREATE", "UPDATE"],
                "resources": ["namespaces", "runs"]
            }] },
            "validations": [{
                "expression": "(!has(request.name) || request.name != 'kube-system') && \
                               (!has(request.namespace) || request.namespace != 'kube-system')",
                "message": "kube-system is the platform's",
                "reason": "Forbidden"
            }]
        }
    }))
    .unwrap();
    let binding: kube::api::DynamicObject = serde_json::from_value(serde_json::json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": { "name": platform },
        "spec": { "policyName": platform, "validationActions": ["Deny"] }
    }))
    .unwrap();
    let post = kube::api::PostParams::default();
    admission_api(&cluster.client, false)
        .create(&post, &policy)
        .await
        .unwrap();
    admission_api(&cluster.client, true)
        .create(&post, &binding)
        .await
        .unwrap();
    admission_api(&cluster.client, false)
        .delete(ADMISSION_POLICY, &kube::api::DeleteParams::default())
        .await
        .unwrap();
    neither_identity_is_confined(&cluster).await;
}

/// The confinement check of both identities (the API's, the
/// controller's) finds them unconfined.
async fn neither_identity_is_confined(cluster: &support::TestCluster) {
    for kubeconfig in [&cluster.kubeconfig, &cluster.controller_kubeconfig] {
        let client = berth_api::access::client_from_kubeconfig(
            kubeconfig,
            None,
            std::time::Duration::from_secs(10),
        )
        .await
        .unwrap();
        let error = berth_cluster::install::require_confinement(&client)
            .await
            .expect_err("not confined without Berth's policy");
        let error = berth_api::ApiError::from(error);
        assert_eq!(error.code(), "cluster_unavailable", "{error:?}");
    }
}

/// `berth-admin domains verify`: the operator's word that an organization
/// controls a hostname, recorded in its audit log; refused for an
/// organization that does not exist, and while another has verified it.
#[tokio::test]
async fn the_operator_verifies_a_domain_for_an_organization() {
    let app = TestApp::new().await;
    let globex = app.other_org("globex").await;
    let table = app.state.store.table().to_owned();
    let hostname = format!("{}.example.test", support::unique("operator"));

    let verified = admin(
        &table,
        &[
            "domains",
            "verify",
            &hostname.to_uppercase(),
            "--org",
            &app.owner.org,
        ],
    );
    assert!(verified.status.success(), "{}", stderr(&verified));
    assert_eq!(
        stdout(&verified).trim(),
        format!("{hostname} is verified for {}", app.owner.org)
    );
    let events = app.audit_events(&app.owner.org).await;
    let event = events.last().expect("an event");
    assert_eq!(
        (
            event.action.as_str(),
            event.actor_kind.as_str(),
            event.target.as_deref()
        ),
        ("verifyDomain", "operator", Some(hostname.as_str()))
    );

    // Another organization: refused, and nothing changes.
    let refused = admin(
        &table,
        &["domains", "verify", &hostname, "--org", &globex.org],
    );
    assert!(!refused.status.success());
    assert!(
        stderr(&refused).contains("verified by another organization"),
        "{}",
        stderr(&refused)
    );
    let missing = admin(&table, &["domains", "verify", &hostname, "--org", "nobody"]);
    assert!(!missing.status.success());
    assert!(
        stderr(&missing).contains("no organization nobody"),
        "{}",
        stderr(&missing)
    );
    assert!(
        app.audit_events(&globex.org)
            .await
            .iter()
            .all(|e| e.action != "verifyDomain")
    );
}
