//! Berth's two identities may do no more than their roles in `infra/k8s`
//! say: asked, as themselves, for what neither needs, the cluster refuses
//! (403 Forbidden) — on the stand-in, which enforces RBAC for ServiceAccount
//! tokens, and on a real cluster alike. The administrator asks the same and
//! is answered, so each refusal is about the identity, not the request.
//! (That the roles are enough is every other cluster test: the API and the
//! controller run as these identities throughout.)

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::authentication::v1::TokenRequest;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod, Secret, ServiceAccount};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams,
};
use serde_json::json;

use berth_shared::cluster::access::client_from_kubeconfig;
use berth_shared::cluster::crd::{App, Project};

use crate::support::TestCluster;
use crate::support::identities::{controller_account, kubeconfig_of};

/// One request, made as someone.
type Attempt = Box<
    dyn Fn(
            kube::Client,
        )
            -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), kube::Error>> + Send>>
        + Send
        + Sync,
>;

fn attempt<F, Fut, T>(request: F) -> Attempt
where
    F: Fn(kube::Client) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<T, kube::Error>> + Send + 'static,
{
    Box::new(move |client| {
        let made = request(client);
        Box::pin(async move { made.await.map(|_| ()) })
    })
}

/// Each attempt is refused for `client` with a 403, and not for the
/// administrator (a 404 or 409 is an answer too: the request was allowed).
async fn refused_as(
    who: &str,
    client: &kube::Client,
    admin: &kube::Client,
    attempts: Vec<(&str, Attempt)>,
) {
    for (what, attempt) in attempts {
        match attempt(client.clone()).await {
            Err(kube::Error::Api(status)) if status.code == 403 => {
                assert_eq!(status.reason, "Forbidden", "{who}: {what}: {status:?}");
            }
            other => panic!("{who} may {what}: {other:?}"),
        }
        match attempt(admin.clone()).await {
            Err(kube::Error::Api(status)) if status.code == 403 => {
                panic!("the administrator may not {what} either: {status:?}")
            }
            _ => {}
        }
    }
}

/// A create that changes nothing (RBAC decides before dry run matters).
fn dry_run() -> PostParams {
    PostParams {
        dry_run: true,
        ..PostParams::default()
    }
}

/// A dry-run create of a Berth resource named `refused` (RBAC decides before
/// the body is looked at).
async fn dry_run_create<K>(
    client: kube::Client,
    namespace: Option<&str>,
) -> Result<DynamicObject, kube::Error>
where
    K: kube::Resource<DynamicType = ()>,
{
    let resource = ApiResource::erase::<K>(&());
    let mut object = DynamicObject::new("refused", &resource);
    object.metadata.namespace = namespace.map(str::to_owned);
    object.data = json!({"spec": {}});
    let api: Api<DynamicObject> = match namespace {
        Some(namespace) => Api::namespaced_with(client, namespace, &resource),
        None => Api::all_with(client, &resource),
    };
    api.create(&dry_run(), &object).await
}

fn cluster_admin_binding(name: &str) -> ClusterRoleBinding {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"kind": "ServiceAccount", "name": "berth-api", "namespace": "berth-system"}],
    }))
    .expect("a ClusterRoleBinding")
}

/// What no identity of Berth may do: make itself more, or read or change
/// what is not Berth's.
fn beyond_both() -> Vec<(&'static str, Attempt)> {
    let unique = crate::support::unique("refused");
    let name = unique.clone();
    vec![
        (
            "bind itself to cluster-admin",
            attempt(move |client| {
                let binding = cluster_admin_binding(&name);
                async move {
                    Api::<ClusterRoleBinding>::all(client)
                        .create(&dry_run(), &binding)
                        .await
                }
            }),
        ),
        (
            "ask for another ServiceAccount's token",
            attempt(|client| async move {
                Api::<ServiceAccount>::namespaced(client, "kube-system")
                    .create_token_request(
                        "default",
                        &PostParams::default(),
                        &TokenRequest::default(),
                    )
                    .await
            }),
        ),
        (
            "read kube-system's ConfigMaps",
            attempt(|client| async move {
                Api::<ConfigMap>::namespaced(client, "kube-system")
                    .list(&ListParams::default())
                    .await
            }),
        ),
        (
            "run a pod",
            attempt(move |client| {
                let pod: Pod = serde_json::from_value(json!({
                    "metadata": {"name": unique},
                    "spec": {"containers": [{"name": "c", "image": "busybox"}]},
                }))
                .expect("a Pod");
                async move {
                    Api::<Pod>::namespaced(client, "default")
                        .create(&dry_run(), &pod)
                        .await
                }
            }),
        ),
        (
            "delete a CRD",
            attempt(|client| async move {
                Api::<CustomResourceDefinition>::all(client)
                    .delete(
                        "apps.berth.dev",
                        &DeleteParams {
                            dry_run: true,
                            ..DeleteParams::default()
                        },
                    )
                    .await
            }),
        ),
    ]
}

