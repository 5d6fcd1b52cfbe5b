//! Fair shares of the builds namespace: a build's Job is made only when
//! its organization runs fewer than `per_organization` builds and the
//! namespace's quotas have room for its pod. A build that waits stays
//! `queued` (its Job's deadline has not started), instead of waiting in a
//! Job whose pod the quota refuses while `activeDeadlineSeconds` runs.
//!
//! What runs is read fresh from the cluster: the build pods not yet ended
//! (`status.phase` neither `Succeeded` nor `Failed`, as quotas count
//! them), each charged what its spec asks (the largest of its init
//! containers' or the sum of its containers', as the apiserver's quota
//! evaluator charges a pod). The starts themselves are decided one at a
//! time (the caller holds the controller's start turn), and each waits
//! until its pod exists before the next is decided, so two starts never
//! both see the last free slot.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, Pod, PodSpec, ResourceQuota};
use kube::api::{Api, ListParams};

use berth_cluster::crd::{BUILDS_NAMESPACE, LABEL_MANAGED_BY, LABEL_ORG, MANAGER};
use berth_domain::size::Quantity;

use crate::error::Error;

/// What a pod is charged by a quota: in thousandths, by the quota's
/// resource names (`pods`, `requests.cpu` and `cpu`, `limits.memory`,
/// `requests.ephemeral-storage`…).
pub type Demand = BTreeMap<String, u128>;

/// The quota resources a build pod is charged for, and where in a
/// container's resources each is read.
const CHARGED: [(&str, Side, &str); 9] = [
    ("cpu", Side::Requests, "cpu"),
    ("requests.cpu", Side::Requests, "cpu"),
    ("limits.cpu", Side::Limits, "cpu"),
    ("memory", Side::Requests, "memory"),
    ("requests.memory", Side::Requests, "memory"),
    ("limits.memory", Side::Limits, "memory"),
    ("ephemeral-storage", Side::Requests, "ephemeral-storage"),
    (
        "requests.ephemeral-storage",
        Side::Requests,
        "ephemeral-storage",
    ),
    (
        "limits.ephemeral-storage",
        Side::Limits,
        "ephemeral-storage",
    ),
];

#[derive(Clone, Copy)]
enum Side {
    Requests,
    Limits,
}

fn amount(container: &Container, side: Side, resource: &str) -> u128 {
    let resources = container.resources.as_ref();
    let map = match side {
        Side::Requests => resources.and_then(|r| r.requests.as_ref()),
        Side::Limits => resources.and_then(|r| r.limits.as_ref()),
    };
    map.and_then(|map| map.get(resource))
        .and_then(|quantity| Quantity::parse(&quantity.0).ok())
        .and_then(|quantity| quantity.to_millis())
        .unwrap_or(0)
}

/// What a pod of this spec is charged: for each resource, the largest of
/// an init container's and the sum of the containers'.
pub fn demand(pod: &PodSpec) -> Demand {
    let mut demand = Demand::from([("pods".to_owned(), 1000)]);
    for (name, side, resource) in CHARGED {
        let init = pod
            .init_containers
            .iter()
            .flatten()
            .map(|container| amount(container, side, resource))
            .max()
            .unwrap_or(0);
        let running: u128 = pod
            .containers
            .iter()
            .map(|container| amount(container, side, resource))
            .sum();
        demand.insert(name.to_owned(), init.max(running));
    }
    demand
}

/// Why a build of `org` with this pod `demand` must wait, if it must: its
/// organization runs `per_organization` builds already, or a quota of the
/// builds namespace has no room for it. Tenants read it: it names no other
/// organization.
pub async fn must_wait(
    client: &kube::Client,
    org: &str,
    demand: &Demand,
    per_organization: usize,
) -> Result<Option<String>, Error> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), BUILDS_NAMESPACE);
    let quotas: Api<ResourceQuota> = Api::namespaced(client.clone(), BUILDS_NAMESPACE);
    let not_ended = ListParams::default()
        .labels(&format!("{LABEL_MANAGED_BY}={MANAGER}"))
        .fields("status.phase!=Succeeded,status.phase!=Failed");
    let every = ListParams::default();
    let (pods, quotas) = tokio::join!(pods.list(&not_ended), quotas.list(&every));
    let pods = pods?.items;
    let quotas = quotas?.items;
    Ok(decide(org, demand, per_organization, &pods, &quotas))
}

