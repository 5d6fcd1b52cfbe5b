//! The `auth` function: sign in, sign out, the current user, password change.

use axum::extract::State;
use axum::http::StatusCode;
use axum::http::header::SET_COOKIE;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use serde::Deserialize;

use berth_shared::http::pipeline::ClientIp;
use berth_shared::http::{Caller, JsonBody, operation, scope};
use berth_shared::identity::{Credential, Identity, login, password, sessions};
use berth_shared::{ApiError, AppState, Operation};

pub fn router() -> Router<AppState> {
    // At start, not on the first unknown email (password.rs says why).
    password::prepare_decoy();
    Router::new()
        .route(
            "/api/v1/auth/login",
            operation(Operation::Login, post(sign_in)),
        )
        .route(
            "/api/v1/auth/logout",
            operation(Operation::Logout, post(sign_out)),
        )
        .route(
            "/api/v1/me",
            operation(Operation::GetCurrentUser, get(current_user)),
        )
        .route(
            "/api/v1/me/password",
            operation(Operation::ChangePassword, post(change_password)),
        )
}

/// No `Debug`: it holds a password.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LoginBody {
    email: String,
    password: String,
}

async fn sign_in(
    State(state): State<AppState>,
    Extension(ClientIp(ip)): Extension<ClientIp>,
    JsonBody(body): JsonBody<LoginBody>,
) -> Result<impl IntoResponse, ApiError> {
    // A login attempt from here on, whatever else the request carries: its
    // event follows the account it names (DESIGN §6), even if it fails below.
    scope::audit_login(None, false);
    let attempt =
        login::login(&state.store, &state.config, &body.email, body.password, &ip).await?;
    if let Some(account) = &attempt.account {
        scope::audit_target("user", account.id.clone());
    }
    scope::audit_login(attempt.account, attempt.outcome.is_ok());
    let (user, session) = attempt.outcome?;
    Ok((
        [(SET_COOKIE, session.set_cookie)],
        Json(Identity::of(&user, "session")),
    ))
}

async fn sign_out(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<impl IntoResponse, ApiError> {
    scope::audit_target("user", caller.user.id.clone());
    if let Credential::Session { digest } = &caller.credential {
        sessions::delete(&state.store, &caller.user.id, digest).await?;
    }
    Ok((
        StatusCode::NO_CONTENT,
        [(SET_COOKIE, sessions::clearing_cookie(&state.config))],
    ))
}

async fn current_user(caller: Caller) -> Json<Identity> {
    Json(caller.identity())
}

/// No `Debug`: it holds passwords.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PasswordChange {
    current_password: String,
    new_password: String,
}

async fn change_password(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<PasswordChange>,
) -> Result<Json<serde_json::Value>, ApiError> {
    scope::audit_target("user", caller.user.id.clone());
    login::change_password(
        &state.store,
        &caller,
        body.current_password,
        body.new_password,
    )
    .await?;
    Ok(Json(serde_json::json!({ "changed": true })))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_decoy_hash_is_built_with_the_routes() {
        let _routes = super::router();
        assert!(super::password::decoy_ready());
    }
}
