//! Builds as the controller runs them: Build resources made as the API makes
//! them (here with the administrator's client), their Jobs in
//! `berth-builds`, the pods ended by the test playing the kubelet, and what
//! becomes of the Build and its App.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, PostParams};

use berth_cluster::crd::{
    App, AppSpec, BUILD_CANCELLED, BUILD_FAILED, BUILD_QUEUED, BUILD_RUNNING, BUILD_SUCCEEDED,
    BUILDS_NAMESPACE, Build, BuildSpec, Environment, LABEL_APP, LABEL_APP_UID, LABEL_BUILD,
    LABEL_ENVIRONMENT, LABEL_MANAGED_BY, LABEL_ORG, LABEL_PROJECT, MANAGER, ReleaseMark,
    object_names,
};
use berth_cluster::registry::{self, Credential, Registry};
use berth_domain::app::{AppConfig, AppProcess, AppSource, BuildSettings, BuildStrategy};
use berth_domain::stored::Stored;

use crate::support::cluster::hold_registry_settings_for_the_test;
use crate::support::kubelet::{BuildEnd, end_build_pods};
use crate::support::{TestApp, eventually};

pub(crate) const PREFIX: &str = "registry.berth.test/apps";
const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";

fn digest(fill: &str) -> String {
    format!("sha256:{}", fill.repeat(64 / fill.len()))
}

/// The test registry, as `berth-admin registry set --shared` writes it (the
/// upgrade's first step: these tests pin the shared credentials' path;
/// `registry_tokens` the scoped ones).
pub(crate) async fn set_registry(client: &kube::Client) {
    set_shared(client, "pusher\npush-s3cret\npuller\npull-s3cret\n").await;
}

/// The shared credentials of `input` (two or four lines), as `berth-admin
/// registry set --shared` reads them.
async fn set_shared(client: &kube::Client, input: &str) {
    hold_registry_settings_for_the_test(&format!("shared {PREFIX} {input}")).await;
    let registry = Registry::parse(PREFIX, "registry.berth.test").expect("well formed");
    let (push, pull) = Credential::parse_input(input).expect("two or four lines");
    registry::set(
        client,
        &registry,
        registry::Credentials::Shared {
            push: &push,
            pull: pull.as_ref(),
        },
    )
    .await
    .expect("the registry is set");
}

/// A Secret `name` of `namespace` with one key, `token`, as a git secret
/// has it (made with the administrator's client); as written.
pub(crate) async fn token_secret(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    token: &str,
) -> Secret {
    Api::<Secret>::namespaced(client.clone(), namespace)
        .create(
            &PostParams::default(),
            &Secret {
                metadata: kube::api::ObjectMeta {
                    name: Some(name.to_owned()),
                    ..Default::default()
                },
                string_data: Some(BTreeMap::from([("token".to_owned(), token.to_owned())])),
                ..Default::default()
            },
        )
        .await
        .expect("a Secret with a token")
}

/// An environment (made after the registry is set, so its namespace gets
/// the pull credential) and an App built from source with no image yet,
/// made in it as the API makes Apps.
struct Fixture {
    client: kube::Client,
    namespace: String,
    environment: Environment,
    app: App,
}

impl Fixture {
    async fn new(test: &TestApp, registry: bool, git_secret: Option<&str>) -> Self {
        let client = test.cluster().client.clone();
        if registry {
            set_registry(&client).await;
        }
        let project = test.ready_environment("build", "dev").await;
        let namespace = format!("{project}-dev");
        let environment = Api::<Environment>::all(client.clone())
            .get(&namespace)
            .await
            .expect("the environment");
        let mut config = AppConfig::test(vec![AppProcess::test("web", Some(8080))]);
        config.image = None;
        config.source = Some(source(git_secret));
        let mut app = App::new(
            "shop",
            AppSpec {
                unrecorded: Vec::new(),
                config,
                release: ReleaseMark::test(),
                restarted_at: None,
                decision: None,
            },
        );
        app.metadata.namespace = Some(namespace.clone());
        app.metadata.labels = Some(BTreeMap::from([
            (LABEL_ORG.to_owned(), environment.spec.org.clone()),
            (LABEL_PROJECT.to_owned(), project.clone()),
            (LABEL_ENVIRONMENT.to_owned(), "dev".to_owned()),
            (LABEL_MANAGED_BY.to_owned(), MANAGER.to_owned()),
        ]));
        let app = Api::<App>::namespaced(client.clone(), &namespace)
            .create(&PostParams::default(), &app)
            .await
            .expect("the App is made");
        Self {
            client,
            namespace,
            environment,
            app,
        }
    }

