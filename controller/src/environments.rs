//! `Environment` → namespace `{project}-{environment}` with Berth's labels and
//! Pod Security Admission's, the RoleBindings of Berth's identities in it
//! ([`crate::grants`]), a ResourceQuota from `quota` (storage always
//! bounded), a default LimitRange, the NetworkPolicy that keeps other
//! namespaces' pods out ([`crate::isolation`]) and the registry's pull
//! credential ([`crate::registry`]: the environment's own, its digest in
//! the status); status `Pending` →
//! `Ready` (or `Degraded` with a message); at `deletionScheduledAt`,
//! `Terminating` while the namespace goes, then the resource itself.
//!
//! The controller only ever touches a namespace it created: one whose
//! controller owner reference is this Environment, by uid. A namespace of
//! that name that exists without it (`kube-system`, another tenant's, an
//! earlier environment's) is left exactly as it is — no labels, quota or
//! limits applied, never deleted — and the environment shows `Degraded`.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{LimitRange, Namespace, ResourceQuota};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use kube::runtime::controller::Action;
use kube::{Resource, ResourceExt};
use serde_json::json;

use berth_cluster::crd::{
    Environment, EnvironmentStatus, LABEL_ENVIRONMENT, LABEL_MANAGED_BY, LABEL_ORG, LABEL_PROJECT,
    MANAGER, PHASE_TERMINATING,
};
use berth_cluster::ownership::{self, NamespaceOwner};
use berth_cluster::{is_conflict, is_not_found};

use crate::context::{Context, FIELD_MANAGER};
use crate::error::Error;
use crate::events::Reason;
use crate::grants;
use crate::isolation;
use crate::registry;

pub const QUOTA_NAME: &str = "berth-quota";
pub const LIMIT_RANGE_NAME: &str = "berth-defaults";
/// How often a provisioned environment is looked at again, to repair drift.
const RESYNC: Duration = Duration::from_secs(300);

// The Events of an Environment (`kubectl describe environment NAME`).
const NAMESPACE_CREATED: Reason = Reason::normal("NamespaceCreated", "Provision");
const PROVISIONED: Reason = Reason::normal("Provisioned", "Provision");
const QUOTA_APPLIED: Reason = Reason::normal("QuotaApplied", "Provision");
const NAMESPACE_TERMINATING: Reason = Reason::warning("NamespaceTerminating", "Provision");
const NAMESPACE_NOT_BERTHS: Reason = Reason::warning("NamespaceNotBerths", "Provision");
const EARLIER_NAMESPACE: Reason = Reason::normal("WaitingForEarlierNamespace", "Provision");
const PROVISIONING_FAILED: Reason = Reason::warning("ProvisioningFailed", "Provision");
const PURGING: Reason = Reason::normal("Purging", "Purge");
const PURGED: Reason = Reason::normal("Purged", "Purge");
const PURGE_FAILED: Reason = Reason::warning("PurgeFailed", "Purge");

pub async fn reconcile(
    environment: Arc<Environment>,
    context: Arc<Context>,
) -> Result<Action, Error> {
    let name = environment.name_any();
    let result = reconcile_inner(&environment, &context).await;
    match &result {
        Ok(_) => {}
        // A failed purge says so itself, and stays `Terminating`: an
        // environment half purged must never look restorable.
        Err(error) if purge_due(&environment) => {
            tracing::warn!(environment = %name, error = %error, "purge failed");
            context
                .events
                .publish(environment.as_ref(), PURGE_FAILED, error.tenant_message())
                .await;
        }
        Err(error) => {
            tracing::warn!(environment = %name, error = %error, "provisioning failed");
            let why = match error {
                Error::NamespaceNotManaged(_) => NAMESPACE_NOT_BERTHS,
                Error::NamespaceOfEarlierEnvironment(_) => EARLIER_NAMESPACE,
                _ => PROVISIONING_FAILED,
            };
            context
                .events
                .publish(environment.as_ref(), why, error.tenant_message())
                .await;
            let degraded = EnvironmentStatus {
                phase: Some("Degraded".into()),
                ready: false,
                message: Some(error.tenant_message()),
                ..current_status(&environment)
            };
            // Best effort: the error is what gets retried.
            let _ = set_status(&environment, &context, degraded).await;
        }
    }
    result
}

