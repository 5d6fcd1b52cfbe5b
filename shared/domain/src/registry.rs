//! The image registry as Berth's token service sees it (Docker Registry
//! token authentication): who its credentials are ([`RegistryUser`]), what
//! each may reach ([`Reach`]), and the settings `berth-admin registry set`
//! stores for the service ([`RegistrySettings`], item `REGISTRY`/`SETTINGS`).
//!
//! Every credential is minted by the controller, which is what delivers it
//! (a Secret it mounts or names) and what sees the end of what it serves; the
//! password is in that Secret alone, and only its SHA-256 is kept where the
//! token service reads it: the Build's status for a build's two, the
//! Environment's status for an environment's pull credential. So a
//! credential dies with its build (phase, deadline) or its environment.
//!
//! | user name | password's digest in | reaches | lives |
//! |---|---|---|---|
//! | `build/{build}/push` | the Build's `status.registry.pushDigest` | push and pull of `{path}/{org}/{project}/{app}` | while the build runs, at most its deadline |
//! | `build/{build}/pull` | the Build's `status.registry.pullDigest` | pull of `{path}/{org}/{project}/…` | the same |
//! | `environment/{name}` | the Environment's `status.registryPullDigest` | pull of `{path}/{org}/{project}/…` | as long as the environment |
//! | a shared credential of before | the registry's settings | pull (or push and pull) of `{path}/…` | until `--forget-shared` |
//!
//! `{path}` is the prefix's path in the registry (`berth` of
//! `registry.example.com/berth`), `{org}` and `{project}` the organization
//! and project of the build or environment. A pull reaches one project, not
//! its organization (issue 46, part 2): a project answers `404` to a member
//! whose roles are all in a sibling project, so its images are no more that
//! sibling's to run or build `FROM` than another organization's are. The
//! shared credentials of before are the one exception, kept only for an
//! upgrade.

use crate::names::{OrgName, ProjectName};

/// A Berth registry credential's user name: which object holds its digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegistryUser {
    /// A build's push credential (its `push` step's).
    BuildPush { build: String },
    /// A build's pull credential (the steps that pull bases).
    BuildPull { build: String },
    /// An environment's pull credential (its pods').
    EnvironmentPull { environment: String },
    /// One of the installation's shared credentials of before, accepted
    /// during an upgrade ([`RegistrySettings::shared`]).
    Shared { username: String },
}

/// Longest user name taken: a build's name (a namespace, an app, a number)
/// with its kind around it stays far below.
const MAX_USERNAME: usize = 200;

impl RegistryUser {
    pub fn username(&self) -> String {
        match self {
            Self::BuildPush { build } => format!("build/{build}/push"),
            Self::BuildPull { build } => format!("build/{build}/pull"),
            Self::EnvironmentPull { environment } => format!("environment/{environment}"),
            Self::Shared { username } => username.clone(),
        }
    }

    /// The user named; a name of none of Berth's forms may be a shared
    /// credential of before. None for what can be nobody's (too long, or
    /// characters no object name has).
    pub fn parse(username: &str) -> Option<Self> {
        if username.is_empty() || username.len() > MAX_USERNAME {
            return None;
        }
        let object_name = |name: &str| {
            !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        };
        if let Some(rest) = username.strip_prefix("build/") {
            let (build, kind) = rest.rsplit_once('/')?;
            if !object_name(build) {
                return None;
            }
            let build = build.to_owned();
            return match kind {
                "push" => Some(Self::BuildPush { build }),
                "pull" => Some(Self::BuildPull { build }),
                _ => None,
            };
        }
        if let Some(environment) = username.strip_prefix("environment/") {
            return object_name(environment).then(|| Self::EnvironmentPull {
                environment: environment.to_owned(),
            });
        }
        username
            .bytes()
            .all(|b| b.is_ascii_graphic())
            .then(|| Self::Shared {
                username: username.to_owned(),
            })
    }
}

/// What a credential may do: push and pull one repository (a build's push
/// credential), pull the repositories of one project (a build's or an
/// environment's pull credential), or — a shared credential of before
/// only — pull (and push, for a push credential) every repository under a
/// path (the prefix's; every one when the path is empty).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reach {
    Repository(String),
    /// Pull of `{path}/{org}/{project}/…`, judged on the parsed names
    /// ([`ProjectRepository`]), never on how a name starts.
    Project {
        path: String,
        org: OrgName,
        project: ProjectName,
    },
    Under {
        path: String,
        push: bool,
    },
}

