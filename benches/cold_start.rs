//! `make bench`: how soon each function binary is ready for its first event,
//! against a bare lambda_http binary (`examples/bare_lambda.rs`) measured in
//! the same run.
//!
//! A stand-in Lambda Runtime API on loopback notes when a freshly started
//! process first asks for an invocation (`GET …/runtime/invocation/next`):
//! that is the cold start a Lambda pays before the handler runs. The
//! process's resident memory is read at that moment.
//!
//! Most of a function's start is the AWS SDK loading the platform's root
//! certificates (rustls-native-certs), which costs what the machine's
//! certificate store costs: Debian's `/etc/ssl/certs` holds ~300 files. Each
//! binary is therefore also started as on Lambda's AL2023, where the store is
//! one CA bundle (`SSL_CERT_FILE` set, `SSL_CERT_DIR` an empty folder).
//!
//! Each binary's size is reported beside its figures: what Lambda loads
//! (this machine's release build; `make package` prints the arm64 ones).

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const RUNS: usize = 30;

/// Sends a message for every `invocation/next` request; never answers it.
fn runtime_api() -> (u16, mpsc::Receiver<Instant>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let port = listener.local_addr().unwrap().port();
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            let mut line = String::new();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            if reader.read_line(&mut line).is_ok() && line.contains("/runtime/invocation/next") {
                let _ = sender.send(Instant::now());
            }
            held.push(stream);
        }
    });
    (port, receiver)
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

struct Measured {
    name: String,
    median: Duration,
    p90: Duration,
    rss_kib: u64,
    size_bytes: u64,
}

fn measure(
    name: &str,
    binary: &Path,
    port: u16,
    ready: &mpsc::Receiver<Instant>,
    extra_env: &[(&str, String)],
) -> Measured {
    let mut times = Vec::with_capacity(RUNS);
    let mut rss = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        while ready.try_recv().is_ok() {}
        let started = Instant::now();
        let mut child = Command::new(binary)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("AWS_LAMBDA_RUNTIME_API", format!("127.0.0.1:{port}"))
            .env("AWS_LAMBDA_FUNCTION_NAME", name)
            .env("AWS_LAMBDA_FUNCTION_VERSION", "1")
            .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256")
            .env("AWS_REGION", "us-east-1")
            .env("AWS_ACCESS_KEY_ID", "bench")
            .env("AWS_SECRET_ACCESS_KEY", "bench")
            .env("AWS_ENDPOINT_URL_DYNAMODB", "http://127.0.0.1:9")
            .env("BERTH_TABLE", "berth")
            .envs(extra_env.iter().map(|(k, v)| (*k, v.as_str())))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", binary.display()));
        let at = ready
            .recv_timeout(Duration::from_secs(10))
            .unwrap_or_else(|_| panic!("{name} never asked for an event"));
        times.push(at - started);
        rss.push(resident_kib(child.id()).unwrap_or(0));
        let _ = child.kill();
        let _ = child.wait();
    }
    times.sort();
    rss.sort();
    Measured {
        name: name.to_owned(),
        median: times[RUNS / 2],
        p90: times[RUNS * 9 / 10],
        rss_kib: rss[RUNS / 2],
        size_bytes: std::fs::metadata(binary).map_or(0, |m| m.len()),
    }
}

fn report(title: &str, results: &[Measured]) {
    let baseline = results[0].median.as_secs_f64();
    let baseline_rss = results[0].rss_kib as f64;
    println!("{title}");
    println!(
        "{:<18} {:>10} {:>10} {:>8} {:>10} {:>8} {:>10} {:>12}",
        "binary", "median", "p90", "ratio", "RSS", "ratio", "size", "bytes"
    );
    for result in results {
        println!(
            "{:<18} {:>10.2?} {:>10.2?} {:>7.2}x {:>7} KiB {:>7.2}x {:>6.1} MiB {:>12}",
            result.name,
            result.median,
            result.p90,
            result.median.as_secs_f64() / baseline,
            result.rss_kib,
            result.rss_kib as f64 / baseline_rss,
            result.size_bytes as f64 / (1024.0 * 1024.0),
            result.size_bytes
        );
    }
    println!();
}

fn main() {
    if std::env::args().any(|arg| arg == "--list") {
        return;
    }
    let dir = binaries_dir();
    let (port, ready) = runtime_api();
    // BERTH_BENCH_FUNCTIONS=auth,apps measures only those (the release build
    // of all thirteen takes long on a small machine).
    let only = std::env::var("BERTH_BENCH_FUNCTIONS").ok();
    let functions = berth_local::FUNCTIONS
        .iter()
        .map(|function| function.name)
        .filter(|name| {
            only.as_deref()
                .is_none_or(|only| only.split(',').any(|f| f == *name))
        });
    for function in functions.clone() {
        let binary = dir.join(function);
        assert!(
            binary.exists(),
            "{} is missing: `make bench` builds the function binaries first",
            binary.display()
        );
    }
    let empty = std::env::temp_dir().join(format!("berth-no-certs-{}", std::process::id()));
    std::fs::create_dir_all(&empty).unwrap();
    let setups: [(&str, Vec<(&str, String)>); 2] = [
        ("this machine's certificate store", vec![]),
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
    ];
    for (setup, env) in &setups {
        let mut results = vec![measure(
            "bare lambda_http",
            &dir.join("examples/bare_lambda"),
            port,
            &ready,
            env,
        )];
        for function in functions.clone() {
            results.push(measure(function, &dir.join(function), port, &ready, env));
        }
        report(
            &format!(
                "Cold start ({setup}): process start to its first `invocation/next`, {RUNS} starts each"
            ),
            &results,
        );
    }
    let _ = std::fs::remove_dir(empty);
}
