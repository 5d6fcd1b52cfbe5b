//! What the API answers about apps (`berth_records::apps::record`): the App
//! record and its pods (spec part 2), built from the App resource and the
//! pods read with it.

use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;

use berth_cluster::crd::{App, LABEL_PROCESS};
use berth_cluster::timestamp;
use berth_domain::Permission;
use berth_domain::app::{AppEnvVar, AppProcess, AppVolume};
use berth_domain::paths::EnvironmentPath;
use berth_records::apps::record::{
    AppRecord, BuildSettingsRecord, EnvRecord, PodRecord, ProcessRecord, VolumeRecord,
};
use berth_store::identity::Principal;

/// The reason of an app from source that has no image yet, until the
/// controller reports on it.
pub const AWAITING_BUILD: &str = "AwaitingBuild";

/// Whether plain env values may be shown to the caller (`secret-read`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnvValues {
    Shown,
    Hidden,
}

impl EnvValues {
    /// What `caller` may see of them.
    fn for_caller(caller: &Principal) -> Self {
        if caller.can(Permission::SecretRead) {
            Self::Shown
        } else {
            Self::Hidden
        }
    }
}

/// The record of an app of `environment`, as the caller may see it.
pub fn record_of(app: &App, environment: &EnvironmentPath, caller: &Principal) -> AppRecord {
    app_record(app, environment, EnvValues::for_caller(caller))
}

/// The record of an app of `environment`.
pub fn app_record(app: &App, environment: &EnvironmentPath, values: EnvValues) -> AppRecord {
    let config = &app.spec.config;
    let source = config.source.as_ref();
    let status = app.status.clone().unwrap_or_default();
    // A status written for an older spec says nothing about this one yet.
    let observed = status.observed_generation.is_some()
        && status.observed_generation == app.metadata.generation;
    let (ready, reason, message) = if observed {
        (status.ready, status.reason, status.message)
    } else if config.image.is_none() {
        (
            false,
            Some(AWAITING_BUILD.to_owned()),
            Some("the app's first build is awaited".to_owned()),
        )
    } else {
        (false, Some("Progressing".to_owned()), None)
    };
    AppRecord {
        name: app.name_any(),
        project: environment.project.to_string(),
        environment: environment.environment.to_string(),
        namespace: app.namespace().unwrap_or_default(),
        image: config.image.as_ref().map(ToString::to_string),
        git_repo: source.map(|source| source.git_repo.clone()),
        git_ref: source.and_then(|source| source.git_ref.clone()),
        build: source.map(|source| BuildSettingsRecord {
            strategy: source.build.strategy.as_str().to_owned(),
            context_dir: source.build.context_dir.clone(),
            dockerfile: source.build.dockerfile.clone(),
        }),
        git_secret: source.and_then(|source| source.git_secret.clone()),
        url: status.url,
        ready,
        reason,
        message,
        processes: config.processes.iter().map(process_record).collect(),
        env: config
            .env
            .iter()
            .map(|var| env_record(var, values))
            .collect(),
        domains: (config.domains.iter())
            .map(|domain| domain.text().to_owned())
            .collect(),
        volumes: config.volumes.iter().map(volume_record).collect(),
        health_check_path: config.health_check_path.as_ref().map(ToString::to_string),
        fs_group: config.fs_group,
        release_command: config.release_command.clone(),
        auto_rollback: config.auto_rollback,
        revision: app.spec.release.revision,
        running_revision: status.running_revision,
        created_at: app.metadata.creation_timestamp.as_ref().map(timestamp),
    }
}

fn process_record(process: &AppProcess) -> ProcessRecord {
    ProcessRecord {
        name: process.name.clone(),
        command: process.command.clone(),
        port: process.port,
        size: process.size.to_string(),
        min_replicas: process.min_replicas,
        max_replicas: process.max_replicas,
        schedule: process.schedule.as_ref().map(ToString::to_string),
        time_zone: process.time_zone.as_ref().map(ToString::to_string),
        protocol: process.protocol.to_string(),
    }
}

fn env_record(var: &AppEnvVar, values: EnvValues) -> EnvRecord {
    EnvRecord {
        name: var.name.clone(),
        value: match values {
            EnvValues::Shown => var.value.clone(),
            EnvValues::Hidden => None,
        },
        secret: var.secret.clone(),
    }
}

fn volume_record(volume: &AppVolume) -> VolumeRecord {
    VolumeRecord {
        name: volume.name.to_string(),
        mount_path: volume.mount_path.to_string(),
        size: volume.size.to_string(),
    }
}

pub fn pod_record(pod: &Pod) -> PodRecord {
    let status = pod.status.clone().unwrap_or_default();
    let phase = status
        .phase
        .as_deref()
        .map(str::to_ascii_lowercase)
        .filter(|p| ["pending", "running", "succeeded", "failed"].contains(&p.as_str()))
        .unwrap_or_else(|| "unknown".to_owned());
    let ready = status
        .conditions
        .iter()
        .flatten()
        .any(|c| c.type_ == "Ready" && c.status == "True");
    let containers = status.container_statuses.unwrap_or_default();
    let restarts = containers.iter().map(|c| c.restart_count).sum();
    // Why a container is not running, else why the pod is where it is.
    let reason = containers
        .iter()
        .filter_map(|c| c.state.as_ref())
        .find_map(|state| {
            state
                .waiting
                .as_ref()
                .and_then(|w| w.reason.clone())
                .or_else(|| state.terminated.as_ref().and_then(|t| t.reason.clone()))
        })
        .or(status.reason)
        .or_else(|| {
            status
                .conditions
                .iter()
                .flatten()
                .find(|c| c.status == "False" && c.reason.is_some())
                .and_then(|c| c.reason.clone())
        });
    PodRecord {
        name: pod.name_any(),
        process: pod.labels().get(LABEL_PROCESS).cloned(),
        phase,
        ready,
        restarts,
        reason,
        node: pod.spec.as_ref().and_then(|s| s.node_name.clone()),
        started_at: status.start_time.as_ref().map(timestamp),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pods_speak_the_apis_words() {
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "shop-web-1", "labels": {"berth.dev/process": "web"}},
            "spec": {"containers": [{"name": "web"}], "nodeName": "n1"},
            "status": {
                "phase": "Running",
                "startTime": "2026-01-01T00:00:00Z",
                "conditions": [{"type": "Ready", "status": "False"}],
                "containerStatuses": [
                    {"name": "web", "image": "x", "imageID": "", "ready": false, "restartCount": 3,
                     "state": {"waiting": {"reason": "CrashLoopBackOff"}}}
                ]
            }
        }))
        .expect("a pod");
        let record = pod_record(&pod);
        assert_eq!(record.phase, "running");
        assert!(!record.ready);
        assert_eq!(record.restarts, 3);
        assert_eq!(record.reason.as_deref(), Some("CrashLoopBackOff"));
        assert_eq!(record.process.as_deref(), Some("web"));
        assert_eq!(record.node.as_deref(), Some("n1"));
        assert!(record.started_at.is_some());

        let pending: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p"},
            "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}
        }))
        .expect("a pod");
        let record = pod_record(&pending);
        assert_eq!(record.phase, "pending");
        assert_eq!(record.reason.as_deref(), Some("Unschedulable"));
    }
}
