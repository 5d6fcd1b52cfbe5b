//! Running apps: their pods' logs, a rolling restart, and running a
//! scheduled process now. None of these changes the app's configuration, so
//! none adds a release revision.

use futures::StreamExt;
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, LogParams, PostParams};
use kube::{Resource, ResourceExt};
use serde::{Deserialize, Serialize};

use super::record::AppRecord;
use super::service::{self, record_of};
use crate::cluster::apps::{self as cluster_apps, AppPath};
use crate::cluster::crd::{LABEL_PROCESS, object_names};
use crate::cluster::ownership;
use crate::cluster::{is_conflict, is_not_found, status_of};
use crate::identity::Principal;
use crate::{ApiError, clock};

/// At most this many pods' logs are read (spec part 8), the newest first.
pub const MAX_LOG_PODS: usize = 10;
pub const DEFAULT_TAIL: i64 = 200;
pub const MAX_TAIL: i64 = 2000;
/// Longer lines are cut, so one runaway line cannot fill a response.
pub const MAX_LINE_BYTES: usize = 16 * 1024;
const LINE_CUT_MARKER: &str = " [… line cut at 16 KiB by Berth]";

/// One pod's log (spec part 2).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct LogEntry {
    pub pod: String,
    pub process: Option<String>,
    pub lines: Vec<String>,
    pub error: Option<String>,
}

/// What `getAppLogs` asks for, checked.
#[derive(Debug, Clone)]
pub struct LogQuery {
    pub tail: i64,
    pub process: Option<String>,
    pub previous: bool,
}

impl LogQuery {
    pub fn new(
        tail: Option<i64>,
        process: Option<String>,
        previous: bool,
    ) -> Result<Self, ApiError> {
        let tail = tail.unwrap_or(DEFAULT_TAIL);
        if !(1..=MAX_TAIL).contains(&tail) {
            return Err(ApiError::InvalidRequest(format!(
                "tail: must be 1 to {MAX_TAIL}"
            )));
        }
        Ok(Self {
            tail,
            process,
            previous,
        })
    }
}

/// The logs of the app's newest pods (of one process, if asked), read at
/// once. A pod whose log cannot be read says why in its entry.
pub async fn logs(
    client: &kube::Client,
    caller: &Principal,
    path: &AppPath,
    query: &LogQuery,
) -> Result<Vec<LogEntry>, ApiError> {
    let org = &caller.user.org;
    let (app, pods) = tokio::join!(
        cluster_apps::get_visible(client, org, path),
        cluster_apps::pods(client, org, path)
    );
    app?;
    let pods: Vec<Pod> = pods?
        .into_iter()
        .filter(|pod| {
            query.process.as_deref().is_none_or(|process| {
                pod.labels().get(LABEL_PROCESS).map(String::as_str) == Some(process)
            })
        })
        .take(MAX_LOG_PODS)
        .collect();
    let api: Api<Pod> = Api::namespaced(client.clone(), &path.namespace());
    let entries = futures::stream::iter(pods)
        .map(|pod| {
            let api = api.clone();
            async move { pod_log(&api, &pod, query).await }
        })
        .buffered(MAX_LOG_PODS)
        .collect::<Vec<_>>()
        .await;
    Ok(entries)
}

async fn pod_log(api: &Api<Pod>, pod: &Pod, query: &LogQuery) -> LogEntry {
    let name = pod.name_any();
    let process = pod.labels().get(LABEL_PROCESS).cloned();
    let params = LogParams {
        // Berth names each pod's one container after its process.
        container: process.clone(),
        tail_lines: Some(query.tail),
        previous: query.previous,
        ..LogParams::default()
    };
    // A pod no node runs has no log yet; a real apiserver answers such a
    // request with nothing at all, so say why here.
    let scheduled = pod
        .spec
        .as_ref()
        .is_some_and(|spec| spec.node_name.is_some());
    if !scheduled {
        return LogEntry {
            pod: name,
            process,
            lines: Vec::new(),
            error: Some("the pod is not scheduled on a node yet".into()),
        };
    }
    let (lines, error) = match api.logs(&name, &params).await {
        Ok(text) => (split_lines(&text), None),
        Err(error) => (Vec::new(), Some(why_no_log(&name, &error))),
    };
    LogEntry {
        pod: name,
        process,
        lines,
        error,
    }
}

