//! Where pods may connect to: the egress NetworkPolicy of the builds'
//! namespace, and of every environment's namespace unless the operator
//! opens them (`BERTH_APP_EGRESS=open`). Builds fetch from git hosts and push to the
//! registry, so the internet stays open; what is closed is what a
//! tenant's code must never reach from inside the cluster: link-local
//! addresses (the cloud's metadata service at 169.254.169.254, fd00:ec2::254
//! on AWS over IPv6, 100.100.100.200 on Alibaba Cloud), the apiserver and
//! the ranges the operator names (the nodes', the pods', the Services').
//!
//! The policy (one per namespace, `podSelector: {}`, `policyTypes:
//! [Egress]`) allows, each rule on its own:
//! - DNS (UDP and TCP 53) to the cluster's DNS pods (by namespace and
//!   labels) and to its DNS addresses (the Service address pods are told
//!   to use, or a node-local cache's);
//! - anywhere (`0.0.0.0/0`, `::/0`) except the denied ranges;
//! - the ranges the operator allows even inside the denied ones (a
//!   registry or git server on a private network);
//! - for an environment, every pod of its own namespace (its apps talk to
//!   each other, by pod address or through their Services).
//!
//! Network plugins apply `ipBlock` rules either after a Service's address
//! is translated to a pod's (kube-proxy's DNAT happens first: Calico,
//! Cilium, kube-router) or before; the Kubernetes documentation leaves it
//! open. So the apiserver is denied by both names: the `kubernetes`
//! Service's address (what a pod dials) and the operator's ranges holding
//! its endpoints; and DNS is allowed by both: the DNS pods and the DNS
//! Service's address. Cilium never matches `ipBlock` rules against pods and
//! nodes of the cluster ("only connections destined for outside of the
//! cluster and not targeting the host"), so there the open rule cannot
//! reach them at all. docs/api-notes.md, "Builds in the cluster", says
//! which plugins enforce what.
//!
//! Every rendered policy is one a real apiserver takes
//! (`ValidateNetworkPolicy` in kubernetes' `pkg/apis/networking/validation`):
//! CIDRs in canonical form, every `except` a strict subset of its `cidr`
//! (IPv4 excepts under `0.0.0.0/0`, IPv6 under `::/0`, none of them a
//! `/0`), ports with a protocol and a number, each peer either selectors or
//! one `ipBlock`.

use std::collections::BTreeMap;
use std::net::IpAddr;

use ipnet::IpNet;
use k8s_openapi::api::networking::v1::{
    IPBlock, NetworkPolicy, NetworkPolicyEgressRule, NetworkPolicyPeer, NetworkPolicyPort,
    NetworkPolicySpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::isolation::NAMESPACE_NAME_LABEL;

/// The egress policy of the builds' namespace and of environments'.
pub const POLICY_NAME: &str = "berth-egress";

/// Closed whatever the settings: link-local (IPv4 and IPv6: the metadata
/// services of AWS, GCP, Azure and OpenStack at 169.254.169.254) and the
/// metadata addresses outside it (AWS over IPv6, Alibaba Cloud).
pub const ALWAYS_DENIED: [&str; 4] = [
    "169.254.0.0/16",
    "fe80::/10",
    "fd00:ec2::254/128",
    "100.100.100.200/32",
];

/// Where the cluster's DNS pods are found unless told otherwise: CoreDNS
/// (and kube-dns) carry `k8s-app: kube-dns` in kubeadm, EKS, GKE and AKS.
pub const DEFAULT_DNS_NAMESPACE: &str = "kube-system";
pub const DEFAULT_DNS_POD_LABELS: &str = "k8s-app=kube-dns";

/// What the egress policies say, from the controller's settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EgressSettings {
    /// Closed besides [`ALWAYS_DENIED`] (`BERTH_EGRESS_DENIED_CIDRS`): the
    /// nodes', pods' and Services' ranges, the apiserver's endpoints.
    pub denied: Vec<IpNet>,
    /// Open even inside a denied range (`BERTH_EGRESS_ALLOWED_CIDRS`).
    pub allowed: Vec<IpNet>,
    /// The cluster's DNS addresses, reachable on port 53
    /// (`BERTH_DNS_CIDRS`; by default the name servers of the controller's
    /// own `/etc/resolv.conf`, which pods share).
    pub dns: Vec<IpNet>,
    /// The DNS pods: their namespace and labels.
    pub dns_namespace: String,
    pub dns_pod_labels: BTreeMap<String, String>,
    /// The apiserver's Service address, as pods dial it (the controller's
    /// own `KUBERNETES_SERVICE_HOST` when it runs in a pod).
    pub apiserver: Option<IpAddr>,
    /// Whether app pods get the policy too (`BERTH_APP_EGRESS`,
    /// `restricted` unless set to `open`).
    pub apps: bool,
    /// Whether the operator chose to name no denied range
    /// (`BERTH_EGRESS_DENIED_CIDRS=none`): then nothing is said of it.
    pub denied_none_by_choice: bool,
}

