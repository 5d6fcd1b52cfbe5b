//! Where the DynamoDB client points, as the SDK reads it from the environment
//! (`AWS_ENDPOINT_URL_DYNAMODB`, else `AWS_ENDPOINT_URL`), and whether that is
//! this machine: DynamoDB Local, which takes any credentials and region.

use std::fmt;
use std::net::IpAddr;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// DynamoDB's own endpoint in the configured region.
    Aws,
    /// A configured URL, as written.
    Url(String),
}

impl Endpoint {
    pub fn from_env() -> Self {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Self {
        if lookup("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS").is_some_and(|v| v.trim() == "true") {
            return Self::Aws;
        }
        ["AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL"]
            .into_iter()
            .filter_map(&lookup)
            .map(|url| url.trim().to_owned())
            .find(|url| !url.is_empty())
            .map_or(Self::Aws, Self::Url)
    }

    /// Whether the endpoint's host is `localhost` or a loopback address.
    pub fn is_loopback(&self) -> bool {
        let Self::Url(url) = self else {
            return false;
        };
        let Some(host) = url.parse::<::http::Uri>().ok().and_then(|uri| {
            uri.host().map(|host| {
                host.trim_start_matches('[')
                    .trim_end_matches(']')
                    .to_owned()
            })
        }) else {
            return false;
        };
        host.eq_ignore_ascii_case("localhost")
            || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Aws => f.write_str("AWS"),
            Self::Url(url) => f.write_str(url),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint(vars: &[(&str, &str)]) -> Endpoint {
        Endpoint::from_lookup(|name| {
            vars.iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| (*value).to_owned())
        })
    }

    #[test]
    fn the_service_variable_wins_over_the_general_one() {
        assert_eq!(endpoint(&[]), Endpoint::Aws);
        assert_eq!(
            endpoint(&[
                ("AWS_ENDPOINT_URL", "http://general:1"),
                ("AWS_ENDPOINT_URL_DYNAMODB", "http://127.0.0.1:8000"),
            ]),
            Endpoint::Url("http://127.0.0.1:8000".into())
        );
        assert_eq!(
            endpoint(&[("AWS_ENDPOINT_URL", "http://general:1")]),
            Endpoint::Url("http://general:1".into())
        );
        assert_eq!(
            endpoint(&[
                ("AWS_ENDPOINT_URL_DYNAMODB", "http://127.0.0.1:8000"),
                ("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "true"),
            ]),
            Endpoint::Aws
        );
    }

    #[test]
    fn loopback_hosts() {
        for url in [
            "http://127.0.0.1:8000",
            "http://127.1.2.3:8000",
            "http://localhost:8000",
            "http://LOCALHOST",
            "http://[::1]:8000",
        ] {
            assert!(Endpoint::Url(url.into()).is_loopback(), "{url}");
        }
        for url in [
            "https://dynamodb.us-east-1.amazonaws.com",
            "http://10.0.0.1:8000",
            "http://localhost.example:8000",
            "http://[::2]:8000",
            "not a url",
        ] {
            assert!(!Endpoint::Url(url.into()).is_loopback(), "{url}");
        }
        assert!(!Endpoint::Aws.is_loopback());
    }
}
