//! Claims: this App's PersistentVolumeClaims, those an earlier App of its
//! name left adopted, and claims grown (patched when bound, replaced when
//! nothing ever mounted them).

use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as K8sQuantity;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, Preconditions};

use berth_cluster::crd::{App, LABEL_APP, LABEL_APP_UID, LABEL_MANAGED_BY, MANAGER};
use berth_cluster::{is_conflict, is_not_found};
use berth_domain::size::Quantity;

use super::apply::{Failure, Kind};
use crate::context::Context;

/// The claims of the namespace; this App's are those labelled with its uid
/// (and those [`adopt_left_claims`] adds).
pub(super) async fn claims_of(
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
pub(super) async fn adopt_left_claims(
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

pub(super) enum ClaimOutcome {
    Applied,
    /// The claim is being deleted, to be made again at its new size.
    Replacing(String),
}

/// Applies a claim at the larger of its rendered and its current size.
pub(super) async fn apply_claim(
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

pub(super) fn storage_request(claim: &PersistentVolumeClaim) -> Option<Quantity> {
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

pub(super) fn with_storage(
    claim: &PersistentVolumeClaim,
    size: &Quantity,
) -> PersistentVolumeClaim {
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
