//! Login throttling (DESIGN §2): per email, 5 failures within 15 minutes; per
//! client IP, 50. Once a subject reaches its limit every login for it answers
//! 429 until its window ends, even with the right password. A window starts at
//! the subject's first failure; the counter items expire through TTL.

use aws_sdk_dynamodb::types::AttributeValue;
use serde::Deserialize;

use crate::store::{self, Item, Store, keys};
use crate::{ApiError, clock};

pub const WINDOW_SECS: i64 = 15 * 60;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subject {
    Email,
    Ip,
}

impl Subject {
    pub fn limit(self) -> u64 {
        match self {
            Subject::Email => 5,
            Subject::Ip => 50,
        }
    }

    fn kind(self) -> &'static str {
        match self {
            Subject::Email => "EMAIL",
            Subject::Ip => "IP",
        }
    }

    pub fn pk(self, subject: &str) -> String {
        keys::throttle(self.kind(), subject)
    }
}

#[derive(Debug, Deserialize)]
pub struct Counter {
    pub window_start: i64,
    pub failures: u64,
}

impl Counter {
    /// Seconds until the window ends, when the limit has been reached.
    pub fn blocked_for(&self, subject: Subject, now: i64) -> Option<u64> {
        let ends = self.window_start + WINDOW_SECS;
        (self.failures >= subject.limit() && now < ends).then(|| (ends - now).unsigned_abs())
    }
}

pub fn key(subject: Subject, value: &str) -> Item {
    store::key(subject.pk(value), keys::THROTTLE_SK)
}

/// Counts one failure against a subject.
pub async fn record_failure(store: &Store, subject: Subject, value: &str) -> Result<(), ApiError> {
    let now = clock::unix_seconds();
    let cutoff = now - WINDOW_SECS;
    for _ in 0..3 {
        let bumped = store
            .client()
            .update_item()
            .table_name(store.table())
            .set_key(Some(key(subject, value)))
            .update_expression("ADD failures :one")
            .condition_expression("window_start > :cutoff")
            .expression_attribute_values(":one", store::n(1))
            .expression_attribute_values(":cutoff", store::n(cutoff))
            .send()
            .await;
        match bumped {
            Ok(_) => return Ok(()),
            Err(e) if store::is_condition_failure(&e) => {}
            Err(e) => return Err(e.into()),
        }
        // No window, or an ended one: start a new window with this failure.
        let mut item: Item = key(subject, value);
        item.insert("window_start".into(), store::n(now));
        item.insert("failures".into(), store::n(1));
        item.insert(keys::TTL.into(), store::n(now + WINDOW_SECS));
        let started = store
            .client()
            .put_item()
            .table_name(store.table())
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(pk) OR window_start <= :cutoff")
            .expression_attribute_values(":cutoff", AttributeValue::N(cutoff.to_string()))
            .send()
            .await;
        match started {
            Ok(_) => return Ok(()),
            // Another failure started the window meanwhile: count into it.
            Err(e) if store::is_condition_failure(&e) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Err(ApiError::StorageUnavailable(
        "throttle counter kept changing".into(),
    ))
}

/// Forgets a subject's failures (after a successful login).
pub async fn clear(store: &Store, subject: Subject, value: &str) -> Result<(), ApiError> {
    store.delete(key(subject, value)).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_at_the_limit_until_the_window_ends() {
        let counter = Counter {
            window_start: 1_000,
            failures: 5,
        };
        assert_eq!(counter.blocked_for(Subject::Email, 1_000), Some(900));
        assert_eq!(counter.blocked_for(Subject::Email, 1_899), Some(1));
        assert_eq!(counter.blocked_for(Subject::Email, 1_900), None);
        assert_eq!(counter.blocked_for(Subject::Ip, 1_000), None);
        let counter = Counter {
            window_start: 1_000,
            failures: 4,
        };
        assert_eq!(counter.blocked_for(Subject::Email, 1_000), None);
    }
}
