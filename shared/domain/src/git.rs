//! What an app built from source names in git: the repository's URL, the
//! ref to build, and paths inside the repository.
//!
//! - A repository is an `https://` URL with a host and a path, and nothing
//!   a clone could be tricked with: no credentials (`user:token@`), no
//!   query or fragment, no whitespace or control characters, at most
//!   [`GitRepo::MAX_LEN`] characters. Private repositories are cloned
//!   with the credential of the app's `git_secret`, never one in the URL.
//!   Its host is a DNS name with a dot whose last label is a top-level
//!   domain's (letters, or an `xn--` label): never an IP literal in any of
//!   the forms resolvers take (`10.0.0.1`, `0x7f.1`, `2130706433`), a
//!   single label (`localhost`, `intranet`) or a `.localhost` name. Where
//!   a name leads is checked when the build resolves it (the `source`
//!   step refuses loopback, link-local and private addresses). A
//!   repository stored before these host rules is read with
//!   [`GitRepo::parse_stored`]: it keeps building, and a change of the
//!   source must meet them.
//! - A ref (branch, tag or commit) follows git's own rules
//!   (`git check-ref-format`): no component starting with `.` or ending
//!   with `.lock`, no `..`, `@{`, `\`, space, `~`, `^`, `:`, `?`, `*`,
//!   `[` or control character, no leading, trailing or doubled `/`, not
//!   ending with `.`, not `@`; besides, not starting with `-` (it would
//!   read as an option to git) and at most [`GitRef::MAX_LEN`] characters.
//! - A path in the repository is relative, `/`-separated, with no `.` or
//!   `..` component, at most [`RepoPath::MAX_LEN`] characters.

use super::Invalid;
use super::names::string_newtype;

/// What a webhook's build of an app following its repository's default
/// branch holds the pushed commit to (`BuildSpec::branch`): the
/// repository's `HEAD`, resolved by the build's `source` step from the
/// repository itself. Never a branch's name: git refuses `HEAD` as one
/// (`git check-ref-format --branch HEAD`), and a payload's word for the
/// default branch is its signer's to choose.
pub const REPOSITORY_HEAD: &str = "HEAD";

/// An `https://` URL of a git repository, kept as given.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GitRepo(String);

impl GitRepo {
    pub const MAX_LEN: usize = 512;

    /// A repository as the API takes it: the URL's rules and the host's.
    pub fn parse(value: &str) -> Result<Self, Invalid> {
        let repo = Self::parse_stored(value)?;
        if is_public_dns_name(repo.host()) {
            Ok(repo)
        } else {
            Err(Invalid::new(
                "must name its host by a DNS name with a dot and a top-level domain \
                 (git.example.com), never an IP address, a single label such as localhost, \
                 or a .localhost name",
            ))
        }
    }

    /// A repository as stored: the URL's rules without the host's, which
    /// came later (a source stored before them keeps building).
    pub fn parse_stored(value: &str) -> Result<Self, Invalid> {
        let rule = || {
            Invalid::new(format!(
                "must be an https:// URL of a git repository (host and path, no credentials, \
                 query or fragment), at most {} characters",
                Self::MAX_LEN
            ))
        };
        if value.len() > Self::MAX_LEN {
            return Err(rule());
        }
        let rest = value.strip_prefix("https://").ok_or_else(rule)?;
        let (authority, path) = rest.split_once('/').ok_or_else(rule)?;
        if authority.contains('@') {
            return Err(Invalid::new(
                "must not hold credentials (user:token@): name a secret of the environment in \
                 git_secret instead",
            ));
        }
        let (host, port) = match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        };
        let host_ok = !host.is_empty()
            && host.len() <= 253
            && host.split('.').all(|label| {
                !label.is_empty()
                    && label.len() <= 63
                    && label
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-')
                    && !label.starts_with('-')
                    && !label.ends_with('-')
            });
        let port_ok = port.is_none_or(|port| {
            !port.is_empty() && port.len() <= 5 && port.bytes().all(|b| b.is_ascii_digit())
        });
        let path_ok = !path.is_empty()
            && path.bytes().all(|b| {
                b.is_ascii_alphanumeric() || matches!(b, b'/' | b'-' | b'_' | b'.' | b'~' | b'%')
            })
            && path
                .split('/')
                .all(|component| component != "." && component != "..");
        if host_ok && port_ok && path_ok {
            Ok(Self(value.to_owned()))
        } else {
            Err(rule())
        }
    }
}

string_newtype!(GitRepo);

impl GitRepo {
    /// The host, without its port: `git.example.com`.
    pub fn host(&self) -> &str {
        let authority = &self.origin()["https://".len()..];
        authority
            .rsplit_once(':')
            .map_or(authority, |(host, _)| host)
    }

    /// The scheme and host (with its port, if any) the repository is
    /// reached at, `https://git.example.com`: what a credential given for
    /// it is scoped to.
    pub fn origin(&self) -> &str {
        let rest = &self.0["https://".len()..];
        let authority = rest
            .split_once('/')
            .map_or(rest, |(authority, _)| authority);
        &self.0[.."https://".len() + authority.len()]
    }
}

