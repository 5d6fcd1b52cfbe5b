//! What a build runs as: one Job in the builds namespace, rendered from the
//! Build resource (a pure function, like `render`). The one engine today
//! runs the upstream tools straight from their images; another (e.g.
//! Shipwright's `BuildRun`) would be a second module with the same two
//! functions: [`job`] to start it and [`outcome`] to read its end.
//!
//! The pod, in order (init containers run one after another, and the first
//! that fails ends the pod); each step's script is in `steps/`, every value
//! reaching it as an environment variable, never spliced into it:
//! 1. `source` (the git image): fetches `gitRef` (the default branch when
//!    none; an abbreviated commit id too) into the workspace, and writes
//!    the build's facts (commit, strategy, the context and Dockerfile with
//!    symbolic links resolved, inside the checkout) into `facts`. The only
//!    step with the git credential, answered for the repository's own host
//!    alone; no redirect is followed.
//! 2. `run-image` (the push tool's image, Berth's own step, buildpacks
//!    only): copies the run image into the OCI layout the lifecycle reads,
//!    with the build's pull credential (its project's images only).
//! 3. `dockerfile` (rootless BuildKit, dockerfile only): builds into an OCI
//!    layout (`type=oci,tar=false`), pulling bases with the build's pull
//!    credential (its project's images only). Runs the tenant's code.
//! 4. `buildpacks` (the builder image, buildpacks only): the lifecycle's
//!    phases, exporting into an OCI layout; no credential at all. Runs the
//!    tenant's code.
//! 5. `push` (the push tool's image, Berth's own step): the only step that
//!    mounts the push credential; pushes the layout to
//!    `{prefix}/{org}/{project}/{app}:{commit}` and writes the digest the
//!    push tool reports into `facts`.
//! 6. `result`: writes the termination message, one JSON object
//!    `{"commit", "strategy", "digest"}` from `facts`, which [`outcome`]
//!    parses strictly and checks against the builder's own report.
//!
//! `facts` is written only by Berth's own steps (`source`, `push`): the
//! builders mount it read-only, and they have ended (with every process
//! they started) before `push` starts. Every container's message falls back
//! to its output's tail when it fails (`FallbackToLogsOnError`), which is
//! how a failed build says why.
//!
//! Confinement: no privileged container, no host namespace or path, no
//! service account token, no added capability. Rootless BuildKit needs two
//! things `baseline` Pod Security forbids: seccomp and AppArmor
//! `Unconfined` for its container (it makes user namespaces and mounts in
//! them), and privilege escalation (`newuidmap` is setuid). So the builds
//! namespace is labelled `privileged` for Pod Security; only the controller
//! creates pods there, and they are these.

pub mod layout;
mod outcome;

