//! The stored webhooks. A hook is one item under its random id, holding
//! the app it builds (organization, project, environment, name and release
//! history) and its secret in the clear: GitHub signs each delivery with an
//! HMAC keyed by the secret, which cannot be checked against a digest. The
//! secret leaves the table only in `createWebhook`'s answer. The app points
//! to its hook from its release history's partition (see `crate::keys`),
//! so that removing the app's history finds the hook with it.

use aws_sdk_dynamodb::types::{AttributeValue, Delete, Put, Update};
use serde::{Deserialize, Serialize};

use crate::StoreError;
use crate::{Item, Store, keys};
use berth_domain::clock;
use berth_domain::credentials;
use berth_domain::ids::RecordId;

/// The hook item: what the receiver needs, in one read.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HookItem {
    pk: String,
    sk: String,
    pub id: String,
    pub org: String,
    pub project: String,
    pub environment: String,
    pub app: String,
    /// The app's release history (its uid): a recreated app of the same
    /// name is another app, which this hook does not build.
    pub history: String,
    pub secret: String,
    /// Unix milliseconds.
    pub created_at: i64,
}

/// The app's pointer to its hook.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PointerItem {
    pk: String,
    sk: String,
    pub hook: String,
    pub created_at: i64,
}

/// Which app a hook is for.
#[derive(Debug, Clone)]
pub struct HookedApp {
    pub org: String,
    pub project: String,
    pub environment: String,
    pub app: String,
    pub history: String,
}

fn pointer_key(history: &str) -> Item {
    crate::key(keys::releases(history), keys::WEBHOOK_SK)
}

pub(crate) fn hook_key(hook_id: &str) -> Item {
    crate::key(keys::hook(hook_id), keys::HOOK_SK)
}

/// The app's pointer to its hook, if it has one.
pub async fn pointer(store: &Store, history: &str) -> Result<Option<PointerItem>, StoreError> {
    store.get_as(pointer_key(history)).await
}

/// Makes the app's hook, replacing the one it had (whose item goes in the
/// same transaction, so its secret stops working at once). Returns the new
/// hook, secret included, and the id of the one it replaced.
pub async fn create(
    store: &Store,
    app: &HookedApp,
) -> Result<(HookItem, Option<String>), StoreError> {
    // A replacement racing another is tried again on what the other left.
    for _ in 0..3 {
        let previous = pointer(store, &app.history).await?;
        let now = clock::unix_millis();
        let id = credentials::new_record_id();
        let hook = HookItem {
            pk: keys::hook(&id),
            sk: keys::HOOK_SK.to_owned(),
            id,
            org: app.org.clone(),
            project: app.project.clone(),
            environment: app.environment.clone(),
            app: app.app.clone(),
            history: app.history.clone(),
            secret: credentials::new_generated_secret(),
            created_at: now,
        };
        let new_pointer = PointerItem {
            pk: keys::releases(&app.history),
            sk: keys::WEBHOOK_SK.to_owned(),
            hook: hook.id.clone(),
            created_at: now,
        };
        let mut writes = vec![crate::tx_put(
            Put::builder()
                .table_name(store.table())
                .set_item(Some(crate::to_item(&hook)?))
                .condition_expression("attribute_not_exists(pk)"),
        )?];
        let pointer_put = Put::builder()
            .table_name(store.table())
            .set_item(Some(crate::to_item(&new_pointer)?));
        match &previous {
            None => writes.push(crate::tx_put(
                pointer_put.condition_expression("attribute_not_exists(pk)"),
            )?),
            Some(old) => {
                writes.push(crate::tx_put(
                    pointer_put
                        .condition_expression("#hook = :old")
                        .expression_attribute_names("#hook", "hook")
                        .expression_attribute_values(":old", crate::s(&old.hook)),
                )?);
                writes.push(crate::tx_delete(
                    Delete::builder()
                        .table_name(store.table())
                        .set_key(Some(hook_key(&old.hook))),
                )?);
            }
        }
        match store.transact(writes).await {
            Ok(()) => return Ok((hook, previous.map(|old| old.hook))),
            Err(error)
                if crate::cancelled_conditions(&error).is_some_and(|c| c.contains(&true)) =>
            {
                continue;
            }
            Err(error) => return Err(crate::transaction_failure(error)),
        }
    }
    Err(StoreError::Conflict(
        "the app's webhook kept changing meanwhile; try again".into(),
    ))
}

