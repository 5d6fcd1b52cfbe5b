//! The body of every error the API answers: Problem Details (RFC 9457 in
//! spirit). `berth-api` renders its errors as one; a client reads it.

use serde::{Deserialize, Serialize};

/// The Problem Details body of every error response.
/// Problem Details (RFC 9457 in spirit): every error of the API.
#[derive(Debug, Serialize, Deserialize, PartialEq, Eq, utoipa::ToSchema)]
pub struct Problem {
    /// The stable machine-readable code.
    pub code: String,
    pub title: String,
    pub status: u16,
    pub detail: Option<String>,
}
