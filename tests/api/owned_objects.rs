//! Tenancy, parts 1 and 2: an app's objects are its own. The controller never
//! applies over an object it did not create (the App is `RolloutFailed`
//! naming it, and the object is left exactly as it was, its managedFields
//! included); two apps of one environment never render the same object (409
//! naming the other app); deleting an app's volumes deletes only its own
//! claims; and an app created again under its name gets its volumes back.

use std::collections::BTreeMap;

use berth_cluster::crd::{App, LABEL_APP, LABEL_APP_UID, LABEL_MANAGED_BY, LABEL_ORG};
use http::Method;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Service};
use k8s_openapi::api::networking::v1::Ingress;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
use kube::api::{ListParams, PostParams};
use kube::{Api, Resource, ResourceExt};
use serde_json::{Value, json};

use crate::support::{TestApp, TestResponse, eventually};

/// The controller's field manager.
const BERTH: &str = berth_controller::FIELD_MANAGER;
/// Whoever else writes to the cluster.
const SOMEONE_ELSE: &str = "someone-else";

struct Environment<'a> {
    app: &'a TestApp,
    project: String,
    name: &'static str,
}

impl<'a> Environment<'a> {
    async fn ready(app: &'a TestApp, prefix: &str) -> Self {
        let project = app.ready_environment(prefix, "dev").await;
        Self {
            app,
            project,
            name: "dev",
        }
    }

    async fn also(&self, name: &'static str) -> Environment<'a> {
        self.app
            .create_environment(&self.project, json!({"name": name}))
            .await;
        self.app.wait_for_environment(&self.project, name).await;
        Environment {
            app: self.app,
            project: self.project.clone(),
            name,
        }
    }

    fn namespace(&self) -> String {
        format!("{}-{}", self.project, self.name)
    }

    fn apps(&self) -> String {
        format!(
            "/api/v1/projects/{}/environments/{}/apps",
            self.project, self.name
        )
    }

    fn api<K>(&self) -> Api<K>
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
    {
        Api::namespaced(self.app.cluster().client.clone(), &self.namespace())
    }

    async fn create(&self, body: Value) -> TestResponse {
        self.app
            .post(&self.apps())
            .by(&self.app.owner)
            .json(body)
            .send()
            .await
    }

    async fn app_record(&self, name: &str) -> Value {
        self.app
            .get(&format!("{}/{name}", self.apps()))
            .by(&self.app.owner)
            .send()
            .await
            .json()["app"]
            .clone()
    }

    async fn uid_of(&self, name: &str) -> String {
        self.api::<App>().get(name).await.unwrap().uid().unwrap()
    }
}

fn by_someone_else() -> PostParams {
    PostParams {
        field_manager: Some(SOMEONE_ELSE.to_owned()),
        ..PostParams::default()
    }
}

/// The managedFields entries of the main resource, by manager (status
/// writes of the cluster's own controllers come and go on a real cluster).
fn main_entries(entries: &Option<Vec<ManagedFieldsEntry>>) -> BTreeMap<String, ManagedFieldsEntry> {
    entries
        .iter()
        .flatten()
        .filter(|entry| entry.subresource.is_none())
        .map(|entry| (entry.manager.clone().unwrap_or_default(), entry.clone()))
        .collect()
}

fn never_by_berth(kind: &str, entries: &Option<Vec<ManagedFieldsEntry>>) {
    let managers: Vec<_> = entries
        .iter()
        .flatten()
        .map(|e| e.manager.clone())
        .collect();
    assert!(
        !managers.contains(&Some(BERTH.to_owned())),
        "{kind}: {BERTH} wrote to it: {managers:?}"
    );
}

fn claim(name: &str, labels: &[(&str, &str)]) -> PersistentVolumeClaim {
    serde_json::from_value(json!({
        "metadata": {
            "name": name,
            "labels": labels.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect::<BTreeMap<_, _>>(),
        },
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}},
        },
    }))
    .unwrap()
}

