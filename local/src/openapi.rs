//! The whole API's OpenAPI 3.1 description: every function's part (its
//! handlers' `#[utoipa::path]` annotations and their types), merged, with
//! what belongs to the whole: the info, the tags, the security schemes, and
//! the links that lead from a created object to the operations on it.
//!
//! The document is committed as [`FILE`] and served from there by the
//! `health` function; `tests/api/openapi.rs` fails when the file and the
//! code disagree (`BERTH_WRITE_OPENAPI=1` rewrites the file).

use berth_api::openapi::{REGISTRY_CREDENTIAL, SESSION, TOKEN};
use berth_domain::Operation;
use berth_store::identity::sessions;
use serde_json::{Value, json};
use utoipa::openapi::info::{ContactBuilder, InfoBuilder, LicenseBuilder};
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::server::Server;
use utoipa::openapi::tag::TagBuilder;
use utoipa::openapi::{OpenApi, Paths};

use crate::FUNCTIONS;

/// The API's version, as the document states it (kept with the records,
/// where the CLI reads the version it was built for).
pub const VERSION: &str = berth_records::API_VERSION;

/// The header every response carries.
pub const REQUEST_ID: &str = "X-Request-Id";

/// Where the document is committed, from the repository's root.
pub const FILE: &str = "openapi/openapi.json";

/// One tag per resource group, in the order a reader meets them.
const TAGS: &[(&str, &str)] = &[
    (
        "auth",
        "Signing in and out, the current user, the password.",
    ),
    ("tokens", "The caller's personal API tokens."),
    ("members", "The organization's users and their roles."),
    ("projects", "Projects: each a group of environments."),
    (
        "environments",
        "Environments of a project: each a namespace of the cluster.",
    ),
    (
        "apps",
        "Apps of an environment, their releases, logs and domains.",
    ),
    ("builds", "Builds of apps from source, and their output."),
    (
        "registry",
        "The image registry's token service (Docker Registry token authentication).",
    ),
    ("secrets", "Secrets of an environment."),
    (
        "templates",
        "The template catalogue, and deploying a template.",
    ),
    ("audit", "The organization's audit log."),
    ("health", "Liveness, and the health of each subsystem."),
    ("openapi", "This description."),
];

/// A link: from a response of one operation to another operation, with the
/// values of the target's parameters (runtime expressions).
struct Link {
    from: Operation,
    status: &'static str,
    to: Operation,
    parameters: &'static [(&'static str, &'static str)],
}

const PROJECT: &[(&str, &str)] = &[("project", "$response.body#/name")];
const ENVIRONMENT: &[(&str, &str)] = &[
    ("project", "$response.body#/project"),
    ("environment", "$response.body#/name"),
];
const APP: &[(&str, &str)] = &[
    ("project", "$response.body#/project"),
    ("environment", "$response.body#/environment"),
    ("app", "$response.body#/name"),
];
const SECRET: &[(&str, &str)] = &[
    ("project", "$request.path.project"),
    ("environment", "$request.path.environment"),
    ("secret", "$response.body#/name"),
];

const BUILD: &[(&str, &str)] = &[
    ("project", "$request.path.project"),
    ("environment", "$request.path.environment"),
    ("app", "$request.path.app"),
    ("build", "$response.body#/id"),
];

const COMMAND: &[(&str, &str)] = &[
    ("project", "$request.path.project"),
    ("environment", "$request.path.environment"),
    ("app", "$request.path.app"),
    ("command", "$response.body#/name"),
];

const WEBHOOK: &[(&str, &str)] = &[
    ("project", "$request.path.project"),
    ("environment", "$request.path.environment"),
    ("app", "$request.path.app"),
];

/// What a created object leads to: the project's name to its environments,
/// the environment's to its apps, secrets and templates, and so on.
fn links() -> Vec<Link> {
    use Operation::*;
    let mut links = Vec::new();
    let mut add = |from, status, targets: &[Operation], parameters| {
        for &to in targets {
            links.push(Link {
                from,
                status,
                to,
                parameters,
            });
        }
    };
    add(
        CreateProject,
        "201",
        &[
            GetProject,
            DeleteProject,
            ListEnvironments,
            CreateEnvironment,
        ],
        PROJECT,
    );
    add(
        CreateEnvironment,
        "201",
        &[
            GetEnvironment,
            DeleteEnvironment,
            ListApps,
            CreateApp,
            ListSecrets,
            PutSecret,
            DeployTemplate,
        ],
        ENVIRONMENT,
    );
    add(
        CreateApp,
        "201",
        &[
            GetApp,
            UpdateApp,
            DeleteApp,
            GetAppLogs,
            ListReleases,
            RollbackApp,
            PromoteApp,
            RestartApp,
            RunApp,
            RunCommand,
            ListCommands,
            CheckAppDomains,
            CreateBuild,
            ListBuilds,
            CreateWebhook,
            GetWebhook,
            DeleteWebhook,
        ],
        APP,
    );
    add(PutSecret, "201", &[DeleteSecret], SECRET);
    add(
        CreateBuild,
        "202",
        &[GetBuild, GetBuildLogs, CancelBuild],
        BUILD,
    );
    add(RunCommand, "202", &[GetCommand, GetCommandLogs], COMMAND);
    add(CreateWebhook, "201", &[GetWebhook, DeleteWebhook], WEBHOOK);
    add(
        CreateToken,
        "201",
        &[DeleteToken],
        &[("token", "$response.body#/id")],
    );
    add(
        InviteMember,
        "201",
        &[UpdateMember, RemoveMember],
        &[("member", "$response.body#/id")],
    );
    links
}

