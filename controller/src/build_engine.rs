//! What a build runs as: one Job in the builds namespace, rendered from the
//! Build resource (a pure function, like `render`). The one engine today
//! runs the upstream builders straight from their images; another (e.g.
//! Shipwright's `BuildRun`) would be a second module with the same two
//! functions: [`job`] to start it and [`outcome`] to read its end.
//!
//! The pod, in order (init containers run one after another, and the first
//! that fails ends the pod):
//! 1. `source` (a git image): clones `gitRepo` at `gitRef` (the default
//!    branch when none) into an emptyDir, writes the commit, and the
//!    strategy (`auto`: `dockerfile` when `{contextDir}/{dockerfile}`
//!    exists, else `buildpacks`). The only step with the git credential,
//!    as environment variables a credential helper reads (never in a
//!    command line, a URL or a file).
//! 2. `dockerfile`: BuildKit rootless, daemonless (`buildctl-daemonless.sh`,
//!    as in BuildKit's `examples/kubernetes/job.rootless.yaml`), pushing
//!    `{prefix}/{org}/{project}/{app}:{commit}`; the digest from
//!    `--metadata-file`. Skips itself unless the strategy is `dockerfile`.
//! 3. `buildpacks`: the Cloud Native Buildpacks lifecycle's
//!    `/cnb/lifecycle/creator` in the builder image, pushing the same tag;
//!    the digest from its `report.toml`. Skips itself unless the strategy
//!    is `buildpacks`.
//! 4. `result`: writes the termination message, one JSON object
//!    `{"commit", "strategy", "digest"}`, which [`outcome`] parses
//!    strictly.
//!
//! Every container's message falls back to its output's tail when it fails
//! (`FallbackToLogsOnError`), which is how a failed build says why.
//!
//! Confinement: no privileged container, no host namespace or path, no
//! service account token, no added capability. Rootless BuildKit needs two
//! things `baseline` Pod Security forbids: seccomp and AppArmor
//! `Unconfined` for its container (it makes user namespaces and mounts in
//! them), and privilege escalation (`newuidmap` is setuid). So the builds
//! namespace is labelled `privileged` for Pod Security; only the controller
//! creates pods there, and they are these.

use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{
    Container, ContainerStatus, EmptyDirVolumeSource, EnvVar, EnvVarSource, KeyToPath, Pod,
    PodSecurityContext, PodSpec, PodTemplateSpec, ResourceRequirements, SeccompProfile,
    SecretKeySelector, SecretVolumeSource, SecurityContext, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use serde::Deserialize;

use berth_shared::cluster::crd::{Build, BuildStrategy, LABEL_BUILD, object_names};

use crate::registry::{DOCKER_CONFIG_KEY, PUSH_SECRET, Registry};

pub const DEFAULT_GIT_IMAGE: &str = "docker.io/alpine/git:v2.47.2";
pub const DEFAULT_BUILDKIT_IMAGE: &str = "docker.io/moby/buildkit:v0.17.1-rootless";
pub const DEFAULT_BUILDER_IMAGE: &str = "docker.io/paketobuildpacks/builder-jammy-base:0.4.539";
/// How long a build may run, unless the controller's settings say otherwise.
pub const DEFAULT_BUILD_DEADLINE_SECONDS: i64 = 1800;
/// How long a finished build's Job (and its pod's log) is kept.
pub const BUILD_JOB_KEPT_SECONDS: i32 = 24 * 60 * 60;

/// The containers, by name.
pub const SOURCE: &str = "source";
pub const DOCKERFILE: &str = "dockerfile";
pub const BUILDPACKS: &str = "buildpacks";
pub const RESULT: &str = "result";

/// BuildKit's rootless image runs as `user` (1000:1000); the other
/// containers share its group, so each can write what the one before made.
const BUILD_USER: i64 = 1000;
const BUILD_GROUP: i64 = 1000;

/// Where the pod keeps its work: the source, and (in `out`) what each step
/// found out (`commit`, `strategy`, `digest`).
const WORKSPACE: &str = "/workspace";
const PUSH_CONFIG: &str = "/berth/push";

/// The controller's choices of builders.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuilderSettings {
    pub git_image: String,
    pub buildkit_image: String,
    /// A Cloud Native Buildpacks builder image (it holds the lifecycle).
    pub builder_image: String,
    /// The Job's `activeDeadlineSeconds`.
    pub deadline_seconds: i64,
}

