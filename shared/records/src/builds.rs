//! Builds of an app's source: the Build record (OpenAPI schema `Build`),
//! a page of them, and the body that queues one.

use serde::{Deserialize, Serialize};

use berth_domain::git::GitRef;

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

/// A page of an app's builds, newest first.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct BuildPage {
    pub builds: Vec<BuildRecord>,
    /// The `before` of the next page; null on the last.
    pub next_before: Option<i64>,
}

#[derive(Debug, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateBuildBody {
    /// The branch, tag or commit to build instead of the app's `git_ref`
    /// (git's ref-format rules, at most 255 characters).
    #[serde(rename = "ref", skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<GitRef>)]
    pub git_ref: Option<String>,
}
