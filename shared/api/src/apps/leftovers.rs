//! What an app keeps in the table besides its App resource, and how it all
//! goes once the app is gone: its release history (`RELEASES#{history}`),
//! the claims of the hostnames its revisions named (`HOST#{hostname}`), its
//! webhook (`HOOK#{id}`, its delivery records and the history's pointer to
//! it), and its entry in its environment's list (`ENVAPPS#{namespace}` /
//! `APP#{history}`).
//!
//! The entry is how the rest is found once nothing in the cluster names the
//! app any more (its environment purged): every write of the app's
//! configuration puts it, in the transaction that writes its revisions
//! (`releases::prepare`), so no history exists without one. The entry's
//! item is the store's (`berth_store::app_entries`), as is the record of a
//! purge (`berth_store::purges`).
//!
//! [`remove`] takes an app's leftovers away in an order that any cut
//! (a timeout, a crash, a store fault) leaves resumable: first the claims
//! (found from the revisions, which are still there), then the revisions
//! and the hook's delivery records, and last, in one transaction, the hook,
//! the history's pointer to it and the entry. Until that last step the
//! entry still leads to whatever is left, and every step is idempotent, so
//! running it again finishes it.

use aws_sdk_dynamodb::types::{Delete, TransactWriteItem};
use kube::ResourceExt;
use serde::Deserialize;

use super::hosts;
use crate::ApiError;
use berth_cluster::apps::ANNOTATION_HISTORY;
use berth_cluster::crd::{App, LABEL_ENVIRONMENT, LABEL_ORG, LABEL_PROJECT};
use berth_domain::clock;
use berth_store as store;
use berth_store::app_entries::{AppEntry, Place};
use berth_store::{Item, Store, keys};

/// The entry of `app` (labelled and annotated as it is or will be
/// written); None for an App without a release history id (not made by
/// Berth's API).
pub fn entry_of(app: &App) -> Option<AppEntry> {
    let label = |key: &str| app.labels().get(key).cloned().unwrap_or_default();
    let history = app.annotations().get(ANNOTATION_HISTORY)?.clone();
    let namespace = app.namespace().unwrap_or_default();
    let place = Place {
        namespace: &namespace,
        org: label(LABEL_ORG),
        project: label(LABEL_PROJECT),
        environment: label(LABEL_ENVIRONMENT),
        app: app.name_any(),
    };
    Some(AppEntry::new(place, history, clock::unix_millis()))
}

/// The entry of `app`, put in the transaction of each of its writes.
pub fn entry_put(store: &Store, app: &App) -> Result<TransactWriteItem, ApiError> {
    entry_of(app)
        .ok_or_else(|| ApiError::Internal(format!("app {} has no history id", app.name_any())))?
        .put(store)
        .map_err(ApiError::from)
}

/// What a revision's snapshot says that the clean-up needs: its hostnames.
/// Read leniently, so that no snapshot, however old its shape, can keep an
/// app's leftovers from going.
#[derive(Deserialize)]
struct Hostnames {
    #[serde(default)]
    domains: Vec<String>,
}

/// Removes what the app of release history `history` in `namespace` left
/// in the table (see the module docs for the order). Only for an app that
/// is gone: its App deleted, or never created.
pub async fn remove(
    store: &Store,
    org: &str,
    namespace: &str,
    history: &str,
) -> Result<(), ApiError> {
    let items = store::query_all(
        store
            .client()
            .query()
            .table_name(store.table())
            .key_condition_expression("pk = :pk")
            .expression_attribute_values(":pk", store::s(keys::releases(history)))
            .projection_expression("pk, sk, #hook, #config")
            .expression_attribute_names("#hook", "hook")
            .expression_attribute_names("#config", "config")
            .consistent_read(true),
    )
    .await?;
    let mut hostnames: Vec<String> = Vec::new();
    for item in &items {
        let Some(config) = item.get("config").and_then(|value| value.as_s().ok()) else {
            continue;
        };
        match serde_json::from_str::<Hostnames>(config) {
            Ok(found) => hostnames.extend(found.domains),
            // Its claims, if any, stay stale: taken over when claimed.
            Err(error) => {
                tracing::warn!(history, sk = store::sort_key(item), error = %error, "a revision's hostnames cannot be read");
            }
        }
    }
    hosts::release_claims(store, org, history, None, &hostnames).await?;

    let hook = items
        .iter()
        .find_map(berth_store::hooks::hook_of_history_item);
    let revisions: Vec<Item> = items
        .iter()
        .filter(|item| store::sort_key(item) != keys::WEBHOOK_SK)
        .map(key_of)
        .collect();
    store.delete_batch(revisions).await?;
    // The hook's delivery records are kept while it exists (no expiry):
    // they go before it, so a cut leaves the hook that leads to them.
    if let Some(hook_id) = hook {
        let records = berth_store::hooks::delivery_records(store, hook_id).await?;
        store.delete_batch(records).await?;
    }

    // Last and at once: the entry that leads here, and the hook with the
    // pointer that leads to it.
    let delete = |key: Item| {
        store::tx_delete(
            Delete::builder()
                .table_name(store.table())
                .set_key(Some(key)),
        )
    };
    let mut last = vec![delete(store::key(
        keys::environment_apps(namespace),
        &keys::environment_app_sk(history),
    ))?];
    if let Some(hook_id) = hook {
        last.push(delete(berth_store::hooks::hook_key(hook_id))?);
        last.push(delete(store::key(
            keys::releases(history),
            keys::WEBHOOK_SK,
        ))?);
    }
    Ok(store
        .transact(last)
        .await
        .map_err(store::transaction_failure)?)
}

/// The primary key of an item read with it.
fn key_of(item: &Item) -> Item {
    let mut key = item.clone();
    key.retain(|name, _| name == keys::PK || name == keys::SK);
    key
}
