//! Berth's values and the rules that need no I/O, the floor every other
//! crate stands on: values parsed once at the API's edge (each type can
//! only hold a valid value, so code past the edge never checks again), roles
//! and operations, credentials' forms and digests, what the rules refuse
//! (`error`: a value that breaks a rule, a thing that is not there; no
//! HTTP, which is the API's). The App model
//! (`app`) is built of these values; what a cluster resource may hold
//! unparsed, because anyone with access to the cluster can edit it, is read
//! as a `stored::Stored` value.
//!
//! Every `parse` answers [`Invalid`] with what the value must be, never the
//! value itself (it may be a secret sent in the wrong field); the edge names
//! the field with [`Invalid::at`].

pub mod app;
pub mod certificate;
pub mod clock;
pub mod container_paths;
pub mod credentials;
pub mod error;
pub mod git;
pub mod ids;
pub mod image;
pub mod name_rules;
pub mod names;
pub mod numbers;
pub mod operation;
pub mod parts;
pub mod paths;
pub mod protocol;
pub mod registry;
#[cfg(feature = "request")]
pub mod request;
pub mod roles;
pub mod schedule;
pub mod scope;
pub mod size;
pub mod stored;

pub use error::{InvalidInput, Missing};
pub use operation::Operation;
pub use roles::{Ceiling, Permission, ProjectRole, Role};

/// The description's schema of a string a parser here takes: its lengths
/// (in characters, as `minLength` and `maxLength` count them), its pattern
/// (ECMA-262, which Python's `re` reads alike) and what it is.
pub(crate) fn string_schema(
    min: Option<usize>,
    max: Option<usize>,
    pattern: &str,
    description: &str,
) -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
    utoipa::openapi::schema::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::String)
        .min_length(min)
        .max_length(max)
        .pattern(Some(pattern))
        .description(Some(description))
        .into()
}

/// An argument of a command a process or a release runs: at most
/// [`CommandArg::MAX_LEN`] characters, without NUL (which no argument of
/// `execve` can hold). Only its schema is a type; `apps::body` checks it.
pub struct CommandArg;

impl CommandArg {
    pub const MAX_LEN: usize = 4096;

    pub fn holds(value: &str) -> bool {
        value.chars().count() <= Self::MAX_LEN && !value.contains('\0')
    }
}

impl utoipa::PartialSchema for CommandArg {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        string_schema(
            None,
            Some(Self::MAX_LEN),
            r"^[^\x00]*$",
            "An argument of a command, without NUL.",
        )
    }
}

impl utoipa::ToSchema for CommandArg {}

/// Why a value was refused: what it must be, without echoing it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid(pub String);

impl Invalid {
    pub fn new(rule: impl Into<String>) -> Self {
        Self(rule.into())
    }

    /// This value's refusal in `field` (a JSON path such as
    /// `processes[1].schedule`).
    pub fn at(self, field: &str) -> InvalidInput {
        InvalidInput(format!("{field}: {}", self.0))
    }
}

impl std::fmt::Display for Invalid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
