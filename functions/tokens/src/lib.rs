//! The `tokens` function: the caller's personal API tokens.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use serde::Deserialize;

use berth_shared::http::{Caller, JsonBody, operation, scope};
use berth_shared::identity::tokens::{self, CreatedToken, TokenRecord};
use berth_shared::{ApiError, AppState, Operation};

pub fn router() -> Router<AppState> {
    Router::new()
        .route(
            "/api/v1/tokens",
            operation(Operation::ListTokens, get(list_tokens))
                .merge(operation(Operation::CreateToken, post(create_token))),
        )
        .route(
            "/api/v1/tokens/{token}",
            operation(Operation::DeleteToken, delete(delete_token)),
        )
}

async fn list_tokens(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<Vec<TokenRecord>>, ApiError> {
    let tokens = tokens::list(&state.store, &caller.user.id).await?;
    Ok(Json(tokens.iter().map(tokens::TokenItem::record).collect()))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NewToken {
    name: String,
    expires_in_days: Option<u32>,
}

async fn create_token(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<NewToken>,
) -> Result<(StatusCode, Json<CreatedToken>), ApiError> {
    let created = tokens::create(
        &state.store,
        &caller.user.id,
        &body.name,
        body.expires_in_days,
    )
    .await?;
    scope::audit_target("token", created.record.id.clone());
    Ok((StatusCode::CREATED, Json(created)))
}

async fn delete_token(
    State(state): State<AppState>,
    caller: Caller,
    Path(token_id): Path<String>,
) -> Result<StatusCode, ApiError> {
    scope::audit_target("token", token_id.clone());
    tokens::revoke(&state.store, &caller.user.id, &token_id).await?;
    Ok(StatusCode::NO_CONTENT)
}
