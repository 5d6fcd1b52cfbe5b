//! `--follow`: the API answers a log, never a stream (a Lambda behind API
//! Gateway cannot stream), so a follower asks again every 2 seconds with
//! `since`, the whole second of the newest line it has of the quietest
//! source, and drops what it has already printed: after a source's first
//! answer, every line older than the newest it printed of that source (so
//! the lines a `--tail` left out never come after it), and of that newest
//! instant the lines it printed, known by their text and count. When a
//! container restarts (its `restarts` grows), the last lines of its
//! previous instance (newer than what was printed of it) are asked for
//! once with `previous`.
//!
//! No line is lost or repeated as long as, between two polls, no source
//! writes more than the API returns of it (2000 lines, 512 KiB) and the app
//! has at most 10 pods (the API's bounds: the follower warns when it meets
//! one); lines a pod writes in its last 2 seconds before it is deleted are
//! gone with it, as on every Kubernetes without a log store.

use std::collections::HashMap;
use std::time::Duration;

use berth_records::apps::record::LogEntry;

use crate::failure::{Failure, Result};

pub const POLL: Duration = Duration::from_secs(2);
/// The most lines the API returns of one log (`tail`'s bound).
pub const MAX_TAIL: u32 = 2000;

/// One container's log: a pod and its container.
type Source = (String, Option<String>);

/// What has been printed of one source.
#[derive(Debug, Default)]
struct Seen {
    restarts: i32,
    /// Its newest line's timestamp (text that sorts as time).
    newest: String,
    /// How often each (timestamp, line) was printed, for the lines a later
    /// answer may hold again.
    printed: HashMap<(String, String), usize>,
}

/// A line to print (with `-o json`, as this object: its fields in this
/// order).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct NewLine {
    pub timestamp: String,
    pub pod: String,
    pub container: Option<String>,
    pub process: Option<String>,
    pub line: String,
}

#[derive(Debug, Default)]
pub struct Follower {
    seen: HashMap<Source, Seen>,
    /// The sources of the last answer.
    current: Vec<Source>,
    warned_pods: bool,
}

fn source(entry: &LogEntry) -> Source {
    (entry.pod.clone(), entry.container.clone())
}

/// The whole second of an RFC 3339 time, in Unix seconds.
fn second(timestamp: &str) -> Option<i64> {
    timestamp
        .parse::<jiff::Timestamp>()
        .ok()
        .map(|at| at.as_second())
}

impl Follower {
    /// The `since` of the next poll: the second of the newest line of the
    /// source that has been quiet longest, so that no source misses a line.
    pub fn since(&self) -> Option<i64> {
        self.current
            .iter()
            .filter_map(|source| self.seen.get(source))
            .filter_map(|seen| second(&seen.newest))
            .min()
    }

    /// The sources whose container restarted since the last answer, and
    /// the `since` to read their previous instance's log with.
    pub fn restarted(&self, entries: &[LogEntry]) -> Vec<(Source, Option<i64>)> {
        entries
            .iter()
            .filter_map(|entry| {
                let seen = self.seen.get(&source(entry))?;
                (entry.restarts > seen.restarts).then(|| (source(entry), second(&seen.newest)))
            })
            .collect()
    }

