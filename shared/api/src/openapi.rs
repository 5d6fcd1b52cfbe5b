//! What every function's part of the OpenAPI description shares: the names
//! of the two security schemes, and Problem Details for every failure an
//! operation can give. Path parameters are the places of `domain::paths`.
//!
//! Each function crate describes its own operations with `#[utoipa::path]`
//! on the handlers, and [`crate::operations!`] finishes its part with
//! [`describe`]; the local server (`berth_local::openapi`) merges the parts
//! into the whole document. No
//! Lambda function builds the document: the `health` function serves the
//! committed file.

use std::collections::BTreeMap;

use utoipa::openapi::path::{Operation as Described, PathItem};
use utoipa::openapi::schema::{AllOfBuilder, ObjectBuilder, OneOfBuilder, Type};
use utoipa::openapi::security::SecurityRequirement;
use utoipa::openapi::{self, Header, OpenApi, Ref, RefOr, Response, Schema};
use utoipa::{PartialSchema, ToSchema};

use crate::ApiError;
use berth_domain::Missing;
use berth_domain::Operation;
use berth_domain::operation::Access;
use berth_records::problem::Problem;

/// The security scheme of the session cookie (`berth_session`).
pub const SESSION: &str = "session";
/// The security scheme of API tokens (`Authorization: Bearer brt_...`).
pub const TOKEN: &str = "token";
/// The security scheme of the registry's token service: HTTP Basic with a
/// Berth-issued registry credential.
pub const REGISTRY_CREDENTIAL: &str = "registryCredential";

/// Finishes a function's part of the description (see
/// [`crate::operations!`]): each operation gets its id (the handler is
/// named after it), the function's tag (unless its annotation names
/// another), its security (the document's
/// default, both schemes; an empty list for a public operation, so that it
/// says so), and the failures it can give (Problem Details, with the `code`
/// values of each status). What an operation can give follows from how it is
/// described (a body, query or path parameters) and from
/// [`Operation::access`]; `specific` adds what only its handler knows
/// (conflicts, the cluster, rules of the body).
///
/// Panics on a handler not named after an [`Operation`]: the description
/// is built by tests and by the document's generator, never while serving.
pub fn describe(
    mut api: OpenApi,
    tag: &str,
    specific: impl Fn(Operation) -> Vec<ApiError>,
) -> OpenApi {
    for (path, item) in api.paths.paths.iter_mut() {
        for (changes, described) in operations_mut(item) {
            let handler = described.operation_id.clone().unwrap_or_default();
            let operation = Operation::of_handler(&handler)
                .unwrap_or_else(|| panic!("{path}: `{handler}` is not named after an operation"));
            described.operation_id = Some(operation.id().to_owned());
            // The function's tag, unless the annotation names another.
            let tags = described.tags.get_or_insert_with(Vec::new);
            if tags.is_empty() {
                tags.push(tag.to_owned());
            }
            described.security = match operation.access() {
                Access::Public => Some(Vec::new()),
                Access::RegistryCredential => Some(vec![SecurityRequirement::new(
                    REGISTRY_CREDENTIAL,
                    Vec::<String>::new(),
                )]),
                Access::SignedIn | Access::Needs(_) => None,
            };
            let failures = failures(operation, described, changes, specific(operation));
            add_failures(described, &failures);
        }
    }
    let components = api.components.get_or_insert_with(Default::default);
    components
        .schemas
        .insert(Problem::name().into_owned(), Problem::schema());
    // utoipa collects the schemas that bodies refer to, not those of
    // parameters: the names' schemas, each written once in `domain::names`.
    let described = serde_json::to_string(&api.paths).unwrap_or_default();
    for (name, schema) in berth_domain::names::schemas() {
        if described.contains(&format!("\"#/components/schemas/{name}\"")) {
            components.schemas.entry(name).or_insert(schema);
        }
    }
    api
}

/// What the whole document requires of every operation but the public
/// ones: either credential.
pub fn security() -> Vec<SecurityRequirement> {
    [SESSION, TOKEN]
        .into_iter()
        .map(|scheme| SecurityRequirement::new(scheme, Vec::<String>::new()))
        .collect()
}

/// The operations of a path, whatever their method, each with whether it
/// changes state (every method but GET).
fn operations_mut(item: &mut PathItem) -> impl Iterator<Item = (bool, &mut Described)> {
    [
        (false, &mut item.get),
        (true, &mut item.put),
        (true, &mut item.post),
        (true, &mut item.delete),
        (true, &mut item.patch),
    ]
    .into_iter()
    .filter_map(|(changes, described)| described.as_mut().map(|d| (changes, d)))
}

/// Every failure the operation can give.
fn failures(
    operation: Operation,
    described: &Described,
    changes: bool,
    specific: Vec<ApiError>,
) -> Vec<ApiError> {
    let mut failures = vec![
        ApiError::Internal(String::new()),
        ApiError::DeadlineExceeded,
    ];
    if matches!(operation.access(), Access::SignedIn | Access::Needs(_)) {
        failures.push(ApiError::Unauthenticated);
        failures.push(ApiError::StorageUnavailable(String::new()));
        if !operation.allowed_before_password_change() {
            failures.push(ApiError::PasswordChangeRequired);
        }
        if operation.minimum_permission().is_some() {
            failures.push(ApiError::Forbidden(String::new()));
        }
        // A change made with the session cookie: from another origin or
        // site (403), or with a body that is not JSON (415), see
        // `http::forgery`.
        if changes {
            failures.push(ApiError::UnsupportedMediaType(String::new()));
            failures.push(ApiError::Forbidden(String::new()));
        }
    }
    if described.request_body.is_some() {
        failures.push(ApiError::InvalidRequest(String::new()));
        failures.push(ApiError::PayloadTooLarge);
        failures.push(ApiError::UnsupportedMediaType(String::new()));
    }
    let parameters = described.parameters.as_deref().unwrap_or_default();
    let has = |place: openapi::path::ParameterIn| {
        parameters
            .iter()
            .any(|parameter| parameter.parameter_in == place)
    };
    if has(openapi::path::ParameterIn::Query) {
        failures.push(ApiError::InvalidRequest(String::new()));
    }
    if has(openapi::path::ParameterIn::Path) {
        failures.push(ApiError::NotFound(Missing::Route));
    }
    failures.extend(specific);
    failures
}

