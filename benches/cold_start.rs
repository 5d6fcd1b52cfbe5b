//! `make bench`: how soon each function binary is ready for its first event,
//! and how soon it has answered it, against bare lambda_http binaries
//! measured in the same run.
//!
//! A stand-in Lambda Runtime API on loopback notes when a freshly started
//! process first asks for an invocation (`GET …/runtime/invocation/next`):
//! that is the cold start a Lambda pays before the handler runs (its
//! resident memory is read then). It answers with an API Gateway (HTTP API)
//! event and notes when the invocation's response arrives
//! (`POST …/invocation/{id}/response`): init and first request together, so
//! that a cost moved from the start onto the first request shows.
//!
//! The first request is `GET /api/v1/me` with a well-formed API token that
//! names no user: every function authenticates it (one `BatchGetItem`),
//! refuses it (401, or 404 where the function does not serve the route) and
//! audits the refusal (an `UpdateItem` and a `PutItem`), against DynamoDB
//! Local over HTTP. Two baselines:
//! - `bare lambda_http` (`benches/baselines/bare_lambda.rs`): one axum route answering
//!   `ok`, nothing else; the start figures' ratios are to it.
//! - `bare + SDK` (`benches/baselines/bare_lambda_dynamodb.rs`): lambda_http and the
//!   stock AWS SDK client (`aws_config::load_defaults`) built at init, its
//!   handler making the same three DynamoDB calls; the init + first request
//!   ratios are to it.
//!
//! Every binary is started in turn, round after round, so that the
//! machine's drift hits all alike. `BERTH_BENCH_BEFORE=<dir>` adds the
//! binaries of another build (a `target/release` folder) to the rounds as
//! `<name> (before)`: a change against its base, side by side.
//! `BERTH_BENCH_PLATFORM_ROOTS=1` adds each function again as
//! `<name> (platform)`, started with `BERTH_AWS_TRUST_ROOTS=platform` (the
//! machine's certificate store, as the SDK loads it by default).
//!
//! The SDK's certificate loading costs what the machine's store costs
//! (Debian's `/etc/ssl/certs` holds ~300 files), so each binary is started
//! as on Lambda's AL2023 too, where the store is one CA bundle
//! (`SSL_CERT_FILE` set, `SSL_CERT_DIR` an empty folder).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use tokio::sync::mpsc;

const RUNS: usize = 30;
const ACCESS_KEY: &str = "bench";
const TABLE: &str = "berth";
/// `brt_`, 24 characters of secret, then a user id that no user has.
const UNKNOWN_TOKEN: &str = "brt_aaaaaaaaaaaaaaaaaaaaaaaa0123456789abcdef";

/// What the stand-in Runtime API saw of the process being measured.
#[derive(Debug)]
enum Seen {
    /// Its first `invocation/next`, and its resident memory then.
    Ready(Instant, u64),
    /// The first invocation's response, with its HTTP status.
    Answered(Instant, u16),
    /// An init or invocation error.
    Failed(String),
}

#[derive(Clone)]
struct RuntimeApi {
    /// The process being measured; `None` once its one event was handed out.
    child: Arc<Mutex<Option<u32>>>,
    seen: mpsc::UnboundedSender<Seen>,
}

/// Hands out one event per process; a second `next` waits forever (the
/// process is killed once it answered).
async fn next_invocation(State(api): State<RuntimeApi>) -> axum::response::Response {
    let at = Instant::now();
    let Some(pid) = api.child.lock().unwrap().take() else {
        return std::future::pending().await;
    };
    let _ = api
        .seen
        .send(Seen::Ready(at, resident_kib(pid).unwrap_or(0)));
    let deadline_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis()
        + 30_000;
    let mut headers = HeaderMap::new();
    headers.insert(
        "lambda-runtime-aws-request-id",
        HeaderValue::from_static("bench-1"),
    );
    headers.insert(
        "lambda-runtime-deadline-ms",
        HeaderValue::from_str(&deadline_ms.to_string()).unwrap(),
    );
    headers.insert(
        "lambda-runtime-invoked-function-arn",
        HeaderValue::from_static("arn:aws:lambda:us-east-1:123456789012:function:bench"),
    );
    headers.insert("content-type", HeaderValue::from_static("application/json"));
    (headers, api_gateway_event()).into_response()
}

