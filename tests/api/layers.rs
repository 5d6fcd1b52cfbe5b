//! The crates' layers (README, "Crates and their layers"), held against
//! `cargo metadata`: a workspace crate depends only on the crates its row
//! allows, every crate has a row, and the controller's whole dependency
//! graph is free of DynamoDB, the HTTP API's Lambda runtime and password
//! hashing, the records a client links are free of axum, DynamoDB and
//! kube, of the product's crates only the store links DynamoDB's SDK, and
//! each framework (Lambda's runtime, axum, kube) is a direct dependency only
//! of the layers that speak it — none of `berth-domain`. Inside `berth-api`,
//! where the compiler holds no order between modules, its top-level modules
//! import each other without a loop (apps is below builds, webhooks,
//! environments and templates).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use serde_json::Value;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

/// The README's table: each crate (or `prefix-*`) and the crates it may use.
fn allowed() -> Vec<(String, BTreeSet<String>)> {
    let readme = std::fs::read_to_string(Path::new(ROOT).join("README.md")).unwrap();
    let table = readme
        .split("### Crates and their layers")
        .nth(1)
        .expect("the README has a section \"Crates and their layers\"");
    let rows: Vec<(String, BTreeSet<String>)> = table
        .lines()
        .skip_while(|line| !line.starts_with("| crate |"))
        .skip(2)
        .take_while(|line| line.starts_with('|'))
        .map(|line| {
            let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
            let name = cells[0].trim_matches('`').to_owned();
            let uses = cells[2]
                .split(',')
                .map(|crate_name| crate_name.trim().trim_matches('`').to_owned())
                .filter(|crate_name| crate_name.starts_with("berth"))
                .collect();
            (name, uses)
        })
        .collect();
    assert!(rows.len() >= 8, "the table has a row per crate: {rows:?}");
    rows
}

fn row_of<'a>(
    rows: &'a [(String, BTreeSet<String>)],
    package: &str,
) -> Option<&'a (String, BTreeSet<String>)> {
    rows.iter().find(|(name, _)| match name.strip_suffix('*') {
        Some(prefix) => package.starts_with(prefix),
        None => name == package,
    })
}

/// The platform rustc builds for by default (`rustc -vV`'s `host:`).
fn host_triple() -> String {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let output = Command::new(rustc)
        .arg("-vV")
        .output()
        .expect("rustc -vV runs");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .find_map(|line| line.strip_prefix("host: "))
        .expect("rustc -vV names its host")
        .to_owned()
}

