//! Personal API tokens: `Authorization: Bearer brt_…`. Only the
//! SHA-256 of a token is stored; the token itself is shown once, at creation.

use serde::{Deserialize, Serialize};

use crate as store;
use crate::{Store, keys};
use berth_domain::clock;
use berth_domain::credentials;
use berth_domain::ids::RecordId;
use berth_domain::scope::ScopeEntry;
use berth_domain::{ApiError, Ceiling};
use berth_records::tokens::{CreatedToken, TokenRecord};

pub const MAX_NAME_LEN: usize = 64;
pub const MAX_LIFETIME_DAYS: u32 = 365;
/// `last_used_at` is kept to this precision, so most requests write nothing.
pub const LAST_USED_PRECISION_SECS: i64 = 60;

#[derive(Debug, Serialize, Deserialize)]
pub struct TokenItem {
    pub pk: String,
    pub sk: String,
    pub id: String,
    pub name: String,
    pub prefix: String,
    pub created_at: i64,
    pub expires_at: Option<i64>,
    pub last_used_at: Option<i64>,
    /// None: the owner's rights (and every token made before ceilings).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ceiling: Option<Ceiling>,
    /// None: every project of the owner's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<Vec<ScopeEntry>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl: Option<i64>,
}

impl TokenItem {
    pub fn expired(&self, now: i64) -> bool {
        self.expires_at.is_some_and(|at| at <= now)
    }

    pub fn record(&self) -> TokenRecord {
        TokenRecord {
            id: self.id.clone(),
            name: self.name.clone(),
            prefix: self.prefix.clone(),
            created_at: clock::rfc3339(self.created_at),
            expires_at: self.expires_at.map(clock::rfc3339),
            last_used_at: self.last_used_at.map(clock::rfc3339),
            ceiling: self.ceiling,
            scope: self.scope.clone(),
        }
    }
}

pub fn validate(name: &str, expires_in_days: Option<u32>) -> Result<(), ApiError> {
    berth_domain::name_rules::text("name", name, MAX_NAME_LEN)?;
    expiry(expires_in_days, clock::unix_seconds()).map(|_| ())
}

/// When a token made `now` to live `expires_in_days` expires (none: never).
pub fn expiry(expires_in_days: Option<u32>, now: i64) -> Result<Option<i64>, ApiError> {
    if let Some(days) = expires_in_days
        && !(1..=MAX_LIFETIME_DAYS).contains(&days)
    {
        return Err(ApiError::ValidationFailed(format!(
            "expires_in_days: must be 1 to {MAX_LIFETIME_DAYS}"
        )));
    }
    Ok(expires_in_days.map(|days| now + i64::from(days) * 86_400))
}

pub async fn create(
    store: &Store,
    user_id: &str,
    name: &str,
    expires_in_days: Option<u32>,
    ceiling: Option<Ceiling>,
    scope: Option<Vec<ScopeEntry>>,
) -> Result<CreatedToken, ApiError> {
    validate(name, expires_in_days)?;
    if let Some(scope) = &scope {
        berth_domain::scope::validate(scope)?;
    }
    let token = credentials::new_api_token(user_id);
    let now = clock::unix_seconds();
    let expires_at = expiry(expires_in_days, now)?;
    let item = TokenItem {
        pk: keys::user(user_id),
        sk: keys::token_sk(&credentials::digest(&token)),
        id: credentials::new_record_id(),
        name: name.to_owned(),
        prefix: token.chars().take(8).collect(),
        created_at: now,
        expires_at,
        last_used_at: None,
        ceiling,
        scope,
        ttl: expires_at,
    };
    store.put_new(store::to_item(&item)?).await?;
    Ok(CreatedToken {
        record: item.record(),
        token,
    })
}

/// The user's live tokens, newest first.
pub async fn list(store: &Store, user_id: &str) -> Result<Vec<TokenItem>, ApiError> {
    let now = clock::unix_seconds();
    let mut tokens: Vec<TokenItem> =
        super::profile::user_items(store, user_id, keys::TOKEN_SK_PREFIX)
            .await?
            .into_iter()
            .map(store::from_item::<TokenItem>)
            .filter(|token| token.as_ref().map_or(true, |t| !t.expired(now)))
            .collect::<Result<_, _>>()?;
    tokens.sort_by(|a, b| {
        b.created_at
            .cmp(&a.created_at)
            .then_with(|| a.id.cmp(&b.id))
    });
    Ok(tokens)
}

/// Revokes one of the user's tokens; someone else's token id is not found.
pub async fn revoke(store: &Store, user_id: &str, token_id: &RecordId) -> Result<(), ApiError> {
    let missing = || {
        ApiError::NotFound(berth_domain::Missing::Token {
            token: token_id.clone(),
        })
    };
    let token = list(store, user_id)
        .await?
        .into_iter()
        .find(|token| token.id == token_id.as_str())
        .ok_or_else(missing)?;
    let deleted = store
        .client()
        .delete_item()
        .table_name(store.table())
        .set_key(Some(store::key(token.pk, &token.sk)))
        .condition_expression("attribute_exists(pk)")
        .send()
        .await;
    match deleted {
        Ok(_) => Ok(()),
        Err(e) if store::is_condition_failure(&e) => Err(missing()),
        Err(e) => Err(e.into()),
    }
}

/// Records a use of the token whose item is at `key` (a personal or a
/// deploy token's), at most once per [`LAST_USED_PRECISION_SECS`].
pub async fn touch(store: &Store, key: store::Item, last_used_at: Option<i64>) {
    let now = clock::unix_seconds();
    if last_used_at.is_some_and(|at| now - at < LAST_USED_PRECISION_SECS) {
        return;
    }
    let result = store
        .client()
        .update_item()
        .table_name(store.table())
        .set_key(Some(key))
        .update_expression("SET last_used_at = :now")
        .condition_expression("attribute_exists(pk)")
        .expression_attribute_values(":now", store::n(now))
        .send()
        .await;
    if let Err(e) = result
        && !store::is_condition_failure(&e)
    {
        tracing::warn!(error = %aws_sdk_dynamodb::error::DisplayErrorContext(&e), "recording token use failed");
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn validates_name_and_lifetime() {
        assert!(super::validate("ci", None).is_ok());
        assert!(super::validate("ci", Some(365)).is_ok());
        assert!(super::validate("", None).is_err());
        assert!(super::validate("   ", None).is_err());
        assert!(super::validate(&"x".repeat(65), None).is_err());
        assert!(super::validate("ci", Some(0)).is_err());
        assert!(super::validate("ci", Some(366)).is_err());
    }
}
