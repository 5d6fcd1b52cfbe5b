//! App resources in their environment's namespace, the pods rendered from
//! them, and their volumes' claims. Visibility: an App carries its
//! organization, project and environment as labels, so reading it alone
//! decides whether the caller may see it.

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, Preconditions};

use super::crd::{
    App, LABEL_APP, LABEL_APP_UID, LABEL_COMMAND, LABEL_ENVIRONMENT, LABEL_MANAGED_BY, LABEL_ORG,
    LABEL_PROJECT, LABEL_RELEASE, MANAGER,
};
use super::{environments, is_conflict, is_not_found};
use crate::ClusterError;
use berth_domain::Missing;
use berth_domain::names::OrgName;
use berth_domain::paths::{AppPath, EnvironmentPath};

/// The key of an app's release history in Berth's table (see
/// `apps::releases`); chosen when the app is created, kept for its life.
pub const ANNOTATION_HISTORY: &str = "berth.dev/release-history";

/// The hostnames of the App's domains that its organization has proven it
/// controls, as the API last found them (comma-separated, in the App's
/// order): the controller serves only those. An App without it was written
/// before domains were proven, and is served as it was
/// (docs/api-notes.md, "Domain ownership").
pub const ANNOTATION_VERIFIED: &str = "berth.dev/verified-domains";

/// The hostnames the App's [`ANNOTATION_VERIFIED`] lists; None without it.
pub fn verified_domains(app: &App) -> Option<Vec<&str>> {
    app.annotations()
        .get(ANNOTATION_VERIFIED)
        .map(|listed| listed.split(',').filter(|host| !host.is_empty()).collect())
}

/// Sets the App's [`ANNOTATION_VERIFIED`] (before it is written).
pub fn set_verified_domains(app: &mut App, hostnames: &[String]) {
    app.annotations_mut()
        .insert(ANNOTATION_VERIFIED.to_owned(), hostnames.join(","));
}

/// Writes the App's [`ANNOTATION_VERIFIED`] alone (a merge patch: nothing
/// a concurrent change set is lost, and no revision).
pub async fn patch_verified_domains(
    client: &kube::Client,
    app: &App,
    hostnames: &[String],
) -> Result<(), ClusterError> {
    let patch = serde_json::json!({
        "metadata": { "annotations": { ANNOTATION_VERIFIED: hostnames.join(",") } }
    });
    merge_patch(client, app, &patch).await.map(drop)
}

/// A merge patch of the App: only what `patch` names changes.
async fn merge_patch(
    client: &kube::Client,
    app: &App,
    patch: &serde_json::Value,
) -> Result<App, ClusterError> {
    match api(client, &app.namespace().unwrap_or_default())
        .patch(
            &app.name_any(),
            &PatchParams::default(),
            &Patch::Merge(patch),
        )
        .await
    {
        Ok(patched) => Ok(patched),
        Err(error) if is_not_found(&error) => Err(gone(app)),
        Err(error) => Err(error.into()),
    }
}

/// The release history id of an App Berth's API made (every one has it).
pub fn history_of(app: &App) -> Result<String, ClusterError> {
    app.annotations()
        .get(ANNOTATION_HISTORY)
        .cloned()
        .ok_or_else(|| {
            ClusterError::Broken(format!(
                "app {} has no {ANNOTATION_HISTORY} annotation",
                app.name_any()
            ))
        })
}

/// The conflict of a write conditioned on the App as it was read, when it
/// changed meanwhile: this write changed nothing.
pub fn changed_meanwhile() -> ClusterError {
    ClusterError::Conflict("the app was changed meanwhile; read it again and retry".into())
}

/// The 404 of an App that was read and has gone since.
fn gone(app: &App) -> ClusterError {
    let labels = app.labels();
    let label = |key: &str| labels.get(key).cloned().unwrap_or_default();
    ClusterError::Missing(Missing::App {
        project: label(LABEL_PROJECT),
        environment: label(LABEL_ENVIRONMENT),
        app: app.name_any(),
    })
}

fn api(client: &kube::Client, namespace: &str) -> Api<App> {
    Api::namespaced(client.clone(), namespace)
}

/// Whether the App is the organization's, in that environment (by its labels).
fn belongs(app: &App, org: &OrgName, environment: &EnvironmentPath) -> bool {
    let labels = app.labels();
    let label = |key: &str| labels.get(key).map(String::as_str);
    label(LABEL_ORG) == Some(org.as_str())
        && label(LABEL_PROJECT) == Some(environment.project.as_str())
        && label(LABEL_ENVIRONMENT) == Some(environment.environment.as_str())
}

