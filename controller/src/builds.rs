//! `Build` → a Job in the builds namespace ([`crate::build_engine`]), its
//! status following the Job; on success, the App's next revision runs the
//! image pinned by digest.
//!
//! - Builds follow the app: a Build the API asked to cancel
//!   (`BuildSpec::cancel`), or asked for before the App's last decision
//!   (`AppSpec::decision`: a rollback, an image set by hand, the source
//!   changed or removed, a promotion into it), is `cancelled` saying why,
//!   and its Job deleted. Apps are watched, so this follows their change at
//!   once; and it is checked again, on the App as read, right before the
//!   App gets the build's image, which is written over that very App (its
//!   resourceVersion): a decision made meanwhile wins.
//! - One build per app runs at a time: a queued Build waits while another of
//!   its App (by `LABEL_APP_UID`) runs; of several queued, all but the
//!   newest are `cancelled`. Decided on a fresh list, one App at a time.
//! - Fair shares (`crate::shares`): a Job is made only when the build's
//!   organization runs fewer than its share and the namespace's quotas have
//!   room; starts are decided one at a time, each once the one before has
//!   its pod. Before its Job, the builds namespace's egress policy
//!   (`crate::egress`) is applied.
//! - Starting: without the registry's ConfigMap the Build fails at once
//!   (saying to run `berth-admin registry set`). The App's git secret, when
//!   it names one, is copied afresh into a Secret of the builds namespace
//!   owned by the Build (named like its Job), which only the clone step
//!   reads, and which is deleted when the build ends (by the uid its
//!   status records); a Secret of that name that this Build does not own
//!   fails the build and is never used nor deleted. Its
//!   value is never in a status, message, Event or log line. The registry
//!   credentials come from `registry::build_credentials`: with a scoped
//!   registry the build's own, minted now (their digests in the status it
//!   is `running` with), which the token service honours only while it
//!   runs, at most its deadline; they are deleted when it ends. The
//!   apiserver's version says how BuildKit's AppArmor profile is given
//!   (`build_engine::AppArmor`).
//! - Ending: the `result` step's termination message, parsed strictly,
//!   gives commit and digest, recorded in the Build's status with the image
//!   (the build is then past cancelling by request); then the App gets
//!   revision `n + 1` (reason `deploy`, note `build {number} of
//!   {commit:12}`, the Build's actor, the image
//!   `{prefix}/{org}/{project}/{app}@{digest}`), written over the App as
//!   read, like the automatic rollback (`crate::releases::commit_rollback`).
//!   Then the Build is `succeeded` with its revision. A failed build
//!   changes nothing of the App.
//! - A Build whose App is gone (or is another App of that name: another
//!   uid) is deleted, and with it its Job and credential.
//!
//! Every status write is conditioned on the Build as read, so a Build
//! cancelled and started at once is impossible.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Pod, Secret};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use kube::{Resource, ResourceExt};

use berth_cluster::crd::{
    App, BUILD_CANCELLED, BUILD_FAILED, BUILD_QUEUED, BUILD_RUNNING, BUILD_SUCCEEDED,
    BUILDS_NAMESPACE, Build, BuildStatus, LABEL_APP_UID, LABEL_BUILD, LABEL_MANAGED_BY, MANAGER,
    ReleaseMark, ReleaseReason, object_names,
};
use berth_cluster::ownership;
use berth_cluster::{delete_only, is_conflict, is_not_found};
use berth_domain::clock;
use berth_domain::stored::Stored;