/// Objects someone else made under the names an app renders stay exactly as
/// they are: the App is `RolloutFailed` naming them and nothing of it is
/// applied (no Ingress either); no managedFields entry of Berth's appears.
/// Deleting the app (with its volumes) leaves them too.
#[tokio::test]
async fn the_controller_never_applies_over_objects_it_did_not_create() {
    let app = TestApp::with_cluster().await;
    let env = Environment::ready(&app, "foreign").await;
    let deployment: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "shop-web", "labels": {"team": SOMEONE_ELSE}},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"team": SOMEONE_ELSE}},
            "template": {
                "metadata": {"labels": {"team": SOMEONE_ELSE}},
                "spec": {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.9"}]},
            },
        },
    }))
    .unwrap();
    let service: Service = serde_json::from_value(json!({
        "metadata": {"name": "shop-web", "labels": {"team": SOMEONE_ELSE}},
        "spec": {"selector": {"team": SOMEONE_ELSE}, "ports": [{"port": 8080}]},
    }))
    .unwrap();
    let deployment = env
        .api::<Deployment>()
        .create(&by_someone_else(), &deployment)
        .await
        .unwrap();
    let service = env
        .api::<Service>()
        .create(&by_someone_else(), &service)
        .await
        .unwrap();
    let claim = env
        .api::<PersistentVolumeClaim>()
        .create(
            &by_someone_else(),
            &claim("shop-data", &[("team", SOMEONE_ELSE)]),
        )
        .await
        .unwrap();

    env.create(json!({
        "name": "shop", "image": "nginx:1", "port": 80,
        "volumes": [{"name": "data", "mount_path": "/data"}],
    }))
    .await
    .assert_status(201);
    eventually("the App is RolloutFailed naming the objects", || async {
        let record = env.app_record("shop").await;
        let message = record["message"].as_str().unwrap_or_default().to_owned();
        record["reason"] == "RolloutFailed"
            && [
                "Deployment shop-web",
                "Service shop-web",
                "PersistentVolumeClaim shop-data",
            ]
            .iter()
            .all(|object| message.contains(object))
            && message.contains("belong to someone else")
    })
    .await;

    let untouched = || async {
        let now = env.api::<Deployment>().get("shop-web").await.unwrap();
        assert_eq!(now.spec, deployment.spec, "Deployment spec");
        assert_eq!(now.metadata.labels, deployment.metadata.labels);
        assert_eq!(
            now.metadata.owner_references,
            deployment.metadata.owner_references
        );
        assert_eq!(
            main_entries(&now.metadata.managed_fields).get(SOMEONE_ELSE),
            main_entries(&deployment.metadata.managed_fields).get(SOMEONE_ELSE)
        );
        never_by_berth("Deployment", &now.metadata.managed_fields);

        let now = env.api::<Service>().get("shop-web").await.unwrap();
        assert_eq!(now.spec, service.spec, "Service spec");
        assert_eq!(now.metadata.labels, service.metadata.labels);
        assert_eq!(
            now.metadata.owner_references,
            service.metadata.owner_references
        );
        assert_eq!(
            main_entries(&now.metadata.managed_fields),
            main_entries(&service.metadata.managed_fields)
        );
        never_by_berth("Service", &now.metadata.managed_fields);

        let now = env
            .api::<PersistentVolumeClaim>()
            .get("shop-data")
            .await
            .unwrap();
        assert_eq!(now.spec, claim.spec, "claim spec");
        assert_eq!(now.metadata.labels, claim.metadata.labels);
        assert!(now.metadata.deletion_timestamp.is_none());
        assert_eq!(
            main_entries(&now.metadata.managed_fields).get(SOMEONE_ELSE),
            main_entries(&claim.metadata.managed_fields).get(SOMEONE_ELSE)
        );
        never_by_berth("PersistentVolumeClaim", &now.metadata.managed_fields);

        assert!(
            env.api::<Ingress>()
                .get_opt("shop")
                .await
                .unwrap()
                .is_none(),
            "nothing of the app is applied"
        );
    };
    untouched().await;

    app.request(
        Method::DELETE,
        &format!("{}/shop?delete_volumes=true", env.apps()),
    )
    .by(&app.owner)
    .send()
    .await
    .assert_status(204);
    // Time for a wrong delete or a garbage collection to show.
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    untouched().await;
}