impl Reach {
    /// Pull of the repositories of `org`'s project `project` under the
    /// registry prefix `prefix` (`registry.example.com/berth`). None when
    /// either is not a name (an object of no one's making): such a
    /// credential reaches nothing.
    pub fn project(prefix: &str, org: &str, project: &str) -> Option<Self> {
        Some(Self::Project {
            path: prefix_path(prefix),
            org: OrgName::parse(org).ok()?,
            project: ProjectName::parse(project).ok()?,
        })
    }

    /// The actions of `requested` on `repository` this reach allows, in
    /// the order asked, each once: `pull`, and `push` where it may push;
    /// never anything else (`*`, `delete`).
    pub fn allowed<'a>(&self, repository: &str, requested: &[&'a str]) -> Vec<&'a str> {
        let may: &[&str] = match self {
            Self::Repository(own) if own == repository => &["pull", "push"],
            Self::Project { path, org, project }
                if ProjectRepository::parse(path, repository)
                    .is_some_and(|found| found.org == *org && found.project == *project) =>
            {
                &["pull"]
            }
            Self::Under { path, push } if lies_under(repository, path) => {
                if *push {
                    &["pull", "push"]
                } else {
                    &["pull"]
                }
            }
            _ => &[],
        };
        let mut allowed: Vec<&str> = Vec::new();
        for action in requested {
            if may.contains(action) && !allowed.contains(action) {
                allowed.push(action);
            }
        }
        allowed
    }
}

/// A repository of Berth's in the registry, read in its parts:
/// `{path}/{org}/{project}/{name}`, where `{name}` is one or more path
/// components (an app's repository is `{app}`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectRepository {
    pub org: OrgName,
    pub project: ProjectName,
}

impl ProjectRepository {
    /// The organization and project `repository` lies in, below the
    /// prefix's `path`; None for a repository that is not one of a
    /// project's (the path itself, an organization's or project's own
    /// path, a component that is no name, anything elsewhere).
    pub fn parse(path: &str, repository: &str) -> Option<Self> {
        let below = if path.is_empty() {
            repository
        } else {
            repository.strip_prefix(path)?.strip_prefix('/')?
        };
        let mut components = below.split('/');
        let org = OrgName::parse(components.next()?).ok()?;
        let project = ProjectName::parse(components.next()?).ok()?;
        let mut name = components.peekable();
        // At least one component below the project, every one a name.
        name.peek()?;
        name.all(is_path_component).then_some(Self { org, project })
    }

    /// The organization and project of an image reference in Berth's
    /// registry (`registry.example.com/berth/acme/shop/web:v1`, `…@sha256:…`
    /// under the prefix `registry.example.com/berth`); None for an image
    /// elsewhere, or not a project's.
    pub fn of_image(prefix: &str, image: &str) -> Option<Self> {
        let below = image.strip_prefix(prefix)?.strip_prefix('/')?;
        let name = below.split_once('@').map_or(below, |(name, _)| name);
        // A ':' after the last '/' starts the tag.
        let name = match name.rsplit_once(':') {
            Some((name, tag)) if !tag.contains('/') => name,
            _ => name,
        };
        Self::parse("", name)
    }

    /// Whether it is `org`'s project `project` (compared as names).
    pub fn is_of(&self, org: &str, project: &str) -> bool {
        OrgName::parse(org).is_ok_and(|org| org == self.org)
            && ProjectName::parse(project).is_ok_and(|project| project == self.project)
    }
}

/// Whether `repository` is a repository below `path` (not `path` itself,
/// nor a sibling whose name starts alike), every component below it a
/// name as Distribution's reference grammar has it — never empty, `.` or
/// `..`, which a registry or proxy that tidies paths would read as
/// another organization's.
fn lies_under(repository: &str, path: &str) -> bool {
    let below = if path.is_empty() {
        Some(repository)
    } else {
        repository
            .strip_prefix(path)
            .and_then(|rest| rest.strip_prefix('/'))
    };
    below.is_some_and(|rest| rest.split('/').all(is_path_component))
}

