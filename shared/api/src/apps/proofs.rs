//! Domain ownership: a custom domain is served only once its organization
//! has proven it controls the name's DNS (docs/api-notes.md, "Domain
//! ownership"); the claims themselves are `apps::hosts`'.
//!
//! The proof is a TXT record at `_berth-challenge.{hostname}` holding
//! `berth-verify={challenge}`, where the challenge is random, the
//! organization's for that hostname, and kept in the hostname's item. It is
//! looked for when the domain check is asked (`checkAppDomains`) and by the
//! scheduled cleanup function every run ([`sweep`]), both through one rule
//! ([`judge`]):
//!
//! - a pending hostname whose record is found is verified for the
//!   organization, unless another verified it first (its owner is written
//!   conditioned on there being none: the first wins);
//! - a verified hostname whose record is missing is reported, and after
//!   [`GRACE`] (from when it was first found missing) it is no longer the
//!   organization's: not served, and open to whoever proves it next;
//! - a lookup that got no answer concludes nothing.
//!
//! A hostname the operator verified (`berth-admin domains verify`) is not
//! looked for. The served set reaches the controller through each App's
//! `berth.dev/verified-domains` annotation, written with every change of the
//! app and, after a hostname's owner changes, by [`sync_holder`].

use std::time::Duration;

use kube::ResourceExt;

use super::hosts::{self, HostItem, Owner, VerifiedBy};
use crate::ApiError;
use berth_cluster::apps as cluster_apps;
use berth_domain::clock;
use berth_records::apps::record::{DomainVerification, VerificationState};
use berth_store::Store;
use berth_store::hostnames::{self, OwnerChange};

/// How long a verified hostname whose proof went missing is still its
/// organization's (and served).
pub const GRACE: Duration = Duration::from_secs(7 * 86_400);

/// The name of a hostname's proof.
pub fn record_name(hostname: &str) -> String {
    format!("_berth-challenge.{hostname}")
}

/// What the proof's TXT record holds.
pub fn record_value(challenge: &str) -> String {
    format!("berth-verify={challenge}")
}

/// What a lookup of the proof found (`domain_check::TxtFinding`, without
/// the resolver: the rule is judged without DNS).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finding {
    Found,
    Missing,
    Unknown(String),
}

/// What is to be written after a lookup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Nothing changes.
    Stay,
    /// The organization becomes the owner (if there still is none).
    Verify,
    /// The owner's proof was found again (or at last, for an adopted claim).
    Proven,
    /// The owner's proof is missing: it lapses at this time (Unix ms).
    Missing { lapses_at: i64 },
    /// The owner's grace is over: it is no longer the owner.
    Lapse,
}

fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

/// The rule: what `org`'s lookup of `item`'s proof leads to at `now`.
pub fn judge(item: &HostItem, org: &str, finding: &Finding, now: i64) -> Step {
    match (&item.owner, finding) {
        (_, Finding::Unknown(_)) => Step::Stay,
        (Some(owner), _) if owner.org != org => Step::Stay,
        (Some(owner), _) if owner.by == VerifiedBy::Operator => Step::Stay,
        (Some(owner), Finding::Found) => {
            if owner.lapses_at.is_some() || owner.by == VerifiedBy::Upgrade {
                Step::Proven
            } else {
                Step::Stay
            }
        }
        (Some(owner), Finding::Missing) => match owner.lapses_at {
            None => Step::Missing {
                lapses_at: now.saturating_add(millis(GRACE)),
            },
            Some(at) if at <= now => Step::Lapse,
            Some(_) => Step::Stay,
        },
        (None, Finding::Found) => Step::Verify,
        (None, Finding::Missing) => Step::Stay,
    }
}

fn rfc3339(millis: i64) -> Option<String> {
    jiff::Timestamp::from_millisecond(millis)
        .ok()
        .map(|at| at.to_string())
}

