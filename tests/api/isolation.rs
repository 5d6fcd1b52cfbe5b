//! Issue 15, part 4: pods that cannot reach their neighbours or the cluster.
//! Every environment's namespace gets its NetworkPolicy, Pod Security
//! Admission labels and a storage quota from the controller, and keeps them;
//! no pod Berth renders reaches the host, the cluster's API or more
//! privileges, whatever the App resource holds; and the limits a tenant
//! cannot exceed (sizes, volumes, quotas, release history).

use std::collections::BTreeMap;

use http::Method;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{LimitRange, Namespace, PodSpec, ResourceQuota};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::ResourceExt;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use crate::support::table as store;
use berth_cluster::apps::ANNOTATION_HISTORY;
use berth_cluster::crd::App;
use berth_controller::isolation::{NETWORK_POLICY_NAME, POD_SECURITY_LABELS};
use berth_controller::render::unconfined;
use berth_store::keys;

use crate::support::cluster::INGRESS_NAMESPACE;
use crate::support::{TestApp, eventually};

fn environment_path(project: &str, environment: &str) -> String {
    format!("/api/v1/projects/{project}/environments/{environment}")
}

async fn quota_hard(client: &kube::Client, namespace: &str) -> BTreeMap<String, String> {
    Api::<ResourceQuota>::namespaced(client.clone(), namespace)
        .get("berth-quota")
        .await
        .expect("the environment's quota")
        .spec
        .and_then(|spec| spec.hard)
        .unwrap_or_default()
        .into_iter()
        .map(|(name, quantity)| (name, quantity.0))
        .collect()
}

/// The policy as the controller writes it: every pod of the namespace admits
/// only its own namespace's pods and the ingress controller's namespace,
/// never one Berth manages (a tenant's environment of that name).
fn assert_isolating(policy: &NetworkPolicy) {
    let spec = serde_json::to_value(policy.spec.as_ref().expect("a spec")).unwrap();
    assert_eq!(
        spec,
        json!({
            "podSelector": {},
            "policyTypes": ["Ingress"],
            "ingress": [{ "from": [
                { "podSelector": {} },
                { "namespaceSelector": {
                    "matchLabels": { "kubernetes.io/metadata.name": INGRESS_NAMESPACE },
                    "matchExpressions": [{
                        "key": "app.kubernetes.io/managed-by",
                        "operator": "NotIn",
                        "values": ["berth"]
                    }]
                } }
            ] }]
        })
    );
}

fn pod_security_of(namespace: &Namespace) -> Vec<(String, String)> {
    let labels = namespace.labels();
    POD_SECURITY_LABELS
        .iter()
        .filter_map(|(label, _)| {
            labels
                .get(*label)
                .map(|level| ((*label).to_owned(), level.clone()))
        })
        .collect()
}

fn expected_pod_security() -> Vec<(String, String)> {
    POD_SECURITY_LABELS
        .iter()
        .map(|(label, level)| ((*label).to_owned(), (*level).to_owned()))
        .collect()
}

/// An environment created without a quota is isolated and bounded all the
/// same; what is taken away or changed is put back.
#[tokio::test]
async fn every_environment_is_isolated_and_keeps_it() {
    let app = TestApp::with_cluster().await;
    let project = app.ready_environment("iso", "dev").await;
    let namespace = format!("{project}-dev");
    let client = app.cluster().client.clone();

    let namespaces: Api<Namespace> = Api::all(client.clone());
    let found = namespaces.get(&namespace).await.unwrap();
    assert_eq!(pod_security_of(&found), expected_pod_security());
    assert_eq!(
        expected_pod_security(),
        [
            (
                "pod-security.kubernetes.io/enforce".into(),
                "baseline".into()
            ),
            (
                "pod-security.kubernetes.io/warn".into(),
                "restricted".into()
            ),
            (
                "pod-security.kubernetes.io/audit".into(),
                "restricted".into()
            ),
        ]
    );
    let policies: Api<NetworkPolicy> = Api::namespaced(client.clone(), &namespace);
    let policy = policies.get(NETWORK_POLICY_NAME).await.unwrap();
    assert_isolating(&policy);
    assert_eq!(policy.labels()["app.kubernetes.io/managed-by"], "berth");
    assert_eq!(
        quota_hard(&client, &namespace).await,
        BTreeMap::from([
            ("persistentvolumeclaims".to_owned(), "20".to_owned()),
            ("requests.storage".to_owned(), "1Ti".to_owned()),
        ]),
        "no quota asked: storage is bounded all the same"
    );
    // Containers without requests still fit a quota: the limit range gives them.
    Api::<LimitRange>::namespaced(client.clone(), &namespace)
        .get("berth-defaults")
        .await
        .unwrap();

    // Someone with cluster access drops the policy and loosens the labels:
    // the controller puts both back.
    policies
        .delete(NETWORK_POLICY_NAME, &DeleteParams::default())
        .await
        .unwrap();
    namespaces
        .patch(
            &namespace,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {
                "pod-security.kubernetes.io/enforce": "privileged",
                "pod-security.kubernetes.io/warn": null,
            }}})),
        )
        .await
        .unwrap();
    eventually("the policy is back", || async {
        policies
            .get_opt(NETWORK_POLICY_NAME)
            .await
            .unwrap()
            .is_some()
    })
    .await;
    assert_isolating(&policies.get(NETWORK_POLICY_NAME).await.unwrap());
    eventually("the pod security labels are back", || async {
        pod_security_of(&namespaces.get(&namespace).await.unwrap()) == expected_pod_security()
    })
    .await;
}

