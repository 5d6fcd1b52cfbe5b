//! Hostnames: a custom domain serves at most one app of the organization
//! that has proven it controls the name (`super::proofs`).
//!
//! Everything about a hostname, in its one normal form ([`Hostname`]:
//! lowercase, no trailing dot), is one item, `HOST#{hostname}`:
//!
//! - `claim:{org}`: the organization's claim, naming its one app that lists
//!   the hostname (project, environment, name), its release history id (the
//!   App's `berth.dev/release-history` annotation: unique per incarnation of
//!   the app, so a deleted and recreated app is another holder), the
//!   revision whose write claimed it, when, and a random claim id;
//! - `challenge:{org}`: the value the organization's TXT record must hold,
//!   made at its first claim and kept (a record once published stays good);
//! - `owner`: the organization that proved control, once one has.
//!
//! Claims of several organizations may stand side by side (pending: served
//! by none); a verified hostname belongs to its owner, and another
//! organization's claim is refused from then on (`409 domain_taken`). Only
//! the owner's app serves it: the API writes the App's
//! [`ANNOTATION_VERIFIED`] with the hostnames verified for its organization,
//! and the controller renders only those.
//!
//! - **Claiming.** Every write of an app's configuration (create, update,
//!   rollback, promote, template deploy) claims every hostname of the
//!   resulting configuration in the transaction that writes its revisions
//!   (`super::change`: the claim writes are [`Claims`]), each claim
//!   conditioned on the hostname not being another organization's and on the
//!   organization's claim being absent or already this history's (so an app
//!   made before claims existed claims its hostnames at its next write). The
//!   change and its claims are written together or not at all: no extra
//!   round trip, and a hostname held by another app is `409 domain_taken`
//!   with nothing written.
//! - **Releasing.** The hostnames an app drops are released only once its
//!   App was replaced (before that the change may still fail, and the app
//!   still serves them), each conditioned on this history and on a claiming
//!   revision no later than the one committed (a later write of the same app
//!   may have claimed it again); deleting an app releases all of its claims.
//!   One transaction, after success, best effort. The owner stays: a
//!   verified hostname stays the organization's while its proof holds.
//! - **Stale claims.** A failed release, a replace that failed after its
//!   claims were written, a purged environment or a function that died
//!   midway leave a claim whose app does not serve the hostname. When a
//!   claim is refused, its holder is read: the claim is stale when it is
//!   older than any write can still be running ([`HostRules`]) and its App is
//!   gone, is another incarnation, or no longer lists the hostname. A stale
//!   claim is taken over in the next attempt, conditioned on its claim id:
//!   of two takers only one wins, and a holder that claimed it again
//!   meanwhile keeps it.
//! - **Claims from before.** An item written before domains were proven
//!   holds one claim in top-level fields. It is adopted
//!   ([`adopt_legacy`]: its organization's claim, verified by the upgrade,
//!   with a deadline to publish the proof) by the scheduled sweep, or by the
//!   first write that meets it.
//!
//! Default hosts (`berth_controller::render::default_host_label`) are never claimed:
//! they name one app by construction, and no custom domain may fall under
//! the apps domain, nor under a name the operator reserved.

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use kube::ResourceExt;

use crate::ApiError;
use crate::config::Config;
use berth_cluster::apps::{self as cluster_apps, ANNOTATION_HISTORY};
use berth_cluster::crd::{App, LABEL_ENVIRONMENT, LABEL_ORG, LABEL_PROJECT};
use berth_domain::clock;
use berth_domain::names::Hostname;
use berth_domain::stored::Stored;
use berth_store::Store;
use berth_store::hostnames::{self, ClaimWrite};

/// The annotation of an App listing the hostnames verified for its
/// organization when the API last wrote it: the controller serves only
/// those of its domains (an App without it was written before domains were
/// proven, and is served as it was).
pub use berth_cluster::apps::ANNOTATION_VERIFIED;

/// What the hostname rules take from the configuration.
#[derive(Debug, Clone)]
pub struct HostRules {
    /// `BERTH_APPS_DOMAIN`: the default hosts' domain, closed to custom domains.
    apps_domain: Option<Hostname>,
    /// `BERTH_RESERVED_DOMAINS`: the operator's own names, closed as well.
    reserved: Vec<Hostname>,
    /// How long after its claim a write may still create or replace its App:
    /// the request deadline (which cancels the request) plus one cluster
    /// call sent just before it. A younger claim is never taken over.
    in_flight: Duration,
}

impl HostRules {
    pub fn new(config: &Config) -> Self {
        Self {
            apps_domain: config.apps_domain.clone(),
            reserved: config.reserved_domains.clone(),
            in_flight: config.write_in_flight(),
        }
    }

