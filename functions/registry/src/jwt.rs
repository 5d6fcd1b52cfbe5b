//! The registry's bearer token: a JWT (compact JWS) as CNCF Distribution
//! v2.8.2 reads it (registry/auth/token/token.go; docs/spec/auth/jwt.md):
//!
//! - header `{"typ": "JWT", "alg": "ES256", "kid": <libtrust key id>}`:
//!   the registry finds the key by `kid` among its `rootcertbundle`'s;
//! - claims `iss` (must be its `issuer`: `BERTH_PUBLIC_URL`), `sub` (the
//!   credential's user name, which the registry logs), `aud` (must be its
//!   `service`: the registry's host) **as a string** (2.8's `ClaimSet`
//!   has `Audience string`: an array is a malformed token there), `exp`,
//!   `nbf`, `iat` (it allows 60 s of clock skew on `exp` and `nbf`),
//!   `jti` (unique), and `access` (what the token may do, [`ResourceActions`]).
//!
//! The signature is the signer's (`signing`); this module only encodes.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Serialize;

use crate::scope::ResourceActions;
use crate::signing::{Signer, SigningError};

/// How long a token works: the registry checks it at every request of a
/// pull or push, so a long image pull needs it to last; and a credential
/// revoked (a build ended) leaves at most this long to tokens issued
/// before (docs/api-notes.md, "Registry tokens").
pub const TOKEN_LIFETIME_SECONDS: i64 = 300;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Claims {
    pub iss: String,
    pub sub: String,
    pub aud: String,
    pub exp: i64,
    pub nbf: i64,
    pub iat: i64,
    pub jti: String,
    pub access: Vec<ResourceActions>,
}

impl Claims {
    /// Claims issued at `now` (Unix seconds) for `lifetime` seconds.
    pub fn new(
        issuer: &str,
        subject: &str,
        audience: &str,
        now: i64,
        access: Vec<ResourceActions>,
    ) -> Self {
        Self {
            iss: issuer.to_owned(),
            sub: subject.to_owned(),
            aud: audience.to_owned(),
            exp: now + TOKEN_LIFETIME_SECONDS,
            nbf: now,
            iat: now,
            jti: uuid::Uuid::new_v4().simple().to_string(),
            access,
        }
    }
}

#[derive(Serialize)]
struct Header<'a> {
    typ: &'static str,
    alg: &'static str,
    kid: &'a str,
}

/// The signed token: `base64url(header).base64url(claims).base64url(r||s)`.
pub async fn sign(signer: &Signer, claims: &Claims) -> Result<String, SigningError> {
    let header = Header {
        typ: "JWT",
        alg: "ES256",
        kid: signer.key_id(),
    };
    let signing_input = format!("{}.{}", encoded(&header), encoded(claims));
    let signature = signer.sign(signing_input.as_bytes()).await?;
    Ok(format!(
        "{signing_input}.{}",
        URL_SAFE_NO_PAD.encode(signature)
    ))
}

/// A part of the token: its JSON, base64url without padding. The parts are
/// plain structs of strings and numbers, whose serialization cannot fail.
fn encoded(value: &impl Serialize) -> String {
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(value).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signing::tests::SEC1_KEY;
    use p256::ecdsa::signature::Verifier;
    use p256::pkcs8::DecodePublicKey;

    fn part(token: &str, index: usize) -> serde_json::Value {
        let bytes = URL_SAFE_NO_PAD
            .decode(token.split('.').nth(index).unwrap())
            .unwrap();
        serde_json::from_slice(&bytes).unwrap()
    }

    #[tokio::test]
    async fn a_token_is_what_distribution_2_8_verifies() {
        let signer = Signer::from_pem(SEC1_KEY).unwrap();
        let access = vec![ResourceActions {
            resource_type: "repository".into(),
            name: "berth/acme/shop/web".into(),
            actions: vec!["pull".into(), "push".into()],
        }];
        let claims = Claims::new(
            "https://api.example.com",
            "build/shop-prod.web.3/push",
            "registry.example.com",
            1_800_000_000,
            access,
        );
        let token = sign(&signer, &claims).await.unwrap();
        assert_eq!(token.split('.').count(), 3);
        let header = part(&token, 0);
        assert_eq!(header["typ"], "JWT");
        assert_eq!(header["alg"], "ES256");
        assert_eq!(header["kid"], signer.key_id());
        let claims = part(&token, 1);
        assert_eq!(claims["iss"], "https://api.example.com");
        assert_eq!(claims["sub"], "build/shop-prod.web.3/push");
        // A string, not an array: 2.8 reads `aud` as one.
        assert_eq!(claims["aud"], "registry.example.com");
        assert_eq!(claims["iat"], 1_800_000_000);
        assert_eq!(claims["nbf"], 1_800_000_000);
        assert_eq!(claims["exp"], 1_800_000_000 + TOKEN_LIFETIME_SECONDS);
        assert_eq!(claims["jti"].as_str().unwrap().len(), 32);
        assert_eq!(
            claims["access"],
            serde_json::json!([{"type": "repository", "name": "berth/acme/shop/web",
                "actions": ["pull", "push"]}])
        );
        // The signature is r||s over the first two parts, by the key.
        let (input, signature) = token.rsplit_once('.').unwrap();
        let signature = URL_SAFE_NO_PAD.decode(signature).unwrap();
        assert_eq!(signature.len(), 64);
        let public = p256::ecdsa::VerifyingKey::from_public_key_der(signer.public_key()).unwrap();
        let signature = p256::ecdsa::Signature::from_slice(&signature).unwrap();
        assert!(public.verify(input.as_bytes(), &signature).is_ok());
    }

    #[test]
    fn every_token_has_its_own_id() {
        let a = Claims::new("i", "s", "a", 0, Vec::new());
        let b = Claims::new("i", "s", "a", 0, Vec::new());
        assert_ne!(a.jti, b.jti);
    }
}
