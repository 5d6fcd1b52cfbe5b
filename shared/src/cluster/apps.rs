//! App resources in their environment's namespace, the pods rendered from
//! them, and their volumes' claims. Visibility: an App carries its
//! organization, project and environment as labels, so reading it alone
//! decides whether the caller may see it.

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, Preconditions};

use super::crd::{App, LABEL_APP, LABEL_ENVIRONMENT, LABEL_ORG, LABEL_PROJECT};
use super::{environments, is_conflict, is_not_found};
use crate::{ApiError, Missing};

/// The key of an app's release history in Berth's table (see
/// `apps::releases`); chosen when the app is created, kept for its life.
pub const ANNOTATION_HISTORY: &str = "berth.dev/release-history";

/// Where an app lives: its project, environment and name, as in the URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppPath {
    pub project: String,
    pub environment: String,
    pub app: String,
}

impl AppPath {
    pub fn namespace(&self) -> String {
        environments::resource_name(&self.project, &self.environment)
    }

    /// The audit target: `project/environment/app`.
    pub fn target(&self) -> String {
        format!("{}/{}/{}", self.project, self.environment, self.app)
    }

    pub fn missing(&self) -> ApiError {
        ApiError::NotFound(Missing::App {
            project: self.project.clone(),
            environment: self.environment.clone(),
            app: self.app.clone(),
        })
    }
}

/// The 404 of an App that was read and has gone since.
fn gone(app: &App) -> ApiError {
    let labels = app.labels();
    let label = |key: &str| labels.get(key).cloned().unwrap_or_default();
    AppPath {
        project: label(LABEL_PROJECT),
        environment: label(LABEL_ENVIRONMENT),
        app: app.name_any(),
    }
    .missing()
}

fn api(client: &kube::Client, namespace: &str) -> Api<App> {
    Api::namespaced(client.clone(), namespace)
}

fn belongs(app: &App, org: &str, project: &str, environment: &str) -> bool {
    let labels = app.labels();
    labels.get(LABEL_ORG).map(String::as_str) == Some(org)
        && labels.get(LABEL_PROJECT).map(String::as_str) == Some(project)
        && labels.get(LABEL_ENVIRONMENT).map(String::as_str) == Some(environment)
}

/// The organization's app at that path; anything else is not found. The
/// 404 names the first of project, environment and app that is missing
/// (looked up only then, so a found app costs one read).
pub async fn get_visible(
    client: &kube::Client,
    org: &str,
    path: &AppPath,
) -> Result<App, ApiError> {
    match api(client, &path.namespace()).get_opt(&path.app).await {
        Ok(Some(app)) if belongs(&app, org, &path.project, &path.environment) => return Ok(app),
        Ok(_) => {}
        // The namespace itself may be gone (a purged environment).
        Err(error) if is_not_found(&error) => {}
        Err(error) => return Err(error.into()),
    }
    environments::get_visible(client, org, &path.project, &path.environment).await?;
    Err(path.missing())
}

