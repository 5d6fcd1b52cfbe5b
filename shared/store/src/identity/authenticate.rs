//! Turns a request's credentials into an [`Authentication`]: one consistent
//! `BatchGetItem` reads the user's profile and the credential together, so a
//! revoked token, a removed member or a signed-out session fails on the very
//! next request.

use std::sync::Arc;

use http::{HeaderMap, header};

use super::profile::ProfileItem;
use super::sessions::{self, SessionItem};
use super::tokens::{self, TokenItem};
use super::{Authentication, Credential, Principal, TokenScope};
use crate as store;
use crate::StoreError;
use crate::{Item, Store, keys};
use berth_domain::clock;
use berth_domain::credentials;

/// A credential found in the request headers.
enum Presented<'a> {
    Token(&'a str),
    Session(&'a str),
}

fn presented(headers: &HeaderMap) -> Result<Option<Presented<'_>>, ()> {
    if let Some(value) = headers.get(header::AUTHORIZATION) {
        let value = value.to_str().map_err(|_| ())?;
        return match value.split_once(' ') {
            Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") => {
                Ok(Some(Presented::Token(token.trim())))
            }
            _ => Err(()),
        };
    }
    Ok(headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .find_map(sessions::from_cookie_header)
        .map(Presented::Session))
}

pub async fn authenticate(store: &Store, headers: &HeaderMap) -> Authentication {
    let presented = match presented(headers) {
        Ok(None) => return Authentication::Anonymous,
        Ok(Some(presented)) => presented,
        Err(()) => return Authentication::Rejected,
    };
    match resolve(store, presented).await {
        Ok(Some(principal)) => Authentication::Authenticated(Arc::new(principal)),
        Ok(None) => Authentication::Rejected,
        Err(error) => {
            tracing::warn!(error = %error, "authentication could not reach the store");
            Authentication::Unavailable
        }
    }
}

async fn resolve(store: &Store, presented: Presented<'_>) -> Result<Option<Principal>, StoreError> {
    let (user_id, secret, credential_sk) = match presented {
        Presented::Token(token) if token.starts_with(credentials::DEPLOY_TOKEN_PREFIX) => {
            return super::deploy_tokens::resolve(store, token).await;
        }
        Presented::Token(token) => match credentials::user_of_api_token(token) {
            Some(user) => (user, token, keys::token_sk(&credentials::digest(token))),
            None => return Ok(None),
        },
        Presented::Session(secret) => match credentials::user_of_session_secret(secret) {
            Some(user) => (user, secret, keys::session_sk(&credentials::digest(secret))),
            None => return Ok(None),
        },
    };
    let Some((profile, credential)) = read_pair(store, user_id, &credential_sk).await? else {
        return Ok(None);
    };
    let profile: ProfileItem = store::from_item(profile)?;
    if !profile.active {
        return Ok(None);
    }
    let now = clock::unix_seconds();
    let digest = credentials::digest(secret);
    let (mut ceiling, mut scope) = (None, None);
    let credential = if credential_sk.starts_with(keys::TOKEN_SK_PREFIX) {
        let token: TokenItem = store::from_item(credential)?;
        // The item was read by the digest's key, so it is the presented
        // token's: only its expiry is left to check.
        if token.expired(now) {
            return Ok(None);
        }
        let key = store::key(keys::user(user_id), &credential_sk);
        tokens::touch(store, key, token.last_used_at).await;
        ceiling = token.ceiling;
        let since = token.scope_since();
        scope = token.scope.map(|entries| TokenScope { entries, since });
        Credential::Token {
            id: token.id,
            expires_at: token.expires_at,
        }
    } else {
        let session: SessionItem = store::from_item(credential)?;
        if session.expires_at <= now || session.epoch != profile.session_epoch {
            return Ok(None);
        }
        Credential::Session { digest }
    };
    Ok(Some(Principal {
        user: profile.user(),
        credential,
        ceiling,
        scope,
        project_role: None,
    }))
}

/// Reads a user's profile and one of its credentials in one round trip.
async fn read_pair(
    store: &Store,
    user_id: &str,
    credential_sk: &str,
) -> Result<Option<(Item, Item)>, StoreError> {
    let mut found = store
        .get_many(vec![
            store::key(keys::user(user_id), keys::PROFILE_SK),
            store::key(keys::user(user_id), credential_sk),
        ])
        .await?;
    let is_profile = |item: &Item| store::sort_key(item) == keys::PROFILE_SK;
    let profile = found
        .iter()
        .position(is_profile)
        .map(|at| found.swap_remove(at));
    Ok(match (profile, found.pop()) {
        (Some(profile), Some(credential)) => Some((profile, credential)),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(name.clone(), HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn finds_bearer_tokens_and_session_cookies() {
        assert!(matches!(presented(&headers(&[])), Ok(None)));
        assert!(matches!(
            presented(&headers(&[(header::AUTHORIZATION, "Bearer brt_x")])),
            Ok(Some(Presented::Token("brt_x")))
        ));
        assert!(matches!(
            presented(&headers(&[(header::COOKIE, "a=b; berth_session=s")])),
            Ok(Some(Presented::Session("s")))
        ));
        assert!(presented(&headers(&[(header::AUTHORIZATION, "Basic abc")])).is_err());
    }
}
