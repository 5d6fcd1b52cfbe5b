//! Container image references, by the grammar of the Docker/OCI distribution
//! reference (`github.com/distribution/reference`):
//!
//! ```text
//! reference       := name [ ":" tag ] [ "@" digest ]
//! name            := [ domain "/" ] path-component [ "/" path-component ]*
//! domain          := host [ ":" port-number ]
//! host            := domain-name | "[" IPv6address "]"
//! domain-name     := domain-component [ "." domain-component ]*
//! domain-component:= /([a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])/
//! path-component  := /[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*/
//! tag             := /[\w][\w.-]{0,127}/
//! digest          := algorithm ":" hex
//! ```
//!
//! The first component of a name with several is the registry's domain when
//! it contains `.` or `:` or is `localhost`. The name is at most 255
//! characters. Of digests, only those container runtimes can verify are
//! accepted: `sha256`, `sha384` and `sha512` with their exact number of
//! lowercase hex digits.

use std::net::Ipv6Addr;

use super::Invalid;
use super::names::string_newtype;

/// A container image reference such as `nginx:1.27`,
/// `ghcr.io/org/app:v1.2.3` or `redis@sha256:…`, kept exactly as given.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ImageRef(String);

impl ImageRef {
    /// The longest name (registry and repository path, without tag or digest).
    pub const MAX_NAME_LEN: usize = 255;
    /// The longest tag.
    pub const MAX_TAG_LEN: usize = 128;

    pub fn parse(value: &str) -> Result<Self, Invalid> {
        let (rest, digest) = match value.split_once('@') {
            Some((rest, digest)) => (rest, Some(digest)),
            None => (value, None),
        };
        // A ':' after the last '/' starts the tag; any earlier one is a port.
        let (name, tag) = match rest.rfind(':') {
            Some(colon) if !rest[colon..].contains('/') => {
                (&rest[..colon], Some(&rest[colon + 1..]))
            }
            _ => (rest, None),
        };
        if !is_name(name) {
            return Err(Invalid::new(format!(
                "must be a container image reference: an optional registry host, then \
                 '/'-separated path components of lowercase letters and digits joined by '.', \
                 '_', '__' or '-', at most {} characters before an optional ':tag' and \
                 '@digest'",
                Self::MAX_NAME_LEN
            )));
        }
        if tag.is_some_and(|tag| !is_tag(tag)) {
            return Err(Invalid::new(format!(
                "must be a container image reference whose tag is 1 to {} letters, digits, '_', \
                 '.' and '-', not starting with '.' or '-'",
                Self::MAX_TAG_LEN
            )));
        }
        if digest.is_some_and(|digest| !is_digest(digest)) {
            return Err(Invalid::new(
                "must be a container image reference whose digest is sha256:, sha384: or \
                 sha512: followed by 64, 96 or 128 lowercase hex digits",
            ));
        }
        Ok(Self(value.to_owned()))
    }

    /// The registry host (with its port) if the reference names one:
    /// `ghcr.io` of `ghcr.io/org/app:v1`, none for `nginx`.
    pub fn registry(&self) -> Option<&str> {
        let (first, _) = self.name().split_once('/')?;
        is_domain_like(first).then_some(first)
    }

    /// The name without tag or digest: `ghcr.io/org/app` of
    /// `ghcr.io/org/app:v1@sha256:…`.
    pub fn name(&self) -> &str {
        let rest = self
            .0
            .split_once('@')
            .map_or(self.0.as_str(), |(rest, _)| rest);
        match rest.rfind(':') {
            Some(colon) if !rest[colon..].contains('/') => &rest[..colon],
            _ => rest,
        }
    }

    /// The tag, if any: `1.27` of `nginx:1.27`.
    pub fn tag(&self) -> Option<&str> {
        let rest = self
            .0
            .split_once('@')
            .map_or(self.0.as_str(), |(rest, _)| rest);
        rest.get(self.name().len() + 1..)
    }

    /// The digest, if any: `sha256:…` of `redis@sha256:…`.
    pub fn digest(&self) -> Option<&str> {
        self.0.split_once('@').map(|(_, digest)| digest)
    }
}
string_newtype!(ImageRef);

/// Whether a name's first component is a registry's domain (DNS or IP, with
/// an optional port) rather than the start of the repository path.
fn is_domain_like(first: &str) -> bool {
    first.contains(['.', ':']) || first == "localhost"
}

