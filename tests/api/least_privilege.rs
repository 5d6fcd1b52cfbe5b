//! Berth's two identities may do no more than `infra/k8s` says: asked, as
//! themselves, for what neither needs, the cluster refuses — by RBAC (403
//! Forbidden) or by the admission policy `berth-owned-namespaces` (403
//! Forbidden with the policy's cause in the Status' details, as a real
//! apiserver answers a ValidatingAdmissionPolicy's denial whose `reason` is
//! `Forbidden`) — on the stand-in, which enforces RBAC for ServiceAccount
//! tokens and evaluates the policy's own CEL, and on a real cluster alike.
//! Every write is a dry run. The administrator asks the same and is
//! answered, so each refusal is about the identity, not the request.
//! (That the roles are enough is every other cluster test: the API and the
//! controller run as these identities throughout.)
//!
//! The rows of issue 26's table (what both identities could do on a real
//! v1.28 with the manifests of before) are tried for both identities:
//! [`the_table`].

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::authentication::v1::TokenRequest;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{
    ConfigMap, Namespace, PersistentVolumeClaim, Pod, Secret, ServiceAccount,
};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::api::rbac::v1::{ClusterRoleBinding, RoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams,
};
use serde_json::json;

use berth_api::access::client_from_kubeconfig;
use berth_cluster::crd::{App, Project, Run, RunSpec};
use berth_domain::app::AppConfig;

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

/// Which refusal a real apiserver gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    /// RBAC: 403 Forbidden, no causes.
    Rbac,
    /// The admission policy: 403 Forbidden with the denial as a cause.
    Admission,
}

/// Each attempt is refused for `client` as expected, and not for the
/// administrator (a 404 or 409 is an answer too: the request was allowed).
async fn refused_as(
    who: &str,
    client: &kube::Client,
    admin: &kube::Client,
    attempts: Vec<(&str, Refusal, Attempt)>,
) {
    for (what, expected, attempt) in attempts {
        match attempt(client.clone()).await {
            Err(kube::Error::Api(status)) if status.code == 403 => {
                assert_eq!(status.reason, "Forbidden", "{who}: {what}: {status:?}");
                let causes = status
                    .details
                    .as_ref()
                    .map_or(0, |details| details.causes.len());
                let refusal = if causes > 0 {
                    Refusal::Admission
                } else {
                    Refusal::Rbac
                };
                assert_eq!(refusal, expected, "{who}: {what}: {status:?}");
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

/// A RoleBinding of `role` (a ClusterRole) to one of Berth's ServiceAccounts.
fn role_binding(name: &str, role: &str, account: &str) -> RoleBinding {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": "berth-system"}],
    }))
    .expect("a RoleBinding")
}

fn job(name: &str) -> Job {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"template": {"spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox"}],
        }}},
    }))
    .expect("a Job")
}

fn secret(name: &str) -> Secret {
    serde_json::from_value(json!({"metadata": {"name": name}, "stringData": {"k": "v"}}))
        .expect("a Secret")
}

fn deployment(name: &str) -> Deployment {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]},
            },
        },
    }))
    .expect("a Deployment")
}

fn dry_patch() -> PatchParams {
    PatchParams {
        dry_run: true,
        ..PatchParams::default()
    }
}

fn dry_delete() -> DeleteParams {
    DeleteParams {
        dry_run: true,
        ..DeleteParams::default()
    }
}

