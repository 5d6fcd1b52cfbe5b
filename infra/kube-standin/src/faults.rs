//! Fault injection: make the next N API requests fail, hang or answer late.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};

use crate::status::ApiError;

/// How long a `Hang` fault holds a request before giving up on it.
const HANG_LIMIT: Duration = Duration::from_secs(300);

/// What an injected fault does to a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum FaultKind {
    /// Answer `500 InternalError`.
    InternalError,
    /// Answer `503 ServiceUnavailable` (kube's client retries these by default).
    ServiceUnavailable,
    /// Answer `429 TooManyRequests` with `Retry-After: 1` (also retried by kube's client).
    TooManyRequests,
    /// Answer `403 Forbidden`, as an apiserver whose RBAC does not let the
    /// caller's identity do this.
    Forbidden,
    /// Answer `409 Conflict`, as an update whose `resourceVersion` another
    /// write made stale meanwhile (the request changes nothing).
    Conflict,
    /// Don't answer: the request hangs past any sensible client timeout (it is answered with
    /// `504` after five minutes, or dropped when the server goes unreachable or stops).
    Hang,
    /// Serve the request normally, but only after a delay.
    Delay {
        #[serde(rename = "delayMs", with = "millis")]
        delay: Duration,
    },
}

mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_millis().try_into().unwrap_or(u64::MAX))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        Ok(Duration::from_millis(u64::deserialize(d)?))
    }
}

/// A fault armed for the next `count` matching requests.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Fault {
    #[serde(flatten)]
    pub kind: FaultKind,
    /// How many requests it still applies to (1 when left out of a knob request).
    #[serde(default = "one")]
    pub count: usize,
    /// Only requests with this HTTP method (case-insensitive), when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// Only requests whose path contains this, when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_contains: Option<String>,
}

fn one() -> usize {
    1
}

impl Fault {
    pub fn new(kind: FaultKind, count: usize) -> Self {
        Fault {
            kind,
            count,
            method: None,
            path_contains: None,
        }
    }

    /// Restricts the fault to one HTTP method (`GET`, `PATCH`, ...).
    pub fn method(mut self, method: impl Into<String>) -> Self {
        self.method = Some(method.into());
        self
    }

    /// Restricts the fault to paths containing `part` (e.g. `/configmaps`).
    pub fn path_contains(mut self, part: impl Into<String>) -> Self {
        self.path_contains = Some(part.into());
        self
    }

    fn matches(&self, method: &str, path: &str) -> bool {
        self.count > 0
            && self
                .method
                .as_deref()
                .is_none_or(|m| m.eq_ignore_ascii_case(method))
            && self
                .path_contains
                .as_deref()
                .is_none_or(|p| path.contains(p))
    }
}

/// The armed faults, consumed first-armed first.
#[derive(Debug, Default, Clone)]
pub struct Faults {
    armed: Arc<Mutex<Vec<Fault>>>,
}

impl Faults {
    pub fn add(&self, fault: Fault) {
        if fault.count > 0 {
            self.lock().push(fault);
        }
    }

    pub fn clear(&self) {
        self.lock().clear();
    }

    /// The faults still armed, with their remaining counts.
    pub fn pending(&self) -> Vec<Fault> {
        self.lock().clone()
    }

    /// Takes one use of the first fault matching the request.
    fn take(&self, method: &str, path: &str) -> Option<FaultKind> {
        let mut armed = self.lock();
        let idx = armed.iter().position(|f| f.matches(method, path))?;
        let kind = armed[idx].kind;
        armed[idx].count -= 1;
        if armed[idx].count == 0 {
            armed.remove(idx);
        }
        Some(kind)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Fault>> {
        self.armed
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Middleware on the Kubernetes API routes (not the knob routes) that applies armed faults.
pub async fn inject(State(faults): State<Faults>, request: Request, next: Next) -> Response {
    let path = request.uri().path().to_string();
    let Some(kind) = faults.take(request.method().as_str(), &path) else {
        return next.run(request).await;
    };
    tracing::debug!(?kind, %path, "injecting fault");
    match kind {
        FaultKind::InternalError => {
            ApiError::internal("injected fault: internal error").into_response()
        }
        FaultKind::ServiceUnavailable => ApiError::service_unavailable(
            "injected fault: the server is currently unable to handle the request",
        )
        .into_response(),
        FaultKind::TooManyRequests => {
            let mut resp = ApiError::new(
                429,
                "TooManyRequests",
                "injected fault: too many requests, please try again later",
            )
            .into_response();
            resp.headers_mut()
                .insert("Retry-After", axum::http::HeaderValue::from_static("1"));
            resp
        }
        FaultKind::Forbidden => ApiError::new(
            403,
            "Forbidden",
            "injected fault: the caller is forbidden to do this",
        )
        .into_response(),
        // The apiserver's own words for a stale update.
        FaultKind::Conflict => ApiError::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {}: the object has been modified; please \
                 apply your changes to the latest version and try again (injected fault)",
                path.rsplit('/').next().unwrap_or_default()
            ),
        )
        .into_response(),
        FaultKind::Hang => {
            tokio::time::sleep(HANG_LIMIT).await;
            ApiError::new(504, "Timeout", "injected fault: the request hung").into_response()
        }
        FaultKind::Delay { delay } => {
            tokio::time::sleep(delay).await;
            next.run(request).await
        }
    }
}
