//! Extractors whose rejections are Problem Details, and [`Caller`], the
//! authenticated caller of a handler.

use std::ops::Deref;
use std::sync::Arc;

use axum::extract::rejection::{BytesRejection, JsonRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Path, RawPathParams};
use axum::http::StatusCode;
use axum::http::request::Parts;

use crate::ApiError;
use berth_domain::Missing;
use berth_domain::Operation;
use berth_domain::ids::{RecordId, UserId};
use berth_domain::names::{
    AppName, CommandName, EnvironmentName, ProjectName, SecretName, TemplateName,
};
use berth_records::object;
use berth_store::identity::{Authentication, Principal};

use super::whole_numbers;

/// A JSON request body, an object. None, bad JSON or wrong types are 400,
/// another content type 415, an oversized body 413. A whole number is an
/// integer however it is written (`8.0`, `8e0`): see [`whole_numbers`].
#[derive(Debug)]
pub struct JsonBody<T>(pub T);

impl<T, S> FromRequest<S> for JsonBody<T>
where
    T: serde::de::DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(request: axum::extract::Request, state: &S) -> Result<Self, ApiError> {
        <Self as axum::extract::OptionalFromRequest<S>>::from_request(request, state)
            .await?
            .ok_or_else(|| ApiError::InvalidRequest("the body is required: a JSON object".into()))
    }
}

/// The body's value: serde's reading of the text, or, where that fails on
/// the shape, of the text with its whole numbers written as integers (JSON
/// Schema 2020-12, which the description uses, counts `8.0` as an integer;
/// serde reads an integer only from `8`). Only a body that would be refused
/// is read again, so every other one is read exactly as sent.
fn parse<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    match axum::Json::<Object<T>>::from_bytes(bytes) {
        Ok(axum::Json(Object(value))) => Ok(value),
        Err(JsonRejection::JsonDataError(refused)) => match whole_numbers::as_integers(bytes) {
            Some(rewritten) => {
                let axum::Json(Object(value)) =
                    axum::Json::<Object<T>>::from_bytes(&rewritten).map_err(json_rejection)?;
                Ok(value)
            }
            None => Err(json_rejection(JsonRejection::JsonDataError(refused))),
        },
        Err(other) => Err(json_rejection(other)),
    }
}

/// What [`object::deserialize`] reads.
struct Object<T>(T);

impl<'de, T: serde::Deserialize<'de>> serde::Deserialize<'de> for Object<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        object::deserialize(deserializer).map(Object)
    }
}

/// Query parameters; values that do not parse are 400.
#[derive(Debug)]
pub struct QueryParams<T>(pub T);

impl<S: Send + Sync, T: serde::de::DeserializeOwned> FromRequestParts<S> for QueryParams<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let axum::extract::Query(query) = axum::extract::Query::from_request_parts(parts, state)
            .await
            .map_err(query_rejection)?;
        Ok(Self(query))
    }
}

/// A path's parameters, each parsed as what it must be (a name, an id, a
/// number: `berth_domain::paths`), the one way a handler reads its path.
/// A value that does not parse names nothing: `404` before anything is
/// asked (the cluster would refuse it as a URL or a label selector; the
/// table would make it a key), or `422` for the name of a secret `PUT`
/// would make. A value that does not parse is repeated nowhere — not in
/// the answer, a log line or the audit log — since it may be anything, a
/// token's secret put where its id belongs among them.
#[derive(Debug)]
pub struct ObjectPath<T>(pub T);

impl<T, S> FromRequestParts<S> for ObjectPath<T>
where
    T: serde::de::DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        match Path::<T>::from_request_parts(parts, state).await {
            Ok(Path(value)) => Ok(Self(value)),
            Err(_) => {
                let raw = RawPathParams::from_request_parts(parts, state)
                    .await
                    .map_err(|_| ApiError::NotFound(Missing::Route))?;
                Err(refusal(&raw, &parts.method))
            }
        }
    }
}