use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{
    AppArmorProfile, Container, EmptyDirVolumeSource, EnvVar, EnvVarSource, KeyToPath,
    PodSecurityContext, PodSpec, PodTemplateSpec, ResourceRequirements, SeccompProfile,
    SecretKeySelector, SecretVolumeSource, SecurityContext, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

use berth_cluster::crd::{Build, LABEL_BUILD, object_names};
use berth_domain::git::GitRepo;

use crate::registry::{BuildCredentials, DOCKER_CONFIG_KEY, Registry};
use layout::ImageRef;
pub use outcome::{Outcome, Pushed, built_digest, outcome};

/// The default images, each overridable (docs/configuration.md). Pinned by
/// digest where a public source pins that tag by digest (docs/deploy.md,
/// "Build images", says where each was found); the builder and its run
/// image by tag only, since no public source pins these tags by digest.
pub const DEFAULT_GIT_IMAGE: &str = "docker.io/alpine/git:v2.49.1@sha256:c0280cf9572316299b08544065d3bf35db65043d5e3963982ec50647d2746e26";
pub const DEFAULT_BUILDKIT_IMAGE: &str = "docker.io/moby/buildkit:v0.32.2-rootless@sha256:504731e577c20559c00f968f33219f30115e70be29ab96728d1d06e963fc494b";
/// Ships lifecycle 0.21.1 (its builder.toml at tag v0.4.539).
pub const DEFAULT_BUILDER_IMAGE: &str = "docker.io/paketobuildpacks/builder-jammy-base:0.4.539";
/// The run image of the builder's stack release (build-jammy-base:0.1.196).
pub const DEFAULT_RUN_IMAGE: &str = "docker.io/paketobuildpacks/run-jammy-base:0.1.196";
/// skopeo's own image: its `-immutable` tags are never overwritten once
/// pushed, where the plain version tags are rebuilt daily
/// (containers/image_build, README.md and ci/containers_build_push.sh).
pub const DEFAULT_PUSH_IMAGE: &str = "quay.io/skopeo/stable:v1.22.2-immutable@sha256:4a16d57b37617a04b3d643079a477a2848efe892dffcdf0ce56df4262b65f810";
/// How long a build may run, unless the controller's settings say otherwise.
pub const DEFAULT_BUILD_DEADLINE_SECONDS: i64 = 1800;
/// How many builds of one organization run at a time, unless the
/// controller's settings say otherwise: 3 of the builds namespace's 8, so
/// that two busy organizations still leave room for the others.
pub const DEFAULT_BUILDS_PER_ORGANIZATION: usize = 3;
/// How long a finished build's Job (and its pod's log) is kept.
pub const BUILD_JOB_KEPT_SECONDS: i32 = 24 * 60 * 60;

/// The platform API the lifecycle's phases are asked to speak: the layout
/// export needs 0.12 or later; 0.13 is what Shipwright's buildpacks-v3
/// strategy asks for, and lifecycle 0.19 and later support it (`api/apis.go`).
/// The lifecycle refuses to start without one (0.18 and later).
pub const CNB_PLATFORM_API: &str = "0.13";
/// How many times `buildctl-daemonless.sh` tries to reach buildkitd (about
/// 65 s in all; its default of 10 gives up after about 2.5 s).
pub const BUILDCTL_CONNECT_RETRIES_MAX: &str = "75";

/// The containers, by name.
pub const SOURCE: &str = "source";
pub const RUN_IMAGE: &str = "run-image";
pub const DOCKERFILE: &str = "dockerfile";
pub const BUILDPACKS: &str = "buildpacks";
pub const PUSH: &str = "push";
pub const RESULT: &str = "result";

/// The steps' scripts (POSIX sh), as the containers run them.
pub mod scripts {
    pub const SOURCE: &str = include_str!("steps/source.sh");
    pub const RUN_IMAGE: &str = include_str!("steps/run_image.sh");
    pub const DOCKERFILE: &str = include_str!("steps/dockerfile.sh");
    pub const BUILDPACKS: &str = include_str!("steps/buildpacks.sh");
    pub const PUSH: &str = include_str!("steps/push.sh");
    pub const RESULT: &str = include_str!("steps/result.sh");
}

/// BuildKit's rootless image runs as `user` (1000:1000); the other
/// containers share its group, so each can read what the one before made.
const BUILD_USER: i64 = 1000;
const BUILD_GROUP: i64 = 1000;

/// Where each volume is mounted.
const WORKSPACE: &str = "/workspace";
const FACTS: &str = "/berth/facts";
const IMAGES: &str = "/image";
const LAYERS: &str = "/layers";
const BUILDKIT_STATE: &str = "/home/user/.local/share/buildkit";
const PUSH_CONFIG: &str = "/berth/push";
const PULL_CONFIG: &str = "/berth/pull";
const TERMINATION_LOG: &str = "/dev/termination-log";

/// The controller's choices of builders.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuilderSettings {
    pub git_image: String,
    pub buildkit_image: String,
    /// A Cloud Native Buildpacks builder image (it holds the lifecycle).
    pub builder_image: String,
    /// The run image the lifecycle builds on (of the builder's stack).
    pub run_image: ImageRef,
    /// The image of Berth's own registry steps (`run-image`, `push`): one
    /// with `sh` and skopeo.
    pub push_image: String,
    /// The Job's `activeDeadlineSeconds`.
    pub deadline_seconds: i64,
    /// How many builds of one organization run at a time
    /// (`BERTH_BUILDS_PER_ORGANIZATION`): the others wait, queued.
    pub per_organization: usize,
    /// Repository hosts the `source` step may reach at loopback, link-local
    /// or private addresses (`BERTH_GIT_PRIVATE_HOSTS`: self-hosted git on
    /// a private network); every other host must resolve to public ones.
    pub private_git_hosts: Vec<String>,
}

impl Default for BuilderSettings {
    fn default() -> Self {
        Self {
            git_image: DEFAULT_GIT_IMAGE.to_owned(),
            buildkit_image: DEFAULT_BUILDKIT_IMAGE.to_owned(),
            builder_image: DEFAULT_BUILDER_IMAGE.to_owned(),
            run_image: ImageRef::parse(DEFAULT_RUN_IMAGE)
                .expect("the default run image is well formed"),
            push_image: DEFAULT_PUSH_IMAGE.to_owned(),
            deadline_seconds: DEFAULT_BUILD_DEADLINE_SECONDS,
            per_organization: DEFAULT_BUILDS_PER_ORGANIZATION,
            private_git_hosts: Vec::new(),
        }
    }
}

/// How the cluster takes BuildKit's AppArmor profile: the container's
/// `appArmorProfile` field from Kubernetes 1.30 (where the annotation is
/// deprecated), the annotation before (1.28 and 1.29 have no field).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppArmor {
    Field,
    Annotation,
}

impl AppArmor {
    /// For a cluster of version 1.`minor` (the apiserver's `/version`; a
    /// minor like `30+`, as some providers report it, counts as 30).
    pub fn for_minor(minor: &str) -> Self {
        let digits: String = minor.chars().take_while(char::is_ascii_digit).collect();
        match digits.parse::<u32>() {
            Ok(minor) if minor < 30 => AppArmor::Annotation,
            _ => AppArmor::Field,
        }
    }
}

/// Where a build goes and what it may use to get there, besides its Build.
pub struct Target<'a> {
    pub registry: &'a Registry,
    pub credentials: &'a BuildCredentials,
    pub apparmor: AppArmor,
}

/// The build's labels: the Build's own, and its number.
pub fn labels(build: &Build) -> BTreeMap<String, String> {
    let mut labels = build.metadata.labels.clone().unwrap_or_default();
    labels.insert(LABEL_BUILD.to_owned(), build.spec.number.to_string());
    labels
}

