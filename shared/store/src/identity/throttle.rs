//! Login throttling: per email, 5 failed logins within 15 minutes;
//! per client IP, 50. Once a subject reaches its limit every login for it
//! answers 429 until its oldest counted attempt leaves the window, even with
//! the right password.
//!
//! The registry's token service counts its failures the same way, under
//! subjects of its own (issue 46, part 6): per source address
//! ([`Subject::RegistrySource`], 100; over it, 429 without a cluster read)
//! and per registry user name ([`Subject::RegistryUser`], 10; over it, a
//! failure's audit event goes to the system partition instead of the
//! organization's, and a correct password still works). It checks first
//! and counts a failure after ([`count_failure`]): a grant, the hot path of
//! every pod start, then costs one read ([`read_many`]) and no write.
//!
//! An attempt is counted *before* its password is verified, by one
//! conditional write that refuses once the limit is reached: however many
//! guesses arrive at once, at most `limit` of them are verified per window.
//! (Reading the counters, verifying and then counting the failure let every
//! guess of a parallel burst through.)
//!
//! A subject's item holds one slot per allowed attempt, `a0` … `a{limit-1}`,
//! each the time of the attempt that took it. A slot is free when it is empty
//! or older than the window, so the window slides: 4 failures at the end of
//! one quarter hour and 4 at the start of the next are 8 within 15 minutes.
//! Taking a slot is a write conditioned on it still being free; of two
//! attempts racing for one slot, the loser learns the item as it is now and
//! tries another free slot. An attempt whose password turns out right gives
//! its slots back, so only failures stay counted.

use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::ReturnValuesOnConditionCheckFailure;
use rand::seq::IndexedRandom;

use crate as store;
use crate::StoreError;
use crate::{Item, Store, keys};
use berth_domain::clock;

pub const WINDOW_SECS: i64 = 15 * 60;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subject {
    Email,
    Ip,
    /// A source address (its network, [`caller_network`]) asking the
    /// registry's token service.
    RegistrySource,
    /// A registry credential's user name (`environment/{namespace}`, …).
    RegistryUser,
}

impl Subject {
    pub fn limit(self) -> usize {
        match self {
            Subject::Email => 5,
            Subject::Ip => 50,
            // A NAT in front of a cluster's nodes is one address for every
            // kubelet's pulls: room for many tenants' stale credentials.
            Subject::RegistrySource => 100,
            // Never refuses (a name is guessable): only how many of its
            // failures reach its organization's log per window.
            Subject::RegistryUser => 10,
        }
    }

    fn kind(self) -> &'static str {
        match self {
            Subject::Email => "EMAIL",
            Subject::Ip => "IP",
            Subject::RegistrySource => "REGISTRY-IP",
            Subject::RegistryUser => "REGISTRY-USER",
        }
    }

    pub fn pk(self, subject: &str) -> String {
        keys::throttle(self.kind(), subject)
    }
}

/// What the address throttle counts a caller by: an IPv4 address, or the /64
/// of an IPv6 one, because one subscriber usually holds a whole /64 and could
/// otherwise change address on every guess.
pub fn caller_network(ip: &str) -> String {
    match ip.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V6(v6)) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => {
                let network = u128::from(v6) & !((1u128 << 64) - 1);
                format!("{}/64", std::net::Ipv6Addr::from(network))
            }
        },
        Ok(std::net::IpAddr::V4(v4)) => v4.to_string(),
        Err(_) => ip.to_owned(),
    }
}

pub(crate) fn key(subject: Subject, value: &str) -> Item {
    store::key(subject.pk(value), keys::THROTTLE_SK)
}

fn slot_name(slot: usize) -> String {
    format!("a{slot}")
}

/// The recent attempts of one subject: the time in each of its slots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempts {
    slots: Vec<Option<i64>>,
}

impl Attempts {
    /// No attempt yet (no item).
    pub fn none(subject: Subject) -> Self {
        Self {
            slots: vec![None; subject.limit()],
        }
    }

    /// The slots of a subject's item; anything unreadable counts as empty.
    pub(crate) fn from_item(subject: Subject, item: &Item) -> Self {
        Self {
            slots: (0..subject.limit())
                .map(|slot| {
                    item.get(&slot_name(slot))
                        .and_then(|v| v.as_n().ok())
                        .and_then(|n| n.parse().ok())
                })
                .collect(),
        }
    }