/// Deletes the app's hook; the id of the hook deleted, `None` if it had
/// none.
pub async fn delete(store: &Store, history: &str) -> Result<Option<String>, StoreError> {
    let Some(current) = pointer(store, history).await? else {
        return Ok(None);
    };
    let writes = vec![
        crate::tx_delete(
            Delete::builder()
                .table_name(store.table())
                .set_key(Some(pointer_key(history)))
                .condition_expression("#hook = :hook")
                .expression_attribute_names("#hook", "hook")
                .expression_attribute_values(":hook", crate::s(&current.hook)),
        )?,
        crate::tx_delete(
            Delete::builder()
                .table_name(store.table())
                .set_key(Some(hook_key(&current.hook))),
        )?,
    ];
    match store.transact(writes).await {
        Ok(()) => Ok(Some(current.hook)),
        // Replaced or deleted meanwhile: what is there now is not the hook
        // this call found, and a replacement is the newer wish.
        Err(error) if crate::cancelled_conditions(&error).is_some_and(|c| c.contains(&true)) => {
            Err(StoreError::Conflict(
                "the app's webhook changed meanwhile; try again".into(),
            ))
        }
        Err(error) => Err(crate::transaction_failure(error)),
    }
}

/// The hook of a receiver URL (`None`: its id did not parse). Every id
/// costs one read, a malformed one too (of a key no hook has), so that no
/// answer's timing tells ids apart.
pub async fn find(
    store: &Store,
    hook_id: Option<&RecordId>,
) -> Result<Option<HookItem>, StoreError> {
    let key = hook_key(hook_id.map_or("-", RecordId::as_str));
    let found: Option<HookItem> = store.get_as(key).await?;
    Ok(found.filter(|_| hook_id.is_some()))
}

/// The items that mark a delivery as seen: its id (when it has one) and
/// its body's digest. GitHub signs the body only, so a captured delivery
/// sent again under a new id is still known by its body; a legitimate new
/// push always has a body of its own. The id's item holds the body's
/// digest ([`PAYLOAD`]): an id stays bound to the one body it came with.
fn delivery_keys(hook_id: &str, delivery_id: Option<&str>, body: &[u8]) -> (Vec<Item>, String) {
    let payload = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(body));
    let keys = delivery_id
        .map(keys::delivery_sk)
        .into_iter()
        .chain([keys::payload_sk(&payload)])
        .map(|sk| crate::key(keys::hook(hook_id), &sk))
        .collect();
    (keys, payload)
}

/// The body's digest, on a delivery id's item.
const PAYLOAD: &str = "payload";
/// Set on a delivery's items when its build could not be started: the
/// same delivery (its id with its body) may come again.
const START_FAILED: &str = "start_failed";

