//! Running apps: their pods' logs, a rolling restart, and running a
//! scheduled process now. None of these changes the app's configuration, so
//! none adds a release revision.

use futures::StreamExt;
use k8s_openapi::api::batch::v1::CronJob;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, LogParams, PostParams};
use kube::{Resource, ResourceExt};

use super::record::record_of;
use super::service;
use crate::ApiError;
use berth_cluster::apps as cluster_apps;
use berth_cluster::crd::{LABEL_PROCESS, Run, RunSpec, object_names};
use berth_cluster::ownership;
use berth_cluster::status_of;
use berth_cluster::{is_conflict, is_not_found};
use berth_domain::clock;
use berth_domain::paths::AppPath;
use berth_records::apps::record::{AppRecord, LogEntry};
use berth_store::identity::Principal;

/// At most this many pods' logs are read (spec part 8), the newest first.
pub const MAX_LOG_PODS: usize = 10;
pub const DEFAULT_TAIL: i64 = 200;
pub const MAX_TAIL: i64 = 2000;
/// Longer lines are cut, so one runaway line cannot fill a response.
pub const MAX_LINE_BYTES: usize = 16 * 1024;
const LINE_CUT_MARKER: &str = " [… line cut at 16 KiB by Berth]";
/// The most of one pod's log text that is read (the log request's
/// `limitBytes`, with room for the timestamps the runtime puts before the
/// lines: [`STAMP_BYTES`] each).
pub const MAX_POD_LOG_BYTES: usize = 512 * 1024;
/// A line's timestamp as the kubelet writes it (RFC 3339 with nanoseconds,
/// `2026-05-01T12:00:00.123456789Z`, at most 30 bytes) and the space after.
const STAMP_BYTES: usize = 31;
/// The most a whole answer may take as Lambda returns it (the JSON body,
/// escaped once more as a string of the response document): below Lambda's
/// 6 MB response limit, with room for the rest of the response.
pub const MAX_LOGS_RESPONSE_BYTES: usize = 5 * 1024 * 1024;

/// What `getAppLogs` asks for, checked.
#[derive(Debug, Clone)]
pub struct LogQuery {
    pub window: LogWindow,
    pub process: Option<String>,
    /// The pods of this revision's release command instead of the processes'.
    pub release: Option<i64>,
}

/// The query of a log that is not an app's (a build's steps, a one-off
/// command's output): how much of it, as `getAppLogs` takes it.
#[derive(Debug, serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct TailQuery {
    /// Lines of each log, 1 to 2000; 200 by default.
    #[param(minimum = 1, maximum = 2000)]
    pub tail: Option<i64>,
    /// Only the lines written at or after this time, in Unix seconds, as
    /// for `getAppLogs`.
    #[param(minimum = 0)]
    pub since: Option<i64>,
}

impl TailQuery {
    /// The window it asks for, checked (there is no previous instance).
    pub fn window(&self) -> Result<LogWindow, ApiError> {
        LogWindow::new(self.tail, false, self.since)
    }
}

/// How much of each log is read.
#[derive(Debug, Clone, Copy)]
pub struct LogWindow {
    pub tail: i64,
    pub previous: bool,
    /// Only the lines stamped at or after this second (Kubernetes'
    /// `sinceTime`, whole seconds), for clients that follow a log.
    pub since: Option<jiff::Timestamp>,
}

impl LogWindow {
    /// `tail` and `since` (Unix seconds) as a query gives them, checked.
    pub fn new(tail: Option<i64>, previous: bool, since: Option<i64>) -> Result<Self, ApiError> {
        let tail = tail.unwrap_or(DEFAULT_TAIL);
        if !(1..=MAX_TAIL).contains(&tail) {
            return Err(ApiError::InvalidRequest(format!(
                "tail: must be 1 to {MAX_TAIL}"
            )));
        }
        // A second past the last one a timestamp holds (the year 9999) is
        // after every line: no lines, as any time to come.
        let since = since
            .map(|seconds| match seconds {
                ..0 => Err(ApiError::InvalidRequest(
                    "since: must be a time in Unix seconds (0 or more)".into(),
                )),
                _ => Ok(jiff::Timestamp::from_second(seconds).unwrap_or(jiff::Timestamp::MAX)),
            })
            .transpose()?;
        Ok(Self {
            tail,
            previous,
            since,
        })
    }
}

