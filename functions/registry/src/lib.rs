//! The `registry` function: the image registry's token service, on the
//! Docker Registry token authentication scheme (CNCF Distribution's
//! docs/spec/auth/token.md, oauth.md; what Distribution, Zot and GitLab's
//! registry use). The registry is configured with Berth's realm
//! (`{BERTH_PUBLIC_URL}/api/v1/registry/token`), its issuer
//! (`BERTH_PUBLIC_URL`), its service (the registry's host) and a
//! certificate of the key tokens are signed with ([`signing`]); a client
//! presents a Berth-issued registry credential and gets a short-lived token
//! ([`jwt`]) carrying only the scopes that credential may have ([`scope`],
//! [`verify`]).
//!
//! - `GET /api/v1/registry/token` (`getRegistryToken`): the credential as
//!   HTTP Basic, `service` and `scope` (repeatable) in the query — what
//!   docker, skopeo and containerd's fallback send.
//! - `POST /api/v1/registry/token` (`requestRegistryToken`): the OAuth2
//!   password grant of oauth.md, a form body — what containerd (the
//!   kubelet's pulls) tries first when it has a user name and password
//!   (remotes/docker/authorizer.go, `FetchTokenWithOAuth`).
//!
//! Its own function: it is in the path of every pod start that pulls a
//! Berth-built image, so it starts cold with only what it uses (no other
//! group's code), and its own concurrency and alarms.

pub mod jwt;
pub mod scope;
pub mod signing;

mod grants;
mod throttle;
mod verify;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Extension, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use serde::{Deserialize, Serialize};

use berth_api::ApiError;
use berth_api::AppState;
use berth_api::http::pipeline::ClientIp;
use berth_api::http::scope as audit;
use berth_api::openapi::cluster_failures;
use berth_api::registry::RegistrySettings;
use berth_domain::names::OrgName;
use berth_domain::registry::RegistryUser;
use berth_domain::{Operation, clock};

berth_api::operations! {
    tag: "registry",
    failures: failures,
    handlers: [get_registry_token, request_registry_token],
}

/// What the two can give besides a token: a credential that does not hold
/// (`401` with the challenge), a malformed request (`400`), a service that
/// is not set up yet or a backend that does not answer (`503`).
fn failures(_operation: Operation) -> Vec<ApiError> {
    let mut failures = cluster_failures(false);
    failures.extend([
        ApiError::Unauthenticated,
        ApiError::InvalidRequest(String::new()),
        ApiError::RegistryNotConfigured(String::new()),
        ApiError::StorageUnavailable(String::new()),
        ApiError::TooManyRequests {
            retry_after_secs: 0,
        },
    ]);
    failures
}

/// The path the registry's `realm` names, under `BERTH_PUBLIC_URL`.
pub const REALM_PATH: &str = "/api/v1/registry/token";

/// The challenge of a `401`: Basic, as the scheme's token endpoint asks
/// (token.md, "Requesting a Token").
const CHALLENGE: &str = "Basic realm=\"Berth registry token service\", charset=\"UTF-8\"";

/// The query of a token request (token.md, "Query Parameters").
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
struct TokenQuery {
    /// The registry the token is for: its host, as its challenge names it
    /// (its `auth.token.service`). Defaults to that.
    service: Option<String>,
    /// `repository:NAME:ACTIONS`, repeatable, or several separated by
    /// spaces (at most 50 in all). What the credential may not have is left
    /// out of the token.
    #[param(value_type = Option<Vec<scope::RegistryScopes>>, max_items = 50)]
    scope: Option<Vec<String>>,
    /// The client's name of the user (ignored: the credential says who).
    account: Option<String>,
    /// The client's name (ignored).
    client_id: Option<String>,
    /// Refresh tokens are not issued (ignored).
    offline_token: Option<bool>,
}