    /// Refuses a custom domain that is the apps domain or a reserved name,
    /// or lies under one: there every name is the platform's.
    pub fn check(&self, domains: &[Stored<Hostname>]) -> Result<(), ApiError> {
        for (i, domain) in domains.iter().enumerate() {
            let Ok(host) = domain.parsed() else {
                continue;
            };
            if let Some(apps_domain) = self.apps_domain.as_ref().filter(|d| host.is_within(d)) {
                return Err(ApiError::ValidationFailed(format!(
                    "domains[{i}]: {domain} is under {apps_domain}, the platform's domain of \
                     default hosts; use a domain of your own"
                )));
            }
            if let Some(reserved) = self.reserved.iter().find(|d| host.is_within(d)) {
                return Err(ApiError::ValidationFailed(format!(
                    "domains[{i}]: {domain} is under {reserved}, a name the platform's operator \
                     reserved; use a domain of your own"
                )));
            }
        }
        Ok(())
    }
}

pub use berth_store::hostnames::{Claim, HostItem, Owner, VerifiedBy};

/// The claim of `app` (labelled and annotated as it will be written) at
/// its release's revision.
fn claim_by(app: &App) -> Result<Claim, ApiError> {
    let label = |key: &str| app.labels().get(key).cloned().unwrap_or_default();
    Ok(Claim {
        org: label(LABEL_ORG),
        project: label(LABEL_PROJECT),
        environment: label(LABEL_ENVIRONMENT),
        app: app.name_any(),
        history: cluster_apps::history_of(app)?,
        revision: app.spec.release.revision,
        claimed_at: clock::unix_millis(),
        claim: uuid::Uuid::new_v4().simple().to_string(),
    })
}

/// The items of `hostnames` (those that exist).
pub async fn read_items(
    store: &Store,
    hostnames: impl IntoIterator<Item = &str>,
) -> Result<Vec<HostItem>, ApiError> {
    Ok(hostnames::read_many(store, hostnames).await?)
}

/// Of `app`'s hostnames, those verified for its organization, in its order:
/// what its [`ANNOTATION_VERIFIED`] says.
pub async fn verified_of(store: &Store, app: &App) -> Result<Vec<String>, ApiError> {
    let org = app.labels().get(LABEL_ORG).cloned().unwrap_or_default();
    let hostnames: Vec<&str> = app.spec.config.hostnames().map(Hostname::as_str).collect();
    let items = read_items(store, hostnames.iter().copied()).await?;
    Ok(hostnames
        .into_iter()
        .filter(|hostname| {
            items
                .iter()
                .any(|item| item.hostname == *hostname && item.is_verified_for(&org))
        })
        .map(str::to_owned)
        .collect())
}

/// Which hostnames an app's write lists in its App's [`ANNOTATION_VERIFIED`],
/// at no round trip for a write that adds no hostname (most deploys): those
/// the app already had keep the word of the App as read (which
/// `super::proofs` keeps up to date as owners change); only hostnames new to
/// the app — all of them for a new app, or for an App written before the
/// annotation — are looked up, in one batch read, once its claims stand.
pub struct VerifiedDomains {
    /// The hostnames looked up.
    fresh: BTreeSet<String>,
    /// Of those, the ones verified for the app's organization.
    verified: BTreeSet<String>,
}

impl VerifiedDomains {
    pub async fn of(store: &Store, current: Option<&App>, next: &App) -> Result<Self, ApiError> {
        let org = next.labels().get(LABEL_ORG).cloned().unwrap_or_default();
        let known: BTreeSet<&str> = current
            .filter(|current| cluster_apps::verified_domains(current).is_some())
            .map(|current| {
                current
                    .spec
                    .config
                    .hostnames()
                    .map(Hostname::as_str)
                    .collect()
            })
            .unwrap_or_default();
        let fresh: BTreeSet<String> = (next.spec.config.hostnames())
            .map(Hostname::as_str)
            .filter(|hostname| !known.contains(hostname))
            .map(str::to_owned)
            .collect();
        let items = read_items(store, fresh.iter().map(String::as_str)).await?;
        let verified = (items.into_iter())
            .filter(|item| item.is_verified_for(&org))
            .map(|item| item.hostname)
            .collect();
        Ok(Self { fresh, verified })
    }

    /// Sets `next`'s annotation, for its write over `read` (the App as
    /// last read; None for a new app).
    pub fn write_on(&self, read: Option<&App>, next: &mut App) {
        let listed = self.listed(read, next);
        cluster_apps::set_verified_domains(next, &listed);
    }