impl Default for BuilderSettings {
    fn default() -> Self {
        Self {
            git_image: DEFAULT_GIT_IMAGE.to_owned(),
            buildkit_image: DEFAULT_BUILDKIT_IMAGE.to_owned(),
            builder_image: DEFAULT_BUILDER_IMAGE.to_owned(),
            deadline_seconds: DEFAULT_BUILD_DEADLINE_SECONDS,
        }
    }
}

/// What the clone step reads the git credential from: the Secret the
/// controller copied for this build (named like its Job).
pub struct GitCredential<'a> {
    pub secret: &'a str,
    /// Whether the copy has a `username` (else `x-access-token`).
    pub has_username: bool,
}

/// The build's labels: the Build's own, and its number.
pub fn labels(build: &Build) -> BTreeMap<String, String> {
    let mut labels = build.metadata.labels.clone().unwrap_or_default();
    labels.insert(LABEL_BUILD.to_owned(), build.spec.number.to_string());
    labels
}

/// The Job running `build`, owned by it (`owner`: its controller reference).
pub fn job(
    build: &Build,
    owner: OwnerReference,
    registry: &Registry,
    settings: &BuilderSettings,
    credential: Option<&GitCredential<'_>>,
) -> Job {
    let name = object_names::build_job(&build.metadata.name.clone().unwrap_or_default());
    let spec = &build.spec;
    let source = &spec.source;
    let repository = registry.repository(&spec.org, &spec.project, &spec.app);
    let context_dir = format!(
        "{WORKSPACE}/source/{}",
        source
            .build
            .context_dir
            .as_deref()
            .unwrap_or("")
            .trim_matches('/')
    );
    let dockerfile = source
        .build
        .dockerfile
        .clone()
        .unwrap_or_else(|| "Dockerfile".to_owned());
    let var = |name: &str, value: &str| EnvVar {
        name: name.to_owned(),
        value: Some(value.to_owned()),
        value_from: None,
    };
    let shared = [
        var("CONTEXT_DIR", &context_dir),
        var("DOCKERFILE", &dockerfile),
        var("IMAGE", &repository),
    ];

    let mut clone_env = vec![
        var("HOME", "/workspace/home"),
        var("GIT_REPO", &source.git_repo),
        var("GIT_REF", source.git_ref.as_deref().unwrap_or("")),
        var("STRATEGY", source.build.strategy.as_str()),
        // Never ask: a repository that needs a credential it was not given
        // fails at once.
        var("GIT_TERMINAL_PROMPT", "0"),
    ];
    clone_env.extend(shared.iter().cloned());
    if let Some(credential) = credential {
        let key = |env: &str, key: &str, optional: bool| EnvVar {
            name: env.to_owned(),
            value: None,
            value_from: Some(EnvVarSource {
                secret_key_ref: Some(SecretKeySelector {
                    name: credential.secret.to_owned(),
                    key: key.to_owned(),
                    optional: optional.then_some(true),
                }),
                ..Default::default()
            }),
        };
        clone_env.push(key("GIT_TOKEN", "token", false));
        if credential.has_username {
            clone_env.push(key("GIT_USERNAME", "username", false));
        }
    }
    let clone = Container {
        name: SOURCE.to_owned(),
        image: Some(settings.git_image.clone()),
        command: Some(shell(CLONE_SCRIPT)),
        env: Some(clone_env),
        volume_mounts: Some(vec![mount("workspace", WORKSPACE)]),
        resources: Some(resources(("100m", "128Mi"), ("1", "512Mi"))),
        security_context: Some(confined(Some(BUILD_USER))),
        ..step()
    };

    let mut buildkit_env = vec![
        var("BUILDKITD_FLAGS", "--oci-worker-no-process-sandbox"),
        var("DOCKER_CONFIG", PUSH_CONFIG),
    ];
    buildkit_env.extend(shared.iter().cloned());
    let buildkit = Container {
        name: DOCKERFILE.to_owned(),
        image: Some(settings.buildkit_image.clone()),
        command: Some(shell(BUILDKIT_SCRIPT)),
        env: Some(buildkit_env),
        volume_mounts: Some(vec![
            mount("workspace", WORKSPACE),
            mount("buildkit", "/home/user/.local/share/buildkit"),
            read_only(mount("push", PUSH_CONFIG)),
        ]),
        resources: Some(resources(("500m", "1Gi"), ("2", "4Gi"))),
        // What rootless BuildKit needs (see the module's comment): its own
        // user, no seccomp filter (and AppArmor unconfined, by the pod's
        // annotation), and `newuidmap`'s setuid. Nothing more.
        security_context: Some(SecurityContext {
            run_as_user: Some(BUILD_USER),
            run_as_group: Some(BUILD_GROUP),
            run_as_non_root: Some(true),
            seccomp_profile: Some(SeccompProfile {
                type_: "Unconfined".to_owned(),
                localhost_profile: None,
            }),
            ..Default::default()
        }),
        ..step()
    };

    let mut buildpacks_env = vec![var("DOCKER_CONFIG", PUSH_CONFIG)];
    buildpacks_env.extend(shared.iter().cloned());
    let buildpacks = Container {
        name: BUILDPACKS.to_owned(),
        image: Some(settings.builder_image.clone()),
        command: Some(shell(BUILDPACKS_SCRIPT)),
        env: Some(buildpacks_env),
        volume_mounts: Some(vec![
            mount("workspace", WORKSPACE),
            mount("layers", "/layers"),
            read_only(mount("push", PUSH_CONFIG)),
        ]),
        resources: Some(resources(("500m", "1Gi"), ("2", "4Gi"))),
        // The builder image's own user (its CNB user), in the build group.
        security_context: Some(confined(None)),
        ..step()
    };

    let result = Container {
        name: RESULT.to_owned(),
        image: Some(settings.git_image.clone()),
        command: Some(shell(RESULT_SCRIPT)),
        volume_mounts: Some(vec![mount("workspace", WORKSPACE)]),
        resources: Some(resources(("10m", "16Mi"), ("100m", "64Mi"))),
        security_context: Some(confined(Some(BUILD_USER))),
        ..step()
    };

    let empty = |name: &str, limit: &str| Volume {
        name: name.to_owned(),
        empty_dir: Some(EmptyDirVolumeSource {
            medium: None,
            size_limit: Some(Quantity(limit.to_owned())),
        }),
        ..Default::default()
    };
    let pod = PodSpec {
        init_containers: Some(vec![clone, buildkit, buildpacks]),
        containers: vec![result],
        restart_policy: Some("Never".to_owned()),
        // A build talks to its git host and registry, never to the cluster.
        automount_service_account_token: Some(false),
        enable_service_links: Some(false),
        security_context: Some(PodSecurityContext {
            run_as_group: Some(BUILD_GROUP),
            fs_group: Some(BUILD_GROUP),
            ..Default::default()
        }),
        volumes: Some(vec![
            empty("workspace", "4Gi"),
            empty("buildkit", "10Gi"),
            empty("layers", "10Gi"),
            Volume {
                name: "push".to_owned(),
                secret: Some(SecretVolumeSource {
                    secret_name: Some(PUSH_SECRET.to_owned()),
                    items: Some(vec![KeyToPath {
                        key: DOCKER_CONFIG_KEY.to_owned(),
                        path: "config.json".to_owned(),
                        mode: None,
                    }]),
                    default_mode: Some(0o440),
                    optional: None,
                }),
                ..Default::default()
            },
        ]),
        ..Default::default()
    };
    let labels = labels(build);
    Job {
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
                    annotations: Some(BTreeMap::from([(
                        format!("container.apparmor.security.beta.kubernetes.io/{DOCKERFILE}"),
                        "unconfined".to_owned(),
                    )])),
                    ..Default::default()
                }),
                spec: Some(pod),
            },
            ..Default::default()
        }),
        status: None,
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

