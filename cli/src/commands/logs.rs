//! An app's logs, and its builds and their logs.

use std::borrow::Cow;

use berth_records::apps::record::LogEntry;
use berth_records::builds::{BuildPage, BuildRecord};

use super::Session;
use super::follow::{self, MAX_TAIL, NewLine, POLL};
use crate::args::{BuildsCommand, Logs};
use crate::config::AppPath;
use crate::failure::{Failure, Result};
use crate::output::{millis, or_dash, print, visible};

pub fn logs(session: &Session, app: &AppPath, logs: Logs) -> Result<()> {
    let mut query = Vec::new();
    if let Some(process) = &logs.process {
        query.push(("process", process.clone()));
    }
    if let Some(release) = logs.release {
        query.push(("release", release.to_string()));
    }
    let ask = |tail: u32, since: Option<i64>, previous: bool| {
        let mut query = query.clone();
        query.push(("tail", tail.to_string()));
        if previous {
            query.push(("previous", "true".to_owned()));
        }
        if let Some(since) = since {
            query.push(("since", since.to_string()));
        }
        session.api.get_with(&app.path(&["logs"]), &query)
    };
    let answer = ask(logs.tail, None, logs.previous)?;
    if logs.follow {
        return follow::follow(
            answer.record()?,
            POLL,
            |since, previous| ask(MAX_TAIL, since, previous)?.record(),
            || Ok(false),
            |line| print_line(session, line, &line.pod, logs.raw),
        );
    }
    session.out.answer(&answer, || {
        print_entries(
            &answer.record::<Vec<LogEntry>>()?,
            |entry| entry.pod.clone(),
            logs.raw,
        )
    })
}

/// A log line as the reader's terminal gets it: its control characters
/// made visible, unless `raw`.
pub(super) fn shown(line: &str, raw: bool) -> Cow<'_, str> {
    if raw {
        Cow::Borrowed(line)
    } else {
        visible(line)
    }
}

/// A followed line: `SOURCE | line`, or with `-o json` one JSON object.
fn print_line(session: &Session, line: &NewLine, source: &str, raw: bool) -> Result<()> {
    if session.out.json() {
        let object = serde_json::to_string(line)
            .map_err(|e| Failure::failed(format!("printing a line: {e}")))?;
        print(&object)
    } else {
        print(&format!("{source} | {}", shown(&line.line, raw)))
    }
}

/// Each entry's lines, prefixed with whose they are; a pod whose log could
/// not be read says why on standard error.
fn print_entries(
    entries: &[LogEntry],
    source: impl Fn(&LogEntry) -> String,
    raw: bool,
) -> Result<()> {
    for entry in entries {
        let source = source(entry);
        if let Some(error) = &entry.error {
            eprintln!("{source}: no log: {}", visible(error));
        }
        if entry.truncated {
            eprintln!("{source}: older lines left out (the log is longer than one answer holds)");
        }
        for line in &entry.lines {
            print(&format!("{source} | {}", shown(line, raw)))?;
        }
    }
    Ok(())
}

pub fn builds(session: &Session, app: &AppPath, command: BuildsCommand) -> Result<()> {
    match command {
        BuildsCommand::List => {
            let answer = session.api.get(&app.path(&["builds"]))?;
            session.out.answer(&answer, || {
                let page: BuildPage = answer.record()?;
                let rows = page
                    .builds
                    .into_iter()
                    .map(|b| {
                        vec![
                            b.id.to_string(),
                            or_dash(b.git_ref),
                            or_dash(b.commit.map(|c| c.chars().take(12).collect::<String>())),
                            b.status,
                            b.strategy,
                            or_dash(b.revision),
                            millis(b.created_at),
                            or_dash(b.message),
                        ]
                    })
                    .collect();
                session.out.list(
                    &[
                        "ID", "REF", "COMMIT", "STATUS", "STRATEGY", "REVISION", "CREATED",
                        "MESSAGE",
                    ],
                    rows,
                    "No builds: `berth deploy --ref REF` builds the app's source",
                )
            })
        }
        BuildsCommand::Cancel { build } => {
            let id = match build {
                Some(id) => id,
                None => newest_build(session, app)?,
            }
            .to_string();
            let answer = session
                .api
                .post_empty(&app.path(&["builds", &id, "cancel"]))?;
            session.out.answer(&answer, || {
                session.out.say(&format!("Build {id} cancelled"))
            })
        }
        BuildsCommand::Logs {
            build,
            tail,
            follow,
            raw,
        } => {
            let id = match build {
                Some(id) => id,
                None => newest_build(session, app)?,
            };
            let id = id.to_string();
            let ask = |tail: u32, since: Option<i64>| {
                let mut query = vec![("tail", tail.to_string())];
                if let Some(since) = since {
                    query.push(("since", since.to_string()));
                }
                session
                    .api
                    .get_with(&app.path(&["builds", &id, "logs"]), &query)
            };
            let answer = ask(tail, None)?;
            if follow {
                let mut status = String::new();
                follow::follow(
                    answer.record()?,
                    POLL,
                    |since, _| ask(MAX_TAIL, since)?.record(),
                    || {
                        let build: BuildRecord =
                            session.api.get(&app.path(&["builds", &id]))?.record()?;
                        status = build.status;
                        Ok(matches!(
                            status.as_str(),
                            "succeeded" | "failed" | "cancelled"
                        ))
                    },
                    |line| {
                        let step = line.container.as_deref().unwrap_or(&line.pod);
                        print_line(session, line, step, raw)
                    },
                )?;
                return match status.as_str() {
                    "succeeded" => Ok(()),
                    _ => Err(Failure::failed(format!("build {id} {status}"))),
                };
            }
            session.out.answer(&answer, || {
                print_entries(
                    &answer.record::<Vec<LogEntry>>()?,
                    |entry| entry.container.clone().unwrap_or_else(|| entry.pod.clone()),
                    raw,
                )
            })
        }
    }
}

fn newest_build(session: &Session, app: &AppPath) -> Result<i64> {
    let page: BuildPage = session
        .api
        .get_with(&app.path(&["builds"]), &[("limit", "1".to_owned())])?
        .record()?;
    page.builds
        .first()
        .map(|build| build.id)
        .ok_or_else(|| Failure::failed(format!("{} has no builds", app.app)))
}
