//! The App as the renderer takes it: every field rendering relies on,
//! checked once. Anyone with cluster access can edit the resource, and an
//! object the apiserver would refuse is better reported as what in the spec
//! is wrong: a typed value read unparsed (`Stored`) is refused here with the
//! rule its parser gave, and what the types leave open (names' lengths with
//! the app's, replicas, ports, labels) is checked. Past [`CheckedApp::of`],
//! [`super::render`] checks nothing.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::{Resource, ResourceExt};

use berth_cluster::apps::verified_domains;
use berth_cluster::crd::{
    App, LABEL_APP, LABEL_APP_UID, LABEL_ENVIRONMENT, LABEL_MANAGED_BY, LABEL_ORG, LABEL_PROCESS,
    LABEL_PROJECT, MANAGER, object_names,
};
use berth_domain::app::{AppConfig, AppProcess, AppVolume};
use berth_domain::certificate::CertificateFinding;
use berth_domain::container_paths::{HealthCheckPath, MountPath};
use berth_domain::image::ImageRef;
use berth_domain::names::{Hostname, Label, OBJECT_NAME, VolumeName};
use berth_domain::protocol::Protocol;
use berth_domain::schedule::{Schedule, TimeZone};
use berth_domain::size::{Size, VolumeSize};
use berth_domain::stored::{Stored, TextForm};

/// A job's name is its CronJob's plus 11 characters.
const MAX_CRON_JOB_NAME: usize = 52;
pub(super) const MAX_LABEL: usize = 63;
/// What Kubernetes asks of Service names (and so of an app's, and of what it
/// renders).
const DNS1035_LABEL: Label = Label::dns1035(MAX_LABEL);

/// What in the App is invalid: the field (a path in the App resource) and the
/// rule it breaks. Never the value, which may be a secret in the wrong place.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field} {rule}")]
pub struct RenderError {
    pub field: String,
    pub rule: String,
}

impl RenderError {
    pub(super) fn new(field: impl Into<String>, rule: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            rule: rule.into(),
        }
    }
}

/// An App every field of which rendering relies on has been checked, in the
/// order rendering would meet them, so the first fault reported is the same.
pub struct CheckedApp<'a> {
    pub(super) app: &'a App,
    /// The image every container runs: an App without one (awaiting its
    /// first build) is never checked, see [`CheckedApp::of`].
    pub(super) image: &'a ImageRef,
    /// The path the probes of its always-on `http` processes with a port
    /// request.
    pub(super) health_check_path: Option<&'a HealthCheckPath>,
    pub(super) context: AppContext<'a>,
    pub(super) processes: Vec<CheckedProcess<'a>>,
    pub(super) volumes: Vec<CheckedVolume<'a>>,
    /// Its domains its organization has proven, each once, in order: those
    /// it serves.
    pub(super) domains: Vec<&'a Hostname>,
    /// What the controller found of its hosts' certificates: the App's
    /// status, unless [`CheckedApp::with_certificates`] says newer.
    pub(super) certificates: &'a [CertificateFinding],
}

impl<'a> CheckedApp<'a> {
    pub fn of(app: &'a App) -> Result<Self, RenderError> {
        let context = AppContext::of(app)?;
        let config = &app.spec.config;
        check_lists(config)?;
        let image = config
            .image
            .as_ref()
            .ok_or_else(|| RenderError::new("spec.image", "must be an image reference"))?;
        let image = parsed(image, "spec.image".to_owned())?;
        let health_check_path = (config.health_check_path.as_ref())
            .map(|path| parsed(path, "spec.healthCheckPath".to_owned()))
            .transpose()?;
        let volumes = config
            .volumes
            .iter()
            .enumerate()
            .map(|(index, volume)| CheckedVolume::of(&context, volume, index))
            .collect::<Result<Vec<_>, _>>()?;
        let mut processes = Vec::with_capacity(config.processes.len());
        for (index, process) in config.processes.iter().enumerate() {
            let field = format!("spec.processes[{index}]");
            processes.push(CheckedProcess::of(&context, process, &field)?);
        }
        check_env(config)?;
        let domains = domains(app)?;
        // The release Job's name is a label of its pods (`job-name`).
        if !config.release_command.is_empty()
            && !DNS1035_LABEL.holds(&object_names::release_job(
                context.name,
                app.spec.release.revision,
            ))
        {
            return Err(RenderError::new(
                "metadata.name",
                "is too long for its release Job's name ({name}--release-{revision}, at most 63 characters)",
            ));
        }
        Ok(Self {
            app,
            image,
            health_check_path,
            context,
            processes,
            volumes,
            domains,
            certificates: app.certificates(),
        })
    }

