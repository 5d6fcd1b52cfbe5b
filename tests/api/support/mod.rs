//! The one helper layer of the black-box tests: a real DynamoDB Local (started
//! by `make test`, reached over HTTP with the real SDK), a fresh table per
//! test, the whole API in process, and accounts of every role.

pub mod cleanup;
pub mod cluster;
pub mod dns;
pub mod git_http;
pub mod identities;
pub mod kubelet;
pub mod logs;
pub mod registry;
pub mod store_faults;
pub mod table;

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::Path;
use std::sync::Mutex;

use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use http::{HeaderMap, HeaderValue, Method, Request, StatusCode, header};
use http_body_util::BodyExt;
use serde_json::Value;
use tokio::sync::OnceCell;
use tower::ServiceExt;

use berth_api::AppState;
use berth_api::access::{ClusterAccess, RequestCounter};
use berth_api::config::Config;
use berth_domain::Role;
use berth_records::audit::AuditEvent;
use berth_store::identity::members;
use berth_store::identity::{Credential, Principal, User, password, tokens};
use berth_store::round_trips::RoundTripCounter;
use berth_store::{keys, schema};
pub use cluster::{TestCluster, eventually, unique, wait_bound};
pub use store_faults::StoreFaults;
use table as store;

/// Runs a tool and returns what it printed, trimmed; panics, with what it
/// said, unless it succeeds.
pub fn stdout_of(command: &mut std::process::Command) -> String {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("running {command:?}: {e}"));
    assert!(
        output.status.success(),
        "{command:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

/// The password every test account has (unless a test changes it).
pub const PASSWORD: &str = "correct horse battery staple";

pub fn dynamodb_endpoint() -> String {
    std::env::var("BERTH_TEST_DYNAMODB_ENDPOINT").unwrap_or_else(|_| {
        panic!(
            "BERTH_TEST_DYNAMODB_ENDPOINT is not set: run the tests with `make test`, \
             which installs and starts DynamoDB Local"
        )
    })
}

/// A DynamoDB client for DynamoDB Local that counts its round trips.
pub fn dynamodb_client(
    counter: &RoundTripCounter,
    faults: &StoreFaults,
) -> aws_sdk_dynamodb::Client {
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::v2026_01_12())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new(
            "local",
            "local",
            None,
            None,
            "berth-tests",
        ))
        .endpoint_url(dynamodb_endpoint())
        .timeout_config(berth_api::state::store_timeouts())
        .interceptor(counter.clone())
        .interceptor(faults.clone())
        .build();
    aws_sdk_dynamodb::Client::from_conf(config)
}

async fn known_password_hash() -> &'static str {
    static HASH: OnceCell<String> = OnceCell::const_new();
    HASH.get_or_init(|| async { password::hash(PASSWORD.to_owned()).await.expect("hashing") })
        .await
}

/// An account made for a test, with a working API token.
#[derive(Debug, Clone)]
pub struct TestUser {
    pub id: String,
    pub email: String,
    pub org: String,
    pub role: Role,
    pub token: String,
}

impl TestUser {
    pub fn principal(&self) -> Principal {
        Principal {
            user: User {
                id: self.id.clone(),
                email: self.email.clone(),
                display_name: None,
                org: berth_domain::names::OrgName::parse(&self.org)
                    .expect("an organization's name"),
                role: self.role,
                projects: Vec::new(),
                must_change_password: false,
                active: true,
                session_epoch: 0,
            },
            credential: Credential::Token {
                id: "fixture".into(),
                expires_at: None,
            },
            ceiling: None,
            scope: None,
            project_role: None,
        }
    }
}

/// The whole API over its own fresh table.
pub struct TestApp {
    pub state: AppState,
    /// The client the API's store was made with (its round trips counted,
    /// its faults injected): the tests' own reach into the table.
    pub dynamodb: aws_sdk_dynamodb::Client,
    pub app: Router,
    pub round_trips: RoundTripCounter,
    /// Requests sent to the cluster.
    pub cluster_requests: RequestCounter,
    pub store_faults: StoreFaults,
    pub owner: TestUser,
    /// The cluster the stored kubeconfig points at, for apps made `with_cluster`.
    pub cluster: Option<TestCluster>,
}

