//! The OpenAPI description: the committed file is what the code generates,
//! every operation is described exactly once at the route that serves it
//! (and the template routes it there), nothing is described that has no
//! route, and the document says what a client needs.
//!
//! After changing a handler, its annotation or a type it answers with,
//! rewrite the file with
//! `BERTH_WRITE_OPENAPI=1 scripts/with-dynamodb.sh cargo test --test api openapi::`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;
use tower::ServiceExt;

use crate::support::TestApp;
use berth_domain::Operation;
use berth_local::openapi;
use berth_store::keys::SYSTEM_ORG;

const METHODS: [&str; 5] = ["get", "put", "post", "delete", "patch"];

fn committed_path() -> std::path::PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/..")).join(openapi::FILE)
}

fn document() -> Value {
    openapi::document()
}

/// Every (method, path, operation) a description holds.
fn described(part: &Value) -> Vec<(String, String, Value)> {
    let mut found = Vec::new();
    for (path, item) in part["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            assert!(
                METHODS.contains(&method.as_str()),
                "{path}: unexpected key {method}"
            );
            found.push((method.to_uppercase(), path.clone(), operation.clone()));
        }
    }
    found
}

/// The security an operation asks for: its own, or the document's.
fn security(operation: &Value) -> Value {
    operation
        .get("security")
        .cloned()
        .unwrap_or_else(|| document()["security"].clone())
}

#[test]
fn the_committed_document_is_what_the_code_generates() {
    let generated = openapi::json();
    let path = committed_path();
    if std::env::var_os("BERTH_WRITE_OPENAPI").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "{} differs from the description the code generates; rewrite it with \
         `BERTH_WRITE_OPENAPI=1 scripts/with-dynamodb.sh cargo test --test api openapi::` \
         and commit it",
        openapi::FILE
    );
    assert!(
        berth_fn_health::API_DESCRIPTION == generated.as_bytes(),
        "the health function serves the committed file (rebuild after rewriting it)"
    );
}

#[tokio::test]
async fn every_operation_is_described_once_at_the_route_that_serves_it() {
    let app = TestApp::new().await;
    let mut described_ids = BTreeMap::<String, usize>::new();
    let mut described_routes = BTreeSet::new();
    for function in berth_local::FUNCTIONS {
        let part = serde_json::to_value((function.describe)()).unwrap();
        let router = berth_api::http::serve((function.routes)(), app.state.clone());
        for (method, path, operation) in described(&part) {
            let id = operation["operationId"].as_str().unwrap().to_owned();
            *described_ids.entry(id.clone()).or_default() += 1;
            described_routes.insert((function.name, method.clone(), path.clone()));
            // The path's parameters filled in: the route must serve this
            // very operation, whatever the values.
            let uri = path.replace(['{', '}'], "");
            let request = http::Request::builder()
                .method(method.as_str())
                .uri(&uri)
                .body(axum::body::Body::empty())
                .unwrap();
            let response = router.clone().oneshot(request).await.unwrap();
            let served = response.extensions().get::<Operation>().copied();
            assert_eq!(
                served.map(Operation::id),
                Some(id.as_str()),
                "{method} {path} is described as `{id}` in the {} function's part, \
                 which serves {served:?} there",
                function.name
            );
            // Without credentials: refused exactly when the description
            // says credentials are needed.
            let secured = security(&operation)
                .as_array()
                .is_some_and(|requirements| !requirements.is_empty());
            // The webhook receiver takes no credentials of Berth's, but
            // refuses (401) what the hook's secret did not sign.
            let signed = id == Operation::ReceiveWebhook.id();
            assert_eq!(
                response.status() == 401,
                secured || signed,
                "{method} {path} answered {} without credentials",
                response.status()
            );
        }
    }
    let expected: BTreeMap<String, usize> = Operation::ALL
        .iter()
        .filter(|op| **op != Operation::UnknownRoute)
        .map(|op| (op.id().to_owned(), 1))
        .collect();
    assert_eq!(
        described_ids, expected,
        "every operation is described exactly once, and nothing else is"
    );

    // The template routes the same methods and paths to the same functions.
    let template: serde_yaml::Value = serde_yaml::from_str(
        &std::fs::read_to_string(
            Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/..")).join("template.yaml"),
        )
        .unwrap(),
    )
    .unwrap();
    let mut template_routes = BTreeSet::new();
    for (_, resource) in template["Resources"].as_mapping().unwrap() {
        if resource["Type"].as_str() != Some("AWS::Serverless::Function") {
            continue;
        }
        let binary = resource["Metadata"]["BuildProperties"]["Binary"]
            .as_str()
            .unwrap();
        // A scheduled function serves no route, and the console's no API
        // operation (`packaging` checks both).
        if berth_local::SCHEDULED.contains(&binary) || binary == berth_local::CONSOLE {
            continue;
        }
        let function = berth_local::FUNCTIONS
            .iter()
            .find(|function| function.name == binary)
            .unwrap();
        for (_, event) in resource["Properties"]["Events"].as_mapping().unwrap() {
            let path = event["Properties"]["Path"].as_str().unwrap();
            // The unknown routes (`packaging` checks them).
            if path == "$default" || path == "/api/{proxy+}" {
                continue;
            }
            let method = event["Properties"]["Method"].as_str().unwrap();
            template_routes.insert((function.name, method.to_uppercase(), path.to_owned()));
        }
    }
    assert_eq!(
        described_routes, template_routes,
        "the description and template.yaml name the same routes of the same functions"
    );

    // The merged document lost nothing of the parts.
    let whole: BTreeSet<(String, String)> = described(&document())
        .into_iter()
        .map(|(method, path, _)| (method, path))
        .collect();
    let parts: BTreeSet<(String, String)> = described_routes
        .into_iter()
        .map(|(_, method, path)| (method, path))
        .collect();
    assert_eq!(whole, parts);
}

