//! `App` → the workloads [`crate::render`] makes of it, applied
//! with server-side apply; objects the app no longer renders are removed
//! (claims never); the App's status follows its Deployments' rollouts.
//!
//! Only what Berth made is ever written. An App is rendered only in a
//! namespace that the Berth Environment of that name owns (by uid). Before
//! anything is applied, every rendered name is looked up: it must be absent
//! or controlled by this App (its owner reference, by uid) — a claim, which
//! has no owner, must carry this App's uid as a label, or be a Berth claim of
//! this app's name left by an earlier App of that name, which it adopts. Any
//! other object of a rendered name leaves the App `RolloutFailed` naming it,
//! and nothing is applied; pruning deletes only objects this App controls.
//! An App that makes an object does it in its namespace's turn (one App at a
//! time), so two apps never both find a name free and both take it; an App
//! whose rendered objects are all its own already applies without waiting
//! (see [`apply_all`]).
//!
//! Claims grow and never shrink. A bound claim grows by patching its request;
//! an unbound one (nothing ever mounted it) can't be changed at all on a real
//! apiserver, so it is replaced at its new size: it holds no data yet.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Debug;
use std::ops::ControlFlow::{self, Break, Continue};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::batch::v1::CronJob;
use k8s_openapi::api::core::v1::{Namespace as K8sNamespace, PersistentVolumeClaim, Service};
use k8s_openapi::api::networking::v1::Ingress;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as K8sQuantity;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, Preconditions};
use kube::runtime::controller::Action;
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;

use berth_cluster::crd::{
    App, AppStatus, BUILD_CANCELLED, BUILD_FAILED, BUILD_RUNNING, BUILD_SUCCEEDED,
    BUILDS_NAMESPACE, Build, Environment, LABEL_APP, LABEL_APP_UID, LABEL_MANAGED_BY, MANAGER,
};
use berth_cluster::ownership::{self, NamespaceOwner};
use berth_cluster::{is_conflict, is_not_found};
use berth_domain::certificate::{CertificateFinding, CertificateState};
use berth_domain::size::Quantity;

use crate::certificates;
use crate::context::{Context, FIELD_MANAGER, named};
use crate::error::{Error, namespace_terminating};
use crate::events::Reason;
use crate::metrics::Metrics;
use crate::registry;
use crate::releases::{self, Held, Recorded, Remembering, Runs, remembered};
use crate::render::{self, CheckedApp, RenderError, RenderSettings, Rendered, render};

pub const REASON_PROGRESSING: &str = "Progressing";
pub const REASON_AVAILABLE: &str = "Available";
pub const REASON_ROLLOUT_FAILED: &str = "RolloutFailed";
pub const REASON_SCHEDULED: &str = "Scheduled";
pub const REASON_AWAITING_BUILD: &str = "AwaitingBuild";
pub use crate::releases::{REASON_RELEASE_FAILED, REASON_RELEASING};

/// How often a settled app is looked at again, to repair drift.
const RESYNC: Duration = Duration::from_secs(300);
/// While a rollout runs, the Deployment watch brings the news; this is a
/// safety net for a missed event.
const WHILE_PROGRESSING: Duration = Duration::from_secs(30);
/// While a release command runs, its Job's watch brings the news; this is
/// a safety net for a missed event.
const WHILE_RELEASING: Duration = Duration::from_secs(15);
/// While a claim is being replaced, the old one has to go first.
const WHILE_REPLACING_A_CLAIM: Duration = Duration::from_secs(1);
/// While an earlier App's objects of the same names are being collected.
const WHILE_AN_EARLIER_APP_GOES: Duration = Duration::from_secs(2);
/// While someone else's object holds a rendered name, or the namespace is
/// not Berth's: only a change elsewhere can cure it, so look now and then.
const WHILE_BLOCKED: Duration = Duration::from_secs(30);
/// How often a certificate cert-manager has not issued yet is looked for
/// (an HTTP-01 challenge takes seconds to minutes).
const WHILE_A_CERTIFICATE_IS_ISSUED: Duration = Duration::from_secs(20);

// The Events of an App (`kubectl describe app NAME -n NAMESPACE`): one at
// each change of its status, and one at each refused write.
const PROGRESSING: Reason = Reason::normal(REASON_PROGRESSING, "Rollout");
const AVAILABLE: Reason = Reason::normal(REASON_AVAILABLE, "Rollout");
const SCHEDULED: Reason = Reason::normal(REASON_SCHEDULED, "Rollout");
const ROLLOUT_FAILED: Reason = Reason::warning(REASON_ROLLOUT_FAILED, "Rollout");
const AWAITING_BUILD: Reason = Reason::normal(REASON_AWAITING_BUILD, "Build");
const INVALID_SPEC: Reason = Reason::warning("InvalidSpec", "Render");
const NAMESPACE_NOT_BERTHS: Reason = Reason::warning("NamespaceNotBerths", "Apply");
const NAME_TAKEN: Reason = Reason::warning("NameTaken", "Apply");
const WAITING_FOR_EARLIER_APP: Reason = Reason::normal("WaitingForEarlierApp", "Apply");
const REFUSED: Reason = Reason::warning("Refused", "Apply");
const RELEASING: Reason = Reason::normal(REASON_RELEASING, "Release");
const RELEASE_FAILED: Reason = Reason::warning(REASON_RELEASE_FAILED, "Release");
const ROLLED_BACK: Reason = Reason::warning("RolledBack", "Rollback");

/// One round, in phases: check the App, plan its release, render what the
/// workloads run, apply it (pruning what is no longer rendered), report the
/// status.
pub async fn reconcile(app: Arc<App>, context: Arc<Context>) -> Result<Action, Error> {
    let Checked {
        checked,
        settings,
        live,
    } = match check(&app, &context).await? {
        Continue(renderable) => renderable,
        Break(action) => return Ok(action),
    };
    let mut plan = releases::plan_release(&app, &context.client, &settings).await?;
    let hosts = render::hosts_of(&checked, &settings);
    let certificates = certificates::look(&app, &hosts, &context.client).await;
    plan.memory.certificates = certificates.clone();
    let waiting_for_certificates = certificates
        .iter()
        .any(|finding| finding.state == CertificateState::Pending);
    let checked = checked.with_certificates(&certificates);
    let target = match render_target(&app, &checked, &plan.runs, &settings, &certificates) {
        Ok(target) => target,
        Err(held) => return report_nothing_runs(&app, &context, held, plan.memory).await,
    };
    let applied = apply_all(target.app, &target.rendered, &context, live).await;
    let action = report_status(&app, &context, target, plan.memory, applied).await?;
    // cert-manager's Secrets are not watched: while one is awaited, look again soon.
    Ok(if waiting_for_certificates {
        sooner(action, WHILE_A_CERTIFICATE_IS_ISSUED)
    } else {
        action
    })
}

/// An App to render this round.
struct Checked<'a> {
    checked: CheckedApp<'a>,
    /// What it is rendered with.
    settings: RenderSettings,
    /// What its namespace held, listed with the checks (see [`apply_all`]).
    live: Result<Live, Failure>,
}

