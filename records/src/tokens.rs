//! The body that makes an API token (the token's records are
//! `berth_store::identity::tokens`').

use serde::Deserialize;

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewToken {
    /// Not only white space.
    #[schema(
        min_length = 1,
        max_length = 64,
        pattern = "[^\\t\\n\\u000b\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
    )]
    pub name: String,
    /// Never expires when omitted.
    #[schema(minimum = 1, maximum = 365)]
    pub expires_in_days: Option<u32>,
}
