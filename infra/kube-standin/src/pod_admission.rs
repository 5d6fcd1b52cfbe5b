//! The admission a real API server gives a pod that a client creates (POST,
//! or a server-side apply that creates it), in its plugins' order: the
//! mutating phase (`LimitRanger` fills in defaults), then the validating one
//! (`LimitRanger`'s min/max, `PodSecurity`, the validating admission
//! policies, and `ResourceQuota` last, on the pod as the others left it).
//! Each refusal is a 403 `Forbidden`: `pods "NAME" is forbidden: ...`, its
//! details naming the pod.
//!
//! Pods the stand-in's own simulated controllers create are not admitted
//! here (see the README).

use std::sync::Arc;

use serde_json::Value;

use crate::status::{ApiError, ApiResult};
use crate::store::ObjKey;
use crate::verbs::State;
use crate::{limit_ranger, pod_security, resource_quota};

fn refusal(name: &str, why: String) -> ApiError {
    ApiError::forbidden(
        "pods",
        "",
        name,
        format!("pods \"{name}\" is forbidden: {why}"),
    )
}

impl State {
    fn in_namespace(&self, resource: &str, namespace: &str) -> Vec<Arc<Value>> {
        self.store
            .list("", resource, Some(namespace))
            .map(|(_, object)| object.clone())
            .collect()
    }

    /// `LimitRanger` (defaults, then min/max) and `PodSecurity`: what comes
    /// before the validating admission policies.
    pub(crate) fn admit_new_pod(
        &self,
        namespace: &str,
        name: &str,
        pod: &mut Value,
    ) -> ApiResult<()> {
        let limit_ranges = self.in_namespace("limitranges", namespace);
        limit_ranger::default_pod(&limit_ranges, pod);
        if let Some(why) = limit_ranger::violations(&limit_ranges, pod) {
            return Err(refusal(name, why));
        }
        let level = self
            .store
            .get(&ObjKey::new("", "namespaces", "", namespace))
            .map_or(pod_security::Level::Privileged, |ns| {
                pod_security::Level::enforced_by(ns)
            });
        match pod_security::violations(level, pod) {
            Some(why) => Err(refusal(name, why)),
            None => Ok(()),
        }
    }

    /// `ResourceQuota`, the last plugin.
    pub(crate) fn charge_quota(&self, namespace: &str, name: &str, pod: &Value) -> ApiResult<()> {
        let quotas = self.in_namespace("resourcequotas", namespace);
        if quotas.is_empty() {
            return Ok(());
        }
        let pods = self.in_namespace("pods", namespace);
        match resource_quota::violation(&quotas, &pods, pod) {
            Some(why) => Err(refusal(name, why)),
            None => Ok(()),
        }
    }
}
