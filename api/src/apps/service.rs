//! The app operations: each reads what it needs, checks every rule and
//! permission, then commits (release history and hostname claims first, the
//! App resource last; see [`super::releases`] and [`super::hosts`]).

use std::collections::BTreeMap;

use kube::ResourceExt;
use kube::api::ObjectMeta;

use super::body;
use super::hosts::{self, HostRules};
use super::leftovers;
use super::record::{self, EnvValues};
use super::releases::{self, StoredRelease};
use crate::secrets;
use berth_cluster::apps::{self as cluster_apps, ANNOTATION_HISTORY};
use berth_cluster::build_queue;
use berth_cluster::crd::{
    App, AppConfig, AppSpec, Decision, LABEL_ENVIRONMENT, LABEL_MANAGED_BY, LABEL_ORG,
    LABEL_PROJECT, MANAGER, ReleaseMark,
};
use berth_cluster::environments as cluster_environments;
use berth_cluster::rendered_names;
use berth_domain::names::{AppName, EnvironmentName, OrgName};
use berth_domain::paths::{AppPath, EnvironmentPath};
use berth_domain::{ApiError, Missing, Permission, clock};
use berth_records::apps::body::{CreateBody, UpdateBody};
use berth_records::apps::record::{AppDetail, AppRecord, ReleaseRecord};
use berth_store::Store;
use berth_store::identity::Principal;

/// Why a revision was made (spec part 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    Create,
    Deploy,
    Config,
    Rollback,
    Promote,
    Template,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Create => "create",
            Reason::Deploy => "deploy",
            Reason::Config => "config",
            Reason::Rollback => "rollback",
            Reason::Promote => "promote",
            Reason::Template => "template",
        }
    }
}

fn values_for(caller: &Principal) -> EnvValues {
    if caller.can(Permission::SecretRead) {
        EnvValues::Shown
    } else {
        EnvValues::Hidden
    }
}

/// The record of an app of `environment`, as the caller may see it.
pub fn record_of(app: &App, environment: &EnvironmentPath, caller: &Principal) -> AppRecord {
    record::app_record(app, environment, values_for(caller))
}

/// The Apps of the environment a change goes into (whoever's: all of them
/// are rendered there), read at once with the checks of
/// [`environments::writable`].
pub(crate) async fn environment_apps(
    client: &kube::Client,
    org: &OrgName,
    environment: &EnvironmentPath,
) -> Result<Vec<App>, ApiError> {
    let namespace = environment.namespace();
    let (writable, apps) = tokio::join!(
        cluster_environments::writable(client, org, environment),
        cluster_apps::in_namespace(client, &namespace)
    );
    writable?;
    apps
}

/// The app at `path`, about to change: visible to the organization, in a
/// writable environment (both read at once).
pub(crate) async fn app_to_change(
    client: &kube::Client,
    org: &OrgName,
    path: &AppPath,
) -> Result<App, ApiError> {
    let environment = path.environment_path();
    let (environment, app) = tokio::join!(
        cluster_environments::writable(client, org, &environment),
        cluster_apps::get_visible(client, org, path)
    );
    environment?;
    app
}

/// The app at `path`, about to change its configuration, and the other Apps
/// of its environment, whose object names it must not take.
async fn app_and_neighbours(
    client: &kube::Client,
    org: &OrgName,
    path: &AppPath,
) -> Result<(App, Vec<App>), ApiError> {
    let mut apps = environment_apps(client, org, &path.environment_path()).await?;
    let app = cluster_apps::take_visible(&mut apps, org, path).ok_or_else(|| path.missing())?;
    Ok((app, apps))
}

/// Refuses a configuration that would render an object (of one kind and
/// name) another app of the environment renders: each rendered name belongs
/// to one app. Two creates racing past this check meet the controller's rule
/// instead, which never applies over an object another app controls.
pub(crate) fn check_names(
    path: &AppPath,
    config: &AppConfig,
    neighbours: &[App],
) -> Result<(), ApiError> {
    let names: Vec<String> = neighbours.iter().map(ResourceExt::name_any).collect();
    let others = names
        .iter()
        .zip(neighbours)
        .map(|(name, app)| (name.as_str(), &app.spec.config));
    match rendered_names::first_clash(path.app.as_str(), config, others) {
        None => Ok(()),
        Some(clash) => Err(ApiError::Conflict(format!(
            "{clash}: an app's objects are named {{app}}-{{process}} and {{app}}-{{volume}}, so \
             choose other names"
        ))),
    }
}

