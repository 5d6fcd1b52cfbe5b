//! What `/metrics` serves, in Prometheus text (`prometheus-client`, as kube-rs's
//! controller-rs does): every name is prefixed `berth_controller_`.
//!
//! | metric | type | labels |
//! |---|---|---|
//! | `reconciles_total` | counter | `kind` (Project, Environment, App, Build, Run), `result` (ok, error) |
//! | `reconcile_duration_seconds` | histogram | `kind` |
//! | `reconcile_failures_total` | counter | `kind`, `error` ([`Error::kind`]) |
//! | `objects_applied_total` | counter | `kind` of the object written (Namespace, Deployment…) |
//! | `apps` | gauge | `reason` of the App's status (Available, Progressing, RolloutFailed, Scheduled, none) |
//! | `leader` | gauge | none: 1 while this replica holds the lease and reconciles |
//! | `builds_total` | counter | `outcome` (started, succeeded, failed, cancelled, removed) |
//! | `egress_unguarded` | gauge | none: 1 while `BERTH_EGRESS_DENIED_CIDRS` is unset and not opted out of (tenant pods may reach the cluster's own ranges) |
//!
//! `apps` is counted from the leader's cache of App resources at each scrape,
//! so it is exact and only the leader reports it (a standby has no cache).

use std::sync::Mutex;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::error::Error;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabels {
    kind: String,
    result: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FailureLabels {
    kind: String,
    error: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabels {
    reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    outcome: String,
}

type DurationFamily = Family<KindLabels, Histogram, fn() -> Histogram>;

pub struct Metrics {
    registry: Registry,
    reconciles: Family<ResultLabels, Counter>,
    durations: DurationFamily,
    failures: Family<FailureLabels, Counter>,
    applied: Family<KindLabels, Counter>,
    apps: Family<ReasonLabels, Gauge>,
    leader: Gauge,
    egress_unguarded: Gauge,
    builds: Family<OutcomeLabels, Counter>,
    /// Serializes scrapes: `apps` is rebuilt at each.
    scrape: Mutex<()>,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("berth_controller");
        let reconciles = Family::<ResultLabels, Counter>::default();
        // 5 ms to about 40 s: a reconcile is a handful of requests, and a
        // slow apiserver's are seconds each.
        let durations: DurationFamily =
            Family::new_with_constructor(|| Histogram::new(exponential_buckets(0.005, 2.0, 14)));
        let failures = Family::<FailureLabels, Counter>::default();
        let applied = Family::<KindLabels, Counter>::default();
        let apps = Family::<ReasonLabels, Gauge>::default();
        let leader = Gauge::default();
        let egress_unguarded = Gauge::default();
        let builds = Family::<OutcomeLabels, Counter>::default();
        registry.register(
            "builds",
            "Builds started, and how they ended (succeeded, failed, removed with their app)",
            builds.clone(),
        );
        registry.register(
            "reconciles",
            "Reconciles by kind of resource and result",
            reconciles.clone(),
        );
        registry.register(
            "reconcile_duration_seconds",
            "How long reconciles take, by kind of resource",
            durations.clone(),
        );
        registry.register(
            "reconcile_failures",
            "Failed reconciles by kind of resource and kind of error",
            failures.clone(),
        );
        registry.register(
            "objects_applied",
            "Objects written by server-side apply or created, by kind",
            applied.clone(),
        );
        registry.register(
            "apps",
            "App resources by the reason of their status (the leader's cache)",
            apps.clone(),
        );
        registry.register(
            "leader",
            "1 while this replica holds the lease and reconciles",
            leader.clone(),
        );
        registry.register(
            "egress_unguarded",
            "1 while BERTH_EGRESS_DENIED_CIDRS is unset and not opted out of: tenant pods may \
             reach the cluster's node, pod and Service ranges",
            egress_unguarded.clone(),
        );
        Self {
            registry,
            reconciles,
            durations,
            failures,
            applied,
            apps,
            leader,
            egress_unguarded,
            builds,
            scrape: Mutex::new(()),
        }
    }
}

impl Metrics {
    /// A reconcile of a `kind` ended after `took`.
    pub fn reconciled(&self, kind: &str, took: Duration, result: Result<(), &Error>) {
        let outcome = if result.is_ok() { "ok" } else { "error" };
        self.reconciles
            .get_or_create(&ResultLabels {
                kind: kind.to_owned(),
                result: outcome.to_owned(),
            })
            .inc();
        self.durations
            .get_or_create(&KindLabels {
                kind: kind.to_owned(),
            })
            .observe(took.as_secs_f64());
        if let Err(error) = result {
            self.failures
                .get_or_create(&FailureLabels {
                    kind: kind.to_owned(),
                    error: error.kind().to_owned(),
                })
                .inc();
        }
    }

    /// An object of `kind` was written.
    pub fn applied(&self, kind: &str) {
        self.applied
            .get_or_create(&KindLabels {
                kind: kind.to_owned(),
            })
            .inc();
    }

    /// A build started or ended so (`started`, `succeeded`, `failed`,
    /// `removed`).
    pub fn build(&self, outcome: &str) {
        self.builds
            .get_or_create(&OutcomeLabels {
                outcome: outcome.to_owned(),
            })
            .inc();
    }

    pub fn set_leader(&self, leading: bool) {
        self.leader.set(i64::from(leading));
    }

    pub fn set_egress_unguarded(&self, unguarded: bool) {
        self.egress_unguarded.set(i64::from(unguarded));
    }

    /// The text of a scrape, with `apps` counted from `reasons` (each App's
    /// status reason; `None` before its first status).
    pub fn encode<'a>(&self, reasons: impl IntoIterator<Item = Option<&'a str>>) -> String {
        let _one_at_a_time = self
            .scrape
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        self.apps.clear();
        for reason in reasons {
            self.apps
                .get_or_create(&ReasonLabels {
                    reason: reason.unwrap_or("none").to_owned(),
                })
                .inc();
        }
        let mut text = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.registry);
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scrape_names_every_metric_with_its_labels() {
        let metrics = Metrics::default();
        metrics.reconciled("App", Duration::from_millis(30), Ok(()));
        metrics.reconciled(
            "Environment",
            Duration::from_millis(10),
            Err(&Error::NamespaceNotManaged("web-dev".into())),
        );
        metrics.applied("Deployment");
        metrics.set_leader(true);
        metrics.set_egress_unguarded(true);
        let text = metrics.encode([Some("Available"), Some("Available"), None]);
        for line in [
            "berth_controller_reconciles_total{kind=\"App\",result=\"ok\"} 1",
            "berth_controller_reconciles_total{kind=\"Environment\",result=\"error\"} 1",
            "berth_controller_reconcile_failures_total{kind=\"Environment\",error=\"namespace_not_managed\"} 1",
            "berth_controller_reconcile_duration_seconds_count{kind=\"App\"} 1",
            "berth_controller_objects_applied_total{kind=\"Deployment\"} 1",
            "berth_controller_apps{reason=\"Available\"} 2",
            "berth_controller_apps{reason=\"none\"} 1",
            "berth_controller_leader 1",
            "berth_controller_egress_unguarded 1",
        ] {
            assert!(text.contains(line), "{line} in:\n{text}");
        }
        // The gauge is recounted at each scrape: apps gone are not reported.
        let text = metrics.encode([Some("Progressing")]);
        assert!(!text.contains("reason=\"Available\""), "{text}");
        assert!(text.contains("berth_controller_apps{reason=\"Progressing\"} 1"));
    }
}
