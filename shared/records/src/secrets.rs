//! Secrets of an environment: the summary the API answers (names of keys,
//! never values), what a put answers, and the put body as described.

use serde::{Deserialize, Serialize};

use berth_domain::names::SecretKey;

/// The Secret summary (spec part 2): names of keys, never values.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, utoipa::ToSchema)]
pub struct SecretSummary {
    pub name: String,
    pub keys: Vec<String>,
    pub created_at: Option<String>,
}

/// What `putSecret` answers: the summary and the apps it restarted.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, utoipa::ToSchema)]
pub struct PutAnswer {
    #[serde(flatten)]
    pub secret: SecretSummary,
    pub restarted_apps: Vec<String>,
}

/// The body of `putSecret`, as described. The handler takes plain JSON and
/// `berth_api::secrets::parse_data` checks it with messages that never
/// quote a value.
// No `Debug`: it holds the values.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = PutSecretBody)]
#[serde(deny_unknown_fields)]
pub struct PutBody {
    #[schema(schema_with = data_schema)]
    pub data: std::collections::BTreeMap<String, String>,
}

/// The schema of `putSecret`'s `data`, as `berth_api::secrets::parse_data`
/// reads it: at least one key, each a [`SecretKey`], to string values.
pub fn data_schema() -> utoipa::openapi::Object {
    use utoipa::openapi::extensions::Extensions;
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    let key = ObjectBuilder::new()
        .schema_type(Type::String)
        .pattern(Some(r"^[-._a-zA-Z0-9]+$"))
        .min_length(Some(1))
        .max_length(Some(SecretKey::MAX_LEN))
        // JSON Schema's `not`, which utoipa's builders do not have.
        .extensions(Some(Extensions::from_iter([(
            "not",
            serde_json::json!({ "enum": [".", ".."] }),
        )])));
    ObjectBuilder::new()
        .schema_type(Type::Object)
        .description(Some(
            "Keys (`[-._a-zA-Z0-9]`, at most 253) to string values, at least one;\n\
             the values together at most 512 KiB.",
        ))
        .property_names(Some(key))
        .additional_properties(Some(ObjectBuilder::new().schema_type(Type::String)))
        .min_properties(Some(1))
        .build()
}