impl Default for EgressSettings {
    fn default() -> Self {
        Self {
            denied: Vec::new(),
            allowed: Vec::new(),
            dns: Vec::new(),
            dns_namespace: DEFAULT_DNS_NAMESPACE.to_owned(),
            dns_pod_labels: parse_labels(DEFAULT_DNS_POD_LABELS).unwrap_or_default(),
            apiserver: None,
            apps: true,
            denied_none_by_choice: false,
        }
    }
}

/// A comma-separated list of CIDRs in canonical form (`10.0.0.0/8`, not
/// `10.1.2.3/8`), none of them a `/0` (it would close, or open, all).
pub fn parse_cidrs(text: &str) -> Result<Vec<IpNet>, String> {
    text.split(',')
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .map(|part| {
            let net: IpNet = part
                .parse()
                .map_err(|_| format!("{part} is not a CIDR (10.0.0.0/8, fd00::/8)"))?;
            if net.trunc() != net {
                return Err(format!(
                    "{part} is not a network address: write {}",
                    net.trunc()
                ));
            }
            if net.prefix_len() == 0 {
                return Err(format!("{part} names every address"));
            }
            Ok(net)
        })
        .collect()
}

/// `key=value` pairs, comma-separated.
pub fn parse_labels(text: &str) -> Result<BTreeMap<String, String>, String> {
    text.split(',')
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .map(|part| {
            part.split_once('=')
                .map(|(key, value)| (key.trim().to_owned(), value.trim().to_owned()))
                .filter(|(key, _)| !key.is_empty())
                .ok_or_else(|| format!("{part} is not a label (key=value)"))
        })
        .collect()
}

/// The name servers of a `resolv.conf`, as host CIDRs.
pub fn name_servers(resolv_conf: &str) -> Vec<IpNet> {
    resolv_conf
        .lines()
        .filter_map(|line| line.trim().strip_prefix("nameserver"))
        .filter_map(|address| address.trim().parse::<IpAddr>().ok())
        .map(IpNet::from)
        .collect()
}

impl EgressSettings {
    /// What the operator must hear while no range of the cluster's own is
    /// closed and they did not choose so: the controller says it at its
    /// start and every 5 minutes in its log and an Event, in a metric and in
    /// `/readyz`'s body, and runs on (it never crash-loops over it).
    pub fn warning(&self) -> Option<String> {
        (self.denied.is_empty() && !self.denied_none_by_choice).then(|| {
            "BERTH_EGRESS_DENIED_CIDRS is not set: build pods and app pods may reach this \
             cluster's nodes (the kubelet), pods and Services; set it to the cluster's node, pod and Service ranges \
             (docs/configuration.md), or to `none` to accept that"
                .to_owned()
        })
    }

    /// Every range closed: the fixed ones, the apiserver's address and the
    /// operator's, each once, sorted.
    pub fn closed(&self) -> Vec<IpNet> {
        let mut closed: Vec<IpNet> = ALWAYS_DENIED
            .iter()
            .filter_map(|cidr| cidr.parse().ok())
            .chain(self.apiserver.map(IpNet::from))
            .chain(self.denied.iter().copied())
            .collect();
        closed.sort();
        closed.dedup();
        // A range inside another is closed by that one already.
        let all = closed.clone();
        closed.retain(|net| !all.iter().any(|other| other != net && other.contains(net)));
        closed
    }

