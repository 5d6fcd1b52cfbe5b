//! The item of each hostname (`HOST#{hostname}` / `HOST`, in its normal
//! form): every organization's claim and challenge, and the owner that
//! proved control. The rules — who may claim, when a claim is stale, what
//! a proof found leads to — are the API's (`berth_api::apps::hosts`,
//! `berth_api::apps::proofs`); here is how the item is read and written,
//! each write conditioned so that concurrent writers never both win.
//!
//! - `claim:{org}`: the organization's claim, naming its one app that lists
//!   the hostname;
//! - `challenge:{org}`: the value the organization's TXT record must hold,
//!   made at its first claim and kept;
//! - `owner`: the organization that proved control, once one has;
//! - an item written before domains were proven holds one claim in
//!   top-level fields (`legacy`).
//!
//! Every item that holds a claim, a challenge or an owner is in the
//! partition `DOMAINS` of index `gsi1`.

use std::collections::{BTreeMap, BTreeSet};

use aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder;
use aws_sdk_dynamodb::types::{
    AttributeValue, ReturnValue, ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update,
};
use serde::{Deserialize, Serialize};

use crate::StoreError;
use berth_domain::names::{AppName, EnvironmentName, ProjectName};
use berth_domain::paths::AppPath;

use crate::{
    Item, Store, cancelled_conditions, from_attribute, from_item, key, keys, n, s, to_attribute,
    transaction_failure, tx_update, written,
};

/// One organization's claim of a hostname (`claim:{org}` of its item).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Claim {
    pub org: String,
    pub project: String,
    pub environment: String,
    pub app: String,
    pub history: String,
    /// The revision whose write made the claim.
    pub revision: i64,
    /// Unix milliseconds.
    pub claimed_at: i64,
    /// Random, new at every write: what a takeover is conditioned on.
    pub claim: String,
}

impl Claim {
    /// Where the app holding the claim is: none when the names stored
    /// cannot be an app's (no App can hold the claim then).
    pub fn holder(&self) -> Option<AppPath> {
        Some(AppPath {
            project: ProjectName::parse(&self.project).ok()?,
            environment: EnvironmentName::parse(&self.environment).ok()?,
            app: AppName::parse(&self.app).ok()?,
        })
    }
}

/// How an organization came to own a hostname.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VerifiedBy {
    /// Its TXT record was found.
    Dns,
    /// The platform's operator said so (`berth-admin domains verify`).
    Operator,
    /// It held the hostname's claim before domains were proven.
    Upgrade,
}

/// The organization that proved control of a hostname (`owner`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Owner {
    pub org: String,
    pub by: VerifiedBy,
    /// Unix milliseconds.
    pub verified_at: i64,
    /// Set while its proof is missing: when it stops being the owner's
    /// (Unix milliseconds).
    #[serde(default)]
    pub lapses_at: Option<i64>,
    /// Its holder's App may not list it yet (the owner was written and the
    /// App's annotation not, or not yet): settled at the next look.
    #[serde(default)]
    pub unsynced: bool,
}

/// The item of one hostname, as read.
#[derive(Debug, Clone, Default)]
pub struct HostItem {
    pub hostname: String,
    pub owner: Option<Owner>,
    /// By organization.
    pub claims: BTreeMap<String, Claim>,
    /// By organization.
    pub challenges: BTreeMap<String, String>,
    /// The one claim of an item from before domains were proven.
    pub legacy: Option<Claim>,
}

const CLAIM_PREFIX: &str = "claim:";
const CHALLENGE_PREFIX: &str = "challenge:";
/// A top-level field only an item from before has.
const LEGACY_FIELD: &str = "history";

fn claim_attribute(org: &str) -> String {
    format!("{CLAIM_PREFIX}{org}")
}

fn challenge_attribute(org: &str) -> String {
    format!("{CHALLENGE_PREFIX}{org}")
}

/// A new challenge: random, so no organization can foresee another's.
fn new_challenge() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