    fn is_free(at: Option<i64>, now: i64) -> bool {
        at.is_none_or(|at| at <= now - WINDOW_SECS)
    }

    fn free_slots(&self, now: i64) -> Vec<usize> {
        (0..self.slots.len())
            .filter(|&slot| Self::is_free(self.slots[slot], now))
            .collect()
    }

    /// Seconds until a slot frees up, when every slot is taken.
    pub fn blocked_for(&self, now: i64) -> Option<u64> {
        if !self.free_slots(now).is_empty() {
            return None;
        }
        let oldest = self.slots.iter().flatten().min()?;
        Some((oldest + WINDOW_SECS - now).max(1).unsigned_abs())
    }
}

/// One counted attempt: the slot it took.
#[derive(Debug)]
#[must_use = "a reserved attempt stays counted unless it is released"]
pub struct Reserved {
    subject: Subject,
    value: String,
    slot: usize,
    at: i64,
}

/// Counts an attempt against a subject, or refuses it with
/// `too_many_requests` when the subject has reached its limit. `seen` is the
/// subject's item as last read (the login reads it with the account, in the
/// same round trip); a refused write brings the item as it is now.
pub async fn reserve(
    store: &Store,
    subject: Subject,
    value: &str,
    mut seen: Attempts,
) -> Result<Reserved, StoreError> {
    // Every refused write means another attempt took a slot meanwhile, so
    // after `limit` of them no slot is left and the answer is 429.
    for _ in 0..=subject.limit() {
        let now = clock::unix_seconds();
        let free = seen.free_slots(now);
        // A random free slot, so that racing attempts rarely pick the same one.
        let Some(&slot) = free.choose(&mut rand::rng()) else {
            return Err(StoreError::Throttled {
                retry_after_secs: seen.blocked_for(now).unwrap_or(1),
            });
        };
        let taken = store
            .client()
            .update_item()
            .table_name(store.table())
            .set_key(Some(key(subject, value)))
            .update_expression("SET #slot = :now, #ttl = :expires")
            .condition_expression("attribute_not_exists(#slot) OR #slot <= :cutoff")
            .expression_attribute_names("#slot", slot_name(slot))
            .expression_attribute_names("#ttl", keys::TTL)
            .expression_attribute_values(":now", store::n(now))
            .expression_attribute_values(":expires", store::n(now + WINDOW_SECS))
            .expression_attribute_values(":cutoff", store::n(now - WINDOW_SECS))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        let error = match taken {
            Ok(_) => {
                return Ok(Reserved {
                    subject,
                    value: value.to_owned(),
                    slot,
                    at: now,
                });
            }
            Err(error) => error,
        };
        seen = match error.as_service_error() {
            Some(UpdateItemError::ConditionalCheckFailedException(failed)) => match failed.item() {
                Some(item) => Attempts::from_item(subject, item),
                None => read(store, subject, value).await?,
            },
            _ => return Err(error.into()),
        };
    }
    Err(StoreError::Unavailable(
        "the login throttle kept changing".into(),
    ))
}

/// A subject's attempts, read consistently.
async fn read(store: &Store, subject: Subject, value: &str) -> Result<Attempts, StoreError> {
    let found = store.get(key(subject, value)).await?;
    Ok(found.map_or_else(
        || Attempts::none(subject),
        |item| Attempts::from_item(subject, &item),
    ))
}

/// The attempts of several subjects, in one round trip (a consistent
/// read), in the order asked.
pub async fn read_many(
    store: &Store,
    subjects: &[(Subject, &str)],
) -> Result<Vec<Attempts>, StoreError> {
    let items = store
        .get_many(
            subjects
                .iter()
                .map(|(subject, value)| key(*subject, value))
                .collect(),
        )
        .await?;
    Ok(subjects
        .iter()
        .map(|(subject, value)| {
            let pk = subject.pk(value);
            items
                .iter()
                .find(|item| item.get(keys::PK).and_then(|v| v.as_s().ok()) == Some(&pk))
                .map_or_else(
                    || Attempts::none(*subject),
                    |item| Attempts::from_item(*subject, item),
                )
        })
        .collect())
}