    fn builds(&self) -> Api<Build> {
        Api::namespaced(self.client.clone(), BUILDS_NAMESPACE)
    }

    fn apps(&self) -> Api<App> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    /// Build `number` of the app, as the API makes it.
    async fn create_build(&self, number: i64, app_uid: Option<&str>) -> Build {
        let uid = app_uid
            .map(str::to_owned)
            .unwrap_or_else(|| self.app.uid().expect("a stored App"));
        let spec = &self.environment.spec;
        let mut build = Build::new(
            &object_names::build(&self.namespace, "shop", number),
            BuildSpec {
                org: spec.org.clone(),
                project: spec.project.clone(),
                environment: "dev".to_owned(),
                namespace: self.namespace.clone(),
                app: "shop".to_owned(),
                app_uid: uid.clone(),
                number,
                source: self.app.spec.config.source.clone().expect("a source"),
                actor: Some("dev@berth.test".to_owned()),
                created_at: berth_domain::clock::unix_millis(),
                decision: None,
                branch: None,
                hook: None,
                cancel: None,
            },
        );
        build.metadata.labels = Some(BTreeMap::from([
            (LABEL_MANAGED_BY.to_owned(), MANAGER.to_owned()),
            (LABEL_ORG.to_owned(), spec.org.clone()),
            (LABEL_PROJECT.to_owned(), spec.project.clone()),
            (LABEL_ENVIRONMENT.to_owned(), "dev".to_owned()),
            (LABEL_APP.to_owned(), "shop".to_owned()),
            (LABEL_APP_UID.to_owned(), uid),
        ]));
        self.builds()
            .create(&PostParams::default(), &build)
            .await
            .expect("the Build is made")
    }

    async fn build(&self, number: i64) -> Option<Build> {
        self.builds()
            .get_opt(&object_names::build(&self.namespace, "shop", number))
            .await
            .expect("reading a Build")
    }

    /// Waits until build `number` is in `phase`, and returns it.
    async fn until_phase(&self, number: i64, phase: &str) -> Build {
        eventually(&format!("build {number} is {phase}"), || async {
            self.build(number).await.is_some_and(|b| b.phase() == phase)
        })
        .await;
        self.build(number).await.expect("the Build")
    }

    /// Ends build `number`'s pod as `end` says, once its Job made one.
    async fn end_build(&self, number: i64, end: BuildEnd<'_>) {
        let selector = format!(
            "{LABEL_APP_UID}={},{LABEL_BUILD}={number}",
            self.app.uid().expect("a stored App")
        );
        eventually(&format!("build {number}'s pod ends"), || async {
            end_build_pods(&self.client, BUILDS_NAMESPACE, &selector, &end).await > 0
        })
        .await;
    }

    async fn deployments(&self) -> Vec<Deployment> {
        Api::<Deployment>::namespaced(self.client.clone(), &self.namespace)
            .list(&ListParams::default().labels(&format!("{LABEL_APP}=shop")))
            .await
            .expect("listing Deployments")
            .items
    }

    async fn app_now(&self) -> App {
        self.apps().get("shop").await.expect("the App")
    }

