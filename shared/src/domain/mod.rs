//! Values parsed once at the API's edge: each type can only hold a valid
//! value, so code past the edge never checks again.
//!
//! Every `parse` answers [`Invalid`] with what the value must be, never the
//! value itself (it may be a secret sent in the wrong field); the edge names
//! the field with [`Invalid::at`].

pub mod container_paths;
pub mod git;
pub mod image;
pub mod names;
pub mod numbers;
pub mod paths;
pub mod schedule;
pub mod size;

use crate::ApiError;

/// Why a value was refused: what it must be, without echoing it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid(pub String);

impl Invalid {
    pub fn new(rule: impl Into<String>) -> Self {
        Self(rule.into())
    }

    /// The API's error for this value in `field` (a JSON path such as
    /// `processes[1].schedule`).
    pub fn at(self, field: &str) -> ApiError {
        ApiError::ValidationFailed(format!("{field}: {}", self.0))
    }
}

impl std::fmt::Display for Invalid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