fn current_status(environment: &Environment) -> EnvironmentStatus {
    environment.status.clone().unwrap_or_default()
}

fn purge_at(environment: &Environment) -> Result<Option<i64>, Error> {
    environment
        .spec
        .deletion_scheduled_at
        .as_deref()
        .map(|at| {
            berth_domain::clock::parse_rfc3339(at).ok_or_else(|| Error::BadSchedule(at.to_owned()))
        })
        .transpose()
}

fn purge_due(environment: &Environment) -> bool {
    purge_at(environment)
        .ok()
        .flatten()
        .is_some_and(|at| at <= berth_domain::clock::unix_seconds())
}

async fn reconcile_inner(environment: &Environment, context: &Context) -> Result<Action, Error> {
    if environment.metadata.deletion_timestamp.is_some() {
        // Deleted directly: the namespace it owns goes with it.
        return Ok(Action::await_change());
    }
    let mut requeue = RESYNC;
    if let Some(at) = purge_at(environment)? {
        let now = berth_domain::clock::unix_seconds();
        if at <= now {
            return purge(environment, context).await;
        }
        requeue = requeue.min(Duration::from_secs((at - now).unsigned_abs()));
    }
    if current_status(environment).phase.is_none() {
        let pending = EnvironmentStatus {
            phase: Some("Pending".into()),
            ..current_status(environment)
        };
        set_status(environment, context, pending).await?;
    }
    let namespace = environment.name_any();
    // The namespace every environment admits traffic from is never a
    // tenant's: the API refuses the name, and an Environment made past it
    // (written to the cluster directly) gets no namespace (issue 46).
    if namespace == context.settings.ingress_namespace {
        let degraded = EnvironmentStatus {
            phase: Some("Degraded".into()),
            ready: false,
            message: Some(format!(
                "namespace {namespace} is the ingress controller's (BERTH_INGRESS_NAMESPACE): \
                 no environment may have it"
            )),
            ..current_status(environment)
        };
        set_status(environment, context, degraded).await?;
        return Ok(Action::await_change());
    }
    // A namespace whose deletion begins while it is provisioned refuses the
    // writes still to come: the same wait as for one seen being deleted.
    let provisioned = match provision(environment, context).await {
        Err(error) if error.is_namespace_terminating() => Provisioned::NamespaceTerminating,
        provisioned => provisioned?,
    };
    match provisioned {
        Provisioned::Applied => {}
        Provisioned::Created => {
            let note = format!(
                "Namespace {namespace} created for environment {} of project {}.",
                environment.spec.name, environment.spec.project
            );
            context
                .events
                .publish(environment, NAMESPACE_CREATED, note)
                .await;
        }
        Provisioned::NamespaceTerminating => {
            let message = format!(
                "namespace {namespace} is being deleted; Berth makes it again once it has gone"
            );
            let degraded = EnvironmentStatus {
                phase: Some("Degraded".into()),
                ready: false,
                message: Some(message.clone()),
                ..current_status(environment)
            };
            set_status(environment, context, degraded).await?;
            context
                .events
                .publish(environment, NAMESPACE_TERMINATING, message)
                .await;
            // Its deletion is a change of the namespace this controller
            // owns, which wakes it; writing into it meanwhile is refused.
            return Ok(Action::await_change());
        }
    }
    let registry_pull_digest = pull_credential(environment, context, &namespace).await?;
    let ready = EnvironmentStatus {
        phase: Some("Ready".into()),
        ready: true,
        message: None,
        namespace: Some(namespace.clone()),
        observed_generation: environment.metadata.generation,
        registry_pull_digest,
    };
    let before = current_status(environment);
    if set_status(environment, context, ready).await? {
        if !before.ready {
            let note = format!(
                "Namespace {namespace} is ready, with its quota, default limits and network isolation."
            );
            context.events.publish(environment, PROVISIONED, note).await;
        } else if before.observed_generation != environment.metadata.generation {
            let note = format!(
                "The environment's quota is applied to namespace {namespace} (generation {}).",
                environment.metadata.generation.unwrap_or_default()
            );
            context
                .events
                .publish(environment, QUOTA_APPLIED, note)
                .await;
        }
    }
    Ok(Action::requeue(requeue))
}