/// Check: whether the App is rendered this round (deleted, awaiting its
/// first build, of an invalid spec or in a namespace not Berth's, it is
/// not: then what to do instead, its status saying why), checked, the
/// settings it is rendered with and what its namespace holds.
async fn check<'a>(
    app: &'a App,
    context: &Context,
) -> Result<ControlFlow<Action, Checked<'a>>, Error> {
    if app.metadata.deletion_timestamp.is_some() {
        // Its workloads go with it (owner references); its claims stay.
        return Ok(Break(Action::await_change()));
    }
    if app.spec.config.image.is_none() {
        return Ok(Break(awaiting_build(app, context).await?));
    }
    // Every read at once, one round trip: the settings, the namespace's
    // owner, and what the namespace holds. Nothing is written before the
    // owner is known to be Berth's (a list of a namespace not Berth's is read
    // and dropped).
    let namespace_name = app.namespace().unwrap_or_default();
    let (settings, namespace, live) = tokio::join!(
        render_settings(context),
        namespace_of(app, context),
        Live::list(context, app, &namespace_name)
    );
    let (settings, namespace) = (settings?, namespace?);
    let checked = match CheckedApp::of(app) {
        Ok(checked) => checked,
        Err(error) => {
            return Ok(Break(invalid_spec(app, context, &error).await?));
        }
    };
    if let Break(action) = check_namespace(app, context, namespace).await? {
        return Ok(Break(action));
    }
    Ok(Continue(Checked {
        checked,
        settings,
        live,
    }))
}

/// The controller's render settings, and the registry Berth builds images
/// into: pods of an image Berth built name the registry's pull credential.
pub(crate) async fn render_settings(context: &Context) -> Result<RenderSettings, Error> {
    let mut settings = context.settings.render.clone();
    settings.registry_prefix = registry::read(&context.client)
        .await?
        .map(|registry| registry.prefix);
    Ok(settings)
}

/// An App whose spec cannot be rendered: its status says why.
async fn invalid_spec(app: &App, context: &Context, error: &RenderError) -> Result<Action, Error> {
    tracing::warn!(app = %named(app), error = %error, "the App cannot be rendered");
    let message = format!("The App's spec is invalid: {error}.");
    let status = failure_status(app, None, message);
    report(app, context, status, INVALID_SPEC).await?;
    // Only a change of the spec can fix it, and that is watched.
    Ok(Action::await_change())
}

/// Whether the App's namespace is Berth's to render into; if not, what to
/// do instead.
async fn check_namespace(
    app: &App,
    context: &Context,
    namespace: Namespace,
) -> Result<ControlFlow<Action>, Error> {
    match namespace {
        Namespace::Berths => Ok(Continue(())),
        Namespace::Terminating => {
            // Writes into it are refused, and the App goes with it: nothing
            // to do but wait (an Event in it would be refused too).
            tracing::info!(app = %named(app), "the App's namespace is being deleted; nothing applied");
            Ok(Break(Action::await_change()))
        }
        Namespace::Foreign(message) => {
            tracing::warn!(app = %named(app), "the App's namespace is not its environment's; nothing applied");
            let status = failure_status(app, None, message);
            report(app, context, status, NAMESPACE_NOT_BERTHS).await?;
            Ok(Break(Action::requeue(WHILE_BLOCKED)))
        }
    }
}

/// `action`, or a look after `within` when it would wait longer: for a
/// resync or a change (every other wait is 30 s or less).
fn sooner(action: Action, within: Duration) -> Action {
    if action == Action::await_change() || action == Action::requeue(RESYNC) {
        Action::requeue(within)
    } else {
        action
    }
}

/// What the workloads get this round: an App's configuration, rendered.
struct Target<'a> {
    /// The spec's App or, while its revision is held, the previous one.
    app: &'a App,
    revision: i64,
    rendered: Rendered,
    /// Why it is not the spec's revision, when it is not.
    held: Option<&'a Held>,
}

/// Render: the spec's revision or, while it is held, the configuration that
/// ran before it. When none did (or it no longer renders), nothing runs:
/// the `Err` says why.
fn render_target<'a>(
    app: &'a App,
    checked: &CheckedApp<'_>,
    runs: &'a Runs,
    settings: &RenderSettings,
    certificates: &[CertificateFinding],
) -> Result<Target<'a>, &'a Held> {
    let (held, previous) = match runs {
        Runs::Spec => {
            return Ok(Target {
                app,
                revision: app.spec.release.revision,
                rendered: render(checked, settings),
                held: None,
            });
        }
        Runs::Held(held, previous) => (held, previous),
    };
    let previous = previous.as_ref().ok_or(held)?;
    let checked = CheckedApp::of(&previous.app)
        .map_err(|_| held)?
        .with_certificates(certificates);
    Ok(Target {
        app: &previous.app,
        revision: previous.revision,
        rendered: render(&checked, settings),
        held: Some(held),
    })
}

/// The spec's revision is held and nothing ran before it: nothing to keep
/// running; the status says why.
async fn report_nothing_runs(
    app: &App,
    context: &Context,
    held: &Held,
    memory: AppStatus,
) -> Result<Action, Error> {
    let why = held_event(held);
    let status = AppStatus {
        ready: false,
        reason: Some(why.reason.to_owned()),
        message: Some(held.message().to_owned()),
        url: None,
        observed_generation: app.metadata.generation,
        ..memory
    };
    report(app, context, status, why).await?;
    Ok(Action::requeue(match held {
        Held::Releasing(_) => WHILE_RELEASING,
        Held::Failed(_) => RESYNC,
    }))
}

/// The Event of a revision held back.
fn held_event(held: &Held) -> Reason {
    match held {
        Held::Releasing(_) => RELEASING,
        Held::Failed(_) => RELEASE_FAILED,
    }
}

/// Report: the App's status once the target is applied (see
/// [`apply_all`]), and when to look again.
async fn report_status(
    app: &App,
    context: &Context,
    target: Target<'_>,
    memory: AppStatus,
    applied: Result<Outcome, Failure>,
) -> Result<Action, Error> {
    match applied {
        Ok(Outcome::Gone) => {
            tracing::info!(app = %named(app), "the App was deleted meanwhile; no claim made");
            Ok(Action::await_change())
        }
        Ok(Outcome::Blocked(blocked)) => {
            report_blocked(app, context, target.rendered.url, memory, blocked).await
        }
        Ok(Outcome::Applied(applied)) => {
            report_applied(app, context, &target, memory, applied).await
        }
        Err(failure) => report_failure(app, context, target.rendered.url, memory, failure).await,
    }
}

/// Rendered names are held by objects this App does not control: nothing
/// was applied.
async fn report_blocked(
    app: &App,
    context: &Context,
    url: Option<String>,
    memory: AppStatus,
    blocked: Blocked,
) -> Result<Action, Error> {
    tracing::warn!(app = %named(app), message = %blocked.message, "a rendered name is taken; nothing applied");
    // No URL while someone else's objects hold the app's names: nothing of
    // it serves there.
    let (status, why) = if blocked.waiting {
        let status = AppStatus {
            reason: Some(REASON_PROGRESSING.to_owned()),
            ..failure_status(app, url, blocked.message)
        };
        (status, WAITING_FOR_EARLIER_APP)
    } else {
        (failure_status(app, None, blocked.message), NAME_TAKEN)
    };
    report(app, context, status.remembering(memory), why).await?;
    Ok(Action::requeue(if blocked.waiting {
        WHILE_AN_EARLIER_APP_GOES
    } else {
        WHILE_BLOCKED
    }))
}

