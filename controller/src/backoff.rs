//! How long a failed object waits before its next reconcile: 1 s, 2 s, 4 s …
//! up to 5 minutes, per object (kind, namespace, name and uid, so an object
//! made again under the same name starts afresh).
//!
//! kube-runtime leaves the wait to the `error_policy`, and keeps no count of
//! its own; this one is bounded: a count goes when its object succeeds, and
//! any count whose last failure is older than [`FORGET_AFTER`] goes at the
//! next failure of any object. An object still failing has failed again
//! well before that (its longest wait is [`LONGEST`]), so what is forgotten
//! is an object deleted, or no longer looked at, while it was failing.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use kube::{Resource, ResourceExt};

/// The longest wait between two reconciles of a failing object.
pub const LONGEST: Duration = Duration::from_secs(300);
/// When a count is forgotten: twice the longest wait after its last failure.
pub const FORGET_AFTER: Duration = Duration::from_secs(600);

#[derive(Default)]
pub struct Backoff {
    /// Key → (failures in a row, when the last one was).
    failures: Mutex<HashMap<String, (u32, Instant)>>,
}

/// An object's key: kind, namespace, name and uid.
pub fn key<K: Resource<DynamicType = ()>>(object: &K) -> String {
    format!(
        "{}/{}/{}/{}",
        K::kind(&()),
        object.namespace().unwrap_or_default(),
        object.name_any(),
        object.uid().unwrap_or_default()
    )
}

impl Backoff {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (u32, Instant)>> {
        self.failures
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Counts a failure of `key` at `now`; how long to wait.
    pub fn failed(&self, key: String, now: Instant) -> Duration {
        let mut failures = self.lock();
        failures.retain(|_, (_, last)| now.saturating_duration_since(*last) < FORGET_AFTER);
        let (count, last) = failures.entry(key).or_insert((0, now));
        *count = (*count + 1).min(10);
        *last = now;
        Duration::from_secs(1 << (*count - 1)).min(LONGEST)
    }

    pub fn succeeded(&self, key: &str) {
        self.lock().remove(key);
    }

    /// How many objects have a count.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_up_to_five_minutes_and_start_again_after_a_success() {
        let backoff = Backoff::default();
        let now = Instant::now();
        let waits: Vec<u64> = (0..11)
            .map(|_| backoff.failed("App/shop/web/1".into(), now).as_secs())
            .collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300]);
        assert_eq!(
            backoff.failed("App/shop/api/2".into(), now),
            Duration::from_secs(1),
            "each object has its own count"
        );
        backoff.succeeded("App/shop/web/1");
        assert_eq!(
            backoff.failed("App/shop/web/1".into(), now),
            Duration::from_secs(1)
        );
    }

    #[test]
    fn counts_of_objects_that_stopped_failing_are_forgotten() {
        let backoff = Backoff::default();
        let start = Instant::now();
        for n in 0..100 {
            backoff.failed(format!("App/shop/deleted-{n}/uid"), start);
        }
        assert_eq!(backoff.len(), 100);
        // One that still fails, at its longest wait, is kept; the deleted
        // ones (no failure since) are gone.
        let later = start + LONGEST;
        backoff.failed("App/shop/failing/uid".into(), later);
        let much_later = start + FORGET_AFTER;
        backoff.failed("App/shop/failing/uid".into(), much_later);
        assert_eq!(backoff.len(), 1);
        assert_eq!(
            backoff.failed("App/shop/failing/uid".into(), much_later),
            Duration::from_secs(4)
        );
    }
}