impl LogQuery {
    pub fn new(
        window: LogWindow,
        process: Option<String>,
        release: Option<i64>,
    ) -> Result<Self, ApiError> {
        if release.is_some_and(|revision| revision < 1) {
            return Err(ApiError::InvalidRequest(
                "release: must be a revision (1 or more)".into(),
            ));
        }
        Ok(Self {
            window,
            process,
            release,
        })
    }
}

/// The logs of the app's newest pods (of one process, or of a revision's
/// release command, if asked), read at once. A pod whose log cannot be read
/// says why in its entry.
pub async fn logs(
    client: &kube::Client,
    caller: &Principal,
    path: &AppPath,
    query: &LogQuery,
) -> Result<Vec<LogEntry>, ApiError> {
    let org = &caller.user.org;
    let (app, pods) = tokio::join!(
        cluster_apps::get_visible(client, org, path),
        cluster_apps::pods(
            client,
            org,
            path,
            query.release.map_or(
                cluster_apps::PodsOf::Processes,
                cluster_apps::PodsOf::Release
            )
        )
    );
    app?;
    let sources: Vec<LogSource> = pods?
        .into_iter()
        .filter(|pod| {
            query.process.as_deref().is_none_or(|process| {
                pod.labels().get(LABEL_PROCESS).map(String::as_str) == Some(process)
            })
        })
        .take(MAX_LOG_PODS)
        .map(|pod| {
            let process = pod.labels().get(LABEL_PROCESS).cloned();
            LogSource {
                pod,
                // Berth names each pod's one container after its process.
                container: process.clone(),
                process,
            }
        })
        .collect();
    let api: Api<Pod> = Api::namespaced(client.clone(), &path.namespace());
    Ok(read_logs(&api, sources, query.window).await)
}

/// One container's log to read: `container` None is the pod's only one.
pub struct LogSource {
    pub pod: Pod,
    pub container: Option<String>,
    pub process: Option<String>,
}

/// Reads the logs at once (the last `tail` lines of each, since `since`,
/// at most [`MAX_POD_LOG_BYTES`], lines cut at [`MAX_LINE_BYTES`], each
/// with its timestamp), the whole kept within [`MAX_LOGS_RESPONSE_BYTES`];
/// entries in the sources' order. A log that cannot be read says why in
/// its entry.
pub async fn read_logs(
    api: &Api<Pod>,
    sources: Vec<LogSource>,
    window: LogWindow,
) -> Vec<LogEntry> {
    let mut entries = futures::stream::iter(sources)
        .map(|source| {
            let api = api.clone();
            async move { pod_log(&api, source, window).await }
        })
        .buffered(MAX_LOG_PODS)
        .collect::<Vec<_>>()
        .await;
    fit(&mut entries, MAX_LOGS_RESPONSE_BYTES);
    entries
}

async fn pod_log(api: &Api<Pod>, source: LogSource, window: LogWindow) -> LogEntry {
    let LogSource {
        pod,
        container,
        process,
    } = source;
    let name = pod.name_any();
    let restarts = restarts(&pod, container.as_deref());
    let entry = |log: Log, error| LogEntry {
        pod: name.clone(),
        process: process.clone(),
        container: container.clone(),
        lines: log.lines,
        timestamps: log.timestamps,
        restarts,
        error,
        truncated: log.cut,
    };
    // A pod no node runs has no log yet; a real apiserver answers such a
    // request with nothing at all, so say why here.
    let scheduled = pod
        .spec
        .as_ref()
        .is_some_and(|spec| spec.node_name.is_some());
    if !scheduled {
        return entry(
            Log::default(),
            Some("the pod is not scheduled on a node yet".into()),
        );
    }
    let params = LogParams {
        container: container.clone(),
        tail_lines: Some(window.tail),
        previous: window.previous,
        since_time: window.since,
        timestamps: true,
        limit_bytes: i64::try_from(
            MAX_POD_LOG_BYTES + usize::try_from(window.tail).unwrap_or(0) * STAMP_BYTES,
        )
        .ok(),
        ..LogParams::default()
    };
    let first = match read_log(api, &name, &params).await {
        Ok(read) => read,
        Err(error) => return entry(Log::default(), Some(why_no_log(&name, &error))),
    };
    // The apiserver reads `limitBytes` from the start of the tail: a cut
    // left out the newest lines, the ones that matter. Ask again for as
    // many newest lines as fitted.
    let read = if first.cut {
        let newest = LogParams {
            tail_lines: Some(i64::try_from(first.lines.len().max(1)).unwrap_or(1)),
            ..params
        };
        match read_log(api, &name, &newest).await {
            Ok(again) => Log { cut: true, ..again },
            Err(_) => first,
        }
    } else {
        first
    };
    entry(read, None)
}

