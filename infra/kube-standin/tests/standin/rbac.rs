//! Tokens from the TokenRequest API and RBAC: a ServiceAccount may do what its
//! ClusterRoles grant and nothing else, and is refused as a real API server
//! refuses. On a real cluster these pass unchanged (they make their own
//! ServiceAccount, ClusterRole and binding, and remove them).

use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{ConfigMap, Pod, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::config::AuthInfo;
use serde_json::json;

use crate::common::{TestEnv, api_status, assert_refused, clean_up, eventually};

/// A ServiceAccount in the test's namespace, bound to a ClusterRole with
/// `rules`; removed (with its role and binding) when dropped.
struct Account {
    name: String,
    client: kube::Client,
    /// The administrator's kubeconfig of a real cluster, which keeps what
    /// the test leaves; none on the stand-in, which goes with the test.
    real_cluster: Option<String>,
}

impl Account {
    async fn new(env: &TestEnv, rules: serde_json::Value) -> Account {
        let name = format!("{}-sa", env.ns);
        let accounts: Api<ServiceAccount> = env.api();
        let account = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
        accounts
            .create(&PostParams::default(), &account)
            .await
            .unwrap();
        let role: ClusterRole =
            serde_json::from_value(json!({"metadata": {"name": name}, "rules": rules})).unwrap();
        Api::<ClusterRole>::all(env.client.clone())
            .create(&PostParams::default(), &role)
            .await
            .unwrap();
        let binding: ClusterRoleBinding = serde_json::from_value(json!({
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": env.ns}],
        }))
        .unwrap();
        Api::<ClusterRoleBinding>::all(env.client.clone())
            .create(&PostParams::default(), &binding)
            .await
            .unwrap();
        let token = request_token(&accounts, &name, Some(3600)).await.unwrap();
        let client = env
            .client_with(|config| {
                config.auth_info = AuthInfo {
                    token: Some(token.into()),
                    ..AuthInfo::default()
                };
            })
            .await;
        Account {
            name,
            client,
            real_cluster: env.standin.is_none().then(|| env.kubeconfig().to_owned()),
        }
    }
}

impl Drop for Account {
    /// Its ClusterRole and binding are cluster-wide: removed, also on a
    /// real cluster (the ServiceAccount goes with the test's namespace).
    fn drop(&mut self) {
        let Some(kubeconfig) = &self.real_cluster else {
            return;
        };
        let name = self.name.clone();
        clean_up(kubeconfig, |admin| async move {
            let _ = Api::<ClusterRoleBinding>::all(admin.clone())
                .delete(&name, &DeleteParams::default())
                .await;
            let _ = Api::<ClusterRole>::all(admin)
                .delete(&name, &DeleteParams::default())
                .await;
        });
    }
}

async fn request_token(
    accounts: &Api<ServiceAccount>,
    name: &str,
    seconds: Option<i64>,
) -> Result<String, kube::Error> {
    let request = TokenRequest {
        spec: TokenRequestSpec {
            expiration_seconds: seconds,
            ..TokenRequestSpec::default()
        },
        ..TokenRequest::default()
    };
    let issued = accounts
        .create_token_request(name, &PostParams::default(), &request)
        .await?;
    let status = issued.status.expect("a TokenRequest status");
    assert!(
        status.expiration_timestamp.0 > jiff::Timestamp::now(),
        "expires in the future"
    );
    Ok(status.token)
}

fn config_map(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"k": "v"}})).unwrap()
}

/// Makes the ConfigMap `shown` in `env`'s namespace; the account's view of
/// that namespace's ConfigMaps.
async fn shown_map(env: &TestEnv, account: &Account) -> Api<ConfigMap> {
    env.api::<ConfigMap>()
        .create(&PostParams::default(), &config_map("shown"))
        .await
        .unwrap();
    Api::namespaced(account.client.clone(), &env.ns)
}

#[tokio::test]
async fn a_service_account_may_do_what_its_role_grants_and_nothing_else() {
    let env = TestEnv::new().await;
    let account = Account::new(
        &env,
        json!([
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
        ]),
    )
    .await;
    let maps = shown_map(&env, &account).await;
    // A real API server's authorizer learns of a new binding through its cache.
    eventually("the binding takes effect", || async {
        maps.list(&ListParams::default()).await.is_ok()
    })
    .await;
    assert_eq!(maps.get("shown").await.unwrap().data.unwrap()["k"], "v");
    // Discovery and the version are open to every authenticated caller.
    account.client.apiserver_version().await.unwrap();

    let refused = api_status(
        maps.create(&PostParams::default(), &config_map("mine"))
            .await,
    );
    assert_refused(&refused, 403, "Forbidden", "configmaps", "");
    // A subresource grants nothing on its resource.
    let pods: Api<Pod> = Api::namespaced(account.client.clone(), &env.ns);
    let refused = api_status(pods.get("any").await);
    assert_refused(&refused, 403, "Forbidden", "pods", "any");
    // Cluster-scoped resources it was not given.
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(account.client.clone());
    let refused = api_status(namespaces.list(&ListParams::default()).await);
    assert_refused(&refused, 403, "Forbidden", "namespaces", "");
}