/// The Job running `build`, owned by it (`owner`: its controller
/// reference); or why it cannot run, in words a tenant may read.
/// `git_credential`: the Secret the controller copies the app's git
/// credential into for this build (keys `token`, `username` if it has
/// one), which only the `source` step reads. Its pod runs the steps in
/// order, one container each (see the module's comment).
pub fn job(
    build: &Build,
    owner: OwnerReference,
    settings: &BuilderSettings,
    target: &Target<'_>,
    git_credential: Option<&str>,
) -> Result<Job, String> {
    let name = object_names::build_job(&build.metadata.name.clone().unwrap_or_default());
    let spec = &build.spec;
    let repository = target
        .registry
        .repository(&spec.org, &spec.project, &spec.app);
    let app_layout = layout::repository_layout_path(&repository)
        .map(|path| format!("{IMAGES}/{path}"))
        .ok_or_else(|| {
            format!("{repository} is not an image repository the build tools can name")
        })?;
    let steps = Steps {
        settings,
        repository: &repository,
        app_layout: &app_layout,
    };
    let pod = PodSpec {
        init_containers: Some(vec![
            steps.source(build, git_credential)?,
            steps.run_image(),
            steps.dockerfile(target.apparmor),
            steps.buildpacks(),
            steps.push(),
        ]),
        containers: vec![steps.result()],
        restart_policy: Some("Never".to_owned()),
        // A build talks to its git host and registry, never to the cluster.
        automount_service_account_token: Some(false),
        enable_service_links: Some(false),
        security_context: Some(PodSecurityContext {
            run_as_group: Some(BUILD_GROUP),
            fs_group: Some(BUILD_GROUP),
            ..Default::default()
        }),
        volumes: Some(volumes(target.credentials)),
        ..Default::default()
    };
    let annotations = (target.apparmor == AppArmor::Annotation).then(|| {
        BTreeMap::from([(
            format!("container.apparmor.security.beta.kubernetes.io/{DOCKERFILE}"),
            "unconfined".to_owned(),
        )])
    });
    let labels = labels(build);
    Ok(Job {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: build.metadata.namespace.clone(),
            labels: Some(labels.clone()),
            owner_references: Some(vec![owner]),
            ..Default::default()
        },
        spec: Some(JobSpec {
            backoff_limit: Some(0),
            active_deadline_seconds: Some(settings.deadline_seconds),
            ttl_seconds_after_finished: Some(BUILD_JOB_KEPT_SECONDS),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    annotations,
                    ..Default::default()
                }),
                spec: Some(pod),
            },
            ..Default::default()
        }),
        status: None,
    })
}

/// What every step of one build is made from: the tools, and where the
/// image goes (its repository, and its OCI layout on the `image` volume).
struct Steps<'a> {
    settings: &'a BuilderSettings,
    repository: &'a str,
    app_layout: &'a str,
}

