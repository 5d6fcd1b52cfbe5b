//! What Berth's two identities may do in an environment's namespace beyond
//! their cluster-wide roles: read its secrets. RBAC grants a read either
//! everywhere or in a namespace, so each environment's namespace gets two
//! RoleBindings when it is provisioned (and again at each resync, so an
//! installation from before them gets them, and a changed one is put back):
//!
//! - `berth-api` → ClusterRole `berth-api-environment` (its secrets: the
//!   API lists, reads, writes and deletes them) → ServiceAccount
//!   `berth-system/berth-api`;
//! - `berth-controller` → ClusterRole `berth-controller-environment` (get
//!   secrets: an app's git secret, when a build starts) →
//!   `berth-system/berth-controller`.
//!
//! The controller may bind only these two roles (`bind` on them), and the
//! admission policy `berth-owned-namespaces` (`infra/k8s/admission.yaml`)
//! only in environments' namespaces and each to its own ServiceAccount.

use k8s_openapi::api::rbac::v1::RoleBinding;
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};

use berth_cluster::crd::{LABEL_MANAGED_BY, MANAGER};

use crate::context::{Context, FIELD_MANAGER};
use crate::error::Error;

/// The namespace of Berth's ServiceAccounts (`infra/k8s`).
const SYSTEM_NAMESPACE: &str = "berth-system";

/// (RoleBinding and ServiceAccount, ClusterRole) of each identity.
pub const BINDINGS: [(&str, &str); 2] = [
    ("berth-api", "berth-api-environment"),
    ("berth-controller", "berth-controller-environment"),
];

fn binding(account: &str, role: &str) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": { "name": account, "labels": { LABEL_MANAGED_BY: MANAGER } },
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": role,
        },
        "subjects": [{
            "kind": "ServiceAccount",
            "name": account,
            "namespace": SYSTEM_NAMESPACE,
        }],
    })
}

/// Applies both RoleBindings in an environment's namespace.
pub async fn apply(context: &Context, namespace: &str) -> Result<(), Error> {
    let api = Api::<RoleBinding>::namespaced(context.client.clone(), namespace);
    let params = PatchParams::apply(FIELD_MANAGER).force();
    for (account, role) in BINDINGS {
        api.patch(account, &params, &Patch::Apply(&binding(account, role)))
            .await?;
        context.metrics.applied("RoleBinding");
    }
    Ok(())
}
