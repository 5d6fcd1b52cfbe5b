//! The audit log (DESIGN §6): one event for every call, kept per organization.
//!
//! Each organization has a counter item beside its events. An event is written
//! in one transaction with the counter moving from `seq - 1` to `seq`, so
//! sequence numbers are dense, and an event is visible only once every earlier
//! one is: paging newest-first never skips or repeats one, even while others
//! are written. Each instance remembers the last `seq` it saw per organization,
//! so a write usually costs one round trip; a stale guess costs one more (the
//! refused transaction returns the counter's current value).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use aws_sdk_dynamodb::types::{Put, ReturnValuesOnConditionCheckFailure, Update};
use serde::{Deserialize, Serialize};

use crate::store::{self, Store, keys};
use crate::{ApiError, clock};

pub const MAX_PAGE: u32 = 200;
pub const DEFAULT_PAGE: u32 = 50;
const MAX_WRITE_ATTEMPTS: usize = 40;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ActorKind {
    Session,
    Token,
    User,
    Anonymous,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Success,
    Denied,
    Failure,
    Throttled,
    Error,
}

impl Outcome {
    pub fn of_status(status: u16) -> Self {
        match status {
            200..=399 => Outcome::Success,
            401 | 403 => Outcome::Denied,
            429 => Outcome::Throttled,
            400..=499 => Outcome::Failure,
            _ => Outcome::Error,
        }
    }
}

/// What is known about a call when it is recorded.
#[derive(Debug, Clone)]
pub struct Call {
    pub actor_kind: ActorKind,
    pub actor: Option<String>,
    pub action: &'static str,
    pub target_kind: Option<String>,
    pub target: Option<String>,
    pub status: u16,
    pub ip: Option<String>,
    pub request_id: String,
}

/// An audit event as the API returns it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditEvent {
    pub seq: u64,
    pub id: String,
    pub at: i64,
    pub actor_kind: ActorKind,
    pub actor: Option<String>,
    pub action: String,
    pub target_kind: Option<String>,
    pub target: Option<String>,
    pub outcome: Outcome,
    pub status: Option<u16>,
    pub ip: Option<String>,
    pub request_id: Option<String>,
}

#[derive(Serialize, Deserialize)]
struct EventItem {
    pk: String,
    sk: String,
    #[serde(flatten)]
    event: AuditEvent,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct AuditPage {
    pub events: Vec<AuditEvent>,
    pub next_before: Option<u64>,
}

/// The audit log of this process: the store and the last `seq` seen per organization.
#[derive(Debug)]
pub struct AuditLog {
    store: Store,
    last_seq: Mutex<HashMap<String, u64>>,
}

impl AuditLog {
    pub fn new(store: Store) -> Self {
        Self {
            store,
            last_seq: Mutex::new(HashMap::new()),
        }
    }

    fn remembered(&self, org: &str) -> u64 {
        self.last_seq
            .lock()
            .map(|seen| seen.get(org).copied().unwrap_or(0))
            .unwrap_or(0)
    }

    fn remember(&self, org: &str, seq: u64) {
        if let Ok(mut seen) = self.last_seq.lock() {
            let entry = seen.entry(org.to_owned()).or_insert(0);
            *entry = (*entry).max(seq);
        }
    }

