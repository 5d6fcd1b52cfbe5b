//! The API's error and its Problem Details: what the caller reads, and the
//! only place that says it. The layers below return their own errors, in
//! their own words — `berth_store::StoreError`, `berth_cluster::ClusterError`,
//! the domain's refusals (`berth_domain::InvalidInput`, `Missing`), a page
//! query `berth_records` refuses — and each becomes an [`ApiError`] here, by
//! one `From` beside it, so a handler or a service keeps using `?`.
//! (crates.io's rule: a lower layer returns its own errors; only the HTTP
//! layer turns them into an answer.)

use http::StatusCode;

use berth_domain::{InvalidInput, Missing};
use berth_records::audit::InvalidPageQuery;
use berth_records::problem::Problem;
use berth_store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    InvalidRequest(String),
    #[error("{0}")]
    ValidationFailed(String),
    #[error("authentication required")]
    Unauthenticated,
    #[error("invalid email or password")]
    InvalidCredentials,
    #[error("the password must be changed first")]
    PasswordChangeRequired,
    #[error("permission denied")]
    Forbidden(String),
    /// What is missing, named in the caller's own words. An object of
    /// another organization is missing too, in exactly the same words.
    #[error("not found: {0}")]
    NotFound(Missing),
    #[error("method not allowed")]
    MethodNotAllowed,
    #[error("{0}")]
    Conflict(String),
    #[error("project still has environments")]
    ProjectNotEmpty(Vec<EnvironmentLeft>),
    #[error("environment is being deleted")]
    EnvironmentDeleting,
    #[error("secret is not managed by Berth")]
    SecretNotManaged,
    /// The environment's namespace exists and is not this environment's:
    /// the detail says whose it is not, in plain words.
    #[error("{0}")]
    NamespaceTaken(String),
    /// The environment's namespace is not provisioned (yet): retried after
    /// [`ENVIRONMENT_NOT_READY_RETRY_SECS`].
    #[error("{0}")]
    EnvironmentNotReady(String),
    /// A hostname another app claims (`apps::hosts`). Only the hostname,
    /// which the caller sent, is said: never who holds it.
    #[error("hostname {hostname} is taken")]
    DomainTaken { hostname: String },
    /// A hostname another organization has proven it controls
    /// (`apps::hosts`): exclusive from then on. Same code as
    /// [`Self::DomainTaken`]; its own detail.
    #[error("hostname {hostname} is verified by another organization")]
    DomainVerifiedElsewhere { hostname: String },
    #[error("request body too large")]
    PayloadTooLarge,
    #[error("{0}")]
    UnsupportedMediaType(String),
    #[error("too many requests")]
    TooManyRequests { retry_after_secs: u64 },
    /// A bug. The message is logged, never sent.
    #[error("internal error: {0}")]
    Internal(String),
    #[error("no cluster configured")]
    NoCluster,
    /// The registry's token service lacks a setting an operator gives (the
    /// registry's settings, the signing key, the public URL): the detail
    /// names which, in words an operator can act on.
    #[error("registry token service not configured: {0}")]
    RegistryNotConfigured(String),
    /// The message is logged, never sent: it may name internal addresses.
    #[error("cluster unavailable: {0}")]
    ClusterUnavailable(String),
    /// The cluster answered, but refused Berth or lacks what Berth needs: an
    /// operator must act. Still `cluster_unavailable` for the caller (nothing
    /// they can fix), with a `detail` that names the misconfiguration; the
    /// raw `cause` is logged, never sent.
    #[error("cluster misconfigured: {detail} ({cause})")]
    ClusterMisconfigured { detail: String, cause: String },
    /// The message is logged, never sent.
    #[error("storage unavailable: {0}")]
    StorageUnavailable(String),
    /// The request ran past its deadline (`BERTH_REQUEST_DEADLINE_SECONDS`),
    /// which is below the function's timeout so the caller still gets an
    /// answer and the call its audit event.
    #[error("the request took longer than its deadline")]
    DeadlineExceeded,
}