    /// The lines of `entries` not printed yet, oldest first; `current`
    /// says whether this answer is the poll's (which sources are followed
    /// now) or a previous instance's.
    pub fn take(&mut self, entries: &[LogEntry], current: bool) -> Vec<NewLine> {
        let since = self.since();
        let mut new = Vec::new();
        for entry in entries {
            let key = source(entry);
            let seen = self.seen.entry(key).or_default();
            if let (Some(since), Some(first)) = (since, entry.timestamps.first())
                && entry.lines.len() >= MAX_TAIL as usize
                && second(first).is_some_and(|first| first > since)
            {
                eprintln!(
                    "warning: {}: more than {MAX_TAIL} lines in {} s; some were not shown",
                    entry.pod,
                    POLL.as_secs()
                );
            } else if entry.truncated && since.is_some() {
                eprintln!(
                    "warning: {}: more than one answer holds in {} s; some lines were not shown",
                    entry.pod,
                    POLL.as_secs()
                );
            }
            // After a source's first answer, a line older than its newest
            // printed line is never printed: it was printed, or a tail left
            // it out (printing it now would put it after newer ones). Lines
            // of that newest instant are told apart by their count.
            let newest = seen.newest.clone();
            let mut here: HashMap<(String, String), usize> = HashMap::new();
            for (index, line) in entry.lines.iter().enumerate() {
                let timestamp = entry.timestamps.get(index).cloned().unwrap_or_default();
                if !timestamp.is_empty() && timestamp < newest {
                    continue;
                }
                let key = (timestamp.clone(), line.clone());
                let count = here.entry(key.clone()).or_default();
                *count += 1;
                let printed = seen.printed.entry(key).or_default();
                if *count <= *printed {
                    continue;
                }
                *printed = *count;
                if timestamp > seen.newest {
                    seen.newest = timestamp.clone();
                }
                new.push(NewLine {
                    timestamp,
                    pod: entry.pod.clone(),
                    container: entry.container.clone(),
                    process: entry.process.clone(),
                    line: line.clone(),
                });
            }
            if current {
                seen.restarts = entry.restarts;
            }
        }
        if current {
            self.current = entries.iter().map(source).collect();
            if entries.len() >= 10 && !self.warned_pods {
                eprintln!("warning: the API shows the newest 10 pods: others are not followed");
                self.warned_pods = true;
            }
            self.forget_before_since();
        }
        // Stable: a source's lines of one timestamp keep their order.
        new.sort_by(|a, b| a.timestamp.cmp(&b.timestamp));
        new
    }

    /// Lines older than the next `since` are never answered again.
    fn forget_before_since(&mut self) {
        let Some(since) = self.since() else {
            return;
        };
        self.seen.retain(|key, _| self.current.contains(key));
        for seen in self.seen.values_mut() {
            seen.printed
                .retain(|(timestamp, _), _| second(timestamp).is_none_or(|s| s >= since));
        }
    }
}

/// Whether a poll's failure may pass (the next poll tries again): the API
/// or the cluster briefly unavailable.
pub fn passing(failure: &Failure) -> bool {
    match failure {
        Failure::Api(problem) => problem.status >= 500 || problem.status == 429,
        Failure::Http { status, .. } => *status >= 500,
        Failure::Transport(_) => true,
        _ => false,
    }
}

