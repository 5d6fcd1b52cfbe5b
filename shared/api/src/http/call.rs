//! The one shape of a handler: it takes a [`Call`] — the process's state,
//! the caller, and the object its path names, noted as the call's audit
//! target as it is read — and answers with what the service answered.
//! What every handler would otherwise derive again (the cluster's client,
//! the audit target, a new object's URL) is said here once. It knows no
//! resource's rules: the HTTP layer sits below the resource modules.

use std::fmt::Display;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;

use berth_domain::paths::{
    AppPath, BuildPath, CommandPath, DeployTokenPath, EnvironmentPath, MemberPath,
    ProjectMemberPath, ProjectPath, SecretPath, TemplatePath, TokenPath,
};

use super::extract::{Caller, ObjectPath};
use super::scope;
use crate::{ApiError, AppState};

/// One call of an operation: the state, the caller and the path `P` its
/// route names (`()` for a route without one). Extracted in that order —
/// the caller's credentials and reach before the path is read — and the
/// path then noted as the call's audit target ([`Target`]).
pub struct Call<P = ()> {
    pub state: AppState,
    pub caller: Caller,
    pub path: P,
}

impl<P: Target> FromRequestParts<AppState> for Call<P> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let state = state.clone();
        let caller = Caller::from_request_parts(parts, &state).await?;
        let path = P::extract(parts, &state).await?;
        path.note();
        Ok(Self {
            state,
            caller,
            path,
        })
    }
}

#[cfg(feature = "cluster")]
impl<P> Call<P> {
    /// The cluster, as the stored kubeconfig reaches it: asked for once
    /// the call's own checks passed, so that a call refused for what it
    /// sent is refused so with no cluster too.
    pub async fn cluster(&self) -> Result<kube::Client, ApiError> {
        self.state.cluster.client().await
    }
}

/// What a route's path names, as the audit log names it: each kind of
/// object is noted the same way by every operation on it.
pub trait Target: Sized + Send {
    /// Reads it from the request's path.
    fn extract(
        parts: &mut Parts,
        state: &AppState,
    ) -> impl Future<Output = Result<Self, ApiError>> + Send;

    /// Notes it as the call's audit target.
    fn note(&self);
}

/// A route without a path parameter: nothing to read, nothing to note.
impl Target for () {
    async fn extract(_: &mut Parts, _: &AppState) -> Result<Self, ApiError> {
        Ok(())
    }

    fn note(&self) {}
}

/// A path, read with [`ObjectPath`]'s rules, noted as `$kind` by `$name`.
macro_rules! targets {
    ($($path:ty => $kind:literal, |$it:ident| $name:expr;)+) => {$(
        impl Target for $path {
            async fn extract(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
                let ObjectPath(path) = ObjectPath::from_request_parts(parts, state).await?;
                Ok(path)
            }

            fn note(&self) {
                let $it = self;
                scope::audit_target($kind, $name);
            }
        }
    )+};
}

targets! {
    ProjectPath => "project", |it| &it.project;
    // By its cluster name, `{project}-{environment}`.
    EnvironmentPath => "environment", |it| it;
    AppPath => "app", |it| &it.app;
    // `{app}/{build}`, `{app}/{command}`: their names are the app's own.
    BuildPath => "build", |it| it;
    CommandPath => "command", |it| it;
    SecretPath => "secret", |it| &it.secret;
    TemplatePath => "template", |it| &it.template;
    MemberPath => "member", |it| &it.member;
    ProjectMemberPath => "member", |it| &it.member;
    DeployTokenPath => "deploy-token", |it| &it.token;
    TokenPath => "token", |it| &it.token;
}

/// Where an object of the API is: its URL, and so the `Location` of what
/// is made under it.
pub trait Located {
    fn url(&self) -> String;

    /// The URL of the `name` made in its collection `kind`.
    fn child(&self, kind: &str, name: impl Display) -> String {
        format!("{}/{kind}/{name}", self.url())
    }
}

/// The API's root, under which the projects are.
pub struct Root;

impl Located for Root {
    fn url(&self) -> String {
        "/api/v1".to_owned()
    }
}

impl Located for ProjectPath {
    fn url(&self) -> String {
        Root.child("projects", &self.project)
    }
}

impl Located for EnvironmentPath {
    fn url(&self) -> String {
        format!(
            "/api/v1/projects/{}/environments/{}",
            self.project, self.environment
        )
    }
}

impl Located for AppPath {
    fn url(&self) -> String {
        self.environment_path().child("apps", &self.app)
    }
}