impl TestApp {
    /// A fresh table with organization `acme` and its owner.
    pub async fn new() -> Self {
        Self::with_config(|_| {}).await
    }

    pub async fn with_config(adjust: impl FnOnce(&mut Config)) -> Self {
        logs::capture();
        let round_trips = RoundTripCounter::default();
        let store_faults = StoreFaults::default();
        let client = dynamodb_client(&round_trips, &store_faults);
        let table = format!("t-{}", uuid::Uuid::new_v4().simple());
        schema::create_table(&client, &table)
            .await
            .expect("creating the test table");
        let mut config = Config::for_table(&table);
        adjust(&mut config);
        let mut state = AppState::new(client.clone(), config);
        let cluster_requests = RequestCounter::default();
        state.cluster = std::sync::Arc::new(
            ClusterAccess::new(
                state.store.clone(),
                state.config.cluster_timeout,
                state.config.kubeconfig_recheck,
            )
            .counting(cluster_requests.clone()),
        );
        let app = berth_local::app(state.clone());
        let owner = bootstrap_org(&state, &client, "acme").await;
        Self {
            state,
            dynamodb: client,
            app,
            round_trips,
            cluster_requests,
            store_faults,
            owner,
            cluster: None,
        }
    }

    /// The API over a table made elsewhere (by the admin CLI); its `owner` is
    /// a fresh organization's.
    pub async fn over_table(table: &str) -> Self {
        logs::capture();
        let round_trips = RoundTripCounter::default();
        let store_faults = StoreFaults::default();
        let dynamodb = dynamodb_client(&round_trips, &store_faults);
        let state = AppState::new(dynamodb.clone(), Config::for_table(table));
        let app = berth_local::app(state.clone());
        let owner = bootstrap_org(
            &state,
            &dynamodb,
            &format!("o{}", &uuid::Uuid::new_v4().simple().to_string()[..12]),
        )
        .await;
        Self {
            state,
            dynamodb,
            app,
            round_trips,
            cluster_requests: RequestCounter::default(),
            store_faults,
            owner,
            cluster: None,
        }
    }

    /// A fresh table and a cluster (the stand-in, or `BERTH_TEST_KUBECONFIG`)
    /// whose kubeconfig is stored, with the CRDs installed and the controller
    /// running. Cluster calls have the production timeouts (a real cluster
    /// under a parallel test run answers in seconds, not milliseconds); the
    /// API knows the controller's apps domain.
    pub async fn with_cluster() -> Self {
        Self::with_cluster_config(|_| {}).await
    }

    pub async fn with_cluster_config(adjust: impl FnOnce(&mut Config)) -> Self {
        let mut app = Self::with_config(|config| {
            config.apps_domain = Some(
                berth_domain::names::Hostname::parse(cluster::APPS_DOMAIN).expect("a hostname"),
            );
            adjust(config);
        })
        .await;
        let cluster = TestCluster::start().await;
        berth_api::kubeconfig::store_kubeconfig(&app.state.store, cluster.kubeconfig.clone(), None)
            .await
            .expect("storing the kubeconfig");
        app.cluster = Some(cluster);
        app
    }

    pub fn cluster(&self) -> &TestCluster {
        self.cluster.as_ref().expect("an app made with_cluster")
    }

    /// The stand-in's knobs. Only the fault tests use them, and those are
    /// ignored when built for a real cluster (`tests/build.rs`), so a test that gets
    /// here runs on the stand-in.
    pub fn standin(&self) -> &berth_kube_standin::StandIn {
        self.cluster().standin.as_ref().expect(
            "the stand-in's knobs: a test that needs them must be \
             #[cfg_attr(berth_real_cluster, ignore = \"needs the stand-in's fault knobs\")]",
        )
    }

