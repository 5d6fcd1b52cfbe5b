//! Extractors whose rejections are Problem Details, and [`Caller`], the
//! authenticated caller of a handler.

use std::ops::Deref;
use std::sync::Arc;

use axum::extract::rejection::{BytesRejection, JsonRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Path, RawPathParams};
use axum::http::StatusCode;
use axum::http::request::Parts;

use crate::domain::names::is_dns1123_label;
use crate::identity::{Authentication, Principal};
use crate::{ApiError, Operation};

/// A JSON request body. Bad JSON or wrong types are 400, another content type
/// 415, an oversized body 413.
#[derive(Debug, FromRequest)]
#[from_request(via(axum::Json), rejection(ApiError))]
pub struct JsonBody<T>(pub T);

/// Query parameters; values that do not parse are 400.
#[derive(Debug, FromRequestParts)]
#[from_request(via(axum::extract::Query), rejection(ApiError))]
pub struct QueryParams<T>(pub T);

/// Path parameters that name objects of the cluster (projects, environments,
/// apps, templates). A value that cannot be such a name (a DNS label) names
/// nothing: `404`, before the cluster is asked, which would refuse it as a
/// URL or a label selector.
#[derive(Debug)]
pub struct ObjectPath<T>(pub T);

/// The longest DNS label, and Kubernetes label value.
const MAX_LABEL_LEN: usize = 63;

impl<T, S> FromRequestParts<S> for ObjectPath<T>
where
    T: serde::de::DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let raw = RawPathParams::from_request_parts(parts, state)
            .await
            .map_err(|_| ApiError::NotFound)?;
        // A secret's name is the rules of `secrets`' own: a new one that
        // breaks them is 422, one to delete 404.
        let possible = raw.iter().all(|(name, value)| {
            name == "secret" || (value.len() <= MAX_LABEL_LEN && is_dns1123_label(value))
        });
        if !possible {
            return Err(ApiError::NotFound);
        }
        let Path(value) = Path::<T>::from_request_parts(parts, state)
            .await
            .map_err(|_| ApiError::NotFound)?;
        Ok(Self(value))
    }
}

/// An optional JSON body: none at all (no content type, nothing sent) is
/// `None`; anything sent must be JSON.
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
        if request
            .headers()
            .contains_key(axum::http::header::CONTENT_TYPE)
        {
            return <Self as FromRequest<S>>::from_request(request, state)
                .await
                .map(Some);
        }
        let bytes = axum::body::Bytes::from_request(request, state)
            .await
            .map_err(|error| bytes_rejection(&error))?;
        if bytes.is_empty() {
            Ok(None)
        } else {
            Err(ApiError::UnsupportedMediaType(
                "the body must be application/json".into(),
            ))
        }
    }
}

impl From<JsonRejection> for ApiError {
    fn from(rejection: JsonRejection) -> Self {
        match rejection {
            JsonRejection::MissingJsonContentType(_) => {
                ApiError::UnsupportedMediaType("the body must be application/json".into())
            }
            JsonRejection::JsonSyntaxError(_) => {
                ApiError::InvalidRequest("the body is not valid JSON".into())
            }
            JsonRejection::JsonDataError(error) => {
                ApiError::InvalidRequest(data_error_detail(&error))
            }
            JsonRejection::BytesRejection(error) => bytes_rejection(&error),
            other => ApiError::InvalidRequest(other.body_text()),
        }
    }
}

/// The detail of a body of the wrong shape: the field and what it should
/// be, never the value sent (it may be a password). serde's own message says
/// `invalid type: string "hunter2", expected ...`, so only its `expected`
/// part is kept.
fn data_error_detail(error: &axum::extract::rejection::JsonDataError) -> String {
    use std::error::Error;
    type PathError = serde_path_to_error::Error<serde_json::Error>;
    let mut source = error.source();
    while let Some(current) = source {
        if let Some(located) = current.downcast_ref::<PathError>() {
            return describe_data_error(&located.path().to_string(), &located.inner().to_string());
        }
        source = current.source();
    }
    "the body does not have the expected shape".into()
}

fn describe_data_error(path: &str, message: &str) -> String {
    // serde_json appends where in the text the error is.
    let message = message
        .rfind(" at line ")
        .map_or(message, |at| &message[..at]);
    let field = if path == "." || path.is_empty() {
        "the body".to_owned()
    } else {
        path.to_owned()
    };
    if message.starts_with("invalid type:")
        || message.starts_with("invalid value:")
        || message.starts_with("invalid length")
    {
        return match message.split_once(", expected ") {
            Some((_, expected)) => format!("{field}: expected {expected}"),
            None => format!("{field}: has the wrong type or value"),
        };
    }
    if message.starts_with("missing field") || message.starts_with("unknown field") {
        // The field names come from the type, and the one unknown field from
        // the body's keys, never from its values.
        return if field == "the body" {
            message.to_owned()
        } else {
            format!("{field}: {message}")
        };
    }
    format!("{field}: is not valid")
}

fn bytes_rejection(error: &BytesRejection) -> ApiError {
    if error.status() == StatusCode::PAYLOAD_TOO_LARGE {
        ApiError::PayloadTooLarge
    } else {
        ApiError::InvalidRequest("the body could not be read".into())
    }
}

impl From<QueryRejection> for ApiError {
    fn from(rejection: QueryRejection) -> Self {
        ApiError::InvalidRequest(rejection.body_text())
    }
}

/// The authenticated caller. Rejects anonymous and revoked credentials (401)
/// and, while the password must change, every operation but the few allowed (403).
#[derive(Debug, Clone)]
pub struct Caller(pub Arc<Principal>);

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        match parts.extensions.get::<Authentication>() {
            Some(Authentication::Authenticated(principal)) => {
                let operation = parts.extensions.get::<Operation>().copied();
                if principal.user.must_change_password
                    && !operation.is_some_and(Operation::allowed_before_password_change)
                {
                    return Err(ApiError::PasswordChangeRequired);
                }
                let caller = Caller(principal.clone());
                if let Some(permission) = operation.and_then(Operation::minimum_permission) {
                    caller.require(permission)?;
                }
                Ok(caller)
            }
            Some(Authentication::Unavailable) => Err(ApiError::StorageUnavailable(
                "credentials could not be checked".into(),
            )),
            _ => Err(ApiError::Unauthenticated),
        }
    }
}

impl Deref for Caller {
    type Target = Principal;

    fn deref(&self) -> &Principal {
        &self.0
    }
}
