//! What a process's port speaks.

use std::fmt;

use super::Invalid;

/// `http` (routed by the Ingress, probed over HTTP) or `tcp` (a Service
/// port only).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Protocol {
    #[default]
    Http,
    Tcp,
}

impl Protocol {
    pub fn parse(text: &str) -> Result<Self, Invalid> {
        match text {
            "http" => Ok(Self::Http),
            "tcp" => Ok(Self::Tcp),
            _ => Err(Invalid::new("must be http or tcp")),
        }
    }

    /// The stored form, also the name of the container's and the Service's
    /// port (a DNS-1035 label).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Http => "http",
            Self::Tcp => "tcp",
        }
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_protocol_is_stored_as_parsed() {
        for protocol in [Protocol::Http, Protocol::Tcp] {
            assert_eq!(Protocol::parse(protocol.as_str()), Ok(protocol));
        }
        assert_eq!(
            Protocol::parse("udp").unwrap_err().to_string(),
            "must be http or tcp"
        );
        assert!(Protocol::parse("HTTP").is_err());
    }
}