impl Steps<'_> {
    /// `source`: clones the repository at its ref, from public addresses
    /// only unless the operator allows its host a private network.
    fn source(&self, build: &Build, git_credential: Option<&str>) -> Result<Container, String> {
        let spec = &build.spec;
        let source = &spec.source;
        // A repository stored before the host rules keeps building: the
        // step checks where its name leads.
        let git_repo = GitRepo::parse_stored(&source.git_repo)
            .map_err(|_| format!("{} is not a repository Berth can fetch", source.git_repo))?;
        let addresses = if self
            .settings
            .private_git_hosts
            .iter()
            .any(|host| host.eq_ignore_ascii_case(git_repo.host()))
        {
            "any"
        } else {
            "public"
        };
        let mut env = with_common(vec![
            var("HOME", "/tmp/berth-git"),
            var("SOURCE", WORKSPACE),
            var("GIT_REPO", &source.git_repo),
            var("GIT_ORIGIN", git_repo.origin()),
            var("GIT_REF", source.git_ref.as_deref().unwrap_or("")),
            var("STRATEGY", source.build.strategy.as_str()),
            var(
                "CONTEXT_DIR",
                source
                    .build
                    .context_dir
                    .as_deref()
                    .unwrap_or("")
                    .trim_matches('/'),
            ),
            var(
                "DOCKERFILE",
                source.build.dockerfile.as_deref().unwrap_or("Dockerfile"),
            ),
            var("GIT_BRANCH", spec.branch.as_deref().unwrap_or("")),
            var("GIT_ADDRESSES", addresses),
        ]);
        if let Some(secret) = git_credential {
            // `username` is optional: without it the step says `x-access-token`.
            let key = |env: &str, key: &str, optional: bool| EnvVar {
                name: env.to_owned(),
                value: None,
                value_from: Some(EnvVarSource {
                    secret_key_ref: Some(SecretKeySelector {
                        name: secret.to_owned(),
                        key: key.to_owned(),
                        optional: optional.then_some(true),
                    }),
                    ..Default::default()
                }),
            };
            env.push(key("GIT_TOKEN", "token", false));
            env.push(key("GIT_USERNAME", "username", true));
        }
        Ok(Container {
            name: SOURCE.to_owned(),
            image: Some(self.settings.git_image.clone()),
            command: Some(shell(scripts::SOURCE)),
            env: Some(env),
            volume_mounts: Some(vec![mount("workspace", WORKSPACE), facts(false)]),
            resources: Some(resources(SMALL_STEP)),
            security_context: Some(confined(Some(BUILD_USER))),
            ..step()
        })
    }

    /// `run-image`: the run image buildpacks build on, into the layout.
    fn run_image(&self) -> Container {
        let settings = self.settings;
        Container {
            name: RUN_IMAGE.to_owned(),
            image: Some(settings.push_image.clone()),
            command: Some(shell(scripts::RUN_IMAGE)),
            env: Some(with_common(vec![
                var("HOME", "/tmp"),
                var("RUN_IMAGE", &settings.run_image.pull_ref()),
                var(
                    "RUN_IMAGE_LAYOUT",
                    &format!("{IMAGES}/{}", settings.run_image.layout_path()),
                ),
                var("PULL_AUTH", &format!("{PULL_CONFIG}/config.json")),
            ])),
            volume_mounts: Some(vec![
                facts(true),
                mount("image", IMAGES),
                read_only(mount("pull", PULL_CONFIG)),
            ]),
            resources: Some(resources(SMALL_STEP)),
            security_context: Some(confined(Some(BUILD_USER))),
            ..step()
        }
    }

    /// `dockerfile`: rootless BuildKit, for a build of the `dockerfile`
    /// strategy (the others skip it).
    fn dockerfile(&self, apparmor: AppArmor) -> Container {
        Container {
            name: DOCKERFILE.to_owned(),
            image: Some(self.settings.buildkit_image.clone()),
            command: Some(shell(scripts::DOCKERFILE)),
            env: Some(with_common(vec![
                var("BUILDKITD_FLAGS", "--oci-worker-no-process-sandbox"),
                var("BUILDCTL_CONNECT_RETRIES_MAX", BUILDCTL_CONNECT_RETRIES_MAX),
                var("DOCKER_CONFIG", PULL_CONFIG),
                var("APP_LAYOUT", self.app_layout),
            ])),
            volume_mounts: Some(vec![
                read_only(mount("workspace", WORKSPACE)),
                facts(true),
                mount("image", IMAGES),
                mount("buildkit", BUILDKIT_STATE),
                read_only(mount("pull", PULL_CONFIG)),
            ]),
            resources: Some(resources(BUILDER_STEP)),
            // What rootless BuildKit needs (see the module's comment): its own
            // user, no seccomp filter, AppArmor unconfined, and `newuidmap`'s
            // setuid. Nothing more.
            security_context: Some(SecurityContext {
                run_as_user: Some(BUILD_USER),
                run_as_group: Some(BUILD_GROUP),
                run_as_non_root: Some(true),
                seccomp_profile: Some(SeccompProfile {
                    type_: "Unconfined".to_owned(),
                    localhost_profile: None,
                }),
                app_armor_profile: (apparmor == AppArmor::Field).then(|| AppArmorProfile {
                    type_: "Unconfined".to_owned(),
                    localhost_profile: None,
                }),
                ..Default::default()
            }),
            ..step()
        }
    }

    /// `buildpacks`: the builder image's lifecycle, for a build of the
    /// `buildpacks` strategy (the others skip it).
    fn buildpacks(&self) -> Container {
        let settings = self.settings;
        Container {
            name: BUILDPACKS.to_owned(),
            image: Some(settings.builder_image.clone()),
            command: Some(shell(scripts::BUILDPACKS)),
            env: Some(with_common(vec![
                var("CNB_PLATFORM_API", CNB_PLATFORM_API),
                var("CNB_EXPERIMENTAL_MODE", "warn"),
                var("CNB_USE_LAYOUT", "true"),
                var("CNB_LAYOUT_DIR", IMAGES),
                // Where builder images keep the lifecycle's phases.
                var("LIFECYCLE", "/cnb/lifecycle"),
                var("LAYERS", LAYERS),
                var("IMAGE", self.repository),
                var("APP_LAYOUT", self.app_layout),
                var("RUN_IMAGE", &settings.run_image.pull_ref()),
            ])),
            volume_mounts: Some(vec![
                mount("workspace", WORKSPACE),
                facts(true),
                mount("image", IMAGES),
                mount("layers", LAYERS),
            ]),
            resources: Some(resources(BUILDER_STEP)),
            // The builder image's own user (its CNB user), in the build group.
            security_context: Some(confined(None)),
            ..step()
        }
    }

    /// `push`: the layout's image to the app's repository.
    fn push(&self) -> Container {
        Container {
            name: PUSH.to_owned(),
            image: Some(self.settings.push_image.clone()),
            command: Some(shell(scripts::PUSH)),
            env: Some(with_common(vec![
                var("HOME", "/tmp"),
                var("IMAGE", self.repository),
                var("APP_LAYOUT", self.app_layout),
                var("PUSH_AUTH", &format!("{PUSH_CONFIG}/config.json")),
            ])),
            volume_mounts: Some(vec![
                facts(false),
                read_only(mount("image", IMAGES)),
                read_only(mount("push", PUSH_CONFIG)),
            ]),
            resources: Some(resources(SMALL_STEP)),
            security_context: Some(confined(Some(BUILD_USER))),
            ..step()
        }
    }

    /// `result`: what the steps found, as the pod's termination message.
    fn result(&self) -> Container {
        Container {
            name: RESULT.to_owned(),
            image: Some(self.settings.git_image.clone()),
            command: Some(shell(scripts::RESULT)),
            env: Some(with_common(Vec::new())),
            volume_mounts: Some(vec![facts(true)]),
            resources: Some(resources(RESULT_STEP)),
            security_context: Some(confined(Some(BUILD_USER))),
            ..step()
        }
    }
}

