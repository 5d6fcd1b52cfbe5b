//! The note of a configuration change's release: what changed, in a few
//! words ("set WELCOME; unset OLD"), as Heroku's config releases say it —
//! names only, never a value.

use std::collections::BTreeMap;

use berth_domain::app::AppConfig;

/// The longest note a change writes (a release's note is for reading at a
/// glance; `releases` shows it in a column).
const LONGEST: usize = 200;

/// What `after` changes of `before`, or none when nothing named here did.
pub fn config_note(before: &AppConfig, after: &AppConfig) -> Option<String> {
    let mut said = Vec::new();

    let old_env: BTreeMap<&str, _> = before.env.iter().map(|e| (e.name.as_str(), e)).collect();
    let new_env: BTreeMap<&str, _> = after.env.iter().map(|e| (e.name.as_str(), e)).collect();
    let set: Vec<&str> = new_env
        .iter()
        .filter(|(name, entry)| old_env.get(*name) != Some(*entry))
        .map(|(name, _)| *name)
        .collect();
    let unset: Vec<&str> = old_env
        .keys()
        .filter(|name| !new_env.contains_key(*name))
        .copied()
        .collect();
    if !set.is_empty() {
        said.push(format!("set {}", set.join(", ")));
    }
    if !unset.is_empty() {
        said.push(format!("unset {}", unset.join(", ")));
    }

    let hosts = |config: &AppConfig| -> Vec<String> {
        config.domains.iter().map(ToString::to_string).collect()
    };
    let (old_hosts, new_hosts) = (hosts(before), hosts(after));
    let added: Vec<&str> = (new_hosts.iter())
        .filter(|host| !old_hosts.contains(host))
        .map(String::as_str)
        .collect();
    let removed: Vec<&str> = (old_hosts.iter())
        .filter(|host| !new_hosts.contains(host))
        .map(String::as_str)
        .collect();
    if !added.is_empty() {
        said.push(format!("add domain {}", added.join(", ")));
    }
    if !removed.is_empty() {
        said.push(format!("remove domain {}", removed.join(", ")));
    }

    for process in &after.processes {
        match before.processes.iter().find(|p| p.name == process.name) {
            None => said.push(format!("add process {}", process.name)),
            Some(old) => {
                let replicas = |p: &berth_domain::app::AppProcess| {
                    if p.min_replicas == p.max_replicas {
                        p.min_replicas.to_string()
                    } else {
                        format!("{}-{}", p.min_replicas, p.max_replicas)
                    }
                };
                if replicas(old) != replicas(process) {
                    said.push(format!("scale {} to {}", process.name, replicas(process)));
                }
                if old.size.to_string() != process.size.to_string() {
                    said.push(format!("size {} {}", process.name, process.size));
                }
                if old.command != process.command
                    || old.port != process.port
                    || old.schedule != process.schedule
                {
                    said.push(format!("change process {}", process.name));
                }
            }
        }
    }
    for process in &before.processes {
        if !after.processes.iter().any(|p| p.name == process.name) {
            said.push(format!("remove process {}", process.name));
        }
    }

    let others = [
        (before.volumes != after.volumes, "volumes"),
        (
            before.health_check_path != after.health_check_path,
            "health check",
        ),
        (
            before.release_command != after.release_command,
            "release command",
        ),
        (before.auto_rollback != after.auto_rollback, "auto rollback"),
        (before.fs_group != after.fs_group, "fs group"),
    ];
    let others: Vec<&str> = others
        .iter()
        .filter(|(changed, _)| *changed)
        .map(|(_, what)| *what)
        .collect();
    if !others.is_empty() {
        said.push(format!("change {}", others.join(", ")));
    }

    if said.is_empty() {
        return None;
    }
    let mut note = said.join("; ");
    if note.len() > LONGEST {
        let mut end = LONGEST - 1;
        while !note.is_char_boundary(end) {
            end -= 1;
        }
        note.truncate(end);
        note.push('…');
    }
    Some(note)
}