/// How long a write into an environment that is still being provisioned
/// should wait before it is tried again (`Retry-After`).
pub const ENVIRONMENT_NOT_READY_RETRY_SECS: u64 = 2;

/// An environment that keeps its project from being deleted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvironmentLeft {
    pub name: String,
    pub deleting: bool,
    /// When its purge is due (RFC 3339), if one is scheduled.
    pub purge_at: Option<String>,
}

/// Which environments are left and when each goes, so the caller knows
/// whether to delete them or to wait (and until when).
fn not_empty_detail(left: &[EnvironmentLeft]) -> String {
    let each: Vec<String> = left
        .iter()
        .map(
            |environment| match (&environment.purge_at, environment.deleting) {
                (Some(at), _) => format!("`{}` (deleted; purged at {at})", environment.name),
                (None, true) => format!("`{}` (being removed)", environment.name),
                (None, false) => format!("`{}`", environment.name),
            },
        )
        .collect();
    let advice = if left.iter().all(|environment| environment.deleting) {
        "delete the project once they are purged"
    } else {
        "delete the project's environments first"
    };
    format!(
        "the project still has environments: {}; {advice}",
        each.join(", ")
    )
}

impl ApiError {
    pub fn status(&self) -> StatusCode {
        match self {
            Self::InvalidRequest(_) => StatusCode::BAD_REQUEST,
            Self::ValidationFailed(_) => StatusCode::UNPROCESSABLE_ENTITY,
            Self::Unauthenticated | Self::InvalidCredentials => StatusCode::UNAUTHORIZED,
            Self::PasswordChangeRequired | Self::Forbidden(_) => StatusCode::FORBIDDEN,
            Self::NotFound(_) => StatusCode::NOT_FOUND,
            Self::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Self::Conflict(_)
            | Self::ProjectNotEmpty(_)
            | Self::EnvironmentDeleting
            | Self::SecretNotManaged
            | Self::NamespaceTaken(_)
            | Self::EnvironmentNotReady(_)
            | Self::DomainTaken { .. }
            | Self::DomainVerifiedElsewhere { .. } => StatusCode::CONFLICT,
            Self::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Self::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::TooManyRequests { .. } => StatusCode::TOO_MANY_REQUESTS,
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
            Self::NoCluster
            | Self::RegistryNotConfigured(_)
            | Self::ClusterUnavailable(_)
            | Self::ClusterMisconfigured { .. }
            | Self::StorageUnavailable(_)
            | Self::DeadlineExceeded => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    pub fn code(&self) -> &'static str {
        match self {
            Self::InvalidRequest(_) => "invalid_request",
            Self::ValidationFailed(_) => "validation_failed",
            Self::Unauthenticated => "unauthenticated",
            Self::InvalidCredentials => "invalid_credentials",
            Self::PasswordChangeRequired => "password_change_required",
            Self::Forbidden(_) => "forbidden",
            Self::NotFound(_) => "not_found",
            Self::MethodNotAllowed => "method_not_allowed",
            Self::Conflict(_) => "conflict",
            Self::ProjectNotEmpty(_) => "project_not_empty",
            Self::EnvironmentDeleting => "environment_deleting",
            Self::SecretNotManaged => "secret_not_managed",
            Self::NamespaceTaken(_) => "namespace_taken",
            Self::EnvironmentNotReady(_) => "environment_not_ready",
            Self::DomainTaken { .. } | Self::DomainVerifiedElsewhere { .. } => "domain_taken",
            Self::PayloadTooLarge => "payload_too_large",
            Self::UnsupportedMediaType(_) => "unsupported_media_type",
            Self::TooManyRequests { .. } => "too_many_requests",
            Self::Internal(_) => "internal",
            Self::NoCluster => "no_cluster",
            Self::RegistryNotConfigured(_) => "registry_not_configured",
            Self::ClusterUnavailable(_) | Self::ClusterMisconfigured { .. } => {
                "cluster_unavailable"
            }
            Self::StorageUnavailable(_) => "storage_unavailable",
            Self::DeadlineExceeded => "deadline_exceeded",
        }
    }

    fn title(&self) -> &'static str {
        match self {
            Self::InvalidRequest(_) => "Invalid request",
            Self::ValidationFailed(_) => "Validation failed",
            Self::Unauthenticated => "Not authenticated",
            Self::InvalidCredentials => "Invalid credentials",
            Self::PasswordChangeRequired => "Password change required",
            Self::Forbidden(_) => "Forbidden",
            Self::NotFound(_) => "Not found",
            Self::MethodNotAllowed => "Method not allowed",
            Self::Conflict(_) => "Conflict",
            Self::ProjectNotEmpty(_) => "Project not empty",
            Self::EnvironmentDeleting => "Environment is being deleted",
            Self::SecretNotManaged => "Secret not managed by Berth",
            Self::NamespaceTaken(_) => "Namespace taken",
            Self::EnvironmentNotReady(_) => "Environment not ready",
            Self::DomainTaken { .. } | Self::DomainVerifiedElsewhere { .. } => "Domain taken",
            Self::PayloadTooLarge => "Payload too large",
            Self::UnsupportedMediaType(_) => "Unsupported media type",
            Self::TooManyRequests { .. } => "Too many requests",
            Self::Internal(_) => "Internal error",
            Self::NoCluster => "No cluster configured",
            Self::RegistryNotConfigured(_) => "Registry token service not configured",
            Self::ClusterUnavailable(_) | Self::ClusterMisconfigured { .. } => {
                "Cluster unavailable"
            }
            Self::StorageUnavailable(_) => "Storage unavailable",
            Self::DeadlineExceeded => "Request took too long",
        }
    }