/// The pod's volumes: scratch space for each step's work, and the push and
/// pull credentials.
fn volumes(credentials: &BuildCredentials) -> Vec<Volume> {
    let empty = |name: &str, limit: &str| Volume {
        name: name.to_owned(),
        empty_dir: Some(EmptyDirVolumeSource {
            medium: None,
            size_limit: Some(Quantity(limit.to_owned())),
        }),
        ..Default::default()
    };
    let docker_config = |name: &str, secret: &str, optional: bool| Volume {
        name: name.to_owned(),
        secret: Some(SecretVolumeSource {
            secret_name: Some(secret.to_owned()),
            items: Some(vec![KeyToPath {
                key: DOCKER_CONFIG_KEY.to_owned(),
                path: "config.json".to_owned(),
                mode: None,
            }]),
            default_mode: Some(0o440),
            optional: optional.then_some(true),
        }),
        ..Default::default()
    };
    // Each within the pod's 12 GiB (BUILDER_STEP), which bounds them
    // together: the kubelet evicts a pod past it.
    let mut volumes = vec![
        empty("workspace", "4Gi"),
        empty("facts", "16Mi"),
        empty("image", "8Gi"),
        empty("buildkit", "8Gi"),
        empty("layers", "8Gi"),
        docker_config("push", &credentials.push_secret, false),
    ];
    // Without a pull credential the volume is an empty directory: the
    // builders pull anonymously.
    volumes.push(match &credentials.pull_secret {
        Some(secret) => docker_config("pull", secret, true),
        None => empty("pull", "1Mi"),
    });
    volumes
}

/// The facts every step reads (and `source` and `push` write).
fn facts(read_only: bool) -> VolumeMount {
    VolumeMount {
        read_only: read_only.then_some(true),
        ..mount("facts", FACTS)
    }
}

/// Every step's variables start with where the facts are and where its
/// failure is told.
fn with_common(vars: Vec<EnvVar>) -> Vec<EnvVar> {
    [var("FACTS", FACTS), var("TERMINATION_LOG", TERMINATION_LOG)]
        .into_iter()
        .chain(vars)
        .collect()
}

fn var(name: &str, value: &str) -> EnvVar {
    EnvVar {
        name: name.to_owned(),
        value: Some(value.to_owned()),
        value_from: None,
    }
}

/// What every step shares: its output is its message when it fails.
fn step() -> Container {
    Container {
        termination_message_policy: Some("FallbackToLogsOnError".to_owned()),
        image_pull_policy: Some("IfNotPresent".to_owned()),
        ..Default::default()
    }
}

fn shell(script: &str) -> Vec<String> {
    vec!["sh".to_owned(), "-c".to_owned(), script.to_owned()]
}

fn mount(volume: &str, path: &str) -> VolumeMount {
    VolumeMount {
        name: volume.to_owned(),
        mount_path: path.to_owned(),
        ..Default::default()
    }
}

fn read_only(mount: VolumeMount) -> VolumeMount {
    VolumeMount {
        read_only: Some(true),
        ..mount
    }
}

