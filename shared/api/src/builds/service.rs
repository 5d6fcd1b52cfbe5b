//! The build operations: queue one (`createBuild`), cancel one
//! (`cancelBuild`), list an app's newest first a page at a time, read one
//! and its output. Every one reads the App
//! first: its builds are those of its uid, so another organization's app,
//! or an App made again under the same name, shows none.

use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::api::Api;

use super::record::build_record;
use crate::ApiError;
use crate::apps::operate::{LogSource, LogWindow, read_logs};
use crate::apps::service::app_to_change;
use berth_cluster::apps as cluster_apps;
use berth_cluster::build_queue::{self, uid_of};
use berth_cluster::builds as cluster_builds;
use berth_cluster::crd::{App, BUILDS_NAMESPACE, Build, object_names};
use berth_domain::git::GitRef;
use berth_domain::paths::{AppPath, BuildPath};
use berth_records::apps::record::LogEntry;
use berth_records::builds::{BuildPage, BuildRecord};
use berth_store::identity::Principal;

/// Builds per page of `listBuilds`: 20 by default, at most 50 (all an app
/// keeps).
pub const DEFAULT_PAGE: i64 = 20;
pub const MAX_PAGE: i64 = build_queue::BUILDS_KEPT as i64;

/// Queues a build of the app (`createBuild`): its `git_ref`, or the `ref`
/// asked for. The environment must take writes, as for any deploy.
pub async fn create(
    client: &kube::Client,
    caller: &Principal,
    path: &AppPath,
    requested_ref: Option<GitRef>,
) -> Result<BuildRecord, ApiError> {
    let app = app_to_change(client, &caller.user.org, path).await?;
    let asked = build_queue::Asked::by(&caller.user.email, requested_ref);
    Ok(build_record(
        &build_queue::start(client, &app, asked).await?,
    ))
}

/// Asks the controller to cancel the build (`cancelBuild`): it deletes
/// the build's Job and marks it `cancelled`. `409` for a build already
/// finished (or already built: its image is becoming the app's revision).
/// Allowed in an environment being deleted too: stopping work is always
/// allowed.
pub async fn cancel(
    client: &kube::Client,
    caller: &Principal,
    path: &BuildPath,
) -> Result<BuildRecord, ApiError> {
    let build = visible(client, caller, path).await?;
    let why = format!("cancelled by {}", caller.user.email);
    Ok(build_record(
        &build_queue::cancel(client, build, &why).await?,
    ))
}

/// A page of the app's builds, newest first: those numbered below
/// `before`, if given.
pub async fn list(
    client: &kube::Client,
    caller: &Principal,
    path: &AppPath,
    limit: i64,
    before: Option<i64>,
) -> Result<BuildPage, ApiError> {
    let app = cluster_apps::get_visible(client, &caller.user.org, path).await?;
    let mut builds = cluster_builds::of_app(client, &uid_of(&app)?).await?;
    builds.retain(|build| before.is_none_or(|before| build.spec.number < before));
    builds.sort_by_key(|build| std::cmp::Reverse(build.spec.number));
    let more = builds.len() > usize::try_from(limit).unwrap_or(usize::MAX);
    builds.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    let next_before = more
        .then(|| builds.last().map(|build| build.spec.number))
        .flatten();
    Ok(BuildPage {
        builds: builds.iter().map(build_record).collect(),
        next_before,
    })
}

/// One build of the app: 404 for a number the app has no build of.
pub async fn get(
    client: &kube::Client,
    caller: &Principal,
    path: &BuildPath,
) -> Result<BuildRecord, ApiError> {
    Ok(build_record(&visible(client, caller, path).await?))
}

/// The build the path names, of the App the caller sees there.
async fn visible(
    client: &kube::Client,
    caller: &Principal,
    path: &BuildPath,
) -> Result<Build, ApiError> {
    let app_path = path.app_path();
    let app = cluster_apps::get_visible(client, &caller.user.org, &app_path).await?;
    find(client, &app, &app_path, path.build).await
}

/// The output of a build: each container of its newest pod, in the order
/// they run (init containers first), bounded as `getAppLogs` bounds pods'.
pub async fn logs(
    client: &kube::Client,
    caller: &Principal,
    path: &BuildPath,
    window: LogWindow,
) -> Result<Vec<LogEntry>, ApiError> {
    let (app_path, number) = (path.app_path(), path.build);
    let app = cluster_apps::get_visible(client, &caller.user.org, &app_path).await?;
    let uid = uid_of(&app)?;
    let (build, pods) = tokio::join!(
        find(client, &app, &app_path, number),
        cluster_builds::pods(client, &uid, number)
    );
    build?;
    let Some(pod) = pods?.into_iter().next() else {
        return Ok(Vec::new());
    };
    let sources = containers_in_order(&pod)
        .into_iter()
        .map(|container| LogSource {
            pod: pod.clone(),
            container: Some(container),
            process: None,
        })
        .collect();
    let api: Api<Pod> = Api::namespaced(client.clone(), BUILDS_NAMESPACE);
    Ok(read_logs(&api, sources, window).await)
}

/// The names of a pod's containers in the order they run.
fn containers_in_order(pod: &Pod) -> Vec<String> {
    let Some(spec) = pod.spec.as_ref() else {
        return Vec::new();
    };
    spec.init_containers
        .iter()
        .flatten()
        .chain(&spec.containers)
        .map(|container| container.name.clone())
        .collect()
}

/// The app's build of that number: one of another App (even of the same
/// name, made before) is not found, as one that never was.
async fn find(
    client: &kube::Client,
    app: &App,
    path: &AppPath,
    number: i64,
) -> Result<Build, ApiError> {
    let name = object_names::build(&path.namespace(), path.app.as_str(), number);
    cluster_builds::get(client, &name)
        .await?
        .filter(|build| Some(&build.spec.app_uid) == app.uid().as_ref())
        .ok_or_else(|| build_missing(path, number))
}

fn build_missing(path: &AppPath, number: i64) -> ApiError {
    ApiError::NotFound(berth_domain::Missing::Build {
        project: path.project.to_string(),
        environment: path.environment.to_string(),
        app: path.app.to_string(),
        build: number.to_string(),
    })
}