/// The target's workloads are applied: the status follows their rollout,
/// says why while the spec's revision is held, and records what became of
/// it; a failed rollout is rolled back when it can be (see
/// [`releases::record_rollout`]).
async fn report_applied(
    app: &App,
    context: &Context,
    target: &Target<'_>,
    memory: AppStatus,
    applied: Applied,
) -> Result<Action, Error> {
    let url = target.rendered.url.clone();
    let mut status =
        app_status(app, url, &applied.deployments, applied.waiting_for.clone()).remembering(memory);
    // Its workloads now carry the target's configuration.
    status.running_revision = Some(target.revision);
    let why = if let Some(held) = target.held {
        // The previous revision serves; the status says why.
        status.reason = Some(held_event(held).reason.to_owned());
        status.message = Some(held.message().to_owned());
        held_event(held)
    } else {
        let failed = (status.reason.as_deref() == Some(REASON_ROLLOUT_FAILED))
            .then(|| status.message.clone().unwrap_or_default());
        let recorded =
            releases::record_rollout(app, &context.client, &mut status, failed.as_deref()).await?;
        if recorded == Recorded::RolledBack {
            status.reason = Some(REASON_PROGRESSING.to_owned());
            report(app, context, status, ROLLED_BACK).await?;
            return Ok(Action::requeue(WHILE_PROGRESSING));
        }
        rollout_event(&status)
    };
    let progressing = matches!(
        status.reason.as_deref(),
        Some(REASON_PROGRESSING | REASON_RELEASING)
    );
    report(app, context, status, why).await?;
    Ok(Action::requeue(if applied.waiting_for.is_some() {
        WHILE_REPLACING_A_CLAIM
    } else if progressing {
        WHILE_PROGRESSING
    } else {
        RESYNC
    }))
}

/// The Event of a rollout's status.
fn rollout_event(status: &AppStatus) -> Reason {
    match status.reason.as_deref() {
        Some(REASON_AVAILABLE) => AVAILABLE,
        Some(REASON_SCHEDULED) => SCHEDULED,
        Some(REASON_ROLLOUT_FAILED) => ROLLOUT_FAILED,
        _ => PROGRESSING,
    }
}

/// Applying failed: the raw error for operators; the status and the Event
/// get a sentence.
async fn report_failure(
    app: &App,
    context: &Context,
    url: Option<String>,
    memory: AppStatus,
    failure: Failure,
) -> Result<Action, Error> {
    tracing::warn!(app = %named(app), object = %failure.object, error = %failure.error, "applying failed");
    // A refusal is the app's failure; a cluster that is briefly
    // unavailable is not, and is only retried. A namespace being
    // deleted refuses everything, Events too.
    if failure.is_refusal() && !namespace_terminating(&failure.error) {
        let message = failure.message();
        let status = failure_status(app, url, message.clone()).remembering(memory);
        // Best effort: the error is what gets retried.
        let _ = set_status(app, context, status).await;
        // Every refusal, not only the first: repeats are counted in one
        // Event (`crate::events`).
        context.events.publish(app, REFUSED, message).await;
    }
    Err(Error::Apply {
        object: failure.object,
        source: failure.error,
    })
}

/// An app built from source with no image yet: nothing runs (nothing is
/// rendered, so nothing is created), and its status says which build it
/// awaits, or why the latest failed.
async fn awaiting_build(app: &App, context: &Context) -> Result<Action, Error> {
    let uid = app.uid().unwrap_or_default();
    let latest = Api::<Build>::namespaced(context.client.clone(), BUILDS_NAMESPACE)
        .list(&ListParams::default().labels(&format!("{LABEL_APP_UID}={uid}")))
        .await?
        .items
        .into_iter()
        .max_by_key(|build| build.spec.number);
    let message = awaiting_message(latest.as_ref());
    let status = AppStatus {
        ready: false,
        reason: Some(REASON_AWAITING_BUILD.to_owned()),
        message: Some(message),
        url: None,
        observed_generation: app.metadata.generation,
        ..remembered(app)
    };
    report(app, context, status, AWAITING_BUILD).await?;
    // Its builds' changes are watched; a build's end wakes it.
    Ok(Action::requeue(RESYNC))
}

/// What an app awaiting its first image says, from its latest build.
pub fn awaiting_message(latest: Option<&Build>) -> String {
    let Some(build) = latest else {
        return "The app awaits its first build: nothing runs until one succeeds.".to_owned();
    };
    let number = build.spec.number;
    let said = build
        .status
        .as_ref()
        .and_then(|status| status.message.as_deref())
        .map(|message| format!(" {message}"))
        .unwrap_or_default();
    match build.phase() {
        BUILD_FAILED => {
            format!("The app awaits its first successful build: build {number} failed.{said}")
        }
        BUILD_CANCELLED => {
            format!("The app awaits its first successful build: build {number} was cancelled.")
        }
        BUILD_RUNNING => format!("The app awaits its first build: build {number} is running."),
        BUILD_SUCCEEDED => {
            format!("Build {number} succeeded; the app's revision with its image is on its way.")
        }
        _ => format!("The app awaits its first build: build {number} is queued."),
    }
}

/// Whether the App's namespace is one Berth renders into.
pub(crate) enum Namespace {
    /// Owned by Berth's Environment of that name (by uid).
    Berths,
    /// Berth's, but being deleted.
    Terminating,
    /// Not Berth's: why, for the App's status.
    Foreign(String),
}

/// Whether the App's namespace is the one its Berth Environment of that name
/// owns (by uid). Namespace and Environment are read at once.
pub(crate) async fn namespace_of(app: &App, context: &Context) -> Result<Namespace, Error> {
    let namespace = app.namespace().unwrap_or_default();
    let namespaces = Api::<K8sNamespace>::all(context.client.clone());
    let environments = Api::<Environment>::all(context.client.clone());
    let (found, environment) = tokio::join!(
        namespaces.get_opt(&namespace),
        environments.get_opt(&namespace)
    );
    Ok(match (found?, environment?) {
        (Some(found), Some(environment))
            if ownership::namespace_owner(&found, &environment)
                == NamespaceOwner::ThisEnvironment =>
        {
            if found.metadata.deletion_timestamp.is_some() {
                Namespace::Terminating
            } else {
                Namespace::Berths
            }
        }
        _ => Namespace::Foreign(format!(
            "Namespace {namespace} is not owned by Berth's environment {namespace}, so Berth applies nothing in it."
        )),
    })
}

/// What applying came to.
enum Outcome {
    Applied(Applied),
    /// Nothing more was applied: the App was deleted meanwhile (a claim it
    /// would have made would outlive it).
    Gone,
    /// Nothing was applied: a rendered name is someone else's.
    Blocked(Blocked),
}

/// What applying found out: the Deployments as they are now, and whether
/// something is still being waited for.
struct Applied {
    deployments: Vec<Deployment>,
    waiting_for: Option<String>,
}

