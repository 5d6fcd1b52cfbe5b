//! The parts of Berth's resources that the API's records show as they are:
//! one definition for the resource's serialized form (its CRD schema, feature
//! `schemars`) and the API's, so that a client reads them without linking
//! the cluster layer.

use serde::{Deserialize, Serialize};

/// The environment's resource quota: CPU and memory in Kubernetes quantity
/// notation, a pod count, and the storage and number of its volumes (every
/// environment has these two: `cluster::isolation` has their defaults and
/// maxima).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, utoipa::ToSchema)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Quota {
    // A Kubernetes quantity in plain notation (no sign or exponent), as
    // `Quantity::parse_plain` takes it; likewise `memory`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(
        examples("4", "500m"),
        max_length = 32,
        pattern = "^[0-9]+(?:\\.[0-9]+)?(?:[numkMGTPE]|[KMGTPE]i)?$"
    )]
    pub cpu: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(
        examples("8Gi"),
        max_length = 32,
        pattern = "^[0-9]+(?:\\.[0-9]+)?(?:[numkMGTPE]|[KMGTPE]i)?$"
    )]
    pub memory: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1, maximum = 10000)]
    pub pods: Option<i32>,
    /// The storage all volumes of the environment may request together:
    /// `1Ti` when omitted, at most `10Ti`.
    // `Quantity::parse`'s notation (`domain::size`'s QUANTITY_NOTATION).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(
        examples("500Gi"),
        pattern = "^[+-]?(?:[0-9]+(?:\\.[0-9]+)?|\\.[0-9]+)(?:[numkMGTPE]|[KMGTPE]i|[eE][+-]?(?:0?[0-5]?[0-9]|0?6[0-4]))?$"
    )]
    pub storage: Option<String>,
    /// How many volumes the environment may have: 20 when omitted, at most 100.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0, maximum = 100)]
    pub volumes: Option<i32>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, utoipa::ToSchema)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct SecretKeyRef {
    pub name: String,
    pub key: String,
}
