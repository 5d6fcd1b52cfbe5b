//! An app's webhook as its team sees it, and the receiver's answer to a
//! delivery it did nothing with.

use serde::{Deserialize, Serialize};

/// An app's webhook, as its team sees it: never its secret.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = Webhook)]
pub struct WebhookRecord {
    /// Where GitHub or GitLab sends pushes: the receiver's path on this
    /// API's origin (`/api/v1/hooks/{hook}`).
    pub url: String,
    /// Unix milliseconds.
    pub created_at: i64,
}

/// A webhook just made: its record and the secret, shown this once.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = CreatedWebhook)]
pub struct CreatedWebhook {
    #[serde(flatten)]
    pub record: WebhookRecord,
    /// The secret to give GitHub ("Secret") or GitLab ("Secret token"):
    /// 40 letters and digits, shown only here.
    pub secret: String,
}

/// A delivery the receiver accepted and did nothing with.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct IgnoredDelivery {
    /// Why nothing was built: not a push, another branch, a tag, a
    /// deleted branch, a delivery received before.
    pub ignored: String,
}
