//! Requests a browser could send with the user's session cookie from another
//! site's page (cross-site request forgery). The cookie is `SameSite=Lax`,
//! which keeps it off cross-site POSTs, but a page on a sibling subdomain is
//! the same *site*: only the request itself tells it apart. A page can make
//! a browser send, without asking the API first (no CORS preflight), only a
//! "simple" request: a form's content types or none at all. So a change made
//! with the session cookie must:
//!
//! - say `Content-Type: application/json` (or another JSON type, as the
//!   bodies accept), which no page can send without a preflight that Berth
//!   never grants (`415 unsupported_media_type`), also when it has no body;
//! - come from the API's own origin when the browser names one (`Origin`,
//!   which a page cannot forge): another is `403 forbidden`.
//!
//! Reads (GET) change nothing, and API tokens are never sent by a browser on
//! its own: both pass. Checked once for every route, before its handler.

use axum::http::{HeaderMap, Method, Uri, header};

use crate::identity::{Authentication, Credential};
use crate::{ApiError, Operation};

/// Refuses a state-changing request authenticated by the session cookie that
/// a page of another origin could have made the browser send.
pub fn check(
    operation: Operation,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    authentication: Option<&Authentication>,
) -> Result<(), ApiError> {
    let by_cookie = matches!(
        authentication,
        Some(Authentication::Authenticated(principal))
            if matches!(principal.credential, Credential::Session { .. })
    );
    // A login acts with the credentials it is sent, never with a cookie it
    // happens to carry (and its JSON body needs the content type anyway).
    if !by_cookie || operation == Operation::Login || !changes_state(method) {
        return Ok(());
    }
    if !is_json(headers) {
        return Err(ApiError::UnsupportedMediaType(
            "a change made with the session cookie must be sent with Content-Type: \
             application/json, also when it has no body"
                .into(),
        ));
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let own = own_origin(uri, headers);
        let same = origin
            .to_str()
            .ok()
            .and_then(normalize)
            .is_some_and(|origin| own.as_deref() == Some(origin.as_str()));
        if !same {
            return Err(ApiError::Forbidden(
                "a change made with the session cookie must come from the API's own origin; \
                 use an API token from other origins"
                    .into(),
            ));
        }
    }
    Ok(())
}

fn changes_state(method: &Method) -> bool {
    !matches!(
        *method,
        Method::GET | Method::HEAD | Method::OPTIONS | Method::TRACE
    )
}

/// `application/json` or `application/*+json`, with any parameters: what
/// the JSON bodies of the API accept.
pub fn is_json(headers: &HeaderMap) -> bool {
    let Some(essence) = headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .map(|essence| essence.trim().to_ascii_lowercase())
    else {
        return false;
    };
    essence == "application/json"
        || essence
            .strip_prefix("application/")
            .is_some_and(|subtype| subtype.ends_with("+json"))
}

/// The origin the request was sent to: its scheme (the URI's, as Lambda
/// builds it from API Gateway's `X-Forwarded-Proto`; else that header; else
/// `http`, the local server) and its host (the URI's, else `Host`).
fn own_origin(uri: &Uri, headers: &HeaderMap) -> Option<String> {
    let forwarded = headers
        .get("x-forwarded-proto")
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(',').next())
        .map(str::trim);
    let scheme = uri.scheme_str().or(forwarded).unwrap_or("http");
    let host = match uri.authority() {
        Some(authority) => authority.as_str().to_owned(),
        None => headers.get(header::HOST)?.to_str().ok()?.to_owned(),
    };
    normalize(&format!("{scheme}://{host}"))
}

