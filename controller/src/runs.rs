//! `Run` → the Job that runs an app's scheduled process now. The API records
//! the request (`runApp`) and answers the Job's name; the controller makes
//! the Job from the process's CronJob, as `kubectl create job
//! --from=cronjob/…` does (its job template, the annotation
//! `cronjob.kubernetes.io/instantiate: manual`, an owner reference to the
//! CronJob), then deletes the Run: the Job is the record from then on.
//!
//! Only a CronJob the Run's App controls (by uid) is read, and the Job is
//! created, never applied over: a Job of that name that exists already is
//! left as it is. A Run that cannot start (its App or CronJob gone since the
//! API checked) says why in an Event on the App, and goes.

use std::sync::Arc;

use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, PostParams};
use kube::runtime::controller::Action;
use kube::{Resource, ResourceExt};

use berth_cluster::crd::{App, Run, object_names};
use berth_cluster::{delete_only, is_conflict, is_not_found, ownership};

use crate::context::Context;
use crate::error::Error;
use crate::events::Reason;

const RUN_STARTED: Reason = Reason::normal("RunStarted", "Run");
const RUN_NOT_STARTED: Reason = Reason::warning("RunNotStarted", "Run");

pub async fn reconcile(run: Arc<Run>, context: Arc<Context>) -> Result<Action, Error> {
    if run.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let namespace = run.namespace().unwrap_or_default();
    let name = run.name_any();
    let app = Api::<App>::namespaced(context.client.clone(), &namespace)
        .get_opt(&run.spec.app)
        .await?
        .filter(|app| app.uid().as_deref() == Some(run.spec.app_uid.as_str()));
    if let Some(app) = &app {
        match start(&run, app, &context).await? {
            Ok(()) => {
                let note = format!(
                    "Job {name} runs process {} now, from its CronJob.",
                    run.spec.process
                );
                context.events.publish(app, RUN_STARTED, note).await;
            }
            Err(why) => {
                tracing::warn!(run = %name, namespace = %namespace, why = %why, "run not started");
                context.events.publish(app, RUN_NOT_STARTED, why).await;
            }
        }
    }
    // Done either way (an App gone takes nothing to run with it).
    match Api::<Run>::namespaced(context.client.clone(), &namespace)
        .delete(&name, &delete_only(run.uid()))
        .await
    {
        Ok(_) => {}
        Err(error) if is_not_found(&error) || is_conflict(&error) => {}
        Err(error) => return Err(error.into()),
    }
    Ok(Action::await_change())
}

/// Makes the run's Job; `Ok(Err(why))` when it cannot, in a tenant's words.
async fn start(run: &Run, app: &App, context: &Context) -> Result<Result<(), String>, Error> {
    let namespace = run.namespace().unwrap_or_default();
    let cron_job_name = object_names::workload(&run.spec.app, &run.spec.process);
    let Some(cron_job) = Api::<CronJob>::namespaced(context.client.clone(), &namespace)
        .get_opt(&cron_job_name)
        .await?
        .filter(|cron_job| {
            ownership::is_controlled_by(&cron_job.metadata, &app.uid().unwrap_or_default())
        })
    else {
        return Ok(Err(format!(
            "Job {} was not started: process {} has no CronJob of this app (any more)",
            run.name_any(),
            run.spec.process
        )));
    };
    let job = job_from(&cron_job, &run.name_any());
    match Api::<Job>::namespaced(context.client.clone(), &namespace)
        .create(&PostParams::default(), &job)
        .await
    {
        Ok(_) => {
            context.metrics.applied("Job");
            Ok(Ok(()))
        }
        // Made already (a reconcile that did not get to delete the Run).
        Err(error) if is_conflict(&error) => Ok(Ok(())),
        Err(error) => Err(error.into()),
    }
}

/// kubectl's recipe: the CronJob's job template, the annotation
/// `cronjob.kubernetes.io/instantiate: manual`, and an owner reference to the
/// CronJob.
fn job_from(cron_job: &CronJob, name: &str) -> Job {
    let template = cron_job
        .spec
        .as_ref()
        .map(|spec| spec.job_template.clone())
        .unwrap_or_default();
    let template_meta = template.metadata.unwrap_or_default();
    let mut annotations = template_meta.annotations.unwrap_or_default();
    annotations.insert("cronjob.kubernetes.io/instantiate".into(), "manual".into());
    Job {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: cron_job.namespace(),
            labels: template_meta.labels,
            annotations: Some(annotations),
            owner_references: cron_job.controller_owner_ref(&()).map(|owner| vec![owner]),
            ..ObjectMeta::default()
        },
        spec: template.spec,
        status: None,
    }
}