/// Counts a failure that has happened (the registry's: checked first,
/// counted after, so that a grant writes nothing). `false` when the
/// subject was at its limit already: the failure is not counted, and the
/// caller knows the subject is over.
pub async fn count_failure(
    store: &Store,
    subject: Subject,
    value: &str,
    seen: Attempts,
) -> Result<bool, StoreError> {
    match reserve(store, subject, value, seen).await {
        // Kept: a failure stays counted until it leaves the window.
        Ok(_counted) => Ok(true),
        Err(StoreError::Throttled { .. }) => Ok(false),
        Err(error) => Err(error),
    }
}

impl Reserved {
    /// Gives the slot back: the attempt was not a failure of this subject.
    /// A slot already emptied or taken again is left as it is.
    pub async fn release(self, store: &Store) -> Result<(), StoreError> {
        let released = store
            .client()
            .update_item()
            .table_name(store.table())
            .set_key(Some(key(self.subject, &self.value)))
            .update_expression("REMOVE #slot")
            .condition_expression("#slot = :at")
            .expression_attribute_names("#slot", slot_name(self.slot))
            .expression_attribute_values(":at", store::n(self.at))
            .send()
            .await;
        match released {
            Ok(_) => Ok(()),
            Err(e) if store::is_condition_failure(&e) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}

/// Forgets all of a subject's attempts (after a successful login).
pub async fn clear(store: &Store, subject: Subject, value: &str) -> Result<(), StoreError> {
    store.delete(key(subject, value)).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attempts(subject: Subject, times: &[i64]) -> Attempts {
        let mut attempts = Attempts::none(subject);
        for (slot, at) in times.iter().enumerate() {
            attempts.slots[slot] = Some(*at);
        }
        attempts
    }

    #[test]
    fn blocks_at_the_limit_until_the_oldest_attempt_leaves_the_window() {
        let full = attempts(Subject::Email, &[1_000, 1_100, 1_200, 1_300, 1_400]);
        assert_eq!(full.blocked_for(1_400), Some(500));
        assert_eq!(full.blocked_for(1_899), Some(1));
        assert_eq!(full.blocked_for(1_900), None, "the first attempt has left");
        assert_eq!(full.free_slots(1_900), vec![0]);
        let four = attempts(Subject::Email, &[1_000, 1_000, 1_000, 1_000]);
        assert_eq!(four.blocked_for(1_000), None);
        assert_eq!(four.free_slots(1_000), vec![4]);
        // The IP limit is higher.
        let five = attempts(Subject::Ip, &[1_000; 5]);
        assert_eq!(five.blocked_for(1_000), None);
        // The registry's: a source's 100, a user name's 10.
        let ten = attempts(Subject::RegistryUser, &[1_000; 10]);
        assert_eq!(ten.blocked_for(1_000), Some(900));
        let source = attempts(Subject::RegistrySource, &[1_000; 10]);
        assert_eq!(source.blocked_for(1_000), None);
    }

    #[test]
    fn ipv6_callers_are_counted_by_their_64() {
        assert_eq!(
            caller_network("2001:db8:1:2:aaaa:bbbb:cccc:dddd"),
            "2001:db8:1:2::/64"
        );
        assert_eq!(
            caller_network("2001:db8:1:2::1"),
            caller_network("2001:db8:1:2:ffff::9")
        );
        assert_ne!(
            caller_network("2001:db8:1:2::1"),
            caller_network("2001:db8:1:3::1")
        );
        assert_eq!(caller_network("::ffff:203.0.113.7"), "203.0.113.7");
        assert_eq!(caller_network("203.0.113.7"), "203.0.113.7");
        assert_eq!(caller_network("unknown"), "unknown");
    }

    #[test]
    fn the_window_slides() {
        // 4 failures just before a quarter hour ends and 4 just after: a fixed
        // window would let all 8 through; a sliding one refuses the fifth.
        let late = attempts(Subject::Email, &[899, 899, 899, 899]);
        assert_eq!(late.free_slots(901).len(), 1);
        let five = attempts(Subject::Email, &[899, 899, 899, 899, 901]);
        assert_eq!(five.blocked_for(902), Some(897));
    }

    #[test]
    fn reads_slots_from_an_item() {
        let mut item = key(Subject::Email, "a@example.org");
        item.insert("a0".into(), store::n(10));
        item.insert("a3".into(), store::n(20));
        item.insert("a9".into(), store::n(30)); // beyond the email's limit
        item.insert("a1".into(), store::s("garbage"));
        let read = Attempts::from_item(Subject::Email, &item);
        assert_eq!(read.slots, vec![Some(10), None, None, Some(20), None]);
    }
}
