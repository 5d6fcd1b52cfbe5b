//! What a signed delivery asks for: a build of the pushed commit, or
//! nothing, with the reason. Only pushes to the app's branch build; the
//! payload is read only as far as that needs (GitHub's and GitLab's push
//! payloads share the fields used here: `ref`, `after`, and the default
//! branch under `repository` or `project`).
//!
//! The payload is whatever its signer wrote (GitLab sends the hook's
//! secret in clear), so the branch a build holds its commit to never comes
//! from it: it is the app's `git_ref`, or, for an app following its
//! repository's default branch, the repository's own `HEAD`
//! ([`REPOSITORY_HEAD`]), which the build's `source` step resolves. The
//! payload's `default_branch` only spares a build of what is plainly
//! another branch's push (issue 46, part 6).

use serde::Deserialize;

use super::delivery::{Delivery, Provider};
use crate::ApiError;
use berth_domain::git::REPOSITORY_HEAD;

/// What to do with a delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Build this commit (40 or 64 lowercase hex digits), if it is on this
    /// branch: the app's, or [`REPOSITORY_HEAD`] (the repository's default
    /// branch, as the repository says, never as the payload does).
    Build { commit: String, branch: String },
    /// Nothing: why, for the answer.
    Ignore(String),
}

#[derive(Debug, Deserialize)]
struct PushPayload {
    #[serde(rename = "ref")]
    git_ref: Option<String>,
    after: Option<String>,
    /// GitHub's mark of a branch deleted (GitLab's is `after` all zeros).
    #[serde(default)]
    deleted: bool,
    repository: Option<Repository>,
    project: Option<Repository>,
}

#[derive(Debug, Deserialize)]
struct Repository {
    default_branch: Option<String>,
}

const BRANCH_PREFIX: &str = "refs/heads/";
const TAG_PREFIX: &str = "refs/tags/";

/// Why a signed delivery's event builds nothing, if it does not: only
/// pushes (GitHub's `push`, GitLab's `Push Hook`) can build.
pub fn ignored_event(delivery: &Delivery) -> Option<String> {
    match (delivery.provider, delivery.event.as_str()) {
        (Provider::GitHub, "push") | (Provider::GitLab, "Push Hook") => None,
        (Provider::GitHub, "ping") => Some("ping: the hook works".into()),
        (Provider::GitLab, "Tag Push Hook") => Some("tag pushes do not build".into()),
        (_, event) => Some(format!("the event {event:?} is not a push")),
    }
}

/// The decision for a signed push to an app whose source follows
/// `app_ref` (`None`: the repository's default branch).
pub fn decide(body: &[u8], app_ref: Option<&str>) -> Result<Decision, ApiError> {
    let ignore = |why: String| Ok(Decision::Ignore(why));
    let payload: PushPayload = serde_json::from_slice(body).map_err(|error| {
        ApiError::InvalidRequest(format!(
            "the push payload is not JSON this hook reads: {error}"
        ))
    })?;
    let Some(pushed_ref) = payload.git_ref else {
        return Err(ApiError::InvalidRequest(
            "the push payload has no ref".into(),
        ));
    };
    if pushed_ref.starts_with(TAG_PREFIX) {
        return ignore("tag pushes do not build".into());
    }
    let Some(branch) = pushed_ref.strip_prefix(BRANCH_PREFIX) else {
        return ignore(format!("{pushed_ref:?} is not a branch"));
    };
    let after = payload.after.unwrap_or_default();
    if payload.deleted || (!after.is_empty() && after.bytes().all(|b| b == b'0')) {
        return ignore(format!("the branch {branch:?} was deleted"));
    }
    // Only a filter: a signer may name any branch its default, so the
    // build is held to the repository's HEAD instead (module docs).
    let default_branch = payload
        .repository
        .or(payload.project)
        .and_then(|repository| repository.default_branch);
    let (wanted, held_to) = match app_ref {
        Some(app_ref) => {
            let app_branch = app_ref.strip_prefix(BRANCH_PREFIX).unwrap_or(app_ref);
            (app_branch, app_branch)
        }
        None => match default_branch.as_deref() {
            Some(default) => (default, REPOSITORY_HEAD),
            None => {
                return ignore(
                    "the app follows the default branch and the payload does not name it".into(),
                );
            }
        },
    };
    if branch != wanted {
        return ignore(format!(
            "a push to the branch {branch:?}; the app builds {wanted:?}"
        ));
    }
    if !is_commit(&after) {
        return Err(ApiError::InvalidRequest(
            "the push payload's `after` is not a commit id".into(),
        ));
    }
    Ok(Decision::Build {
        commit: after.to_ascii_lowercase(),
        branch: held_to.to_owned(),
    })
}

