//! What an app becomes in the cluster: one pure function from an [`App`] to
//! the Kubernetes objects that run it. The controller applies them; this is
//! the place to read what they are.
//!
//! Per always-on process (no schedule): a Deployment, a Service when it has a
//! port, and a CPU HorizontalPodAutoscaler when it may scale above its
//! minimum. Per scheduled process: a CronJob. Per app: an Ingress for its
//! hosts, and one PersistentVolumeClaim per volume (not owned by the App, so
//! data outlives it).
//!
//! It takes the App as [`CheckedApp::of`] checked it (`checked.rs`), and
//! checks nothing itself.

mod checked;
pub mod tls;

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{
    Deployment, DeploymentSpec, DeploymentStrategy, RollingUpdateDeployment,
};
use k8s_openapi::api::autoscaling::v2::{
    CrossVersionObjectReference, HorizontalPodAutoscaler, HorizontalPodAutoscalerSpec, MetricSpec,
    MetricTarget, ResourceMetricSource,
};
use k8s_openapi::api::batch::v1::{CronJob, CronJobSpec, Job, JobSpec, JobTemplateSpec};
use k8s_openapi::api::core::v1::{
    Container, ContainerPort, EnvVar, EnvVarSource, ExecAction, HTTPGetAction, Lifecycle,
    LifecycleHandler, LocalObjectReference, PersistentVolumeClaim, PersistentVolumeClaimSpec,
    PersistentVolumeClaimVolumeSource, PodSecurityContext, PodSpec, PodTemplateSpec, Probe,
    ResourceRequirements, SeccompProfile, SecretKeySelector, SecurityContext, Service, ServicePort,
    ServiceSpec, TCPSocketAction, Volume, VolumeMount, VolumeResourceRequirements,
};
use k8s_openapi::api::networking::v1::{
    HTTPIngressPath, HTTPIngressRuleValue, Ingress, IngressBackend, IngressRule,
    IngressServiceBackend, IngressSpec, ServiceBackendPort,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as K8sQuantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use sha2::{Digest, Sha256};

use berth_cluster::crd::{
    ANNOTATION_REVISION, App, COMMAND_CONTAINER, Command, LABEL_COMMAND, LABEL_RELEASE,
    object_names,
};
use berth_domain::app::AppConfig;
use berth_domain::certificate::CertificateFinding;
use berth_domain::container_paths::HealthCheckPath;
use berth_domain::image::ImageRef;
use berth_domain::names::Hostname;
use berth_domain::protocol::Protocol;
use berth_domain::registry::ProjectRepository;
use berth_domain::schedule::{DEFAULT_TIME_ZONE, Schedule, TimeZone};
use kube::{Resource, ResourceExt};

use checked::{AppContext, CheckedProcess, CheckedVolume, MAX_LABEL};
pub use checked::{CheckedApp, RenderError};
use tls::{ServedHost, TlsSettings};

/// The pod template annotation a restart sets (the one `kubectl rollout
/// restart` uses), so the rollout looks familiar to anyone with kubectl.
pub const RESTARTED_AT_ANNOTATION: &str = "kubectl.kubernetes.io/restartedAt";
/// The CPU utilization an autoscaled process is kept at.
pub const TARGET_CPU_UTILIZATION: i32 = 75;
/// How late a missed scheduled run may still start.
pub const STARTING_DEADLINE_SECONDS: i64 = 300;
/// Finished jobs kept per scheduled process, for their logs.
const JOBS_HISTORY: i32 = 3;

/// How long a serving pod waits, once told to stop, before its process is:
/// long enough for the Service's endpoints and the ingress to stop sending
/// it requests (they learn of the stop at the same moment as the pod).
pub const PRE_STOP_PAUSE_SECONDS: i64 = 5;
/// A serving pod's whole grace period: the pause, then the process's own
/// 30 s (Kubernetes' default) to finish what it serves.
pub const TERMINATION_GRACE_SECONDS: i64 = PRE_STOP_PAUSE_SECONDS + 30;
/// Tries of a release command: one, and one retry.
pub const RELEASE_BACKOFF_LIMIT: i32 = 1;
/// How long a finished release Job (and its pod's log) is kept.
pub const RELEASE_JOB_KEPT_SECONDS: i32 = 24 * 60 * 60;

/// How long a Deployment's rollout may make no progress before it is
/// reported as failed, unless the controller's settings say otherwise.
pub const DEFAULT_PROGRESS_DEADLINE_SECONDS: i32 = 600;
/// How long a release command may run, unless the controller's settings
/// say otherwise.
pub const DEFAULT_RELEASE_DEADLINE_SECONDS: i64 = 600;

/// The cluster-wide choices rendering depends on (the controller's settings).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RenderSettings {
    /// The Ingress class of every app's Ingress; the cluster's default when unset.
    pub ingress_class: Option<String>,
    /// When set, every web app also answers at its default host
    /// `{app}--{environment}--{project}.{apps_domain}` (see
    /// [`default_host_label`]).
    pub apps_domain: Option<String>,
    /// How long a Deployment's rollout may make no progress before it is
    /// reported as failed.
    pub progress_deadline_seconds: i32,
    /// How long a release command may run (its Job's `activeDeadlineSeconds`).
    pub release_deadline_seconds: i64,
    /// The repository prefix of the images Berth builds (the registry's
    /// ConfigMap, read by the controller): pods of an image under it name
    /// the pull credential [`PULL_SECRET`] in their `imagePullSecrets`.
    pub registry_prefix: Option<String>,
    /// HTTPS for the app's hosts.
    pub tls: TlsSettings,
}

pub use berth_cluster::registry::PULL_SECRET;

impl Default for RenderSettings {
    fn default() -> Self {
        Self {
            ingress_class: None,
            apps_domain: None,
            progress_deadline_seconds: DEFAULT_PROGRESS_DEADLINE_SECONDS,
            release_deadline_seconds: DEFAULT_RELEASE_DEADLINE_SECONDS,
            registry_prefix: None,
            tls: TlsSettings::default(),
        }
    }
}

/// Everything an app becomes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Rendered {
    pub deployments: Vec<Deployment>,
    pub services: Vec<Service>,
    pub autoscalers: Vec<HorizontalPodAutoscaler>,
    pub cron_jobs: Vec<CronJob>,
    pub ingress: Option<Ingress>,
    /// Not owned by the App: a volume's data outlives the app.
    pub claims: Vec<PersistentVolumeClaim>,
    /// The app's first host, when it has one: `https://` once its
    /// certificate serves it, `http://` before and without one.
    pub url: Option<String>,
}

/// Renders a checked App into the objects that run it.
pub fn render(checked: &CheckedApp<'_>, settings: &RenderSettings) -> Rendered {
    let CheckedApp {
        app,
        image,
        context,
        processes,
        volumes,
        domains,
        certificates,
        ..
    } = checked;
    let config = &app.spec.config;
    let volumes = rendered_volumes(context, volumes);
    let image_pull_secrets = pull_secrets(image, context, settings);

    let mut rendered = Rendered::default();
    for process in processes {
        let container = container(checked, process, &volumes);
        let serving = container.lifecycle.is_some();
        let pod_spec = PodSpec {
            containers: vec![container],
            termination_grace_period_seconds: serving.then_some(TERMINATION_GRACE_SECONDS),
            // Nothing in a tenant's pod talks to the cluster as Berth's
            // service account: no API credentials are mounted.
            automount_service_account_token: Some(false),
            security_context: Some(pod_security(config.fs_group)),
            image_pull_secrets: image_pull_secrets.clone(),
            volumes: (!volumes.is_empty()).then(|| {
                volumes
                    .iter()
                    .map(|volume| volume.pod_volume.clone())
                    .collect()
            }),
            ..Default::default()
        };
        // What no App can change: every pod is confined (see `unconfined`).
        debug_assert_eq!(unconfined(&pod_spec), Vec::<String>::new());
        if let Some(schedule) = process.schedule {
            rendered
                .cron_jobs
                .push(cron_job(context, process, schedule, pod_spec));
            continue;
        }
        let autoscaled =
            process.spec.min_replicas >= 1 && process.spec.max_replicas > process.spec.min_replicas;
        rendered.deployments.push(deployment(
            context,
            app,
            settings,
            process,
            pod_spec,
            autoscaled,
            !volumes.is_empty(),
        ));
        if let Some(port) = process.spec.port {
            rendered.services.push(service(context, process, port));
        }
        if autoscaled {
            rendered.autoscalers.push(autoscaler(context, process));
        }
    }
    rendered.claims = volumes.into_iter().map(|volume| volume.claim).collect();

    let hosts = served_hosts(context, domains, settings);
    rendered.ingress = ingress(context, settings, &hosts, certificates);
    // Only where the Ingress sends requests somewhere; a wildcard is no
    // address. `https` only once the host has its certificate: before, or
    // with none to have, it is served over plain HTTP.
    rendered.url = rendered
        .ingress
        .as_ref()
        .and_then(|_| hosts.iter().find(|served| !served.host.starts_with('*')))
        .map(|served| {
            let scheme = if served.certified(certificates) {
                "https"
            } else {
                "http"
            };
            format!("{scheme}://{}", served.host)
        });
    rendered
}

/// The hosts of a checked App's Ingress, each with the certificate that
/// serves it: what the controller looks at before rendering. An app with
/// no web process has no Ingress: its domains are served by nothing.
pub fn hosts_of(checked: &CheckedApp<'_>, settings: &RenderSettings) -> Vec<ServedHost> {
    match checked.context.web {
        Some(_) => served_hosts(&checked.context, &checked.domains, settings),
        None => checked
            .domains
            .iter()
            .map(|host| ServedHost {
                host: host.as_str().to_owned(),
                certificate: tls::HostCertificate::NotServed,
            })
            .collect(),
    }
}

/// The registry's pull credential, for an image Berth built for the App's
/// own project (under `{prefix}/{org}/{project}/`); none for any other
/// image. With scoped credentials the token service refuses any other
/// project's images to it anyway; the shared credential of before pulls
/// every organization's, so an App naming another project's image (a
/// sibling's of its organization, or another organization's) gets no
/// credential for it, and its pull fails.
fn pull_secrets(
    image: &ImageRef,
    context: &AppContext<'_>,
    settings: &RenderSettings,
) -> Option<Vec<LocalObjectReference>> {
    let prefix = settings.registry_prefix.as_deref()?;
    ProjectRepository::of_image(prefix, image.as_str())
        .is_some_and(|found| found.is_of(context.org, context.project))
        .then(|| {
            vec![LocalObjectReference {
                name: PULL_SECRET.to_owned(),
            }]
        })
}

/// The pod's security settings: the runtime's default seccomp profile, and
/// the volumes' group. Nothing else: no host namespaces, no privileges and no
/// host paths are ever rendered, whatever the App holds (see `confined` in
/// the tests). Capabilities are left as the image has them, so images that
/// bind port 80 as root (nginx) still run; the namespace's Pod Security
/// Admission enforces `baseline`, which allows that.
fn pod_security(fs_group: Option<i64>) -> PodSecurityContext {
    PodSecurityContext {
        fs_group,
        seccomp_profile: Some(SeccompProfile {
            type_: "RuntimeDefault".to_owned(),
            localhost_profile: None,
        }),
        ..Default::default()
    }
}

