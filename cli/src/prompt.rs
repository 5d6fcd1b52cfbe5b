//! What the CLI asks for: on a terminal with a prompt (passwords without
//! echo), otherwise a line at a time from standard input, so scripts and
//! tests answer the same questions in the same order.

use std::io::{BufRead as _, IsTerminal as _, Write as _};

use crate::failure::{Failure, Result};

pub struct Prompt {
    terminal: bool,
}

impl Prompt {
    pub fn new() -> Self {
        Self {
            terminal: std::io::stdin().is_terminal(),
        }
    }

    pub fn terminal(&self) -> bool {
        self.terminal
    }

    /// A line of text (an email, a URL), echoed.
    pub fn line(&self, question: &str) -> Result<String> {
        if self.terminal {
            eprint!("{question}: ");
            let _ = std::io::stderr().flush();
        }
        self.read_line(question)
    }

    /// A password: without echo on a terminal.
    pub fn password(&self, question: &str) -> Result<String> {
        if self.terminal {
            return rpassword::prompt_password(format!("{question}: "))
                .map_err(|e| Failure::failed(format!("reading the password: {e}")));
        }
        self.read_line(question)
    }

    fn read_line(&self, question: &str) -> Result<String> {
        let mut line = String::new();
        let read = std::io::stdin()
            .lock()
            .read_line(&mut line)
            .map_err(|e| Failure::failed(format!("reading standard input: {e}")))?;
        if read == 0 {
            return Err(Failure::Usage(format!(
                "{question}: standard input ended before it was given"
            )));
        }
        Ok(line.trim_end_matches(['\r', '\n']).to_owned())
    }
}
