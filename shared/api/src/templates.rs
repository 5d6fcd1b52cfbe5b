//! The template catalogue: ready-made apps that ship with the code (one data
//! file each in `shared/api/templates/`), and deploying one into an environment:
//! its generated values into a secret, then the app, all or nothing.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use serde::Deserialize;
use serde_json::Value;

use crate::ApiError;
use crate::apps::body;
use crate::apps::change::{Change, Writer};
use crate::apps::hosts::HostRules;
use crate::apps::service;
use berth_cluster::crd::ReleaseReason;
use berth_cluster::secrets as cluster_secrets;
use berth_domain::credentials;
use berth_domain::names::{AppName, SecretName};
use berth_domain::paths::{AppPath, SecretPath, TemplatePath};
use berth_records::apps::body::CreateBody;
use berth_records::templates::{DeployBody, Deployed, TemplateEnv, TemplateRecord};
use berth_store::Store;
use berth_store::identity::Principal;

/// The files of the catalogue, compiled in.
const FILES: [&str; 6] = [
    include_str!("../templates/postgres.json"),
    include_str!("../templates/redis.json"),
    include_str!("../templates/mariadb.json"),
    include_str!("../templates/nginx.json"),
    include_str!("../templates/web-worker.json"),
    include_str!("../templates/nightly-job.json"),
];

/// A template as its file holds it: the app (a create body without `name`
/// and `env`) and its variables.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct TemplateFile {
    name: String,
    display_name: String,
    description: String,
    app: Value,
    env: Vec<TemplateEnv>,
}

struct Template {
    file: TemplateFile,
    record: TemplateRecord,
}

static CATALOGUE: LazyLock<Vec<Template>> = LazyLock::new(|| {
    FILES
        .iter()
        .filter_map(|text| match serde_json::from_str::<TemplateFile>(text) {
            Ok(file) => Some(Template {
                record: record_of(&file),
                file,
            }),
            Err(error) => {
                // A test parses every file; this only guards a broken build.
                tracing::error!(error = %error, "a template file does not parse");
                None
            }
        })
        .collect()
});

fn record_of(file: &TemplateFile) -> TemplateRecord {
    let app = &file.app;
    let processes = app["processes"].as_array().cloned();
    let port = app["port"]
        .as_i64()
        .or_else(|| processes.iter().flatten().find_map(|p| p["port"].as_i64()));
    TemplateRecord {
        name: file.name.clone(),
        display_name: file.display_name.clone(),
        description: file.description.clone(),
        image: app["image"].as_str().unwrap_or_default().to_owned(),
        port,
        env: file.env.clone(),
        volumes: app["volumes"].as_array().cloned().unwrap_or_default(),
        processes: processes.or_else(|| {
            app.get("schedule").map(|_| {
                vec![serde_json::json!({"schedule": app["schedule"], "command": app["command"]})]
            })
        }),
    }
}

pub fn list() -> Vec<TemplateRecord> {
    CATALOGUE.iter().map(|t| t.record.clone()).collect()
}

/// The secret holding an app's generated values.
pub fn generated_secret_name(app: &str) -> String {
    format!("{app}-generated")
}

/// The create body a template makes for an app named `name`, with generated
/// values read from `secret`; and those values.
fn create_body(
    template: &TemplateFile,
    name: &str,
    overrides: &BTreeMap<String, String>,
) -> Result<(CreateBody, BTreeMap<String, String>), ApiError> {
    if let Some(unknown) = overrides
        .keys()
        .find(|key| !template.env.iter().any(|var| &var.name == *key))
    {
        return Err(ApiError::ValidationFailed(format!(
            "env.{unknown}: the template has no such variable"
        )));
    }
    let secret = generated_secret_name(name);
    let mut generated = BTreeMap::new();
    let mut env = Vec::new();
    for var in &template.env {
        let given = overrides.get(&var.name);
        if var.generate {
            let value = given
                .cloned()
                .unwrap_or_else(credentials::new_generated_secret);
            generated.insert(var.name.clone(), value);
            env.push(
                serde_json::json!({"name": var.name, "secret": {"name": secret, "key": var.name}}),
            );
        } else {
            let value = given.or(var.value.as_ref()).cloned().unwrap_or_default();
            env.push(serde_json::json!({"name": var.name, "value": value}));
        }
    }
    let mut app = template.app.clone();
    app["name"] = Value::String(name.to_owned());
    app["env"] = Value::Array(env);
    let body = serde_json::from_value(app).map_err(|e| {
        ApiError::Internal(format!(
            "template {} is not a create body: {e}",
            template.name
        ))
    })?;
    Ok((body, generated))
}