fn is_name(name: &str) -> bool {
    if name.is_empty() || name.len() > ImageRef::MAX_NAME_LEN {
        return false;
    }
    let mut path: Vec<&str> = name.split('/').collect();
    if path.len() > 1 && is_domain_like(path[0]) {
        if !is_domain(path[0]) {
            return false;
        }
        path.remove(0);
    }
    path.into_iter().all(is_path_component)
}

/// `host [":" port]`, host a domain name or a bracketed IPv6 address.
fn is_domain(domain: &str) -> bool {
    let (host, port) = if let Some(bracketed) = domain.strip_prefix('[') {
        let Some((address, after)) = bracketed.split_once(']') else {
            return false;
        };
        if address.parse::<Ipv6Addr>().is_err() {
            return false;
        }
        match after {
            "" => return true,
            _ => match after.strip_prefix(':') {
                Some(port) => ("", Some(port)),
                None => return false,
            },
        }
    } else {
        match domain.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (domain, None),
        }
    };
    let host_ok = host.is_empty() && domain.starts_with('[')
        || host.split('.').all(|component| {
            let bytes = component.as_bytes();
            bytes
                .iter()
                .all(|b| b.is_ascii_alphanumeric() || *b == b'-')
                && bytes.first().is_some_and(u8::is_ascii_alphanumeric)
                && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
        });
    let port_ok =
        port.is_none_or(|port| !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()));
    host_ok && port_ok
}

/// `[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*`
fn is_path_component(component: &str) -> bool {
    let bytes = component.as_bytes();
    let alphanumeric = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let mut i = 0;
    loop {
        // An alphanumeric run, at least one long.
        let start = i;
        while i < bytes.len() && alphanumeric(bytes[i]) {
            i += 1;
        }
        if i == start {
            return false;
        }
        if i == bytes.len() {
            return true;
        }
        // A separator: '.', '_', '__' or one or more '-'.
        match bytes[i] {
            b'.' => i += 1,
            b'_' => {
                i += 1;
                if bytes.get(i) == Some(&b'_') {
                    i += 1;
                }
            }
            b'-' => {
                while bytes.get(i) == Some(&b'-') {
                    i += 1;
                }
            }
            _ => return false,
        }
    }
}

/// `[\w][\w.-]{0,127}`
fn is_tag(tag: &str) -> bool {
    let word = |b: &u8| b.is_ascii_alphanumeric() || *b == b'_';
    let bytes = tag.as_bytes();
    bytes.len() <= ImageRef::MAX_TAG_LEN
        && bytes.first().is_some_and(word)
        && bytes.iter().all(|b| word(b) || *b == b'.' || *b == b'-')
}

