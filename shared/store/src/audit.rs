//! The audit log: one event for every call, kept per organization.
//!
//! Each organization has a counter item beside its events. A writer takes the
//! next `seq` with one atomic increment (no optimistic retries, so concurrent
//! writers never collide), then stores the event under it: two round trips,
//! and throughput grows with the number of writers.
//!
//! Between those two steps a later `seq` may be stored before an earlier one.
//! Readers therefore show an event only once every earlier `seq` is stored or
//! can no longer arrive: a writer gives up on a `seq` [`SETTLED_AFTER`] after
//! taking it, logging the event as an `audit_fallback` line instead (see
//! [`replay`]). So paging newest-first never skips or repeats an event, even
//! while others are written.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use aws_sdk_dynamodb::types::ReturnValue;
use serde::{Deserialize, Serialize};

use crate as store;
use crate::StoreError;
use crate::{Store, keys};
use berth_domain::clock;
use berth_records::audit::{ActorKind, AuditEvent, AuditFilter, AuditPage, Outcome, PageRequest};

pub use berth_records::audit::{DEFAULT_PAGE, MAX_PAGE};

/// The most events a filtered page reads (matched or not) before it
/// answers with what it found and a `next_before` to go on from: about
/// 300 bytes each, some 600 KB, 150 read units (strongly consistent), in
/// a few queries of at most [`FILTER_BATCH`]. It bounds the time and cost
/// of a filter that matches little of a long log; the caller pages on.
pub const FILTER_READ_BUDGET: usize = 2000;
/// The events one query of a filtered page asks for.
const FILTER_BATCH: usize = 500;

/// What storing one event costs: take the `seq`, store the event.
pub const ROUND_TRIPS_PER_EVENT: usize = 2;

/// One round trip that changes nothing (a batch read of the system
/// partition's counter): what makes up, round trip for round trip, an
/// event that is not stored, where one might have been.
pub async fn padding_read(store: &Store) -> Result<(), StoreError> {
    let counter = store::key(keys::audit(keys::SYSTEM_ORG), keys::AUDIT_COUNTER_SK);
    store.get_many(vec![counter]).await.map(drop)
}
/// How long each of a writer's two steps may take, retries included.
const STEP_BUDGET: Duration = Duration::from_secs(2);
/// After this long (both steps' budgets, plus slack for clocks that differ
/// between instances), a `seq` that was taken but not stored never will be.
pub const SETTLED_AFTER: Duration = Duration::from_secs(6);
/// The marker that starts the log line of an event that could not be stored.
pub const FALLBACK_MARKER: &str = "audit_fallback";
/// Where the number of events logged instead of stored is kept, for the
/// health report (the item the DynamoDB health check reads anyway).
pub const FALLBACK_COUNT: &str = "audit_fallbacks";

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
    /// The project the call's path names.
    pub project: Option<String>,
    /// What the call asked for beyond its target (`AuditEvent::detail`).
    pub detail: Option<String>,
}

#[derive(Serialize, Deserialize)]
struct EventItem {
    pk: String,
    sk: String,
    /// The project's partition of index `gsi1`, for an event concerning a
    /// project: its admins' page is one query of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    gsi1pk: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    gsi1sk: Option<String>,
    #[serde(flatten)]
    event: AuditEvent,
}

/// How long an event may take to reach index `gsi1` after it is stored
/// (DynamoDB propagates to global secondary indexes asynchronously,
/// usually within a second).
const INDEX_LAG: Duration = Duration::from_secs(2);

/// An event that could not be stored: everything needed to store it later.
#[derive(Debug, Serialize, Deserialize)]
pub struct FallbackEvent {
    pub org: String,
    /// `None` when not even a `seq` could be taken; replaying takes one.
    pub seq: Option<u64>,
    pub event: AuditEvent,
}

/// What became of a call's event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recorded {
    Stored {
        seq: u64,
    },
    /// Logged as this `audit_fallback` line, to be replayed.
    LoggedForReplay(String),
}

/// The audit log of this process.
#[derive(Debug)]
pub struct AuditLog {
    store: Store,
    fallbacks: AtomicU64,
}

impl AuditLog {
    pub fn new(store: Store) -> Self {
        Self {
            store,
            fallbacks: AtomicU64::new(0),
        }
    }

    /// Events this instance logged instead of storing.
    pub fn fallbacks(&self) -> u64 {
        self.fallbacks.load(Ordering::Relaxed)
    }