/// What a path that does not parse is answered: the first parameter that
/// does not parse, by its name only; a secret's name that `PUT` would make
/// breaks the rule of new names (`422`, as a body's field would).
fn refusal(raw: &RawPathParams, method: &axum::http::Method) -> ApiError {
    let rule = |name: &str, value: &str| -> Option<Result<(), berth_domain::Invalid>> {
        Some(match name {
            "project" => ProjectName::parse(value).map(drop),
            "environment" => EnvironmentName::parse(value).map(drop),
            "app" => AppName::parse(value).map(drop),
            "secret" => SecretName::parse(value).map(drop),
            "template" => TemplateName::parse(value).map(drop),
            "command" => CommandName::parse(value).map(drop),
            "member" => UserId::parse(value).map(drop),
            "token" => RecordId::parse(value).map(drop),
            "build" => match value.parse::<i64>() {
                Ok(1..) => Ok(()),
                _ => Err(berth_domain::Invalid::new("must be a build's number")),
            },
            _ => return None,
        })
    };
    let unparsed = raw
        .iter()
        .find_map(|(name, value)| match rule(name, value) {
            Some(Ok(())) => None,
            Some(Err(invalid)) => Some((name, invalid)),
            None => Some((name, berth_domain::Invalid::new(""))),
        });
    match unparsed {
        // The rule says what a name must be, never what was sent.
        Some(("secret", invalid)) if method == axum::http::Method::PUT => {
            ApiError::ValidationFailed(format!("secret (the path's name) {invalid}"))
        }
        Some((name, _)) => ApiError::NotFound(Missing::Unparsed {
            param: PATH_PARAMS
                .iter()
                .find(|param| **param == name)
                .copied()
                .unwrap_or("path"),
        }),
        None => ApiError::NotFound(Missing::Route),
    }
}

/// Every path parameter of the API, by name.
const PATH_PARAMS: [&str; 8] = [
    "project",
    "environment",
    "app",
    "secret",
    "template",
    "member",
    "token",
    "build",
];

/// An optional JSON body: nothing sent is `None`, with or without a content
/// type (as curl and generated clients send a body-less request); anything
/// sent must be JSON.
impl<T, S> axum::extract::OptionalFromRequest<S> for JsonBody<T>
where
    T: serde::de::DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(
        request: axum::extract::Request,
        state: &S,
    ) -> Result<Option<Self>, ApiError> {
        let json = super::forgery::is_json(request.headers());
        let bytes = axum::body::Bytes::from_request(request, state)
            .await
            .map_err(|error| bytes_rejection(&error))?;
        if bytes.is_empty() {
            return Ok(None);
        }
        if !json {
            return Err(ApiError::UnsupportedMediaType(
                "the body must be application/json".into(),
            ));
        }
        parse(&bytes).map(|value| Some(Self(value)))
    }
}

/// What a JSON body's rejection tells the caller.
pub fn json_rejection(rejection: JsonRejection) -> ApiError {
    match rejection {
        JsonRejection::MissingJsonContentType(_) => {
            ApiError::UnsupportedMediaType("the body must be application/json".into())
        }
        JsonRejection::JsonSyntaxError(error) => {
            ApiError::InvalidRequest(serde_error(&error).map_or_else(
                || "the body is not valid JSON".to_owned(),
                |located| syntax_error_detail(located.inner()),
            ))
        }
        JsonRejection::JsonDataError(error) => {
            ApiError::InvalidRequest(serde_error(&error).map_or_else(
                || "the body does not have the expected shape".to_owned(),
                |located| {
                    describe_data_error(&located.path().to_string(), &located.inner().to_string())
                },
            ))
        }
        JsonRejection::BytesRejection(error) => bytes_rejection(&error),
        other => ApiError::InvalidRequest(other.body_text()),
    }
}

type PathError = serde_path_to_error::Error<serde_json::Error>;