    async fn until_reason(&self, reason: &str, message_has: &str) -> App {
        eventually(&format!("the app is {reason} ({message_has})"), || async {
            let app = self.app_now().await;
            app.status.as_ref().is_some_and(|status| {
                status.reason.as_deref() == Some(reason)
                    && status
                        .message
                        .as_deref()
                        .is_some_and(|message| message.contains(message_has))
            })
        })
        .await;
        self.app_now().await
    }
}

fn source(git_secret: Option<&str>) -> AppSource {
    AppSource {
        git_repo: "https://git.berth.test/acme/shop.git".to_owned(),
        git_ref: Some("main".to_owned()),
        build: BuildSettings {
            strategy: BuildStrategy::Auto,
            context_dir: None,
            dockerfile: None,
        },
        git_secret: git_secret.map(str::to_owned),
    }
}

/// An app from source renders nothing until its first build succeeds; the
/// build runs as a Job with the app's git credential copied for it alone;
/// its result becomes the app's next revision, pinned by digest, whose
/// pods name the registry's pull credential (copied into the namespace).
#[tokio::test]
async fn a_successful_build_becomes_the_apps_next_revision_pinned_by_digest() {
    crate::support::logs::capture();
    let test = TestApp::with_cluster().await;
    let fixture = Fixture::new(&test, true, Some("git-token")).await;
    let secrets = |namespace: &str| Api::<Secret>::namespaced(fixture.client.clone(), namespace);
    token_secret(
        &fixture.client,
        &fixture.namespace,
        "git-token",
        "ghp-sentinel-s3cret",
    )
    .await;

    let awaiting = fixture
        .until_reason("AwaitingBuild", "awaits its first build")
        .await;
    assert!(!awaiting.status.unwrap().ready);
    assert!(fixture.deployments().await.is_empty(), "nothing rendered");
    // The namespace has the registry's pull credential, as Berth copied it.
    let pull = secrets(&fixture.namespace)
        .get(registry::PULL_SECRET)
        .await
        .expect("the pull credential is copied");
    assert_eq!(pull.type_.as_deref(), Some(registry::DOCKER_CONFIG_TYPE));
    let pulled =
        String::from_utf8(pull.data.unwrap()[registry::DOCKER_CONFIG_KEY].0.clone()).expect("JSON");
    assert!(pulled.contains("puller") && !pulled.contains("pusher"));

    let build = fixture.create_build(1, None).await;
    let running = fixture.until_phase(1, BUILD_RUNNING).await;
    let job_name = object_names::build_job(&build.name_any());
    assert_eq!(
        running.status.as_ref().unwrap().job.as_deref(),
        Some(job_name.as_str())
    );
    fixture
        .until_reason("AwaitingBuild", "build 1 is running")
        .await;
    let job = Api::<Job>::namespaced(fixture.client.clone(), BUILDS_NAMESPACE)
        .get(&job_name)
        .await
        .expect("the build's Job");
    let owner = &job.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.controller),
        ("Build", Some(true))
    );
    assert_eq!(Some(owner.uid.clone()), running.uid());
    // The credential's copy: owned by the Build, read by the clone step only.
    let copy = secrets(BUILDS_NAMESPACE)
        .get(&job_name)
        .await
        .expect("the git credential's copy");
    assert_eq!(
        copy.metadata.owner_references.unwrap()[0].uid,
        running.uid().unwrap()
    );
    // Recorded by its uid, which the deletion at the end is held to.
    assert_eq!(
        running.status.as_ref().unwrap().credential,
        copy.metadata.uid
    );
    let pod = job.spec.unwrap().template.spec.unwrap();
    no_step_that_runs_tenant_code_can_read_the_push_credential(&pod);
    let readers: Vec<String> = pod
        .init_containers
        .iter()
        .flatten()
        .chain(&pod.containers)
        .filter(|c| {
            c.env.iter().flatten().any(|var| {
                var.value_from
                    .as_ref()
                    .and_then(|from| from.secret_key_ref.as_ref())
                    .is_some_and(|key| key.name == job_name)
            })
        })
        .map(|c| c.name.clone())
        .collect();
    assert_eq!(readers, ["source"]);

    let pushed = digest("ab");
    fixture
        .end_build(
            1,
            BuildEnd::Pushed {
                commit: COMMIT,
                strategy: "dockerfile",
                digest: &pushed,
            },
        )
        .await;
    let done = fixture.until_phase(1, BUILD_SUCCEEDED).await;
    let status = done.status.unwrap();
    let spec = &fixture.environment.spec;
    let image = format!("{PREFIX}/{}/{}/shop@{pushed}", spec.org, spec.project);
    assert_eq!(status.image.as_deref(), Some(image.as_str()));
    assert_eq!(status.commit.as_deref(), Some(COMMIT));
    assert_eq!(status.strategy, Some(BuildStrategy::Dockerfile));
    assert_eq!(status.revision, Some(2));
    assert!(status.finished_at.is_some() && status.started_at.is_some());

    let app = fixture.app_now().await;
    assert_eq!(
        app.spec.config.image.as_ref().map(Stored::text),
        Some(image.as_str())
    );
    let release = &app.spec.release;
    assert_eq!(release.revision, 2);
    assert_eq!(release.reason, "deploy");
    assert_eq!(release.note.as_deref(), Some("build 1 of 0123456789ab"));
    assert_eq!(release.actor.as_deref(), Some("dev@berth.test"));
    assert_eq!(app.spec.config.source, fixture.app.spec.config.source);

    // It runs now, pulling with the registry's credential.
    eventually("the app's Deployment is rendered", || async {
        !fixture.deployments().await.is_empty()
    })
    .await;
    let deployment = fixture.deployments().await.remove(0);
    let pod = deployment.spec.unwrap().template.spec.unwrap();
    assert_eq!(pod.containers[0].image.as_deref(), Some(image.as_str()));
    assert_eq!(
        pod.image_pull_secrets.unwrap()[0].name,
        registry::PULL_SECRET
    );
    // The credential's copy is gone with the build's end.
    eventually("the git credential's copy is deleted", || async {
        secrets(BUILDS_NAMESPACE)
            .get_opt(&job_name)
            .await
            .is_ok_and(|secret| secret.is_none())
    })
    .await;
    // Nowhere in what the build wrote, its Events or the log is the
    // credential's value.
    let said = serde_json::to_string(&fixture.build(1).await.unwrap()).unwrap();
    assert!(!said.contains("sentinel"));
    let events = Api::<k8s_openapi::api::events::v1::Event>::namespaced(
        fixture.client.clone(),
        BUILDS_NAMESPACE,
    )
    .list(&ListParams::default())
    .await
    .expect("the builds' Events");
    let notes: Vec<String> = events.items.into_iter().filter_map(|e| e.note).collect();
    assert!(notes.iter().any(|note| note.contains(&image)), "{notes:?}");
    assert!(notes.iter().all(|note| !note.contains("sentinel")));
    assert!(!crate::support::logs::captured().contains("ghp-sentinel-s3cret"));
}

