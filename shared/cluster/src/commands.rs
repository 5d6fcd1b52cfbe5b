//! One-off commands (`Command` resources) in an environment's namespace:
//! made by the API, read by it, run by the controller. Whose a command is
//! is its App's uid (`spec.appUid`): the caller reads the App first, so a
//! command is visible exactly when its App is.

use kube::ResourceExt;
use kube::api::{Api, ListParams, PostParams};

use super::crd::{App, Command};
use super::{is_conflict, is_not_found, list_decoded};
use crate::ClusterError;

/// Every command of the namespace (of all its apps), ended ones included.
pub async fn in_namespace(
    client: &kube::Client,
    namespace: &str,
) -> Result<Vec<Command>, ClusterError> {
    match list_decoded::<Command>(client, Some(namespace), &ListParams::default()).await {
        Ok(commands) => Ok(commands),
        Err(error) if is_not_found(&error) => Ok(Vec::new()),
        Err(error) => Err(error.into()),
    }
}

/// The commands of `app`, newest first (by the request's millisecond;
/// the name only breaks a tie within one).
pub fn of_app(commands: Vec<Command>, app: &App) -> Vec<Command> {
    let uid = app.uid().unwrap_or_default();
    let mut mine: Vec<Command> = commands
        .into_iter()
        .filter(|command| command.spec.app_uid == uid)
        .collect();
    mine.sort_by(|a, b| {
        (b.spec.requested_at, b.creation_timestamp())
            .cmp(&(a.spec.requested_at, a.creation_timestamp()))
            .then_with(|| b.name_any().cmp(&a.name_any()))
    });
    mine
}

/// The command of that name of `app`, if there is one.
pub async fn get(
    client: &kube::Client,
    app: &App,
    name: &str,
) -> Result<Option<Command>, ClusterError> {
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
pub async fn create(
    client: &kube::Client,
    command: &Command,
) -> Result<Option<Command>, ClusterError> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crd::CommandSpec;
    use berth_domain::app::AppConfig;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn command(name: &str, requested_at: i64) -> Command {
        let mut command = Command::new(
            name,
            CommandSpec {
                app: "shop".into(),
                app_uid: "uid-of-shop".into(),
                command: vec!["true".into()],
                process: "web".into(),
                timeout_seconds: 60,
                requested_at,
            },
        );
        // Both made in the same second, as the apiserver records it.
        command.metadata.creation_timestamp =
            Some(Time("2026-11-29T17:00:00Z".parse().expect("a time")));
        command
    }

    /// Two commands started within one second list newest first: the
    /// apiserver's `creationTimestamp` cannot tell them apart, and their
    /// random names must not decide.
    #[test]
    fn commands_of_one_second_list_newest_first() {
        let mut app = App::test("shop", AppConfig::test(Vec::new()));
        app.metadata.uid = Some("uid-of-shop".into());
        let older = command("cmd-zzzzzzzzzzzz", 1_000);
        let newer = command("cmd-aaaaaaaaaaaa", 1_400);
        let names: Vec<String> = of_app(vec![older, newer], &app)
            .iter()
            .map(|command| command.name_any())
            .collect();
        assert_eq!(names, ["cmd-aaaaaaaaaaaa", "cmd-zzzzzzzzzzzz"]);
    }
}
