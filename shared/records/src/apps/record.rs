//! What the API answers about apps: the App record, the App detail and its
//! pods (spec part 2), a release of its history, a pod's log and the check
//! of its domains; `berth_api::apps::record` makes them from the App
//! resource and the pods read with it.

use serde::{Deserialize, Serialize};

use berth_domain::certificate::{CertificateStanding, CertificateState};
use berth_domain::parts::SecretKeyRef;

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

/// The Release record of the API (spec part 2).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct ReleaseRecord {
    pub revision: i64,
    pub image: Option<String>,
    pub reason: String,
    pub note: Option<String>,
    pub actor: Option<String>,
    pub created_at: i64,
    /// True for the newest revision: what should be running (spec part 3,
    /// rule 3).
    pub current: bool,
    /// Beyond the spec: true for the one revision whose configuration the
    /// app's workloads run (not always the newest: a revision waits for its
    /// release command, and one whose release command failed never runs);
    /// on none while nothing runs.
    pub running: bool,
    /// `pending` (not seen available yet: rolling out, or waiting for its
    /// release command), `released` (seen available), `superseded`
    /// (replaced before it was seen available), `failed` (its release
    /// command or its rollout failed) or `rolled_back` (its rollout failed
    /// and was rolled back automatically).
    #[schema(pattern = "^(pending|released|superseded|failed|rolled_back)$")]
    pub status: String,
}

/// One pod's log (spec part 2, and `truncated`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct LogEntry {
    pub pod: String,
    pub process: Option<String>,
    /// The container whose log this is (of an app's pod, named after its
    /// process; of a build's pod, the build's step).
    pub container: Option<String>,
    pub lines: Vec<String>,
    /// Beyond the spec: when each line of `lines` was written, one per line
    /// in the same order, as the node's container runtime stamped it
    /// (RFC 3339 in UTC with nanoseconds, so the text sorts as the time;
    /// `""` for a line it gave none). A client following the log asks
    /// again with `since` and drops the lines it has seen.
    pub timestamps: Vec<String>,
    /// Beyond the spec: how often the container has restarted. When it
    /// grows, the last lines of its previous instance are read with
    /// `previous`.
    pub restarts: i32,
    pub error: Option<String>,
    /// Whether lines asked for are left out or cut: the pod's log was
    /// longer than 512 KiB (its newest lines that fit are kept), the whole
    /// answer would have passed 5 MiB, or a line was cut at 16 KiB.
    pub truncated: bool,
}

/// One hostname's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct DomainCheck {
    pub hostname: String,
    pub ok: bool,
    /// What the name resolves to: its CNAME chain, then its A and AAAA
    /// addresses.
    pub records: Vec<String>,
    /// The gateway: its hostname, then its addresses.
    pub expected: Vec<String>,
    /// Whether the name points at the gateway, in words. `ok` says nothing
    /// of the certificate.
    pub message: String,
    /// Where the hostname's TLS certificate stands.
    pub certificate: CertificateCheck,
    /// Whether the organization has proven it controls the hostname, and
    /// what proves it: only a verified hostname is served.
    pub verification: DomainVerification,
}

/// Where the proof that the organization controls a hostname stands
/// (docs/api-notes.md, "Domain ownership").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct DomainVerification {
    pub state: VerificationState,
    /// The name of the TXT record to create: `_berth-challenge.{hostname}`.
    pub record_name: String,
    /// Always `TXT`.
    pub record_type: String,
    /// What the TXT record must hold: the organization's value for this
    /// hostname, which no other organization has.
    pub record_value: String,
    /// When it was verified (RFC 3339), while it is.
    #[schema(required = true)]
    pub verified_at: Option<String>,
    /// While its proof is missing: when it stops being served (RFC 3339).
    #[schema(required = true)]
    pub lapses_at: Option<String>,
    /// Where it stands, in words, and what to do.
    pub message: String,
}

/// `pending`: not proven, not served (several organizations may hold one
/// pending); `verified`: proven, served; `lapsing`: verified, but its proof
/// is missing, served until `lapses_at`; `taken`: verified by another
/// organization, never served here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum VerificationState {
    Pending,
    Verified,
    Lapsing,
    Taken,
}

/// Where a hostname's TLS certificate stands, as the controller last found
/// it and as of the check: an issued certificate is `expiring` within 14
/// days of its end and `expired` after it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct CertificateCheck {
    pub state: CertificateState,
    /// When the certificate ends (RFC 3339), once one is issued; always
    /// sent (`null` until then).
    #[schema(required = true)]
    pub not_after: Option<String>,
    pub message: String,
}

impl From<CertificateStanding> for CertificateCheck {
    fn from(standing: CertificateStanding) -> Self {
        Self {
            state: standing.state,
            not_after: standing.not_after.map(|end| end.to_string()),
            message: standing.message,
        }
    }
}
