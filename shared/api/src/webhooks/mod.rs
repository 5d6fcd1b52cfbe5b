//! Per-app git webhooks: GitHub and GitLab call an app's hook on a push,
//! and a push to the app's branch starts a build of the pushed commit.
//!
//! - [`delivery`]: who sent a delivery, and whether it carries the hook's
//!   secret (GitHub's HMAC, GitLab's token; constant time).
//! - [`push`]: what a signed delivery asks for: a build, or nothing and why.
//!
//! The stored hooks, the app's pointer to its hook and the delivery ids seen
//! (replays) are storage: `berth_store::hooks`.
//! - `service` (feature `cluster`): the operations, on the app in the cluster.

pub mod delivery;
pub mod push;
#[cfg(feature = "cluster")]
pub mod service;
