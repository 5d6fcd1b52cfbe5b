//! Names: organizations, projects, environments, apps,
//! processes, volumes, secrets and their keys, environment variables,
//! namespaces and the hostnames an app is reached at.
//!
//! The DNS-label names share one rule, [`Label`]: it parses them, says what
//! they must be, and makes their OpenAPI schema (pattern and lengths), so no
//! pattern is written twice. Each name type carries its schema
//! (`utoipa::ToSchema`), and deserializes through its parser.

use serde::{Deserialize, Serialize};
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};

use super::Invalid;

/// The accessors every string newtype of the domain shares: `as_str`,
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

/// What a name parsed from JSON or a URL shares: serde through its parser
/// (`try_from`/`into` a string) and its OpenAPI schema, `$schema`.
macro_rules! parsed_name {
    ($name:ident, $schema:expr) => {
        string_newtype!($name);

        impl ::std::convert::TryFrom<String> for $name {
            type Error = Invalid;

            fn try_from(value: String) -> Result<Self, Invalid> {
                Self::parse(&value)
            }
        }

        impl ::std::convert::From<$name> for String {
            fn from(name: $name) -> String {
                name.0
            }
        }

        impl utoipa::PartialSchema for $name {
            fn schema() -> RefOr<Schema> {
                $schema.into()
            }
        }

        impl utoipa::ToSchema for $name {}
    };
}
pub(crate) use parsed_name;

/// A DNS label of 1 to `max` characters: lowercase letters, digits and
/// '-', ending with a letter or digit, and starting with one (RFC 1123) or
/// with a letter (RFC 1035, what Kubernetes asks of Service names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Label {
    letter_first: bool,
    max: usize,
}

/// The pattern of [`Label::dns1123`], and of its names made since `--` is
/// refused (see [`HOST_PART_SEPARATOR`]).
const DNS1123_PATTERN: &str = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$";
const DNS1123_NEW_PATTERN: &str = r"^[a-z0-9](-?[a-z0-9])*$";
/// The same of [`Label::dns1035`].
const DNS1035_PATTERN: &str = r"^[a-z]([-a-z0-9]*[a-z0-9])?$";
const DNS1035_NEW_PATTERN: &str = r"^[a-z](-?[a-z0-9])*$";

impl Label {
    /// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`
    pub const fn dns1123(max: usize) -> Self {
        Self {
            letter_first: false,
            max,
        }
    }

    /// `[a-z]([-a-z0-9]*[a-z0-9])?`
    pub const fn dns1035(max: usize) -> Self {
        Self {
            letter_first: true,
            max,
        }
    }

    pub const fn max_len(self) -> usize {
        self.max
    }

    /// Whether `value` is such a label.
    pub fn holds(self, value: &str) -> bool {
        let bytes = value.as_bytes();
        let first_ok = |b: &u8| {
            if self.letter_first {
                b.is_ascii_lowercase()
            } else {
                b.is_ascii_alphanumeric()
            }
        };
        (1..=self.max).contains(&bytes.len())
            && bytes
                .iter()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
            && bytes.first().is_some_and(first_ok)
            && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
    }

    /// `value` as such a label, or what it must be.
    pub fn check(self, value: &str) -> Result<(), Invalid> {
        if self.holds(value) {
            Ok(())
        } else if self.letter_first {
            Err(Invalid::new(format!(
                "must be a DNS-1035 label (lowercase letters, digits and '-', starting with a \
                 letter and ending with a letter or digit) of 1 to {} characters",
                self.max
            )))
        } else {
            Err(Invalid::new(format!(
                "must be a DNS label (lowercase letters, digits and '-', starting and ending \
                 with a letter or digit) of 1 to {} characters",
                self.max
            )))
        }
    }

    /// [`Self::check`], and without [`HOST_PART_SEPARATOR`]: the name of an
    /// object about to be made.
    pub fn check_new(self, value: &str) -> Result<(), Invalid> {
        self.check(value)?;
        check_host_part(value)
    }

