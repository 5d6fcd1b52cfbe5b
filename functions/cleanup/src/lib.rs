//! The `cleanup` function: on a schedule (every five minutes, see
//! `template.yaml`), removes what the apps of purged environments left in
//! the table — release histories, hostname claims, webhooks — as
//! `berth_api::environments::purges` describes, then looks for the proofs
//! of claimed domains (`berth_api::apps::proofs::sweep`). It serves no
//! route.

use serde::Serialize;

use berth_api::ApiError;
use berth_api::AppState;
use berth_api::apps::proofs::{self, Checked};
use berth_api::environments::purges::{self, Sweep, Swept};

/// What one run did.
#[derive(Debug, Serialize)]
pub struct Run {
    pub purges: Swept,
    /// None when the domains' sweep failed (logged; the next run goes on).
    pub domains: Option<Checked>,
}

/// One run, until `deadline`: the purges first (their leftovers hold
/// claims), then the domains' proofs.
pub async fn run(state: AppState, deadline: tokio::time::Instant) -> Result<Run, ApiError> {
    let client = state.cluster.client().await?;
    let purges = purges::sweep(
        &state.store,
        &client,
        Sweep {
            in_flight: state.config.write_in_flight(),
            deadline,
        },
    )
    .await?;
    let domains = proofs::sweep(&state.store, &client, &state.domain_check, deadline)
        .await
        .inspect_err(|error| {
            tracing::warn!(error = %error.cause(), "the sweep of domain proofs failed");
        })
        .ok();
    Ok(Run { purges, domains })
}
