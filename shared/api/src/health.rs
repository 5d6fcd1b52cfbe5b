//! The health report's checks (`berth_records::health::HealthReport`): each
//! subsystem's status and latency.

use std::time::Instant;

use berth_records::health::{Subsystem, SubsystemStatus};
use berth_store::Store;

/// DynamoDB answers a consistent read of the table; the same read tells how
/// many audit events wait in the logs for replay.
pub async fn dynamodb_and_audit(store: &Store) -> [Subsystem; 2] {
    let started = Instant::now();
    let read = berth_store::audit::waiting_for_replay(store).await;
    let latency_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    match read {
        Ok(waiting) => {
            let audit_detail = match waiting {
                ..=0 => "every event is stored".to_owned(),
                n => format!(
                    "{n} events could not be stored and were logged as `audit_fallback` lines; \
                     replay them with `berth-admin audit replay`"
                ),
            };
            [
                Subsystem {
                    name: "dynamodb".into(),
                    status: SubsystemStatus::Up,
                    latency_ms,
                    detail: None,
                },
                Subsystem {
                    name: "audit".into(),
                    status: SubsystemStatus::Up,
                    latency_ms,
                    detail: Some(audit_detail),
                },
            ]
        }
        Err(error) => {
            tracing::warn!(error = %error, "health: dynamodb is down");
            [
                Subsystem {
                    name: "dynamodb".into(),
                    status: SubsystemStatus::Down,
                    latency_ms,
                    detail: Some("the table could not be read".into()),
                },
                Subsystem {
                    name: "audit".into(),
                    status: SubsystemStatus::Down,
                    latency_ms,
                    detail: Some(
                        "events are logged as `audit_fallback` lines until the table can be written"
                            .into(),
                    ),
                },
            ]
        }
    }
}

/// The cluster answers its version request.
#[cfg(feature = "cluster")]
pub async fn cluster(access: &crate::access::ClusterAccess) -> Subsystem {
    let started = Instant::now();
    let answer = match access.client().await {
        Ok(client) => berth_cluster::cluster_version(&client)
            .await
            .map_err(crate::ApiError::from),
        Err(error) => Err(error),
    };
    let latency_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let (status, detail) = match answer {
        Ok(version) => (SubsystemStatus::Up, Some(format!("Kubernetes {version}"))),
        Err(crate::ApiError::NoCluster) => (
            SubsystemStatus::Down,
            Some("no cluster configured".to_owned()),
        ),
        Err(error) => {
            tracing::warn!(error = %error, "health: the cluster is down");
            (
                SubsystemStatus::Down,
                Some("the cluster did not answer or failed".to_owned()),
            )
        }
    };
    Subsystem {
        name: "cluster".into(),
        status,
        latency_ms,
        detail,
    }
}
