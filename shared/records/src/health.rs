//! The health report (each subsystem's status and latency) and the
//! liveness answer.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum SubsystemStatus {
    Up,
    Down,
}

#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Subsystem {
    #[schema(value_type = String)]
    pub name: Cow<'static, str>,
    pub status: SubsystemStatus,
    pub latency_ms: u64,
    pub detail: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum OverallStatus {
    Ok,
    Degraded,
    Down,
}

#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct HealthReport {
    pub status: OverallStatus,
    #[schema(value_type = String)]
    pub version: Cow<'static, str>,
    pub subsystems: Vec<Subsystem>,
}

impl HealthReport {
    pub fn of(subsystems: Vec<Subsystem>) -> Self {
        let up = subsystems
            .iter()
            .filter(|s| s.status == SubsystemStatus::Up)
            .count();
        let status = match up {
            n if n == subsystems.len() => OverallStatus::Ok,
            0 => OverallStatus::Down,
            _ => OverallStatus::Degraded,
        };
        Self {
            status,
            version: env!("CARGO_PKG_VERSION").into(),
            subsystems,
        }
    }

    pub fn all_up(&self) -> bool {
        self.status == OverallStatus::Ok
    }
}

#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Liveness {
    /// Always `ok`.
    #[schema(value_type = String, pattern = "^ok$")]
    pub status: Cow<'static, str>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subsystem(status: SubsystemStatus) -> Subsystem {
        Subsystem {
            name: "x".into(),
            status,
            latency_ms: 1,
            detail: None,
        }
    }

    #[test]
    fn overall_status_follows_the_subsystems() {
        use SubsystemStatus::{Down, Up};
        assert_eq!(
            HealthReport::of(vec![subsystem(Up), subsystem(Up)]).status,
            OverallStatus::Ok
        );
        assert_eq!(
            HealthReport::of(vec![subsystem(Up), subsystem(Down)]).status,
            OverallStatus::Degraded
        );
        assert_eq!(
            HealthReport::of(vec![subsystem(Down)]).status,
            OverallStatus::Down
        );
        assert!(!HealthReport::of(vec![subsystem(Down)]).all_up());
    }
}
