//! The webhook operations: an app's hook made, read and deleted by its
//! team, and the receiver GitHub and GitLab call.

use std::hint::black_box;

use axum::http::HeaderMap;

use super::delivery::{DUMMY_SECRET, Delivery, github_signature};
use super::push::{self, Decision};
use crate::ApiError;
use crate::AppState;
use crate::apps::service::app_to_change;
use crate::builds::record::build_record;
use crate::http::scope;
use berth_cluster::apps::{self as cluster_apps, history_of};
use berth_cluster::build_queue::{self, Asked, Pushed};
use berth_cluster::crd::App;
use berth_domain::Missing;
use berth_domain::git::GitRef;
use berth_domain::ids::RecordId;
use berth_domain::names::{AppName, EnvironmentName, OrgName, ProjectName};
use berth_domain::paths::AppPath;
use berth_records::builds::BuildRecord;
use berth_records::webhooks::{CreatedWebhook, WebhookRecord};
use berth_store::Store;
use berth_store::hooks::{self, HookItem, HookedApp};
use berth_store::identity::Principal;

/// The largest delivery read (`413` beyond). GitHub caps a payload at
/// 25 MB, but a push payload lists at most 20 commits and stays far below
/// this; API Gateway and Lambda take a few MB at most anyway.
pub const MAX_DELIVERY_BYTES: usize = 1024 * 1024;

/// The actor of the builds a hook starts (`Build.actor`).
pub const WEBHOOK_ACTOR: &str = "webhook";

/// The receiver's path, under which GitHub and GitLab call a hook.
pub fn receiver_path(hook_id: &str) -> String {
    format!("/api/v1/hooks/{hook_id}")
}

/// What the receiver did with a delivery it accepted.
#[derive(Debug)]
pub enum Received {
    /// Nothing, for this reason (`200 {"ignored": …}`).
    Ignored(String),
    /// A build of the pushed commit (`202`).
    Started(Box<BuildRecord>),
}

async fn hooked_app(
    client: &kube::Client,
    caller: &Principal,
    path: &AppPath,
) -> Result<(App, String), ApiError> {
    let app = cluster_apps::get_visible(client, &caller.user.org, path).await?;
    let history = history_of(&app)?;
    Ok((app, history))
}

/// Makes the app's webhook, or replaces it (the old secret and URL stop
/// working at once).
pub async fn create(
    store: &Store,
    client: &kube::Client,
    caller: &Principal,
    path: &AppPath,
) -> Result<CreatedWebhook, ApiError> {
    let (app, history) = hooked_app(client, caller, path).await?;
    let (hook, replaced) = hooks::create(
        store,
        &HookedApp {
            org: caller.user.org.to_string(),
            project: path.project.to_string(),
            environment: path.environment.to_string(),
            app: path.app.to_string(),
            history,
        },
    )
    .await?;
    if let Some(replaced) = replaced {
        gone(store, client, &app, &replaced).await;
    }
    Ok(CreatedWebhook {
        record: WebhookRecord {
            url: receiver_path(&hook.id),
            created_at: hook.created_at,
        },
        secret: hook.secret,
    })
}

fn no_webhook(path: &AppPath) -> ApiError {
    ApiError::NotFound(Missing::Webhook {
        project: path.project.to_string(),
        environment: path.environment.to_string(),
        app: path.app.to_string(),
    })
}

pub async fn get(
    store: &Store,
    client: &kube::Client,
    caller: &Principal,
    path: &AppPath,
) -> Result<WebhookRecord, ApiError> {
    let (_, history) = hooked_app(client, caller, path).await?;
    let pointer = hooks::pointer(store, &history)
        .await?
        .ok_or_else(|| no_webhook(path))?;
    Ok(WebhookRecord {
        url: receiver_path(&pointer.hook),
        created_at: pointer.created_at,
    })
}

pub async fn delete(
    store: &Store,
    client: &kube::Client,
    caller: &Principal,
    path: &AppPath,
) -> Result<(), ApiError> {
    let (app, history) = hooked_app(client, caller, path).await?;
    match hooks::delete(store, &history).await? {
        Some(deleted) => {
            gone(store, client, &app, &deleted).await;
            Ok(())
        }
        None => Err(no_webhook(path)),
    }
}

