//! Making and removing what one deploys to: projects, environments, apps;
//! `init` (an app, and this directory linked to it); the link itself.

use berth_domain::parts::Quota;
use berth_records::apps::body::CreateBody as CreateAppBody;
use berth_records::apps::record::AppRecord;
use berth_records::environments::{CreateBody as CreateEnvironmentBody, EnvironmentRecord};
use berth_records::projects::{CreateBody as CreateProjectBody, ProjectRecord};
use berth_records::templates::{DeployBody as TemplateDeployBody, Deployed, TemplateRecord};

use super::Session;
use crate::args::{
    AppsCommand, Confirm, EnvironmentType, EnvsCommand, NewApp, ProjectsCommand, TemplatesCommand,
};
use crate::config::{self, Context, Link};
use crate::failure::{Failure, Result};
use crate::output::{Output, or_dash};
use crate::prompt::Prompt;

pub fn projects(session: &Session, command: Option<ProjectsCommand>) -> Result<()> {
    match command.unwrap_or(ProjectsCommand::List) {
        ProjectsCommand::List => super::resources::projects(session),
        ProjectsCommand::Create {
            name,
            display_name,
            description,
        } => {
            let answer = session.api.post(
                &["projects"],
                &CreateProjectBody {
                    display_name: display_name.unwrap_or_else(|| name.to_string()),
                    name: name.to_string(),
                    description,
                },
            )?;
            session.out.answer(&answer, || {
                let project: ProjectRecord = answer.record()?;
                session.out.say(&format!(
                    "Created project {}; next: berth envs create NAME -p {}",
                    project.name, project.name
                ))
            })
        }
        ProjectsCommand::Rm { name, confirm } => {
            confirmed(confirm, &format!("project {name}"), &name)?;
            let answer = session.api.delete(&["projects", &name])?;
            session.out.answer(&answer, || {
                session.out.say(&format!("Removed project {name}"))
            })
        }
    }
}

pub fn environments(
    session: &Session,
    context: &Context,
    command: Option<EnvsCommand>,
) -> Result<()> {
    match command.unwrap_or(EnvsCommand::List) {
        EnvsCommand::List => super::resources::environments(session, context),
        EnvsCommand::Create {
            name,
            env_type,
            cpu,
            memory,
            pods,
            wait,
            timeout,
        } => {
            let project = context.project()?;
            let deadline = super::wait::Deadline::after(timeout);
            let quota = (cpu.is_some() || memory.is_some() || pods.is_some()).then(|| Quota {
                cpu,
                memory,
                pods,
                ..Quota::default()
            });
            let answer = session.api.post(
                &["projects", project, "environments"],
                &CreateEnvironmentBody {
                    name: name.to_string(),
                    env_type: environment_type(env_type).to_owned(),
                    quota,
                },
            )?;
            let answer = if wait {
                super::wait::environment(session, project, name.as_str(), deadline)?
            } else {
                answer
            };
            session.out.answer(&answer, || {
                let environment: EnvironmentRecord = answer.record()?;
                session.out.say(&format!(
                    "Created {} environment {project}/{} (namespace {}, {}); next: berth apps create NAME --image IMAGE -p {project} -e {}",
                    environment.env_type,
                    environment.name,
                    environment.namespace,
                    or_dash(environment.phase).to_lowercase(),
                    environment.name,
                ))
            })
        }
        EnvsCommand::Rm {
            name,
            confirm,
            wait,
            timeout,
        } => {
            let project = context.project()?;
            confirmed(confirm, &format!("environment {project}/{name}"), &name)?;
            let deadline = super::wait::Deadline::after(timeout);
            let answer = session
                .api
                .delete(&["projects", project, "environments", &name])?;
            let environment: EnvironmentRecord = answer.record()?;
            // A production environment stays through its grace period
            // (nothing to wait for but that); any other is purged at once.
            let kept = environment.env_type == "production";
            if wait && !kept {
                super::wait::environment_gone(session, project, &name, deadline)?;
            }
            session.out.answer(&answer, || {
                match (kept, environment.deletion_scheduled_at.as_deref()) {
                    (true, Some(at)) => session.out.say(&format!(
                        "Removing {project}/{name}: purged at {at}; until then `berth envs restore {name}` brings it back"
                    )),
                    _ if wait => session.out.say(&format!("Removed {project}/{name}")),
                    _ => session.out.say(&format!("Removing {project}/{name}")),
                }
            })
        }
        EnvsCommand::Restore { name } => {
            let project = context.project()?;
            let answer =
                session
                    .api
                    .post_empty(&["projects", project, "environments", &name, "restore"])?;
            session.out.answer(&answer, || {
                session.out.say(&format!("Restored {project}/{name}"))
            })
        }
    }
}