/// A path component of a repository name (Distribution's
/// `reference/regexp.go`: `[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*`).
fn is_path_component(component: &str) -> bool {
    let alphanumeric = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    let mut rest = component;
    loop {
        let run = rest.find(|c| !alphanumeric(c)).unwrap_or(rest.len());
        if run == 0 {
            return false;
        }
        rest = &rest[run..];
        if rest.is_empty() {
            return true;
        }
        let separator_len = rest.find(alphanumeric).unwrap_or(rest.len());
        let separator = &rest[..separator_len];
        if !matches!(separator, "." | "_" | "__") && !separator.chars().all(|c| c == '-') {
            return false;
        }
        rest = &rest[separator_len..];
    }
}

/// The name of a repository in the registry: the image's name without the
/// registry's host (`berth/acme/shop/web` of
/// `registry.example.com/berth/acme/shop/web`).
pub fn repository_name(prefix: &str, org: &str, project: &str, app: &str) -> String {
    join(&prefix_path(prefix), &app_path(org, project, app))
}

/// Where an app's images lie under the prefix: one repository per app of
/// each organization's project.
pub fn app_path(org: &str, project: &str, app: &str) -> String {
    format!("{org}/{project}/{app}")
}

/// The path of the prefix in the registry: what follows its host.
pub fn prefix_path(prefix: &str) -> String {
    prefix
        .split_once('/')
        .map(|(_, path)| path.to_owned())
        .unwrap_or_default()
}

fn join(path: &str, rest: &str) -> String {
    if path.is_empty() {
        rest.to_owned()
    } else {
        format!("{path}/{rest}")
    }
}