/// Deploys a template: its generated values into a new secret, then its app
/// (revision reason `template`). A taken app or secret name is a conflict,
/// and a failure leaves nothing behind.
pub async fn deploy(
    store: &Store,
    client: &kube::Client,
    rules: &HostRules,
    caller: &Principal,
    target: &TemplatePath,
    body: DeployBody,
) -> Result<Deployed, ApiError> {
    let template = CATALOGUE
        .iter()
        .find(|t| t.file.name == target.template.as_str())
        .ok_or_else(|| {
            ApiError::NotFound(berth_domain::Missing::Template {
                template: target.template.clone(),
            })
        })?;
    let name = AppName::parse_new(body.name.as_deref().unwrap_or(&template.file.name))
        .map_err(|e| e.at("name"))?;
    let (create, generated) = create_body(&template.file, name.as_str(), &body.env)?;
    let (_, config) = body::parse_create(create)?;
    let org = &caller.user.org;
    let environment = target.environment_path();
    let secret_path = SecretPath {
        project: environment.project.clone(),
        environment: environment.environment.clone(),
        secret: SecretName::parse(&generated_secret_name(name.as_str()))
            .map_err(|invalid| invalid.at("name"))?,
    };
    let path = AppPath::new(&environment, name);
    // The environment (writable), its Apps and the secret's name, at once.
    let (neighbours, secret_taken) = tokio::join!(
        service::environment_apps(client, org, &environment),
        cluster_secrets::get(client, &secret_path)
    );
    // Its names only: the secret it reads is made below.
    let change = Change::create(path, config, ReleaseReason::Template)
        .noted(format!("from template {}", template.file.name))
        .check_names(&neighbours?)?;
    if !generated.is_empty() && secret_taken?.is_some() {
        return Err(ApiError::Conflict(format!(
            "a secret named {} already exists in this environment",
            secret_path.secret
        )));
    }
    let secret = if generated.is_empty() {
        None
    } else {
        Some(cluster_secrets::create(client, org, &secret_path, generated).await?)
    };
    let writer = Writer {
        store,
        client,
        rules,
        caller,
    };
    match change.commit(&writer).await {
        Ok(app) => Ok(Deployed {
            template: template.file.name.clone(),
            apps: vec![app],
        }),
        Err(error) => {
            if let Some(secret) = secret
                && let Err(cleanup) = cluster_secrets::delete(client, &secret).await
            {
                tracing::warn!(secret = %secret_path.secret, error = %cleanup,
                    "a template's generated secret was left behind");
            }
            Err(error)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_template_is_a_valid_app_with_a_pinned_image() {
        assert_eq!(CATALOGUE.len(), FILES.len(), "every file parses");
        let mut names: Vec<_> = CATALOGUE.iter().map(|t| t.file.name.clone()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), FILES.len(), "names are unique");
        for template in CATALOGUE.iter() {
            let (create, generated) =
                create_body(&template.file, &template.file.name, &BTreeMap::new())
                    .expect("a create body");
            let (_, config) = body::parse_create(create)
                .unwrap_or_else(|e| panic!("{}: {e:?}", template.file.name));
            let image = (config.image.as_ref())
                .and_then(|image| image.parsed().ok())
                .expect("an image");
            let tag = image.tag().unwrap_or_default();
            assert!(
                tag.chars().any(|c| c.is_ascii_digit()) && tag != "latest",
                "{}: pin the image to a version",
                template.file.name
            );
            for value in generated.values() {
                assert!(value.len() >= 32 && value.chars().all(|c| c.is_ascii_alphanumeric()));
            }
        }
    }

    #[test]
    fn overrides_replace_defaults_and_unknown_variables_are_refused() {
        let postgres = &CATALOGUE
            .iter()
            .find(|t| t.file.name == "postgres")
            .unwrap()
            .file;
        let overrides = BTreeMap::from([
            ("POSTGRES_DB".to_owned(), "shop".to_owned()),
            ("POSTGRES_PASSWORD".to_owned(), "chosen".to_owned()),
        ]);
        let (create, generated) = create_body(postgres, "db", &overrides).unwrap();
        assert_eq!(generated["POSTGRES_PASSWORD"], "chosen");
        let env = create.env.unwrap();
        let db = env.iter().find(|e| e.name == "POSTGRES_DB").unwrap();
        assert_eq!(db.value.as_deref(), Some("shop"));
        let password = env.iter().find(|e| e.name == "POSTGRES_PASSWORD").unwrap();
        assert_eq!(password.secret.as_ref().unwrap().name, "db-generated");
        let unknown = BTreeMap::from([("NOPE".to_owned(), "x".to_owned())]);
        assert!(create_body(postgres, "db", &unknown).is_err());
    }

    #[test]
    fn every_database_and_cache_requires_a_generated_password() {
        const SERVERS: [&str; 7] = [
            "postgres",
            "mariadb",
            "mysql",
            "redis",
            "valkey",
            "mongo",
            "memcached",
        ];
        let mut servers = 0;
        for template in CATALOGUE.iter() {
            let image = berth_domain::image::ImageRef::parse(&template.record.image).unwrap();
            let name = image.name().rsplit('/').next().unwrap_or_default();
            if SERVERS.contains(&name) {
                servers += 1;
                assert!(
                    template.file.env.iter().any(|var| var.generate),
                    "{} runs a server without a generated password",
                    template.file.name
                );
            }
        }
        assert_eq!(servers, 3, "postgres, mariadb and redis");
        // Redis takes its password on the command line: from the generated
        // secret through the environment, never written into the command.
        let redis = CATALOGUE.iter().find(|t| t.file.name == "redis").unwrap();
        let (create, generated) =
            create_body(&redis.file, "cache", &BTreeMap::new()).expect("a create body");
        let (_, config) = body::parse_create(create).unwrap();
        let command = &config.processes[0].command;
        let at = command
            .iter()
            .position(|arg| arg == "--requirepass")
            .unwrap();
        assert_eq!(command[at + 1], "$(REDIS_PASSWORD)");
        let password = config
            .env
            .iter()
            .find(|v| v.name == "REDIS_PASSWORD")
            .unwrap();
        assert_eq!(password.secret.as_ref().unwrap().name, "cache-generated");
        assert!(password.value.is_none());
        assert!(!command.contains(&generated["REDIS_PASSWORD"]));
    }

    #[test]
    fn generated_values_differ() {
        assert_ne!(
            credentials::new_generated_secret(),
            credentials::new_generated_secret()
        );
    }
}
