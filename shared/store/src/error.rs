//! What the store can fail with, in its own words: DynamoDB's faults by
//! cause, an item that does not decode, a condition that failed with its
//! meaning, a thing that is not there, the refusals of identity (who may
//! do what, who signed in, a throttle with its retry). The HTTP layer
//! (`berth_api::error`) alone turns each into what the caller reads.

use aws_sdk_dynamodb::config::http::HttpResponse;
use aws_sdk_dynamodb::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};

use berth_domain::{InvalidInput, Missing};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// DynamoDB did not answer in time, the connection broke, the table or
    /// the account is over its throughput, or DynamoDB failed on its side:
    /// a retry may cure it. The message may name internal addresses.
    #[error("{0}")]
    Unavailable(String),
    /// DynamoDB refused what Berth sent (a key over the size limit, a
    /// malformed expression): a bug in what Berth sent, or input that
    /// validation should have stopped.
    #[error("{0}")]
    Refused(String),
    /// An item or attribute that does not encode or decode as its type.
    #[error("{0}")]
    Malformed(String),
    /// Another assumption that did not hold (a request that would not
    /// build, a password hasher that failed): a bug.
    #[error("{0}")]
    Broken(String),
    /// A condition that failed, said as what it means for the caller (an
    /// account that exists, a change that lost to another).
    #[error("{0}")]
    Conflict(String),
    /// What is not there, named in the caller's words.
    #[error("not found: {0}")]
    Missing(Missing),
    /// A value that breaks a rule of what the store keeps: `field: rule`.
    #[error("{0}")]
    Invalid(String),
    /// The caller's role does not reach: why, in their words.
    #[error("permission denied")]
    Forbidden(String),
    /// Too many failed sign-ins: the next may be tried after this long.
    #[error("too many requests")]
    Throttled { retry_after_secs: u64 },
    /// No credentials, or none that are valid now.
    #[error("authentication required")]
    Unauthenticated,
    /// An email and a password that do not match.
    #[error("invalid email or password")]
    InvalidCredentials,
}

impl From<Missing> for StoreError {
    fn from(missing: Missing) -> Self {
        Self::Missing(missing)
    }
}

impl From<InvalidInput> for StoreError {
    fn from(invalid: InvalidInput) -> Self {
        Self::Invalid(invalid.0)
    }
}

/// DynamoDB's error codes that mean "try again later": the table or the
/// account is over its throughput.
const THROTTLING_CODES: &[&str] = &[
    "ProvisionedThroughputExceededException",
    "ThrottlingException",
    "RequestLimitExceeded",
];

/// A DynamoDB failure by cause: only what a retry may cure (timeouts, broken
/// connections, throttling, DynamoDB's own 5xx) is [`StoreError::Unavailable`].
/// Anything else the service refused (a `ValidationException` for a key over
/// the size limit, a malformed expression) is [`StoreError::Refused`].
impl<E> From<SdkError<E, HttpResponse>> for StoreError
where
    E: std::error::Error + ProvideErrorMetadata + 'static,
{
    fn from(error: SdkError<E, HttpResponse>) -> Self {
        let cause = DisplayErrorContext(&error).to_string();
        match &error {
            SdkError::ServiceError(service) => {
                let code = service.err().code().unwrap_or_default();
                if THROTTLING_CODES.contains(&code) || service.raw().status().is_server_error() {
                    Self::Unavailable(cause)
                } else {
                    Self::Refused(format!("DynamoDB refused a request ({code}): {cause}"))
                }
            }
            // A request that could not be built is Berth's doing.
            SdkError::ConstructionFailure(_) => {
                Self::Broken(format!("building a DynamoDB request failed: {cause}"))
            }
            // Timeouts, dispatch (connection) failures and answers cut short;
            // the enum is non-exhaustive, and anything new is most likely
            // transport.
            _ => Self::Unavailable(cause),
        }
    }
}
