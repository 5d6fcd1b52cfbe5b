//! `Build` → a Job in the builds namespace ([`crate::build_engine`]), its
//! status following the Job; on success, the App's next revision runs the
//! image pinned by digest.
//!
//! - One build per app runs at a time: a queued Build waits while another of
//!   its App (by `LABEL_APP_UID`) runs; of several queued, all but the
//!   newest are `cancelled`. Decided on a fresh list, one App at a time.
//! - Starting: without the registry's ConfigMap the Build fails at once
//!   (saying to run `berth-admin registry set`). The App's git secret, when
//!   it names one, is copied into a Secret of the builds namespace owned by
//!   the Build (named like its Job), which only the clone step reads, and
//!   which is deleted when the build ends. Its value is never in a status,
//!   message, Event or log line. The registry credentials come from
//!   `registry::build_credentials`: with a scoped registry the build's own,
//!   minted now (their digests in the status it is `running` with), which
//!   the token service honours only while it runs, at most its deadline;
//!   they are deleted when it ends. The apiserver's version says how
//!   BuildKit's AppArmor profile is given (`build_engine::AppArmor`).
//! - Ending: the `result` step's termination message, parsed strictly,
//!   gives commit and digest; the App gets revision `n + 1` (reason
//!   `deploy`, note `build {number} of {commit:12}`, the Build's actor, the
//!   image `{prefix}/{org}/{project}/{app}@{digest}`), written over the
//!   App as read (its resourceVersion), like the automatic rollback
//!   (`crate::releases::commit_rollback`). Then the Build is `succeeded`
//!   with its image and revision. A failed build changes nothing of the App.
//! - A Build whose App is gone (or is another App of that name: another
//!   uid) is deleted, and with it its Job and credential.
//!
//! Every status write is conditioned on the Build as read, so a Build
//! cancelled and started at once is impossible.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Pod, Secret};
use kube::api::{Api, DeleteParams, ListParams, PostParams, Preconditions};
use kube::runtime::controller::Action;
use kube::{Resource, ResourceExt};

use berth_shared::clock;
use berth_shared::cluster::crd::{
    App, BUILD_CANCELLED, BUILD_FAILED, BUILD_QUEUED, BUILD_RUNNING, BUILD_SUCCEEDED,
    BUILDS_NAMESPACE, Build, BuildStatus, LABEL_APP_UID, LABEL_BUILD, LABEL_MANAGED_BY, MANAGER,
    ReleaseMark, object_names,
};
use berth_shared::cluster::ownership;
use berth_shared::cluster::{is_conflict, is_not_found};

use crate::build_engine::{self, AppArmor, GitCredential, Outcome, Pushed, Target};
use crate::events::{Reason, bounded};
use crate::registry;
use crate::{Context, Error};

/// A queued build looks again this often for its turn (a build ending
/// wakes only itself).
const WHILE_QUEUED: Duration = Duration::from_secs(5);
/// While a build runs its Job's watch brings the news; a safety net.
const WHILE_RUNNING: Duration = Duration::from_secs(30);
/// After a write lost a race: look again soon.
const AFTER_A_CONFLICT: Duration = Duration::from_secs(1);
/// A build's registry credentials outlive its Job's deadline by this much:
/// the Job's pod may start a little after the credentials are minted.
const CREDENTIAL_SLACK_SECONDS: i64 = 120;

// The Events of a Build (`kubectl -n berth-builds describe build NAME`) and
// of its App.
const STARTED: Reason = Reason::normal("BuildStarted", "Build");
const SUCCEEDED: Reason = Reason::normal("BuildSucceeded", "Build");
const FAILED: Reason = Reason::warning("BuildFailed", "Build");
const CANCELLED: Reason = Reason::normal("BuildCancelled", "Build");
const DEPLOYED: Reason = Reason::normal("Built", "Deploy");

