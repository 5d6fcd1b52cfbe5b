//! The change pipeline: every write of an app's configuration (create,
//! update, rollback, promote, template deploy) is a [`Change`] its operation
//! makes, and passes here, in this order:
//!
//! 1. **the checks** ([`Change::check`]): the objects it renders take no
//!    other app's names (a new app: nor its name), and the secrets it reads
//!    exist. Only a change that passed them can be committed ([`Checked`]);
//! 2. **the release history**: its revision, with those the App holds
//!    (`super::releases::prepare`), in one transaction with
//! 3. **the hostname claims** of its configuration (`super::hosts` supplies
//!    the claim writes and which stale claims to take over) and the app's
//!    entry in its environment's list (`super::leftovers`);
//! 4. **the cluster write** ([`Checked::commit`]): the App created, or
//!    replaced over the version that was read — the commit point.
//!
//! Then what a committed change leads to: the hostnames it dropped are
//! released, a new app from source gets its first build. It answers the
//! App's record, as the caller may see it.
//!
//! What an operation decides before its change (which configuration, why,
//! the permissions a body's fields need) stays with it (`super::service`,
//! `crate::templates`). The controller's own revisions (an automatic
//! rollback, a build's image) cannot come here: it stands below berth-api
//! and writes no release history. It shares with this module the App's
//! revision bookkeeping, in berth-cluster (`ReleaseMark::now`,
//! `App::next_revision`; `App::revised` here, `App::superseded` there).

use std::collections::BTreeMap;
use std::time::Duration;

use kube::ResourceExt;
use kube::api::ObjectMeta;

use super::hosts::{self, Claims, HostRules, VerifiedDomains};
use super::leftovers;
use super::record::record_of;
use super::releases::{self, NotPrepared, StoredRelease};
use crate::ApiError;
use crate::secrets;
use berth_cluster::ClusterError;
use berth_cluster::apps::{self as cluster_apps, ANNOTATION_HISTORY, history_of};
use berth_cluster::build_queue;
use berth_cluster::crd::{
    App, AppSpec, Decision, LABEL_ENVIRONMENT, LABEL_MANAGED_BY, LABEL_ORG, LABEL_PROJECT, MANAGER,
    ReleaseMark, ReleaseReason,
};
use berth_cluster::rendered_names;
use berth_domain::app::AppConfig;
use berth_domain::names::Hostname;
use berth_domain::paths::AppPath;
use berth_records::apps::record::AppRecord;
use berth_store::Store;
use berth_store::identity::Principal;

/// How often a change's transaction is tried: a takeover of a stale claim
/// needs a second attempt, a lost race with a concurrent transaction a retry.
const ATTEMPTS: u32 = 3;

/// How often a replace is tried again when only the App's status moved.
const REPLACES: u32 = 5;

/// A change of one app's configuration, as its operation made it.
pub(crate) struct Change {
    path: AppPath,
    /// The App as read; None for a new app.
    current: Option<App>,
    config: AppConfig,
    reason: ReleaseReason,
    note: Option<String>,
    /// What it decided, if it is a decision (`Decision`).
    decision: Option<String>,
}

/// Where a committed change goes: the table, the cluster, the hostname
/// rules, and who makes it.
pub(crate) struct Writer<'a> {
    pub store: &'a Store,
    pub client: &'a kube::Client,
    pub rules: &'a HostRules,
    pub caller: &'a Principal,
}

impl Change {
    /// A new app at `path` (revision 1).
    pub fn create(path: AppPath, config: AppConfig, reason: ReleaseReason) -> Self {
        Self {
            path,
            current: None,
            config,
            reason,
            note: None,
            decision: None,
        }
    }

    /// The next revision of `current`, the app at `path`.
    pub fn revise(path: AppPath, current: App, config: AppConfig, reason: ReleaseReason) -> Self {
        Self {
            current: Some(current),
            ..Self::create(path, config, reason)
        }
    }

    /// With the revision's note.
    pub fn noted(self, note: String) -> Self {
        Self {
            note: Some(note),
            ..self
        }
    }

    /// As a decision (`Decision`): the app's builds asked for before it are
    /// moot, and none writes its image over it.
    pub fn deciding(self, what: Option<String>) -> Self {
        Self {
            decision: what,
            ..self
        }
    }

    /// Checks it against the environment's other apps (`neighbours`) and
    /// the secrets it reads.
    pub async fn check(
        self,
        client: &kube::Client,
        neighbours: &[App],
    ) -> Result<Checked, ApiError> {
        let checked = self.check_names(neighbours)?;
        let change = &checked.0;
        secrets::check_references(client, &change.path, &change.config).await?;
        Ok(checked)
    }

