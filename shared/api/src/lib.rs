//! Berth's HTTP API, the top layer: the request pipeline, extractors and
//! per-route operation tags ([`http`]), the one error the caller reads and
//! where every lower layer's failure becomes it ([`error`]), what every
//! function's part of the OpenAPI description shares ([`openapi`]), the
//! process ([`config`], [`state`], [`runtime`], [`telemetry`]), the health
//! report ([`health`]), and the services of each
//! resource, each holding its rules: [`projects`], [`environments`],
//! [`apps`] (the DNS check of its domains, [`domain_check`], under feature
//! `dns`),
//! [`builds`] (apps from source), [`secrets`], [`templates`]; [`webhooks`]
//! (git pushes that start builds; its storage and signature checks need no
//! cluster); [`registry`] (the registry settings of Berth's token service);
//! [`access`] and [`kubeconfig`] (the cluster as the stored kubeconfig
//! reaches it).
//!
//! It stands on the layers below (README's layout): `berth-domain` (values
//! and rules), `berth-cluster` (Berth's resources and cluster access; feature
//! `cluster`) and `berth-store` (DynamoDB, audit, identity). Function crates
//! only declare routes and translate HTTP to calls into these modules.

#[cfg(feature = "cluster")]
pub mod access;
#[cfg(feature = "cluster")]
pub mod apps;
#[cfg(feature = "cluster")]
pub mod builds;
pub mod config;
#[cfg(feature = "dns")]
pub mod domain_check;
#[cfg(feature = "cluster")]
pub mod environments;
pub mod error;
pub mod health;
pub mod http;
#[cfg(feature = "cluster")]
pub mod kubeconfig;
pub mod openapi;
#[cfg(feature = "cluster")]
pub mod projects;
pub mod registry;
pub mod runtime;
#[cfg(feature = "cluster")]
pub mod secrets;
#[cfg(feature = "cluster")]
pub mod service_account;
pub mod state;
pub mod telemetry;
#[cfg(feature = "cluster")]
pub mod templates;
pub mod webhooks;

pub use error::ApiError;
/// For [`operations!`]: the handlers' `__path_` types.
#[doc(hidden)]
pub use paste::paste as __paste;
pub use state::AppState;