/// Fields of a pod spec that reach the node or the cluster's API, or grant
/// privileges: never in a pod Berth renders.
const HOST_AND_PRIVILEGE_FIELDS: [&str; 12] = [
    "hostNetwork",
    "hostPID",
    "hostIPC",
    "hostPath",
    "hostPort",
    "hostProcess",
    "privileged",
    "capabilities",
    "procMount",
    "serviceAccountName",
    "serviceAccount",
    "nodeName",
];

/// What in `pod` would let it out of its confinement: a field of
/// [`HOST_AND_PRIVILEGE_FIELDS`] anywhere (by its JSON path), a mounted
/// service account token, or a container that may escalate its privileges.
/// Empty for every pod [`render`] makes, which checks it once more: whatever
/// an App resource holds, nothing of this reaches the cluster.
pub fn unconfined(pod: &PodSpec) -> Vec<String> {
    fn walk(value: &serde_json::Value, path: &str, found: &mut Vec<String>) {
        match value {
            serde_json::Value::Object(fields) => {
                for (key, inner) in fields {
                    let here = format!("{path}.{key}");
                    if HOST_AND_PRIVILEGE_FIELDS.contains(&key.as_str()) {
                        found.push(here.clone());
                    }
                    walk(inner, &here, found);
                }
            }
            serde_json::Value::Array(items) => {
                for (index, inner) in items.iter().enumerate() {
                    walk(inner, &format!("{path}[{index}]"), found);
                }
            }
            _ => {}
        }
    }
    let mut found = Vec::new();
    match serde_json::to_value(pod) {
        Ok(value) => walk(&value, "spec", &mut found),
        Err(_) => found.push("spec (which does not encode)".to_owned()),
    }
    if pod.automount_service_account_token != Some(false) {
        found.push("spec.automountServiceAccountToken other than false".to_owned());
    }
    let containers = pod
        .containers
        .iter()
        .chain(pod.init_containers.iter().flatten());
    for container in containers {
        let escalates = container
            .security_context
            .as_ref()
            .and_then(|context| context.allow_privilege_escalation);
        if escalates != Some(false) {
            found.push(format!(
                "container {} without allowPrivilegeEscalation: false",
                container.name
            ));
        }
    }
    if pod.ephemeral_containers.is_some() {
        found.push("spec.ephemeralContainers".to_owned());
    }
    found
}

/// Every container's: no process gains more privileges than it started with
/// (no setuid binaries, no file capabilities).
fn container_security() -> SecurityContext {
    SecurityContext {
        allow_privilege_escalation: Some(false),
        ..Default::default()
    }
}

/// A volume: its claim, and how pods mount it.
struct RenderedVolume {
    claim: PersistentVolumeClaim,
    pod_volume: Volume,
    mount: VolumeMount,
}

fn rendered_volumes(
    context: &AppContext<'_>,
    volumes: &[CheckedVolume<'_>],
) -> Vec<RenderedVolume> {
    volumes
        .iter()
        .map(|checked| {
            let CheckedVolume {
                name,
                mount_path,
                claim_name,
                size,
            } = checked;
            let claim = PersistentVolumeClaim {
                metadata: ObjectMeta {
                    name: Some(claim_name.clone()),
                    namespace: Some(context.namespace.to_owned()),
                    labels: Some(context.claim_labels()),
                    // None: a claim outlives its App (deleted only on request).
                    owner_references: None,
                    ..Default::default()
                },
                spec: Some(PersistentVolumeClaimSpec {
                    // A volume is one disk, attached to one node at a time.
                    access_modes: Some(vec!["ReadWriteOnce".to_owned()]),
                    resources: Some(VolumeResourceRequirements {
                        requests: Some(BTreeMap::from([(
                            "storage".to_owned(),
                            K8sQuantity(size.as_str().to_owned()),
                        )])),
                        limits: None,
                    }),
                    ..Default::default()
                }),
                status: None,
            };
            RenderedVolume {
                claim,
                pod_volume: Volume {
                    name: name.as_str().to_owned(),
                    persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                        claim_name: claim_name.clone(),
                        read_only: None,
                    }),
                    ..Default::default()
                },
                mount: VolumeMount {
                    name: name.as_str().to_owned(),
                    mount_path: mount_path.as_str().to_owned(),
                    ..Default::default()
                },
            }
        })
        .collect()
}

/// When the node pulls an app's image: every time it starts a container,
/// unless the image is pinned by digest (whose content cannot change).
/// Nodes are shared by organizations; with `IfNotPresent` (Kubernetes'
/// default for a tag) a pod of another organization that knows a private
/// image's name would run it from the node's cache without any credential.
/// `Always` makes the node ask the registry with the pod's own pull
/// credential, which only reaches its own project's images; a digest
/// is checked against the cache by content, as the registry would.
pub fn pull_policy(image: &ImageRef) -> &'static str {
    if image.digest().is_some() {
        "IfNotPresent"
    } else {
        "Always"
    }
}

/// The process's one container: image, command, env, resources, port,
/// probes and mounts.
fn container(
    checked: &CheckedApp<'_>,
    process: &CheckedProcess<'_>,
    volumes: &[RenderedVolume],
) -> Container {
    let (config, image) = (&checked.app.spec.config, checked.image);
    let resources: BTreeMap<String, K8sQuantity> = BTreeMap::from([
        (
            "cpu".to_owned(),
            K8sQuantity(process.size.cpu().as_str().to_owned()),
        ),
        (
            "memory".to_owned(),
            K8sQuantity(process.size.memory().as_str().to_owned()),
        ),
    ]);
    // Scheduled processes serve nothing: no port, and no probes (a job that
    // fails a liveness probe would be killed mid-run).
    let port = process.spec.port.filter(|_| !process.spec.is_scheduled());
    let (readiness_probe, liveness_probe) = match port {
        Some(port) => probes(checked.health_check_path, process, port),
        None => (None, None),
    };
    Container {
        name: process.spec.name.clone(),
        image: Some(image.to_string()),
        image_pull_policy: Some(pull_policy(image).to_owned()),
        command: (!process.spec.command.is_empty()).then(|| process.spec.command.clone()),
        env: (!config.env.is_empty()).then(|| env(config)),
        ports: port.map(|port| {
            vec![ContainerPort {
                name: Some(process.port_name()),
                container_port: port,
                protocol: Some("TCP".to_owned()),
                ..Default::default()
            }]
        }),
        // Requests equal to limits: the process gets what its size says, no
        // more, and is the last to be evicted.
        resources: Some(ResourceRequirements {
            requests: Some(resources.clone()),
            limits: Some(resources),
            claims: None,
        }),
        readiness_probe,
        liveness_probe,
        // A pause before the process is told to stop, while the endpoints
        // and the ingress drop the pod. `sleep` from the image: the
        // lifecycle's own sleep action needs Kubernetes 1.30. Where the image
        // has none, the hook fails and the pod stops at once, as without it.
        lifecycle: port.map(|_| Lifecycle {
            pre_stop: Some(LifecycleHandler {
                exec: Some(ExecAction {
                    command: Some(vec!["sleep".to_owned(), PRE_STOP_PAUSE_SECONDS.to_string()]),
                }),
                ..Default::default()
            }),
            post_start: None,
            stop_signal: None,
        }),
        volume_mounts: (!volumes.is_empty())
            .then(|| volumes.iter().map(|volume| volume.mount.clone()).collect()),
        security_context: Some(container_security()),
        ..Default::default()
    }
}

fn env(config: &AppConfig) -> Vec<EnvVar> {
    config
        .env
        .iter()
        .map(|var| match &var.secret {
            Some(secret) => EnvVar {
                name: var.name.clone(),
                value: None,
                value_from: Some(EnvVarSource {
                    secret_key_ref: Some(SecretKeySelector {
                        name: secret.name.clone(),
                        key: secret.key.clone(),
                        optional: None,
                    }),
                    ..Default::default()
                }),
            },
            None => EnvVar {
                name: var.name.clone(),
                value: var.value.clone(),
                value_from: None,
            },
        })
        .collect()
}

/// Readiness and liveness: HTTP on the health check path for `http`
/// processes that have one; otherwise a TCP connect for readiness alone, so
/// that no pod gets requests (or counts as available in a rollout) before it
/// listens.
fn probes(
    health_check_path: Option<&HealthCheckPath>,
    process: &CheckedProcess<'_>,
    port: i32,
) -> (Option<Probe>, Option<Probe>) {
    // How often readiness asks, whichever way it asks.
    let readiness = |probe: Probe| Probe {
        period_seconds: Some(10),
        timeout_seconds: Some(3),
        failure_threshold: Some(3),
        success_threshold: Some(1),
        ..probe
    };
    match (process.protocol, health_check_path) {
        (Protocol::Http, Some(path)) => {
            let http_get = || HTTPGetAction {
                path: Some(path.to_string()),
                port: IntOrString::Int(port),
                scheme: Some("HTTP".to_owned()),
                ..Default::default()
            };
            // Slower and later than readiness: restarting a process that is
            // still starting up would only start it again.
            let liveness = Probe {
                http_get: Some(http_get()),
                initial_delay_seconds: Some(30),
                period_seconds: Some(20),
                timeout_seconds: Some(5),
                failure_threshold: Some(3),
                success_threshold: Some(1),
                ..Default::default()
            };
            let readiness = readiness(Probe {
                http_get: Some(http_get()),
                ..Default::default()
            });
            (Some(readiness), Some(liveness))
        }
        _ => (
            Some(readiness(Probe {
                tcp_socket: Some(TCPSocketAction {
                    port: IntOrString::Int(port),
                    host: None,
                }),
                ..Default::default()
            })),
            None,
        ),
    }
}

fn deployment(
    context: &AppContext<'_>,
    app: &App,
    settings: &RenderSettings,
    process: &CheckedProcess<'_>,
    pod_spec: PodSpec,
    autoscaled: bool,
    has_volumes: bool,
) -> Deployment {
    let annotations = app
        .spec
        .restarted_at
        .as_ref()
        .map(|at| BTreeMap::from([(RESTARTED_AT_ANNOTATION.to_owned(), at.clone())]));
    Deployment {
        metadata: context.metadata(process.object_name.clone(), process.labels.clone()),
        spec: Some(DeploymentSpec {
            // Left to the HPA when there is one: applying a count would undo
            // its scaling at every reconcile.
            replicas: (!autoscaled).then_some(process.spec.min_replicas),
            selector: LabelSelector {
                match_labels: Some(context.selector(&process.spec.name)),
                match_expressions: None,
            },
            strategy: Some(strategy(has_volumes)),
            progress_deadline_seconds: Some(settings.progress_deadline_seconds),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(process.labels.clone()),
                    annotations,
                    ..Default::default()
                }),
                spec: Some(pod_spec),
            },
            ..Default::default()
        }),
        status: None,
    }
}

