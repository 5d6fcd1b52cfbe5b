//! The records of Berth's API: the bodies of its requests and responses, as
//! the OpenAPI description names them, one module per resource. A client
//! (the CLI) links them with the values of `berth-domain` alone: no axum,
//! DynamoDB or kube. `berth-api` makes them from the cluster's resources
//! and the table's items, and parses the bodies into the domain's types.
//!
//! - [`apps`]: an app's bodies, its record, detail, pods, releases, logs and
//!   domain checks;
//! - [`projects`], [`environments`]: their records and create bodies;
//! - [`builds`]: a build of an app's source, a page of them, the body that
//!   queues one;
//! - [`webhooks`]: an app's webhook, and what the receiver ignored;
//! - [`secrets`], [`templates`], [`health`]: their records and bodies;
//! - [`auth`], [`tokens`], [`members`], [`audit`]: signing in and the
//!   caller's Identity, tokens, members and the audit log's events, their
//!   bodies and records (`berth-store` makes the records from its items);
//! - [`problem`]: the body of every error, Problem Details;
//! - [`object`]: the serde helpers that read a body's nested objects as
//!   JSON objects only.

/// The API's version, as its OpenAPI description states it (`info.version`):
/// the document says it, and a client built with these records knows which
/// API it speaks.
pub const API_VERSION: &str = "1.0.3-rc.1";

pub mod apps;
pub mod audit;
pub mod auth;
pub mod builds;
pub mod environments;
pub mod health;
pub mod members;
pub mod object;
pub mod problem;
pub mod projects;
pub mod secrets;
pub mod templates;
pub mod tokens;
pub mod webhooks;
