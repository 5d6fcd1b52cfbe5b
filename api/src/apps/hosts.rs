//! Hostnames: a custom domain serves at most one app on
//! the whole platform, whichever organization asks.
//!
//! A hostname, in its one normal form ([`Hostname`]: lowercase, no trailing
//! dot), is claimed by one item, `HOST#{hostname}`, that names the app
//! (organization, project, environment, name), its release history id (the
//! App's `berth.dev/release-history` annotation: unique per incarnation of
//! the app, so a deleted and recreated app is another holder), the revision
//! whose write claimed it, when, and a random claim id.
//!
//! - **Claiming.** Every write of an app's configuration (create, update,
//!   rollback, promote, template deploy) claims every hostname of the
//!   resulting configuration in the transaction that writes its revisions
//!   (`super::change`: the claim writes are [`Claims`]), each claim
//!   conditioned on being absent or already this history's (so an app made
//!   before claims existed claims its hostnames at its next write). The change and its claims are written
//!   together or not at all: no extra round trip, and a hostname held by
//!   another app is `409 domain_taken` with nothing written.
//! - **Releasing.** The hostnames an app drops are released only once its
//!   App was replaced (before that the change may still fail, and the app
//!   still serves them), each conditioned on this history and on a claiming
//!   revision no later than the one committed (a later write of the same app
//!   may have claimed it again); deleting an app releases all of its claims.
//!   One transaction, after success, best effort.
//! - **Stale claims.** A failed release, a replace that failed after its
//!   claims were written, a purged environment or a function that died
//!   midway leave a claim whose app does not serve the hostname. When a
//!   claim is refused, its holder is read: the claim is stale when it is
//!   older than any write can still be running ([`HostRules`]) and its App is
//!   gone, is another incarnation, or no longer lists the hostname. A stale
//!   claim is taken over in the next attempt, conditioned on its claim id:
//!   of two takers only one wins, and a holder that claimed it again
//!   meanwhile keeps it.
//!
//! Default hosts (`berth_controller::render::default_host_label`) are never claimed:
//! they name one app by construction, and no custom domain may fall under
//! the apps domain.

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use aws_sdk_dynamodb::types::{
    Delete, Put, ReturnValuesOnConditionCheckFailure, TransactWriteItem,
};
use kube::ResourceExt;
use serde::{Deserialize, Serialize};

use berth_cluster::apps::{self as cluster_apps, ANNOTATION_HISTORY};
use berth_cluster::crd::{App, LABEL_ENVIRONMENT, LABEL_ORG, LABEL_PROJECT};
use berth_domain::config::Config;
use berth_domain::names::{AppName, EnvironmentName, Hostname, ProjectName};
use berth_domain::paths::AppPath;
use berth_domain::stored::Stored;
use berth_domain::{ApiError, clock};
use berth_store as store;
use berth_store::{Store, keys};

/// What the hostname rules take from the configuration.
#[derive(Debug, Clone)]
pub struct HostRules {
    /// `BERTH_APPS_DOMAIN`: the default hosts' domain, closed to custom domains.
    apps_domain: Option<Hostname>,
    /// How long after its claim a write may still create or replace its App:
    /// the request deadline (which cancels the request) plus one cluster
    /// call sent just before it. A younger claim is never taken over.
    in_flight: Duration,
}

impl HostRules {
    pub fn new(config: &Config) -> Self {
        Self {
            apps_domain: config.apps_domain.clone(),
            in_flight: config.write_in_flight(),
        }
    }

    /// Refuses a custom domain that is the apps domain or lies under it:
    /// there every name is an app's default host.
    pub fn check(&self, domains: &[Stored<Hostname>]) -> Result<(), ApiError> {
        let Some(apps_domain) = &self.apps_domain else {
            return Ok(());
        };
        for (i, domain) in domains.iter().enumerate() {
            if domain
                .parsed()
                .is_ok_and(|host| host.is_within(apps_domain))
            {
                return Err(ApiError::ValidationFailed(format!(
                    "domains[{i}]: {domain} is under {apps_domain}, the platform's domain of \
                     default hosts; use a domain of your own"
                )));
            }
        }
        Ok(())
    }
}

/// The stored claim of a hostname.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Claim {
    pk: String,
    sk: String,
    hostname: String,
    org: String,
    project: String,
    environment: String,
    app: String,
    history: String,
    /// The revision whose write made the claim.
    revision: i64,
    /// Unix milliseconds.
    claimed_at: i64,
    /// Random, new at every write: what a takeover is conditioned on.
    claim: String,
}

