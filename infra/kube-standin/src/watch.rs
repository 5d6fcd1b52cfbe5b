//! Watches: newline-delimited JSON `WatchEvent`s, replayed from the store's history.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use crate::registry::ResourceType;
use crate::selector::Filter;
use crate::server::App;
use crate::status::ApiError;
use crate::store::{Event, EventType};
use crate::verbs::present;

/// Where a watch starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// Synthetic `ADDED` events for what exists now, then changes (no or `0` resourceVersion).
    Current,
    /// Changes after this resourceVersion.
    After(u64),
}

#[derive(Debug, Clone)]
pub struct WatchRequest {
    pub rt: ResourceType,
    pub version: String,
    pub namespace: Option<String>,
    pub filter: Filter,
    pub start: Start,
    /// `sendInitialEvents=true`: the current state, then a bookmark marking its end.
    pub send_initial_events: bool,
    pub bookmarks: bool,
    pub timeout: Option<Duration>,
    /// Events carry `PartialObjectMetadata` instead of whole objects.
    pub metadata_only: bool,
}

impl WatchRequest {
    fn in_scope(&self, event: &Event) -> bool {
        event.key.group == self.rt.group
            && event.key.resource == self.rt.plural
            && self
                .namespace
                .as_deref()
                .is_none_or(|ns| event.key.namespace == ns)
    }

    /// The event this watcher should see for a change, if any: selector transitions turn
    /// into `ADDED` / `DELETED` as on the real API server.
    fn translate(&self, event: &Event) -> Option<(EventType, Arc<Value>)> {
        if !self.in_scope(event) {
            return None;
        }
        let now = self.filter.matches(&event.object);
        match event.kind {
            EventType::Added => now.then_some((EventType::Added, event.object.clone())),
            EventType::Deleted => {
                let before = event
                    .previous
                    .as_deref()
                    .is_none_or(|p| self.filter.matches(p));
                before.then_some((EventType::Deleted, event.object.clone()))
            }
            EventType::Modified => {
                let before = event
                    .previous
                    .as_deref()
                    .is_some_and(|p| self.filter.matches(p));
                match (before, now) {
                    (true, true) => Some((EventType::Modified, event.object.clone())),
                    (false, true) => Some((EventType::Added, event.object.clone())),
                    (true, false) => Some((EventType::Deleted, event.object.clone())),
                    (false, false) => None,
                }
            }
        }
    }

    fn line(&self, kind: &str, object: &Value) -> Bytes {
        let mut s = json!({"type": kind, "object": object}).to_string();
        s.push('\n');
        Bytes::from(s)
    }

    fn event_line(&self, kind: EventType, object: &Value) -> Bytes {
        let object = present(&self.rt, &self.version, object);
        if self.metadata_only {
            self.line(kind.as_str(), &crate::handlers::partial_metadata(&object))
        } else {
            self.line(kind.as_str(), &object)
        }
    }