fn host_key(hostname: &str) -> Item {
    key(keys::host(hostname), keys::HOST_SK)
}

impl HostItem {
    fn parse(item: Item) -> Result<Self, StoreError> {
        let hostname = (item.get("hostname").and_then(|v| v.as_s().ok()))
            .cloned()
            .unwrap_or_else(|| {
                let pk = item.get(keys::PK).and_then(|v| v.as_s().ok());
                pk.and_then(|pk| pk.strip_prefix("HOST#"))
                    .unwrap_or_default()
                    .to_owned()
            });
        let legacy = if item.contains_key(LEGACY_FIELD) {
            Some(from_item::<Claim>(item.clone())?)
        } else {
            None
        };
        let mut parsed = Self {
            hostname,
            legacy,
            ..Self::default()
        };
        for (name, value) in item {
            if name == "owner" {
                parsed.owner = Some(from_attribute(value)?);
            } else if let Some(org) = name.strip_prefix(CLAIM_PREFIX) {
                parsed.claims.insert(org.to_owned(), from_attribute(value)?);
            } else if let Some(org) = name.strip_prefix(CHALLENGE_PREFIX)
                && let Ok(challenge) = value.as_s()
            {
                parsed.challenges.insert(org.to_owned(), challenge.clone());
            }
        }
        Ok(parsed)
    }

    /// Whether `org` owns it.
    pub fn is_verified_for(&self, org: &str) -> bool {
        self.owner.as_ref().is_some_and(|owner| owner.org == org)
    }
}

/// The item of `hostname`, read consistently, if it exists.
pub async fn read(store: &Store, hostname: &str) -> Result<Option<HostItem>, StoreError> {
    store
        .get(host_key(hostname))
        .await?
        .map(HostItem::parse)
        .transpose()
}

/// The items of `hostnames` (those that exist), read consistently.
pub async fn read_many(
    store: &Store,
    hostnames: impl IntoIterator<Item = &str>,
) -> Result<Vec<HostItem>, StoreError> {
    let keys: Vec<Item> = hostnames
        .into_iter()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .map(host_key)
        .collect();
    let mut items = Vec::new();
    // A batch read takes at most 100 keys.
    for chunk in keys.chunks(100) {
        for item in store.get_many(chunk.to_vec()).await? {
            items.push(HostItem::parse(item)?);
        }
    }
    Ok(items)
}

/// Every claimed or owned hostname's item (from index `gsi1`: eventually
/// consistent).
pub async fn all_claimed(store: &Store) -> Result<Vec<HostItem>, StoreError> {
    crate::index_partition(store, keys::DOMAINS_INDEX.to_owned())
        .await?
        .into_iter()
        .map(HostItem::parse)
        .collect()
}

/// The claim of one hostname, for the transaction that records an app's
/// revision (`crate::releases::prepare`): written where the hostname is not
/// another organization's (nor an item from before) and the organization's
/// claim is free or already `claim.history`'s — or, for a takeover, still
/// the stale claim `seen`. It makes the organization's challenge if it has
/// none.
#[derive(Debug, Clone)]
pub struct ClaimWrite {
    pub hostname: String,
    pub claim: Claim,
    /// The claim id of the stale claim to take over.
    pub seen: Option<String>,
}

