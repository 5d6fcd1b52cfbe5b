//! What the API answers about apps: the App record, the App detail and its
//! pods (spec part 2), built from the App resource and the pods read with it.

use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use serde::{Deserialize, Serialize};

use berth_cluster::crd::{App, AppEnvVar, AppProcess, AppVolume, LABEL_PROCESS, SecretKeyRef};
use berth_cluster::timestamp;
use berth_domain::Permission;
use berth_domain::paths::EnvironmentPath;
use berth_store::identity::Principal;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct AppRecord {
    pub name: String,
    pub project: String,
    pub environment: String,
    pub namespace: String,
    /// Null for an app from source until its first build succeeded.
    pub image: Option<String>,
    /// The repository the app is built from; null for an image app (as are
    /// `git_ref`, `build` and `git_secret`).
    pub git_repo: Option<String>,
    /// The branch, tag or commit built; null: the default branch.
    pub git_ref: Option<String>,
    pub build: Option<BuildSettingsRecord>,
    /// The name of the secret cloned with (never its value).
    pub git_secret: Option<String>,
    pub url: Option<String>,
    pub ready: bool,
    pub reason: Option<String>,
    pub message: Option<String>,
    pub processes: Vec<ProcessRecord>,
    pub env: Vec<EnvRecord>,
    pub domains: Vec<String>,
    pub volumes: Vec<VolumeRecord>,
    /// Beyond the spec: what the flat create fields also set.
    pub health_check_path: Option<String>,
    pub fs_group: Option<i64>,
    /// Run as a Job before the workloads change (empty: none).
    pub release_command: Vec<String>,
    /// Whether a failed rollout is rolled back automatically.
    pub auto_rollback: bool,
    /// Beyond the spec: the release revision the app is at (the newest,
    /// `current` in its history).
    pub revision: i64,
    /// Beyond the spec: the revision whose configuration the app's
    /// workloads run — `revision` once the controller has applied it and
    /// its release command (if any) succeeded, an older one meanwhile or
    /// when that failed; null while nothing runs.
    pub running_revision: Option<i64>,
    pub created_at: Option<String>,
}

/// How the app's builds make its image.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
#[schema(as = BuildSettings)]
pub struct BuildSettingsRecord {
    /// `auto`, `dockerfile` or `buildpacks`.
    #[schema(pattern = "^(auto|dockerfile|buildpacks)$")]
    pub strategy: String,
    pub context_dir: Option<String>,
    pub dockerfile: Option<String>,
}

/// The reason of an app from source that has no image yet, until the
/// controller reports on it.
pub const AWAITING_BUILD: &str = "AwaitingBuild";

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct ProcessRecord {
    pub name: String,
    pub command: Vec<String>,
    pub port: Option<i32>,
    pub size: String,
    pub min_replicas: i32,
    pub max_replicas: i32,
    pub schedule: Option<String>,
    pub time_zone: Option<String>,
    pub protocol: String,
}

/// An environment variable as callers see it: the value only for those
/// holding `secret-read`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct EnvRecord {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<SecretKeyRef>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct VolumeRecord {
    pub name: String,
    pub mount_path: String,
    pub size: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct AppDetail {
    pub app: AppRecord,
    pub pods: Vec<PodRecord>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct PodRecord {
    pub name: String,
    pub process: Option<String>,
    /// `pending`, `running`, `succeeded`, `failed` or `unknown`.
    pub phase: String,
    pub ready: bool,
    pub restarts: i32,
    pub reason: Option<String>,
    pub node: Option<String>,
    pub started_at: Option<String>,
}

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
        image: config.image.clone(),
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
        domains: config.domains.clone(),
        volumes: config.volumes.iter().map(volume_record).collect(),
        health_check_path: config.health_check_path.clone(),
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
        size: process.size.clone(),
        min_replicas: process.min_replicas,
        max_replicas: process.max_replicas,
        schedule: process.schedule.clone(),
        time_zone: process.time_zone.clone(),
        protocol: process.protocol.clone(),
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
        name: volume.name.clone(),
        mount_path: volume.mount_path.clone(),
        size: volume.size.clone(),
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
