//! The queue of an app's builds (apps from source): queueing the next
//! build of an app (createBuild, the create of an app from source, a
//! webhook's push), asking the controller to cancel one, and keeping an
//! app's builds to [`BUILDS_KEPT`]. The API makes each Build resource
//! (`queued`); the controller runs it and writes its status.

use std::collections::BTreeMap;

use kube::ResourceExt;
use kube::api::ObjectMeta;

use crate::ClusterError;
use crate::builds::{self as cluster_builds, Created};
use crate::crd::{
    App, BUILDS_NAMESPACE, Build, BuildSpec, LABEL_APP, LABEL_APP_UID, LABEL_ENVIRONMENT,
    LABEL_MANAGED_BY, LABEL_ORG, LABEL_PROJECT, MANAGER, object_names,
};
use berth_domain::clock;
use berth_domain::git::GitRef;

/// The builds kept per app: making one more deletes the oldest finished
/// ones beyond it (a queued or running build is never deleted for it).
pub const BUILDS_KEPT: usize = 50;

/// How many numbers a create tries when others take them meanwhile.
const NUMBER_ATTEMPTS: i64 = 5;
/// How many times a cancel writes over a Build changed meanwhile.
const CANCEL_ATTEMPTS: i64 = 5;

/// Who asks for a build, and what besides the app's source.
pub struct Asked<'a> {
    /// An email, or `webhook`.
    pub actor: &'a str,
    /// The ref to build instead of the app's `git_ref`.
    pub git_ref: Option<GitRef>,
    /// For a webhook's push: the branch the pushed commit must be on, and
    /// the hook (deleting it cancels the build).
    pub push: Option<Pushed>,
}

/// A push a webhook was told of.
pub struct Pushed {
    pub branch: String,
    pub hook: String,
}

impl<'a> Asked<'a> {
    /// A build asked for by a person (or the creation of an app), of `git_ref`
    /// or the app's own.
    pub fn by(actor: &'a str, git_ref: Option<GitRef>) -> Self {
        Self {
            actor,
            git_ref,
            push: None,
        }
    }
}

/// Queues the next build of `app` (a Build resource in
/// [`BUILDS_NAMESPACE`], phase absent: `queued`): its source as it is now,
/// with the ref replaced by the one asked for, and the app's decision in
/// force (`berth_cluster::crd::Decision`). Its number is the highest of the
/// app's builds plus one; a create that loses that number to another (409
/// from the apiserver) tries the next, a few times. Then the oldest
/// finished builds beyond [`BUILDS_KEPT`] are deleted.
///
/// 409 when the app has no source to build. The caller has checked the
/// app is the caller's and that it may build it.
pub async fn start(
    client: &kube::Client,
    app: &App,
    asked: Asked<'_>,
) -> Result<Build, ClusterError> {
    let Some(mut source) = app.spec.config.source.clone() else {
        return Err(ClusterError::Conflict(format!(
            "app {} has no git_repo to build: set one with updateApp",
            app.name_any()
        )));
    };
    if let Some(requested) = asked.git_ref {
        source.git_ref = Some(requested.into_inner());
    }
    let app_uid = uid_of(app)?;
    let namespace = app.namespace().unwrap_or_default();
    let mut existing = cluster_builds::of_app(client, &app_uid).await?;
    let mut number = existing.iter().map(|b| b.spec.number).max().unwrap_or(0) + 1;
    let app_labels = app.labels();
    let label = |key: &str| app_labels.get(key).cloned().unwrap_or_default();
    let labels: BTreeMap<String, String> = [
        (LABEL_MANAGED_BY, MANAGER.to_owned()),
        (LABEL_ORG, label(LABEL_ORG)),
        (LABEL_PROJECT, label(LABEL_PROJECT)),
        (LABEL_ENVIRONMENT, label(LABEL_ENVIRONMENT)),
        (LABEL_APP, app.name_any()),
        (LABEL_APP_UID, app_uid.clone()),
    ]
    .into_iter()
    .map(|(key, value)| (key.to_owned(), value))
    .collect();
    let (branch, hook) = asked
        .push
        .map_or((None, None), |push| (Some(push.branch), Some(push.hook)));
    let mut spec = BuildSpec {
        org: label(LABEL_ORG),
        project: label(LABEL_PROJECT),
        environment: label(LABEL_ENVIRONMENT),
        namespace: namespace.clone(),
        app: app.name_any(),
        app_uid,
        number,
        source,
        actor: Some(asked.actor.to_owned()),
        created_at: clock::unix_millis(),
        decision: app.spec.decision.as_ref().map(|decision| decision.revision),
        branch,
        hook,
        cancel: None,
    };
    for _ in 0..NUMBER_ATTEMPTS {
        spec.number = number;
        let build = Build {
            metadata: ObjectMeta {
                name: Some(object_names::build(&namespace, &app.name_any(), number)),
                namespace: Some(BUILDS_NAMESPACE.to_owned()),
                labels: Some(labels.clone()),
                ..ObjectMeta::default()
            },
            spec: spec.clone(),
            status: None,
        };
        match cluster_builds::create(client, &build).await? {
            Created::Made(made) => {
                existing.push(*made.clone());
                prune(client, existing).await?;
                return Ok(*made);
            }
            Created::NameTaken => number += 1,
        }
    }
    Err(ClusterError::Conflict(
        "other builds of this app were being made at the same time; try again".into(),
    ))
}