/// How often the container has restarted, as its pod's status says.
fn restarts(pod: &Pod, container: Option<&str>) -> i32 {
    let Some(status) = pod.status.as_ref() else {
        return 0;
    };
    status
        .init_container_statuses
        .iter()
        .flatten()
        .chain(status.container_statuses.iter().flatten())
        .find(|status| container.is_none_or(|name| status.name == name))
        .map_or(0, |status| status.restart_count)
}

/// Lines read from a pod's log, each with its timestamp; `cut` when some
/// are left out or cut.
#[derive(Debug, Default)]
struct Log {
    lines: Vec<String>,
    timestamps: Vec<String>,
    cut: bool,
}

/// Reads at most the request's `limitBytes` of a log, and keeps at most
/// [`MAX_POD_LOG_BYTES`] of its text (whatever the apiserver
/// sends) as lines, bytes that are not UTF-8 replaced. Reaching the limit
/// cuts the log: the last line, likely partial, is dropped unless it is the
/// only one.
async fn read_log(api: &Api<Pod>, name: &str, params: &LogParams) -> Result<Log, kube::Error> {
    use futures::AsyncReadExt;
    let limit = params
        .limit_bytes
        .and_then(|limit| usize::try_from(limit).ok())
        .unwrap_or(MAX_POD_LOG_BYTES);
    let stream = api.log_stream(name, params).await?;
    let mut bytes = Vec::new();
    stream
        .take(u64::try_from(limit).unwrap_or(u64::MAX))
        .read_to_end(&mut bytes)
        .await
        .map_err(kube::Error::ReadEvents)?;
    let at_limit = bytes.len() >= limit;
    let text = String::from_utf8_lossy(&bytes);
    let mut log = split_lines(&text);
    if at_limit && !text.ends_with('\n') && log.lines.len() > 1 {
        log.lines.pop();
        log.timestamps.pop();
    }
    log.cut |= at_limit;
    // The text within its bound, whatever room the timestamps took.
    let mut text = 0;
    let kept = log
        .lines
        .iter()
        .rev()
        .take_while(|line| {
            text += line.len() + 1;
            text <= MAX_POD_LOG_BYTES
        })
        .count();
    if kept < log.lines.len() {
        let dropped = log.lines.len() - kept;
        log.lines.drain(..dropped);
        log.timestamps.drain(..dropped);
        log.cut = true;
    }
    Ok(log)
}

/// The lines as the container wrote them, each cut at 16 KiB, and the
/// timestamp the runtime put before each (`timestamps=true`), normalized
/// to nanoseconds so that clients may compare them as text; whether a line
/// was cut.
fn split_lines(text: &str) -> Log {
    let mut log = Log::default();
    for stamped in text.lines() {
        let (timestamp, line) = match stamped.split_once(' ') {
            Some((stamp, line)) => match stamp.parse::<jiff::Timestamp>() {
                Ok(at) => (timestamp_text(at), line),
                Err(_) => (String::new(), stamped),
            },
            None => match stamped.parse::<jiff::Timestamp>() {
                // An empty line, stamped.
                Ok(at) => (timestamp_text(at), ""),
                Err(_) => (String::new(), stamped),
            },
        };
        log.timestamps.push(timestamp);
        if line.len() <= MAX_LINE_BYTES {
            log.lines.push(line.to_owned());
            continue;
        }
        log.cut = true;
        let mut end = MAX_LINE_BYTES;
        while !line.is_char_boundary(end) {
            end -= 1;
        }
        log.lines.push(format!("{}{LINE_CUT_MARKER}", &line[..end]));
    }
    log
}

/// RFC 3339 in UTC with nine fractional digits: text that sorts as time.
fn timestamp_text(at: jiff::Timestamp) -> String {
    format!(
        "{}.{:09}Z",
        at.strftime("%Y-%m-%dT%H:%M:%S"),
        at.subsec_nanosecond().unsigned_abs()
    )
}

/// What a piece of the JSON answer takes as Lambda returns it: escaped again
/// as a string of the response document. Escaping goes character by
/// character, so the pieces of an answer add up to the whole.
fn enveloped(json: &str) -> usize {
    serde_json::to_string(json)
        .map(|escaped| escaped.len().saturating_sub(2))
        .unwrap_or(usize::MAX)
}

