//! Names (DESIGN §2): apps, processes, volumes, secrets and their keys,
//! environment variables and the hostnames an app is reached at.

use super::Invalid;

/// The accessors every string newtype of this module shares: `as_str`,
/// `into_inner`, `Display` and `AsRef<str>`.
macro_rules! string_newtype {
    ($name:ident) => {
        impl $name {
            /// The value as parsed.
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// The owned value as parsed.
            pub fn into_inner(self) -> String {
                self.0
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl ::std::convert::AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }
    };
}
pub(crate) use string_newtype;

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?` of any length (callers bound it).
pub(crate) fn is_dns1123_label(value: &str) -> bool {
    let bytes = value.as_bytes();
    bytes
        .iter()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        && bytes.first().is_some_and(u8::is_ascii_alphanumeric)
        && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
}

/// `[a-z]([-a-z0-9]*[a-z0-9])?` of 1 to `max` characters.
fn is_dns1035_label(value: &str, max: usize) -> bool {
    value.len() <= max
        && is_dns1123_label(value)
        && value.as_bytes().first().is_some_and(u8::is_ascii_lowercase)
}

fn dns1035_label(value: &str, max: usize) -> Result<String, Invalid> {
    if is_dns1035_label(value, max) {
        Ok(value.to_owned())
    } else {
        Err(Invalid::new(format!(
            "must be a DNS-1035 label (lowercase letters, digits and '-', starting with a letter \
             and ending with a letter or digit) of 1 to {max} characters"
        )))
    }
}

/// What separates the parts of an app's default host
/// (`{app}--{environment}--{project}`, see `berth_controller::render`). No app,
/// environment or project made since may contain it, so that host names
/// exactly one app; names made before keep working.
pub const HOST_PART_SEPARATOR: &str = "--";

/// Refuses a new name that contains [`HOST_PART_SEPARATOR`].
pub fn check_host_part(value: &str) -> Result<(), Invalid> {
    if value.contains(HOST_PART_SEPARATOR) {
        Err(Invalid::new(
            "must not contain '--' (it separates the parts of an app's default host)",
        ))
    } else {
        Ok(())
    }
}

/// An app's name: a DNS-1035 label of 1 to 40 characters.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AppName(String);

impl AppName {
    pub const MAX_LEN: usize = 40;

    /// An existing app's name (it may predate [`Self::parse_new`]'s rule).
    pub fn parse(value: &str) -> Result<Self, Invalid> {
        dns1035_label(value, Self::MAX_LEN).map(Self)
    }

    /// The name of an app about to be made: also without `--`.
    pub fn parse_new(value: &str) -> Result<Self, Invalid> {
        let name = Self::parse(value)?;
        check_host_part(value)?;
        Ok(name)
    }
}
string_newtype!(AppName);

/// An environment's short name: a DNS label of 1 to 22 characters, so that
/// `{project}-{environment}` (its namespace) is one too.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EnvironmentName(String);

impl EnvironmentName {
    pub const MAX_LEN: usize = 22;

    pub fn parse(value: &str) -> Result<Self, Invalid> {
        if value.len() <= Self::MAX_LEN && is_dns1123_label(value) {
            Ok(Self(value.to_owned()))
        } else {
            Err(Invalid::new(format!(
                "must be a DNS label (lowercase letters, digits and '-', starting and ending \
                 with a letter or digit) of 1 to {} characters",
                Self::MAX_LEN
            )))
        }
    }
}
string_newtype!(EnvironmentName);

/// A process of an app: a DNS-1035 label of 1 to 20 characters (it becomes
/// part of `{app}-{process}` object names).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProcessName(String);

impl ProcessName {
    pub const MAX_LEN: usize = 20;

    pub fn parse(value: &str) -> Result<Self, Invalid> {
        dns1035_label(value, Self::MAX_LEN).map(Self)
    }
}
string_newtype!(ProcessName);

/// A volume of an app: a DNS-1035 label of 1 to 20 characters.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VolumeName(String);

impl VolumeName {
    pub const MAX_LEN: usize = 20;

    pub fn parse(value: &str) -> Result<Self, Invalid> {
        dns1035_label(value, Self::MAX_LEN).map(Self)
    }
}
string_newtype!(VolumeName);

/// A secret's name: a DNS-1123 subdomain of 1 to 253 characters, that is
/// dot-separated parts of lowercase letters, digits and '-', each starting and
/// ending with a letter or digit (Kubernetes bounds only the whole length, not
/// each part's).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SecretName(String);

impl SecretName {
    pub const MAX_LEN: usize = 253;

    pub fn parse(value: &str) -> Result<Self, Invalid> {
        if value.len() <= Self::MAX_LEN && value.split('.').all(is_dns1123_label) {
            Ok(Self(value.to_owned()))
        } else {
            Err(Invalid::new(format!(
                "must be a DNS subdomain (dot-separated parts of lowercase letters, digits and \
                 '-', each starting and ending with a letter or digit) of 1 to {} characters",
                Self::MAX_LEN
            )))
        }
    }
}
string_newtype!(SecretName);

/// A key inside a secret: letters, digits, '-', '_' and '.', 1 to 253
/// characters, and neither `.` nor `..`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SecretKey(String);

impl SecretKey {
    pub const MAX_LEN: usize = 253;

    pub fn parse(value: &str) -> Result<Self, Invalid> {
        let valid = (1..=Self::MAX_LEN).contains(&value.len())
            && value
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
            && value != "."
            && value != "..";
        if valid {
            Ok(Self(value.to_owned()))
        } else {
            Err(Invalid::new(format!(
                "must be 1 to {} letters, digits, '-', '_' and '.', and not '.' or '..'",
                Self::MAX_LEN
            )))
        }
    }
}
string_newtype!(SecretKey);

/// An environment variable's name: `[A-Za-z_][A-Za-z0-9_]*`, 1 to 256
/// characters.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EnvName(String);

impl EnvName {
    pub const MAX_LEN: usize = 256;

    pub fn parse(value: &str) -> Result<Self, Invalid> {
        let bytes = value.as_bytes();
        let valid = value.len() <= Self::MAX_LEN
            && bytes
                .first()
                .is_some_and(|b| b.is_ascii_alphabetic() || *b == b'_')
            && bytes
                .iter()
                .all(|b| b.is_ascii_alphanumeric() || *b == b'_');
        if valid {
            Ok(Self(value.to_owned()))
        } else {
            Err(Invalid::new(format!(
                "must be letters, digits and '_', not starting with a digit, of 1 to {} characters",
                Self::MAX_LEN
            )))
        }
    }
}
string_newtype!(EnvName);

/// A fully qualified hostname an app is served at (an Ingress host), in its
/// one normal form: lowercase, without the trailing dot of the DNS root
/// (`Shop.Example.COM.` and `shop.example.com` are one hostname). At least
/// two dot-separated DNS labels of at most 63 characters, 253 in all, the
/// last not all digits, and no wildcard.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Hostname(String);

impl Hostname {
    pub const MAX_LEN: usize = 253;
    pub const MAX_LABEL_LEN: usize = 63;

    /// Parses `value` case-insensitively and drops one trailing dot; the
    /// hostname keeps its normal form.
    pub fn parse(value: &str) -> Result<Self, Invalid> {
        let host = value
            .strip_suffix('.')
            .unwrap_or(value)
            .to_ascii_lowercase();
        if host.contains('*') {
            return Err(Invalid::new("wildcard hosts are not supported"));
        }
        let labels: Vec<&str> = host.split('.').collect();
        let valid = host.len() <= Self::MAX_LEN
            && labels.len() >= 2
            && labels
                .iter()
                .all(|label| label.len() <= Self::MAX_LABEL_LEN && is_dns1123_label(label));
        if !valid {
            return Err(Invalid::new(format!(
                "must be a fully qualified hostname (at least two dot-separated labels of \
                 lowercase letters, digits and '-', each starting and ending with a letter or \
                 digit and at most {} characters) of at most {} characters",
                Self::MAX_LABEL_LEN,
                Self::MAX_LEN
            )));
        }
        if labels
            .last()
            .is_some_and(|tld| tld.bytes().all(|b| b.is_ascii_digit()))
        {
            return Err(Invalid::new("must be a hostname, not an IP address"));
        }
        Ok(Self(host))
    }
}
string_newtype!(Hostname);

impl Hostname {
    /// Whether this hostname is `domain` or a name under it.
    pub fn is_within(&self, domain: &Hostname) -> bool {
        self.0
            .strip_suffix(domain.as_str())
            .is_some_and(|head| head.is_empty() || head.ends_with('.'))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn long(c: char, n: usize) -> String {
        std::iter::repeat_n(c, n).collect()
    }

    #[test]
    fn app_names() {
        for good in ["a", "web", "web-1", "a1", "a-b-c", &long('a', 40)] {
            let name = AppName::parse(good).unwrap();
            assert_eq!(name.as_str(), good);
            assert_eq!(name.to_string(), good);
            assert_eq!(name.as_ref(), good);
            assert_eq!(name.into_inner(), good);
        }
        for bad in [
            "",
            "1abc",
            "-a",
            "a-",
            "Web",
            "a_b",
            "a.b",
            "a b",
            " a",
            "ä",
            &long('a', 41),
        ] {
            assert!(AppName::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn new_app_names_have_no_host_part_separator() {
        for old in ["web--staging", "a--b--c"] {
            assert!(
                AppName::parse(old).is_ok(),
                "{old}: existing apps keep working"
            );
            let err = AppName::parse_new(old).unwrap_err();
            assert!(err.0.contains("'--'"), "{err}");
        }
        for good in ["web-staging", "a-b-c", "web"] {
            assert_eq!(AppName::parse_new(good).unwrap().as_str(), good);
        }
        // The label rule comes first.
        assert!(
            AppName::parse_new("Web--x")
                .unwrap_err()
                .0
                .contains("DNS-1035")
        );
    }

    #[test]
    fn hostnames_within_a_domain() {
        let apps = Hostname::parse("apps.example.net").unwrap();
        for within in [
            "apps.example.net",
            "x.apps.example.net",
            "a.b.Apps.Example.net.",
        ] {
            assert!(
                Hostname::parse(within).unwrap().is_within(&apps),
                "{within}"
            );
        }
        for outside in [
            "myapps.example.net",
            "apps.example.net.evil.org",
            "example.net",
        ] {
            assert!(
                !Hostname::parse(outside).unwrap().is_within(&apps),
                "{outside}"
            );
        }
    }

    #[test]
    fn process_and_volume_names() {
        for good in ["web", "worker-2", "x", &long('p', 20)] {
            assert_eq!(ProcessName::parse(good).unwrap().as_str(), good);
            assert_eq!(VolumeName::parse(good).unwrap().as_str(), good);
        }
        for bad in ["", "2web", "web-", "Web", "we.b", &long('p', 21)] {
            assert!(ProcessName::parse(bad).is_err(), "{bad:?}");
            assert!(VolumeName::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn dns1035_message_names_the_rule_not_the_value() {
        let err = AppName::parse("Secret-Value").unwrap_err();
        assert!(err.0.contains("DNS-1035 label"), "{err}");
        assert!(err.0.contains("1 to 40"), "{err}");
        assert!(!err.0.contains("Secret-Value"));
        let err = ProcessName::parse("").unwrap_err();
        assert!(err.0.contains("1 to 20"), "{err}");
    }

    #[test]
    fn secret_names() {
        let max = format!("{}.{}", long('a', 126), long('b', 126));
        assert_eq!(max.len(), 253);
        for good in [
            "a",
            "db",
            "1db",
            "db-creds",
            "db.creds",
            "tls.example.com",
            "a.b.c.d",
            &long('a', 64),
            &long('a', 253),
            &max,
        ] {
            assert_eq!(SecretName::parse(good).unwrap().as_str(), good);
        }
        for bad in [
            "",
            ".",
            ".a",
            "a.",
            "a..b",
            "-a",
            "a-",
            "a.-b",
            "a-.b",
            "Db",
            "db_creds",
            "db creds",
            "db/creds",
            &long('a', 254),
        ] {
            let err = SecretName::parse(bad).unwrap_err();
            assert!(err.0.contains("DNS subdomain"), "{bad:?}: {err}");
        }
    }

    #[test]
    fn secret_keys() {
        for good in [
            "a",
            "A",
            "password",
            "DATABASE_URL",
            "tls.crt",
            ".env",
            "...",
            "a-b_c.d",
            "_",
            "-",
            &long('k', 253),
        ] {
            assert_eq!(SecretKey::parse(good).unwrap().as_str(), good);
        }
        for bad in [
            "",
            ".",
            "..",
            "a/b",
            "a b",
            "a:b",
            "ä",
            "a=b",
            &long('k', 254),
        ] {
            assert!(SecretKey::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn env_names() {
        for good in [
            "A",
            "_",
            "_A",
            "PATH",
            "database_url",
            "A1",
            "MixedCase_9",
            &long('E', 256),
        ] {
            assert_eq!(EnvName::parse(good).unwrap().as_str(), good);
        }
        for bad in [
            "",
            "1A",
            "A-B",
            "A.B",
            "A B",
            "A=B",
            " A",
            "Ä",
            &long('E', 257),
        ] {
            assert!(EnvName::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn hostnames() {
        let label = long('a', 63);
        // 63 + 1 + 63 + 1 + 63 + 1 + 61 = 253
        let max = format!("{label}.{label}.{label}.{}", long('b', 61));
        assert_eq!(max.len(), 253);
        for good in [
            "example.com",
            "www.example.com",
            "a.b",
            "x-1.example.co.uk",
            "1.example.com",
            "123.example.io",
            "xn--bcher-kva.example",
            "example.a1",
            &format!("{label}.com"),
            &max,
        ] {
            assert_eq!(Hostname::parse(good).unwrap().as_str(), good);
        }
        // The trailing dot does not count against the length.
        assert_eq!(Hostname::parse(&format!("{max}.")).unwrap().as_str(), max);
        for bad in [
            "",
            "localhost",
            "com",
            "com.",
            "example.com..",
            ".",
            ".example.com",
            "a..b",
            "-a.com",
            "a-.com",
            "a_b.com",
            "a b.com",
            "bücher.example",
            "example.com:443",
            "https://example.com",
            "example.com/path",
            "::1",
            &format!("{}.com", long('a', 64)),
            &format!("{max}a"),
        ] {
            assert!(Hostname::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn hostnames_have_one_normal_form() {
        for variant in ["WWW.Example.COM", "www.example.com.", "Www.Example.Com."] {
            let host = Hostname::parse(variant).unwrap();
            assert_eq!(host.as_str(), "www.example.com", "{variant}");
            assert_eq!(host, Hostname::parse("www.example.com").unwrap());
        }
    }

    #[test]
    fn hostnames_refuse_ip_addresses_and_wildcards_with_their_own_message() {
        for ip in ["10.0.0.1", "192.168.1.254", "1.2"] {
            let err = Hostname::parse(ip).unwrap_err();
            assert_eq!(err.0, "must be a hostname, not an IP address", "{ip}");
        }
        for wildcard in ["*.example.com", "*", "a.*.com"] {
            let err = Hostname::parse(wildcard).unwrap_err();
            assert_eq!(err.0, "wildcard hosts are not supported", "{wildcard}");
        }
        let err = Hostname::parse("Not A Host").unwrap_err();
        assert!(err.0.contains("fully qualified hostname"), "{err}");
        assert!(!err.0.to_lowercase().contains("not a host"));
    }
}
