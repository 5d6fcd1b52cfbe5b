//! Retries of cluster calls, as client-go makes them, inside the request's
//! deadline: the one place that decides which failures of the apiserver are
//! worth another try.
//!
//! Under load a real apiserver sheds requests with `429` (API Priority and
//! Fairness, with `Retry-After`), answers `5xx` while it or etcd is busy,
//! and reads time out or lose their connection. kube's own
//! [`kube::client::retry::RetryPolicy`] retries `429`, `503` and `504` on
//! every verb, never a broken connection, and knows no deadline; this layer
//! follows client-go instead:
//!
//! - `429`: retried on every verb (the apiserver refused it before doing
//!   anything), after `Retry-After`.
//! - reads (`GET`, `HEAD`; watches and lists too) and server-side applies,
//!   which a repeat cannot change: also `5xx` with `Retry-After`, `503` and
//!   `504`, timeouts and broken connections.
//! - other writes (`POST`, `PUT`, `PATCH`, `DELETE`): nothing else, as the
//!   apiserver may have carried out one that timed out or failed (a create
//!   retried blindly would find its own object and answer "exists"). A
//!   conflict (`409`) is for the caller, which re-reads where its change is
//!   safe to repeat.
//! - a connection that could not be made (nothing was sent): every verb.
//!
//! Retries wait with jittered exponential backoff (or `Retry-After`) and stop
//! short of the request's deadline ([`berth_domain::request::deadline`]; a set
//! budget outside a request), so that what still fails is answered as the
//! cluster's last failure: `503 cluster_unavailable`, with a log line naming
//! the apiserver's reason. The first attempt costs nothing more than before.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full};
use kube::client::{Body, DynBody};
use tokio::time::Instant;
use tower::buffer::Buffer;
use tower::{BoxError, Layer, Service};

type Answer = Response<Box<DynBody>>;

/// At most this many attempts of one call (client-go's `maxRetries` is 10).
const MAX_ATTEMPTS: u32 = 10;
/// Retries of a call whose connection failed or timed out: a cluster that is
/// down answers `503` in about a second rather than at the deadline.
const MAX_TRANSPORT_RETRIES: u32 = 2;
/// The first backoff without `Retry-After`; it doubles up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(200);
const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// What the retries leave of a request's deadline, at most: time to turn the
/// last failure into an answer (and undo what the request had begun).
const RESERVE: Duration = Duration::from_secs(1);
/// The most of an error answer that is kept for the answer and the log.
const MAX_KEPT_BODY: usize = 64 * 1024;

/// Wraps a kube client's service with the retries (see the module docs).
#[derive(Debug, Clone, Copy)]
pub struct RetryLayer {
    /// How long a call may keep retrying outside a request (no deadline).
    budget: Duration,
}

impl RetryLayer {
    pub fn new(budget: Duration) -> Self {
        Self { budget }
    }
}

impl<S> Layer<S> for RetryLayer
where
    S: Service<Request<Body>, Response = Answer, Error = BoxError> + Send + 'static,
    S::Future: Send + 'static,
{
    type Service = Retrying<S::Future>;

    fn layer(&self, inner: S) -> Self::Service {
        Retrying {
            // A buffer makes the service cloneable, one clone per call.
            inner: Buffer::new(inner, 1024),
            budget: self.budget,
        }
    }
}

pub struct Retrying<F> {
    inner: Buffer<Request<Body>, F>,
    budget: Duration,
}

impl<F: Send + 'static> Clone for Retrying<F> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            budget: self.budget,
        }
    }
}

impl<F> Service<Request<Body>> for Retrying<F>
where
    F: Future<Output = Result<Answer, BoxError>> + Send + 'static,
{
    type Response = Answer;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Answer, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let spare = request_copy(&request);
        // `poll_ready` reserved a slot in this clone for the first attempt;
        // retries ask fresh clones for theirs.
        let first = self.inner.call(request);
        let service = self.inner.clone();
        let budget = self.budget;
        Box::pin(async move {
            // A streamed body cannot be sent twice.
            let Some(spare) = spare else {
                return first.await;
            };
            // Read when first polled: in the caller's task, where its
            // request's scope is.
            let cutoff = cutoff(Instant::now(), berth_domain::request::deadline(), budget);
            with_retries(service, spare, first, cutoff).await
        })
    }
}

