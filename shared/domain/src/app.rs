//! The App model: what an app runs and how, as a release snapshots it and
//! a rollback restores it, with its invariants. The API makes it from its
//! bodies (each value parsed once), the App resource stores it (its spec's
//! serde form, `berth_cluster::crd::AppSpec`), the release history keeps it,
//! and the controller renders it; all read the same types.
//!
//! A value the resource may hold unparsed is a [`Stored`] (see
//! `crate::stored`): anyone with cluster access can edit an App.

use serde::{Deserialize, Serialize};

use crate::Invalid;
use crate::container_paths::{HealthCheckPath, MountPath};
use crate::image::ImageRef;
use crate::names::{Hostname, VolumeName};
use crate::parts::SecretKeyRef;
use crate::protocol::Protocol;
use crate::schedule::{Schedule, TimeZone};
use crate::size::{Size, VolumeSize};
use crate::stored::{Stored, TextForm};

#[cfg(feature = "test-support")]
pub mod testing;

/// An app's configuration: what a release snapshots and a rollback restores.
/// Values are parsed at the API's edge; one edited in the cluster into what
/// the API refuses is reported in the App's status (`InvalidSpec`), and
/// nothing of the App is rendered until it is fixed.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct AppConfig {
    /// The image that runs. None only for an app built from source whose
    /// first build has not succeeded: it renders no workloads
    /// (`AwaitingBuild`). A built image is pinned by digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<Stored<ImageRef>>,
    /// Where Berth builds the app's image from, when it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<AppSource>,
    pub processes: Vec<AppProcess>,
    #[serde(default)]
    pub env: Vec<AppEnvVar>,
    #[serde(default)]
    pub domains: Vec<Stored<Hostname>>,
    #[serde(default)]
    pub volumes: Vec<AppVolume>,
    /// The HTTP path of readiness and liveness probes of `http` processes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health_check_path: Option<Stored<HealthCheckPath>>,
    /// The pods' `fsGroup`, owning the volumes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fs_group: Option<i64>,
    /// Run as a Job from this configuration's image and env before its
    /// workloads change, whenever what runs changes (see
    /// [`AppConfig::runs_like`]); empty: no release phase.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub release_command: Vec<String>,
    /// Whether a revision whose rollout fails is rolled back to the last
    /// configuration that became available (true unless turned off).
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub auto_rollback: bool,
}

fn yes() -> bool {
    true
}

#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_true(value: &bool) -> bool {
    *value
}

impl AppConfig {
    /// Whether both run the same code the same way: image, each process's
    /// command, env and release command. A change of anything else (sizes,
    /// replicas, domains, volumes…) needs no release phase.
    pub fn runs_like(&self, other: &AppConfig) -> bool {
        let commands = |config: &AppConfig| -> Vec<(String, Vec<String>)> {
            config
                .processes
                .iter()
                .map(|process| (process.name.clone(), process.command.clone()))
                .collect()
        };
        self.image == other.image
            && self.env == other.env
            && self.release_command == other.release_command
            && commands(self) == commands(other)
    }

    /// Its hostnames in their normal form (lowercase, no trailing dot), in
    /// order: what claims, releases and checks a host; a refused one is
    /// none (a change carries none, see [`Self::first_refused`]).
    pub fn hostnames(&self) -> impl Iterator<Item = &Hostname> {
        self.domains
            .iter()
            .filter_map(|domain| domain.parsed().ok())
    }