    /// Appends one event to an organization's log. An event that cannot be
    /// stored within the budget is logged whole, never dropped.
    pub async fn record(&self, org: &str, call: &Call) -> Recorded {
        let seq = match within_budget(self.take_seq(org)).await {
            Ok(seq) => seq,
            Err(error) => return self.fall_back(org, None, event_of(call, 0), &error).await,
        };
        // Stamped after the seq was taken: a reader ages a missing seq by the
        // time of the event stored after it (see `page`).
        let event = event_of(call, seq);
        let mut pause = Duration::from_millis(20);
        let give_up = tokio::time::Instant::now() + STEP_BUDGET;
        loop {
            let error = match within_budget(self.store_event(org, &event)).await {
                Ok(_) => return Recorded::Stored { seq },
                Err(error) => error,
            };
            if tokio::time::Instant::now() + pause >= give_up {
                return self.fall_back(org, Some(seq), event, &error).await;
            }
            tokio::time::sleep(pause).await;
            pause *= 2;
        }
    }

    async fn take_seq(&self, org: &str) -> Result<u64, StoreError> {
        let updated = self
            .store
            .client()
            .update_item()
            .table_name(self.store.table())
            .set_key(Some(store::key(keys::audit(org), keys::AUDIT_COUNTER_SK)))
            .update_expression("ADD seq :one")
            .expression_attribute_values(":one", store::n(1))
            .return_values(ReturnValue::UpdatedNew)
            .send()
            .await?;
        updated
            .attributes
            .as_ref()
            .and_then(|item| item.get("seq"))
            .and_then(|seq| seq.as_n().ok())
            .and_then(|seq| seq.parse().ok())
            .ok_or_else(|| StoreError::Broken(format!("the audit counter of {org} has no seq")))
    }

    /// Stores an event under its `seq`; `false` if that `seq` was already
    /// stored (by an earlier attempt whose answer was lost, or a replay).
    async fn store_event(&self, org: &str, event: &AuditEvent) -> Result<bool, StoreError> {
        let sk = keys::audit_event_sk(event.seq);
        let item = EventItem {
            pk: keys::audit(org),
            gsi1pk: (event.project.as_deref()).map(|project| keys::audit_of_project(org, project)),
            gsi1sk: event.project.as_ref().map(|_| sk.clone()),
            sk,
            event: event.clone(),
        };
        let put = self
            .store
            .client()
            .put_item()
            .table_name(self.store.table())
            .set_item(Some(store::to_item(&item)?))
            .condition_expression("attribute_not_exists(pk)")
            .send()
            .await;
        store::written(put)
    }

    async fn fall_back(
        &self,
        org: &str,
        seq: Option<u64>,
        event: AuditEvent,
        error: &StoreError,
    ) -> Recorded {
        let fallback = FallbackEvent {
            org: org.to_owned(),
            seq,
            event,
        };
        let json = serde_json::to_string(&fallback).unwrap_or_default();
        let line = format!("{FALLBACK_MARKER} {json}");
        tracing::error!(cause = %error, "an audit event could not be stored: logged for replay");
        // The line alone, so that its JSON ends the line whatever the format.
        tracing::error!("{line}");
        self.fallbacks.fetch_add(1, Ordering::Relaxed);
        // Best effort: the store just failed, so this may fail too; the
        // log line above is what counts.
        let counted = tokio::time::timeout(STEP_BUDGET, self.count_fallbacks(1)).await;
        if !matches!(counted, Ok(Ok(()))) {
            tracing::warn!("the audit fallback could not be counted for the health report");
        }
        Recorded::LoggedForReplay(line)
    }

    async fn count_fallbacks(&self, by: i64) -> Result<(), StoreError> {
        self.store
            .client()
            .update_item()
            .table_name(self.store.table())
            .set_key(Some(store::key(keys::HEALTH.into(), keys::HEALTH)))
            .update_expression("ADD #count :by")
            .expression_attribute_names("#count", FALLBACK_COUNT)
            .expression_attribute_values(":by", store::n(by))
            .send()
            .await?;
        Ok(())
    }

    /// Stores the events of `audit_fallback` lines found in `log` (other lines
    /// are ignored); returns how many were stored. Replaying twice stores
    /// nothing twice: an event keeps its `seq`, and one logged without a `seq`
    /// is recognized by its id.
    pub async fn replay(&self, log: &str) -> Result<usize, StoreError> {
        let mut stored = 0;
        for fallback in log.lines().filter_map(parse_fallback_line) {
            let FallbackEvent {
                org,
                seq,
                mut event,
            } = fallback;
            event.seq = match seq {
                Some(seq) => seq,
                None if self.holds_event_id(&org, &event.id).await? => continue,
                None => self.take_seq(&org).await?,
            };
            if self.store_event(&org, &event).await? {
                stored += 1;
            }
        }
        if stored > 0 {
            self.count_fallbacks(-(stored as i64)).await?;
        }
        Ok(stored)
    }

