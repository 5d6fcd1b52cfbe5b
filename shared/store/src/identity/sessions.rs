//! Browser sessions: the `berth_session` cookie.

use serde::{Deserialize, Serialize};

use crate as store;
use crate::StoreError;
use crate::{Store, keys};
use berth_domain::credentials;

pub const COOKIE: &str = "berth_session";

/// What the process's settings say of sessions (`berth_api::config::Config::sessions`).
#[derive(Debug, Clone, Copy)]
pub struct SessionSettings {
    /// How long a session lasts from sign-in, whatever its use.
    pub lifetime: std::time::Duration,
    /// Whether the cookie carries `Secure` (off only for plain-http local runs).
    pub secure_cookies: bool,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct SessionItem {
    pub pk: String,
    pub sk: String,
    /// The profile's `session_epoch` when the session was made.
    pub epoch: u64,
    pub created_at: i64,
    pub expires_at: i64,
    pub ttl: i64,
}

/// A new session: the `Set-Cookie` value that hands its secret to the browser, once.
pub struct NewSession {
    pub set_cookie: String,
}

pub async fn create(
    store: &Store,
    settings: SessionSettings,
    user_id: &str,
    epoch: u64,
) -> Result<NewSession, StoreError> {
    let secret = credentials::new_session_secret(user_id);
    let now = berth_domain::clock::unix_seconds();
    let lifetime = i64::try_from(settings.lifetime.as_secs()).unwrap_or(i64::MAX);
    let expires_at = now.saturating_add(lifetime);
    let item = SessionItem {
        pk: keys::user(user_id),
        sk: keys::session_sk(&credentials::digest(&secret)),
        epoch,
        created_at: now,
        expires_at,
        ttl: expires_at,
    };
    store.put_new(store::to_item(&item)?).await?;
    let set_cookie = cookie(settings, &secret, lifetime);
    Ok(NewSession { set_cookie })
}

pub async fn delete(store: &Store, user_id: &str, digest: &str) -> Result<(), StoreError> {
    store
        .delete(store::key(keys::user(user_id), &keys::session_sk(digest)))
        .await
}

fn cookie(settings: SessionSettings, value: &str, max_age: i64) -> String {
    let secure = if settings.secure_cookies {
        "; Secure"
    } else {
        ""
    };
    format!("{COOKIE}={value}; HttpOnly; SameSite=Lax; Path=/; Max-Age={max_age}{secure}")
}

/// The `Set-Cookie` value that removes the session cookie.
pub fn clearing_cookie(settings: SessionSettings) -> String {
    cookie(settings, "", 0)
}

/// The session secret in a `Cookie` header, if any.
pub fn from_cookie_header(header: &str) -> Option<&str> {
    header
        .split(';')
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_session_cookie_among_others() {
        assert_eq!(
            from_cookie_header("a=1; berth_session=xyz; b=2"),
            Some("xyz")
        );
        assert_eq!(from_cookie_header("berth_session=xyz"), Some("xyz"));
        assert_eq!(from_cookie_header("other=1"), None);
        assert_eq!(from_cookie_header("xberth_session=1"), None);
    }

    #[test]
    fn cookies_have_the_design_attributes() {
        let mut settings = SessionSettings {
            lifetime: std::time::Duration::from_secs(60),
            secure_cookies: true,
        };
        assert_eq!(
            cookie(settings, "v", 60),
            "berth_session=v; HttpOnly; SameSite=Lax; Path=/; Max-Age=60; Secure"
        );
        settings.secure_cookies = false;
        assert_eq!(
            clearing_cookie(settings),
            "berth_session=; HttpOnly; SameSite=Lax; Path=/; Max-Age=0"
        );
    }
}
