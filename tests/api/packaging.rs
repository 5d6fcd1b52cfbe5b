//! The SAM template agrees with the code: the table has the shape the code
//! creates, every function is packaged for Lambda, and every route the
//! template sends to a function is an operation of that function.

use std::collections::BTreeSet;

use serde_yaml::Value;
use tower::ServiceExt;

use crate::support::TestApp;
use berth_domain::Operation;
use berth_store::keys;

fn template() -> Value {
    let path =
        std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/..")).join("template.yaml");
    serde_yaml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn strings(value: &Value, field: &str) -> BTreeSet<String> {
    value
        .as_sequence()
        .unwrap()
        .iter()
        .map(|entry| entry[field].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn the_table_matches_the_code() {
    let template = template();
    let table = &template["Resources"]["Table"]["Properties"];
    let key_names: BTreeSet<String> = strings(&table["KeySchema"], "AttributeName");
    assert_eq!(
        key_names,
        BTreeSet::from([keys::PK.to_owned(), keys::SK.to_owned()])
    );
    let index = &table["GlobalSecondaryIndexes"][0];
    assert_eq!(index["IndexName"].as_str(), Some(keys::GSI1));
    assert_eq!(
        strings(&index["KeySchema"], "AttributeName"),
        BTreeSet::from([keys::GSI1_PK.to_owned(), keys::GSI1_SK.to_owned()])
    );
    assert_eq!(
        table["TimeToLiveSpecification"]["AttributeName"].as_str(),
        Some(keys::TTL)
    );
    assert_eq!(
        table["TimeToLiveSpecification"]["Enabled"].as_bool(),
        Some(true)
    );
    assert_eq!(table["BillingMode"].as_str(), Some("PAY_PER_REQUEST"));
}

#[tokio::test]
async fn every_template_route_reaches_its_functions_operation() {
    let template = template();
    let app = TestApp::new().await;
    let globals = &template["Globals"]["Function"];
    assert_eq!(globals["Runtime"].as_str(), Some("provided.al2023"));
    assert_eq!(globals["Architectures"][0].as_str(), Some("arm64"));
    assert_eq!(globals["Handler"].as_str(), Some("bootstrap"));

    let mut routed = BTreeSet::new();
    let mut functions = BTreeSet::new();
    let mut default_routes = Vec::new();
    let mut unknown_api_routes = Vec::new();
    for (name, resource) in template["Resources"].as_mapping().unwrap() {
        if resource["Type"].as_str() != Some("AWS::Serverless::Function") {
            continue;
        }
        assert_eq!(
            resource["Metadata"]["BuildMethod"].as_str(),
            Some("rust-cargolambda"),
            "{name:?}"
        );
        let binary = resource["Metadata"]["BuildProperties"]["Binary"]
            .as_str()
            .unwrap()
            .to_owned();
        assert_eq!(
            resource["Properties"]["CodeUri"].as_str(),
            Some(format!("functions/{binary}").as_str()),
            "{name:?} is built from its own crate, so it links only the features it uses"
        );
        functions.insert(binary.clone());
        if berth_local::SCHEDULED.contains(&binary.as_str()) {
            // A scheduled function serves no route: a schedule invokes it.
            for (_, event) in resource["Properties"]["Events"].as_mapping().unwrap() {
                assert_eq!(event["Type"].as_str(), Some("Schedule"), "{name:?}");
                assert!(
                    event["Properties"]["Schedule"]
                        .as_str()
                        .is_some_and(|schedule| schedule.starts_with("rate(")),
                    "{name:?}"
                );
            }
            continue;
        }
        if binary == berth_local::CONSOLE {
            // The console's pages and assets: GET and HEAD of every path the
            // API's routes leave, never one under /api/.
            let mut routes: Vec<(String, String)> = Vec::new();
            for (_, event) in resource["Properties"]["Events"].as_mapping().unwrap() {
                assert_eq!(event["Type"].as_str(), Some("HttpApi"));
                let method = event["Properties"]["Method"].as_str().unwrap().to_owned();
                let path = event["Properties"]["Path"].as_str().unwrap().to_owned();
                assert!(
                    berth_console_serve::is_console_request(
                        &method.parse().unwrap(),
                        &path.replace("{proxy+}", "projects")
                    ),
                    "{method} {path} is the console's"
                );
                routes.push((method, path));
            }
            routes.sort();
            assert_eq!(
                routes,
                [
                    ("GET", "/"),
                    ("GET", "/{proxy+}"),
                    ("HEAD", "/"),
                    ("HEAD", "/{proxy+}")
                ]
                .map(|(m, p)| (m.to_owned(), p.to_owned()))
            );
            continue;
        }
        let routes = berth_local::function(&binary)
            .unwrap_or_else(|| panic!("the template packages an unknown function {binary}"))(
        );
        let router = berth_api::http::serve(routes, app.state.clone());
        for (_, event) in resource["Properties"]["Events"].as_mapping().unwrap() {
            assert_eq!(event["Type"].as_str(), Some("HttpApi"));
            let method = event["Properties"]["Method"].as_str().unwrap();
            if event["Properties"]["Path"].as_str() == Some("$default") {
                assert_eq!(method, "ANY", "the default route takes every method");
                default_routes.push(binary.clone());
                continue;
            }
            // Unknown paths under /api/, which the console's `/{proxy+}`
            // would take: the API's unknownRoute too.
            if event["Properties"]["Path"].as_str() == Some("/api/{proxy+}") {
                let request = http::Request::builder()
                    .method(method)
                    .uri("/api/v1/no-such-route")
                    .body(axum::body::Body::empty())
                    .unwrap();
                let response = router.clone().oneshot(request).await.unwrap();
                assert_eq!(
                    response.status(),
                    404,
                    "{method} /api/{{proxy+}} of {binary}"
                );
                assert_eq!(
                    response.extensions().get::<Operation>().copied(),
                    None,
                    "{method} /api/{{proxy+}} of {binary} is no operation: unknownRoute"
                );
                unknown_api_routes.push(format!("{binary} {method}"));
                continue;
            }
            let path = event["Properties"]["Path"]
                .as_str()
                .unwrap()
                .replace(['{', '}'], "");
            let request = http::Request::builder()
                .method(method)
                .uri(&path)
                .body(axum::body::Body::empty())
                .unwrap();
            let response = router.clone().oneshot(request).await.unwrap();
            let operation = response.extensions().get::<Operation>().copied();
            assert!(
                operation.is_some_and(|op| op != Operation::UnknownRoute),
                "{method} {path} is not an operation of {binary}"
            );
            routed.insert(operation.unwrap().id());
        }
    }
    assert_eq!(
        functions,
        berth_local::FUNCTIONS
            .iter()
            .map(|function| function.name)
            .chain(berth_local::SCHEDULED.iter().copied())
            .chain([berth_local::CONSOLE])
            .map(str::to_owned)
            .collect::<BTreeSet<_>>(),
        "the template packages every function"
    );
    unknown_api_routes.sort();
    assert_eq!(
        unknown_api_routes,
        ["health GET", "health HEAD"],
        "the health function answers unknown GETs and HEADs under /api/, before the console's routes"
    );
    assert_eq!(
        default_routes,
        ["health"],
        "one `$default` route, to the health function, answers unknown routes"
    );
    let expected: BTreeSet<&str> = Operation::ALL
        .iter()
        .filter(|op| **op != Operation::UnknownRoute)
        .map(|op| op.id())
        .collect();
    assert_eq!(
        routed, expected,
        "every operation has a route in the template"
    );
}

/// The packages and enabled features each function binary links, as
/// `cargo tree` resolves them when that function is built on its own (as
/// `make package` and `make bench` build them).
fn linked_packages(function: &str) -> Vec<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = std::process::Command::new(cargo)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .args(["tree", "--locked", "--offline", "--prefix", "none"])
        .args(["-e", "normal", "-f", "{p} [{f}]", "-p"])
        .arg(format!("berth-fn-{function}"))
        .output()
        .expect("cargo tree runs");
    assert!(
        output.status.success(),
        "cargo tree for {function}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn functions_link_only_what_they_use() {
    // health reports on the cluster too.
    const CLUSTER_FUNCTIONS: &[&str] = &[
        "health",
        "projects",
        "environments",
        "apps",
        "templates",
        "secrets",
        "builds",
        "cleanup",
        // The token service reads the Build or Environment holding a
        // credential's digest.
        "registry",
    ];
    let every_function = berth_local::FUNCTIONS
        .iter()
        .map(|function| function.name)
        .chain(berth_local::SCHEDULED.iter().copied());
    for function in every_function {
        let packages = linked_packages(function);
        let aws_config = packages
            .iter()
            .find(|line| line.starts_with("aws-config "))
            .unwrap_or_else(|| panic!("{function} links aws-config"));
        for feature in ["sso", "credentials-process"] {
            assert!(
                !aws_config.contains(feature),
                "{function} links aws-config's {feature}, which a Lambda function never uses: {aws_config}"
            );
        }
        let links_kube = packages.iter().any(|line| line.starts_with("kube-client "));
        assert_eq!(
            links_kube,
            CLUSTER_FUNCTIONS.contains(&function),
            "{function}: kube is linked exactly where the cluster is needed"
        );
        let links_dns = packages
            .iter()
            .any(|line| line.starts_with("hickory-resolver "));
        assert_eq!(
            links_dns,
            ["apps", "cleanup"].contains(&function),
            "{function}: only apps (the domain check) and cleanup (domains' proofs) link the DNS resolver"
        );
    }
    // The console's function serves files from its own binary: nothing of
    // the API, the table or the cluster.
    let console = linked_packages(berth_local::CONSOLE);
    for package in [
        "berth-api ",
        "aws-config ",
        "aws-sdk-dynamodb ",
        "kube-client ",
    ] {
        assert!(
            !console.iter().any(|line| line.starts_with(package)),
            "the console's function links {package}"
        );
    }
    assert!(
        console
            .iter()
            .any(|line| line.starts_with("berth-console-serve "))
    );
}