/// When retrying must stop: short of the request's deadline by a fifth of
/// what is left (at most [`RESERVE`]), or after `budget` outside a request.
fn cutoff(now: Instant, deadline: Option<Instant>, budget: Duration) -> Instant {
    match deadline {
        Some(deadline) => {
            let left = deadline.saturating_duration_since(now);
            deadline - (left / 5).min(RESERVE)
        }
        None => now + budget,
    }
}

/// A copy of the request for another attempt, if its body can be copied.
fn request_copy(request: &Request<Body>) -> Option<Request<Body>> {
    let body = request.body().try_clone()?;
    let mut copy = Request::new(body);
    *copy.method_mut() = request.method().clone();
    *copy.uri_mut() = request.uri().clone();
    *copy.version_mut() = request.version();
    *copy.headers_mut() = request.headers().clone();
    *copy.extensions_mut() = request.extensions().clone();
    Some(copy)
}

/// What a repeat of the request could do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Repeat {
    /// Nothing: a read, or a server-side apply.
    Harmless,
    /// Carry out a change twice, or find its own first attempt's work.
    Unsafe,
}

impl Repeat {
    fn of(method: &Method, headers: &HeaderMap) -> Self {
        let apply = method == Method::PATCH
            && headers
                .get(header::CONTENT_TYPE)
                .is_some_and(|value| value.as_bytes() == b"application/apply-patch+yaml");
        if method == Method::GET || method == Method::HEAD || apply {
            Repeat::Harmless
        } else {
            Repeat::Unsafe
        }
    }
}

/// Whether and when an attempt's outcome is worth another try.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Final,
    /// Again, after `Retry-After` if the apiserver said so.
    Retry {
        after: Option<Duration>,
        transport: bool,
    },
}

fn verdict(repeat: Repeat, outcome: &Result<Answer, BoxError>) -> Verdict {
    match outcome {
        Ok(answer) => verdict_of_status(repeat, answer.status(), retry_after(answer.headers())),
        Err(error) if never_sent(error.as_ref()) => Verdict::Retry {
            after: None,
            transport: true,
        },
        Err(_) if repeat == Repeat::Harmless => Verdict::Retry {
            after: None,
            transport: true,
        },
        Err(_) => Verdict::Final,
    }
}

fn verdict_of_status(repeat: Repeat, status: StatusCode, after: Option<Duration>) -> Verdict {
    let retry = Verdict::Retry {
        after,
        transport: false,
    };
    if status == StatusCode::TOO_MANY_REQUESTS {
        return retry;
    }
    let busy = status.is_server_error()
        && (after.is_some()
            || status == StatusCode::SERVICE_UNAVAILABLE
            || status == StatusCode::GATEWAY_TIMEOUT);
    if busy && repeat == Repeat::Harmless {
        retry
    } else {
        Verdict::Final
    }
}

/// `Retry-After` in seconds, as the apiserver sends it.
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let seconds: u64 = headers
        .get(header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()?;
    Some(Duration::from_secs(seconds))
}

/// A connection that could not be made: the request never left.
fn never_sent(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(error);
    while let Some(error) = cause {
        if let Some(client) = error.downcast_ref::<hyper_util::client::legacy::Error>() {
            return client.is_connect();
        }
        cause = error.source();
    }
    false
}

/// Jittered exponential backoff: each wait is between half and all of
/// 200 ms, 400 ms, 800 ms … up to 5 s.
#[derive(Debug, Default)]
struct Backoff {
    step: u32,
}

impl Backoff {
    fn next(&mut self) -> Duration {
        let full = FIRST_BACKOFF
            .saturating_mul(1 << self.step.min(16))
            .min(MAX_BACKOFF);
        self.step += 1;
        jittered(full / 2, full / 2)
    }
}

/// `base` plus a random part of `spread`, so that callers refused together
/// do not all come back together.
fn jittered(base: Duration, spread: Duration) -> Duration {
    base + spread.mul_f64(rand::random::<f64>())
}

/// What an attempt answered, kept while the next one runs: if that one is
/// cut off at the deadline, this is the answer.
enum Kept {
    Answer(http::response::Parts, Bytes),
    Error(BoxError),
}

impl Kept {
    async fn of(outcome: Result<Answer, BoxError>, cutoff: Instant) -> Self {
        match outcome {
            Ok(answer) => {
                let (parts, body) = answer.into_parts();
                Kept::Answer(parts, read_bounded(body, cutoff).await)
            }
            Err(error) => Kept::Error(error),
        }
    }