/// Adds to the schema `name` a rule between its fields that its derivation
/// cannot state: a body must not be `forbidden` (JSON Schema `not`).
///
/// Panics on a name that is not an object's schema of `api`: the
/// description is built by tests and by the document's generator.
pub fn forbid(api: &mut OpenApi, name: &str, forbidden: serde_json::Value) {
    let schema = api
        .components
        .as_mut()
        .and_then(|components| components.schemas.get_mut(name));
    let Some(RefOr::T(Schema::Object(object))) = schema else {
        panic!("{name} is not an object's schema of this description");
    };
    // JSON Schema's own keyword, not an `x-` extension: utoipa has no
    // `not`, and its builder would prefix the name.
    object
        .extensions
        .get_or_insert_with(Default::default)
        .insert("not".to_owned(), forbidden);
}

/// Says that `operation`'s body may be left out, as curl and generated
/// clients send a request without one (utoipa's `Option` would say it may
/// be `null` instead). Its handler takes an `Option<JsonBody<_>>`.
///
/// Panics on an operation of `api` without a body: the description is
/// built by tests and by the document's generator.
pub fn optional_body(api: &mut OpenApi, operation: Operation) {
    let body = api
        .paths
        .paths
        .values_mut()
        .flat_map(operations_mut)
        .find(|(_, described)| described.operation_id.as_deref() == Some(operation.id()))
        .and_then(|(_, described)| described.request_body.as_mut());
    let Some(body) = body else {
        panic!("{} has no body in this description", operation.id());
    };
    body.required = Some(openapi::Required::False);
}

/// The failures of a cluster operation: no cluster, or one that does not
/// answer; and, for a change, a concurrent change that won.
pub fn cluster_failures(changes: bool) -> Vec<ApiError> {
    let mut failures = vec![
        ApiError::NoCluster,
        ApiError::ClusterUnavailable(String::new()),
    ];
    if changes {
        failures.push(ApiError::Conflict(String::new()));
    }
    failures
}

/// The failures of a write into an environment whose namespace is not (yet)
/// its own: still being provisioned, or someone else's.
pub fn namespace_failures() -> [ApiError; 2] {
    [
        ApiError::EnvironmentNotReady(String::new()),
        ApiError::NamespaceTaken(String::new()),
    ]
}

fn add_failures(described: &mut Described, failures: &[ApiError]) {
    let mut by_status: BTreeMap<u16, Vec<&ApiError>> = BTreeMap::new();
    for failure in failures {
        let codes = by_status.entry(failure.status().as_u16()).or_default();
        if !codes.iter().any(|known| known.code() == failure.code()) {
            codes.push(failure);
        }
    }
    for (status, errors) in by_status {
        let codes: Vec<&str> = errors.iter().map(|error| error.code()).collect();
        let titles: Vec<String> = errors
            .iter()
            .map(|error| format!("`{}`: {}", error.code(), error.problem().title))
            .collect();
        let schema = AllOfBuilder::new()
            .item(Ref::from_schema_name(Problem::name()))
            .item(
                ObjectBuilder::new()
                    .property(
                        "code",
                        ObjectBuilder::new()
                            .schema_type(Type::String)
                            .enum_values(Some(codes)),
                    )
                    .property(
                        "status",
                        ObjectBuilder::new()
                            .schema_type(Type::Integer)
                            .enum_values(Some([status])),
                    ),
            )
            .build();
        let problem = format!("Problem Details. {}", titles.join("; "));
        let key = status.to_string();
        // A status the operation answers with its own body as well (the
        // health report's 503): either body.
        let (description, schema) = match described.responses.responses.get(&key) {
            Some(RefOr::T(own)) => {
                let own_schema = own
                    .content
                    .get("application/json")
                    .and_then(|content| content.schema.clone());
                let either = match own_schema {
                    Some(own_schema) => Schema::OneOf(
                        OneOfBuilder::new()
                            .item(own_schema)
                            .item(Schema::AllOf(schema))
                            .build(),
                    ),
                    None => Schema::AllOf(schema),
                };
                (format!("{} Or: {problem}", own.description), either)
            }
            _ => (problem, Schema::AllOf(schema)),
        };
        let mut response = Response::builder()
            .description(description)
            .content("application/json", openapi::Content::new(Some(schema)));
        // The header comes with the codes that set it (see
        // `ApiError::retry_after`): always with a 429, with a 409 only for
        // `environment_not_ready`, so it is not required.
        if errors.iter().any(|error| error.retry_after().is_some()) {
            let description = if status == 429 {
                "Seconds until the throttle's window ends."
            } else {
                "With `environment_not_ready`: seconds to wait before trying again."
            };
            response = response.header(
                "Retry-After",
                Header::builder()
                    .schema(
                        ObjectBuilder::new()
                            .schema_type(Type::Integer)
                            .minimum(Some(0)),
                    )
                    .description(Some(description))
                    .build(),
            );
        }
        described
            .responses
            .responses
            .insert(key, RefOr::T(response.build()));
    }
}
