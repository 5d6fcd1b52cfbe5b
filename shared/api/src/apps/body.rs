//! How the app bodies of the API (`createApp`, `updateApp`: their types are
//! `berth_records::apps::body`'s) become an [`AppConfig`]: every value is
//! parsed into its domain type here, once, and every rule of a name, size
//! and schedule is checked before anything is written.

use std::collections::HashSet;

use crate::ApiError;
use berth_cluster::crd::object_names;
use berth_domain::CommandArg;
use berth_domain::Permission;
use berth_domain::app::{
    AppConfig, AppEnvVar, AppProcess, AppSource, AppVolume, BuildSettings, BuildStrategy,
};
use berth_domain::container_paths::{HealthCheckPath, MountPath};
use berth_domain::git::{GitRef, GitRepo, RepoPath};
use berth_domain::image::ImageRef;
use berth_domain::names::{
    AppName, EnvName, Hostname, ProcessName, SecretKey, SecretName, VolumeName,
};
use berth_domain::numbers::{FsGroup, Port, Replicas};
use berth_domain::parts::SecretKeyRef;
use berth_domain::protocol::Protocol;
use berth_domain::schedule::{Schedule, TimeZone};
use berth_domain::size::{Size, VolumeSize};
use berth_domain::stored::Stored;
use berth_records::apps::body::{
    BuildBody, CreateBody, EnvBody, ProcessBody, UpdateBody, VolumeBody,
};

pub const DEFAULT_SIZE: &str = "small";
pub const DEFAULT_VOLUME_SIZE: &str = "1Gi";
const MAX_PROCESSES: usize = 20;
const MAX_ENV: usize = 500;
const MAX_DOMAINS: usize = 50;
const MAX_VOLUMES: usize = 20;
const MAX_COMMAND_ARGS: usize = 100;
/// Kubernetes' limit on object names that become labels and DNS labels.
const MAX_OBJECT_NAME: usize = 63;
/// A CronJob's Jobs add 11 characters to its name.
const MAX_CRONJOB_NAME: usize = 52;

/// A new app's name and configuration, every rule checked.
pub fn parse_create(body: CreateBody) -> Result<(AppName, AppConfig), ApiError> {
    let name = AppName::parse_new(&body.name).map_err(|e| e.at("name"))?;
    let flat = body.flat_process();
    let processes = match (&body.processes, flat != ProcessBody::default()) {
        (Some(_), true) => return Err(both_process_forms()),
        (Some(list), false) => list
            .iter()
            .enumerate()
            .map(|(i, p)| parse_process(p, None, &format!("processes[{i}]")))
            .collect::<Result<Vec<_>, _>>()?,
        (None, _) => vec![parse_process(&flat, None, "")?],
    };
    let env = parse_env(body.env.as_deref().unwrap_or_default(), &[])?;
    let volumes = parse_volumes(body.volumes.as_deref().unwrap_or_default(), &[])?;
    // A new app has nothing to remove: `null` is as good as omitted.
    let given = |field: &Option<Option<String>>| field.clone().flatten();
    let (git_ref, git_secret) = (given(&body.git_ref), given(&body.git_secret));
    let source = match given(&body.git_repo) {
        Some(repo) => Some(AppSource {
            git_repo: parse_repo(&repo)?,
            git_ref: git_ref.as_deref().map(parse_ref).transpose()?,
            build: parse_build(body.build.as_ref().unwrap_or(&BuildBody::default()))?,
            git_secret: git_secret.as_deref().map(parse_git_secret).transpose()?,
        }),
        None if git_ref.is_some() || body.build.is_some() || git_secret.is_some() => {
            return Err(needs_repo());
        }
        None => None,
    };
    let config = AppConfig {
        image: body.image.as_deref().map(parse_image).transpose()?,
        source,
        processes,
        env,
        domains: parse_domains(body.domains.as_deref().unwrap_or_default())?,
        volumes,
        health_check_path: parse_health_check_path(
            body.health_check_path
                .as_deref()
                .filter(|path| !path.is_empty()),
        )?,
        fs_group: parse_fs_group(body.fs_group)?,
        release_command: body
            .release_command
            .as_deref()
            .map(|command| parse_command(command, "release_command"))
            .transpose()?
            .unwrap_or_default(),
        auto_rollback: body.auto_rollback.unwrap_or(true),
    };
    check_whole(&name, &config)?;
    Ok((name, config))
}

/// The configuration a PATCH asks for, from the current one.
pub fn apply_update(
    app: &AppName,
    current: &AppConfig,
    body: &UpdateBody,
) -> Result<AppConfig, ApiError> {
    let mut next = current.clone();
    if let Some(image) = &body.image {
        next.image = Some(parse_image(image)?);
    }
    next.source = apply_source(current.source.as_ref(), body)?;
    let flat = body.flat_process();
    match (&body.processes, flat != ProcessBody::default()) {
        (Some(_), true) => return Err(both_process_forms()),
        (Some(list), false) => {
            next.processes = list
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    let field = format!("processes[{i}]");
                    let existing = p
                        .name
                        .as_deref()
                        .and_then(|n| current.processes.iter().find(|c| c.name == n));
                    parse_process(p, existing, &field)
                })
                .collect::<Result<Vec<_>, _>>()?;
        }
        (None, true) => {
            let main = current.processes.first().ok_or_else(|| {
                ApiError::ValidationFailed("processes: the app has no process to change".into())
            })?;
            let flat = ProcessBody {
                name: Some(main.name.clone()),
                ..flat
            };
            next.processes[0] = parse_process(&flat, Some(main), "")?;
        }
        (None, false) => {}
    }
    if let Some(env) = &body.env {
        next.env = parse_env(env, &current.env)?;
    }
    if let Some(domains) = &body.domains {
        next.domains = parse_domains(domains)?;
    }
    if let Some(volumes) = &body.volumes {
        next.volumes = parse_volumes(volumes, &current.volumes)?;
    }
    if let Some(path) = &body.health_check_path {
        next.health_check_path = if path.is_empty() {
            None
        } else {
            parse_health_check_path(Some(path))?
        };
    }
    if let Some(fs_group) = body.fs_group {
        next.fs_group = if fs_group == 0 {
            None
        } else {
            parse_fs_group(Some(fs_group))?
        };
    }
    if let Some(command) = &body.release_command {
        next.release_command = parse_command(command, "release_command")?;
    }
    if let Some(auto_rollback) = body.auto_rollback {
        next.auto_rollback = auto_rollback;
    }
    check_whole(app, &next)?;
    Ok(next)
}