/// [`must_wait`]'s decision on what it read.
fn decide(
    org: &str,
    demand: &Demand,
    per_organization: usize,
    pods: &[Pod],
    quotas: &[ResourceQuota],
) -> Option<String> {
    let of_org = pods
        .iter()
        .filter(|pod| {
            pod.metadata
                .labels
                .as_ref()
                .and_then(|labels| labels.get(LABEL_ORG))
                .map(String::as_str)
                == Some(org)
        })
        .count();
    if of_org >= per_organization {
        return Some(format!(
            "waiting: the organization runs {of_org} builds, and at most {per_organization} \
             run at a time"
        ));
    }
    let mut used = Demand::new();
    for pod in pods {
        for (resource, amount) in demand_of(pod) {
            *used.entry(resource).or_default() += amount;
        }
    }
    for quota in quotas {
        let hard = quota.spec.as_ref().and_then(|spec| spec.hard.as_ref());
        for (resource, limit) in hard.into_iter().flatten() {
            let (Some(wanted), Ok(limit)) = (demand.get(resource), Quantity::parse(&limit.0))
            else {
                continue;
            };
            let Some(limit) = limit.to_millis() else {
                continue;
            };
            if used.get(resource).copied().unwrap_or(0) + wanted > limit {
                return Some(
                    "waiting for room: the cluster runs as many builds as it takes at once"
                        .to_owned(),
                );
            }
        }
    }
    None
}

fn demand_of(pod: &Pod) -> Demand {
    pod.spec.as_ref().map(demand).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{ResourceQuotaSpec, ResourceRequirements};
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity as Q;

    fn container(cpu: &str, memory: &str) -> Container {
        Container {
            resources: Some(ResourceRequirements {
                requests: Some(BTreeMap::from([
                    ("cpu".to_owned(), Q(cpu.to_owned())),
                    ("memory".to_owned(), Q(memory.to_owned())),
                ])),
                limits: None,
                claims: None,
            }),
            ..Container::default()
        }
    }

    fn pod(org: &str) -> Pod {
        Pod {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                labels: Some(BTreeMap::from([(LABEL_ORG.to_owned(), org.to_owned())])),
                ..Default::default()
            },
            spec: Some(PodSpec {
                init_containers: Some(vec![container("500m", "1Gi"), container("100m", "2Gi")]),
                containers: vec![container("10m", "16Mi")],
                ..PodSpec::default()
            }),
            status: None,
        }
    }

    fn quota(pods: &str, cpu: &str) -> ResourceQuota {
        ResourceQuota {
            spec: Some(ResourceQuotaSpec {
                hard: Some(BTreeMap::from([
                    ("pods".to_owned(), Q(pods.to_owned())),
                    ("requests.cpu".to_owned(), Q(cpu.to_owned())),
                    ("count/jobs.batch".to_owned(), Q("1".to_owned())),
                ])),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn a_pod_is_charged_its_largest_init_container_or_its_containers() {
        let demand = demand(pod("acme").spec.as_ref().unwrap());
        assert_eq!(demand["pods"], 1000);
        assert_eq!(demand["requests.cpu"], 500);
        assert_eq!(demand["cpu"], 500);
        assert_eq!(demand["requests.memory"], 2 * 1_073_741_824_000);
        assert_eq!(demand["limits.cpu"], 0);
    }

    #[test]
    fn a_build_waits_for_its_organizations_share_and_the_quotas_room() {
        let demand = demand(pod("x").spec.as_ref().unwrap());
        let running = [pod("acme"), pod("acme"), pod("globex")];
        // acme runs 2 of at most 2; globex 1.
        assert!(
            decide("acme", &demand, 2, &running, &[quota("8", "4")])
                .unwrap()
                .contains("at most 2")
        );
        assert_eq!(
            decide("globex", &demand, 2, &running, &[quota("8", "4")]),
            None
        );
        assert_eq!(decide("initech", &demand, 2, &running, &[]), None);
        // Three pods of 500m in a quota of 2 CPU: room for one more, not two.
        assert_eq!(
            decide("initech", &demand, 2, &running, &[quota("8", "2")]),
            None
        );
        let four = [pod("acme"), pod("globex"), pod("initech"), pod("hooli")];
        assert!(
            decide("umbrella", &demand, 2, &four, &[quota("8", "2")])
                .unwrap()
                .contains("waiting for room")
        );
        assert!(decide("umbrella", &demand, 2, &four, &[quota("4", "8")]).is_some());
        assert_eq!(
            decide("umbrella", &demand, 2, &four, &[quota("5", "8")]),
            None
        );
    }
}