/// A password for a new registry credential: 40 letters and digits from
/// the operating system's CSPRNG (about 238 bits).
pub fn new_password() -> String {
    crate::credentials::new_generated_secret()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_names_round_trip_and_odd_ones_name_no_object() {
        for user in [
            RegistryUser::BuildPush {
                build: "shop-prod.web.3".into(),
            },
            RegistryUser::BuildPull {
                build: "shop-prod.web.3".into(),
            },
            RegistryUser::EnvironmentPull {
                environment: "shop-prod".into(),
            },
        ] {
            assert_eq!(RegistryUser::parse(&user.username()), Some(user));
        }
        assert_eq!(
            RegistryUser::parse("robot"),
            Some(RegistryUser::Shared {
                username: "robot".into()
            })
        );
        for odd in [
            "",
            "build/shop/delete",
            "build//push",
            "build/Shop/push",
            "build/../x/push",
            "environment/",
            "environment/a/b",
            "with space",
        ] {
            assert!(
                !matches!(
                    RegistryUser::parse(odd),
                    Some(
                        RegistryUser::BuildPush { .. }
                            | RegistryUser::BuildPull { .. }
                            | RegistryUser::EnvironmentPull { .. }
                    )
                ),
                "{odd}"
            );
        }
        assert_eq!(RegistryUser::parse(&"x".repeat(201)), None);
    }

    #[test]
    fn repositories_are_named_without_the_host() {
        assert_eq!(
            repository_name("registry.example.com/berth", "acme", "shop", "web"),
            "berth/acme/shop/web"
        );
        assert_eq!(
            repository_name("localhost:5000", "acme", "shop", "web"),
            "acme/shop/web"
        );
        assert_eq!(prefix_path("r.example.com/a/b"), "a/b");
        assert_eq!(prefix_path("localhost:5000"), "");
    }

    /// Issue 46, part 2: a build's or an environment's pull credential
    /// reaches its own project's images, and a sibling project of its
    /// organization gets the answer another organization gets.
    #[test]
    fn a_pull_reaches_its_project_and_a_sibling_project_no_more_than_another_organization() {
        let pull = Reach::project("registry.example.com/berth", "acme", "shop").expect("names");
        assert_eq!(pull.allowed("berth/acme/shop/web", &["pull"]), ["pull"]);
        assert_eq!(
            pull.allowed("berth/acme/shop/base/node", &["pull"]),
            ["pull"]
        );
        let sibling = pull.allowed("berth/acme/billing/web", &["pull"]);
        let other_organization = pull.allowed("berth/globex/shop/web", &["pull"]);
        assert!(sibling.is_empty());
        assert_eq!(sibling, other_organization);
        // A sibling whose name starts alike, or that the project's starts.
        assert!(pull.allowed("berth/acme/shopx/web", &["pull"]).is_empty());
        assert!(pull.allowed("berth/acme/sho/web", &["pull"]).is_empty());
        // Under a prefix without a path, the same.
        let bare = Reach::project("localhost:5000", "acme", "shop").expect("names");
        assert_eq!(bare.allowed("acme/shop/web", &["pull"]), ["pull"]);
        assert!(bare.allowed("acme/billing/web", &["pull"]).is_empty());
        // An object naming no organization or project reaches nothing.
        assert_eq!(Reach::project("r.example.com/berth", "acme", "a/b"), None);
        assert_eq!(Reach::project("r.example.com/berth", "", "shop"), None);
        assert_eq!(Reach::project("r.example.com/berth", "acme", ".."), None);
    }

    #[test]
    fn an_images_project_is_read_from_its_reference() {
        let prefix = "registry.example.com/berth";
        let of = |image: &str| {
            ProjectRepository::of_image(prefix, image)
                .map(|found| (found.org.to_string(), found.project.to_string()))
        };
        let acme_shop = Some(("acme".to_owned(), "shop".to_owned()));
        assert_eq!(of("registry.example.com/berth/acme/shop/web:v1"), acme_shop);
        assert_eq!(
            of("registry.example.com/berth/acme/shop/web@sha256:ab"),
            acme_shop
        );
        assert_eq!(
            of("registry.example.com/berth/acme/shop/web:v1@sha256:ab"),
            acme_shop
        );
        assert_eq!(of("registry.example.com/berth/acme/shop/web"), acme_shop);
        for elsewhere in [
            "registry.example.com/berth/acme/shop",
            "registry.example.com/berth/acme/shop:v1",
            "registry.example.com/berthx/acme/shop/web",
            "registry.example.com/berth/acme/../globex/web",
            "ghcr.io/acme/shop/web:v1",
            "nginx",
        ] {
            assert_eq!(of(elsewhere), None, "{elsewhere}");
        }
        let found = ProjectRepository::of_image(prefix, "registry.example.com/berth/acme/shop/web")
            .expect("a project's");
        assert!(found.is_of("acme", "shop"));
        assert!(!found.is_of("acme", "billing"));
        assert!(!found.is_of("globex", "shop"));
    }

    #[test]
    fn a_reach_allows_only_its_own_actions_and_repositories() {
        let push = Reach::Repository("berth/acme/shop/web".into());
        assert_eq!(
            push.allowed("berth/acme/shop/web", &["pull", "push"]),
            ["pull", "push"]
        );
        assert_eq!(
            push.allowed("berth/acme/shop/web", &["push", "delete", "*", "push"]),
            ["push"]
        );
        assert!(push.allowed("berth/acme/shop/api", &["pull"]).is_empty());
        assert!(push.allowed("berth/acme/shop/web/x", &["pull"]).is_empty());

        let pull = Reach::project("registry.example.com/berth", "acme", "shop").expect("names");
        assert_eq!(
            pull.allowed("berth/acme/shop/web", &["pull", "push"]),
            ["pull"]
        );
        // Another organization whose name starts alike, and the paths
        // themselves.
        assert!(pull.allowed("berth/acmex/shop/web", &["pull"]).is_empty());
        assert!(pull.allowed("berth/acme", &["pull"]).is_empty());
        assert!(pull.allowed("berth/acme/", &["pull"]).is_empty());
        assert!(pull.allowed("berth/acme/shop", &["pull"]).is_empty());
        assert!(pull.allowed("berth/acme/shop/", &["pull"]).is_empty());
        assert!(pull.allowed("other/acme/shop/web", &["pull"]).is_empty());
        // Paths a registry or proxy that tidies them would read elsewhere.
        for beyond in [
            "berth/acme/shop/../../globex/shop/web",
            "berth/acme/shop/../shop2/web",
            "berth/acme/../acme/shop/web",
            "berth/acme/shop/./x",
            "berth/acme/shop//x",
            "berth/acme/shop/x/",
            "berth//acme/shop/x",
        ] {
            assert!(pull.allowed(beyond, &["pull"]).is_empty(), "{beyond}");
        }

        // A shared push credential of before, under a prefix without a path.
        let shared = Reach::Under {
            path: String::new(),
            push: true,
        };
        assert_eq!(shared.allowed("acme/shop/web", &["push"]), ["push"]);
    }
}
