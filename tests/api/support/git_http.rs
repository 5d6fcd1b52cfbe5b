//! Git over HTTP on loopback, for the `source` step's tests: a small
//! CGI-capable server (axum) in front of Debian's `git http-backend`, as
//! git-http-backend(1) describes its use behind a web server, optionally
//! asking for HTTP Basic credentials; or a server that redirects every
//! request elsewhere. Each records what it was asked (path and the
//! `Authorization` header), so a test can tell which host got a
//! credential.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::Response;
use base64::Engine;
use tokio::io::AsyncWriteExt;

/// Debian's git: the test runs the step with the git a fresh Debian
/// machine has (scripts/install-tools.sh installs it).
pub const GIT: &str = "/usr/bin/git";

/// One request as the server saw it.
#[derive(Clone, Debug)]
pub struct Seen {
    pub path: String,
    pub authorization: Option<String>,
}

#[derive(Clone)]
enum Serves {
    /// `git http-backend` with this project root, and the Basic
    /// credential it asks for, if any.
    Repositories {
        root: PathBuf,
        credential: Option<(String, String)>,
    },
    /// A `302 Found` to this base URL and the request's path.
    RedirectTo(String),
}

#[derive(Clone)]
struct Server {
    serves: Serves,
    seen: Arc<Mutex<Vec<Seen>>>,
}

/// A server on `ip` and a free port, stopped when dropped.
pub struct GitHttp {
    pub addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
    task: tokio::task::JoinHandle<()>,
}

impl GitHttp {
    /// Serves the bare repositories under `root` (`http://ADDR/NAME.git`).
    pub async fn repositories(ip: &str, root: &Path, credential: Option<(&str, &str)>) -> Self {
        Self::start(
            ip,
            Serves::Repositories {
                root: root.to_owned(),
                credential: credential
                    .map(|(user, password)| (user.to_owned(), password.to_owned())),
            },
        )
        .await
    }

    /// Redirects every request to `base` (`http://host:port`).
    pub async fn redirecting_to(ip: &str, base: &str) -> Self {
        Self::start(ip, Serves::RedirectTo(base.to_owned())).await
    }

    async fn start(ip: &str, serves: Serves) -> Self {
        let listener = tokio::net::TcpListener::bind((ip, 0))
            .await
            .expect("a free port on loopback");
        let addr = listener.local_addr().expect("its address");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let app = axum::Router::new().fallback(handle).with_state(Server {
            serves,
            seen: seen.clone(),
        });
        let task = tokio::spawn(async move {
            axum::serve(listener, app)
                .await
                .expect("the git server runs");
        });
        Self { addr, seen, task }
    }

    /// `http://ADDR`.
    pub fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// What it was asked so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().expect("the log").clone()
    }
}

impl Drop for GitHttp {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn handle(
    State(server): State<Server>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let authorization = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    server.seen.lock().expect("the log").push(Seen {
        path: uri.path().to_owned(),
        authorization: authorization.clone(),
    });
    match server.serves {
        Serves::RedirectTo(base) => Response::builder()
            .status(StatusCode::FOUND)
            .header(
                header::LOCATION,
                format!(
                    "{base}{}",
                    uri.path_and_query().map_or("/", |pq| pq.as_str())
                ),
            )
            .body(Body::empty())
            .expect("a response"),
        Serves::Repositories { root, credential } => {
            if let Some((user, password)) = credential {
                let expected = format!(
                    "Basic {}",
                    base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
                );
                if authorization.as_deref() != Some(expected.as_str()) {
                    return Response::builder()
                        .status(StatusCode::UNAUTHORIZED)
                        .header(header::WWW_AUTHENTICATE, "Basic realm=\"git\"")
                        .body(Body::empty())
                        .expect("a response");
                }
            }
            cgi(&root, &method, &uri, &headers, body).await
        }
    }
}

/// Runs `git http-backend` as a CGI program (RFC 3875): the request in
/// its environment and on its standard input; its output's header lines
/// (`Status:` and the rest) until an empty line, then the body.
async fn cgi(
    root: &Path,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: Bytes,
) -> Response {
    let header_of = |name: header::HeaderName| {
        headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    let mut env: HashMap<&str, String> = HashMap::from([
        ("GIT_PROJECT_ROOT", root.display().to_string()),
        ("GIT_HTTP_EXPORT_ALL", "1".to_owned()),
        ("GATEWAY_INTERFACE", "CGI/1.1".to_owned()),
        ("REQUEST_METHOD", method.as_str().to_owned()),
        ("PATH_INFO", uri.path().to_owned()),
        ("QUERY_STRING", uri.query().unwrap_or_default().to_owned()),
        ("CONTENT_TYPE", header_of(header::CONTENT_TYPE)),
        ("CONTENT_LENGTH", body.len().to_string()),
        ("REMOTE_ADDR", "127.0.0.1".to_owned()),
        ("HTTP_CONTENT_ENCODING", header_of(header::CONTENT_ENCODING)),
    ]);
    if let Some(protocol) = headers.get("git-protocol").and_then(|v| v.to_str().ok()) {
        env.insert("GIT_PROTOCOL", protocol.to_owned());
    }
    let mut child = tokio::process::Command::new(GIT)
        .arg("http-backend")
        .env_clear()
        .envs(env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("git http-backend runs");
    let mut stdin = child.stdin.take().expect("its input");
    let writing = tokio::spawn(async move {
        let _ = stdin.write_all(&body).await;
    });
    let output = child
        .wait_with_output()
        .await
        .expect("git http-backend ends");
    let _ = writing.await;
    let out = output.stdout;
    let (head, body) = match find(&out, b"\r\n\r\n") {
        Some(at) => (&out[..at], &out[at + 4..]),
        None => match find(&out, b"\n\n") {
            Some(at) => (&out[..at], &out[at + 2..]),
            None => (&out[..], &[][..]),
        },
    };
    let mut response = Response::builder().status(StatusCode::OK);
    for line in String::from_utf8_lossy(head).lines() {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("status") {
            let code = value.split(' ').next().and_then(|c| c.parse::<u16>().ok());
            response = response.status(code.unwrap_or(500));
        } else if let Ok(value) = HeaderValue::from_str(value) {
            response = response.header(name.trim(), value);
        }
    }
    response
        .body(Body::from(body.to_vec()))
        .expect("a response")
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}
