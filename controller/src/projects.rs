//! `Project` → status `ready`, and a finalizer that keeps the project while any
//! environment still refers to it.

use std::sync::Arc;
use std::time::Duration;

use kube::ResourceExt;
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::finalizer::{Event, finalizer};
use serde_json::json;

use berth_cluster::crd::{Environment, LABEL_PROJECT, Project, ProjectStatus};

use crate::context::Context;
use crate::error::Error;

pub const FINALIZER: &str = "berth.dev/project-protection";

pub async fn reconcile(project: Arc<Project>, context: Arc<Context>) -> Result<Action, Error> {
    let api: Api<Project> = Api::all(context.client.clone());
    finalizer(&api, FINALIZER, project, |event| async {
        match event {
            Event::Apply(project) => mark_ready(&project, &context).await,
            Event::Cleanup(project) => release(&project, &context).await,
        }
    })
    .await
    .map_err(|error| Error::Finalizer(error.to_string()))
}

async fn mark_ready(project: &Project, context: &Context) -> Result<Action, Error> {
    let ready = ProjectStatus {
        ready: true,
        message: None,
    };
    if project.status.as_ref() != Some(&ready) {
        Api::<Project>::all(context.client.clone())
            .patch_status(
                &project.name_any(),
                &PatchParams::default(),
                &Patch::Merge(
                    json!({ "status": { "ready": ready.ready, "message": ready.message } }),
                ),
            )
            .await?;
    }
    Ok(Action::requeue(Duration::from_secs(300)))
}

/// Lets a deleted project go once no environment refers to it.
async fn release(project: &Project, context: &Context) -> Result<Action, Error> {
    let params = ListParams::default().labels(&format!("{LABEL_PROJECT}={}", project.name_any()));
    let environments = Api::<Environment>::all(context.client.clone())
        .list(&params)
        .await?;
    if environments.items.is_empty() {
        Ok(Action::await_change())
    } else {
        Err(Error::ProjectNotEmpty(project.name_any()))
    }
}