/// Refuses a new app whose name is taken in the environment (the create
/// would be refused anyway; this says so before the names are compared).
pub(crate) fn check_new(
    path: &AppPath,
    config: &AppConfig,
    neighbours: &[App],
) -> Result<(), ApiError> {
    if neighbours
        .iter()
        .any(|app| app.name_any() == path.app.as_str())
    {
        return Err(ApiError::Conflict(format!(
            "an app named {} already exists in this environment",
            path.app
        )));
    }
    check_names(path, config, neighbours)
}

pub(crate) fn mark(
    revision: i64,
    reason: Reason,
    note: Option<String>,
    caller: &Principal,
) -> ReleaseMark {
    ReleaseMark {
        revision,
        reason: reason.as_str().to_owned(),
        note,
        actor: Some(caller.user.email.clone()),
        created_at: clock::unix_millis(),
        automatic_rollback_of: None,
    }
}

pub(crate) fn history_of(app: &App) -> Result<String, ApiError> {
    app.annotations()
        .get(ANNOTATION_HISTORY)
        .cloned()
        .ok_or_else(|| {
            ApiError::Internal(format!(
                "app {} has no {ANNOTATION_HISTORY} annotation",
                app.name_any()
            ))
        })
}

fn current_release(app: &App) -> Result<StoredRelease, ApiError> {
    StoredRelease::new(&app.spec.release, &app.spec.config, true)
}

/// The revisions the controller wrote over, which the store may not hold
/// yet (`AppSpec::unrecorded`).
fn unrecorded_releases(app: &App) -> Result<Vec<StoredRelease>, ApiError> {
    app.spec
        .unrecorded
        .iter()
        .map(|revision| StoredRelease::new(&revision.release, &revision.config, true))
        .collect()
}

/// Commits a new app: its first revision and its hostnames' claims, then
/// the resource.
pub(crate) async fn commit_new(
    store: &Store,
    client: &kube::Client,
    rules: &HostRules,
    org: &OrgName,
    path: &AppPath,
    config: AppConfig,
    release: ReleaseMark,
) -> Result<App, ApiError> {
    let history = uuid::Uuid::new_v4().simple().to_string();
    let app = App {
        metadata: ObjectMeta {
            name: Some(path.app.to_string()),
            namespace: Some(path.namespace()),
            labels: Some(BTreeMap::from([
                (LABEL_ORG.to_owned(), org.to_string()),
                (LABEL_PROJECT.to_owned(), path.project.to_string()),
                (LABEL_ENVIRONMENT.to_owned(), path.environment.to_string()),
                (LABEL_MANAGED_BY.to_owned(), MANAGER.to_owned()),
            ])),
            annotations: Some(BTreeMap::from([(
                ANNOTATION_HISTORY.to_owned(),
                history.clone(),
            )])),
            ..ObjectMeta::default()
        },
        spec: AppSpec {
            unrecorded: Vec::new(),
            config,
            release,
            restarted_at: None,
            decision: None,
        },
        status: None,
    };
    hosts::prepare_claimed(store, client, rules, &app, None, &[]).await?;
    match cluster_apps::create(client, &app).await {
        Ok(created) => Ok(created),
        Err(error) => {
            // The revision was never reached: nothing refers to it. What a
            // failure here leaves, its entry leads the environment's purge to.
            if let Err(cleanup) = leftovers::remove(store, &path.namespace(), &history).await {
                tracing::warn!(error = %cleanup.cause(), "an unused release history was left behind");
            }
            Err(error)
        }
    }
}

/// The decision an update makes, if it makes one (`Decision`): a change of
/// the image (set by hand) or of the source makes every build asked for
/// before it moot. Other changes (env, sizes, domains…) are applied on top
/// of what a build brings, as the controller writes its image over the
/// App as it then is.
fn decision_of(current: &AppConfig, next: &AppConfig, revision: i64) -> Option<Decision> {
    let what = match (&current.source, &next.source) {
        (Some(_), None) => "the source was removed",
        (before, after) if before != after => "the source changed",
        _ if current.image != next.image => "the image was set by hand",
        _ => return None,
    };
    Some(Decision {
        revision,
        what: what.to_owned(),
    })
}