/// The source an update asks for, from the current one: `git_repo` sets or
/// (`null`) removes it; the other fields change the source there is.
fn apply_source(
    current: Option<&AppSource>,
    body: &UpdateBody,
) -> Result<Option<AppSource>, ApiError> {
    let mut next = match &body.git_repo {
        None => current.cloned(),
        Some(None) => None,
        Some(Some(repo)) => {
            let git_repo = parse_repo(repo)?;
            Some(match current {
                Some(current) => AppSource {
                    git_repo,
                    ..current.clone()
                },
                None => AppSource {
                    git_repo,
                    git_ref: None,
                    build: BuildSettings::default(),
                    git_secret: None,
                },
            })
        }
    };
    let other_fields = body.git_ref.is_some() || body.build.is_some() || body.git_secret.is_some();
    let Some(source) = next.as_mut() else {
        return if other_fields && body.git_repo != Some(None) {
            Err(needs_repo())
        } else if other_fields {
            Err(ApiError::ValidationFailed(
                "git_repo: removing the source removes its git_ref, build and git_secret too; \
                 give none of them"
                    .into(),
            ))
        } else {
            Ok(None)
        };
    };
    if let Some(git_ref) = &body.git_ref {
        source.git_ref = git_ref.as_deref().map(parse_ref).transpose()?;
    }
    if let Some(build) = &body.build {
        source.build = parse_build(build)?;
    }
    if let Some(secret) = &body.git_secret {
        source.git_secret = secret.as_deref().map(parse_git_secret).transpose()?;
    }
    // A repository stored before the host rules (an IP literal, a name
    // without a dot) keeps building as it is, but a change of the source
    // must satisfy them: the repository it keeps is checked again.
    if body.git_repo.is_none()
        && next.as_ref() != current
        && let Some(kept) = next.as_ref()
        && let Err(why) = GitRepo::parse(&kept.git_repo)
    {
        return Err(ApiError::ValidationFailed(format!(
            "git_repo: the app's repository was stored before today's rules and a change of \
             its source must meet them: give a git_repo that does (it {why})"
        )));
    }
    Ok(next)
}

fn needs_repo() -> ApiError {
    ApiError::ValidationFailed(
        "git_repo: git_ref, build and git_secret describe the app's source; give a git_repo".into(),
    )
}

fn parse_repo(repo: &str) -> Result<String, ApiError> {
    Ok(GitRepo::parse(repo)
        .map_err(|e| e.at("git_repo"))?
        .into_inner())
}

fn parse_ref(git_ref: &str) -> Result<String, ApiError> {
    Ok(GitRef::parse(git_ref)
        .map_err(|e| e.at("git_ref"))?
        .into_inner())
}

fn parse_git_secret(name: &str) -> Result<String, ApiError> {
    Ok(SecretName::parse(name)
        .map_err(|e| e.at("git_secret"))?
        .as_str()
        .to_owned())
}

fn parse_build(body: &BuildBody) -> Result<BuildSettings, ApiError> {
    let strategy = match body.strategy.as_deref() {
        None | Some("auto") => BuildStrategy::Auto,
        Some("dockerfile") => BuildStrategy::Dockerfile,
        Some("buildpacks") => BuildStrategy::Buildpacks,
        Some(_) => {
            return Err(ApiError::ValidationFailed(
                "build.strategy: must be auto, dockerfile or buildpacks".into(),
            ));
        }
    };
    let path = |value: &Option<String>, field: &str| {
        value
            .as_deref()
            .map(|path| {
                RepoPath::parse(path)
                    .map(RepoPath::into_inner)
                    .map_err(|e| e.at(field))
            })
            .transpose()
    };
    let dockerfile = path(&body.dockerfile, "build.dockerfile")?;
    if dockerfile.is_some() && strategy == BuildStrategy::Buildpacks {
        return Err(ApiError::ValidationFailed(
            "build.dockerfile: a buildpacks build reads no Dockerfile".into(),
        ));
    }
    Ok(BuildSettings {
        strategy,
        context_dir: path(&body.context_dir, "build.context_dir")?,
        dockerfile,
    })
}

fn both_process_forms() -> ApiError {
    ApiError::ValidationFailed(
        "processes: give either `processes` or the main process's fields (port, command, \
         replicas, max_replicas, size, schedule, time_zone, protocol), not both"
            .into(),
    )
}

fn field(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_owned()
    } else {
        format!("{prefix}.{name}")
    }
}

fn parse_image(image: &str) -> Result<Stored<ImageRef>, ApiError> {
    Ok(ImageRef::parse(image).map_err(|e| e.at("image"))?.into())
}