/// A full commit id: SHA-1 (40 hex digits) or SHA-256 (64).
fn is_commit(value: &str) -> bool {
    matches!(value.len(), 40 | 64) && value.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::webhooks::delivery::{GITHUB_EVENT, GITHUB_SIGNATURE, GITLAB_EVENT, GITLAB_TOKEN};
    use axum::http::{HeaderMap, HeaderValue};

    const SHA: &str = "0123456789abcdef0123456789abcdef01234567";

    fn delivery(provider: Provider, event: &str) -> Delivery {
        let mut headers = HeaderMap::new();
        let (credential, event_header) = match provider {
            Provider::GitHub => (GITHUB_SIGNATURE, GITHUB_EVENT),
            Provider::GitLab => (GITLAB_TOKEN, GITLAB_EVENT),
        };
        headers.insert(credential, HeaderValue::from_static("x"));
        headers.insert(event_header, HeaderValue::from_str(event).expect("event"));
        Delivery::from_headers(&headers).expect("a delivery")
    }

    fn github_push(git_ref: &str, after: &str, deleted: bool) -> Vec<u8> {
        serde_json::json!({
            "ref": git_ref, "before": SHA, "after": after, "deleted": deleted,
            "repository": {"default_branch": "main", "full_name": "o/r"},
        })
        .to_string()
        .into_bytes()
    }

    fn build(commit: &str, branch: &str) -> Decision {
        Decision::Build {
            commit: commit.into(),
            branch: branch.into(),
        }
    }

    fn ignored(decision: Result<Decision, ApiError>) -> bool {
        matches!(decision, Ok(Decision::Ignore(_)))
    }

    /// The whole decision for a delivery, as the receiver makes it.
    fn decide_delivery(
        delivery: &Delivery,
        body: &[u8],
        app_ref: Option<&str>,
    ) -> Result<Decision, ApiError> {
        match ignored_event(delivery) {
            Some(why) => Ok(Decision::Ignore(why)),
            None => decide(body, app_ref),
        }
    }

    #[test]
    fn a_push_to_the_apps_branch_builds_its_commit() {
        let body = github_push("refs/heads/release", SHA, false);
        assert_eq!(
            decide(&body, Some("release")).ok(),
            Some(build(SHA, "release"))
        );
        assert_eq!(
            decide(&body, Some("refs/heads/release")).ok(),
            Some(build(SHA, "release"))
        );
        let upper = github_push("refs/heads/release", &SHA.to_uppercase(), false);
        assert_eq!(
            decide(&upper, Some("release")).ok(),
            Some(build(SHA, "release"))
        );
    }

    #[test]
    fn without_a_ref_the_app_follows_the_default_branch() {
        // Held to the repository's HEAD, not to the branch the payload
        // calls the default (issue 46, part 6).
        assert_eq!(
            decide(&github_push("refs/heads/main", SHA, false), None).ok(),
            Some(build(SHA, REPOSITORY_HEAD))
        );
        let renamed = serde_json::json!({
            "ref": "refs/heads/evil", "after": SHA,
            "repository": {"default_branch": "evil"},
        })
        .to_string();
        assert_eq!(
            decide(renamed.as_bytes(), None).ok(),
            Some(build(SHA, REPOSITORY_HEAD))
        );
        assert!(ignored(decide(
            &github_push("refs/heads/dev", SHA, false),
            None
        )));
        let nameless = serde_json::json!({"ref": "refs/heads/main", "after": SHA}).to_string();
        assert!(ignored(decide(nameless.as_bytes(), None)));
    }

    #[test]
    fn other_branches_tags_and_deletions_are_ignored() {
        let other = decide(&github_push("refs/heads/dev", SHA, false), Some("main"));
        assert_eq!(
            other.ok(),
            Some(Decision::Ignore(
                "a push to the branch \"dev\"; the app builds \"main\"".into()
            ))
        );
        assert!(ignored(decide(
            &github_push("refs/tags/v1", SHA, false),
            Some("v1")
        )));
        assert!(ignored(decide(
            &github_push("refs/heads/main", &"0".repeat(40), true),
            Some("main")
        )));
        assert!(ignored(decide(
            &github_push("refs/notes/x", SHA, false),
            Some("main")
        )));
    }

    #[test]
    fn pings_and_other_events_are_ignored() {
        let body = github_push("refs/heads/main", SHA, false);
        for (provider, event) in [
            (Provider::GitHub, "ping"),
            (Provider::GitHub, "pull_request"),
            (Provider::GitHub, ""),
            (Provider::GitLab, "Tag Push Hook"),
            (Provider::GitLab, "Merge Request Hook"),
            (Provider::GitLab, "push"),
        ] {
            assert!(
                ignored(decide_delivery(
                    &delivery(provider, event),
                    &body,
                    Some("main")
                )),
                "{event}"
            );
        }
    }

    #[test]
    fn gitlab_pushes_are_read_alike() {
        let body = serde_json::json!({
            "object_kind": "push", "ref": "refs/heads/main", "after": SHA,
            "checkout_sha": SHA, "project": {"default_branch": "main"},
        })
        .to_string();
        assert_eq!(
            decide(body.as_bytes(), None).ok(),
            Some(build(SHA, REPOSITORY_HEAD))
        );
        let deleted = serde_json::json!({
            "object_kind": "push", "ref": "refs/heads/main", "after": "0".repeat(40),
            "checkout_sha": null, "project": {"default_branch": "main"},
        })
        .to_string();
        assert!(ignored(decide(deleted.as_bytes(), None)));
    }

    #[test]
    fn malformed_pushes_are_refused() {
        for body in [
            "not json".to_owned(),
            "[]".to_owned(),
            serde_json::json!({"after": SHA}).to_string(),
            serde_json::json!({"ref": "refs/heads/main", "after": "abc"}).to_string(),
            serde_json::json!({"ref": "refs/heads/main", "after": format!("{SHA}!")}).to_string(),
        ] {
            assert!(
                matches!(
                    decide(body.as_bytes(), Some("main")),
                    Err(ApiError::InvalidRequest(_))
                ),
                "{body}"
            );
        }
    }
}
