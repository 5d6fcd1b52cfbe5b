//! What an environment's quota may ask for, and the storage every
//! environment is held to whatever its quota names: defaults for what it
//! leaves out and maxima no tenant can exceed. The API checks a quota
//! against them; the controller applies them in the namespace's
//! ResourceQuota, with its NetworkPolicy and Pod Security labels
//! (`berth_controller::isolation`).

use crate::ClusterError;
use berth_domain::parts::Quota;
use berth_domain::size::Quantity;

/// The most pods an environment may ask for.
pub const MAX_PODS: i32 = 10_000;

/// The storage all volumes of an environment may request together, when its
/// quota names none.
pub const DEFAULT_STORAGE: &str = "1Ti";
/// The most storage an environment may ask for.
pub const MAX_STORAGE: &str = "10Ti";
/// How many volumes (claims) an environment may have, when its quota names
/// no number.
pub const DEFAULT_VOLUMES: i32 = 20;
/// The most volumes an environment may ask for.
pub const MAX_VOLUMES: i32 = 100;

fn quantity(text: &str) -> Option<Quantity> {
    Quantity::parse(text).ok()
}

/// The rules of what a tenant may ask for: CPU and memory as Kubernetes
/// quantities, 1 to [`MAX_PODS`] pods, storage at most [`MAX_STORAGE`] and at
/// most [`MAX_VOLUMES`] volumes (zero of either is an environment without
/// volumes).
pub fn check(quota: &Quota) -> Result<(), ClusterError> {
    if let Some(cpu) = &quota.cpu {
        Quantity::parse_plain(cpu).map_err(|rule| rule.at("quota.cpu"))?;
    }
    if let Some(memory) = &quota.memory {
        Quantity::parse_plain(memory).map_err(|rule| rule.at("quota.memory"))?;
    }
    if let Some(pods) = quota.pods
        && !(1..=MAX_PODS).contains(&pods)
    {
        return Err(ClusterError::Invalid(format!(
            "quota.pods: must be 1 to {MAX_PODS}"
        )));
    }
    if let Some(storage) = &quota.storage {
        let within = match (quantity(storage), quantity("0"), quantity(MAX_STORAGE)) {
            (Some(asked), Some(zero), Some(max)) => zero <= asked && asked <= max,
            _ => false,
        };
        if !within {
            return Err(ClusterError::Invalid(format!(
                "quota.storage: must be a Kubernetes quantity from 0 to {MAX_STORAGE}, such as 500Gi"
            )));
        }
    }
    if let Some(volumes) = quota.volumes
        && !(0..=MAX_VOLUMES).contains(&volumes)
    {
        return Err(ClusterError::Invalid(format!(
            "quota.volumes: must be 0 to {MAX_VOLUMES}"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenants_ask_within_the_maxima() {
        for (storage, volumes) in [("10Ti", 100), ("0", 0), ("500Gi", 1), ("10240Gi", 20)] {
            check(&Quota {
                storage: Some(storage.into()),
                volumes: Some(volumes),
                ..Quota::default()
            })
            .unwrap_or_else(|e| panic!("{storage} {volumes}: {e}"));
        }
        for storage in ["11Ti", "10241Gi", "1Pi", "-1Gi", "lots", ""] {
            let error = check(&Quota {
                storage: Some(storage.into()),
                ..Quota::default()
            })
            .expect_err(storage);
            assert!(error.to_string().starts_with("quota.storage:"), "{error}");
        }
        for volumes in [101, -1] {
            let error = check(&Quota {
                volumes: Some(volumes),
                ..Quota::default()
            })
            .expect_err("too many");
            assert!(error.to_string().starts_with("quota.volumes:"), "{error}");
        }
    }
}
