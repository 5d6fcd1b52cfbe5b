//! The template catalogue: a template's record and variables, the body that
//! deploys one and what a deployment made.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::apps::record::AppRecord;
use berth_domain::names::NewAppName;

/// A variable of a template: a default value, or one generated at deploy
/// time and kept in a secret.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TemplateEnv {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub generate: bool,
}

/// The template record of the API.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct TemplateRecord {
    pub name: String,
    pub display_name: String,
    pub description: String,
    pub image: String,
    pub port: Option<i64>,
    pub env: Vec<TemplateEnv>,
    pub volumes: Vec<Value>,
    /// Where the template has several processes (or a scheduled one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub processes: Option<Vec<Value>>,
}

/// What a deployment made.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct Deployed {
    pub template: String,
    pub apps: Vec<AppRecord>,
}

/// The optional body of `deployTemplate`: another app name, and values for
/// the template's variables.
#[derive(Debug, Default, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DeployBody {
    /// The app's name (a DNS-1035 label without `--`); the template's name
    /// when omitted.
    #[schema(value_type = Option<NewAppName>)]
    pub name: Option<String>,
    /// Values for the template's variables, by name.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}