/// What a step asks for and may use: CPU, memory and ephemeral storage
/// (its writable layer, its logs, and the emptyDirs the pod writes, which
/// the kubelet counts against the pod's limit: the largest of its init
/// containers', since they run one after another).
struct StepResources {
    requests: (&'static str, &'static str, &'static str),
    limits: (&'static str, &'static str, &'static str),
}

/// Berth's own steps: fetching, copying the run image, pushing.
const SMALL_STEP: StepResources = StepResources {
    requests: ("100m", "128Mi", "256Mi"),
    limits: ("1", "512Mi", "4Gi"),
};
/// The builders: a build's pod may use 12 GiB of ephemeral storage in all
/// (the builds namespace's quota and LimitRange are sized for 8 of these).
const BUILDER_STEP: StepResources = StepResources {
    requests: ("500m", "1Gi", "2Gi"),
    limits: ("2", "4Gi", "12Gi"),
};
const RESULT_STEP: StepResources = StepResources {
    requests: ("10m", "16Mi", "16Mi"),
    limits: ("100m", "64Mi", "64Mi"),
};

fn resources(step: StepResources) -> ResourceRequirements {
    let of = |(cpu, memory, storage): (&str, &str, &str)| {
        BTreeMap::from([
            ("cpu".to_owned(), Quantity(cpu.to_owned())),
            ("memory".to_owned(), Quantity(memory.to_owned())),
            ("ephemeral-storage".to_owned(), Quantity(storage.to_owned())),
        ])
    };
    let (requests, limits) = (step.requests, step.limits);
    ResourceRequirements {
        requests: Some(of(requests)),
        limits: Some(of(limits)),
        claims: None,
    }
}

/// A step that needs nothing: the runtime's seccomp filter, no privilege
/// escalation, no capability.
fn confined(user: Option<i64>) -> SecurityContext {
    SecurityContext {
        run_as_user: user,
        run_as_group: Some(BUILD_GROUP),
        allow_privilege_escalation: Some(false),
        seccomp_profile: Some(SeccompProfile {
            type_: "RuntimeDefault".to_owned(),
            localhost_profile: None,
        }),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::{CredentialMode, PULL_SECRET, PUSH_SECRET, build_credentials};
    use berth_cluster::crd::{
        BUILDS_NAMESPACE, BuildSpec, LABEL_APP_UID, LABEL_MANAGED_BY, MANAGER,
    };
    use berth_domain::app::{AppSource, BuildSettings, BuildStrategy};
    use kube::Resource;

    fn build(git_secret: Option<&str>) -> Build {
        let name = object_names::build("store-prod", "a-rather-long-app-name-of-forty-chars", 12);
        let mut build = Build::new(
            &name,
            BuildSpec {
                org: "acme".to_owned(),
                project: "store".to_owned(),
                environment: "prod".to_owned(),
                namespace: "store-prod".to_owned(),
                app: "a-rather-long-app-name-of-forty-chars".to_owned(),
                app_uid: "app-uid".to_owned(),
                number: 12,
                source: AppSource {
                    git_repo: "https://git.example.com:8443/acme/shop.git".to_owned(),
                    git_ref: Some("main".to_owned()),
                    build: BuildSettings {
                        strategy: BuildStrategy::Auto,
                        context_dir: Some("services/web/".to_owned()),
                        dockerfile: None,
                    },
                    git_secret: git_secret.map(str::to_owned),
                },
                actor: Some("dev@acme.test".to_owned()),
                created_at: 1,
                decision: None,
                branch: None,
                hook: None,
                cancel: None,
            },
        );
        build.metadata.namespace = Some(BUILDS_NAMESPACE.to_owned());
        build.metadata.uid = Some("build-uid".to_owned());
        build.metadata.labels = Some(BTreeMap::from([
            (LABEL_MANAGED_BY.to_owned(), MANAGER.to_owned()),
            (LABEL_APP_UID.to_owned(), "app-uid".to_owned()),
        ]));
        build
    }

    fn rendered_for(build: &Build, apparmor: AppArmor) -> Result<Job, String> {
        let owner = build.controller_owner_ref(&()).unwrap();
        let registry =
            Registry::parse("registry.example.com/berth", "registry.example.com").unwrap();
        let name = object_names::build_job(&build.metadata.name.clone().unwrap());
        let credential = build.spec.source.git_secret.as_ref().map(|_| name.as_str());
        let credentials = build_credentials(build, &registry);
        let target = Target {
            registry: &registry,
            credentials: &credentials,
            apparmor,
        };
        job(
            build,
            owner,
            &BuilderSettings::default(),
            &target,
            credential,
        )
    }

    fn rendered(git_secret: Option<&str>) -> Job {
        rendered_for(&build(git_secret), AppArmor::Field).expect("a Job")
    }

    fn pod_of(job: &Job) -> &PodSpec {
        job.spec.as_ref().unwrap().template.spec.as_ref().unwrap()
    }

    fn all_containers(pod: &PodSpec) -> Vec<&Container> {
        pod.init_containers
            .iter()
            .flatten()
            .chain(&pod.containers)
            .collect()
    }

    fn env_of<'a>(container: &'a Container, name: &str) -> &'a str {
        container
            .env
            .iter()
            .flatten()
            .find(|var| var.name == name)
            .and_then(|var| var.value.as_deref())
            .unwrap_or_default()
    }

    #[test]
    fn a_build_job_is_confined_and_owned_by_its_build() {
        let job = rendered(Some("git-token"));
        let meta = &job.metadata;
        let name = meta.name.as_deref().unwrap();
        assert!(name.len() <= 63 && name.starts_with("build-"), "{name}");
        assert_eq!(meta.namespace.as_deref(), Some(BUILDS_NAMESPACE));
        let owner = &meta.owner_references.as_ref().unwrap()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.uid.as_str(), owner.controller),
            ("Build", "build-uid", Some(true))
        );
        let labels = meta.labels.as_ref().unwrap();
        assert_eq!(labels.get(LABEL_BUILD).map(String::as_str), Some("12"));
        assert_eq!(
            labels.get(LABEL_APP_UID).map(String::as_str),
            Some("app-uid")
        );
        for value in labels.values() {
            assert!(value.len() <= 63);
        }
        let spec = job.spec.as_ref().unwrap();
        assert_eq!(spec.backoff_limit, Some(0));
        assert_eq!(
            spec.active_deadline_seconds,
            Some(DEFAULT_BUILD_DEADLINE_SECONDS)
        );
        assert_eq!(
            spec.ttl_seconds_after_finished,
            Some(BUILD_JOB_KEPT_SECONDS)
        );
        assert_eq!(
            spec.template.metadata.as_ref().unwrap().labels.as_ref(),
            Some(labels)
        );