    /// What the caller may read. Internal causes stay in the log.
    fn public_detail(&self) -> Option<String> {
        match self {
            Self::InvalidRequest(d)
            | Self::ValidationFailed(d)
            | Self::Forbidden(d)
            | Self::Conflict(d)
            | Self::NamespaceTaken(d)
            | Self::EnvironmentNotReady(d)
            | Self::UnsupportedMediaType(d) => Some(d.clone()),
            Self::Unauthenticated => Some("valid credentials are required".into()),
            Self::InvalidCredentials => Some("the email or password is not correct".into()),
            Self::PasswordChangeRequired => {
                Some("replace the temporary password with POST /api/v1/me/password first".into())
            }
            Self::NotFound(missing) => Some(missing.to_string()),
            Self::MethodNotAllowed => Some("the method is not allowed on this path".into()),
            Self::ProjectNotEmpty(left) => Some(not_empty_detail(left)),
            Self::EnvironmentDeleting => {
                Some("the environment is scheduled for deletion and cannot change".into())
            }
            Self::SecretNotManaged => {
                Some("a secret of that name exists and was not created by Berth".into())
            }
            Self::DomainTaken { hostname } => Some(format!(
                "the hostname {hostname} belongs to another app of this organization; a hostname \
                 serves one app at a time, so it can be added here only once that app has \
                 dropped it"
            )),
            Self::DomainVerifiedElsewhere { hostname } => Some(format!(
                "the hostname {hostname} is verified by another organization, which has proven \
                 it controls its DNS; remove it from domains (docs/api-notes.md, \"Domain \
                 ownership\")"
            )),
            Self::PayloadTooLarge => Some(
                "the request body is larger than this operation accepts (256 KiB; 768 KiB for \
                 putSecret; 1 MiB for receiveWebhook)"
                    .into(),
            ),
            Self::TooManyRequests { retry_after_secs } => Some(format!(
                "too many failed attempts; retry in {retry_after_secs} s"
            )),
            Self::Internal(_) => Some(format!(
                "an internal error occurred; request id {}",
                berth_domain::request::request_id().unwrap_or_default()
            )),
            Self::NoCluster => Some("no Kubernetes cluster is configured for Berth".into()),
            Self::RegistryNotConfigured(detail) => Some(detail.clone()),
            Self::ClusterUnavailable(_) => {
                Some("the Kubernetes cluster did not answer or failed; try again".into())
            }
            Self::ClusterMisconfigured { detail, .. } => Some(detail.clone()),
            Self::StorageUnavailable(_) => {
                Some("the data store did not answer or failed; try again".into())
            }
            Self::DeadlineExceeded => Some(
                "the request did not finish in time and was stopped; it may have been partly \
                 carried out, so read the resource again before retrying"
                    .into(),
            ),
        }
    }