impl Claim {
    /// The claim of `hostname` by `app` (labelled and annotated as it will
    /// be written) at its release's revision.
    fn by(app: &App, hostname: &str) -> Result<Self, ApiError> {
        let label = |key: &str| app.labels().get(key).cloned().unwrap_or_default();
        Ok(Self {
            pk: keys::host(hostname),
            sk: keys::HOST_SK.to_owned(),
            hostname: hostname.to_owned(),
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

    /// Where the app holding the claim is: none when the names stored
    /// cannot be an app's (no App can hold the claim then).
    fn holder(&self) -> Option<AppPath> {
        Some(AppPath {
            project: ProjectName::parse(&self.project).ok()?,
            environment: EnvironmentName::parse(&self.environment).ok()?,
            app: AppName::parse(&self.app).ok()?,
        })
    }
}

/// The claim write of `hostname` for `app`: where it is free or already
/// the app's, or, for a takeover, where it is still the stale claim `seen`.
fn claim_write(
    store: &Store,
    app: &App,
    hostname: &str,
    seen: Option<&str>,
) -> Result<TransactWriteItem, ApiError> {
    let claim = Claim::by(app, hostname)?;
    let put = Put::builder()
        .table_name(store.table())
        .set_item(Some(store::to_item(&claim)?))
        // The refusal carries the holder's claim: no read to find it.
        .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
    let put = match seen {
        None => put
            .condition_expression("attribute_not_exists(pk) OR #history = :history")
            .expression_attribute_names("#history", "history")
            .expression_attribute_values(":history", store::s(claim.history)),
        Some(seen) => put
            .condition_expression("#claim = :seen")
            .expression_attribute_names("#claim", "claim")
            .expression_attribute_values(":seen", store::s(seen)),
    };
    store::tx_put(put)
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
    /// The claims `next` makes; a hostname under the apps domain is refused.
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
    /// positions follow), for one attempt: each claim is new.
    pub fn writes(&self, store: &Store, next: &App) -> Result<Vec<TransactWriteItem>, ApiError> {
        self.hostnames
            .iter()
            .map(|hostname| {
                let seen = self.takeovers.get(hostname).map(String::as_str);
                claim_write(store, next, hostname, seen)
            })
            .collect()
    }

    /// After the writes at `refused` (positions, each with the holder's
    /// claim when the refusal had it) were refused: takes over in the next
    /// attempt those that are stale; `domain_taken` for the first that is not.
    pub async fn take_over_stale(
        &mut self,
        store: &Store,
        client: &kube::Client,
        rules: &HostRules,
        refused: Vec<(usize, Option<store::Item>)>,
    ) -> Result<(), ApiError> {
        let refused = refused.into_iter().filter_map(|(at, found)| {
            self.hostnames
                .get(at)
                .map(|hostname| (hostname.as_str(), found))
        });
        let stale = stale_claims(store, client, rules, refused).await?;
        self.takeovers.extend(stale);
        Ok(())
    }
}

/// For each refused claim (with the holder's claim when the refusal had
/// it): the claim id to take it over with, if it is stale; `domain_taken`
/// for the first that is not.
async fn stale_claims(
    store: &Store,
    client: &kube::Client,
    rules: &HostRules,
    refused: impl Iterator<Item = (&str, Option<store::Item>)>,
) -> Result<Vec<(String, String)>, ApiError> {
    let checks = refused.map(|(hostname, found)| async move {
        let claim = match found {
            Some(item) => Some(store::from_item::<Claim>(item)?),
            None => {
                store
                    .get_as::<Claim>(store::key(keys::host(hostname), keys::HOST_SK))
                    .await?
            }
        };
        // Released meanwhile: the next attempt claims it as free.
        let Some(claim) = claim else {
            return Ok(None);
        };
        if holds(client, rules, &claim).await? {
            Err(ApiError::DomainTaken {
                hostname: hostname.to_owned(),
            })
        } else {
            Ok(Some((claim.hostname, claim.claim)))
        }
    });
    futures::future::join_all(checks)
        .await
        .into_iter()
        .filter_map(Result::transpose)
        .collect()
}

/// Whether the claim's app (still) serves its hostname, or may be about to.
async fn holds(client: &kube::Client, rules: &HostRules, claim: &Claim) -> Result<bool, ApiError> {
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
            && (app.spec.config.hostnames()).any(|host| host.as_str() == claim.hostname)
    }))
}

/// Releases claims of `history` on `hostnames`, after the change that
/// dropped them was committed as revision `committed` (None: the app is
/// gone, every claim of its history goes). Best effort: a claim left behind
/// is stale, and taken over when someone claims its hostname.
pub async fn release(store: &Store, history: &str, committed: Option<i64>, hostnames: &[String]) {
    if let Err(error) = release_claims(store, history, committed, hostnames).await {
        tracing::warn!(error = %error.cause(), "hostname claims left behind (stale: taken over when claimed)");
    }
}

/// Deletes the claims of `history` on `hostnames` (those claimed no later
/// than `committed`, when given), a transaction per hundred; a claim that
/// is no longer this history's (or was claimed again since) is left as it
/// is. An error when the store failed: then some may be left.
pub async fn release_claims(
    store: &Store,
    history: &str,
    committed: Option<i64>,
    hostnames: &[String],
) -> Result<(), ApiError> {
    let distinct: Vec<&String> = hostnames
        .iter()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    // A transaction takes at most 100 items.
    for chunk in distinct.chunks(100) {
        let mut left = chunk.to_vec();
        // A second attempt without those claimed again meanwhile.
        for _ in 0..2 {
            if left.is_empty() {
                break;
            }
            let deletes = left
                .iter()
                .map(|hostname| {
                    let delete = Delete::builder()
                        .table_name(store.table())
                        .set_key(Some(store::key(keys::host(hostname), keys::HOST_SK)))
                        .expression_attribute_names("#history", "history")
                        .expression_attribute_values(":history", store::s(history));
                    store::tx_delete(match committed {
                        None => delete.condition_expression("#history = :history"),
                        Some(revision) => delete
                            .condition_expression("#history = :history AND #revision <= :revision")
                            .expression_attribute_names("#revision", "revision")
                            .expression_attribute_values(":revision", store::n(revision)),
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            match store.transact(deletes).await {
                Ok(()) => break,
                Err(error) => match store::cancelled_conditions(&error) {
                    Some(failed) if failed.contains(&true) => {
                        left = left
                            .into_iter()
                            .zip(failed)
                            .filter_map(|(hostname, failed)| (!failed).then_some(hostname))
                            .collect();
                    }
                    _ => return Err(store::transaction_failure(error)),
                },
            }
        }
    }
    Ok(())
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
    fn a_claim_is_in_flight_for_the_deadline_and_one_cluster_call() {
        let rules = rules(None);
        assert_eq!(rules.in_flight, Duration::from_secs(20 + 10));
    }
}