/// Follows until `done` says so (never, for an app's logs), printing each
/// new line with `print`. `poll` asks for the logs: `since` and whether
/// the previous instance's.
pub fn follow(
    first: Vec<LogEntry>,
    interval: Duration,
    mut poll: impl FnMut(Option<i64>, bool) -> Result<Vec<LogEntry>>,
    mut done: impl FnMut() -> Result<bool>,
    mut print: impl FnMut(&NewLine) -> Result<()>,
) -> Result<()> {
    let mut follower = Follower::default();
    for line in follower.take(&first, true) {
        print(&line)?;
    }
    loop {
        let finished = done()?;
        if !finished {
            std::thread::sleep(interval);
        }
        let entries = match poll(follower.since(), false) {
            Ok(entries) => entries,
            Err(failure) if passing(&failure) && !finished => {
                eprintln!("warning: {failure}; trying again");
                continue;
            }
            Err(failure) => return Err(failure),
        };
        let restarted = follower.restarted(&entries);
        if !restarted.is_empty() {
            let since = restarted.iter().filter_map(|(_, since)| *since).min();
            let previous: Vec<LogEntry> = poll(since, true)?
                .into_iter()
                .filter(|entry| {
                    restarted
                        .iter()
                        .any(|(source, _)| *source == self::source(entry))
                })
                .collect();
            for line in follower.take(&previous, false) {
                print(&line)?;
            }
        }
        for line in follower.take(&entries, true) {
            print(&line)?;
        }
        if finished {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(pod: &str, restarts: i32, lines: &[(&str, &str)]) -> LogEntry {
        LogEntry {
            pod: pod.to_owned(),
            process: Some("web".into()),
            container: Some("web".into()),
            lines: lines.iter().map(|(_, line)| line.to_string()).collect(),
            timestamps: lines.iter().map(|(at, _)| at.to_string()).collect(),
            restarts,
            error: None,
            truncated: false,
        }
    }

    fn texts(lines: Vec<NewLine>) -> Vec<String> {
        lines.into_iter().map(|l| l.line).collect()
    }

    const T0: &str = "2026-05-01T12:00:00.100000000Z";
    const T1: &str = "2026-05-01T12:00:00.200000000Z";
    const T2: &str = "2026-05-01T12:00:01.000000000Z";
    const T3: &str = "2026-05-01T12:00:02.500000000Z";

    #[test]
    fn lines_answered_again_are_dropped_and_repeated_lines_kept() {
        let mut follower = Follower::default();
        let first = follower.take(&[entry("a", 0, &[(T0, "x"), (T0, "x"), (T1, "y")])], true);
        assert_eq!(texts(first), ["x", "x", "y"]);
        assert_eq!(follower.since(), second(T0));
        // The same second again: a third "x" older than the newest line
        // printed ("y") is not printed after it; a second "y" of that
        // newest instant is (written after the last answer), and a new line.
        let next = follower.take(
            &[entry(
                "a",
                0,
                &[
                    (T0, "x"),
                    (T0, "x"),
                    (T0, "x"),
                    (T1, "y"),
                    (T1, "y"),
                    (T2, "z"),
                ],
            )],
            true,
        );
        assert_eq!(texts(next), ["y", "z"]);
        assert_eq!(follower.since(), second(T2));
    }

    #[test]
    fn the_lines_a_tail_left_out_are_never_printed_after_it() {
        let at = |tenth: u32| format!("2026-05-01T12:00:00.{tenth}00000000Z");
        let lines: Vec<(String, String)> = (1..=6).map(|n| (at(n), format!("line {n}"))).collect();
        let of = |n: usize| -> Vec<(&str, &str)> {
            lines[..n]
                .iter()
                .map(|(at, line)| (at.as_str(), line.as_str()))
                .collect()
        };
        let mut follower = Follower::default();
        // `--tail 1` of five lines of one second.
        let first = follower.take(&[entry("a", 0, &of(5)[4..])], true);
        assert_eq!(texts(first), ["line 5"]);
        // The next poll asks from that second: all five, and a new one.
        let next = follower.take(&[entry("a", 0, &of(6))], true);
        assert_eq!(texts(next), ["line 6"]);
    }

    #[test]
    fn the_quietest_source_sets_since_and_new_pods_join() {
        let mut follower = Follower::default();
        follower.take(
            &[entry("a", 0, &[(T0, "a0")]), entry("b", 0, &[(T2, "b0")])],
            true,
        );
        assert_eq!(follower.since(), second(T0));
        let next = follower.take(
            &[
                entry("a", 0, &[(T0, "a0")]),
                entry("b", 0, &[(T2, "b0"), (T3, "b1")]),
                entry("c", 0, &[(T3, "c0")]),
            ],
            true,
        );
        assert_eq!(texts(next), ["b1", "c0"]);
        // Pod a is gone: it no longer holds since back.
        follower.take(
            &[entry("b", 0, &[(T3, "b1")]), entry("c", 0, &[(T3, "c0")])],
            true,
        );
        assert_eq!(follower.since(), second(T3));
    }

    #[test]
    fn a_restart_reads_the_previous_instance_once() {
        let mut follower = Follower::default();
        follower.take(&[entry("a", 0, &[(T0, "before")])], true);
        let now = [entry("a", 1, &[(T3, "after")])];
        let restarted = follower.restarted(&now);
        assert_eq!(
            restarted,
            [(("a".to_owned(), Some("web".to_owned())), second(T0))]
        );
        // The previous instance: its last line was not seen yet.
        let previous = follower.take(
            &[entry("a", 0, &[(T0, "before"), (T1, "last words")])],
            false,
        );
        assert_eq!(texts(previous), ["last words"]);
        assert_eq!(texts(follower.take(&now, true)), ["after"]);
        assert!(follower.restarted(&now).is_empty());
    }

    #[test]
    fn a_poll_is_retried_when_the_api_is_briefly_away() {
        let mut polls = 0;
        let mut printed = Vec::new();
        let mut rounds = 0;
        follow(
            vec![entry("a", 0, &[(T0, "one")])],
            Duration::ZERO,
            |_, _| {
                polls += 1;
                if polls == 1 {
                    Err(Failure::Transport("connection refused".into()))
                } else {
                    Ok(vec![entry("a", 0, &[(T0, "one"), (T1, "two")])])
                }
            },
            || {
                rounds += 1;
                Ok(rounds > 2)
            },
            |line| {
                printed.push(line.line.clone());
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(printed, ["one", "two"]);
    }
}