/// What a log line takes as Lambda returns it: as a JSON string, enveloped.
fn line_bytes(line: &str) -> usize {
    serde_json::to_string(line).map_or(usize::MAX, |json| enveloped(&json))
}

/// Keeps the answer within `budget` bytes (as [`enveloped`] counts them):
/// every pod gets an equal share of what is left after the entries' other
/// fields, a pod that needs less leaves the rest to the others, and a pod
/// that needs more keeps its newest lines that fit, marked `truncated`.
fn fit(entries: &mut [LogEntry], budget: usize) {
    let mut bare: Vec<LogEntry> = entries.to_vec();
    for entry in &mut bare {
        entry.lines.clear();
        entry.timestamps.clear();
        entry.truncated = false;
    }
    let fixed = serde_json::to_string(&bare).map_or(usize::MAX, |json| enveloped(&json));
    // A line costs itself, its timestamp and the commas before them.
    let costs: Vec<Vec<usize>> = entries
        .iter()
        .map(|entry| {
            entry
                .lines
                .iter()
                .enumerate()
                .map(|(index, line)| {
                    let stamp = entry.timestamps.get(index).map_or(0, |t| line_bytes(t) + 1);
                    line_bytes(line) + 1 + stamp
                })
                .collect()
        })
        .collect();
    let mut left = budget.saturating_sub(fixed);
    let mut order: Vec<usize> = (0..entries.len()).collect();
    order.sort_by_key(|&index| costs[index].iter().sum::<usize>());
    for (done, &index) in order.iter().enumerate() {
        let share = left / (order.len() - done);
        let entry = &mut entries[index];
        let mut used = 0;
        let mut kept = 0;
        for cost in costs[index].iter().rev() {
            if used + cost > share {
                break;
            }
            used += cost;
            kept += 1;
        }
        if kept < entry.lines.len() {
            let dropped = entry.lines.len() - kept;
            entry.lines.drain(..dropped);
            entry
                .timestamps
                .drain(..dropped.min(entry.timestamps.len()));
            entry.truncated = true;
        }
        left -= used;
    }
}

/// Why a pod's log could not be read, in plain words (the cluster's own
/// message goes to the log: it may name internals).
fn why_no_log(pod: &str, error: &kube::Error) -> String {
    let message = match error {
        kube::Error::Api(status) => status.message.as_str(),
        _ => "",
    };
    let why = if message.contains("does not have a host assigned") {
        "the pod is not scheduled on a node yet"
    } else if message.contains("is waiting to start") || message.contains("ContainerCreating") {
        "the container is still starting"
    } else if message.contains("previous terminated container") {
        "the container has no previous instance"
    } else if status_of(error) == Some(404) {
        "the pod is gone"
    } else {
        tracing::warn!(pod = %pod, error = %error, "a pod's log could not be read");
        "the log could not be read from the cluster"
    };
    why.to_owned()
}

/// A rolling restart of every always-on process: the pod templates get a new
/// restart stamp (as `kubectl rollout restart` does), nothing else changes.
pub async fn restart(
    client: &kube::Client,
    caller: &Principal,
    path: &AppPath,
) -> Result<AppRecord, ApiError> {
    let org = &caller.user.org;
    let app = service::app_to_change(client, org, path).await?;
    let restarted = cluster_apps::stamp_restart(client, &app, &clock::now_precise()).await?;
    Ok(record_of(&restarted, &path.environment_path(), caller))
}

