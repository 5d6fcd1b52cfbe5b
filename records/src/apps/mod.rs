//! Apps: what a client sends to create or change one ([`body`]), to roll
//! it back, promote or run it ([`actions`]), and what the API answers
//! ([`record`]).

pub mod actions;
pub mod body;
pub mod record;
