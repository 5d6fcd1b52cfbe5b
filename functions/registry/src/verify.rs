//! Whether a registry credential's password holds, and what it reaches
//! (`berth_domain::registry` has the table): its digest is read where the
//! controller keeps it — the Build (one `get` in the builds namespace) or
//! the Environment (one `get`) — or, for a shared credential of before, in
//! the registry's settings. A build's credentials hold only while it runs
//! and before their expiry; an environment's while it exists. A build's or
//! an environment's pull reaches its own project; only a shared credential
//! of before reaches beyond.
//!
//! The same work is done whatever the outcome: one read, one digest and a
//! constant-time comparison (with a digest nobody's password has when the
//! object is missing), so neither the answer nor its time tells an unknown
//! user from a wrong password.

use berth_api::ApiError;
use berth_api::registry::RegistrySettings;
use berth_cluster::crd::BUILD_RUNNING;
use berth_cluster::{builds, environments};
use berth_domain::clock;
use berth_domain::credentials::{digest, same_secret};
use berth_domain::registry::{Reach, RegistryUser, prefix_path, repository_name};

/// What a token request's credential turned out to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    /// The organization of the object the user name names, when it exists:
    /// whose audit log the request goes to, granted or not.
    pub org: Option<String>,
    /// What it reaches; None when the password does not hold (or the
    /// credential no longer works).
    pub reach: Option<Reach>,
}

/// A digest no password has: what a missing credential is compared with.
const NOBODYS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// A user name that names nothing: its password is compared all the same
/// (the same work as a wrong password's), and it is no one's.
fn nobody(holds: impl Fn(Option<&str>) -> bool) -> Checked {
    holds(None);
    Checked {
        org: None,
        reach: None,
    }
}

pub async fn check(
    client: &berth_cluster::Client,
    settings: &RegistrySettings,
    user: &RegistryUser,
    password: &str,
) -> Result<Checked, ApiError> {
    let presented = digest(password);
    let holds = |stored: Option<&str>| same_secret(&presented, stored.unwrap_or(NOBODYS));
    match user {
        RegistryUser::BuildPush { build } | RegistryUser::BuildPull { build } => {
            let Some(build) = builds::get(client, build).await? else {
                return Ok(nobody(holds));
            };
            let spec = &build.spec;
            let credentials = build.status.as_ref().and_then(|s| s.registry.as_ref());
            let push = matches!(user, RegistryUser::BuildPush { .. });
            let stored = credentials.map(|c| {
                if push {
                    c.push_digest.as_str()
                } else {
                    c.pull_digest.as_str()
                }
            });
            let live = build.phase() == BUILD_RUNNING
                && credentials.is_some_and(|c| clock::unix_seconds() < c.expires_at);
            // The pull credential (a Dockerfile's `FROM`, the run image)
            // reaches the build's project, not its organization: a sibling
            // project's images are no more its than another organization's.
            let reach = (holds(stored) && live)
                .then(|| {
                    if push {
                        Some(Reach::Repository(repository_name(
                            &settings.prefix,
                            &spec.org,
                            &spec.project,
                            &spec.app,
                        )))
                    } else {
                        Reach::project(&settings.prefix, &spec.org, &spec.project)
                    }
                })
                .flatten();
            Ok(Checked {
                org: Some(spec.org.clone()),
                reach,
            })
        }
        RegistryUser::EnvironmentPull { environment } => {
            let Some(environment) = environments::by_name(client, environment).await? else {
                return Ok(nobody(holds));
            };
            let stored = environment
                .status
                .as_ref()
                .and_then(|s| s.registry_pull_digest.as_deref());
            // Its pods pull their own project's images only: an app's
            // `image` naming a sibling project's is refused as another
            // organization's is.
            let spec = &environment.spec;
            let reach = holds(stored)
                .then(|| Reach::project(&settings.prefix, &spec.org, &spec.project))
                .flatten();
            Ok(Checked {
                org: Some(environment.spec.org.clone()),
                reach,
            })
        }
        RegistryUser::Shared { username } => {
            // Every entry compared, none short-circuited: the user names
            // of shared credentials are not told by the time taken.
            let shared = settings.shared.iter().fold(None, |found, c| {
                found.or(same_secret(&c.username, username).then_some(c))
            });
            let reach = holds(shared.map(|c| c.digest.as_str())).then(|| Reach::Under {
                path: prefix_path(&settings.prefix),
                push: shared.is_some_and(|c| c.push),
            });
            Ok(Checked { org: None, reach })
        }
    }
}