    /// The list for `next`, written over `read`, in the app's order.
    fn listed(&self, read: Option<&App>, next: &App) -> Vec<String> {
        let said = read
            .and_then(cluster_apps::verified_domains)
            .unwrap_or_default();
        (next.spec.config.hostnames())
            .map(Hostname::as_str)
            .filter(|hostname| {
                if self.fresh.contains(*hostname) {
                    self.verified.contains(*hostname)
                } else {
                    said.contains(hostname)
                }
            })
            .map(str::to_owned)
            .collect()
    }
}

/// The claims of the hostnames of `next` (the App about to be created or
/// to replace the current one), written by the transaction that records
/// its revision (`super::change`); see the module docs.
pub struct Claims {
    /// Distinct: one transaction may not write an item twice.
    hostnames: Vec<String>,
    /// The stale claims to take over, by hostname: their claim ids.
    takeovers: HashMap<String, String>,
}

impl Claims {
    /// The claims `next` makes; a hostname under the apps domain or a
    /// reserved name is refused.
    pub fn of(rules: &HostRules, next: &App) -> Result<Self, ApiError> {
        let domains = &next.spec.config.domains;
        rules.check(domains)?;
        let hostnames = (next.spec.config.hostnames())
            .map(|host| host.as_str().to_owned())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        Ok(Self {
            hostnames,
            takeovers: HashMap::new(),
        })
    }

    /// Their writes, in the order of the hostnames (which a refusal's
    /// positions follow), for one attempt: each claim is new. Each is
    /// written where the hostname is not another organization's and the
    /// organization's claim is free or already the app's, or, for a
    /// takeover, still the stale claim it saw.
    pub fn writes(&self, next: &App) -> Result<Vec<ClaimWrite>, ApiError> {
        self.hostnames
            .iter()
            .map(|hostname| {
                Ok(ClaimWrite {
                    hostname: hostname.clone(),
                    claim: claim_by(next)?,
                    seen: self.takeovers.get(hostname).cloned(),
                })
            })
            .collect()
    }

    /// After the writes at `refused` (positions, each with the item when
    /// the refusal had it) were refused: adopts claims from before, takes
    /// over in the next attempt those that are stale; `domain_taken` for
    /// the first that is another's.
    pub async fn take_over_stale(
        &mut self,
        store: &Store,
        client: &kube::Client,
        rules: &HostRules,
        next: &App,
        refused: Vec<(usize, Option<HostItem>)>,
    ) -> Result<(), ApiError> {
        let org = next.labels().get(LABEL_ORG).cloned().unwrap_or_default();
        let refused = refused.into_iter().filter_map(|(at, found)| {
            self.hostnames
                .get(at)
                .map(|hostname| (hostname.as_str(), found))
        });
        let stale = stale_claims(store, client, rules, &org, refused).await?;
        self.takeovers.extend(stale);
        Ok(())
    }
}

/// For each refused claim of `org` (with the item when the refusal had
/// it): the claim id to take it over with, if it is stale; `domain_taken`
/// for the first that is another app's or another organization's.
async fn stale_claims(
    store: &Store,
    client: &kube::Client,
    rules: &HostRules,
    org: &str,
    refused: impl Iterator<Item = (&str, Option<HostItem>)>,
) -> Result<Vec<(String, String)>, ApiError> {
    let checks = refused.map(|(hostname, found)| async move {
        let found = match found {
            Some(item) => Some(item),
            None => hostnames::read(store, hostname).await?,
        };
        // Gone meanwhile: the next attempt claims it as free.
        let Some(item) = found else {
            return Ok(None);
        };
        if item.owner.as_ref().is_some_and(|owner| owner.org != org) {
            return Err(ApiError::DomainVerifiedElsewhere {
                hostname: hostname.to_owned(),
            });
        }
        if item.legacy.is_some() {
            // Adopted now; the next attempt meets the claim it became.
            adopt_legacy(store, hostname, clock::unix_millis()).await?;
            return Ok(None);
        }
        // Released meanwhile: the next attempt claims it as free.
        let Some(claim) = item.claims.get(org) else {
            return Ok(None);
        };
        if holds(client, rules, hostname, claim).await? {
            Err(ApiError::DomainTaken {
                hostname: hostname.to_owned(),
            })
        } else {
            Ok(Some((hostname.to_owned(), claim.claim.clone())))
        }
    });
    futures::future::join_all(checks)
        .await
        .into_iter()
        .filter_map(Result::transpose)
        .collect()
}