/// The located serde error behind one of axum's JSON rejections.
fn serde_error<'e>(error: &'e (dyn std::error::Error + 'static)) -> Option<&'e PathError> {
    let mut source = error.source();
    while let Some(current) = source {
        if let Some(located) = current.downcast_ref::<PathError>() {
            return Some(located);
        }
        source = current.source();
    }
    None
}

/// Where the text stops being JSON. serde_json's reasons for a syntax error
/// are fixed phrases (`expected value`, `trailing comma`), never the text.
fn syntax_error_detail(error: &serde_json::Error) -> String {
    let message = error.to_string();
    let reason = message
        .rfind(" at line ")
        .map_or(message.as_str(), |at| &message[..at]);
    format!(
        "the body is not valid JSON: {reason} at line {} column {}",
        error.line(),
        error.column()
    )
}

/// The detail of a body of the wrong shape, in the API's words: the field
/// and what it should be, never the value sent (it may be a password).
/// serde says `invalid type: string "hunter2", expected ...`, so only the
/// kinds of value are kept from it.
fn describe_data_error(path: &str, message: &str) -> String {
    // serde_json appends where in the text the error is.
    let message = message
        .rfind(" at line ")
        .map_or(message, |at| &message[..at]);
    let root = path == "." || path.is_empty();
    let field = if root { "the body" } else { path };
    let member = |name: &str| {
        if root {
            name.to_owned()
        } else {
            format!("{path}.{name}")
        }
    };
    if let Some(name) = quoted(message, "missing field ") {
        return body_words::required(&member(name));
    }
    if let Some(name) = quoted(message, "unknown field ") {
        // The name is a key of the body, not a value; the path ends in it.
        let known = message
            .split_once(", expected ")
            .map(|(_, known)| known.trim_start_matches("one of "));
        let field = if root { name } else { path };
        return body_words::unknown_field(field, known);
    }
    if let Some(name) = quoted(message, "duplicate field ") {
        return format!("{} is given twice", member(name));
    }
    if message.starts_with("unknown variant ") {
        // The variant is the value sent: only the choices are named.
        return match message.split_once(", expected ") {
            Some((_, choices)) => {
                format!("{field} must be {}", choices.replace("one of ", "one of: "))
            }
            None => format!("{field} is not one of the allowed values"),
        };
    }
    let expected = message
        .split_once(", expected ")
        .map(|(_, expected)| expected_kind(expected));
    if let Some(unexpected) = message.strip_prefix("invalid type: ") {
        let sent = sent_kind(unexpected);
        return match expected {
            Some(expected) => format!("{field} must be {expected}, not {sent}"),
            None => format!("{field} must not be {sent}"),
        };
    }
    if message.starts_with("invalid value:") || message.starts_with("invalid length") {
        return match expected {
            Some(expected) => format!("{field} must be {expected}"),
            None => format!("{field} has a value that is not allowed"),
        };
    }
    // A custom message (from a type's own parser) may quote the value.
    format!("{field} is not valid")
}

/// `name` in "<prefix>`name`...".
fn quoted<'m>(message: &'m str, prefix: &str) -> Option<&'m str> {
    message
        .strip_prefix(prefix)?
        .strip_prefix('`')?
        .split_once('`')
        .map(|(name, _)| name)
}

/// serde's expectation (a Rust type, often) in the API's words.
fn expected_kind(expected: &str) -> String {
    match expected {
        "i8" | "i16" | "i32" | "i64" | "i128" | "isize" => "an integer".into(),
        "u8" | "u16" | "u32" | "u64" | "u128" | "usize" => "an integer of 0 or more".into(),
        "f32" | "f64" => "a number".into(),
        "a string" | "a borrowed string" | "a character" => "a string".into(),
        "a boolean" => "true or false".into(),
        "a sequence" | "a tuple" => "an array".into(),
        "a map" => "an object".into(),
        other if other.starts_with("struct ") || other.starts_with("a map") => "an object".into(),
        other if other.starts_with("a sequence") || other.starts_with("tuple") => "an array".into(),
        other => other.to_owned(),
    }
}

/// The kind of value serde found; its value (quoted after the kind) is
/// dropped.
fn sent_kind(unexpected: &str) -> &'static str {
    let kind = unexpected
        .split_once(", expected ")
        .map_or(unexpected, |(kind, _)| kind);
    match kind.split(' ').next().unwrap_or_default() {
        "integer" | "floating" => "a number",
        "string" | "character" => "a string",
        "boolean" => "true or false",
        "map" => "an object",
        "sequence" => "an array",
        "null" | "unit" | "Option" => "null",
        _ => "that kind of value",
    }
}

/// The words every body parser of the API uses, also those that read a
/// body by hand.
pub mod body_words {
    pub fn required(field: &str) -> String {
        format!("{field} is required")
    }

    /// `known` lists the fields there are, as serde does: `` `a`, `b` ``.
    pub fn unknown_field(field: &str, known: Option<&str>) -> String {
        match known {
            Some(known) => format!("{field} is not a field here; the fields are {known}"),
            None => format!("{field} is not a field here"),
        }
    }
}

/// A body that could not be read: `413` past the route's limit, else `400`.
pub fn bytes_rejection(error: &BytesRejection) -> ApiError {
    if error.status() == StatusCode::PAYLOAD_TOO_LARGE {
        ApiError::PayloadTooLarge
    } else {
        ApiError::InvalidRequest("the body could not be read".into())
    }
}

/// What a query string's rejection tells the caller.
pub fn query_rejection(rejection: QueryRejection) -> ApiError {
    ApiError::InvalidRequest(rejection.body_text())
}

