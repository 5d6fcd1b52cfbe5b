//! The `cleanup` function: on a schedule (every five minutes, see
//! `template.yaml`), removes what the apps of purged environments left in
//! the table — release histories, hostname claims, webhooks — as
//! `berth_api::environments::purges` describes. It serves no route.

use berth_api::AppState;
use berth_api::environments::purges::{self, Sweep, Swept};
use berth_domain::ApiError;

/// One sweep, until `deadline`.
pub async fn run(state: AppState, deadline: tokio::time::Instant) -> Result<Swept, ApiError> {
    let client = state.cluster.client().await?;
    purges::sweep(
        &state.store,
        &client,
        Sweep {
            in_flight: state.config.write_in_flight(),
            deadline,
        },
    )
    .await
}