fn resources(requests: (&str, &str), limits: (&str, &str)) -> ResourceRequirements {
    let of = |(cpu, memory): (&str, &str)| {
        BTreeMap::from([
            ("cpu".to_owned(), Quantity(cpu.to_owned())),
            ("memory".to_owned(), Quantity(memory.to_owned())),
        ])
    };
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

/// Clones at the ref into `source`, and writes `commit` and `strategy`.
/// Every value comes in the environment, so none is ever parsed as shell.
/// The credential helper reads the token from the environment when git
/// asks: it is in no URL, argument or file.
const CLONE_SCRIPT: &str = r#"set -eu
umask 002
mkdir -p "$HOME" /workspace/out
if [ -n "${GIT_TOKEN:-}" ]; then
  git config --global credential.helper '!f() { echo "username=${GIT_USERNAME:-x-access-token}"; echo "password=${GIT_TOKEN}"; }; f'
fi
git init -q /workspace/source
cd /workspace/source
git remote add origin "$GIT_REPO"
git fetch -q --depth 1 origin "${GIT_REF:-HEAD}"
git checkout -q FETCH_HEAD
git rev-parse HEAD > /workspace/out/commit
case "$STRATEGY" in
  auto) if [ -f "$CONTEXT_DIR/$DOCKERFILE" ]; then echo dockerfile; else echo buildpacks; fi ;;
  *) echo "$STRATEGY" ;;
