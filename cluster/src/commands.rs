//! One-off commands (`Command` resources) in an environment's namespace:
//! made by the API, read by it, run by the controller. Whose a command is
//! is its App's uid (`spec.appUid`): the caller reads the App first, so a
//! command is visible exactly when its App is.

use kube::ResourceExt;
use kube::api::{Api, ListParams, PostParams};

use super::crd::{App, Command};
use super::{is_conflict, is_not_found, list_decoded};
use berth_domain::ApiError;

/// Every command of the namespace (of all its apps), ended ones included.
pub async fn in_namespace(
    client: &kube::Client,
    namespace: &str,
) -> Result<Vec<Command>, ApiError> {
    match list_decoded::<Command>(client, Some(namespace), &ListParams::default()).await {
        Ok(commands) => Ok(commands),
        Err(error) if is_not_found(&error) => Ok(Vec::new()),
        Err(error) => Err(error.into()),
    }
}

/// The commands of `app`, newest first.
pub fn of_app(commands: Vec<Command>, app: &App) -> Vec<Command> {
    let uid = app.uid().unwrap_or_default();
    let mut mine: Vec<Command> = commands
        .into_iter()
        .filter(|command| command.spec.app_uid == uid)
        .collect();
    mine.sort_by(|a, b| {
        b.creation_timestamp()
            .cmp(&a.creation_timestamp())
            .then_with(|| b.name_any().cmp(&a.name_any()))
    });
    mine
}

/// The command of that name of `app`, if there is one.
pub async fn get(
    client: &kube::Client,
    app: &App,
    name: &str,
) -> Result<Option<Command>, ApiError> {
    let namespace = app.namespace().unwrap_or_default();
    let found = match Api::<Command>::namespaced(client.clone(), &namespace)
        .get_opt(name)
        .await
    {
        Ok(found) => found,
        Err(error) if is_not_found(&error) => None,
        Err(error) => return Err(error.into()),
    };
    Ok(found.filter(|command| Some(&command.spec.app_uid) == app.uid().as_ref()))
}

/// Makes the command; `None` if one of its name exists already.
pub async fn create(client: &kube::Client, command: &Command) -> Result<Option<Command>, ApiError> {
    let namespace = command.namespace().unwrap_or_default();
    match Api::<Command>::namespaced(client.clone(), &namespace)
        .create(&PostParams::default(), command)
        .await
    {
        Ok(made) => Ok(Some(made)),
        Err(error) if is_conflict(&error) => Ok(None),
        Err(error) => Err(error.into()),
    }
}