/// Rendered names held by objects this App does not control.
struct Blocked {
    message: String,
    /// Only by objects of an earlier App of the same name, which the garbage
    /// collector is removing: wait, not fail.
    waiting: bool,
}

/// An object of a rendered name that this App does not control.
struct Taken {
    /// `Deployment shop-web`.
    object: String,
    /// Controlled by an earlier App of this name (another uid).
    earlier_app: bool,
}

impl Blocked {
    fn of(app: &App, taken: &[Taken]) -> Option<Self> {
        let names = |taken: &[&Taken]| -> String {
            let objects: Vec<&str> = taken.iter().map(|t| t.object.as_str()).collect();
            match objects.as_slice() {
                [] => String::new(),
                [one] => (*one).to_owned(),
                [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
            }
        };
        let foreign: Vec<&Taken> = taken.iter().filter(|t| !t.earlier_app).collect();
        if !foreign.is_empty() {
            let (verb, pronoun) = if foreign.len() == 1 {
                ("exists and belongs", "it")
            } else {
                ("exist and belong", "them")
            };
            return Some(Self {
                message: format!(
                    "{} {verb} to someone else; Berth leaves {pronoun} untouched and applies nothing of this app.",
                    names(&foreign)
                ),
                waiting: false,
            });
        }
        let earlier: Vec<&Taken> = taken.iter().collect();
        let (verb, pronoun) = if earlier.len() == 1 {
            ("belongs", "it")
        } else {
            ("belong", "them")
        };
        (!earlier.is_empty()).then(|| Self {
            message: format!(
                "{} still {verb} to an earlier app named {}, which is being removed; waiting for {pronoun} to go.",
                names(&earlier),
                app.name_any()
            ),
            waiting: true,
        })
    }
}

/// An object that could not be written, and why.
struct Failure {
    /// `Deployment shop-web`.
    object: String,
    error: kube::Error,
}

impl Failure {
    fn of<K: Resource<DynamicType = ()>>(name: &str) -> impl FnOnce(kube::Error) -> Self {
        let object = format!("{} {name}", K::kind(&()));
        move |error| Self { object, error }
    }

    /// Whether the cluster refused the object (a 4xx other than throttling),
    /// rather than failing to answer.
    fn is_refusal(&self) -> bool {
        matches!(&self.error, kube::Error::Api(status)
            if (400..500).contains(&status.code) && status.code != 429)
    }

    /// A plain sentence naming the object, for the App's status: tenants
    /// read it, so it never carries the cluster's own text (which can name
    /// Berth's identity and internals; the log has it). For an invalid object
    /// (422) it names the fields the apiserver refused.
    fn message(&self) -> String {
        match &self.error {
            kube::Error::Api(status) if status.code == 422 => {
                let fields: Vec<&str> = status
                    .details
                    .iter()
                    .flat_map(|details| &details.causes)
                    .map(|cause| cause.field.as_str())
                    .filter(|field| !field.is_empty())
                    .collect();
                if fields.is_empty() {
                    format!("{} was refused by the cluster as invalid.", self.object)
                } else {
                    format!(
                        "{} was refused by the cluster as invalid: {}.",
                        self.object,
                        fields.join(", ")
                    )
                }
            }
            kube::Error::Api(status) if status.code == 403 => format!(
                "{} could not be written: the cluster does not allow Berth to; an operator must fix its permissions.",
                self.object
            ),
            kube::Error::Api(status) if self.is_refusal() => format!(
                "{} could not be written: the cluster answered {}.",
                self.object, status.code
            ),
            _ => format!(
                "{} could not be reached in the cluster; retrying.",
                self.object
            ),
        }
    }
}

/// The objects of one kind in the app's namespace: those this App controls
/// (for claims: those it may write), and all others.
struct Kind<K: Resource> {
    api: Api<K>,
    ours: BTreeMap<String, K>,
    others: BTreeMap<String, K>,
    metrics: Arc<Metrics>,
}

impl<K> Kind<K>
where
    K: Resource<DynamicType = (), Scope = NamespaceResourceScope>
        + Clone
        + Debug
        + Serialize
        + DeserializeOwned,
{
    /// Every object of the kind in the namespace (no label selector: a
    /// foreign object of a rendered name must be seen), split by `is_ours`.
    async fn list(
        context: &Context,
        namespace: &str,
        is_ours: impl Fn(&K) -> bool,
    ) -> Result<Self, Failure> {
        let api: Api<K> = Api::namespaced(context.client.clone(), namespace);
        let (ours, others) = api
            .list(&ListParams::default())
            .await
            .map_err(|error| Failure {
                object: format!("the {} list", K::plural(&())),
                error,
            })?
            .items
            .into_iter()
            .map(|object| (object.name_any(), without_field_managers(object)))
            .partition(|(_, object)| is_ours(object));
        Ok(Self {
            api,
            ours,
            others,
            metrics: context.metrics.clone(),
        })
    }

    /// Those controlled by `app`, by uid.
    async fn controlled_by(context: &Context, app: &App, namespace: &str) -> Result<Self, Failure> {
        let uid = app.uid().unwrap_or_default();
        Self::list(context, namespace, |object| {
            ownership::is_controlled_by(object.meta(), &uid)
        })
        .await
    }

    /// Whether some of `rendered` is not yet the App's.
    fn lacks_any(&self, rendered: &[K]) -> bool {
        rendered
            .iter()
            .any(|object| !self.ours.contains_key(&object.name_any()))
    }

    /// The rendered objects whose names objects of others have.
    fn taken(&self, rendered: &[K], app: &App) -> Vec<Taken> {
        rendered
            .iter()
            .filter_map(|object| self.others.get(&object.name_any()))
            .map(|other| Taken {
                object: format!("{} {}", K::kind(&()), other.name_any()),
                earlier_app: ownership::controller(other.meta()).is_some_and(|owner| {
                    ownership::is_berth(owner, "App") && owner.name == app.name_any()
                }),
            })
            .collect()
    }

    async fn apply(&self, object: &K) -> Result<K, Failure> {
        let name = object.name_any();
        let applied = self
            .api
            .patch(
                &name,
                &PatchParams::apply(FIELD_MANAGER).force(),
                &Patch::Apply(object),
            )
            .await
            .map_err(Failure::of::<K>(&name))?;
        self.metrics.applied(&K::kind(&()));
        Ok(without_field_managers(applied))
    }

    /// Applies `objects` at once, in one round trip; the applied objects
    /// come back in their order.
    async fn apply_all(&self, objects: &[K]) -> Result<Vec<K>, Failure> {
        futures::future::try_join_all(objects.iter().map(|object| self.apply(object))).await
    }

    /// Deletes what the app no longer renders, of what it controls: each
    /// object only if it is still that very one.
    async fn prune(&self, rendered: &[K]) -> Result<(), Failure> {
        let keep: BTreeSet<String> = rendered.iter().map(ResourceExt::name_any).collect();
        for (name, object) in self.ours.iter().filter(|(name, _)| !keep.contains(*name)) {
            let only_this_one = DeleteParams {
                preconditions: Some(Preconditions {
                    uid: object.meta().uid.clone(),
                    resource_version: None,
                }),
                ..DeleteParams::background()
            };
            match self.api.delete(name, &only_this_one).await {
                Ok(_) => tracing::info!(kind = %K::kind(&()), %name, "removed"),
                Err(error) if is_not_found(&error) || is_conflict(&error) => {}
                Err(error) => return Err(Failure::of::<K>(name)(error)),
            }
        }
        Ok(())
    }
}

/// `object` without its `metadata.managedFields`, which nothing here reads.
/// Deserialized, the field managers' record is most of a Deployment's
/// memory, and a reconcile holds its namespace's objects across the writes
/// that follow (docs/benchmarks.md, "Controller at scale").
fn without_field_managers<K: Resource>(mut object: K) -> K {
    object.meta_mut().managed_fields = None;
    object
}

/// The claims of the namespace; this App's are those labelled with its uid
/// (and those [`adopt_left_claims`] adds).
async fn claims_of(
    context: &Context,
    app: &App,
    namespace: &str,
) -> Result<Kind<PersistentVolumeClaim>, Failure> {
    let uid = app.uid().unwrap_or_default();
    Kind::<PersistentVolumeClaim>::list(context, namespace, |claim| {
        claim.labels().get(LABEL_APP_UID) == Some(&uid)
    })
    .await
}

/// Makes the App's, of `claims`, those it renders of Berth's claims of this
/// app's name that an earlier App of that name left (their uid names no App
/// of the namespace, or they carry none): so an app deleted and created
/// again gets its volumes' data back.
async fn adopt_left_claims(
    context: &Context,
    app: &App,
    namespace: &str,
    rendered: &[PersistentVolumeClaim],
    claims: &mut Kind<PersistentVolumeClaim>,
) -> Result<(), Failure> {
    let name = app.name_any();
    let left: Vec<&PersistentVolumeClaim> = rendered
        .iter()
        .filter_map(|claim| claims.others.get(&claim.name_any()))
        .filter(|claim| {
            let labels = claim.labels();
            labels.get(LABEL_MANAGED_BY).map(String::as_str) == Some(MANAGER)
                && labels.get(LABEL_APP) == Some(&name)
        })
        .collect();
    if left.is_empty() {
        return Ok(());
    }
    let live: Vec<String> = if left
        .iter()
        .any(|claim| claim.labels().contains_key(LABEL_APP_UID))
    {
        Api::<App>::namespaced(context.client.clone(), namespace)
            .list_metadata(&ListParams::default())
            .await
            .map_err(|error| Failure {
                object: "the apps list".to_owned(),
                error,
            })?
            .items
            .iter()
            .filter_map(|app| app.metadata.uid.clone())
            .collect()
    } else {
        Vec::new()
    };
    let adopted: Vec<String> = left
        .iter()
        .filter(|claim| {
            claim
                .labels()
                .get(LABEL_APP_UID)
                .is_none_or(|owner| !live.contains(owner))
        })
        .map(|claim| claim.name_any())
        .collect();
    for name in adopted {
        if let Some(claim) = claims.others.remove(&name) {
            tracing::info!(app = %app.name_any(), claim = %name, "adopting a claim an earlier app of this name left");
            claims.ours.insert(name, claim);
        }
    }
    Ok(())
}

/// What the App's namespace holds of every kind an App renders: this App's
/// objects and all others.
struct Live {
    claims: Kind<PersistentVolumeClaim>,
    services: Kind<Service>,
    deployments: Kind<Deployment>,
    autoscalers: Kind<HorizontalPodAutoscaler>,
    cron_jobs: Kind<CronJob>,
    ingresses: Kind<Ingress>,
}

impl Live {
    /// Every kind listed at once: one round trip.
    async fn list(context: &Context, app: &App, namespace: &str) -> Result<Self, Failure> {
        let (claims, services, deployments, autoscalers, cron_jobs, ingresses) = tokio::try_join!(
            claims_of(context, app, namespace),
            Kind::controlled_by(context, app, namespace),
            Kind::controlled_by(context, app, namespace),
            Kind::controlled_by(context, app, namespace),
            Kind::controlled_by(context, app, namespace),
            Kind::controlled_by(context, app, namespace),
        )?;
        Ok(Self {
            claims,
            services,
            deployments,
            autoscalers,
            cron_jobs,
            ingresses,
        })
    }