/// A process from its body; `existing` (in an update) supplies what the body
/// leaves out. An empty `schedule` removes the schedule.
fn parse_process(
    body: &ProcessBody,
    existing: Option<&AppProcess>,
    prefix: &str,
) -> Result<AppProcess, ApiError> {
    let port = match body.port {
        Some(port) => Some(i32::from(
            Port::parse(port)
                .map_err(|e| e.at(&field(prefix, "port")))?
                .get(),
        )),
        None => existing.and_then(|p| p.port),
    };
    let schedule = match body.schedule.as_deref() {
        Some("") => None,
        Some(schedule) => Some(
            Schedule::parse(schedule)
                .map_err(|e| e.at(&field(prefix, "schedule")))?
                .into(),
        ),
        None => existing.and_then(|p| p.schedule.clone()),
    };
    let time_zone = match body.time_zone.as_deref() {
        Some(zone) => Some(
            TimeZone::parse(zone)
                .map_err(|e| e.at(&field(prefix, "time_zone")))?
                .into(),
        ),
        None => existing.and_then(|p| p.time_zone.clone()),
    };
    let time_zone = match (&schedule, time_zone) {
        (Some(_), zone) => Some(zone.unwrap_or_else(|| TimeZone::default().into())),
        (None, _) if body.time_zone.is_some() => {
            return Err(ApiError::ValidationFailed(format!(
                "{}: needs a schedule",
                field(prefix, "time_zone")
            )));
        }
        (None, _) => None,
    };
    if schedule.is_some() && port.is_some() {
        return Err(ApiError::ValidationFailed(format!(
            "{}: a scheduled process runs as a job and has no port",
            field(prefix, "port")
        )));
    }
    let name = match (&body.name, existing) {
        (Some(name), _) => ProcessName::parse(name)
            .map_err(|e| e.at(&field(prefix, "name")))?
            .as_str()
            .to_owned(),
        (None, Some(existing)) => existing.name.clone(),
        // The main process of the flat fields is named by what it is.
        (None, None) if prefix.is_empty() => match (&port, &schedule) {
            (Some(_), _) => "web".to_owned(),
            (None, Some(_)) => "job".to_owned(),
            (None, None) => "worker".to_owned(),
        },
        (None, None) => {
            return Err(ApiError::ValidationFailed(format!(
                "{}: is required",
                field(prefix, "name")
            )));
        }
    };
    let command = match &body.command {
        Some(command) => parse_command(command, &field(prefix, "command"))?,
        None => existing.map(|p| p.command.clone()).unwrap_or_default(),
    };
    let size = match body.size.as_deref() {
        Some(size) => Size::parse(size)
            .map_err(|e| e.at(&field(prefix, "size")))?
            .into(),
        None => existing.map_or_else(|| Stored::read(DEFAULT_SIZE), |p| p.size.clone()),
    };
    let replicas = |value: i64, name: &str| -> Result<i32, ApiError> {
        Ok(Replicas::parse(value)
            .map_err(|e| e.at(&field(prefix, name)))?
            .get())
    };
    let min_replicas = match body.replicas {
        Some(value) => replicas(value, "replicas")?,
        None => existing.map_or(1, |p| p.min_replicas),
    };
    let max_replicas = match (body.max_replicas, existing) {
        (Some(value), _) => replicas(value, "max_replicas")?,
        // Without autoscaling, a new replica count moves both bounds.
        (None, Some(p)) if p.max_replicas > p.min_replicas => p.max_replicas.max(min_replicas),
        (None, _) => min_replicas,
    };
    if max_replicas < min_replicas {
        return Err(ApiError::ValidationFailed(format!(
            "{}: must be at least replicas",
            field(prefix, "max_replicas")
        )));
    }
    let protocol = match body.protocol.as_deref() {
        Some(protocol) => Protocol::parse(protocol)
            .map_err(|e| e.at(&field(prefix, "protocol")))?
            .into(),
        None => existing.map_or_else(|| Protocol::Http.into(), |p| p.protocol.clone()),
    };
    Ok(AppProcess {
        name,
        command,
        port,
        size,
        min_replicas,
        max_replicas,
        schedule,
        time_zone,
        protocol,
    })
}

pub(super) fn parse_command(command: &[String], field: &str) -> Result<Vec<String>, ApiError> {
    if command.len() > MAX_COMMAND_ARGS || !command.iter().all(|arg| CommandArg::holds(arg)) {
        return Err(ApiError::ValidationFailed(format!(
            "{field}: at most {MAX_COMMAND_ARGS} arguments of at most {} characters, without NUL",
            CommandArg::MAX_LEN
        )));
    }
    Ok(command.to_vec())
}

