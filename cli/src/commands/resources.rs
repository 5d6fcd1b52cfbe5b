//! What is there: the link, projects, environments, apps and their
//! processes, releases and domains, the audit log, members.

use berth_records::apps::body::UpdateBody;
use berth_records::apps::record::{AppDetail, AppRecord, DomainCheck, ReleaseRecord};
use berth_records::audit::AuditPage;
use berth_records::environments::EnvironmentRecord;
use berth_records::members::MemberRecord;
use berth_records::projects::ProjectRecord;

use super::Session;
use crate::args::DomainsCommand;
use crate::config::{AppPath, Context};
use crate::failure::{Failure, Result};
use crate::output::{label, millis, or_dash, print};

pub fn projects(session: &Session) -> Result<()> {
    let answer = session.api.get(&["projects"])?;
    session.out.answer(&answer, || {
        let projects: Vec<ProjectRecord> = answer.record()?;
        let rows = projects
            .into_iter()
            .map(|p| {
                vec![
                    p.name,
                    p.display_name,
                    p.environments.to_string(),
                    yes(p.ready),
                    or_dash(p.created_at),
                ]
            })
            .collect();
        session.out.list(
            &["NAME", "DISPLAY NAME", "ENVS", "READY", "CREATED"],
            rows,
            "No projects yet: make one with `berth projects create NAME`",
        )
    })
}

pub fn environments(session: &Session, context: &Context) -> Result<()> {
    let project = context.project()?;
    let answer = session.api.get(&["projects", project, "environments"])?;
    session.out.answer(&answer, || {
        let environments: Vec<EnvironmentRecord> = answer.record()?;
        let rows = environments
            .into_iter()
            .map(|e| {
                let phase = match e.deletion_scheduled_at {
                    Some(at) => format!("{} (purged at {at})", or_dash(e.phase)),
                    None => or_dash(e.phase),
                };
                vec![e.name, e.env_type, phase, e.namespace, or_dash(e.message)]
            })
            .collect();
        session.out.list(
            &["NAME", "TYPE", "PHASE", "NAMESPACE", "MESSAGE"],
            rows,
            "No environments yet: make one with `berth envs create NAME`",
        )
    })
}

pub fn apps(session: &Session, context: &Context) -> Result<()> {
    let (project, environment) = context.environment()?;
    let answer = session
        .api
        .get(&["projects", project, "environments", environment, "apps"])?;
    session.out.answer(&answer, || {
        let apps: Vec<AppRecord> = answer.record()?;
        let rows = apps
            .into_iter()
            .map(|app| {
                vec![
                    app.name.clone(),
                    source(&app),
                    or_dash(app.reason),
                    app.revision.to_string(),
                    or_dash(app.url),
                ]
            })
            .collect();
        session.out.list(
            &["NAME", "IMAGE / SOURCE", "STATUS", "REVISION", "URL"],
            rows,
        "No apps here yet: make one with `berth apps create NAME --image IMAGE` (or `berth init`)",
        )
    })
}

/// An app's image, or its repository while it has none.
fn source(app: &AppRecord) -> String {
    match (&app.image, &app.git_repo) {
        (Some(image), _) => image.clone(),
        (None, Some(repo)) => format!("{repo}@{}", app.git_ref.as_deref().unwrap_or("HEAD")),
        (None, None) => "-".to_owned(),
    }
}

pub fn ps(session: &Session, app: &AppPath) -> Result<()> {
    let answer = session.api.get(&app.path(&[]))?;
    session.out.answer(&answer, || {
        let detail: AppDetail = answer.record()?;
        let record = &detail.app;
        session.out.fields(&[
            ("app", record.name.clone()),
            ("source", source(record)),
            (
                "status",
                match &record.message {
                    Some(message) => format!("{} ({message})", or_dash(record.reason.as_deref())),
                    None => or_dash(record.reason.as_deref()),
                },
            ),
            (
                "revision",
                format!(
                    "{} (running {})",
                    record.revision,
                    or_dash(record.running_revision)
                ),
            ),
            ("url", or_dash(record.url.as_deref())),
        ])?;
        print("")?;
        let processes = record
            .processes
            .iter()
            .map(|p| {
                vec![
                    p.name.clone(),
                    if p.command.is_empty() {
                        "(image's)".to_owned()
                    } else {
                        p.command.join(" ")
                    },
                    or_dash(p.port),
                    p.size.clone(),
                    if p.min_replicas == p.max_replicas {
                        p.min_replicas.to_string()
                    } else {
                        format!("{}-{}", p.min_replicas, p.max_replicas)
                    },
                    or_dash(p.schedule.as_deref()),
                ]
            })
            .collect();
        session.out.table(
            &["PROCESS", "COMMAND", "PORT", "SIZE", "REPLICAS", "SCHEDULE"],
            processes,
        )?;
        print("")?;
        let pods = detail
            .pods
            .into_iter()
            .map(|pod| {
                vec![
                    pod.name,
                    or_dash(pod.process),
                    pod.phase,
                    yes(pod.ready),
                    pod.restarts.to_string(),
                    or_dash(pod.reason),
                    or_dash(pod.started_at),
                ]
            })
            .collect();
        session.out.table(
            &[
                "POD", "PROCESS", "PHASE", "READY", "RESTARTS", "REASON", "STARTED",
            ],
            pods,
        )
    })
}