    /// The regular expression of [`Self::holds`] (without the length), or
    /// with `new`, of [`Self::check_new`].
    pub const fn pattern(self, new: bool) -> &'static str {
        match (self.letter_first, new) {
            (false, false) => DNS1123_PATTERN,
            (false, true) => DNS1123_NEW_PATTERN,
            (true, false) => DNS1035_PATTERN,
            (true, true) => DNS1035_NEW_PATTERN,
        }
    }

    /// The OpenAPI schema of such a label (with `new`, of a new object's name).
    pub fn schema(self, new: bool) -> Schema {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .min_length(Some(1))
            .max_length(Some(self.max))
            .pattern(Some(self.pattern(new)))
            .into()
    }
}

/// A name that is one [`Label`], parsed by it, with its schema; with `new
/// $new`, also the rule of a new one ([`HOST_PART_SEPARATOR`]) and the
/// schema of that, named `$new`.
macro_rules! label_name {
    ($(#[$meta:meta])* $name:ident = $rule:expr) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(String);

        impl $name {
            pub const RULE: Label = $rule;
            pub const MAX_LEN: usize = Self::RULE.max_len();

            pub fn parse(value: &str) -> Result<Self, Invalid> {
                Self::RULE.check(value)?;
                Ok(Self(value.to_owned()))
            }
        }

        parsed_name!($name, Self::RULE.schema(false));
    };
    ($(#[$meta:meta])* $name:ident = $rule:expr, new $new:ident) => {
        label_name!($(#[$meta])* $name = $rule);

        impl $name {
            /// The name of one about to be made: also without `--`. One
            /// made before that rule keeps its name ([`Self::parse`]).
            pub fn parse_new(value: &str) -> Result<Self, Invalid> {
                Self::RULE.check_new(value)?;
                Ok(Self(value.to_owned()))
            }
        }

        #[doc = concat!("The OpenAPI schema of a new [`", stringify!($name), "`] (its `parse_new`): what a create body names it.")]
        pub enum $new {}

        impl utoipa::PartialSchema for $new {
            fn schema() -> RefOr<Schema> {
                $name::RULE.schema(true).into()
            }
        }

        impl utoipa::ToSchema for $new {}
    };
}

/// What separates the parts of an app's default host
/// (`{app}--{environment}--{project}`, see `berth_controller::render`). No
/// app, environment or project made since may contain it, so that host names
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

/// The longest DNS label: what Kubernetes allows in the name of a namespace
/// (and of most objects), and in a label value.
pub const OBJECT_NAME: Label = Label::dns1123(63);

label_name!(
    /// An organization's name: a DNS label of 1 to 40 characters.
    OrgName = Label::dns1123(40)
);

label_name!(
    /// A project's name: a DNS label of 1 to 40 characters, unique across
    /// the platform.
    ProjectName = Label::dns1123(40),
    new NewProjectName
);

label_name!(
    /// An environment's short name: a DNS label of 1 to 22 characters, so
    /// that `{project}-{environment}` (its namespace) is one too.
    EnvironmentName = Label::dns1123(22),
    new NewEnvironmentName
);

label_name!(
    /// An app's name: a DNS-1035 label of 1 to 40 characters.
    AppName = Label::dns1035(40),
    new NewAppName
);

label_name!(
    /// A process of an app: a DNS-1035 label of 1 to 20 characters (it
    /// becomes part of `{app}-{process}` object names).
    ProcessName = Label::dns1035(20)
);

label_name!(
    /// A volume of an app: a DNS-1035 label of 1 to 20 characters.
    VolumeName = Label::dns1035(20)
);

label_name!(
    /// A deploy token's name: a DNS label of 1 to 40 characters, unique in
    /// its project. It names the token's calls, as an actor's email would
    /// (`{token}@{project}.deploy.invalid`), so it is a label.
    DeployTokenName = Label::dns1123(40)
);

label_name!(
    /// A namespace's name: a DNS label of 1 to 63 characters.
    NamespaceName = OBJECT_NAME
);

label_name!(
    /// A template's name in the catalogue: a DNS label of 1 to 63
    /// characters.
    TemplateName = OBJECT_NAME
);

/// A one-off command's name, which the API picks: `cmd-` and 12 of
/// [`CommandName::ALPHABET`], so it has exactly one `-` and no other Job of
/// its namespace (a release's has `--`, a scheduled run's two or more
/// `-`) has it; short enough whatever the app's name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct CommandName(String);

impl CommandName {
    /// Lowercase consonants and digits without look-alikes: no word, no
    /// `0`/`o` or `1`/`l` to misread.
    pub const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    const PREFIX: &str = "cmd-";
    const RANDOM_LEN: usize = 12;
    const PATTERN: &str = "^cmd-[bcdfghjklmnpqrstvwxz2456789]{12}$";

    pub fn parse(value: &str) -> Result<Self, Invalid> {
        let random = value.strip_prefix(Self::PREFIX).unwrap_or_default();
        if random.len() == Self::RANDOM_LEN && random.bytes().all(|b| Self::ALPHABET.contains(&b)) {
            Ok(Self(value.to_owned()))
        } else {
            Err(Invalid::new(format!(
                "must be a command's name: {}",
                Self::PATTERN
            )))
        }
    }

    /// A new name, each character `pick`ed (an index into the alphabet,
    /// taken modulo its length).
    pub fn random(mut pick: impl FnMut() -> usize) -> Self {
        let random: String = (0..Self::RANDOM_LEN)
            .map(|_| Self::ALPHABET[pick() % Self::ALPHABET.len()] as char)
            .collect();
        Self(format!("{}{random}", Self::PREFIX))
    }
}
parsed_name!(
    CommandName,
    ObjectBuilder::new()
        .schema_type(Type::String)
        .pattern(Some(CommandName::PATTERN))
        .description(Some(
            "A one-off command's name, as `runCommand` answered it."
        ))
);

/// A secret's name: a DNS-1123 subdomain of 1 to 253 characters, that is
/// dot-separated parts of lowercase letters, digits and '-', each starting and
/// ending with a letter or digit (Kubernetes bounds only the whole length, not
/// each part's).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct SecretName(String);

impl SecretName {
    pub const MAX_LEN: usize = 253;
    /// Each dot-separated part (bounded only by the whole).
    const PART: Label = Label::dns1123(Self::MAX_LEN);
    const PATTERN: &str = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";

    pub fn parse(value: &str) -> Result<Self, Invalid> {
        if value.len() <= Self::MAX_LEN && value.split('.').all(|part| Self::PART.holds(part)) {
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
parsed_name!(
    SecretName,
    ObjectBuilder::new()
        .schema_type(Type::String)
        .min_length(Some(1))
        .max_length(Some(Self::MAX_LEN))
        .pattern(Some(Self::PATTERN))
);

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

impl utoipa::PartialSchema for SecretKey {
    fn schema() -> RefOr<Schema> {
        super::string_schema(
            Some(1),
            Some(Self::MAX_LEN),
            r"^(?!\.\.?$)[-._a-zA-Z0-9]+$",
            "A key of a secret: letters, digits, '-', '_' and '.', not '.' or '..'.",
        )
    }
}

impl utoipa::ToSchema for SecretKey {}

/// An environment variable's name: `[A-Za-z_][A-Za-z0-9_]*`, 1 to 256
/// characters.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct EnvName(String);

impl EnvName {
    pub const MAX_LEN: usize = 256;
    const PATTERN: &str = "^[A-Za-z_][A-Za-z0-9_]*$";

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
parsed_name!(
    EnvName,
    ObjectBuilder::new()
        .schema_type(Type::String)
        .min_length(Some(1))
        .max_length(Some(Self::MAX_LEN))
        .pattern(Some(Self::PATTERN))
);

/// Every name type's OpenAPI schema, by its name in the document's
/// components.
pub fn schemas() -> Vec<(String, RefOr<Schema>)> {
    use utoipa::ToSchema;
    fn entry<T: ToSchema>() -> (String, RefOr<Schema>) {
        (T::name().into_owned(), T::schema())
    }
    vec![
        entry::<OrgName>(),
        entry::<ProjectName>(),
        entry::<NewProjectName>(),
        entry::<EnvironmentName>(),
        entry::<NewEnvironmentName>(),
        entry::<AppName>(),
        entry::<NewAppName>(),
        entry::<ProcessName>(),
        entry::<VolumeName>(),
        entry::<NamespaceName>(),
        entry::<SecretName>(),
        entry::<CommandName>(),
        entry::<TemplateName>(),
        entry::<super::ids::UserId>(),
        entry::<super::ids::RecordId>(),
        entry::<EnvName>(),
        entry::<super::git::GitRef>(),
        entry::<super::git::GitRepo>(),
        entry::<Hostname>(),
        entry::<SecretKey>(),
        entry::<super::container_paths::MountPath>(),
        entry::<super::container_paths::HealthCheckPath>(),
        entry::<super::CommandArg>(),
        entry::<super::size::Size>(),
        entry::<super::size::VolumeSize>(),
    ]
}

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
                .all(|label| Label::dns1123(Self::MAX_LABEL_LEN).holds(label));
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

impl utoipa::PartialSchema for Hostname {
    fn schema() -> RefOr<Schema> {
        // At most 253 characters without the optional trailing dot; the
        // last label not all digits; two or more labels, any case.
        super::string_schema(
            None,
            Some(Self::MAX_LEN + 1),
            r"^(?=.{1,253}\.?$)(?!(?:.*\.)?[0-9]+\.?$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+\.?$",
            "A fully qualified hostname, case-insensitive, the DNS root's trailing dot optional.",
        )
    }
}

impl utoipa::ToSchema for Hostname {}

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

    /// Every string of up to four characters of `alphabet`, and strings of
    /// about `max` characters: the ends of each rule.
    fn corpus(max: usize) -> Vec<String> {
        let alphabet = ['a', 'z', '0', '9', '-', '.', '_', 'A'];
        let mut all = vec![String::new()];
        let mut last = vec![String::new()];
        for _ in 0..4 {
            last = last
                .iter()
                .flat_map(|prefix| alphabet.iter().map(move |c| format!("{prefix}{c}")))
                .collect();
            all.extend(last.iter().cloned());
        }
        for n in [max - 1, max, max + 1] {
            all.extend([
                long('a', n),
                format!("a{}", long('-', n.saturating_sub(2))),
                format!("{}b", long('a', n - 1)),
                format!("a--{}", long('b', n.saturating_sub(3))),
            ]);
        }
        all
    }

    /// Each name's schema says exactly what its parser takes: its pattern
    /// and lengths, on the same strings.
    #[test]
    fn schemas_agree_with_parsers() {
        use utoipa::openapi::RefOr;
        fn check(schema: RefOr<Schema>, parses: impl Fn(&str) -> bool, max: usize) {
            let RefOr::T(Schema::Object(object)) = schema else {
                panic!("a string schema")
            };
            assert_eq!(object.min_length, Some(1));
            assert_eq!(object.max_length, Some(max));
            let pattern = object.pattern.expect("a pattern");
            let regex = regex::Regex::new(&pattern).expect(&pattern);
            for value in corpus(max) {
                let described = regex.is_match(&value) && (1..=max).contains(&value.len());
                assert_eq!(parses(&value), described, "{pattern} {max}: {value:?}");
            }
        }
        use utoipa::PartialSchema;
        macro_rules! labels {
            ($($name:ident),*) => {$(
                check($name::schema(), |v| $name::parse(v).is_ok(), $name::MAX_LEN);
            )*};
        }
        labels!(
            OrgName,
            ProjectName,
            EnvironmentName,
            AppName,
            ProcessName,
            VolumeName
        );
        labels!(NamespaceName, SecretName, EnvName);
        check(
            NewProjectName::schema(),
            |v| ProjectName::parse_new(v).is_ok(),
            40,
        );
        check(
            NewEnvironmentName::schema(),
            |v| EnvironmentName::parse_new(v).is_ok(),
            22,
        );
        check(NewAppName::schema(), |v| AppName::parse_new(v).is_ok(), 40);
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