    /// A new project of the owner's organization; its name starts with `prefix`.
    pub async fn create_project(&self, prefix: &str) -> String {
        let name = unique(prefix);
        self.post("/api/v1/projects")
            .by(&self.owner)
            .json(serde_json::json!({ "name": name, "display_name": name }))
            .send()
            .await
            .assert_status(201);
        name
    }

    /// A new environment in `project`, created by the owner; its record.
    pub async fn create_environment(&self, project: &str, body: Value) -> Value {
        let created = self
            .post(&format!("/api/v1/projects/{project}/environments"))
            .by(&self.owner)
            .json(body)
            .send()
            .await;
        created.assert_status(201);
        created.json()
    }

    /// The Environment resource the API would make for the owner's
    /// organization, made directly with the cluster's admin client (none of
    /// the API's checks): for what the controller does on its own.
    pub async fn create_environment_resource(
        &self,
        project: &str,
        environment: &str,
        quota: Option<berth_domain::parts::Quota>,
    ) -> berth_cluster::crd::Environment {
        use berth_cluster::crd::{
            EnvType, Environment, EnvironmentSpec, LABEL_ENVIRONMENT, LABEL_MANAGED_BY, LABEL_ORG,
            LABEL_PROJECT, MANAGER,
        };
        let mut resource = Environment::new(
            &format!("{project}-{environment}"),
            EnvironmentSpec {
                project: project.to_owned(),
                name: environment.to_owned(),
                org: self.owner.org.clone(),
                env_type: EnvType::Standard,
                quota,
                deletion_scheduled_at: None,
            },
        );
        resource.metadata.labels = Some(
            [
                (LABEL_ORG.to_owned(), self.owner.org.clone()),
                (LABEL_PROJECT.to_owned(), project.to_owned()),
                (LABEL_ENVIRONMENT.to_owned(), environment.to_owned()),
                (LABEL_MANAGED_BY.to_owned(), MANAGER.to_owned()),
            ]
            .into(),
        );
        kube::Api::<Environment>::all(self.cluster().client.clone())
            .create(&Default::default(), &resource)
            .await
            .expect("creating the Environment resource")
    }

    /// Waits until the controller has provisioned the environment.
    pub async fn wait_for_environment(&self, project: &str, environment: &str) {
        let path = format!("/api/v1/projects/{project}/environments/{environment}");
        eventually("the environment becomes Ready", || async {
            self.get(&path).by(&self.owner).send().await.json()["phase"] == "Ready"
        })
        .await;
    }

    /// A new project with a provisioned `standard` environment `environment`;
    /// the project's name.
    pub async fn ready_environment(&self, prefix: &str, environment: &str) -> String {
        let project = self.create_project(prefix).await;
        self.create_environment(&project, serde_json::json!({ "name": environment }))
            .await;
        self.wait_for_environment(&project, environment).await;
        project
    }

    /// A new project of `user`'s with a provisioned environment made with
    /// `environment` (its body: `name` and any settings); the project's
    /// name.
    pub async fn ready_environment_of(
        &self,
        user: &TestUser,
        prefix: &str,
        environment: Value,
    ) -> String {
        let project = unique(prefix);
        self.post("/api/v1/projects")
            .by(user)
            .json(serde_json::json!({ "name": project, "display_name": project }))
            .send()
            .await
            .assert_status(201);
        let environments = format!("/api/v1/projects/{project}/environments");
        let name = environment["name"]
            .as_str()
            .expect("an environment's name")
            .to_owned();
        self.post(&environments)
            .by(user)
            .json(environment)
            .send()
            .await
            .assert_status(201);
        eventually("the environment becomes Ready", || async {
            self.get(&format!("{environments}/{name}"))
                .by(user)
                .send()
                .await
                .json()["phase"]
                == "Ready"
        })
        .await;
        project
    }