/// A tenant asks for storage and volumes within the maxima; beyond them the
/// environment is refused and nothing is made.
#[tokio::test]
async fn quotas_bound_storage_within_the_maxima() {
    let app = TestApp::with_cluster().await;
    let project = app.create_project("quota").await;
    let environments = format!("/api/v1/projects/{project}/environments");
    for bad in [
        json!({"name": "dev", "quota": {"storage": "11Ti"}}),
        json!({"name": "dev", "quota": {"storage": "1Pi"}}),
        json!({"name": "dev", "quota": {"storage": "-1Gi"}}),
        json!({"name": "dev", "quota": {"storage": "plenty"}}),
        json!({"name": "dev", "quota": {"volumes": 101}}),
        json!({"name": "dev", "quota": {"volumes": -1}}),
    ] {
        let refused = app
            .post(&environments)
            .by(&app.owner)
            .json(bad.clone())
            .send()
            .await;
        refused.assert_problem(422, "validation_failed");
        let detail = refused.json()["detail"].as_str().unwrap().to_owned();
        assert!(detail.starts_with("quota."), "{bad}: {detail}");
    }
    app.post(&environments)
        .by(&app.owner)
        .json(json!({"name": "dev", "quota": {"volumes": "many"}}))
        .send()
        .await
        .assert_problem(400, "invalid_request");
    let listed = app.get(&environments).by(&app.owner).send().await.json();
    assert_eq!(listed, json!([]), "nothing was created");

    app.create_environment(
        &project,
        json!({"name": "dev", "quota": {"cpu": "2", "memory": "4Gi", "storage": "200Gi", "volumes": 5}}),
    )
    .await;
    app.wait_for_environment(&project, "dev").await;
    let hard = quota_hard(&app.cluster().client, &format!("{project}-dev")).await;
    assert_eq!(hard["requests.storage"], "200Gi");
    assert_eq!(hard["persistentvolumeclaims"], "5");
    assert_eq!(hard["limits.cpu"], "2");
    assert_eq!(hard["requests.memory"], "4Gi");
}

/// Every pod spec an app's objects hold: Deployments', CronJobs' and a
/// run-now Job's.
fn assert_confined(what: &str, pod: &PodSpec) {
    assert_eq!(unconfined(pod), Vec::<String>::new(), "{what}");
    assert_eq!(pod.automount_service_account_token, Some(false), "{what}");
    let seccomp = pod
        .security_context
        .as_ref()
        .and_then(|context| context.seccomp_profile.as_ref())
        .map(|profile| profile.type_.clone());
    assert_eq!(seccomp.as_deref(), Some("RuntimeDefault"), "{what}");
    for container in &pod.containers {
        let context = container.security_context.clone().unwrap_or_default();
        assert_eq!(context.allow_privilege_escalation, Some(false), "{what}");
        assert!(
            context.privileged.is_none() && context.capabilities.is_none(),
            "{what}"
        );
    }
    let text = serde_json::to_string(pod).unwrap();
    for field in [
        "hostNetwork",
        "hostPID",
        "hostIPC",
        "hostPath",
        "hostPort",
        "privileged",
    ] {
        assert!(!text.contains(field), "{what}: {field} in {text}");
    }
}

