//! The app operations: each reads what it needs and decides what changes
//! (the configuration, why, the permissions a body's fields need); a change
//! of the configuration is then checked and committed by the change
//! pipeline ([`super::change`]).

use super::body;
use super::change::{Change, Writer};
use super::hosts::HostRules;
use super::leftovers;
use super::record::{self, record_of};
use super::releases;
use crate::ApiError;
use berth_cluster::ClusterError;
use berth_cluster::apps::{self as cluster_apps, history_of};
use berth_cluster::crd::{App, ReleaseReason};
use berth_cluster::environments as cluster_environments;
use berth_domain::Missing;
use berth_domain::app::AppConfig;
use berth_domain::names::{AppName, EnvironmentName, OrgName};
use berth_domain::paths::{AppPath, EnvironmentPath};
use berth_records::apps::body::{CreateBody, UpdateBody};
use berth_records::apps::record::{AppDetail, AppRecord, ReleaseRecord};
use berth_store::Store;
use berth_store::identity::Principal;

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
    Ok(apps?)
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
    Ok(app?)
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

/// The decision an update makes, if it makes one (`Decision`): a change of
/// the image (set by hand) or of the source makes every build asked for
/// before it moot. Other changes (env, sizes, domains…) are applied on top
/// of what a build brings, as the controller writes its image over the
/// App as it then is.
fn decision_of(current: &AppConfig, next: &AppConfig) -> Option<String> {
    let what = match (&current.source, &next.source) {
        (Some(_), None) => "the source was removed",
        (before, after) if before != after => "the source changed",
        _ if current.image != next.image => "the image was set by hand",
        _ => return None,
    };
    Some(what.to_owned())
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
        cluster_apps::pods(client, org, path, cluster_apps::PodsOf::Processes)
    );
    let app = app?;
    Ok(AppDetail {
        app: record_of(&app, &path.environment_path(), caller),
        pods: pods?.iter().map(record::pod_record).collect(),
    })
}

/// Whether each of the app's hostnames resolves to the gateway, where its
/// certificate stands (as the controller last found it, in the App's
/// status: the API never reads a certificate's Secret), and where the
/// organization's proof that it controls the name stands — looked for now,
/// so a pending hostname whose proof is published is verified by this check
/// (`super::proofs`): one entry per hostname, in the app's order; an
/// app without domains has none.
#[cfg(feature = "dns")]
pub async fn check_domains(
    store: &Store,
    client: &kube::Client,
    checker: &crate::domain_check::DomainChecker,
    caller: &Principal,
    path: &AppPath,
) -> Result<Vec<berth_records::apps::record::DomainCheck>, ApiError> {
    use super::{hosts, proofs};
    use berth_domain::certificate::{CertificateFinding, CertificateStanding};
    let org = caller.user.org.as_str();
    let app = cluster_apps::get_visible(client, &caller.user.org, path).await?;
    let hostnames: Vec<String> = (app.spec.config.hostnames())
        .map(|host| host.as_str().to_owned())
        .collect();
    let mut items = hosts::read_items(store, hostnames.iter().map(String::as_str)).await?;
    for hostname in &hostnames {
        if !items.iter().any(|item| item.hostname == *hostname) {
            items.push(hosts::HostItem {
                hostname: hostname.clone(),
                ..hosts::HostItem::default()
            });
        }
    }
    // The proofs and the gateway are looked up at once: each is bounded by
    // the lookup timeout, and so is the whole check.
    let proofs = items
        .into_iter()
        .map(|item| proofs::check(store, client, checker, item, org));
    let now = jiff::Timestamp::now();
    let unchecked = |hostname: &str| {
        let item = hosts::HostItem {
            hostname: hostname.to_owned(),
            ..hosts::HostItem::default()
        };
        proofs::standing(&item, org, "", &proofs::Finding::Missing)
    };
    let (proofs, checks) = tokio::join!(
        futures::future::try_join_all(proofs),
        checker.check(
            &hostnames,
            |hostname| {
                CertificateFinding::for_host(app.certificates(), hostname)
                    .map_or_else(CertificateStanding::not_looked_at, |finding| {
                        finding.at(now)
                    })
                    .into()
            },
            unchecked,
        )
    );
    let mut checks = checks?;
    for (item, challenge, finding) in proofs? {
        let standing = proofs::standing(&item, org, &challenge, &finding);
        for check in checks
            .iter_mut()
            .filter(|check| check.hostname == item.hostname)
        {
            check.verification = standing.clone();
        }
    }
    Ok(checks)
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
    let path = AppPath::new(environment, name);
    let neighbours = environment_apps(client, &caller.user.org, environment).await?;
    let writer = Writer {
        store,
        client,
        rules,
        caller,
    };
    Change::create(path, config, ReleaseReason::Create)
        .check(client, &neighbours)
        .await?
        .commit(&writer)
        .await
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
        ReleaseReason::Config
    } else {
        ReleaseReason::Deploy
    };
    let decision = decision_of(&current.spec.config, &config);
    // A configuration's release says what changed (names, never values).
    let note = (reason == ReleaseReason::Config)
        .then(|| super::notes::config_note(&current.spec.config, &config))
        .flatten();
    let writer = Writer {
        store,
        client,
        rules,
        caller,
    };
    let change = Change::revise(path.clone(), current, config, reason).deciding(decision);
    let change = match note {
        Some(note) => change.noted(note),
        None => change,
    };
    change
        .check(client, &neighbours)
        .await?
        .commit(&writer)
        .await
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
    let restored = restorable(store, &current, revision).await?;
    if restored.image.is_none() && current.spec.config.image.is_some() {
        return Err(ApiError::Conflict(format!(
            "revision {revision} has no image (the app's first build had not succeeded then): \
             rolling back to it would stop the app; roll back to a revision with an image"
        )));
    }
    let config = restored.with_grown_volumes(&current.spec.config);
    let writer = Writer {
        store,
        client,
        rules,
        caller,
    };
    Change::revise(path.clone(), current, config, ReleaseReason::Rollback)
        .noted(format!("rollback to revision {revision}"))
        // A rollback is a decision whatever it restores: no build asked
        // for before it deploys over it.
        .deciding(Some(format!("rolled back to revision {revision}")))
        .check(client, &neighbours)
        .await?
        .commit(&writer)
        .await
}