fn metadata(no_deps: bool) -> Value {
    let mut command = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    command
        .current_dir(ROOT)
        .args(["metadata", "--format-version", "1", "--locked", "--offline"]);
    if no_deps {
        command.arg("--no-deps");
    } else {
        // The graph as this machine builds it: offline, the crates of other
        // platforms (Windows' console crates...) are not there to read on a
        // machine that never built for them.
        command.args(["--filter-platform", &host_triple()]);
    }
    let output = command.output().expect("cargo metadata runs");
    assert!(
        output.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn every_crate_depends_only_on_the_layers_below_it() {
    let rows = allowed();
    let metadata = metadata(true);
    let packages = metadata["packages"].as_array().unwrap();
    let members: BTreeSet<&str> = packages
        .iter()
        .map(|package| package["name"].as_str().unwrap())
        .collect();
    let mut upward = BTreeSet::new();
    for package in packages {
        let name = package["name"].as_str().unwrap();
        let Some((_, uses)) = row_of(&rows, name) else {
            panic!("{name} has no row in the README's table of crates and their layers");
        };
        // The whole system in one process, and what runs it from outside.
        if ["berth-local", "berth-tests", "berth-benches"].contains(&name) {
            continue;
        }
        for dependency in package["dependencies"].as_array().unwrap() {
            let dependency = dependency["name"].as_str().unwrap();
            if members.contains(dependency) && !uses.contains(dependency) {
                upward.insert(format!("{name} → {dependency}"));
            }
        }
    }
    assert!(
        upward.is_empty(),
        "dependencies the README's table does not allow: {upward:?}"
    );
}

/// The folders of the product's crates: what is shipped or run by users.
/// The local server, the admin CLI, the stand-in, the tests and the
/// benchmarks are outside them.
const PRODUCT_FOLDERS: [&str; 4] = ["shared/", "functions/", "controller/", "cli/"];

/// The product's crates (those in [`PRODUCT_FOLDERS`]), each with its
/// direct dependencies as cargo's metadata lists them (name and kind).
fn product_crates(metadata: &Value) -> Vec<(String, Vec<Value>)> {
    let root = Path::new(ROOT).canonicalize().unwrap();
    metadata["packages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|package| {
            let manifest = Path::new(package["manifest_path"].as_str().unwrap());
            let folder = manifest
                .strip_prefix(&root)
                .expect("a member's manifest lies in the workspace");
            PRODUCT_FOLDERS
                .iter()
                .any(|product| folder.starts_with(product))
        })
        .map(|package| {
            (
                package["name"].as_str().unwrap().to_owned(),
                package["dependencies"].as_array().unwrap().clone(),
            )
        })
        .collect()
}

#[test]
fn only_the_store_links_the_dynamodb_sdk() {
    let mut linking = BTreeSet::new();
    for (name, dependencies) in product_crates(&metadata(true)) {
        if name != "berth-store"
            && dependencies
                .iter()
                .any(|dependency| dependency["name"] == "aws-sdk-dynamodb")
        {
            linking.insert(name);
        }
    }
    assert!(
        linking.is_empty(),
        "crates of the product that link aws-sdk-dynamodb, which only berth-store may: {linking:?}"
    );
}

#[test]
fn the_controller_links_neither_dynamodb_nor_the_api_pipeline() {
    let metadata = metadata(false);
    let names: BTreeMap<&str, &str> = metadata["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|package| {
            (
                package["id"].as_str().unwrap(),
                package["name"].as_str().unwrap(),
            )
        })
        .collect();
    let nodes: BTreeMap<&str, &Value> = metadata["resolve"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|node| (node["id"].as_str().unwrap(), node))
        .collect();
    // What the controller's binary links: its normal dependencies, and theirs
    // (features unified over the whole workspace, so this is an upper bound).
    let controller = names
        .iter()
        .find(|(_, name)| **name == "berth-controller")
        .map(|(id, _)| *id)
        .unwrap();
    let mut linked = BTreeSet::new();
    let mut next = vec![controller];
    while let Some(id) = next.pop() {
        for dependency in nodes[id]["deps"].as_array().unwrap() {
            let normal = dependency["dep_kinds"]
                .as_array()
                .unwrap()
                .iter()
                .any(|kind| kind["kind"].is_null());
            let dependency = dependency["pkg"].as_str().unwrap();
            if normal && linked.insert(names[dependency]) {
                next.push(dependency);
            }
        }
    }
    for forbidden in [
        "lambda_http",
        "aws-sdk-dynamodb",
        "argon2",
        "berth-store",
        "berth-api",
    ] {
        assert!(
            !linked.contains(forbidden),
            "the controller links {forbidden}"
        );
    }
    assert!(linked.contains("berth-cluster") && linked.contains("kube-client"));
}