    /// A new app, created by the owner at `apps` (an environment's apps path).
    pub async fn create_app(&self, apps: &str, body: Value) {
        self.post(apps)
            .by(&self.owner)
            .json(body)
            .send()
            .await
            .assert_status(201);
    }

    /// Another organization in the same table, and its owner.
    /// The owner, calling with a token of theirs made through the API with
    /// `limits` (its `ceiling`, its `scope`).
    pub async fn owners_token(&self, limits: Value) -> TestUser {
        let mut body = serde_json::json!({ "name": "limited" });
        if let (Some(body), Some(limits)) = (body.as_object_mut(), limits.as_object()) {
            body.extend(limits.clone());
        }
        let created = self
            .post("/api/v1/tokens")
            .by(&self.owner)
            .json(body)
            .send()
            .await;
        created.assert_status(201);
        TestUser {
            token: created.json()["token"]
                .as_str()
                .expect("the token")
                .to_owned(),
            ..self.owner.clone()
        }
    }

    /// A member whose organization role is `organization`, given `role` in
    /// `project` by the owner through the API.
    pub async fn project_member(&self, organization: Role, project: &str, role: &str) -> TestUser {
        let member = self.user(organization).await;
        self.request(
            Method::PUT,
            &format!("/api/v1/projects/{project}/members/{}", member.id),
        )
        .by(&self.owner)
        .json(serde_json::json!({ "role": role }))
        .send()
        .await
        .assert_status(200);
        member
    }

    /// A deploy token of `project` made by the owner through the API with
    /// `body` (its `name` unique by default), calling as itself.
    pub async fn deploy_token(&self, project: &str, body: Value) -> TestUser {
        let mut full = serde_json::json!({ "name": unique("ci") });
        if let (Some(full), Some(body)) = (full.as_object_mut(), body.as_object()) {
            full.extend(body.clone());
        }
        let created = self
            .post(&format!("/api/v1/projects/{project}/tokens"))
            .by(&self.owner)
            .json(full)
            .send()
            .await;
        created.assert_status(201);
        let record = created.json();
        TestUser {
            id: record["id"].as_str().expect("its id").to_owned(),
            email: record["actor"].as_str().expect("its actor").to_owned(),
            org: self.owner.org.clone(),
            role: Role::Member,
            token: record["token"].as_str().expect("the token").to_owned(),
        }
    }

    /// Marks `hostnames` verified for `user`'s organization, as the
    /// operator's `berth-admin domains verify` does: its apps serve them
    /// from their next write (docs/api-notes.md, "Domain ownership").
    pub async fn verify_domains(&self, user: &TestUser, hostnames: &[&str]) {
        for hostname in hostnames {
            berth_api::apps::proofs::verify_by_operator(
                &self.state.store,
                None,
                &user.org,
                hostname,
            )
            .await
            .expect("the operator verifies a domain");
        }
    }

    pub async fn other_org(&self, org: &str) -> TestUser {
        bootstrap_org(&self.state, &self.dynamodb, org).await
    }

    /// A member of the owner's organization with `role`.
    pub async fn user(&self, role: Role) -> TestUser {
        self.user_of(&self.owner, role).await
    }

    /// A member of `owner`'s organization with `role`.
    pub async fn user_of(&self, owner: &TestUser, role: Role) -> TestUser {
        let email = format!(
            "{}-{}@example.org",
            role.as_str(),
            uuid::Uuid::new_v4().simple()
        );
        let invited = members::invite(&self.state.store, &owner.principal(), &email, role, None)
            .await
            .expect("inviting a test member");
        activate(
            &self.state,
            &self.dynamodb,
            &invited.member.id,
            &owner.org,
            &email,
            role,
        )
        .await
    }