/// Commits a change of an existing app: its revision and its hostnames'
/// claims, then the resource, conditioned on the version that was read;
/// then releases the hostnames it dropped. `decision`: the change is one
/// (`Decision`), which cancels the app's pending builds (the controller
/// reads it) and which no build writes over.
async fn commit_change(
    store: &Store,
    client: &kube::Client,
    rules: &HostRules,
    current: &App,
    config: AppConfig,
    release: ReleaseMark,
    decision: Option<Decision>,
) -> Result<App, ApiError> {
    let history = history_of(current)?;
    let mut next = current.clone();
    next.spec.config = config;
    next.spec.release = release;
    if decision.is_some() {
        next.spec.decision = decision;
    }
    // Recorded by this change.
    next.spec.unrecorded = Vec::new();
    next.status = None;
    hosts::prepare_claimed(
        store,
        client,
        rules,
        &next,
        Some(&current_release(current)?),
        &unrecorded_releases(current)?,
    )
    .await?;
    let mut read = current.clone();
    // The controller writes the App's status, which moves its
    // resourceVersion; only a change of the spec (its generation) is a
    // concurrent change that wins.
    for _ in 0..5 {
        next.metadata = read.metadata.clone();
        match cluster_apps::replace(client, &next).await {
            Err(ApiError::Conflict(_)) => {
                let again = cluster_apps::reread(client, current).await?;
                if again.metadata.generation != current.metadata.generation
                    || again.metadata.uid != current.metadata.uid
                {
                    return Err(cluster_apps::changed_meanwhile());
                }
                read = again;
            }
            Ok(replaced) => {
                let dropped: Vec<String> = current
                    .spec
                    .config
                    .domains
                    .iter()
                    .filter(|domain| !next.spec.config.domains.contains(domain))
                    .cloned()
                    .collect();
                hosts::release(store, &history, Some(next.spec.release.revision), &dropped).await;
                return Ok(replaced);
            }
            Err(error) => return Err(error),
        }
    }
    Err(cluster_apps::changed_meanwhile())
}

pub async fn list(
    client: &kube::Client,
    caller: &Principal,
    environment: &EnvironmentPath,
) -> Result<Vec<AppRecord>, ApiError> {
    let org = &caller.user.org;
    cluster_environments::get_visible(client, org, environment).await?;
    let apps = cluster_apps::list(client, org, environment).await?;
    Ok(apps
        .iter()
        .map(|app| record_of(app, environment, caller))
        .collect())
}

/// The app and its pods, read at once.
pub async fn get(
    client: &kube::Client,
    caller: &Principal,
    path: &AppPath,
) -> Result<AppDetail, ApiError> {
    let org = &caller.user.org;
    let (app, pods) = tokio::join!(
        cluster_apps::get_visible(client, org, path),
        cluster_apps::pods(client, org, path, None)
    );
    let app = app?;
    Ok(AppDetail {
        app: record_of(&app, &path.environment_path(), caller),
        pods: pods?.iter().map(record::pod_record).collect(),
    })
}

/// Whether each of the app's hostnames resolves to the gateway: one entry
/// per hostname, in the app's order; an app without domains has none.
#[cfg(feature = "dns")]
pub async fn check_domains(
    client: &kube::Client,
    checker: &crate::domain_check::DomainChecker,
    caller: &Principal,
    path: &AppPath,
) -> Result<Vec<berth_records::apps::record::DomainCheck>, ApiError> {
    let app = cluster_apps::get_visible(client, &caller.user.org, path).await?;
    checker.check(&app.spec.config.domains).await
}

pub async fn create(
    store: &Store,
    client: &kube::Client,
    rules: &HostRules,
    caller: &Principal,
    environment: &EnvironmentPath,
    body: CreateBody,
) -> Result<AppRecord, ApiError> {
    let (name, config) = body::parse_create(body)?;
    let org = &caller.user.org;
    let path = AppPath::new(environment, name);
    let neighbours = environment_apps(client, org, environment).await?;
    check_new(&path, &config, &neighbours)?;
    secrets::check_references(client, &path, &config).await?;
    let awaits_build = config.image.is_none();
    let created = commit_new(
        store,
        client,
        rules,
        org,
        &path,
        config,
        mark(1, Reason::Create, None, caller),
    )
    .await?;
    if awaits_build {
        // The app is committed: a fault now leaves it awaiting a build that
        // createBuild queues (docs/api-notes.md, "Apps from source").
        if let Err(error) = build_queue::start(
            client,
            &created,
            build_queue::Asked::by(&caller.user.email, None),
        )
        .await
        {
            tracing::warn!(app = %path.target(), error = %error.cause(),
                "the first build of an app from source could not be queued");
        }
    }
    Ok(record_of(&created, environment, caller))
}