/// Whether the claim's app (still) serves its hostname, or may be about to.
async fn holds(
    client: &kube::Client,
    rules: &HostRules,
    hostname: &str,
    claim: &Claim,
) -> Result<bool, ApiError> {
    let age = clock::unix_millis().saturating_sub(claim.claimed_at);
    if u128::try_from(age).map_or(true, |age| age < rules.in_flight.as_millis()) {
        // Its write may still be creating or replacing the App.
        return Ok(true);
    }
    let Some(holder) = claim.holder() else {
        return Ok(false);
    };
    let app = cluster_apps::find(client, &holder).await?;
    Ok(app.is_some_and(|app| {
        app.annotations().get(ANNOTATION_HISTORY) == Some(&claim.history)
            && (app.spec.config.hostnames()).any(|host| host.as_str() == hostname)
    }))
}

/// How long an organization whose claim was adopted at the upgrade has to
/// publish its proof before the hostname stops being served.
pub const UPGRADE_GRACE: Duration = Duration::from_secs(30 * 86_400);

/// Adopts the claim of an item from before (if it still is one): its
/// organization's claim, verified by the upgrade until `now` plus
/// [`UPGRADE_GRACE`] unless its proof is published (`super::proofs`).
/// Whether it adopted one.
pub async fn adopt_legacy(store: &Store, hostname: &str, now: i64) -> Result<bool, ApiError> {
    let Some(claim) = hostnames::read(store, hostname)
        .await?
        .and_then(|item| item.legacy)
    else {
        return Ok(false);
    };
    let grace = i64::try_from(UPGRADE_GRACE.as_millis()).unwrap_or(i64::MAX);
    let owner = Owner {
        org: claim.org.clone(),
        by: VerifiedBy::Upgrade,
        verified_at: now,
        lapses_at: Some(now.saturating_add(grace)),
        // The App of before is served as it was; its next write lists it.
        unsynced: false,
    };
    // False when adopted (or changed) by another meanwhile.
    Ok(hostnames::adopt_legacy(store, hostname, &claim, &owner).await?)
}

/// Releases claims of `history` on `hostnames`, after the change that
/// dropped them was committed as revision `committed` (None: the app is
/// gone, every claim of its history goes). Best effort: a claim left behind
/// is stale, and taken over when someone claims its hostname.
pub async fn release(
    store: &Store,
    org: &str,
    history: &str,
    committed: Option<i64>,
    hostnames: &[String],
) {
    if let Err(error) = hostnames::release_claims(store, org, history, committed, hostnames).await {
        tracing::warn!(error = %error, "hostname claims left behind (stale: taken over when claimed)");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(apps_domain: Option<&str>) -> HostRules {
        let mut config = Config::for_table("test");
        config.apps_domain = apps_domain.map(|d| Hostname::parse(d).unwrap());
        HostRules::new(&config)
    }

    #[test]
    fn custom_domains_may_not_fall_under_the_apps_domain() {
        let apps = rules(Some("apps.example.net"));
        for taken in [
            "apps.example.net",
            "shop--prod--store.apps.example.net",
            "a.b.apps.example.net",
        ] {
            let domains = vec![Stored::read("shop.example.com"), Stored::read(taken)];
            let err = apps.check(&domains).unwrap_err();
            assert_eq!(err.code(), "validation_failed");
            assert!(err.to_string().starts_with("domains[1]: "), "{err}");
        }
        for free in [
            "myapps.example.net",
            "apps.example.net.example.com",
            "example.net",
        ] {
            assert!(apps.check(&[Stored::read(free)]).is_ok(), "{free}");
        }
        assert!(
            rules(None)
                .check(&[Stored::read("x.apps.example.net")])
                .is_ok()
        );
    }

    #[test]
    fn custom_domains_may_not_be_or_fall_under_a_reserved_name() {
        let mut config = Config::for_table("test");
        config.reserved_domains = vec![
            Hostname::parse("example.net").unwrap(),
            Hostname::parse("status.example.org").unwrap(),
        ];
        let rules = HostRules::new(&config);
        for reserved in ["example.net", "api.example.net", "status.example.org"] {
            let err = rules.check(&[Stored::read(reserved)]).unwrap_err();
            assert_eq!(err.code(), "validation_failed");
            assert!(err.to_string().contains("reserved"), "{err}");
        }
        for free in ["example.org", "www.example.org", "myexample.net"] {
            assert!(rules.check(&[Stored::read(free)]).is_ok(), "{free}");
        }
    }

    #[test]
    fn a_claim_is_in_flight_for_the_deadline_and_one_cluster_call() {
        let rules = rules(None);
        assert_eq!(rules.in_flight, Duration::from_secs(20 + 10));
    }
}
