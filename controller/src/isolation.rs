//! What keeps one environment's pods to themselves, beyond their namespace.
//! The controller applies it to every environment's namespace and keeps it
//! there (server-side apply at every reconcile):
//!
//! - a NetworkPolicy that admits traffic into the namespace's pods only from
//!   pods of the same namespace and from the ingress controller's namespace;
//! - Pod Security Admission labels: `baseline` enforced, `restricted`
//!   warned and audited;
//! - a ResourceQuota that always bounds storage: the total requested by the
//!   namespace's volumes and their number, with platform defaults when the
//!   environment names none and maxima no tenant can exceed (the rules the
//!   API holds tenants to, `berth_cluster::quota`).
//!
//! The policy is for ingress only, on purpose: egress rules by IP block
//! behave differently per network plugin for pod addresses, so a rule meant
//! to keep pods from each other could as well cut them off from the DNS or
//! let them through. Ingress rules by namespace behave the same everywhere.

use std::collections::BTreeMap;

use k8s_openapi::api::networking::v1::{
    NetworkPolicy, NetworkPolicyIngressRule, NetworkPolicyPeer, NetworkPolicySpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelector, LabelSelectorRequirement, ObjectMeta,
};

use berth_cluster::crd::{LABEL_MANAGED_BY, MANAGER};
use berth_cluster::quota::{DEFAULT_STORAGE, DEFAULT_VOLUMES, MAX_STORAGE, MAX_VOLUMES};
use berth_domain::parts::Quota;
use berth_domain::size::Quantity;

/// The NetworkPolicy of every environment's namespace.
pub const NETWORK_POLICY_NAME: &str = "berth-isolation";
/// Where the ingress controller runs when the controller is not told
/// otherwise (`BERTH_INGRESS_NAMESPACE`): ingress-nginx's own default.
pub const DEFAULT_INGRESS_NAMESPACE: &str = "ingress-nginx";
/// The label the apiserver puts on every namespace, naming it: a selector on
/// it cannot be matched by a namespace of another name.
pub const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// The Pod Security Admission labels of every environment's namespace.
pub const POD_SECURITY_LABELS: [(&str, &str); 3] = [
    ("pod-security.kubernetes.io/enforce", "baseline"),
    ("pod-security.kubernetes.io/warn", "restricted"),
    ("pod-security.kubernetes.io/audit", "restricted"),
];

/// The metadata of a NetworkPolicy of Berth's (`name` in `namespace`),
/// labelled as Berth's so that the controller's watch sees it changed.
pub fn policy_metadata(name: &str, namespace: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        namespace: Some(namespace.to_owned()),
        labels: Some(BTreeMap::from([(
            LABEL_MANAGED_BY.to_owned(),
            MANAGER.to_owned(),
        )])),
        ..ObjectMeta::default()
    }
}

/// The namespace's NetworkPolicy: every pod of it (`podSelector: {}`) admits
/// only traffic from pods of the same namespace (a peer with only a
/// `podSelector`) and from any pod of the namespace named
/// `ingress_namespace` — one Berth does not manage: were a tenant's
/// environment ever given that name (the ingress controller installed
/// later, or moved), its pods would not be let in.
pub fn network_policy(namespace: &str, ingress_namespace: &str) -> NetworkPolicy {
    NetworkPolicy {
        metadata: policy_metadata(NETWORK_POLICY_NAME, namespace),
        spec: Some(NetworkPolicySpec {
            pod_selector: Some(LabelSelector::default()),
            policy_types: Some(vec!["Ingress".to_owned()]),
            ingress: Some(vec![NetworkPolicyIngressRule {
                from: Some(vec![
                    NetworkPolicyPeer {
                        pod_selector: Some(LabelSelector::default()),
                        ..NetworkPolicyPeer::default()
                    },
                    NetworkPolicyPeer {
                        namespace_selector: Some(LabelSelector {
                            match_labels: Some(BTreeMap::from([(
                                NAMESPACE_NAME_LABEL.to_owned(),
                                ingress_namespace.to_owned(),
                            )])),
                            match_expressions: Some(vec![LabelSelectorRequirement {
                                key: LABEL_MANAGED_BY.to_owned(),
                                operator: "NotIn".to_owned(),
                                values: Some(vec![MANAGER.to_owned()]),
                            }]),
                        }),
                        ..NetworkPolicyPeer::default()
                    },
                ]),
                ports: None,
            }]),
            egress: None,
        }),
    }
}

fn quantity(text: &str) -> Option<Quantity> {
    Quantity::parse(text).ok()
}