    /// The egress policy of `namespace`: for an environment
    /// (`same_namespace`), its own pods are reachable too.
    pub fn policy(&self, namespace: &str, same_namespace: bool) -> NetworkPolicy {
        let closed = self.closed();
        let open = |everything: &str, v4: bool| NetworkPolicyPeer {
            ip_block: Some(IPBlock {
                cidr: everything.to_owned(),
                except: Some(
                    closed
                        .iter()
                        .filter(|net| matches!(net, IpNet::V4(_)) == v4)
                        .map(ToString::to_string)
                        .collect(),
                )
                .filter(|except: &Vec<String>| !except.is_empty()),
            }),
            ..NetworkPolicyPeer::default()
        };
        let block = |net: &IpNet| NetworkPolicyPeer {
            ip_block: Some(IPBlock {
                cidr: net.to_string(),
                except: None,
            }),
            ..NetworkPolicyPeer::default()
        };
        let port = |protocol: &str| NetworkPolicyPort {
            protocol: Some(protocol.to_owned()),
            port: Some(IntOrString::Int(53)),
            end_port: None,
        };
        let dns_pods = NetworkPolicyPeer {
            namespace_selector: Some(LabelSelector {
                match_labels: Some(BTreeMap::from([(
                    NAMESPACE_NAME_LABEL.to_owned(),
                    self.dns_namespace.clone(),
                )])),
                match_expressions: None,
            }),
            pod_selector: Some(LabelSelector {
                match_labels: Some(self.dns_pod_labels.clone()),
                match_expressions: None,
            }),
            ip_block: None,
        };
        let mut rules = vec![
            NetworkPolicyEgressRule {
                to: Some(
                    std::iter::once(dns_pods)
                        .chain(self.dns.iter().map(block))
                        .collect(),
                ),
                ports: Some(vec![port("UDP"), port("TCP")]),
            },
            NetworkPolicyEgressRule {
                to: Some(vec![open("0.0.0.0/0", true), open("::/0", false)]),
                ports: None,
            },
        ];
        if !self.allowed.is_empty() {
            rules.push(NetworkPolicyEgressRule {
                to: Some(self.allowed.iter().map(block).collect()),
                ports: None,
            });
        }
        if same_namespace {
            rules.push(NetworkPolicyEgressRule {
                to: Some(vec![NetworkPolicyPeer {
                    pod_selector: Some(LabelSelector::default()),
                    ..NetworkPolicyPeer::default()
                }]),
                ports: None,
            });
        }
        NetworkPolicy {
            metadata: crate::isolation::policy_metadata(POLICY_NAME, namespace),
            spec: Some(NetworkPolicySpec {
                pod_selector: Some(LabelSelector::default()),
                policy_types: Some(vec!["Egress".to_owned()]),
                egress: Some(rules),
                ingress: None,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> EgressSettings {
        EgressSettings {
            denied: parse_cidrs("10.0.0.0/8, 172.16.0.0/12,fd12::/16").unwrap(),
            allowed: parse_cidrs("10.9.8.7/32").unwrap(),
            dns: name_servers("search svc.cluster.local\nnameserver 10.96.0.10\n"),
            apiserver: Some("10.96.0.1".parse().unwrap()),
            ..EgressSettings::default()
        }
    }

    #[test]
    fn settings_are_canonical_cidrs() {
        assert!(
            parse_cidrs("10.1.2.3/8")
                .unwrap_err()
                .contains("10.0.0.0/8")
        );
        assert!(parse_cidrs("0.0.0.0/0").is_err());
        assert!(parse_cidrs("::/0").is_err());
        assert!(parse_cidrs("example.com").is_err());
        assert_eq!(parse_cidrs(" , ").unwrap(), Vec::<IpNet>::new());
        assert_eq!(
            parse_labels("k8s-app=kube-dns").unwrap(),
            BTreeMap::from([("k8s-app".to_owned(), "kube-dns".to_owned())])
        );
        assert!(parse_labels("nolabel").is_err());
        assert_eq!(
            name_servers("nameserver 10.96.0.10\nnameserver fd00::a\noptions ndots:5"),
            vec![
                "10.96.0.10/32".parse::<IpNet>().unwrap(),
                "fd00::a/128".parse().unwrap()
            ]
        );
    }

    #[test]
    fn the_apiserver_inside_a_denied_range_is_closed_by_the_range() {
        let closed: Vec<String> = settings()
            .closed()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            closed,
            [
                "10.0.0.0/8",
                "100.100.100.200/32",
                "169.254.0.0/16",
                "172.16.0.0/12",
                "fd00:ec2::254/128",
                "fd12::/16",
                "fe80::/10"
            ]
        );
    }
}
