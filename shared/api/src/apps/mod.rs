//! Apps (issue: the heart of Berth): an app is an `App` resource in its
//! environment's namespace, the one source of truth for what should run; the
//! controller renders it into workloads. Every change adds a release revision.
//!
//! - [`body`]: the API's bodies, parsed into an [`AppConfig`](berth_cluster::crd::AppConfig);
//! - [`change`]: the change pipeline every write of an app's configuration
//!   passes: the checks, the release history with the hostname claims, the
//!   cluster write;
//! - [`hosts`]: the claims of custom domains, one app per hostname platform-wide;
//! - [`record`]: what the API answers (App record, detail, pods);
//! - [`releases`]: the release history in DynamoDB and its consistency rules;
//! - [`leftovers`]: what an app keeps in the table, found from its
//!   environment, and its removal once the app is gone;
//! - [`service`]: the app operations, which decide each change;
//! - [`operate`]: running it: logs, restart, run a scheduled process now;
//! - [`commands`]: one-off commands in a fresh pod, their state and output;
//!
//! Whether an app's hostnames resolve to the gateway is `crate::domain_check`
//! (feature `dns`), which the process's state holds.

pub mod body;
pub(crate) mod change;
pub mod commands;
pub mod hosts;
pub mod leftovers;
mod notes;
pub mod operate;
pub mod proofs;
pub mod record;
pub mod releases;
pub mod service;
