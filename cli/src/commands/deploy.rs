//! Changing what runs: deploy (an image, or a build of the source),
//! rollback, promote, restart, run.

use berth_records::apps::actions::{PromoteBody, RollbackBody, RunAnswer, RunBody};
use berth_records::apps::body::{ProcessBody, UpdateBody};
use berth_records::apps::record::{AppDetail, AppRecord, ReleaseRecord};
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
pub(super) fn changed(
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
    // Said before the wait, on standard error (standard output is the
    // result's): what is deployed where, and that stopping the wait stops
    // nothing else.
    eprintln!(
        "Deploying revision {} of {} to {}/{} ({}); waiting up to {} s (Ctrl-C stops the wait, not the deploy)",
        record.revision,
        record.name,
        record.project,
        record.environment,
        record.image.as_deref().unwrap_or("its source"),
        wait.timeout
    );
    let last = wait::revision(session, app, record.revision, deadline)
        .map_err(|failure| still_deploying(failure, app))?;
    show_app(session, &last, "Deployed")
}

/// A wait that gave up, or lost the API, says the deploy goes on, and how
/// to look again; a revision that failed says only that.
fn still_deploying(failure: Failure, app: &AppPath) -> Failure {
    if !matches!(failure, Failure::GaveUp(_) | Failure::Transport(_)) {
        return failure;
    }
    failure.hinted(format!(
        "the deploy goes on; watch it again: berth status -a {} -p {} -e {}",
        app.app, app.project, app.environment
    ))
}

fn show_app(session: &Session, answer: &Answer, done: &str) -> Result<()> {
    session.out.answer(answer, || {
        let app: AppRecord = answer.record()?;
        session.out.say(&format!(
            "{done} {} in {}/{} at revision {}: {}{}",
            app.name,
            app.project,
            app.environment,
            app.revision,
            or_dash(app.reason.as_deref()),
            app.url.map(|url| format!(", {url}")).unwrap_or_default()
        ))
    })
}

pub fn rollback(session: &Session, app: &AppPath, revision: Option<i64>, wait: Wait) -> Result<()> {
    let deadline = Deadline::after(wait.timeout);
    let revision = match revision {
        Some(revision) => revision,
        None => previous_revision(session, app)?,
    };
    let answer = session
        .api
        .post(&app.path(&["rollback"]), &RollbackBody { revision })?;
    changed(session, app, answer, wait, deadline)
}

/// The revision before the current one: what `rollback` without a number
/// goes back to.
fn previous_revision(session: &Session, app: &AppPath) -> Result<i64> {
    let releases: Vec<ReleaseRecord> = session.api.get(&app.path(&["releases"]))?.record()?;
    let current = releases
        .iter()
        .find(|release| release.current)
        .map(|release| release.revision);
    current
        .and_then(|current| {
            releases
                .iter()
                .map(|release| release.revision)
                .find(|revision| *revision < current)
        })
        .ok_or_else(|| {
            Failure::failed(format!(
                "{} has no revision before the current one to go back to",
                app.app
            ))
        })
}

/// `berth scale web=3 worker=1-4:small`: each named process's replicas (and
/// size); every other process listed by name alone, which keeps it as it
/// is (docs/api-notes.md, "Apps").
pub fn scale(session: &Session, app: &AppPath, asked: Vec<String>, wait: Wait) -> Result<()> {
    let deadline = Deadline::after(wait.timeout);
    let detail: AppDetail = session.api.get(&app.path(&[]))?.record()?;
    let mut processes: Vec<ProcessBody> = detail
        .app
        .processes
        .iter()
        .map(|process| ProcessBody {
            name: Some(process.name.clone()),
            ..ProcessBody::default()
        })
        .collect();
    for request in &asked {
        let (name, replicas, max_replicas, size) = parse_scale(request)?;
        let Some(process) = processes
            .iter_mut()
            .find(|process| process.name.as_deref() == Some(name))
        else {
            let known: Vec<&str> = detail
                .app
                .processes
                .iter()
                .map(|p| p.name.as_str())
                .collect();
            return Err(Failure::Usage(format!(
                "{} has no process {name} (it has {})",
                app.app,
                known.join(", ")
            )));
        };
        process.replicas = Some(replicas);
        process.max_replicas = Some(max_replicas);
        process.size = size;
    }
    let answer = session.api.patch(
        &app.path(&[]),
        &UpdateBody {
            processes: Some(processes),
            ..UpdateBody::default()
        },
    )?;
    changed(session, app, answer, wait, deadline)
}

/// `PROCESS=N`, `PROCESS=MIN-MAX`, either with `:SIZE`.
fn parse_scale(request: &str) -> Result<(&str, i64, i64, Option<String>)> {
    let usage = || {
        Failure::Usage(format!(
            "`{request}` is not PROCESS=N, PROCESS=MIN-MAX, with an optional :SIZE (e.g. web=3, web=2-6:medium)"
        ))
    };
    let (name, rest) = request.split_once('=').ok_or_else(usage)?;
    let (count, size) = match rest.split_once(':') {
        Some((count, size)) if !size.is_empty() => (count, Some(size.to_owned())),
        Some(_) => return Err(usage()),
        None => (rest, None),
    };
    let number = |text: &str| text.parse::<i64>().map_err(|_| usage());
    let (min, max) = match count.split_once('-') {
        Some((min, max)) => (number(min)?, number(max)?),
        None => {
            let replicas = number(count)?;
            (replicas, replicas)
        }
    };
    if name.is_empty() {
        return Err(usage());
    }
    Ok((name, min, max, size))
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

#[cfg(test)]
mod tests {
    use super::*;
    use berth_records::problem::Problem;

    #[test]
    fn a_wait_given_up_says_the_deploy_goes_on() {
        let app = AppPath {
            project: "shop".into(),
            environment: "staging".into(),
            app: "web".into(),
        };
        let gave_up = still_deploying(
            Failure::GaveUp("gave up after 600 s: rolling out".into()),
            &app,
        );
        let failed = still_deploying(Failure::failed("revision 6 failed: ReleaseFailed"), &app);
        assert_eq!(failed.to_string(), "revision 6 failed: ReleaseFailed");
        assert_eq!(
            gave_up.to_string(),
            "gave up after 600 s: rolling out; the deploy goes on; watch it again: berth status -a web -p shop -e staging"
        );
        let refused = Failure::Api(Problem {
            code: "forbidden".into(),
            title: "Forbidden".into(),
            status: 403,
            detail: None,
        });
        assert_eq!(
            still_deploying(refused, &app).to_string(),
            "Forbidden (forbidden)"
        );
    }
}
