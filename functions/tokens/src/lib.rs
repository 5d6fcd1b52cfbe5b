//! The `tokens` function: the caller's personal API tokens.

use axum::Json;
use axum::http::StatusCode;

use berth_api::ApiError;
use berth_api::http::{Call, Created, JsonBody, scope};
use berth_domain::Operation;
use berth_domain::paths::TokenPath;
use berth_records::tokens::{CreatedToken, NewToken, TokenRecord};
use berth_store::identity::{Credential, tokens};

berth_api::operations! {
    tag: "tokens",
    failures: failures,
    handlers: [list_tokens, create_token, delete_token],
}

fn failures(operation: Operation) -> Vec<ApiError> {
    match operation {
        Operation::CreateToken => vec![ApiError::ValidationFailed(String::new())],
        _ => Vec::new(),
    }
}

/// List API tokens
///
/// The caller's own tokens; never their secrets.
#[utoipa::path(
    get,
    path = "/api/v1/tokens",
    responses((status = 200, description = "The tokens.", body = Vec<TokenRecord>)),
)]
async fn list_tokens(call: Call) -> Result<Json<Vec<TokenRecord>>, ApiError> {
    let tokens = tokens::list(&call.state.store, &call.caller.user.id).await?;
    Ok(Json(tokens.iter().map(tokens::TokenItem::record).collect()))
}

/// Create an API token
///
/// A personal token of the caller, used as `Authorization: Bearer brt_...`.
/// The secret is in this answer only.
#[utoipa::path(
    post,
    path = "/api/v1/tokens",
    request_body = NewToken,
    responses((status = 201, description = "Created; `token` is the secret, shown once.",
        body = CreatedToken)),
)]
async fn create_token(
    call: Call,
    JsonBody(body): JsonBody<NewToken>,
) -> Result<Created<CreatedToken>, ApiError> {
    let caller = &call.caller;
    if let Some(own) = caller.ceiling
        && !own.covers(body.ceiling)
    {
        return Err(ApiError::Forbidden(format!(
            "this token is limited to {}: it can only create tokens limited to it or less \
             (give ceiling)",
            own.as_str()
        )));
    }
    if let Some(own) = &caller.scope
        && !berth_domain::scope::within(&own.entries, body.scope.as_deref())
    {
        return Err(ApiError::Forbidden(format!(
            "this token is limited to {}: it can only create tokens within it (give scope)",
            berth_domain::scope::describe(&own.entries)
        )));
    }
    // A limited token's token lives no longer than it, and goes with it;
    // a session's or an unlimited token's (the CLI's sign-in) may outlive
    // its maker, so that signing in again ends no pipeline's token.
    let maker = match (&caller.credential, caller.limits()) {
        (Credential::Token { id, expires_at }, Some(_)) => Some(tokens::Maker {
            id,
            expires_at: *expires_at,
            scope_since: caller.scope.as_ref().map(|scope| scope.since),
        }),
        _ => None,
    };
    let created = tokens::create(
        &call.state.store,
        &caller.user.id,
        tokens::NewToken {
            name: &body.name,
            expires_in_days: body.expires_in_days,
            ceiling: body.ceiling,
            scope: body.scope,
            maker,
        },
    )
    .await?;
    scope::audit_target("token", &created.record);
    Ok(Created::new(created))
}

/// Revoke an API token
///
/// One of the caller's own tokens; it stops working at once.
#[utoipa::path(
    delete,
    path = "/api/v1/tokens/{token}",
    params(TokenPath),
    responses((status = 204, description = "Revoked.")),
)]
async fn delete_token(call: Call<TokenPath>) -> Result<StatusCode, ApiError> {
    let (caller, token_id) = (&call.caller, &call.path.token);
    // A limited token may revoke itself (a leaked CI token), no other.
    let itself =
        matches!(&caller.credential, Credential::Token { id, .. } if id == token_id.as_str());
    if !itself {
        caller.require_owners_rights("revoke other tokens")?;
    }
    tokens::revoke(&call.state.store, &caller.user.id, token_id).await?;
    Ok(StatusCode::NO_CONTENT)
}