/// How `org` stands with `item` (after its step), for the domain check.
pub fn standing(
    item: &HostItem,
    org: &str,
    challenge: &str,
    finding: &Finding,
) -> DomainVerification {
    let name = record_name(&item.hostname);
    let value = record_value(challenge);
    let (state, verified_at, lapses_at, message) = match &item.owner {
        Some(owner) if owner.org != org => (
            VerificationState::Taken,
            None,
            None,
            "another organization has proven it controls this name: it is not served here"
                .to_owned(),
        ),
        Some(owner) => match owner.lapses_at {
            Some(at) => (
                VerificationState::Lapsing,
                rfc3339(owner.verified_at),
                rfc3339(at),
                format!(
                    "served, but the TXT record {name} holding {value} is missing: publish it, \
                     or the name stops being served at the time given"
                ),
            ),
            None => (
                VerificationState::Verified,
                rfc3339(owner.verified_at),
                None,
                match owner.by {
                    VerifiedBy::Operator => "verified by the platform's operator".to_owned(),
                    _ => "verified: keep the TXT record while the name is served here".to_owned(),
                },
            ),
        },
        None => (
            VerificationState::Pending,
            None,
            None,
            match finding {
                Finding::Unknown(why) => format!(
                    "not served until proven: create a TXT record {name} holding {value} \
                     ({why}; checked again at the next check)"
                ),
                _ => format!(
                    "not served until proven: create a TXT record {name} holding {value}; it is \
                     looked for at every check and every few minutes"
                ),
            },
        ),
    };
    DomainVerification {
        state,
        record_name: name,
        record_type: "TXT".to_owned(),
        record_value: value,
        verified_at,
        lapses_at,
        message,
    }
}

/// Writes `step` for `org` on `item`'s hostname, conditioned on the owner
/// as it was read (a concurrent step wins, this one changes nothing), and
/// answers the item as it now stands. A lapse first takes the hostname off
/// its app (so a failure leaves it served and the lapse to the next run).
pub async fn apply(
    store: &Store,
    client: &kube::Client,
    mut item: HostItem,
    org: &str,
    step: Step,
) -> Result<HostItem, ApiError> {
    let now = clock::unix_millis();
    let (change, owner) = match step {
        Step::Stay => return Ok(item),
        Step::Verify => {
            let owner = Owner {
                org: org.to_owned(),
                by: VerifiedBy::Dns,
                verified_at: now,
                lapses_at: None,
                unsynced: true,
            };
            (OwnerChange::Claim(owner.clone()), Some(owner))
        }
        Step::Proven | Step::Missing { .. } => {
            let Some(mut owner) = item.owner.clone() else {
                return Ok(item);
            };
            let seen = owner.verified_at;
            if step == Step::Proven {
                owner.by = VerifiedBy::Dns;
                owner.lapses_at = None;
            } else if let Step::Missing { lapses_at } = step {
                owner.lapses_at = Some(lapses_at);
            }
            let change = OwnerChange::Replace {
                org: org.to_owned(),
                seen,
                owner: owner.clone(),
            };
            (change, Some(owner))
        }
        Step::Lapse => {
            let Some(owner) = item.owner.clone() else {
                return Ok(item);
            };
            item.owner = None;
            sync_holder(store, client, &item, org).await?;
            let change = OwnerChange::Remove {
                org: org.to_owned(),
                seen: owner.verified_at,
            };
            (change, None)
        }
    };
    if !hostnames::change_owner(store, &item.hostname, &change).await? {
        // Another step (or organization) got there first: as it stands now.
        return Ok(hostnames::read(store, &item.hostname)
            .await?
            .unwrap_or(item));
    }
    let verified_now = step == Step::Verify;
    item.owner = owner;
    if verified_now {
        settle(store, client, &mut item, org).await;
    }
    Ok(item)
}