/// What follows a hook's deletion (or replacement), once its item is gone:
/// the builds it started and that have not finished are cancelled, and its
/// delivery records are forgotten.
///
/// Best effort, as the hook's change is already made: a failure is logged,
/// not answered (the caller would retry a change that took place, and a
/// new hook's secret would be lost); a build it could not cancel runs to
/// its end, as one that had finished a moment before the change would
/// have, and `cancelBuild` stops it.
async fn gone(store: &Store, client: &kube::Client, app: &App, hook_id: &str) {
    let cancelled = match build_queue::uid_of(app) {
        Ok(app_uid) => build_queue::cancel_of_hook(client, &app_uid, hook_id).await,
        Err(error) => Err(error),
    };
    if let Err(error) = cancelled {
        tracing::warn!(hook = %hook_id, error = %error,
            "the builds of a webhook that is gone could not be cancelled");
    }
    hooks::forget_deliveries(store, hook_id).await;
}

/// A delivery to the hook `hook_id`. Unknown hooks and deliveries without
/// the hook's signature are the same `401`, after the same work (one read,
/// one HMAC); the call is audited in the hook's organization (an unknown
/// hook's in the system partition, as every call without an organization).
pub async fn receive(
    state: &AppState,
    hook_id: Option<&RecordId>,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Received, ApiError> {
    let hook = hooks::find(&state.store, hook_id).await?;
    let delivery = Delivery::from_headers(headers);
    let secret = hook
        .as_ref()
        .map_or(DUMMY_SECRET, |hook| hook.secret.as_str());
    let signed = match &delivery {
        Some(delivery) => delivery.is_signed_by(secret, body),
        // No credential at all: the same HMAC's work, so that this answer
        // takes as long as a wrong signature's.
        None => {
            black_box(github_signature(black_box(secret), body));
            false
        }
    };
    let Some(hook) = hook else {
        return Err(ApiError::Unauthenticated);
    };
    let path = path_of(&hook)?;
    let org = OrgName::parse(&hook.org)
        .map_err(|e| ApiError::Internal(format!("a stored hook's organization: {e}")))?;
    scope::audit_org(org.clone());
    scope::audit_project(path.project.as_str());
    scope::audit_target("app", &path.app);
    let (true, Some(delivery)) = (signed, delivery) else {
        return Err(ApiError::Unauthenticated);
    };
    scope::audit_webhook(delivery.provider.as_str());
    if !crate::http::forgery::is_json(headers) {
        return Err(ApiError::UnsupportedMediaType(
            "the hook's content type must be application/json".into(),
        ));
    }
    if let Some(why) = push::ignored_event(&delivery) {
        return Ok(Received::Ignored(why));
    }
    let client = state.cluster.client().await?;
    // As createBuild: the environment must take writes (`409
    // environment_deleting`, `409 environment_not_ready`); the sender
    // retries a refused delivery.
    let app = app_to_change(&client, &org, &path).await?;
    if history_of(&app)? != hook.history {
        // The app was deleted and made again: this hook was the old one's.
        return Err(path.missing().into());
    }
    let Some(source) = app.spec.config.source.as_ref() else {
        return Ok(Received::Ignored(
            "the app has no git_repo: it runs an image and builds nothing".into(),
        ));
    };
    let (commit, branch) = match push::decide(body, source.git_ref.as_deref())? {
        Decision::Ignore(why) => return Ok(Received::Ignored(why)),
        Decision::Build { commit, branch } => (
            GitRef::parse(&commit)
                .map_err(|e| ApiError::InvalidRequest(format!("the pushed commit: {e}")))?,
            branch,
        ),
    };
    let delivery_id = delivery.id.as_deref();
    if !hooks::record_delivery(&state.store, &hook.id, delivery_id, body).await? {
        return Ok(Received::Ignored(
            "this delivery was received before (a replay or a redelivery)".into(),
        ));
    }
    // The build fetches the branch and builds the commit only if it is on
    // it: the payload names the commit, and whoever holds the hook's
    // secret (GitLab sends it in clear) can write any payload.
    let asked = Asked {
        actor: WEBHOOK_ACTOR,
        git_ref: Some(commit),
        push: Some(Pushed {
            branch,
            hook: hook.id.clone(),
        }),
    };
    match build_queue::start(&client, &app, asked).await {
        Ok(build) => Ok(Received::Started(Box::new(build_record(&build)))),
        Err(error) => {
            hooks::delivery_start_failed(&state.store, &hook.id, delivery_id, body).await;
            Err(error.into())
        }
    }
}

/// The app a stored hook is for.
fn path_of(hook: &HookItem) -> Result<AppPath, ApiError> {
    let stored = |what: &str, e: berth_domain::Invalid| {
        ApiError::Internal(format!("a stored hook's {what}: {e}"))
    };
    Ok(AppPath {
        project: ProjectName::parse(&hook.project).map_err(|e| stored("project", e))?,
        environment: EnvironmentName::parse(&hook.environment)
            .map_err(|e| stored("environment", e))?,
        app: AppName::parse(&hook.app).map_err(|e| stored("app", e))?,
    })
}
