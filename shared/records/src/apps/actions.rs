//! The bodies and answers of an app's operations beyond create and update:
//! rollback, promote, run a scheduled process now.

use serde::{Deserialize, Serialize};

use berth_domain::names::EnvironmentName;

#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RollbackBody {
    /// A revision of `listReleases`.
    #[schema(minimum = 1)]
    pub revision: i64,
}

#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PromoteBody {
    /// The target environment's short name, in the same project (a DNS
    /// label of at most 22 characters; anything else is `422`).
    #[schema(value_type = EnvironmentName)]
    pub environment: String,
}

/// The body of `runApp`: which scheduled process; optional when the app has
/// exactly one. An empty body is the same as `{}`.
#[derive(Debug, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RunBody {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub process: Option<String>,
}

#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RunAnswer {
    /// The Job's name.
    pub job: String,
}