/// What provisioning came to.
enum Provisioned {
    /// The namespace was made, and everything applied in it.
    Created,
    /// The namespace was there already; everything applied again.
    Applied,
    /// The namespace is this environment's but being deleted: nothing was
    /// written, or the apiserver refused the rest.
    NamespaceTerminating,
}

/// Whether `namespace` is this environment's: its controller owner
/// reference names the Environment by uid.
fn owned_by(namespace: &Namespace, environment: &Environment) -> bool {
    ownership::namespace_owner(namespace, environment) == NamespaceOwner::ThisEnvironment
}

/// Why a namespace of the environment's name is not its own, in words a
/// tenant can read.
fn not_ours(namespace: &Namespace, environment: &Environment) -> Error {
    let name = environment.name_any();
    match ownership::namespace_owner(namespace, environment) {
        NamespaceOwner::EarlierEnvironment => Error::NamespaceOfEarlierEnvironment(name),
        _ => Error::NamespaceNotManaged(name),
    }
}

async fn provision(environment: &Environment, context: &Context) -> Result<Provisioned, Error> {
    let namespace_name = environment.name_any();
    let namespaces = Api::<Namespace>::all(context.client.clone());
    // Look before applying: server-side apply would adopt whatever namespace
    // has this name. A missing one is created (which fails if someone else
    // makes it first), an owned one is applied to repair drift.
    let existing = namespaces.get_opt(&namespace_name).await?;
    if let Some(namespace) = &existing
        && !owned_by(namespace, environment)
    {
        return Err(not_ours(namespace, environment));
    }
    if existing
        .as_ref()
        .is_some_and(|namespace| namespace.metadata.deletion_timestamp.is_some())
    {
        return Ok(Provisioned::NamespaceTerminating);
    }
    let owner = environment
        .controller_owner_ref(&())
        .into_iter()
        .collect::<Vec<_>>();
    let mut labels = json!({
        LABEL_ORG: environment.spec.org,
        LABEL_PROJECT: environment.spec.project,
        LABEL_ENVIRONMENT: environment.spec.name,
        LABEL_MANAGED_BY: MANAGER,
        "berth.dev/env-type": environment.spec.env_type.as_str(),
    });
    for (label, level) in isolation::POD_SECURITY_LABELS {
        labels[label] = json!(level);
    }
    let apply = PatchParams::apply(FIELD_MANAGER).force();
    let namespace = json!({
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": { "name": namespace_name, "labels": labels, "ownerReferences": owner },
    });
    if existing.is_none() {
        let new: Namespace = serde_json::from_value(namespace)?;
        match namespaces.create(&PostParams::default(), &new).await {
            Ok(_) => {}
            Err(error) if is_conflict(&error) => {
                // Made by someone else since the look: it is theirs.
                return Err(match namespaces.get_opt(&namespace_name).await? {
                    Some(namespace) => not_ours(&namespace, environment),
                    None => Error::Kube(error),
                });
            }
            Err(error) => return Err(error.into()),
        }
    } else {
        namespaces
            .patch(&namespace_name, &apply, &Patch::Apply(&namespace))
            .await?;
    }
    context.metrics.applied("Namespace");

    // First, so that they are in place (and a real apiserver's authorizer
    // has learnt them) by the time the environment is Ready: the API reads
    // and writes its secrets through them.
    grants::apply(context, &namespace_name).await?;

    // Every environment has a quota: its storage is bounded even when it
    // asks for nothing.
    let resource_quota = json!({
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": { "name": QUOTA_NAME, "labels": { LABEL_MANAGED_BY: MANAGER } },
        "spec": { "hard": isolation::quota_hard(environment.spec.quota.as_ref()) },
    });
    Api::<ResourceQuota>::namespaced(context.client.clone(), &namespace_name)
        .patch(QUOTA_NAME, &apply, &Patch::Apply(&resource_quota))
        .await?;
    context.metrics.applied("ResourceQuota");
    let policy = isolation::network_policy(&namespace_name, &context.settings.ingress_namespace);
    Api::<NetworkPolicy>::namespaced(context.client.clone(), &namespace_name)
        .patch(
            isolation::NETWORK_POLICY_NAME,
            &apply,
            &Patch::Apply(&policy),
        )
        .await?;
    context.metrics.applied("NetworkPolicy");
    // Where the apps' pods may connect to, when the operator closes it
    // (`BERTH_APP_EGRESS=restricted`): as builds, and their own namespace.
    if context.settings.egress.apps {
        let egress = context.settings.egress.policy(&namespace_name, true);
        Api::<NetworkPolicy>::namespaced(context.client.clone(), &namespace_name)
            .patch(crate::egress::POLICY_NAME, &apply, &Patch::Apply(&egress))
            .await?;
        context.metrics.applied("NetworkPolicy");
    }

    // Defaults, so that pods without requests and limits still fit a quota.
    let limit_range = json!({
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": { "name": LIMIT_RANGE_NAME, "labels": { LABEL_MANAGED_BY: MANAGER } },
        "spec": { "limits": [{
            "type": "Container",
            "default": { "cpu": "500m", "memory": "512Mi" },
            "defaultRequest": { "cpu": "100m", "memory": "128Mi" },
        }]},
    });
    Api::<LimitRange>::namespaced(context.client.clone(), &namespace_name)
        .patch(LIMIT_RANGE_NAME, &apply, &Patch::Apply(&limit_range))
        .await?;
    context.metrics.applied("LimitRange");

    Ok(if existing.is_none() {
        Provisioned::Created
    } else {
        Provisioned::Applied
    })
}