/// The `hard` limits of the namespace's ResourceQuota: CPU, memory and pods
/// as the environment asks (none when it does not), and always storage and
/// the number of claims. The Environment resource is read as untrusted
/// (anyone with cluster access can edit it): storage or a count past the
/// maxima is held to them, one that does not parse gets the default.
pub fn quota_hard(quota: Option<&Quota>) -> BTreeMap<String, String> {
    let mut hard = BTreeMap::new();
    let quota = quota.cloned().unwrap_or_default();
    if let Some(cpu) = &quota.cpu {
        hard.insert("requests.cpu".to_owned(), cpu.clone());
        hard.insert("limits.cpu".to_owned(), cpu.clone());
    }
    if let Some(memory) = &quota.memory {
        hard.insert("requests.memory".to_owned(), memory.clone());
        hard.insert("limits.memory".to_owned(), memory.clone());
    }
    if let Some(pods) = quota.pods {
        hard.insert("pods".to_owned(), pods.to_string());
    }
    let asked = quota.storage.as_deref().and_then(quantity);
    let storage = match (asked, quantity("0"), quantity(MAX_STORAGE)) {
        (Some(asked), Some(zero), _) if asked < zero => "0".to_owned(),
        (Some(asked), _, Some(max)) if asked > max => MAX_STORAGE.to_owned(),
        (Some(asked), ..) => asked.as_str().to_owned(),
        (None, ..) => DEFAULT_STORAGE.to_owned(),
    };
    hard.insert("requests.storage".to_owned(), storage);
    let volumes = quota
        .volumes
        .unwrap_or(DEFAULT_VOLUMES)
        .clamp(0, MAX_VOLUMES);
    hard.insert("persistentvolumeclaims".to_owned(), volumes.to_string());
    hard
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hard(quota: Option<Quota>) -> BTreeMap<String, String> {
        quota_hard(quota.as_ref())
    }

    fn pairs(map: &BTreeMap<String, String>) -> Vec<(&str, &str)> {
        map.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
    }

    #[test]
    fn every_environment_has_a_storage_quota() {
        assert_eq!(
            pairs(&hard(None)),
            [
                ("persistentvolumeclaims", "20"),
                ("requests.storage", "1Ti")
            ]
        );
        let asked = hard(Some(Quota {
            cpu: Some("2".into()),
            memory: Some("4Gi".into()),
            pods: Some(20),
            storage: Some("200Gi".into()),
            volumes: Some(5),
        }));
        assert_eq!(
            pairs(&asked),
            [
                ("limits.cpu", "2"),
                ("limits.memory", "4Gi"),
                ("persistentvolumeclaims", "5"),
                ("pods", "20"),
                ("requests.cpu", "2"),
                ("requests.memory", "4Gi"),
                ("requests.storage", "200Gi"),
            ]
        );
    }

    #[test]
    fn an_edited_resource_is_held_to_the_maxima() {
        let edited = hard(Some(Quota {
            storage: Some("1Pi".into()),
            volumes: Some(5000),
            ..Quota::default()
        }));
        assert_eq!(edited["requests.storage"], "10Ti");
        assert_eq!(edited["persistentvolumeclaims"], "100");
        let broken = hard(Some(Quota {
            storage: Some("lots".into()),
            volumes: Some(-3),
            ..Quota::default()
        }));
        assert_eq!(broken["requests.storage"], "1Ti");
        assert_eq!(broken["persistentvolumeclaims"], "0");
        let negative = hard(Some(Quota {
            storage: Some("-1Gi".into()),
            ..Quota::default()
        }));
        assert_eq!(negative["requests.storage"], "0");
    }

    #[test]
    fn the_policy_admits_the_namespace_and_the_ingress_controller_only() {
        let policy = serde_json::to_value(network_policy("shop-dev", "ingress-nginx")).unwrap();
        assert_eq!(
            policy,
            serde_json::json!({
                "apiVersion": "networking.k8s.io/v1",
                "kind": "NetworkPolicy",
                "metadata": {
                    "name": "berth-isolation",
                    "namespace": "shop-dev",
                    "labels": { "app.kubernetes.io/managed-by": "berth" }
                },
                "spec": {
                    "podSelector": {},
                    "policyTypes": ["Ingress"],
                    "ingress": [{ "from": [
                        { "podSelector": {} },
                        { "namespaceSelector": {
                            "matchLabels": { "kubernetes.io/metadata.name": "ingress-nginx" },
                            "matchExpressions": [{
                                "key": "app.kubernetes.io/managed-by",
                                "operator": "NotIn",
                                "values": ["berth"]
                            }]
                        } }
                    ] }]
                }
            })
        );
    }
}
