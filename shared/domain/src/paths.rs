//! Where an object lives, as the API's paths name it
//! (`/projects/{project}/environments/{environment}/apps/{app}`): one type
//! per kind of place, parsed from the path (see `http::ObjectPath`), which
//! is also its OpenAPI description (`IntoParams`).
//!
//! Every path parameter is a parsed value (a name or an id), never a
//! string as sent: a value that does not parse names nothing, and is
//! repeated nowhere — not in an answer, a log line or the audit log (a
//! token's secret put where its id belongs stays the caller's).

use serde::Deserialize;
use utoipa::IntoParams;

use super::ids::{RecordId, UserId};
use super::names::{AppName, CommandName, EnvironmentName, ProjectName, SecretName, TemplateName};
use crate::Missing;

/// What every place inside an environment (its `project` and `environment`)
/// has: its environment's path, and the namespace that is where it lives.
macro_rules! in_environment {
    ($($place:ident),+) => {$(
        impl $place {
            /// Its environment's path.
            pub fn environment_path(&self) -> EnvironmentPath {
                EnvironmentPath {
                    project: self.project.clone(),
                    environment: self.environment.clone(),
                }
            }

            /// Its environment's namespace, where it lives.
            pub fn namespace(&self) -> String {
                self.environment_path().namespace()
            }
        }
    )+};
}

/// A project: `/projects/{project}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct ProjectPath {
    /// The project's name.
    pub project: ProjectName,
}

/// A member's role in a project: `/projects/{project}/members/{member}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct ProjectMemberPath {
    /// The project's name.
    pub project: ProjectName,
    /// The member's user id.
    pub member: UserId,
}

/// A project's deploy token: `/projects/{project}/tokens/{token}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct DeployTokenPath {
    /// The project's name.
    pub project: ProjectName,
    /// The token's id.
    pub token: RecordId,
}

/// One of the caller's API tokens: `/tokens/{token}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct TokenPath {
    /// The token's id.
    pub token: RecordId,
}

/// A member of the organization: `/members/{member}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct MemberPath {
    /// The member's user id.
    pub member: UserId,
}

/// An environment of a project: `…/environments/{environment}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct EnvironmentPath {
    /// The project's name.
    pub project: ProjectName,
    /// The environment's short name.
    pub environment: EnvironmentName,
}

impl EnvironmentPath {
    /// The name of the environment's resource and of its namespace,
    /// `{project}-{environment}`: a DNS label, as both names are and the two
    /// lengths allow.
    pub fn namespace(&self) -> String {
        format!("{}-{}", self.project, self.environment)
    }

    pub fn missing(&self) -> Missing {
        Missing::environment(self.project.as_str(), self.environment.as_str())
    }
}

/// An app of an environment: `…/apps/{app}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct AppPath {
    /// The project's name.
    pub project: ProjectName,
    /// The environment's short name.
    pub environment: EnvironmentName,
    /// The app's name.
    pub app: AppName,
}

impl AppPath {
    /// The app of that name in `environment`.
    pub fn new(environment: &EnvironmentPath, app: AppName) -> Self {
        Self {
            project: environment.project.clone(),
            environment: environment.environment.clone(),
            app,
        }
    }

    /// Its build numbered `build`.
    pub fn build(&self, build: i64) -> BuildPath {
        BuildPath {
            project: self.project.clone(),
            environment: self.environment.clone(),
            app: self.app.clone(),
            build,
        }
    }

    /// The audit target: `project/environment/app`.
    pub fn target(&self) -> String {
        format!("{}/{}/{}", self.project, self.environment, self.app)
    }

    pub fn missing(&self) -> Missing {
        Missing::App {
            project: self.project.to_string(),
            environment: self.environment.to_string(),
            app: self.app.to_string(),
        }
    }
}

/// A build of an app: `…/apps/{app}/builds/{build}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct BuildPath {
    /// The project's name.
    pub project: ProjectName,
    /// The environment's short name.
    pub environment: EnvironmentName,
    /// The app's name.
    pub app: AppName,
    /// The build's id (its number among the app's builds).
    #[param(minimum = 1)]
    pub build: i64,
}

impl BuildPath {
    /// The app it is a build of.
    pub fn app_path(&self) -> AppPath {
        AppPath {
            project: self.project.clone(),
            environment: self.environment.clone(),
            app: self.app.clone(),
        }
    }
}

/// A one-off command of an app: `…/apps/{app}/commands/{command}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct CommandPath {
    /// The project's name.
    pub project: ProjectName,
    /// The environment's short name.
    pub environment: EnvironmentName,
    /// The app's name.
    pub app: AppName,
    /// The command's name, as `runCommand` answered it.
    pub command: CommandName,
}

impl CommandPath {
    /// The app it is a command of.
    pub fn app_path(&self) -> AppPath {
        AppPath {
            project: self.project.clone(),
            environment: self.environment.clone(),
            app: self.app.clone(),
        }
    }

    pub fn missing(&self) -> Missing {
        Missing::Command {
            project: self.project.to_string(),
            environment: self.environment.to_string(),
            app: self.app.to_string(),
            command: self.command.to_string(),
        }
    }
}

/// A secret of an environment: `…/secrets/{secret}`. A name no secret can
/// have is refused by `http::ObjectPath` (`422` for a new secret's, `404`
/// otherwise).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct SecretPath {
    /// The project's name.
    pub project: ProjectName,
    /// The environment's short name.
    pub environment: EnvironmentName,
    /// A DNS subdomain.
    pub secret: SecretName,
}

impl SecretPath {
    /// The secret of that name in `environment`.
    pub fn new(environment: &EnvironmentPath, secret: &SecretName) -> Self {
        Self {
            project: environment.project.clone(),
            environment: environment.environment.clone(),
            secret: secret.clone(),
        }
    }

    pub fn missing(&self) -> Missing {
        Missing::Secret {
            project: self.project.to_string(),
            environment: self.environment.to_string(),
            secret: self.secret.to_string(),
        }
    }
}

/// A template deployed into an environment: `…/templates/{template}`, one
/// of the catalogue's names.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct TemplatePath {
    /// The project's name.
    pub project: ProjectName,
    /// The environment's short name.
    pub environment: EnvironmentName,
    /// The template's name (see `listTemplates`).
    pub template: TemplateName,
}

in_environment!(AppPath, SecretPath, TemplatePath);