/// The pull credential of the images Berth builds, in the namespace (kept
/// in step at each resync): with a scoped registry the environment's own,
/// whose digest (answered) the status must hold; with a shared one, a copy
/// of the installation's (no digest: no credential of the environment's
/// own works then).
async fn pull_credential(
    environment: &Environment,
    context: &Context,
    namespace: &str,
) -> Result<Option<String>, Error> {
    match registry::read(&context.client).await? {
        Some(settings) if settings.credentials == registry::CredentialMode::Scoped => {
            let current = current_status(environment).registry_pull_digest;
            registry::keep_environment_credential(
                &context.client,
                environment,
                namespace,
                &settings,
                current.as_deref(),
            )
            .await
            .map(Some)
        }
        _ => {
            registry::copy_pull_secret(&context.client, namespace).await?;
            Ok(None)
        }
    }
}

/// Marks the environment `Terminating`, then deletes the namespace, waits
/// until it is gone, and deletes the resource. The mark is written on the
/// resourceVersion read, and a restore clears the schedule on the version it
/// read: of a purge and a restore racing, exactly one wins. A restore that
/// won makes the mark's write fail, and the next look finds nothing to purge;
/// once the mark is there, a restore is refused.
async fn purge(environment: &Environment, context: &Context) -> Result<Action, Error> {
    let terminating = EnvironmentStatus {
        phase: Some(PHASE_TERMINATING.into()),
        ready: false,
        message: None,
        ..current_status(environment)
    };
    if environment.status.as_ref().and_then(|s| s.phase.as_deref()) != Some(PHASE_TERMINATING) {
        match write_status(
            environment,
            context,
            &terminating,
            environment.resource_version(),
        )
        .await
        {
            Ok(()) => {
                let note = format!(
                    "The environment's deletion is due: namespace {} and everything in it are deleted.",
                    environment.name_any()
                );
                context.events.publish(environment, PURGING, note).await;
            }
            Err(Error::Kube(error)) if is_conflict(&error) => {
                return Ok(Action::requeue(Duration::from_secs(1)));
            }
            Err(error) => return Err(error),
        }
    }
    match remove(environment, context).await {
        Ok(action) => Ok(action),
        Err(error) => {
            let failing = EnvironmentStatus {
                message: Some(error.tenant_message()),
                ..terminating
            };
            // Best effort: the error is what gets retried.
            let _ = write_status(environment, context, &failing, None).await;
            Err(error)
        }
    }
}