/// Whether `host` (DNS labels, as the URL's rules left it) is a name with
/// a dot whose last label is a top-level domain's: letters, or an IDNA
/// `xn--` label. Every IPv4 literal a resolver takes ends in digits or a
/// hex number, so none passes; nor do single labels and `.localhost`
/// names (RFC 6761: loopback).
fn is_public_dns_name(host: &str) -> bool {
    let Some((_, top)) = host.rsplit_once('.') else {
        return false;
    };
    let top = top.to_ascii_lowercase();
    let is_tld = (top.len() >= 2 && top.bytes().all(|b| b.is_ascii_alphabetic()))
        || (top.starts_with("xn--") && top.len() > 4);
    is_tld && top != "localhost"
}

/// [`GitRepo::parse`]'s rules as the description states them (ECMA-262;
/// Python's `re` reads it alike): `https://`, a host of DNS labels (253
/// characters at most, the first lookahead; not under `.localhost`, the
/// second) with a dot before its last label, a top-level domain's (letters,
/// or `xn--`), an optional port, then a path of the characters allowed, no
/// `.` or `..` component (the last two lookaheads). The length is
/// `maxLength`'s.
const GIT_REPO_PATTERN: &str = r"^https://(?=[^/:]{1,253}[:/])(?![^/:]*\.[Ll][Oo][Cc][Aa][Ll][Hh][Oo][Ss][Tt][:/])(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+(?:[A-Za-z]{2,63}|[Xx][Nn]--[A-Za-z0-9-]{0,58}[A-Za-z0-9])(?::[0-9]{1,5})?/(?!\.\.?(?:/|$))(?!.*/\.\.?(?:/|$))[A-Za-z0-9/_.~%-]+$";

impl utoipa::PartialSchema for GitRepo {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        super::string_schema(
            None,
            Some(Self::MAX_LEN),
            GIT_REPO_PATTERN,
            "An `https://` URL of a git repository: host and path, no credentials, query or \
             fragment. The host is a DNS name with a dot and a top-level domain, never an IP \
             address or a single label.",
        )
    }
}

impl utoipa::ToSchema for GitRepo {}

/// A branch, tag or commit, by git's ref-format rules (see the module).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GitRef(String);

impl GitRef {
    pub const MAX_LEN: usize = 255;

    pub fn parse(value: &str) -> Result<Self, Invalid> {
        if is_ref(value) {
            Ok(Self(value.to_owned()))
        } else {
            Err(Invalid::new(format!(
                "must be a git branch, tag or commit of at most {} characters by git's \
                 ref-format rules: no space, control character, '~', '^', ':', '?', '*', '[', \
                 '\\', '..' or '@{{'; no component starting with '.' or ending with '.lock'; \
                 no leading, trailing or doubled '/'; not ending with '.', not '@', not \
                 starting with '-'",
                Self::MAX_LEN
            )))
        }
    }
}

string_newtype!(GitRef);

/// [`GitRef::parse`]'s rules as the description states them (ECMA-262, as
/// JSON Schema reads a pattern; Python's `re` reads it alike): each
/// negative lookahead one rule, then '/'-separated components of the
/// characters a ref may hold. The length is `maxLength`'s.
const GIT_REF_PATTERN: &str = r"^(?!-)(?!@$)(?!.*\.\.)(?!.*@\{)(?!.*\.$)(?!.*\.lock(?:/|$))(?!(?:.*/)?\.)[^\x00-\x20\x7f~^:?*\[\\/]+(?:/[^\x00-\x20\x7f~^:?*\[\\/]+)*$";

impl utoipa::PartialSchema for GitRef {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        super::string_schema(
            Some(1),
            Some(Self::MAX_LEN),
            GIT_REF_PATTERN,
            "A git branch, tag or commit, by git's ref-format rules (`git check-ref-format`), \
             not starting with `-`.",
        )
    }
}

impl utoipa::ToSchema for GitRef {}

fn is_ref(value: &str) -> bool {
    !value.is_empty()
        // Characters, as the description's maxLength counts them.
        && value.chars().count() <= GitRef::MAX_LEN
        && value != "@"
        && !value.starts_with('-')
        && !value.ends_with('.')
        && !value.contains("..")
        && !value.contains("@{")
        && !value.bytes().any(|b| {
            b < 0x20
                || b == 0x7f
                || matches!(b, b' ' | b'~' | b'^' | b':' | b'?' | b'*' | b'[' | b'\\')
        })
        && value.split('/').all(|component| {
            !component.is_empty() && !component.starts_with('.') && !component.ends_with(".lock")
        })
}

/// A relative path inside a repository (a build's context directory, a
/// Dockerfile), kept as given.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RepoPath(String);

impl RepoPath {
    pub const MAX_LEN: usize = 255;