/// Apps of every shape, one of them written by someone with cluster access
/// with fields Berth's schema does not have (the apiserver prunes them; the
/// stand-in keeps them, and the controller ignores them): no pod of any
/// reaches the host, the cluster's API or more privileges.
#[tokio::test]
async fn no_pod_reaches_the_host_or_the_cluster() {
    let app = TestApp::with_cluster().await;
    let project = app.ready_environment("pods", "dev").await;
    let namespace = format!("{project}-dev");
    let client = app.cluster().client.clone();
    let apps = format!("{}/apps", environment_path(&project, "dev"));
    for body in [
        json!({"name": "web", "image": "nginx:1.27", "port": 80, "health_check_path": "/"}),
        json!({"name": "db", "image": "postgres:16.4", "port": 5432, "protocol": "tcp",
               "size": "16/64Gi", "fs_group": 999,
               "volumes": [{"name": "data", "mount_path": "/var/lib/postgresql/data", "size": "10Gi"}]}),
        json!({"name": "shop", "image": "python:3.12", "processes": [
            {"name": "web", "port": 8000, "command": ["python", "-m", "http.server"], "replicas": 2, "max_replicas": 4},
            {"name": "worker", "command": ["python", "worker.py"]},
            {"name": "nightly", "schedule": "0 3 * * *", "command": ["python", "report.py"]}
        ]}),
    ] {
        app.create_app(&apps, body).await;
    }
    // Redis from the catalogue: its password comes from the generated
    // secret, through the environment.
    app.post(&format!(
        "{}/templates/redis",
        environment_path(&project, "dev")
    ))
    .by(&app.owner)
    .send()
    .await
    .assert_status(201);

    // The web app's App resource, rewritten with foreign fields everywhere.
    let resource = ApiResource::erase::<App>(&());
    let dynamic: Api<DynamicObject> = Api::namespaced_with(client.clone(), &namespace, &resource);
    for attempt in 1.. {
        let mut written = dynamic.get("web").await.unwrap();
        let spec = &mut written.data["spec"];
        for (field, value) in [
            ("hostNetwork", json!(true)),
            ("hostPID", json!(true)),
            ("hostIPC", json!(true)),
            ("serviceAccountName", json!("default")),
            ("automountServiceAccountToken", json!(true)),
            (
                "securityContext",
                json!({"privileged": true, "runAsUser": 0}),
            ),
            ("restartedAt", json!("2030-01-01T00:00:00Z")),
        ] {
            spec[field] = value;
        }
        spec["processes"][0]["securityContext"] =
            json!({"privileged": true, "capabilities": {"add": ["SYS_ADMIN"]}});
        spec["processes"][0]["hostPort"] = json!(80);
        spec["volumes"] = json!([{"name": "root", "mountPath": "/host", "size": "1Gi",
                                  "hostPath": {"path": "/"}}]);
        match dynamic
            .replace("web", &PostParams::default(), &written)
            .await
        {
            Ok(_) => break,
            // The controller wrote the App's status meanwhile: read it again.
            Err(kube::Error::Api(status)) if status.code == 409 && attempt < 5 => {}
            Err(error) => {
                panic!("the apiserver takes the App, dropping what its schema lacks: {error}")
            }
        }
    }

    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &namespace);
    let restarted = |deployment: &Deployment| {
        deployment
            .spec
            .as_ref()
            .and_then(|spec| spec.template.metadata.as_ref())
            .and_then(|meta| meta.annotations.as_ref())
            .is_some_and(|annotations| {
                annotations
                    .get("kubectl.kubernetes.io/restartedAt")
                    .map(String::as_str)
                    == Some("2030-01-01T00:00:00Z")
            })
    };
    eventually("the rewritten App is rendered", || async {
        deployments
            .get_opt("web-web")
            .await
            .unwrap()
            .is_some_and(|d| restarted(&d))
    })
    .await;
    eventually("every always-on process is rendered", || async {
        deployments
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .len()
            == 5
    })
    .await;
    for deployment in deployments.list(&Default::default()).await.unwrap() {
        let name = deployment.name_any();
        let pod = deployment.spec.unwrap().template.spec.unwrap();
        assert_confined(&name, &pod);
        assert!(
            pod.volumes
                .iter()
                .flatten()
                .all(|v| v.persistent_volume_claim.is_some()),
            "{name}: only claims are mounted"
        );
    }
    let redis = deployments.get("redis-redis").await.unwrap();
    let container = redis
        .spec
        .unwrap()
        .template
        .spec
        .unwrap()
        .containers
        .remove(0);
    let command = container.command.unwrap();
    let at = command
        .iter()
        .position(|arg| arg == "--requirepass")
        .unwrap();
    assert_eq!(command[at + 1], "$(REDIS_PASSWORD)");
    let password = container
        .env
        .unwrap()
        .into_iter()
        .find(|var| var.name == "REDIS_PASSWORD")
        .unwrap();
    let reference = password.value_from.unwrap().secret_key_ref.unwrap();
    assert_eq!(reference.name, "redis-generated");

    let cron_jobs: Api<CronJob> = Api::namespaced(client.clone(), &namespace);
    eventually("the nightly CronJob is there", || async {
        cron_jobs.get_opt("shop-nightly").await.unwrap().is_some()
    })
    .await;
    let cron_job = cron_jobs.get("shop-nightly").await.unwrap();
    let job_pod = cron_job
        .spec
        .unwrap()
        .job_template
        .spec
        .unwrap()
        .template
        .spec
        .unwrap();
    assert_confined("shop-nightly", &job_pod);
    let run = app
        .post(&format!("{apps}/shop/run"))
        .by(&app.owner)
        .send()
        .await;
    run.assert_status(202);
    let job_name = run.json()["job"].as_str().unwrap().to_owned();
    // The controller makes the Job from the Run, in its own time.
    let jobs = Api::<Job>::namespaced(client.clone(), &namespace);
    eventually("the run's Job is made", || async {
        jobs.get_opt(&job_name).await.unwrap().is_some()
    })
    .await;
    let job = jobs.get(&job_name).await.unwrap();
    assert_confined(&job_name, &job.spec.unwrap().template.spec.unwrap());
}

