//! What a caller may do, for `GET /api/v1/me`: computed from the same
//! checks that refuse calls ([`Principal::can`], [`Principal::admits`],
//! [`Principal::held_to_password_change`]), never from a copy of the rules,
//! so that what the console offers is what the API allows.
//!
//! Only the credentials are looked at (no read of the store or the
//! cluster): the answer costs nothing beyond authenticating, and the
//! function serving it needs no cluster. So a project is known by name, as
//! the caller's grants and its token's scope name it; the one thing only
//! the cluster knows — that a project of the name was deleted and made
//! again since (then neither an older grant nor a token made before it
//! reaches it) — shows as a `404` when the caller acts there.

use std::collections::BTreeMap;

use super::Principal;
use berth_domain::names::{EnvironmentName, ProjectName};
use berth_domain::roles::Permission;
use berth_records::auth::{Access, EnvironmentAccess, ProjectAccess};

/// The most projects `Access::projects` lists. A caller's grants and its
/// token's scope are part of its credentials, read at every request, so
/// they are bounded already; this keeps the answer small whatever they hold.
pub const MAX_LISTED_PROJECTS: usize = 500;

impl Principal {
    /// What the caller may do, on the organization and in each project its
    /// rights there are its own.
    pub fn access(&self) -> Access {
        let mut listed = self.listed_projects();
        let projects_truncated = listed.len() > MAX_LISTED_PROJECTS;
        listed.truncate(MAX_LISTED_PROJECTS);
        let projects = listed
            .into_iter()
            .filter_map(|(project, environments)| self.project_access(project, environments))
            .collect();
        Access {
            organization: self.user.org.clone(),
            role: self.user.role,
            ceiling: self.ceiling,
            // The `Caller` extractor lets a caller limited to projects make
            // no call naming none that needs a permission.
            permissions: self
                .names_of(|permission| !self.limited_to_projects() && self.can(permission)),
            // A project nobody's grant or scope names: the caller's rights
            // there are its organization role's, if it reaches it at all.
            project_permissions: self.names_of(|permission| {
                !self.limited_to_projects() && self.in_project(None).can(permission)
            }),
            projects,
            projects_truncated,
        }
    }

    /// The projects to list, by name, each with the environments its
    /// token's scope limits it to (none: all of them): the scope's projects
    /// for a scoped token (nothing else is reached), else those it holds a
    /// role in.
    fn listed_projects(&self) -> Vec<(&ProjectName, Option<Vec<&EnvironmentName>>)> {
        let mut projects: BTreeMap<&ProjectName, Option<Vec<&EnvironmentName>>> = BTreeMap::new();
        match &self.scope {
            Some(scope) => {
                for entry in &scope.entries {
                    // Entries add up: one reaching every environment wins.
                    let environments = projects
                        .entry(&entry.project)
                        .or_insert_with(|| Some(Vec::new()));
                    match (&entry.environments, environments.as_mut()) {
                        (Some(named), Some(environments)) => environments.extend(named),
                        (None, _) => *environments = None,
                        (Some(_), None) => {}
                    }
                }
            }
            None => {
                for grant in &self.user.projects {
                    projects.insert(&grant.project, None);
                }
            }
        }
        projects
            .into_iter()
            .map(|(project, environments)| {
                let environments = environments.map(|mut environments| {
                    environments.sort();
                    environments.dedup();
                    environments
                });
                (project, environments)
            })
            .collect()
    }

    /// The caller's rights in a project (none when it reaches none of it),
    /// with the role its grant of the name gives.
    fn project_access(
        &self,
        project: &ProjectName,
        environments: Option<Vec<&EnvironmentName>>,
    ) -> Option<ProjectAccess> {
        let role = self.grant_named(project.as_str()).map(|grant| grant.role);
        let there = self.in_project(role);
        let in_place = |environment: Option<&EnvironmentName>| {
            self.names_of(|permission| {
                self.admits(project, environment, Some(permission)).is_ok() && there.can(permission)
            })
        };
        self.admits(project, None, Some(Permission::Read)).ok()?;
        Some(ProjectAccess {
            project: project.clone(),
            role,
            permissions: in_place(None),
            environments: environments.map(|environments| {
                environments
                    .into_iter()
                    .map(|environment| EnvironmentAccess {
                        environment: environment.clone(),
                        permissions: in_place(Some(environment)),
                    })
                    .collect()
            }),
        })
    }

    /// The permissions `holds` says the caller has, in the
    /// table's order; none while its password must change.
    fn names_of(&self, holds: impl Fn(Permission) -> bool) -> Vec<Permission> {
        if self.held_to_password_change(None) {
            return Vec::new();
        }
        Permission::ALL
            .into_iter()
            .filter(|permission| holds(*permission))
            .collect()
    }
}
