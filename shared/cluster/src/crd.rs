//! Berth's custom resources (group `berth.dev`, version `v1`). The CRDs with
//! their OpenAPI schemas are generated from these types; `infra/k8s/crds.yaml`
//! holds the same (a test compares them).

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

// The App model, which the App resource's spec holds, and the parts the
// resources share with the API's records: defined with the values, so that
// a client links them without kube.
use berth_domain::app::{AppConfig, AppSource, BuildStrategy};
use berth_domain::certificate::CertificateFinding;
use berth_domain::clock;
use berth_domain::parts::Quota;

pub const GROUP: &str = "berth.dev";
/// Labels Berth puts on everything it creates.
pub const LABEL_ORG: &str = "berth.dev/org";
pub const LABEL_PROJECT: &str = "berth.dev/project";
pub const LABEL_ENVIRONMENT: &str = "berth.dev/environment";
pub const LABEL_MANAGED_BY: &str = "app.kubernetes.io/managed-by";
pub const MANAGER: &str = "berth";

/// A project: a group of environments owned by one organization. Cluster-scoped.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "berth.dev",
    version = "v1",
    kind = "Project",
    plural = "projects",
    shortname = "bproj",
    status = "ProjectStatus",
    printcolumn = r#"{"name":"Org","type":"string","jsonPath":".spec.org"}"#,
    printcolumn = r#"{"name":"Ready","type":"boolean","jsonPath":".status.ready"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ProjectSpec {
    pub display_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub org: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProjectStatus {
    #[serde(default)]
    pub ready: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// An environment of a project, provisioned by the controller as the namespace
/// `{project}-{environment}` (also the resource's name). Cluster-scoped.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "berth.dev",
    version = "v1",
    kind = "Environment",
    plural = "environments",
    shortname = "benv",
    status = "EnvironmentStatus",
    printcolumn = r#"{"name":"Project","type":"string","jsonPath":".spec.project"}"#,
    printcolumn = r#"{"name":"Type","type":"string","jsonPath":".spec.envType"}"#,
    printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.phase"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct EnvironmentSpec {
    pub project: String,
    /// The short name used in URLs.
    pub name: String,
    pub org: String,
    pub env_type: EnvType,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quota: Option<Quota>,
    /// Set by a delete: the controller purges the environment at this time (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_scheduled_at: Option<String>,
}

impl Environment {
    /// Deleted, and waiting for its purge (or being purged).
    pub fn is_deleting(&self) -> bool {
        self.spec.deletion_scheduled_at.is_some() || self.metadata.deletion_timestamp.is_some()
    }
}

/// The phase the controller writes when it begins a purge, conditioned on
/// the version it read; from then on the environment cannot be restored.
pub const PHASE_TERMINATING: &str = "Terminating";

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum EnvType {
    Standard,
    Production,
    Preview,
}

impl EnvType {
    pub fn as_str(self) -> &'static str {
        match self {
            EnvType::Standard => "standard",
            EnvType::Production => "production",
            EnvType::Preview => "preview",
        }
    }

    pub fn parse(value: &str) -> Option<Self> {
        [EnvType::Standard, EnvType::Production, EnvType::Preview]
            .into_iter()
            .find(|t| t.as_str() == value)
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EnvironmentStatus {
    /// `Pending`, `Ready`, `Terminating` or `Degraded`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    #[serde(default)]
    pub ready: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The SHA-256 (hex) of the password of the environment's registry pull
    /// credential (`berth-registry-pull` in its namespace, user
    /// `environment/{name}`), never the password: what Berth's registry
    /// token service checks a pull against (`cluster::registry`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registry_pull_digest: Option<String>,
}

/// An app in an environment's namespace; the workloads rendered from it are
/// owned by it. Namespaced, labelled with its organization, project and
/// environment (`LABEL_*`), which is how the API decides who sees it.
///
/// The App resource is the commit point of every change: its `release` names
/// the revision its spec is, so the newest release always describes what the
/// resource holds (see `apps::releases` for how the history in DynamoDB
/// follows it).
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "berth.dev",
    version = "v1",
    kind = "App",
    plural = "apps",
    shortname = "bapp",
    namespaced,
    status = "AppStatus",
    printcolumn = r#"{"name":"Image","type":"string","jsonPath":".spec.image"}"#,
    printcolumn = r#"{"name":"Revision","type":"integer","jsonPath":".spec.release.revision"}"#,
    printcolumn = r#"{"name":"Ready","type":"boolean","jsonPath":".status.ready"}"#,
    printcolumn = r#"{"name":"Reason","type":"string","jsonPath":".status.reason"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct AppSpec {
    /// What should run: the snapshot every release holds.
    #[serde(flatten)]
    pub config: AppConfig,
    /// The release this spec is.
    pub release: ReleaseMark,
    /// Set by a restart (RFC 3339): rolls the pods of every always-on process
    /// with no spec change and no new revision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restarted_at: Option<String>,
    /// The revisions the controller wrote over (a build's image and an
    /// automatic rollback are revisions it writes), newest first: it cannot
    /// write the release history in DynamoDB, so the API records them there
    /// at its next change, and clears this; until then readers of the
    /// history take them from here. At most [`UNRECORDED_KEPT`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unrecorded: Vec<Revision>,
    /// The app's last decision about what it runs (`Decision`): a build
    /// asked for before it is cancelled, and never writes its image over it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<Decision>,
}