    /// What went wrong, for the log: the internal cause where there is one.
    pub fn cause(&self) -> String {
        match self {
            Self::StorageUnavailable(cause)
            | Self::ClusterUnavailable(cause)
            | Self::Internal(cause)
            | Self::ClusterMisconfigured { cause, .. } => cause.clone(),
            other => other.to_string(),
        }
    }

    /// Seconds after which the same request may succeed (`Retry-After`).
    pub fn retry_after(&self) -> Option<u64> {
        match self {
            Self::TooManyRequests { retry_after_secs } => Some(*retry_after_secs),
            Self::EnvironmentNotReady(_) => Some(ENVIRONMENT_NOT_READY_RETRY_SECS),
            _ => None,
        }
    }

    pub fn problem(&self) -> Problem {
        Problem {
            code: self.code().to_owned(),
            title: self.title().to_owned(),
            status: self.status().as_u16(),
            detail: self.public_detail(),
        }
    }
}

impl axum::response::IntoResponse for ApiError {
    fn into_response(self) -> axum::response::Response {
        use axum::Json;
        use http::{HeaderValue, header};
        match &self {
            Self::Internal(cause) => tracing::error!(cause = %cause, "internal error"),
            Self::ClusterUnavailable(cause) => {
                tracing::warn!(cause = %cause, "cluster unavailable")
            }
            Self::ClusterMisconfigured { detail, cause } => {
                tracing::warn!(kind = %"cluster_misconfigured", detail = %detail, cause = %cause,
                    "the cluster is misconfigured")
            }
            Self::StorageUnavailable(cause) => {
                tracing::warn!(cause = %cause, "storage unavailable")
            }
            Self::DeadlineExceeded => tracing::warn!("the request ran past its deadline"),
            _ => {}
        }
        let mut response = (self.status(), Json(self.problem())).into_response();
        if let Some(seconds) = self.retry_after() {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}

impl From<Missing> for ApiError {
    fn from(missing: Missing) -> Self {
        Self::NotFound(missing)
    }
}

impl From<InvalidInput> for ApiError {
    fn from(invalid: InvalidInput) -> Self {
        Self::ValidationFailed(invalid.0)
    }
}

impl From<InvalidPageQuery> for ApiError {
    fn from(invalid: InvalidPageQuery) -> Self {
        Self::InvalidRequest(invalid.0)
    }
}

/// The store's failures: only what a retry may cure is
/// `storage_unavailable`; what DynamoDB refused, an item that does not
/// decode, and any other broken assumption are bugs (`internal`, logged as
/// errors); the rest are the caller's, as the store says them.
impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::Unavailable(cause) => Self::StorageUnavailable(cause),
            StoreError::Refused(cause)
            | StoreError::Malformed(cause)
            | StoreError::Broken(cause) => Self::Internal(cause),
            StoreError::Conflict(detail) => Self::Conflict(detail),
            StoreError::Missing(missing) => Self::NotFound(missing),
            StoreError::Invalid(detail) => Self::ValidationFailed(detail),
            StoreError::Forbidden(detail) => Self::Forbidden(detail),
            StoreError::Throttled { retry_after_secs } => {
                Self::TooManyRequests { retry_after_secs }
            }
            StoreError::Unauthenticated => Self::Unauthenticated,
            StoreError::InvalidCredentials => Self::InvalidCredentials,
        }
    }
}

