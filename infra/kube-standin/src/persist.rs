//! `--state-file`: the objects (and the resourceVersion counter) saved across restarts, for
//! local dev runs. Saved atomically (a temporary file renamed over the old one), at most every
//! `DEBOUNCE` while things change, and once more on shutdown. Watch history, pod logs and
//! faults are not saved.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::server::App;
use crate::store::ObjKey;
use crate::verbs::State;

const DEBOUNCE: Duration = Duration::from_millis(500);
/// Bumped if the layout changes; a file of another version is refused, not misread.
const FORMAT: u32 = 1;

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Saved<O> {
    format: u32,
    resource_version: u64,
    services_allocated: u64,
    objects: Vec<SavedObject<O>>,
    /// What each field manager last applied (server-side apply needs it to prune fields).
    applied: Vec<SavedApplied<O>>,
}

#[derive(Serialize, Deserialize)]
struct SavedObject<O> {
    group: String,
    resource: String,
    object: O,
}

#[derive(Serialize, Deserialize)]
struct SavedApplied<O> {
    group: String,
    resource: String,
    namespace: String,
    name: String,
    manager: String,
    config: O,
}

/// A consistent copy of the state, taken under the lock (cheap: objects are shared).
type Snapshot = Saved<Arc<Value>>;

fn snapshot(state: &State) -> Snapshot {
    Saved {
        format: FORMAT,
        resource_version: state.store.current_rv(),
        services_allocated: state.services_allocated,
        objects: state
            .store
            .all()
            .map(|(k, o)| SavedObject {
                group: k.group.clone(),
                resource: k.resource.clone(),
                object: o.clone(),
            })
            .collect(),
        applied: state
            .applied
            .iter()
            .map(|((k, manager), config)| SavedApplied {
                group: k.group.clone(),
                resource: k.resource.clone(),
                namespace: k.namespace.clone(),
                name: k.name.clone(),
                manager: manager.clone(),
                config: Arc::new(config.clone()),
            })
            .collect(),
    }
}

/// Writes the snapshot to a temporary file beside `path`, then renames it over `path`, so a
/// crash never leaves a half-written state file.
fn write_atomically(path: &Path, snapshot: &Snapshot) -> io::Result<()> {
    let json = serde_json::to_vec(snapshot).map_err(io::Error::other)?;
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(&tmp, json)?;
    std::fs::rename(&tmp, path)
}

/// Saves the state now.
pub fn save(app: &App, path: &Path) -> io::Result<()> {
    let snapshot = snapshot(&app.state());
    write_atomically(path, &snapshot)
}

/// Loads a state file into `state`, if the file exists. Objects are restored as saved (uids,
/// resourceVersions, timestamps); CRDs are registered again.
pub fn load(state: &mut State, path: &Path) -> io::Result<bool> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    };
    let saved: Saved<Value> = serde_json::from_slice(&bytes)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    if saved.format != FORMAT {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("state file format {} (expected {FORMAT})", saved.format),
        ));
    }
    let mut objects = Vec::with_capacity(saved.objects.len());
    for o in saved.objects {
        let namespace = crate::meta::meta_str(&o.object, "namespace")
            .unwrap_or_default()
            .to_string();
        let name = crate::meta::name(&o.object).to_string();
        objects.push((
            ObjKey::new(&o.group, &o.resource, &namespace, &name),
            o.object,
        ));
    }
    for (key, crd) in &objects {
        if key.group == crate::registry::CRD_GROUP
            && key.resource == crate::registry::CRD_RESOURCE
            && let Err(e) = state.registry.register_crd(crd)
        {
            tracing::warn!("state file: CRD {}: {e}", key.name);
        }
    }
    state.store.restore(saved.resource_version, objects);
    state.services_allocated = saved.services_allocated;
    state.applied = saved
        .applied
        .into_iter()
        .map(|a| {
            (
                (
                    ObjKey::new(&a.group, &a.resource, &a.namespace, &a.name),
                    a.manager,
                ),
                a.config,
            )
        })
        .collect();
    Ok(true)
}

/// Saves after changes, at most every `DEBOUNCE`, until the server stops.
pub async fn run_saver(app: App, path: PathBuf) {
    let mut changes = app.state().store.subscribe();
    loop {
        if changes.changed().await.is_err() {
            return;
        }
        tokio::time::sleep(DEBOUNCE).await;
        changes.borrow_and_update();
        let snapshot = snapshot(&app.state());
        let target = path.clone();
        let written =
            tokio::task::spawn_blocking(move || write_atomically(&target, &snapshot)).await;
        match written {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!("saving the state to {}: {e}", path.display()),
            Err(e) => tracing::warn!("saving the state: {e}"),
        }
    }
}
