//! Apps (issue: the heart of Berth): an app is an `App` resource in its
//! environment's namespace, the one source of truth for what should run; the
//! controller renders it into workloads. Every change adds a release revision.
//!
//! - [`body`]: the API's bodies, parsed into an [`AppConfig`](berth_cluster::crd::AppConfig);
//! - [`hosts`]: the claims of custom domains, one app per hostname platform-wide;
//! - [`record`]: what the API answers (App record, detail, pods);
//! - [`releases`]: the release history in DynamoDB and its consistency rules;
//! - [`leftovers`]: what an app keeps in the table, found from its
//!   environment, and its removal once the app is gone;
//! - [`service`]: the operations that change an app (each a revision);
//! - [`operate`]: running it: logs, restart, run a scheduled process now;
//! - [`rendered_names`]: the objects an app renders to, by name, so that two
//!   apps of an environment never render the same one;
//! - [`domain_check`] (feature `dns`): whether an app's hostnames resolve to
//!   the gateway.

pub mod body;
#[cfg(feature = "dns")]
pub mod domain_check;
pub mod hosts;
pub mod leftovers;
pub mod operate;
pub mod record;
pub mod releases;
pub mod service;