    pub fn request(&self, method: Method, path: &str) -> TestRequest<'_> {
        TestRequest {
            app: &self.app,
            method,
            path: path.to_owned(),
            headers: HeaderMap::new(),
            body: Vec::new(),
            ip: IpAddr::V4(Ipv4Addr::new(203, 0, 113, 7)),
        }
    }

    pub fn get(&self, path: &str) -> TestRequest<'_> {
        self.request(Method::GET, path)
    }

    pub fn post(&self, path: &str) -> TestRequest<'_> {
        self.request(Method::POST, path)
    }

    /// Signs in and returns the session cookie's value.
    pub async fn sign_in(&self, email: &str, password: &str) -> String {
        let response = self
            .post("/api/v1/auth/login")
            .json(serde_json::json!({ "email": email, "password": password }))
            .send()
            .await;
        assert_eq!(
            response.status,
            StatusCode::OK,
            "sign-in failed: {}",
            response.text()
        );
        response.session_cookie().expect("a session cookie")
    }

    /// The whole API on a loopback port, as a client outside the process
    /// reaches it (the CLI, curl), until the answer is dropped.
    pub async fn serve(&self) -> Served {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port");
        let address = listener.local_addr().expect("its address");
        let app = self
            .app
            .clone()
            .into_make_service_with_connect_info::<SocketAddr>();
        let server = tokio::spawn(async move {
            axum::serve(listener, app).await.ok();
        });
        Served {
            url: format!("http://{address}"),
            server,
        }
    }

    /// Every audit event of an organization, oldest first.
    pub async fn audit_events(&self, org: &str) -> Vec<AuditEvent> {
        let mut events = Vec::new();
        let mut before = None;
        loop {
            let page = self
                .state
                .audit
                .page(org, 200, before)
                .await
                .expect("reading the audit log");
            events.extend(page.events);
            match page.next_before {
                Some(next) => before = Some(next),
                None => break,
            }
        }
        events.reverse();
        events
    }

    pub async fn last_audit_event(&self, org: &str) -> AuditEvent {
        self.state
            .audit
            .page(org, 1, None)
            .await
            .expect("reading the audit log")
            .events
            .remove(0)
    }
}

async fn bootstrap_org(
    state: &AppState,
    dynamodb: &aws_sdk_dynamodb::Client,
    org: &str,
) -> TestUser {
    let email = format!("owner-{}@{org}.example", uuid::Uuid::new_v4().simple());
    let owner = members::bootstrap(&state.store, org, &email)
        .await
        .expect("bootstrapping");
    activate(state, dynamodb, &owner.member.id, org, &email, Role::Owner).await
}

/// Gives a fixture account the known password and a token, as if its owner
/// had signed in and replaced the temporary password.
async fn activate(
    state: &AppState,
    dynamodb: &aws_sdk_dynamodb::Client,
    id: &str,
    org: &str,
    email: &str,
    role: Role,
) -> TestUser {
    dynamodb
        .update_item()
        .table_name(state.store.table())
        .set_key(Some(store::key(keys::user(id), keys::PROFILE_SK)))
        .update_expression("SET password_hash = :hash, must_change_password = :false")
        .expression_attribute_values(":hash", store::s(known_password_hash().await))
        .expression_attribute_values(
            ":false",
            aws_sdk_dynamodb::types::AttributeValue::Bool(false),
        )
        .send()
        .await
        .expect("activating a test account");
    let token = tokens::create(&state.store, id, tokens::NewToken::unlimited("fixture"))
        .await
        .expect("creating a token")
        .token;
    TestUser {
        id: id.to_owned(),
        email: email.to_owned(),
        org: org.to_owned(),
        role,
        token,
    }
}

/// The API served on a loopback port; it stops when dropped.
pub struct Served {
    /// `http://127.0.0.1:PORT`, without `/api/v1`.
    pub url: String,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for Served {
    fn drop(&mut self) {
        self.server.abort();
    }
}

pub struct TestRequest<'a> {
    app: &'a Router,
    method: Method,
    path: String,
    headers: HeaderMap,
    body: Vec<u8>,
    ip: IpAddr,
}