/// Sets the App's restart stamp (a merge patch of that field alone: no
/// release revision, and nothing a concurrent change set is lost).
pub async fn stamp_restart(client: &kube::Client, app: &App, stamp: &str) -> Result<App, ApiError> {
    let patch = serde_json::json!({ "spec": { "restartedAt": stamp } });
    match api(client, &app.namespace().unwrap_or_default())
        .patch(
            &app.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
    {
        Ok(patched) => Ok(patched),
        Err(error) if is_not_found(&error) => Err(gone(app)),
        Err(error) => Err(error.into()),
    }
}

/// The App as it is now (after a write was refused as stale).
pub async fn reread(client: &kube::Client, app: &App) -> Result<App, ApiError> {
    api(client, &app.namespace().unwrap_or_default())
        .get_opt(&app.name_any())
        .await?
        .ok_or_else(|| gone(app))
}

/// The App at that path, whoever's it is (never shown to a caller as such).
pub async fn find(client: &kube::Client, path: &AppPath) -> Result<Option<App>, ApiError> {
    match api(client, &path.namespace()).get_opt(&path.app).await {
        Ok(found) => Ok(found),
        // The namespace itself may be gone (a purged environment).
        Err(error) if is_not_found(&error) => Ok(None),
        Err(error) => Err(error.into()),
    }
}

/// Whether an app of that name exists in the environment's namespace,
/// whoever's it is.
pub async fn exists(client: &kube::Client, path: &AppPath) -> Result<bool, ApiError> {
    Ok(find(client, path).await?.is_some())
}

/// The organization's apps of an environment (whose visibility the caller
/// has checked), by name.
pub async fn list(
    client: &kube::Client,
    org: &str,
    project: &str,
    environment: &str,
) -> Result<Vec<App>, ApiError> {
    let namespace = environments::resource_name(project, environment);
    let params = ListParams::default().labels(&format!("{LABEL_ORG}={org}"));
    let mut apps: Vec<App> = match super::list_decoded(client, Some(&namespace), &params).await {
        Ok(apps) => apps,
        Err(error) if is_not_found(&error) => Vec::new(),
        Err(error) => return Err(error.into()),
    };
    apps.retain(|app| belongs(app, org, project, environment));
    apps.sort_by_key(ResourceExt::name_any);
    Ok(apps)
}

pub async fn create(client: &kube::Client, app: &App) -> Result<App, ApiError> {
    let namespace = app.namespace().unwrap_or_default();
    match api(client, &namespace)
        .create(&PostParams::default(), app)
        .await
    {
        Ok(created) => Ok(created),
        Err(error) if is_conflict(&error) => Err(ApiError::Conflict(format!(
            "an app named {} already exists in this environment",
            app.name_any()
        ))),
        // The controller has not made the namespace yet.
        Err(error) if is_not_found(&error) => Err(ApiError::Conflict(
            "the environment is still being provisioned; try again in a moment".into(),
        )),
        Err(error) => Err(error.into()),
    }
}

/// Replaces an App whose `resourceVersion` is the one read: a concurrent
/// change that won is a conflict, and this one changes nothing.
pub async fn replace(client: &kube::Client, app: &App) -> Result<App, ApiError> {
    let namespace = app.namespace().unwrap_or_default();
    match api(client, &namespace)
        .replace(&app.name_any(), &PostParams::default(), app)
        .await
    {
        Ok(replaced) => Ok(replaced),
        Err(error) if is_conflict(&error) => Err(crate::apps::releases::changed_meanwhile()),
        Err(error) if is_not_found(&error) => Err(gone(app)),
        Err(error) => Err(error.into()),
    }
}

/// Deletes the App that was read (uid precondition); its workloads follow
/// through their owner references.
pub async fn delete(client: &kube::Client, app: &App) -> Result<(), ApiError> {
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid: app.uid(),
            resource_version: None,
        }),
        ..DeleteParams::background()
    };
    match api(client, &app.namespace().unwrap_or_default())
        .delete(&app.name_any(), &params)
        .await
    {
        Ok(_) => Ok(()),
        Err(error) if is_not_found(&error) => Err(gone(app)),
        Err(error) if is_conflict(&error) => Err(crate::apps::releases::changed_meanwhile()),
        Err(error) => Err(error.into()),
    }
}

fn app_selector(org: &str, path: &AppPath) -> String {
    format!("{LABEL_ORG}={org},{LABEL_APP}={}", path.app)
}

/// The pods of an app, newest first.
pub async fn pods(client: &kube::Client, org: &str, path: &AppPath) -> Result<Vec<Pod>, ApiError> {
    let params = ListParams::default().labels(&app_selector(org, path));
    let mut pods = match Api::<Pod>::namespaced(client.clone(), &path.namespace())
        .list(&params)
        .await
    {
        Ok(list) => list.items,
        Err(error) if is_not_found(&error) => Vec::new(),
        Err(error) => return Err(error.into()),
    };
    pods.sort_by(|a, b| {
        b.metadata
            .creation_timestamp
            .cmp(&a.metadata.creation_timestamp)
            .then_with(|| a.name_any().cmp(&b.name_any()))
    });
    Ok(pods)
}

/// Deletes the claims of an app's volumes; answers how many there were.
pub async fn delete_claims(
    client: &kube::Client,
    org: &str,
    path: &AppPath,
) -> Result<usize, ApiError> {
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), &path.namespace());
    let params = ListParams::default().labels(&app_selector(org, path));
    let found = match claims.list(&params).await {
        Ok(list) => list.items,
        Err(error) if is_not_found(&error) => return Ok(0),
        Err(error) => return Err(error.into()),
    };
    for claim in &found {
        match claims
            .delete(&claim.name_any(), &DeleteParams::default())
            .await
        {
            Ok(_) => {}
            Err(error) if is_not_found(&error) => {}
            Err(error) => return Err(error.into()),
        }
    }
    Ok(found.len())
}