/// The whole document.
pub fn document() -> Value {
    let mut api = OpenApi::new(
        InfoBuilder::new()
            .title("Berth control plane API")
            .version(VERSION)
            .description(Some(
                "Berth runs containers on Kubernetes: projects, environments, apps, secrets \
                 and templates, behind one REST API. Errors are Problem Details \
                 (`application/json`: `code`, `title`, `status`, `detail`); every response \
                 carries `X-Request-Id`; every call is audited.",
            ))
            .license(Some(
                LicenseBuilder::new()
                    .name("Apache-2.0")
                    .identifier(Some("Apache-2.0"))
                    .build(),
            ))
            .contact(Some(
                ContactBuilder::new()
                    .name(Some("The operator of this Berth installation"))
                    .build(),
            ))
            .build(),
        Paths::new(),
    );
    // Paths are absolute (`/api/v1/…`): the API answers at the origin that
    // served this document, whichever gateway or local port that is.
    let mut origin = Server::new("/");
    origin.description = Some("The origin that served this document".to_owned());
    api.servers = Some(vec![origin]);
    for function in FUNCTIONS {
        api.merge((function.describe)());
    }
    // Once for the whole document; the public operations say `[]`.
    api.security = Some(berth_api::openapi::security());
    api.tags = Some(
        TAGS.iter()
            .map(|(name, description)| {
                TagBuilder::new()
                    .name(*name)
                    .description(Some(*description))
                    .build()
            })
            .collect(),
    );
    let components = api.components.get_or_insert_with(Default::default);
    components.security_schemes.insert(
        SESSION.to_owned(),
        SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::with_description(
            sessions::COOKIE,
            "The session cookie that `login` sets.",
        ))),
    );
    components.security_schemes.insert(
        TOKEN.to_owned(),
        SecurityScheme::Http(
            HttpBuilder::new()
                .scheme(HttpAuthScheme::Bearer)
                .bearer_format("brt_ and 40 base62 characters")
                .description(Some("A personal API token (`createToken`)."))
                .build(),
        ),
    );
    components.security_schemes.insert(
        REGISTRY_CREDENTIAL.to_owned(),
        SecurityScheme::Http(
            HttpBuilder::new()
                .scheme(HttpAuthScheme::Basic)
                .description(Some(
                    "A registry credential Berth made (a build's or an environment's, from its \
                     Secret): user name and password. Never a session or an API token.",
                ))
                .build(),
        ),
    );
    let mut document = serde_json::to_value(api).expect("an OpenAPI document serializes");
    // What utoipa's types cannot say (a header by reference) or say wrongly
    // (utoipa 5 writes a link's `operationId` as `operation_id`), in JSON.
    document["components"]["headers"] = json!({
        REQUEST_ID: {
            "description": "The request's id: API Gateway's, or a new one. Also in the audit \
                            event and the log.",
            "required": true,
            "schema": { "type": "string" },
        }
    });
    for response in responses_mut(&mut document) {
        response["headers"][REQUEST_ID] =
            json!({ "$ref": format!("#/components/headers/{REQUEST_ID}") });
    }
    for link in links() {
        add_link(&mut document, &link);
    }
    document
}

/// The document as committed: pretty JSON and a final newline.
pub fn json() -> String {
    let mut text =
        serde_json::to_string_pretty(&document()).expect("an OpenAPI document serializes");
    text.push('\n');
    text
}

/// Every operation of the document, by method, with its path.
fn operations_mut(document: &mut Value) -> impl Iterator<Item = &mut Value> {
    document["paths"]
        .as_object_mut()
        .into_iter()
        .flat_map(|paths| paths.values_mut())
        .filter_map(Value::as_object_mut)
        .flat_map(|item| item.values_mut())
}

fn responses_mut(document: &mut Value) -> impl Iterator<Item = &mut Value> {
    operations_mut(document)
        .filter_map(|operation| operation["responses"].as_object_mut())
        .flat_map(|responses| responses.values_mut())
}

fn add_link(document: &mut Value, link: &Link) {
    let parameters: serde_json::Map<String, Value> = link
        .parameters
        .iter()
        .map(|(name, expression)| ((*name).to_owned(), Value::from(*expression)))
        .collect();
    let response = operations_mut(document)
        .find(|operation| operation["operationId"] == link.from.id())
        .and_then(|operation| operation["responses"].get_mut(link.status));
    let Some(response) = response else {
        panic!(
            "a link from {} {} that the description lacks",
            link.from.id(),
            link.status
        );
    };
    response["links"][link.to.id()] = json!({
        "operationId": link.to.id(),
        "parameters": parameters,
        "description": format!("The new object's `{}`.", link.to.id()),
    });
}
