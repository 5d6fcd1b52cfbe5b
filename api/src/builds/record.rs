//! The Build record the API answers (OpenAPI schema `Build`), made from a
//! Build resource.

use serde::{Deserialize, Serialize};

use berth_cluster::crd::Build;

/// One build of an app's source into an image.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
#[schema(as = Build)]
pub struct BuildRecord {
    /// The build's number among its app's: 1, 2, 3…
    pub id: i64,
    /// The branch, tag or commit asked for; null: the repository's default
    /// branch.
    #[serde(rename = "ref")]
    pub git_ref: Option<String>,
    /// The commit the ref resolved to (40 hex digits), once known.
    pub commit: Option<String>,
    /// `auto`, `dockerfile` or `buildpacks`: as asked, or as resolved once
    /// the build knows.
    #[schema(pattern = "^(auto|dockerfile|buildpacks)$")]
    pub strategy: String,
    /// `queued`, `running`, `succeeded`, `failed` or `cancelled`.
    #[schema(pattern = "^(queued|running|succeeded|failed|cancelled)$")]
    pub status: String,
    /// The image pushed, pinned by digest (`repo@sha256:…`); null until
    /// the build pushed it (just before it succeeds).
    pub image: Option<String>,
    /// Why it failed or was cancelled, or what it waits for.
    pub message: Option<String>,
    /// Unix milliseconds, as a release's `created_at`.
    pub created_at: i64,
    pub started_at: Option<i64>,
    pub finished_at: Option<i64>,
    /// Who asked: an email, or `webhook`.
    pub actor: Option<String>,
    /// The app's revision the built image became.
    pub revision: Option<i64>,
}

/// The record of a Build resource.
pub fn build_record(build: &Build) -> BuildRecord {
    let status = build.status.clone().unwrap_or_default();
    let spec = &build.spec;
    BuildRecord {
        id: spec.number,
        git_ref: spec.source.git_ref.clone(),
        commit: status.commit,
        strategy: status
            .strategy
            .unwrap_or(spec.source.build.strategy)
            .as_str()
            .to_owned(),
        status: build.phase().to_owned(),
        image: status.image,
        // Asked to cancel, not cancelled yet: say so.
        message: match &spec.cancel {
            Some(why) if !build.is_finished() => Some(format!("cancelling: {why}")),
            _ => status.message,
        },
        created_at: spec.created_at,
        started_at: status.started_at,
        finished_at: status.finished_at,
        actor: spec.actor.clone(),
        revision: status.revision,
    }
}

/// A page of an app's builds, newest first.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct BuildPage {
    pub builds: Vec<BuildRecord>,
    /// The `before` of the next page; null on the last.
    pub next_before: Option<i64>,
}