#[test]
fn the_document_says_what_a_client_needs() {
    let document = document();
    assert_eq!(document["openapi"], "3.1.0");
    assert_eq!(document["info"]["version"], "1.0.3-rc.1");
    assert_eq!(document["info"]["license"]["name"], "Apache-2.0");
    assert_eq!(document["info"]["license"]["identifier"], "Apache-2.0");

    let schemes = &document["components"]["securitySchemes"];
    assert_eq!(schemes["session"]["type"], "apiKey");
    assert_eq!(schemes["session"]["in"], "cookie");
    assert_eq!(schemes["session"]["name"], "berth_session");
    assert_eq!(schemes["token"]["type"], "http");
    assert_eq!(schemes["token"]["scheme"], "bearer");
    assert_eq!(schemes["registryCredential"]["type"], "http");
    assert_eq!(schemes["registryCredential"]["scheme"], "basic");

    let tags: BTreeSet<&str> = document["tags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tag| tag["name"].as_str().unwrap())
        .collect();
    let unauthenticated = ["login", "getHealth", "getApiDescription", "receiveWebhook"];
    for (method, path, operation) in described(&document) {
        let id = operation["operationId"].as_str().unwrap();
        let at = format!("{method} {path} ({id})");
        let operation_tags = operation["tags"].as_array().unwrap();
        assert_eq!(operation_tags.len(), 1, "{at}: one tag");
        assert!(tags.contains(operation_tags[0].as_str().unwrap()), "{at}");
        assert!(
            operation["summary"].as_str().is_some_and(|s| !s.is_empty()),
            "{at}: a summary"
        );
        assert!(
            operation["description"]
                .as_str()
                .is_some_and(|s| !s.is_empty()),
            "{at}: a description"
        );
        let requirements = security(&operation);
        let security: Vec<&str> = requirements
            .as_array()
            .map(|requirements| {
                requirements
                    .iter()
                    .flat_map(|requirement| requirement.as_object().unwrap().keys())
                    .map(String::as_str)
                    .collect()
            })
            .unwrap_or_default();
        if unauthenticated.contains(&id) {
            assert!(security.is_empty(), "{at}: needs no credentials");
        } else if path == "/api/v1/registry/token" {
            assert_eq!(
                security,
                ["registryCredential"],
                "{at}: a registry credential"
            );
        } else {
            assert_eq!(security, ["session", "token"], "{at}: either credential");
        }
        for name in path.split('{').skip(1) {
            let name = name.split('}').next().unwrap();
            assert!(
                operation["parameters"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|p| p["name"] == name && p["in"] == "path" && p["required"] == true),
                "{at}: path parameter {name}"
            );
        }
        let responses = operation["responses"].as_object().unwrap();
        assert!(
            responses.keys().any(|status| status.starts_with('2')),
            "{at}: a success"
        );
        assert!(responses.contains_key("500"), "{at}: 500");
        for (status, response) in responses {
            assert_eq!(
                response["headers"]["X-Request-Id"]["$ref"], "#/components/headers/X-Request-Id",
                "{at} {status}: X-Request-Id"
            );
            if status.starts_with('4') || status == "500" {
                let problem = &response["content"]["application/json"]["schema"]["allOf"];
                assert_eq!(
                    problem[0]["$ref"], "#/components/schemas/Problem",
                    "{at} {status}"
                );
                let codes = problem[1]["properties"]["code"]["enum"].as_array().unwrap();
                assert!(!codes.is_empty(), "{at} {status}: its codes");
            }
        }
        if operation.get("requestBody").is_some() {
            assert!(responses.contains_key("415"), "{at}: 415 for a body");
            assert!(responses.contains_key("413"), "{at}: 413 for a body");
        }
        if !security.is_empty() {
            assert!(responses.contains_key("401"), "{at}: 401");
        }
        // The records that have a URL of their own.
        let located = [
            "createProject",
            "createEnvironment",
            "createApp",
            "putSecret",
        ];
        if located.contains(&id) {
            let headers = &responses["201"]["headers"];
            assert!(headers["Location"].is_object(), "{at}: Location");
        }
    }
    let login = &document["paths"]["/api/v1/auth/login"]["post"]["responses"];
    assert!(login["200"]["headers"]["Set-Cookie"].is_object());
    assert!(login["429"]["headers"]["Retry-After"].is_object());
    let codes = &login["401"]["content"]["application/json"]["schema"]["allOf"][1]["properties"]["code"]
        ["enum"];
    assert_eq!(codes, &serde_json::json!(["invalid_credentials"]));
    let logout = &document["paths"]["/api/v1/auth/logout"]["post"]["responses"];
    assert!(logout["204"]["headers"]["Set-Cookie"].is_object());
    let delete_project = &document["paths"]["/api/v1/projects/{project}"]["delete"]["responses"];
    let conflicts = delete_project["409"]["content"]["application/json"]["schema"]["allOf"][1]
        ["properties"]["code"]["enum"]
        .as_array()
        .unwrap();
    assert!(conflicts.contains(&Value::from("project_not_empty")));
    // Created names lead on, for clients and for schemathesis's stateful phase.
    let created = &document["paths"]["/api/v1/projects"]["post"]["responses"]["201"];
    assert_eq!(
        created["links"]["createEnvironment"],
        serde_json::json!({
            "operationId": "createEnvironment",
            "parameters": { "project": "$response.body#/name" },
            "description": "The new object's `createEnvironment`.",
        })
    );
}

#[tokio::test]
async fn the_description_is_served_without_credentials_and_audited() {
    let app = TestApp::new().await;
    let response = app.get("/api/v1/openapi.json").send().await;
    response.assert_status(200);
    assert_eq!(
        response.headers["content-type"].to_str().unwrap(),
        "application/json"
    );
    assert!(response.headers.contains_key("x-request-id"));
    let committed = std::fs::read_to_string(committed_path()).unwrap();
    assert!(
        response.text() == committed,
        "the served document is the committed file"
    );
    let event = app.last_audit_event(SYSTEM_ORG).await;
    assert_eq!(event.action, "getApiDescription");
    assert_eq!(event.status, Some(200));
}

/// A text that must not be only white space says so with the pattern of
/// `name_rules::text`'s rule, the one `berth_domain::name_rules::NOT_BLANK` states
/// (utoipa takes only a literal, so each field repeats it).
#[test]
fn texts_that_must_not_be_blank_say_so() {
    let document = document();
    let schemas = &document["components"]["schemas"];
    for (schema, field) in [
        ("CreateProjectBody", "display_name"),
        ("Invitation", "display_name"),
        ("NewToken", "name"),
    ] {
        assert_eq!(
            schemas[schema]["properties"][field]["pattern"],
            berth_domain::name_rules::NOT_BLANK,
            "{schema}.{field}"
        );
    }
}

/// A quota's storage is written as every Kubernetes quantity Berth reads
/// (`berth_domain::size::QUANTITY_NOTATION`; the quota's attribute
/// repeats it, utoipa taking only a literal).
#[test]
fn a_quotas_storage_says_its_notation() {
    let document = document();
    assert_eq!(
        document["components"]["schemas"]["Quota"]["properties"]["storage"]["pattern"],
        format!("^{}$", berth_domain::size::QUANTITY_NOTATION)
    );
}

/// What the server always sends is required in the description, `null`
/// included: a certificate's `not_after` is `null` until one is issued,
/// never absent (issue 45), so a generated client may read it unchecked.
#[test]
fn a_certificate_checks_fields_are_all_required() {
    let document = document();
    let check = &document["components"]["schemas"]["CertificateCheck"];
    let mut properties: Vec<&str> = (check["properties"].as_object().unwrap().keys())
        .map(String::as_str)
        .collect();
    let mut required: Vec<&str> = (check["required"].as_array().unwrap().iter())
        .filter_map(Value::as_str)
        .collect();
    properties.sort_unstable();
    required.sort_unstable();
    assert_eq!(required, properties);
}
