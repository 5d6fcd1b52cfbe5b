//! Random identifiers and bearer secrets, and how they are hashed for storage.
//!
//! A credential carries the id of the user it belongs to, so that authenticating
//! a request reads the user's profile and the credential in one round trip; only
//! the SHA-256 of the whole credential is stored, so the embedded id reveals
//! nothing that could be used without the secret part.

use rand::Rng;
use rand::distr::Alphanumeric;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

pub const USER_ID_LEN: usize = 16;
pub const TOKEN_PREFIX: &str = "brt_";
const TOKEN_SECRET_LEN: usize = 40 - USER_ID_LEN;
const SESSION_SECRET_LEN: usize = 32;

fn random_from(alphabet: &[u8], len: usize) -> String {
    let mut rng = rand::rng();
    (0..len)
        .map(|_| char::from(alphabet[rng.random_range(0..alphabet.len())]))
        .collect()
}

fn random_base62(len: usize) -> String {
    rand::rng()
        .sample_iter(&Alphanumeric)
        .take(len)
        .map(char::from)
        .collect()
}

/// A user id: 16 lowercase letters and digits (about 82 bits).
pub fn new_user_id() -> String {
    random_from(b"abcdefghijklmnopqrstuvwxyz0123456789", USER_ID_LEN)
}

/// A value for a secret generated for a template (a database password):
/// 40 letters and digits straight from the operating system's CSPRNG.
pub fn new_generated_secret() -> String {
    use rand::TryRngCore;
    rand::rngs::OsRng
        .unwrap_err()
        .sample_iter(Alphanumeric)
        .take(40)
        .map(char::from)
        .collect()
}

/// A short random id for records such as tokens.
pub fn new_record_id() -> String {
    random_from(b"abcdefghijklmnopqrstuvwxyz0123456789", RECORD_ID_LEN)
}

pub const RECORD_ID_LEN: usize = 12;

/// A temporary password: 20 base62 characters (about 119 bits).
pub fn new_temporary_password() -> String {
    random_base62(20)
}

/// A personal API token: `brt_` + 40 base62 characters (24 secret, then the user id).
pub fn new_api_token(user_id: &str) -> String {
    format!("{TOKEN_PREFIX}{}{user_id}", random_base62(TOKEN_SECRET_LEN))
}

/// A session secret: 32 base62 characters, then the user id.
pub fn new_session_secret(user_id: &str) -> String {
    format!("{}{user_id}", random_base62(SESSION_SECRET_LEN))
}

/// Whether `id` could be a user id; anything else names no account (and
/// would make an unbounded key).
/// Whether `id` has the form of [`new_record_id`]'s ids (tokens').
pub fn valid_record_id(id: &str) -> bool {
    id.len() == RECORD_ID_LEN
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

pub fn valid_user_id(id: &str) -> bool {
    id.len() == USER_ID_LEN
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

/// The user id inside a well-formed API token.
pub fn user_of_api_token(token: &str) -> Option<&str> {
    let body = token.strip_prefix(TOKEN_PREFIX)?;
    (body.len() == TOKEN_SECRET_LEN + USER_ID_LEN
        && body.bytes().all(|b| b.is_ascii_alphanumeric()))
    .then(|| &body[TOKEN_SECRET_LEN..])
    .filter(|id| valid_user_id(id))
}

/// The user id inside a well-formed session secret.
pub fn user_of_session_secret(secret: &str) -> Option<&str> {
    (secret.len() == SESSION_SECRET_LEN + USER_ID_LEN
        && secret.bytes().all(|b| b.is_ascii_alphanumeric()))
    .then(|| &secret[SESSION_SECRET_LEN..])
    .filter(|id| valid_user_id(id))
}

/// A project's deploy token: `brd_`, 32 base62 characters, `_`, then the
/// project's uid, so that authenticating reads the token's item (kept with
/// the project's other deploy tokens) in one round trip.
pub fn new_deploy_token(project_uid: &str) -> String {
    format!(
        "{DEPLOY_TOKEN_PREFIX}{}_{project_uid}",
        random_base62(DEPLOY_TOKEN_SECRET_LEN)
    )
}

pub const DEPLOY_TOKEN_PREFIX: &str = "brd_";
const DEPLOY_TOKEN_SECRET_LEN: usize = 32;
/// Kubernetes uids are UUIDs (36 characters); a uid is held to this before
/// it becomes a key.
const MAX_UID_LEN: usize = 64;

/// The project uid inside a well-formed deploy token.
pub fn project_of_deploy_token(token: &str) -> Option<&str> {
    let body = token.strip_prefix(DEPLOY_TOKEN_PREFIX)?;
    let (secret, rest) = body.split_at_checked(DEPLOY_TOKEN_SECRET_LEN)?;
    let uid = rest.strip_prefix('_')?;
    let well_formed = secret.bytes().all(|b| b.is_ascii_alphanumeric())
        && (1..=MAX_UID_LEN).contains(&uid.len())
        && uid.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
    well_formed.then_some(uid)
}

/// Hex SHA-256: what is stored instead of a bearer secret.
pub fn digest(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

/// Constant-time equality for secrets and their digests.
pub fn same_secret(a: &str, b: &str) -> bool {
    a.as_bytes().ct_eq(b.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_have_the_documented_format_and_carry_their_user() {
        let user = new_user_id();
        let token = new_api_token(&user);
        assert_eq!(token.len(), 44);
        assert!(token.starts_with("brt_"));
        assert!(token[4..].bytes().all(|b| b.is_ascii_alphanumeric()));
        assert_eq!(user_of_api_token(&token), Some(user.as_str()));
    }

    #[test]
    fn deploy_tokens_carry_their_project() {
        let uid = "0f8e2c9a-5b1d-4c3e-9a7f-2d6b8e1c4a90";
        let token = new_deploy_token(uid);
        assert!(token.starts_with("brd_"));
        assert_eq!(project_of_deploy_token(&token), Some(uid));
        assert_eq!(
            project_of_deploy_token(&format!("brd_{}_", "a".repeat(32))),
            None
        );
        assert_eq!(
            project_of_deploy_token(&format!("brd_{}_a#b", "a".repeat(32))),
            None
        );
        assert_eq!(
            project_of_deploy_token(&format!("brd_{}x{uid}", "a".repeat(32))),
            None
        );
        assert_eq!(
            project_of_deploy_token(&token.replacen("brd_", "brt_", 1)),
            None
        );
    }

    #[test]
    fn sessions_carry_their_user() {
        let user = new_user_id();
        let secret = new_session_secret(&user);
        assert_eq!(user_of_session_secret(&secret), Some(user.as_str()));
    }

    #[test]
    fn malformed_credentials_are_refused() {
        assert_eq!(user_of_api_token("brt_short"), None);
        assert_eq!(user_of_api_token(&format!("xyz_{}", "a".repeat(40))), None);
        assert_eq!(user_of_api_token(&format!("brt_{}", "A".repeat(40))), None);
        assert_eq!(user_of_api_token(&format!("brt_{}!", "a".repeat(39))), None);
        assert_eq!(user_of_session_secret("tooshort"), None);
    }

    #[test]
    fn secrets_are_random_and_digests_stable() {
        assert_ne!(new_temporary_password(), new_temporary_password());
        assert_eq!(digest("a"), digest("a"));
        assert_eq!(digest("a").len(), 64);
        assert!(same_secret("abc", "abc"));
        assert!(!same_secret("abc", "abd"));
        assert!(!same_secret("abc", "abcd"));
    }
}