/// Lists a newly owned hostname on its holder's App, then clears the
/// owner's `unsynced`; a failure is logged and left for the next look (the
/// domain check's or the sweep's).
pub async fn settle(store: &Store, client: &kube::Client, item: &mut HostItem, org: &str) {
    let Some(owner) = item
        .owner
        .as_mut()
        .filter(|owner| owner.org == org && owner.unsynced)
    else {
        return;
    };
    let seen = owner.verified_at;
    let settled = async {
        sync_holder(store, client, item, org).await?;
        let synced = OwnerChange::Synced {
            org: org.to_owned(),
            seen,
        };
        if hostnames::change_owner(store, &item.hostname, &synced).await? {
            Ok(())
        } else {
            Err(ApiError::Conflict("the owner changed meanwhile".into()))
        }
    };
    match settled.await {
        Ok(()) => {
            if let Some(owner) = item.owner.as_mut() {
                owner.unsynced = false;
            }
        }
        // Changed meanwhile: the next look sees it as it is.
        Err(error) => {
            tracing::warn!(hostname = %item.hostname, error = %error.cause(),
                "a verified hostname is not yet on its app (the next look settles it)");
        }
    }
}

/// Writes the verified hostnames of `org`'s app holding `item`'s hostname
/// into its App's annotation, as `item` says of this hostname (the others
/// are read); nothing when no app of `org` holds it.
pub async fn sync_holder(
    store: &Store,
    client: &kube::Client,
    item: &HostItem,
    org: &str,
) -> Result<(), ApiError> {
    let Some(holder) = item.claims.get(org).and_then(hosts::Claim::holder) else {
        return Ok(());
    };
    let Some(app) = cluster_apps::find(client, &holder).await? else {
        return Ok(());
    };
    if app
        .labels()
        .get(berth_cluster::crd::LABEL_ORG)
        .map(String::as_str)
        != Some(org)
    {
        return Ok(());
    }
    let mut verified = hosts::verified_of(store, &app).await?;
    verified.retain(|hostname| *hostname != item.hostname);
    if item.is_verified_for(org)
        && app
            .spec
            .config
            .hostnames()
            .any(|host| host.as_str() == item.hostname)
    {
        verified.push(item.hostname.clone());
    }
    // In the app's order.
    let order: Vec<String> = (app.spec.config.hostnames())
        .map(|host| host.as_str().to_owned())
        .filter(|host| verified.contains(host))
        .collect();
    let current = cluster_apps::verified_domains(&app);
    if current.as_ref().map(|listed| listed.join(",")) == Some(order.join(",")) {
        return Ok(());
    }
    Ok(cluster_apps::patch_verified_domains(client, &app, &order).await?)
}

/// The operator's word that `org` controls `hostname`
/// (`berth-admin domains verify`): refused while another organization
/// owns it. Its app, if any, serves it from its next write or the next
/// sweep; `client`, when given, makes that now.
pub async fn verify_by_operator(
    store: &Store,
    client: Option<&kube::Client>,
    org: &str,
    hostname: &str,
) -> Result<(), ApiError> {
    let owner = Owner {
        org: org.to_owned(),
        by: VerifiedBy::Operator,
        verified_at: clock::unix_millis(),
        lapses_at: None,
        unsynced: true,
    };
    if !hostnames::own_unless_another(store, hostname, &owner).await? {
        return Err(ApiError::DomainVerifiedElsewhere {
            hostname: hostname.to_owned(),
        });
    }
    if let (Some(client), Some(mut item)) = (client, hostnames::read(store, hostname).await?) {
        settle(store, client, &mut item, org).await;
    }
    Ok(())
}

/// `org`'s challenge for `item`'s hostname, made now if it has none (an
/// app written before domains were proven, or a claim from before).
pub async fn challenge_of(store: &Store, item: &HostItem, org: &str) -> Result<String, ApiError> {
    if let Some(challenge) = item.challenges.get(org) {
        return Ok(challenge.clone());
    }
    Ok(hostnames::make_challenge(store, &item.hostname, org).await?)
}

#[cfg(feature = "dns")]
mod checked {
    use futures::StreamExt;

    use super::*;
    use crate::domain_check::{DomainChecker, TxtFinding};

