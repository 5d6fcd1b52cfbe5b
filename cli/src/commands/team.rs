//! Who may do what: the organization's members and invitations, roles in
//! one project, and a project's deploy tokens.

use berth_domain::Ceiling;
use berth_domain::names::{DeployTokenName, EnvironmentName};
use berth_records::members::{
    Invitation, MemberRecord, NewMember, ProjectMemberRecord, ProjectRoleChange, RoleChange,
};
use berth_records::tokens::{CreatedDeployToken, DeployTokenRecord, NewDeployToken};

use super::Session;
use crate::args::{Confirm, DeployTokensCommand, MembersCommand};
use crate::failure::{Failure, Result};
use crate::output::{label, or_dash, print};

/// `berth members …`: the organization's, or `project`'s with `--project`.
pub fn members(
    session: &Session,
    project: Option<&str>,
    command: Option<MembersCommand>,
) -> Result<()> {
    match (command.unwrap_or(MembersCommand::List), project) {
        (MembersCommand::List, None) => super::resources::members(session),
        (MembersCommand::List, Some(project)) => project_members(session, project),
        (
            MembersCommand::Invite {
                email,
                role,
                display_name,
            },
            _,
        ) => {
            let answer = session.api.post(
                &["members"],
                &Invitation {
                    email,
                    role,
                    display_name,
                },
            )?;
            let invited: NewMember = answer.record()?;
            eprintln!(
                "Invited {} as {}: give them this temporary password, shown this once; they choose their own at their first sign-in",
                invited.member.email,
                invited.member.role.as_str()
            );
            if session.out.json() {
                print(&answer.pretty()?)
            } else {
                print(&invited.temporary_password)
            }
        }
        (MembersCommand::Role { member, role }, None) => {
            let id = member_id(session, &member)?;
            let answer = session
                .api
                .patch(&["members", &id], &RoleChange { role: role.clone() })?;
            session.out.answer(&answer, || {
                session.out.say(&format!("{member} is now {role}"))
            })
        }
        (MembersCommand::Role { member, role }, Some(project)) => {
            let parsed =
                serde_json::from_value(serde_json::Value::String(role.clone())).map_err(|_| {
                    Failure::Usage(format!(
                        "`{role}` is not a project role: viewer, operator, developer or admin"
                    ))
                })?;
            let id = member_id(session, &member)?;
            let answer = session.api.put(
                &["projects", project, "members", &id],
                &ProjectRoleChange { role: parsed },
            )?;
            session.out.answer(&answer, || {
                session
                    .out
                    .say(&format!("{member} is now {role} in project {project}"))
            })
        }
        (MembersCommand::Rm { member, confirm }, project) => {
            let id = member_id(session, &member)?;
            match project {
                None => {
                    confirm_removal(confirm, &member, "from the organization")?;
                    session.api.delete(&["members", &id])?;
                    session.out.say(&format!(
                        "Removed {member}: their sessions and tokens no longer work"
                    ))
                }
                Some(project) => {
                    confirm_removal(confirm, &member, &format!("from project {project}"))?;
                    session.api.delete(&["projects", project, "members", &id])?;
                    session
                        .out
                        .say(&format!("{member} has no role in project {project} now"))
                }
            }
        }
    }
}

fn project_members(session: &Session, project: &str) -> Result<()> {
    let answer = session.api.get(&["projects", project, "members"])?;
    session.out.answer(&answer, || {
        let members: Vec<ProjectMemberRecord> = answer.record()?;
        let rows = members
            .into_iter()
            .map(|m| {
                vec![
                    m.email,
                    label(&m.role),
                    m.organization_role.as_str().to_owned(),
                    m.id,
                ]
            })
            .collect();
        session.out.list(
            &["EMAIL", "PROJECT ROLE", "ORGANIZATION ROLE", "ID"],
            rows,
            "No one has a role in this project: `berth members role EMAIL ROLE --project PROJECT`",
        )
    })
}

/// A member named by email (as people know them) or id (as the API's
/// paths do).
fn member_id(session: &Session, member: &str) -> Result<String> {
    if !member.contains('@') {
        return Ok(member.to_owned());
    }
    let members: Vec<MemberRecord> = session.api.get(&["members"])?.record()?;
    members
        .into_iter()
        .find(|m| m.email.eq_ignore_ascii_case(member))
        .map(|m| m.id)
        .ok_or_else(|| Failure::failed(format!("{member} is not a member of your organization")))
}

fn confirm_removal(confirm: Confirm, member: &str, from: &str) -> Result<()> {
    super::manage::confirmed(confirm, &format!("{member} {from}"), member)
}

/// `berth deploy-tokens …` of the project.
pub fn deploy_tokens(
    session: &Session,
    project: &str,
    command: Option<DeployTokensCommand>,
) -> Result<()> {
    let tokens = ["projects", project, "tokens"];
    match command.unwrap_or(DeployTokensCommand::List) {
        DeployTokensCommand::List => {
            let answer = session.api.get(&tokens)?;
            session.out.answer(&answer, || {
                let listed: Vec<DeployTokenRecord> = answer.record()?;
                let rows = listed
                    .into_iter()
                    .map(|t| {
                        vec![
                            t.id,
                            t.name.to_string(),
                            t.prefix,
                            or_dash(t.ceiling.map(|c| c.as_str())),
                            t.created_by,
                            or_dash(t.expires_at),
                            or_dash(t.last_used_at),
                        ]
                    })
                    .collect();
                session.out.list(
                    &[
                        "ID",
                        "NAME",
                        "PREFIX",
                        "CEILING",
                        "MADE BY",
                        "EXPIRES",
                        "LAST USED",
                    ],
                    rows,
                    "No deploy tokens: make one with `berth deploy-tokens create NAME`",
                )
            })
        }
        DeployTokensCommand::Create {
            name,
            expires_in_days,
            ceiling,
            environments,
        } => {
            let name = DeployTokenName::parse(&name).map_err(|e| Failure::Usage(e.to_string()))?;
            let environments = environments
                .iter()
                .map(|e| EnvironmentName::parse(e).map_err(|e| Failure::Usage(e.to_string())))
                .collect::<Result<Vec<_>>>()?;
            let answer = session.api.post(
                &tokens,
                &NewDeployToken {
                    name,
                    expires_in_days,
                    ceiling: ceiling.map(Ceiling::from),
                    environments: (!environments.is_empty()).then_some(environments),
                },
            )?;
            let created: CreatedDeployToken = answer.record()?;
            eprintln!(
                "Deploy token {} ({}) of project {project} made, acting as {}: its secret is shown this once, below",
                created.record.id, created.record.name, created.record.actor
            );
            if session.out.json() {
                print(&answer.pretty()?)
            } else {
                print(&created.token)
            }
        }
        DeployTokensCommand::Rm { id } => {
            session.api.delete(&["projects", project, "tokens", &id])?;
            session.out.say(&format!("Deploy token {id} revoked"))
        }
    }
}
