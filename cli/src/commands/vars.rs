//! An app's environment variables and an environment's secrets.

use std::collections::BTreeMap;
use std::io::{IsTerminal as _, Read as _};

use berth_records::apps::body::{EnvBody, SecretRefBody, UpdateBody};
use berth_records::apps::record::{AppDetail, EnvRecord};
use berth_records::secrets::{PutAnswer, PutBody, SecretSummary};

use super::Session;
use super::wait::Deadline;
use crate::args::{Assignment, EnvCommand, SecretRef, SecretsCommand, Wait};
use crate::config::{AppPath, Context};
use crate::failure::{Failure, Result};
use crate::output::or_dash;
use berth_domain::names::{EnvName, SecretName};

pub fn env(session: &Session, app: &AppPath, command: EnvCommand) -> Result<()> {
    let answer = session.api.get(&app.path(&[]))?;
    let detail: AppDetail = answer.record()?;
    let current = detail.app.env;
    let (list, wait) = match command {
        EnvCommand::List => {
            let env = answer.part("app").part("env");
            return session.out.answer(&env, || show_env(session, &current));
        }
        EnvCommand::Get { name } => {
            let Some(entry) = current.iter().find(|entry| entry.name == name.as_str()) else {
                return Err(Failure::failed(format!(
                    "{} has no variable {name}",
                    app.app
                )));
            };
            return match (&entry.value, &entry.secret) {
                (Some(value), _) => crate::output::print(value),
                (None, Some(secret)) => session.out.say(&format!(
                    "(from secret {} key {}: `berth secrets` never shows values)",
                    secret.name, secret.key
                )),
                (None, None) => Err(Failure::failed(format!(
                    "the value of {name} is hidden: reading it needs secret-read"
                ))),
            };
        }
        EnvCommand::Set {
            pairs,
            secret,
            wait,
        } => {
            let set = match secret {
                Some(reference) => vec![from_secret(&pairs, reference)?],
                None => pairs
                    .into_iter()
                    .map(|pair| match pair.value {
                        Some(value) => Ok(EnvBody {
                            name: pair.name.to_string(),
                            value: Some(value),
                            secret: None,
                        }),
                        None => Err(Failure::Usage(format!(
                            "`{}` is not NAME=VALUE (or give --secret SECRET/KEY)",
                            pair.name
                        ))),
                    })
                    .collect::<Result<Vec<_>>>()?,
            };
            let mut list: Vec<EnvBody> = current
                .iter()
                .filter(|entry| !set.iter().any(|new| new.name == entry.name))
                .map(kept)
                .collect();
            list.extend(set);
            (list, wait)
        }
        EnvCommand::Unset { names, wait } => {
            if let Some(missing) = names
                .iter()
                .find(|name| !current.iter().any(|e| e.name == name.as_str()))
            {
                return Err(Failure::failed(format!(
                    "{} has no variable {missing}",
                    app.app
                )));
            }
            let list = current
                .iter()
                .filter(|entry| !names.iter().any(|name| name.as_str() == entry.name))
                .map(kept)
                .collect();
            (list, wait)
        }
    };
    patch_env(session, app, list, wait)
}

/// Replaces the app's variables with `list` (a new revision), waiting as
/// `wait` says.
fn patch_env(session: &Session, app: &AppPath, list: Vec<EnvBody>, wait: Wait) -> Result<()> {
    let deadline = Deadline::after(wait.timeout);
    let answer = session.api.patch(
        &app.path(&[]),
        &UpdateBody {
            env: Some(list),
            ..UpdateBody::default()
        },
    )?;
    super::deploy::changed(session, app, answer, wait, deadline)
}

/// `secrets set NAME --to-app`: a variable per key of the secret, named as
/// the key, its value the secret's (replacing a variable of that name).
fn reference_keys(
    session: &Session,
    app: &AppPath,
    secret: &SecretName,
    keys: &[EnvName],
    wait: Wait,
) -> Result<()> {
    let detail: AppDetail = session.api.get(&app.path(&[]))?.record()?;
    let mut list: Vec<EnvBody> = detail
        .app
        .env
        .iter()
        .filter(|entry| !keys.iter().any(|key| key.as_str() == entry.name))
        .map(kept)
        .collect();
    list.extend(keys.iter().map(|key| EnvBody {
        name: key.to_string(),
        value: None,
        secret: Some(SecretRefBody {
            name: secret.to_string(),
            key: key.to_string(),
        }),
    }));
    patch_env(session, app, list, wait)
}

/// `NAME --secret SECRET/KEY`: one variable, its value a secret's key.
fn from_secret(pairs: &[Assignment], reference: SecretRef) -> Result<EnvBody> {
    let [Assignment { name, value }] = pairs else {
        return Err(Failure::Usage(
            "--secret sets one variable: berth env set NAME --secret SECRET/KEY".into(),
        ));
    };
    if value.is_some() {
        return Err(Failure::Usage(format!(
            "`{name}=…`: with --secret give the variable's name alone, not a value"
        )));
    }
    Ok(EnvBody {
        name: name.to_string(),
        value: None,
        secret: Some(SecretRefBody {
            name: reference.secret.to_string(),
            key: reference.key.to_string(),
        }),
    })
}

/// An entry sent back by name alone keeps its value or secret reference
/// (docs/api-notes.md, "Apps"): callers who may not read values can still
/// change the list.
fn kept(entry: &EnvRecord) -> EnvBody {
    EnvBody {
        name: entry.name.clone(),
        value: None,
        secret: None,
    }
}