pub fn releases(session: &Session, app: &AppPath, limit: Option<usize>) -> Result<()> {
    let answer = session.api.get(&app.path(&["releases"]))?;
    let mut releases: Vec<ReleaseRecord> = answer.record()?;
    if let Some(limit) = limit {
        releases.truncate(limit);
        if session.out.json() {
            // The API's record type, so its keys in the API's order.
            let shown = serde_json::to_string_pretty(&releases)
                .map_err(|e| Failure::failed(format!("printing the answer: {e}")))?;
            return print(&shown);
        }
    }
    session.out.answer(&answer, || {
        let rows = releases
            .into_iter()
            .map(|r| {
                let mut marks = Vec::new();
                if r.current {
                    marks.push("current");
                }
                if r.running {
                    marks.push("running");
                }
                vec![
                    r.revision.to_string(),
                    r.status,
                    marks.join(", "),
                    r.reason,
                    or_dash(r.image),
                    or_dash(r.actor),
                    millis(r.created_at),
                    or_dash(r.note),
                ]
            })
            .collect();
        session.out.table(
            &[
                "REV", "STATUS", "NOW", "REASON", "IMAGE", "BY", "AT", "NOTE",
            ],
            rows,
        )
    })
}

pub fn domains(session: &Session, app: &AppPath) -> Result<()> {
    let answer = session.api.get(&app.path(&["domains"]))?;
    session.out.answer(&answer, || {
        let checks: Vec<DomainCheck> = answer.record()?;
        // What each hostname still needs proven, said under the table.
        let proofs: Vec<String> = (checks.iter())
            .filter(|check| {
                use berth_records::apps::record::VerificationState::{Lapsing, Pending};
                matches!(check.verification.state, Pending | Lapsing)
            })
            .map(|check| {
                let proof = &check.verification;
                format!(
                    "{}: create a TXT record {} holding {}",
                    check.hostname, proof.record_name, proof.record_value
                )
            })
            .collect();
        let rows = checks
            .into_iter()
            .map(|check| {
                vec![
                    check.hostname,
                    yes(check.ok),
                    check.message,
                    label(&check.verification.state),
                    label(&check.certificate.state),
                    or_dash(check.certificate.not_after),
                ]
            })
            .collect();
        session.out.list(
            &["HOSTNAME", "OK", "DNS", "PROOF", "CERTIFICATE", "UNTIL"],
            rows,
            "No custom domains: add one with `berth domains add HOSTNAME`",
        )?;
        for proof in proofs {
            session.out.say(&proof)?;
        }
        Ok(())
    })
}

/// The project's audit log (`listProjectAuditEvents`), or without one the
/// organization's (`listAuditEvents`): the same pages.
pub fn audit(
    session: &Session,
    project: Option<&str>,
    limit: u32,
    before: Option<u64>,
) -> Result<()> {
    let mut query = vec![("limit", limit.to_string())];
    if let Some(before) = before {
        query.push(("before", before.to_string()));
    }
    let path = match project {
        Some(project) => vec!["projects", project, "audit"],
        None => vec!["audit"],
    };
    let answer = session.api.get_with(&path, &query)?;
    session.out.answer(&answer, || {
        let page: AuditPage = answer.record()?;
        let rows = page
            .events
            .into_iter()
            .map(|event| {
                let target = match (event.target_kind, event.target) {
                    (Some(kind), Some(target)) => format!("{kind} {target}"),
                    (_, target) => or_dash(target),
                };
                vec![
                    millis(event.at),
                    or_dash(event.actor),
                    event.action,
                    target,
                    label(&event.outcome),
                    or_dash(event.status),
                ]
            })
            .collect();
        session.out.list(
            &["AT", "ACTOR", "ACTION", "TARGET", "OUTCOME", "STATUS"],
            rows,
            "No events in this page",
        )?;
        if let Some(next) = page.next_before {
            let which = match project {
                Some(project) => format!("--project {project}"),
                None => "--org".to_owned(),
            };
            eprintln!("older: berth audit {which} --before {next}");
        }
        Ok(())
    })
}

