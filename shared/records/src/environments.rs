//! Environments of a project: the Environment record and the body that
//! creates one.

use serde::{Deserialize, Serialize};

use crate::object;
use berth_domain::names::NewEnvironmentName;
use berth_domain::parts::Quota;

/// The Environment record of the API (spec part 2).
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq, utoipa::ToSchema)]
pub struct EnvironmentRecord {
    pub name: String,
    pub resource_name: String,
    pub project: String,
    pub env_type: String,
    pub namespace: String,
    pub phase: Option<String>,
    pub ready: bool,
    pub message: Option<String>,
    pub deleting: bool,
    pub deletion_scheduled_at: Option<String>,
    pub created_at: Option<String>,
    /// Beyond the spec's record: the quota the environment was created with,
    /// as its create body gave it; `null` when it gave none, and then only
    /// the platform's defaults hold it (docs/api-notes.md, "Isolation and
    /// limits": `1Ti` of storage and 20 volumes, no CPU, memory or pod cap).
    // Default when absent, so that a client reads an older server's record.
    #[serde(default)]
    pub quota: Option<Quota>,
}

#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = CreateEnvironmentBody)]
#[serde(deny_unknown_fields)]
pub struct CreateBody {
    /// A DNS label without `--` (which separates the parts of an app's
    /// default host); `{project}-{name}` names its namespace.
    #[schema(value_type = NewEnvironmentName)]
    pub name: String,
    /// `production` environments are purged after a grace period, others at once.
    #[serde(default = "standard")]
    #[schema(pattern = "^(standard|production|preview)$", default = "standard")]
    pub env_type: String,
    #[serde(
        default,
        deserialize_with = "object::optional",
        skip_serializing_if = "Option::is_none"
    )]
    pub quota: Option<Quota>,
}

fn standard() -> String {
    "standard".to_owned()
}