    /// Whether applying `rendered` makes an object: a name the App does not
    /// hold yet, which another App of the namespace could be about to take.
    fn makes_an_object(&self, rendered: &Rendered, ingresses: &[Ingress]) -> bool {
        self.claims.lacks_any(&rendered.claims)
            || self.services.lacks_any(&rendered.services)
            || self.deployments.lacks_any(&rendered.deployments)
            || self.autoscalers.lacks_any(&rendered.autoscalers)
            || self.cron_jobs.lacks_any(&rendered.cron_jobs)
            || self.ingresses.lacks_any(ingresses)
    }
}

/// Applies what the App renders and prunes what it no longer does.
///
/// Two Apps of a namespace must never both find a name free and both take
/// it, so an App that makes an object (or adopts a claim an earlier App
/// left) does it in the namespace's turn (one App at a time), listing again
/// once it holds it. An App whose every rendered object is already its own
/// (a new image, a changed setting, a status moved on) takes no name and
/// needs no turn: the names it applies are taken in every other App's eyes,
/// and `listed` (read with the checks) is all it needs.
async fn apply_all(
    app: &App,
    rendered: &Rendered,
    context: &Context,
    listed: Result<Live, Failure>,
) -> Result<Outcome, Failure> {
    let namespace = app.namespace().unwrap_or_default();
    let rendered_ingresses: Vec<Ingress> = rendered.ingress.iter().cloned().collect();
    let listed = listed?;
    let (live, _turn) = if listed.makes_an_object(rendered, &rendered_ingresses) {
        // Not held while the namespace is listed again.
        drop(listed);
        let turn = context.namespace_turn(&namespace).await;
        let mut live = Live::list(context, app, &namespace).await?;
        adopt_left_claims(context, app, &namespace, &rendered.claims, &mut live.claims).await?;
        (live, Some(turn))
    } else {
        (listed, None)
    };
    let Live {
        claims,
        services,
        deployments,
        autoscalers,
        cron_jobs,
        ingresses,
    } = live;

    // Every name is looked at before anything is written.
    let mut taken = claims.taken(&rendered.claims, app);
    taken.extend(services.taken(&rendered.services, app));
    taken.extend(deployments.taken(&rendered.deployments, app));
    taken.extend(autoscalers.taken(&rendered.autoscalers, app));
    taken.extend(cron_jobs.taken(&rendered.cron_jobs, app));
    taken.extend(ingresses.taken(&rendered_ingresses, app));
    if let Some(blocked) = Blocked::of(app, &taken) {
        return Ok(Outcome::Blocked(blocked));
    }

    // A claim has no owner reference (it outlives its App), so nothing
    // would collect one made for an App deleted since this reconcile's
    // look (the cache can be behind): before making a claim, one read
    // confirms the App is still this one.
    if claims.lacks_any(&rendered.claims) && !still_exists(app, context).await? {
        return Ok(Outcome::Gone);
    }

    // Claims first: pods wait for the claims they mount.
    let mut waiting_for = None;
    for claim in &rendered.claims {
        if let ClaimOutcome::Replacing(name) = apply_claim(&claims, claim).await? {
            waiting_for = Some(format!(
                "PersistentVolumeClaim {name} is being replaced at its new size."
            ));
        }
    }
    for deployment in &rendered.deployments {
        prepare_strategy_change(&deployments, deployment).await?;
    }
    // Then every other object at once, one round trip: none waits for
    // another (a Service, an autoscaler or an Ingress finds its pods,
    // Deployment or Service whenever they come).
    let (_, live_deployments, _, _, _) = tokio::try_join!(
        services.apply_all(&rendered.services),
        deployments.apply_all(&rendered.deployments),
        autoscalers.apply_all(&rendered.autoscalers),
        cron_jobs.apply_all(&rendered.cron_jobs),
        ingresses.apply_all(&rendered_ingresses),
    )?;

    // Removed after the new objects are in place, so a renamed process's
    // Service never points nowhere in between.
    ingresses.prune(&rendered_ingresses).await?;
    autoscalers.prune(&rendered.autoscalers).await?;
    cron_jobs.prune(&rendered.cron_jobs).await?;
    deployments.prune(&rendered.deployments).await?;
    services.prune(&rendered.services).await?;
    Ok(Outcome::Applied(Applied {
        deployments: live_deployments,
        waiting_for,
    }))
}

/// Whether the App is still there, the same one (by uid): one read.
async fn still_exists(app: &App, context: &Context) -> Result<bool, Failure> {
    let api: Api<App> =
        Api::namespaced(context.client.clone(), &app.namespace().unwrap_or_default());
    let live = api
        .get_opt(&app.name_any())
        .await
        .map_err(Failure::of::<App>(&app.name_any()))?;
    Ok(live
        .is_some_and(|live| live.uid() == app.uid() && live.metadata.deletion_timestamp.is_none()))
}

/// A Deployment moving to `Recreate` must lose its `rollingUpdate`
/// parameters (set by the apiserver's defaults, not by us) in the same
/// write, or the apiserver refuses it.
async fn prepare_strategy_change(
    deployments: &Kind<Deployment>,
    rendered: &Deployment,
) -> Result<(), Failure> {
    let name = rendered.name_any();
    let wanted = rendered
        .spec
        .as_ref()
        .and_then(|spec| spec.strategy.as_ref())
        .and_then(|strategy| strategy.type_.as_deref());
    let live_has_rolling_parameters = deployments
        .ours
        .get(&name)
        .and_then(|live| live.spec.as_ref())
        .and_then(|spec| spec.strategy.as_ref())
        .is_some_and(|strategy| strategy.rolling_update.is_some());
    if wanted != Some("Recreate") || !live_has_rolling_parameters {
        return Ok(());
    }
    let patch = json!({ "spec": { "strategy": { "type": "Recreate", "rollingUpdate": null } } });
    deployments
        .api
        .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(Failure::of::<Deployment>(&name))?;
    Ok(())
}

enum ClaimOutcome {
    Applied,
    /// The claim is being deleted, to be made again at its new size.
    Replacing(String),
}

/// Applies a claim at the larger of its rendered and its current size.
async fn apply_claim(
    claims: &Kind<PersistentVolumeClaim>,
    rendered: &PersistentVolumeClaim,
) -> Result<ClaimOutcome, Failure> {
    let name = rendered.name_any();
    let Some(live) = claims.ours.get(&name) else {
        claims.apply(rendered).await?;
        return Ok(ClaimOutcome::Applied);
    };
    if live.metadata.deletion_timestamp.is_some() {
        return Ok(ClaimOutcome::Replacing(name));
    }
    let wanted = storage_request(rendered);
    let current = storage_request(live);
    let (Some(wanted), Some(current)) = (wanted, current) else {
        // Nothing to compare (a claim edited by hand): the rendered size.
        claims.apply(rendered).await?;
        return Ok(ClaimOutcome::Applied);
    };
    if wanted <= current {
        // Never shrink: keep the current request, as the cluster writes it.
        claims.apply(&with_storage(rendered, &current)).await?;
        return Ok(ClaimOutcome::Applied);
    }
    let bound = live
        .status
        .as_ref()
        .and_then(|status| status.phase.as_deref())
        == Some("Bound");
    if bound {
        claims.apply(rendered).await?;
        return Ok(ClaimOutcome::Applied);
    }
    // Unbound: its spec is immutable, and it holds no data. Only the claim
    // we looked at may go, not one made again meanwhile.
    let preconditions = DeleteParams {
        preconditions: Some(Preconditions {
            uid: live.metadata.uid.clone(),
            resource_version: live.metadata.resource_version.clone(),
        }),
        ..DeleteParams::background()
    };
    match claims.api.delete(&name, &preconditions).await {
        Ok(_) => {}
        // Gone already, or changed since it was read: look again next round.
        Err(error) if is_not_found(&error) || is_conflict(&error) => {}
        Err(error) => return Err(Failure::of::<PersistentVolumeClaim>(&name)(error)),
    }
    let still_there = claims
        .api
        .get_opt(&name)
        .await
        .map_err(Failure::of::<PersistentVolumeClaim>(&name))?;
    if still_there.is_some() {
        // Its protection finalizer goes once no scheduled pod uses it.
        return Ok(ClaimOutcome::Replacing(name));
    }
    claims.apply(rendered).await?;
    tracing::info!(claim = %name, "unbound claim replaced at its new size");
    Ok(ClaimOutcome::Applied)
}

fn storage_request(claim: &PersistentVolumeClaim) -> Option<Quantity> {
    let request = claim
        .spec
        .as_ref()?
        .resources
        .as_ref()?
        .requests
        .as_ref()?
        .get("storage")?;
    Quantity::parse(&request.0).ok()
}

fn with_storage(claim: &PersistentVolumeClaim, size: &Quantity) -> PersistentVolumeClaim {
    let mut claim = claim.clone();
    if let Some(requests) = claim
        .spec
        .as_mut()
        .and_then(|spec| spec.resources.as_mut())
        .and_then(|resources| resources.requests.as_mut())
    {
        requests.insert("storage".to_owned(), K8sQuantity(size.as_str().to_owned()));
    }
    claim
}

/// Where one Deployment's rollout stands.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Rollout {
    Done,
    Progressing(String),
    Failed(String),
}

