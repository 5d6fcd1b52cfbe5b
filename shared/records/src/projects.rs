//! Projects: the Project record and the body that creates one.

use serde::{Deserialize, Serialize};

use berth_domain::names::NewProjectName;

/// The Project record of the API (spec part 2).
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq, utoipa::ToSchema)]
pub struct ProjectRecord {
    pub name: String,
    pub uid: Option<String>,
    pub display_name: String,
    pub description: Option<String>,
    pub org: Option<String>,
    pub environments: i32,
    pub ready: bool,
    pub deleting: bool,
    pub created_at: Option<String>,
}

#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = CreateProjectBody)]
#[serde(deny_unknown_fields)]
pub struct CreateBody {
    /// A DNS label without `--` (which separates the parts of an app's
    /// default host), unique in the cluster.
    #[schema(value_type = NewProjectName)]
    pub name: String,
    /// Not only white space.
    #[schema(
        min_length = 1,
        max_length = 100,
        pattern = "[^\\t\\n\\u000b\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
    )]
    pub display_name: String,
    #[schema(max_length = 1000)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}