    /// Looks for `org`'s proof of `item`'s hostname and applies the rule:
    /// the item as it now stands, with what was found.
    pub async fn check(
        store: &Store,
        client: &kube::Client,
        checker: &DomainChecker,
        item: HostItem,
        org: &str,
    ) -> Result<(HostItem, String, Finding), ApiError> {
        let challenge = challenge_of(store, &item, org).await?;
        let finding = match item.owner.as_ref() {
            // Another's, or the operator's word: nothing to look for.
            Some(owner) if owner.org != org || owner.by == VerifiedBy::Operator => Finding::Missing,
            _ => {
                let found = checker
                    .txt_holds(&record_name(&item.hostname), &record_value(&challenge))
                    .await?;
                match found {
                    TxtFinding::Found => Finding::Found,
                    TxtFinding::Missing => Finding::Missing,
                    TxtFinding::Unknown(why) => Finding::Unknown(why),
                }
            }
        };
        let step = judge(&item, org, &finding, clock::unix_millis());
        let mut item = apply(store, client, item, org, step).await?;
        settle(store, client, &mut item, org).await;
        Ok((item, challenge, finding))
    }

    /// What one run of the scheduled sweep did.
    #[derive(Debug, Default, Clone, PartialEq, Eq, serde::Serialize)]
    pub struct Checked {
        pub adopted: usize,
        pub looked_up: usize,
        pub verified: usize,
        pub lapsed: usize,
    }

    /// The scheduled check, until `deadline`: adopts the claims of before,
    /// then looks for the proof of every claimed or owned hostname, for
    /// each organization that claims or owns it.
    pub async fn sweep(
        store: &Store,
        client: &kube::Client,
        checker: &DomainChecker,
        deadline: tokio::time::Instant,
    ) -> Result<Checked, ApiError> {
        let mut done = Checked {
            adopted: adopt_all(store, deadline).await?,
            ..Checked::default()
        };
        let items = hostnames::all_claimed(store).await?;
        // Hostnames side by side (each lookup may wait its whole bound);
        // one hostname's organizations in turn, each seeing the last's step.
        let mut hostnames = futures::stream::iter(items)
            .map(|item| sweep_one(store, client, checker, item, deadline))
            .buffer_unordered(SWEPT_AT_ONCE);
        while let Some(swept) = hostnames.next().await {
            let swept = swept?;
            done.looked_up += swept.looked_up;
            done.verified += swept.verified;
            done.lapsed += swept.lapsed;
        }
        Ok(done)
    }

    /// How many hostnames the sweep looks at at once.
    const SWEPT_AT_ONCE: usize = 16;

    /// Every organization's proof of one hostname.
    async fn sweep_one(
        store: &Store,
        client: &kube::Client,
        checker: &DomainChecker,
        mut item: HostItem,
        deadline: tokio::time::Instant,
    ) -> Result<Checked, ApiError> {
        let mut done = Checked::default();
        if tokio::time::Instant::now() >= deadline {
            return Ok(done);
        }
        let mut orgs: Vec<String> = item.claims.keys().cloned().collect();
        if let Some(owner) = &item.owner
            && !orgs.contains(&owner.org)
        {
            orgs.push(owner.org.clone());
        }
        for org in orgs {
            let had = item.is_verified_for(&org);
            let (now, _, _) = check(store, client, checker, item, &org).await?;
            done.looked_up += 1;
            match (had, now.is_verified_for(&org)) {
                (false, true) => done.verified += 1,
                (true, false) => done.lapsed += 1,
                _ => {}
            }
            item = now;
        }
        Ok(done)
    }

    /// Adopts every claim from before (`hosts::adopt_legacy`): a scan, once
    /// per installation (a marker item says it is done).
    async fn adopt_all(store: &Store, deadline: tokio::time::Instant) -> Result<usize, ApiError> {
        if hostnames::legacy_adopted(store).await? {
            return Ok(0);
        }
        let mut adopted = 0;
        let mut after = None;
        loop {
            // Consistent: the marker written after it must not hide a claim.
            let (page, next) = hostnames::legacy_page(store, after).await?;
            for hostname in page {
                if hosts::adopt_legacy(store, &hostname, clock::unix_millis()).await? {
                    adopted += 1;
                }
            }
            after = next;
            if after.is_none() {
                break;
            }
            if tokio::time::Instant::now() >= deadline {
                // The next run starts again; adopting is idempotent.
                return Ok(adopted);
            }
        }
        hostnames::mark_legacy_adopted(store).await?;
        Ok(adopted)
    }
}

