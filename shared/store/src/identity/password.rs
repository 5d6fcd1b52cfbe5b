//! Argon2id password hashing. Hashing and verifying take tens of
//! milliseconds of CPU, so they run on the blocking pool, off the async runtime.

use std::cell::Cell;

use argon2::password_hash::phc::PasswordHash;
use argon2::password_hash::{PasswordHasher, PasswordVerifier};
use argon2::{Algorithm, Argon2, Params, Version};

use crate::StoreError;

pub const MIN_LEN: usize = 12;
pub const MAX_LEN: usize = 256;

fn hasher() -> Result<Argon2<'static>, StoreError> {
    let params = Params::new(19_456, 2, 1, None)
        .map_err(|e| StoreError::Broken(format!("argon2 parameters: {e}")))?;
    Ok(Argon2::new(Algorithm::Argon2id, Version::V0x13, params))
}

/// Checks the length rule; `field` names the body field in the error.
pub fn check_policy(field: &str, password: &str) -> Result<(), StoreError> {
    let len = password.chars().count();
    if (MIN_LEN..=MAX_LEN).contains(&len) {
        Ok(())
    } else {
        Err(StoreError::Invalid(format!(
            "{field}: must be {MIN_LEN} to {MAX_LEN} characters"
        )))
    }
}

fn hash_blocking(password: &str) -> Result<String, StoreError> {
    let hash: PasswordHash = hasher()?
        .hash_password(password.as_bytes())
        .map_err(|e| StoreError::Broken(format!("hashing a password: {e}")))?;
    Ok(hash.to_string())
}

fn verify_blocking(password: &str, stored_hash: &str) -> bool {
    let Ok(parsed) = PasswordHash::new(stored_hash) else {
        return false;
    };
    hasher().is_ok_and(|argon| argon.verify_password(password.as_bytes(), &parsed).is_ok())
}

/// A hash of a password nobody knows (40 random characters, thrown away),
/// made once with the parameters of [`hasher`]: verifying against it costs
/// what a real verification costs, so an unknown email answers in the same
/// time. It is compiled in rather than hashed at start, which would add an
/// Argon2 hash (~30 ms, some 18 times a bare Lambda's start) to every cold
/// start of the auth function. A unit test keeps its parameters equal to
/// [`hasher`]'s.
const DECOY_HASH: &str = "$argon2id$v=19$m=19456,t=2,p=1$8E7wzPRf1tQ6a+C6/5OhGw$annX8mvf3QoAA7lfMS25DMi+w/dosSPxL5SAp2DOHV4";

pub async fn hash(password: String) -> Result<String, StoreError> {
    tokio::task::spawn_blocking(move || hash_blocking(&password))
        .await
        .map_err(|e| StoreError::Broken(format!("password hashing task: {e}")))?
}

thread_local! {
    static VERIFICATIONS: Cell<u64> = const { Cell::new(0) };
}

/// How many passwords were verified from this thread. Lets a test prove what
/// the login throttle promises — at most its limit of guesses is ever checked
/// — by counting the checks themselves. Per thread, because tests run side by
/// side in one process, each on its own single-threaded runtime.
pub fn verifications_on_this_thread() -> u64 {
    VERIFICATIONS.with(Cell::get)
}

/// Verifies `password` against `stored_hash`, or against the decoy when there
/// is no account, taking the same time either way.
pub async fn verify(password: String, stored_hash: Option<String>) -> Result<bool, StoreError> {
    VERIFICATIONS.with(|count| count.set(count.get() + 1));
    tokio::task::spawn_blocking(move || match stored_hash {
        Some(hash) => verify_blocking(&password, &hash),
        None => {
            verify_blocking(&password, DECOY_HASH);
            false
        }
    })
    .await
    .map_err(|e| StoreError::Broken(format!("password verification task: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn hashes_with_argon2id_and_verifies() {
        let hash = hash("correct horse battery".into()).await.unwrap();
        assert!(
            hash.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"),
            "{hash}"
        );
        assert!(
            verify("correct horse battery".into(), Some(hash.clone()))
                .await
                .unwrap()
        );
        assert!(
            !verify("wrong horse battery".into(), Some(hash))
                .await
                .unwrap()
        );
        assert!(!verify("anything at all".into(), None).await.unwrap());
        assert!(!verify("x".into(), Some("not a hash".into())).await.unwrap());
    }

    #[test]
    fn the_decoy_costs_what_a_real_hash_costs() {
        let decoy = PasswordHash::new(DECOY_HASH).unwrap();
        let real = hash_blocking("correct horse battery").unwrap();
        let real = PasswordHash::new(&real).unwrap();
        assert_eq!(decoy.algorithm, real.algorithm);
        assert_eq!(decoy.version, real.version);
        assert_eq!(decoy.params, real.params);
        assert_eq!(
            decoy.salt.map(|salt| salt.len()),
            real.salt.map(|salt| salt.len())
        );
        assert_eq!(
            decoy.hash.map(|output| output.len()),
            real.hash.map(|output| output.len())
        );
    }

    #[test]
    fn enforces_length() {
        assert!(check_policy("password", &"a".repeat(11)).is_err());
        assert!(check_policy("password", &"a".repeat(12)).is_ok());
        assert!(check_policy("password", &"é".repeat(256)).is_ok());
        assert!(check_policy("password", &"a".repeat(257)).is_err());
    }
}
