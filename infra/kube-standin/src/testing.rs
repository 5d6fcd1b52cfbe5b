//! Waiting in tests, on the stand-in or on a real cluster alike: the stand-in's
//! own tests and Berth's API tests share these, so "how long a test waits for
//! the cluster" is one setting, `BERTH_TEST_WAIT_SECONDS`.

use std::future::Future;
use std::time::Duration;

/// The one bound on every wait for a cluster effect (garbage collection, a
/// namespace going, a watch event, a controller's work):
/// `BERTH_TEST_WAIT_SECONDS`, 120 s by default. A real cluster under a
/// parallel test run takes far longer than the stand-in; a passing wait ends
/// as soon as its effect shows, so the bound costs only failing tests.
pub fn wait_bound() -> Duration {
    std::env::var("BERTH_TEST_WAIT_SECONDS")
        .ok()
        .and_then(|seconds| seconds.parse().ok())
        .map_or(Duration::from_secs(120), Duration::from_secs)
}

/// Polls `check` until it holds, for at most [`wait_bound`]; panics naming
/// `what` when it never does.
pub async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let bound = wait_bound();
    let deadline = tokio::time::Instant::now() + bound;
    loop {
        if check().await {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}: not within {} s",
            bound.as_secs()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