/// Asks the controller to cancel `build` (`BuildSpec::cancel`), written
/// over the Build as read: a build already finished, or whose image was
/// pushed meanwhile (its revision is being written), is `409`. Returns the
/// Build as written.
pub async fn cancel(client: &kube::Client, build: Build, why: &str) -> Result<Build, ClusterError> {
    let mut build = build;
    for _ in 0..CANCEL_ATTEMPTS {
        if build.is_finished() {
            return Err(ClusterError::Conflict(format!(
                "build {} already finished ({}): there is nothing to cancel",
                build.spec.number,
                build.phase()
            )));
        }
        if build.is_built() {
            return Err(ClusterError::Conflict(format!(
                "build {} already finished building: its image is becoming the app's next \
                 revision; roll back to undo it",
                build.spec.number
            )));
        }
        if build.spec.cancel.is_some() {
            return Ok(build);
        }
        let mut asked = build.clone();
        asked.spec.cancel = Some(why.to_owned());
        match cluster_builds::replace(client, &asked).await? {
            Some(written) => return Ok(written),
            // Changed meanwhile (the controller wrote its status): read it
            // again and decide again.
            None => match cluster_builds::get(client, &build.name_any()).await? {
                Some(again) if again.uid() == build.uid() => build = again,
                // Gone, or another build of that name: nothing of this one
                // is left to cancel.
                _ => {
                    return Err(ClusterError::Conflict(format!(
                        "build {} is gone: there is nothing to cancel",
                        build.spec.number
                    )));
                }
            },
        }
    }
    Err(ClusterError::Conflict(format!(
        "build {} kept changing meanwhile; try again",
        build.spec.number
    )))
}

/// The uid of an App read from the cluster (which always has one).
pub fn uid_of(app: &App) -> Result<String, ClusterError> {
    app.uid()
        .ok_or_else(|| ClusterError::Broken("an App read from the cluster has no uid".into()))
}

/// Cancels the app's unfinished builds that `hook` started (its deletion
/// or replacement): those already built go on, as a build that finished a
/// moment earlier would have. Returns how many were cancelled.
pub async fn cancel_of_hook(
    client: &kube::Client,
    app_uid: &str,
    hook: &str,
) -> Result<usize, ClusterError> {
    let mut cancelled = 0;
    for build in cluster_builds::of_app(client, app_uid).await? {
        if build.spec.hook.as_deref() != Some(hook) || build.is_finished() || build.is_built() {
            continue;
        }
        match cancel(client, build, "its webhook was deleted").await {
            Ok(_) => cancelled += 1,
            // Finished or built meanwhile.
            Err(ClusterError::Conflict(_)) => {}
            Err(error) => return Err(error),
        }
    }
    Ok(cancelled)
}

/// Deletes the oldest finished builds beyond [`BUILDS_KEPT`].
async fn prune(client: &kube::Client, builds: Vec<Build>) -> Result<(), ClusterError> {
    for build in beyond_kept(builds) {
        cluster_builds::delete(client, &build).await?;
    }
    Ok(())
}

/// Of an app's builds, the oldest finished ones beyond [`BUILDS_KEPT`].
fn beyond_kept(mut builds: Vec<Build>) -> Vec<Build> {
    let excess = builds.len().saturating_sub(BUILDS_KEPT);
    builds.sort_by_key(|build| build.spec.number);
    builds
        .into_iter()
        .filter(Build::is_finished)
        .take(excess)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crd::BuildStatus;
    use berth_domain::app::AppSource;

    fn build(number: i64, phase: Option<&str>) -> Build {
        let mut build = Build::new(
            &format!("ns.shop.{number}"),
            BuildSpec {
                org: "acme".into(),
                project: "p".into(),
                environment: "e".into(),
                namespace: "ns".into(),
                app: "shop".into(),
                app_uid: "uid".into(),
                number,
                source: AppSource {
                    git_repo: "https://github.com/acme/shop".into(),
                    git_ref: None,
                    build: Default::default(),
                    git_secret: None,
                },
                actor: None,
                created_at: 0,
                decision: None,
                branch: None,
                hook: None,
                cancel: None,
            },
        );
        build.status = phase.map(|phase| BuildStatus {
            phase: Some(phase.into()),
            ..BuildStatus::default()
        });
        build
    }

    fn numbers(builds: Vec<Build>) -> Vec<i64> {
        builds.iter().map(|build| build.spec.number).collect()
    }

    #[test]
    fn keeps_fifty_deleting_the_oldest_finished() {
        let fifty: Vec<Build> = (1..=50).map(|n| build(n, Some("succeeded"))).collect();
        assert!(beyond_kept(fifty.clone()).is_empty());
        let mut more = fifty;
        more.push(build(51, None));
        more.push(build(52, None));
        assert_eq!(numbers(beyond_kept(more.clone())), vec![1, 2]);
        // Unfinished builds are never deleted to make room.
        more[0] = build(1, Some("running"));
        more[1] = build(2, None);
        assert_eq!(numbers(beyond_kept(more)), vec![3, 4]);
    }
}
