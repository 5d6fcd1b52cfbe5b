//! The registry builds push to and apps pull from, as the operator set it
//! with `berth-admin registry set`: the ConfigMap [`CONFIG_MAP`] in
//! [`SYSTEM_NAMESPACE`] (`berth_cluster::registry`), and the
//! credentials, which this module alone mints and hands out
//! (`berth_domain::registry` says who each is and what it reaches):
//!
//! - scoped (the registry trusts Berth's token service): each build gets a
//!   push and a pull credential of its own ([`mint_build_credentials`]),
//!   in Secrets of the builds namespace owned by the Build (written never
//!   over a Secret it does not own, deleted by name, never read: the
//!   controller reads no Secret there), deleted when it ends (when they stop working anyway: the token service
//!   asks the Build); each environment gets a pull credential of its own,
//!   [`PULL_SECRET`] in its namespace ([`keep_environment_credential`]),
//!   which its pods name in `imagePullSecrets` (see
//!   `render::RenderSettings::registry_prefix`);
//! - shared (an upgrade's first step): the installation's push credential
//!   [`PUSH_SECRET`] and pull credential [`PULL_SECRET`], copied from
//!   `berth-system` into each environment's namespace ([`copy_pull_secret`]).
//!
//! A password is written once, into the Secret that carries it, and its
//! SHA-256 into the status of what it serves; it is never read back but to
//! check that the Secret still holds the password whose digest the status
//! has.

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use serde_json::json;

use berth_cluster::crd::{
    BUILDS_NAMESPACE, Build, BuildRegistryCredentials, Environment, LABEL_MANAGED_BY, MANAGER,
    object_names,
};
use berth_cluster::is_not_found;
pub use berth_cluster::registry::{
    CONFIG_MAP, CredentialMode, DOCKER_CONFIG_KEY, DOCKER_CONFIG_TYPE, PULL_SECRET, PUSH_SECRET,
    Registry, SYSTEM_NAMESPACE,
};
use berth_cluster::registry::{Credential, credential_of, docker_config_secret};
use berth_domain::credentials::{digest, same_secret};
use berth_domain::registry::{RegistryUser, new_password};

use crate::build_secrets;
use crate::context::FIELD_MANAGER;
use crate::error::Error;

/// The registry credentials of one build's Job: the one place that says
/// which. The `push` step alone mounts `push_secret`; the steps that pull
/// bases (`run-image`, `dockerfile`) mount `pull_secret`, a pull-only
/// credential, when there is one (the Job mounts it as optional: with
/// shared credentials an operator may have given none, and builds then
/// pull anonymously).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildCredentials {
    pub push_secret: String,
    pub pull_secret: Option<String>,
}

/// The Secrets a build's credentials are in: with scoped credentials its
/// own (named after its Job), else the installation's shared ones.
pub fn build_credentials(build: &Build, registry: &Registry) -> BuildCredentials {
    match registry.credentials {
        CredentialMode::Scoped => {
            let job = object_names::build_job(&build.name_any());
            BuildCredentials {
                push_secret: format!("{job}-push"),
                pull_secret: Some(format!("{job}-pull")),
            }
        }
        CredentialMode::Shared => BuildCredentials {
            push_secret: PUSH_SECRET.to_owned(),
            pull_secret: Some(PULL_SECRET.to_owned()),
        },
    }
}

/// What a build says when the registry is not configured.
pub const NOT_CONFIGURED: &str =
    "no image registry is configured for builds: an operator must run `berth-admin registry set`";

/// Reads the registry's ConfigMap: None when it is missing or malformed.
pub async fn read(client: &kube::Client) -> Result<Option<Registry>, Error> {
    let config = Api::<ConfigMap>::namespaced(client.clone(), SYSTEM_NAMESPACE)
        .get_opt(CONFIG_MAP)
        .await?;
    Ok(config.as_ref().and_then(Registry::of))
}

