//! Pod logs. With no kubelet, tests decide what each container has logged.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, watch};

use crate::server::App;
use crate::status::{ApiError, ApiResult};

/// Which log: a container of a pod, current or previous instance.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LogKey {
    pub namespace: String,
    pub pod: String,
    pub container: String,
    #[serde(default)]
    pub previous: bool,
}

impl LogKey {
    pub fn new(namespace: &str, pod: &str, container: &str) -> Self {
        LogKey {
            namespace: namespace.into(),
            pod: pod.into(),
            container: container.into(),
            previous: false,
        }
    }

    /// The log of the previous (terminated) instance of the container.
    pub fn previous(mut self) -> Self {
        self.previous = true;
        self
    }
}

#[derive(Debug, Clone)]
struct Line {
    timestamp: String,
    text: String,
}

/// Log lines by container, shared by the server and the test knobs.
#[derive(Debug, Clone)]
pub struct Logs {
    lines: Arc<Mutex<HashMap<LogKey, Vec<Line>>>>,
    changed: Arc<watch::Sender<u64>>,
}

impl Default for Logs {
    fn default() -> Self {
        Logs {
            lines: Arc::default(),
            changed: Arc::new(watch::channel(0).0),
        }
    }
}

fn stamp() -> String {
    jiff::Timestamp::now().to_string()
}

impl Logs {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<LogKey, Vec<Line>>> {
        self.lines.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Replaces a container's log.
    pub fn set(&self, key: LogKey, lines: impl IntoIterator<Item = impl Into<String>>) {
        let ts = stamp();
        let lines = lines
            .into_iter()
            .map(|l| Line {
                timestamp: ts.clone(),
                text: l.into(),
            })
            .collect();
        self.lock().insert(key, lines);
        self.changed.send_modify(|v| *v += 1);
    }

    /// Appends to a container's log (followers see the new lines).
    pub fn append(&self, key: LogKey, lines: impl IntoIterator<Item = impl Into<String>>) {
        let ts = stamp();
        self.lock()
            .entry(key)
            .or_default()
            .extend(lines.into_iter().map(|l| Line {
                timestamp: ts.clone(),
                text: l.into(),
            }));
        self.changed.send_modify(|v| *v += 1);
    }

    /// The container restarts as a kubelet restarts it: what it logged
    /// becomes the previous instance's log, timestamps kept, and the new
    /// instance has logged nothing yet.
    pub fn restart(&self, key: LogKey) {
        let mut logs = self.lock();
        let old = logs.remove(&key).unwrap_or_default();
        logs.insert(key.clone().previous(), old);
        logs.insert(key, Vec::new());
        drop(logs);
        self.changed.send_modify(|v| *v += 1);
    }

    /// Whether a container has logged anything yet.
    pub fn has(&self, key: &LogKey) -> bool {
        self.lock().contains_key(key)
    }

    pub fn clear(&self) {
        self.lock().clear();
        self.changed.send_modify(|v| *v += 1);
    }