/// Environment variables; in an update, an entry with only a name keeps that
/// variable's current value or reference (callers without `secret-read`
/// never see values, yet can edit the list).
fn parse_env(entries: &[EnvBody], current: &[AppEnvVar]) -> Result<Vec<AppEnvVar>, ApiError> {
    if entries.len() > MAX_ENV {
        return Err(ApiError::ValidationFailed(format!(
            "env: at most {MAX_ENV} variables"
        )));
    }
    let mut seen = HashSet::new();
    entries
        .iter()
        .enumerate()
        .map(|(i, entry)| {
            let name = EnvName::parse(&entry.name)
                .map_err(|e| e.at(&format!("env[{i}].name")))?
                .as_str()
                .to_owned();
            if !seen.insert(name.clone()) {
                return Err(duplicate(&format!("env[{i}].name")));
            }
            let secret = entry
                .secret
                .as_ref()
                .map(|s| -> Result<SecretKeyRef, ApiError> {
                    Ok(SecretKeyRef {
                        name: SecretName::parse(&s.name)
                            .map_err(|e| e.at(&format!("env[{i}].secret.name")))?
                            .as_str()
                            .to_owned(),
                        key: SecretKey::parse(&s.key)
                            .map_err(|e| e.at(&format!("env[{i}].secret.key")))?
                            .as_str()
                            .to_owned(),
                    })
                })
                .transpose()?;
            match (entry.value.clone(), secret) {
                (Some(_), Some(_)) => Err(ApiError::ValidationFailed(format!(
                    "env[{i}]: give either value or secret, not both"
                ))),
                (value @ Some(_), None) => Ok(AppEnvVar {
                    name,
                    value,
                    secret: None,
                }),
                (None, secret @ Some(_)) => Ok(AppEnvVar {
                    name,
                    value: None,
                    secret,
                }),
                (None, None) => current
                    .iter()
                    .find(|c| c.name == name)
                    .cloned()
                    .ok_or_else(|| {
                        ApiError::ValidationFailed(format!("env[{i}]: needs a value or a secret"))
                    }),
            }
        })
        .collect()
}

fn parse_domains(domains: &[String]) -> Result<Vec<Stored<Hostname>>, ApiError> {
    if domains.len() > MAX_DOMAINS {
        return Err(ApiError::ValidationFailed(format!(
            "domains: at most {MAX_DOMAINS} hostnames"
        )));
    }
    let mut seen = HashSet::new();
    domains
        .iter()
        .enumerate()
        .map(|(i, domain)| {
            let host = Hostname::parse(domain).map_err(|e| e.at(&format!("domains[{i}]")))?;
            if seen.insert(host.clone()) {
                Ok(host.into())
            } else {
                Err(duplicate(&format!("domains[{i}]")))
            }
        })
        .collect()
}

/// Volumes; in an update a volume keeps its size unless the body gives one,
/// and may grow, never shrink.
fn parse_volumes(
    volumes: &[VolumeBody],
    current: &[AppVolume],
) -> Result<Vec<AppVolume>, ApiError> {
    if volumes.len() > MAX_VOLUMES {
        return Err(ApiError::ValidationFailed(format!(
            "volumes: at most {MAX_VOLUMES} volumes"
        )));
    }
    let mut names = HashSet::new();
    let mut paths = HashSet::new();
    volumes
        .iter()
        .enumerate()
        .map(|(i, volume)| {
            let name =
                VolumeName::parse(&volume.name).map_err(|e| e.at(&format!("volumes[{i}].name")))?;
            if !names.insert(name.clone()) {
                return Err(duplicate(&format!("volumes[{i}].name")));
            }
            let mount_path = MountPath::parse(&volume.mount_path)
                .map_err(|e| e.at(&format!("volumes[{i}].mount_path")))?;
            if !paths.insert(mount_path.clone()) {
                return Err(duplicate(&format!("volumes[{i}].mount_path")));
            }
            let existing = current.iter().find(|v| v.name == name);
            let size = match (&volume.size, existing) {
                (Some(size), _) => {
                    let field = format!("volumes[{i}].size");
                    let wanted = VolumeSize::parse(size).map_err(|e| e.at(&field))?;
                    if let Some(existing) = existing
                        && existing.size.parsed().is_ok_and(|had| wanted < *had)
                    {
                        return Err(ApiError::ValidationFailed(format!(
                            "{field}: a volume can grow, never shrink (it is {})",
                            existing.size
                        )));
                    }
                    wanted.into()
                }
                (None, Some(existing)) => existing.size.clone(),
                (None, None) => Stored::read(DEFAULT_VOLUME_SIZE),
            };
            Ok(AppVolume {
                name: name.into(),
                mount_path: mount_path.into(),
                size,
            })
        })
        .collect()
}

fn parse_health_check_path(
    path: Option<&str>,
) -> Result<Option<Stored<HealthCheckPath>>, ApiError> {
    path.map(|path| {
        Ok(HealthCheckPath::parse(path)
            .map_err(|e| e.at("health_check_path"))?
            .into())
    })
    .transpose()
}

fn parse_fs_group(fs_group: Option<i64>) -> Result<Option<i64>, ApiError> {
    fs_group
        .map(|group| Ok(FsGroup::parse(group).map_err(|e| e.at("fs_group"))?.get()))
        .transpose()
}

fn duplicate(field: &str) -> ApiError {
    ApiError::ValidationFailed(format!("{field}: is given twice"))
}

/// Rules across fields: process names, object name lengths, and one replica
/// for apps with volumes.
fn check_whole(app: &AppName, config: &AppConfig) -> Result<(), ApiError> {
    if config.image.is_none() && config.source.is_none() {
        return Err(ApiError::ValidationFailed(
            "image: an app needs an image, a git_repo to build one from, or both".into(),
        ));
    }
    if config.processes.is_empty() || config.processes.len() > MAX_PROCESSES {
        return Err(ApiError::ValidationFailed(format!(
            "processes: an app has 1 to {MAX_PROCESSES} processes"
        )));
    }
    let mut names = HashSet::new();
    for (i, process) in config.processes.iter().enumerate() {
        if !names.insert(process.name.as_str()) {
            return Err(duplicate(&format!("processes[{i}].name")));
        }
        let object = object_names::workload(app.as_str(), &process.name);
        let max = if process.is_scheduled() {
            MAX_CRONJOB_NAME
        } else {
            MAX_OBJECT_NAME
        };
        if object.len() > max {
            return Err(ApiError::ValidationFailed(format!(
                "processes[{i}].name: with the app's name it makes `{object}`, longer than {max} characters"
            )));
        }
        if !config.volumes.is_empty() && !process.is_scheduled() && process.max_replicas > 1 {
            return Err(ApiError::ValidationFailed(format!(
                "processes[{i}].replicas: an app with volumes runs at most one replica \
                 (a volume is ReadWriteOnce)"
            )));
        }
    }
    Ok(())
}

