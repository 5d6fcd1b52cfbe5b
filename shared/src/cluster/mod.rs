//! The cluster side: Berth's custom resources, access to the cluster from the
//! stored kubeconfig, and the projects and environments kept there.

pub mod access;
pub mod apps;
pub mod crd;
pub mod environments;
pub mod install;
pub mod projects;
pub mod render;
pub mod secrets;

use crate::ApiError;

impl From<kube::Error> for ApiError {
    fn from(error: kube::Error) -> Self {
        ApiError::ClusterUnavailable(error.to_string())
    }
}

/// The HTTP status of a Kubernetes API error, if the cluster answered one.
pub fn status_of(error: &kube::Error) -> Option<u16> {
    match error {
        kube::Error::Api(status) => Some(status.code),
        _ => None,
    }
}

pub fn is_not_found(error: &kube::Error) -> bool {
    status_of(error) == Some(404)
}

pub fn is_conflict(error: &kube::Error) -> bool {
    status_of(error) == Some(409)
}

/// RFC 3339 of a Kubernetes timestamp.
pub fn timestamp(time: &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time) -> String {
    time.0.to_string()
}

pub async fn cluster_version(client: &kube::Client) -> Result<String, ApiError> {
    Ok(client.apiserver_version().await?.git_version)
}
