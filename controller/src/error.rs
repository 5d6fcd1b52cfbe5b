//! The controller's one error type, and what of it a tenant may read.

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("kubernetes: {0}")]
    Kube(#[from] kube::Error),
    #[error("project {0} still has environments")]
    ProjectNotEmpty(String),
    #[error("deletion time {0:?} is not RFC 3339")]
    BadSchedule(String),
    #[error("finalizer: {0}")]
    Finalizer(String),
    #[error("namespace {0} already exists and is not managed by Berth")]
    NamespaceNotManaged(String),
    #[error(
        "namespace {0} still belongs to an earlier environment of that name; waiting for it to go"
    )]
    NamespaceOfEarlierEnvironment(String),
    #[error("encoding a manifest: {0}")]
    Manifest(#[from] serde_json::Error),
    /// An object rendered from an App could not be written (the App's status
    /// says which, in words a user can read).
    #[error("{object}: {source}")]
    Apply {
        object: String,
        #[source]
        source: kube::Error,
    },
}

impl Error {
    /// What a tenant may read in a status: plain words, never the cluster's
    /// own error text (the log has that).
    pub fn tenant_message(&self) -> String {
        match self {
            Error::Kube(_) | Error::Finalizer(_) => {
                "the cluster could not be reached or refused a change; retrying".to_owned()
            }
            Error::Manifest(_) => "Berth could not encode an object; retrying".to_owned(),
            Error::Apply { object, .. } => format!("{object} could not be written; retrying"),
            Error::ProjectNotEmpty(_)
            | Error::BadSchedule(_)
            | Error::NamespaceNotManaged(_)
            | Error::NamespaceOfEarlierEnvironment(_) => self.to_string(),
        }
    }

    /// The `error` label of `reconcile_failures_total`.
    pub fn kind(&self) -> &'static str {
        if self.is_namespace_terminating() {
            return "namespace_terminating";
        }
        match self {
            Error::Kube(_) => "kube",
            Error::ProjectNotEmpty(_) => "project_not_empty",
            Error::BadSchedule(_) => "bad_schedule",
            Error::Finalizer(_) => "finalizer",
            Error::NamespaceNotManaged(_) => "namespace_not_managed",
            Error::NamespaceOfEarlierEnvironment(_) => "namespace_of_earlier_environment",
            Error::Manifest(_) => "manifest",
            Error::Apply { .. } => "apply",
        }
    }

    /// Whether the apiserver refused a write because the namespace is being
    /// deleted: retrying cannot help until the namespace has gone.
    pub fn is_namespace_terminating(&self) -> bool {
        match self {
            Error::Kube(error) | Error::Apply { source: error, .. } => namespace_terminating(error),
            _ => false,
        }
    }
}

/// A refusal of new content in a namespace being deleted (the apiserver's
/// `NamespaceTerminating` cause).
pub fn namespace_terminating(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == 403
        && status.details.iter().flat_map(|details| &details.causes)
            .any(|cause| cause.reason == "NamespaceTerminating"))
}

#[cfg(test)]
mod tests {
    use super::Error;

    #[test]
    fn tenants_never_read_the_clusters_error_text() {
        let raw =
            "namespaces is forbidden: User \"system:serviceaccount:berth-system:berth-controller\"";
        let error = Error::Kube(kube::Error::Api(Box::new(
            kube::core::Status::failure(raw, "Forbidden").with_code(403),
        )));
        assert!(error.to_string().contains("system:serviceaccount"));
        let message = error.tenant_message();
        assert!(
            !message.contains("serviceaccount") && !message.contains("forbidden"),
            "{message}"
        );
        assert_eq!(
            Error::NamespaceNotManaged("web-dev".into()).tenant_message(),
            "namespace web-dev already exists and is not managed by Berth"
        );
    }
}
