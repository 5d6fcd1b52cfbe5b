//! A delivery as GitHub or GitLab sends it: which of the two, its event and
//! id, and whether it carries the hook's secret. The one check of a
//! delivery's authenticity; it takes the same time whether the hook exists
//! or not (the caller passes [`DUMMY_SECRET`] for an unknown hook).

use axum::http::HeaderMap;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

pub const GITHUB_SIGNATURE: &str = "x-hub-signature-256";
pub const GITHUB_EVENT: &str = "x-github-event";
pub const GITHUB_DELIVERY: &str = "x-github-delivery";
pub const GITLAB_TOKEN: &str = "x-gitlab-token";
pub const GITLAB_EVENT: &str = "x-gitlab-event";
pub const GITLAB_DELIVERY: &str = "x-gitlab-event-uuid";

/// What an unknown hook's delivery is checked against, so that it costs
/// what a known hook's does. No hook has it: hooks' secrets are 40
/// characters of [`berth_domain::credentials::new_generated_secret`].
pub const DUMMY_SECRET: &str = "unknown-hook-unknown-hook-unknown-hook-xx";

/// The longest event name and delivery id kept (GitHub's are a word and a
/// GUID, GitLab's a few words and a UUID): anything longer is cut, so the
/// stored delivery key and the audit event stay bounded.
pub const MAX_HEADER_CHARS: usize = 100;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    GitHub,
    GitLab,
}

impl Provider {
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::GitHub => "github",
            Provider::GitLab => "gitlab",
        }
    }
}

/// The headers of a delivery that say who sent it and what it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    pub provider: Provider,
    /// `push`, `ping` (GitHub); `Push Hook`, `Tag Push Hook` (GitLab).
    pub event: String,
    /// `X-GitHub-Delivery` / `X-Gitlab-Event-UUID`, if sent.
    pub id: Option<String>,
    /// The credential: GitHub's `sha256=<hex>` or GitLab's token.
    credential: String,
}

impl Delivery {
    /// The delivery the headers describe: GitHub's when they carry its
    /// signature, else GitLab's when they carry its token; `None` when they
    /// carry neither (refused like a wrong signature).
    pub fn from_headers(headers: &HeaderMap) -> Option<Delivery> {
        let text = |name: &str| {
            headers
                .get(name)
                .and_then(|value| value.to_str().ok())
                .map(|value| {
                    value
                        .trim()
                        .chars()
                        .take(MAX_HEADER_CHARS)
                        .collect::<String>()
                })
        };
        let (provider, credential, event, id) =
            if let Some(signature) = headers.get(GITHUB_SIGNATURE).and_then(|v| v.to_str().ok()) {
                (
                    Provider::GitHub,
                    signature.trim().to_owned(),
                    text(GITHUB_EVENT),
                    text(GITHUB_DELIVERY),
                )
            } else {
                let token = headers.get(GITLAB_TOKEN).and_then(|v| v.to_str().ok())?;
                (
                    Provider::GitLab,
                    token.to_owned(),
                    text(GITLAB_EVENT),
                    text(GITLAB_DELIVERY),
                )
            };
        Some(Delivery {
            provider,
            event: event.unwrap_or_default(),
            id: id.filter(|id| !id.is_empty()),
            credential,
        })
    }

    /// Whether the delivery carries `secret`: GitHub's HMAC-SHA256 of the
    /// raw body under it, or GitLab's token equal to it; compared in
    /// constant time either way.
    pub fn is_signed_by(&self, secret: &str, body: &[u8]) -> bool {
        match self.provider {
            Provider::GitHub => {
                let expected = format!("sha256={}", github_signature(secret, body));
                let given = self.credential.to_ascii_lowercase();
                expected.as_bytes().ct_eq(given.as_bytes()).into()
            }
            Provider::GitLab => {
                // Hash both sides first: the comparison then takes the same
                // time whatever the token's length.
                let expected = sha256(secret.as_bytes());
                let given = sha256(self.credential.as_bytes());
                expected.ct_eq(&given).into()
            }
        }
    }
}