    async fn holds_event_id(&self, org: &str, id: &str) -> Result<bool, StoreError> {
        let query = self
            .store
            .client()
            .query()
            .table_name(self.store.table())
            .key_condition_expression("pk = :pk AND begins_with(sk, :events)")
            .filter_expression("id = :id")
            .expression_attribute_values(":pk", store::s(keys::audit(org)))
            .expression_attribute_values(":events", store::s(keys::AUDIT_EVENT_SK_PREFIX))
            .expression_attribute_values(":id", store::s(id));
        Ok(!store::query_all(query).await?.is_empty())
    }

    /// A page of an organization's events, newest first, older than `before`.
    pub async fn page(
        &self,
        org: &str,
        limit: u32,
        before: Option<u64>,
    ) -> Result<AuditPage, StoreError> {
        self.filtered_page(org, limit, before, &AuditFilter::default())
            .await
    }

    /// A page of an organization's events that `filter` matches, newest
    /// first, older than `before`.
    ///
    /// Events above a `seq` that is taken but not yet stored are held back
    /// until it is stored or settled, so that a reader paging down from here
    /// cannot pass it by.
    ///
    /// A filter is applied to the events as they are read, not by DynamoDB:
    /// a filter expression would cost the same (DynamoDB bills the items a
    /// query reads, before filtering) and would hide the gaps in `seq` that
    /// the holding back above needs to see. Reading stops at
    /// [`FILTER_READ_BUDGET`] events; a page cut there may hold fewer than
    /// `limit` events (or none) with `next_before` set to below the last
    /// event read, so paging on goes on from there, skipping nothing.
    pub async fn filtered_page(
        &self,
        org: &str,
        limit: u32,
        before: Option<u64>,
        filter: &AuditFilter,
    ) -> Result<AuditPage, StoreError> {
        let limit = limit.clamp(1, MAX_PAGE) as usize;
        let Some(query) = self.newest_first(None, keys::audit(org), before) else {
            return Ok(AuditPage::empty());
        };
        let query = query.consistent_read(true);
        let settled_before = settled_before(SETTLED_AFTER);
        let mut shown = PageBuilder::new(limit, settled_before, filter);
        let mut start = None;
        loop {
            let page = query
                .clone()
                .limit(i32::try_from(shown.wanted()).unwrap_or(i32::MAX))
                .set_exclusive_start_key(start)
                .send()
                .await?;
            for item in page.items.unwrap_or_default() {
                shown.push(store::from_item::<EventItem>(item)?.event);
            }
            start = page.last_evaluated_key;
            if start.is_none() {
                shown.reached_the_oldest();
                break;
            }
            if shown.is_complete() {
                break;
            }
            if shown.spent_its_budget() {
                shown.cut_at_the_last_read();
                break;
            }
        }
        Ok(shown.finish())
    }

    /// A page of the events concerning one project (by name) since it was
    /// made (`since`, Unix milliseconds: events of an earlier project of
    /// the name are older), newest first, older than `before`: one query of
    /// the project's partition of index `gsi1`, whatever the rest of the
    /// organization's log holds.
    ///
    /// The index cannot show a `seq` that is taken but not yet stored (the
    /// organization's page holds back what is above one), so events are
    /// shown once they can no longer be passed by: [`SETTLED_AFTER`] and
    /// [`INDEX_LAG`] after they happened.
    ///
    /// `filter` is applied as the organization's page applies it (see
    /// [`AuditLog::filtered_page`]), with the same read budget.
    pub async fn project_page(
        &self,
        org: &str,
        project: &str,
        since: i64,
        request: &PageRequest,
    ) -> Result<AuditPage, StoreError> {
        let (limit, before, filter) = (request.limit, request.before, &request.filter);
        let limit = limit.clamp(1, MAX_PAGE) as usize;
        let partition = keys::audit_of_project(org, project);
        let Some(query) = self.newest_first(Some(keys::GSI1), partition, before) else {
            return Ok(AuditPage::empty());
        };
        let settled_before = settled_before(SETTLED_AFTER + INDEX_LAG);
        let mut events = Vec::with_capacity(limit + 1);
        let mut start = None;
        // With a filter: the `seq` below which reading stopped, its budget spent.
        let mut cut_at = None;
        let mut read = 0;
        'reading: loop {
            let batch = if filter.is_set() {
                FILTER_READ_BUDGET
                    .saturating_sub(read)
                    .clamp(1, FILTER_BATCH)
            } else {
                limit + 1
            };
            let page = query
                .clone()
                .limit(i32::try_from(batch).unwrap_or(i32::MAX))
                .set_exclusive_start_key(start)
                .send()
                .await?;
            for item in page.items.unwrap_or_default() {
                let event = store::from_item::<EventItem>(item)?.event;
                if event.at < since {
                    break 'reading;
                }
                read += 1;
                let seq = event.seq;
                if event.at < settled_before && filter.matches(&event) {
                    events.push(event);
                }
                if events.len() > limit {
                    break 'reading;
                }
                if filter.is_set() && read >= FILTER_READ_BUDGET {
                    cut_at = Some(seq);
                    break 'reading;
                }
            }
            start = page.last_evaluated_key;
            if start.is_none() {
                break;
            }
        }
        let next_before = if events.len() > limit {
            Some(events[limit - 1].seq)
        } else {
            // Below the last event read: no older event is passed by. At
            // `seq` 1 there is nothing older.
            cut_at.filter(|seq| *seq > 1)
        };
        events.truncate(limit);
        Ok(AuditPage {
            events,
            next_before,
        })
    }
}

