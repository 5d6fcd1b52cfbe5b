//! Personal API tokens: `Authorization: Bearer brt_…`. Only the
//! SHA-256 of a token is stored; the token itself is shown once, at creation.

use serde::{Deserialize, Serialize};

use crate as store;
use crate::StoreError;
use crate::{Store, keys};
use berth_domain::Ceiling;
use berth_domain::clock;
use berth_domain::credentials;
use berth_domain::ids::RecordId;
use berth_domain::scope::ScopeEntry;
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
    /// The limited token that made it (none: a session or an unlimited
    /// token did): it goes when that one is revoked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub made_by: Option<String>,
    /// Since when its scope reaches projects (Unix seconds): its maker's,
    /// for a token a limited token made; none, since it was made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope_since: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl: Option<i64>,
}

/// The limited token (a ceiling, or a scope) a new token is made with: the
/// new one expires no later than it, keeps its scope's start, and is
/// revoked with it, so that a stolen limited token cannot outlive its
/// revocation through one it made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Maker<'a> {
    pub id: &'a str,
    pub expires_at: Option<i64>,
    /// Its scope's start, if it has a scope.
    pub scope_since: Option<i64>,
}

impl TokenItem {
    pub fn expired(&self, now: i64) -> bool {
        self.expires_at.is_some_and(|at| at <= now)
    }

    /// Since when its scope reaches projects (Unix seconds).
    pub fn scope_since(&self) -> i64 {
        self.scope_since.unwrap_or(self.created_at)
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
            made_by: self.made_by.clone(),
        }
    }
}

pub fn validate(name: &str, expires_in_days: Option<u32>) -> Result<(), StoreError> {
    berth_domain::name_rules::text("name", name, MAX_NAME_LEN)?;
    expiry(expires_in_days, clock::unix_seconds()).map(|_| ())
}

/// When a token made `now` to live `expires_in_days` expires (none: never).
pub fn expiry(expires_in_days: Option<u32>, now: i64) -> Result<Option<i64>, StoreError> {
    if let Some(days) = expires_in_days
        && !(1..=MAX_LIFETIME_DAYS).contains(&days)
    {
        return Err(StoreError::Invalid(format!(
            "expires_in_days: must be 1 to {MAX_LIFETIME_DAYS}"
        )));
    }
    Ok(expires_in_days.map(|days| now + i64::from(days) * 86_400))
}

/// What a new token is: its name, lifetime and limits.
pub struct NewToken<'a> {
    pub name: &'a str,
    pub expires_in_days: Option<u32>,
    pub ceiling: Option<Ceiling>,
    pub scope: Option<Vec<ScopeEntry>>,
    /// The limited token it is made with, if it is.
    pub maker: Option<Maker<'a>>,
}

impl<'a> NewToken<'a> {
    /// A token with its owner's rights, which never expires.
    pub fn unlimited(name: &'a str) -> Self {
        Self {
            name,
            expires_in_days: None,
            ceiling: None,
            scope: None,
            maker: None,
        }
    }
}

pub async fn create(
    store: &Store,
    user_id: &str,
    new: NewToken<'_>,
) -> Result<CreatedToken, StoreError> {
    let NewToken {
        name,
        expires_in_days,
        ceiling,
        scope,
        maker,
    } = new;
    validate(name, expires_in_days)?;
    if let Some(scope) = &scope {
        berth_domain::scope::validate(scope)?;
    }
    let token = credentials::new_api_token(user_id);
    let now = clock::unix_seconds();
    // No later than its maker's end: an omitted expiry takes it.
    let expires_at = match (
        expiry(expires_in_days, now)?,
        maker.and_then(|m| m.expires_at),
    ) {
        (Some(asked), Some(maker)) => Some(asked.min(maker)),
        (asked, maker) => asked.or(maker),
    };
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
        made_by: maker.map(|maker| maker.id.to_owned()),
        scope_since: maker.and_then(|maker| maker.scope_since),
        ttl: expires_at,
    };
    store.put_new(store::to_item(&item)?).await?;
    Ok(CreatedToken {
        record: item.record(),
        token,
    })
}

/// The user's live tokens, newest first.
pub async fn list(store: &Store, user_id: &str) -> Result<Vec<TokenItem>, StoreError> {
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

/// Revokes one of the user's tokens, and the tokens it made (and they
/// made); someone else's token id is not found. The tokens it made go
/// first: a failure leaves it alive, to be revoked again, never a token
/// it made alive without it.
pub async fn revoke(store: &Store, user_id: &str, token_id: &RecordId) -> Result<(), StoreError> {
    let missing = || {
        StoreError::Missing(berth_domain::Missing::Token {
            token: token_id.clone(),
        })
    };
    let tokens = list(store, user_id).await?;
    let token = tokens
        .iter()
        .find(|token| token.id == token_id.as_str())
        .ok_or_else(missing)?;
    for made in made_by(&tokens, &token.id) {
        store
            .client()
            .delete_item()
            .table_name(store.table())
            .set_key(Some(store::key(made.pk.clone(), &made.sk)))
            .send()
            .await?;
    }
    let deleted = store
        .client()
        .delete_item()
        .table_name(store.table())
        .set_key(Some(store::key(token.pk.clone(), &token.sk)))
        .condition_expression("attribute_exists(pk)")
        .send()
        .await;
    match deleted {
        Ok(_) => Ok(()),
        Err(e) if store::is_condition_failure(&e) => Err(missing()),
        Err(e) => Err(e.into()),
    }
}

/// The tokens `maker` made, and those they made, in any order.
fn made_by<'a>(tokens: &'a [TokenItem], maker: &str) -> Vec<&'a TokenItem> {
    let mut makers = vec![maker];
    let mut made: Vec<&TokenItem> = Vec::new();
    while let Some(maker) = makers.pop() {
        for token in tokens {
            if token.made_by.as_deref() == Some(maker) && !made.iter().any(|m| m.id == token.id) {
                made.push(token);
                makers.push(&token.id);
            }
        }
    }
    made
}

/// Records a use of the token whose item is at `key` (a personal or a
/// deploy token's), at most once per [`LAST_USED_PRECISION_SECS`].
pub(crate) async fn touch(store: &Store, key: store::Item, last_used_at: Option<i64>) {
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
