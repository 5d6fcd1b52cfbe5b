//! Requests a browser could send with the user's session cookie from another
//! site's page (cross-site request forgery). The cookie is `SameSite=Lax`,
//! which keeps it off cross-site changes, but a page on a sibling subdomain
//! is the same *site*: only the request itself tells it apart, and a browser
//! says where a request comes from in two headers no page can set or forge:
//!
//! - `Origin` (on every `POST`, `PUT`, `PATCH` and `DELETE` a current
//!   browser sends): another origin than the API's own is `403 forbidden`;
//! - `Sec-Fetch-Site` (fetch metadata): `cross-site` or `same-site` is
//!   `403 forbidden`; `same-origin` and `none` (the user's own doing) pass.
//!
//! A change with neither header does not come from a browser's page (curl,
//! a script, a generated client) and passes, with or without a content
//! type. A body sent with the cookie must be JSON (`415`), as the bodies
//! are: a form or a `text/plain` fetch is what a page can send unasked.
//! docs/api-notes.md says which browsers each defence covers.
//!
//! Reads (GET) change nothing, and API tokens are never sent by a browser on
//! its own: both pass. Checked once for every route, before its handler.

use axum::http::{HeaderMap, Method, Uri, header};

use crate::ApiError;
use berth_domain::Operation;
use berth_store::identity::{Authentication, Credential};

/// What the check reads of a request.
pub struct Sent<'r> {
    pub method: &'r Method,
    pub uri: &'r Uri,
    pub headers: &'r HeaderMap,
    /// Whether the request may carry a body (its length is not known to be 0).
    pub has_body: bool,
}

impl<'r> Sent<'r> {
    pub fn of(request: &'r axum::extract::Request) -> Self {
        use axum::body::HttpBody as _;
        Self {
            method: request.method(),
            uri: request.uri(),
            headers: request.headers(),
            has_body: request.body().size_hint().exact() != Some(0),
        }
    }
}

/// Refuses a state-changing request authenticated by the session cookie that
/// a page of another origin could have made the browser send.
pub fn check(
    operation: Operation,
    sent: &Sent<'_>,
    authentication: Option<&Authentication>,
) -> Result<(), ApiError> {
    let by_cookie = matches!(
        authentication,
        Some(Authentication::Authenticated(principal))
            if matches!(principal.credential, Credential::Session { .. })
    );
    // A login acts with the credentials it is sent, never with a cookie it
    // happens to carry (and its JSON body needs the content type anyway).
    if !by_cookie || operation == Operation::Login || !changes_state(sent.method) {
        return Ok(());
    }
    let fetched_from_another_site = sent
        .headers
        .get(SEC_FETCH_SITE)
        .is_some_and(|site| !matches!(site.as_bytes(), b"same-origin" | b"none"));
    let from_another_origin = sent.headers.get(header::ORIGIN).is_some_and(|origin| {
        let own = own_origin(sent.uri, sent.headers);
        origin
            .to_str()
            .ok()
            .and_then(normalize)
            .is_none_or(|origin| own.as_deref() != Some(origin.as_str()))
    });
    if fetched_from_another_site || from_another_origin {
        return Err(ApiError::Forbidden(
            "a change made with the session cookie must come from the API's own origin; \
             use an API token from other origins"
                .into(),
        ));
    }
    if sent.has_body && !is_json(sent.headers) {
        return Err(ApiError::UnsupportedMediaType(
            "a body sent with the session cookie must be application/json".into(),
        ));
    }
    Ok(())
}