pub fn members(session: &Session) -> Result<()> {
    let answer = session.api.get(&["members"])?;
    session.out.answer(&answer, || {
        let members: Vec<MemberRecord> = answer.record()?;
        let rows = members
            .into_iter()
            .map(|m| {
                vec![
                    m.email,
                    m.role.as_str().to_owned(),
                    yes(m.active),
                    yes(m.must_change_password),
                    m.id,
                ]
            })
            .collect();
        session.out.table(
            &["EMAIL", "ROLE", "ACTIVE", "TEMPORARY PASSWORD", "ID"],
            rows,
        )
    })
}

pub fn yes(value: bool) -> String {
    if value { "yes" } else { "no" }.to_owned()
}

/// `berth status`: the app at a glance.
pub fn status(session: &Session, app: &AppPath) -> Result<()> {
    let answer = session.api.get(&app.path(&[]))?;
    session.out.answer(&answer, || {
        let detail: AppDetail = answer.record()?;
        let record = &detail.app;
        let ready = detail.pods.iter().filter(|pod| pod.ready).count();
        let state = match (&record.reason, &record.message) {
            (Some(reason), Some(message)) => format!("{reason}: {message}"),
            (reason, _) => or_dash(reason.as_deref()),
        };
        session.out.fields(&[
            (
                "app",
                format!("{} ({}/{})", record.name, app.project, app.environment),
            ),
            ("state", state),
            (
                "revision",
                match record.running_revision {
                    Some(running) if running != record.revision => {
                        format!("{} (running {running})", record.revision)
                    }
                    _ => record.revision.to_string(),
                },
            ),
            ("source", source(record)),
            ("pods", format!("{ready}/{} ready", detail.pods.len())),
            ("url", or_dash(record.url.as_deref())),
        ])
    })
}

/// `berth open`: the app's URL, in a browser unless `print`.
pub fn open(session: &Session, app: &AppPath, print_only: bool) -> Result<()> {
    let record: AppDetail = session.api.get(&app.path(&[]))?.record()?;
    let Some(url) = record.app.url else {
        return Err(Failure::failed(format!(
            "{} has no URL: only a process with a port gets one",
            app.app
        )));
    };
    if print_only {
        return print(&url);
    }
    let opener = std::env::var("BROWSER")
        .ok()
        .filter(|browser| !browser.is_empty())
        .unwrap_or_else(|| {
            if cfg!(target_os = "macos") {
                "open".to_owned()
            } else {
                "xdg-open".to_owned()
            }
        });
    session.out.say(&format!("Opening {url}"))?;
    match std::process::Command::new(&opener).arg(&url).status() {
        Ok(status) if status.success() => Ok(()),
        Ok(status) => Err(Failure::failed(format!(
            "{opener} {url} ended with {status}: open it yourself"
        ))),
        Err(e) => Err(Failure::failed(format!(
            "{opener} could not be run ({e}): open {url} yourself, or set BROWSER"
        ))),
    }
}

/// `berth domains [check|add|rm]`.
pub fn change_domains(session: &Session, app: &AppPath, command: DomainsCommand) -> Result<()> {
    match command {
        DomainsCommand::Check => domains(session, app),
        DomainsCommand::Add { hostname } => patch_domains(session, app, |hostnames| {
            if hostnames
                .iter()
                .any(|d| d.eq_ignore_ascii_case(hostname.as_str()))
            {
                return Err(Failure::failed(format!(
                    "{} already has {hostname}",
                    app.app
                )));
            }
            hostnames.push(hostname.to_string());
            Ok(format!(
                "Added {hostname}; prove it is yours and see its certificate: berth domains"
            ))
        }),
        DomainsCommand::Rm { hostname } => patch_domains(session, app, |hostnames| {
            let before = hostnames.len();
            hostnames.retain(|d| !d.eq_ignore_ascii_case(hostname.as_str()));
            if hostnames.len() == before {
                return Err(Failure::failed(format!(
                    "{} has no domain {hostname}",
                    app.app
                )));
            }
            Ok(format!("Removed {hostname}"))
        }),
    }
}

/// The app's hostnames changed by `change` (which says what it did), sent
/// back whole, as the API replaces the list.
fn patch_domains(
    session: &Session,
    app: &AppPath,
    change: impl FnOnce(&mut Vec<String>) -> Result<String>,
) -> Result<()> {
    let record: AppDetail = session.api.get(&app.path(&[]))?.record()?;
    let mut hostnames = record.app.domains;
    let said = change(&mut hostnames)?;
    let answer = session.api.patch(
        &app.path(&[]),
        &UpdateBody {
            domains: Some(hostnames),
            ..UpdateBody::default()
        },
    )?;
    session.out.answer(&answer, || session.out.say(&said))
}