    /// Checks its names alone: for a change that brings the secrets it
    /// reads (a template's generated values, made once this passed).
    pub fn check_names(self, neighbours: &[App]) -> Result<Checked, ApiError> {
        if let Some((field, rule)) = self.config.first_refused() {
            return Err(ApiError::ValidationFailed(format!(
                "{field}: the value stored in the cluster {rule}; give it anew"
            )));
        }
        if self.current.is_none() {
            check_new(&self.path, neighbours)?;
        }
        check_rendered_names(&self.path, &self.config, neighbours)?;
        Ok(Checked(self))
    }
}

/// Refuses a new app whose name is taken in the environment (the create
/// would be refused anyway; this says so before the names are compared).
fn check_new(path: &AppPath, neighbours: &[App]) -> Result<(), ApiError> {
    if neighbours
        .iter()
        .any(|app| app.name_any() == path.app.as_str())
    {
        return Err(ApiError::Conflict(format!(
            "an app named {} already exists in this environment",
            path.app
        )));
    }
    Ok(())
}

/// Refuses a configuration that would render an object (of one kind and
/// name) another app of the environment renders: each rendered name belongs
/// to one app. Two creates racing past this check meet the controller's rule
/// instead, which never applies over an object another app controls.
fn check_rendered_names(
    path: &AppPath,
    config: &AppConfig,
    neighbours: &[App],
) -> Result<(), ApiError> {
    let names: Vec<String> = neighbours.iter().map(ResourceExt::name_any).collect();
    let others = names
        .iter()
        .zip(neighbours)
        .map(|(name, app)| (name.as_str(), &app.spec.config));
    match rendered_names::first_clash(path.app.as_str(), config, others) {
        None => Ok(()),
        Some(clash) => Err(ApiError::Conflict(format!(
            "{clash}: an app's objects are named {{app}}-{{process}} and {{app}}-{{volume}}, so \
             choose other names"
        ))),
    }
}

/// A change that passed its checks: the one thing that can be committed.
pub(crate) struct Checked(Change);

impl Checked {
    /// Commits it: its revision with its hostnames' claims, then the App
    /// (see the module docs). Answers the App's record.
    pub async fn commit(self, writer: &Writer<'_>) -> Result<AppRecord, ApiError> {
        let change = self.0;
        let next = next_app(&change, writer.caller);
        let current = change.current.as_ref();
        record_revision(writer, &next, current).await?;
        // Once its claims stand: a hostname verified for another
        // organization refused them.
        let verified = VerifiedDomains::of(writer.store, current, &next).await?;
        let written = match current {
            None => create(writer, &change.path, next, &verified).await?,
            Some(current) => replace(writer, current, next, &verified).await?,
        };
        if current.is_none() {
            queue_first_build(writer, &change.path, &written).await;
        }
        Ok(record_of(
            &written,
            &change.path.environment_path(),
            writer.caller,
        ))
    }
}

/// The App the change writes: its configuration as the next revision.
fn next_app(change: &Change, caller: &Principal) -> App {
    let revision = change.current.as_ref().map_or(1, App::next_revision);
    let actor = Some(caller.user.email.clone());
    let release = ReleaseMark::now(revision, change.reason, change.note.clone(), actor);
    let config = change.config.clone();
    match &change.current {
        None => new_app(&change.path, caller, config, release),
        Some(current) => {
            let decision = change
                .decision
                .clone()
                .map(|what| Decision { revision, what });
            current.revised(config, release, decision)
        }
    }
}

/// A new App at `path`, labelled with where it is and whose, with a new
/// release history id (unique per incarnation of the app).
fn new_app(path: &AppPath, caller: &Principal, config: AppConfig, release: ReleaseMark) -> App {
    let history = uuid::Uuid::new_v4().simple().to_string();
    App {
        metadata: ObjectMeta {
            name: Some(path.app.to_string()),
            namespace: Some(path.namespace()),
            labels: Some(BTreeMap::from([
                (LABEL_ORG.to_owned(), caller.user.org.to_string()),
                (LABEL_PROJECT.to_owned(), path.project.to_string()),
                (LABEL_ENVIRONMENT.to_owned(), path.environment.to_string()),
                (LABEL_MANAGED_BY.to_owned(), MANAGER.to_owned()),
            ])),
            annotations: Some(BTreeMap::from([(ANNOTATION_HISTORY.to_owned(), history)])),
            ..ObjectMeta::default()
        },
        spec: AppSpec {
            unrecorded: Vec::new(),
            config,
            release,
            restarted_at: None,
            decision: None,
        },
        status: None,
    }
}