async fn remove(environment: &Environment, context: &Context) -> Result<Action, Error> {
    let name = environment.name_any();
    let namespaces: Api<Namespace> = Api::all(context.client.clone());
    // Only a namespace this environment owns goes, and only that very one
    // (the uid precondition): a foreign namespace of the same name stays.
    if let Some(namespace) = namespaces.get_opt(&name).await?
        && owned_by(&namespace, environment)
    {
        let only_this_one = DeleteParams {
            preconditions: Some(Preconditions {
                uid: namespace.metadata.uid.clone(),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        match namespaces.delete(&name, &only_this_one).await {
            Ok(_) => {}
            // Gone, or replaced by another namespace since the look: not ours.
            Err(error) if is_not_found(&error) || is_conflict(&error) => {}
            Err(error) => return Err(error.into()),
        }
        if namespaces
            .get_opt(&name)
            .await?
            .is_some_and(|namespace| owned_by(&namespace, environment))
        {
            return Ok(Action::requeue(Duration::from_secs(2)));
        }
    }
    let note = format!("Namespace {name} has gone; the environment is removed.");
    context.events.publish(environment, PURGED, note).await;
    match Api::<Environment>::all(context.client.clone())
        .delete(&name, &DeleteParams::default())
        .await
    {
        Ok(_) => {}
        Err(error) if is_not_found(&error) => {}
        Err(error) => return Err(error.into()),
    }
    tracing::info!(environment = %name, "purged");
    Ok(Action::await_change())
}

/// Writes the status only when it differs, so writing it starts no new
/// round; whether it was written.
async fn set_status(
    environment: &Environment,
    context: &Context,
    status: EnvironmentStatus,
) -> Result<bool, Error> {
    if environment.status.as_ref() == Some(&status) {
        return Ok(false);
    }
    write_status(environment, context, &status, None).await?;
    Ok(true)
}

/// Writes the status; with `resource_version`, only onto that version of the
/// environment (a conflict otherwise).
async fn write_status(
    environment: &Environment,
    context: &Context,
    status: &EnvironmentStatus,
    resource_version: Option<String>,
) -> Result<(), Error> {
    let api: Api<Environment> = Api::all(context.client.clone());
    // Explicit nulls: a merge patch only removes the fields it names.
    let mut patch = json!({
        "status": {
            "phase": status.phase,
            "ready": status.ready,
            "message": status.message,
            "namespace": status.namespace,
            "observedGeneration": status.observed_generation,
            "registryPullDigest": status.registry_pull_digest,
        },
    });
    if let Some(version) = resource_version {
        patch["metadata"] = json!({ "resourceVersion": version });
    }
    api.patch_status(
        &environment.name_any(),
        &PatchParams::default(),
        &Patch::Merge(patch),
    )
    .await?;
    tracing::info!(
        environment = %environment.name_any(),
        phase = %status.phase.as_deref().unwrap_or("none"),
        "status"
    );
    Ok(())
}