/// The fetch metadata header that says how the page that made a request
/// relates to the API: `same-origin`, `same-site`, `cross-site` or `none`.
const SEC_FETCH_SITE: &str = "sec-fetch-site";

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
    use berth_domain::roles::Role;
    use berth_store::identity::{Principal, User};

    fn caller(credential: Credential) -> Authentication {
        Authentication::Authenticated(Arc::new(Principal {
            user: User {
                id: "u".into(),
                email: "a@example.org".into(),
                display_name: None,
                org: berth_domain::names::OrgName::parse("acme").expect("an org"),
                role: Role::Owner,
                projects: Vec::new(),
                must_change_password: false,
                active: true,
                session_epoch: 0,
            },
            credential,
            ceiling: None,
            scope: None,
            project_role: None,
        }))
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    /// The code a request of `method` to `uri` with these headers, with or
    /// without a body, is refused with (`None`: it passes).
    fn code(
        method: Method,
        uri: &str,
        pairs: &[(&'static str, &str)],
        has_body: bool,
        credential: Credential,
    ) -> Option<&'static str> {
        check(
            Operation::RestartApp,
            &Sent {
                method: &method,
                uri: &uri.parse().unwrap(),
                headers: &headers(pairs),
                has_body,
            },
            Some(&caller(credential)),
        )
        .err()
        .map(|error| error.code())
    }

    fn session() -> Credential {
        Credential::Session { digest: "d".into() }
    }

    /// What a change sent with the session cookie to the local server's
    /// origin meets.
    fn local(
        method: &Method,
        pairs: &[(&'static str, &str)],
        has_body: bool,
    ) -> Option<&'static str> {
        code(method.clone(), LOCAL, pairs, has_body, session())
    }

    const HOST: (&str, &str) = ("host", "berth.example.com");
    const JSON: (&str, &str) = ("content-type", "application/json");
    const LOCAL: &str = "/api/v1/x";

    #[test]
    fn changes_without_a_browsers_headers_pass_with_or_without_a_content_type() {
        for method in [Method::POST, Method::PUT, Method::PATCH, Method::DELETE] {
            assert_eq!(local(&method, &[HOST], false), None);
            assert_eq!(local(&method, &[], false), None);
            for form in [
                "text/plain",
                "application/x-www-form-urlencoded",
                "multipart/form-data",
            ] {
                // Nothing sent: what it says it is does not matter.
                assert_eq!(local(&method, &[HOST, ("content-type", form)], false), None);
                // A body the browser could send unasked is not JSON.
                assert_eq!(
                    local(&method, &[HOST, ("content-type", form)], true),
                    Some("unsupported_media_type"),
                    "{method} {form}"
                );
            }
            assert_eq!(
                local(&method, &[HOST], true),
                Some("unsupported_media_type")
            );
            assert_eq!(local(&method, &[HOST, JSON], true), None);
        }
        assert_eq!(
            local(
                &Method::POST,
                &[
                    HOST,
                    (
                        "content-type",
                        "application/merge-patch+json; charset=utf-8"
                    )
                ],
                true
            ),
            None
        );
    }

    #[test]
    fn changes_from_another_origin_or_site_are_forbidden() {
        for method in [Method::POST, Method::PUT, Method::PATCH, Method::DELETE] {
            for same in ["http://berth.example.com", "HTTP://Berth.Example.com:80"] {
                assert_eq!(local(&method, &[HOST, ("origin", same)], false), None);
            }
            for foreign in [
                // A sibling subdomain: the same site for SameSite=Lax.
                "http://pages.example.com",
                "https://berth.example.com",
                "http://evil.example.net",
                "http://berth.example.com.evil.net",
                "http://berth.example.com:8080",
                "null",
                "",
            ] {
                for has_body in [false, true] {
                    assert_eq!(
                        code(
                            method.clone(),
                            LOCAL,
                            &[HOST, JSON, ("origin", foreign)],
                            has_body,
                            session()
                        ),
                        Some("forbidden"),
                        "{method} {foreign}"
                    );
                }
            }
            for site in ["cross-site", "same-site", "something-new"] {
                assert_eq!(
                    local(&method, &[HOST, ("sec-fetch-site", site)], false),
                    Some("forbidden"),
                    "{method} {site}"
                );
                // Whatever Origin says: each header is a defence of its own.
                assert_eq!(
                    local(
                        &method,
                        &[
                            HOST,
                            ("origin", "http://berth.example.com"),
                            ("sec-fetch-site", site)
                        ],
                        false
                    ),
                    Some("forbidden")
                );
            }
            for own in ["same-origin", "none"] {
                assert_eq!(
                    local(
                        &method,
                        &[
                            HOST,
                            ("origin", "http://berth.example.com"),
                            ("sec-fetch-site", own)
                        ],
                        false
                    ),
                    None
                );
                assert_eq!(
                    local(
                        &method,
                        &[
                            HOST,
                            ("origin", "http://pages.example.com"),
                            ("sec-fetch-site", own)
                        ],
                        false
                    ),
                    Some("forbidden")
                );
            }
        }
        // No Host at all: no origin is the API's own.
        assert_eq!(
            local(
                &Method::POST,
                &[("origin", "http://berth.example.com")],
                false
            ),
            Some("forbidden")
        );
        // On Lambda the URI carries scheme and host (from API Gateway).
        let lambda = "https://api.example.com/api/v1/x";
        let origin = ("origin", "https://api.example.com");
        assert_eq!(
            code(Method::POST, lambda, &[origin], false, session()),
            None
        );
        assert_eq!(
            code(
                Method::POST,
                lambda,
                &[("origin", "https://app.example.com")],
                false,
                session()
            ),
            Some("forbidden")
        );
        // Behind a TLS proxy, the local server learns the scheme from it.
        assert_eq!(
            local(
                &Method::POST,
                &[
                    HOST,
                    JSON,
                    ("x-forwarded-proto", "https"),
                    ("origin", "https://berth.example.com:443")
                ],
                true
            ),
            None
        );
    }

    #[test]
    fn reads_tokens_and_logins_pass() {
        let foreign = ("origin", "http://evil.example.com");
        let cross = ("sec-fetch-site", "cross-site");
        assert_eq!(
            code(Method::GET, "/x", &[foreign, cross], false, session()),
            None
        );
        assert_eq!(
            code(Method::HEAD, "/x", &[foreign, cross], false, session()),
            None
        );
        let token = Credential::Token {
            id: "t".into(),
            expires_at: None,
        };
        assert_eq!(
            code(Method::POST, "/x", &[foreign, cross], true, token),
            None
        );
        let login = |authentication| {
            check(
                Operation::Login,
                &Sent {
                    method: &Method::POST,
                    uri: &"/api/v1/auth/login".parse().unwrap(),
                    headers: &headers(&[foreign, cross]),
                    has_body: true,
                },
                authentication,
            )
        };
        assert!(login(Some(&caller(session()))).is_ok());
        for anonymous in [
            None,
            Some(&Authentication::Anonymous),
            Some(&Authentication::Rejected),
        ] {
            assert!(
                check(
                    Operation::RestartApp,
                    &Sent {
                        method: &Method::POST,
                        uri: &"/x".parse().unwrap(),
                        headers: &headers(&[foreign, cross]),
                        has_body: false,
                    },
                    anonymous,
                )
                .is_ok()
            );
        }
    }
}