/// Like `kubectl rollout status`: the spec observed, then the deadline, then
/// the replica counts.
fn rollout(deployment: &Deployment) -> Rollout {
    let name = deployment.name_any();
    let status = deployment.status.clone().unwrap_or_default();
    let generation = deployment.metadata.generation.unwrap_or(0);
    if status.observed_generation.unwrap_or(0) < generation {
        return Rollout::Progressing(format!(
            "Deployment {name} is rolling out: its new spec is not yet picked up."
        ));
    }
    let spec = deployment.spec.clone().unwrap_or_default();
    let deadline_exceeded = status.conditions.iter().flatten().any(|condition| {
        condition.type_ == "Progressing"
            && condition.reason.as_deref() == Some("ProgressDeadlineExceeded")
    });
    if deadline_exceeded {
        let deadline = spec
            .progress_deadline_seconds
            .map(|seconds| format!(" ({seconds} s)"))
            .unwrap_or_default();
        return Rollout::Failed(format!(
            "Deployment {name} made no progress within its deadline{deadline}: its pods did not become ready."
        ));
    }
    let desired = spec.replicas.unwrap_or(1);
    let updated = status.updated_replicas.unwrap_or(0);
    let total = status.replicas.unwrap_or(0);
    let available = status.available_replicas.unwrap_or(0);
    if updated < desired {
        Rollout::Progressing(format!(
            "Deployment {name} is rolling out: {updated} of {desired} replicas updated."
        ))
    } else if total > updated {
        Rollout::Progressing(format!(
            "Deployment {name} is rolling out: {} old replicas are still stopping.",
            total - updated
        ))
    } else if available < updated {
        Rollout::Progressing(format!(
            "Deployment {name} is rolling out: {available} of {updated} replicas available."
        ))
    } else {
        Rollout::Done
    }
}

