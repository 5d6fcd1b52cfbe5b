//! Apps: what a client sends to create or change one ([`body`]), to roll
//! it back, promote or run it ([`actions`]), one-off commands
//! ([`commands`]), and what the API answers ([`record`]).

pub mod actions;
pub mod body;
pub mod commands;
pub mod record;
