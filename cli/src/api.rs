//! The API over HTTP, as any client reaches it: a bearer token (or, while
//! signing in, the session cookie), JSON bodies, Problem Details errors.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use reqwest::Method;
use reqwest::Url;
use reqwest::blocking::{Client, RequestBuilder, Response};
use serde::Serialize;
use serde::de::{
    self, DeserializeOwned, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess,
    Visitor,
};
use serde_json::Value;

use berth_records::problem::Problem;

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
    /// What a 401 means for where the credential came from, said after
    /// the API's reason (`BERTH_TOKEN`'s token, or the stored one).
    refused: Option<&'static str>,
}

/// An answer's body, as the API sent it: printed with `-o json` in the
/// API's own key order (its bytes transcoded, never read into a map, which
/// would sort the keys), read as the API's record type otherwise. `part`
/// narrows it to one member (the `app` of `getApp`'s answer).
#[derive(Debug, Clone)]
pub struct Answer {
    body: Arc<[u8]>,
    part: Vec<&'static str>,
}

impl Answer {
    /// A JSON body (an empty one is `null`).
    pub fn new(body: impl Into<Arc<[u8]>>) -> Self {
        let body = body.into();
        Self {
            body: if body.is_empty() {
                Arc::from(&b"null"[..])
            } else {
                body
            },
            part: Vec::new(),
        }
    }

    /// The member `key` of this answer's object (`null` when it has none).
    pub fn part(&self, key: &'static str) -> Self {
        let mut part = self.clone();
        part.part.push(key);
        part
    }

    pub fn record<T: DeserializeOwned>(&self) -> Result<T> {
        let unexpected = |e: serde_json::Error| {
            Failure::Transport(format!(
                "the API's answer is not what this CLI expects ({e}); see `berth version`"
            ))
        };
        if self.part.is_empty() {
            return serde_json::from_slice(&self.body).map_err(unexpected);
        }
        let mut value: Value = serde_json::from_slice(&self.body).map_err(unexpected)?;
        for key in &self.part {
            value = value.get_mut(*key).map(Value::take).unwrap_or(Value::Null);
        }
        serde_json::from_value(value).map_err(unexpected)
    }

    /// The answer pretty-printed, its keys in the order the API wrote them.
    pub fn pretty(&self) -> Result<String> {
        let failed = |e: serde_json::Error| Failure::failed(format!("printing the answer: {e}"));
        let mut out = Vec::new();
        let mut body = serde_json::Deserializer::from_slice(&self.body);
        let found = Select {
            path: &self.part,
            out: &mut out,
        }
        .deserialize(&mut body)
        .map_err(failed)?;
        body.end().map_err(failed)?;
        if !found {
            out = b"null".to_vec();
        }
        String::from_utf8(out).map_err(|e| Failure::failed(format!("printing the answer: {e}")))
    }
}

/// Transcodes the member at `path` of a JSON document into `out`, pretty,
/// keeping its keys' order; skips everything else. Answers whether the
/// member was there.
struct Select<'a> {
    path: &'a [&'static str],
    out: &'a mut Vec<u8>,
}

