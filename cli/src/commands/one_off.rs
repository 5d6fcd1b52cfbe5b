//! `berth run -- CMD`: a one-off command in a fresh pod of the app
//! (`runCommand`), its output printed as it comes (followed as `logs
//! --follow` follows, see [`follow`]) and its exit status made Berth's.

use berth_records::apps::commands::{CommandRecord, CommandState, RunBody};

use super::Session;
use super::follow::{self, MAX_TAIL, POLL};
use super::logs::shown;
use crate::config::AppPath;
use crate::failure::{Failure, Result};
use crate::output::print;

/// What `berth run -- CMD` asks for.
pub struct OneOff {
    pub command: Vec<String>,
    pub size_of: Option<String>,
    pub timeout: u64,
    pub raw: bool,
}

pub fn run(session: &Session, app: &AppPath, one_off: OneOff) -> Result<()> {
    let body = RunBody {
        command: one_off.command,
        process: one_off.size_of,
        // Past i64, still past the bound: the API refuses it, saying which.
        timeout_seconds: Some(i64::try_from(one_off.timeout).unwrap_or(i64::MAX)),
    };
    let started: CommandRecord = session
        .api
        .post(&app.path(&["commands"]), &body)?
        .record()?;
    let name = started.name.clone();
    // Said on standard error: standard output is the command's.
    eprintln!(
        "Running {} on {} in {}/{} ({name}, {}'s size, stopped after {} s); Ctrl-C stops \
         following it, not the command",
        shell_words(&started.command),
        app.app,
        app.project,
        app.environment,
        started.process,
        started.timeout_seconds,
    );
    let command_path = app.path(&["commands", &name]);
    let logs_path = app.path(&["commands", &name, "logs"]);
    let logs = |since: Option<i64>| {
        let mut query = vec![("tail", MAX_TAIL.to_string())];
        if let Some(since) = since {
            query.push(("since", since.to_string()));
        }
        session.api.get_with(&logs_path, &query)?.record()
    };
    let mut last = started;
    let mut waiting_said = None;
    follow::follow(
        Vec::new(),
        POLL,
        |since, _previous| logs(since),
        || {
            last = session.api.get(&command_path)?.record()?;
            // What a pending command waits for, once per reason.
            if last.state == CommandState::Pending
                && last.reason.is_some()
                && last.reason != waiting_said
            {
                waiting_said = last.reason.clone();
                eprintln!(
                    "waiting: {}",
                    [last.reason.as_deref(), last.message.as_deref()]
                        .into_iter()
                        .flatten()
                        .collect::<Vec<_>>()
                        .join(": ")
                );
            }
            Ok(matches!(
                last.state,
                CommandState::Succeeded | CommandState::Failed
            ))
        },
        |line| {
            if session.out.json() {
                let object = serde_json::to_string(line)
                    .map_err(|e| Failure::failed(format!("printing a line: {e}")))?;
                print(&object)
            } else {
                print(&shown(&line.line, one_off.raw))
            }
        },
    )?;
    ended(&last)
}

/// The command's end as the CLI's: its exit status, or why it has none.
fn ended(command: &CommandRecord) -> Result<()> {
    match (command.state, command.exit_code) {
        (CommandState::Succeeded, _) => Ok(()),
        (_, Some(code)) => Err(Failure::Exited(code)),
        _ => Err(Failure::failed(format!(
            "{} {}",
            command.reason.as_deref().unwrap_or("failed"),
            command.message.as_deref().unwrap_or_default()
        ))),
    }
}

/// The command as a shell would read it back: words with spaces or quotes
/// in single quotes.
fn shell_words(command: &[String]) -> String {
    command
        .iter()
        .map(|word| {
            let plain = !word.is_empty()
                && word
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
            if plain {
                word.clone()
            } else {
                format!("'{}'", word.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_is_shown_as_a_shell_reads_it() {
        let words = ["sh", "-c", "echo it's done", ""].map(String::from);
        assert_eq!(shell_words(&words), r"sh -c 'echo it'\''s done' ''");
    }
}
