//! The names of the objects an app renders to, by kind, without rendering
//! it: so that a change can be refused before it makes two apps of one
//! environment render the same object (app `db` with volume `data-x` and app
//! `db-data` with volume `x` would share the claim `db-data-x`). Names come
//! from the same [`object_names`] functions the controller's renderer uses,
//! and a test of the renderer holds the two together.

use std::collections::BTreeSet;
use std::fmt;

use berth_domain::protocol::Protocol;

use crate::crd::object_names;
use berth_domain::app::AppConfig;

/// The kinds an app renders to. Two names clash only within one kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ObjectKind {
    Deployment,
    Service,
    HorizontalPodAutoscaler,
    CronJob,
    Ingress,
    PersistentVolumeClaim,
}

impl ObjectKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ObjectKind::Deployment => "Deployment",
            ObjectKind::Service => "Service",
            ObjectKind::HorizontalPodAutoscaler => "HorizontalPodAutoscaler",
            ObjectKind::CronJob => "CronJob",
            ObjectKind::Ingress => "Ingress",
            ObjectKind::PersistentVolumeClaim => "PersistentVolumeClaim",
        }
    }
}

impl fmt::Display for ObjectKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What `render` makes of app `app` with `config`, by kind and name. The
/// Ingress is counted whenever the app has a web process (render makes it
/// only when the app also has a host), which is more than needed but never
/// less: an Ingress is named after its app, so it clashes with no other.
pub fn rendered_names(app: &str, config: &AppConfig) -> BTreeSet<(ObjectKind, String)> {
    let mut names = BTreeSet::new();
    for process in &config.processes {
        let name = object_names::workload(app, &process.name);
        if process.is_scheduled() {
            names.insert((ObjectKind::CronJob, name));
            continue;
        }
        if process.port.is_some() {
            names.insert((ObjectKind::Service, name.clone()));
            if process.protocol == Protocol::Http {
                names.insert((ObjectKind::Ingress, object_names::ingress(app)));
            }
        }
        if process.min_replicas >= 1 && process.max_replicas > process.min_replicas {
            names.insert((ObjectKind::HorizontalPodAutoscaler, name.clone()));
        }
        names.insert((ObjectKind::Deployment, name));
    }
    for volume in &config.volumes {
        names.insert((
            ObjectKind::PersistentVolumeClaim,
            object_names::claim(app, volume.name.text()),
        ));
    }
    names
}

/// An object two apps would both render.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clash {
    pub kind: ObjectKind,
    pub name: String,
    /// The app that renders it already.
    pub other_app: String,
}

impl fmt::Display for Clash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} is already rendered by app {}",
            self.kind, self.name, self.other_app
        )
    }
}

/// The first object (by kind, then name) that app `app` with `config`
/// would render and one of `others` (name, configuration) renders already.
pub fn first_clash<'a>(
    app: &str,
    config: &AppConfig,
    others: impl IntoIterator<Item = (&'a str, &'a AppConfig)>,
) -> Option<Clash> {
    let mine = rendered_names(app, config);
    others
        .into_iter()
        .filter(|(other, _)| *other != app)
        .flat_map(|(other, other_config)| {
            rendered_names(other, other_config)
                .intersection(&mine)
                .map(|(kind, name)| Clash {
                    kind: *kind,
                    name: name.clone(),
                    other_app: other.to_owned(),
                })
                .collect::<Vec<_>>()
        })
        .min_by(|a, b| (a.kind, &a.name).cmp(&(b.kind, &b.name)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_domain::app::{AppProcess, AppVolume};
    use berth_domain::stored::Stored;

    fn volume(name: &str) -> AppVolume {
        AppVolume::test(name, &format!("/{name}"), "1Gi")
    }

    fn config(processes: Vec<AppProcess>, volumes: Vec<AppVolume>) -> AppConfig {
        AppConfig {
            volumes,
            ..AppConfig::test(processes)
        }
    }

    #[test]
    fn the_issues_two_examples_clash() {
        let db = config(vec![AppProcess::test("main", None)], vec![volume("data-x")]);
        let db_data = config(vec![AppProcess::test("main", None)], vec![volume("x")]);
        assert_eq!(
            first_clash("db-data", &db_data, [("db", &db)]).map(|c| c.to_string()),
            Some("PersistentVolumeClaim db-data-x is already rendered by app db".to_owned())
        );
        let shop_web = config(vec![AppProcess::test("x", Some(80))], Vec::new());
        let shop = config(vec![AppProcess::test("web-x", Some(80))], Vec::new());
        assert_eq!(
            first_clash("shop", &shop, [("shop-web", &shop_web)]).map(|c| c.to_string()),
            Some("Deployment shop-web-x is already rendered by app shop-web".to_owned())
        );
    }

    #[test]
    fn names_clash_only_within_a_kind_and_between_two_apps() {
        // App `shop-web`'s Ingress `shop-web` and app `shop`'s Deployment
        // and Service `shop-web`.
        let shop_web = config(vec![AppProcess::test("x", Some(80))], Vec::new());
        let shop = config(vec![AppProcess::test("web", Some(80))], Vec::new());
        assert_eq!(first_clash("shop", &shop, [("shop-web", &shop_web)]), None);
        // A CronJob and a Deployment of one name.
        let mut job = AppProcess::test("x", None);
        job.schedule = Some(Stored::read("0 3 * * *"));
        let scheduled = config(vec![job], Vec::new());
        let always_on = config(vec![AppProcess::test("web-x", None)], Vec::new());
        assert_eq!(
            first_clash("shop", &always_on, [("shop-web", &scheduled)]),
            None
        );
        // An app never clashes with itself.
        assert_eq!(first_clash("shop", &shop, [("shop", &shop)]), None);
    }
}