        let pod = pod_of(&job);
        assert_eq!(pod.restart_policy.as_deref(), Some("Never"));
        assert_eq!(pod.automount_service_account_token, Some(false));
        assert_eq!(pod.service_account_name, None);
        let names: Vec<&str> = all_containers(pod)
            .iter()
            .map(|c| c.name.as_str())
            .collect();
        assert_eq!(
            names,
            [SOURCE, RUN_IMAGE, DOCKERFILE, BUILDPACKS, PUSH, RESULT]
        );
        // Nothing reaches the node or grants privileges, whatever the Build says.
        let text = serde_json::to_string(pod).unwrap();
        for field in [
            "privileged",
            "hostNetwork",
            "hostPID",
            "hostIPC",
            "hostPath",
            "hostPort",
            "capabilities",
            "procMount",
            "serviceAccountName",
            "nodeName",
        ] {
            assert!(!text.contains(&format!("\"{field}\"")), "{field} in {text}");
        }
        for container in all_containers(pod) {
            assert_eq!(
                container.termination_message_policy.as_deref(),
                Some("FallbackToLogsOnError"),
                "{}",
                container.name
            );
            let resources = container.resources.as_ref().unwrap();
            for map in [&resources.requests, &resources.limits] {
                let map = map.as_ref().unwrap();
                assert!(map.contains_key("cpu") && map.contains_key("memory"));
            }
            let security = container.security_context.as_ref().unwrap();
            assert_eq!(security.privileged, None);
            // Only BuildKit escalates (newuidmap) and runs without a seccomp
            // filter and AppArmor.
            let unconfined = container.name == DOCKERFILE;
            assert_eq!(
                security.allow_privilege_escalation.is_none(),
                unconfined,
                "{}",
                container.name
            );
            assert_eq!(
                security.seccomp_profile.as_ref().unwrap().type_,
                if unconfined {
                    "Unconfined"
                } else {
                    "RuntimeDefault"
                }
            );
            assert_eq!(
                security
                    .app_armor_profile
                    .as_ref()
                    .map(|p| p.type_.as_str()),
                unconfined.then_some("Unconfined"),
                "{}",
                container.name
            );
            assert!(container.name.len() <= 63);
            // Values reach the scripts as variables, never spliced into them.
            let command = container.command.as_ref().unwrap().join(" ");
            assert!(!command.contains("git.example.com") && !command.contains("services/web"));
        }
        // The field, not the deprecated annotation (a cluster of 1.30 or later).
        assert_eq!(spec.template.metadata.as_ref().unwrap().annotations, None);
        for volume in pod.volumes.as_ref().unwrap() {
            assert!(volume.name.len() <= 63);
        }
    }

    #[test]
    fn apparmor_is_the_field_from_1_30_and_the_annotation_before() {
        assert_eq!(AppArmor::for_minor("28"), AppArmor::Annotation);
        assert_eq!(AppArmor::for_minor("29+"), AppArmor::Annotation);
        assert_eq!(AppArmor::for_minor("30"), AppArmor::Field);
        assert_eq!(AppArmor::for_minor("37"), AppArmor::Field);
        let job = rendered_for(&build(None), AppArmor::Annotation).expect("a Job");
        let template = &job.spec.as_ref().unwrap().template;
        assert_eq!(
            template.metadata.as_ref().unwrap().annotations,
            Some(BTreeMap::from([(
                "container.apparmor.security.beta.kubernetes.io/dockerfile".to_owned(),
                "unconfined".to_owned()
            )]))
        );
        for container in all_containers(template.spec.as_ref().unwrap()) {
            let security = container.security_context.as_ref().unwrap();
            assert_eq!(security.app_armor_profile, None, "{}", container.name);
        }
    }

    /// With the shared credentials of an upgrade's first step, every build
    /// mounts the installation's.
    #[test]
    fn shared_credentials_are_the_installations() {
        let build = build(None);
        let registry = Registry {
            credentials: CredentialMode::Shared,
            ..Registry::parse("registry.example.com/berth", "registry.example.com").unwrap()
        };
        let credentials = build_credentials(&build, &registry);
        assert_eq!(credentials.push_secret, PUSH_SECRET);
        assert_eq!(credentials.pull_secret.as_deref(), Some(PULL_SECRET));
    }

    /// No step that runs the tenant's code (`dockerfile`, `buildpacks`)
    /// mounts or can read the push credential, or any git credential;
    /// only `push` mounts the push credential; only the steps that pull
    /// bases mount the pull credential; `facts` is written by Berth's steps
    /// alone.
    #[test]
    fn credentials_reach_only_the_steps_that_use_them() {
        let job = rendered(Some("git-token"));
        let pod = pod_of(&job);
        let volumes = pod.volumes.as_ref().unwrap();
        let secret_of = |volume: &str| {
            volumes
                .iter()
                .find(|v| v.name == volume)
                .and_then(|v| v.secret.as_ref())
                .and_then(|secret| secret.secret_name.clone())
        };
        // The build's own credentials (a scoped registry), named after its Job.
        let job_name = job.metadata.name.clone().unwrap();
        assert_eq!(secret_of("push"), Some(format!("{job_name}-push")));
        assert_eq!(secret_of("pull"), Some(format!("{job_name}-pull")));
        let pull = volumes.iter().find(|v| v.name == "pull").unwrap();
        assert_eq!(pull.secret.as_ref().unwrap().optional, Some(true));
        // Only these two volumes hold a secret.
        let secret_volumes: Vec<&str> = volumes
            .iter()
            .filter(|v| v.secret.is_some() || v.projected.is_some())
            .map(|v| v.name.as_str())
            .collect();
        assert_eq!(secret_volumes, ["push", "pull"]);
        for container in all_containers(pod) {
            let mounts: Vec<(&str, bool)> = container
                .volume_mounts
                .iter()
                .flatten()
                .map(|m| (m.name.as_str(), m.read_only == Some(true)))
                .collect();
            let mounts_volume = |name: &str| mounts.iter().any(|(n, _)| *n == name);
            let name = container.name.as_str();
            assert_eq!(mounts_volume("push"), name == PUSH, "{name}");
            assert_eq!(
                mounts_volume("pull"),
                [RUN_IMAGE, DOCKERFILE].contains(&name),
                "{name}"
            );
            for (volume, read_only) in &mounts {
                if ["push", "pull"].contains(volume) {
                    assert!(read_only, "{name} mounts {volume} writable");
                }
                if *volume == "facts" {
                    assert_eq!(!read_only, [SOURCE, PUSH].contains(&name), "{name}");
                }
            }
            let secret_keys: Vec<&str> = container
                .env
                .iter()
                .flatten()
                .filter_map(|var| var.value_from.as_ref())
                .map(|from| {
                    assert!(from.config_map_key_ref.is_none() && from.field_ref.is_none());
                    from.secret_key_ref.as_ref().expect("a secret").key.as_str()
                })
                .collect();
            assert_eq!(
                secret_keys,
                if name == SOURCE {
                    vec!["token", "username"]
                } else {
                    vec![]
                },
                "{name}"
            );
            assert!(container.env_from.is_none(), "{name}");
            // The tenant's steps name no credential's path either.
            if [DOCKERFILE, BUILDPACKS].contains(&name) {
                for var in container.env.iter().flatten() {
                    let value = var.value.as_deref().unwrap_or_default();
                    assert!(!value.starts_with(PUSH_CONFIG), "{name}: {}", var.name);
                }
            }
        }
        let step = |name: &str| {
            all_containers(pod)
                .into_iter()
                .find(|c| c.name == name)
                .unwrap()
        };
        let source = step(SOURCE);
        assert_eq!(
            env_of(source, "GIT_REPO"),
            "https://git.example.com:8443/acme/shop.git"
        );
        assert_eq!(env_of(source, "GIT_ORIGIN"), "https://git.example.com:8443");
        assert_eq!(env_of(source, "GIT_REF"), "main");
        assert_eq!(env_of(source, "STRATEGY"), "auto");
        assert_eq!(env_of(source, "CONTEXT_DIR"), "services/web");
        assert_eq!(env_of(source, "DOCKERFILE"), "Dockerfile");
        let repository =
            "registry.example.com/berth/acme/store/a-rather-long-app-name-of-forty-chars";
        let app_layout = format!("/image/{repository}");
        for name in [DOCKERFILE, BUILDPACKS, PUSH] {
            assert_eq!(env_of(step(name), "APP_LAYOUT"), app_layout, "{name}");
        }
        for name in [BUILDPACKS, PUSH] {
            assert_eq!(env_of(step(name), "IMAGE"), repository, "{name}");
        }
        let buildpacks = step(BUILDPACKS);
        assert_eq!(env_of(buildpacks, "CNB_PLATFORM_API"), "0.13");
        assert_eq!(env_of(buildpacks, "CNB_USE_LAYOUT"), "true");
        assert_eq!(env_of(buildpacks, "CNB_LAYOUT_DIR"), "/image");
        assert_eq!(
            env_of(step(RUN_IMAGE), "RUN_IMAGE_LAYOUT"),
            "/image/index.docker.io/paketobuildpacks/run-jammy-base/0.1.196"
        );
        assert_eq!(
            env_of(step(DOCKERFILE), "BUILDCTL_CONNECT_RETRIES_MAX"),
            BUILDCTL_CONNECT_RETRIES_MAX
        );
        // Without a git secret, no credential at all.
        let public = rendered(None);
        for container in all_containers(pod_of(&public)) {
            assert!(
                container
                    .env
                    .iter()
                    .flatten()
                    .all(|var| var.value_from.is_none())
            );
        }
    }

    #[test]
    fn a_build_whose_source_no_step_can_name_is_refused() {
        let mut bad = build(None);
        bad.spec.source.git_repo = "http://git.example.com/acme/shop".to_owned();
        assert!(rendered_for(&bad, AppArmor::Field).is_err());
    }

    #[test]
    fn the_default_images_are_pinned() {
        let settings = BuilderSettings::default();
        for image in [
            &settings.git_image,
            &settings.buildkit_image,
            &settings.push_image,
        ] {
            let (_, digest) = image.split_once("@sha256:").expect("pinned by digest");
            assert_eq!(digest.len(), 64, "{image}");
        }
        // No public source pins these two tags by digest: tags, overridable.
        for image in [&settings.builder_image, settings.run_image.as_str()] {
            assert!(!image.contains(":latest") && image.rsplit_once(':').is_some());
        }
    }
}