pub fn apps(session: &Session, context: &Context, command: Option<AppsCommand>) -> Result<()> {
    match command.unwrap_or(AppsCommand::List) {
        AppsCommand::List => super::resources::apps(session, context),
        AppsCommand::Create(new) => {
            let (project, environment) = context.environment()?;
            let (answer, app) = create_app(session, project, environment, new)?;
            session.out.answer(&answer, || {
                session.out.say(&format!(
                    "Created app {} in {project}/{environment}; watch it: berth ps -a {}",
                    app.name, app.name
                ))
            })
        }
        AppsCommand::Rm {
            name,
            delete_volumes,
            confirm,
        } => {
            let (project, environment) = context.environment()?;
            confirmed(
                confirm,
                &format!("app {name} of {project}/{environment}"),
                &name,
            )?;
            let path = [
                "projects",
                project,
                "environments",
                environment,
                "apps",
                name.as_str(),
            ];
            let answer = if delete_volumes {
                session
                    .api
                    .delete_with(&path, &[("delete_volumes", "true".to_owned())])?
            } else {
                session.api.delete(&path)?
            };
            // 204: no answer to show, even with `-o json`.
            drop(answer);
            session
                .out
                .say(&format!("Removed app {name} from {project}/{environment}"))
        }
    }
}

/// `berth init`: the app, then the link to it here.
pub fn init(session: &Session, context: &Context, new: NewApp) -> Result<()> {
    let (project, environment) = context.environment()?;
    let (answer, app) = create_app(session, project, environment, new)?;
    let replaced = write_link_here(Link {
        project: project.to_owned(),
        environment: environment.to_owned(),
        app: Some(app.name.clone()),
    })?;
    session.out.answer(&answer, || {
        session.out.say(&format!(
            "Created app {} in {project}/{environment} and linked this directory to it{}; deploy: berth deploy --image IMAGE --wait",
            app.name,
            replaced_note(replaced.as_ref()),
        ))
    })
}

fn create_app(
    session: &Session,
    project: &str,
    environment: &str,
    new: NewApp,
) -> Result<(crate::api::Answer, AppRecord)> {
    let body = CreateAppBody {
        name: new.name.to_string(),
        image: new.image,
        git_repo: new.git_repo.map(Some),
        git_ref: new.git_ref.map(Some),
        port: new.port,
        ..CreateAppBody::default()
    };
    let answer = session.api.post(
        &["projects", project, "environments", environment, "apps"],
        &body,
    )?;
    let app = answer.record()?;
    Ok((answer, app))
}

/// `berth link`: what it names must exist (one read each), then written.
pub fn link(session: &Session, link: Link) -> Result<()> {
    let mut path = vec!["projects", link.project.as_str()];
    session.api.get(&path)?;
    path.extend(["environments", link.environment.as_str()]);
    session.api.get(&path)?;
    if let Some(app) = &link.app {
        path.extend(["apps", app.as_str()]);
        session.api.get(&path)?;
    }
    let what = describe(&link);
    let replaced = write_link_here(link)?;
    session.out.say(&format!(
        "Linked this directory to {what}{}",
        replaced_note(replaced.as_ref())
    ))
}

/// `berth link --show`: the link in force here, and its file.
pub fn show_link(out: Output) -> Result<()> {
    match config::find_link_file()? {
        Some((path, link)) => out.say(&format!("{} ({})", describe(&link), path.display())),
        None => Err(Failure::Usage(
            "no link here or above: `berth link PROJECT ENV [APP]`".into(),
        )),
    }
}