/// Zero downtime: a new pod first, and an old one stops only once a new one
/// is ready (`maxUnavailable: 0`), so a new revision that never becomes
/// ready leaves the old pods serving. Not with volumes: a ReadWriteOnce
/// claim can't be mounted by the old and the new pod at once on different
/// nodes, so the old one stops first (`Recreate`), a short gap.
fn strategy(has_volumes: bool) -> DeploymentStrategy {
    if has_volumes {
        return DeploymentStrategy {
            type_: Some("Recreate".to_owned()),
            rolling_update: None,
        };
    }
    DeploymentStrategy {
        type_: Some("RollingUpdate".to_owned()),
        rolling_update: Some(RollingUpdateDeployment {
            max_surge: Some(IntOrString::Int(1)),
            max_unavailable: Some(IntOrString::Int(0)),
        }),
    }
}

/// The Job that runs a revision's release command before its workloads
/// change: the configuration's image and env (secret references included),
/// no volumes, the first process's size (under the environment's quota like
/// every pod), one retry at most and `release_deadline_seconds` in all, with
/// the confinement of every pod Berth renders. None without a command.
pub fn release_job(checked: &CheckedApp<'_>, settings: &RenderSettings) -> Option<Job> {
    let config = &checked.app.spec.config;
    let main = checked.processes.first()?;
    if config.release_command.is_empty() {
        return None;
    }
    let revision = checked.app.spec.release.revision;
    let mut labels = checked.context.labels.clone();
    labels.insert(LABEL_RELEASE.to_owned(), revision.to_string());
    Some(command_job(
        checked,
        settings,
        CommandJob {
            name: object_names::release_job(checked.context.name, revision),
            container: "release",
            command: config.release_command.clone(),
            size_of: main,
            labels,
            backoff_limit: RELEASE_BACKOFF_LIMIT,
            deadline_seconds: settings.release_deadline_seconds,
            kept_seconds: Some(RELEASE_JOB_KEPT_SECONDS),
        },
    ))
}

/// The Job of a one-off command (`Command`): as a release command's, with
/// the command it names, the size of the process it names (the first when
/// that is gone), no retry (a command runs once: its exit status is the
/// answer) and its own deadline. Its Command owns it, so it goes with it.
/// None when the app has no process to take a size from.
pub fn one_off_job(
    checked: &CheckedApp<'_>,
    settings: &RenderSettings,
    command: &Command,
) -> Option<Job> {
    let size_of = checked
        .processes
        .iter()
        .find(|process| process.spec.name == command.spec.process)
        .or(checked.processes.first())?;
    let name = command.name_any();
    let mut labels = checked.context.labels.clone();
    labels.insert(LABEL_COMMAND.to_owned(), name.clone());
    let mut job = command_job(
        checked,
        settings,
        CommandJob {
            name,
            container: COMMAND_CONTAINER,
            command: command.spec.command.clone(),
            size_of,
            labels,
            backoff_limit: 0,
            deadline_seconds: command.spec.timeout_seconds,
            kept_seconds: None,
        },
    );
    job.metadata.owner_references = command.controller_owner_ref(&()).map(|owner| vec![owner]);
    job.metadata.annotations = Some(BTreeMap::from([(
        ANNOTATION_REVISION.to_owned(),
        checked.app.spec.release.revision.to_string(),
    )]));
    Some(job)
}

/// What sets one command's Job apart from another's.
struct CommandJob<'a> {
    name: String,
    container: &'static str,
    command: Vec<String>,
    /// The process whose size the container gets.
    size_of: &'a CheckedProcess<'a>,
    labels: BTreeMap<String, String>,
    backoff_limit: i32,
    deadline_seconds: i64,
    /// `ttlSecondsAfterFinished`; None when its owner's going takes it.
    kept_seconds: Option<i32>,
}

/// A Job that runs a command once in the app's image with its env, no
/// volumes, ports or probes, with the confinement of every pod Berth renders.
fn command_job(checked: &CheckedApp<'_>, settings: &RenderSettings, job: CommandJob<'_>) -> Job {
    let CheckedApp { image, context, .. } = checked;
    let container = Container {
        name: job.container.to_owned(),
        command: Some(job.command),
        ports: None,
        readiness_probe: None,
        liveness_probe: None,
        lifecycle: None,
        ..container(checked, job.size_of, &[])
    };
    let pod_spec = PodSpec {
        containers: vec![container],
        automount_service_account_token: Some(false),
        image_pull_secrets: pull_secrets(image, context, settings),
        security_context: Some(pod_security(None)),
        restart_policy: Some("Never".to_owned()),
        ..Default::default()
    };
    debug_assert_eq!(unconfined(&pod_spec), Vec::<String>::new());
    Job {
        metadata: context.metadata(job.name, job.labels.clone()),
        spec: Some(JobSpec {
            backoff_limit: Some(job.backoff_limit),
            active_deadline_seconds: Some(job.deadline_seconds),
            ttl_seconds_after_finished: job.kept_seconds,
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(job.labels),
                    ..Default::default()
                }),
                spec: Some(pod_spec),
            },
            ..Default::default()
        }),
        status: None,
    }
}

