//! How answers are shown: the API's JSON as it came (`-o json`), a table
//! with borders on a terminal, aligned plain columns otherwise; progress as
//! a spinner on a terminal, as lines on standard error otherwise.
//!
//! Standard output is written with [`print`], never `println!` (which
//! panics when the reader of a pipe has gone): a closed pipe ends the
//! command quietly ([`Failure::ClosedPipe`]).
//!
//! What people read is shown [`visible`]: a control character a tenant
//! wrote (in an app's log, a build's output, git's message, a status
//! message) is printed as `less` shows it, never sent to the terminal.

use std::borrow::Cow;
use std::io::{IsTerminal as _, Write as _};
use std::time::Duration;

use comfy_table::{Table, presets};
use serde::Serialize;

use crate::api::Answer;
use crate::args::Format;
use crate::failure::{Failure, Result};

#[derive(Debug, Clone, Copy)]
pub struct Output {
    pub format: Format,
}

impl Output {
    pub fn new(format: Option<Format>) -> Self {
        let format = format.unwrap_or(if std::io::stdout().is_terminal() {
            Format::Table
        } else {
            Format::Plain
        });
        Self { format }
    }

    pub fn json(&self) -> bool {
        self.format == Format::Json
    }

    /// The API's answer as it came (pretty, its keys in the API's order),
    /// with `-o json`; else `show`.
    pub fn answer(&self, answer: &Answer, show: impl FnOnce() -> Result<()>) -> Result<()> {
        if self.json() {
            print(&answer.pretty()?)
        } else {
            show()
        }
    }

    /// A list of records as a table of `header`'s columns.
    pub fn table(&self, header: &[&str], rows: Vec<Vec<String>>) -> Result<()> {
        let mut table = Table::new();
        match self.format {
            Format::Table => {
                table.load_preset(presets::UTF8_FULL_CONDENSED);
            }
            _ => {
                table.load_preset(presets::NOTHING);
                // Columns a space apart, as `kubectl get` prints them.
                table.set_style(comfy_table::TableComponent::VerticalLines, ' ');
            }
        }
        table.set_header(header.iter().copied());
        for row in rows {
            table.add_row(row.iter().map(|cell| visible(cell).into_owned()));
        }
        if self.format != Format::Table {
            for column in table.column_iter_mut() {
                column.set_padding((0, 1));
            }
        }
        let text = table.to_string();
        let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
        print(&lines.join("\n"))
    }

    /// A list of records as [`Output::table`] shows them; with none, `empty`
    /// (what to do to have some) instead of a bare header.
    pub fn list(&self, header: &[&str], rows: Vec<Vec<String>>, empty: &str) -> Result<()> {
        if rows.is_empty() {
            return self.say(empty);
        }
        self.table(header, rows)
    }

    /// One record as `field: value` lines.
    pub fn fields(&self, fields: &[(&str, String)]) -> Result<()> {
        let width = fields.iter().map(|(name, _)| name.len()).max().unwrap_or(0);
        let lines: Vec<String> = fields
            .iter()
            .map(|(name, value)| {
                let value = visible(value);
                format!("{:width$}  {value}", format!("{name}:"), width = width + 1)
            })
            .collect();
        print(&lines.join("\n"))
    }

    /// A line for people (not with `-o json`, whose standard output is the
    /// answer alone).
    pub fn say(&self, text: &str) -> Result<()> {
        let text = visible(text);
        if self.json() {
            eprintln!("{text}");
            Ok(())
        } else {
            print(&text)
        }
    }
}

/// `text` and a newline on standard output.
pub fn print(text: &str) -> Result<()> {
    write(format!("{text}\n").as_bytes())
}

/// `bytes` on standard output, as they are. A reader that closed the pipe
/// is [`Failure::ClosedPipe`]: the command stops there, quietly.
pub fn write(bytes: &[u8]) -> Result<()> {
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(bytes)
        .and_then(|()| stdout.flush())
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::BrokenPipe => Failure::ClosedPipe,
            _ => Failure::failed(format!("writing standard output: {e}")),
        })
}

/// `text` with its control characters made visible, as `less` shows them:
/// `^[` for escape, `^M` for a carriage return, `^?` for delete, `<9B>` for
/// a C1 control; tabs and the text around them as they are. An escape
/// sequence in a tenant's log line (or a build's output, git's message)
/// could otherwise move the reader's cursor, retitle the terminal, rewrite
/// what was printed before it or, in some terminals, answer for the reader.
pub fn visible(text: &str) -> Cow<'_, str> {
    if !text.chars().any(|c| c.is_control() && c != '\t') {
        return Cow::Borrowed(text);
    }
    let mut shown = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\t' => shown.push(c),
            '\u{7f}' => shown.push_str("^?"),
            c if u32::from(c) < 0x20 => {
                shown.push('^');
                shown.push(char::from(b'@' + u8::try_from(u32::from(c)).unwrap_or(0)));
            }
            c if c.is_control() => shown.push_str(&format!("<{:02X}>", u32::from(c))),
            c => shown.push(c),
        }
    }
    Cow::Owned(shown)
}

/// A field that may be absent, as a table shows it.
pub fn or_dash(value: Option<impl ToString>) -> String {
    value.map_or_else(|| "-".to_owned(), |value| value.to_string())
}

/// A serde enum's name (an outcome, a role…), as the API spells it.
pub fn label(value: &impl Serialize) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(text)) => text,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

/// Unix milliseconds as RFC 3339, to the second.
pub fn millis(at: i64) -> String {
    jiff::Timestamp::from_millisecond(at)
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_else(|_| at.to_string())
}

/// Shows how a wait goes: a spinner on a terminal, otherwise each new state
/// as a line on standard error (CI logs keep them).
pub struct Progress {
    spinner: Option<indicatif::ProgressBar>,
    last: String,
}

impl Progress {
    pub fn start() -> Self {
        let spinner = std::io::stderr().is_terminal().then(|| {
            let spinner = indicatif::ProgressBar::new_spinner();
            spinner.enable_steady_tick(Duration::from_millis(120));
            spinner
        });
        Self {
            spinner,
            last: String::new(),
        }
    }

    pub fn show(&mut self, state: String) {
        let state = visible(&state).into_owned();
        if state == self.last {
            return;
        }
        match &self.spinner {
            Some(spinner) => spinner.set_message(state.clone()),
            None => eprintln!("{state}"),
        }
        self.last = state;
    }

    /// A line that stays (a finished step).
    pub fn note(&self, text: &str) {
        let text = visible(text);
        match &self.spinner {
            Some(spinner) => spinner.println(text),
            None => eprintln!("{text}"),
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(spinner) = &self.spinner {
            spinner.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::visible;

    #[test]
    fn control_characters_are_shown_as_less_shows_them() {
        assert_eq!(
            visible("ok\u{1b}]0;owned\u{7}\u{1b}[2J\r\tgone\u{7f}\u{9b}31m\u{0}"),
            "ok^[]0;owned^G^[[2J^M\tgone^?<9B>31m^@"
        );
        assert!(matches!(
            visible("plain text, é"),
            std::borrow::Cow::Borrowed(_)
        ));
    }
}