impl ClaimWrite {
    pub(crate) fn write(&self, store: &Store) -> Result<TransactWriteItem, StoreError> {
        let Self {
            hostname,
            claim,
            seen,
        } = self;
        let update = Update::builder()
            .table_name(store.table())
            .set_key(Some(host_key(hostname)))
            .update_expression(
                "SET #claim = :claim, #challenge = if_not_exists(#challenge, :challenge), \
                 #hostname = :hostname, gsi1pk = :index, gsi1sk = :hostname",
            )
            .expression_attribute_names("#claim", claim_attribute(&claim.org))
            .expression_attribute_names("#challenge", challenge_attribute(&claim.org))
            .expression_attribute_names("#hostname", "hostname")
            .expression_attribute_names("#legacy", LEGACY_FIELD)
            .expression_attribute_names("#owner", "owner")
            .expression_attribute_names("#org", "org")
            .expression_attribute_values(":claim", to_attribute(claim)?)
            .expression_attribute_values(":challenge", s(new_challenge()))
            .expression_attribute_values(":hostname", s(hostname))
            .expression_attribute_values(":index", s(keys::DOMAINS_INDEX))
            .expression_attribute_values(":org", s(&claim.org))
            // The refusal carries the item: no read to find who holds it.
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
        let open = "attribute_not_exists(#legacy) AND (attribute_not_exists(#owner) OR #owner.#org = :org)";
        let update = match seen {
            None => update
                .condition_expression(format!(
                    "{open} AND (attribute_not_exists(#claim) OR #claim.#history = :history)"
                ))
                .expression_attribute_names("#history", "history")
                .expression_attribute_values(":history", s(&claim.history)),
            Some(seen) => update
                .condition_expression(format!("{open} AND #claim.#id = :seen"))
                .expression_attribute_names("#id", "claim")
                .expression_attribute_values(":seen", s(seen)),
        };
        tx_update(update)
    }
}

/// The item a refused claim write found, when DynamoDB returned it.
pub(crate) fn refused_item(item: Option<&Item>) -> Result<Option<HostItem>, StoreError> {
    item.cloned().map(HostItem::parse).transpose()
}

/// Makes an item from before `claim`'s organization's claim, with `owner`
/// (if it still holds `claim`). Whether it did: false when another
/// adopted or changed it meanwhile.
pub async fn adopt_legacy(
    store: &Store,
    hostname: &str,
    claim: &Claim,
    owner: &Owner,
) -> Result<bool, StoreError> {
    let mut update = store
        .client()
        .update_item()
        .table_name(store.table())
        .set_key(Some(host_key(hostname)))
        .update_expression(
            "SET #claim = :claim, #challenge = if_not_exists(#challenge, :challenge), \
             #owner = :owner, #hostname = :hostname, gsi1pk = :index, gsi1sk = :hostname \
             REMOVE #f0, #f1, #f2, #f3, #f4, #f5, #f6, #legacy",
        )
        .condition_expression("#legacy = :history AND #f6 = :seen")
        .expression_attribute_names("#claim", claim_attribute(&claim.org))
        .expression_attribute_names("#challenge", challenge_attribute(&claim.org))
        .expression_attribute_names("#owner", "owner")
        .expression_attribute_names("#hostname", "hostname")
        .expression_attribute_names("#legacy", LEGACY_FIELD)
        .expression_attribute_values(":claim", to_attribute(claim)?)
        .expression_attribute_values(":challenge", s(new_challenge()))
        .expression_attribute_values(":owner", to_attribute(owner)?)
        .expression_attribute_values(":hostname", s(hostname))
        .expression_attribute_values(":index", s(keys::DOMAINS_INDEX))
        .expression_attribute_values(":history", s(&claim.history))
        .expression_attribute_values(":seen", s(&claim.claim));
    // The claim's fields of before, but `history` (`#legacy`), last `claim`.
    let fields = [
        "org",
        "project",
        "environment",
        "app",
        "revision",
        "claimed_at",
        "claim",
    ];
    for (i, field) in fields.into_iter().enumerate() {
        update = update.expression_attribute_names(format!("#f{i}"), field);
    }
    written(update.send().await)
}

