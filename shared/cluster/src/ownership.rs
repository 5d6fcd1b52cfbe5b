//! Whose a cluster object is, read from its owner references by uid: the
//! rules by which Berth writes only into namespaces its environments own and
//! only over objects its apps control. Names and labels say nothing here:
//! anyone who can create an object can choose them.

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::ResourceExt;

use super::crd::{Environment, GROUP};

/// The object's controller: its owner reference with `controller: true`
/// (there is at most one).
pub fn controller(meta: &ObjectMeta) -> Option<&OwnerReference> {
    meta.owner_references
        .iter()
        .flatten()
        .find(|owner| owner.controller == Some(true))
}

/// Whether the object's controller is the object with that uid.
pub fn is_controlled_by(meta: &ObjectMeta, uid: &str) -> bool {
    controller(meta).is_some_and(|owner| owner.uid == uid)
}

/// Whether an owner reference names one of Berth's resources of `kind`.
pub fn is_berth(owner: &OwnerReference, kind: &str) -> bool {
    owner.kind == kind
        && owner
            .api_version
            .split_once('/')
            .is_some_and(|(group, _)| group == GROUP)
}

/// Whose an environment's namespace is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NamespaceOwner {
    /// This Environment's (its controller, by uid).
    ThisEnvironment,
    /// An earlier Environment's of the same name, which is going away (its
    /// namespace goes with it).
    EarlierEnvironment,
    /// Anyone else's: another tool's, a cluster namespace, a hand-made one.
    Other,
}

/// Whose `namespace` is, seen from the Environment of its name.
pub fn namespace_owner(namespace: &Namespace, environment: &Environment) -> NamespaceOwner {
    let Some(owner) = controller(&namespace.metadata).filter(|o| is_berth(o, "Environment")) else {
        return NamespaceOwner::Other;
    };
    match environment.metadata.uid.as_deref() {
        Some(uid) if owner.uid == uid => NamespaceOwner::ThisEnvironment,
        _ if owner.name == environment.name_any() => NamespaceOwner::EarlierEnvironment,
        _ => NamespaceOwner::Other,
    }
}

/// Whether `namespace` was made by one of Berth's environments (whichever):
/// its controller is an `Environment`.
pub fn is_environment_namespace(namespace: &Namespace) -> bool {
    controller(&namespace.metadata).is_some_and(|owner| is_berth(owner, "Environment"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crd::{EnvType, EnvironmentSpec};

    fn environment(uid: &str) -> Environment {
        let mut environment = Environment::new(
            "shop-dev",
            EnvironmentSpec {
                project: "shop".into(),
                name: "dev".into(),
                org: "acme".into(),
                env_type: EnvType::Standard,
                quota: None,
                deletion_scheduled_at: None,
            },
        );
        environment.metadata.uid = Some(uid.into());
        environment
    }

    fn owner(
        api_version: &str,
        kind: &str,
        name: &str,
        uid: &str,
        controller: bool,
    ) -> OwnerReference {
        OwnerReference {
            api_version: api_version.into(),
            kind: kind.into(),
            name: name.into(),
            uid: uid.into(),
            controller: Some(controller),
            block_owner_deletion: None,
        }
    }

    fn namespace(owners: Vec<OwnerReference>) -> Namespace {
        Namespace {
            metadata: ObjectMeta {
                name: Some("shop-dev".into()),
                owner_references: Some(owners),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        }
    }

    #[test]
    fn a_namespace_is_an_environments_only_through_its_controller_reference_by_uid() {
        let this = environment("u-1");
        let cases = [
            (
                vec![owner(
                    "berth.dev/v1",
                    "Environment",
                    "shop-dev",
                    "u-1",
                    true,
                )],
                NamespaceOwner::ThisEnvironment,
            ),
            (
                vec![owner(
                    "berth.dev/v1",
                    "Environment",
                    "shop-dev",
                    "u-0",
                    true,
                )],
                NamespaceOwner::EarlierEnvironment,
            ),
            // Not its controller: a reference anyone may add.
            (
                vec![owner(
                    "berth.dev/v1",
                    "Environment",
                    "shop-dev",
                    "u-1",
                    false,
                )],
                NamespaceOwner::Other,
            ),
            // Another group's kind of the same name.
            (
                vec![owner(
                    "example.com/v1",
                    "Environment",
                    "shop-dev",
                    "u-1",
                    true,
                )],
                NamespaceOwner::Other,
            ),
            (
                vec![owner(
                    "berth.dev/v1",
                    "Environment",
                    "other-dev",
                    "u-9",
                    true,
                )],
                NamespaceOwner::Other,
            ),
            (Vec::new(), NamespaceOwner::Other),
        ];
        for (owners, expected) in cases {
            assert_eq!(
                namespace_owner(&namespace(owners.clone()), &this),
                expected,
                "{owners:?}"
            );
        }
        assert!(is_environment_namespace(&namespace(vec![owner(
            "berth.dev/v1",
            "Environment",
            "x",
            "u-5",
            true
        )])));
        assert!(!is_environment_namespace(&namespace(Vec::new())));
    }

    #[test]
    fn control_is_by_uid() {
        let meta = ObjectMeta {
            owner_references: Some(vec![
                owner("apps/v1", "ReplicaSet", "x", "u-2", false),
                owner("berth.dev/v1", "App", "shop", "u-3", true),
            ]),
            ..ObjectMeta::default()
        };
        assert!(is_controlled_by(&meta, "u-3"));
        assert!(!is_controlled_by(&meta, "u-2"));
        assert!(!is_controlled_by(&ObjectMeta::default(), "u-3"));
    }
}