/// The cluster's failures: out of reach or misconfigured is
/// `cluster_unavailable` (a misconfiguration with a `detail` an operator
/// can act on); a refusal Berth did not expect and any broken assumption
/// are bugs (`internal`); the rest are the caller's.
#[cfg(feature = "cluster")]
impl From<berth_cluster::ClusterError> for ApiError {
    fn from(error: berth_cluster::ClusterError) -> Self {
        use berth_cluster::ClusterError;
        match error {
            ClusterError::Unavailable(cause) => Self::ClusterUnavailable(cause),
            ClusterError::Misconfigured { detail, cause } => {
                Self::ClusterMisconfigured { detail, cause }
            }
            ClusterError::Refused(cause) | ClusterError::Broken(cause) => Self::Internal(cause),
            ClusterError::Conflict(detail) => Self::Conflict(detail),
            ClusterError::Missing(missing) => Self::NotFound(missing),
            ClusterError::Invalid(detail) => Self::ValidationFailed(detail),
            ClusterError::EnvironmentNotReady(detail) => Self::EnvironmentNotReady(detail),
            ClusterError::NamespaceTaken(detail) => Self::NamespaceTaken(detail),
            ClusterError::EnvironmentDeleting => Self::EnvironmentDeleting,
        }
    }
}

/// The cluster's errors of the calls this layer makes itself, by the
/// cluster layer's reading of them.
#[cfg(feature = "cluster")]
impl From<kube::Error> for ApiError {
    fn from(error: kube::Error) -> Self {
        berth_cluster::ClusterError::from(error).into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_renders_its_design_code_and_status() {
        let cases = [
            (ApiError::InvalidRequest("x".into()), 400, "invalid_request"),
            (
                ApiError::ValidationFailed("x".into()),
                422,
                "validation_failed",
            ),
            (ApiError::Unauthenticated, 401, "unauthenticated"),
            (ApiError::InvalidCredentials, 401, "invalid_credentials"),
            (
                ApiError::PasswordChangeRequired,
                403,
                "password_change_required",
            ),
            (ApiError::Forbidden("x".into()), 403, "forbidden"),
            (ApiError::NotFound(Missing::Route), 404, "not_found"),
            (ApiError::MethodNotAllowed, 405, "method_not_allowed"),
            (ApiError::Conflict("x".into()), 409, "conflict"),
            (
                ApiError::ProjectNotEmpty(Vec::new()),
                409,
                "project_not_empty",
            ),
            (ApiError::EnvironmentDeleting, 409, "environment_deleting"),
            (ApiError::SecretNotManaged, 409, "secret_not_managed"),
            (ApiError::NamespaceTaken("x".into()), 409, "namespace_taken"),
            (
                ApiError::EnvironmentNotReady("x".into()),
                409,
                "environment_not_ready",
            ),
            (
                ApiError::DomainTaken {
                    hostname: "x.example.com".into(),
                },
                409,
                "domain_taken",
            ),
            (
                ApiError::DomainVerifiedElsewhere {
                    hostname: "x.example.com".into(),
                },
                409,
                "domain_taken",
            ),
            (ApiError::PayloadTooLarge, 413, "payload_too_large"),
            (
                ApiError::UnsupportedMediaType("x".into()),
                415,
                "unsupported_media_type",
            ),
            (
                ApiError::TooManyRequests {
                    retry_after_secs: 3,
                },
                429,
                "too_many_requests",
            ),
            (ApiError::Internal("x".into()), 500, "internal"),
            (ApiError::NoCluster, 503, "no_cluster"),
            (
                ApiError::RegistryNotConfigured(String::new()),
                503,
                "registry_not_configured",
            ),
            (
                ApiError::ClusterUnavailable("x".into()),
                503,
                "cluster_unavailable",
            ),
            (
                ApiError::ClusterMisconfigured {
                    detail: "x".into(),
                    cause: "y".into(),
                },
                503,
                "cluster_unavailable",
            ),
            (
                ApiError::StorageUnavailable("x".into()),
                503,
                "storage_unavailable",
            ),
            (ApiError::DeadlineExceeded, 503, "deadline_exceeded"),
        ];
        for (error, status, code) in cases {
            let problem = error.problem();
            assert_eq!((problem.status, problem.code.as_str()), (status, code));
            assert!(!problem.title.is_empty());
        }
    }

    #[test]
    fn internal_causes_never_reach_the_body() {
        for error in [
            ApiError::Internal("secret-cause".into()),
            ApiError::StorageUnavailable("http://10.0.0.1 secret-cause".into()),
            ApiError::ClusterUnavailable("https://10.0.0.2 secret-cause".into()),
            ApiError::ClusterMisconfigured {
                detail: "check the RBAC".into(),
                cause: "https://10.0.0.3 secret-cause".into(),
            },
        ] {
            let detail = error.problem().detail.unwrap_or_default();
            assert!(!detail.contains("secret-cause"), "{detail}");
        }
    }

    #[test]
    fn throttling_sets_retry_after() {
        use axum::response::IntoResponse;
        use http::header;
        let response = ApiError::TooManyRequests {
            retry_after_secs: 42,
        }
        .into_response();
        assert_eq!(response.headers()[header::RETRY_AFTER], "42");
    }

    #[test]
    fn an_environment_not_ready_says_when_to_retry() {
        use axum::response::IntoResponse;
        use http::header;
        let response = ApiError::EnvironmentNotReady("x".into()).into_response();
        assert_eq!(response.status(), StatusCode::CONFLICT);
        assert_eq!(response.headers()[header::RETRY_AFTER], "2");
        let response = ApiError::NamespaceTaken("x".into()).into_response();
        assert!(response.headers().get(header::RETRY_AFTER).is_none());
    }

    #[test]
    fn the_stores_failures_read_as_their_meaning() {
        let cases = [
            (
                StoreError::Unavailable("x".into()),
                503,
                "storage_unavailable",
            ),
            (StoreError::Refused("x".into()), 500, "internal"),
            (StoreError::Malformed("x".into()), 500, "internal"),
            (StoreError::Broken("x".into()), 500, "internal"),
            (StoreError::Conflict("x".into()), 409, "conflict"),
            (StoreError::Missing(Missing::Route), 404, "not_found"),
            (StoreError::Invalid("x".into()), 422, "validation_failed"),
            (StoreError::Forbidden("x".into()), 403, "forbidden"),
            (
                StoreError::Throttled {
                    retry_after_secs: 3,
                },
                429,
                "too_many_requests",
            ),
            (StoreError::Unauthenticated, 401, "unauthenticated"),
            (StoreError::InvalidCredentials, 401, "invalid_credentials"),
        ];
        for (error, status, code) in cases {
            let problem = ApiError::from(error).problem();
            assert_eq!((problem.status, problem.code.as_str()), (status, code));
        }
    }

    #[cfg(feature = "cluster")]
    #[test]
    fn the_clusters_failures_read_as_their_meaning() {
        use berth_cluster::ClusterError;
        let cases = [
            (
                ClusterError::Unavailable("x".into()),
                503,
                "cluster_unavailable",
            ),
            (ClusterError::Refused("x".into()), 500, "internal"),
            (ClusterError::Broken("x".into()), 500, "internal"),
            (ClusterError::Conflict("x".into()), 409, "conflict"),
            (ClusterError::Missing(Missing::Gone), 404, "not_found"),
            (ClusterError::Invalid("x".into()), 422, "validation_failed"),
            (
                ClusterError::EnvironmentNotReady("x".into()),
                409,
                "environment_not_ready",
            ),
            (
                ClusterError::NamespaceTaken("x".into()),
                409,
                "namespace_taken",
            ),
            (
                ClusterError::EnvironmentDeleting,
                409,
                "environment_deleting",
            ),
        ];
        for (error, status, code) in cases {
            let problem = ApiError::from(error).problem();
            assert_eq!((problem.status, problem.code.as_str()), (status, code));
        }
        // A misconfiguration says what to fix, and only that.
        let problem = ApiError::from(ClusterError::Misconfigured {
            detail: "check the RBAC".into(),
            cause: "https://10.0.0.3 secret-cause".into(),
        })
        .problem();
        assert_eq!(
            (
                problem.status,
                problem.code.as_str(),
                problem.detail.as_deref()
            ),
            (503, "cluster_unavailable", Some("check the RBAC"))
        );
    }
}