async fn invocation_response(State(api): State<RuntimeApi>, body: Bytes) -> StatusCode {
    let at = Instant::now();
    let status = serde_json::from_slice::<serde_json::Value>(&body)
        .ok()
        .and_then(|answer| answer["statusCode"].as_u64())
        .unwrap_or(0);
    let _ = api.seen.send(Seen::Answered(at, status as u16));
    StatusCode::ACCEPTED
}

async fn invocation_error(State(api): State<RuntimeApi>, body: Bytes) -> StatusCode {
    let _ = api
        .seen
        .send(Seen::Failed(String::from_utf8_lossy(&body).into_owned()));
    StatusCode::ACCEPTED
}

/// `GET /api/v1/me` with [`UNKNOWN_TOKEN`], as API Gateway's HTTP API sends it.
fn api_gateway_event() -> String {
    serde_json::json!({
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": "/api/v1/me",
        "rawQueryString": "",
        "headers": {
            "authorization": format!("Bearer {UNKNOWN_TOKEN}"),
            "host": "api.example.com",
            "user-agent": "cold-start-bench"
        },
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "bench",
            "domainName": "api.example.com",
            "domainPrefix": "api",
            "http": {
                "method": "GET",
                "path": "/api/v1/me",
                "protocol": "HTTP/1.1",
                "sourceIp": "192.0.2.1",
                "userAgent": "cold-start-bench"
            },
            "requestId": "bench-1",
            "routeKey": "$default",
            "stage": "$default",
            "time": "01/Jan/2026:00:00:00 +0000",
            "timeEpoch": 1767225600000u64
        },
        "isBase64Encoded": false
    })
    .to_string()
}

async fn runtime_api(api: RuntimeApi) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let port = listener.local_addr().unwrap().port();
    let routes = Router::new()
        .route("/2018-06-01/runtime/invocation/next", get(next_invocation))
        .route(
            "/2018-06-01/runtime/invocation/{id}/response",
            post(invocation_response),
        )
        .route(
            "/2018-06-01/runtime/invocation/{id}/error",
            post(invocation_error),
        )
        .route("/2018-06-01/runtime/init/error", post(invocation_error))
        .with_state(api);
    tokio::spawn(async move { axum::serve(listener, routes).await });
    port
}

fn binaries_dir() -> PathBuf {
    // target/release/deps/cold_start-… → target/release
    let exe = std::env::current_exe().unwrap();
    exe.parent().and_then(Path::parent).unwrap().to_path_buf()
}

fn resident_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

struct Contender {
    name: String,
    binary: PathBuf,
    /// Settings of this contender only.
    env: Vec<(&'static str, &'static str)>,
    ready: Vec<Duration>,
    answered: Vec<Duration>,
    rss_ready_kib: Vec<u64>,
    rss_answered_kib: Vec<u64>,
    statuses: Vec<u16>,
}

impl Contender {
    fn new(name: String, binary: PathBuf) -> Self {
        assert!(
            binary.exists(),
            "{} is missing: `make bench` builds the function binaries first",
            binary.display()
        );
        Self {
            name,
            binary,
            env: Vec::new(),
            ready: Vec::new(),
            answered: Vec::new(),
            rss_ready_kib: Vec::new(),
            rss_answered_kib: Vec::new(),
            statuses: Vec::new(),
        }
    }
}

struct Bench {
    port: u16,
    child: Arc<Mutex<Option<u32>>>,
    seen: mpsc::UnboundedReceiver<Seen>,
    endpoint: String,
}