pub async fn reconcile(build: Arc<Build>, context: Arc<Context>) -> Result<Action, Error> {
    if build.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let spec = &build.spec;
    let apps: Api<App> = Api::namespaced(context.client.clone(), &spec.namespace);
    let app = match apps.get_opt(&spec.app).await? {
        Some(app) if app.uid().as_deref() == Some(spec.app_uid.as_str()) => app,
        _ => return remove(&build, &context).await,
    };
    if build.is_finished() {
        forget_credential(&build, &context).await?;
        return Ok(Action::await_change());
    }
    let _turn = context
        .namespace_turn(&format!("build:{}", spec.app_uid))
        .await;
    if build.phase() == BUILD_RUNNING {
        return follow(&build, &app, &context).await;
    }
    // Queued: the newest queued of its App starts once none runs.
    let builds: Api<Build> = Api::namespaced(context.client.clone(), BUILDS_NAMESPACE);
    let siblings = builds
        .list(&ListParams::default().labels(&format!("{LABEL_APP_UID}={}", spec.app_uid)))
        .await?
        .items;
    let newer = siblings
        .iter()
        .filter(|other| other.phase() == BUILD_QUEUED && other.spec.number > spec.number)
        .map(|other| other.spec.number)
        .max();
    if let Some(newer) = newer {
        let message = format!("cancelled: build {newer} was asked for after it");
        let status = BuildStatus {
            phase: Some(BUILD_CANCELLED.to_owned()),
            message: Some(message.clone()),
            finished_at: Some(clock::unix_millis()),
            ..build.status.clone().unwrap_or_default()
        };
        if write_status(&build, &context, status).await? {
            context
                .events
                .publish(build.as_ref(), CANCELLED, message)
                .await;
        }
        return Ok(Action::await_change());
    }
    if let Some(running) = siblings
        .iter()
        .find(|other| other.phase() == BUILD_RUNNING && other.spec.number != spec.number)
    {
        let status = BuildStatus {
            phase: None,
            message: Some(format!(
                "waiting for build {} of this app to finish",
                running.spec.number
            )),
            ..build.status.clone().unwrap_or_default()
        };
        if build.status.as_ref() != Some(&status) {
            write_status(&build, &context, status).await?;
        }
        return Ok(Action::requeue(WHILE_QUEUED));
    }
    start(&build, &context).await
}

/// Starts the build's Job (with its git credential copied first), or fails
/// it at once when the registry or the credential is missing.
async fn start(build: &Build, context: &Context) -> Result<Action, Error> {
    let Some(registry) = registry::read(&context.client).await? else {
        return fail(build, context, registry::NOT_CONFIGURED.to_owned()).await;
    };
    let job_name = object_names::build_job(&build.name_any());
    let Some(owner) = build.controller_owner_ref(&()) else {
        return Ok(Action::await_change());
    };
    let credential = match copy_credential(build, context, &job_name, &owner).await? {
        Ok(credential) => credential,
        Err(why) => return fail(build, context, why).await,
    };
    let credential = credential.map(|has_username| GitCredential {
        secret: &job_name,
        has_username,
    });
    let version = context.client.apiserver_version().await?;
    let credentials = registry::build_credentials(build, &registry);
    // Scoped registries: the build's own credentials, valid while it runs
    // and at most as long as its Job may (the token service reads both).
    let registry_credentials = match registry.credentials {
        registry::CredentialMode::Shared => None,
        registry::CredentialMode::Scoped => {
            let expires_at = clock::unix_seconds()
                + context.settings.builders.deadline_seconds
                + CREDENTIAL_SLACK_SECONDS;
            Some(
                registry::mint_build_credentials(
                    &context.client,
                    build,
                    &registry,
                    &owner,
                    expires_at,
                )
                .await?,
            )
        }
    };
    let target = Target {
        registry: &registry,
        credentials: &credentials,
        apparmor: AppArmor::for_minor(&version.minor),
    };
    let job = match build_engine::job(
        build,
        owner,
        &context.settings.builders,
        &target,
        credential.as_ref(),
    ) {
        Ok(job) => job,
        Err(why) => return fail(build, context, why).await,
    };
    let jobs: Api<Job> = Api::namespaced(context.client.clone(), BUILDS_NAMESPACE);
    match jobs.create(&PostParams::default(), &job).await {
        Ok(_) => context.metrics.applied("Job"),
        // Made by an earlier round whose status write was lost: it is read
        // as this build's only if the Build controls it (`follow`).
        Err(error) if is_conflict(&error) => {}
        Err(error) => return Err(error.into()),
    }
    let status = BuildStatus {
        phase: Some(BUILD_RUNNING.to_owned()),
        message: None,
        job: Some(job_name.clone()),
        started_at: Some(clock::unix_millis()),
        registry: registry_credentials,
        ..build.status.clone().unwrap_or_default()
    };
    if write_status(build, context, status).await? {
        tracing::info!(build = %build.name_any(), job = %job_name, "build started");
        context.metrics.build("started");
        context
            .events
            .publish(build, STARTED, format!("Job {job_name} runs the build."))
            .await;
        Ok(Action::requeue(WHILE_RUNNING))
    } else {
        Ok(Action::requeue(AFTER_A_CONFLICT))
    }
}