/// Runs a scheduled process now: records a [`Run`] named as the Job to
/// make, which the controller turns into a Job from the process's CronJob
/// (as `kubectl create job --from=cronjob/…` makes it). Answers the Job's
/// name. The API makes nothing that runs; it checks here what the run needs
/// (the process is scheduled, its CronJob is there and the app's own), so a
/// run that cannot start is refused now rather than dropped later.
pub async fn run_now(
    client: &kube::Client,
    caller: &Principal,
    path: &AppPath,
    process: Option<&str>,
) -> Result<String, ApiError> {
    let org = &caller.user.org;
    let app = service::app_to_change(client, org, path).await?;
    let scheduled: Vec<&str> = app
        .spec
        .config
        .processes
        .iter()
        .filter(|p| p.is_scheduled())
        .map(|p| p.name.as_str())
        .collect();
    let process = match (process, scheduled.as_slice()) {
        (Some(wanted), _) if scheduled.contains(&wanted) => wanted,
        (Some(_), _) => {
            return Err(ApiError::ValidationFailed(format!(
                "process: the app's scheduled processes are: {}",
                if scheduled.is_empty() {
                    "none".to_owned()
                } else {
                    scheduled.join(", ")
                }
            )));
        }
        (None, [only]) => only,
        (None, []) => {
            return Err(ApiError::ValidationFailed(
                "process: the app has no scheduled process".into(),
            ));
        }
        (None, _) => {
            return Err(ApiError::ValidationFailed(format!(
                "process: the app has several scheduled processes; name one of {}",
                scheduled.join(", ")
            )));
        }
    };
    let name = object_names::workload(path.app.as_str(), process);
    let cron_jobs: Api<CronJob> = Api::namespaced(client.clone(), &path.namespace());
    let cron_job = cron_jobs.get_opt(&name).await?.ok_or_else(|| {
        ApiError::Conflict(format!(
            "the CronJob of process {process} is not in the cluster yet; try again in a moment"
        ))
    })?;
    let app_uid = app.uid().unwrap_or_default();
    // Only the app's own CronJob: a Job made from another's would run its
    // template, with the app's name on it.
    if !ownership::is_controlled_by(&cron_job.metadata, &app_uid) {
        return Err(ApiError::Conflict(format!(
            "CronJob {name} belongs to someone else, not to this app; Berth runs nothing from it"
        )));
    }
    let run = Run {
        metadata: ObjectMeta {
            name: Some(manual_job_name(&name)),
            namespace: Some(path.namespace()),
            labels: app.metadata.labels.clone(),
            owner_references: app.controller_owner_ref(&()).map(|owner| vec![owner]),
            ..ObjectMeta::default()
        },
        spec: RunSpec {
            app: path.app.to_string(),
            app_uid,
            process: process.to_owned(),
        },
    };
    match Api::<Run>::namespaced(client.clone(), &path.namespace())
        .create(&PostParams::default(), &run)
        .await
    {
        Ok(created) => Ok(created.name_any()),
        Err(error) if is_conflict(&error) => Err(ApiError::Conflict(
            "a run of that name exists already; try again".into(),
        )),
        // The namespace went with its environment meanwhile.
        Err(error) if is_not_found(&error) => Err(path.environment_path().missing().into()),
        Err(error) => Err(error.into()),
    }
}

