//! The commands, one module per group.

pub mod auth;
pub mod deploy;
pub mod follow;
pub mod logs;
pub mod manage;
pub mod one_off;
pub mod resources;
pub mod team;
pub mod vars;
pub mod wait;

use crate::api::{Api, Credential, parse_url};
use crate::config::{self, SignIn};
use crate::failure::Result;
use crate::output::Output;

/// A signed-in command's API and output.
pub struct Session {
    pub api: Api,
    pub out: Output,
    pub sign_in: SignIn,
    /// The sign-in's context when the command names one (`--context`,
    /// `BERTH_CONTEXT`); the current one otherwise.
    pub context: Option<String>,
}

impl Session {
    pub fn open(out: Output, context: Option<String>) -> Result<Self> {
        let sign_in = config::sign_in(context.as_deref())?;
        let mut api = Api::new(
            parse_url(&sign_in.url)?,
            Credential::Token(sign_in.token.clone()),
        )?;
        api.when_refused(if sign_in.from_environment {
            "the token in BERTH_TOKEN was refused (revoked, expired or mistyped)"
        } else {
            "the stored sign-in is no longer valid (its token was revoked or has expired): \
             `berth login` again"
        });
        Ok(Self {
            api,
            out,
            sign_in,
            context,
        })
    }
}
