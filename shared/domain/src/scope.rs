//! Where an API token may act: some of its owner's projects, and within
//! each, optionally, some environments. A token without a scope reaches
//! everything its owner does.

use serde::{Deserialize, Serialize};

use crate::InvalidInput;
use crate::names::{EnvironmentName, ProjectName};

/// One project of a token's scope. Entries add up: a project named twice
/// reaches what either entry reaches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ScopeEntry {
    pub project: ProjectName,
    /// Only these environments of the project; omitted, all of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(min_items = 1)]
    pub environments: Option<Vec<EnvironmentName>>,
}

/// Where a call acts, by its path, against a scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// In a project (and environment, if named) of the scope.
    Inside,
    /// In the project, not naming an environment, while the scope names
    /// some of its environments only.
    ProjectOfLimitedEntry,
    /// In a project outside the scope.
    OutsideProject,
    /// In an environment outside the scope (its project is inside).
    OutsideEnvironment,
}

/// Where a call on `project` (and `environment`) stands in `scope`.
pub fn reach(scope: &[ScopeEntry], project: &str, environment: Option<&str>) -> Reach {
    let entries: Vec<&ScopeEntry> = scope
        .iter()
        .filter(|entry| entry.project.as_str() == project)
        .collect();
    if entries.is_empty() {
        return Reach::OutsideProject;
    }
    let admits = |entry: &&ScopeEntry| match (&entry.environments, environment) {
        (None, _) => true,
        (Some(_), None) => false,
        (Some(environments), Some(environment)) => {
            environments.iter().any(|e| e.as_str() == environment)
        }
    };
    match (entries.iter().any(admits), environment) {
        (true, _) => Reach::Inside,
        (false, None) => Reach::ProjectOfLimitedEntry,
        (false, Some(_)) => Reach::OutsideEnvironment,
    }
}

/// A scope as a body gives it: at least one project, and an environment
/// list, when given, not empty (the description states both).
pub fn validate(scope: &[ScopeEntry]) -> Result<(), InvalidInput> {
    if scope.is_empty() {
        return Err(InvalidInput(
            "scope: must name at least one project (omit it for every project)".into(),
        ));
    }
    for (index, entry) in scope.iter().enumerate() {
        if entry.environments.as_ref().is_some_and(Vec::is_empty) {
            return Err(InvalidInput(format!(
                "scope[{index}].environments: must name at least one environment \
                 (omit it for every environment)"
            )));
        }
    }
    Ok(())
}

/// Whether `inner` (none: everything) lies within `outer`: what a scoped
/// token may give a token it creates.
pub fn within(outer: &[ScopeEntry], inner: Option<&[ScopeEntry]>) -> bool {
    let Some(inner) = inner else {
        return false;
    };
    inner.iter().all(|entry| {
        let project = entry.project.as_str();
        match &entry.environments {
            None => reach(outer, project, None) == Reach::Inside,
            Some(environments) => environments
                .iter()
                .all(|e| reach(outer, project, Some(e.as_str())) == Reach::Inside),
        }
    })
}

/// The scope in words: `projects web, api (staging)`.
pub fn describe(scope: &[ScopeEntry]) -> String {
    let entries: Vec<String> = scope
        .iter()
        .map(|entry| match &entry.environments {
            None => entry.project.to_string(),
            Some(environments) => format!(
                "{} ({})",
                entry.project,
                environments
                    .iter()
                    .map(EnvironmentName::as_str)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        })
        .collect();
    format!("projects {}", entries.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(project: &str, environments: Option<&[&str]>) -> ScopeEntry {
        ScopeEntry {
            project: ProjectName::parse(project).unwrap(),
            environments: environments.map(|names| {
                names
                    .iter()
                    .map(|name| EnvironmentName::parse(name).unwrap())
                    .collect()
            }),
        }
    }

    #[test]
    fn a_call_reaches_inside_or_outside() {
        let scope = [entry("web", None), entry("api", Some(&["staging"]))];
        assert_eq!(reach(&scope, "web", Some("prod")), Reach::Inside);
        assert_eq!(reach(&scope, "web", None), Reach::Inside);
        assert_eq!(reach(&scope, "api", Some("staging")), Reach::Inside);
        assert_eq!(
            reach(&scope, "api", Some("prod")),
            Reach::OutsideEnvironment
        );
        assert_eq!(reach(&scope, "api", None), Reach::ProjectOfLimitedEntry);
        assert_eq!(reach(&scope, "shop", None), Reach::OutsideProject);
    }

    #[test]
    fn a_token_gives_no_more_than_its_scope() {
        let outer = [entry("web", None), entry("api", Some(&["staging", "qa"]))];
        assert!(within(&outer, Some(&[entry("web", Some(&["prod"]))])));
        assert!(within(&outer, Some(&[entry("api", Some(&["qa"]))])));
        assert!(!within(&outer, Some(&[entry("api", None)])));
        assert!(!within(&outer, Some(&[entry("shop", None)])));
        assert!(!within(&outer, None));
    }

    #[test]
    fn entries_add_up() {
        let scope = [
            entry("api", Some(&["staging"])),
            entry("api", Some(&["qa"])),
        ];
        assert!(validate(&scope).is_ok());
        assert_eq!(reach(&scope, "api", Some("qa")), Reach::Inside);
        assert_eq!(reach(&scope, "api", Some("staging")), Reach::Inside);
        assert_eq!(
            reach(&scope, "api", Some("prod")),
            Reach::OutsideEnvironment
        );
        let widened = [entry("api", Some(&["staging"])), entry("api", None)];
        assert_eq!(reach(&widened, "api", None), Reach::Inside);
    }

    #[test]
    fn a_scope_names_something() {
        assert!(validate(&[entry("web", None)]).is_ok());
        assert!(validate(&[]).is_err());
        assert!(validate(&[entry("web", Some(&[]))]).is_err());
        assert_eq!(
            describe(&[entry("web", None), entry("api", Some(&["staging"]))]),
            "projects web, api (staging)"
        );
    }
}