/// Sizes, volumes and release history stop where docs/api-notes.md says.
#[tokio::test]
async fn limits_a_tenant_cannot_exceed() {
    let app = TestApp::with_cluster().await;
    let project = app.ready_environment("limits", "dev").await;
    let apps = format!("{}/apps", environment_path(&project, "dev"));
    for (body, field) in [
        (
            json!({"name": "big", "image": "nginx", "size": "17/1Gi"}),
            "size:",
        ),
        (
            json!({"name": "big", "image": "nginx", "size": "1/65Gi"}),
            "size:",
        ),
        (
            json!({"name": "big", "image": "nginx", "processes": [{"name": "web", "size": "16/64Gi"}, {"name": "w", "size": "32/1Gi"}]}),
            "processes[1].size:",
        ),
        (
            json!({"name": "big", "image": "nginx", "volumes": [{"name": "data", "mount_path": "/d", "size": "1025Gi"}]}),
            "volumes[0].size:",
        ),
    ] {
        let refused = app
            .post(&apps)
            .by(&app.owner)
            .json(body.clone())
            .send()
            .await;
        refused.assert_problem(422, "validation_failed");
        let detail = refused.json()["detail"].as_str().unwrap().to_owned();
        assert!(detail.starts_with(field), "{body}: {detail}");
    }
    // The largest volume, which the default quota's storage just holds.
    let volume = json!({"name": "data", "mount_path": "/d", "size": "1Ti"});
    app.create_app(
        &apps,
        json!({"name": "shop", "image": "nginx", "volumes": [volume]}),
    )
    .await;
    let shop = format!("{apps}/shop");
    let grow = |size: &str| {
        app.request(Method::PATCH, &shop)
            .by(&app.owner)
            .json(json!({"volumes": [{"name": "data", "mount_path": "/d", "size": size}]}))
            .send()
    };
    grow("2Ti").await.assert_problem(422, "validation_failed");
    app.request(Method::PATCH, &shop)
        .by(&app.owner)
        .json(json!({"size": "16001m/1Gi"}))
        .send()
        .await
        .assert_problem(422, "validation_failed");

    // Release history: 50 revisions kept, the oldest pruned as the newest is
    // written; a pruned revision is unknown to a rollback.
    for revision in 2..=52 {
        app.request(Method::PATCH, &shop)
            .by(&app.owner)
            .json(json!({"env": [{"name": "REVISION", "value": revision.to_string()}]}))
            .send()
            .await
            .assert_status(200);
    }
    let listed = app
        .get(&format!("{shop}/releases"))
        .by(&app.owner)
        .send()
        .await;
    listed.assert_status(200);
    let revisions: Vec<i64> = listed
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|release| release["revision"].as_i64().unwrap())
        .collect();
    assert_eq!(revisions, (3..=52).rev().collect::<Vec<_>>());
    let history = Api::<App>::namespaced(app.cluster().client.clone(), &format!("{project}-dev"))
        .get("shop")
        .await
        .unwrap()
        .annotations()[ANNOTATION_HISTORY]
        .clone();
    let stored = app
        .dynamodb
        .query()
        .table_name(app.state.store.table())
        .key_condition_expression("pk = :pk")
        .expression_attribute_values(":pk", store::s(keys::releases(&history)))
        .consistent_read(true)
        .send()
        .await
        .unwrap()
        .items
        .unwrap_or_default();
    assert_eq!(stored.len(), 50, "the store keeps no more than it shows");
    for pruned in [1, 2] {
        let refused = app
            .post(&format!("{shop}/rollback"))
            .by(&app.owner)
            .json(json!({"revision": pruned}))
            .send()
            .await;
        refused.assert_problem(422, "validation_failed");
        assert_eq!(
            refused.json()["detail"],
            format!("revision: the app has no revision {pruned}")
        );
    }
    let rolled_back = app
        .post(&format!("{shop}/rollback"))
        .by(&app.owner)
        .json(json!({"revision": 3}))
        .send()
        .await;
    rolled_back.assert_status(200);
    assert_eq!(
        rolled_back.json()["env"],
        json!([{"name": "REVISION", "value": "3"}])
    );
    let after: Vec<Value> = app
        .get(&format!("{shop}/releases"))
        .by(&app.owner)
        .send()
        .await
        .json()
        .as_array()
        .cloned()
        .unwrap();
    assert_eq!(after.len(), 50);
    assert_eq!(after[0]["revision"], 53);
    assert_eq!(after[49]["revision"], 4);
}