    fn bookmark(&self, rv: u64, initial_events_end: bool) -> Bytes {
        let mut metadata = json!({"resourceVersion": rv.to_string()});
        if initial_events_end {
            metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        let object = json!({"kind": self.rt.kind, "apiVersion": self.rt.api_version(&self.version), "metadata": metadata});
        self.line("BOOKMARK", &object)
    }

    fn expired(&self, requested: u64, oldest: u64) -> Bytes {
        let err = ApiError::gone(format!("too old resource version: {requested} ({oldest})"));
        self.line("ERROR", &err.to_status())
    }
}

/// Starts a watch; the body streams until the timeout, a `410`, or the client going away.
pub fn start(app: App, req: WatchRequest, bookmark_interval: Duration) -> Body {
    let (tx, mut rx) = mpsc::channel::<Bytes>(256);
    tokio::spawn(async move {
        if let Err(()) = run(app, req, bookmark_interval, tx).await {
            tracing::trace!("watch ended: client gone");
        }
    });
    let stream = futures_util::stream::poll_fn(move |cx| {
        rx.poll_recv(cx).map(|o| o.map(Ok::<_, Infallible>))
    });
    Body::from_stream(stream)
}

async fn send_all(tx: &mpsc::Sender<Bytes>, lines: Vec<Bytes>) -> Result<(), ()> {
    for l in lines {
        tx.send(l).await.map_err(|_| ())?;
    }
    Ok(())
}

/// What a watch starts with: the version it is at, a change subscription taken at that version,
/// and the first lines (the snapshot or the replayed history); or the `410` line.
fn first_events(
    app: &App,
    req: &WatchRequest,
) -> Result<(u64, watch::Receiver<u64>, Vec<Bytes>), Bytes> {
    let state = app.state();
    let mut changes = state.store.subscribe();
    changes.mark_unchanged();
    let current = state.store.current_rv();
    let mut lines = Vec::new();
    match req.start {
        Start::After(rv) if !req.send_initial_events => {
            // A version from the future (another server's, say) starts from now.
            let rv = rv.min(current);
            let events = state
                .store
                .events_after(rv)
                .map_err(|e| req.expired(rv, e.oldest_available))?;
            for e in &events {
                if let Some((kind, obj)) = req.translate(e) {
                    lines.push(req.event_line(kind, &obj));
                }
            }
            Ok((events.last().map_or(rv, |e| e.rv.max(rv)), changes, lines))
        }
        _ => {
            let ns = if req.rt.namespaced {
                req.namespace.as_deref()
            } else {
                None
            };
            for (_, obj) in state.store.list(&req.rt.group, &req.rt.plural, ns) {
                if req.filter.matches(obj) {
                    lines.push(req.event_line(EventType::Added, obj));
                }
            }
            if req.send_initial_events && req.bookmarks {
                lines.push(req.bookmark(current, true));
            }
            Ok((current, changes, lines))
        }
    }
}

async fn run(
    app: App,
    req: WatchRequest,
    bookmark_interval: Duration,
    tx: mpsc::Sender<Bytes>,
) -> Result<(), ()> {
    let deadline = req.timeout.map(|t| Instant::now() + t);
    // Everything up to `last_rv` has been sent (or filtered out).
    let (mut last_rv, mut changes, initial) = match first_events(&app, &req) {
        Ok(first) => first,
        Err(expired_line) => {
            let _ = tx.send(expired_line).await;
            return Ok(());
        }
    };
    send_all(&tx, initial).await?;

    let mut bookmark_at = Instant::now() + bookmark_interval;
    loop {
        let sleep_until = match deadline {
            Some(d) if !req.bookmarks || d < bookmark_at => d,
            _ if req.bookmarks => bookmark_at,
            _ => Instant::now() + Duration::from_secs(3600),
        };
        tokio::select! {
            _ = tx.closed() => return Err(()),
            changed = changes.changed() => {
                if changed.is_err() {
                    return Ok(());
                }
                let update = {
                    let state = app.state();
                    state.store.events_after(last_rv).map(|events| {
                        let mut lines = Vec::new();
                        for e in &events {
                            if let Some((kind, obj)) = req.translate(e) {
                                lines.push(req.event_line(kind, &obj));
                            }
                            last_rv = e.rv;
                        }
                        lines
                    })
                };
                match update {
                    Ok(lines) => send_all(&tx, lines).await?,
                    Err(expired) => {
                        let _ = tx.send(req.expired(last_rv, expired.oldest_available)).await;
                        return Ok(());
                    }
                }
            }
            _ = tokio::time::sleep_until(sleep_until) => {
                if deadline.is_some_and(|d| Instant::now() >= d) {
                    return Ok(());
                }
                if req.bookmarks {
                    tx.send(req.bookmark(last_rv, false)).await.map_err(|_| ())?;
                    bookmark_at = Instant::now() + bookmark_interval;
                }
            }
        }
    }
}