/// The authenticated caller. Rejects anonymous and revoked credentials (401)
/// and, while the password must change, every operation but the few allowed (403).
/// Where a request acts in a project, the caller's role there is found
/// here (its grants name the project's uid), and a caller limited to some
/// projects is held to them: every operation is checked in this one place,
/// before its handler.
#[derive(Debug, Clone)]
pub struct Caller(pub Arc<Principal>);

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        match parts.extensions.get::<Authentication>().cloned() {
            Some(Authentication::Authenticated(principal)) => {
                let operation = parts.extensions.get::<Operation>().copied();
                if principal.held_to_password_change(operation) {
                    return Err(ApiError::PasswordChangeRequired);
                }
                let raw = RawPathParams::from_request_parts(parts, state).await.ok();
                let param = |wanted: &str| {
                    raw.iter()
                        .flat_map(|raw| raw.iter())
                        .find(|(name, _)| *name == wanted)
                        .map(|(_, value)| value.to_owned())
                };
                let needs = operation.and_then(Operation::minimum_permission);
                let caller = match param("project") {
                    Some(project) => match Place::parse(&project, param("environment")) {
                        Ok(place) => in_project(parts, principal, &place, needs).await?,
                        // Names nothing: the handler's `ObjectPath` says so to
                        // every caller; a limited one is told here, before its
                        // reach is looked at, in the same words.
                        Err(param) if principal.limited_to_projects() => {
                            return Err(ApiError::NotFound(Missing::Unparsed { param }));
                        }
                        Err(_) => principal,
                    },
                    None if principal.limited_to_projects() => {
                        outside_projects(&principal, operation)?;
                        return Ok(Caller(principal));
                    }
                    None => principal,
                };
                if let Some(permission) = needs {
                    caller.require(permission)?;
                }
                Ok(Caller(caller))
            }
            Some(Authentication::Unavailable) => Err(ApiError::StorageUnavailable(
                "credentials could not be checked".into(),
            )),
            _ => Err(ApiError::Unauthenticated),
        }
    }
}

/// Where a request acts, by its path.
struct Place {
    project: ProjectName,
    environment: Option<EnvironmentName>,
}

impl Place {
    /// The place a path names; the parameter that does not parse, if one
    /// does not.
    fn parse(project: &str, environment: Option<String>) -> Result<Self, &'static str> {
        Ok(Self {
            project: ProjectName::parse(project).map_err(|_| "project")?,
            environment: environment
                .map(|environment| EnvironmentName::parse(&environment))
                .transpose()
                .map_err(|_| "environment")?,
        })
    }
}

/// The operations a caller limited to projects (a scoped token, a member
/// whose organization role is `member`) may call outside them: about
/// itself, and what every project shares (templates, health). The list of
/// projects is cut to the caller's by its handler. A deploy token, which
/// is no person, has no password and no personal tokens.
fn open_outside_projects(caller: &Principal, operation: Operation) -> bool {
    use Operation::*;
    let personal = matches!(
        operation,
        ChangePassword | ListTokens | CreateToken | DeleteToken
    );
    let shared = matches!(
        operation,
        GetCurrentUser | Logout | GetHealthDetails | ListProjects | ListTemplates
    );
    shared || (personal && !caller.is_deploy_token())
}

/// A caller limited to projects, outside them: refused (`403`) unless the
/// operation is open to it.
fn outside_projects(caller: &Principal, operation: Option<Operation>) -> Result<(), ApiError> {
    if operation.is_some_and(|operation| open_outside_projects(caller, operation)) {
        return Ok(());
    }
    Err(ApiError::Forbidden(match caller.limits() {
        Some(limits) => {
            format!("this token is limited to {limits}: it cannot act on the whole organization")
        }
        None => "your role in the organization is member: it gives no permission outside \
                 the projects you hold a role in"
            .into(),
    }))
}

/// The caller as it stands in the request's project: held to its token's
/// scope, and with its role there, if it holds one. A project outside a
/// limited caller's reach is missing (`404`, as another organization's),
/// as is one made after a scoped token (a project deleted and made again
/// under a name of the scope) and one whose uid is not its grant's.
/// Callers with neither a scope nor a grant of the project's name are
/// answered without a request; the others with one cluster read.
async fn in_project(
    parts: &Parts,
    principal: Arc<Principal>,
    place: &Place,
    needs: Option<berth_domain::Permission>,
) -> Result<Arc<Principal>, ApiError> {
    let missing = || ApiError::NotFound(Missing::project(place.project.as_str()));
    principal.admits(&place.project, place.environment.as_ref(), needs)?;
    let grant = principal.grant_named(place.project.as_str()).cloned();
    let member_only = principal.user.role == berth_domain::Role::Member;
    if grant.is_none() && principal.scope.is_none() {
        return Ok(principal);
    }
    let Some(project) = read_project(parts, &principal, place.project.as_str()).await? else {
        // Its handler says it is missing, in its own words; a member
        // without an organization role learns no more.
        return if member_only {
            Err(missing())
        } else {
            Ok(principal)
        };
    };
    if let Some(scope) = &principal.scope
        && !scope.predates(project.created)
    {
        return Err(missing());
    }
    let project_role = grant
        .filter(|grant| grant.uid == project.uid)
        .map(|grant| grant.role);
    if project_role.is_none() && member_only {
        return Err(missing());
    }
    Ok(Arc::new(principal.in_project(project_role)))
}