fn show_env(session: &Session, env: &[EnvRecord]) -> Result<()> {
    let rows = env
        .iter()
        .map(|entry| {
            let value = match (&entry.value, &entry.secret) {
                (Some(value), _) => value.clone(),
                (None, Some(secret)) => format!("(secret {} key {})", secret.name, secret.key),
                (None, None) => "(hidden: needs secret-read)".to_owned(),
            };
            vec![entry.name.clone(), value]
        })
        .collect();
    session.out.list(
        &["NAME", "VALUE"],
        rows,
        "No variables: set one with `berth env set NAME=VALUE`",
    )
}

pub fn secrets(session: &Session, context: &Context, command: SecretsCommand) -> Result<()> {
    let (project, environment) = context.environment()?;
    let secrets = ["projects", project, "environments", environment, "secrets"];
    let secret = |name: &str| -> Vec<String> {
        secrets
            .iter()
            .map(|s| s.to_string())
            .chain([name.to_owned()])
            .collect()
    };
    match command {
        SecretsCommand::List => {
            let answer = session.api.get(&secrets)?;
            session.out.answer(&answer, || {
                let secrets: Vec<SecretSummary> = answer.record()?;
                let rows = secrets
                    .into_iter()
                    .map(|s| vec![s.name, s.keys.join(", "), or_dash(s.created_at)])
                    .collect();
                session.out.list(
                    &["NAME", "KEYS", "CREATED"],
                    rows,
                    "No secrets: make one with `berth secrets set NAME < file`",
                )
            })
        }
        SecretsCommand::Set {
            name,
            from_file,
            key,
            to_app,
            wait,
        } => {
            // Where the variables go, known before anything is written.
            let app = to_app.then(|| context.app()).transpose()?;
            let input = match &from_file {
                Some(file) => std::fs::read_to_string(file)
                    .map_err(|e| Failure::failed(format!("reading {}: {e}", file.display())))?,
                None => read_stdin(key.is_some())?,
            };
            let data = match key {
                Some(key) => BTreeMap::from([(key.to_string(), input)]),
                None => key_values(&input)?,
            };
            // Each key names a variable: checked before the secret is put.
            let variables = match &app {
                Some(_) => data
                    .keys()
                    .map(|key| {
                        EnvName::parse(key).map_err(|rule| {
                            Failure::Usage(format!(
                                "--to-app: key {key} names the app's variable, which {rule}"
                            ))
                        })
                    })
                    .collect::<Result<Vec<_>>>()?,
                None => Vec::new(),
            };
            let answer = session
                .api
                .put(&segments(&secret(name.as_str())), &PutBody { data })?;
            session.out.answer(&answer, || {
                let put: PutAnswer = answer.record()?;
                let restarted = if put.restarted_apps.is_empty() {
                    String::new()
                } else {
                    format!("; restarted {}", put.restarted_apps.join(", "))
                };
                session.out.say(&format!(
                    "Secret {} set: keys {}{restarted}",
                    put.secret.name,
                    put.secret.keys.join(", ")
                ))
            })?;
            match &app {
                Some(app) => reference_keys(session, app, &name, &variables, wait),
                None => Ok(()),
            }
        }
        SecretsCommand::Rm { name } => {
            session.api.delete(&segments(&secret(name.as_str())))?;
            session.out.say(&format!("Secret {name} deleted"))
        }
    }
}

fn segments(path: &[String]) -> Vec<&str> {
    path.iter().map(String::as_str).collect()
}

/// Standard input, whole. On a terminal one value is asked without echo;
/// `KEY=VALUE` lines are read until end of input (Ctrl-D).
fn read_stdin(one_value: bool) -> Result<String> {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        if one_value {
            return rpassword::prompt_password("Value: ")
                .map_err(|e| Failure::failed(format!("reading the value: {e}")));
        }
        eprintln!("KEY=VALUE lines, then Ctrl-D:");
    }
    let mut input = String::new();
    stdin
        .lock()
        .read_to_string(&mut input)
        .map_err(|e| Failure::failed(format!("reading standard input: {e}")))?;
    Ok(input)
}

/// `KEY=VALUE` lines (a `.env` file): the value is everything after the
/// first `=`, as written (no quotes removed); blank lines and `#` comments
/// are skipped. Errors name the line, never its value.
fn key_values(input: &str) -> Result<BTreeMap<String, String>> {
    let mut data = BTreeMap::new();
    for (number, line) in input.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            return Err(Failure::Usage(format!(
                "line {} is not KEY=VALUE",
                number + 1
            )));
        };
        let key = key.trim().trim_start_matches("export ").trim();
        // Said of the line, not of the API's `data` field.
        if let Err(rule) = berth_domain::names::SecretKey::parse(key) {
            return Err(Failure::Usage(format!("line {}: KEY {rule}", number + 1)));
        }
        if data.insert(key.to_owned(), value.to_owned()).is_some() {
            return Err(Failure::Usage(format!(
                "line {}: key {key} is given twice",
                number + 1
            )));
        }
    }
    if data.is_empty() {
        return Err(Failure::Usage("no KEY=VALUE line was given".into()));
    }
    Ok(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_value_lines_keep_values_as_written() {
        let data =
            key_values("# db\nURL=postgres://u:p@h/db?x=1\n\nexport TOKEN=\"a b\"\r\n").unwrap();
        assert_eq!(data["URL"], "postgres://u:p@h/db?x=1");
        assert_eq!(data["TOKEN"], "\"a b\"");
        let refused = key_values("A=1\nsecret-without-equals\n").unwrap_err();
        assert_eq!(refused.to_string(), "line 2 is not KEY=VALUE");
        assert!(key_values("A=1\nA=2").is_err());
        assert!(key_values("\n# nothing\n").is_err());
    }
}