pub async fn update(
    store: &Store,
    client: &kube::Client,
    rules: &HostRules,
    caller: &Principal,
    path: &AppPath,
    body: &UpdateBody,
) -> Result<AppRecord, ApiError> {
    let org = &caller.user.org;
    let (current, neighbours) = app_and_neighbours(client, org, path).await?;
    let config = body::apply_update(&path.app, &current.spec.config, body)?;
    // Beyond the operation's `app-operate`: what the change touches.
    for permission in body::permissions_for(&current.spec.config, &config) {
        caller.require(permission)?;
    }
    if config == current.spec.config {
        // Nothing changes: no new revision.
        return Ok(record_of(&current, &path.environment_path(), caller));
    }
    let reason = if config.image == current.spec.config.image
        && config.source == current.spec.config.source
    {
        Reason::Config
    } else {
        Reason::Deploy
    };
    check_names(path, &config, &neighbours)?;
    secrets::check_references(client, path, &config).await?;
    let revision = current.spec.release.revision + 1;
    let decision = decision_of(&current.spec.config, &config, revision);
    let release = mark(revision, reason, None, caller);
    let updated = commit_change(store, client, rules, &current, config, release, decision).await?;
    Ok(record_of(&updated, &path.environment_path(), caller))
}

/// Restores a revision's configuration as a new revision. Volumes never
/// shrink: a volume that has grown since keeps its size.
pub async fn rollback(
    store: &Store,
    client: &kube::Client,
    rules: &HostRules,
    caller: &Principal,
    path: &AppPath,
    revision: i64,
) -> Result<AppRecord, ApiError> {
    let org = &caller.user.org;
    let (current, neighbours) = app_and_neighbours(client, org, path).await?;
    let head = current.spec.release.revision;
    let restored = if revision == head {
        current.spec.config.clone()
    } else {
        // A revision older than the kept window was pruned (or is about to
        // be): unknown, like one that never was.
        let unrecorded = current
            .spec
            .unrecorded
            .iter()
            .find(|r| r.release.revision == revision);
        let found = if let Some(unrecorded) = unrecorded {
            Some(StoredRelease::new(
                &unrecorded.release,
                &unrecorded.config,
                true,
            )?)
        } else if (releases::oldest_kept(head)..head).contains(&revision) {
            releases::get(store, &history_of(&current)?, revision).await?
        } else {
            None
        };
        found
            .ok_or_else(|| {
                ApiError::ValidationFailed(format!("revision: the app has no revision {revision}"))
            })?
            .config()?
    };
    if restored.image.is_none() && current.spec.config.image.is_some() {
        return Err(ApiError::Conflict(format!(
            "revision {revision} has no image (the app's first build had not succeeded then): \
             rolling back to it would stop the app; roll back to a revision with an image"
        )));
    }
    let config = restored.with_grown_volumes(&current.spec.config);
    check_names(path, &config, &neighbours)?;
    secrets::check_references(client, path, &config).await?;
    let release = mark(
        head + 1,
        Reason::Rollback,
        Some(format!("rollback to revision {revision}")),
        caller,
    );
    // A rollback is a decision whatever it restores: no build asked for
    // before it deploys over it.
    let decision = Decision {
        revision: head + 1,
        what: format!("rolled back to revision {revision}"),
    };
    let updated = commit_change(
        store,
        client,
        rules,
        &current,
        config,
        release,
        Some(decision),
    )
    .await?;
    Ok(record_of(&updated, &path.environment_path(), caller))
}