/// Copies the App's git secret (key `token`, and `username` when it has
/// one) into the builds namespace, owned by the Build. `Ok(None)`: the App
/// names none; `Ok(Some(has_username))`: copied; `Err(why)`: the build
/// cannot run, in words that name the secret, never its value.
async fn copy_credential(
    build: &Build,
    context: &Context,
    name: &str,
    owner: &k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference,
) -> Result<Result<Option<bool>, String>, Error> {
    let Some(secret_name) = build.spec.source.git_secret.as_deref() else {
        return Ok(Ok(None));
    };
    let found = Api::<Secret>::namespaced(context.client.clone(), &build.spec.namespace)
        .get_opt(secret_name)
        .await?;
    let Some(mut data) = found.and_then(|secret| secret.data) else {
        return Ok(Err(format!(
            "the git secret {secret_name} is not a secret of the app's environment"
        )));
    };
    let Some(token) = data.remove("token") else {
        return Ok(Err(format!(
            "the git secret {secret_name} has no key `token`"
        )));
    };
    let username = data.remove("username");
    let has_username = username.is_some();
    let mut copied = std::collections::BTreeMap::from([("token".to_owned(), token)]);
    if let Some(username) = username {
        copied.insert("username".to_owned(), username);
    }
    let secret = Secret {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some(BUILDS_NAMESPACE.to_owned()),
            labels: Some(std::collections::BTreeMap::from([(
                LABEL_MANAGED_BY.to_owned(),
                MANAGER.to_owned(),
            )])),
            owner_references: Some(vec![owner.clone()]),
            ..Default::default()
        },
        type_: Some("Opaque".to_owned()),
        data: Some(copied),
        ..Default::default()
    };
    let secrets: Api<Secret> = Api::namespaced(context.client.clone(), BUILDS_NAMESPACE);
    match secrets.create(&PostParams::default(), &secret).await {
        Ok(_) => {}
        Err(error) if is_conflict(&error) => {}
        Err(error) => return Err(error.into()),
    }
    Ok(Ok(Some(has_username)))
}

/// Deletes the build's copy of the git credential, if it made one, and
/// its registry credentials (which stopped working when it ended). By name,
/// without reading them first: the controller reads no Secret of
/// berth-builds (where the registry's shared push credential may be). The
/// names are the Build's own (`object_names::build_job` of its name, unique
/// among the Builds there), and in berth-builds only Berth makes Secrets;
/// the copies are also owned by the Build, so they go with it whatever
/// happens here.
async fn forget_credential(build: &Build, context: &Context) -> Result<(), Error> {
    if build.status.as_ref().is_some_and(|s| s.registry.is_some()) {
        registry::forget_build_credentials(&context.client, build).await?;
    }
    if build.spec.source.git_secret.is_none() {
        return Ok(());
    }
    let name = object_names::build_job(&build.name_any());
    registry::delete_build_secret(&context.client, &name).await
}

/// A running build: its Job's end, read.
async fn follow(build: &Build, app: &App, context: &Context) -> Result<Action, Error> {
    let job_name = object_names::build_job(&build.name_any());
    let jobs: Api<Job> = Api::namespaced(context.client.clone(), BUILDS_NAMESPACE);
    let job = jobs
        .get_opt(&job_name)
        .await?
        .filter(|job| ownership::is_controlled_by(&job.metadata, &build.uid().unwrap_or_default()));
    let Some(job) = job else {
        return fail(build, context, format!("its Job {job_name} is gone")).await;
    };
    let pods: Api<Pod> = Api::namespaced(context.client.clone(), BUILDS_NAMESPACE);
    let selector = format!(
        "{LABEL_APP_UID}={},{LABEL_BUILD}={}",
        build.spec.app_uid, build.spec.number
    );
    let pod = pods
        .list(&ListParams::default().labels(&selector))
        .await?
        .items
        .into_iter()
        .find(|pod| ownership::is_controlled_by(&pod.metadata, &job.uid().unwrap_or_default()));
    match build_engine::outcome(
        &job,
        pod.as_ref(),
        context.settings.builders.deadline_seconds,
    ) {
        None => Ok(Action::requeue(WHILE_RUNNING)),
        Some(Outcome::Failed(why)) => fail(build, context, why).await,
        Some(Outcome::Succeeded(pushed)) => succeed(build, app, context, &pushed).await,
    }
}