impl AuditLog {
    /// A query of one partition of events, newest first, older than
    /// `before`: the table's (keyed `pk`, `sk`) or index `gsi1`'s (keyed
    /// `gsi1pk`, `gsi1sk`); none when no event can be older.
    fn newest_first(
        &self,
        index: Option<&str>,
        partition: String,
        before: Option<u64>,
    ) -> Option<aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder> {
        let query = self
            .store
            .client()
            .query()
            .table_name(self.store.table())
            .set_index_name(index.map(str::to_owned))
            .expression_attribute_values(":pk", store::s(partition))
            .scan_index_forward(false);
        let keys = match index {
            Some(_) => ("gsi1pk", "gsi1sk"),
            None => ("pk", "sk"),
        };
        older_than(query, keys, before)
    }
}

/// The time (Unix milliseconds) before which events are settled, `after`
/// they happened: no event can still arrive among them.
fn settled_before(after: std::time::Duration) -> i64 {
    clock::unix_millis() - i64::try_from(after.as_millis()).unwrap_or(i64::MAX)
}

/// Narrows a query of a partition of events (keyed `keys`, `:pk` given) to
/// those older than `before`; none when no event can be (`before` 0 or 1).
fn older_than(
    query: aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder,
    (pk, sk): (&str, &str),
    before: Option<u64>,
) -> Option<aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder> {
    let query = query.expression_attribute_values(":lowest", store::s(keys::AUDIT_EVENT_SK_PREFIX));
    match before {
        Some(0 | 1) => None,
        Some(before) => Some(
            query
                .key_condition_expression(format!(
                    "{pk} = :pk AND {sk} BETWEEN :lowest AND :highest"
                ))
                .expression_attribute_values(
                    ":highest",
                    store::s(keys::audit_event_sk(before - 1)),
                ),
        ),
        None => Some(
            query.key_condition_expression(format!("{pk} = :pk AND begins_with({sk}, :lowest)")),
        ),
    }
}

/// Collects a page from events read newest first, keeping those its filter
/// matches and dropping those above a missing `seq` that may still be stored.
struct PageBuilder<'f> {
    limit: usize,
    settled_before: i64,
    filter: &'f AuditFilter,
    events: Vec<AuditEvent>,
    /// The `seq` and time of the last event read, matched or not: gaps are
    /// in the log, not in the page.
    last_read: Option<(u64, i64)>,
    /// How many events were read.
    read: usize,
    /// Where reading stopped, its budget spent, short of a full page: the
    /// next page starts below this `seq`.
    cut_at: Option<u64>,
    /// Whether an event old enough that no missing `seq` below it can still
    /// arrive has been read.
    settled: bool,
}

impl<'f> PageBuilder<'f> {
    fn new(limit: usize, settled_before: i64, filter: &'f AuditFilter) -> Self {
        Self {
            limit,
            settled_before,
            filter,
            events: Vec::with_capacity(limit + 1),
            last_read: None,
            read: 0,
            cut_at: None,
            settled: false,
        }
    }

    /// How many events the next read should ask for: one more than the page
    /// tells whether an older page exists; while recent events are read, a
    /// larger batch finds the settled ones sooner. With a filter, larger
    /// batches still (few of those read may match), within the budget.
    fn wanted(&self) -> usize {
        if self.filter.is_set() {
            // Past the budget a read goes on only until settled: in full
            // batches still.
            return match FILTER_READ_BUDGET.saturating_sub(self.read) {
                0 => FILTER_BATCH,
                left => left.min(FILTER_BATCH),
            };
        }
        let missing = (self.limit + 1).saturating_sub(self.events.len());
        if self.settled {
            missing.max(1)
        } else {
            missing.max(100)
        }
    }

