//! Berth's common library. Every function crate links it; the function crates
//! themselves only declare routes and translate HTTP to calls into these modules.
//! Its modules, roughly from the bottom up (no file imports another that
//! imports it back, directly or through others):
//!
//! - Value types: [`domain`] (names, sizes, schedules, images, paths: each
//!   parsed once at the API's edge), [`names`] (the rules of names not yet a
//!   type of [`domain`]), [`roles`] (roles and their permissions),
//!   [`operation`] (operation ids), [`clock`], [`credentials`] (random
//!   secrets and their digests).
//! - [`error`]: the one error type and its Problem Details.
//! - Storage: [`store`] (the DynamoDB table, its schema and key layout),
//!   [`audit`] (one event for every call).
//! - [`identity`]: users, passwords, sessions, tokens, members, login
//!   throttling.
//! - HTTP glue: [`http`] (the request pipeline, extractors, per-route
//!   operation tags), [`openapi`] (what every function's part of the
//!   description shares), [`health`] (the health report).
//! - The cluster (feature `cluster`): [`cluster`] (access and its retries,
//!   Berth's custom resources, which objects are Berth's, each resource's
//!   reads and writes), [`kubeconfig`] (the stored kubeconfig).
//! - The resources (feature `cluster`), each holding its rules:
//!   [`projects`], [`environments`], [`apps`] (with the DNS check of its
//!   domains under feature `dns`), [`builds`] (apps from source),
//!   [`secrets`], [`templates`]; [`webhooks`] (git pushes that start
//!   builds; its storage and signature checks need no cluster);
//!   [`registry`] (the image registry's credentials as Berth's token
//!   service sees them).
//! - The process: [`config`], [`state`] (what every handler shares),
//!   [`runtime`], [`telemetry`].
//! - [`testing`] (feature `test-support`): fixtures for every crate's tests.
//!
//! The controller (`berth-controller`) renders apps and isolates
//! environments with modules of its own, on the value types and the
//! cluster layer of this crate.

#[cfg(feature = "cluster")]
pub mod apps;
pub mod audit;
#[cfg(feature = "cluster")]
pub mod builds;
pub mod clock;
#[cfg(feature = "cluster")]
pub mod cluster;
pub mod config;
pub mod credentials;
pub mod domain;
#[cfg(feature = "cluster")]
pub mod environments;
pub mod error;
pub mod health;
pub mod http;
pub mod identity;
#[cfg(feature = "cluster")]
pub mod kubeconfig;
pub mod names;
pub mod openapi;
pub mod operation;
#[cfg(feature = "cluster")]
pub mod projects;
pub mod registry;
pub mod roles;
pub mod runtime;
#[cfg(feature = "cluster")]
pub mod secrets;
pub mod state;
pub mod store;
pub mod telemetry;
#[cfg(feature = "cluster")]
pub mod templates;
#[cfg(all(feature = "cluster", any(test, feature = "test-support")))]
pub mod testing;
pub mod webhooks;

pub use error::{ApiError, Missing};
pub use operation::Operation;
/// For [`operations!`]: the handlers' `__path_` types.
#[doc(hidden)]
pub use paste::paste as __paste;
pub use roles::{Permission, Role};
pub use state::AppState;