/// Which crates of the product (`shared/*`, `functions/*`, the controller,
/// the CLI) may name each framework as a direct dependency, so that a
/// framework's types stay in the layer that speaks it: Lambda's runtime in
/// the HTTP layer and the functions it runs; axum there too and in the
/// controller (probes, metrics); kube in the
/// cluster layer, the controller and the HTTP layer (its `cluster`
/// feature). `berth-domain` names none of them (nor any AWS crate): its
/// errors have no HTTP, DynamoDB or cluster in them, and each layer's own
/// error becomes the API's in `berth_api::error`. The whole system in one
/// process (`local/`), the admin CLI, the stand-in, the tests and the
/// benchmarks use what they test or run.
#[test]
fn frameworks_stay_in_their_layers() {
    fn may_name(framework: &str, name: &str) -> bool {
        let function = name.starts_with("berth-fn-");
        match framework {
            "lambda_http" => name == "berth-api" || function,
            "axum" => ["berth-api", "berth-controller"].contains(&name) || function,
            "kube" => ["berth-cluster", "berth-controller", "berth-api"].contains(&name),
            _ => true,
        }
    }
    let mut broken = BTreeSet::new();
    let mut product = BTreeSet::new();
    for (name, dependencies) in product_crates(&metadata(true)) {
        // What the crate itself builds with; its tests' dependencies aside.
        let direct = dependencies
            .iter()
            .filter(|dependency| dependency["kind"].as_str() != Some("dev"))
            .map(|dependency| dependency["name"].as_str().unwrap());
        for dependency in direct {
            if !may_name(dependency, &name) {
                broken.insert(format!("{name} → {dependency}"));
            }
            if name == "berth-domain"
                && (["axum", "kube", "lambda_http"].contains(&dependency)
                    || dependency.starts_with("aws-"))
            {
                broken.insert(format!("{name} → {dependency}"));
            }
        }
        product.insert(name);
    }
    assert!(
        product.contains("berth-domain") && product.contains("berth-controller"),
        "{product:?}"
    );
    assert!(
        broken.is_empty(),
        "frameworks outside their layers: {broken:?}"
    );
}

/// The top-level modules of `berth-api` each file of `shared/api/src` imports
/// (`crate::x`, `use crate::{x, …}`), comments aside.
fn api_imports() -> BTreeMap<String, BTreeSet<String>> {
    fn files(dir: &Path, found: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                files(&path, found);
            } else if path.extension().is_some_and(|extension| extension == "rs") {
                found.push(path);
            }
        }
    }
    let source = Path::new(ROOT).join("shared/api/src");
    let mut found = Vec::new();
    files(&source, &mut found);
    // What the crate root re-exports, by the module that defines it.
    let defined_in = |name: &str| match name {
        "AppState" => Some("state".to_owned()),
        "operations" => Some("http".to_owned()),
        "__paste" => None,
        other => Some(other.to_owned()),
    };
    let mut imports: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for path in found {
        let relative = path.strip_prefix(&source).unwrap();
        let module = relative.iter().next().unwrap().to_string_lossy();
        let module = module.trim_end_matches(".rs").to_owned();
        if module == "lib" {
            continue;
        }
        let code: String = std::fs::read_to_string(&path)
            .unwrap()
            .lines()
            .filter(|line| !line.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        let mut named = BTreeSet::new();
        for (at, _) in code.match_indices("crate::") {
            let rest = &code[at + "crate::".len()..];
            if let Some(group) = rest.strip_prefix('{') {
                // `use crate::{a, b::c, …}`: the first name of each item.
                let mut depth = 0;
                for item in group.split_inclusive([',', '{', '}']) {
                    if depth == 0 {
                        let name: String = item
                            .trim()
                            .chars()
                            .take_while(|c| c.is_alphanumeric() || *c == '_')
                            .collect();
                        named.insert(name);
                    }
                    depth += item.matches('{').count() as i32 - item.matches('}').count() as i32;
                    if depth < 0 {
                        break;
                    }
                }
            } else {
                named.insert(
                    rest.chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect(),
                );
            }
        }
        let entry = imports.entry(module.clone()).or_default();
        entry.extend(
            named
                .iter()
                .filter(|name| !name.is_empty())
                .filter_map(|name| defined_in(name))
                .filter(|name| *name != module),
        );
    }
    imports
}