impl TestRequest<'_> {
    pub fn header(mut self, name: &'static str, value: &str) -> Self {
        self.headers
            .append(name, HeaderValue::from_str(value).expect("header value"));
        self
    }

    pub fn bearer(self, token: &str) -> Self {
        self.header("authorization", &format!("Bearer {token}"))
    }

    pub fn by(self, user: &TestUser) -> Self {
        self.bearer(&user.token)
    }

    pub fn session(self, cookie: &str) -> Self {
        self.header("cookie", &format!("berth_session={cookie}"))
    }

    pub fn json(mut self, body: Value) -> Self {
        self.body = serde_json::to_vec(&body).expect("json");
        self.header("content-type", "application/json")
    }

    pub fn raw(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = body.into();
        self
    }

    pub fn client_ip(mut self, ip: IpAddr) -> Self {
        self.ip = ip;
        self
    }

    pub async fn send(self) -> TestResponse {
        let mut request = Request::builder()
            .method(self.method)
            .uri(self.path)
            .body(Body::from(self.body))
            .expect("request");
        *request.headers_mut() = self.headers;
        request
            .extensions_mut()
            .insert(ConnectInfo(SocketAddr::new(self.ip, 40_000)));
        let response = self.app.clone().oneshot(request).await.expect("infallible");
        let (parts, body) = response.into_parts();
        let body = body.collect().await.expect("body").to_bytes().to_vec();
        TestResponse {
            status: parts.status,
            headers: parts.headers,
            body,
        }
    }
}

#[derive(Debug)]
pub struct TestResponse {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

impl TestResponse {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {} {}", self.status, self.text()))
    }

    /// Asserts a Problem Details error with this status and code.
    #[track_caller]
    pub fn assert_problem(&self, status: u16, code: &str) {
        assert_eq!(self.status.as_u16(), status, "{}", self.text());
        assert_eq!(self.headers[header::CONTENT_TYPE], "application/json");
        let body = self.json();
        assert_eq!(body["code"], code, "{body}");
        assert_eq!(body["status"], status, "{body}");
        assert!(
            body["title"].as_str().is_some_and(|t| !t.is_empty()),
            "{body}"
        );
        assert!(body.get("detail").is_some(), "{body}");
    }

    /// `403 forbidden`, its detail saying `words`.
    #[track_caller]
    pub fn assert_forbidden_saying(&self, words: &str) {
        self.assert_problem(403, "forbidden");
        let detail = self.json()["detail"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(detail.contains(words), "{detail}");
    }

    #[track_caller]
    pub fn assert_status(&self, status: u16) -> &Self {
        assert_eq!(self.status.as_u16(), status, "{}", self.text());
        self
    }

    pub fn set_cookie(&self) -> Option<String> {
        self.headers
            .get(header::SET_COOKIE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    }

    pub fn session_cookie(&self) -> Option<String> {
        let cookie = self.set_cookie()?;
        let value = cookie.strip_prefix("berth_session=")?.split(';').next()?;
        (!value.is_empty()).then(|| value.to_owned())
    }
}

/// A binary of another package of the workspace (`berth`, `berth-admin`,
/// `berth-local`), built once per test run. Cargo builds only this
/// package's targets for its tests, so the first test to need one runs
/// `cargo build -p PACKAGE --bin BIN` on the tests' own target directory (a
/// no-op under `make test`, which builds them first; see `make_dev.rs` for
/// why a nested build waits for nobody).
pub fn workspace_binary(package: &str, bin: &str) -> &'static Path {
    static BUILT: Mutex<BTreeMap<String, &'static Path>> = Mutex::new(BTreeMap::new());
    let mut built = BUILT
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(path) = built.get(bin) {
        return path;
    }
    let target = crate::controller_image::target_dir();
    let status = std::process::Command::new(env!("CARGO"))
        .args(["build", "--locked", "-p", package, "--bin", bin])
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .env("CARGO_TARGET_DIR", &target)
        .status()
        .expect("cargo runs");
    assert!(status.success(), "building {bin} ({package})");
    let path: &'static Path = Box::leak(target.join("debug").join(bin).into_boxed_path());
    built.insert(bin.to_owned(), path);
    path
}