/// A scheduled process whose CronJob name someone else holds: the App is
/// `RolloutFailed`, and running it now reads nothing from that CronJob and
/// makes no Job.
#[tokio::test]
async fn run_now_only_runs_the_apps_own_cron_job() {
    let app = TestApp::with_cluster().await;
    let env = Environment::ready(&app, "cron").await;
    let cron_job: CronJob = serde_json::from_value(json!({
        "metadata": {"name": "batch-nightly"},
        "spec": {
            "schedule": "0 3 * * *",
            "jobTemplate": {"spec": {"template": {"spec": {
                "restartPolicy": "OnFailure",
                "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.9"}],
            }}}},
        },
    }))
    .unwrap();
    let cron_job = env
        .api::<CronJob>()
        .create(&by_someone_else(), &cron_job)
        .await
        .unwrap();
    env.create(json!({
        "name": "batch", "image": "busybox:1.37",
        "processes": [{"name": "nightly", "schedule": "0 3 * * *", "command": ["true"]}],
    }))
    .await
    .assert_status(201);
    eventually("the App is RolloutFailed naming the CronJob", || async {
        let record = env.app_record("batch").await;
        record["reason"] == "RolloutFailed"
            && record["message"].as_str().is_some_and(|m| {
                m.contains("CronJob batch-nightly exists and belongs to someone else")
            })
    })
    .await;

    let refused = app
        .post(&format!("{}/batch/run", env.apps()))
        .by(&app.owner)
        .send()
        .await;
    refused.assert_problem(409, "conflict");
    assert!(
        refused.json()["detail"]
            .as_str()
            .is_some_and(|d| d.contains("CronJob batch-nightly belongs to someone else")),
        "{}",
        refused.text()
    );
    let jobs = env.api::<Job>().list(&ListParams::default()).await.unwrap();
    assert!(jobs.items.is_empty(), "no Job was made");
    let now = env.api::<CronJob>().get("batch-nightly").await.unwrap();
    assert_eq!(now.spec, cron_job.spec);
    never_by_berth("CronJob", &now.metadata.managed_fields);
}

