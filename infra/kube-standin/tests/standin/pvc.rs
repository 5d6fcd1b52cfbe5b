//! PersistentVolumeClaims: `Pending` without a provisioner, and the resize rules of 1.33's
//! validation (only a bound claim's storage request may change; quantities compare by value).

use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::common::{TestEnv, api_status};

fn claim(name: &str, size: &str) -> PersistentVolumeClaim {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "standin-none",
            "resources": {"requests": {"storage": size}},
        }
    }))
    .unwrap()
}

/// The first cause of a refusal: its reason and field, which stay the same
/// across Kubernetes versions.
fn cause(refused: &kube::core::Status) -> (&str, &str) {
    let cause = refused
        .details
        .as_ref()
        .and_then(|details| details.causes.first())
        .unwrap_or_else(|| panic!("a refusal with causes: {refused:?}"));
    (cause.reason.as_str(), cause.field.as_str())
}

fn size(storage: &str) -> Patch<serde_json::Value> {
    Patch::Merge(json!({"spec": {"resources": {"requests": {"storage": storage}}}}))
}

#[tokio::test]
async fn an_unbound_claim_is_pending_and_cannot_be_resized() {
    let env = TestEnv::new().await;
    let claims: Api<PersistentVolumeClaim> = env.api();
    let created = claims
        .create(&PostParams::default(), &claim("data", "1Gi"))
        .await
        .unwrap();
    assert_eq!(created.status.unwrap().phase.as_deref(), Some("Pending"));

    let refused = api_status(
        claims
            .patch("data", &PatchParams::default(), &size("2Gi"))
            .await,
    );
    // By reason and field: the message's wording changes between Kubernetes
    // versions (1.28 says "except resources.requests for bound claims").
    assert_eq!((refused.code, refused.reason.as_str()), (422, "Invalid"));
    assert_eq!(cause(&refused), ("FieldValueForbidden", "spec"));

    // The same quantity in other units is no change.
    claims
        .patch("data", &PatchParams::default(), &size("1024Mi"))
        .await
        .unwrap();
}

/// Binding needs a PV controller and a volume: the test plays the binder, so it runs on the
/// stand-in only.
#[tokio::test]
#[cfg_attr(berth_real_cluster, ignore = "needs the stand-in's claim knob")]
async fn a_bound_claim_grows_but_does_not_shrink_below_its_capacity() {
    let env = TestEnv::standin_only().await;
    let claims: Api<PersistentVolumeClaim> = env.api();
    claims
        .create(&PostParams::default(), &claim("data", "1Gi"))
        .await
        .unwrap();
    let bound = json!({"status": {"phase": "Bound", "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"}}});
    claims
        .patch_status("data", &PatchParams::default(), &Patch::Merge(bound))
        .await
        .unwrap();

    let grown = claims
        .patch("data", &PatchParams::default(), &size("2Gi"))
        .await
        .unwrap();
    assert_eq!(
        grown.spec.unwrap().resources.unwrap().requests.unwrap()["storage"].0,
        "2Gi"
    );

    // Below (or at) the capacity the claim has: refused, whatever the units.
    for smaller in ["1Gi", "512Mi", "1073741824"] {
        let refused = api_status(
            claims
                .patch("data", &PatchParams::default(), &size(smaller))
                .await,
        );
        assert_eq!(refused.code, 422, "{smaller}");
        assert_eq!(
            cause(&refused),
            ("FieldValueForbidden", "spec.resources.requests.storage"),
            "{smaller}"
        );
    }
    // Above the capacity, back from a failed expansion: allowed (RecoverVolumeExpansionFailure).
    claims
        .patch("data", &PatchParams::default(), &size("1536Mi"))
        .await
        .unwrap();

    // Other parts of the spec stay immutable, bound or not.
    let refused = api_status(
        claims
            .patch(
                "data",
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"accessModes": ["ReadWriteMany"]}})),
            )
            .await,
    );
    assert_eq!(cause(&refused), ("FieldValueForbidden", "spec"));
}