/// The organization's app at that path; anything else is not found. The
/// 404 names the first of project, environment and app that is missing
/// (looked up only then, so a found app costs one read).
pub async fn get_visible(
    client: &kube::Client,
    org: &OrgName,
    path: &AppPath,
) -> Result<App, ClusterError> {
    let environment = path.environment_path();
    match api(client, &path.namespace())
        .get_opt(path.app.as_str())
        .await
    {
        Ok(Some(app)) if belongs(&app, org, &environment) => return Ok(app),
        Ok(_) => {}
        // The namespace itself may be gone (a purged environment).
        Err(error) if is_not_found(&error) => {}
        Err(error) => return Err(error.into()),
    }
    environments::get_visible(client, org, &environment).await?;
    Err(path.missing().into())
}

/// Sets the App's restart stamp (a merge patch of that field alone: no
/// release revision, and nothing a concurrent change set is lost).
pub async fn stamp_restart(
    client: &kube::Client,
    app: &App,
    stamp: &str,
) -> Result<App, ClusterError> {
    let patch = serde_json::json!({ "spec": { "restartedAt": stamp } });
    merge_patch(client, app, &patch).await
}

/// The App as it is now (after a write was refused as stale).
pub async fn reread(client: &kube::Client, app: &App) -> Result<App, ClusterError> {
    api(client, &app.namespace().unwrap_or_default())
        .get_opt(&app.name_any())
        .await?
        .ok_or_else(|| gone(app))
}

/// The App at that path, whoever's it is (never shown to a caller as such).
pub async fn find(client: &kube::Client, path: &AppPath) -> Result<Option<App>, ClusterError> {
    match api(client, &path.namespace())
        .get_opt(path.app.as_str())
        .await
    {
        Ok(found) => Ok(found),
        // The namespace itself may be gone (a purged environment).
        Err(error) if is_not_found(&error) => Ok(None),
        Err(error) => Err(error.into()),
    }
}

/// The organization's apps of an environment (whose visibility the caller
/// has checked), by name.
pub async fn list(
    client: &kube::Client,
    org: &OrgName,
    environment: &EnvironmentPath,
) -> Result<Vec<App>, ClusterError> {
    let namespace = environment.namespace();
    let params = ListParams::default().labels(&format!("{LABEL_ORG}={org}"));
    let mut apps: Vec<App> = match super::list_decoded(client, Some(&namespace), &params).await {
        Ok(apps) => apps,
        Err(error) if is_not_found(&error) => Vec::new(),
        Err(error) => return Err(error.into()),
    };
    apps.retain(|app| belongs(app, org, environment));
    apps.sort_by_key(ResourceExt::name_any);
    Ok(apps)
}

/// Every App of a namespace, whoever's (one list): what the controller
/// renders there. None when the namespace is gone.
pub async fn in_namespace(
    client: &kube::Client,
    namespace: &str,
) -> Result<Vec<App>, ClusterError> {
    match super::list_decoded(client, Some(namespace), &ListParams::default()).await {
        Ok(apps) => Ok(apps),
        Err(error) if is_not_found(&error) => Ok(Vec::new()),
        Err(error) => Err(error.into()),
    }
}

/// Takes the organization's app at `path` out of the Apps of its namespace.
pub fn take_visible(apps: &mut Vec<App>, org: &OrgName, path: &AppPath) -> Option<App> {
    let environment = path.environment_path();
    let index = apps
        .iter()
        .position(|app| app.name_any() == path.app.as_str() && belongs(app, org, &environment))?;
    Some(apps.swap_remove(index))
}

pub async fn create(client: &kube::Client, app: &App) -> Result<App, ClusterError> {
    let namespace = app.namespace().unwrap_or_default();
    match api(client, &namespace)
        .create(&PostParams::default(), app)
        .await
    {
        Ok(created) => Ok(created),
        Err(error) if is_conflict(&error) => Err(ClusterError::Conflict(format!(
            "an app named {} already exists in this environment",
            app.name_any()
        ))),
        // The namespace went away since it was looked at.
        Err(error) if is_not_found(&error) => Err(ClusterError::EnvironmentNotReady(
            "the environment's namespace is not there (any more); try again in a few seconds"
                .into(),
        )),
        Err(error) => Err(error.into()),
    }
}

/// Replaces an App whose `resourceVersion` is the one read: a concurrent
/// change that won is a conflict, and this one changes nothing.
pub async fn replace(client: &kube::Client, app: &App) -> Result<App, ClusterError> {
    let namespace = app.namespace().unwrap_or_default();
    match api(client, &namespace)
        .replace(&app.name_any(), &PostParams::default(), app)
        .await
    {
        Ok(replaced) => Ok(replaced),
        Err(error) if is_conflict(&error) => Err(changed_meanwhile()),
        Err(error) if is_not_found(&error) => Err(gone(app)),
        Err(error) => Err(error.into()),
    }
}

