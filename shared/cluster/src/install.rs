//! Installs Berth's CRDs into a cluster (`berth-admin cluster install`), and
//! the checks that refuse a cluster where Berth's identities would not be
//! held to what Berth owns (no ValidatingAdmissionPolicy, or Berth's policy
//! not in force).

use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::{conditions, wait::await_condition};

use super::crd;
use crate::ClusterError;

/// Applies the CRDs (server-side apply, so re-running updates them) and waits
/// until the API server serves them.
pub async fn install_crds(client: &kube::Client) -> Result<Vec<String>, ClusterError> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let params = PatchParams::apply(crd::MANAGER).force();
    let mut names = Vec::new();
    for definition in crd::definitions() {
        let name = definition.metadata.name.clone().unwrap_or_default();
        api.patch(&name, &params, &Patch::Apply(&definition))
            .await?;
        names.push(name);
    }
    for name in &names {
        let established = await_condition(api.clone(), name, conditions::is_crd_established());
        match tokio::time::timeout(Duration::from_secs(30), established).await {
            Ok(Ok(_)) => {}
            Ok(Err(error)) => return Err(ClusterError::Unavailable(error.to_string())),
            Err(_) => {
                return Err(ClusterError::Unavailable(format!(
                    "CRD {name} was not established within 30 s"
                )));
            }
        }
    }
    Ok(names)
}

/// What a cluster older than 1.30 needs for Berth, said wherever Berth
/// refuses to go on without its admission policy.
pub const ADMISSION_POLICY_NEEDED: &str = "Berth needs ValidatingAdmissionPolicy to hold its \
     identities to the namespaces it owns: Kubernetes 1.30 or later; on 1.28 and 1.29 start \
     kube-apiserver with --feature-gates=ValidatingAdmissionPolicy=true and \
     --runtime-config=admissionregistration.k8s.io/v1beta1=true, and install with the component \
     infra/k8s/admission-v1beta1 (docs/deploy.md, Supported Kubernetes versions)";

/// Refuses a cluster that serves no ValidatingAdmissionPolicy (at
/// `admissionregistration.k8s.io/v1`, or `v1beta1` on 1.28 and 1.29 with
/// the feature gate on): without it, nothing would hold Berth's identities
/// to what Berth owns, so nothing is installed.
pub async fn require_admission_policies(client: &kube::Client) -> Result<(), ClusterError> {
    for version in [
        "admissionregistration.k8s.io/v1",
        "admissionregistration.k8s.io/v1beta1",
    ] {
        match client.list_api_group_resources(version).await {
            Ok(list)
                if list
                    .resources
                    .iter()
                    .any(|r| r.name == "validatingadmissionpolicies") =>
            {
                return Ok(());
            }
            Ok(_) => {}
            Err(error) if super::status_of(&error) == Some(404) => {}
            Err(error) => return Err(error.into()),
        }
    }
    Err(ClusterError::Misconfigured {
        detail: format!(
            "this cluster serves no ValidatingAdmissionPolicy. {ADMISSION_POLICY_NEEDED}"
        ),
        cause: "admissionregistration.k8s.io serves no validatingadmissionpolicies".into(),
    })
}

/// Where [`require_confinement`] probes: a namespace every cluster has, that
/// Berth does not own, and that clusters do not protect by themselves
/// (some managed clusters refuse writes to `kube-system` whoever asks,
/// which would pass the check whether Berth's policy is in force or not).
pub const CONFINEMENT_PROBE_NAMESPACE: &str = "default";

/// Proves that `client`'s identity is held to what Berth owns, by trying as
/// it, in dry runs, the two writes the admission policy
/// `berth-owned-namespaces` exists to refuse: marking
/// [`CONFINEMENT_PROBE_NAMESPACE`] as an environment's namespace (what the
/// controller's role would otherwise allow) and asking for a run in it (the
/// API's). Each must be refused (403: by RBAC, or by the policy); one let
/// through means the policy is not in force (not installed, not bound, or
/// the cluster does not enforce it), and the caller refuses to go on. The
/// controller asks again every few minutes: a policy deleted later stops it.
pub async fn require_confinement(client: &kube::Client) -> Result<(), ClusterError> {
    use k8s_openapi::api::core::v1::Namespace;
    use kube::api::PostParams;
    let label = Api::<Namespace>::all(client.clone())
        .patch(
            CONFINEMENT_PROBE_NAMESPACE,
            &PatchParams {
                dry_run: true,
                ..PatchParams::default()
            },
            &Patch::Merge(serde_json::json!({"metadata": {"labels": {
                crd::LABEL_MANAGED_BY: crd::MANAGER,
                crd::LABEL_ENVIRONMENT: "system",
            }}})),
        )
        .await
        .map(|_| ());
    let run = crd::Run::new(
        "berth-confinement-check",
        crd::RunSpec {
            app: "none".into(),
            app_uid: "none".into(),
            process: "none".into(),
        },
    );
    let run = Api::<crd::Run>::namespaced(client.clone(), CONFINEMENT_PROBE_NAMESPACE)
        .create(
            &PostParams {
                dry_run: true,
                ..PostParams::default()
            },
            &run,
        )
        .await
        .map(|_| ());
    for (what, outcome) in [
        ("label the namespace default", label),
        ("ask for a run in default", run),
    ] {
        match outcome {
            Err(error) if super::status_of(&error) == Some(403) => {}
            Ok(()) => {
                return Err(ClusterError::Misconfigured {
                    detail: format!(
                        "Berth's identity may {what} (a dry run was let through): the admission \
                         policy berth-owned-namespaces of infra/k8s is not in force. \
                         {ADMISSION_POLICY_NEEDED}"
                    ),
                    cause: format!("a dry run to {what} was allowed"),
                });
            }
            Err(error) => return Err(error.into()),
        }
    }
    Ok(())
}
