//! Changing what runs: deploy (an image, or a build of the source),
//! rollback, promote, restart, run.

use berth_records::apps::actions::{PromoteBody, RollbackBody, RunAnswer, RunBody};
use berth_records::apps::body::UpdateBody;
use berth_records::apps::record::{AppDetail, AppRecord};
use berth_records::builds::{BuildRecord, CreateBuildBody};

use super::Session;
use super::wait::{self, Deadline};
use crate::api::Answer;
use crate::args::{Deploy, Wait};
use crate::config::AppPath;
use crate::failure::{Failure, Result};
use crate::output::or_dash;

pub fn deploy(session: &Session, app: &AppPath, deploy: Deploy) -> Result<()> {
    let deadline = Deadline::after(deploy.wait.timeout);
    if let Some(image) = deploy.image {
        let answer = session
            .api
            .patch(
                &app.path(&[]),
                &UpdateBody {
                    image: Some(image.clone()),
                    ..UpdateBody::default()
                },
            )
            .map_err(|failure| missing_app(failure, app, &format!("--image {image}")))?;
        return changed(session, app, answer, deploy.wait, deadline);
    }
    let answer = session
        .api
        .post(
            &app.path(&["builds"]),
            &CreateBuildBody {
                git_ref: deploy.git_ref,
            },
        )
        .map_err(|failure| missing_app(failure, app, "--git-repo URL"))?;
    let build: BuildRecord = answer.record()?;
    if !deploy.wait.wait {
        return session.out.answer(&answer, || {
            session.out.say(&format!(
                "Build {} of {} queued ({}); follow it: berth builds logs {}",
                build.id,
                app.app,
                build.git_ref.as_deref().unwrap_or("the default branch"),
                build.id
            ))
        });
    }
    let revision = wait::build(session, app, &build, deadline)?;
    let last = wait::revision(session, app, revision, deadline)?;
    show_app(session, &last, "Deployed")
}

/// A deploy to an app (or environment) that is not there says how to make
/// it.
fn missing_app(failure: Failure, app: &AppPath, source: &str) -> Failure {
    if failure.status() != Some(404) {
        return failure;
    }
    failure.hinted(format!(
        "to make the app: berth apps create {} {source} -p {} -e {} (or `berth init`); \
         `berth envs` lists the project's environments",
        app.app, app.project, app.environment
    ))
}

/// What a change answered (the app, at its new revision): shown, or waited
/// for and then shown.
fn changed(
    session: &Session,
    app: &AppPath,
    answer: Answer,
    wait: Wait,
    deadline: Deadline,
) -> Result<()> {
    let record: AppRecord = answer.record()?;
    if !wait.wait {
        return show_app(session, &answer, "Changed");
    }
    let last = wait::revision(session, app, record.revision, deadline)?;
    show_app(session, &last, "Deployed")
}

fn show_app(session: &Session, answer: &Answer, done: &str) -> Result<()> {
    session.out.answer(answer, || {
        let app: AppRecord = answer.record()?;
        session.out.say(&format!(
            "{done} {} at revision {}: {}{}",
            app.name,
            app.revision,
            or_dash(app.reason.as_deref()),
            app.url.map(|url| format!(", {url}")).unwrap_or_default()
        ))
    })
}

pub fn rollback(session: &Session, app: &AppPath, revision: i64, wait: Wait) -> Result<()> {
    let deadline = Deadline::after(wait.timeout);
    let answer = session
        .api
        .post(&app.path(&["rollback"]), &RollbackBody { revision })?;
    changed(session, app, answer, wait, deadline)
}

pub fn promote(session: &Session, app: &AppPath, to: &str, wait: Wait) -> Result<()> {
    let deadline = Deadline::after(wait.timeout);
    let answer = session.api.post(
        &app.path(&["promote"]),
        &PromoteBody {
            environment: to.to_owned(),
        },
    )?;
    changed(session, &app.in_environment(to), answer, wait, deadline)
}

pub fn restart(session: &Session, app: &AppPath, wait: bool, timeout: u64) -> Result<()> {
    let deadline = Deadline::after(timeout);
    let before: AppDetail = session.api.get(&app.path(&[]))?.record()?;
    let answer = session.api.post_empty(&app.path(&["restart"]))?;
    if !wait {
        return show_app(session, &answer, "Restarting");
    }
    let last = wait::restart(session, app, &before, deadline)?;
    show_app(session, &last, "Restarted")
}

pub fn run(session: &Session, app: &AppPath, process: Option<String>) -> Result<()> {
    let answer = session
        .api
        .post(&app.path(&["run"]), &RunBody { process })?;
    session.out.answer(&answer, || {
        let run: RunAnswer = answer.record()?;
        session.out.say(&format!("Started job {}", run.job))
    })
}