/// Copies image and processes to the app of the same name in another
/// environment of the project, creating it there (without domains) if absent.
pub async fn promote(
    store: &Store,
    client: &kube::Client,
    rules: &HostRules,
    caller: &Principal,
    path: &AppPath,
    target_environment: &EnvironmentName,
) -> Result<AppRecord, ApiError> {
    let org = &caller.user.org;
    if *target_environment == path.environment {
        return Err(ApiError::ValidationFailed(
            "environment: promote to another environment of the project".into(),
        ));
    }
    let target_path = AppPath {
        project: path.project.clone(),
        environment: target_environment.clone(),
        app: path.app.clone(),
    };
    let destination = target_path.environment_path();
    // The source, and the target environment with its Apps, read at once.
    let (source, target_apps) = tokio::join!(
        cluster_apps::get_visible(client, org, path),
        environment_apps(client, org, &destination)
    );
    let source = source?;
    if source.spec.config.image.is_none() {
        return Err(ApiError::Conflict(format!(
            "app {} has no image yet: promoting copies its built image and never builds; \
             wait for its first build to succeed (listBuilds)",
            path.app
        )));
    }
    let mut neighbours = match target_apps {
        Err(ApiError::NotFound(_)) => {
            return Err(ApiError::ValidationFailed(format!(
                "environment: project {} has no environment {target_environment}",
                path.project
            )));
        }
        other => other?,
    };
    let note = Some(format!(
        "promoted from {} revision {}",
        path.environment, source.spec.release.revision
    ));
    let target = cluster_apps::take_visible(&mut neighbours, org, &target_path);
    let promoted = match target {
        Some(target) => {
            let mut config = target.spec.config.clone();
            config.image.clone_from(&source.spec.config.image);
            config.processes.clone_from(&source.spec.config.processes);
            check_config(&target_path, &config)?;
            check_names(&target_path, &config, &neighbours)?;
            secrets::check_references(client, &target_path, &config).await?;
            let revision = target.spec.release.revision + 1;
            // A decision of the target app alone: its own pending builds
            // are moot, the source app's go on.
            let decision = Decision {
                revision,
                what: format!(
                    "promoted from {} revision {}",
                    path.environment, source.spec.release.revision
                ),
            };
            let release = mark(revision, Reason::Promote, note, caller);
            commit_change(
                store,
                client,
                rules,
                &target,
                config,
                release,
                Some(decision),
            )
            .await?
        }
        None => {
            // A new app: its name becomes part of its default host there.
            AppName::parse_new(path.app.as_str()).map_err(|e| {
                ApiError::ValidationFailed(format!(
                    "app: promoting creates the app in {target_environment}, and the name of a \
                     new app {e}"
                ))
            })?;
            let mut config = source.spec.config.clone();
            config.domains.clear();
            // It runs the promoted image; builds stay the source app's.
            config.source = None;
            check_new(&target_path, &config, &neighbours)?;
            // The source's env, read in the target's environment.
            secrets::check_references(client, &target_path, &config).await?;
            let release = mark(1, Reason::Promote, note, caller);
            commit_new(store, client, rules, org, &target_path, config, release).await?
        }
    };
    Ok(record_of(&promoted, &destination, caller))
}

/// The rules of a configuration assembled from two apps (a promotion keeps
/// the target's volumes with the source's processes).
fn check_config(path: &AppPath, config: &AppConfig) -> Result<(), ApiError> {
    body::apply_update(&path.app, config, &UpdateBody::default()).map(|_| ())
}

/// Deletes the app, its workloads (through their owner references) and its
/// release history; its volumes' claims only when asked: those labelled with
/// its uid, and Berth's claims of its name whose uid names no App any more
/// (left by an earlier app of that name), never by a name prefix. A retried
/// delete of an app already gone still removes claims it left.
pub async fn delete(
    store: &Store,
    client: &kube::Client,
    caller: &Principal,
    path: &AppPath,
    delete_volumes: bool,
) -> Result<(), ApiError> {
    let org = &caller.user.org;
    let app = match cluster_apps::get_visible(client, org, path).await {
        Ok(app) => app,
        // Said only once the environment was found to be there.
        Err(missing @ ApiError::NotFound(Missing::App { .. })) if delete_volumes => {
            return match cluster_apps::delete_left_claims(client, org, path).await? {
                0 => Err(missing),
                _ => Ok(()),
            };
        }
        Err(error) => return Err(error),
    };
    cluster_apps::delete(client, &app).await?;
    if let Ok(history) = history_of(&app) {
        // Its history, hostnames and hook. Whatever a failure leaves, the
        // app's entry in its environment's list still leads to: the
        // environment's purge removes it (`leftovers`); its hostnames are
        // stale meanwhile, taken over when claimed.
        if let Err(error) = leftovers::remove(store, &path.namespace(), &history).await {
            tracing::warn!(app = %path.target(), error = %error.cause(), "an app's leftovers were left behind");
        }
    }
    if delete_volumes {
        // Its own claims (by its uid), then those it was adopting: left by
        // an earlier app of its name, which the controller had not yet
        // labelled with this one's uid.
        cluster_apps::delete_claims(client, &app).await?;
        cluster_apps::delete_left_claims(client, org, path).await?;
    }
    Ok(())
}

pub async fn list_releases(
    store: &Store,
    client: &kube::Client,
    caller: &Principal,
    path: &AppPath,
) -> Result<Vec<ReleaseRecord>, ApiError> {
    let app = cluster_apps::get_visible(client, &caller.user.org, path).await?;
    let mut records = releases::list(
        store,
        &history_of(&app)?,
        &current_release(&app)?,
        &unrecorded_releases(&app)?,
    )
    .await?;
    let status = app.status.clone().unwrap_or_default();
    releases::with_outcomes(&mut records, &status, app.spec.release.revision);
    Ok(records)
}