    /// Rendered with what the controller has just found of its hosts'
    /// certificates.
    pub fn with_certificates(self, certificates: &'a [CertificateFinding]) -> Self {
        Self {
            certificates,
            ..self
        }
    }
}

/// The environment variables every container of the app takes.
fn check_env(config: &AppConfig) -> Result<(), RenderError> {
    for (index, var) in config.env.iter().enumerate() {
        let field = format!("spec.env[{index}]");
        if var.name.is_empty() || var.name.contains('=') {
            return Err(RenderError::new(
                format!("{field}.name"),
                "must be an environment variable name",
            ));
        }
        if var.value.is_some() && var.secret.is_some() {
            return Err(RenderError::new(
                field,
                "must have either a value or a secret, not both",
            ));
        }
    }
    Ok(())
}

/// A volume whose name, claim name, mount path and size have been checked.
pub(super) struct CheckedVolume<'a> {
    pub(super) name: &'a VolumeName,
    pub(super) mount_path: &'a MountPath,
    pub(super) claim_name: String,
    pub(super) size: &'a VolumeSize,
}

impl<'a> CheckedVolume<'a> {
    fn of(
        context: &AppContext<'_>,
        volume: &'a AppVolume,
        index: usize,
    ) -> Result<Self, RenderError> {
        let field = format!("spec.volumes[{index}]");
        let name = parsed(&volume.name, format!("{field}.name"))?;
        let claim_name = object_names::claim(context.name, name.as_str());
        if !is_dns1123_subdomain(&claim_name) {
            return Err(RenderError::new(
                format!("{field}.name"),
                "is too long for a claim name with the app's name",
            ));
        }
        Ok(Self {
            name,
            mount_path: parsed(&volume.mount_path, format!("{field}.mountPath"))?,
            claim_name,
            size: parsed(&volume.size, format!("{field}.size"))?,
        })
    }
}

/// A value of the App as it was read, or the App's fault: `field` and the
/// rule its text breaks.
fn parsed<T: TextForm>(value: &Stored<T>, field: String) -> Result<&T, RenderError> {
    value
        .parsed()
        .map_err(|invalid| RenderError::new(field, invalid.0.clone()))
}

/// The app's domains its organization has proven (all of them for an App
/// written before domains were proven, see [`verified_domains`]): Ingress
/// hosts, each once. A domain not yet proven is served by nothing, and gets
/// no certificate.
fn domains(app: &App) -> Result<Vec<&Hostname>, RenderError> {
    let verified = verified_domains(app);
    let mut domains = Vec::new();
    for (index, domain) in app.spec.config.domains.iter().enumerate() {
        let domain = parsed(domain, format!("spec.domains[{index}]"))?;
        let proven = verified
            .as_ref()
            .is_none_or(|verified| verified.contains(&domain.as_str()));
        if proven && !domains.contains(&domain) {
            domains.push(domain);
        }
    }
    Ok(domains)
}

/// What every object of the app shares.
pub(super) struct AppContext<'a> {
    pub(super) name: &'a str,
    pub(super) namespace: &'a str,
    pub(super) org: &'a str,
    pub(super) project: &'a str,
    pub(super) environment: &'a str,
    pub(super) owner: OwnerReference,
    /// Berth's labels and `berth.dev/app`.
    pub(super) labels: BTreeMap<String, String>,
    /// The first always-on `http` process with a port, which the Ingress routes to.
    pub(super) web: Option<(String, i32)>,
}

