//! Berth's controller: reconciles `Environment` resources into namespaces with a
//! quota, default limits and their isolation, purges them when their deletion is due, keeps
//! `Project` resources until their environments are gone, and turns `App`
//! resources into the workloads that run them ([`render`]).
//!
//! Reconciles are idempotent (server-side apply; status written only when it
//! changes) and failures back off exponentially per object (`backoff`); a
//! write refused because the namespace is being deleted waits for a change
//! instead. What happens is told as Kubernetes Events on the objects
//! (`events`) and counted in Prometheus metrics (`metrics`); of several
//! replicas only the one holding the Lease reconciles (`replica`).
//!
//! Layout: `error` and `context` are the floor every module stands on (the
//! one error type; what a reconcile is given); each resource's reconcile is
//! a module of its own; `wiring` is the roof (what each controller watches,
//! the one error policy), which `replica` runs while it leads. This file
//! only names the modules and what the binary and the tests use.

pub mod apps;
mod backoff;
pub mod build_engine;
mod build_secrets;
pub mod builds;
pub mod certificates;
mod commands;
mod context;
pub mod egress;
mod environments;
mod error;
pub mod events;
pub mod grants;
pub mod isolation;
pub mod metrics;
mod projects;
pub mod registry;
pub mod releases;
pub mod render;
mod replica;
mod runs;
pub mod shares;
mod wiring;

pub use context::{Context, FIELD_MANAGER, Settings};
pub use error::{Error, namespace_terminating};
pub use replica::{
    DEFAULT_LEASE_DURATION_SECONDS, DEFAULT_LEASE_NAME, DEFAULT_LEASE_NAMESPACE, Replica,
    ReplicaSettings, replica_identity,
};

#[cfg(test)]
mod testing {
    use berth_cluster::install::install_crds;
    use berth_kube_standin::StandIn;
    use k8s_openapi::api::core::v1::Namespace;
    use kube::Api;
    use kube::api::{ObjectMeta, PostParams};
    use kube::config::{KubeConfigOptions, Kubeconfig};

    /// A client of the stand-in, as the controller's own is made.
    pub(crate) async fn client_of(cluster: &StandIn) -> kube::Client {
        let kubeconfig = Kubeconfig::from_yaml(&cluster.kubeconfig_yaml()).expect("kubeconfig");
        let config =
            kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                .await
                .expect("config");
        kube::Client::try_from(config).expect("client")
    }

    /// A stand-in with Berth's CRDs, its client, and the namespace `name`.
    pub(crate) async fn cluster_with_namespace(name: &str) -> (StandIn, kube::Client) {
        let cluster = StandIn::start().await.expect("stand-in");
        let client = client_of(&cluster).await;
        install_crds(&client).await.expect("CRDs");
        let namespace = Namespace {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        };
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &namespace)
            .await
            .expect("namespace");
        (cluster, client)
    }
}
