//! The bodies that invite a member and change a member's role (the member's
//! record is `berth_store::identity::members`').

use serde::Deserialize;

use berth_domain::Role;

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Invitation {
    #[schema(format = Email)]
    pub email: String,
    #[schema(value_type = Role)]
    pub role: String,
    /// Not only white space.
    #[schema(
        min_length = 1,
        max_length = 100,
        pattern = "[^\\t\\n\\u000b\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
    )]
    pub display_name: Option<String>,
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RoleChange {
    #[schema(value_type = Role)]
    pub role: String,
}
