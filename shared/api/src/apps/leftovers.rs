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

use kube::ResourceExt;
use serde::Deserialize;

use crate::ApiError;
use berth_cluster::apps::ANNOTATION_HISTORY;
use berth_cluster::crd::{App, LABEL_ENVIRONMENT, LABEL_ORG, LABEL_PROJECT};
use berth_domain::clock;
use berth_store::Store;
use berth_store::app_entries::{AppEntry, Place};
use berth_store::hostnames;
use berth_store::releases::{self, HistoryItems};

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
pub fn entry_for_write(app: &App) -> Result<AppEntry, ApiError> {
    entry_of(app)
        .ok_or_else(|| ApiError::Internal(format!("app {} has no history id", app.name_any())))
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
    let items = HistoryItems::read(store, history).await?;
    let mut hostnames: Vec<String> = Vec::new();
    for (sk, config) in items.configs() {
        match serde_json::from_str::<Hostnames>(config) {
            Ok(found) => hostnames.extend(found.domains),
            // Its claims, if any, stay stale: taken over when claimed.
            Err(error) => {
                tracing::warn!(history, sk, error = %error, "a revision's hostnames cannot be read");
            }
        }
    }
    hostnames::release_claims(store, org, history, None, &hostnames).await?;

    items.delete_revisions(store).await?;
    // The hook's delivery records are kept while it exists (no expiry):
    // they go before it, so a cut leaves the hook that leads to them.
    if let Some(hook_id) = items.hook() {
        berth_store::hooks::delete_deliveries(store, hook_id).await?;
    }

    // Last and at once: the entry that leads here, and the hook with the
    // pointer that leads to it.
    Ok(releases::forget_app(store, namespace, history, items.hook()).await?)
}