#[cfg(feature = "dns")]
pub use checked::{Checked, check, sweep};

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: i64 = 86_400_000;

    fn owned(org: &str, by: VerifiedBy, lapses_at: Option<i64>) -> HostItem {
        HostItem {
            hostname: "shop.example.com".into(),
            owner: Some(Owner {
                org: org.into(),
                by,
                verified_at: 0,
                lapses_at,
                unsynced: false,
            }),
            ..HostItem::default()
        }
    }

    #[test]
    fn the_first_proof_found_verifies_a_pending_hostname() {
        let pending = HostItem::default();
        assert_eq!(judge(&pending, "acme", &Finding::Found, 5), Step::Verify);
        assert_eq!(judge(&pending, "acme", &Finding::Missing, 5), Step::Stay);
        let unknown = Finding::Unknown("timed out".into());
        assert_eq!(judge(&pending, "acme", &unknown, 5), Step::Stay);
        // Another's: whatever this organization's record says.
        let taken = owned("globex", VerifiedBy::Dns, None);
        assert_eq!(judge(&taken, "acme", &Finding::Found, 5), Step::Stay);
    }

    #[test]
    fn a_missing_proof_lapses_after_the_grace_and_a_found_one_ends_it() {
        let now = 100 * DAY;
        let verified = owned("acme", VerifiedBy::Dns, None);
        assert_eq!(
            judge(&verified, "acme", &Finding::Missing, now),
            Step::Missing {
                lapses_at: now + 7 * DAY
            }
        );
        assert_eq!(judge(&verified, "acme", &Finding::Found, now), Step::Stay);
        let lapsing = owned("acme", VerifiedBy::Dns, Some(now + DAY));
        assert_eq!(judge(&lapsing, "acme", &Finding::Missing, now), Step::Stay);
        assert_eq!(judge(&lapsing, "acme", &Finding::Found, now), Step::Proven);
        let over = owned("acme", VerifiedBy::Dns, Some(now));
        assert_eq!(judge(&over, "acme", &Finding::Missing, now), Step::Lapse);
        // A lookup without an answer never takes a name away.
        let unknown = Finding::Unknown("SERVFAIL".into());
        assert_eq!(judge(&over, "acme", &unknown, now), Step::Stay);
        // Adopted at the upgrade: proven once its record is found.
        let adopted = owned("acme", VerifiedBy::Upgrade, Some(now + 30 * DAY));
        assert_eq!(judge(&adopted, "acme", &Finding::Found, now), Step::Proven);
        // The operator's word is not looked for.
        let operator = owned("acme", VerifiedBy::Operator, None);
        assert_eq!(judge(&operator, "acme", &Finding::Missing, now), Step::Stay);
    }

    #[test]
    fn the_standing_says_what_to_create() {
        let item = HostItem {
            hostname: "shop.example.com".into(),
            ..HostItem::default()
        };
        let standing = standing(&item, "acme", "abc", &Finding::Missing);
        assert_eq!(standing.state, VerificationState::Pending);
        assert_eq!(standing.record_name, "_berth-challenge.shop.example.com");
        assert_eq!(standing.record_value, "berth-verify=abc");
        assert!(
            standing
                .message
                .contains("_berth-challenge.shop.example.com")
        );
        let taken = standing_of_taken();
        assert_eq!(taken.state, VerificationState::Taken);
    }

    fn standing_of_taken() -> DomainVerification {
        standing(
            &owned("globex", VerifiedBy::Dns, None),
            "acme",
            "abc",
            &Finding::Missing,
        )
    }
}