#[tokio::test]
async fn the_apis_identity_is_refused_what_its_role_does_not_grant() {
    let cluster = TestCluster::start().await;
    let api = client_from_kubeconfig(
        &cluster.kubeconfig,
        None,
        std::time::Duration::from_secs(10),
    )
    .await
    .expect("the API's client");
    let mut attempts = beyond_both();
    attempts.extend([
        (
            "read Deployments (the controller renders them)",
            attempt(|client| async move {
                Api::<Deployment>::all(client)
                    .list(&ListParams::default())
                    .await
            }),
        ),
        (
            "create a namespace (the controller provisions them)",
            attempt(|client| async move {
                let namespace: Namespace =
                    serde_json::from_value(json!({"metadata": {"name": "refused-by-rbac"}}))
                        .expect("a Namespace");
                Api::<Namespace>::all(client)
                    .create(&dry_run(), &namespace)
                    .await
            }),
        ),
        (
            "write an App's status (the controller's)",
            attempt(|client| async move {
                Api::<App>::namespaced(client, "default")
                    .patch_status(
                        "any",
                        &PatchParams::default(),
                        &Patch::Merge(json!({"status": {}})),
                    )
                    .await
            }),
        ),
        (
            "change a Project (it creates and deletes them)",
            attempt(|client| async move {
                Api::<Project>::all(client)
                    .patch(
                        "any",
                        &PatchParams::default(),
                        &Patch::Merge(json!({"spec": {}})),
                    )
                    .await
            }),
        ),
        (
            "delete Jobs (it only starts them)",
            attempt(|client| async move {
                Api::<Job>::namespaced(client, "default")
                    .delete("any", &DeleteParams::default())
                    .await
            }),
        ),
    ]);
    refused_as("berth-api", &api, &cluster.client, attempts).await;
}

#[tokio::test]
async fn the_controllers_identity_is_refused_what_its_role_does_not_grant() {
    let cluster = TestCluster::start().await;
    let controller = client_from_kubeconfig(
        &kubeconfig_of(&cluster.admin_kubeconfig, &controller_account()).await,
        None,
        std::time::Duration::from_secs(10),
    )
    .await
    .expect("the controller's client");
    let mut attempts = beyond_both();
    attempts.extend([
        (
            "read secrets (apps' secrets are the API's business)",
            attempt(|client| async move {
                Api::<Secret>::namespaced(client, "kube-system")
                    .list(&ListParams::default())
                    .await
            }),
        ),
        (
            "read pods",
            attempt(
                |client| async move { Api::<Pod>::all(client).list(&ListParams::default()).await },
            ),
        ),
        (
            "create Apps (the API writes them)",
            attempt(|client| dry_run_create::<App>(client, Some("default"))),
        ),
        (
            "create Projects (the API does)",
            attempt(|client| dry_run_create::<Project>(client, None)),
        ),
        (
            "take a Lease outside berth-system (another controller's)",
            attempt(|client| dry_run_create::<Lease>(client, Some("kube-system"))),
        ),
        (
            "read Events (it only writes them)",
            attempt(|client| async move {
                Api::<Event>::namespaced(client, "default")
                    .list(&ListParams::default())
                    .await
            }),
        ),
    ]);
    refused_as("berth-controller", &controller, &cluster.client, attempts).await;
}