#[test]
fn the_api_modules_import_each_other_without_a_loop() {
    let imports = api_imports();
    assert!(imports["builds"].contains("apps"), "{imports:?}");
    // Depth-first: a module met again while its own imports are being
    // followed closes a loop.
    fn visit<'a>(
        module: &'a str,
        imports: &'a BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) {
        if done.contains(module) {
            return;
        }
        if let Some(start) = path.iter().position(|seen| *seen == module) {
            panic!(
                "berth-api's modules import in a loop: {:?} → {module}",
                &path[start..]
            );
        }
        path.push(module);
        for imported in imports.get(module).into_iter().flatten() {
            visit(imported, imports, path, done);
        }
        path.pop();
        done.insert(module);
    }
    let mut done = BTreeSet::new();
    for module in imports.keys() {
        visit(module, &imports, &mut Vec::new(), &mut done);
    }
}

/// What a client building `berth-records` alone links: `cargo tree`
/// resolves the features of that one package, as a client's build does
/// (`cargo metadata`'s resolve unifies them over the workspace).
#[test]
fn the_records_link_neither_axum_nor_dynamodb_nor_kube() {
    let output = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .current_dir(ROOT)
        .args([
            "tree",
            "--package",
            "berth-records",
            "--edges",
            "normal",
            "--prefix",
            "none",
            "--locked",
            "--offline",
        ])
        .output()
        .expect("cargo tree runs");
    assert!(
        output.status.success(),
        "cargo tree: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let tree = String::from_utf8(output.stdout).unwrap();
    let linked: BTreeSet<&str> = tree
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .collect();
    for forbidden in [
        "axum",
        "hyper",
        "tokio",
        "aws-sdk-dynamodb",
        "kube-client",
        "k8s-openapi",
        "lambda_http",
        "berth-cluster",
        "berth-store",
        "berth-api",
    ] {
        assert!(
            !linked.contains(forbidden),
            "berth-records links {forbidden}: {linked:?}"
        );
    }
    assert!(linked.contains("berth-domain") && linked.contains("utoipa"));
}

/// The layout the design names (`Cargo.toml, functions, shared, infra,
/// template.yaml, tests, events` at the top): the common crates under
/// `shared/`, one crate per function under `functions/`, no package at the
/// root, and every crate's targets (its build script included) inside its
/// own folder.
#[test]
fn every_crate_stands_where_the_design_puts_it() {
    let root = Path::new(ROOT);
    for entry in [
        "Cargo.toml",
        "functions",
        "shared",
        "infra",
        "template.yaml",
        "tests",
        "events",
    ] {
        assert!(root.join(entry).exists(), "the top level has {entry}");
    }
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    assert!(
        !manifest.lines().any(|line| line.trim() == "[package]"),
        "the root manifest is the workspace's alone"
    );
    let metadata = metadata(true);
    let canonical_root = root.canonicalize().unwrap();
    let mut misplaced = Vec::new();
    for package in metadata["packages"].as_array().unwrap() {
        let name = package["name"].as_str().unwrap();
        let folder = Path::new(package["manifest_path"].as_str().unwrap())
            .parent()
            .unwrap()
            .strip_prefix(&canonical_root)
            .unwrap()
            .to_path_buf();
        let expected = match name {
            "berth-domain"
            | "berth-records"
            | "berth-cluster"
            | "berth-store"
            | "berth-api"
            | "berth-console-serve" => Some("shared"),
            function if function.starts_with("berth-fn-") => Some("functions"),
            _ => None,
        };
        if let Some(expected) = expected
            && folder.parent() != Some(Path::new(expected))
        {
            misplaced.push(format!("{name} is in {}", folder.display()));
        }
        for target in package["targets"].as_array().unwrap() {
            let source = Path::new(target["src_path"].as_str().unwrap());
            if !source.starts_with(canonical_root.join(&folder)) {
                misplaced.push(format!("{name}'s target {}", source.display()));
            }
        }
    }
    assert!(misplaced.is_empty(), "{misplaced:?}");
}