    fn into_outcome(self) -> Result<Answer, BoxError> {
        match self {
            Kept::Answer(parts, bytes) => Ok(rebuilt(parts, bytes)),
            Kept::Error(error) => Err(error),
        }
    }
}

/// The body of an error answer (a `Status`, small), read while there is
/// time; what does not come in time or fit is left out.
async fn read_bounded(mut body: Box<DynBody>, cutoff: Instant) -> Bytes {
    let read = async move {
        let mut kept = Vec::new();
        while let Some(Ok(frame)) = body.frame().await {
            if let Ok(data) = frame.into_data() {
                if kept.len() + data.len() > MAX_KEPT_BODY {
                    break;
                }
                kept.extend_from_slice(&data);
            }
        }
        Bytes::from(kept)
    };
    tokio::time::timeout_at(cutoff, read)
        .await
        .unwrap_or_default()
}

fn rebuilt(parts: http::response::Parts, bytes: Bytes) -> Answer {
    let body: Box<DynBody> = Box::new(Full::new(bytes).map_err(|never| match never {}));
    Response::from_parts(parts, body)
}

/// The apiserver's `reason` in a `Status` answer, for the log.
fn reason_of(bytes: &[u8]) -> String {
    serde_json::from_slice::<serde_json::Value>(bytes)
        .ok()
        .and_then(|status| status.get("reason")?.as_str().map(str::to_owned))
        .unwrap_or_else(|| "none given".to_owned())
}

async fn with_retries<F>(
    service: Buffer<Request<Body>, F>,
    request: Request<Body>,
    first: tower::buffer::future::ResponseFuture<F>,
    cutoff: Instant,
) -> Result<Answer, BoxError>
where
    F: Future<Output = Result<Answer, BoxError>> + Send + 'static,
{
    let repeat = Repeat::of(request.method(), request.headers());
    let call = Call {
        method: request.method().clone(),
        path: request.uri().path().to_owned(),
    };
    let mut backoff = Backoff::default();
    let mut transport_retries = 0;
    let mut attempts = 1;
    // The first attempt runs as it always did: bounded by the client's own
    // timeouts and the request's deadline, not cut off here.
    let mut outcome = first.await;
    loop {
        let Verdict::Retry { after, transport } = verdict(repeat, &outcome) else {
            return outcome;
        };
        let delay = match after {
            Some(after) => jittered(after, after / 5),
            None => backoff.next(),
        };
        let exhausted = attempts >= MAX_ATTEMPTS
            || (transport && transport_retries >= MAX_TRANSPORT_RETRIES)
            || Instant::now() + delay >= cutoff;
        if exhausted {
            return gave_up(call, outcome, attempts).await;
        }
        if transport {
            transport_retries += 1;
        }
        tracing::debug!(method = %call.method, path = %call.path, attempts,
            delay_ms = delay.as_millis(), "retrying a cluster call");
        let kept = Kept::of(outcome, cutoff).await;
        tokio::time::sleep(delay).await;
        let Some(again) = request_copy(&request) else {
            return gave_up(call, kept.into_outcome(), attempts).await;
        };
        attempts += 1;
        let mut service = service.clone();
        let attempt = async move {
            std::future::poll_fn(|cx| service.poll_ready(cx)).await?;
            service.call(again).await
        };
        outcome = match tokio::time::timeout_at(cutoff, attempt).await {
            Ok(outcome) => outcome,
            // Cut off: the answer is what the attempt before it got.
            Err(_) => return gave_up(call, kept.into_outcome(), attempts).await,
        };
    }
}

/// What the log says of a call.
struct Call {
    method: Method,
    path: String,
}

