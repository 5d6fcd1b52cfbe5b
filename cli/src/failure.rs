//! Why a command failed, as one line and an exit code.

use std::fmt;
use std::process::ExitCode;

use berth_records::problem::Problem;

/// Everything a command can fail with. Each maps to one documented exit
/// code ([`Failure::exit_code`]) and prints as one line.
#[derive(Debug)]
pub enum Failure {
    /// The API answered an error: its Problem Details.
    Api(Problem),
    /// The API answered an error that is not Problem Details (a proxy's
    /// page, say).
    Http { status: u16, body: String },
    /// The API could not be reached, or its answer not read.
    Transport(String),
    /// No credentials, or none that fit.
    NotSignedIn(String),
    /// The command line lacks something clap cannot know (no project linked).
    Usage(String),
    /// Anything else: a deploy that failed, a file.
    Failed(String),
    /// A wait that gave up: what was waited for goes on.
    GaveUp(String),
    /// The API refused the credentials (401): `failure`, and what that
    /// means for where they came from (`BERTH_TOKEN`, the stored sign-in).
    Refused {
        failure: Box<Failure>,
        hint: &'static str,
    },
    /// `failure`, and what to do about it (its exit code is the
    /// failure's).
    Hinted { failure: Box<Failure>, hint: String },
    /// A one-off command (`berth run -- CMD`) exited with this status,
    /// which becomes the CLI's (its low 8 bits, as a shell's `$?`).
    Exited(i32),
    /// Standard output's reader went away (`berth … | head`): the command
    /// ends quietly, as Unix tools do.
    ClosedPipe,
}

pub type Result<T, E = Failure> = std::result::Result<T, E>;

impl Failure {
    pub const FAILED: u8 = 1;
    pub const USAGE: u8 = 2;
    pub const NOT_SIGNED_IN: u8 = 3;
    pub const NOT_FOUND: u8 = 4;
    /// 128 + SIGPIPE: what a shell reports of a tool a closed pipe ended.
    pub const CLOSED_PIPE: u8 = 141;

    pub fn exit_code(&self) -> ExitCode {
        if let Failure::Hinted { failure, .. } = self {
            return failure.exit_code();
        }
        ExitCode::from(match self {
            Failure::Api(problem) => match problem.status {
                401 => Self::NOT_SIGNED_IN,
                404 => Self::NOT_FOUND,
                _ => Self::FAILED,
            },
            Failure::Http { status: 401, .. }
            | Failure::NotSignedIn(_)
            | Failure::Refused { .. } => Self::NOT_SIGNED_IN,
            Failure::Http { status: 404, .. } => Self::NOT_FOUND,
            Failure::Usage(_) => Self::USAGE,
            Failure::Http { .. }
            | Failure::Transport(_)
            | Failure::Failed(_)
            | Failure::GaveUp(_) => Self::FAILED,
            Failure::ClosedPipe => Self::CLOSED_PIPE,
            Failure::Exited(code) => match u8::try_from(code & 0xff) {
                Ok(0) | Err(_) => Self::FAILED,
                Ok(code) => code,
            },
            Failure::Hinted { .. } => Self::FAILED,
        })
    }

    /// The HTTP status the API answered, if it answered an error.
    pub fn status(&self) -> Option<u16> {
        match self {
            Failure::Api(problem) => Some(problem.status),
            Failure::Http { status, .. } => Some(*status),
            Failure::Refused { failure, .. } | Failure::Hinted { failure, .. } => failure.status(),
            _ => None,
        }
    }

    pub fn failed(message: impl Into<String>) -> Self {
        Failure::Failed(message.into())
    }

    /// This failure, with what to do about it after it.
    pub fn hinted(self, hint: impl Into<String>) -> Self {
        Failure::Hinted {
            failure: Box::new(self),
            hint: hint.into(),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = match self {
            Failure::Api(problem) => {
                let mut text = problem.title.clone();
                if let Some(detail) = problem.detail.as_deref().filter(|d| !d.is_empty()) {
                    text.push_str(": ");
                    text.push_str(detail);
                }
                text.push_str(&format!(" ({})", problem.code));
                text
            }
            Failure::Refused { failure, hint } => format!("{failure}; {hint}"),
            Failure::Hinted { failure, hint } => format!("{failure}; {hint}"),
            Failure::ClosedPipe => "standard output was closed".to_owned(),
            Failure::Exited(code) => format!("the command exited with status {code}"),
            Failure::Http { status, body } => format!("the API answered {status}: {body}"),
            Failure::Transport(message)
            | Failure::NotSignedIn(message)
            | Failure::Usage(message)
            | Failure::Failed(message)
            | Failure::GaveUp(message) => message.clone(),
        };
        // One line, whatever a detail holds.
        write!(
            f,
            "{}",
            text.split_whitespace().collect::<Vec<_>>().join(" ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(status: u16, code: &str, detail: Option<&str>) -> Failure {
        Failure::Api(Problem {
            code: code.into(),
            title: "Not found".into(),
            status,
            detail: detail.map(Into::into),
        })
    }

    #[test]
    fn a_problem_is_one_line_with_its_title_detail_and_code() {
        let failure = problem(404, "not_found", Some("app `shop`\nnot found"));
        assert_eq!(
            failure.to_string(),
            "Not found: app `shop` not found (not_found)"
        );
        assert_eq!(failure.exit_code(), ExitCode::from(4));
        assert_eq!(
            problem(401, "unauthenticated", None).exit_code(),
            ExitCode::from(3)
        );
        assert_eq!(
            problem(409, "conflict", None).exit_code(),
            ExitCode::from(1)
        );
        assert_eq!(Failure::Usage("x".into()).exit_code(), ExitCode::from(2));
    }

    #[test]
    fn a_refused_credential_says_where_it_came_from() {
        let refused = Failure::Refused {
            failure: Box::new(problem(401, "unauthenticated", Some("no such token"))),
            hint: "the token in BERTH_TOKEN was refused",
        };
        assert_eq!(
            refused.to_string(),
            "Not found: no such token (unauthenticated); the token in BERTH_TOKEN was refused"
        );
        assert_eq!(refused.exit_code(), ExitCode::from(3));
        assert_eq!(refused.status(), Some(401));
        assert_eq!(Failure::ClosedPipe.exit_code(), ExitCode::from(141));
    }
}
