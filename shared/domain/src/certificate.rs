//! Where a hostname's TLS certificate stands.
//!
//! The controller looks at the certificate of each of an app's hostnames
//! (cert-manager writes it into a Secret; the controller reads it, the API
//! never loads a private key) and records what it found in the App's
//! status: a [`CertificateFinding`]. The domain check shows it as it stands
//! when asked: an issued certificate turns `expiring` [`EXPIRING_WITHIN`]
//! before its end and `expired` after it, however long ago the controller
//! looked.

use std::fmt;

use jiff::{SignedDuration, Timestamp};
use serde::{Deserialize, Serialize};

use super::Invalid;
use super::stored::Stored;

/// How long before its end an issued certificate counts as `expiring`.
/// cert-manager renews a 90-day certificate 30 days before its end, so one
/// this close to it is one whose renewal has failed for two weeks.
pub const EXPIRING_WITHIN: SignedDuration = SignedDuration::from_hours(14 * 24);

/// Where a hostname's certificate stands: `pending` (requested, no
/// certificate for the host yet), `issued`, `expiring` (issued, and ends
/// within 14 days), `expired`, `invalid` (the Secret holds no certificate
/// for the host, or is not cert-manager's) or `none` (no issuer is
/// configured: the hostname is served over plain HTTP).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum CertificateState {
    /// Requested, and no certificate for the host yet.
    Pending,
    /// A certificate for the host, valid for more than 14 days.
    Issued,
    /// A certificate for the host that ends within 14 days.
    Expiring,
    /// A certificate for the host that has ended.
    Expired,
    /// The Secret holds no certificate for the host (or is not
    /// cert-manager's).
    Invalid,
    /// No certificate is asked for: no issuer is configured.
    None,
}

impl CertificateState {
    pub fn parse(text: &str) -> Result<Self, Invalid> {
        match text {
            "pending" => Ok(Self::Pending),
            "issued" => Ok(Self::Issued),
            "expiring" => Ok(Self::Expiring),
            "expired" => Ok(Self::Expired),
            "invalid" => Ok(Self::Invalid),
            "none" => Ok(Self::None),
            _ => Err(Invalid::new(
                "must be pending, issued, expiring, expired, invalid or none",
            )),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Issued => "issued",
            Self::Expiring => "expiring",
            Self::Expired => "expired",
            Self::Invalid => "invalid",
            Self::None => "none",
        }
    }
}

impl fmt::Display for CertificateState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the controller found of one hostname's certificate when it looked
/// (an entry of the App's status): `none`, `pending`, `issued` (with the
/// end of the certificate) or `invalid`, and one sentence saying why.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct CertificateFinding {
    /// In its normal form.
    pub hostname: String,
    pub state: Stored<CertificateState>,
    /// When an issued certificate ends (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_after: Option<String>,
    pub message: String,
}

/// What the domain check says of a hostname's certificate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CertificateStanding {
    pub state: CertificateState,
    pub not_after: Option<Timestamp>,
    pub message: String,
}

impl CertificateFinding {
    pub fn new(
        hostname: &str,
        state: CertificateState,
        not_after: Option<Timestamp>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            hostname: hostname.to_owned(),
            state: state.into(),
            not_after: not_after.map(|end| end.to_string()),
            message: message.into(),
        }
    }

    /// Where the certificate stands at `now`.
    pub fn at(&self, now: Timestamp) -> CertificateStanding {
        let not_after: Option<Timestamp> =
            self.not_after.as_deref().and_then(|end| end.parse().ok());
        let Ok(state) = self.state.parsed() else {
            return CertificateStanding {
                state: CertificateState::Invalid,
                not_after: None,
                message: "the controller's report on this certificate cannot be read".to_owned(),
            };
        };
        let state = match (*state, not_after) {
            (CertificateState::Issued, Some(end)) if end <= now => CertificateState::Expired,
            (CertificateState::Issued, Some(end)) if end.duration_since(now) <= EXPIRING_WITHIN => {
                CertificateState::Expiring
            }
            (state, _) => state,
        };
        let message = match (state, not_after) {
            (CertificateState::Expired, Some(end)) => format!(
                "the certificate ended at {end}; cert-manager has not renewed it ({})",
                self.message
            ),
            (CertificateState::Expiring, Some(end)) => format!(
                "the certificate ends at {end}, within 14 days, and cert-manager has not renewed \
                 it yet ({})",
                self.message
            ),
            _ => self.message.clone(),
        };
        CertificateStanding {
            state,
            not_after,
            message,
        }
    }

    /// The finding of `hostname` among `findings`, if there is one.
    pub fn for_host<'a>(findings: &'a [Self], hostname: &str) -> Option<&'a Self> {
        findings.iter().find(|finding| finding.hostname == hostname)
    }
}

impl CertificateStanding {
    /// What the domain check says of a hostname the controller has not
    /// looked at yet (added by the last change).
    pub fn not_looked_at() -> Self {
        Self {
            state: CertificateState::Pending,
            not_after: None,
            message: "the controller has not looked at this hostname's certificate yet".to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn issued(end: &str) -> CertificateFinding {
        CertificateFinding::new(
            "shop.example.com",
            CertificateState::Issued,
            Some(end.parse().unwrap()),
            "issued by cert-manager",
        )
    }

    #[test]
    fn an_issued_certificate_is_expiring_within_14_days_and_expired_after_its_end() {
        let now: Timestamp = "2026-11-27T12:00:00Z".parse().unwrap();
        let at = |end: &str| issued(end).at(now);
        assert_eq!(at("2027-01-01T00:00:00Z").state, CertificateState::Issued);
        assert_eq!(at("2026-12-11T12:00:01Z").state, CertificateState::Issued);
        assert_eq!(at("2026-12-11T12:00:00Z").state, CertificateState::Expiring);
        assert_eq!(at("2026-11-27T12:00:01Z").state, CertificateState::Expiring);
        assert_eq!(at("2026-11-27T12:00:00Z").state, CertificateState::Expired);
        let expired = at("2026-11-01T00:00:00Z");
        assert_eq!(
            expired.not_after,
            Some("2026-11-01T00:00:00Z".parse().unwrap())
        );
        assert!(expired.message.contains("ended at 2026-11-01T00:00:00Z"));
    }

    #[test]
    fn other_findings_stand_as_found() {
        let now = Timestamp::UNIX_EPOCH;
        for state in [
            CertificateState::Pending,
            CertificateState::Invalid,
            CertificateState::None,
        ] {
            let finding = CertificateFinding::new("a.example.com", state, None, "why");
            assert_eq!(finding.at(now).state, state);
            assert_eq!(finding.at(now).message, "why");
        }
    }

    #[test]
    fn a_state_is_stored_as_its_name() {
        let finding = issued("2027-01-01T00:00:00Z");
        let stored = serde_json::to_value(&finding).unwrap();
        assert_eq!(stored["state"], "issued");
        assert_eq!(stored["notAfter"], "2027-01-01T00:00:00Z");
        let edited: CertificateFinding = serde_json::from_value(serde_json::json!({
            "hostname": "a.example.com", "state": "shiny", "message": ""
        }))
        .unwrap();
        assert_eq!(
            edited.at(Timestamp::UNIX_EPOCH).state,
            CertificateState::Invalid
        );
    }
}