/// The rows of issue 26's table: what Berth's identities could do with the
/// manifests of before, on a real v1.28 — each now refused, for both, with
/// the refusal each gets (RBAC for what its roles do not grant at all, the
/// admission policy for what they grant only in Berth's namespaces).
fn the_table(identity: &str) -> Vec<(&'static str, Refusal, Attempt)> {
    let controller = identity == "berth-controller";
    // What the controller's roles grant (only in Berth's namespaces, by
    // admission); the API's grant none of it.
    let writes = if controller {
        Refusal::Admission
    } else {
        Refusal::Rbac
    };
    let name = crate::support::unique("refused");
    let (job_name, secret_name, deployment_name) = (name.clone(), name.clone(), name);
    let job_name_too = job_name.clone();
    vec![
        (
            "create a Job in kube-system",
            writes,
            attempt(move |client| {
                let job = job(&job_name);
                async move {
                    Api::<Job>::namespaced(client, "kube-system")
                        .create(&dry_run(), &job)
                        .await
                }
            }),
        ),
        (
            "create a Job in default",
            writes,
            attempt(move |client| {
                let job = job(&job_name_too);
                async move {
                    Api::<Job>::namespaced(client, "default")
                        .create(&dry_run(), &job)
                        .await
                }
            }),
        ),
        (
            "create a Secret in kube-system",
            writes,
            attempt(move |client| {
                let secret = secret(&secret_name);
                async move {
                    Api::<Secret>::namespaced(client, "kube-system")
                        .create(&dry_run(), &secret)
                        .await
                }
            }),
        ),
        (
            "create a token Secret of berth-api in berth-system",
            writes,
            attempt(|client| async move {
                let token: Secret = serde_json::from_value(json!({
                    "metadata": {
                        "name": crate::support::unique("stolen"),
                        "annotations": {"kubernetes.io/service-account.name": "berth-api"},
                    },
                    "type": "kubernetes.io/service-account-token",
                }))
                .expect("a Secret");
                Api::<Secret>::namespaced(client, "berth-system")
                    .create(&dry_run(), &token)
                    .await
            }),
        ),
        (
            "create a Job in berth-system",
            writes,
            attempt(|client| async move {
                let job = job(&crate::support::unique("refused"));
                Api::<Job>::namespaced(client, "berth-system")
                    .create(&dry_run(), &job)
                    .await
            }),
        ),
        (
            "get Secrets in kube-system",
            Refusal::Rbac,
            attempt(|client| async move {
                Api::<Secret>::namespaced(client, "kube-system")
                    .get("any")
                    .await
            }),
        ),
        (
            "list Secrets in every namespace",
            Refusal::Rbac,
            attempt(|client| async move {
                Api::<Secret>::all(client)
                    .list(&ListParams::default())
                    .await
            }),
        ),
        (
            "get berth-builds/berth-registry-push",
            Refusal::Rbac,
            attempt(|client| async move {
                Api::<Secret>::namespaced(client, "berth-builds")
                    .get("berth-registry-push")
                    .await
            }),
        ),
        (
            "get a build's own registry credential in berth-builds",
            Refusal::Rbac,
            attempt(|client| async move {
                let job = berth_cluster::crd::object_names::build_job("any");
                Api::<Secret>::namespaced(client, "berth-builds")
                    .get(&format!("{job}-push"))
                    .await
            }),
        ),
        (
            "create a Deployment in default",
            writes,
            attempt(move |client| {
                let deployment = deployment(&deployment_name);
                async move {
                    Api::<Deployment>::namespaced(client, "default")
                        .create(&dry_run(), &deployment)
                        .await
                }
            }),
        ),
        (
            "label the namespace kube-system",
            writes,
            attempt(|client| async move {
                Api::<Namespace>::all(client)
                    .patch(
                        "kube-system",
                        &dry_patch(),
                        &Patch::Merge(json!({"metadata": {"labels": {
                            "app.kubernetes.io/managed-by": "berth",
                            "berth.dev/environment": "system",
                        }}})),
                    )
                    .await
            }),
        ),
    ]
}

#[tokio::test]
async fn every_row_of_the_table_is_refused_to_both_identities() {
    let cluster = TestCluster::start().await;
    let api = client_of(&cluster.kubeconfig).await;
    let controller = controller_client(&cluster).await;
    refused_as("berth-api", &api, &cluster.client, the_table("berth-api")).await;
    refused_as(
        "berth-controller",
        &controller,
        &cluster.client,
        the_table("berth-controller"),
    )
    .await;
}

async fn client_of(kubeconfig: &str) -> kube::Client {
    client_from_kubeconfig(kubeconfig, None, std::time::Duration::from_secs(10))
        .await
        .expect("a client of a Berth identity")
}

async fn controller_client(cluster: &TestCluster) -> kube::Client {
    client_of(&kubeconfig_of(&cluster.admin_kubeconfig, &controller_account()).await).await
}