/// A change of what an app runs that a person decided and a build must
/// not undo: a rollback, an image set by hand, the source changed or
/// removed, a promotion into the app. The API writes it with the change;
/// a build carries the revision of the decision in force when it was
/// asked for (`BuildSpec::decision`), so a later one makes it moot. The
/// controller's own revisions (a build's image, an automatic rollback)
/// keep it as it is.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Decision {
    /// The revision the decision made.
    pub revision: i64,
    /// What was decided, for the message of the builds it cancels (`rolled
    /// back to revision 3`, `the image was set by hand`).
    pub what: String,
}

impl AppSpec {
    /// The revision of the app's last decision (0: none yet).
    pub fn decided_at(&self) -> i64 {
        self.decision
            .as_ref()
            .map_or(0, |decision| decision.revision)
    }
}

/// A revision as a release snapshots it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Revision {
    pub release: ReleaseMark,
    pub config: AppConfig,
}

/// How many revisions the controller may write over before the API's next
/// change records them: older ones fall out of the history (twenty builds
/// in a row with no change through the API).
pub const UNRECORDED_KEPT: usize = 20;

/// One build of an app's source into an image, in the namespace
/// [`BUILDS_NAMESPACE`] where no tenant's pod runs. The API creates it
/// (`queued`); the controller runs it as a Job, one per app at a time,
/// writes its status, and on success gives the app a new revision with the
/// image pinned by digest. Named [`object_names::build`]; labelled with the
/// app's `LABEL_*` and `LABEL_APP_UID`, and removed once its App is gone.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "berth.dev",
    version = "v1",
    kind = "Build",
    plural = "builds",
    shortname = "bbuild",
    namespaced,
    status = "BuildStatus",
    printcolumn = r#"{"name":"App","type":"string","jsonPath":".spec.app"}"#,
    printcolumn = r#"{"name":"Number","type":"integer","jsonPath":".spec.number"}"#,
    printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.phase"}"#,
    printcolumn = r#"{"name":"Commit","type":"string","jsonPath":".status.commit"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct BuildSpec {
    pub org: String,
    pub project: String,
    /// The environment's short name.
    pub environment: String,
    /// The app's namespace.
    pub namespace: String,
    pub app: String,
    /// The uid of the App it builds: a build never outlives it, nor serves
    /// another App of the same name.
    pub app_uid: String,
    /// The build's id among the app's builds: 1, 2, 3…
    pub number: i64,
    /// What to build, as the app said when the build was made; `gitRef` is
    /// the ref asked for (a branch, tag or commit).
    pub source: AppSource,
    /// Who asked: an email, or `webhook`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<String>,
    /// Unix milliseconds.
    pub created_at: i64,
    /// The revision of the app's decision in force when it was asked for
    /// (`AppSpec::decision`; absent: none): a later decision makes it moot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<i64>,
    /// For a webhook's push: the branch the pushed commit (`source.gitRef`)
    /// must be on, or the build fails.
    // `HEAD` (`berth_domain::git::REPOSITORY_HEAD`): the repository's
    // default branch, as the repository says when the build fetches it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// The webhook that started it (its id): deleting the hook cancels it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hook: Option<String>,
    /// Set by the API to have the controller cancel the build: why
    /// (`cancelled by dev@acme.test`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel: Option<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BuildStatus {
    /// `queued` (also when absent), `running`, `succeeded`, `failed` or
    /// `cancelled`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// The commit the ref resolved to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// `auto` resolved: `dockerfile` or `buildpacks`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<BuildStrategy>,
    /// The image pushed, pinned by digest (`repo@sha256:…`): set once its
    /// Job succeeded, before the app gets its revision (the build is then
    /// past cancelling by request; a later decision of the app still wins).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// Why it failed or was cancelled, or what it waits for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The Job running it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<String>,
    /// Unix milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<i64>,
    /// The App revision the built image became.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<i64>,
    /// The uid of the copy of the git credential the build made, which it
    /// deletes when it ends (that very object: never another Secret of the
    /// name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credential: Option<String>,
    /// The build's own registry credentials, as digests (the passwords are
    /// only in the Secrets the Job mounts): what Berth's registry token
    /// service checks them against while the build runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registry: Option<BuildRegistryCredentials>,
}