    fn push(&mut self, event: AuditEvent) {
        if let Some((newer_seq, newer_at)) = self.last_read
            && newer_seq > event.seq + 1
        {
            self.skip_to_a_gap(newer_at);
        }
        if event.at < self.settled_before {
            self.settled = true;
        }
        self.read += 1;
        self.last_read = Some((event.seq, event.at));
        if self.filter.matches(&event) {
            self.events.push(event);
        }
    }

    /// Between the last event read and the next one, `seq`s are missing. If
    /// the event above the gap is recent, one of them may still arrive, so
    /// nothing above the gap may be shown yet.
    fn skip_to_a_gap(&mut self, newer_at: i64) {
        if !self.settled && newer_at >= self.settled_before {
            self.events.clear();
        }
    }

    fn reached_the_oldest(&mut self) {
        if let Some((oldest_seq, oldest_at)) = self.last_read
            && oldest_seq > 1
        {
            self.skip_to_a_gap(oldest_at);
        }
    }

    fn is_complete(&self) -> bool {
        self.settled && self.events.len() > self.limit
    }

    /// Whether a filtered read has read what it may. Only once settled:
    /// what is above an unsettled gap must not be shown, so reading goes on
    /// until it is (as an unfiltered read does).
    fn spent_its_budget(&self) -> bool {
        self.filter.is_set() && self.settled && self.read >= FILTER_READ_BUDGET
    }

    /// Ends the page at the last event read: the next one starts below it.
    fn cut_at_the_last_read(&mut self) {
        self.cut_at = self.last_read.map(|(seq, _)| seq).filter(|seq| *seq > 1);
    }

    fn finish(mut self) -> AuditPage {
        let next_before = if self.events.len() > self.limit {
            Some(self.events[self.limit - 1].seq)
        } else {
            self.cut_at
        };
        self.events.truncate(self.limit);
        AuditPage {
            events: self.events,
            next_before,
        }
    }
}

fn event_of(call: &Call, seq: u64) -> AuditEvent {
    AuditEvent {
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
        project: call.project.clone(),
        detail: call.detail.clone(),
    }
}

async fn within_budget<T>(
    step: impl std::future::Future<Output = Result<T, StoreError>>,
) -> Result<T, StoreError> {
    tokio::time::timeout(STEP_BUDGET, step)
        .await
        .unwrap_or_else(|_| Err(StoreError::Unavailable("the audit write timed out".into())))
}

/// The event of one `audit_fallback` line, as `tracing` wrote it: plain text
/// (the marker, then JSON) or a JSON log record whose message is that text.
pub fn parse_fallback_line(line: &str) -> Option<FallbackEvent> {
    let message = serde_json::from_str::<serde_json::Value>(line)
        .ok()
        .and_then(|record| {
            record
                .get("message")
                .or_else(|| record.get("fields").and_then(|f| f.get("message")))
                .and_then(|m| m.as_str())
                .map(str::to_owned)
        })
        .unwrap_or_else(|| line.to_owned());
    let json = &message[message.find(FALLBACK_MARKER)? + FALLBACK_MARKER.len()..];
    serde_json::from_str(json.trim()).ok()
}

/// How many audit events wait in the logs for replay (`berth-admin audit
/// replay`), read consistently: the health report's check of DynamoDB and
/// of the audit log, in one read.
pub async fn waiting_for_replay(store: &Store) -> Result<i64, StoreError> {
    let item = store
        .get(store::key(keys::HEALTH.into(), keys::HEALTH))
        .await?;
    Ok(item
        .as_ref()
        .and_then(|item| item.get(FALLBACK_COUNT))
        .and_then(|count| count.as_n().ok())
        .and_then(|count| count.parse::<i64>().ok())
        .unwrap_or(0))
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

    /// Log lines name outcomes and actor kinds as the audit log stores them.
    #[test]
    fn logged_names_are_the_stored_names() {
        use Outcome::*;
        for outcome in [Success, Denied, Failure, Throttled, Error] {
            assert_eq!(serde_json::json!(outcome), outcome.as_str());
        }
        for kind in [
            ActorKind::Session,
            ActorKind::Token,
            ActorKind::User,
            ActorKind::Anonymous,
            ActorKind::Webhook,
            ActorKind::Registry,
        ] {
            assert_eq!(serde_json::json!(kind), kind.as_str());
        }
    }
}