/// The hostnames of the items from before, a page at a time: `after` is
/// where the last page ended (None to start), and the answer says where
/// this one did (None at the end). A scan, read consistently.
pub async fn legacy_page(
    store: &Store,
    after: Option<ScanCursor>,
) -> Result<(Vec<String>, Option<ScanCursor>), StoreError> {
    let page = store
        .client()
        .scan()
        .table_name(store.table())
        .consistent_read(true)
        .filter_expression("sk = :host AND attribute_exists(#legacy)")
        .expression_attribute_names("#legacy", LEGACY_FIELD)
        .expression_attribute_values(":host", s(keys::HOST_SK))
        .set_exclusive_start_key(after.map(|cursor| cursor.0))
        .send()
        .await?;
    let hostnames = (page.items.unwrap_or_default().into_iter())
        .map(|item| HostItem::parse(item).map(|item| item.hostname))
        .collect::<Result<_, _>>()?;
    Ok((hostnames, page.last_evaluated_key.map(ScanCursor)))
}

/// Where a page of a scan ended.
#[derive(Debug, Clone)]
pub struct ScanCursor(Item);

/// Whether the claims from before were all adopted (a marker item says so).
pub async fn legacy_adopted(store: &Store) -> Result<bool, StoreError> {
    Ok(store.get(legacy_marker()).await?.is_some())
}

/// Says that every claim from before was adopted.
pub async fn mark_legacy_adopted(store: &Store) -> Result<(), StoreError> {
    store.put(legacy_marker()).await
}

fn legacy_marker() -> Item {
    key(keys::UPGRADES_PK.to_owned(), keys::LEGACY_CLAIMS_SK)
}

