//! A pod a client creates meets the admission a real API server gives it:
//! its namespace's Pod Security level (enforce), its LimitRanges (defaults,
//! then min/max) and its ResourceQuotas (LimitRange defaults count). Each
//! refusal is checked by code, reason and the pod it names, and by the parts
//! of its message every Kubernetes version states the same way (the plugin's
//! phrase, the level, the quota's name); the whole wording is pinned by the
//! unit tests beside each plugin's code.

use k8s_openapi::api::core::v1::{LimitRange, Namespace, Pod, ResourceQuota};
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use crate::common::{TestEnv, api_status, assert_refused, eventually};

fn pod(name: &str, spec: Value) -> Pod {
    serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec})).unwrap()
}

fn plain(name: &str) -> Pod {
    pod(
        name,
        json!({"containers": [{"name": "app", "image": "nginx:1.27"}]}),
    )
}

/// A pod shaped as cert-manager's HTTP-01 solver is (restricted: non-root,
/// no privilege escalation, every capability dropped, the runtime's seccomp
/// profile), with its requests and limits.
fn solver(name: &str) -> Pod {
    pod(
        name,
        json!({
            "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{
                "name": "acmesolver",
                "image": "quay.io/jetstack/cert-manager-acmesolver:v1.16.2",
                "ports": [{"name": "http", "containerPort": 8089}],
                "resources": {
                    "requests": {"cpu": "10m", "memory": "64Mi"},
                    "limits": {"cpu": "100m", "memory": "64Mi"},
                },
                "securityContext": {
                    "allowPrivilegeEscalation": false,
                    "readOnlyRootFilesystem": true,
                    "capabilities": {"drop": ["ALL"]},
                },
            }],
        }),
    )
}

async fn enforce(env: &TestEnv, level: &str) {
    let namespaces: Api<Namespace> = Api::all(env.client.clone());
    namespaces
        .patch(
            &env.ns,
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"labels": {"pod-security.kubernetes.io/enforce": level}}}),
            ),
        )
        .await
        .expect("namespace labelled");
}

/// Creates `pod`, expecting the refusal of admission; returns its message.
async fn refused(env: &TestEnv, pod: &Pod) -> String {
    let pods: Api<Pod> = env.api();
    let name = pod.metadata.name.clone().unwrap_or_default();
    let status = api_status(pods.create(&PostParams::default(), pod).await);
    assert_refused(&status, 403, "Forbidden", "pods", &name);
    assert!(
        status
            .message
            .starts_with(&format!("pods \"{name}\" is forbidden: ")),
        "{}",
        status.message
    );
    assert!(
        pods.get_opt(&name).await.unwrap().is_none(),
        "{name} was stored"
    );
    status.message
}

async fn admitted(env: &TestEnv, pod: &Pod) -> Pod {
    let pods: Api<Pod> = env.api();
    pods.create(&PostParams::default(), pod)
        .await
        .unwrap_or_else(|e| panic!("{:?} admitted: {e}", pod.metadata.name))
}

/// Waits (on a real cluster) until the PodSecurity plugin's namespace cache
/// has seen the label: a pod it must refuse is refused.
async fn refused_once_seen(env: &TestEnv, pod: &Pod) -> String {
    let pods: Api<Pod> = env.api();
    let name = pod.metadata.name.clone().unwrap_or_default();
    eventually("the namespace's level is enforced", || async {
        match pods.create(&PostParams::default(), pod).await {
            Ok(_) => {
                let _ = pods.delete(&name, &Default::default()).await;
                false
            }
            Err(_) => true,
        }
    })
    .await;
    refused(env, pod).await
}