/// The App's status from its Deployments as they are now (none: the app
/// only has scheduled processes) and what is still being waited for.
pub fn app_status(
    app: &App,
    url: Option<String>,
    deployments: &[Deployment],
    waiting_for: Option<String>,
) -> AppStatus {
    let status = |ready: bool, reason: &str, message: Option<String>| AppStatus {
        ready,
        reason: Some(reason.to_owned()),
        message,
        url: url.clone(),
        observed_generation: app.metadata.generation,
        ..remembered(app)
    };
    let rollouts: Vec<Rollout> = deployments.iter().map(rollout).collect();
    if let Some(message) = rollouts.iter().find_map(|rollout| match rollout {
        Rollout::Failed(message) => Some(message.clone()),
        _ => None,
    }) {
        return status(false, REASON_ROLLOUT_FAILED, Some(message));
    }
    if let Some(message) = waiting_for {
        return status(false, REASON_PROGRESSING, Some(message));
    }
    if let Some(message) = rollouts.iter().find_map(|rollout| match rollout {
        Rollout::Progressing(message) => Some(message.clone()),
        _ => None,
    }) {
        return status(false, REASON_PROGRESSING, Some(message));
    }
    if deployments.is_empty() {
        return status(true, REASON_SCHEDULED, None);
    }
    status(true, REASON_AVAILABLE, None)
}

/// The App's status when it cannot be rendered or applied.
pub fn failure_status(app: &App, url: Option<String>, message: String) -> AppStatus {
    AppStatus {
        ready: false,
        reason: Some(REASON_ROLLOUT_FAILED.to_owned()),
        message: Some(message),
        url,
        observed_generation: app.metadata.generation,
        ..remembered(app)
    }
}

/// Writes the status when it differs, and then publishes an Event of
/// `why`: one Event per change of the App's state.
async fn report(app: &App, context: &Context, status: AppStatus, why: Reason) -> Result<(), Error> {
    let note = event_note(&status);
    if set_status(app, context, status).await? {
        context.events.publish(app, why, note).await;
    }
    Ok(())
}

/// An Event's note: the status's message, or what a ready status means.
fn event_note(status: &AppStatus) -> String {
    if let Some(message) = &status.message {
        return message.clone();
    }
    match (status.reason.as_deref(), &status.url) {
        (Some(REASON_SCHEDULED), _) => "The app's scheduled processes are set up.".to_owned(),
        (_, Some(url)) => format!("Every process of the app is rolled out; it answers at {url}."),
        _ => "Every process of the app is rolled out.".to_owned(),
    }
}

