//! An app's logs, and its builds and their logs.

use berth_records::apps::record::LogEntry;
use berth_records::builds::BuildPage;

use super::Session;
use crate::args::{BuildsCommand, Logs};
use crate::config::AppPath;
use crate::failure::{Failure, Result};
use crate::output::{millis, or_dash};

pub fn logs(session: &Session, app: &AppPath, logs: Logs) -> Result<()> {
    let mut query = vec![("tail", logs.tail.to_string())];
    if let Some(process) = logs.process {
        query.push(("process", process));
    }
    if logs.previous {
        query.push(("previous", "true".to_owned()));
    }
    if let Some(release) = logs.release {
        query.push(("release", release.to_string()));
    }
    let answer = session.api.get_with(&app.path(&["logs"]), &query)?;
    session.out.answer(&answer, || {
        print_entries(&answer.record::<Vec<LogEntry>>()?, |entry| {
            entry.pod.clone()
        });
        Ok(())
    })
}

/// Each entry's lines, prefixed with whose they are; a pod whose log could
/// not be read says why on standard error.
fn print_entries(entries: &[LogEntry], source: impl Fn(&LogEntry) -> String) {
    for entry in entries {
        let source = source(entry);
        if let Some(error) = &entry.error {
            eprintln!("{source}: no log: {error}");
        }
        if entry.truncated {
            eprintln!("{source}: older lines left out (the log is longer than one answer holds)");
        }
        for line in &entry.lines {
            println!("{source} | {line}");
        }
    }
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
                session.out.table(
                    &[
                        "ID", "REF", "COMMIT", "STATUS", "STRATEGY", "REVISION", "CREATED",
                        "MESSAGE",
                    ],
                    rows,
                );
                Ok(())
            })
        }
        BuildsCommand::Logs { build, tail } => {
            let id = match build {
                Some(id) => id,
                None => newest_build(session, app)?,
            };
            let id = id.to_string();
            let answer = session.api.get_with(
                &app.path(&["builds", &id, "logs"]),
                &[("tail", tail.to_string())],
            )?;
            session.out.answer(&answer, || {
                print_entries(&answer.record::<Vec<LogEntry>>()?, |entry| {
                    entry.container.clone().unwrap_or_else(|| entry.pod.clone())
                });
                Ok(())
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