    pub fn parse(value: &str) -> Result<Self, Invalid> {
        let ok = !value.is_empty()
            && value.len() <= Self::MAX_LEN
            && !value.starts_with('/')
            && !value.bytes().any(|b| b < 0x20 || b == 0x7f || b == b'\\')
            && value
                .trim_end_matches('/')
                .split('/')
                .all(|component| !component.is_empty() && component != "." && component != "..");
        if ok {
            Ok(Self(value.to_owned()))
        } else {
            Err(Invalid::new(format!(
                "must be a path relative to the repository's root: '/'-separated names, no \
                 leading '/', no '.' or '..' component, at most {} characters",
                Self::MAX_LEN
            )))
        }
    }
}

string_newtype!(RepoPath);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repositories_are_https_urls_without_credentials() {
        for good in [
            "https://github.com/acme/shop",
            "https://github.com/acme/shop.git",
            "https://git.example.com:8443/group/sub/shop.git",
            "https://gitlab.com/acme/shop_2-x",
        ] {
            assert!(GitRepo::parse(good).is_ok(), "{good}");
        }
        for bad in [
            "http://github.com/acme/shop",
            "git@github.com:acme/shop.git",
            "ssh://git@github.com/acme/shop",
            "https://github.com",
            "https://github.com/",
            "https:///acme/shop",
            "https://github.com/acme/shop?x=1",
            "https://github.com/acme/shop#main",
            "https://github.com/acme/sh op",
            "https://github.com/acme/../shop",
            "https://-bad.com/acme/shop",
            "https://github.com:x/acme/shop",
            "HTTPS://github.com/acme/shop",
        ] {
            assert!(GitRepo::parse(bad).is_err(), "{bad}");
        }
        let long = format!("https://github.com/{}", "a".repeat(GitRepo::MAX_LEN));
        assert!(GitRepo::parse(&long).is_err());
    }

    #[test]
    fn a_repositorys_host_is_a_dns_name_never_an_address() {
        for good in [
            "https://git.example.com/acme/shop",
            "https://GitHub.COM/acme/shop",
            "https://git.xn--bcher-kva.example/acme/shop",
            "https://code.example.xn--p1ai:8443/acme/shop",
            "https://localhost.example.com/acme/shop",
        ] {
            assert!(GitRepo::parse(good).is_ok(), "{good}");
        }
        for bad in [
            "https://10.0.0.1/x",
            "https://169.254.169.254/x",
            "https://127.0.0.1:8443/x",
            "https://localhost/x",
            "https://intranet/x",
            "https://0x7f.1/x",
            "https://2130706433/x",
            "https://1.2.3.0x4/x",
            "https://git.localhost/x",
            "https://git.LOCALHOST:443/x",
            "https://git.example.c/x",
            "https://git.example.123/x",
        ] {
            let error = GitRepo::parse(bad).expect_err(bad);
            assert!(error.0.contains("DNS name"), "{bad}: {error}");
            // Stored before the host rules: still a repository to build.
            assert!(GitRepo::parse_stored(bad).is_ok(), "{bad}");
        }
    }

    #[test]
    fn a_repositorys_origin_is_its_scheme_host_and_port() {
        for (repo, origin) in [
            ("https://github.com/acme/shop", "https://github.com"),
            (
                "https://git.example.com:8443/group/sub/shop.git",
                "https://git.example.com:8443",
            ),
        ] {
            assert_eq!(GitRepo::parse(repo).unwrap().origin(), origin);
        }
    }

    #[test]
    fn credentials_in_a_url_are_refused_without_being_echoed() {
        let error = GitRepo::parse("https://me:ghp_SENTINEL@github.com/acme/shop")
            .expect_err("credentials");
        assert!(error.0.contains("git_secret"), "{error}");
        assert!(!error.0.contains("SENTINEL"), "{error}");
    }

    #[test]
    fn refs_follow_gits_rules() {
        for good in [
            "main",
            "release/1.2",
            "v1.2.3",
            "feature/x_y-z",
            "0123456789abcdef0123456789abcdef01234567",
            "refs/heads/main",
        ] {
            assert!(GitRef::parse(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "@",
            "-main",
            "main.",
            "a..b",
            "a@{1}",
            "a b",
            "a~1",
            "a^",
            "a:b",
            "a?",
            "a*",
            "a[",
            "a\\b",
            "/main",
            "main/",
            "a//b",
            ".hidden",
            "a/.b",
            "a.lock",
            "a/b.lock/c",
            "tab\there",
        ] {
            assert!(GitRef::parse(bad).is_err(), "{bad:?}");
        }
        assert!(GitRef::parse(&"a".repeat(GitRef::MAX_LEN)).is_ok());
        assert!(GitRef::parse(&"a".repeat(GitRef::MAX_LEN + 1)).is_err());
    }

    #[test]
    fn repository_paths_stay_inside() {
        for good in ["app", "services/web", "docker/Dockerfile.prod", "web/"] {
            assert!(RepoPath::parse(good).is_ok(), "{good}");
        }
        for bad in ["", "/etc", "..", "a/../b", "./a", "a//b", "a\\b", "a/./b"] {
            assert!(RepoPath::parse(bad).is_err(), "{bad:?}");
        }
    }
}