    fn get(&self, key: &LogKey) -> Option<Vec<Line>> {
        self.lock().get(key).cloned()
    }
}

/// The query of a log request.
#[derive(Debug, Default)]
pub struct LogQuery {
    pub container: Option<String>,
    pub previous: bool,
    pub tail_lines: Option<usize>,
    pub limit_bytes: Option<usize>,
    pub timestamps: bool,
    pub follow: bool,
    /// `sinceTime`: only lines stamped at or after it.
    pub since_time: Option<jiff::Timestamp>,
}

fn render(lines: &[Line], timestamps: bool) -> String {
    let mut out = String::new();
    for l in lines {
        if timestamps {
            out.push_str(&l.timestamp);
            out.push(' ');
        }
        out.push_str(&l.text);
        out.push('\n');
    }
    out
}

fn plain_text(body: Body) -> Response {
    let mut resp = (StatusCode::OK, body).into_response();
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    resp
}

/// Picks the container a log request is about, with the API server's errors.
fn resolve_container(
    app: &App,
    namespace: &str,
    pod: &str,
    requested: Option<&str>,
) -> ApiResult<String> {
    let containers = app
        .state()
        .pod_containers(namespace, pod)
        .ok_or_else(|| ApiError::not_found("pods", "", pod))?;
    match requested.filter(|c| !c.is_empty()) {
        Some(c) if containers.iter().any(|x| x == c) => Ok(c.to_string()),
        Some(c) => Err(ApiError::bad_request(format!(
            "container {c} is not valid for pod {pod}"
        ))),
        None if containers.len() == 1 => Ok(containers[0].clone()),
        None if containers.is_empty() => Err(ApiError::bad_request(format!(
            "pod {pod} has no containers"
        ))),
        None => Err(ApiError::bad_request(format!(
            "a container name must be specified for pod {pod}, choose one of: [{}]",
            containers.join(" ")
        ))),
    }
}

/// `GET /api/v1/namespaces/{ns}/pods/{pod}/log`.
pub fn pod_log(app: &App, namespace: &str, pod: &str, q: &LogQuery) -> ApiResult<Response> {
    let container = resolve_container(app, namespace, pod, q.container.as_deref())?;
    let key = LogKey {
        namespace: namespace.into(),
        pod: pod.into(),
        container: container.clone(),
        previous: q.previous,
    };
    let Some(lines) = app.logs.get(&key) else {
        return Err(if q.previous {
            ApiError::bad_request(format!(
                "previous terminated container \"{container}\" in pod \"{pod}\" not found"
            ))
        } else {
            ApiError::bad_request(format!(
                "container \"{container}\" in pod \"{pod}\" is waiting to start: ContainerCreating"
            ))
        });
    };
    // As the kubelet reads a log: the tail from the end, then the lines
    // before `sinceTime` skipped.
    let start = q.tail_lines.map_or(0, |n| lines.len().saturating_sub(n));
    let shown: Vec<Line> = lines[start..]
        .iter()
        .filter(|line| {
            q.since_time.is_none_or(|since| {
                line.timestamp
                    .parse::<jiff::Timestamp>()
                    .is_ok_and(|at| at >= since)
            })
        })
        .cloned()
        .collect();
    let mut text = render(&shown, q.timestamps);
    if let Some(limit) = q.limit_bytes {
        let mut cut = limit.min(text.len());
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
    }
    if !q.follow || q.previous {
        return Ok(plain_text(Body::from(text)));
    }
    Ok(plain_text(follow(
        app.clone(),
        key,
        lines.len(),
        text,
        q.timestamps,
    )))
}

/// Streams the log: what is there now, then lines as they are appended, until the pod is gone.
fn follow(app: App, key: LogKey, already_sent: usize, first: String, timestamps: bool) -> Body {
    let (tx, mut rx) = mpsc::channel::<Bytes>(16);
    tokio::spawn(async move {
        let mut sent = already_sent;
        let mut changes = app.logs.changed.subscribe();
        if tx.send(Bytes::from(first)).await.is_err() {
            return;
        }
        loop {
            tokio::select! {
                _ = tx.closed() => return,
                r = changes.changed() => if r.is_err() { return },
                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            }
            if app
                .state()
                .pod_containers(&key.namespace, &key.pod)
                .is_none()
            {
                return;
            }
            let lines = app.logs.get(&key).unwrap_or_default();
            sent = sent.min(lines.len());
            if lines.len() > sent {
                let chunk = render(&lines[sent..], timestamps);
                sent = lines.len();
                if tx.send(Bytes::from(chunk)).await.is_err() {
                    return;
                }
            }
        }
    });
    let stream = futures_util::stream::poll_fn(move |cx| {
        rx.poll_recv(cx).map(|o| o.map(Ok::<_, Infallible>))
    });
    Body::from_stream(stream)
}