/// What a change needs: new code to run — a new image, a new source to
/// build (any source field), a new command of a process, a new release
/// command, or any change of `env` (which decides what code does:
/// `NODE_OPTIONS`, `LD_PRELOAD`… beside the secrets it reads) —
/// `app-deploy`; replica counts alone `app-operate`; anything else
/// `app-write`. A change that mixes them needs each.
pub fn permissions_for(current: &AppConfig, next: &AppConfig) -> Vec<Permission> {
    let mut needed = vec![Permission::AppOperate];
    if current.image != next.image
        || current.source != next.source
        || current.env != next.env
        || runs_new_command(current, next)
        || (!next.release_command.is_empty() && next.release_command != current.release_command)
    {
        needed.push(Permission::AppDeploy);
    }
    let without_replicas = |config: &AppConfig| {
        let mut config = config.clone();
        config.image = None;
        config.source = None;
        config.env = Vec::new();
        for process in &mut config.processes {
            process.min_replicas = 0;
            process.max_replicas = 0;
        }
        config
    };
    if without_replicas(current) != without_replicas(next) {
        needed.push(Permission::AppWrite);
    }
    needed
}

/// Whether a process of `next` runs a command it did not run in `current`
/// (a changed command, or a new or renamed process with one). Dropping a
/// command runs the image's own entrypoint, which any process without a
/// command runs already: that alone is no new code.
fn runs_new_command(current: &AppConfig, next: &AppConfig) -> bool {
    next.processes
        .iter()
        .filter(|process| !process.command.is_empty())
        .any(|process| {
            !current
                .processes
                .iter()
                .any(|before| before.name == process.name && before.command == process.command)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn create(json: serde_json::Value) -> Result<(AppName, AppConfig), ApiError> {
        parse_create(serde_json::from_value(json).expect("a create body"))
    }

    fn config(json: serde_json::Value) -> AppConfig {
        create(json).expect("a valid app").1
    }

    fn update(current: &AppConfig, json: serde_json::Value) -> Result<AppConfig, ApiError> {
        let body: UpdateBody = serde_json::from_value(json).expect("an update body");
        apply_update(&AppName::parse("shop").expect("name"), current, &body)
    }

    fn detail(error: ApiError) -> String {
        match error {
            ApiError::ValidationFailed(detail) => detail,
            other => panic!("expected validation_failed, got {other:?}"),
        }
    }

    /// The spec gives both bodies the same fields: what clears a field on
    /// an update leaves it unset on a create.
    #[test]
    fn a_create_takes_what_clears_a_field_as_unset() {
        let (_, config) = create(serde_json::json!({
            "name": "shop", "image": "nginx", "health_check_path": "",
            "git_repo": null, "git_ref": null, "git_secret": null,
        }))
        .unwrap();
        assert_eq!((config.health_check_path, config.source), (None, None));
    }

    #[test]
    fn flat_fields_make_a_main_process_named_by_its_kind() {
        let web = config(serde_json::json!({"name": "shop", "image": "nginx:1.27", "port": 8080}));
        assert_eq!(web.processes[0].name, "web");
        assert_eq!(web.processes[0].port, Some(8080));
        assert_eq!(web.processes[0].size.text(), "small");
        assert_eq!(
            (web.processes[0].min_replicas, web.processes[0].max_replicas),
            (1, 1)
        );
        assert_eq!(web.processes[0].protocol.text(), "http");
        let job =
            config(serde_json::json!({"name": "shop", "image": "nginx", "schedule": "0 3 * * *"}));
        assert_eq!(job.processes[0].name, "job");
        assert_eq!(
            job.processes[0].time_zone.as_ref().map(Stored::text),
            Some("UTC")
        );
        let worker = config(serde_json::json!({"name": "shop", "image": "nginx"}));
        assert_eq!(worker.processes[0].name, "worker");
    }

    #[test]
    fn refuses_flat_fields_with_processes() {
        let error = create(serde_json::json!({
            "name": "shop", "image": "nginx", "port": 80,
            "processes": [{"name": "web", "port": 80}]
        }))
        .unwrap_err();
        assert!(detail(error).starts_with("processes:"));
    }

    #[test]
    fn names_the_field_of_each_broken_rule() {
        let cases = [
            (
                serde_json::json!({"name": "Shop", "image": "nginx"}),
                "name:",
            ),
            (
                serde_json::json!({"name": "shop", "image": "Nginx"}),
                "image:",
            ),
            (
                serde_json::json!({"name": "shop", "image": "nginx", "port": 0}),
                "port:",
            ),
            (
                serde_json::json!({"name": "shop", "image": "nginx", "port": 70000}),
                "port:",
            ),
            (
                serde_json::json!({"name": "shop", "image": "nginx", "size": "huge"}),
                "size:",
            ),
            (
                serde_json::json!({"name": "shop", "image": "nginx", "size": "17/1Gi"}),
                "size:",
            ),
            (
                serde_json::json!({"name": "shop", "image": "nginx", "size": "1/65Gi"}),
                "size:",
            ),
            (
                serde_json::json!({"name": "shop", "image": "nginx", "volumes": [{"name": "data", "mount_path": "/a", "size": "2Ti"}]}),
                "volumes[0].size:",
            ),
            (
                serde_json::json!({"name": "shop", "image": "nginx", "volumes": [{"name": "data", "mount_path": "/a", "size": "0"}]}),
                "volumes[0].size:",
            ),
            (
                serde_json::json!({"name": "shop", "image": "nginx", "replicas": 101}),
                "replicas:",
            ),
            (
                serde_json::json!({"name": "shop", "image": "nginx", "replicas": 3, "max_replicas": 2}),
                "max_replicas:",
            ),
            (
                serde_json::json!({"name": "shop", "image": "nginx", "schedule": "* * *"}),
                "schedule:",
            ),
            (
                serde_json::json!({"name": "shop", "image": "nginx", "schedule": "0 * * * *", "time_zone": "Mars/Base"}),
                "time_zone:",
            ),
            (
                serde_json::json!({"name": "shop", "image": "nginx", "time_zone": "UTC"}),
                "time_zone:",
            ),
            (
                serde_json::json!({"name": "shop", "image": "nginx", "schedule": "0 * * * *", "port": 80}),
                "port:",
            ),
            (
                serde_json::json!({"name": "shop", "image": "nginx", "protocol": "udp"}),
                "protocol:",
            ),
            (
                serde_json::json!({"name": "shop", "image": "nginx", "domains": ["not a host"]}),
                "domains[0]:",
            ),
            (
                serde_json::json!({"name": "shop", "image": "nginx", "domains": ["a.example.com", "A.example.com"]}),
                "domains[1]:",
            ),
            (
                serde_json::json!({"name": "shop", "image": "nginx", "env": [{"name": "1X", "value": "v"}]}),
                "env[0].name:",
            ),
            (
                serde_json::json!({"name": "shop", "image": "nginx", "env": [{"name": "X", "value": "v"}, {"name": "X", "value": "w"}]}),
                "env[1].name:",
            ),
            (
                serde_json::json!({"name": "shop", "image": "nginx", "env": [{"name": "X"}]}),
                "env[0]:",
            ),
            (
                serde_json::json!({"name": "shop", "image": "nginx", "env": [{"name": "X", "value": "v", "secret": {"name": "s", "key": "k"}}]}),
                "env[0]:",
            ),
            (
                serde_json::json!({"name": "shop", "image": "nginx", "volumes": [{"name": "data", "mount_path": "/"}]}),
                "volumes[0].mount_path:",
            ),
            (
                serde_json::json!({"name": "shop", "image": "nginx", "volumes": [{"name": "data", "mount_path": "/a/../b"}]}),
                "volumes[0].mount_path:",
            ),
            (
                serde_json::json!({"name": "shop", "image": "nginx", "volumes": [{"name": "data", "mount_path": "/a"}, {"name": "data", "mount_path": "/b"}]}),
                "volumes[1].name:",
            ),
            (
                serde_json::json!({"name": "shop", "image": "nginx", "replicas": 2, "volumes": [{"name": "data", "mount_path": "/a"}]}),
                "processes[0].replicas:",
            ),
            (
                serde_json::json!({"name": "shop", "image": "nginx", "processes": [{"name": "web"}, {"name": "web"}]}),
                "processes[1].name:",
            ),
            (
                serde_json::json!({"name": "shop", "image": "nginx", "processes": [{"port": 80}]}),
                "processes[0].name:",
            ),
            (
                serde_json::json!({"name": "shop", "image": "nginx", "fs_group": -1}),
                "fs_group:",
            ),
            (
                serde_json::json!({"name": "shop", "image": "nginx", "health_check_path": "health"}),
                "health_check_path:",
            ),
        ];
        for (body, field) in cases {
            let error = create(body.clone()).expect_err(&body.to_string());
            let detail = detail(error);
            assert!(detail.starts_with(field), "{body}: {detail}");
        }
    }

    #[test]
    fn several_processes() {
        let app = config(serde_json::json!({
            "name": "shop", "image": "ghcr.io/acme/shop:1.0",
            "processes": [
                {"name": "web", "port": 8080, "replicas": 2, "max_replicas": 5},
                {"name": "worker", "command": ["bin/worker"], "size": "medium"},
                {"name": "nightly", "schedule": "0 3 * * *", "time_zone": "Europe/Berlin"}
            ]
        }));
        assert_eq!(app.processes.len(), 3);
        assert_eq!(app.processes[0].max_replicas, 5);
        assert_eq!(app.processes[1].command, ["bin/worker"]);
        assert_eq!(
            app.processes[2].time_zone.as_ref().map(Stored::text),
            Some("Europe/Berlin")
        );
    }

    #[test]
    fn updates_change_only_what_they_name() {
        let current = config(serde_json::json!({
            "name": "shop", "image": "nginx:1", "port": 80, "replicas": 2,
            "env": [{"name": "A", "value": "1"}, {"name": "B", "secret": {"name": "db", "key": "url"}}],
            "health_check_path": "/health", "fs_group": 1000
        }));
        let next = update(&current, serde_json::json!({"replicas": 3})).expect("valid");
        assert_eq!(
            (
                next.processes[0].min_replicas,
                next.processes[0].max_replicas
            ),
            (3, 3)
        );
        assert_eq!(next.image.as_ref().map(Stored::text), Some("nginx:1"));
        // Entries with only a name keep their value or reference.
        let next = update(
            &current,
            serde_json::json!({"env": [{"name": "B"}, {"name": "A"}, {"name": "C", "value": "3"}]}),
        )
        .expect("valid");
        assert_eq!(next.env[0], current.env[1]);
        assert_eq!(next.env[1], current.env[0]);
        assert_eq!(next.env[2].value.as_deref(), Some("3"));
        // Empty strings and zero remove.
        let next = update(
            &current,
            serde_json::json!({"health_check_path": "", "fs_group": 0}),
        )
        .expect("valid");
        assert_eq!((next.health_check_path, next.fs_group), (None, None));
        let error = update(&current, serde_json::json!({"port": 80, "processes": []})).unwrap_err();
        assert!(detail(error).starts_with("processes:"));
    }

    #[test]
    fn volumes_grow_never_shrink() {
        let current = config(serde_json::json!({
            "name": "shop", "image": "postgres:16", "port": 5432, "protocol": "tcp",
            "volumes": [{"name": "data", "mount_path": "/var/lib/postgresql/data", "size": "5Gi"}]
        }));
        let grown = update(&current, serde_json::json!({"volumes": [{"name": "data", "mount_path": "/var/lib/postgresql/data", "size": "10Gi"}]})).expect("grows");
        assert_eq!(grown.volumes[0].size.text(), "10Gi");
        let kept = update(
            &current,
            serde_json::json!({"volumes": [{"name": "data", "mount_path": "/data"}]}),
        )
        .expect("keeps its size");
        assert_eq!(kept.volumes[0].size.text(), "5Gi");
        let error = update(&current, serde_json::json!({"volumes": [{"name": "data", "mount_path": "/data", "size": "4Gi"}]})).unwrap_err();
        assert!(detail(error).starts_with("volumes[0].size:"));
        let default = config(
            serde_json::json!({"name": "shop", "image": "redis", "volumes": [{"name": "data", "mount_path": "/data"}]}),
        );
        assert_eq!(default.volumes[0].size.text(), "1Gi");
    }

    #[test]
    fn permissions_follow_what_changes() {
        let current = config(serde_json::json!({"name": "shop", "image": "nginx:1", "port": 80}));
        let scaled = update(&current, serde_json::json!({"replicas": 4})).expect("valid");
        assert_eq!(permissions_for(&current, &scaled), [Permission::AppOperate]);
        let deployed = update(&current, serde_json::json!({"image": "nginx:2"})).expect("valid");
        assert_eq!(
            permissions_for(&current, &deployed),
            [Permission::AppOperate, Permission::AppDeploy]
        );
        let configured = update(
            &current,
            serde_json::json!({"domains": ["shop.example.com"], "replicas": 2}),
        )
        .expect("valid");
        assert_eq!(
            permissions_for(&current, &configured),
            [Permission::AppOperate, Permission::AppWrite]
        );
    }

    #[test]
    fn changing_env_is_a_deploy() {
        let current = config(serde_json::json!({
            "name": "shop", "image": "nginx:1", "port": 80,
            "env": [{"name": "MODE", "value": "prod"}]
        }));
        for body in [
            // Code through the environment, a changed value, one removed.
            serde_json::json!({"env": [{"name": "MODE", "value": "prod"},
                                      {"name": "NODE_OPTIONS", "value": "--import=data:text/javascript,0"}]}),
            serde_json::json!({"env": [{"name": "MODE", "value": "debug"}]}),
            serde_json::json!({"env": []}),
        ] {
            let next = update(&current, body.clone()).expect("valid");
            assert_eq!(
                permissions_for(&current, &next),
                [Permission::AppOperate, Permission::AppDeploy],
                "{body}"
            );
        }
        // The same list, or an entry kept by its name alone, changes nothing.
        let kept = update(
            &current,
            serde_json::json!({"env": [{"name": "MODE"}], "domains": ["a.example.com"]}),
        )
        .expect("valid");
        assert_eq!(
            permissions_for(&current, &kept),
            [Permission::AppOperate, Permission::AppWrite]
        );
    }

    #[test]
    fn a_new_command_is_new_code() {
        let current = config(serde_json::json!({"name": "shop", "image": "nginx:1", "port": 80}));
        let deploy_and_write = [
            Permission::AppOperate,
            Permission::AppDeploy,
            Permission::AppWrite,
        ];
        let commanded = update(
            &current,
            serde_json::json!({"command": ["sh", "-c", "cat /proc/self/environ"]}),
        )
        .expect("valid");
        assert_eq!(permissions_for(&current, &commanded), deploy_and_write);
        // Through `processes` too, for a process changed or added.
        let listed = update(
            &current,
            serde_json::json!({"processes": [{"name": "web", "port": 80, "command": ["env"]}]}),
        )
        .expect("valid");
        assert_eq!(permissions_for(&current, &listed), deploy_and_write);
        let added = update(
            &current,
            serde_json::json!({"processes": [{"name": "web", "port": 80}, {"name": "spy", "command": ["env"]}]}),
        )
        .expect("valid");
        assert_eq!(permissions_for(&current, &added), deploy_and_write);
        // Back to the image's own entrypoint, or a process without a
        // command added, runs no new code.
        let reset = update(&commanded, serde_json::json!({"command": []})).expect("valid");
        assert_eq!(
            permissions_for(&commanded, &reset),
            [Permission::AppOperate, Permission::AppWrite]
        );
        let plain = update(
            &current,
            serde_json::json!({"processes": [{"name": "web", "port": 80}, {"name": "worker"}]}),
        )
        .expect("valid");
        assert_eq!(
            permissions_for(&current, &plain),
            [Permission::AppOperate, Permission::AppWrite]
        );
    }

    #[test]
    fn a_release_command_is_new_code_and_auto_rollback_is_on_by_default() {
        let current = config(serde_json::json!({"name": "shop", "image": "nginx:1", "port": 80}));
        assert!(current.release_command.is_empty());
        assert!(current.auto_rollback);
        let deploy_and_write = [
            Permission::AppOperate,
            Permission::AppDeploy,
            Permission::AppWrite,
        ];
        let released = update(
            &current,
            serde_json::json!({"release_command": ["./migrate"], "auto_rollback": false}),
        )
        .expect("valid");
        assert_eq!(released.release_command, ["./migrate"]);
        assert!(!released.auto_rollback);
        assert_eq!(permissions_for(&current, &released), deploy_and_write);
        // Removing it, or turning rollbacks on, runs no new code.
        let removed = update(&released, serde_json::json!({"release_command": []})).expect("valid");
        assert!(removed.release_command.is_empty());
        assert_eq!(
            permissions_for(&released, &removed),
            [Permission::AppOperate, Permission::AppWrite]
        );
        let created = config(serde_json::json!({
            "name": "shop", "image": "nginx:1", "release_command": ["./migrate", "up"], "auto_rollback": false
        }));
        assert_eq!(created.release_command, ["./migrate", "up"]);
        assert!(!created.auto_rollback);
        let too_long = vec!["x"; 101];
        let error = create(
            serde_json::json!({"name": "shop", "image": "nginx", "release_command": too_long}),
        )
        .unwrap_err();
        assert!(detail(error).starts_with("release_command:"));
        // What runs: image, commands, env and the release command; not sizes.
        assert!(!released.runs_like(&current));
        let resized = update(
            &current,
            serde_json::json!({"size": "large", "replicas": 3}),
        )
        .expect("valid");
        assert!(resized.runs_like(&current));
    }

    #[test]
    fn an_app_from_source_has_a_repository_and_may_have_no_image() {
        let from_source = config(serde_json::json!({
            "name": "shop", "git_repo": "https://github.com/acme/shop", "git_ref": "main",
            "build": {"strategy": "dockerfile", "context_dir": "web", "dockerfile": "Dockerfile.prod"},
            "git_secret": "github", "port": 8080
        }));
        assert_eq!(from_source.image, None);
        let source = from_source.source.clone().expect("a source");
        assert_eq!(source.git_ref.as_deref(), Some("main"));
        assert_eq!(source.build.strategy, BuildStrategy::Dockerfile);
        assert_eq!(source.build.context_dir.as_deref(), Some("web"));
        assert_eq!(source.git_secret.as_deref(), Some("github"));
        for (body, field) in [
            (serde_json::json!({"name": "shop"}), "image:"),
            (
                serde_json::json!({"name": "shop", "git_repo": "http://github.com/a/b"}),
                "git_repo:",
            ),
            (
                serde_json::json!({"name": "shop", "git_repo": "https://u:p@github.com/a/b"}),
                "git_repo:",
            ),
            (
                serde_json::json!({"name": "shop", "git_repo": "https://github.com/a/b", "git_ref": "a..b"}),
                "git_ref:",
            ),
            (
                serde_json::json!({"name": "shop", "git_repo": "https://github.com/a/b", "build": {"context_dir": "../x"}}),
                "build.context_dir:",
            ),
            (
                serde_json::json!({"name": "shop", "git_repo": "https://github.com/a/b", "build": {"strategy": "nix"}}),
                "build.strategy:",
            ),
            (
                serde_json::json!({"name": "shop", "git_repo": "https://github.com/a/b", "build": {"strategy": "buildpacks", "dockerfile": "D"}}),
                "build.dockerfile:",
            ),
            (
                serde_json::json!({"name": "shop", "git_repo": "https://github.com/a/b", "git_secret": "Not_A_Name"}),
                "git_secret:",
            ),
            (
                serde_json::json!({"name": "shop", "image": "nginx", "git_ref": "main"}),
                "git_repo:",
            ),
        ] {
            let error = detail(create(body.clone()).expect_err("invalid"));
            assert!(error.starts_with(field), "{body}: {error}");
        }
    }

    #[test]
    fn updates_set_and_remove_the_source() {
        let image_app = config(serde_json::json!({"name": "shop", "image": "nginx"}));
        let with_source = update(
            &image_app,
            serde_json::json!({"git_repo": "https://github.com/acme/shop"}),
        )
        .expect("a source added");
        assert_eq!(with_source.image.as_ref().map(Stored::text), Some("nginx"));
        assert!(permissions_for(&image_app, &with_source).contains(&Permission::AppDeploy));
        let new_ref = update(&with_source, serde_json::json!({"git_ref": "v2"})).expect("a ref");
        assert_eq!(
            new_ref.source.as_ref().and_then(|s| s.git_ref.as_deref()),
            Some("v2")
        );
        assert!(permissions_for(&with_source, &new_ref).contains(&Permission::AppDeploy));
        assert!(!permissions_for(&with_source, &new_ref).contains(&Permission::AppWrite));
        let default_branch = update(&new_ref, serde_json::json!({"git_ref": null})).expect("reset");
        assert_eq!(
            default_branch
                .source
                .as_ref()
                .and_then(|s| s.git_ref.clone()),
            None
        );
        let removed = update(&new_ref, serde_json::json!({"git_repo": null})).expect("removed");
        assert_eq!(removed.source, None);

        let source_only =
            config(serde_json::json!({"name": "shop", "git_repo": "https://github.com/acme/shop"}));
        let error = detail(
            update(&source_only, serde_json::json!({"git_repo": null})).expect_err("neither"),
        );
        assert!(error.starts_with("image:"), "{error}");
        let error = detail(
            update(&image_app, serde_json::json!({"git_secret": "s"})).expect_err("no repo"),
        );
        assert!(error.starts_with("git_repo:"), "{error}");
    }
}