/// The last failure, as the answer, with a log line saying what the
/// apiserver answered last and how often it was asked.
async fn gave_up(
    call: Call,
    outcome: Result<Answer, BoxError>,
    attempts: u32,
) -> Result<Answer, BoxError> {
    match outcome {
        Ok(answer) => {
            let (parts, body) = answer.into_parts();
            // A `Status` is small; the request's deadline bounds this too.
            let bytes = read_bounded(body, Instant::now() + RESERVE / 2).await;
            tracing::warn!(method = %call.method, path = %call.path, attempts,
                status = parts.status.as_u16(), reason = %reason_of(&bytes),
                "a cluster call still failed after its retries");
            Ok(rebuilt(parts, bytes))
        }
        Err(error) => {
            tracing::warn!(method = %call.method, path = %call.path, attempts,
                error = %error, "a cluster call still failed after its retries");
            Err(error)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(code: u16) -> StatusCode {
        StatusCode::from_u16(code).expect("a status")
    }

    fn retried(repeat: Repeat, code: u16, after: Option<u64>) -> bool {
        matches!(
            verdict_of_status(repeat, status(code), after.map(Duration::from_secs)),
            Verdict::Retry { .. }
        )
    }

    #[test]
    fn throttling_is_retried_on_every_verb() {
        for repeat in [Repeat::Harmless, Repeat::Unsafe] {
            assert!(retried(repeat, 429, Some(1)));
            assert!(retried(repeat, 429, None));
        }
    }

    #[test]
    fn a_busy_apiserver_is_asked_again_only_what_a_repeat_cannot_change() {
        assert!(retried(Repeat::Harmless, 500, Some(1)));
        assert!(retried(Repeat::Harmless, 503, None));
        assert!(retried(Repeat::Harmless, 504, None));
        assert!(
            !retried(Repeat::Harmless, 500, None),
            "an error, not a busy server"
        );
        for code in [500, 503, 504] {
            assert!(!retried(Repeat::Unsafe, code, Some(1)), "{code}");
        }
        for code in [200, 201, 400, 401, 403, 404, 409, 410, 422] {
            assert!(!retried(Repeat::Harmless, code, Some(1)), "{code}");
            assert!(!retried(Repeat::Unsafe, code, None), "{code}");
        }
    }

    #[test]
    fn only_reads_and_applies_are_harmless_to_repeat() {
        let none = HeaderMap::new();
        let mut apply = HeaderMap::new();
        apply.insert(
            header::CONTENT_TYPE,
            "application/apply-patch+yaml".parse().expect("a header"),
        );
        let mut merge = HeaderMap::new();
        merge.insert(
            header::CONTENT_TYPE,
            "application/merge-patch+json".parse().expect("a header"),
        );
        assert_eq!(Repeat::of(&Method::GET, &none), Repeat::Harmless);
        assert_eq!(Repeat::of(&Method::HEAD, &none), Repeat::Harmless);
        assert_eq!(Repeat::of(&Method::PATCH, &apply), Repeat::Harmless);
        assert_eq!(Repeat::of(&Method::PATCH, &merge), Repeat::Unsafe);
        for method in [Method::POST, Method::PUT, Method::DELETE] {
            assert_eq!(Repeat::of(&method, &none), Repeat::Unsafe, "{method}");
        }
    }

    #[test]
    fn backoff_grows_with_jitter_up_to_its_cap() {
        let mut backoff = Backoff::default();
        let waits: Vec<Duration> = (0..8).map(|_| backoff.next()).collect();
        assert!(waits[0] >= Duration::from_millis(100) && waits[0] <= FIRST_BACKOFF);
        assert!(waits[3] >= Duration::from_millis(800) && waits[3] <= Duration::from_millis(1600));
        assert!(waits.iter().all(|wait| *wait <= MAX_BACKOFF));
        assert!(waits[7] >= MAX_BACKOFF / 2);
    }

    #[test]
    fn retries_stop_short_of_the_deadline() {
        let now = Instant::now();
        let deadline = now + Duration::from_secs(20);
        assert_eq!(
            cutoff(now, Some(deadline), Duration::ZERO),
            deadline - RESERVE
        );
        // A short deadline keeps a fifth of itself.
        let soon = now + Duration::from_secs(2);
        assert_eq!(
            cutoff(now, Some(soon), Duration::ZERO),
            soon - Duration::from_millis(400)
        );
        assert_eq!(
            cutoff(now, None, Duration::from_secs(30)),
            now + Duration::from_secs(30)
        );
    }

    #[test]
    fn retry_after_is_read_in_seconds() {
        let mut headers = HeaderMap::new();
        assert_eq!(retry_after(&headers), None);
        headers.insert(header::RETRY_AFTER, "2".parse().expect("a header"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(2)));
        headers.insert(
            header::RETRY_AFTER,
            "Wed, 21 Oct 2015 07:28:00 GMT".parse().expect("a header"),
        );
        assert_eq!(retry_after(&headers), None);
    }

    #[test]
    fn the_log_names_the_apiservers_reason() {
        let status =
            br#"{"kind":"Status","status":"Failure","reason":"TooManyRequests","code":429}"#;
        assert_eq!(reason_of(status), "TooManyRequests");
        assert_eq!(reason_of(b"not json"), "none given");
    }
}