impl<'de> DeserializeSeed<'de> for Select<'_> {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        if self.path.is_empty() {
            let mut pretty = serde_json::Serializer::pretty(self.out);
            serde_transcode::transcode(deserializer, &mut pretty).map_err(de::Error::custom)?;
            return Ok(true);
        }
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Select<'_> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        let Select { path, out } = self;
        let mut found = false;
        while let Some(key) = map.next_key::<String>()? {
            if !found && path.first() == Some(&key.as_str()) {
                found = map.next_value_seed(Select {
                    path: &path[1..],
                    out: &mut *out,
                })?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(false)
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_unit<E: de::Error>(self) -> Result<bool, E> {
        Ok(false)
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
            refused: None,
        })
    }

    pub fn with_credential(&mut self, credential: Credential) {
        self.credential = credential;
    }

    /// What to say when the API refuses the credential (401).
    pub fn when_refused(&mut self, hint: &'static str) {
        self.refused = Some(hint);
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
        self.answer(self.send(self.request(Method::GET, segments).query(query))?)
    }

    pub fn post<B: Serialize + ?Sized>(&self, segments: &[&str], body: &B) -> Result<Answer> {
        self.answer(self.send(self.request(Method::POST, segments).json(body))?)
    }

    /// A POST that takes no body (restart, createBuild without a ref…).
    pub fn post_empty(&self, segments: &[&str]) -> Result<Answer> {
        self.answer(self.send(self.request(Method::POST, segments))?)
    }

    pub fn patch<B: Serialize + ?Sized>(&self, segments: &[&str], body: &B) -> Result<Answer> {
        self.answer(self.send(self.request(Method::PATCH, segments).json(body))?)
    }

    pub fn put<B: Serialize + ?Sized>(&self, segments: &[&str], body: &B) -> Result<Answer> {
        self.answer(self.send(self.request(Method::PUT, segments).json(body))?)
    }

    pub fn delete(&self, segments: &[&str]) -> Result<Answer> {
        self.delete_with(segments, &[])
    }

    pub fn delete_with(&self, segments: &[&str], query: &[(&str, String)]) -> Result<Answer> {
        self.answer(self.send(self.request(Method::DELETE, segments).query(query))?)
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
        let answer = self.answer(response)?;
        let cookie = cookie.ok_or_else(|| {
            Failure::Transport("the API signed in but set no session cookie".into())
        })?;
        Ok((answer, cookie))
    }

    /// Sends `request`; one that gets no answer says why in the words of
    /// its deepest cause ("Connection refused (os error 111)", a name that
    /// does not resolve, a certificate refused), not only reqwest's
    /// "error sending request".
    fn send(&self, request: RequestBuilder) -> Result<Response> {
        request.send().map_err(|e| {
            let mut root: &dyn std::error::Error = &e;
            while let Some(source) = root.source() {
                root = source;
            }
            let why = if std::ptr::addr_eq(root, &e as &dyn std::error::Error) {
                e.to_string()
            } else {
                format!("{root} ({e})")
            };
            Failure::Transport(format!("cannot reach {}: {why}", self.base))
        })
    }

    fn answer(&self, response: Response) -> Result<Answer> {
        let status = response.status();
        let body = response
            .bytes()
            .map_err(|e| Failure::Transport(format!("reading the API's answer: {e}")))?;
        if status.is_success() {
            if !body.is_empty() {
                serde_json::from_slice::<IgnoredAny>(&body).map_err(|e| {
                    Failure::Transport(format!("the API's answer is not JSON: {e}"))
                })?;
            }
            return Ok(Answer::new(&body[..]));
        }
        let failure = match serde_json::from_slice::<Problem>(&body) {
            Ok(problem) => Failure::Api(problem),
            Err(_) => Failure::Http {
                status: status.as_u16(),
                body: String::from_utf8_lossy(&body).chars().take(200).collect(),
            },
        };
        Err(match self.refused {
            Some(hint) if status.as_u16() == 401 => Failure::Refused {
                failure: Box::new(failure),
                hint,
            },
            _ => failure,
        })
    }
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

    #[test]
    fn an_answer_prints_in_the_apis_key_order() {
        let body = br#"{"zeta":1,"app":{"name":"shop","env":[{"name":"A","value":"1"}],"b":[]},"alpha":{}}"#;
        let answer = Answer::new(&body[..]);
        assert_eq!(
            answer.pretty().unwrap(),
            "{\n  \"zeta\": 1,\n  \"app\": {\n    \"name\": \"shop\",\n    \"env\": [\n      {\n        \
             \"name\": \"A\",\n        \"value\": \"1\"\n      }\n    ],\n    \"b\": []\n  },\n  \
             \"alpha\": {}\n}"
        );
        assert_eq!(
            answer.part("app").part("env").pretty().unwrap(),
            "[\n  {\n    \"name\": \"A\",\n    \"value\": \"1\"\n  }\n]"
        );
        let names: Vec<String> = answer
            .part("app")
            .part("env")
            .record::<Vec<Value>>()
            .unwrap()
            .iter()
            .map(|entry| entry["name"].to_string())
            .collect();
        assert_eq!(names, ["\"A\""]);
        // What is not there is null, as an empty body is.
        assert_eq!(answer.part("nope").pretty().unwrap(), "null");
        assert_eq!(answer.part("zeta").part("x").pretty().unwrap(), "null");
        assert_eq!(Answer::new(Vec::new()).pretty().unwrap(), "null");
    }
}