/// Records a delivery of the hook, in one transaction; `false` if its id or
/// its body was recorded before (a replay). Remembered for as long as the
/// hook exists, with no expiry: GitHub's signature carries no time, so a
/// delivery captured years ago still verifies against the hook's secret,
/// and only its record refuses it. A record written with an expiry (before
/// records were kept) still counts until DynamoDB removes it.
///
/// A delivery whose build could not be started ([`delivery_start_failed`])
/// is taken again as it was: its body under its id, or its body without
/// one (a redelivery by hand); its id with another body — another commit —
/// is a replay like any other (issue 46, part 6). Recording it again
/// clears the mark, so it starts at most one build.
pub async fn record_delivery(
    store: &Store,
    hook_id: &str,
    delivery_id: Option<&str>,
    body: &[u8],
) -> Result<bool, StoreError> {
    let (keys, payload) = delivery_keys(hook_id, delivery_id, body);
    let writes = keys
        .into_iter()
        .map(|mut item| {
            let is_id = crate::sort_key(&item).starts_with(keys::DELIVERY_SK_PREFIX);
            let condition = if is_id {
                item.insert(PAYLOAD.into(), crate::s(&payload));
                "attribute_not_exists(pk) OR (#failed = :yes AND #payload = :payload)"
            } else {
                "attribute_not_exists(pk) OR #failed = :yes"
            };
            let mut put = Put::builder()
                .table_name(store.table())
                .set_item(Some(item))
                .condition_expression(condition)
                .expression_attribute_names("#failed", START_FAILED)
                .expression_attribute_values(":yes", AttributeValue::Bool(true));
            if is_id {
                put = put
                    .expression_attribute_names("#payload", PAYLOAD)
                    .expression_attribute_values(":payload", crate::s(&payload));
            }
            crate::tx_put(put)
        })
        .collect::<Result<Vec<_>, _>>()?;
    match store.transact(writes).await {
        Ok(()) => Ok(true),
        Err(error) if crate::cancelled_conditions(&error).is_some_and(|c| c.contains(&true)) => {
            Ok(false)
        }
        Err(error) => Err(crate::transaction_failure(error)),
    }
}

/// Marks a delivery whose build could not be started, so that the
/// sender's retry (or a redelivery by hand) is not taken for a replay —
/// while its id stays bound to its body: the records are kept, not
/// deleted, so the id cannot come back with another commit.
pub async fn delivery_start_failed(
    store: &Store,
    hook_id: &str,
    delivery_id: Option<&str>,
    body: &[u8],
) {
    let (keys, _) = delivery_keys(hook_id, delivery_id, body);
    let marks = keys
        .into_iter()
        .map(|key| {
            crate::tx_update(
                Update::builder()
                    .table_name(store.table())
                    .set_key(Some(key))
                    .update_expression("SET #failed = :yes")
                    .condition_expression("attribute_exists(pk)")
                    .expression_attribute_names("#failed", START_FAILED)
                    .expression_attribute_values(":yes", AttributeValue::Bool(true)),
            )
        })
        .collect::<Result<Vec<_>, _>>();
    let outcome = match marks {
        Ok(marks) => store
            .transact(marks)
            .await
            .map_err(crate::transaction_failure),
        Err(error) => Err(error),
    };
    if let Err(error) = outcome {
        tracing::warn!(error = %error,
            "marking a webhook delivery whose build failed to start (its retry will be ignored)");
    }
}

/// The keys of the hook's delivery records (its item itself left out).
async fn delivery_records(store: &Store, hook_id: &str) -> Result<Vec<Item>, StoreError> {
    let found = crate::query_all(
        store
            .client()
            .query()
            .table_name(store.table())
            .key_condition_expression("pk = :pk")
            .expression_attribute_values(":pk", crate::s(keys::hook(hook_id)))
            .projection_expression("pk, sk")
            .consistent_read(true),
    )
    .await?;
    Ok(found
        .into_iter()
        .filter(|item| crate::sort_key(item) != keys::HOOK_SK)
        .collect())
}

/// Deletes the hook's delivery records. Not atomic: an error may leave some.
pub async fn delete_deliveries(store: &Store, hook_id: &str) -> Result<(), StoreError> {
    store
        .delete_batch(delivery_records(store, hook_id).await?)
        .await
}

/// Deletes the delivery records of a hook that is gone (deleted or
/// replaced): signed with a secret no hook has any more, a replay of them
/// is refused before they are read, so they only take room. Best effort: a
/// record left behind is as harmless.
pub async fn forget_deliveries(store: &Store, hook_id: &str) {
    if let Err(error) = delete_deliveries(store, hook_id).await {
        tracing::warn!(error = %error, "the delivery records of a deleted webhook were left behind");
    }
}

/// For the removal of an app's leftovers (`apps::leftovers`): the id of
/// the hook an item of the history points to, if it is the app's pointer to
/// its hook (read with its `hook` attribute).
pub(crate) fn hook_of_history_item(item: &Item) -> Option<&str> {
    if crate::sort_key(item) != keys::WEBHOOK_SK {
        return None;
    }
    item.get("hook")?.as_s().ok().map(String::as_str)
}