/// kubectl's name for a Job made by hand from a CronJob: the CronJob's name
/// and a random suffix, so runs in one second don't collide.
fn manual_job_name(cron_job: &str) -> String {
    let suffix: String = (0..8)
        .map(|_| {
            const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
            ALPHABET[rand::random_range(0..ALPHABET.len())] as char
        })
        .collect();
    format!("{cron_job}-m{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_kept_as_written_and_cut_at_16_kib() {
        let long = "é".repeat(MAX_LINE_BYTES);
        let text = format!("{{\"level\":\"info\"}}\n  indented\t\n{long}\n");
        let log = split_lines(&text);
        let lines = &log.lines;
        assert_eq!(lines[0], "{\"level\":\"info\"}");
        assert_eq!(lines[1], "  indented\t");
        assert!(lines[2].ends_with(LINE_CUT_MARKER));
        assert!(lines[2].len() <= MAX_LINE_BYTES + LINE_CUT_MARKER.len());
        assert_eq!(lines.len(), 3);
        assert_eq!(log.timestamps, ["", "", ""]);
        assert!(log.cut);
        assert!(!split_lines("short\nlines\n").cut);
    }

    #[test]
    fn each_line_keeps_its_timestamp_apart() {
        let log = split_lines(
            "2026-05-01T12:00:00.5Z hello world\n2026-05-01T12:00:01.123456789Z \n2026-05-01T12:00:02Z\n",
        );
        assert_eq!(log.lines, ["hello world", "", ""]);
        assert_eq!(
            log.timestamps,
            [
                "2026-05-01T12:00:00.500000000Z",
                "2026-05-01T12:00:01.123456789Z",
                "2026-05-01T12:00:02.000000000Z"
            ]
        );
        // Text that sorts as the times do.
        assert!(log.timestamps.is_sorted());
    }

    fn entry(pod: &str, lines: Vec<String>) -> LogEntry {
        LogEntry {
            pod: pod.to_owned(),
            process: Some("web".to_owned()),
            container: Some("web".to_owned()),
            timestamps: Vec::new(),
            lines,
            restarts: 0,
            error: None,
            truncated: false,
        }
    }

    /// The answer's size as Lambda returns it.
    fn size(entries: &[LogEntry]) -> usize {
        enveloped(&serde_json::to_string(entries).unwrap())
    }

    #[test]
    fn escapes_are_counted_as_lambda_returns_them() {
        assert_eq!(line_bytes("abc"), 7); // "abc" → \"abc\"
        assert_eq!(line_bytes("\""), 8); // "\"" → \"\\\"\"
        assert_eq!(line_bytes("\u{1}"), 11); // "\u0001" → \"\\u0001\"
        let entries = vec![entry("p", vec!["a\"b".into(), "\\".into()])];
        let parts = size(&[entry("p", vec![])]) + line_bytes("a\"b") + line_bytes("\\") + 1;
        assert_eq!(size(&entries), parts);
        // A timestamp costs as a line does.
        let mut stamped = entry("p", vec!["x".into()]);
        stamped.timestamps = vec!["2026-05-01T12:00:00.000000000Z".into()];
        let parts = size(&[entry("p", vec![])])
            + line_bytes("x")
            + line_bytes("2026-05-01T12:00:00.000000000Z");
        assert_eq!(size(&[stamped]), parts);
    }

    #[test]
    fn answers_stay_within_their_budget_keeping_the_newest_lines() {
        // Ten pods whose logs are all escapes: a line takes five and a half
        // times its bytes as Lambda returns it.
        let heavy = "\u{1}\"".repeat(2000);
        let full: Vec<LogEntry> = (0..10)
            .map(|pod| {
                let lines = (0..30).map(|n| format!("{n} {heavy}")).collect();
                entry(&format!("pod-{pod}"), lines)
            })
            .collect();
        assert!(size(&full) > MAX_LOGS_RESPONSE_BYTES);
        let mut cut = full.clone();
        fit(&mut cut, MAX_LOGS_RESPONSE_BYTES);
        assert!(size(&cut) <= MAX_LOGS_RESPONSE_BYTES, "{}", size(&cut));
        assert!(
            size(&cut) > MAX_LOGS_RESPONSE_BYTES * 9 / 10,
            "the budget is used"
        );
        for (before, after) in full.iter().zip(&cut) {
            assert!(after.truncated);
            assert!(!after.lines.is_empty());
            // The newest lines, in order.
            assert!(before.lines.ends_with(&after.lines));
        }

        // A small pod keeps everything and leaves its share to the others.
        let mut mixed = vec![entry("small", vec!["hello".into(), "world".into()])];
        mixed.extend(full.iter().take(3).cloned());
        fit(&mut mixed, 1024 * 1024);
        assert_eq!(mixed[0].lines, ["hello", "world"]);
        assert!(!mixed[0].truncated);
        assert!(mixed[1..].iter().all(|e| e.truncated));
        assert!(size(&mixed) <= 1024 * 1024);
        assert!(size(&mixed) > 1024 * 1024 * 9 / 10);

        // What fits is left alone.
        let mut small = vec![entry("a", vec!["x".into()]), entry("b", vec![])];
        let before = small.clone();
        fit(&mut small, MAX_LOGS_RESPONSE_BYTES);
        assert_eq!(small, before);
    }

    #[test]
    fn tail_and_since_are_bounded() {
        assert_eq!(LogWindow::new(None, false, None).unwrap().tail, 200);
        assert!(LogWindow::new(Some(0), false, None).is_err());
        assert!(LogWindow::new(Some(2001), false, None).is_err());
        assert!(LogWindow::new(Some(2000), true, None).is_ok());
        let window = LogWindow::new(None, false, None).unwrap();
        assert!(LogQuery::new(window, None, Some(3)).is_ok());
        assert!(LogQuery::new(window, None, Some(0)).is_err());
        let since = LogWindow::new(None, false, Some(1_780_000_000))
            .unwrap()
            .since;
        assert_eq!(since.unwrap().to_string(), "2026-05-28T20:26:40Z");
        assert!(LogWindow::new(None, false, Some(-1)).is_err());
        // Schema-valid, past every timestamp: the end of time, no lines.
        let end = LogWindow::new(None, false, Some(i64::MAX)).unwrap().since;
        assert_eq!(end, Some(jiff::Timestamp::MAX));
    }
}