/// A namespace as the controller makes an environment's (labelled as
/// Berth's and an environment's), made here by the administrator: what the
/// identities may do in one, and no more.
async fn environment_like_namespace(cluster: &TestCluster) -> String {
    let name = crate::support::unique("lp");
    let namespace: Namespace = serde_json::from_value(json!({"metadata": {
        "name": name,
        "labels": {"app.kubernetes.io/managed-by": "berth", "berth.dev/environment": "lp"},
    }}))
    .expect("a Namespace");
    Api::<Namespace>::all(cluster.client.clone())
        .create(&PostParams::default(), &namespace)
        .await
        .expect("the administrator makes a namespace");
    name
}

/// What no identity of Berth may do: make itself more, or read or change
/// what is not Berth's.
fn beyond_both() -> Vec<(&'static str, Refusal, Attempt)> {
    let unique = crate::support::unique("refused");
    let name = unique.clone();
    vec![
        (
            "bind itself to cluster-admin",
            Refusal::Rbac,
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
            "bind cluster-admin in kube-system",
            Refusal::Rbac,
            attempt(|client| async move {
                Api::<RoleBinding>::namespaced(client, "kube-system")
                    .create(
                        &dry_run(),
                        &role_binding("refused", "cluster-admin", "berth-controller"),
                    )
                    .await
            }),
        ),
        (
            "ask for another ServiceAccount's token",
            Refusal::Rbac,
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
            Refusal::Rbac,
            attempt(|client| async move {
                Api::<ConfigMap>::namespaced(client, "kube-system")
                    .list(&ListParams::default())
                    .await
            }),
        ),
        (
            "read the registry's pull credential in berth-system",
            Refusal::Rbac,
            attempt(|client| async move {
                Api::<Secret>::namespaced(client, "berth-system")
                    .list(&ListParams::default())
                    .await
            }),
        ),
        (
            "run a pod",
            Refusal::Rbac,
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
            Refusal::Rbac,
            attempt(|client| async move {
                Api::<CustomResourceDefinition>::all(client)
                    .delete("apps.berth.dev", &dry_delete())
                    .await
            }),
        ),
    ]
}