/// What the caller's check needs of a project: its uid and when it was made.
struct ReadProject {
    uid: String,
    /// Unix seconds; unknown, never before any token.
    created: Option<i64>,
}

/// The project of that name in the caller's organization (none: missing),
/// read with the API's cluster identity.
#[cfg(feature = "cluster")]
async fn read_project(
    parts: &Parts,
    caller: &Principal,
    project: &str,
) -> Result<Option<ReadProject>, ApiError> {
    let Some(cluster) = parts.extensions.get::<Arc<crate::access::ClusterAccess>>() else {
        // The pipeline puts it there for every request: never let a limited
        // caller through unchecked.
        return Err(ApiError::Internal(
            "a caller's project cannot be checked: no cluster access in the request".into(),
        ));
    };
    let Ok(name) = berth_domain::names::ProjectName::parse(project) else {
        return Ok(None);
    };
    let client = cluster.client().await?;
    match berth_cluster::projects::get_visible(&client, &caller.user.org, &name).await {
        Ok(found) => Ok(Some(ReadProject {
            uid: found.metadata.uid.clone().unwrap_or_default(),
            created: (found.metadata.creation_timestamp.as_ref()).map(|at| at.0.as_second()),
        })),
        Err(berth_cluster::ClusterError::Missing(_)) => Ok(None),
        Err(error) => Err(error.into()),
    }
}

/// Without the cluster a function serves no project's operations: nothing
/// to check against, so nothing is let through.
#[cfg(not(feature = "cluster"))]
async fn read_project(
    _parts: &Parts,
    _caller: &Principal,
    _project: &str,
) -> Result<Option<ReadProject>, ApiError> {
    Err(ApiError::Internal(
        "a caller's project cannot be checked without the cluster".into(),
    ))
}

impl Deref for Caller {
    type Target = Principal;

    fn deref(&self) -> &Principal {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_errors_speak_the_apis_words() {
        let cases = [
            (
                ".",
                "missing field `display_name` at line 1 column 14",
                "display_name is required",
            ),
            ("quota", "missing field `cpu`", "quota.cpu is required"),
            (
                "nme",
                "unknown field `nme`, expected one of `name`, `env_type`",
                "nme is not a field here; the fields are `name`, `env_type`",
            ),
            (
                "quota.gpus",
                "unknown field `gpus`, expected `cpu`",
                "quota.gpus is not a field here; the fields are `cpu`",
            ),
            (
                "password",
                "invalid type: integer `987654321`, expected a string at line 1 column 30",
                "password must be a string, not a number",
            ),
            (
                "expires_in_days",
                "invalid value: integer `-424242`, expected u32",
                "expires_in_days must be an integer of 0 or more",
            ),
            (
                "quota.pods",
                "invalid type: string \"many\", expected i32",
                "quota.pods must be an integer, not a string",
            ),
            (
                "env",
                "invalid type: map, expected a sequence",
                "env must be an array, not an object",
            ),
            (
                ".",
                "invalid type: sequence, expected struct CreateBody",
                "the body must be an object, not an array",
            ),
            (
                "kind",
                "unknown variant `hunter2`, expected one of `a`, `b`",
                "kind must be one of: `a`, `b`",
            ),
            (".", "duplicate field `name`", "name is given twice"),
            ("size", "no size called hunter2", "size is not valid"),
        ];
        for (path, message, detail) in cases {
            assert_eq!(describe_data_error(path, message), detail, "{message}");
        }
    }

    #[test]
    fn syntax_errors_give_line_and_column_without_the_text() {
        let error =
            serde_json::from_str::<serde_json::Value>("{\n  \"password\": hunter2 }").unwrap_err();
        let detail = syntax_error_detail(&error);
        assert_eq!(
            detail,
            "the body is not valid JSON: expected value at line 2 column 15"
        );
    }
}