async fn refused_naming(answer: TestResponse, expected: &str) {
    answer.assert_problem(409, "conflict");
    let detail = answer.json()["detail"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(detail.contains(expected), "{detail}");
}

/// The two examples, and every way in: create, update, rollback,
/// promote and template deploy are refused (409 naming the other app and
/// the object) when they would render a name of a kind another app of the
/// environment renders; a refused change changes nothing.
#[tokio::test]
async fn two_apps_never_render_the_same_object() {
    let app = TestApp::with_cluster().await;
    let env = Environment::ready(&app, "names").await;

    // Claim `db-data-x`.
    env.create(json!({
        "name": "db", "image": "postgres:16.4", "port": 5432, "protocol": "tcp", "replicas": 0,
        "volumes": [{"name": "data-x", "mount_path": "/data"}],
    }))
    .await
    .assert_status(201);
    refused_naming(
        env.create(json!({
            "name": "db-data", "image": "postgres:16.4", "replicas": 0,
            "volumes": [{"name": "x", "mount_path": "/data"}],
        }))
        .await,
        "PersistentVolumeClaim db-data-x is already rendered by app db",
    )
    .await;

    // Deployment and Service `shop-web-x`.
    env.create(json!({
        "name": "shop-web", "image": "nginx:1",
        "processes": [{"name": "x", "port": 80, "replicas": 0}],
    }))
    .await
    .assert_status(201);
    refused_naming(
        env.create(json!({
            "name": "shop", "image": "nginx:1",
            "processes": [{"name": "web-x", "port": 80, "replicas": 0}],
        }))
        .await,
        "Deployment shop-web-x is already rendered by app shop-web",
    )
    .await;

    // Kinds apart: app `shop-web`'s Ingress `shop-web`, app `shop`'s
    // Deployment and Service `shop-web`.
    env.create(json!({
        "name": "shop", "image": "nginx:1",
        "processes": [{"name": "web", "port": 80, "replicas": 0}],
    }))
    .await
    .assert_status(201);

    // Update.
    let shop = format!("{}/shop", env.apps());
    refused_naming(
        app.request(Method::PATCH, &shop)
            .by(&app.owner)
            .json(json!({"processes": [{"name": "web-x", "port": 80, "replicas": 0}]}))
            .send()
            .await,
        "Deployment shop-web-x is already rendered by app shop-web",
    )
    .await;
    assert_eq!(
        env.app_record("shop").await["revision"],
        1,
        "nothing changed"
    );

    // Rollback: `a` at revision 1 renders `a-b-c`, at revision 2 `a-d`;
    // then app `a-b` takes `a-b-c`.
    env.create(json!({
        "name": "a", "image": "nginx:1", "processes": [{"name": "b-c", "replicas": 0}],
    }))
    .await
    .assert_status(201);
    let a = format!("{}/a", env.apps());
    app.request(Method::PATCH, &a)
        .by(&app.owner)
        .json(json!({"processes": [{"name": "d", "replicas": 0}]}))
        .send()
        .await
        .assert_status(200);
    env.create(json!({
        "name": "a-b", "image": "nginx:1", "processes": [{"name": "c", "replicas": 0}],
    }))
    .await
    .assert_status(201);
    refused_naming(
        app.post(&format!("{a}/rollback"))
            .by(&app.owner)
            .json(json!({"revision": 1}))
            .send()
            .await,
        "Deployment a-b-c is already rendered by app a-b",
    )
    .await;
    assert_eq!(env.app_record("a").await["revision"], 2, "nothing changed");

    // Promote: `shop` of prod runs `web-x`; promoted into dev, it would
    // take `shop-web-x` from `shop-web`.
    let prod = env.also("prod").await;
    prod.create(json!({
        "name": "shop", "image": "nginx:2",
        "processes": [{"name": "web-x", "port": 80, "replicas": 0}],
    }))
    .await
    .assert_status(201);
    refused_naming(
        app.post(&format!("{}/shop/promote", prod.apps()))
            .by(&app.owner)
            .json(json!({"environment": "dev"}))
            .send()
            .await,
        "Deployment shop-web-x is already rendered by app shop-web",
    )
    .await;
    assert_eq!(env.app_record("shop").await["image"], "nginx:1");

    // Template deploy: postgres as `pg-a` renders claim `pg-a-data`, which
    // app `pg` (volume `a-data`) renders; nothing is made, not its secret.
    env.create(json!({
        "name": "pg", "image": "postgres:16.4", "replicas": 0,
        "volumes": [{"name": "a-data", "mount_path": "/data"}],
    }))
    .await
    .assert_status(201);
    refused_naming(
        app.post(&format!(
            "/api/v1/projects/{}/environments/dev/templates/postgres",
            env.project
        ))
        .by(&app.owner)
        .json(json!({"name": "pg-a"}))
        .send()
        .await,
        "PersistentVolumeClaim pg-a-data is already rendered by app pg",
    )
    .await;
    let secret = env
        .api::<k8s_openapi::api::core::v1::Secret>()
        .get_opt("pg-a-generated")
        .await
        .unwrap();
    assert!(secret.is_none(), "no secret was made");
}

/// `delete_volumes=true` deletes the claims labelled with the app's uid,
/// never one that only looks like its own: a claim someone else made with
/// the app's name label, another app's claim whose name starts the same,
/// and a Berth-labelled claim naming another live app's uid all stay, also
/// when the delete is retried.
#[tokio::test]
async fn deleting_an_apps_volumes_deletes_only_its_own_claims() {
    let app = TestApp::with_cluster().await;
    let env = Environment::ready(&app, "claims").await;
    for name in ["db", "dbx"] {
        env.create(json!({
            "name": name, "image": "postgres:16.4", "replicas": 0,
            "volumes": [{"name": "data", "mount_path": "/data"}],
        }))
        .await
        .assert_status(201);
    }
    let claims = env.api::<PersistentVolumeClaim>();
    let db_uid = env.uid_of("db").await;
    let dbx_uid = env.uid_of("dbx").await;
    eventually("the claims carry their apps' uids", || async {
        let label = |name: &'static str| {
            let claims = claims.clone();
            async move {
                claims
                    .get_opt(name)
                    .await
                    .unwrap()
                    .and_then(|c| c.labels().get(LABEL_APP_UID).cloned())
            }
        };
        label("db-data").await.as_ref() == Some(&db_uid)
            && label("dbx-data").await.as_ref() == Some(&dbx_uid)
    })
    .await;
    claims
        .create(&by_someone_else(), &claim("db-notes", &[(LABEL_APP, "db")]))
        .await
        .unwrap();
    claims
        .create(
            &by_someone_else(),
            &claim(
                "db-cache",
                &[
                    (LABEL_MANAGED_BY, "berth"),
                    (LABEL_ORG, &app.owner.org),
                    (LABEL_APP, "db"),
                    (LABEL_APP_UID, &dbx_uid),
                ],
            ),
        )
        .await
        .unwrap();

    let delete = || async {
        app.request(
            Method::DELETE,
            &format!("{}/db?delete_volumes=true", env.apps()),
        )
        .by(&app.owner)
        .send()
        .await
    };
    delete().await.assert_status(204);
    crate::support::cluster::until_claim_deleted(&claims, "db-data").await;
    let survivors = || async {
        for name in ["db-notes", "db-cache", "dbx-data"] {
            let claim = claims.get_opt(name).await.unwrap();
            assert!(
                claim.is_some_and(|c| c.metadata.deletion_timestamp.is_none()),
                "{name} must stay"
            );
        }
    };
    survivors().await;
    // Retried, the app is gone: nothing of its own is left.
    delete().await.assert_problem(404, "not_found");
    survivors().await;
}