/// Mints a build's two registry credentials into Secrets of the builds
/// namespace owned by the Build (`crate::build_secrets`: never over a
/// Secret it does not own), and answers their digests. `Err(why)`: the
/// build cannot run.
pub async fn mint_build_credentials(
    client: &kube::Client,
    build: &Build,
    registry: &Registry,
    owner: &OwnerReference,
    expires_at: i64,
) -> Result<Result<BuildRegistryCredentials, String>, Error> {
    let secrets = build_credentials(build, registry);
    let name = build.name_any();
    let push = RegistryUser::BuildPush {
        build: name.clone(),
    };
    let pull = RegistryUser::BuildPull { build: name };
    let pull_secret = secrets.pull_secret.unwrap_or_default();
    let push_digest =
        match mint_build_credential(client, build, &secrets.push_secret, &push, registry, owner)
            .await?
        {
            Ok(digest) => digest,
            Err(why) => return Ok(Err(why)),
        };
    let pull_digest =
        match mint_build_credential(client, build, &pull_secret, &pull, registry, owner).await? {
            Ok(digest) => digest,
            Err(why) => return Ok(Err(why)),
        };
    Ok(Ok(BuildRegistryCredentials {
        push_digest,
        pull_digest,
        expires_at,
    }))
}

/// Writes a new password for `user` into the build's Secret `name`, and
/// answers its digest.
async fn mint_build_credential(
    client: &kube::Client,
    build: &Build,
    name: &str,
    user: &RegistryUser,
    registry: &Registry,
    owner: &OwnerReference,
) -> Result<Result<String, String>, Error> {
    let credential = Credential {
        username: user.username(),
        password: new_password(),
    };
    let mut secret = docker_config_secret(
        name,
        BUILDS_NAMESPACE,
        &credential.docker_config(&registry.server),
    );
    secret.metadata.owner_references = Some(vec![owner.clone()]);
    let what = format!("its registry credential {}", user.username());
    Ok(build_secrets::write(client, build, &secret, &what)
        .await?
        .map(|_| digest(&credential.password)))
}

/// Deletes a build's credential Secrets (scoped registries). They stopped
/// working when the build ended; this takes the passwords out of the
/// cluster too.
pub async fn forget_build_credentials(client: &kube::Client, build: &Build) -> Result<(), Error> {
    let job = object_names::build_job(&build.name_any());
    for name in [format!("{job}-push"), format!("{job}-pull")] {
        delete_build_secret(client, &name).await?;
    }
    Ok(())
}

/// Deletes the Secret `name` of the builds namespace, one of a build's own
/// (named after its Job: see [`mint_build_credentials`]), by name: the
/// controller reads no Secret there.
async fn delete_build_secret(client: &kube::Client, name: &str) -> Result<(), Error> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), BUILDS_NAMESPACE);
    match secrets.delete(name, &DeleteParams::default()).await {
        Ok(_) => Ok(()),
        Err(error) if is_not_found(&error) => Ok(()),
        Err(error) => Err(error.into()),
    }
}

/// Keeps an environment's own pull credential in its namespace (scoped
/// registries): [`PULL_SECRET`] holding user `environment/{name}` and a
/// password whose digest is `current_digest` (the Environment's status).
/// A Secret that is missing, holds another user or server, or a password of
/// another digest (a shared credential of before, one edited by hand, one
/// whose digest never reached the status) gets a new password; the digest
/// is read live before that, as `environment` may be behind. Answers the
/// digest the status must hold.
pub async fn keep_environment_credential(
    client: &kube::Client,
    environment: &Environment,
    namespace: &str,
    registry: &Registry,
    current_digest: Option<&str>,
) -> Result<String, Error> {
    let user = RegistryUser::EnvironmentPull {
        environment: environment.name_any(),
    }
    .username();
    let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let held = secrets
        .get_opt(PULL_SECRET)
        .await?
        .and_then(|secret| secret.data)
        .and_then(|mut data| data.remove(DOCKER_CONFIG_KEY))
        .and_then(|config| credential_of(&config.0, &registry.server));
    let holds = |stored: &str| {
        held.as_ref().is_some_and(|held| {
            held.username == user && same_secret(&digest(&held.password), stored)
        })
    };
    if let Some(current) = current_digest.filter(|current| holds(current)) {
        return Ok(current.to_owned());
    }
    // The Environment this reconcile works from can be behind the status
    // the last one wrote (its watch event still on its way): a password
    // minted on that view would lock out pods pulling with the one the
    // status holds. With a password held, one read of the live status
    // before minting.
    if held.is_some()
        && let Some(live) = live_pull_digest(client, environment)
            .await?
            .filter(|live| holds(live))
    {
        return Ok(live);
    }
    let credential = Credential {
        username: user,
        password: new_password(),
    };
    let secret = docker_config_secret(
        PULL_SECRET,
        namespace,
        &credential.docker_config(&registry.server),
    );
    secrets
        .patch(
            PULL_SECRET,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&secret),
        )
        .await?;
    tracing::info!(environment = %environment.name_any(), "registry pull credential minted");
    Ok(digest(&credential.password))
}

