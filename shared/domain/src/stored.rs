//! Values as a cluster resource stores them.
//!
//! The App resource holds its configuration parsed at the API's edge, yet
//! anyone with cluster access can edit it. Decoding an App must not fail on
//! a value its parser refuses: kube-runtime lists every App of the cluster
//! at once, and one that failed to decode would stall all of them. So a
//! stored value is parsed once, as it is read, into [`Stored`]: the value,
//! or what was written and the rule it breaks, which the controller reports
//! as the App's fault (and the API refuses to carry into a new release).
//! Its serialized form is exactly the text it was read from.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::Invalid;
use super::certificate::CertificateState;
use super::container_paths::{HealthCheckPath, MountPath};
use super::image::ImageRef;
use super::names::{Hostname, VolumeName};
use super::protocol::Protocol;
use super::schedule::{Schedule, TimeZone};
use super::size::{Size, VolumeSize};

/// A value with one text form: what it is parsed from and stored as.
pub trait TextForm: Sized {
    fn from_text(text: &str) -> Result<Self, Invalid>;
    fn text(&self) -> &str;
}

macro_rules! text_form {
    ($($type:ty),*) => {$(
        impl TextForm for $type {
            fn from_text(text: &str) -> Result<Self, Invalid> {
                Self::parse(text)
            }

            fn text(&self) -> &str {
                self.as_str()
            }
        }
    )*};
}

text_form!(
    Size,
    VolumeSize,
    Hostname,
    MountPath,
    VolumeName,
    Protocol,
    CertificateState,
    ImageRef,
    HealthCheckPath,
    Schedule,
    TimeZone
);

/// A value of a resource: parsed when the resource was read, or refused
/// (see the module); with the text it was read from, which it is written
/// back as (a hostname stored as `Shop.Example.com.` stays so, though it
/// is `shop.example.com`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stored<T> {
    text: String,
    value: Result<T, Invalid>,
}

impl<T: TextForm> Stored<T> {
    /// The value, or why the stored text is refused (never the text itself).
    pub fn parsed(&self) -> Result<&T, &Invalid> {
        self.value.as_ref()
    }

    /// The text as stored.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// A text as read from a resource.
    pub fn read(text: &str) -> Self {
        Self {
            text: text.to_owned(),
            value: T::from_text(text),
        }
    }
}

impl<T: TextForm> From<T> for Stored<T> {
    fn from(value: T) -> Self {
        Self {
            text: value.text().to_owned(),
            value: Ok(value),
        }
    }
}

/// A stored value is a value when it parsed as that value.
impl<T: PartialEq> PartialEq<T> for Stored<T> {
    fn eq(&self, other: &T) -> bool {
        self.value.as_ref().is_ok_and(|value| value == other)
    }
}

impl<T: TextForm> fmt::Display for Stored<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text())
    }
}

impl<T: TextForm> Serialize for Stored<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.text())
    }
}

impl<'de, T: TextForm> Deserialize<'de> for Stored<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
        Ok(Self::read(&text))
    }
}

/// In a resource's schema a stored value is the string it was before it
/// was typed: the CRD, and what the apiserver takes, are unchanged.
#[cfg(feature = "schemars")]
impl<T> schemars::JsonSchema for Stored<T> {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        String::schema_name()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        String::json_schema(generator)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_value_keeps_its_text_and_says_why_it_is_refused() {
        let size: Stored<Size> = serde_json::from_str(r#""250m/512Mi""#).unwrap();
        assert_eq!(size.parsed().unwrap().cpu().to_string(), "250m");
        assert_eq!(serde_json::to_string(&size).unwrap(), r#""250m/512Mi""#);

        let refused: Stored<Size> = serde_json::from_str(r#""galactic""#).unwrap();
        let rule = refused.parsed().unwrap_err().to_string();
        assert!(rule.starts_with("must be nano, small"), "{rule}");
        assert!(!rule.contains("galactic"));
        assert_eq!(serde_json::to_string(&refused).unwrap(), r#""galactic""#);

        let protocol: Stored<Protocol> = serde_json::from_str(r#""udp""#).unwrap();
        assert_eq!(protocol.text(), "udp");
        assert!(protocol.parsed().is_err());
        assert!(serde_json::from_str::<Stored<Protocol>>("7").is_err());

        let host: Stored<Hostname> = serde_json::from_str(r#""Shop.Example.com.""#).unwrap();
        assert_eq!(host.parsed().unwrap().as_str(), "shop.example.com");
        assert_eq!(
            serde_json::to_string(&host).unwrap(),
            r#""Shop.Example.com.""#
        );
    }
}
