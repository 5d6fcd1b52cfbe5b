//! Signing in and changing one's password.

use serde::{Deserialize, Serialize};

/// No `Debug`: it holds a password.
#[derive(Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LoginBody {
    #[schema(min_length = 1)]
    pub email: String,
    #[schema(min_length = 1, format = Password)]
    pub password: String,
}

/// No `Debug`: it holds passwords.
#[derive(Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PasswordChange {
    #[schema(format = Password)]
    pub current_password: String,
    /// 12 to 256 characters, different from the current one.
    #[schema(format = Password, min_length = 12, max_length = 256)]
    pub new_password: String,
}

#[derive(Serialize, Deserialize, utoipa::ToSchema)]
pub struct PasswordChanged {
    pub changed: bool,
}

/// The Identity record of login and `GET /api/v1/me`.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Identity {
    pub id: String,
    pub email: String,
    pub display_name: Option<String>,
    /// How the caller is signed in: `session` or `token`.
    #[schema(value_type = String, pattern = "^(session|token)$")]
    pub via: String,
    pub must_change_password: bool,
}
