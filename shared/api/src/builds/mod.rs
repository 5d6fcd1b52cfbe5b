//! Builds of apps from source (issue 18): the API makes a Build resource
//! for each (`queued`, `berth_cluster::build_queue`), lists and reads them
//! and their output; the controller runs them and writes their status, and
//! on success the app's next revision. See `docs/api-notes.md`, "Apps from
//! source".
//!
//! - [`record`]: the Build record the API answers;
//! - [`service`]: the operations (create, cancel, list, get, logs).

pub mod record;
pub mod service;
