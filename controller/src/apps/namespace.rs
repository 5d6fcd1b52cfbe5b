//! Whether the App's namespace is one Berth renders into (owned by its
//! Environment, by uid).

use k8s_openapi::api::core::v1::Namespace as K8sNamespace;
use kube::ResourceExt;
use kube::api::Api;

use berth_cluster::crd::{App, Environment};
use berth_cluster::ownership::{self, NamespaceOwner};

use crate::context::Context;
use crate::error::Error;

/// Whether the App's namespace is one Berth renders into.
pub(crate) enum Namespace {
    /// Owned by Berth's Environment of that name (by uid).
    Berths,
    /// Berth's, but being deleted.
    Terminating,
    /// Not Berth's: why, for the App's status.
    Foreign(String),
}

/// Whether the App's namespace is the one its Berth Environment of that name
/// owns (by uid). Namespace and Environment are read at once.
pub(crate) async fn namespace_of(app: &App, context: &Context) -> Result<Namespace, Error> {
    let namespace = app.namespace().unwrap_or_default();
    let namespaces = Api::<K8sNamespace>::all(context.client.clone());
    let environments = Api::<Environment>::all(context.client.clone());
    let (found, environment) = tokio::join!(
        namespaces.get_opt(&namespace),
        environments.get_opt(&namespace)
    );
    Ok(match (found?, environment?) {
        (Some(found), Some(environment))
            if ownership::namespace_owner(&found, &environment)
                == NamespaceOwner::ThisEnvironment =>
        {
            if found.metadata.deletion_timestamp.is_some() {
                Namespace::Terminating
            } else {
                Namespace::Berths
            }
        }
        _ => Namespace::Foreign(format!(
            "Namespace {namespace} is not owned by Berth's environment {namespace}, so Berth applies nothing in it."
        )),
    })
}