/// A git secret the environment does not have fails the build at once,
/// naming the secret.
#[tokio::test]
async fn a_missing_git_secret_fails_the_build_naming_it() {
    let test = TestApp::with_cluster().await;
    let fixture = Fixture::new(&test, true, Some("deploy-key")).await;
    fixture.create_build(1, None).await;
    let failed = fixture.until_phase(1, BUILD_FAILED).await;
    assert_eq!(
        failed.status.unwrap().message.as_deref(),
        Some(
            "The build failed: the git secret deploy-key is not a secret of the app's environment"
        )
    );
}

/// A failed build says why (its failed step's output) and changes nothing of
/// the app, which still awaits a build that succeeds and says why not.
#[tokio::test]
async fn a_failed_build_says_why_and_leaves_the_app_as_it_was() {
    let test = TestApp::with_cluster().await;
    let fixture = Fixture::new(&test, true, None).await;
    fixture.create_build(1, None).await;
    fixture.until_phase(1, BUILD_RUNNING).await;
    fixture
        .end_build(
            1,
            BuildEnd::Failed {
                step: "dockerfile",
                message: "ERROR: failed to solve: process \"/bin/sh -c make\" did not complete successfully: exit code: 2",
            },
        )
        .await;
    let failed = fixture.until_phase(1, BUILD_FAILED).await;
    let status = failed.status.unwrap();
    assert_eq!(
        status.message.as_deref(),
        Some(
            "The build failed: step dockerfile failed: ERROR: failed to solve: process \"/bin/sh -c make\" did not complete successfully: exit code: 2"
        )
    );
    assert_eq!(status.image, None);
    assert_eq!(status.revision, None);
    let app = fixture
        .until_reason("AwaitingBuild", "build 1 failed")
        .await;
    assert_eq!(app.spec, fixture.app.spec, "the App is untouched");
    assert!(fixture.deployments().await.is_empty());
}