/// A token: the scheme's answer (token.md, "Token Response Fields").
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct IssuedToken {
    /// The bearer token (a JWT, ES256).
    pub token: String,
    /// The same token, under OAuth2's name.
    pub access_token: String,
    /// Seconds it works for from `issued_at`.
    pub expires_in: i64,
    /// RFC 3339, UTC.
    pub issued_at: String,
    /// What it grants (`requestRegistryToken` only, as OAuth2 answers).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

/// The OAuth2 password grant's form body (oauth.md). A form has no null:
/// a field left out is absent, so none is described as nullable.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct PasswordGrant {
    /// `password`: Berth issues no refresh tokens.
    #[schema(pattern = "^password$")]
    pub grant_type: String,
    #[schema(nullable = false)]
    pub username: Option<String>,
    #[schema(format = Password, nullable = false)]
    pub password: Option<String>,
    #[schema(nullable = false)]
    pub service: Option<String>,
    /// Scopes separated by spaces (at most 50).
    #[schema(value_type = Option<scope::RegistryScopes>, nullable = false)]
    pub scope: Option<String>,
    #[schema(nullable = false)]
    pub client_id: Option<String>,
    #[schema(nullable = false)]
    pub access_type: Option<String>,
}

/// Get a registry token
///
/// The registry's token service (Docker Registry token authentication):
/// present a Berth registry credential — a build's (`build/{build}/push`,
/// `build/{build}/pull`) or an environment's (`environment/{name}`), from
/// the Secret Berth made for it — as HTTP Basic, with the registry's
/// `service` and the `scope`s its challenge names. The token grants what
/// was asked that the credential may have (its own repository, or pulls of
/// its project's images) and nothing else, which is not an error:
/// the registry refuses what the token does not cover. A credential that
/// is missing, does not hold, or no longer works (its build ended) is
/// `401` with a `WWW-Authenticate: Basic` challenge. The answer is never
/// cached (`Cache-Control: no-store`).
#[utoipa::path(
    get,
    path = "/api/v1/registry/token",
    params(TokenQuery),
    responses(
        (status = 200, description = "A token for what the credential may have of the scopes asked.",
            body = IssuedToken),
    ),
)]
async fn get_registry_token(
    State(state): State<AppState>,
    Extension(ClientIp(source)): Extension<ClientIp>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Response {
    let pairs: Vec<(String, String)> =
        match serde_urlencoded::from_str(query.as_deref().unwrap_or_default()) {
            Ok(pairs) => pairs,
            Err(_) => {
                return ApiError::InvalidRequest("the query is not a URL-encoded form".into())
                    .into_response();
            }
        };
    let value = |name: &str| {
        pairs
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, v)| v.clone())
    };
    let scopes: Vec<String> = pairs
        .iter()
        .filter(|(key, _)| key == "scope")
        .map(|(_, v)| v.clone())
        .collect();
    let credential = basic_credential(&headers);
    answer(
        issue(&state, &source, credential, value("service"), &scopes).await,
        false,
    )
}

/// Request a registry token (OAuth2)
///
/// The same token service as `getRegistryToken`, as OAuth2's password
/// grant (docs/spec/auth/oauth.md of Distribution): a form body
/// (`application/x-www-form-urlencoded`) with `grant_type=password`,
/// `username`, `password`, `service` and `scope` (scopes separated by
/// spaces). This is what containerd (the kubelet's pulls) tries first;
/// refresh tokens are not issued (`grant_type=refresh_token` is `400`,
/// after which containerd asks `getRegistryToken`).
#[utoipa::path(
    post,
    path = "/api/v1/registry/token",
    request_body(content = PasswordGrant, content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 200, description = "A token for what the credential may have of the scopes asked.",
            body = IssuedToken),
    ),
)]
async fn request_registry_token(
    State(state): State<AppState>,
    Extension(ClientIp(source)): Extension<ClientIp>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let form_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .is_some_and(|value| {
            value
                .trim()
                .eq_ignore_ascii_case("application/x-www-form-urlencoded")
        });
    // No body is no credential: the scheme's 401.
    if body.is_empty() {
        return answer(issue(&state, &source, None, None, &[]).await, true);
    }
    if !form_type {
        return ApiError::UnsupportedMediaType(
            "a token request is a form: Content-Type: application/x-www-form-urlencoded".into(),
        )
        .into_response();
    }
    let Ok(grant) = serde_urlencoded::from_bytes::<PasswordGrant>(&body) else {
        return ApiError::InvalidRequest(
            "the body must be a URL-encoded form with grant_type, username, password, service and scope"
                .into(),
        )
        .into_response();
    };
    if grant.grant_type != "password" {
        return ApiError::InvalidRequest(
            "grant_type: only `password` is supported (no refresh tokens are issued)".into(),
        )
        .into_response();
    }
    let credential = grant.username.zip(grant.password);
    let scopes: Vec<String> = grant.scope.into_iter().collect();
    answer(
        issue(&state, &source, credential, grant.service, &scopes).await,
        true,
    )
}