/// The namespace every environment admits traffic from is never a
/// tenant's (issue 46, part 4): the API refuses an environment whose
/// namespace is a well-known tool's (`ingress` + `nginx`) or the ingress
/// controller's, and the controller gives an Environment written past the
/// API no namespace, saying why.
#[tokio::test]
async fn no_environment_takes_the_ingress_controllers_namespace() {
    let app = TestApp::with_cluster().await;
    // `istio-…`: every namespace of such a project would be a mesh's.
    let refused = app
        .post("/api/v1/projects")
        .by(&app.owner)
        .json(json!({ "name": crate::support::unique("istio"), "display_name": "mesh" }))
        .send()
        .await;
    refused.assert_problem(422, "validation_failed");
    assert!(refused.text().contains("reserved"), "{}", refused.text());
    // Written to the cluster directly, named as the tests' ingress
    // controller's namespace (`berth-tests-ingress`), which the API would
    // refuse.
    let (owner, rest) = INGRESS_NAMESPACE.split_once('-').unwrap();
    let resource = app.create_environment_resource(owner, rest, None).await;
    let environments: Api<berth_cluster::crd::Environment> = Api::all(app.cluster().client.clone());
    eventually("the environment is refused its namespace", || async {
        let status = environments
            .get(&resource.name_any())
            .await
            .expect("the Environment")
            .status
            .unwrap_or_default();
        status.phase.as_deref() == Some("Degraded")
            && status
                .message
                .is_some_and(|message| message.contains("the ingress controller's"))
    })
    .await;
    let namespace = Api::<Namespace>::all(app.cluster().client.clone())
        .get_opt(INGRESS_NAMESPACE)
        .await
        .expect("reading the namespace");
    assert!(
        namespace.is_none_or(|namespace| namespace
            .labels()
            .get(berth_cluster::crd::LABEL_MANAGED_BY)
            .is_none_or(|manager| manager != berth_cluster::crd::MANAGER)),
        "Berth made no namespace of that name"
    );
    environments
        .delete(&resource.name_any(), &DeleteParams::default())
        .await
        .expect("deleting the Environment");
}

/// `berth-system` runs the controller's pods only, under Pod Security
/// `restricted` (issue 46, part 5), which the controller's own pod
/// template meets; a privileged pod there is refused whoever asks.
#[tokio::test]
async fn berth_system_admits_the_controllers_pod_and_nothing_privileged() {
    let app = TestApp::with_cluster().await;
    let deployment = crate::support::identities::documents("controller.yaml")
        .into_iter()
        .find(|doc| doc["kind"].as_str() == Some("Deployment"))
        .expect("the controller's Deployment");
    let template = serde_json::to_value(&deployment["spec"]["template"]).unwrap();
    let pod = |spec: Value| -> k8s_openapi::api::core::v1::Pod {
        serde_json::from_value(json!({
            "metadata": { "name": crate::support::unique("probe") },
            "spec": spec,
        }))
        .expect("a Pod")
    };
    let pods: Api<k8s_openapi::api::core::v1::Pod> =
        Api::namespaced(app.cluster().client.clone(), "berth-system");
    let dry_run = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    pods.create(&dry_run, &pod(template["spec"].clone()))
        .await
        .expect("the controller's pod meets restricted");
    let privileged = json!({ "containers": [{
        "name": "c", "image": "busybox",
        "securityContext": { "privileged": true }
    }] });
    let refused = pods
        .create(&dry_run, &pod(privileged))
        .await
        .expect_err("a privileged pod is refused");
    assert!(
        matches!(&refused, kube::Error::Api(status) if status.code == 403),
        "{refused:?}"
    );
}