impl<'a> AppContext<'a> {
    fn of(app: &'a App) -> Result<Self, RenderError> {
        let name = app.metadata.name.as_deref().unwrap_or_default();
        if !DNS1035_LABEL.holds(name) {
            return Err(RenderError::new(
                "metadata.name",
                "must be a DNS-1035 label (lowercase letters, digits and '-', starting with a letter, at most 63 characters)",
            ));
        }
        let namespace = app
            .metadata
            .namespace
            .as_deref()
            .ok_or_else(|| RenderError::new("metadata.namespace", "must be set"))?;
        let mut owner = app.controller_owner_ref(&()).ok_or_else(|| {
            RenderError::new("metadata.uid", "must be set (the App must be stored)")
        })?;
        // Foreground deletion of the App then waits for its workloads.
        owner.block_owner_deletion = Some(true);
        let label = |key: &'static str| -> Result<&'a str, RenderError> {
            match app.labels().get(key) {
                Some(value) if is_label_value(value) && !value.is_empty() => Ok(value.as_str()),
                _ => Err(RenderError::new(
                    format!("metadata.labels[{key}]"),
                    "must be set to a label value (at most 63 characters)",
                )),
            }
        };
        let org = label(LABEL_ORG)?;
        let project = label(LABEL_PROJECT)?;
        let environment = label(LABEL_ENVIRONMENT)?;
        let labels = BTreeMap::from([
            (LABEL_ORG.to_owned(), org.to_owned()),
            (LABEL_PROJECT.to_owned(), project.to_owned()),
            (LABEL_ENVIRONMENT.to_owned(), environment.to_owned()),
            (LABEL_MANAGED_BY.to_owned(), MANAGER.to_owned()),
            (LABEL_APP.to_owned(), name.to_owned()),
        ]);
        let web = app
            .spec
            .config
            .processes
            .iter()
            .find(|p| !p.is_scheduled() && p.protocol == Protocol::Http && p.port.is_some())
            .and_then(|p| Some((object_names::workload(name, &p.name), p.port?)));
        Ok(Self {
            name,
            namespace,
            org,
            project,
            environment,
            owner,
            labels,
            web,
        })
    }

    pub(super) fn metadata(&self, name: String, labels: BTreeMap<String, String>) -> ObjectMeta {
        ObjectMeta {
            name: Some(name),
            namespace: Some(self.namespace.to_owned()),
            labels: Some(labels),
            owner_references: Some(vec![self.owner.clone()]),
            ..Default::default()
        }
    }

    /// A claim has no owner; its App's uid, as a label, says whose it is.
    pub(super) fn claim_labels(&self) -> BTreeMap<String, String> {
        let mut labels = self.labels.clone();
        labels.insert(LABEL_APP_UID.to_owned(), self.owner.uid.clone());
        labels
    }

    fn process_labels(&self, process: &str) -> BTreeMap<String, String> {
        let mut labels = self.labels.clone();
        labels.insert(LABEL_PROCESS.to_owned(), process.to_owned());
        labels
    }

    /// What a process's pods are selected by: stable across spec changes, as
    /// a Deployment's selector is immutable.
    pub(super) fn selector(&self, process: &str) -> BTreeMap<String, String> {
        BTreeMap::from([
            (LABEL_APP.to_owned(), self.name.to_owned()),
            (LABEL_PROCESS.to_owned(), process.to_owned()),
        ])
    }
}