#[tokio::test]
async fn the_apis_identity_is_refused_what_its_role_does_not_grant() {
    let cluster = TestCluster::start().await;
    let api = client_of(&cluster.kubeconfig).await;
    let mut attempts = beyond_both();
    attempts.extend([
        (
            "read Deployments (the controller renders them)",
            Refusal::Rbac,
            attempt(|client| async move {
                Api::<Deployment>::all(client)
                    .list(&ListParams::default())
                    .await
            }),
        ),
        (
            "create a namespace (the controller provisions them)",
            Refusal::Rbac,
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
            Refusal::Rbac,
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
            Refusal::Rbac,
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
            "read the registry's pull credential",
            Refusal::Rbac,
            attempt(|client| async move {
                Api::<Secret>::namespaced(client, "berth-system")
                    .get("berth-registry-pull")
                    .await
            }),
        ),
        (
            "delete Jobs (it starts none: the controller does)",
            Refusal::Rbac,
            attempt(|client| async move {
                Api::<Job>::namespaced(client, "default")
                    .delete("any", &dry_delete())
                    .await
            }),
        ),
        (
            "create an App outside Berth's namespaces",
            Refusal::Admission,
            attempt(|client| async move {
                let mut app = App::test("refused", AppConfig::test(Vec::new()));
                app.metadata.namespace = Some("kube-system".into());
                Api::<App>::namespaced(client, "kube-system")
                    .create(&dry_run(), &app)
                    .await
            }),
        ),
        (
            "ask for a run outside Berth's namespaces",
            Refusal::Admission,
            attempt(|client| async move {
                let run = Run::new(
                    "refused",
                    RunSpec {
                        app: "any".into(),
                        app_uid: "any".into(),
                        process: "any".into(),
                    },
                );
                Api::<Run>::namespaced(client, "kube-system")
                    .create(&dry_run(), &run)
                    .await
            }),
        ),
        (
            "delete claims outside Berth's namespaces",
            Refusal::Admission,
            attempt(|client| async move {
                Api::<PersistentVolumeClaim>::namespaced(client, "default")
                    .delete("berth-tests-claim", &dry_delete())
                    .await
            }),
        ),
        (
            "bind a role",
            Refusal::Rbac,
            attempt(|client| async move {
                Api::<RoleBinding>::namespaced(client, "default")
                    .create(
                        &dry_run(),
                        &role_binding("refused", "berth-api-environment", "berth-api"),
                    )
                    .await
            }),
        ),
    ]);
    // The claim the API tries to delete in `default` (a delete reaches
    // admission only when there is something to delete).
    let claim: PersistentVolumeClaim = serde_json::from_value(json!({
        "metadata": {"name": "berth-tests-claim"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }))
    .expect("a claim");
    let claims = Api::<PersistentVolumeClaim>::namespaced(cluster.client.clone(), "default");
    if claims.get_opt("berth-tests-claim").await.unwrap().is_none() {
        claims.create(&PostParams::default(), &claim).await.unwrap();
    }
    refused_as("berth-api", &api, &cluster.client, attempts).await;
}

#[tokio::test]
async fn the_controllers_identity_is_refused_what_its_role_does_not_grant() {
    let cluster = TestCluster::start().await;
    let controller = controller_client(&cluster).await;
    let environment = environment_like_namespace(&cluster).await;
    let in_environment = environment.clone();
    let also_in_environment = environment.clone();
    let deletable = environment.clone();
    let mut attempts = beyond_both();
    attempts.extend([
        (
            "read pods",
            Refusal::Rbac,
            attempt(
                |client| async move { Api::<Pod>::all(client).list(&ListParams::default()).await },
            ),
        ),
        (
            "create Apps (the API writes them)",
            Refusal::Rbac,
            attempt(|client| dry_run_create::<App>(client, Some("default"))),
        ),
        (
            "create Projects (the API does)",
            Refusal::Rbac,
            attempt(|client| dry_run_create::<Project>(client, None)),
        ),
        (
            "take a Lease outside berth-system (another controller's)",
            Refusal::Rbac,
            attempt(|client| dry_run_create::<Lease>(client, Some("kube-system"))),
        ),
        (
            "read Events (it only writes them)",
            Refusal::Rbac,
            attempt(|client| async move {
                Api::<Event>::namespaced(client, "default")
                    .list(&ListParams::default())
                    .await
            }),
        ),
        (
            "bind Berth's roles in kube-system",
            Refusal::Admission,
            attempt(|client| async move {
                Api::<RoleBinding>::namespaced(client, "kube-system")
                    .create(
                        &dry_run(),
                        &role_binding("berth-api", "berth-api-environment", "berth-api"),
                    )
                    .await
            }),
        ),
        (
            "bind cluster-admin in an environment's namespace",
            Refusal::Rbac,
            attempt(move |client| {
                let namespace = in_environment.clone();
                async move {
                    Api::<RoleBinding>::namespaced(client, &namespace)
                        .create(
                            &dry_run(),
                            &role_binding("refused", "cluster-admin", "berth-controller"),
                        )
                        .await
                }
            }),
        ),
        (
            "bind the API's role to itself in an environment's namespace",
            Refusal::Admission,
            attempt(move |client| {
                let namespace = also_in_environment.clone();
                async move {
                    Api::<RoleBinding>::namespaced(client, &namespace)
                        .create(
                            &dry_run(),
                            &role_binding("refused", "berth-api-environment", "berth-controller"),
                        )
                        .await
                }
            }),
        ),
        (
            "bind Berth's roles in berth-builds (where the push credential is)",
            Refusal::Admission,
            attempt(|client| async move {
                Api::<RoleBinding>::namespaced(client, "berth-builds")
                    .create(
                        &dry_run(),
                        &role_binding("refused", "berth-api-environment", "berth-api"),
                    )
                    .await
            }),
        ),
        (
            "create a namespace that is not an environment's",
            Refusal::Admission,
            attempt(|client| async move {
                let namespace: Namespace = serde_json::from_value(json!({"metadata": {
                    "name": "refused-by-admission",
                    "labels": {"app.kubernetes.io/managed-by": "berth"},
                }}))
                .expect("a Namespace");
                Api::<Namespace>::all(client)
                    .create(&dry_run(), &namespace)
                    .await
            }),
        ),
        (
            "make kube-system an environment's namespace",
            Refusal::Admission,
            attempt(|client| async move {
                Api::<Namespace>::all(client)
                    .patch(
                        "kube-system",
                        &dry_patch(),
                        &Patch::Merge(json!({"metadata": {"ownerReferences": [{
                            "apiVersion": "berth.dev/v1", "kind": "Environment",
                            "name": "kube-system", "uid": "00000000-0000-0000-0000-000000000000",
                            "controller": true,
                        }]}})),
                    )
                    .await
            }),
        ),
        (
            "delete a namespace that is not an environment's (labelled as Berth's)",
            Refusal::Admission,
            attempt(move |client| {
                let namespace = deletable.clone();
                async move {
                    Api::<Namespace>::all(client)
                        .delete(&namespace, &dry_delete())
                        .await
                }
            }),
        ),
        (
            "publish an Event about something not Berth's in default",
            Refusal::Admission,
            attempt(|client| async move {
                let event: Event = serde_json::from_value(json!({
                    "metadata": {"name": "refused"},
                    "eventTime": "2026-01-01T00:00:00.000000Z",
                    "reportingController": "berth.dev/controller",
                    "reportingInstance": "refused",
                    "action": "Provision",
                    "reason": "Refused",
                    "type": "Normal",
                    "regarding": {"apiVersion": "v1", "kind": "Namespace", "name": "kube-system"},
                }))
                .expect("an Event");
                Api::<Event>::namespaced(client, "default")
                    .create(&dry_run(), &event)
                    .await
            }),
        ),
    ]);
    refused_as("berth-controller", &controller, &cluster.client, attempts).await;
}

/// A build's Job as the controller makes it (`build_engine::job`, for this
/// cluster's version), as JSON to loosen.
async fn build_job(cluster: &TestCluster) -> serde_json::Value {
    use berth_cluster::crd::{BUILDS_NAMESPACE, Build, BuildSpec, object_names};
    use berth_controller::build_engine::{self, AppArmor, BuilderSettings, Target};
    use berth_domain::app::{AppSource, BuildSettings, BuildStrategy};
    use kube::Resource;

    let app = "shop";
    let mut build = Build::new(
        &object_names::build("store-prod", app, 1),
        BuildSpec {
            org: "acme".to_owned(),
            project: "store".to_owned(),
            environment: "prod".to_owned(),
            namespace: "store-prod".to_owned(),
            app: app.to_owned(),
            app_uid: "app-uid".to_owned(),
            number: 1,
            source: AppSource {
                git_repo: "https://git.example.com/acme/shop.git".to_owned(),
                git_ref: Some("main".to_owned()),
                build: BuildSettings {
                    strategy: BuildStrategy::Auto,
                    context_dir: None,
                    dockerfile: None,
                },
                git_secret: Some("git".to_owned()),
            },
            actor: None,
            created_at: 1,
            decision: None,
            branch: None,
            hook: None,
            cancel: None,
        },
    );
    build.metadata.namespace = Some(BUILDS_NAMESPACE.to_owned());
    build.metadata.uid = Some(uuid::Uuid::new_v4().to_string());
    let registry = berth_cluster::registry::Registry::parse(
        "registry.example.com/berth",
        "registry.example.com",
    )
    .expect("a registry");
    let credentials = berth_controller::registry::build_credentials(&build, &registry);
    let version = cluster
        .client
        .apiserver_version()
        .await
        .expect("the cluster's version");
    let target = Target {
        registry: &registry,
        credentials: &credentials,
        apparmor: AppArmor::for_minor(&version.minor),
    };
    let job = build_engine::job(
        &build,
        build.controller_owner_ref(&()).expect("an owner"),
        &BuilderSettings::default(),
        &target,
        Some("git-copy"),
    )
    .expect("a build's Job");
    serde_json::to_value(job).expect("the Job as JSON")
}

/// berth-builds is Pod Security `privileged` (rootless BuildKit), so the
/// admission policy holds the controller there to a build's Job (issue 46,
/// part 5): the Job it makes is admitted; loosened in any way that would
/// reach the node, a token or root, or as another kind of workload, it is
/// refused — to a stolen controller token as to the controller.
#[tokio::test]
async fn in_berth_builds_the_controller_makes_only_a_builds_job() {
    let cluster = TestCluster::start().await;
    let controller = controller_client(&cluster).await;
    let job = build_job(&cluster).await;
    let jobs = |client: kube::Client| Api::<Job>::namespaced(client, "berth-builds");
    let as_job =
        |value: serde_json::Value| -> Job { serde_json::from_value(value).expect("a Job") };
    jobs(controller.clone())
        .create(&dry_run(), &as_job(job.clone()))
        .await
        .expect("a build's own Job is admitted");

    type Loosen = fn(&mut serde_json::Value);
    let loosened: Vec<(&'static str, Loosen)> = vec![
        // (A real apiserver finds a privileged container that may not
        // escalate invalid, and one adding CAP_SYS_ADMIN too.)
        ("a privileged container", |pod| {
            let security = &mut pod["containers"][0]["securityContext"];
            security["privileged"] = json!(true);
            if let Some(security) = security.as_object_mut() {
                security.remove("allowPrivilegeEscalation");
            }
        }),
        ("an added capability", |pod| {
            pod["initContainers"][0]["securityContext"]["capabilities"] =
                json!({"add": ["NET_ADMIN"]})
        }),
        ("the host's network", |pod| pod["hostNetwork"] = json!(true)),
        ("the host's processes", |pod| pod["hostPID"] = json!(true)),
        ("a host path", |pod| {
            pod["volumes"]
                .as_array_mut()
                .expect("volumes")
                .push(json!({"name": "host", "hostPath": {"path": "/"}}))
        }),
        ("a service account token", |pod| {
            pod["automountServiceAccountToken"] = json!(true)
        }),
        ("a projected token volume", |pod| {
            pod["volumes"].as_array_mut().expect("volumes").push(json!({
                "name": "token",
                "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]},
            }))
        }),
        ("another service account", |pod| {
            pod["serviceAccountName"] = json!("berth-controller")
        }),
        ("a host port", |pod| {
            pod["containers"][0]["ports"] = json!([{"containerPort": 80, "hostPort": 80}])
        }),
        ("an unconfined step running as root", |pod| {
            for step in pod["initContainers"].as_array_mut().expect("steps") {
                let security = &mut step["securityContext"];
                if security["seccompProfile"]["type"] == json!("Unconfined") {
                    security["runAsUser"] = json!(0);
                    security["runAsNonRoot"] = json!(false);
                }
            }
        }),
        ("a step escalating privileges", |pod| {
            pod["containers"][0]["securityContext"]["allowPrivilegeEscalation"] = json!(true)
        }),
        ("a step without a security context", |pod| {
            pod["containers"][0]
                .as_object_mut()
                .expect("a container")
                .remove("securityContext");
        }),
        ("a sysctl", |pod| {
            pod["securityContext"]["sysctls"] =
                json!([{"name": "net.core.somaxconn", "value": "1024"}])
        }),
    ];
    let mut attempts: Vec<(&str, Refusal, Attempt)> = Vec::new();
    for (what, loosen) in loosened {
        let mut loose = job.clone();
        loosen(&mut loose["spec"]["template"]["spec"]);
        loose["metadata"]["name"] = json!(crate::support::unique("loose"));
        let loose = as_job(loose);
        attempts.push((
            what,
            Refusal::Admission,
            attempt(move |client| {
                let loose = loose.clone();
                async move { jobs(client).create(&dry_run(), &loose).await }
            }),
        ));
    }
    let mut template = job["spec"]["template"].clone();
    template["metadata"]["labels"] = json!({"app": "build"});
    template["spec"]["restartPolicy"] = json!("Always");
    let deployment: Deployment = serde_json::from_value(json!({
        "metadata": {"name": crate::support::unique("refused")},
        "spec": {"selector": {"matchLabels": {"app": "build"}}, "template": template},
    }))
    .expect("a Deployment");
    attempts.push((
        "a Deployment of a build's pod",
        Refusal::Admission,
        attempt(move |client| {
            let deployment = deployment.clone();
            async move {
                Api::<Deployment>::namespaced(client, "berth-builds")
                    .create(&dry_run(), &deployment)
                    .await
            }
        }),
    ));
    refused_as("berth-controller", &controller, &cluster.client, attempts).await;
}