fn service(context: &AppContext<'_>, process: &CheckedProcess<'_>, port: i32) -> Service {
    Service {
        metadata: context.metadata(process.object_name.clone(), process.labels.clone()),
        spec: Some(ServiceSpec {
            type_: Some("ClusterIP".to_owned()),
            selector: Some(context.selector(&process.spec.name)),
            ports: Some(vec![ServicePort {
                name: Some(process.port_name()),
                port,
                target_port: Some(IntOrString::Int(port)),
                protocol: Some("TCP".to_owned()),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        status: None,
    }
}

fn autoscaler(context: &AppContext<'_>, process: &CheckedProcess<'_>) -> HorizontalPodAutoscaler {
    HorizontalPodAutoscaler {
        metadata: context.metadata(process.object_name.clone(), process.labels.clone()),
        spec: Some(HorizontalPodAutoscalerSpec {
            scale_target_ref: CrossVersionObjectReference {
                api_version: Some("apps/v1".to_owned()),
                kind: "Deployment".to_owned(),
                name: process.object_name.clone(),
            },
            min_replicas: Some(process.spec.min_replicas),
            max_replicas: process.spec.max_replicas,
            metrics: Some(vec![MetricSpec {
                type_: "Resource".to_owned(),
                resource: Some(ResourceMetricSource {
                    name: "cpu".to_owned(),
                    target: MetricTarget {
                        type_: "Utilization".to_owned(),
                        average_utilization: Some(TARGET_CPU_UTILIZATION),
                        ..Default::default()
                    },
                }),
                ..Default::default()
            }]),
            behavior: None,
        }),
        status: None,
    }
}

fn cron_job(
    context: &AppContext<'_>,
    process: &CheckedProcess<'_>,
    schedule: &Schedule,
    mut pod_spec: PodSpec,
) -> CronJob {
    pod_spec.restart_policy = Some("OnFailure".to_owned());
    CronJob {
        metadata: context.metadata(process.object_name.clone(), process.labels.clone()),
        spec: Some(CronJobSpec {
            schedule: schedule.to_string(),
            time_zone: Some(
                process
                    .time_zone
                    .map_or(DEFAULT_TIME_ZONE, TimeZone::as_str)
                    .to_owned(),
            ),
            // A run that is still going when the next is due is left alone:
            // nightly jobs rarely expect to overlap.
            concurrency_policy: Some("Forbid".to_owned()),
            successful_jobs_history_limit: Some(JOBS_HISTORY),
            failed_jobs_history_limit: Some(JOBS_HISTORY),
            starting_deadline_seconds: Some(STARTING_DEADLINE_SECONDS),
            job_template: JobTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(process.labels.clone()),
                    ..Default::default()
                }),
                spec: Some(JobSpec {
                    template: PodTemplateSpec {
                        metadata: Some(ObjectMeta {
                            labels: Some(process.labels.clone()),
                            ..Default::default()
                        }),
                        spec: Some(pod_spec),
                    },
                    ..Default::default()
                }),
            },
            ..Default::default()
        }),
        status: None,
    }
}

/// The app's hosts: its domains, then the default host of a web app.
fn served_hosts(
    context: &AppContext<'_>,
    domains: &[&Hostname],
    settings: &RenderSettings,
) -> Vec<ServedHost> {
    let mut hosts: Vec<ServedHost> = domains
        .iter()
        .map(|host| ServedHost::custom(context.name, host.as_str(), &settings.tls))
        .collect();
    if let (Some(apps_domain), Some(_)) = (&settings.apps_domain, &context.web) {
        let host = format!(
            "{}.{apps_domain}",
            default_host_label(context.name, context.environment, context.project)
        );
        if !hosts.iter().any(|served| served.host == host) {
            hosts.push(ServedHost::default_host(context.name, &host, &settings.tls));
        }
    }
    hosts
}

/// The first label of an app's default host: `{app}--{environment}--{project}`.
///
/// Names made since hostnames are claimed never contain `--` and never start or end with
/// `-`, so the label names exactly one app (a single `-` joined the parts
/// before, and project `store`/environment `acme`/app `web-staging` took the
/// host of project `acme-store`/environment `staging`/app `web`). When it is
/// longer than a DNS label may be (names allow up to 106 characters), it is
/// cut: its first [`CUT_PREFIX`] characters without trailing hyphens, `---`,
/// and 16 hex digits of the SHA-256 of `{app}/{environment}/{project}`. An
/// uncut label never contains `---`, so the two forms never meet. Default
/// hosts are therefore not claimed in DynamoDB as custom domains are (and no
/// custom domain may fall under the apps domain).
pub fn default_host_label(app: &str, environment: &str, project: &str) -> String {
    let label = format!("{app}--{environment}--{project}");
    if label.len() <= MAX_LABEL {
        return label;
    }
    let digest = hex::encode(Sha256::digest(
        format!("{app}/{environment}/{project}").as_bytes(),
    ));
    format!(
        "{}---{}",
        label[..CUT_PREFIX].trim_end_matches('-'),
        &digest[..16]
    )
}

/// How much of a long default host label is kept: with `---` and 16 hex
/// digits, 63 characters.
const CUT_PREFIX: usize = MAX_LABEL - 3 - 16;

fn ingress(
    context: &AppContext<'_>,
    settings: &RenderSettings,
    hosts: &[ServedHost],
    certificates: &[CertificateFinding],
) -> Option<Ingress> {
    let (service, port) = context.web.clone()?;
    if hosts.is_empty() {
        return None;
    }
    let rules = hosts
        .iter()
        .map(|served| IngressRule {
            host: Some(served.host.clone()),
            http: Some(HTTPIngressRuleValue {
                paths: vec![HTTPIngressPath {
                    path: Some("/".to_owned()),
                    path_type: "Prefix".to_owned(),
                    backend: IngressBackend {
                        service: Some(IngressServiceBackend {
                            name: service.clone(),
                            port: Some(ServiceBackendPort {
                                number: Some(port),
                                name: None,
                            }),
                        }),
                        resource: None,
                    },
                }],
            }),
        })
        .collect();
    let mut metadata =
        context.metadata(object_names::ingress(context.name), context.labels.clone());
    let annotations = tls::annotations(hosts, &settings.tls, certificates);
    metadata.annotations = (!annotations.is_empty()).then_some(annotations);
    let tls = tls::entries(hosts);
    Some(Ingress {
        metadata,
        spec: Some(IngressSpec {
            ingress_class_name: settings.ingress_class.clone(),
            rules: Some(rules),
            tls: (!tls.is_empty()).then_some(tls),
            ..Default::default()
        }),
        status: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_cluster::crd::{
        LABEL_APP, LABEL_APP_UID, LABEL_ENVIRONMENT, LABEL_MANAGED_BY, LABEL_ORG, LABEL_PROCESS,
        LABEL_PROJECT, MANAGER,
    };
    use berth_cluster::rendered_names::{ObjectKind, rendered_names};
    use berth_domain::app::{AppEnvVar, AppProcess, AppVolume};
    use berth_domain::names::OBJECT_NAME;
    use berth_domain::parts::SecretKeyRef;
    use berth_domain::stored::Stored;
    use kube::ResourceExt;
    use std::collections::BTreeSet;

    /// App `shop` in `store-prod`, stored (a uid) and labelled as the API
    /// makes it.
    fn app(processes: Vec<AppProcess>) -> App {
        App::test("shop", AppConfig::test(processes)).stored()
    }

    /// What the controller does with an App: check it, then render it.
    fn render(app: &App, settings: &RenderSettings) -> Result<Rendered, RenderError> {
        Ok(super::render(&CheckedApp::of(app)?, settings))
    }

    fn web_app() -> App {
        app(vec![AppProcess::test("web", Some(8080))])
    }

    fn settings() -> RenderSettings {
        RenderSettings {
            ingress_class: Some("nginx".to_owned()),
            apps_domain: Some("apps.example.net".to_owned()),
            progress_deadline_seconds: 120,
            release_deadline_seconds: 300,
            registry_prefix: None,
            tls: TlsSettings::default(),
        }
    }

    fn only_container(spec: &PodSpec) -> &Container {
        assert_eq!(spec.containers.len(), 1);
        &spec.containers[0]
    }

    fn template_spec(template: &PodTemplateSpec) -> &PodSpec {
        template.spec.as_ref().unwrap()
    }

    fn template_meta(template: &PodTemplateSpec) -> &ObjectMeta {
        template.metadata.as_ref().unwrap()
    }

    fn pod_spec(deployment: &Deployment) -> &PodSpec {
        template_spec(&deployment.spec.as_ref().unwrap().template)
    }

    fn assert_owned_and_labelled(meta: &ObjectMeta, process: Option<&str>) {
        assert_eq!(meta.namespace.as_deref(), Some("store-prod"));
        let owners = meta.owner_references.as_ref().expect("an owner");
        assert_eq!(owners.len(), 1);
        assert_eq!(owners[0].kind, "App");
        assert_eq!(owners[0].api_version, "berth.dev/v1");
        assert_eq!(owners[0].name, "shop");
        assert_eq!(owners[0].uid, "0b7c4a39-8b5b-4f7e-9b71-1c0ad1a1f001");
        assert_eq!(owners[0].controller, Some(true));
        assert_eq!(owners[0].block_owner_deletion, Some(true));
        let labels = meta.labels.as_ref().unwrap();
        assert_eq!(labels[LABEL_ORG], "acme");
        assert_eq!(labels[LABEL_PROJECT], "store");
        assert_eq!(labels[LABEL_ENVIRONMENT], "prod");
        assert_eq!(labels[LABEL_MANAGED_BY], "berth");
        assert_eq!(labels[LABEL_APP], "shop");
        assert_eq!(labels.get(LABEL_PROCESS).map(String::as_str), process);
    }

    #[test]
    fn a_web_app_is_a_deployment_a_service_and_an_ingress() {
        let mut app = web_app();
        app.spec.config.health_check_path = Some(Stored::read("/healthz"));
        app.spec.config.env = vec![AppEnvVar {
            name: "MODE".to_owned(),
            value: Some("production".to_owned()),
            secret: None,
        }];
        app.spec.config.processes[0].command = vec!["./serve".to_owned(), "--port=8080".to_owned()];
        let rendered = render(&app, &settings()).unwrap();

        assert_eq!(rendered.deployments.len(), 1);
        let deployment = &rendered.deployments[0];
        assert_eq!(deployment.metadata.name.as_deref(), Some("shop-web"));
        assert_owned_and_labelled(&deployment.metadata, Some("web"));
        let spec = deployment.spec.as_ref().unwrap();
        assert_eq!(spec.replicas, Some(1));
        assert_eq!(spec.progress_deadline_seconds, Some(120));
        assert_eq!(
            spec.strategy.as_ref().unwrap().type_.as_deref(),
            Some("RollingUpdate")
        );
        assert_eq!(
            spec.selector.match_labels,
            Some(BTreeMap::from([
                (LABEL_APP.to_owned(), "shop".to_owned()),
                (LABEL_PROCESS.to_owned(), "web".to_owned()),
            ]))
        );
        let template_labels = template_meta(&spec.template).labels.as_ref().unwrap();
        assert_eq!(template_labels[LABEL_PROCESS], "web");
        assert!(template_meta(&spec.template).annotations.is_none());

        let pod = pod_spec(deployment);
        let security = pod.security_context.as_ref().unwrap();
        assert_eq!(security.fs_group, None);
        assert_eq!(
            security.seccomp_profile.as_ref().map(|p| p.type_.as_str()),
            Some("RuntimeDefault")
        );
        assert_eq!(pod.automount_service_account_token, Some(false));
        assert!(pod.volumes.is_none());
        let container = only_container(pod);
        assert_eq!(container.name, "web");
        assert_eq!(container.image.as_deref(), Some("ghcr.io/acme/shop:1.2.3"));
        assert_eq!(
            container.command,
            Some(vec!["./serve".to_owned(), "--port=8080".to_owned()])
        );
        let env = container.env.as_ref().unwrap();
        assert_eq!(env[0].name, "MODE");
        assert_eq!(env[0].value.as_deref(), Some("production"));
        let resources = container.resources.as_ref().unwrap();
        let expected = BTreeMap::from([
            ("cpu".to_owned(), K8sQuantity("250m".to_owned())),
            ("memory".to_owned(), K8sQuantity("512Mi".to_owned())),
        ]);
        assert_eq!(resources.requests.as_ref(), Some(&expected));
        assert_eq!(resources.limits.as_ref(), Some(&expected));
        let ports = container.ports.as_ref().unwrap();
        assert_eq!(ports[0].container_port, 8080);
        assert_eq!(ports[0].name.as_deref(), Some("http"));

        for probe in [&container.readiness_probe, &container.liveness_probe] {
            let get = probe.as_ref().unwrap().http_get.as_ref().unwrap();
            assert_eq!(get.path.as_deref(), Some("/healthz"));
            assert_eq!(get.port, IntOrString::Int(8080));
        }
        let liveness = container.liveness_probe.as_ref().unwrap();
        assert!(liveness.initial_delay_seconds.unwrap_or(0) > 0);
        assert_eq!(liveness.success_threshold, Some(1), "liveness must be 1");

        assert_eq!(rendered.services.len(), 1);
        let service = &rendered.services[0];
        assert_eq!(service.metadata.name.as_deref(), Some("shop-web"));
        assert_owned_and_labelled(&service.metadata, Some("web"));
        let service_spec = service.spec.as_ref().unwrap();
        assert_eq!(service_spec.type_.as_deref(), Some("ClusterIP"));
        assert_eq!(service_spec.selector, spec.selector.match_labels);
        let port = &service_spec.ports.as_ref().unwrap()[0];
        assert_eq!(port.name.as_deref(), Some("http"));
        assert_eq!(port.port, 8080);
        assert_eq!(port.target_port, Some(IntOrString::Int(8080)));

        assert!(rendered.autoscalers.is_empty());
        assert!(rendered.cron_jobs.is_empty());
        assert!(rendered.claims.is_empty());

        let ingress = rendered.ingress.as_ref().unwrap();
        assert_eq!(ingress.metadata.name.as_deref(), Some("shop"));
        assert_owned_and_labelled(&ingress.metadata, None);
        let ingress_spec = ingress.spec.as_ref().unwrap();
        assert_eq!(ingress_spec.ingress_class_name.as_deref(), Some("nginx"));
        let rules = ingress_spec.rules.as_ref().unwrap();
        assert_eq!(rules.len(), 1);
        assert_eq!(
            rules[0].host.as_deref(),
            Some("shop--prod--store.apps.example.net")
        );
        let path = &rules[0].http.as_ref().unwrap().paths[0];
        assert_eq!(path.path.as_deref(), Some("/"));
        assert_eq!(path.path_type, "Prefix");
        let backend = path.backend.service.as_ref().unwrap();
        assert_eq!(backend.name, "shop-web");
        assert_eq!(backend.port.as_ref().unwrap().number, Some(8080));
        // No certificate: served over plain HTTP (issue 45).
        assert_eq!(
            rendered.url.as_deref(),
            Some("http://shop--prod--store.apps.example.net")
        );
    }

    #[test]
    fn web_worker_and_cron_render_to_their_own_objects() {
        let mut worker = AppProcess::test("worker", None);
        worker.size = Stored::read("750m/1536Mi");
        worker.command = vec!["./work".to_owned()];
        let mut nightly = AppProcess::test("nightly", None);
        nightly.schedule = Some(Stored::read("0 3 * * *"));
        nightly.command = vec!["./report".to_owned()];
        let mut app = app(vec![AppProcess::test("web", Some(8080)), worker, nightly]);
        app.spec.config.health_check_path = Some(Stored::read("/healthz"));
        let rendered = render(&app, &settings()).unwrap();

        let names: Vec<_> = rendered
            .deployments
            .iter()
            .map(|d| d.metadata.name.as_deref().unwrap())
            .collect();
        assert_eq!(names, ["shop-web", "shop-worker"]);
        assert_eq!(
            rendered.services.len(),
            1,
            "only the web process has a port"
        );
        let worker = only_container(pod_spec(&rendered.deployments[1]));
        assert!(worker.ports.is_none());
        assert!(worker.readiness_probe.is_none() && worker.liveness_probe.is_none());
        let limits = worker.resources.as_ref().unwrap().limits.as_ref().unwrap();
        assert_eq!(limits["cpu"], K8sQuantity("750m".to_owned()));
        assert_eq!(limits["memory"], K8sQuantity("1536Mi".to_owned()));

        assert_eq!(rendered.cron_jobs.len(), 1);
        let cron = &rendered.cron_jobs[0];
        assert_eq!(cron.metadata.name.as_deref(), Some("shop-nightly"));
        assert_owned_and_labelled(&cron.metadata, Some("nightly"));
        let spec = cron.spec.as_ref().unwrap();
        assert_eq!(spec.schedule, "0 3 * * *");
        assert_eq!(spec.time_zone.as_deref(), Some("UTC"));
        assert_eq!(spec.concurrency_policy.as_deref(), Some("Forbid"));
        assert_eq!(spec.successful_jobs_history_limit, Some(3));
        assert_eq!(spec.failed_jobs_history_limit, Some(3));
        assert_eq!(spec.starting_deadline_seconds, Some(300));
        let job = &spec.job_template;
        assert_eq!(
            job.metadata.as_ref().unwrap().labels.as_ref().unwrap()[LABEL_PROCESS],
            "nightly"
        );
        let job_spec = job.spec.as_ref().unwrap();
        let pod = job_spec.template.spec.as_ref().unwrap();
        assert_eq!(pod.restart_policy.as_deref(), Some("OnFailure"));
        let container = only_container(pod);
        assert_eq!(container.command, Some(vec!["./report".to_owned()]));
        assert!(container.readiness_probe.is_none() && container.liveness_probe.is_none());
        assert!(container.resources.is_some());

        // The Ingress goes to the web process.
        let ingress = rendered.ingress.unwrap();
        let rules = ingress.spec.unwrap().rules.unwrap();
        let backend = rules[0].http.as_ref().unwrap().paths[0]
            .backend
            .service
            .clone();
        assert_eq!(backend.unwrap().name, "shop-web");
    }

    #[test]
    fn a_time_zone_is_kept() {
        let mut job = AppProcess::test("job", None);
        job.schedule = Some(Stored::read("*/5 * * * *"));
        job.time_zone = Some(Stored::read("Europe/Berlin"));
        let rendered = render(&app(vec![job]), &settings()).unwrap();
        let spec = rendered.cron_jobs[0].spec.as_ref().unwrap();
        assert_eq!(spec.time_zone.as_deref(), Some("Europe/Berlin"));
        assert!(rendered.deployments.is_empty());
        assert!(rendered.ingress.is_none());
        assert_eq!(rendered.url, None);
    }

    #[test]
    fn an_autoscaled_process_leaves_replicas_to_its_hpa() {
        let mut web = AppProcess::test("web", Some(8080));
        web.min_replicas = 2;
        web.max_replicas = 6;
        let rendered = render(&app(vec![web]), &settings()).unwrap();
        let spec = rendered.deployments[0].spec.as_ref().unwrap();
        assert_eq!(spec.replicas, None);
        assert_eq!(rendered.autoscalers.len(), 1);
        let hpa = &rendered.autoscalers[0];
        assert_eq!(hpa.metadata.name.as_deref(), Some("shop-web"));
        assert_owned_and_labelled(&hpa.metadata, Some("web"));
        let hpa_spec = hpa.spec.as_ref().unwrap();
        assert_eq!(hpa_spec.min_replicas, Some(2));
        assert_eq!(hpa_spec.max_replicas, 6);
        assert_eq!(hpa_spec.scale_target_ref.kind, "Deployment");
        assert_eq!(hpa_spec.scale_target_ref.name, "shop-web");
        assert_eq!(
            hpa_spec.scale_target_ref.api_version.as_deref(),
            Some("apps/v1")
        );
        let metric = &hpa_spec.metrics.as_ref().unwrap()[0];
        assert_eq!(metric.type_, "Resource");
        let resource = metric.resource.as_ref().unwrap();
        assert_eq!(resource.name, "cpu");
        assert_eq!(resource.target.type_, "Utilization");
        assert_eq!(resource.target.average_utilization, Some(75));
    }

    #[test]
    fn no_hpa_at_fixed_or_zero_replicas() {
        let fixed = AppProcess::test("web", Some(8080));
        let mut stopped = AppProcess::test("worker", None);
        stopped.min_replicas = 0;
        stopped.max_replicas = 4;
        let rendered = render(&app(vec![fixed, stopped]), &settings()).unwrap();
        assert!(rendered.autoscalers.is_empty());
        let replicas: Vec<_> = rendered
            .deployments
            .iter()
            .map(|d| d.spec.as_ref().unwrap().replicas)
            .collect();
        assert_eq!(replicas, [Some(1), Some(0)]);
    }

    #[test]
    fn volumes_are_claims_mounted_with_the_recreate_strategy() {
        let mut app = web_app();
        app.spec.config.fs_group = Some(1000);
        app.spec.config.volumes = vec![
            AppVolume::test("data", "/var/lib/data", "5Gi"),
            AppVolume::test("cache", "/cache", "1Gi"),
        ];
        let rendered = render(&app, &settings()).unwrap();
        let spec = rendered.deployments[0].spec.as_ref().unwrap();
        assert_eq!(
            spec.strategy.as_ref().unwrap().type_.as_deref(),
            Some("Recreate")
        );
        let pod = pod_spec(&rendered.deployments[0]);
        assert_eq!(pod.security_context.as_ref().unwrap().fs_group, Some(1000));
        let volumes = pod.volumes.as_ref().unwrap();
        assert_eq!(volumes.len(), 2);
        assert_eq!(volumes[0].name, "data");
        assert_eq!(
            volumes[0]
                .persistent_volume_claim
                .as_ref()
                .unwrap()
                .claim_name,
            "shop-data"
        );
        let mounts = only_container(pod).volume_mounts.as_ref().unwrap();
        assert_eq!(mounts[0].name, "data");
        assert_eq!(mounts[0].mount_path, "/var/lib/data");
        assert_eq!(mounts[1].mount_path, "/cache");

        assert_eq!(rendered.claims.len(), 2);
        let claim = &rendered.claims[0];
        assert_eq!(claim.metadata.name.as_deref(), Some("shop-data"));
        assert_eq!(claim.metadata.namespace.as_deref(), Some("store-prod"));
        assert!(
            claim.metadata.owner_references.is_none(),
            "claims outlive apps"
        );
        assert_eq!(claim.metadata.labels.as_ref().unwrap()[LABEL_APP], "shop");
        assert_eq!(
            claim.metadata.labels.as_ref().unwrap()[LABEL_APP_UID],
            "0b7c4a39-8b5b-4f7e-9b71-1c0ad1a1f001",
            "whose the claim is, by uid"
        );
        let claim_spec = claim.spec.as_ref().unwrap();
        assert_eq!(
            claim_spec.access_modes,
            Some(vec!["ReadWriteOnce".to_owned()])
        );
        let requests = claim_spec
            .resources
            .as_ref()
            .unwrap()
            .requests
            .as_ref()
            .unwrap();
        assert_eq!(requests["storage"], K8sQuantity("5Gi".to_owned()));
    }

    #[test]
    fn secret_env_vars_reference_the_secret() {
        let mut app = web_app();
        app.spec.config.env = vec![
            AppEnvVar {
                name: "DATABASE_URL".to_owned(),
                value: None,
                secret: Some(SecretKeyRef {
                    name: "db".to_owned(),
                    key: "url".to_owned(),
                }),
            },
            AppEnvVar {
                name: "EMPTY".to_owned(),
                value: None,
                secret: None,
            },
        ];
        let rendered = render(&app, &settings()).unwrap();
        let env = only_container(pod_spec(&rendered.deployments[0]))
            .env
            .clone()
            .unwrap();
        assert_eq!(env[0].name, "DATABASE_URL");
        assert_eq!(env[0].value, None);
        let reference = env[0]
            .value_from
            .as_ref()
            .unwrap()
            .secret_key_ref
            .as_ref()
            .unwrap();
        assert_eq!(
            (reference.name.as_str(), reference.key.as_str()),
            ("db", "url")
        );
        assert_eq!(env[1].value, None);
        assert!(env[1].value_from.is_none());
    }

    #[test]
    fn a_restart_annotates_the_pod_template() {
        let mut app = web_app();
        app.spec.restarted_at = Some("2025-05-01T10:00:00Z".to_owned());
        let rendered = render(&app, &settings()).unwrap();
        let template = &rendered.deployments[0].spec.as_ref().unwrap().template;
        let annotations = template_meta(template).annotations.as_ref().unwrap();
        assert_eq!(annotations[RESTARTED_AT_ANNOTATION], "2025-05-01T10:00:00Z");
    }

    /// The hosts of the rules of a rendered Ingress, in order.
    fn rule_hosts(ingress: &Ingress) -> Vec<String> {
        (ingress.spec.iter())
            .flat_map(|spec| spec.rules.iter().flatten())
            .filter_map(|rule| rule.host.clone())
            .collect()
    }

    #[test]
    fn domains_come_before_the_default_host() {
        let mut app = web_app();
        app.spec.config.domains = vec![
            Stored::read("shop.example.com"),
            Stored::read("www.example.com"),
        ];
        let rendered = render(&app, &settings()).unwrap();
        let hosts = rule_hosts(rendered.ingress.as_ref().unwrap());
        assert_eq!(
            hosts,
            [
                "shop.example.com",
                "www.example.com",
                "shop--prod--store.apps.example.net"
            ]
        );
        assert_eq!(rendered.url.as_deref(), Some("http://shop.example.com"));
    }

    #[test]
    fn only_domains_their_organization_proved_are_served() {
        let mut app = web_app();
        app.spec.config.domains = vec![
            Stored::read("shop.example.com"),
            Stored::read("www.example.com"),
        ];
        berth_cluster::apps::set_verified_domains(&mut app, &["www.example.com".to_owned()]);
        let with_tls = RenderSettings {
            tls: TlsSettings::parse(Some("letsencrypt"), None, None, None).unwrap(),
            ..settings()
        };
        let ingress = render(&app, &with_tls).unwrap().ingress.unwrap();
        assert_eq!(
            rule_hosts(&ingress),
            ["www.example.com", "shop--prod--store.apps.example.net"]
        );
        // Nor is a certificate asked for the one not proven.
        let certified: Vec<String> = (ingress.spec.unwrap().tls.unwrap_or_default().into_iter())
            .flat_map(|tls| tls.hosts.unwrap_or_default())
            .collect();
        assert!(
            !certified.iter().any(|host| host == "shop.example.com"),
            "{certified:?}"
        );

        // None proven: only the default host.
        berth_cluster::apps::set_verified_domains(&mut app, &[]);
        let rendered = render(&app, &settings()).unwrap();
        assert_eq!(
            rule_hosts(rendered.ingress.as_ref().unwrap()),
            ["shop--prod--store.apps.example.net"]
        );
    }

    #[test]
    fn with_an_issuer_each_domain_has_a_tls_entry_and_the_redirect_waits() {
        let mut app = web_app();
        app.spec.config.domains = vec![
            Stored::read("shop.example.com"),
            Stored::read("www.example.com"),
        ];
        let settings = RenderSettings {
            tls: TlsSettings::parse(Some("letsencrypt"), None, None, None).unwrap(),
            ..settings()
        };
        let ingress_of = |rendered: Rendered| rendered.ingress.unwrap();
        let pending = render(&app, &settings).unwrap();
        assert_eq!(
            pending.url.as_deref(),
            Some("http://shop.example.com"),
            "plain HTTP while its certificate is pending (issue 45)"
        );
        let ingress = ingress_of(pending);
        let annotations = ingress.metadata.annotations.clone().unwrap();
        assert_eq!(annotations[tls::CLUSTER_ISSUER_ANNOTATION], "letsencrypt");
        assert_eq!(annotations[tls::NGINX_SSL_REDIRECT], "false");
        let entries = ingress.spec.as_ref().unwrap().tls.clone().unwrap();
        let secrets: Vec<_> = entries
            .iter()
            .map(|entry| {
                (
                    entry.hosts.clone().unwrap(),
                    entry.secret_name.clone().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            secrets,
            [
                (
                    vec!["shop.example.com".to_owned()],
                    object_names::certificate_secret("shop", "shop.example.com")
                ),
                (
                    vec!["www.example.com".to_owned()],
                    object_names::certificate_secret("shop", "www.example.com")
                ),
            ],
            "the default host is served by the ingress controller's certificate"
        );
        // As the apiserver takes it.
        let json = serde_json::to_value(&ingress).unwrap();
        assert_eq!(json["spec"]["tls"][0]["secretName"], secrets[0].1);
        assert_eq!(json["spec"]["tls"][0]["hosts"][0], "shop.example.com");

        // Once the controller found both issued, the app redirects.
        let issued = |host: &str| {
            CertificateFinding::new(
                host,
                berth_domain::certificate::CertificateState::Issued,
                None,
                "issued",
            )
        };
        let found = [issued("shop.example.com"), issued("www.example.com")];
        let checked = CheckedApp::of(&app).unwrap().with_certificates(&found);
        let rendered = super::render(&checked, &settings);
        assert_eq!(rendered.url.as_deref(), Some("https://shop.example.com"));
        let ingress = ingress_of(rendered);
        assert_eq!(
            ingress.metadata.annotations.unwrap()[tls::NGINX_SSL_REDIRECT],
            "true"
        );

        // A domain removed takes its entry with it.
        app.spec.config.domains.pop();
        let ingress = ingress_of(render(&app, &settings).unwrap());
        assert_eq!(ingress.spec.unwrap().tls.unwrap().len(), 1);
    }

    /// A node shared by organizations pulls an app's image every time,
    /// with the pod's own credential, unless a digest pins it (issue 46,
    /// part 5): another organization knowing a private image's tag runs
    /// nothing from the node's cache.
    #[test]
    fn an_image_is_pulled_every_time_unless_pinned_by_digest() {
        let digest = format!("registry.example.com/acme/shop@sha256:{}", "a".repeat(64));
        for (image, policy) in [
            ("nginx:1.27", "Always"),
            ("registry.example.com/acme/shop", "Always"),
            (digest.as_str(), "IfNotPresent"),
        ] {
            let mut app = web_app();
            app.spec.config.image = Some(Stored::read(image));
            let rendered = render(&app, &settings()).unwrap();
            let container = only_container(pod_spec(&rendered.deployments[0]));
            assert_eq!(
                container.image_pull_policy.as_deref(),
                Some(policy),
                "{image}"
            );
        }
    }

    #[test]
    fn without_tls_settings_the_ingress_is_plain_http() {
        let mut app = web_app();
        app.spec.config.domains = vec![Stored::read("shop.example.com")];
        let ingress = render(&app, &settings()).unwrap().ingress.unwrap();
        assert_eq!(ingress.metadata.annotations, None);
        assert_eq!(ingress.spec.unwrap().tls, None);
    }

    #[test]
    fn without_an_apps_domain_only_domains_are_hosts() {
        let no_domain = RenderSettings {
            ingress_class: None,
            apps_domain: None,
            progress_deadline_seconds: 600,
            release_deadline_seconds: 600,
            registry_prefix: None,
            tls: TlsSettings::default(),
        };
        let rendered = render(&web_app(), &no_domain).unwrap();
        assert!(rendered.ingress.is_none());
        assert_eq!(rendered.url, None);

        let mut app = web_app();
        app.spec.config.domains = vec![Stored::read("shop.example.com")];
        let rendered = render(&app, &no_domain).unwrap();
        let spec = rendered.ingress.unwrap().spec.unwrap();
        assert_eq!(spec.ingress_class_name, None);
        assert_eq!(spec.rules.unwrap().len(), 1);
    }

    #[test]
    fn a_worker_only_app_has_no_ingress() {
        let mut app = app(vec![AppProcess::test("worker", None)]);
        app.spec.config.domains = vec![Stored::read("shop.example.com")];
        let rendered = render(&app, &settings()).unwrap();
        assert!(rendered.ingress.is_none());
        assert!(rendered.services.is_empty());
        assert_eq!(rendered.url, None);
        // Its domain is served by nothing, whatever the TLS settings.
        let hosts = hosts_of(&CheckedApp::of(&app).unwrap(), &settings());
        assert_eq!(hosts.len(), 1);
        assert_eq!(hosts[0].certificate, tls::HostCertificate::NotServed);
    }

    /// The container of the first Deployment, and its readiness probe.
    fn first_readiness(rendered: &Rendered) -> (&Container, &Probe) {
        let container = only_container(pod_spec(&rendered.deployments[0]));
        (container, container.readiness_probe.as_ref().unwrap())
    }

    #[test]
    fn tcp_processes_get_a_tcp_readiness_probe_and_no_ingress() {
        let mut db = AppProcess::test("db", Some(5432));
        db.protocol = Stored::read("tcp");
        let mut app = app(vec![db]);
        app.spec.config.health_check_path = Some(Stored::read("/healthz"));
        let rendered = render(&app, &settings()).unwrap();
        let (container, readiness) = first_readiness(&rendered);
        assert_eq!(
            readiness.tcp_socket.as_ref().unwrap().port,
            IntOrString::Int(5432)
        );
        assert!(container.liveness_probe.is_none());
        let port = &rendered.services[0]
            .spec
            .as_ref()
            .unwrap()
            .ports
            .as_ref()
            .unwrap()[0];
        assert_eq!(port.name.as_deref(), Some("tcp"));
        assert!(rendered.ingress.is_none());
    }

    #[test]
    fn http_processes_without_a_health_check_path_are_ready_when_they_listen() {
        let rendered = render(&web_app(), &settings()).unwrap();
        let (container, readiness) = first_readiness(&rendered);
        assert_eq!(
            readiness.tcp_socket.as_ref().unwrap().port,
            IntOrString::Int(8080)
        );
        assert!(readiness.http_get.is_none());
        assert!(container.liveness_probe.is_none());
    }

    #[test]
    fn serving_processes_roll_without_downtime_and_stop_gently() {
        let mut app = app(vec![
            AppProcess::test("web", Some(8080)),
            AppProcess::test("worker", None),
        ]);
        app.spec.config.processes[0].min_replicas = 2;
        app.spec.config.processes[0].max_replicas = 2;
        let rendered = render(&app, &settings()).unwrap();
        for deployment in &rendered.deployments {
            let strategy = deployment.spec.as_ref().unwrap().strategy.clone().unwrap();
            assert_eq!(strategy.type_.as_deref(), Some("RollingUpdate"));
            let rolling = strategy.rolling_update.unwrap();
            assert_eq!(rolling.max_unavailable, Some(IntOrString::Int(0)));
            assert_eq!(rolling.max_surge, Some(IntOrString::Int(1)));
        }
        let web = pod_spec(&rendered.deployments[0]);
        assert_eq!(web.termination_grace_period_seconds, Some(35));
        let pre_stop = only_container(web)
            .lifecycle
            .as_ref()
            .and_then(|lifecycle| lifecycle.pre_stop.as_ref())
            .and_then(|handler| handler.exec.as_ref())
            .and_then(|exec| exec.command.clone());
        assert_eq!(pre_stop, Some(vec!["sleep".to_owned(), "5".to_owned()]));
        // A worker serves nothing: no pause, the default grace.
        let worker = pod_spec(&rendered.deployments[1]);
        assert!(only_container(worker).lifecycle.is_none());
        assert_eq!(worker.termination_grace_period_seconds, None);
    }

    fn release_app() -> App {
        let mut app = app(vec![AppProcess::test("web", Some(8080))]);
        app.spec.release.revision = 7;
        app.spec.config.release_command = vec!["./migrate".to_owned(), "--up".to_owned()];
        app.spec.config.volumes = vec![AppVolume::test("data", "/data", "1Gi")];
        app.spec.config.env = vec![
            AppEnvVar {
                name: "MODE".to_owned(),
                value: Some("production".to_owned()),
                secret: None,
            },
            AppEnvVar {
                name: "DATABASE_URL".to_owned(),
                value: None,
                secret: Some(SecretKeyRef {
                    name: "db".to_owned(),
                    key: "url".to_owned(),
                }),
            },
        ];
        app
    }

    #[test]
    fn pods_of_a_built_image_name_the_registrys_pull_credential() {
        let mut shop = app(vec![AppProcess::test("web", Some(8080))]);
        shop.spec.config.release_command = vec!["./migrate".to_owned()];
        let settings = RenderSettings {
            registry_prefix: Some("registry.example.com/berth".to_owned()),
            ..settings()
        };
        // Pinned by digest, as a build pins it.
        let digest = format!("sha256:{}", "ab".repeat(32));
        let pull_secrets = |image: &str| {
            let mut built = shop.clone();
            built.spec.config.image = Some(Stored::read(image));
            let rendered = render(&built, &settings).unwrap();
            let job = release_job(&CheckedApp::of(&built).unwrap(), &settings).unwrap();
            let of_job = job.spec.unwrap().template.spec.unwrap().image_pull_secrets;
            let of_deployment = rendered.deployments[0]
                .spec
                .clone()
                .unwrap()
                .template
                .spec
                .unwrap()
                .image_pull_secrets;
            assert_eq!(of_job, of_deployment);
            of_deployment.map(|secrets| secrets[0].name.clone())
        };
        assert_eq!(
            pull_secrets(&format!(
                "registry.example.com/berth/acme/store/shop@{digest}"
            ))
            .as_deref(),
            Some(PULL_SECRET)
        );
        // Another image, or one whose path only starts like the prefix: none.
        assert_eq!(pull_secrets("ghcr.io/acme/shop:1"), None);
        // Another organization's build: none, so its pull fails.
        assert_eq!(
            pull_secrets(&format!(
                "registry.example.com/berth/globex/store/shop@{digest}"
            )),
            None
        );
        assert_eq!(
            pull_secrets(&format!(
                "registry.example.com/berth/acmex/store/shop@{digest}"
            )),
            None
        );
        assert_eq!(pull_secrets("registry.example.com/berthx/shop:1"), None);
        // A sibling project's build (issue 46, part 2): none either, as for
        // another organization's, so the shared credential of before does
        // not pull it.
        assert_eq!(
            pull_secrets(&format!(
                "registry.example.com/berth/acme/billing/shop@{digest}"
            )),
            None
        );
        assert_eq!(
            pull_secrets("registry.example.com/berth/acme/storex/shop:1"),
            None
        );
        assert_eq!(
            pull_secrets("registry.example.com/berth/acme/store/shop:v1").as_deref(),
            Some(PULL_SECRET)
        );
        // An App with no image is never rendered.
        let mut awaiting = shop.clone();
        awaiting.spec.config.image = None;
        assert_eq!(
            CheckedApp::of(&awaiting).err().map(|error| error.field),
            Some("spec.image".to_owned())
        );
    }

    #[test]
    fn a_release_command_is_a_confined_job_of_the_new_image_and_env() {
        let app = release_app();
        let job = release_job(&CheckedApp::of(&app).unwrap(), &settings()).unwrap();
        assert_eq!(job.metadata.name.as_deref(), Some("shop--release-7"));
        assert_owned_and_labelled(&job.metadata, None);
        assert_eq!(job.metadata.labels.as_ref().unwrap()[LABEL_RELEASE], "7");
        let spec = job.spec.as_ref().unwrap();
        assert_eq!(spec.backoff_limit, Some(1));
        assert_eq!(spec.active_deadline_seconds, Some(300));
        let template_labels = template_meta(&spec.template).labels.as_ref().unwrap();
        assert_eq!(template_labels[LABEL_RELEASE], "7");
        assert!(!template_labels.contains_key(LABEL_PROCESS));
        let pod = template_spec(&spec.template);
        assert!(unconfined(pod).is_empty(), "{:?}", unconfined(pod));
        assert_eq!(pod.automount_service_account_token, Some(false));
        assert_eq!(pod.restart_policy.as_deref(), Some("Never"));
        assert_eq!(
            pod.security_context
                .as_ref()
                .unwrap()
                .seccomp_profile
                .as_ref()
                .unwrap()
                .type_,
            "RuntimeDefault"
        );
        // No volumes: the release runs beside the old pods, which hold them.
        assert!(pod.volumes.is_none());
        let container = only_container(pod);
        assert!(container.volume_mounts.is_none());
        assert_eq!(container.image.as_deref(), Some("ghcr.io/acme/shop:1.2.3"));
        assert_eq!(
            container.command,
            Some(vec!["./migrate".to_owned(), "--up".to_owned()])
        );
        let env = container.env.as_ref().unwrap();
        assert_eq!(env[0].value.as_deref(), Some("production"));
        let secret = env[1]
            .value_from
            .as_ref()
            .unwrap()
            .secret_key_ref
            .as_ref()
            .unwrap();
        assert_eq!((secret.name.as_str(), secret.key.as_str()), ("db", "url"));
        assert!(container.resources.as_ref().unwrap().limits.is_some());
        assert!(container.readiness_probe.is_none() && container.lifecycle.is_none());
        assert_eq!(
            container
                .security_context
                .as_ref()
                .unwrap()
                .allow_privilege_escalation,
            Some(false)
        );

        let mut without = release_app();
        without.spec.config.release_command.clear();
        assert_eq!(
            release_job(&CheckedApp::of(&without).unwrap(), &settings()),
            None
        );
        // Its name must stay a label: a long name (edited in the cluster) is refused.
        let mut long = release_app();
        long.metadata.name = Some("s".repeat(55));
        assert_eq!(
            CheckedApp::of(&long).err().map(|error| error.field),
            Some("metadata.name".to_owned())
        );
    }

    #[test]
    fn a_long_default_host_stays_one_dns_label() {
        let (app, environment, project) = ("a".repeat(40), "e".repeat(22), "p".repeat(40));
        let label = default_host_label(&app, &environment, &project);
        assert_eq!(label.len(), 63, "{label}");
        assert!(OBJECT_NAME.holds(&label));
        let digest = hex::encode(Sha256::digest(
            format!("{app}/{environment}/{project}").as_bytes(),
        ));
        assert_eq!(
            label,
            format!("{}--{}---{}", app, &environment[..2], &digest[..16])
        );
        assert_ne!(
            label,
            default_host_label(&app, &environment, &"q".repeat(40))
        );
        assert_eq!(
            default_host_label("shop", "prod", "store"),
            "shop--prod--store"
        );
        // Exactly 63 characters is not cut.
        let fits = default_host_label(&"a".repeat(40), "e", &"p".repeat(18));
        assert_eq!(fits.len(), 63);
        assert!(!fits.contains("---"));
    }

    #[test]
    fn a_cut_default_host_label_trims_hyphens_before_its_digest() {
        // Its first 44 characters end with a whole separator: both hyphens
        // go, so the label has `---` once, never `----`.
        let (app, project) = ("a".repeat(38), "p".repeat(30));
        let label = default_host_label(&app, "bb", &project);
        let digest = hex::encode(Sha256::digest(format!("{app}/bb/{project}").as_bytes()));
        assert_eq!(label, format!("{app}--bb---{}", &digest[..16]));
        assert_eq!(label.matches("---").count(), 1);
        assert!(!label.contains("----"));
        assert!(OBJECT_NAME.holds(&label));
    }

    #[test]
    fn default_hosts_of_different_apps_differ() {
        // Two apps that once shared this host.
        assert_ne!(
            default_host_label("web-staging", "acme", "store"),
            default_host_label("web", "staging", "acme-store")
        );
        assert_eq!(
            default_host_label("web-staging", "acme", "store"),
            "web-staging--acme--store"
        );
        assert_eq!(
            default_host_label("web", "staging", "acme-store"),
            "web--staging--acme-store"
        );
        // Every way of splitting one string into three names (without `--`)
        // gives another label.
        let mut seen = std::collections::HashSet::new();
        for (app, environment, project) in [
            ("a-b", "c", "d"),
            ("a", "b-c", "d"),
            ("a", "b", "c-d"),
            ("a-b-c", "d", "e"),
            ("a", "b-c-d", "e"),
        ] {
            assert!(
                seen.insert(default_host_label(app, environment, project)),
                "{app}/{environment}/{project}"
            );
        }
    }

    /// Every pod the app renders: its Deployments' and its CronJobs' (which
    /// run-now Jobs copy).
    fn every_pod(rendered: &Rendered) -> Vec<&PodSpec> {
        let deployments = rendered.deployments.iter().map(pod_spec);
        let jobs = rendered.cron_jobs.iter().map(|cron_job| {
            let job = cron_job.spec.as_ref().unwrap().job_template.spec.as_ref();
            template_spec(&job.unwrap().template)
        });
        deployments.chain(jobs).collect()
    }

    fn assert_confined(rendered: &Rendered) {
        let pods = every_pod(rendered);
        assert!(!pods.is_empty());
        for pod in pods {
            assert_eq!(unconfined(pod), Vec::<String>::new());
            assert_eq!(pod.automount_service_account_token, Some(false));
            let security = pod.security_context.as_ref().unwrap();
            assert_eq!(
                security.seccomp_profile.as_ref().unwrap().type_,
                "RuntimeDefault"
            );
            assert!(security.run_as_user.is_none() && security.sysctls.is_none());
            assert!(pod.host_network.is_none() && pod.host_pid.is_none() && pod.host_ipc.is_none());
            assert!(pod.service_account_name.is_none() && pod.node_name.is_none());
            for volume in pod.volumes.iter().flatten() {
                assert!(volume.host_path.is_none(), "{}", volume.name);
                assert!(volume.persistent_volume_claim.is_some(), "{}", volume.name);
            }
            for container in &pod.containers {
                let context = container.security_context.as_ref().unwrap();
                assert_eq!(context.allow_privilege_escalation, Some(false));
                assert!(context.privileged.is_none() && context.capabilities.is_none());
                for port in container.ports.iter().flatten() {
                    assert!(port.host_port.is_none());
                }
            }
        }
    }

    /// An App resource as someone with cluster access could write it, with
    /// fields Berth's schema does not have at every level. The apiserver
    /// prunes them (the CRD's schema is structural, see `crd.rs`); were one
    /// to get through, decoding drops it and rendering never copies it.
    fn app_with_foreign_fields() -> App {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "berth.dev/v1",
            "kind": "App",
            "metadata": {
                "name": "shop", "namespace": "store-prod",
                "uid": "0b7c4a39-8b5b-4f7e-9b71-1c0ad1a1f002",
                "labels": {
                    LABEL_ORG: "acme", LABEL_PROJECT: "store", LABEL_ENVIRONMENT: "prod",
                    LABEL_MANAGED_BY: MANAGER
                }
            },
            "spec": {
                "image": "nginx:1.27",
                "hostNetwork": true, "hostPID": true, "hostIPC": true,
                "serviceAccountName": "default", "automountServiceAccountToken": true,
                "nodeName": "node-1", "privileged": true,
                "securityContext": { "privileged": true, "runAsUser": 0,
                                     "sysctls": [{ "name": "kernel.shm_rmid_forced", "value": "0" }] },
                "processes": [{
                    "name": "web", "port": 80, "size": "small", "minReplicas": 1,
                    "maxReplicas": 1, "protocol": "http", "hostPort": 80,
                    "privileged": true,
                    "securityContext": { "privileged": true, "allowPrivilegeEscalation": true,
                                         "capabilities": { "add": ["SYS_ADMIN", "NET_ADMIN"] } }
                }, {
                    "name": "job", "size": "nano", "minReplicas": 1, "maxReplicas": 1,
                    "protocol": "http", "schedule": "0 3 * * *", "hostNetwork": true
                }],
                "volumes": [{ "name": "data", "mountPath": "/data", "size": "1Gi",
                              "hostPath": { "path": "/" } }],
                "env": [{ "name": "A", "value": "1",
                          "valueFrom": { "fieldRef": { "fieldPath": "spec.nodeName" } } }],
                "release": { "revision": 1, "reason": "create", "createdAt": 0,
                             "hostNetwork": true }
            }
        }))
        .expect("an App with foreign fields still decodes")
    }

    #[test]
    fn no_pod_reaches_the_host_the_cluster_or_more_privileges() {
        let mut everything = app(vec![
            AppProcess::test("web", Some(8080)),
            {
                let mut db = AppProcess::test("db", Some(5432));
                db.protocol = Stored::read("tcp");
                db.command = vec![
                    "postgres".to_owned(),
                    "-c".to_owned(),
                    "fsync=off".to_owned(),
                ];
                db
            },
            {
                let mut job = AppProcess::test("nightly", None);
                job.schedule = Some(Stored::read("0 3 * * *"));
                job
            },
            {
                let mut worker = AppProcess::test("worker", None);
                worker.size = Stored::read("16/64Gi");
                worker
            },
        ]);
        everything.spec.config.fs_group = Some(999);
        everything.spec.config.health_check_path = Some(Stored::read("/healthz"));
        everything.spec.config.domains = vec![Stored::read("shop.example.com")];
        everything.spec.config.volumes = vec![AppVolume::test("data", "/var/lib/data", "1Ti")];
        everything.spec.config.env = vec![AppEnvVar {
            name: "DATABASE_URL".to_owned(),
            value: None,
            secret: Some(SecretKeyRef {
                name: "db".to_owned(),
                key: "url".to_owned(),
            }),
        }];
        everything.spec.restarted_at = Some("2025-05-01T10:00:00Z".to_owned());
        let mut autoscaled = web_app();
        autoscaled.spec.config.processes[0].max_replicas = 5;
        let mut stopped = app(vec![AppProcess::test("worker", None)]);
        stopped.spec.config.processes[0].min_replicas = 0;

        let foreign = app_with_foreign_fields();
        assert_eq!(foreign.spec.config.processes.len(), 2);
        for app in [web_app(), everything, autoscaled, stopped, foreign] {
            let rendered = render(&app, &settings()).unwrap();
            assert_confined(&rendered);
            // Nothing of the foreign fields anywhere in what is applied.
            let text = serde_json::to_string(&(
                &rendered.deployments,
                &rendered.cron_jobs,
                &rendered.services,
                &rendered.claims,
            ))
            .unwrap();
            for field in [
                "host",
                "privileged",
                "capabilities",
                "serviceAccount",
                "nodeName",
                "sysctls",
                "runAsUser",
                "fieldRef",
            ] {
                assert!(!text.contains(field), "{field} in {text}");
            }
        }
    }

    #[test]
    fn unconfined_names_every_way_out() {
        let rendered = render(&web_app(), &settings()).unwrap();
        let mut pod = pod_spec(&rendered.deployments[0]).clone();
        assert!(unconfined(&pod).is_empty());
        pod.host_network = Some(true);
        pod.host_pid = Some(false);
        pod.service_account_name = Some("default".to_owned());
        pod.automount_service_account_token = None;
        let container = &mut pod.containers[0];
        container.security_context = Some(SecurityContext {
            privileged: Some(true),
            capabilities: Some(k8s_openapi::api::core::v1::Capabilities {
                add: Some(vec!["SYS_ADMIN".to_owned()]),
                drop: None,
            }),
            ..Default::default()
        });
        container.ports.as_mut().unwrap()[0].host_port = Some(80);
        pod.volumes = Some(vec![Volume {
            name: "root".to_owned(),
            host_path: Some(k8s_openapi::api::core::v1::HostPathVolumeSource {
                path: "/".to_owned(),
                type_: None,
            }),
            ..Default::default()
        }]);
        let found = unconfined(&pod);
        for expected in [
            "spec.hostNetwork",
            "spec.hostPID",
            "spec.serviceAccountName",
            "spec.containers[0].securityContext.privileged",
            "spec.containers[0].securityContext.capabilities",
            "spec.containers[0].ports[0].hostPort",
            "spec.volumes[0].hostPath",
            "spec.automountServiceAccountToken other than false",
            "container web without allowPrivilegeEscalation: false",
        ] {
            assert!(
                found.iter().any(|f| f == expected),
                "{expected} in {found:?}"
            );
        }
    }

    #[test]
    fn sizes_and_volumes_past_the_limits_are_refused() {
        let mut big = web_app();
        big.spec.config.processes[0].size = Stored::read("32/1Gi");
        assert_eq!(refusal(&big).field, "spec.processes[0].size");
        let mut huge = web_app();
        huge.spec.config.volumes = vec![AppVolume::test("data", "/data", "2Ti")];
        assert_eq!(refusal(&huge).field, "spec.volumes[0].size");
    }

    fn refusal(app: &App) -> RenderError {
        render(app, &settings()).expect_err("an invalid app")
    }

    #[test]
    fn an_invalid_spec_is_named_without_its_value() {
        let mut bad = web_app();
        bad.spec.config.processes[0].size = Stored::read("galactic");
        let error = refusal(&bad);
        assert_eq!(error.field, "spec.processes[0].size");
        assert!(!error.to_string().contains("galactic"));

        let mut bad = web_app();
        bad.spec.config.volumes = vec![AppVolume::test("data", "/data", "lots")];
        assert_eq!(refusal(&bad).field, "spec.volumes[0].size");

        let mut bad = web_app();
        bad.spec.config.processes[0].port = Some(70000);
        assert_eq!(refusal(&bad).field, "spec.processes[0].port");

        let mut bad = web_app();
        bad.spec.config.processes[0].protocol = Stored::read("udp");
        assert_eq!(refusal(&bad).field, "spec.processes[0].protocol");

        let mut bad = web_app();
        bad.spec.config.processes[0].max_replicas = 0;
        assert_eq!(refusal(&bad).field, "spec.processes[0].maxReplicas");

        let mut bad = app(vec![
            AppProcess::test("web", Some(80)),
            AppProcess::test("web", None),
        ]);
        assert_eq!(refusal(&bad).field, "spec.processes[1].name");
        bad.spec.config.processes = Vec::new();
        assert_eq!(refusal(&bad).field, "spec.processes");

        let mut bad = web_app();
        bad.spec.config.processes[0].name = "Web_1".to_owned();
        assert_eq!(refusal(&bad).field, "spec.processes[0].name");

        let mut bad = web_app();
        bad.spec.config.env = vec![AppEnvVar {
            name: "TOKEN".to_owned(),
            value: Some("s3cr3t".to_owned()),
            secret: Some(SecretKeyRef {
                name: "a".to_owned(),
                key: "b".to_owned(),
            }),
        }];
        let error = refusal(&bad);
        assert_eq!(error.field, "spec.env[0]");
        assert!(!error.to_string().contains("s3cr3t"));

        let mut bad = web_app();
        bad.spec.config.domains = vec![Stored::read("Not A Host")];
        assert_eq!(refusal(&bad).field, "spec.domains[0]");

        let mut bad = web_app();
        bad.spec.config.image = Some(Stored::read("Shop:Latest!"));
        assert_eq!(refusal(&bad).field, "spec.image");

        let mut bad = web_app();
        bad.spec.config.health_check_path = Some(Stored::read("healthz"));
        assert_eq!(refusal(&bad).field, "spec.healthCheckPath");

        let mut job = AppProcess::test("nightly", None);
        job.schedule = Some(Stored::read("every night"));
        let mut bad = app(vec![job.clone()]);
        assert_eq!(refusal(&bad).field, "spec.processes[0].schedule");
        job.schedule = Some(Stored::read("0 3 * * *"));
        job.time_zone = Some(Stored::read("Mars/Olympus_Mons"));
        bad.spec.config.processes = vec![job];
        assert_eq!(refusal(&bad).field, "spec.processes[0].timeZone");

        let mut bad = web_app();
        bad.metadata.labels.as_mut().unwrap().remove(LABEL_PROJECT);
        assert_eq!(refusal(&bad).field, "metadata.labels[berth.dev/project]");

        let mut bad = web_app();
        bad.metadata.uid = None;
        assert_eq!(refusal(&bad).field, "metadata.uid");
    }

    #[test]
    fn names_fit_what_the_apiserver_allows() {
        // A Service name is a DNS-1035 label of at most 63 characters.
        let long = app(vec![AppProcess::test(&"w".repeat(30), Some(80))]);
        let mut long = long;
        long.metadata.name = Some(format!("a{}", "b".repeat(35)));
        assert_eq!(refusal(&long).field, "spec.processes[0].name");

        // A CronJob's name is at most 52 characters.
        let mut job = AppProcess::test(&"j".repeat(15), None);
        job.schedule = Some(Stored::read("0 * * * *"));
        let mut cron = app(vec![job.clone()]);
        cron.metadata.name = Some("a".repeat(40));
        assert_eq!(refusal(&cron).field, "spec.processes[0].name");
        job.name = "j".repeat(11);
        cron.spec.config.processes = vec![job];
        let rendered = render(&cron, &settings()).unwrap();
        assert_eq!(
            rendered.cron_jobs[0].metadata.name.as_ref().unwrap().len(),
            52
        );
    }

    #[test]
    fn rendered_objects_serialize_with_their_kinds() {
        let rendered = render(&web_app(), &settings()).unwrap();
        let deployment = serde_json::to_value(&rendered.deployments[0]).unwrap();
        assert_eq!(deployment["apiVersion"], "apps/v1");
        assert_eq!(deployment["kind"], "Deployment");
        assert!(deployment.get("status").is_none());
        let ingress = serde_json::to_value(rendered.ingress.as_ref().unwrap()).unwrap();
        assert_eq!(ingress["apiVersion"], "networking.k8s.io/v1");
    }

    fn names_of<K: kube::Resource<DynamicType = ()>>(
        objects: impl IntoIterator<Item = K>,
        kind: ObjectKind,
    ) -> Vec<(ObjectKind, String)> {
        objects.into_iter().map(|o| (kind, o.name_any())).collect()
    }

    /// What the API refuses before it is made (`rendered_names`) is exactly
    /// the names `render` gives its objects (with a default host, so that
    /// every web app has its Ingress).
    #[test]
    fn the_names_the_api_checks_are_those_render_gives() {
        let mut autoscaled = AppProcess::test("api", Some(8080));
        autoscaled.max_replicas = 4;
        let mut scheduled = AppProcess::test("nightly", None);
        scheduled.schedule = Some(Stored::read("0 3 * * *"));
        let mut tcp = AppProcess::test("db", Some(5432));
        tcp.protocol = Stored::read("tcp");
        let stopped = AppProcess {
            min_replicas: 0,
            max_replicas: 0,
            ..AppProcess::test("worker", None)
        };
        let volume = |name: &str| AppVolume::test(name, &format!("/{name}"), "1Gi");
        let apps = [
            (vec![AppProcess::test("web", Some(80))], Vec::new()),
            (
                vec![
                    AppProcess::test("web", Some(80)),
                    autoscaled,
                    scheduled,
                    stopped,
                ],
                vec![volume("data"), volume("cache")],
            ),
            (vec![tcp], vec![volume("data")]),
            (vec![AppProcess::test("worker", None)], Vec::new()),
        ];
        let settings = RenderSettings {
            apps_domain: Some("apps.example.net".to_owned()),
            ..RenderSettings::default()
        };
        for (processes, volumes) in apps {
            let mut shop = app(processes);
            shop.spec.config.volumes = volumes;
            let rendered = render(&shop, &settings).unwrap();
            let mut expected = BTreeSet::new();
            expected.extend(names_of(rendered.deployments, ObjectKind::Deployment));
            expected.extend(names_of(rendered.services, ObjectKind::Service));
            expected.extend(names_of(
                rendered.autoscalers,
                ObjectKind::HorizontalPodAutoscaler,
            ));
            expected.extend(names_of(rendered.cron_jobs, ObjectKind::CronJob));
            expected.extend(names_of(rendered.ingress, ObjectKind::Ingress));
            expected.extend(names_of(rendered.claims, ObjectKind::PersistentVolumeClaim));
            let config = &shop.spec.config;
            assert_eq!(rendered_names("shop", config), expected, "{config:?}");
        }
    }
}
