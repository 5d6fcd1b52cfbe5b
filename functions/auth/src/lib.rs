//! The `auth` function: sign in, sign out, the current user, password change.

use axum::extract::State;
use axum::http::StatusCode;
use axum::http::header::SET_COOKIE;
use axum::response::IntoResponse;
use axum::{Extension, Json};

use berth_api::ApiError;
use berth_api::AppState;
use berth_api::http::pipeline::ClientIp;
use berth_api::http::{Caller, JsonBody, scope};
use berth_domain::Operation;
use berth_records::auth::{CurrentUser, Identity};
use berth_records::auth::{LoginBody, PasswordChange, PasswordChanged};
use berth_store::identity::{Credential, login, sessions};

berth_api::operations! {
    tag: "auth",
    failures: failures,
    handlers: [
        login,
        logout,
        get_current_user,
        change_password,
    ],
}

fn failures(operation: Operation) -> Vec<ApiError> {
    let throttled = ApiError::TooManyRequests {
        retry_after_secs: 0,
    };
    match operation {
        Operation::Login => vec![
            ApiError::InvalidCredentials,
            throttled,
            ApiError::StorageUnavailable(String::new()),
        ],
        Operation::ChangePassword => vec![
            ApiError::ValidationFailed(String::new()),
            throttled,
            ApiError::Conflict(String::new()),
        ],
        _ => Vec::new(),
    }
}

/// Sign in
///
/// Checks the email and password and starts a session: the `berth_session`
/// cookie (`HttpOnly`, `SameSite=Lax`, `Path=/`, 12 h). Failures are
/// throttled per email and per client address.
#[utoipa::path(
    post,
    path = "/api/v1/auth/login",
    request_body = LoginBody,
    responses((status = 200, description = "Signed in.", body = Identity,
        headers(("Set-Cookie" = String, description = "The session cookie, `berth_session`.")))),
)]
async fn login(
    State(state): State<AppState>,
    Extension(ClientIp(ip)): Extension<ClientIp>,
    JsonBody(body): JsonBody<LoginBody>,
) -> Result<impl IntoResponse, ApiError> {
    // A login attempt from here on, whatever else the request carries: its
    // event follows the account it names, even if it fails below.
    scope::audit_login(None, false);
    let attempt = login::login(
        &state.store,
        state.config.sessions(),
        &body.email,
        body.password,
        &ip,
    )
    .await?;
    if let Some(account) = &attempt.account {
        scope::audit_target("user", account);
    }
    scope::audit_login(attempt.account, attempt.outcome.is_ok());
    let (user, session) = attempt.outcome?;
    Ok((
        [(SET_COOKIE, session.set_cookie)],
        Json(user.identity("session")),
    ))
}

/// Sign out
///
/// Ends the session of the cookie (a token stays valid) and clears the cookie.
#[utoipa::path(
    post,
    path = "/api/v1/auth/logout",
    responses((status = 204, description = "Signed out.",
        headers(("Set-Cookie" = String, description = "Clears `berth_session`.")))),
)]
async fn logout(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<impl IntoResponse, ApiError> {
    scope::audit_target("user", &caller.user);
    if let Credential::Session { digest } = &caller.credential {
        sessions::delete(&state.store, &caller.user.id, digest).await?;
    }
    Ok((
        StatusCode::NO_CONTENT,
        [(
            SET_COOKIE,
            sessions::clearing_cookie(state.config.sessions()),
        )],
    ))
}

/// The current user
///
/// Who the credentials belong to, whether the password must change, and
/// what the caller may do (`access`): on the organization, in the projects
/// it holds a role in or its token is limited to, and in every other
/// project. Computed by the checks that refuse calls, for these
/// credentials: a limited token sees only what it may do. Read from the
/// credentials alone, without the cluster.
#[utoipa::path(
    get,
    path = "/api/v1/me",
    responses((status = 200, description = "The caller.", body = CurrentUser)),
)]
async fn get_current_user(caller: Caller) -> Json<CurrentUser> {
    Json(CurrentUser {
        identity: caller.identity(),
        access: caller.access(),
    })
}

/// Change the password
///
/// Replaces the caller's password (also a temporary one) and revokes every
/// other session of the caller.
#[utoipa::path(
    post,
    path = "/api/v1/me/password",
    request_body = PasswordChange,
    responses((status = 200, description = "Changed.", body = PasswordChanged)),
)]
async fn change_password(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<PasswordChange>,
) -> Result<Json<PasswordChanged>, ApiError> {
    scope::audit_target("user", &caller.user);
    caller.require_owners_rights("change the password")?;
    login::change_password(
        &state.store,
        &caller,
        body.current_password,
        body.new_password,
    )
    .await?;
    Ok(Json(PasswordChanged { changed: true }))
}