/// The configuration of the app's `revision`, if it still has it.
async fn restorable(store: &Store, current: &App, revision: i64) -> Result<AppConfig, ApiError> {
    let head = current.spec.release.revision;
    if revision == head {
        return Ok(current.spec.config.clone());
    }
    // A revision older than the kept window was pruned (or is about to
    // be): unknown, like one that never was.
    let unrecorded = current
        .spec
        .unrecorded
        .iter()
        .find(|r| r.release.revision == revision);
    let found = if let Some(unrecorded) = unrecorded {
        Some(releases::stored(
            &unrecorded.release,
            &unrecorded.config,
            true,
        )?)
    } else if (releases::oldest_kept(head)..head).contains(&revision) {
        releases::get(store, &history_of(current)?, revision).await?
    } else {
        None
    };
    Ok(found
        .ok_or_else(|| {
            ApiError::ValidationFailed(format!("revision: the app has no revision {revision}"))
        })?
        .config()?)
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
    caller.require_reach(path.project.as_str(), target_environment.as_str())?;
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
    let target = cluster_apps::take_visible(&mut neighbours, org, &target_path);
    let writer = Writer {
        store,
        client,
        rules,
        caller,
    };
    // The source's env is read in the target's environment.
    promotion(&source, &path.environment, target_path, target)?
        .check(client, &neighbours)
        .await?
        .commit(&writer)
        .await
}

/// The change promoting `source` (of environment `from`) makes to
/// `target`, the app of its name at `target_path`: its image and processes,
/// into the target's configuration or, where there is none, a new app's.
fn promotion(
    source: &App,
    from: &EnvironmentName,
    target_path: AppPath,
    target: Option<App>,
) -> Result<Change, ApiError> {
    let (image, processes) = (&source.spec.config.image, &source.spec.config.processes);
    let promoted = format!(
        "promoted from {from} revision {}",
        source.spec.release.revision
    );
    let change = match target {
        Some(target) => {
            let mut config = target.spec.config.clone();
            config.image.clone_from(image);
            config.processes.clone_from(processes);
            check_config(&target_path, &config)?;
            // A decision of the target app alone: its own pending builds
            // are moot, the source app's go on.
            Change::revise(target_path, target, config, ReleaseReason::Promote)
                .deciding(Some(promoted.clone()))
        }
        None => {
            // A new app: its name becomes part of its default host there.
            AppName::parse_new(target_path.app.as_str()).map_err(|e| {
                ApiError::ValidationFailed(format!(
                    "app: promoting creates the app in {}, and the name of a new app {e}",
                    target_path.environment
                ))
            })?;
            let mut config = source.spec.config.clone();
            config.domains.clear();
            // It runs the promoted image; builds stay the source app's.
            config.source = None;
            Change::create(target_path, config, ReleaseReason::Promote)
        }
    };
    Ok(change.noted(promoted))
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
        Err(missing @ ClusterError::Missing(Missing::App { .. })) if delete_volumes => {
            return match cluster_apps::delete_left_claims(client, org, path).await? {
                0 => Err(missing.into()),
                _ => Ok(()),
            };
        }
        Err(error) => return Err(error.into()),
    };
    cluster_apps::delete(client, &app).await?;
    if let Ok(history) = history_of(&app) {
        // Its history, hostnames and hook. Whatever a failure leaves, the
        // app's entry in its environment's list still leads to: the
        // environment's purge removes it (`leftovers`); its hostnames are
        // stale meanwhile, taken over when claimed.
        if let Err(error) =
            leftovers::remove(store, org.as_str(), &path.namespace(), &history).await
        {
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
    let (own, unrecorded) = releases::held_by(&app)?;
    let mut records = releases::list(store, &history_of(&app)?, &own, &unrecorded).await?;
    let status = app.status.clone().unwrap_or_default();
    releases::with_outcomes(&mut records, &status, app.spec.release.revision);
    Ok(records)
}