/// Hex HMAC-SHA256 of `body` under `secret`: what GitHub sends after
/// `sha256=` in `X-Hub-Signature-256`.
pub fn github_signature(secret: &str, body: &[u8]) -> String {
    // An HMAC takes a key of any length: `new_from_slice` cannot fail.
    let mut mac = match Hmac::<Sha256>::new_from_slice(secret.as_bytes()) {
        Ok(mac) => mac,
        Err(_) => return String::new(),
    };
    mac.update(body);
    hex::encode(mac.finalize().into_bytes())
}

fn sha256(bytes: &[u8]) -> [u8; 32] {
    use sha2::Digest;
    Sha256::digest(bytes).into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_str(value).expect("header value"));
        }
        map
    }

    #[test]
    fn github_signature_matches_githubs_documented_example() {
        // docs.github.com, "Validating webhook deliveries": secret
        // "It's a Secret to Everybody", payload "Hello, World!".
        assert_eq!(
            github_signature("It's a Secret to Everybody", b"Hello, World!"),
            "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
        );
    }

    #[test]
    fn a_github_delivery_is_accepted_only_with_the_right_signature() {
        let body = br#"{"ref":"refs/heads/main"}"#;
        let good = format!("sha256={}", github_signature("s3cret", body));
        let delivery = Delivery::from_headers(&headers(&[
            (GITHUB_SIGNATURE, &good),
            (GITHUB_EVENT, "push"),
            (GITHUB_DELIVERY, "72d3162e-cc78-11e3-81ab-4c9367dc0958"),
        ]))
        .expect("a GitHub delivery");
        assert_eq!(delivery.provider, Provider::GitHub);
        assert_eq!(delivery.event, "push");
        assert_eq!(
            delivery.id.as_deref(),
            Some("72d3162e-cc78-11e3-81ab-4c9367dc0958")
        );
        assert!(delivery.is_signed_by("s3cret", body));
        assert!(!delivery.is_signed_by("other", body));
        assert!(!delivery.is_signed_by("s3cret", b"{}"));
        assert!(!delivery.is_signed_by(DUMMY_SECRET, body));
        // Upper-case hex is the same signature.
        let upper = Delivery::from_headers(&headers(&[(
            GITHUB_SIGNATURE,
            &format!("sha256={}", github_signature("s3cret", body).to_uppercase()),
        )]))
        .expect("a GitHub delivery");
        assert!(upper.is_signed_by("s3cret", body));
        for bad in [
            "",
            "sha256=",
            "sha1=abc",
            &good[..good.len() - 1],
            &format!("{good}0"),
        ] {
            let delivery =
                Delivery::from_headers(&headers(&[(GITHUB_SIGNATURE, bad)])).expect("GitHub");
            assert!(!delivery.is_signed_by("s3cret", body), "{bad:?}");
        }
    }

    #[test]
    fn a_gitlab_delivery_is_accepted_only_with_the_right_token() {
        let delivery = Delivery::from_headers(&headers(&[
            (GITLAB_TOKEN, "s3cret"),
            (GITLAB_EVENT, "Push Hook"),
            (GITLAB_DELIVERY, "13792a34-cac6-4fda-95a8-c58e00a3954e"),
        ]))
        .expect("a GitLab delivery");
        assert_eq!(delivery.provider, Provider::GitLab);
        assert_eq!(delivery.event, "Push Hook");
        assert!(delivery.is_signed_by("s3cret", b"anything"));
        for wrong in ["s3cre", "s3cret ", "S3CRET", ""] {
            assert!(!delivery.is_signed_by(wrong, b"anything"), "{wrong:?}");
        }
    }

    #[test]
    fn a_delivery_without_either_credential_is_none() {
        assert_eq!(
            Delivery::from_headers(&headers(&[(GITHUB_EVENT, "push")])),
            None
        );
        assert_eq!(Delivery::from_headers(&HeaderMap::new()), None);
    }

    #[test]
    fn long_event_names_and_ids_are_cut() {
        let long = "x".repeat(500);
        let delivery = Delivery::from_headers(&headers(&[
            (GITLAB_TOKEN, "t"),
            (GITLAB_EVENT, &long),
            (GITLAB_DELIVERY, &long),
        ]))
        .expect("GitLab");
        assert_eq!(delivery.event.len(), MAX_HEADER_CHARS);
        assert_eq!(delivery.id.map(|id| id.len()), Some(MAX_HEADER_CHARS));
    }
}