/// `sha256:` + 64, `sha384:` + 96 or `sha512:` + 128 lowercase hex digits.
fn is_digest(digest: &str) -> bool {
    let Some((algorithm, hex)) = digest.split_once(':') else {
        return false;
    };
    let len = match algorithm {
        "sha256" => 64,
        "sha384" => 96,
        "sha512" => 128,
        _ => return false,
    };
    hex.len() == len
        && hex
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEX64: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    fn parse(value: &str) -> ImageRef {
        ImageRef::parse(value).unwrap_or_else(|err| panic!("{value:?}: {err}"))
    }

    #[test]
    fn references_that_parse() {
        let with_host_digest = format!("registry.example.com:443/a/b/c@sha256:{HEX64}");
        let redis_digest = format!("redis@sha256:{HEX64}");
        let tag_and_digest = format!("ghcr.io/org/app:v1@sha256:{HEX64}");
        let sha512 = format!("app@sha512:{HEX64}{HEX64}");
        let sha384 = format!("app@sha384:{HEX64}{}", &HEX64[..32]);
        let tag128 = format!("app:{}", "t".repeat(128));
        let name255 = "a".repeat(255);
        let name255_with_host = format!("r.io/{}", "b".repeat(250));
        for good in [
            "nginx",
            "nginx:1.27",
            "nginx:latest",
            "library/nginx:1.27-alpine",
            "ghcr.io/org/app:v1.2.3",
            "localhost/app",
            "localhost:5000/app",
            "localhost:5000/app:dev",
            "postgres:16.4",
            "docker.io/library/postgres:16.4",
            "quay.io/coreos/etcd:v3.5.0",
            "123456789012.dkr.ecr.eu-central-1.amazonaws.com/team/app:2024-06-01",
            "Registry.Example.com/app",
            "10.0.0.1:5000/app",
            "[::1]:5000/app",
            "[fe80::1]/app",
            "my-registry/app",
            "org/a.b_c__d-e---f",
            "a.b-c.io/x__y.z",
            "app:_tag",
            "app:V1.0-RC_1",
            "a/b/c/d/e",
            "nginx.io",
            // One component is never a host: these are repository `localhost`
            // tagged `5000` and repository `ghcr.io`, as Docker reads them.
            "localhost:5000",
            "ghcr.io",
            &with_host_digest,
            &redis_digest,
            &tag_and_digest,
            &sha512,
            &sha384,
            &tag128,
            &name255,
            &name255_with_host,
        ] {
            let image = parse(good);
            assert_eq!(image.as_str(), good);
            assert_eq!(image.to_string(), good);
            assert_eq!(image.as_ref(), good);
        }
    }

    #[test]
    fn references_that_fail() {
        let upper_digest = format!("redis@sha256:{}", HEX64.to_uppercase());
        let long_digest = format!("redis@sha256:{HEX64}0");
        let other_algorithm = format!("redis@md5:{HEX64}");
        let tag129 = format!("app:{}", "t".repeat(129));
        let name256 = "a".repeat(256);
        let name256_with_tag = format!("r.io/{}:v1", "b".repeat(251));
        for bad in [
            "",
            "Nginx",
            "library/Nginx",
            "nginx:",
            ":tag",
            "nginx:bad tag",
            "nginx :1",
            " nginx",
            "nginx\n",
            "a//b",
            "/a",
            "a/",
            "-a",
            "a-",
            "a.",
            "a..b",
            "a___b",
            "a_.b",
            "nginx@sha256:short",
            "nginx@sha256:",
            "nginx@",
            "nginx@@sha256:x",
            "http://x/y",
            "https://ghcr.io/org/app",
            "ghcr.io:/app",
            "ghcr.io:port/app",
            "-ghcr.io/app",
            "ghcr..io/app",
            "ghcr_io.com/app",
            "[::1/app",
            "[zz::1]:5000/app",
            "[::1]x/app",
            "app:.tag",
            "app:-tag",
            "app:t:t",
            "app:v1/x",
            "ghcr.io/org/app:v1:v2",
            "app\u{e9}",
            &upper_digest,
            &long_digest,
            &other_algorithm,
            &tag129,
            &name256,
            &name256_with_tag,
        ] {
            assert!(ImageRef::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn messages_say_which_part_is_wrong_without_echoing_it() {
        let name = ImageRef::parse("Secret").unwrap_err();
        assert!(name.0.contains("path components"), "{name}");
        let tag = ImageRef::parse("app:-secret").unwrap_err();
        assert!(tag.0.contains("tag"), "{tag}");
        let digest = ImageRef::parse("app@sha256:secret").unwrap_err();
        assert!(digest.0.contains("digest"), "{digest}");
        for err in [name, tag, digest] {
            assert!(!err.0.to_lowercase().contains("secret"), "{err}");
        }
    }

    #[test]
    fn parts() {
        let image = parse(&format!("localhost:5000/org/app:v1@sha256:{HEX64}"));
        assert_eq!(image.registry(), Some("localhost:5000"));
        assert_eq!(image.name(), "localhost:5000/org/app");
        assert_eq!(image.tag(), Some("v1"));
        assert_eq!(image.digest(), Some(format!("sha256:{HEX64}").as_str()));

        let image = parse("nginx");
        assert_eq!(image.registry(), None);
        assert_eq!(image.name(), "nginx");
        assert_eq!(image.tag(), None);
        assert_eq!(image.digest(), None);

        let image = parse("library/nginx:1.27-alpine");
        assert_eq!(image.registry(), None);
        assert_eq!(image.name(), "library/nginx");
        assert_eq!(image.tag(), Some("1.27-alpine"));

        let image = parse("localhost:5000/app");
        assert_eq!(image.registry(), Some("localhost:5000"));
        assert_eq!(image.tag(), None);

        let image = parse(&format!("redis@sha256:{HEX64}"));
        assert_eq!(image.name(), "redis");
        assert_eq!(image.tag(), None);
    }
}