impl Bench {
    async fn start_once(&mut self, contender: &mut Contender, extra_env: &[(&str, String)]) {
        while self.seen.try_recv().is_ok() {}
        let started = Instant::now();
        let mut child = std::process::Command::new(&contender.binary)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("AWS_LAMBDA_RUNTIME_API", format!("127.0.0.1:{}", self.port))
            .env("AWS_LAMBDA_FUNCTION_NAME", &contender.name)
            .env("AWS_LAMBDA_FUNCTION_VERSION", "1")
            .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256")
            .env("AWS_REGION", "us-east-1")
            .env("AWS_ACCESS_KEY_ID", ACCESS_KEY)
            .env("AWS_SECRET_ACCESS_KEY", ACCESS_KEY)
            .env("AWS_ENDPOINT_URL_DYNAMODB", &self.endpoint)
            .env("BERTH_TABLE", TABLE)
            .envs(extra_env.iter().map(|(k, v)| (*k, v.as_str())))
            .envs(contender.env.iter().copied())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", contender.binary.display()));
        *self.child.lock().unwrap() = Some(child.id());
        let name = contender.name.clone();
        match self.next_seen(&name).await {
            Seen::Ready(at, rss) => {
                contender.ready.push(at - started);
                contender.rss_ready_kib.push(rss);
            }
            Seen::Failed(why) => panic!("{name} failed to start: {why}"),
            other => panic!("{name} answered before it asked for an event: {other:?}"),
        }
        match self.next_seen(&name).await {
            Seen::Answered(at, status) => {
                contender.answered.push(at - started);
                contender.statuses.push(status);
            }
            Seen::Failed(why) => panic!("{name} failed its first request: {why}"),
            other => panic!("{name} asked for an event twice: {other:?}"),
        }
        contender
            .rss_answered_kib
            .push(resident_kib(child.id()).unwrap_or(0));
        let _ = child.kill();
        let _ = child.wait();
    }

    async fn next_seen(&mut self, name: &str) -> Seen {
        tokio::time::timeout(Duration::from_secs(10), self.seen.recv())
            .await
            .unwrap_or_else(|_| panic!("{name} went quiet"))
            .expect("the stand-in Runtime API runs")
    }
}

fn median<T: Copy + Ord>(values: &[T]) -> T {
    let mut sorted = values.to_vec();
    sorted.sort();
    sorted[sorted.len() / 2]
}