use crate::build_engine::{self, AppArmor, Outcome, Pushed, Target};
use crate::context::{Context, FIELD_MANAGER};
use crate::error::Error;
use crate::events::{Reason, bounded};
use crate::{build_secrets, egress, registry, shares};

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
/// How long a start waits for its Job's pod before the next start is
/// decided (the Job controller makes it within a moment).
const UNTIL_POD: Duration = Duration::from_secs(10);

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
    // Asked to cancel, or made moot by a later decision of the app: it
    // neither runs on nor deploys.
    if let Some(why) = build.moot_for(&app) {
        return cancel(&build, &context, &why).await;
    }
    if build.is_built() {
        return deploy(&build, &app, &context).await;
    }
    if build.phase() == BUILD_RUNNING {
        return follow(&build, &context).await;
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
        return cancel(
            &build,
            &context,
            &format!("build {newer} was asked for after it"),
        )
        .await;
    }
    if let Some(running) = siblings
        .iter()
        .find(|other| other.phase() == BUILD_RUNNING && other.spec.number != spec.number)
    {
        return wait(
            &build,
            &context,
            format!(
                "waiting for build {} of this app to finish",
                running.spec.number
            ),
        )
        .await;
    }
    start(&build, &context).await
}

/// Keeps a build queued, saying what it waits for, and looks again soon.
async fn wait(build: &Build, context: &Context, message: String) -> Result<Action, Error> {
    let status = BuildStatus {
        phase: None,
        message: Some(message),
        ..build.status.clone().unwrap_or_default()
    };
    if build.status.as_ref() != Some(&status) {
        write_status(build, context, status).await?;
    }
    Ok(Action::requeue(WHILE_QUEUED))
}

/// Starts the build's Job once its organization and the namespace have
/// room (with its git credential copied first), or fails it at once when
/// the registry or the credential is missing.
async fn start(build: &Build, context: &Context) -> Result<Action, Error> {
    let Some(registry) = registry::read(&context.client).await? else {
        return fail(build, context, registry::NOT_CONFIGURED.to_owned()).await;
    };
    let job_name = object_names::build_job(&build.name_any());
    let Some(owner) = build.controller_owner_ref(&()) else {
        return Ok(Action::await_change());
    };
    let version = context.client.apiserver_version().await?;
    let credentials = registry::build_credentials(build, &registry);
    let target = Target {
        registry: &registry,
        credentials: &credentials,
        apparmor: AppArmor::for_minor(&version.minor),
    };
    let git_credential = build
        .spec
        .source
        .git_secret
        .as_ref()
        .map(|_| job_name.as_str());
    let job = match build_engine::job(
        build,
        owner.clone(),
        &context.settings.builders,
        &target,
        git_credential,
    ) {
        Ok(job) => job,
        Err(why) => return fail(build, context, why).await,
    };
    let demand = job
        .spec
        .as_ref()
        .and_then(|spec| spec.template.spec.as_ref())
        .map(shares::demand)
        .unwrap_or_default();
    // One start decided at a time, so that two never take the last room.
    let _starts = context.namespace_turn("build-starts").await;
    if let Some(why) = shares::must_wait(
        &context.client,
        &build.spec.org,
        &demand,
        context.settings.builders.per_organization,
    )
    .await?
    {
        return wait(build, context, why).await;
    }
    // Where the build's pod may connect to, in place before it runs.
    let policy = context.settings.egress.policy(BUILDS_NAMESPACE, false);
    Api::<NetworkPolicy>::namespaced(context.client.clone(), BUILDS_NAMESPACE)
        .patch(
            egress::POLICY_NAME,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&policy),
        )
        .await?;
    context.metrics.applied("NetworkPolicy");
    let credential = match copy_credential(build, context, &job_name, &owner).await? {
        Ok(copied) => copied,
        Err(why) => return fail(build, context, why).await,
    };
    // Scoped registries: the build's own credentials, minted once it may
    // start, valid while it runs and at most as long as its Job may (the
    // token service reads both).
    let registry_credentials = match registry.credentials {
        registry::CredentialMode::Shared => None,
        registry::CredentialMode::Scoped => {
            let expires_at = clock::unix_seconds()
                + context.settings.builders.deadline_seconds
                + CREDENTIAL_SLACK_SECONDS;
            match registry::mint_build_credentials(
                &context.client,
                build,
                &registry,
                &owner,
                expires_at,
            )
            .await?
            {
                Ok(minted) => Some(minted),
                Err(why) => return fail(build, context, why).await,
            }
        }
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
        credential,
        ..build.status.clone().unwrap_or_default()
    };
    if write_status(build, context, status).await? {
        tracing::info!(build = %build.name_any(), job = %job_name, "build started");
        context.metrics.build("started");
        context
            .events
            .publish(build, STARTED, format!("Job {job_name} runs the build."))
            .await;
        // The next start is decided once this one's pod counts.
        until_pod(build, context).await?;
        Ok(Action::requeue(WHILE_RUNNING))
    } else {
        Ok(Action::requeue(AFTER_A_CONFLICT))
    }
}

