//! NetworkPolicies are validated as kubernetes' `ValidateNetworkPolicySpec`
//! (`pkg/apis/networking/validation/validation.go`) validates them: an
//! `ipBlock`'s `except` entries must be strict subsets of its `cidr` (the
//! same family, a longer prefix), a peer names something and an `ipBlock`
//! stands alone, a port's protocol is TCP, UDP or SCTP and its `endPort`
//! follows a numeric `port`. Refusals are checked by reason and field, as a
//! real API server of any version states them.

use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

use crate::common::{TestEnv, api_status};

fn policy(name: &str, egress: Value) -> NetworkPolicy {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"podSelector": {}, "policyTypes": ["Egress"], "egress": egress},
    }))
    .unwrap()
}

fn cause(refused: &kube::core::Status) -> (String, String) {
    let cause = refused
        .details
        .as_ref()
        .and_then(|details| details.causes.first())
        .unwrap_or_else(|| panic!("a refusal with causes: {refused:?}"));
    (cause.reason.clone(), cause.field.clone())
}

#[tokio::test]
async fn egress_rules_by_address_are_held_to_the_apiservers_rules() {
    let env = TestEnv::new().await;
    let policies: Api<NetworkPolicy> = env.api();
    // What Berth's egress policies are made of.
    policies
        .create(
            &PostParams::default(),
            &policy(
                "open-but",
                json!([
                    {"to": [
                        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
                         "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}},
                        {"ipBlock": {"cidr": "10.96.0.10/32"}},
                     ],
                     "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]},
                    {"to": [
                        {"ipBlock": {"cidr": "0.0.0.0/0", "except": ["10.0.0.0/8", "169.254.0.0/16"]}},
                        {"ipBlock": {"cidr": "::/0", "except": ["fe80::/10", "fd00:ec2::254/128"]}},
                    ]},
                    {"to": [{"podSelector": {}}]},
                ]),
            ),
        )
        .await
        .expect("a valid policy");
    for (name, egress, reason, field) in [
        (
            "except-outside",
            json!([{"to": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["192.168.0.0/16"]}}]}]),
            "FieldValueInvalid",
            "spec.egress[0].to[0].ipBlock.except[0]",
        ),
        (
            "except-equal",
            json!([{"to": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.0.0.0/8"]}}]}]),
            "FieldValueInvalid",
            "spec.egress[0].to[0].ipBlock.except[0]",
        ),
        (
            "except-other-family",
            json!([{"to": [{"ipBlock": {"cidr": "0.0.0.0/0", "except": ["fe80::/10"]}}]}]),
            "FieldValueInvalid",
            "spec.egress[0].to[0].ipBlock.except[0]",
        ),
        (
            "not-a-cidr",
            json!([{"to": [{"ipBlock": {"cidr": "10.0.0.0"}}]}]),
            "FieldValueInvalid",
            "spec.egress[0].to[0].ipBlock.cidr",
        ),
        (
            "ipblock-and-selector",
            json!([{"to": [{"ipBlock": {"cidr": "10.0.0.0/8"}, "podSelector": {}}]}]),
            "FieldValueForbidden",
            "spec.egress[0].to[0]",
        ),
        (
            "no-peer",
            json!([{"to": [{}]}]),
            "FieldValueRequired",
            "spec.egress[0].to[0]",
        ),
        (
            "bad-protocol",
            json!([{"ports": [{"protocol": "ICMP", "port": 1}]}]),
            "FieldValueNotSupported",
            "spec.egress[0].ports[0].protocol",
        ),
        (
            "end-before-port",
            json!([{"ports": [{"protocol": "TCP", "port": 100, "endPort": 99}]}]),
            "FieldValueInvalid",
            "spec.egress[0].ports[0].endPort",
        ),
    ] {
        let refused = api_status(
            policies
                .create(&PostParams::default(), &policy(name, egress))
                .await,
        );
        assert_eq!(
            (refused.code, refused.reason.as_str()),
            (422, "Invalid"),
            "{name}"
        );
        assert_eq!(
            cause(&refused),
            (reason.to_owned(), field.to_owned()),
            "{name}"
        );
        assert!(matches!(policies.get_opt(name).await, Ok(None)), "{name}");
    }
}