/// A volume outlives its app: deleting the app keeps the claim, and an app
/// created again under the same name adopts that very claim (its data),
/// labelled with the new App's uid.
#[tokio::test]
async fn an_app_created_again_gets_its_volume_back() {
    let app = TestApp::with_cluster().await;
    let env = Environment::ready(&app, "again").await;
    let body = json!({
        "name": "db", "image": "postgres:16.4", "port": 5432, "protocol": "tcp", "replicas": 0,
        "volumes": [{"name": "data", "mount_path": "/data"}],
    });
    env.create(body.clone()).await.assert_status(201);
    let claims = env.api::<PersistentVolumeClaim>();
    let first = env.uid_of("db").await;
    let labelled = |uid: String| {
        let claims = claims.clone();
        async move {
            claims
                .get_opt("db-data")
                .await
                .unwrap()
                .filter(|c| c.labels().get(LABEL_APP_UID) == Some(&uid))
        }
    };
    eventually("the claim is the first app's", || async {
        labelled(first.clone()).await.is_some()
    })
    .await;
    let claim_uid = claims.get("db-data").await.unwrap().uid();

    app.request(Method::DELETE, &format!("{}/db", env.apps()))
        .by(&app.owner)
        .send()
        .await
        .assert_status(204);
    env.create(body).await.assert_status(201);
    let second = env.uid_of("db").await;
    assert_ne!(first, second);
    eventually("the claim is adopted by the new app", || async {
        labelled(second.clone()).await.is_some()
    })
    .await;
    assert_eq!(
        claims.get("db-data").await.unwrap().uid(),
        claim_uid,
        "the very same claim, with its data"
    );
    eventually("the new app is Available", || async {
        env.app_record("db").await["reason"] == "Available"
    })
    .await;
}
