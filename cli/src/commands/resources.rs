//! What is there: the link, projects, environments, apps and their
//! processes, releases and domains, the audit log, members.

use berth_records::apps::record::{AppDetail, AppRecord, DomainCheck, ReleaseRecord};
use berth_records::audit::AuditPage;
use berth_records::environments::EnvironmentRecord;
use berth_records::members::MemberRecord;
use berth_records::projects::ProjectRecord;

use super::Session;
use crate::config::{AppPath, Context};
use crate::failure::Result;
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
        session
            .out
            .table(&["NAME", "DISPLAY NAME", "ENVS", "READY", "CREATED"], rows)
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
        session
            .out
            .table(&["NAME", "TYPE", "PHASE", "NAMESPACE", "MESSAGE"], rows)
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
        session.out.table(
            &["NAME", "IMAGE / SOURCE", "STATUS", "REVISION", "URL"],
            rows,
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

pub fn releases(session: &Session, app: &AppPath) -> Result<()> {
    let answer = session.api.get(&app.path(&["releases"]))?;
    session.out.answer(&answer, || {
        let releases: Vec<ReleaseRecord> = answer.record()?;
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
        session.out.table(
            &["HOSTNAME", "OK", "DNS", "PROOF", "CERTIFICATE", "UNTIL"],
            rows,
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
        session.out.table(
            &["AT", "ACTOR", "ACTION", "TARGET", "OUTCOME", "STATUS"],
            rows,
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