#[tokio::test]
async fn baseline_refuses_host_namespaces_and_privilege_and_admits_the_rest() {
    let env = TestEnv::new().await;
    enforce(&env, "baseline").await;
    let message = refused_once_seen(
        &env,
        &pod(
            "host",
            json!({"hostNetwork": true, "containers": [{"name": "app", "image": "nginx:1.27"}]}),
        ),
    )
    .await;
    assert!(
        message.contains(
            "violates PodSecurity \"baseline:latest\": host namespaces (hostNetwork=true)"
        ),
        "{message}"
    );
    let message = refused(
        &env,
        &pod(
            "privileged-init",
            json!({
                "initContainers": [{"name": "setup", "image": "busybox", "securityContext": {"privileged": true}}],
                "containers": [{"name": "app", "image": "nginx:1.27", "securityContext": {"capabilities": {"add": ["NET_ADMIN"]}}}],
            }),
        ),
    )
    .await;
    for part in [
        "non-default capabilities (container \"app\" must not include \"NET_ADMIN\" in securityContext.capabilities.add)",
        "privileged (container \"setup\" must not set securityContext.privileged=true)",
    ] {
        assert!(message.contains(part), "{message}");
    }
    let message = refused(
        &env,
        &pod(
            "host-path",
            json!({
                "volumes": [{"name": "root", "hostPath": {"path": "/"}}],
                "containers": [{"name": "app", "image": "nginx:1.27", "ports": [{"containerPort": 80, "hostPort": 80}]}],
            }),
        ),
    )
    .await;
    assert!(
        message.contains("hostPath volumes (volume \"root\")"),
        "{message}"
    );
    assert!(
        message.contains("hostPort (container \"app\" uses hostPort 80)"),
        "{message}"
    );
    // Baseline asks nothing of a plain pod.
    admitted(&env, &plain("plain")).await;
    admitted(&env, &solver("solver")).await;
}

#[tokio::test]
async fn restricted_admits_the_solver_and_refuses_a_plain_pod_created_or_applied() {
    let env = TestEnv::new().await;
    enforce(&env, "restricted").await;
    let message = refused_once_seen(&env, &plain("plain")).await;
    for part in [
        "violates PodSecurity \"restricted:latest\": ",
        "allowPrivilegeEscalation != false (container \"app\" must set securityContext.allowPrivilegeEscalation=false)",
        "unrestricted capabilities (container \"app\" must set securityContext.capabilities.drop=[\"ALL\"])",
        "runAsNonRoot != true (pod or container \"app\" must set securityContext.runAsNonRoot=true)",
        "seccompProfile (pod or container \"app\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")",
    ] {
        assert!(message.contains(part), "{message}");
    }
    admitted(&env, &solver("solver")).await;

    // A server-side apply that would create the pod meets the same check.
    let pods: Api<Pod> = env.api();
    let mut applied = serde_json::to_value(plain("applied")).unwrap();
    applied["apiVersion"] = json!("v1");
    applied["kind"] = json!("Pod");
    let status = api_status(
        pods.patch(
            "applied",
            &PatchParams::apply("standin-tests"),
            &Patch::Apply(&applied),
        )
        .await,
    );
    assert_refused(&status, 403, "Forbidden", "pods", "applied");
    assert!(pods.get_opt("applied").await.unwrap().is_none());
}

#[tokio::test]
async fn without_a_level_a_namespace_is_privileged() {
    let env = TestEnv::new().await;
    admitted(
        &env,
        &pod(
            "host",
            json!({"hostNetwork": true, "hostPID": true, "containers": [{"name": "app", "image": "nginx:1.27", "securityContext": {"privileged": true}}]}),
        ),
    )
    .await;
}

async fn limit_range(env: &TestEnv) -> LimitRange {
    let ranges: Api<LimitRange> = env.api();
    let range: LimitRange = serde_json::from_value(json!({
        "metadata": {"name": "limits"},
        "spec": {"limits": [{
            "type": "Container",
            "default": {"cpu": "500m", "memory": "256Mi"},
            "defaultRequest": {"cpu": "100m"},
            "max": {"cpu": "1", "memory": "1Gi"},
            "min": {"memory": "16Mi"},
        }]},
    }))
    .unwrap();
    ranges
        .create(&PostParams::default(), &range)
        .await
        .expect("limit range created")
}

fn resources(pod: &Pod) -> Value {
    serde_json::to_value(&pod.spec.as_ref().unwrap().containers[0].resources).unwrap()
}