esac > /workspace/out/strategy
echo "commit $(cat /workspace/out/commit), strategy $(cat /workspace/out/strategy)"
"#;

/// BuildKit, when the strategy is `dockerfile`: pushes `IMAGE:commit`.
const BUILDKIT_SCRIPT: &str = r#"set -eu
[ "$(cat /workspace/out/strategy)" = dockerfile ] || exit 0
commit="$(cat /workspace/out/commit)"
buildctl-daemonless.sh build \
  --frontend dockerfile.v0 \
  --local context="$CONTEXT_DIR" \
  --local dockerfile="$CONTEXT_DIR" \
  --opt filename="$DOCKERFILE" \
  --output type=image,name="$IMAGE:$commit",push=true \
  --metadata-file /workspace/out/metadata.json
sed -n 's/.*"containerimage.digest": *"\(sha256:[0-9a-f]\{64\}\)".*/\1/p' /workspace/out/metadata.json > /workspace/out/digest
"#;

/// The lifecycle, when the strategy is `buildpacks`: pushes `IMAGE:commit`.
const BUILDPACKS_SCRIPT: &str = r#"set -eu
[ "$(cat /workspace/out/strategy)" = buildpacks ] || exit 0
commit="$(cat /workspace/out/commit)"
/cnb/lifecycle/creator \
  -app="$CONTEXT_DIR" \
  -layers=/layers \
  -platform=/platform \
  -report=/layers/report.toml \
  "$IMAGE:$commit"
sed -n 's/^ *digest *= *"\(sha256:[0-9a-f]\{64\}\)".*/\1/p' /layers/report.toml > /workspace/out/digest
"#;

/// The termination message: one JSON object.
const RESULT_SCRIPT: &str = r#"set -eu
digest="$(cat /workspace/out/digest 2>/dev/null || true)"
if [ -z "$digest" ]; then echo "the builder pushed no image digest" >&2; exit 1; fi
printf '{"commit":"%s","strategy":"%s","digest":"%s"}' \
  "$(cat /workspace/out/commit)" "$(cat /workspace/out/strategy)" "$digest" > /dev/termination-log
"#;

