//! What the cluster layer can fail with, in its own words: the cluster by
//! cause (out of reach, or misconfigured so that an operator must act), a
//! refusal Berth did not expect, a change that lost to another, a thing
//! that is not there, an environment not ready for writes or not Berth's to
//! write. The HTTP layer (`berth_api::error`) alone turns each into what the
//! caller reads; the controller reads them as they are.

use berth_domain::{InvalidInput, Missing};

#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// The cluster did not answer, answered late, throttled or failed on
    /// its side: a retry may cure it. The message may name internal
    /// addresses.
    #[error("cluster unavailable: {0}")]
    Unavailable(String),
    /// The cluster answered, but refused Berth or lacks what Berth needs:
    /// an operator must act. `detail` names the misconfiguration in words
    /// they can act on; `cause` is the cluster's raw answer.
    #[error("cluster misconfigured: {detail} ({cause})")]
    Misconfigured { detail: String, cause: String },
    /// The cluster refused what Berth sent (invalid to the apiserver) or
    /// answered what Berth does not expect: a bug.
    #[error("{0}")]
    Refused(String),
    /// Another assumption that did not hold (an object read from the
    /// cluster without its uid): a bug.
    #[error("{0}")]
    Broken(String),
    /// A change that cannot be made as things are now (a name taken, a
    /// concurrent change that won), said as what it means for the caller.
    #[error("{0}")]
    Conflict(String),
    /// What is not there, named in the caller's words.
    #[error("not found: {0}")]
    Missing(Missing),
    /// A value that breaks a rule of the cluster layer: `field: rule`.
    #[error("{0}")]
    Invalid(String),
    /// The environment's namespace is not provisioned (yet): a write into
    /// it may succeed a little later.
    #[error("{0}")]
    EnvironmentNotReady(String),
    /// The environment's namespace exists and is not this environment's:
    /// whose it is not, in plain words.
    #[error("{0}")]
    NamespaceTaken(String),
    /// The environment is scheduled for deletion and cannot change.
    #[error("environment is being deleted")]
    EnvironmentDeleting,
}

impl From<Missing> for ClusterError {
    fn from(missing: Missing) -> Self {
        Self::Missing(missing)
    }
}

impl From<InvalidInput> for ClusterError {
    fn from(invalid: InvalidInput) -> Self {
        Self::Invalid(invalid.0)
    }
}

/// A cluster failure by cause. Timeouts, connection errors, 429 and 5xx are
/// [`ClusterError::Unavailable`]: a retry may cure them. A cluster that
/// refuses Berth's identity (401/403) or lacks Berth's resource types (404
/// on the type) needs an operator: [`ClusterError::Misconfigured`], with a
/// `detail` that says what to fix. An apiserver that finds what Berth sent
/// invalid (400, 422) and any other unexpected refusal is a bug.
impl From<kube::Error> for ClusterError {
    fn from(error: kube::Error) -> Self {
        let cause = error.to_string();
        match status_of(&error) {
            None => Self::Unavailable(cause),
            Some(401) => Self::Misconfigured {
                detail: "the cluster did not accept Berth's credentials (401 Unauthorized): \
                         store a kubeconfig with valid credentials with berth-admin cluster set"
                    .into(),
                cause,
            },
            Some(403) => Self::Misconfigured {
                detail: "the cluster refused Berth's identity (403 Forbidden): check its RBAC \
                         rules (infra/k8s/api-rbac.yaml)"
                    .into(),
                cause,
            },
            Some(404) if is_missing_resource_type(&error) => Self::Misconfigured {
                detail: "Berth's custom resources are not installed in the cluster: run \
                         berth-admin cluster install"
                    .into(),
                cause,
            },
            Some(code) if code == 408 || code == 429 || code >= 500 => Self::Unavailable(cause),
            // Races the caller did not expect: the object went away, or a
            // concurrent change won.
            Some(404) => Self::Missing(Missing::Gone),
            Some(409) => Self::Conflict("a concurrent change won; try again".into()),
            Some(code) => Self::Refused(format!("the cluster refused a request ({code}): {cause}")),
        }
    }
}

/// The HTTP status of a Kubernetes API error, if the cluster answered one.
pub fn status_of(error: &kube::Error) -> Option<u16> {
    match error {
        kube::Error::Api(status) => Some(status.code),
        _ => None,
    }
}

/// A 404 for the resource type rather than for an object: the apiserver's
/// answer for a path it has no route for (a CRD that is not installed) names
/// no object in its details.
pub fn is_missing_resource_type(error: &kube::Error) -> bool {
    match error {
        kube::Error::Api(status) if status.code == 404 => status
            .details
            .as_ref()
            .is_none_or(|details| details.name.is_empty()),
        _ => false,
    }
}