/// Writes the revision of `next` into the release history with the claims
/// of all its hostnames and its entry, in one transaction (see
/// `super::releases` and `super::hosts`): a hostname another app serves is
/// `domain_taken`, and then nothing is written.
async fn record_revision(
    writer: &Writer<'_>,
    next: &App,
    current: Option<&App>,
) -> Result<(), ApiError> {
    let store = writer.store;
    let mut claims = Claims::of(writer.rules, next)?;
    let history = history_of(next)?;
    let release = releases::stored(&next.spec.release, &next.spec.config, false)?;
    let (own, unrecorded) = held_revisions(current)?;
    for attempt in 1..=ATTEMPTS {
        let entry = leftovers::entry_for_write(next)?;
        let with = claims.writes(next)?;
        let prepared = releases::prepare(
            store,
            &history,
            own.as_ref(),
            &unrecorded,
            &release,
            &entry,
            &with,
        );
        match prepared.await {
            Ok(()) => return Ok(()),
            Err(NotPrepared::Failed(error)) => return Err(error.into()),
            // Another change committed this revision first.
            Err(NotPrepared::Superseded) => return Err(cluster_apps::changed_meanwhile().into()),
            Err(NotPrepared::Contended) => back_off(attempt).await,
            Err(NotPrepared::Refused(refused)) => {
                let (client, rules) = (writer.client, writer.rules);
                claims
                    .take_over_stale(store, client, rules, next, refused)
                    .await?;
            }
        }
    }
    Err(ApiError::Conflict(
        "a concurrent change won; try again".into(),
    ))
}

/// The revisions `current` holds (none for a new app), which the change
/// records too: the store may not hold them yet (`releases::held_by`).
fn held_revisions(
    current: Option<&App>,
) -> Result<(Option<StoredRelease>, Vec<StoredRelease>), ApiError> {
    let Some(current) = current else {
        return Ok((None, Vec::new()));
    };
    let (own, unrecorded) = releases::held_by(current)?;
    Ok((Some(own), unrecorded))
}

/// Waits before another attempt, apart, so the racers do not meet again
/// at once.
async fn back_off(attempt: u32) {
    let jitter = rand::random::<u64>() % 40;
    tokio::time::sleep(Duration::from_millis(20 * u64::from(attempt) + jitter)).await;
}

/// Creates the new App. Should that fail, its revision was never reached:
/// nothing refers to it, and what the failure leaves its entry leads the
/// environment's purge to.
async fn create(
    writer: &Writer<'_>,
    path: &AppPath,
    mut next: App,
    verified: &VerifiedDomains,
) -> Result<App, ApiError> {
    verified.write_on(None, &mut next);
    let error = match cluster_apps::create(writer.client, &next).await {
        Ok(created) => return Ok(created),
        Err(error) => error,
    };
    let history = history_of(&next)?;
    if let Err(cleanup) = leftovers::remove(
        writer.store,
        writer.caller.user.org.as_str(),
        &path.namespace(),
        &history,
    )
    .await
    {
        tracing::warn!(error = %cleanup.cause(), "an unused release history was left behind");
    }
    Err(error.into())
}

/// Replaces `current` with `next`, conditioned on the version that was
/// read; then releases the hostnames it dropped.
async fn replace(
    writer: &Writer<'_>,
    current: &App,
    mut next: App,
    verified: &VerifiedDomains,
) -> Result<App, ApiError> {
    let client = writer.client;
    let history = history_of(current)?;
    let mut read = current.clone();
    // The controller writes the App's status, which moves its
    // resourceVersion; only a change of the spec (its generation) is a
    // concurrent change that wins.
    for _ in 0..REPLACES {
        next.metadata = read.metadata.clone();
        verified.write_on(Some(&read), &mut next);
        match cluster_apps::replace(client, &next).await {
            Err(ClusterError::Conflict(_)) => {
                let again = cluster_apps::reread(client, current).await?;
                if again.metadata.generation != current.metadata.generation
                    || again.metadata.uid != current.metadata.uid
                {
                    return Err(cluster_apps::changed_meanwhile().into());
                }
                read = again;
            }
            Ok(replaced) => {
                let org = writer.caller.user.org.as_str();
                release_dropped(writer.store, org, &history, current, &next).await;
                return Ok(replaced);
            }
            Err(error) => return Err(error.into()),
        }
    }
    Err(cluster_apps::changed_meanwhile().into())
}

/// Releases the hostnames `current` had and `next` (committed) dropped:
/// only now, as until the commit the app still served them.
async fn release_dropped(store: &Store, org: &str, history: &str, current: &App, next: &App) {
    let kept: Vec<&Hostname> = next.spec.config.hostnames().collect();
    let dropped: Vec<String> = (current.spec.config.hostnames())
        .filter(|host| !kept.contains(host))
        .map(|host| host.as_str().to_owned())
        .collect();
    hosts::release(
        store,
        org,
        history,
        Some(next.spec.release.revision),
        &dropped,
    )
    .await;
}

/// Queues the first build of a new app from source (one without an
/// image). The app is committed: a fault now leaves it awaiting a build
/// that createBuild queues (docs/api-notes.md, "Apps from source").
async fn queue_first_build(writer: &Writer<'_>, path: &AppPath, created: &App) {
    if created.spec.config.image.is_some() {
        return;
    }
    let asked = build_queue::Asked::by(&writer.caller.user.email, None);
    if let Err(error) = build_queue::start(writer.client, created, asked).await {
        tracing::warn!(app = %path.target(), error = %error,
            "the first build of an app from source could not be queued");
    }
}