/// Deletes the App that was read (uid precondition); its workloads follow
/// through their owner references.
pub async fn delete(client: &kube::Client, app: &App) -> Result<(), ClusterError> {
    match api(client, &app.namespace().unwrap_or_default())
        .delete(&app.name_any(), &super::delete_only(app.uid()))
        .await
    {
        Ok(_) => Ok(()),
        Err(error) if is_not_found(&error) => Err(gone(app)),
        Err(error) if is_conflict(&error) => Err(changed_meanwhile()),
        Err(error) => Err(error.into()),
    }
}

fn app_selector(org: &OrgName, path: &AppPath) -> String {
    format!("{LABEL_ORG}={org},{LABEL_APP}={}", path.app)
}

/// The pods of an app, newest first (see [`PodsOf`]).
pub async fn pods(
    client: &kube::Client,
    org: &OrgName,
    path: &AppPath,
    of: PodsOf<'_>,
) -> Result<Vec<Pod>, ClusterError> {
    let app = app_selector(org, path);
    let selector = match of {
        PodsOf::Processes => format!("{app},!{LABEL_RELEASE},!{LABEL_COMMAND}"),
        PodsOf::Release(revision) => format!("{app},{LABEL_RELEASE}={revision}"),
        PodsOf::Command(name) => format!("{app},{LABEL_COMMAND}={name}"),
    };
    super::pods_newest_first(client, &path.namespace(), &selector).await
}

/// Which of an app's pods: its processes', a revision's release command's,
/// or a one-off command's.
#[derive(Debug, Clone, Copy)]
pub enum PodsOf<'a> {
    Processes,
    Release(i64),
    Command(&'a str),
}

/// Deletes the claims of the app's volumes: those labelled with its uid,
/// each only if it is still that very claim. Answers how many there were.
pub async fn delete_claims(client: &kube::Client, app: &App) -> Result<usize, ClusterError> {
    let Some(uid) = app.uid() else {
        return Ok(0);
    };
    let namespace = app.namespace().unwrap_or_default();
    let params = ListParams::default().labels(&format!("{LABEL_APP_UID}={uid}"));
    let found = match claims(client, &namespace).list(&params).await {
        Ok(list) => list.items,
        Err(error) if is_not_found(&error) => return Ok(0),
        Err(error) => return Err(error.into()),
    };
    delete_each(client, &namespace, found).await
}

/// Deletes the claims an app of that name left when it was deleted: Berth's
/// claims labelled with the app's name whose app uid names no App of the
/// namespace (or that carry none, made before claims had it). Answers how
/// many there were.
pub async fn delete_left_claims(
    client: &kube::Client,
    org: &OrgName,
    path: &AppPath,
) -> Result<usize, ClusterError> {
    let namespace = path.namespace();
    let params = ListParams::default().labels(&format!(
        "{LABEL_MANAGED_BY}={MANAGER},{}",
        app_selector(org, path)
    ));
    let api = claims(client, &namespace);
    let (found, apps) = tokio::join!(api.list(&params), in_namespace(client, &namespace));
    let found = match found {
        Ok(list) => list.items,
        Err(error) if is_not_found(&error) => return Ok(0),
        Err(error) => return Err(error.into()),
    };
    let live: Vec<String> = apps?.iter().filter_map(ResourceExt::uid).collect();
    let left: Vec<PersistentVolumeClaim> = found
        .into_iter()
        .filter(|claim| {
            claim
                .labels()
                .get(LABEL_APP_UID)
                .is_none_or(|uid| !live.contains(uid))
        })
        .collect();
    delete_each(client, &namespace, left).await
}

fn claims(client: &kube::Client, namespace: &str) -> Api<PersistentVolumeClaim> {
    Api::namespaced(client.clone(), namespace)
}

/// Deletes each claim with a uid precondition: a claim made again under its
/// name since it was listed is not the one meant, and stays. Claims already
/// being deleted (waiting for their pods to go) are not counted.
async fn delete_each(
    client: &kube::Client,
    namespace: &str,
    mut found: Vec<PersistentVolumeClaim>,
) -> Result<usize, ClusterError> {
    found.retain(|claim| claim.metadata.deletion_timestamp.is_none());
    let api = claims(client, namespace);
    for claim in &found {
        let only_this_one = DeleteParams {
            preconditions: Some(Preconditions {
                uid: claim.uid(),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        match api.delete(&claim.name_any(), &only_this_one).await {
            Ok(_) => {}
            Err(error) if is_not_found(&error) || is_conflict(&error) => {}
            Err(error) => return Err(error.into()),
        }
    }
    Ok(found.len())
}