/// One build of an app runs at a time: a second waits for the first; a
/// third cancels the second, and starts once the first has ended.
#[tokio::test]
async fn one_build_runs_per_app_and_a_newer_one_cancels_the_queued() {
    let test = TestApp::with_cluster().await;
    let fixture = Fixture::new(&test, true, None).await;
    fixture.create_build(1, None).await;
    fixture.until_phase(1, BUILD_RUNNING).await;
    fixture.create_build(2, None).await;
    eventually("build 2 waits for build 1", || async {
        fixture.build(2).await.is_some_and(|build| {
            build.phase() == BUILD_QUEUED
                && build.status.and_then(|s| s.message).as_deref()
                    == Some("waiting for build 1 of this app to finish")
        })
    })
    .await;
    fixture.create_build(3, None).await;
    let cancelled = fixture.until_phase(2, BUILD_CANCELLED).await;
    assert_eq!(
        cancelled.status.unwrap().message.as_deref(),
        Some("cancelled: build 3 was asked for after it")
    );
    assert_eq!(fixture.build(3).await.unwrap().phase(), BUILD_QUEUED);
    let jobs = Api::<Job>::namespaced(fixture.client.clone(), BUILDS_NAMESPACE);
    let job_of = |number: i64| {
        object_names::build_job(&object_names::build(&fixture.namespace, "shop", number))
    };
    assert!(jobs.get_opt(&job_of(2)).await.unwrap().is_none());
    fixture
        .end_build(
            1,
            BuildEnd::Failed {
                step: "source",
                message: "fatal: couldn't find remote ref main",
            },
        )
        .await;
    fixture.until_phase(1, BUILD_FAILED).await;
    fixture.until_phase(3, BUILD_RUNNING).await;
    assert!(jobs.get_opt(&job_of(3)).await.unwrap().is_some());
}

/// A Build of an App that is gone, or of another App of that name (another
/// uid), is removed.
#[tokio::test]
async fn builds_of_an_app_that_is_gone_are_removed() {
    let test = TestApp::with_cluster().await;
    let fixture = Fixture::new(&test, true, None).await;
    fixture.create_build(1, Some("not-this-apps-uid")).await;
    eventually("the Build of another App is removed", || async {
        fixture.build(1).await.is_none()
    })
    .await;
    fixture.create_build(2, None).await;
    fixture.until_phase(2, BUILD_RUNNING).await;
    fixture
        .apps()
        .delete("shop", &DeleteParams::default())
        .await
        .expect("the App is deleted");
    eventually("the Build of the deleted App is removed", || async {
        fixture.build(2).await.is_none()
    })
    .await;
}