/// The SHA-256 (hex) of the passwords of a build's two registry
/// credentials (`cluster::registry::RegistryUser`), and when they stop
/// working even if the build has not ended (Unix seconds: the start plus the
/// build's deadline). They stop working at once when the build ends.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BuildRegistryCredentials {
    /// Push and pull on the app's own repository; the `push` step's.
    pub push_digest: String,
    /// Pull of the project's images; the steps that pull bases.
    pub pull_digest: String,
    pub expires_at: i64,
}

/// The namespace builds run in: Berth's own, where the registry's push
/// credential is, and no tenant's app.
pub const BUILDS_NAMESPACE: &str = "berth-builds";

pub const BUILD_QUEUED: &str = "queued";
pub const BUILD_RUNNING: &str = "running";
pub const BUILD_SUCCEEDED: &str = "succeeded";
pub const BUILD_FAILED: &str = "failed";
pub const BUILD_CANCELLED: &str = "cancelled";

impl Build {
    /// `queued` until the controller says otherwise.
    pub fn phase(&self) -> &str {
        self.status
            .as_ref()
            .and_then(|status| status.phase.as_deref())
            .unwrap_or(BUILD_QUEUED)
    }

    /// Whether it ended (succeeded, failed or cancelled).
    pub fn is_finished(&self) -> bool {
        matches!(
            self.phase(),
            BUILD_SUCCEEDED | BUILD_FAILED | BUILD_CANCELLED
        )
    }

    /// Whether its image was pushed (the build is done building, its image
    /// about to become the app's revision): too late to cancel by request.
    pub fn is_built(&self) -> bool {
        self.status
            .as_ref()
            .is_some_and(|status| status.image.is_some())
    }

    /// Why the build no longer should run or deploy, if it should not: a
    /// cancellation asked for, or a decision of `app` made after it was
    /// asked for.
    pub fn moot_for(&self, app: &App) -> Option<String> {
        if let Some(why) = &self.spec.cancel {
            return Some(why.clone());
        }
        let decision = app.spec.decision.as_ref()?;
        (decision.revision > self.spec.decision.unwrap_or(0)).then(|| {
            format!(
                "the app changed after it was asked for (revision {}: {})",
                decision.revision, decision.what
            )
        })
    }
}

/// A request to run an app's scheduled process now (`runApp`), in the app's
/// namespace, named as the Job it asks for (the API picks the name, so it
/// can answer it at once) and owned by the App. The API makes no Job itself:
/// the controller makes it from the process's CronJob, as `kubectl create
/// job --from=cronjob/…` does, and then deletes the Run.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "berth.dev",
    version = "v1",
    kind = "Run",
    plural = "runs",
    shortname = "brun",
    namespaced,
    printcolumn = r#"{"name":"App","type":"string","jsonPath":".spec.app"}"#,
    printcolumn = r#"{"name":"Process","type":"string","jsonPath":".spec.process"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct RunSpec {
    pub app: String,
    /// The uid of the App: a run never starts another App's process of the
    /// same name.
    pub app_uid: String,
    /// The scheduled process: its CronJob is `object_names::workload(app,
    /// process)`.
    pub process: String,
}

/// A one-off command (`runCommand`, `berth run -- CMD`): the command run
/// once in a fresh pod of the app's current revision (its image, env and
/// secrets, a process's size, the environment's limits), in the app's
/// namespace. The API picks the name (`cmd-` and 12 random characters, so
/// it answers at once and no other Job of the namespace has it) and owns it
/// by the App; the controller makes its Job (named as it, owned by it),
/// records how it goes in its status, and deletes it
/// [`COMMAND_KEPT_SECONDS`] after it ends, its Job and pod with it.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "berth.dev",
    version = "v1",
    kind = "Command",
    plural = "commands",
    shortname = "bcmd",
    namespaced,
    status = "CommandStatus",
    printcolumn = r#"{"name":"App","type":"string","jsonPath":".spec.app"}"#,
    printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.phase"}"#,
    printcolumn = r#"{"name":"Exit","type":"integer","jsonPath":".status.exitCode"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct CommandSpec {
    pub app: String,
    /// The uid of the App: a command never runs with another App's
    /// configuration of the same name.
    pub app_uid: String,
    /// What runs: the container's command, no shell unless it names one.
    pub command: Vec<String>,
    /// The process whose size (CPU and memory) the pod gets.
    pub process: String,
    /// The Job's `activeDeadlineSeconds`: the command is stopped then.
    pub timeout_seconds: i64,
    /// When the API was asked to run it, in Unix milliseconds: the order of
    /// the app's commands (`creationTimestamp` keeps only seconds, so two
    /// commands started in one second would tie).
    #[serde(default)]
    pub requested_at: i64,
}

