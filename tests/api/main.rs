//! Black-box tests of the whole API: one binary, one module per area.

mod admin_cli;
mod app_rendering;
mod apps;
mod apps_running;
mod audit;
mod auth;
mod cluster_access;
mod cluster_faults;
mod cluster_names;
mod domains;
mod environments;
mod errors;
mod fault_causes;
mod health;
mod lambda_events;
mod manifests;
mod members;
mod packaging;
mod permissions;
mod projects;
mod round_trips;
mod secrecy;
mod secrets;
mod support;
mod templates;
mod tokens;