    /// Appends one event to an organization's log; returns its `seq`.
    pub async fn record(&self, org: &str, call: &Call) -> Result<u64, ApiError> {
        let table = self.store.table();
        for attempt in 0..MAX_WRITE_ATTEMPTS {
            let previous = self.remembered(org);
            let seq = previous + 1;
            let event = AuditEvent {
                seq,
                id: uuid::Uuid::now_v7().to_string(),
                at: clock::unix_millis(),
                actor_kind: call.actor_kind,
                actor: call.actor.clone(),
                action: call.action.to_owned(),
                target_kind: call.target_kind.clone(),
                target: call.target.clone(),
                outcome: Outcome::of_status(call.status),
                status: Some(call.status),
                ip: call.ip.clone(),
                request_id: Some(call.request_id.clone()),
            };
            let item = EventItem {
                pk: keys::audit(org),
                sk: keys::audit_event_sk(seq),
                event,
            };
            let counter = Update::builder()
                .table_name(table)
                .set_key(Some(store::key(keys::audit(org), keys::AUDIT_COUNTER_SK)))
                .update_expression("SET seq = :seq")
                .expression_attribute_values(":seq", store::n(seq))
                .return_values_on_condition_check_failure(
                    ReturnValuesOnConditionCheckFailure::AllOld,
                );
            let counter = if previous == 0 {
                counter.condition_expression("attribute_not_exists(seq)")
            } else {
                counter
                    .condition_expression("seq = :previous")
                    .expression_attribute_values(":previous", store::n(previous))
            };
            let writes = vec![
                store::tx_update(counter)?,
                store::tx_put(
                    Put::builder()
                        .table_name(table)
                        .set_item(Some(store::to_item(&item)?))
                        .condition_expression("attribute_not_exists(pk)"),
                )?,
            ];
            let written = self.store.transact(writes).await;
            let error = match written {
                Ok(_) => {
                    self.remember(org, seq);
                    return Ok(seq);
                }
                Err(error) => error,
            };
            let Some(reasons) = store::cancellation_reasons(&error) else {
                return Err(error.into());
            };
            // The counter moved on: it tells us where to, and we try after it.
            if let Some(current) = reasons
                .first()
                .and_then(|reason| reason.item())
                .and_then(|item| item.get("seq"))
                .and_then(|seq| seq.as_n().ok())
                .and_then(|seq| seq.parse::<u64>().ok())
            {
                self.remember(org, current);
            } else if reasons
                .iter()
                .any(|r| r.code() == Some("TransactionConflict"))
            {
                let jitter = rand::random_range(1..=10u64) * (1 + attempt as u64).min(10);
                tokio::time::sleep(Duration::from_millis(jitter)).await;
            }
        }
        Err(ApiError::StorageUnavailable(format!(
            "audit counter of {org} kept changing"
        )))
    }

    /// A page of an organization's events, newest first, older than `before`.
    pub async fn page(
        &self,
        org: &str,
        limit: u32,
        before: Option<u64>,
    ) -> Result<AuditPage, ApiError> {
        let limit = limit.clamp(1, MAX_PAGE) as usize;
        let query = self
            .store
            .client()
            .query()
            .table_name(self.store.table())
            .expression_attribute_values(":pk", store::s(keys::audit(org)))
            .scan_index_forward(false)
            .consistent_read(true);
        let query = match before {
            Some(0 | 1) => {
                return Ok(AuditPage {
                    events: Vec::new(),
                    next_before: None,
                });
            }
            Some(before) => query
                .key_condition_expression("pk = :pk AND sk BETWEEN :lowest AND :highest")
                .expression_attribute_values(":lowest", store::s(keys::AUDIT_EVENT_SK_PREFIX))
                .expression_attribute_values(
                    ":highest",
                    store::s(keys::audit_event_sk(before - 1)),
                ),
            None => query
                .key_condition_expression("pk = :pk AND begins_with(sk, :events)")
                .expression_attribute_values(":events", store::s(keys::AUDIT_EVENT_SK_PREFIX)),
        };
        // One more than asked for tells whether an older page exists.
        let mut events = Vec::with_capacity(limit + 1);
        let mut start = None;
        loop {
            let wanted = i32::try_from(limit + 1 - events.len()).unwrap_or(i32::MAX);
            let page = query
                .clone()
                .limit(wanted)
                .set_exclusive_start_key(start)
                .send()
                .await?;
            for item in page.items.unwrap_or_default() {
                events.push(store::from_item::<EventItem>(item)?.event);
            }
            start = page.last_evaluated_key;
            if start.is_none() || events.len() > limit {
                break;
            }
        }
        let next_before = (events.len() > limit).then(|| events[limit - 1].seq);
        events.truncate(limit);
        Ok(AuditPage {
            events,
            next_before,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_follow_the_status() {
        assert_eq!(Outcome::of_status(200), Outcome::Success);
        assert_eq!(Outcome::of_status(204), Outcome::Success);
        assert_eq!(Outcome::of_status(401), Outcome::Denied);
        assert_eq!(Outcome::of_status(403), Outcome::Denied);
        assert_eq!(Outcome::of_status(429), Outcome::Throttled);
        assert_eq!(Outcome::of_status(404), Outcome::Failure);
        assert_eq!(Outcome::of_status(422), Outcome::Failure);
        assert_eq!(Outcome::of_status(500), Outcome::Error);
        assert_eq!(Outcome::of_status(503), Outcome::Error);
    }
}