/// No two processes or volumes of the same name: they would render to the
/// same objects.
fn check_lists(config: &AppConfig) -> Result<(), RenderError> {
    if config.processes.is_empty() {
        return Err(RenderError::new(
            "spec.processes",
            "must hold at least one process",
        ));
    }
    let mut seen = BTreeSet::new();
    for (index, process) in config.processes.iter().enumerate() {
        if !seen.insert(process.name.as_str()) {
            return Err(RenderError::new(
                format!("spec.processes[{index}].name"),
                "must differ from every other process's name",
            ));
        }
    }
    let mut seen = BTreeSet::new();
    for (index, volume) in config.volumes.iter().enumerate() {
        if !seen.insert(volume.name.text()) {
            return Err(RenderError::new(
                format!("spec.volumes[{index}].name"),
                "must differ from every other volume's name",
            ));
        }
    }
    Ok(())
}

/// A process whose fields rendering relies on have been checked.
pub(super) struct CheckedProcess<'a> {
    pub(super) spec: &'a AppProcess,
    /// The Deployment, Service, HPA or CronJob name.
    pub(super) object_name: String,
    pub(super) size: &'a Size,
    /// When it runs, as a CronJob: None for an always-on process.
    pub(super) schedule: Option<&'a Schedule>,
    /// The time zone of its schedule: None for the default.
    pub(super) time_zone: Option<&'a TimeZone>,
    pub(super) protocol: Protocol,
    pub(super) labels: BTreeMap<String, String>,
}

impl<'a> CheckedProcess<'a> {
    fn of(
        context: &AppContext<'_>,
        spec: &'a AppProcess,
        field: &str,
    ) -> Result<Self, RenderError> {
        if !OBJECT_NAME.holds(&spec.name) {
            return Err(RenderError::new(
                format!("{field}.name"),
                "must be a DNS label (lowercase letters, digits and '-', at most 63 characters)",
            ));
        }
        let object_name = object_names::workload(context.name, &spec.name);
        let limit = if spec.is_scheduled() {
            MAX_CRON_JOB_NAME
        } else {
            MAX_LABEL
        };
        if !DNS1035_LABEL.holds(&object_name) || object_name.len() > limit {
            return Err(RenderError::new(
                format!("{field}.name"),
                format!(
                    "is too long: the app's and the process's names joined by '-' must be at most {limit} characters"
                ),
            ));
        }
        let size = parsed(&spec.size, format!("{field}.size"))?;
        if let Some(port) = spec.port
            && !(1..=65535).contains(&port)
        {
            return Err(RenderError::new(
                format!("{field}.port"),
                "must be between 1 and 65535",
            ));
        }
        let protocol = *parsed(&spec.protocol, format!("{field}.protocol"))?;
        if spec.min_replicas < 0 {
            return Err(RenderError::new(
                format!("{field}.minReplicas"),
                "must be 0 or more",
            ));
        }
        if spec.max_replicas < spec.min_replicas {
            return Err(RenderError::new(
                format!("{field}.maxReplicas"),
                "must be at least minReplicas",
            ));
        }
        let schedule = (spec.schedule.as_ref())
            .map(|schedule| parsed(schedule, format!("{field}.schedule")))
            .transpose()?;
        let time_zone = (spec.time_zone.as_ref())
            .map(|zone| parsed(zone, format!("{field}.timeZone")))
            .transpose()?;
        Ok(Self {
            spec,
            labels: context.process_labels(&spec.name),
            object_name,
            size,
            schedule,
            time_zone,
            protocol,
        })
    }

    /// The container port's name, also the Service port's: a DNS-1035 label.
    pub(super) fn port_name(&self) -> String {
        self.protocol.as_str().to_owned()
    }
}

fn is_dns1123_subdomain(value: &str) -> bool {
    value.len() <= 253 && value.split('.').all(|label| OBJECT_NAME.holds(label))
}

/// `(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?`, at most 63 characters.
fn is_label_value(value: &str) -> bool {
    value.len() <= MAX_LABEL
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && value
            .bytes()
            .next()
            .is_none_or(|b| b.is_ascii_alphanumeric())
        && value
            .bytes()
            .last()
            .is_none_or(|b| b.is_ascii_alphanumeric())
}