/// A granted token, or why not.
type Issued = Result<(IssuedToken, String), ApiError>;

fn answer(issued: Issued, oauth: bool) -> Response {
    match issued {
        Ok((mut token, granted)) => {
            if oauth {
                token.scope = Some(granted);
            }
            let mut response = (StatusCode::OK, Json(token)).into_response();
            // A token is a credential: no cache may keep it.
            response
                .headers_mut()
                .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            response
        }
        Err(error) => {
            let unauthenticated = matches!(error, ApiError::Unauthenticated);
            let mut response = error.into_response();
            if unauthenticated {
                response.headers_mut().insert(
                    header::WWW_AUTHENTICATE,
                    HeaderValue::from_static(CHALLENGE),
                );
            }
            response
        }
    }
}

/// The user name and password of `Authorization: Basic …`, if well formed.
fn basic_credential(headers: &HeaderMap) -> Option<(String, String)> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, encoded) = value.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()?;
    let decoded = String::from_utf8(decoded).ok()?;
    let (username, password) = decoded.split_once(':')?;
    Some((username.to_owned(), password.to_owned()))
}

/// Checks the credential and signs a token for what it may have of
/// `scopes`, noting the call for its audit event and logging one line.
///
/// A credential's failures are counted per source address and per user
/// name ([`throttle`]): a source over its budget is answered `429` before
/// anything reads the cluster; a user name over its budget is still
/// checked (a correct password always works from a source within its
/// budget), but its failures' events go to the system partition instead of
/// its organization's log.
async fn issue(
    state: &AppState,
    source: &str,
    credential: Option<(String, String)>,
    service: Option<String>,
    scopes: &[String],
) -> Issued {
    let Some((username, password)) = credential else {
        tracing::info!(outcome = "denied", why = "no credential", "registry token");
        return Err(ApiError::Unauthenticated);
    };
    let Some(user) = RegistryUser::parse(&username) else {
        tracing::info!(
            outcome = "denied",
            why = "not a registry user name",
            "registry token"
        );
        return Err(ApiError::Unauthenticated);
    };
    audit::audit_registry_user(user.username());
    audit::audit_target("registry_credential", &user);
    let settings = settings(state).await?;
    let issuer = state.config.public_url.clone().ok_or_else(|| {
        ApiError::RegistryNotConfigured(
            "BERTH_PUBLIC_URL is not set: the token service's issuer is the API's public URL"
                .into(),
        )
    })?;
    let key = state.config.registry_signing_key.clone().ok_or_else(|| {
        ApiError::RegistryNotConfigured("BERTH_REGISTRY_SIGNING_KEY is not set".into())
    })?;
    let failures = throttle::Failures::read(&state.store, source, &user).await;
    if let Some(retry_after_secs) = failures.source_blocked_for() {
        tracing::info!(registry_user = %user.username(), outcome = "throttled",
            "registry token");
        return Err(ApiError::TooManyRequests { retry_after_secs });
    }
    let client = state.cluster.client().await?;
    let checked = verify::check(&client, &settings, &user, &password).await?;
    let org = checked
        .org
        .as_deref()
        .and_then(|org| OrgName::parse(org).ok());
    let Some(reach) = checked.reach else {
        // Its organization's log has the name's failures up to its budget;
        // past it, the system partition's has them (one event each still).
        if failures.count(&state.store).await
            && let Some(org) = org
        {
            audit::audit_org(org);
        }
        tracing::info!(registry_user = %user.username(), org = ?checked.org, outcome = "denied",
            "registry token");
        return Err(ApiError::Unauthenticated);
    };
    if let Some(org) = org {
        audit::audit_org(org);
    }
    // Judged once the credential holds: to anyone else, whatever the
    // service or the scope, the answer is the scheme's 401.
    let requested = scope::parse(scopes).map_err(ApiError::InvalidRequest)?;
    let service = match service {
        Some(service) if service != settings.server => {
            return Err(ApiError::InvalidRequest(format!(
                "service: this token service issues tokens for the registry {} only",
                settings.server
            )));
        }
        _ => settings.server.clone(),
    };
    let granted = scope::narrow(&requested, &reach);
    let signer = signing::signer(&key).await.map_err(|error| {
        tracing::error!(error = %error, "the registry's signing key cannot be used");
        // The detail (a key's id or path, the cloud's answer) is the log's.
        ApiError::RegistryNotConfigured("the signing key cannot be used".into())
    })?;
    let now = clock::unix_seconds();
    let claims = jwt::Claims::new(&issuer, &user.username(), &service, now, granted);
    let token = jwt::sign(&signer, &claims).await.map_err(|error| {
        tracing::error!(error = %error, "a registry token could not be signed");
        ApiError::RegistryNotConfigured("the token could not be signed".into())
    })?;
    let granted = scope::scope_string(&claims.access);
    tracing::info!(registry_user = %user.username(), org = ?checked.org, outcome = "granted",
        asked = %scopes.join(" "), granted = %granted, "registry token");
    if !grants::first_of_the_hour(&state.store, &user.username()).await {
        audit::audit_summarised();
    }
    Ok((
        IssuedToken {
            access_token: token.clone(),
            token,
            expires_in: jwt::TOKEN_LIFETIME_SECONDS,
            issued_at: clock::rfc3339(now),
            scope: None,
        },
        granted,
    ))
}