/// The pull credential's digest the Environment's live status holds.
async fn live_pull_digest(
    client: &kube::Client,
    environment: &Environment,
) -> Result<Option<String>, Error> {
    Ok(Api::<Environment>::all(client.clone())
        .get_opt(&environment.name_any())
        .await?
        .and_then(|live| live.status)
        .and_then(|status| status.registry_pull_digest))
}

/// Keeps `namespace`'s copy of the shared pull credential the same as
/// Berth's in `berth-system` (shared registries). Without one there,
/// nothing is copied (a copy made before stays until the namespace goes:
/// apps already pulling keep pulling).
pub async fn copy_pull_secret(client: &kube::Client, namespace: &str) -> Result<(), Error> {
    let source = Api::<Secret>::namespaced(client.clone(), SYSTEM_NAMESPACE)
        .get_opt(PULL_SECRET)
        .await?;
    let Some(config) = source
        .and_then(|secret| secret.data)
        .and_then(|mut data| data.remove(DOCKER_CONFIG_KEY))
    else {
        return Ok(());
    };
    let copy = json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": PULL_SECRET,
            "namespace": namespace,
            "labels": { LABEL_MANAGED_BY: MANAGER },
        },
        "type": DOCKER_CONFIG_TYPE,
        "data": { DOCKER_CONFIG_KEY: config },
    });
    Api::<Secret>::namespaced(client.clone(), namespace)
        .patch(
            PULL_SECRET,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&copy),
        )
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use berth_cluster::crd::{EnvType, EnvironmentSpec};
    use kube::api::PostParams;

    use super::*;
    use crate::testing::cluster_with_namespace;

    /// A reconcile working from an Environment whose cached status is
    /// behind the status the last one wrote (no digest yet) keeps the
    /// credential the live status holds: a new one would lock out the pods
    /// already pulling with it.
    #[tokio::test]
    async fn a_stale_view_of_the_status_mints_no_new_pull_credential() {
        let name = "shop-prod";
        let (_cluster, client) = cluster_with_namespace(name).await;
        let environments = Api::<Environment>::all(client.clone());
        let stale = environments
            .create(
                &PostParams::default(),
                &Environment::new(
                    name,
                    EnvironmentSpec {
                        project: "shop".to_owned(),
                        name: "prod".to_owned(),
                        org: "acme".to_owned(),
                        env_type: EnvType::Standard,
                        quota: None,
                        deletion_scheduled_at: None,
                    },
                ),
            )
            .await
            .expect("Environment");
        let registry = Registry {
            prefix: "registry.test/berth".to_owned(),
            server: "registry.test".to_owned(),
            credentials: CredentialMode::Scoped,
        };
        let secrets: Api<Secret> = Api::namespaced(client.clone(), name);
        let minted = keep_environment_credential(&client, &stale, name, &registry, None)
            .await
            .expect("minted");
        let held = secrets.get(PULL_SECRET).await.expect("the Secret").data;
        // The reconcile writes the digest to the status.
        environments
            .patch_status(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({ "status": { "registryPullDigest": minted } })),
            )
            .await
            .expect("status");

        let kept = keep_environment_credential(&client, &stale, name, &registry, None)
            .await
            .expect("kept");
        assert_eq!(kept, minted);
        assert_eq!(
            secrets.get(PULL_SECRET).await.expect("the Secret").data,
            held,
            "the password the pods pull with is unchanged"
        );
    }
}
