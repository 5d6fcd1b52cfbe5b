//! App configurations for the tests of every crate (feature
//! `test-support`, which only dev-dependencies turn on; no binary links it).
//! Values are read as a resource stores them ([`Stored::read`]), so a test
//! may give one the API would refuse.

use super::{AppConfig, AppProcess, AppVolume};
use crate::stored::Stored;

/// The image of [`AppConfig::test`].
pub const IMAGE: &str = "ghcr.io/acme/shop:1.2.3";

impl AppProcess {
    /// An always-on `http` process of size `small` at one replica; with a
    /// port, a web process.
    pub fn test(name: &str, port: Option<i32>) -> Self {
        Self {
            name: name.to_owned(),
            command: Vec::new(),
            port,
            size: Stored::read("small"),
            min_replicas: 1,
            max_replicas: 1,
            schedule: None,
            time_zone: None,
            protocol: Stored::read("http"),
        }
    }
}

impl AppVolume {
    pub fn test(name: &str, mount_path: &str, size: &str) -> Self {
        Self {
            name: Stored::read(name),
            mount_path: Stored::read(mount_path),
            size: Stored::read(size),
        }
    }
}

impl AppConfig {
    /// [`IMAGE`] with these processes and nothing else.
    pub fn test(processes: Vec<AppProcess>) -> Self {
        Self {
            image: Some(Stored::read(IMAGE)),
            source: None,
            processes,
            env: Vec::new(),
            domains: Vec::new(),
            volumes: Vec::new(),
            health_check_path: None,
            fs_group: None,
            release_command: Vec::new(),
            auto_rollback: true,
        }
    }
}