/// Gives the App the built image as its next revision (once), then marks
/// the Build succeeded.
async fn succeed(
    build: &Build,
    app: &App,
    context: &Context,
    pushed: &Pushed,
) -> Result<Action, Error> {
    let Some(registry) = registry::read(&context.client).await? else {
        return fail(build, context, registry::NOT_CONFIGURED.to_owned()).await;
    };
    let spec = &build.spec;
    let image = format!(
        "{}@{}",
        registry.repository(&spec.org, &spec.project, &spec.app),
        pushed.digest
    );
    let note = format!("build {} of {}", spec.number, &pushed.commit[..12]);
    let release = &app.spec.release;
    // Written already by an earlier round whose status write was lost.
    let revision = if app.spec.config.image.as_deref() == Some(image.as_str())
        && release.note.as_deref() == Some(note.as_str())
    {
        release.revision
    } else {
        let mut config = app.spec.config.clone();
        config.image = Some(image.clone());
        let release = ReleaseMark {
            revision: release.revision + 1,
            reason: "deploy".to_owned(),
            note: Some(note.clone()),
            actor: spec.actor.clone(),
            created_at: clock::unix_millis(),
            automatic_rollback_of: None,
        };
        let next = app.superseded(config, release);
        let apps: Api<App> = Api::namespaced(context.client.clone(), &spec.namespace);
        match apps
            .replace(&app.name_any(), &PostParams::default(), &next)
            .await
        {
            Ok(_) => {}
            // Changed meanwhile: the next round reads it again.
            Err(error) if is_conflict(&error) => return Ok(Action::requeue(AFTER_A_CONFLICT)),
            // Gone meanwhile: the next round removes the Build.
            Err(error) if is_not_found(&error) => return Ok(Action::requeue(AFTER_A_CONFLICT)),
            Err(error) => return Err(error.into()),
        }
        tracing::info!(app = %app.name_any(), namespace = %spec.namespace, revision = next.spec.release.revision, "built image deployed");
        context
            .events
            .publish(
                app,
                DEPLOYED,
                format!(
                    "Revision {} runs the image of {note}.",
                    next.spec.release.revision
                ),
            )
            .await;
        next.spec.release.revision
    };
    let status = BuildStatus {
        phase: Some(BUILD_SUCCEEDED.to_owned()),
        commit: Some(pushed.commit.clone()),
        strategy: Some(pushed.strategy),
        image: Some(image.clone()),
        message: None,
        finished_at: Some(clock::unix_millis()),
        revision: Some(revision),
        ..build.status.clone().unwrap_or_default()
    };
    if !write_status(build, context, status).await? {
        return Ok(Action::requeue(AFTER_A_CONFLICT));
    }
    context.metrics.build(BUILD_SUCCEEDED);
    context
        .events
        .publish(
            build,
            SUCCEEDED,
            format!("Pushed {image}; the app's revision {revision} runs it."),
        )
        .await;
    forget_credential(build, context).await?;
    Ok(Action::await_change())
}

/// Marks the Build failed with `why`; the App is left as it is.
async fn fail(build: &Build, context: &Context, why: String) -> Result<Action, Error> {
    let message = bounded(format!("The build failed: {why}"));
    let status = BuildStatus {
        phase: Some(BUILD_FAILED.to_owned()),
        message: Some(message.clone()),
        finished_at: Some(clock::unix_millis()),
        ..build.status.clone().unwrap_or_default()
    };
    if !write_status(build, context, status).await? {
        return Ok(Action::requeue(AFTER_A_CONFLICT));
    }
    tracing::info!(build = %build.name_any(), "build failed");
    context.metrics.build(BUILD_FAILED);
    context.events.publish(build, FAILED, message).await;
    forget_credential(build, context).await?;
    Ok(Action::await_change())
}

/// Deletes a Build whose App is gone (its Job and credential go with it).
async fn remove(build: &Build, context: &Context) -> Result<Action, Error> {
    let builds: Api<Build> = Api::namespaced(context.client.clone(), BUILDS_NAMESPACE);
    let only_this_one = DeleteParams {
        preconditions: Some(Preconditions {
            uid: build.uid(),
            resource_version: None,
        }),
        ..DeleteParams::background()
    };
    match builds.delete(&build.name_any(), &only_this_one).await {
        Ok(_) => {
            tracing::info!(build = %build.name_any(), "its App is gone: build removed");
            context.metrics.build("removed");
        }
        Err(error) if is_not_found(&error) || is_conflict(&error) => {}
        Err(error) => return Err(error.into()),
    }
    Ok(Action::await_change())
}

/// Replaces the Build's status, conditioned on the Build as read; whether
/// it was written (false: it changed meanwhile, or is gone).
async fn write_status(
    build: &Build,
    context: &Context,
    status: BuildStatus,
) -> Result<bool, Error> {
    let builds: Api<Build> = Api::namespaced(context.client.clone(), BUILDS_NAMESPACE);
    let mut next = build.clone();
    next.status = Some(status);
    match builds
        .replace_status(&build.name_any(), &PostParams::default(), &next)
        .await
    {
        Ok(_) => Ok(true),
        Err(error) if is_conflict(&error) || is_not_found(&error) => Ok(false),
        Err(error) => Err(error.into()),
    }
}