/// Without the registry's settings, a build fails at once, saying what the
/// operator must run. (The settings are the cluster's: on a shared real
/// cluster other tests set them.)
#[tokio::test]
#[cfg_attr(
    berth_real_cluster,
    ignore = "the registry's ConfigMap is cluster-wide, and other tests set it"
)]
async fn without_a_registry_a_build_fails_saying_what_to_run() {
    let test = TestApp::with_cluster().await;
    let fixture = Fixture::new(&test, false, None).await;
    let configured =
        Api::<ConfigMap>::namespaced(fixture.client.clone(), registry::SYSTEM_NAMESPACE)
            .get_opt(registry::CONFIG_MAP)
            .await
            .unwrap();
    assert!(configured.is_none());
    fixture.create_build(1, None).await;
    let failed = fixture.until_phase(1, BUILD_FAILED).await;
    assert_eq!(
        failed.status.unwrap().message.as_deref(),
        Some(
            "The build failed: no image registry is configured for builds: an operator must run `berth-admin registry set`"
        )
    );
    let jobs = Api::<Job>::namespaced(fixture.client.clone(), BUILDS_NAMESPACE);
    assert!(
        jobs.list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    assert_eq!(fixture.app_now().await.spec.release.revision, 1);
}

/// The Job as the cluster holds it: which steps mount which secret, and
/// what the tenant's steps (`dockerfile`, `buildpacks`) can read.
fn no_step_that_runs_tenant_code_can_read_the_push_credential(
    pod: &k8s_openapi::api::core::v1::PodSpec,
) {
    let volumes = pod.volumes.as_ref().expect("volumes");
    let of_secret = |secret: &str| -> Vec<String> {
        volumes
            .iter()
            .filter(|v| {
                v.secret.as_ref().and_then(|s| s.secret_name.as_deref()) == Some(secret)
                    || v.projected.as_ref().is_some_and(|p| {
                        p.sources.iter().flatten().any(|source| {
                            source.secret.as_ref().map(|s| s.name.as_str()) == Some(secret)
                        })
                    })
            })
            .map(|v| v.name.clone())
            .collect()
    };
    let push_volumes = of_secret(registry::PUSH_SECRET);
    let pull_volumes = of_secret(registry::PULL_SECRET);
    assert_eq!(push_volumes.len(), 1);
    let mounting = |names: &[String]| -> Vec<String> {
        pod.init_containers
            .iter()
            .flatten()
            .chain(&pod.containers)
            .filter(|c| {
                c.volume_mounts
                    .iter()
                    .flatten()
                    .any(|m| names.contains(&m.name))
            })
            .map(|c| c.name.clone())
            .collect()
    };
    assert_eq!(mounting(&push_volumes), ["push"]);
    assert_eq!(mounting(&pull_volumes), ["run-image", "dockerfile"]);
    for container in pod.init_containers.iter().flatten() {
        if !["dockerfile", "buildpacks"].contains(&container.name.as_str()) {
            continue;
        }
        // Neither a secret in its environment nor one by reference.
        assert!(container.env_from.is_none(), "{}", container.name);
        for var in container.env.iter().flatten() {
            assert!(var.value_from.is_none(), "{}: {}", container.name, var.name);
            assert!(
                !var.value
                    .as_deref()
                    .unwrap_or_default()
                    .contains("/berth/push"),
                "{}: {}",
                container.name,
                var.name
            );
        }
    }
}

#[tokio::test]
#[cfg_attr(
    berth_real_cluster,
    ignore = "sets the registry with two lines, which the cluster's other tests set with four"
)]
async fn builds_pull_with_a_pull_only_credential_or_anonymously() {
    let test = TestApp::with_cluster().await;
    let client = test.cluster().client.clone();
    let secrets = Api::<Secret>::namespaced(client.clone(), BUILDS_NAMESPACE);
    set_registry(&client).await;
    let copy = secrets
        .get(registry::PULL_SECRET)
        .await
        .expect("the builds' pull credential");
    let config =
        String::from_utf8(copy.data.unwrap()[registry::DOCKER_CONFIG_KEY].0.clone()).expect("JSON");
    assert!(config.contains("puller") && !config.contains("pusher"));
    // Without a pull-only credential, builds get none (never the push one).
    set_shared(&client, "pusher\npush-s3cret\n").await;
    assert!(
        secrets
            .get_opt(registry::PULL_SECRET)
            .await
            .expect("reading")
            .is_none()
    );
}