/// The lines as the container wrote them, each cut at 16 KiB.
fn split_lines(text: &str) -> Vec<String> {
    text.lines()
        .map(|line| {
            if line.len() <= MAX_LINE_BYTES {
                return line.to_owned();
            }
            let mut end = MAX_LINE_BYTES;
            while !line.is_char_boundary(end) {
                end -= 1;
            }
            format!("{}{LINE_CUT_MARKER}", &line[..end])
        })
        .collect()
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
    Ok(record_of(&restarted, path, caller))
}

/// Runs a scheduled process now: a Job from its CronJob's template, as
/// `kubectl create job --from=cronjob/…` makes it. Answers the Job's name.
/// Only a CronJob the app controls is read, and the Job is created (never
/// applied) under a new random name, so it can never change an existing Job.
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
    let name = object_names::workload(&path.app, process);
    let cron_jobs: Api<CronJob> = Api::namespaced(client.clone(), &path.namespace());
    let cron_job = cron_jobs.get_opt(&name).await?.ok_or_else(|| {
        ApiError::Conflict(format!(
            "the CronJob of process {process} is not in the cluster yet; try again in a moment"
        ))
    })?;
    // Only the app's own CronJob: a Job made from another's would run its
    // template, with the app's name on it.
    if !app
        .uid()
        .is_some_and(|uid| ownership::is_controlled_by(&cron_job.metadata, &uid))
    {
        return Err(ApiError::Conflict(format!(
            "CronJob {name} belongs to someone else, not to this app; Berth runs nothing from it"
        )));
    }
    let job = job_from(&cron_job)?;
    match Api::<Job>::namespaced(client.clone(), &path.namespace())
        .create(&PostParams::default(), &job)
        .await
    {
        Ok(created) => Ok(created.name_any()),
        Err(error) if is_conflict(&error) => Err(ApiError::Conflict(
            "a run of that name exists already; try again".into(),
        )),
        // The namespace went with its environment meanwhile.
        Err(error) if is_not_found(&error) => {
            Err(crate::Missing::environment(&path.project, &path.environment).into())
        }
        Err(error) => Err(error.into()),
    }
}

/// kubectl's recipe: the CronJob's job template, the annotation
/// `cronjob.kubernetes.io/instantiate: manual`, and an owner reference to the
/// CronJob; the name gets a random suffix, so runs in one second don't collide.
fn job_from(cron_job: &CronJob) -> Result<Job, ApiError> {
    let template = cron_job
        .spec
        .as_ref()
        .map(|spec| spec.job_template.clone())
        .ok_or_else(|| ApiError::Internal("a CronJob without a spec".into()))?;
    let template_meta = template.metadata.unwrap_or_default();
    let mut annotations = template_meta.annotations.unwrap_or_default();
    annotations.insert("cronjob.kubernetes.io/instantiate".into(), "manual".into());
    let suffix: String = (0..8)
        .map(|_| {
            const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
            ALPHABET[rand::random_range(0..ALPHABET.len())] as char
        })
        .collect();
    Ok(Job {
        metadata: ObjectMeta {
            name: Some(format!("{}-m{suffix}", cron_job.name_any())),
            namespace: cron_job.namespace(),
            labels: template_meta.labels,
            annotations: Some(annotations),
            owner_references: cron_job.controller_owner_ref(&()).map(|owner| vec![owner]),
            ..ObjectMeta::default()
        },
        spec: template.spec,
        status: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_kept_as_written_and_cut_at_16_kib() {
        let long = "é".repeat(MAX_LINE_BYTES);
        let text = format!("{{\"level\":\"info\"}}\n  indented\t\n{long}\n");
        let lines = split_lines(&text);
        assert_eq!(lines[0], "{\"level\":\"info\"}");
        assert_eq!(lines[1], "  indented\t");
        assert!(lines[2].ends_with(LINE_CUT_MARKER));
        assert!(lines[2].len() <= MAX_LINE_BYTES + LINE_CUT_MARKER.len());
        assert_eq!(lines.len(), 3);
    }

    #[test]
    fn tail_is_bounded() {
        assert_eq!(LogQuery::new(None, None, false).unwrap().tail, 200);
        assert!(LogQuery::new(Some(0), None, false).is_err());
        assert!(LogQuery::new(Some(2001), None, false).is_err());
        assert!(LogQuery::new(Some(2000), None, true).is_ok());
    }
}