/// `berth unlink`: this directory's link, removed.
pub fn unlink(out: Output) -> Result<()> {
    let here = current_dir()?;
    match config::remove_link(&here)? {
        Some(link) => out.say(&format!("Unlinked this directory from {}", describe(&link))),
        None => Err(Failure::Usage(format!(
            "{} has no {}",
            here.display(),
            config::LINK_FILE
        ))),
    }
}

fn current_dir() -> Result<std::path::PathBuf> {
    std::env::current_dir().map_err(|e| Failure::failed(format!("the current directory: {e}")))
}

/// Writes the link here; the one it replaced, if any.
fn write_link_here(link: Link) -> Result<Option<Link>> {
    let here = current_dir()?;
    let replaced = config::read_link(&here)?;
    config::write_link(&here, &link)?;
    Ok(replaced)
}

fn replaced_note(replaced: Option<&Link>) -> String {
    replaced.map_or_else(String::new, |old| {
        format!(" (it was linked to {})", describe(old))
    })
}

fn describe(link: &Link) -> String {
    match &link.app {
        Some(app) => format!("app {app} in {}/{}", link.project, link.environment),
        None => format!("{}/{}", link.project, link.environment),
    }
}

fn environment_type(env_type: EnvironmentType) -> &'static str {
    match env_type {
        EnvironmentType::Standard => "standard",
        EnvironmentType::Production => "production",
        EnvironmentType::Preview => "preview",
    }
}

/// Removal goes ahead with `--yes`, or once `name` is typed on a
/// terminal; a script without `--yes` is told to add it. `what`: what is
/// removed, in words ("project shop").
pub(super) fn confirmed(confirm: Confirm, what: &str, name: &str) -> Result<()> {
    if confirm.yes {
        return Ok(());
    }
    let prompt = Prompt::new();
    if !prompt.terminal() {
        return Err(Failure::Usage(format!(
            "removing {what} cannot be undone: add --yes to go ahead"
        )));
    }
    let typed = prompt.line(&format!("Type {name} to remove {what}"))?;
    if typed.trim() == name {
        Ok(())
    } else {
        Err(Failure::failed(format!("{what} was not removed")))
    }
}

/// `berth templates`: the catalogue, or one deployed as an app of the
/// environment.
pub fn templates(
    session: &Session,
    context: &Context,
    command: Option<TemplatesCommand>,
) -> Result<()> {
    match command.unwrap_or(TemplatesCommand::List) {
        TemplatesCommand::List => {
            let answer = session.api.get(&["templates"])?;
            session.out.answer(&answer, || {
                let templates: Vec<TemplateRecord> = answer.record()?;
                let rows = templates
                    .into_iter()
                    .map(|t| {
                        let variables: Vec<String> = t.env.into_iter().map(|e| e.name).collect();
                        vec![t.name, t.image, t.description, variables.join(" ")]
                    })
                    .collect();
                session.out.list(
                    &["NAME", "IMAGE", "DESCRIPTION", "VARIABLES"],
                    rows,
                    "The template catalogue is empty",
                )
            })
        }
        TemplatesCommand::Deploy {
            template,
            name,
            values,
        } => {
            let (project, environment) = context.environment()?;
            let env = values
                .iter()
                .map(|pair| {
                    pair.split_once('=')
                        .map(|(name, value)| (name.to_owned(), value.to_owned()))
                        .ok_or_else(|| Failure::Usage(format!("--set `{pair}` is not NAME=VALUE")))
                })
                .collect::<Result<_>>()?;
            let answer = session.api.post(
                &[
                    "projects",
                    project,
                    "environments",
                    environment,
                    "templates",
                    &template,
                ],
                &TemplateDeployBody { name, env },
            )?;
            session.out.answer(&answer, || {
                let deployed: Deployed = answer.record()?;
                let apps: Vec<String> = deployed.apps.into_iter().map(|app| app.name).collect();
                session.out.say(&format!(
                    "Deployed {} into {project}/{environment}: {}",
                    deployed.template,
                    apps.join(", ")
                ))
            })
        }
    }
}
