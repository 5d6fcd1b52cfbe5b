//! Paths inside a container: where a volume is mounted and what the health
//! check requests.

use super::Invalid;
use super::names::string_newtype;

const MAX_PATH_LEN: usize = 1024;

/// Where a volume is mounted: an absolute path other than `/`, of at most 1024
/// characters, without empty, `.` or `..` segments, ':', white space or
/// control characters. A single trailing `/` is dropped; nothing else is
/// normalised.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MountPath(String);

impl MountPath {
    pub const MAX_LEN: usize = MAX_PATH_LEN;

    pub fn parse(value: &str) -> Result<Self, Invalid> {
        let invalid = || {
            Invalid::new(format!(
                "must be an absolute path other than '/' of at most {} characters, without \
                 empty, '.' or '..' segments, ':', white space or control characters",
                Self::MAX_LEN
            ))
        };
        // Characters, as the description's maxLength counts them.
        if value.chars().count() > Self::MAX_LEN {
            return Err(invalid());
        }
        let path = value.strip_suffix('/').unwrap_or(value);
        let Some(rest) = path.strip_prefix('/') else {
            return Err(invalid());
        };
        let valid = rest
            .split('/')
            .all(|segment| !matches!(segment, "" | "." | ".."))
            && !path
                .chars()
                .any(|c| c == ':' || c.is_whitespace() || c.is_control());
        if valid {
            Ok(Self(path.to_owned()))
        } else {
            Err(invalid())
        }
    }
}
string_newtype!(MountPath);

/// White space (`char::is_whitespace`) and control characters
/// (`char::is_control`), as a character class's ranges.
const WHITE_SPACE_OR_CONTROL: &str =
    r"\x00-\x20\x7f-\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000";

impl utoipa::PartialSchema for MountPath {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        // Segments of allowed characters, none `.` or `..` (the lookahead),
        // and one trailing '/' at most.
        let pattern = format!(r"^(?:/(?!\.\.?(?:/|$))[^/:{WHITE_SPACE_OR_CONTROL}]+)+/?$");
        super::string_schema(
            None,
            Some(Self::MAX_LEN),
            &pattern,
            "An absolute path in the container other than `/`, without empty, `.` or `..` \
             segments, ':', white space or control characters.",
        )
    }
}

impl utoipa::ToSchema for MountPath {}

/// The path an HTTP health check requests: starts with `/`, at most 1024
/// characters, printable ASCII without spaces (a URL path with an optional
/// query).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HealthCheckPath(String);

impl HealthCheckPath {
    pub const MAX_LEN: usize = MAX_PATH_LEN;

    pub fn parse(value: &str) -> Result<Self, Invalid> {
        let valid = value.len() <= Self::MAX_LEN
            && value.starts_with('/')
            && value.bytes().all(|b| b.is_ascii_graphic());
        if valid {
            Ok(Self(value.to_owned()))
        } else {
            Err(Invalid::new(format!(
                "must be a URL path starting with '/' of at most {} printable ASCII characters \
                 without spaces",
                Self::MAX_LEN
            )))
        }
    }
}
string_newtype!(HealthCheckPath);

impl utoipa::PartialSchema for HealthCheckPath {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        super::string_schema(
            None,
            Some(Self::MAX_LEN),
            r"^/[!-~]*$",
            "A URL path (and query) starting with '/', printable ASCII without spaces.",
        )
    }
}

impl utoipa::ToSchema for HealthCheckPath {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mount_paths() {
        let max = format!("/{}", "a".repeat(1023));
        for good in [
            "/data",
            "/var/lib/postgresql/data",
            "/a",
            "/srv/my-app_files.v2",
            "/.config",
            "/a/...",
            "/données",
            &max,
        ] {
            let path = MountPath::parse(good).unwrap();
            assert_eq!(path.as_str(), good);
            assert_eq!(path.to_string(), good);
            assert_eq!(path.as_ref(), good);
        }
        for bad in [
            "",
            "/",
            "//",
            "data",
            "./data",
            "/data//",
            "//data",
            "/a//b",
            "/a/../b",
            "/..",
            "/a/..",
            "/a/./b",
            "/.",
            "/c:/x",
            "/a:b",
            "/a b",
            "/a\tb",
            "/a\nb",
            "/a\u{0}b",
            "/a\u{7f}b",
            "/a\u{a0}b",
            &format!("{max}a"),
            &format!("{max}/"),
        ] {
            let err = MountPath::parse(bad).unwrap_err();
            assert!(err.0.contains("absolute path"), "{bad:?}: {err}");
        }
    }

    #[test]
    fn mount_paths_drop_one_trailing_slash() {
        assert_eq!(MountPath::parse("/data/").unwrap().as_str(), "/data");
        assert_eq!(
            MountPath::parse("/var/lib/").unwrap().into_inner(),
            "/var/lib"
        );
        assert!(MountPath::parse("/data//").is_err());
    }

    #[test]
    fn health_check_paths() {
        let max = format!("/{}", "h".repeat(1023));
        for good in [
            "/",
            "/healthz",
            "/health/ready",
            "/status?verbose=1&x=%20",
            "/a:b",
            "//double",
            "/~user/#frag",
            &max,
        ] {
            let path = HealthCheckPath::parse(good).unwrap();
            assert_eq!(path.as_str(), good);
            assert_eq!(path.to_string(), good);
        }
        for bad in [
            "",
            "healthz",
            "http://x/healthz",
            " /healthz",
            "/health z",
            "/health\t",
            "/health\n",
            "/h\u{7f}",
            "/santé",
            &format!("{max}h"),
        ] {
            let err = HealthCheckPath::parse(bad).unwrap_err();
            assert!(err.0.contains("starting with '/'"), "{bad:?}: {err}");
        }
    }
}
