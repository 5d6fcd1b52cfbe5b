//! The API over HTTP, as any client reaches it: a bearer token (or, while
//! signing in, the session cookie), JSON bodies, Problem Details errors.

use std::time::Duration;

use reqwest::Method;
use reqwest::Url;
use reqwest::blocking::{Client, RequestBuilder, Response};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use berth_domain::error::Problem;

use crate::failure::{Failure, Result};

/// The session cookie `login` sets (docs/api-notes.md, "Security").
const SESSION_COOKIE: &str = "berth_session";

/// No `Debug`: it holds a token or a session.
#[derive(Clone)]
pub enum Credential {
    None,
    Token(String),
    Session(String),
}

pub struct Api {
    http: Client,
    base: Url,
    credential: Credential,
}

/// An answer's body, as the API sent it: printed as is with `-o json`,
/// read as the API's record type otherwise.
#[derive(Debug, Clone)]
pub struct Answer(pub Value);

impl Answer {
    pub fn record<T: DeserializeOwned>(&self) -> Result<T> {
        serde_json::from_value(self.0.clone()).map_err(|e| {
            Failure::Transport(format!(
                "the API's answer is not what this CLI expects ({e}); see `berth version`"
            ))
        })
    }
}

/// The API's URL as given, with or without `/api/v1`, normalized to its
/// root (what the paths below are joined to).
pub fn parse_url(url: &str) -> Result<Url> {
    let trimmed = url.trim().trim_end_matches('/');
    let trimmed = trimmed.strip_suffix("/api/v1").unwrap_or(trimmed);
    let parsed =
        Url::parse(trimmed).map_err(|e| Failure::Usage(format!("`{url}` is not a URL: {e}")))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.cannot_be_a_base() {
        return Err(Failure::Usage(format!(
            "`{url}` is not an http:// or https:// URL"
        )));
    }
    Ok(parsed)
}

impl Api {
    pub fn new(base: Url, credential: Credential) -> Result<Self> {
        let http = Client::builder()
            .user_agent(concat!("berth-cli/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(Duration::from_secs(10))
            // The API's own deadline is below API Gateway's 30 s.
            .timeout(Duration::from_secs(60))
            .build()
            .map_err(|e| Failure::Transport(format!("starting the HTTP client: {e}")))?;
        Ok(Self {
            http,
            base,
            credential,
        })
    }

    pub fn with_credential(&mut self, credential: Credential) {
        self.credential = credential;
    }

    /// `/api/v1/` and `segments`, each percent-encoded: a name never
    /// changes which path is asked for.
    pub fn url(&self, segments: &[&str]) -> Url {
        let mut url = self.base.clone();
        if let Ok(mut path) = url.path_segments_mut() {
            path.pop_if_empty().extend(["api", "v1"]).extend(segments);
        }
        url
    }

    fn request(&self, method: Method, segments: &[&str]) -> RequestBuilder {
        let builder = self.http.request(method, self.url(segments));
        match &self.credential {
            Credential::None => builder,
            Credential::Token(token) => builder.bearer_auth(token),
            Credential::Session(cookie) => {
                builder.header("cookie", format!("{SESSION_COOKIE}={cookie}"))
            }
        }
    }

    pub fn get(&self, segments: &[&str]) -> Result<Answer> {
        self.get_with(segments, &[])
    }

    pub fn get_with(&self, segments: &[&str], query: &[(&str, String)]) -> Result<Answer> {
        answer(self.send(self.request(Method::GET, segments).query(query))?)
    }

    pub fn post<B: Serialize + ?Sized>(&self, segments: &[&str], body: &B) -> Result<Answer> {
        answer(self.send(self.request(Method::POST, segments).json(body))?)
    }

    /// A POST that takes no body (restart, createBuild without a ref…).
    pub fn post_empty(&self, segments: &[&str]) -> Result<Answer> {
        answer(self.send(self.request(Method::POST, segments))?)
    }

    pub fn patch<B: Serialize + ?Sized>(&self, segments: &[&str], body: &B) -> Result<Answer> {
        answer(self.send(self.request(Method::PATCH, segments).json(body))?)
    }

    pub fn put<B: Serialize + ?Sized>(&self, segments: &[&str], body: &B) -> Result<Answer> {
        answer(self.send(self.request(Method::PUT, segments).json(body))?)
    }

    pub fn delete(&self, segments: &[&str]) -> Result<Answer> {
        answer(self.send(self.request(Method::DELETE, segments))?)
    }

    /// `login`: its answer and the session cookie it set.
    pub fn login<B: Serialize + ?Sized>(&self, body: &B) -> Result<(Answer, String)> {
        let response = self.send(self.request(Method::POST, &["auth", "login"]).json(body))?;
        let cookie = response
            .headers()
            .get_all("set-cookie")
            .iter()
            .filter_map(|value| value.to_str().ok())
            .find_map(|value| {
                let pair = value.split(';').next()?;
                let (name, value) = pair.split_once('=')?;
                (name.trim() == SESSION_COOKIE && !value.is_empty()).then(|| value.to_owned())
            });
        let answer = answer(response)?;
        let cookie = cookie.ok_or_else(|| {
            Failure::Transport("the API signed in but set no session cookie".into())
        })?;
        Ok((answer, cookie))
    }

    fn send(&self, request: RequestBuilder) -> Result<Response> {
        request.send().map_err(|e| {
            let cause = std::error::Error::source(&e)
                .map(|source| format!(": {source}"))
                .unwrap_or_default();
            Failure::Transport(format!("cannot reach {}: {e}{cause}", self.base))
        })
    }
}

fn answer(response: Response) -> Result<Answer> {
    let status = response.status();
    let body = response
        .bytes()
        .map_err(|e| Failure::Transport(format!("reading the API's answer: {e}")))?;
    if status.is_success() {
        if body.is_empty() {
            return Ok(Answer(Value::Null));
        }
        return serde_json::from_slice(&body)
            .map(Answer)
            .map_err(|e| Failure::Transport(format!("the API's answer is not JSON: {e}")));
    }
    Err(match serde_json::from_slice::<Problem>(&body) {
        Ok(problem) => Failure::Api(problem),
        Err(_) => Failure::Http {
            status: status.as_u16(),
            body: String::from_utf8_lossy(&body).chars().take(200).collect(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_is_taken_with_or_without_the_api_prefix() {
        for given in [
            "http://127.0.0.1:3000",
            "http://127.0.0.1:3000/",
            "http://127.0.0.1:3000/api/v1",
            "http://127.0.0.1:3000/api/v1/",
        ] {
            assert_eq!(parse_url(given).unwrap().as_str(), "http://127.0.0.1:3000/");
        }
        assert!(parse_url("ftp://x").is_err());
        assert!(parse_url("127.0.0.1:3000").is_err());
    }

    #[test]
    fn names_never_change_the_path() {
        let api = Api::new(
            parse_url("https://berth.example/prod").unwrap(),
            Credential::None,
        )
        .unwrap();
        assert_eq!(
            api.url(&["projects", "a/../b", "environments", "x?y"])
                .as_str(),
            "https://berth.example/prod/api/v1/projects/a%2F..%2Fb/environments/x%3Fy"
        );
    }
}
