//! A stand-in Kubernetes API server for Berth's tests and local dev runs.
//!
//! It speaks the Kubernetes REST API over plain HTTP (discovery, CRUD, patches, server-side
//! apply, the status subresource, finalizers, owner-reference garbage collection, namespace
//! deletion, watches with bookmarks, CRDs and pod logs), so the real kube-rs client runs against
//! it unchanged. Tests also get knobs a real cluster doesn't have: injected faults, an
//! unreachable switch and pod logs. See the README for what differs from a real cluster.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use berth_kube_standin::{FaultKind, StandIn};
//! let cluster = StandIn::start().await?;
//! let kubeconfig = cluster.kubeconfig_yaml();
//! cluster.fail_next(1, FaultKind::InternalError);
//! # Ok(()) }
//! ```

mod admission;
mod defaults;
mod discovery;
mod faults;
mod gc;
mod handlers;
mod knobs;
mod limit_ranger;
mod logs;
mod managed;
mod meta;
mod patch;
mod persist;
mod pod_admission;
mod pod_security;
mod quantity;
mod rbac;
mod registry;
mod resource_quota;
mod scale;
mod selector;
mod server;
mod sim;
mod status;
mod store;
pub mod testing;
mod validation;
mod verbs;
mod watch;

pub use faults::{Fault, FaultKind};
pub use logs::LogKey;
pub use rbac::{ADMIN_TOKEN, RbacUse};
pub use server::{Config, StandIn, kubeconfig_yaml};
