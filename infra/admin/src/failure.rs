//! How the CLI fails: one plain line saying what to do; `--verbose` adds the
//! cause, one error of its chain a line.

use std::error::Error;
use std::fmt::Display;

pub struct Failure {
    message: String,
    cause: Vec<String>,
}

impl Failure {
    pub fn plain(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            cause: Vec::new(),
        }
    }

    /// A failure whose cause is a message, e.g. one an [`berth_api::ApiError`] carries.
    pub fn caused(message: impl Into<String>, cause: impl Display) -> Self {
        Self {
            message: message.into(),
            cause: vec![cause.to_string()],
        }
    }

    /// A failure whose cause is an error and its sources.
    pub fn chain(message: impl Into<String>, error: &(dyn Error + 'static)) -> Self {
        let mut cause = Vec::new();
        let mut next = Some(error);
        while let Some(error) = next {
            cause.push(error.to_string());
            next = error.source();
        }
        Self {
            message: message.into(),
            cause,
        }
    }

    pub fn print(&self, verbose: bool) {
        if self.cause.is_empty() {
            eprintln!("berth-admin: {}", self.message);
        } else if verbose {
            eprintln!("berth-admin: {}", self.message);
            for cause in &self.cause {
                eprintln!("  caused by: {cause}");
            }
        } else {
            eprintln!("berth-admin: {} (--verbose shows why)", self.message);
        }
    }
}