fn p90<T: Copy + Ord>(values: &[T]) -> T {
    let mut sorted = values.to_vec();
    sorted.sort();
    sorted[sorted.len() * 9 / 10]
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

fn report(title: &str, contenders: &[Contender]) {
    let bare = &contenders[0];
    let bare_sdk = &contenders[1];
    let ready_base = ms(median(&bare.ready));
    let answered_base = ms(median(&bare_sdk.answered));
    println!("{title}");
    println!(
        "{:<22} {:>8} {:>8} {:>7} {:>9} | {:>8} {:>8} {:>7} {:>9} {:>7} | {:>10}",
        "binary",
        "ready",
        "p90",
        "ratio",
        "RSS",
        "+1st req",
        "p90",
        "ratio",
        "RSS",
        "status",
        "size"
    );
    for contender in contenders {
        let mut statuses = contender.statuses.clone();
        statuses.sort();
        statuses.dedup();
        let statuses = statuses
            .iter()
            .map(u16::to_string)
            .collect::<Vec<_>>()
            .join(",");
        let size = std::fs::metadata(&contender.binary).map_or(0, |m| m.len());
        println!(
            "{:<22} {:>6.2}ms {:>6.2}ms {:>6.2}x {:>5.1}MiB | {:>6.2}ms {:>6.2}ms {:>6.2}x {:>5.1}MiB {:>7} | {:>6.1}MiB",
            contender.name,
            ms(median(&contender.ready)),
            ms(p90(&contender.ready)),
            ms(median(&contender.ready)) / ready_base,
            mib(median(&contender.rss_ready_kib)),
            ms(median(&contender.answered)),
            ms(p90(&contender.answered)),
            ms(median(&contender.answered)) / answered_base,
            mib(median(&contender.rss_answered_kib)),
            statuses,
            size as f64 / (1024.0 * 1024.0),
        );
    }
    println!(
        "(ready: process start to its first `invocation/next`, ratio to `bare lambda_http`; \
         +1st req: process start to the first response, ratio to `bare + SDK`; medians of {RUNS})"
    );
    println!();
}

/// The table Berth's functions read, made once in DynamoDB Local under the
/// access key the measured processes use (DynamoDB Local keeps one set of
/// tables per key).
async fn create_table(endpoint: &str) {
    let client = aws_sdk_dynamodb::Client::from_conf(
        aws_sdk_dynamodb::Config::builder()
            .behavior_version(BehaviorVersion::v2026_01_12())
            .region(Region::new("us-east-1"))
            .credentials_provider(Credentials::new(
                ACCESS_KEY, ACCESS_KEY, None, None, "bench",
            ))
            .endpoint_url(endpoint)
            .build(),
    );
    berth_store::schema::create_table(&client, TABLE)
        .await
        .expect("the bench's table in DynamoDB Local");
}

#[tokio::main]
async fn main() {
    if std::env::args().any(|arg| arg == "--list") {
        return;
    }
    let endpoint = std::env::var("BERTH_TEST_DYNAMODB_ENDPOINT").expect(
        "BERTH_TEST_DYNAMODB_ENDPOINT: run the benchmark with `make bench` \
         (scripts/with-dynamodb.sh starts DynamoDB Local)",
    );
    create_table(&endpoint).await;
    let dir = binaries_dir();
    let before = std::env::var("BERTH_BENCH_BEFORE").ok().map(PathBuf::from);
    let platform_roots = std::env::var_os("BERTH_BENCH_PLATFORM_ROOTS").is_some();
    // BERTH_BENCH_FUNCTIONS=auth,apps measures only those (the release build
    // of every function takes long on a small machine).
    let only = std::env::var("BERTH_BENCH_FUNCTIONS").ok();
    let functions = berth_local::FUNCTIONS
        .iter()
        .map(|function| function.name)
        .filter(|name| {
            only.as_deref()
                .is_none_or(|only| only.split(',').any(|f| f == *name))
        });

    let child = Arc::new(Mutex::new(None));
    let (sender, seen) = mpsc::unbounded_channel();
    let port = runtime_api(RuntimeApi {
        child: child.clone(),
        seen: sender,
    })
    .await;
    let mut bench = Bench {
        port,
        child,
        seen,
        endpoint,
    };

    let empty = std::env::temp_dir().join(format!("berth-no-certs-{}", std::process::id()));
    std::fs::create_dir_all(&empty).unwrap();
    let setups: [(&str, Vec<(&str, String)>); 2] = [
        (
            "one CA bundle, as on Lambda's AL2023",
            vec![
                (
                    "SSL_CERT_FILE",
                    "/etc/ssl/certs/ca-certificates.crt".to_owned(),
                ),
                ("SSL_CERT_DIR", empty.display().to_string()),
            ],
        ),
        ("this machine's certificate store", vec![]),
    ];
    for (setup, env) in &setups {
        let mut contenders = vec![
            Contender::new("bare lambda_http".into(), dir.join("examples/bare_lambda")),
            Contender::new(
                "bare + SDK".into(),
                dir.join("examples/bare_lambda_dynamodb"),
            ),
        ];
        for function in functions.clone() {
            contenders.push(Contender::new(function.to_owned(), dir.join(function)));
            if platform_roots {
                let mut platform =
                    Contender::new(format!("{function} (platform)"), dir.join(function));
                platform.env.push(("BERTH_AWS_TRUST_ROOTS", "platform"));
                contenders.push(platform);
            }
            if let Some(before) = &before {
                contenders.push(Contender::new(
                    format!("{function} (before)"),
                    before.join(function),
                ));
            }
        }
        for _ in 0..RUNS {
            for contender in &mut contenders {
                bench.start_once(contender, env).await;
            }
        }
        report(
            &format!("Cold start ({setup}), {RUNS} starts each, in turns"),
            &contenders,
        );
    }
    let _ = std::fs::remove_dir(empty);
}