/// What a finished build pushed, as its `result` container said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pushed {
    /// 40 lowercase hex digits.
    pub commit: String,
    pub strategy: BuildStrategy,
    /// `sha256:` and 64 lowercase hex digits.
    pub digest: String,
}

impl Pushed {
    /// The termination message of `result`, parsed strictly: any other
    /// shape is no result at all.
    pub fn parse(message: &str) -> Option<Self> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Message {
            commit: String,
            strategy: String,
            digest: String,
        }
        let message: Message = serde_json::from_str(message.trim()).ok()?;
        let hex = |text: &str, length: usize| {
            text.len() == length && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        };
        let strategy = match message.strategy.as_str() {
            "dockerfile" => BuildStrategy::Dockerfile,
            "buildpacks" => BuildStrategy::Buildpacks,
            _ => return None,
        };
        let digest_hex = message.digest.strip_prefix("sha256:")?;
        (hex(&message.commit, 40) && hex(digest_hex, 64)).then_some(Self {
            commit: message.commit,
            strategy,
            digest: message.digest,
        })
    }
}

/// How a build's Job ended; None while it runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Succeeded(Pushed),
    /// Why, in words a tenant may read (the failed step's output tail).
    Failed(String),
}

/// The most of a failed step's output a build's message keeps.
const MESSAGE_TAIL: usize = 600;

/// Reads the end of a build from its Job and (when there is one) its pod.
pub fn outcome(job: &Job, pod: Option<&Pod>, deadline_seconds: i64) -> Option<Outcome> {
    let conditions = job.status.as_ref()?.conditions.as_ref()?;
    let holds = |kind: &str| {
        conditions
            .iter()
            .find(|condition| condition.type_ == kind && condition.status == "True")
    };
    let statuses: Vec<&ContainerStatus> = pod
        .and_then(|pod| pod.status.as_ref())
        .map(|status| {
            status
                .init_container_statuses
                .iter()
                .flatten()
                .chain(status.container_statuses.iter().flatten())
                .collect()
        })
        .unwrap_or_default();
    let message_of = |name: &str| {
        statuses
            .iter()
            .find(|status| status.name == name)
            .and_then(|status| status.state.as_ref()?.terminated.as_ref())
    };
    if holds("Complete").is_some() {
        let pushed = message_of(RESULT)
            .and_then(|terminated| terminated.message.as_deref())
            .and_then(Pushed::parse);
        return Some(match pushed {
            Some(pushed) => Outcome::Succeeded(pushed),
            None => Outcome::Failed(
                "the build ended without a result Berth can read (its result step said no commit and digest)".to_owned(),
            ),
        });
    }
    let failed = holds("Failed")?;
    if failed.reason.as_deref() == Some("DeadlineExceeded") {
        return Some(Outcome::Failed(format!(
            "it ran past its deadline of {deadline_seconds} s"
        )));
    }
    let step = [SOURCE, DOCKERFILE, BUILDPACKS, RESULT]
        .into_iter()
        .find_map(|name| {
            let terminated = message_of(name)?;
            (terminated.exit_code != 0).then(|| (name, terminated.message.clone()))
        });
    Some(Outcome::Failed(match step {
        Some((name, Some(message))) if !message.trim().is_empty() => {
            format!("step {name} failed: {}", tail(message.trim()))
        }
        Some((name, _)) => format!("step {name} failed"),
        None => match failed.reason.as_deref() {
            Some(reason) => format!("its Job failed ({reason})"),
            None => "its Job failed".to_owned(),
        },
    }))
}