/// Server-side apply of an object that does not exist yet creates it, which
/// needs `create` as well as `patch`.
#[tokio::test]
async fn an_apply_that_creates_needs_create_too() {
    let env = TestEnv::new().await;
    let account = Account::new(
        &env,
        json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "patch"]}]),
    )
    .await;
    let maps: Api<ConfigMap> = Api::namespaced(account.client.clone(), &env.ns);
    let apply = PatchParams::apply("rbac-test");
    eventually("the binding takes effect", || async {
        matches!(maps.get("absent").await, Err(kube::Error::Api(s)) if s.code == 404)
    })
    .await;
    let refused = api_status(
        maps.patch("applied", &apply, &Patch::Apply(config_map("applied")))
            .await,
    );
    // A real API server says only `configmaps "applied" is forbidden: `.
    assert_refused(&refused, 403, "Forbidden", "configmaps", "applied");
    env.api::<ConfigMap>()
        .create(&PostParams::default(), &config_map("applied"))
        .await
        .unwrap();
    maps.patch("applied", &apply, &Patch::Apply(config_map("applied")))
        .await
        .expect("an apply to an existing object is a patch");
}

#[tokio::test]
async fn tokens_are_refused_when_unknown_or_their_account_is_gone() {
    let env = TestEnv::new().await;
    let account = Account::new(
        &env,
        json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}]),
    )
    .await;
    let maps: Api<ConfigMap> = Api::namespaced(account.client.clone(), &env.ns);
    eventually("the binding takes effect", || async {
        maps.list(&ListParams::default()).await.is_ok()
    })
    .await;

    let stranger = env
        .client_with(|config| {
            config.auth_info = AuthInfo {
                token: Some("not-a-token-anyone-issued".to_owned().into()),
                ..AuthInfo::default()
            };
        })
        .await;
    let refused = api_status(
        Api::<ConfigMap>::namespaced(stranger, &env.ns)
            .list(&ListParams::default())
            .await,
    );
    assert_eq!(
        (refused.code, refused.reason.as_str()),
        (401, "Unauthorized")
    );

    let accounts: Api<ServiceAccount> = env.api();
    let too_short = api_status(request_token(&accounts, &account.name, Some(60)).await);
    assert_eq!(too_short.code, 422, "{}", too_short.message);

    accounts
        .delete(&account.name, &DeleteParams::default())
        .await
        .unwrap();
    eventually("the deleted account's token is refused", || async {
        matches!(maps.list(&ListParams::default()).await, Err(kube::Error::Api(s)) if s.code == 401)
    })
    .await;
}

/// A RoleBinding grants its Role's rules (or a ClusterRole's) in its own
/// namespace only.
#[tokio::test]
async fn a_role_binding_grants_in_its_namespace_only() {
    let env = TestEnv::new().await;
    let account = Account::new(&env, json!([])).await;
    let role: Role = serde_json::from_value(json!({
        "metadata": {"name": "maps-reader"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}],
    }))
    .unwrap();
    env.api::<Role>()
        .create(&PostParams::default(), &role)
        .await
        .unwrap();
    let binding: RoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "maps-reader"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "maps-reader"},
        "subjects": [{"kind": "ServiceAccount", "name": account.name, "namespace": env.ns}],
    }))
    .unwrap();
    env.api::<RoleBinding>()
        .create(&PostParams::default(), &binding)
        .await
        .unwrap();
    let maps = shown_map(&env, &account).await;
    eventually("the binding takes effect", || async {
        maps.get("shown").await.is_ok()
    })
    .await;
    let refused = api_status(maps.list(&ListParams::default()).await);
    assert_eq!(refused.code, 403, "only get was granted");
    let elsewhere: Api<ConfigMap> = Api::namespaced(account.client.clone(), "default");
    let refused = api_status(elsewhere.get("kube-root-ca.crt").await);
    assert_refused(&refused, 403, "Forbidden", "configmaps", "kube-root-ca.crt");
}
