//! Fixtures the tests of every crate build from: App resources as the API
//! makes them, in one place (feature `test-support`, which only
//! dev-dependencies turn on; no binary links it).
//!
//! `App::test("shop", AppConfig::test(vec![AppProcess::test("web", Some(8080))]))`
//! (the configurations from `berth_domain::app::testing`)
//! is app `shop` of organization `acme`, project `store`, environment `prod`
//! (namespace `store-prod`), labelled as the API labels it; change what a
//! test is about on the value it returns.

use std::collections::BTreeMap;

use berth_domain::app::AppConfig;

use crate::crd::{
    App, AppSpec, LABEL_ENVIRONMENT, LABEL_MANAGED_BY, LABEL_ORG, LABEL_PROJECT, MANAGER,
    ReleaseMark,
};

/// The uid [`App::stored`] gives an App.
pub const APP_UID: &str = "0b7c4a39-8b5b-4f7e-9b71-1c0ad1a1f001";

impl ReleaseMark {
    /// Revision 1, made by a create.
    pub fn test() -> Self {
        Self {
            revision: 1,
            reason: "create".to_owned(),
            note: None,
            actor: None,
            created_at: 0,
            automatic_rollback_of: None,
        }
    }
}

impl App {
    /// App `name` of organization `acme`, project `store`, environment
    /// `prod`, as the API makes it: in namespace `store-prod`, with Berth's
    /// labels, at revision 1; not yet stored (no uid, see [`Self::stored`]).
    pub fn test(name: &str, config: AppConfig) -> Self {
        let app = App::new(
            name,
            AppSpec {
                unrecorded: Vec::new(),
                config,
                release: ReleaseMark::test(),
                restarted_at: None,
                decision: None,
            },
        );
        app.in_environment("acme", "store", "prod")
    }

    /// The same app in `environment` of `project` of `org` (namespace
    /// `{project}-{environment}`).
    pub fn in_environment(mut self, org: &str, project: &str, environment: &str) -> Self {
        self.metadata.namespace = Some(format!("{project}-{environment}"));
        self.metadata.labels = Some(BTreeMap::from([
            (LABEL_ORG.to_owned(), org.to_owned()),
            (LABEL_PROJECT.to_owned(), project.to_owned()),
            (LABEL_ENVIRONMENT.to_owned(), environment.to_owned()),
            (LABEL_MANAGED_BY.to_owned(), MANAGER.to_owned()),
        ]));
        self
    }

    /// As the apiserver gives it back once stored: with [`APP_UID`].
    pub fn stored(mut self) -> Self {
        self.metadata.uid = Some(APP_UID.to_owned());
        self
    }
}