/// `scheme://host[:port]` in lowercase, without the scheme's default port;
/// `None` for anything else (`null`, a path, user information).
fn normalize(origin: &str) -> Option<String> {
    let origin = origin.trim().to_ascii_lowercase();
    let (scheme, host) = origin.split_once("://")?;
    let default_port = match scheme {
        "http" => ":80",
        "https" => ":443",
        _ => return None,
    };
    if host.is_empty() || host.contains(['/', '@', '?', '#']) {
        return None;
    }
    let host = host.strip_suffix(default_port).unwrap_or(host);
    Some(format!("{scheme}://{host}"))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use axum::http::HeaderValue;

    use super::*;
    use crate::identity::{Principal, User};
    use crate::roles::Role;

    fn caller(credential: Credential) -> Authentication {
        Authentication::Authenticated(Arc::new(Principal {
            user: User {
                id: "u".into(),
                email: "a@example.org".into(),
                display_name: None,
                org: crate::domain::names::OrgName::parse("acme").expect("an org"),
                role: Role::Owner,
                must_change_password: false,
                active: true,
                session_epoch: 0,
            },
            credential,
        }))
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    fn code(
        method: Method,
        uri: &str,
        pairs: &[(&'static str, &str)],
        credential: Credential,
    ) -> Option<&'static str> {
        check(
            Operation::RestartApp,
            &method,
            &uri.parse().unwrap(),
            &headers(pairs),
            Some(&caller(credential)),
        )
        .err()
        .map(|error| error.code())
    }

    fn session() -> Credential {
        Credential::Session { digest: "d".into() }
    }

    #[test]
    fn cookie_changes_need_json_and_the_own_origin() {
        let json = ("content-type", "application/json");
        let host = ("host", "berth.example.com");
        let local = "/api/v1/x";
        assert_eq!(
            code(Method::POST, local, &[host], session()),
            Some("unsupported_media_type")
        );
        for form in [
            "text/plain",
            "application/x-www-form-urlencoded",
            "multipart/form-data",
        ] {
            assert_eq!(
                code(
                    Method::DELETE,
                    local,
                    &[host, ("content-type", form)],
                    session()
                ),
                Some("unsupported_media_type")
            );
        }
        assert_eq!(code(Method::POST, local, &[host, json], session()), None);
        for same in ["http://berth.example.com", "HTTP://Berth.Example.com:80"] {
            assert_eq!(
                code(
                    Method::PATCH,
                    local,
                    &[host, json, ("origin", same)],
                    session()
                ),
                None
            );
        }
        for foreign in [
            "https://berth.example.com",
            "http://evil.example.com",
            "http://berth.example.com.evil.net",
            "http://berth.example.com:8080",
            "null",
            "",
        ] {
            assert_eq!(
                code(
                    Method::PUT,
                    local,
                    &[host, json, ("origin", foreign)],
                    session()
                ),
                Some("forbidden"),
                "{foreign}"
            );
        }
        // No Host at all: no origin is the API's own.
        assert_eq!(
            code(
                Method::POST,
                local,
                &[json, ("origin", "http://berth.example.com")],
                session()
            ),
            Some("forbidden")
        );
        // On Lambda the URI carries scheme and host (from API Gateway).
        let lambda = "https://api.example.com/api/v1/x";
        let origin = ("origin", "https://api.example.com");
        assert_eq!(code(Method::POST, lambda, &[json, origin], session()), None);
        assert_eq!(
            code(
                Method::POST,
                lambda,
                &[json, ("origin", "https://app.example.com")],
                session()
            ),
            Some("forbidden")
        );
        // Behind a TLS proxy, the local server learns the scheme from it.
        assert_eq!(
            code(
                Method::POST,
                local,
                &[
                    host,
                    json,
                    ("x-forwarded-proto", "https"),
                    ("origin", "https://berth.example.com:443")
                ],
                session()
            ),
            None
        );
        assert_eq!(
            code(
                Method::POST,
                local,
                &[
                    host,
                    (
                        "content-type",
                        "application/merge-patch+json; charset=utf-8"
                    )
                ],
                session()
            ),
            None
        );
    }

    #[test]
    fn reads_tokens_and_logins_pass() {
        let foreign = ("origin", "http://evil.example.com");
        assert_eq!(code(Method::GET, "/x", &[foreign], session()), None);
        assert_eq!(code(Method::HEAD, "/x", &[foreign], session()), None);
        let token = Credential::Token { id: "t".into() };
        assert_eq!(code(Method::POST, "/x", &[foreign], token), None);
        assert!(
            check(
                Operation::Login,
                &Method::POST,
                &"/api/v1/auth/login".parse().unwrap(),
                &headers(&[foreign]),
                Some(&caller(session())),
            )
            .is_ok()
        );
        for anonymous in [
            None,
            Some(&Authentication::Anonymous),
            Some(&Authentication::Rejected),
        ] {
            assert!(
                check(
                    Operation::RestartApp,
                    &Method::POST,
                    &"/x".parse().unwrap(),
                    &headers(&[foreign]),
                    anonymous,
                )
                .is_ok()
            );
        }
    }
}