    /// The first of its stored values whose text its parser refuses (the
    /// App was edited in the cluster, or stored before a rule it breaks),
    /// by its field in the API's bodies, and the rule it breaks.
    pub fn first_refused(&self) -> Option<(String, &Invalid)> {
        fn refused<T: TextForm>(
            value: &Stored<T>,
            field: impl FnOnce() -> String,
        ) -> Option<(String, &Invalid)> {
            value.parsed().err().map(|rule| (field(), rule))
        }
        let image = (self.image.iter()).map(|image| refused(image, || "image".to_owned()));
        let processes = self.processes.iter().enumerate().flat_map(|(i, process)| {
            [
                refused(&process.size, || format!("processes[{i}].size")),
                (process.schedule.as_ref())
                    .and_then(|schedule| refused(schedule, || format!("processes[{i}].schedule"))),
                (process.time_zone.as_ref())
                    .and_then(|zone| refused(zone, || format!("processes[{i}].time_zone"))),
                refused(&process.protocol, || format!("processes[{i}].protocol")),
            ]
        });
        let domains = (self.domains.iter().enumerate())
            .map(|(i, domain)| refused(domain, || format!("domains[{i}]")));
        let volumes = self.volumes.iter().enumerate().flat_map(|(i, volume)| {
            [
                refused(&volume.name, || format!("volumes[{i}].name")),
                refused(&volume.mount_path, || format!("volumes[{i}].mount_path")),
                refused(&volume.size, || format!("volumes[{i}].size")),
            ]
        });
        let health_check_path = (self.health_check_path.iter())
            .map(|path| refused(path, || "health_check_path".to_owned()));
        image
            .chain(processes)
            .chain(domains)
            .chain(volumes)
            .chain(health_check_path)
            .flatten()
            .next()
    }

    /// This configuration restored over `current`: a volume that has grown
    /// since keeps its current size (volumes never shrink).
    pub fn with_grown_volumes(mut self, current: &AppConfig) -> AppConfig {
        for volume in &mut self.volumes {
            if let Some(now) = current.volumes.iter().find(|v| v.name == volume.name)
                && let (Ok(now_size), Ok(restored_size)) = (now.size.parsed(), volume.size.parsed())
                && now_size > restored_size
            {
                volume.size.clone_from(&now.size);
            }
        }
        self
    }
}

/// A git repository Berth builds an app's image from (see [`Build`]).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct AppSource {
    /// An `https://` URL.
    pub git_repo: String,
    /// A branch, tag or commit; the repository's default branch when None.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_ref: Option<String>,
    #[serde(default)]
    pub build: BuildSettings,
    /// A secret of the environment holding the credential to clone with
    /// (key `token`, and `username` optionally); the build alone reads it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_secret: Option<String>,
}

/// How a build makes the image.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct BuildSettings {
    pub strategy: BuildStrategy,
    /// The directory of the repository to build, relative to its root;
    /// the root when None.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_dir: Option<String>,
    /// The Dockerfile's path relative to the context directory;
    /// `Dockerfile` when None.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dockerfile: Option<String>,
}

/// `auto`: the Dockerfile if the repository has one, else buildpacks.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, utoipa::ToSchema)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum BuildStrategy {
    #[default]
    Auto,
    Dockerfile,
    Buildpacks,
}

impl BuildStrategy {
    pub fn as_str(self) -> &'static str {
        match self {
            BuildStrategy::Auto => "auto",
            BuildStrategy::Dockerfile => "dockerfile",
            BuildStrategy::Buildpacks => "buildpacks",
        }
    }
}

/// One process of an app: always-on (a Deployment, with a Service when it has
/// a port) or scheduled (a CronJob, when it has a schedule).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct AppProcess {
    pub name: String,
    /// Replaces the image's entrypoint when not empty.
    #[serde(default)]
    pub command: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<i32>,
    /// A size preset (`nano`, `small`, `medium`, `large`) or `CPU/MEMORY`.
    pub size: Stored<Size>,
    pub min_replicas: i32,
    /// CPU autoscaling up to this many replicas when above `minReplicas`.
    pub max_replicas: i32,
    /// A 5-field cron expression: the process runs as a scheduled job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<Stored<Schedule>>,
    /// The IANA time zone of `schedule`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_zone: Option<Stored<TimeZone>>,
    /// `http` or `tcp`.
    pub protocol: Stored<Protocol>,
}

impl AppProcess {
    pub fn is_scheduled(&self) -> bool {
        self.schedule.is_some()
    }
}

/// An environment variable: a plain value or a reference to a secret's key.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct AppEnvVar {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<SecretKeyRef>,
}

/// A persistent volume: one PersistentVolumeClaim, kept when the volume is
/// removed from the app (and when the app is deleted, unless asked).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct AppVolume {
    pub name: Stored<VolumeName>,
    pub mount_path: Stored<MountPath>,
    /// A Kubernetes storage quantity such as `5Gi`; grows, never shrinks.
    pub size: Stored<VolumeSize>,
}