/// Writes the status only when it differs, so writing it starts no new
/// round; whether it was written.
async fn set_status(app: &App, context: &Context, status: AppStatus) -> Result<bool, Error> {
    if app.status.as_ref() == Some(&status) {
        return Ok(false);
    }
    let api: Api<App> =
        Api::namespaced(context.client.clone(), &app.namespace().unwrap_or_default());
    // The whole status at once: a merge patch would keep the fields of a
    // remembered configuration that the new one no longer has.
    let patch: json_patch::Patch = serde_json::from_value(json!([
        { "op": "add", "path": "/status", "value": status }
    ]))?;
    match api
        .patch_status(
            &app.name_any(),
            &PatchParams::default(),
            &Patch::<()>::Json(patch),
        )
        .await
    {
        Ok(_) => {}
        // Deleted meanwhile: nothing to report to.
        Err(error) if is_not_found(&error) => return Ok(false),
        Err(error) => return Err(error.into()),
    }
    tracing::info!(
        app = %named(app),
        reason = %status.reason.as_deref().unwrap_or("none"),
        "status"
    );
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_domain::app::AppConfig;

    #[test]
    fn an_app_awaiting_its_first_build_says_how_its_latest_went() {
        use berth_cluster::crd::{BuildSpec, BuildStatus};
        use berth_domain::app::AppSource;
        assert_eq!(
            awaiting_message(None),
            "The app awaits its first build: nothing runs until one succeeds."
        );
        let mut build = Build::new(
            "store-prod.shop.3",
            BuildSpec {
                org: "acme".to_owned(),
                project: "store".to_owned(),
                environment: "prod".to_owned(),
                namespace: "store-prod".to_owned(),
                app: "shop".to_owned(),
                app_uid: "uid".to_owned(),
                number: 3,
                source: AppSource {
                    git_repo: "https://git.example.com/shop.git".to_owned(),
                    git_ref: None,
                    build: Default::default(),
                    git_secret: None,
                },
                actor: None,
                created_at: 1,
                decision: None,
                branch: None,
                hook: None,
                cancel: None,
            },
        );
        assert!(awaiting_message(Some(&build)).contains("build 3 is queued"));
        build.status = Some(BuildStatus {
            phase: Some(BUILD_FAILED.to_owned()),
            message: Some("The build failed: step source failed: repository not found".to_owned()),
            ..Default::default()
        });
        assert_eq!(
            awaiting_message(Some(&build)),
            "The app awaits its first successful build: build 3 failed. The build failed: step source failed: repository not found"
        );
    }
    use k8s_openapi::api::apps::v1::{DeploymentCondition, DeploymentSpec, DeploymentStatus};

    fn app() -> App {
        let mut app = App::test("shop", AppConfig::test(Vec::new()));
        app.metadata.generation = Some(4);
        app
    }

    fn deployment(
        name: &str,
        generation: i64,
        replicas: i32,
        status: DeploymentStatus,
    ) -> Deployment {
        Deployment {
            metadata: kube::api::ObjectMeta {
                name: Some(name.to_owned()),
                generation: Some(generation),
                ..Default::default()
            },
            spec: Some(DeploymentSpec {
                replicas: Some(replicas),
                progress_deadline_seconds: Some(600),
                ..Default::default()
            }),
            status: Some(status),
        }
    }

    fn rolled_out(replicas: i32) -> DeploymentStatus {
        DeploymentStatus {
            observed_generation: Some(2),
            replicas: Some(replicas),
            updated_replicas: Some(replicas),
            ready_replicas: Some(replicas),
            available_replicas: Some(replicas),
            ..Default::default()
        }
    }

    fn url() -> Option<String> {
        Some("https://shop.example.com".to_owned())
    }

    #[test]
    fn rolled_out_deployments_make_an_available_app() {
        let deployments = [
            deployment("shop-web", 2, 2, rolled_out(2)),
            deployment("shop-worker", 2, 1, rolled_out(1)),
        ];
        let status = app_status(&app(), url(), &deployments, None);
        assert_eq!(
            status,
            AppStatus {
                ready: true,
                reason: Some("Available".to_owned()),
                message: None,
                url: url(),
                observed_generation: Some(4),
                ..AppStatus::default()
            }
        );
    }

    #[test]
    fn a_stopped_process_is_rolled_out_at_zero() {
        let status = app_status(
            &app(),
            None,
            &[deployment(
                "shop-web",
                1,
                0,
                DeploymentStatus {
                    observed_generation: Some(1),
                    ..Default::default()
                },
            )],
            None,
        );
        assert_eq!(status.reason.as_deref(), Some("Available"));
    }

    #[test]
    fn a_rollout_in_progress_is_progressing() {
        let unobserved = deployment("shop-web", 3, 1, rolled_out(1));
        let status = app_status(&app(), url(), &[unobserved], None);
        assert!(!status.ready);
        assert_eq!(status.reason.as_deref(), Some("Progressing"));
        assert!(status.message.unwrap().contains("shop-web"));

        for partial in [
            DeploymentStatus {
                updated_replicas: Some(1),
                ..rolled_out(2)
            },
            DeploymentStatus {
                replicas: Some(3),
                ..rolled_out(2)
            },
            DeploymentStatus {
                available_replicas: Some(1),
                ..rolled_out(2)
            },
            DeploymentStatus {
                observed_generation: Some(2),
                ..Default::default()
            },
        ] {
            let status = app_status(
                &app(),
                url(),
                &[
                    deployment("shop-worker", 2, 1, rolled_out(1)),
                    deployment("shop-web", 2, 2, partial.clone()),
                ],
                None,
            );
            assert_eq!(status.reason.as_deref(), Some("Progressing"), "{partial:?}");
            assert!(!status.ready);
            assert!(status.message.unwrap().contains("shop-web"));
        }
    }

    #[test]
    fn an_exceeded_progress_deadline_is_a_failed_rollout() {
        let stuck = DeploymentStatus {
            conditions: Some(vec![DeploymentCondition {
                type_: "Progressing".to_owned(),
                status: "False".to_owned(),
                reason: Some("ProgressDeadlineExceeded".to_owned()),
                message: Some("ReplicaSet \"shop-web-5d\" has timed out progressing.".to_owned()),
                ..Default::default()
            }]),
            available_replicas: Some(0),
            ..rolled_out(1)
        };
        let status = app_status(
            &app(),
            url(),
            &[
                deployment("shop-worker", 2, 1, rolled_out(1)),
                deployment("shop-web", 2, 1, stuck),
            ],
            None,
        );
        assert!(!status.ready);
        assert_eq!(status.reason.as_deref(), Some("RolloutFailed"));
        let message = status.message.unwrap();
        assert!(message.contains("Deployment shop-web"), "{message}");
        assert!(message.contains("600 s"), "{message}");
        assert_eq!(status.url, url());
    }

    #[test]
    fn an_app_of_scheduled_processes_is_scheduled() {
        let status = app_status(&app(), None, &[], None);
        assert!(status.ready);
        assert_eq!(status.reason.as_deref(), Some("Scheduled"));
        assert_eq!(status.observed_generation, Some(4));
    }

    #[test]
    fn a_claim_being_replaced_keeps_the_app_progressing() {
        let status = app_status(
            &app(),
            None,
            &[deployment("shop-web", 2, 1, rolled_out(1))],
            Some("PersistentVolumeClaim shop-data is being replaced at its new size.".to_owned()),
        );
        assert_eq!(status.reason.as_deref(), Some("Progressing"));
        assert!(status.message.unwrap().contains("shop-data"));
    }

    fn taken(object: &str, earlier_app: bool) -> Taken {
        Taken {
            object: object.to_owned(),
            earlier_app,
        }
    }

    #[test]
    fn a_taken_name_blocks_the_app_and_says_which_object() {
        assert!(Blocked::of(&app(), &[]).is_none());
        let one = Blocked::of(&app(), &[taken("Deployment shop-web", false)]).unwrap();
        assert!(!one.waiting);
        assert_eq!(
            one.message,
            "Deployment shop-web exists and belongs to someone else; Berth leaves it untouched and applies nothing of this app."
        );
        let several = Blocked::of(
            &app(),
            &[
                taken("PersistentVolumeClaim shop-data", false),
                taken("Service shop-web", true),
                taken("Deployment shop-web", false),
            ],
        )
        .unwrap();
        assert!(!several.waiting, "someone else's object is not waited for");
        assert!(
            several.message.starts_with(
                "PersistentVolumeClaim shop-data and Deployment shop-web exist and belong to someone else"
            ),
            "{}",
            several.message
        );
        let earlier = Blocked::of(
            &app(),
            &[
                taken("Service shop-web", true),
                taken("Deployment shop-web", true),
            ],
        )
        .unwrap();
        assert!(earlier.waiting);
        assert_eq!(
            earlier.message,
            "Service shop-web and Deployment shop-web still belong to an earlier app named shop, which is being removed; waiting for them to go."
        );
    }

    #[test]
    fn failures_say_which_object_and_what_the_apiserver_refused() {
        let mut invalid = kube::core::Status::failure(
            "Deployment.apps \"shop-web\" is invalid: spec.template.spec.containers[0].image: Required value.",
            "Invalid",
        )
        .with_code(422);
        invalid.details = Some(kube::core::response::StatusDetails {
            causes: vec![kube::core::response::StatusCause {
                reason: "FieldValueRequired".into(),
                message: "Required value".into(),
                field: "spec.template.spec.containers[0].image".into(),
            }],
            name: "shop-web".into(),
            group: "apps".into(),
            kind: "deployments".into(),
            uid: String::new(),
            retry_after_seconds: 0,
        });
        let refused = Failure {
            object: "Deployment shop-web".to_owned(),
            error: kube::Error::Api(Box::new(invalid)),
        };
        assert_eq!(
            refused.message(),
            "Deployment shop-web was refused by the cluster as invalid: spec.template.spec.containers[0].image."
        );
        let forbidden = Failure {
            object: "Service shop-web".to_owned(),
            error: kube::Error::Api(Box::new(
                kube::core::Status::failure(
                    "services is forbidden: User \"system:serviceaccount:berth-system:berth-controller\" cannot create",
                    "Forbidden",
                )
                .with_code(403),
            )),
        };
        let message = forbidden.message();
        assert!(!message.contains("system:serviceaccount"), "{message}");
        assert!(
            message.starts_with("Service shop-web could not be written"),
            "{message}"
        );
        let unavailable = Failure {
            object: "Service shop-web".to_owned(),
            error: kube::Error::Api(Box::new(
                kube::core::Status::failure("etcdserver: leader changed", "InternalError")
                    .with_code(500),
            )),
        };
        let message = unavailable.message();
        assert!(
            message.starts_with("Service shop-web could not be reached"),
            "{message}"
        );
        assert!(refused.is_refusal() && !unavailable.is_refusal());
        assert!(!message.contains("etcd"), "{message}");

        let status = failure_status(&app(), None, refused.message());
        assert_eq!(status.reason.as_deref(), Some("RolloutFailed"));
        assert!(!status.ready);
    }
}
