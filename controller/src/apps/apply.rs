//! Apply: what the App's namespace holds ([`Live`]), every rendered object
//! applied in the namespace's turn when it takes a name, what is no longer
//! rendered pruned; what applying came to ([`Outcome`]).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Debug;
use std::sync::Arc;

use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::batch::v1::CronJob;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Service};
use k8s_openapi::api::networking::v1::Ingress;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, Preconditions};
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;

use berth_cluster::crd::App;
use berth_cluster::ownership::{self};
use berth_cluster::{is_conflict, is_not_found};

use super::claims::{ClaimOutcome, adopt_left_claims, apply_claim, claims_of};
use crate::context::{Context, FIELD_MANAGER};
use crate::metrics::Metrics;
use crate::render::Rendered;

/// What applying came to.
pub(super) enum Outcome {
    Applied(Applied),
    /// Nothing more was applied: the App was deleted meanwhile (a claim it
    /// would have made would outlive it).
    Gone,
    /// Nothing was applied: a rendered name is someone else's.
    Blocked(Blocked),
}

/// What applying found out: the Deployments as they are now, and whether
/// something is still being waited for.
pub(super) struct Applied {
    pub(super) deployments: Vec<Deployment>,
    pub(super) waiting_for: Option<String>,
}

/// Rendered names held by objects this App does not control.
pub(super) struct Blocked {
    pub(super) message: String,
    /// Only by objects of an earlier App of the same name, which the garbage
    /// collector is removing: wait, not fail.
    pub(super) waiting: bool,
}

/// An object of a rendered name that this App does not control.
pub(super) struct Taken {
    /// `Deployment shop-web`.
    pub(super) object: String,
    /// Controlled by an earlier App of this name (another uid).
    pub(super) earlier_app: bool,
}

impl Blocked {
    pub(super) fn of(app: &App, taken: &[Taken]) -> Option<Self> {
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
pub(super) struct Failure {
    /// `Deployment shop-web`.
    pub(super) object: String,
    pub(super) error: kube::Error,
}

impl Failure {
    pub(super) fn of<K: Resource<DynamicType = ()>>(
        name: &str,
    ) -> impl FnOnce(kube::Error) -> Self {
        let object = format!("{} {name}", K::kind(&()));
        move |error| Self { object, error }
    }

    /// Whether the cluster refused the object (a 4xx other than throttling),
    /// rather than failing to answer.
    pub(super) fn is_refusal(&self) -> bool {
        matches!(&self.error, kube::Error::Api(status)
            if (400..500).contains(&status.code) && status.code != 429)
    }

    /// A plain sentence naming the object, for the App's status: tenants
    /// read it, so it never carries the cluster's own text (which can name
    /// Berth's identity and internals; the log has it). For an invalid object
    /// (422) it names the fields the apiserver refused.
    pub(super) fn message(&self) -> String {
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
pub(super) struct Kind<K: Resource> {
    pub(super) api: Api<K>,
    pub(super) ours: BTreeMap<String, K>,
    pub(super) others: BTreeMap<String, K>,
    pub(super) metrics: Arc<Metrics>,
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
    pub(super) async fn list(
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
    pub(super) async fn controlled_by(
        context: &Context,
        app: &App,
        namespace: &str,
    ) -> Result<Self, Failure> {
        let uid = app.uid().unwrap_or_default();
        Self::list(context, namespace, |object| {
            ownership::is_controlled_by(object.meta(), &uid)
        })
        .await
    }

    /// Whether some of `rendered` is not yet the App's.
    pub(super) fn lacks_any(&self, rendered: &[K]) -> bool {
        rendered
            .iter()
            .any(|object| !self.ours.contains_key(&object.name_any()))
    }

    /// The rendered objects whose names objects of others have.
    pub(super) fn taken(&self, rendered: &[K], app: &App) -> Vec<Taken> {
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

    pub(super) async fn apply(&self, object: &K) -> Result<K, Failure> {
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
    pub(super) async fn apply_all(&self, objects: &[K]) -> Result<Vec<K>, Failure> {
        futures::future::try_join_all(objects.iter().map(|object| self.apply(object))).await
    }

    /// Deletes what the app no longer renders, of what it controls: each
    /// object only if it is still that very one.
    pub(super) async fn prune(&self, rendered: &[K]) -> Result<(), Failure> {
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
pub(super) fn without_field_managers<K: Resource>(mut object: K) -> K {
    object.meta_mut().managed_fields = None;
    object
}

/// What the App's namespace holds of every kind an App renders: this App's
/// objects and all others.
pub(super) struct Live {
    pub(super) claims: Kind<PersistentVolumeClaim>,
    pub(super) services: Kind<Service>,
    pub(super) deployments: Kind<Deployment>,
    pub(super) autoscalers: Kind<HorizontalPodAutoscaler>,
    pub(super) cron_jobs: Kind<CronJob>,
    pub(super) ingresses: Kind<Ingress>,
}

impl Live {
    /// Every kind listed at once: one round trip.
    pub(super) async fn list(
        context: &Context,
        app: &App,
        namespace: &str,
    ) -> Result<Self, Failure> {
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
    pub(super) fn makes_an_object(&self, rendered: &Rendered, ingresses: &[Ingress]) -> bool {
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
pub(super) async fn apply_all(
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
pub(super) async fn still_exists(app: &App, context: &Context) -> Result<bool, Failure> {
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
pub(super) async fn prepare_strategy_change(
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
