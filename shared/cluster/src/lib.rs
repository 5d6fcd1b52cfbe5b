//! Berth's cluster layer, on `berth-domain` alone: Berth's custom resources
//! ([`crd`]), which objects are Berth's ([`ownership`]), the retries of
//! cluster calls ([`retry`]), the install's checks ([`install`]), and the
//! reads and writes of each resource, one call to the cluster each; what
//! they mean is the API's (`berth-api`), and the controller renders with
//! them. Nothing here reaches DynamoDB: the API builds its client from the
//! stored kubeconfig (`berth_api::access`). Every failure is a
//! [`ClusterError`], in this layer's words (a `kube::Error` becomes one by
//! cause through `?`); the API turns it into what the caller reads, the
//! controller reads it as it is.

pub mod apps;
pub mod build_queue;
pub mod builds;
pub mod commands;
pub mod crd;
pub mod environments;
mod error;
pub mod install;
pub mod ownership;
pub mod projects;
pub mod quota;
pub mod registry;
pub mod rendered_names;
pub mod retry;
pub mod secrets;
#[cfg(any(test, feature = "test-support"))]
pub mod testing;

pub use error::{ClusterError, is_missing_resource_type, status_of};
/// The cluster as Berth reaches it: what a function passes to this layer
/// without linking kube itself.
pub use kube::Client;

/// An object that is not there (not a missing resource type, which is a
/// misconfiguration: see [`is_missing_resource_type`]).
pub fn is_not_found(error: &kube::Error) -> bool {
    status_of(error) == Some(404) && !is_missing_resource_type(error)
}

/// Lists a resource type in one call, decoding item by item: one object that
/// does not match its Rust type (written by hand, or by an older Berth) is
/// skipped with a log line instead of failing the whole list.
pub async fn list_decoded<K>(
    client: &kube::Client,
    namespace: Option<&str>,
    params: &kube::api::ListParams,
) -> Result<Vec<K>, kube::Error>
where
    K: kube::Resource<DynamicType = ()> + serde::de::DeserializeOwned,
{
    use kube::api::{Api, ApiResource, DynamicObject};
    let resource = ApiResource::erase::<K>(&());
    let api: Api<DynamicObject> = match namespace {
        Some(namespace) => Api::namespaced_with(client.clone(), namespace, &resource),
        None => Api::all_with(client.clone(), &resource),
    };
    let list = api.list(params).await?;
    Ok(list
        .items
        .into_iter()
        .filter_map(|object| {
            let name = object.metadata.name.clone().unwrap_or_default();
            let namespace = object.metadata.namespace.clone().unwrap_or_default();
            match serde_json::to_value(object).and_then(serde_json::from_value::<K>) {
                Ok(decoded) => Some(decoded),
                Err(error) => {
                    tracing::warn!(kind = %resource.kind, name = %name, namespace = %namespace,
                        error = %error, "skipping a resource that does not decode");
                    None
                }
            }
        })
        .collect())
}

/// A delete of the object with that uid only: one made again under its name
/// since it was read is not the one meant (`409`, left alone). Its
/// dependents go in the background.
pub fn delete_only(uid: Option<String>) -> kube::api::DeleteParams {
    kube::api::DeleteParams {
        preconditions: Some(kube::api::Preconditions {
            uid,
            resource_version: None,
        }),
        ..kube::api::DeleteParams::background()
    }
}

/// The pods of a namespace matching `selector`, newest first (by creation,
/// then by name); none when the namespace is gone.
pub async fn pods_newest_first(
    client: &kube::Client,
    namespace: &str,
    selector: &str,
) -> Result<Vec<k8s_openapi::api::core::v1::Pod>, ClusterError> {
    use kube::ResourceExt;
    let params = kube::api::ListParams::default().labels(selector);
    let mut pods =
        match kube::Api::<k8s_openapi::api::core::v1::Pod>::namespaced(client.clone(), namespace)
            .list(&params)
            .await
        {
            Ok(list) => list.items,
            Err(error) if is_not_found(&error) => Vec::new(),
            Err(error) => return Err(error.into()),
        };
    pods.sort_by(|a, b| {
        b.metadata
            .creation_timestamp
            .cmp(&a.metadata.creation_timestamp)
            .then_with(|| a.name_any().cmp(&b.name_any()))
    });
    Ok(pods)
}

pub fn is_conflict(error: &kube::Error) -> bool {
    status_of(error) == Some(409)
}

/// RFC 3339 of a Kubernetes timestamp.
pub fn timestamp(time: &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time) -> String {
    time.0.to_string()
}

pub async fn cluster_version(client: &kube::Client) -> Result<String, ClusterError> {
    Ok(client.apiserver_version().await?.git_version)
}

#[cfg(test)]
mod tests {
    use kube::core::Status;
    use kube::core::response::StatusDetails;

    use super::*;

    fn answered(code: u16, object: Option<&str>) -> kube::Error {
        let mut status = Status::failure("refused", "Reason").with_code(code);
        // As the apiserver answers: details name the object, if there is one.
        status.details = Some(
            serde_json::from_value::<StatusDetails>(
                serde_json::json!({ "name": object.unwrap_or_default() }),
            )
            .expect("details"),
        );
        kube::Error::Api(Box::new(status))
    }

    /// Which kind of failure, and the misconfiguration's detail if any.
    fn mapped(error: kube::Error) -> (&'static str, String) {
        match ClusterError::from(error) {
            ClusterError::Unavailable(_) => ("unavailable", String::new()),
            ClusterError::Misconfigured { detail, .. } => ("misconfigured", detail),
            ClusterError::Refused(_) => ("refused", String::new()),
            ClusterError::Missing(_) => ("missing", String::new()),
            ClusterError::Conflict(_) => ("conflict", String::new()),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn cluster_faults_are_mapped_by_cause() {
        for code in [429, 500, 503, 504] {
            assert_eq!(mapped(answered(code, None)).0, "unavailable", "{code}");
        }
        let (kind, detail) = mapped(answered(403, None));
        assert_eq!(kind, "misconfigured");
        assert!(detail.contains("403 Forbidden") && detail.contains("api-rbac.yaml"));
        let (_, detail) = mapped(answered(401, None));
        assert!(detail.contains("401"), "{detail}");
        // No route for the type: the CRDs are not installed.
        let missing_type = answered(404, None);
        assert!(!is_not_found(&missing_type));
        let (kind, detail) = mapped(missing_type);
        assert_eq!(kind, "misconfigured");
        assert!(detail.contains("berth-admin cluster install"), "{detail}");
        // An object that is not there is still "not found".
        assert!(is_not_found(&answered(404, Some("shop"))));
        assert_eq!(mapped(answered(404, Some("shop"))).0, "missing");
        assert_eq!(mapped(answered(409, Some("shop"))).0, "conflict");
        // What the apiserver finds invalid in what Berth sent is a bug.
        assert_eq!(mapped(answered(422, Some("shop"))).0, "refused");
        assert_eq!(mapped(answered(400, None)).0, "refused");
    }
}