/// How a command goes (`pending` also when absent).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CommandPhase {
    #[default]
    Pending,
    Running,
    Succeeded,
    Failed,
}

impl CommandPhase {
    pub fn is_finished(self) -> bool {
        matches!(self, Self::Succeeded | Self::Failed)
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommandStatus {
    #[serde(default)]
    pub phase: CommandPhase,
    /// The command's exit status, once its container ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Why it waits or failed, as a word: `ImagePullBackOff`,
    /// `DeadlineExceeded`, `Error`, `NotStarted`…
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The app's revision whose configuration it ran with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<i64>,
    /// The pod it runs in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<String>,
    /// Unix milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<i64>,
}

/// How long a finished command (its record, Job, pod and log) is kept.
pub const COMMAND_KEPT_SECONDS: i64 = 60 * 60;

/// Why a revision was made (spec part 2): the API's changes make each of
/// them, the controller `deploy` (a build's image) and `rollback` (an
/// automatic one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReleaseReason {
    Create,
    Deploy,
    Config,
    Rollback,
    Promote,
    Template,
}

impl ReleaseReason {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Create => "create",
            Self::Deploy => "deploy",
            Self::Config => "config",
            Self::Rollback => "rollback",
            Self::Promote => "promote",
            Self::Template => "template",
        }
    }
}

/// Which release an App's spec is, and how it came about.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReleaseMark {
    pub revision: i64,
    /// `create`, `deploy`, `config`, `rollback`, `promote` or `template`.
    pub reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The email of whoever made the change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<String>,
    /// Unix milliseconds.
    pub created_at: i64,
    /// Set by the controller on the revision it wrote to roll back a
    /// failed rollout automatically: the revision it rolled back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub automatic_rollback_of: Option<i64>,
}