/// The registry's settings (`berth-admin registry set`), read once and
/// kept for `BERTH_KUBECONFIG_RECHECK_SECONDS` (a replaced setting is
/// noticed as soon as a replaced kubeconfig is).
async fn settings(state: &AppState) -> Result<Arc<RegistrySettings>, ApiError> {
    /// Per table (tests run several in one process): when read, and what.
    type Kept = HashMap<String, (Instant, Arc<RegistrySettings>)>;
    static KEPT: Mutex<Option<Kept>> = Mutex::new(None);
    let table = state.store.table().to_owned();
    let kept = KEPT.lock().ok().and_then(|kept| {
        let (read_at, settings) = kept.as_ref()?.get(&table)?;
        (read_at.elapsed() < state.config.kubeconfig_recheck).then(|| settings.clone())
    });
    if let Some(settings) = kept {
        return Ok(settings);
    }
    let settings = RegistrySettings::load(&state.store).await?.ok_or_else(|| {
        ApiError::RegistryNotConfigured(
            "no registry is configured: an operator must run `berth-admin registry set`".into(),
        )
    })?;
    let settings = Arc::new(settings);
    if let Ok(mut kept) = KEPT.lock() {
        kept.get_or_insert_with(HashMap::new)
            .insert(table, (Instant::now(), settings.clone()));
    }
    Ok(settings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_credentials_are_read_from_the_header() {
        let mut headers = HeaderMap::new();
        assert_eq!(basic_credential(&headers), None);
        headers.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Basic ZW52aXJvbm1lbnQvc2hvcC1wcm9kOnMzY3I6ZXQ="),
        );
        assert_eq!(
            basic_credential(&headers),
            Some(("environment/shop-prod".into(), "s3cr:et".into()))
        );
        headers.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Bearer brt_x"),
        );
        assert_eq!(basic_credential(&headers), None);
        headers.insert(header::AUTHORIZATION, HeaderValue::from_static("Basic !!"));
        assert_eq!(basic_credential(&headers), None);
    }
}
