//! Kubernetes `Status` bodies: every error the stand-in returns is one of these.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// Who an error is about: the `details` of a `Status`.
#[derive(Debug, Clone, Default)]
pub struct Details {
    pub name: String,
    pub group: String,
    /// For most errors this is the resource (plural, e.g. `pods`); for `Invalid` it is the Kind.
    pub kind: String,
    pub causes: Vec<Value>,
}

/// An API error, rendered as a `metav1.Status` with the matching HTTP code.
#[derive(Debug, Clone)]
pub struct ApiError {
    pub code: u16,
    pub reason: &'static str,
    pub message: String,
    pub details: Option<Box<Details>>,
}

pub type ApiResult<T> = Result<T, ApiError>;

/// `pods` or `deployments.apps`: how the API names a resource in messages.
pub fn qualified(resource: &str, group: &str) -> String {
    if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    }
}

impl ApiError {
    pub fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            code,
            reason,
            message: message.into(),
            details: None,
        }
    }

    fn with_details(mut self, name: &str, group: &str, kind: &str) -> Self {
        self.details = Some(Box::new(Details {
            name: name.to_string(),
            group: group.to_string(),
            kind: kind.to_string(),
            causes: vec![],
        }));
        self
    }

    pub fn not_found(resource: &str, group: &str, name: &str) -> Self {
        ApiError::new(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", qualified(resource, group)),
        )
        .with_details(name, group, resource)
    }

    /// The error for a path that names no known resource.
    pub fn no_route() -> Self {
        let mut e = ApiError::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        );
        e.details = Some(Box::default());
        e
    }

    pub fn already_exists(resource: &str, group: &str, name: &str) -> Self {
        ApiError::new(
            409,
            "AlreadyExists",
            format!("{} \"{name}\" already exists", qualified(resource, group)),
        )
        .with_details(name, group, resource)
    }

    pub fn conflict(resource: &str, group: &str, name: &str) -> Self {
        ApiError::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": the object has been modified; \
                 please apply your changes to the latest version and try again",
                qualified(resource, group)
            ),
        )
        .with_details(name, group, resource)
    }

    pub fn conflict_msg(resource: &str, group: &str, name: &str, why: &str) -> Self {
        ApiError::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": {why}",
                qualified(resource, group)
            ),
        )
        .with_details(name, group, resource)
    }

    /// A 422 for one invalid field, worded like the API server's field errors.
    pub fn invalid(
        kind: &str,
        group: &str,
        name: &str,
        field: &str,
        cause_reason: &str,
        detail: &str,
    ) -> Self {
        let mut e = ApiError::new(
            422,
            "Invalid",
            format!("{kind} \"{name}\" is invalid: {field}: {detail}"),
        );
        e.details = Some(Box::new(Details {
            name: name.to_string(),
            group: group.to_string(),
            kind: kind.to_string(),
            causes: vec![json!({"reason": cause_reason, "message": detail, "field": field})],
        }));
        e
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        ApiError::new(400, "BadRequest", message)
    }

    pub fn forbidden(resource: &str, group: &str, name: &str, message: impl Into<String>) -> Self {
        ApiError::new(403, "Forbidden", message).with_details(name, group, resource)
    }

    pub fn method_not_allowed(message: impl Into<String>) -> Self {
        ApiError::new(405, "MethodNotAllowed", message)
    }

    pub fn unsupported_media_type(content_type: &str) -> Self {
        ApiError::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml (got {content_type})"
            ),
        )
    }

    pub fn gone(message: impl Into<String>) -> Self {
        ApiError::new(410, "Expired", message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        ApiError::new(500, "InternalError", message)
    }

    pub fn service_unavailable(message: impl Into<String>) -> Self {
        ApiError::new(503, "ServiceUnavailable", message)
    }

    /// The `Status` object, as it appears in a response body or a watch `ERROR` event.
    pub fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(d) = &self.details {
            let mut details = serde_json::Map::new();
            if !d.name.is_empty() {
                details.insert("name".into(), json!(d.name));
            }
            if !d.group.is_empty() {
                details.insert("group".into(), json!(d.group));
            }
            if !d.kind.is_empty() {
                details.insert("kind".into(), json!(d.kind));
            }
            if !d.causes.is_empty() {
                details.insert("causes".into(), json!(d.causes));
            }
            status["details"] = Value::Object(details);
        }
        status
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}): {}", self.code, self.reason, self.message)
    }
}

impl std::error::Error for ApiError {}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let code = StatusCode::from_u16(self.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        crate::handlers::json_response(code, &self.to_status())
    }
}

/// The `Status` a successful delete returns when the object is gone and the resource does not
/// echo deleted objects.
pub fn success_status(name: &str, group: &str, resource: &str, uid: &str) -> Value {
    let mut details = json!({"name": name, "kind": resource, "uid": uid});
    if !group.is_empty() {
        details["group"] = json!(group);
    }
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    })
}