impl ReleaseMark {
    /// The mark of `revision`, made now by `actor` (None: the controller).
    pub fn now(
        revision: i64,
        reason: ReleaseReason,
        note: Option<String>,
        actor: Option<String>,
    ) -> Self {
        Self {
            revision,
            reason: reason.as_str().to_owned(),
            note,
            actor,
            created_at: clock::unix_millis(),
            automatic_rollback_of: None,
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppStatus {
    #[serde(default)]
    pub ready: bool,
    /// `Progressing`, `Available`, `RolloutFailed`, `Scheduled`, `Releasing`,
    /// `ReleaseFailed` or `AwaitingBuild` (no image yet: nothing runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// `https://` and the app's first host, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The last configuration that became available: what a failed release
    /// keeps running and a failed rollout is rolled back to, without the API.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_available: Option<AvailableConfig>,
    /// The revision whose release command succeeded: its workloads may change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub released_command_of: Option<i64>,
    /// What became of each recent revision, newest first (at most
    /// `REVISION_OUTCOMES_KEPT`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub revisions: Vec<RevisionOutcome>,
    /// The revision whose configuration the controller last applied to the
    /// app's workloads: the spec's, or while the spec's waits for (or
    /// failed) its release command the last that became available. None
    /// while nothing was applied (a first release command, a first build).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running_revision: Option<i64>,
    /// What the controller found of the certificate of each of the app's
    /// hosts that takes one from the cluster issuer (and `none` for each
    /// custom domain when no issuer is configured), in the hosts' order:
    /// read by the domain check.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub certificates: Vec<CertificateFinding>,
}

/// How many revisions' outcomes an App's status keeps: as many as the
/// release history (`apps::releases::HISTORY_KEPT`).
pub const REVISION_OUTCOMES_KEPT: usize = 50;

/// A configuration that became available, and its revision.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AvailableConfig {
    pub revision: i64,
    pub config: AppConfig,
}

/// What became of a revision: `pending` (applied, not seen available yet),
/// `released` (seen available), `failed` (its release command failed, or
/// its rollout did and was not rolled back) or `rolled_back` (its rollout
/// failed and the controller rolled it back). The controller records only
/// the spec's revision as it goes; the API reads a `pending` revision that
/// was replaced as `superseded` (`AppStatus::release_status`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RevisionOutcome {
    pub revision: i64,
    pub status: String,
    /// Why it failed or was rolled back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

pub const OUTCOME_PENDING: &str = "pending";
pub const OUTCOME_RELEASED: &str = "released";
pub const OUTCOME_FAILED: &str = "failed";
pub const OUTCOME_ROLLED_BACK: &str = "rolled_back";
/// Never recorded: what the history says of a revision replaced before it
/// was seen available ([`AppStatus::release_status`]).
pub const OUTCOME_SUPERSEDED: &str = "superseded";

impl App {
    /// What the controller last found of its hosts' certificates (its
    /// status; none before it looked).
    pub fn certificates(&self) -> &[CertificateFinding] {
        self.status
            .as_ref()
            .map(|status| status.certificates.as_slice())
            .unwrap_or_default()
    }

    /// The revision the next change of this App makes, whoever writes it.
    pub fn next_revision(&self) -> i64 {
        self.spec.release.revision + 1
    }

    /// This App with `config` as its next revision, `release`, as the API
    /// writes it: the same change records the revisions the controller
    /// wrote over in the release history, so `unrecorded` is cleared; a
    /// change that is a decision (`Decision`) replaces the last one.
    pub fn revised(
        &self,
        config: AppConfig,
        release: ReleaseMark,
        decision: Option<Decision>,
    ) -> App {
        let mut next = self.clone();
        next.spec.config = config;
        next.spec.release = release;
        if decision.is_some() {
            next.spec.decision = decision;
        }
        next.spec.unrecorded = Vec::new();
        next.status = None;
        next
    }

    /// This App with `config` as its next revision, `release`, as the
    /// controller writes it: the revision it replaces is kept in
    /// `unrecorded` until the API records it.
    pub fn superseded(&self, config: AppConfig, release: ReleaseMark) -> App {
        let mut next = self.clone();
        next.spec.unrecorded.insert(
            0,
            Revision {
                release: self.spec.release.clone(),
                config: self.spec.config.clone(),
            },
        );
        next.spec.unrecorded.truncate(UNRECORDED_KEPT);
        next.spec.config = config;
        next.spec.release = release;
        next.status = None;
        next
    }

    /// Whether the spec's revision waits for its release command (or saw it
    /// fail): it has one, and changes what runs since the last configuration
    /// that became available (`AppConfig::runs_like`), and the command has
    /// not succeeded for it. Its workloads then keep that configuration.
    pub fn awaits_release(&self) -> bool {
        let config = &self.spec.config;
        let status = self.status.as_ref();
        let available = status.and_then(|status| status.last_available.as_ref());
        !config.release_command.is_empty()
            && available.is_none_or(|available| !available.config.runs_like(config))
            && status.and_then(|status| status.released_command_of)
                != Some(self.spec.release.revision)
    }
}

impl AppStatus {
    /// The recorded outcome of `revision`, if any.
    pub fn outcome(&self, revision: i64) -> Option<&RevisionOutcome> {
        self.revisions.iter().find(|o| o.revision == revision)
    }

    /// What the release history says of `revision` when `newest` is the
    /// app's: its recorded outcome, except that a `pending` revision is
    /// `superseded` once it is neither the newest nor the one running (it
    /// was replaced before it was seen available). A revision without an
    /// outcome (the controller has not reached it yet, never saw it, or it
    /// is older than its records) is `pending` while it is the newest or
    /// runs, `released` if it is the last configuration recorded available,
    /// and `superseded` otherwise: `released` only ever means seen
    /// available.
    pub fn release_status(&self, revision: i64, newest: i64) -> &str {
        let live = revision == newest || self.running_revision == Some(revision);
        match self
            .outcome(revision)
            .map(|outcome| outcome.status.as_str())
        {
            Some(OUTCOME_PENDING) | None if live => OUTCOME_PENDING,
            Some(OUTCOME_PENDING) => OUTCOME_SUPERSEDED,
            Some(recorded) => recorded,
            None if self
                .last_available
                .as_ref()
                .is_some_and(|available| available.revision == revision) =>
            {
                OUTCOME_RELEASED
            }
            None => OUTCOME_SUPERSEDED,
        }
    }

    /// Records `revision`'s outcome, keeping the newest
    /// [`REVISION_OUTCOMES_KEPT`].
    pub fn record(&mut self, revision: i64, status: &str, message: Option<String>) {
        self.revisions.retain(|o| o.revision != revision);
        self.revisions.push(RevisionOutcome {
            revision,
            status: status.to_owned(),
            message,
        });
        self.revisions
            .sort_by_key(|outcome| std::cmp::Reverse(outcome.revision));
        self.revisions.truncate(REVISION_OUTCOMES_KEPT);
    }
}

/// Labels of everything rendered from an app, besides the environment's.
pub const LABEL_APP: &str = "berth.dev/app";
pub const LABEL_PROCESS: &str = "berth.dev/process";
/// On a volume's claim, which is not owned by its App (its data outlives
/// the app): the uid of the App it belongs to, so that deleting an app's
/// volumes never selects a claim by a name a user chose.
pub const LABEL_APP_UID: &str = "berth.dev/app-uid";
/// On a release Job and its pod: the revision whose release command it runs.
pub const LABEL_RELEASE: &str = "berth.dev/release";
/// On a build's Job and its pod: the build's number among its app's.
pub const LABEL_BUILD: &str = "berth.dev/build";
/// On a one-off command's Job and its pod: the Command's name.
pub const LABEL_COMMAND: &str = "berth.dev/command";
/// On a one-off command's Job: the App's revision whose configuration it
/// runs (the Job is the record of it: a status written meanwhile may not be
/// in the controller's cache yet).
pub const ANNOTATION_REVISION: &str = "berth.dev/revision";
/// The one container of a one-off command's pod.
pub const COMMAND_CONTAINER: &str = "command";

/// Object names of what an app becomes (one place, so the API, the
/// controller and the tests agree).
pub mod object_names {
    /// Deployment, Service, HPA or CronJob of a process.
    pub fn workload(app: &str, process: &str) -> String {
        format!("{app}-{process}")
    }
    /// The PersistentVolumeClaim of a volume.
    pub fn claim(app: &str, volume: &str) -> String {
        format!("{app}-{volume}")
    }
    /// The Ingress of an app's hosts.
    pub fn ingress(app: &str) -> String {
        app.to_owned()
    }
    /// The Job of a revision's release command. `--` never occurs in an
    /// app's name and a process's name never starts with `-`, so no other
    /// object of any app is named so; an app's name has at most 40
    /// characters, so with a revision of up to 13 digits it stays a label.
    pub fn release_job(app: &str, revision: i64) -> String {
        format!("{app}--release-{revision}")
    }
    /// A Build resource, in the builds namespace: the app's namespace and
    /// name (DNS labels, so the dots keep them apart) and the build's number.
    pub fn build(namespace: &str, app: &str, number: i64) -> String {
        format!("{namespace}.{app}.{number}")
    }
    /// The Secret cert-manager issues a host's certificate into (named in
    /// the app's Ingress): the app's name, `--tls-` and 16 hex digits of
    /// the SHA-256 of the hostname. The suffix has one length and `--tls-`
    /// is in no other rendered name, so no two apps, no two hosts and no
    /// other object of an app share one; the API refuses this form to the
    /// secrets it makes ([`is_certificate_secret`]). At most 63 characters,
    /// so cert-manager's Certificate of that name is a label too.
    pub fn certificate_secret(app: &str, hostname: &str) -> String {
        format!("{app}--tls-{}", short_digest(hostname))
    }
    /// Whether a Secret's name has the form of [`certificate_secret`].
    pub fn is_certificate_secret(name: &str) -> bool {
        name.len() > CERTIFICATE_SUFFIX
            && name.is_char_boundary(name.len() - CERTIFICATE_SUFFIX)
            && name[name.len() - CERTIFICATE_SUFFIX..]
                .strip_prefix("--tls-")
                .is_some_and(|hex| hex.bytes().all(|b| b.is_ascii_hexdigit()))
    }
    /// `--tls-` and 16 hex digits.
    const CERTIFICATE_SUFFIX: usize = 6 + 16;
    /// The Job of a build: short enough to be a label (`job-name`) whatever
    /// the Build's name, which it is derived from.
    pub fn build_job(build: &str) -> String {
        format!("build-{}", short_digest(build))
    }
    /// 16 hex digits of the SHA-256 of `text`: a name's fixed-length part.
    fn short_digest(text: &str) -> String {
        use sha2::{Digest, Sha256};
        let digest = Sha256::digest(text.as_bytes());
        digest[..8].iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// The CRDs, in the order they are installed.
pub fn definitions()
-> Vec<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition>
{
    use kube::CustomResourceExt;
    vec![
        Project::crd(),
        Environment::crd(),
        App::crd(),
        Build::crd(),
        Run::crd(),
        Command::crd(),
    ]
}

/// `infra/k8s/crds.yaml`: the CRDs as one multi-document YAML file.
pub fn definitions_yaml() -> String {
    serde_saphyr::to_string_multiple(&definitions()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_domain::names::Hostname;
    use berth_domain::protocol::Protocol;
    use berth_domain::stored::Stored;

    #[test]
    fn a_certificate_secret_is_named_for_its_app_and_host_alone() {
        let name = object_names::certificate_secret("shop", "shop.example.com");
        assert!(name.starts_with("shop--tls-") && name.len() == "shop--tls-".len() + 16);
        assert!(object_names::is_certificate_secret(&name));
        let longest = object_names::certificate_secret(&"a".repeat(40), &"b".repeat(253));
        assert!(
            longest.len() <= 63,
            "a label, as cert-manager's Certificate of that name"
        );
        for other in [
            "shop",
            "shop--tls-",
            "shop--tls-0123456789abcdeg",
            "shop-tls-0123456789abcdef",
            "--tls-0123456789abcdef",
            "shop--tls-0123456789abcdef0",
        ] {
            assert!(!object_names::is_certificate_secret(other), "{other}");
        }
    }

    /// What a real apiserver requires of a CRD schema (a "structural" one):
    /// every node has a type (or preserves unknown fields), and no `allOf`,
    /// `anyOf`, `oneOf` or `not` carries a type, properties or items. Simplest
    /// to hold to: none at all.
    fn assert_structural(path: &str, node: &serde_json::Value) {
        let Some(object) = node.as_object() else {
            return;
        };
        for keyword in ["allOf", "anyOf", "oneOf", "not", "$ref"] {
            assert!(
                !object.contains_key(keyword),
                "{path}: `{keyword}` makes the schema non-structural"
            );
        }
        assert!(
            object.contains_key("type")
                || object.get("x-kubernetes-preserve-unknown-fields") == Some(&true.into())
                || object.get("x-kubernetes-int-or-string") == Some(&true.into()),
            "{path}: no type"
        );
        if let Some(properties) = object.get("properties").and_then(|p| p.as_object()) {
            for (name, property) in properties {
                assert_structural(&format!("{path}.{name}"), property);
            }
        }
        if let Some(items) = object.get("items") {
            assert_structural(&format!("{path}[]"), items);
        }
        if let Some(additional) = object.get("additionalProperties")
            && additional.is_object()
        {
            assert_structural(&format!("{path}{{}}"), additional);
        }
    }

    #[test]
    fn a_revision_the_controller_writes_keeps_the_one_it_replaces_until_recorded() {
        let mut app = App::test("shop", AppConfig::test(Vec::new()));
        for revision in 2..=30 {
            let mut release = app.spec.release.clone();
            release.revision = revision;
            let mut config = app.spec.config.clone();
            config.image = Some(Stored::read(&format!("shop:{revision}")));
            app = app.superseded(config, release);
        }
        assert_eq!(app.spec.release.revision, 30);
        assert_eq!(
            app.spec.config.image.as_ref().map(Stored::text),
            Some("shop:30")
        );
        let kept: Vec<i64> = app
            .spec
            .unrecorded
            .iter()
            .map(|r| r.release.revision)
            .collect();
        assert_eq!(kept, (10..=29).rev().collect::<Vec<_>>());
        assert_eq!(
            app.spec.unrecorded[0]
                .config
                .image
                .as_ref()
                .map(Stored::text),
            Some("shop:29")
        );
    }

    #[test]
    fn released_means_seen_available_and_a_replaced_pending_revision_is_superseded() {
        let mut status = AppStatus::default();
        status.record(1, OUTCOME_RELEASED, None);
        status.record(2, OUTCOME_PENDING, None);
        status.record(3, OUTCOME_PENDING, None);
        status.running_revision = Some(3);
        // Revision 3 rolls out as the newest; 2 was replaced before it was
        // seen available.
        assert_eq!(status.release_status(3, 3), OUTCOME_PENDING);
        assert_eq!(status.release_status(2, 3), OUTCOME_SUPERSEDED);
        assert_eq!(status.release_status(1, 3), OUTCOME_RELEASED);
        // Revision 4 committed, not reached by the controller yet: 3 still
        // rolls out, 4 waits.
        assert_eq!(status.release_status(4, 4), OUTCOME_PENDING);
        assert_eq!(status.release_status(3, 4), OUTCOME_PENDING);
        // Once 4 runs, 3 is superseded too; recorded outcomes stay.
        status.running_revision = Some(4);
        assert_eq!(status.release_status(3, 4), OUTCOME_SUPERSEDED);
        status.record(3, OUTCOME_ROLLED_BACK, None);
        assert_eq!(status.release_status(3, 4), OUTCOME_ROLLED_BACK);

        // Older than the records: released only if recorded available.
        let mut older = AppStatus {
            last_available: Some(AvailableConfig {
                revision: 7,
                config: AppConfig::test(Vec::new()),
            }),
            running_revision: Some(9),
            ..AppStatus::default()
        };
        assert_eq!(older.release_status(7, 9), OUTCOME_RELEASED);
        assert_eq!(older.release_status(8, 9), OUTCOME_SUPERSEDED);
        assert_eq!(older.release_status(6, 9), OUTCOME_SUPERSEDED);
        assert_eq!(older.release_status(9, 9), OUTCOME_PENDING);
        older.record(8, OUTCOME_FAILED, None);
        assert_eq!(older.release_status(8, 9), OUTCOME_FAILED);
    }

    /// The App's values are typed, its serialized form is not changed: an
    /// App as the API writes it, and one edited in the cluster with values
    /// the API refuses, decode and encode to exactly what was stored.
    #[test]
    fn an_app_decodes_and_encodes_to_what_was_stored() {
        let stored = serde_json::json!({
            "image": "ghcr.io/acme/shop:1.2.3",
            "processes": [
                {"name": "web", "command": [], "port": 8080, "size": "250m/512Mi",
                 "minReplicas": 1, "maxReplicas": 3, "protocol": "http"},
                {"name": "db", "command": [], "port": 5432, "size": "galactic",
                 "minReplicas": 1, "maxReplicas": 1, "protocol": "udp"},
                {"name": "nightly", "command": [], "size": "small", "minReplicas": 1,
                 "maxReplicas": 1, "schedule": "every  night", "timeZone": "Mars/Base",
                 "protocol": "http"}
            ],
            "env": [],
            "domains": ["shop.example.com", "Not A Host", "WWW.Example.com."],
            "volumes": [
                {"name": "data", "mountPath": "/var/lib/data", "size": "5Gi"},
                {"name": "Bad_Name", "mountPath": "relative", "size": "2Ti"}
            ],
            "healthCheckPath": "health",
            "release": {"revision": 3, "reason": "deploy", "createdAt": 1}
        });
        let spec: AppSpec = serde_json::from_value(stored.clone()).expect("it decodes");
        assert_eq!(serde_json::to_value(&spec).unwrap(), stored);
        let mut edited = stored.clone();
        edited["image"] = "Shop:Latest!".into();
        let spec: AppSpec = serde_json::from_value(edited.clone()).expect("it decodes");
        assert_eq!(serde_json::to_value(&spec).unwrap(), edited);
        assert_eq!(
            spec.config
                .first_refused()
                .map(|(field, _)| field)
                .as_deref(),
            Some("image")
        );
        let spec: AppSpec = serde_json::from_value(stored.clone()).unwrap();

        let config = &spec.config;
        assert!(config.processes[0].size.parsed().is_ok());
        assert_eq!(config.processes[0].protocol, Protocol::Http);
        assert_eq!(
            config.first_refused().map(|(field, _)| field).as_deref(),
            Some("processes[1].size")
        );
        let refused: Vec<bool> = (config.volumes[1..].iter())
            .flat_map(|v| {
                [
                    v.name.parsed().is_err(),
                    v.mount_path.parsed().is_err(),
                    v.size.parsed().is_err(),
                ]
            })
            .collect();
        assert_eq!(refused, [true; 3]);
        assert!(config.domains[1].parsed().is_err());
        let nightly = &config.processes[2];
        assert!(nightly.schedule.as_ref().unwrap().parsed().is_err());
        assert!(nightly.time_zone.as_ref().unwrap().parsed().is_err());
        assert!(config.health_check_path.as_ref().unwrap().parsed().is_err());
        assert!(config.image.as_ref().unwrap().parsed().is_ok());
        // What claims a host is its normal form: the edited `WWW.Example.com.`
        // is `www.example.com`, never a second key beside it.
        let hostnames: Vec<&str> = config.hostnames().map(Hostname::as_str).collect();
        assert_eq!(hostnames, ["shop.example.com", "www.example.com"]);
    }

    #[test]
    fn every_schema_is_structural() {
        for crd in definitions() {
            let crd = serde_json::to_value(&crd).unwrap();
            let schema = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
            let kind = crd["spec"]["names"]["kind"].as_str().unwrap().to_owned();
            assert_structural(&kind, schema);
        }
    }

    #[test]
    fn the_app_schema_holds_the_config_fields_at_the_top_of_spec() {
        use kube::CustomResourceExt;
        let crd = serde_json::to_value(App::crd()).unwrap();
        let spec = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
        for field in ["image", "processes", "env", "domains", "volumes", "release"] {
            assert!(
                spec["properties"][field].is_object(),
                "spec.{field}: {spec}"
            );
        }
        let required: Vec<_> = spec["required"].as_array().unwrap().iter().collect();
        for field in ["processes", "release"] {
            assert!(
                required.contains(&&serde_json::Value::from(field)),
                "{field} required"
            );
        }
    }
}
