//! Berth's common library. Every function crate links it; the function crates
//! themselves only declare routes and translate HTTP to calls into these modules.
//!
//! - [`config`], [`state`], [`runtime`], [`telemetry`]: start-up and the process.
//! - [`error`]: the one error type and its Problem Details rendering.
//! - [`store`]: the DynamoDB table, its schema and key layout.
//! - [`identity`]: users, passwords, sessions, tokens, members, login throttling.
//! - [`audit`]: the audit log, written once for every call.
//! - [`http`]: the request pipeline, extractors and per-route operation tags.
//! - [`apps`], [`secrets`] (feature `cluster`): the rules of apps and secrets.

#[cfg(feature = "cluster")]
pub mod apps;
pub mod audit;
pub mod clock;
#[cfg(feature = "cluster")]
pub mod cluster;
pub mod config;
pub mod credentials;
pub mod domain;
#[cfg(feature = "dns")]
pub mod domains;
pub mod error;
pub mod health;
pub mod http;
pub mod identity;
#[cfg(feature = "cluster")]
pub mod kubeconfig;
pub mod names;
pub mod openapi;
pub mod operation;
pub mod roles;
pub mod runtime;
#[cfg(feature = "cluster")]
pub mod secrets;
pub mod state;
pub mod store;
pub mod telemetry;
#[cfg(feature = "cluster")]
pub mod templates;

pub use error::{ApiError, Missing};
pub use operation::Operation;
/// For [`operations!`]: the handlers' `__path_` types.
#[doc(hidden)]
pub use paste::paste as __paste;
pub use roles::{Permission, Role};
pub use state::AppState;
