//! How answers are shown: the API's JSON as it came (`-o json`), a table
//! with borders on a terminal, aligned plain columns otherwise; progress as
//! a spinner on a terminal, as lines on standard error otherwise.

use std::io::IsTerminal as _;
use std::time::Duration;

use comfy_table::{Table, presets};
use serde::Serialize;

use crate::api::Answer;
use crate::args::Format;
use crate::failure::Result;

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
            println!("{}", answer.pretty()?);
            Ok(())
        } else {
            show()
        }
    }

    /// A list of records as a table of `header`'s columns.
    pub fn table(&self, header: &[&str], rows: Vec<Vec<String>>) {
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
            table.add_row(row);
        }
        if self.format != Format::Table {
            for column in table.column_iter_mut() {
                column.set_padding((0, 1));
            }
        }
        let text = table.to_string();
        for line in text.lines() {
            println!("{}", line.trim_end());
        }
    }

    /// One record as `field: value` lines.
    pub fn fields(&self, fields: &[(&str, String)]) {
        let width = fields.iter().map(|(name, _)| name.len()).max().unwrap_or(0);
        for (name, value) in fields {
            println!("{:width$}  {value}", format!("{name}:"), width = width + 1);
        }
    }

    /// A line for people (not with `-o json`, whose standard output is the
    /// answer alone).
    pub fn say(&self, text: &str) {
        if self.json() {
            eprintln!("{text}");
        } else {
            println!("{text}");
        }
    }
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
