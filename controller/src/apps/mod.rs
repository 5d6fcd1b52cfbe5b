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

// A round's phases, each in its room: check and render here, then
// `apply` (and `claims`, the volumes), then `status` (what the round came to).
mod apply;
mod claims;
mod namespace;
mod status;

use std::ops::ControlFlow::{self, Break, Continue};
use std::sync::Arc;
use std::time::Duration;

use kube::ResourceExt;
use kube::runtime::controller::Action;

use berth_cluster::crd::App;
use berth_domain::certificate::{CertificateFinding, CertificateState};

use crate::certificates;
use crate::context::{Context, named};
use crate::error::Error;
use crate::events::Reason;
use crate::registry;
use crate::releases::{self, Held, Runs};
use crate::render::{self, CheckedApp, RenderError, RenderSettings, Rendered, render};
use apply::{Failure, Live, apply_all};
pub(crate) use namespace::{Namespace, namespace_of};
pub use status::{app_status, awaiting_message, failure_status};
use status::{awaiting_build, report, report_nothing_runs, report_status};

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

#[cfg(test)]
mod tests {
    use super::apply::{Blocked, Taken};
    use super::*;
    use berth_cluster::crd::{AppStatus, BUILD_FAILED, Build};
    use berth_domain::app::AppConfig;
    use k8s_openapi::api::apps::v1::Deployment;

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