/// Removes `org`'s claims of `history` on `hostnames` (those claimed no
/// later than `committed`, when given), a transaction per hundred; a claim
/// that is no longer this history's (or was claimed again since) is left
/// as it is. An error when the store failed: then some may be left.
pub async fn release_claims(
    store: &Store,
    org: &str,
    history: &str,
    committed: Option<i64>,
    hostnames: &[String],
) -> Result<(), StoreError> {
    let distinct: Vec<&String> = hostnames
        .iter()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    // A transaction takes at most 100 items.
    for chunk in distinct.chunks(100) {
        let mut left = chunk.to_vec();
        // A second attempt without those claimed again meanwhile.
        for _ in 0..2 {
            if left.is_empty() {
                break;
            }
            let removals = left
                .iter()
                .map(|hostname| {
                    let update = Update::builder()
                        .table_name(store.table())
                        .set_key(Some(host_key(hostname)))
                        .update_expression("REMOVE #claim")
                        .expression_attribute_names("#claim", claim_attribute(org))
                        .expression_attribute_names("#history", "history")
                        .expression_attribute_values(":history", s(history));
                    tx_update(match committed {
                        None => update.condition_expression("#claim.#history = :history"),
                        Some(revision) => update
                            .condition_expression(
                                "#claim.#history = :history AND #claim.#revision <= :revision",
                            )
                            .expression_attribute_names("#revision", "revision")
                            .expression_attribute_values(":revision", n(revision)),
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            match store.transact(removals).await {
                Ok(()) => break,
                Err(error) => match cancelled_conditions(&error) {
                    Some(failed) if failed.contains(&true) => {
                        left = left
                            .into_iter()
                            .zip(failed)
                            .filter_map(|(hostname, failed)| (!failed).then_some(hostname))
                            .collect();
                    }
                    _ => return Err(transaction_failure(error)),
                },
            }
        }
    }
    Ok(())
}

/// A change of a hostname's owner, each conditioned on the owner as it was
/// read: of concurrent changes one wins, the others change nothing.
#[derive(Debug, Clone)]
pub enum OwnerChange {
    /// `owner` becomes the owner, if there is none.
    Claim(Owner),
    /// The owner `org`, verified at `seen`, becomes `owner`.
    Replace {
        org: String,
        seen: i64,
        owner: Owner,
    },
    /// The owner `org`, verified at `seen`, is no longer the owner.
    Remove { org: String, seen: i64 },
    /// The owner `org`, verified at `seen`, is listed on its app now.
    Synced { org: String, seen: i64 },
}

/// Writes `change` on `hostname`'s item. Whether it did: false when the
/// owner was not as read (another change got there first).
pub async fn change_owner(
    store: &Store,
    hostname: &str,
    change: &OwnerChange,
) -> Result<bool, StoreError> {
    let update = store
        .client()
        .update_item()
        .table_name(store.table())
        .set_key(Some(host_key(hostname)))
        .expression_attribute_names("#owner", "owner");
    let as_read = |update: UpdateItemFluentBuilder, org: &str, seen: i64| {
        update
            .condition_expression("#owner.#org = :org AND #owner.#at = :seen")
            .expression_attribute_names("#org", "org")
            .expression_attribute_names("#at", "verified_at")
            .expression_attribute_values(":org", s(org))
            .expression_attribute_values(":seen", n(seen))
    };
    let update = match change {
        OwnerChange::Claim(owner) => update
            .update_expression("SET #owner = :owner")
            .condition_expression("attribute_not_exists(#owner)")
            .expression_attribute_values(":owner", to_attribute(owner)?),
        OwnerChange::Replace { org, seen, owner } => as_read(update, org, *seen)
            .update_expression("SET #owner = :owner")
            .expression_attribute_values(":owner", to_attribute(owner)?),
        OwnerChange::Remove { org, seen } => {
            as_read(update, org, *seen).update_expression("REMOVE #owner")
        }
        OwnerChange::Synced { org, seen } => as_read(update, org, *seen)
            .update_expression("SET #owner.#unsynced = :false")
            .expression_attribute_names("#unsynced", "unsynced")
            .expression_attribute_values(":false", AttributeValue::Bool(false)),
    };
    written(update.send().await)
}

/// The operator's word: `owner` becomes the owner of `hostname` unless
/// another organization is (false then), and its organization gets a
/// challenge if it has none.
pub async fn own_unless_another(
    store: &Store,
    hostname: &str,
    owner: &Owner,
) -> Result<bool, StoreError> {
    let update = listed_update(store, hostname, &owner.org, "#owner = :owner, ")
        .condition_expression("attribute_not_exists(#owner) OR #owner.#org = :org")
        .expression_attribute_names("#owner", "owner")
        .expression_attribute_names("#org", "org")
        .expression_attribute_values(":owner", to_attribute(owner)?)
        .expression_attribute_values(":org", s(&owner.org));
    written(update.send().await)
}

/// An update of `hostname`'s item that first `set`s what it is for (an
/// assignment and its comma, or nothing), then keeps the item listed in the
/// domains index and gives `org` a challenge if it has none: what every
/// write that may make the item does.
fn listed_update(store: &Store, hostname: &str, org: &str, set: &str) -> UpdateItemFluentBuilder {
    store
        .client()
        .update_item()
        .table_name(store.table())
        .set_key(Some(host_key(hostname)))
        .update_expression(format!(
            "SET {set}#challenge = if_not_exists(#challenge, :challenge), \
             #hostname = :hostname, gsi1pk = :index, gsi1sk = :hostname"
        ))
        .expression_attribute_names("#challenge", challenge_attribute(org))
        .expression_attribute_names("#hostname", "hostname")
        .expression_attribute_values(":challenge", s(new_challenge()))
        .expression_attribute_values(":hostname", s(hostname))
        .expression_attribute_values(":index", s(keys::DOMAINS_INDEX))
}

/// `org`'s challenge for `hostname`, made now if it has none.
pub async fn make_challenge(
    store: &Store,
    hostname: &str,
    org: &str,
) -> Result<String, StoreError> {
    let attribute = challenge_attribute(org);
    let written = listed_update(store, hostname, org, "")
        .return_values(ReturnValue::AllNew)
        .send()
        .await?;
    written
        .attributes
        .and_then(|mut attributes| attributes.remove(&attribute))
        .and_then(|value| value.as_s().ok().cloned())
        .ok_or_else(|| StoreError::Broken("a challenge was written and not returned".into()))
}
