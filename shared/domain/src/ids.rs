//! The ids the API's paths carry besides names: a user's, and a record's
//! (a personal or deploy token's, a webhook's). Each parses only what
//! Berth makes ([`crate::credentials`]), so a value that is anything else —
//! a token's secret put where its id belongs — is refused at the edge and
//! never reaches an answer, a log line or the audit log.

use serde::{Deserialize, Serialize};
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};

use super::Invalid;
use super::credentials::{self, RECORD_ID_LEN, USER_ID_LEN};
use super::names::{parsed_name, string_newtype};

/// `len` lowercase letters and digits, as [`credentials`] makes ids.
fn id_schema(len: usize) -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .min_length(Some(len))
        .max_length(Some(len))
        .pattern(Some(format!("^[a-z0-9]{{{len}}}$")))
}

/// A user's id: 16 lowercase letters and digits.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct UserId(String);

impl UserId {
    pub fn parse(value: &str) -> Result<Self, Invalid> {
        if credentials::valid_user_id(value) {
            Ok(Self(value.to_owned()))
        } else {
            Err(Invalid::new(format!(
                "must be a user's id: {USER_ID_LEN} lowercase letters and digits"
            )))
        }
    }
}

parsed_name!(UserId, id_schema(USER_ID_LEN));

/// A record's id — a personal or deploy token's, a webhook's: 12
/// lowercase letters and digits.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct RecordId(String);

impl RecordId {
    pub fn parse(value: &str) -> Result<Self, Invalid> {
        if credentials::valid_record_id(value) {
            Ok(Self(value.to_owned()))
        } else {
            Err(Invalid::new(format!(
                "must be an id: {RECORD_ID_LEN} lowercase letters and digits"
            )))
        }
    }
}

parsed_name!(RecordId, id_schema(RECORD_ID_LEN));

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_parse_what_berth_makes_and_no_credential() {
        let user = credentials::new_user_id();
        assert_eq!(UserId::parse(&user).unwrap().as_str(), user);
        let record = credentials::new_record_id();
        assert_eq!(RecordId::parse(&record).unwrap().as_str(), record);
        for credential in [
            credentials::new_api_token(&user),
            credentials::new_session_secret(&user),
            credentials::new_deploy_token("0b7d9a4e-3f51-4c1e-9d2a-6f0e8c7b5a31"),
            credentials::new_generated_secret(),
        ] {
            assert!(UserId::parse(&credential).is_err());
            assert!(RecordId::parse(&credential).is_err());
        }
    }
}