/// Waits (a little) until the build's Job has made its pod, so that the
/// next start decided counts it.
async fn until_pod(build: &Build, context: &Context) -> Result<(), Error> {
    let pods: Api<Pod> = Api::namespaced(context.client.clone(), BUILDS_NAMESPACE);
    let selector = format!(
        "{LABEL_APP_UID}={},{LABEL_BUILD}={}",
        build.spec.app_uid, build.spec.number
    );
    let started = std::time::Instant::now();
    while started.elapsed() < UNTIL_POD {
        if !pods
            .list(&ListParams::default().labels(&selector))
            .await?
            .items
            .is_empty()
        {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

/// Copies the App's git secret (key `token`, and `username` when it has
/// one) into the builds namespace, owned by the Build: afresh for each
/// build (a copy this Build made in an earlier round is written over with
/// the secret as it is now, never read). `Ok(uid)`: the copy's, if the app
/// names a secret. `Err(why)`: the build cannot run, in words that name
/// the secret, never its value; among them a Secret of that name the Build
/// does not own, which is never used.
async fn copy_credential(
    build: &Build,
    context: &Context,
    name: &str,
    owner: &k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference,
) -> Result<Result<Option<String>, String>, Error> {
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
    let mut copied = std::collections::BTreeMap::from([("token".to_owned(), token)]);
    if let Some(username) = data.remove("username") {
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
    build_secrets::write(
        &context.client,
        build,
        &secret,
        "its copy of the git credential",
    )
    .await
}

/// Deletes the build's registry credentials (scoped registries: they
/// stopped working when it ended) and its copy of the git credential, if it
/// made one.
async fn forget_credential(build: &Build, context: &Context) -> Result<(), Error> {
    if build.status.as_ref().is_some_and(|s| s.registry.is_some()) {
        registry::forget_build_credentials(&context.client, build).await?;
    }
    forget_git_credential(build, context).await
}

/// Deletes the build's copy of the git credential, if it made one: the
/// object whose uid its status recorded (a precondition of the delete),
/// without reading it first (the controller reads no Secret of
/// berth-builds, where the registry's push credential is), so a Secret of
/// that name the build did not make is never deleted. A copy made in a
/// round whose status write was lost is not recorded: owned by the Build,
/// it goes with it.
async fn forget_git_credential(build: &Build, context: &Context) -> Result<(), Error> {
    let Some(uid) = build
        .status
        .as_ref()
        .and_then(|status| status.credential.clone())
    else {
        return Ok(());
    };
    let name = object_names::build_job(&build.name_any());
    let secrets: Api<Secret> = Api::namespaced(context.client.clone(), BUILDS_NAMESPACE);
    match secrets.delete(&name, &delete_only(Some(uid))).await {
        Ok(_) => Ok(()),
        Err(error) if is_not_found(&error) || is_conflict(&error) => Ok(()),
        Err(error) => Err(error.into()),
    }
}

/// A running build: its Job's end, read.
async fn follow(build: &Build, context: &Context) -> Result<Action, Error> {
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
        Some(Outcome::Succeeded(pushed)) => built(build, context, &pushed).await,
    }
}

/// Records what the build pushed (commit, strategy, the image pinned by
/// digest): from here the build is past cancelling by request, and the
/// next round deploys it (`deploy`), unless the app decided otherwise
/// meanwhile.
async fn built(build: &Build, context: &Context, pushed: &Pushed) -> Result<Action, Error> {
    let Some(registry) = registry::read(&context.client).await? else {
        return fail(build, context, registry::NOT_CONFIGURED.to_owned()).await;
    };
    let spec = &build.spec;
    let image = format!(
        "{}@{}",
        registry.repository(&spec.org, &spec.project, &spec.app),
        pushed.digest
    );
    let status = BuildStatus {
        commit: Some(pushed.commit.clone()),
        strategy: Some(pushed.strategy),
        image: Some(image),
        message: Some("built: its image becomes the app's next revision".to_owned()),
        ..build.status.clone().unwrap_or_default()
    };
    write_status(build, context, status).await?;
    // Its status write (or the change that beat it) brings the next round.
    Ok(Action::requeue(AFTER_A_CONFLICT))
}

/// Gives the App the built image as its next revision (once), then marks
/// the Build succeeded. The caller checked, on `app` as read, that no
/// decision of the app came after the build; the App is written over that
/// very version, so one made meanwhile makes the write fail and the next
/// round cancel the build.
async fn deploy(build: &Build, app: &App, context: &Context) -> Result<Action, Error> {
    let spec = &build.spec;
    let status = build.status.clone().unwrap_or_default();
    let (Some(image), Some(commit)) = (status.image.clone(), status.commit.clone()) else {
        return fail(build, context, "its result was lost".to_owned()).await;
    };
    let short = commit.get(..12).unwrap_or(&commit);
    let note = format!("build {} of {short}", spec.number);
    let release = &app.spec.release;
    // Written already by an earlier round whose status write was lost.
    let revision = if app.spec.config.image.as_ref().map(Stored::text) == Some(image.as_str())
        && release.note.as_deref() == Some(note.as_str())
    {
        release.revision
    } else {
        let mut config = app.spec.config.clone();
        config.image = Some(Stored::read(&image));
        let release = ReleaseMark::now(
            app.next_revision(),
            ReleaseReason::Deploy,
            Some(note.clone()),
            spec.actor.clone(),
        );
        let next = app.superseded(config, release);
        let apps: Api<App> = Api::namespaced(context.client.clone(), &spec.namespace);
        match apps
            .replace(&app.name_any(), &PostParams::default(), &next)
            .await
        {
            Ok(_) => {}
            // Changed meanwhile: the next round reads it again (and cancels
            // the build if the change was a decision).
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
    let succeeded = BuildStatus {
        phase: Some(BUILD_SUCCEEDED.to_owned()),
        message: None,
        finished_at: Some(clock::unix_millis()),
        revision: Some(revision),
        ..status
    };
    if !write_status(build, context, succeeded).await? {
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

/// Marks the Build `cancelled` (`cancelled: {why}`) and deletes its Job
/// (its pod goes with it); the App is left as it is.
async fn cancel(build: &Build, context: &Context, why: &str) -> Result<Action, Error> {
    let job_name = object_names::build_job(&build.name_any());
    let jobs: Api<Job> = Api::namespaced(context.client.clone(), BUILDS_NAMESPACE);
    if let Some(job) = jobs.get_opt(&job_name).await?
        && ownership::is_controlled_by(&job.metadata, &build.uid().unwrap_or_default())
    {
        match jobs.delete(&job_name, &delete_only(job.uid())).await {
            Ok(_) => {}
            Err(error) if is_not_found(&error) || is_conflict(&error) => {}
            Err(error) => return Err(error.into()),
        }
    }
    let message = bounded(format!("cancelled: {why}"));
    let status = BuildStatus {
        phase: Some(BUILD_CANCELLED.to_owned()),
        message: Some(message.clone()),
        finished_at: Some(clock::unix_millis()),
        ..build.status.clone().unwrap_or_default()
    };
    if !write_status(build, context, status).await? {
        return Ok(Action::requeue(AFTER_A_CONFLICT));
    }
    tracing::info!(build = %build.name_any(), "build cancelled");
    context.metrics.build(BUILD_CANCELLED);
    context.events.publish(build, CANCELLED, message).await;
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
    match builds
        .delete(&build.name_any(), &delete_only(build.uid()))
        .await
    {
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