/// The last [`MESSAGE_TAIL`] bytes of `text`, cut at a character.
fn tail(text: &str) -> &str {
    let mut start = text.len().saturating_sub(MESSAGE_TAIL);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_shared::cluster::crd::{
        AppSource, BUILDS_NAMESPACE, BuildSettings, BuildSpec, LABEL_APP_UID, LABEL_MANAGED_BY,
        MANAGER,
    };
    use k8s_openapi::api::batch::v1::{JobCondition, JobStatus};
    use k8s_openapi::api::core::v1::{ContainerState, ContainerStateTerminated, PodStatus};
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
                    git_repo: "https://git.example.com/acme/shop.git".to_owned(),
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

    fn rendered(git_secret: Option<&str>) -> Job {
        let build = build(git_secret);
        let owner = build.controller_owner_ref(&()).unwrap();
        let registry =
            Registry::parse("registry.example.com/berth", "registry.example.com").unwrap();
        let name = object_names::build_job(&build.metadata.name.clone().unwrap());
        let credential = git_secret.map(|_| GitCredential {
            secret: &name,
            has_username: true,
        });
        job(
            &build,
            owner,
            &registry,
            &BuilderSettings::default(),
            credential.as_ref(),
        )
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
        assert_eq!(names, [SOURCE, DOCKERFILE, BUILDPACKS, RESULT]);
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
            // Only BuildKit escalates (newuidmap) and runs without a seccomp filter.
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
            assert!(container.name.len() <= 63);
        }
        for volume in pod.volumes.as_ref().unwrap() {
            assert!(volume.name.len() <= 63);
        }
    }

    #[test]
    fn the_git_credential_reaches_the_clone_step_only_and_the_push_credential_the_builders_only() {
        let job = rendered(Some("git-token"));
        let pod = pod_of(&job);
        let secret_of = |container: &Container| -> Vec<String> {
            container
                .env
                .iter()
                .flatten()
                .filter_map(|var| var.value_from.as_ref()?.secret_key_ref.as_ref())
                .map(|selector| selector.key.clone())
                .collect()
        };
        for container in all_containers(pod) {
            let keys = secret_of(container);
            if container.name == SOURCE {
                assert_eq!(keys, ["token", "username"]);
            } else {
                assert!(keys.is_empty(), "{}", container.name);
            }
            let pushes = container
                .volume_mounts
                .iter()
                .flatten()
                .any(|mount| mount.name == "push");
            assert_eq!(
                pushes,
                [DOCKERFILE, BUILDPACKS].contains(&container.name.as_str())
            );
            // Values reach the scripts as variables, never spliced into them.
            let command = container.command.as_ref().unwrap().join(" ");
            assert!(!command.contains("git.example.com") && !command.contains("services/web"));
        }
        let env = |name: &str| -> String {
            all_containers(pod)[0]
                .env
                .iter()
                .flatten()
                .find(|var| var.name == name)
                .and_then(|var| var.value.clone())
                .unwrap_or_default()
        };
        assert_eq!(env("GIT_REPO"), "https://git.example.com/acme/shop.git");
        assert_eq!(env("GIT_REF"), "main");
        assert_eq!(env("STRATEGY"), "auto");
        assert_eq!(env("CONTEXT_DIR"), "/workspace/source/services/web");
        assert_eq!(env("DOCKERFILE"), "Dockerfile");
        assert_eq!(
            env("IMAGE"),
            "registry.example.com/berth/acme/store/a-rather-long-app-name-of-forty-chars"
        );
        let push = pod
            .volumes
            .iter()
            .flatten()
            .find(|volume| volume.name == "push")
            .and_then(|volume| volume.secret.as_ref())
            .unwrap();
        assert_eq!(push.secret_name.as_deref(), Some(PUSH_SECRET));
        // Without a git secret, no credential at all.
        let public = rendered(None);
        for container in all_containers(pod_of(&public)) {
            assert!(secret_of(container).is_empty());
        }
    }

    fn ended(
        job_condition: (&str, Option<&str>),
        steps: &[(&str, i32, Option<&str>)],
    ) -> (Job, Pod) {
        let job = Job {
            status: Some(JobStatus {
                conditions: Some(vec![JobCondition {
                    type_: job_condition.0.to_owned(),
                    status: "True".to_owned(),
                    reason: job_condition.1.map(str::to_owned),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            ..Default::default()
        };
        let status = |(name, exit_code, message): &(&str, i32, Option<&str>)| ContainerStatus {
            name: (*name).to_owned(),
            state: Some(ContainerState {
                terminated: Some(ContainerStateTerminated {
                    exit_code: *exit_code,
                    message: message.map(str::to_owned),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        let (init, main): (Vec<_>, Vec<_>) = steps.iter().partition(|(name, ..)| *name != RESULT);
        let pod = Pod {
            status: Some(PodStatus {
                init_container_statuses: Some(init.iter().map(&status).collect()),
                container_statuses: Some(main.iter().map(status).collect()),
                ..Default::default()
            }),
            ..Default::default()
        };
        (job, pod)
    }

    #[test]
    fn a_builds_end_is_read_from_its_result_or_its_failed_step() {
        let commit = "0123456789abcdef0123456789abcdef01234567";
        let digest = format!("sha256:{}", "ab".repeat(32));
        let message =
            format!(r#"{{"commit":"{commit}","strategy":"buildpacks","digest":"{digest}"}}"#);
        let (job, pod) = ended(
            ("Complete", None),
            &[
                (SOURCE, 0, None),
                (DOCKERFILE, 0, None),
                (BUILDPACKS, 0, None),
                (RESULT, 0, Some(&message)),
            ],
        );
        assert_eq!(
            outcome(&job, Some(&pod), 600),
            Some(Outcome::Succeeded(Pushed {
                commit: commit.to_owned(),
                strategy: BuildStrategy::Buildpacks,
                digest: digest.clone(),
            }))
        );
        // A result that is not exactly the shape is no success.
        let (job, pod) = ended(
            ("Complete", None),
            &[(RESULT, 0, Some("{\"commit\":\"x\"}"))],
        );
        assert!(matches!(
            outcome(&job, Some(&pod), 600),
            Some(Outcome::Failed(_))
        ));
        let (job, pod) = ended(
            ("Failed", Some("BackoffLimitExceeded")),
            &[
                (SOURCE, 0, None),
                (DOCKERFILE, 1, Some("ERROR: failed to solve: exit code 2\n")),
            ],
        );
        assert_eq!(
            outcome(&job, Some(&pod), 600),
            Some(Outcome::Failed(
                "step dockerfile failed: ERROR: failed to solve: exit code 2".to_owned()
            ))
        );
        let (job, _) = ended(("Failed", Some("DeadlineExceeded")), &[]);
        assert_eq!(
            outcome(&job, None, 900),
            Some(Outcome::Failed(
                "it ran past its deadline of 900 s".to_owned()
            ))
        );
        assert_eq!(outcome(&Job::default(), None, 600), None);
    }

    #[test]
    fn a_result_is_taken_only_in_its_exact_shape() {
        let commit = "0123456789abcdef0123456789abcdef01234567";
        let digest = format!("sha256:{}", "ab".repeat(32));
        let good =
            format!(r#"{{"commit":"{commit}","strategy":"dockerfile","digest":"{digest}"}}"#);
        let pushed = Pushed::parse(&good).expect("parsed");
        assert_eq!(pushed.commit, commit);
        assert_eq!(pushed.strategy, BuildStrategy::Dockerfile);
        assert_eq!(pushed.digest, digest);
        for bad in [
            good.replace("dockerfile", "auto"),
            good.replace(commit, &commit[1..]),
            good.replace(commit, &commit.to_uppercase()),
            good.replace("sha256:", "sha512:"),
            good.replace(&digest, &format!("{digest}0")),
            good.replace('}', r#","extra":1}"#),
            "not json".to_owned(),
            String::new(),
        ] {
            assert_eq!(Pushed::parse(&bad), None, "{bad}");
        }
    }

    #[test]
    fn a_tail_is_cut_at_a_character() {
        let text = format!("{}é{}", "a".repeat(10), "b".repeat(MESSAGE_TAIL - 1));
        let cut = tail(&text);
        assert!(cut.len() <= MESSAGE_TAIL);
        assert!(cut.ends_with('b'));
        assert_eq!(tail("short"), "short");
    }
}