#[tokio::test]
async fn limit_ranges_fill_in_defaults_then_hold_min_and_max() {
    let env = TestEnv::new().await;
    let range = limit_range(&env).await;
    // The apiserver's defaulting of the LimitRange itself: a default request
    // from the default limit where none is given.
    let stored = serde_json::to_value(&range.spec.unwrap().limits[0]).unwrap();
    assert_eq!(
        stored["defaultRequest"],
        json!({"cpu": "100m", "memory": "256Mi"})
    );

    let defaulted = admitted(&env, &plain("defaulted")).await;
    assert_eq!(
        resources(&defaulted),
        json!({"limits": {"cpu": "500m", "memory": "256Mi"}, "requests": {"cpu": "100m", "memory": "256Mi"}})
    );
    let annotations = defaulted.metadata.annotations.unwrap_or_default();
    assert!(
        annotations
            .get("kubernetes.io/limit-ranger")
            .is_some_and(|note| note.starts_with("LimitRanger plugin set: ")),
        "{annotations:?}"
    );
    // Limits alone: the requests are the limits (pod defaulting), not the
    // LimitRange's default requests.
    let limited = admitted(
        &env,
        &pod(
            "limited",
            json!({"containers": [{"name": "app", "image": "nginx:1.27", "resources": {"limits": {"cpu": "800m", "memory": "512Mi"}}}]}),
        ),
    )
    .await;
    assert_eq!(
        resources(&limited),
        json!({"limits": {"cpu": "800m", "memory": "512Mi"}, "requests": {"cpu": "800m", "memory": "512Mi"}})
    );

    let message = refused(
        &env,
        &pod(
            "too-big",
            json!({"containers": [{"name": "app", "image": "nginx:1.27", "resources": {"limits": {"memory": "2Gi"}}}]}),
        ),
    )
    .await
    .to_lowercase();
    assert!(
        message.contains("maximum memory usage per container is 1gi, but limit is 2gi"),
        "{message}"
    );
    let message = refused(
        &env,
        &pod(
            "too-small",
            json!({"initContainers": [{"name": "setup", "image": "busybox", "resources": {"requests": {"memory": "8Mi"}}}],
                   "containers": [{"name": "app", "image": "nginx:1.27"}]}),
        ),
    )
    .await
    .to_lowercase();
    assert!(
        message.contains("minimum memory usage per container is 16mi, but request is 8mi"),
        "{message}"
    );
}

async fn quota(env: &TestEnv, hard: Value) {
    let quotas: Api<ResourceQuota> = env.api();
    let quota: ResourceQuota =
        serde_json::from_value(json!({"metadata": {"name": "compute"}, "spec": {"hard": hard}}))
            .unwrap();
    quotas
        .create(&PostParams::default(), &quota)
        .await
        .expect("quota created");
    if env.standin.is_none() {
        // A real server admits against the usage its quota controller
        // counted; until then it refuses ("status unknown for quota").
        eventually("the quota controller counts the namespace", || async {
            quotas
                .get("compute")
                .await
                .is_ok_and(|q| q.status.and_then(|s| s.used).is_some())
        })
        .await;
    }
}

#[tokio::test]
async fn quotas_need_every_container_to_state_what_they_bound() {
    let env = TestEnv::new().await;
    quota(
        &env,
        json!({"pods": "5", "limits.cpu": "2", "requests.memory": "1Gi"}),
    )
    .await;
    let message = refused(&env, &plain("unbounded")).await;
    // Since 1.28 the containers are named (`limits.cpu for: app; ...`);
    // before, only the resources were.
    assert!(
        message.contains("failed quota: compute: must specify limits.cpu"),
        "{message}"
    );
    assert!(message.contains("requests.memory"), "{message}");
    admitted(&env, &solver("solver")).await;
}

#[tokio::test]
async fn quotas_count_the_namespaces_pods_after_limit_range_defaults() {
    let env = TestEnv::new().await;
    limit_range(&env).await;
    quota(
        &env,
        json!({"pods": "3", "requests.cpu": "1", "limits.memory": "1Gi"}),
    )
    .await;
    // No resources of its own: the LimitRange's defaults are what the quota sees.
    admitted(&env, &plain("first")).await;
    admitted(&env, &plain("second")).await;
    admitted(&env, &solver("solver")).await;
    let message = refused(&env, &plain("fourth")).await;
    assert!(
        message
            .contains("exceeded quota: compute, requested: pods=1, used: pods=3, limited: pods=3"),
        "{message}"
    );
}
