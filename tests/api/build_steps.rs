//! Berth's own build steps, their scripts run for real as the Job runs
//! them (`sh -c SCRIPT`, here Debian's dash, every value in the
//! environment), with the real tools Debian packages: the `source` step
//! with Debian's git against repositories served over HTTP on loopback
//! (`git http-backend` behind the tests' CGI server); the `push` and
//! `result` steps with Debian's skopeo (the push image's own tool) against
//! Debian's `docker-registry` on loopback, pushing an OCI layout made with
//! umoci; the registry's answer (`skopeo inspect`) is the judge. The two
//! builders' own tools (BuildKit, the CNB lifecycle) exist only as images:
//! their steps' scripts run here with stand-ins for `buildctl-daemonless.sh`
//! and the lifecycle's phases that record how they were called and leave
//! what the real ones leave (an OCI layout, a report), so what is tested is
//! the script around them; the flags are checked against the tools'
//! sources at the pinned tags (see `build_engine`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use berth_cluster::registry::Credential;
use berth_controller::build_engine::layout::repository_layout_path;
use berth_controller::build_engine::{Pushed, built_digest, scripts};
use berth_domain::app::BuildStrategy;

use crate::support::git_http::{GIT, GitHttp};
use crate::support::registry::Registry;
use crate::support::{stdout_of, unique};

/// Debian's tools first: `git` is Debian's, `sh` is dash.
const PATH: &str = "/usr/bin:/bin";

/// A fresh directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(unique(name));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

/// Runs `script` as the Job does, with only `env` (and PATH) set.
async fn run(script: &str, path: &str, env: &[(&str, String)]) -> Output {
    tokio::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(script)
        .env_clear()
        .env("PATH", path)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .output()
        .await
        .expect("sh runs the step's script")
}

fn said(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

fn git(dir: &Path, args: &[&str]) -> String {
    stdout_of(
        Command::new(GIT)
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", dir)
            .args([
                "-c",
                "user.name=Berth Test",
                "-c",
                "user.email=test@berth.test",
                "-c",
                "init.defaultBranch=main",
            ])
            .args(args),
    )
}

/// A repository served as `shop.git` under the returned root:
/// - `v1` (an annotated tag) and `feature` start at the first commit, which
///   has a `Dockerfile`, `docker/Dockerfile.prod`, `services/web/` (no
///   Dockerfile), and symbolic links: `Dockerfile.inside` →
///   `docker/Dockerfile.prod`, `Dockerfile.outside` → `/etc/passwd`,
///   `escape` → `../../..`, `services/up` → `..`;
/// - `main` (HEAD) has one commit more, `feature` another.
struct Repo {
    root: PathBuf,
    first: String,
    main: String,
    feature: String,
}

fn repository(dir: &Path) -> Repo {
    let work = dir.join("work");
    std::fs::create_dir_all(work.join("docker")).unwrap();
    std::fs::create_dir_all(work.join("services/web")).unwrap();
    std::fs::write(work.join("Dockerfile"), "FROM scratch\n").unwrap();
    std::fs::write(work.join("docker/Dockerfile.prod"), "FROM scratch\n").unwrap();
    std::fs::write(work.join("services/web/index.html"), "hello\n").unwrap();
    let link = |target: &str, at: &str| std::os::unix::fs::symlink(target, work.join(at)).unwrap();
    link("docker/Dockerfile.prod", "Dockerfile.inside");
    link("/etc/passwd", "Dockerfile.outside");
    link("../../..", "escape");
    link("..", "services/up");
    git(&work, &["init", "--quiet"]);
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "--quiet", "-m", "first"]);
    let first = git(&work, &["rev-parse", "HEAD"]);
    git(&work, &["tag", "-a", "v1", "-m", "version 1"]);
    git(&work, &["checkout", "--quiet", "-b", "feature"]);
    std::fs::write(work.join("services/web/index.html"), "feature\n").unwrap();
    git(&work, &["commit", "--quiet", "-am", "feature"]);
    let feature = git(&work, &["rev-parse", "HEAD"]);
    git(&work, &["checkout", "--quiet", "main"]);
    std::fs::write(work.join("services/web/index.html"), "second\n").unwrap();
    git(&work, &["commit", "--quiet", "-am", "second"]);
    let main = git(&work, &["rev-parse", "HEAD"]);
    let root = dir.join("served");
    std::fs::create_dir_all(&root).unwrap();
    git(
        dir,
        &["clone", "--quiet", "--bare", "work", "served/shop.git"],
    );
    git(
        &root.join("shop.git"),
        &["config", "uploadpack.allowFilter", "true"],
    );
    Repo {
        root,
        first,
        main,
        feature,
    }
}

/// One run of the `source` step: its directories and environment.
struct SourceRun {
    dir: PathBuf,
    env: Vec<(&'static str, String)>,
}

impl SourceRun {
    fn new(origin: &str, git_ref: Option<&str>) -> Self {
        let dir = scratch("berth-source-step");
        std::fs::create_dir_all(dir.join("workspace")).unwrap();
        let env = vec![
            ("HOME", dir.join("home").display().to_string()),
            ("FACTS", dir.join("facts").display().to_string()),
            (
                "TERMINATION_LOG",
                dir.join("termination-log").display().to_string(),
            ),
            ("SOURCE", dir.join("workspace").display().to_string()),
            ("GIT_REPO", format!("{origin}/shop.git")),
            ("GIT_ORIGIN", origin.to_owned()),
            ("GIT_REF", git_ref.unwrap_or_default().to_owned()),
            ("STRATEGY", "auto".to_owned()),
            ("CONTEXT_DIR", String::new()),
            ("DOCKERFILE", "Dockerfile".to_owned()),
            ("GIT_BRANCH", String::new()),
            // The repositories are served on loopback: as a host the
            // operator allows a private network (`BERTH_GIT_PRIVATE_HOSTS`).
            ("GIT_ADDRESSES", "any".to_owned()),
        ];
        Self { dir, env }
    }

    fn set(mut self, name: &'static str, value: &str) -> Self {
        self.env.retain(|(key, _)| *key != name);
        self.env.push((name, value.to_owned()));
        self
    }

    async fn run(&self) -> Output {
        run(scripts::SOURCE, PATH, &self.env).await
    }

    fn fact(&self, name: &str) -> String {
        read(&self.dir.join("facts").join(name))
    }

    fn workspace(&self) -> String {
        self.dir
            .join("workspace")
            .canonicalize()
            .unwrap()
            .display()
            .to_string()
    }
}

#[tokio::test]
async fn the_source_step_fetches_branches_tags_and_full_or_short_commit_ids() {
    let dir = scratch("berth-git-repos");
    let repo = repository(&dir);
    let server = GitHttp::repositories("127.0.0.1", &repo.root, None).await;
    for (git_ref, expected) in [
        (None, &repo.main),
        (Some("main"), &repo.main),
        (Some("feature"), &repo.feature),
        (Some("v1"), &repo.first),
        (Some(repo.first.as_str()), &repo.first),
        (Some(&repo.main[..7]), &repo.main),
        (Some(&repo.feature[..12]), &repo.feature),
    ] {
        let step = SourceRun::new(&server.origin(), git_ref);
        let output = step.run().await;
        assert!(output.status.success(), "{git_ref:?}: {}", said(&output));
        assert_eq!(&step.fact("commit"), expected, "{git_ref:?}");
        let checked_out = git(Path::new(&step.workspace()), &["rev-parse", "HEAD"]);
        assert_eq!(&checked_out, expected, "{git_ref:?}");
        assert_eq!(step.fact("strategy"), "dockerfile");
        assert_eq!(step.fact("context"), step.workspace());
        assert_eq!(
            step.fact("dockerfile"),
            format!("{}/Dockerfile", step.workspace())
        );
    }
    for (git_ref, says) in [
        ("nope", "no branch or tag nope"),
        ("abc", "no branch or tag abc"),
        ("deadbeef", "no branch, tag or commit deadbeef"),
    ] {
        let step = SourceRun::new(&server.origin(), Some(git_ref));
        let output = step.run().await;
        assert!(!output.status.success(), "{git_ref}");
        assert!(said(&output).contains(says), "{git_ref}: {}", said(&output));
        assert!(!step.dir.join("facts/commit").exists());
    }
}

#[tokio::test]
async fn the_context_and_dockerfile_stay_inside_the_checkout() {
    let dir = scratch("berth-git-repos");
    let repo = repository(&dir);
    let server = GitHttp::repositories("127.0.0.1", &repo.root, None).await;
    let origin = server.origin();
    for (context_dir, dockerfile, strategy, says) in [
        (
            "escape",
            "Dockerfile",
            "auto",
            "context_dir escape leads out of the repository",
        ),
        (
            "",
            "Dockerfile.outside",
            "auto",
            "dockerfile Dockerfile.outside leads out of the repository",
        ),
        (
            "missing",
            "Dockerfile",
            "auto",
            "context_dir missing is not a directory",
        ),
        (
            "services/web",
            "Dockerfile",
            "dockerfile",
            "the repository has no services/web/Dockerfile",
        ),
    ] {
        let step = SourceRun::new(&origin, Some("v1"))
            .set("CONTEXT_DIR", context_dir)
            .set("DOCKERFILE", dockerfile)
            .set("STRATEGY", strategy);
        let output = step.run().await;
        assert!(!output.status.success(), "{context_dir} {dockerfile}");
        assert!(said(&output).contains(says), "{}", said(&output));
    }
    // Links inside the checkout are followed to where they lead.
    let step = SourceRun::new(&origin, Some("v1")).set("DOCKERFILE", "Dockerfile.inside");
    let output = step.run().await;
    assert!(output.status.success(), "{}", said(&output));
    assert_eq!(step.fact("strategy"), "dockerfile");
    assert_eq!(
        step.fact("dockerfile"),
        format!("{}/docker/Dockerfile.prod", step.workspace())
    );
    let step = SourceRun::new(&origin, Some("v1")).set("CONTEXT_DIR", "services/up");
    let output = step.run().await;
    assert!(output.status.success(), "{}", said(&output));
    assert_eq!(step.fact("context"), step.workspace());
    // No Dockerfile in the context: buildpacks.
    let step = SourceRun::new(&origin, Some("v1")).set("CONTEXT_DIR", "services/web");
    let output = step.run().await;
    assert!(output.status.success(), "{}", said(&output));
    assert_eq!(step.fact("strategy"), "buildpacks");
    assert_eq!(
        step.fact("context"),
        format!("{}/services/web", step.workspace())
    );
    assert_eq!(step.fact("dockerfile"), "");
}

#[tokio::test]
async fn the_git_credential_goes_to_the_repositorys_host_only() {
    let dir = scratch("berth-git-repos");
    let repo = repository(&dir);
    let credential = ("robot", "s3cret-token");
    let server = GitHttp::repositories("127.0.0.1", &repo.root, Some(credential)).await;
    // Another host (127.0.0.2 is loopback too) that asks for the same.
    let other = GitHttp::repositories("127.0.0.2", &repo.root, Some(credential)).await;

    let step = SourceRun::new(&server.origin(), Some("main"));
    let output = step.run().await;
    assert!(
        !output.status.success(),
        "without the credential the fetch is refused"
    );

    let step = SourceRun::new(&server.origin(), Some("main"))
        .set("GIT_USERNAME", credential.0)
        .set("GIT_TOKEN", credential.1);
    let output = step.run().await;
    assert!(output.status.success(), "{}", said(&output));
    assert_eq!(step.fact("commit"), repo.main);
    assert!(
        server
            .seen()
            .iter()
            .any(|seen| seen.authorization.is_some())
    );
    assert!(!said(&output).contains(credential.1));

    // The configuration the step left answers for its repository's host
    // alone: asked as git asks its helpers, for the other host or another
    // protocol it gives nothing.
    let fill = |protocol: &str, host: String| {
        let input = format!("protocol={protocol}\nhost={host}\npath=shop.git\n\n");
        let step = &step;
        async move {
            let mut child = tokio::process::Command::new(GIT)
                .args(["credential", "fill"])
                .env_clear()
                .env("PATH", PATH)
                .envs(step.env.iter().map(|(k, v)| (*k, v.as_str())))
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("GIT_TERMINAL_PROMPT", "0")
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("git credential runs");
            use tokio::io::AsyncWriteExt;
            child
                .stdin
                .take()
                .unwrap()
                .write_all(input.as_bytes())
                .await
                .unwrap();
            child.wait_with_output().await.unwrap()
        }
    };
    let own = fill("http", server.addr.to_string()).await;
    assert!(String::from_utf8_lossy(&own.stdout).contains("password=s3cret-token"));
    for (protocol, host) in [
        ("http", other.addr.to_string()),
        ("https", server.addr.to_string()),
        ("http", format!("127.0.0.1:{}", other.addr.port())),
    ] {
        let answer = fill(protocol, host.clone()).await;
        assert!(
            !String::from_utf8_lossy(&answer.stdout).contains("s3cret-token"),
            "{protocol}://{host}"
        );
    }
    // And git, fetching from the other host with that configuration, sends
    // it nothing.
    let listed = tokio::process::Command::new(GIT)
        .args(["ls-remote", &format!("{}/shop.git", other.origin())])
        .env_clear()
        .env("PATH", PATH)
        .envs(step.env.iter().map(|(k, v)| (*k, v.as_str())))
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
        .output()
        .await
        .unwrap();
    assert!(!listed.status.success());
    assert!(!other.seen().is_empty());
    assert!(other.seen().iter().all(|seen| seen.authorization.is_none()));
}

#[tokio::test]
async fn a_redirect_is_not_followed() {
    let dir = scratch("berth-git-repos");
    let repo = repository(&dir);
    let server = GitHttp::repositories("127.0.0.1", &repo.root, None).await;
    let redirect = GitHttp::redirecting_to("127.0.0.1", &server.origin()).await;
    let step = SourceRun::new(&redirect.origin(), Some("main"));
    let output = step.run().await;
    assert!(!output.status.success(), "{}", said(&output));
    assert!(
        redirect
            .seen()
            .iter()
            .any(|seen| seen.path == "/shop.git/info/refs"),
        "{:?}",
        redirect.seen()
    );
    assert!(server.seen().is_empty(), "the redirect was followed");
    assert!(!step.dir.join("facts/commit").exists());
}

/// Issue 29: a webhook's push names the commit, and whoever holds the
/// hook's secret can write any payload: the step builds it only if it is
/// on the app's branch (its head, or in its history), and fails saying so
/// otherwise; after a force-push, the new head builds and what it left
/// behind does not.
#[tokio::test]
async fn a_pushed_commit_builds_only_if_it_is_on_the_apps_branch() {
    let dir = scratch("berth-git-repos");
    let repo = repository(&dir);
    let server = GitHttp::repositories("127.0.0.1", &repo.root, None).await;
    let push =
        |commit: &str| SourceRun::new(&server.origin(), Some(commit)).set("GIT_BRANCH", "main");
    // The head of main, and a commit of its history.
    for commit in [&repo.main, &repo.first] {
        let step = push(commit);
        let output = step.run().await;
        assert!(output.status.success(), "{commit}: {}", said(&output));
        assert_eq!(&step.fact("commit"), commit);
        let checked_out = git(Path::new(&step.workspace()), &["rev-parse", "HEAD"]);
        assert_eq!(&checked_out, commit);
    }
    // A commit of another branch, and one no branch has.
    for commit in [repo.feature.as_str(), COMMIT] {
        let step = push(commit);
        let output = step.run().await;
        assert!(!output.status.success(), "{commit}");
        assert!(
            said(&output).contains(&format!("commit {commit} is not on the branch main")),
            "{}",
            said(&output)
        );
        assert!(!step.dir.join("facts/commit").exists());
    }
    let step = push(&repo.main).set("GIT_BRANCH", "gone");
    let output = step.run().await;
    assert!(!output.status.success());
    assert!(
        said(&output).contains("no branch gone"),
        "{}",
        said(&output)
    );

    // A force-push moves main back onto feature's commit: the new head
    // builds, the head it replaced is no longer on the branch.
    git(
        &repo.root.join("shop.git"),
        &["update-ref", "refs/heads/main", &repo.feature],
    );
    let output = push(&repo.feature).run().await;
    assert!(output.status.success(), "{}", said(&output));
    let output = push(&repo.main).run().await;
    assert!(!output.status.success());
    assert!(
        said(&output).contains("is not on the branch main"),
        "{}",
        said(&output)
    );
}

/// Issue 46, part 6: a push to an app following its repository's default
/// branch is held to the branch the repository's HEAD names (`HEAD`), not
/// to one the payload calls the default: a commit only another branch has
/// fails, whatever that branch is called.
#[tokio::test]
async fn a_pushed_commit_for_the_default_branch_must_be_on_the_repositorys_head() {
    let dir = scratch("berth-git-head");
    let repo = repository(&dir);
    let server = GitHttp::repositories("127.0.0.1", &repo.root, None).await;
    let push = |commit: &str| {
        SourceRun::new(&server.origin(), Some(commit))
            .set("GIT_BRANCH", berth_domain::git::REPOSITORY_HEAD)
    };
    for commit in [&repo.main, &repo.first] {
        let step = push(commit);
        let output = step.run().await;
        assert!(output.status.success(), "{commit}: {}", said(&output));
        assert_eq!(&step.fact("commit"), commit);
    }
    let output = push(&repo.feature).run().await;
    assert!(!output.status.success());
    assert!(
        said(&output).contains(&format!(
            "commit {} is not on the default branch",
            repo.feature
        )),
        "{}",
        said(&output)
    );
    // The repository names another default: its commits build, main's
    // newest does not.
    git(
        &repo.root.join("shop.git"),
        &["symbolic-ref", "HEAD", "refs/heads/feature"],
    );
    let output = push(&repo.feature).run().await;
    assert!(output.status.success(), "{}", said(&output));
    let output = push(&repo.main).run().await;
    assert!(!output.status.success(), "main's head is not on feature");
}

/// Issue 29: the repository's host is resolved by the step, and every
/// address must be public unless the operator allows the host a private
/// network; git is then held to the addresses checked. Whatever fails on
/// the way (a refused address, a closed port, no name), the step says only
/// that the repository could not be reached, and the server behind a
/// refused address hears nothing.
#[tokio::test]
async fn the_clone_reaches_public_addresses_only_and_says_nothing_of_the_rest() {
    let dir = scratch("berth-git-repos");
    let repo = repository(&dir);
    let server = GitHttp::repositories("127.0.0.1", &repo.root, None).await;
    let port = server.addr.port();
    let by_name = format!("http://localhost:{port}");
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        drop(listener);
        format!("http://{addr}")
    };
    let unreachable = |origin: &str| {
        format!(
            "the repository {origin}/shop.git could not be reached: check its URL, and for a \
             private repository its git_secret\n"
        )
    };
    for (origin, addresses) in [
        // Loopback by address and by name: refused before any connection.
        (server.origin(), "public"),
        (by_name.clone(), "public"),
        // Allowed, but nothing listens: the same words.
        (closed.clone(), "any"),
        // A name no one resolves.
        (format!("http://berth-nowhere.invalid:{port}"), "any"),
    ] {
        let step = SourceRun::new(&origin, Some("main")).set("GIT_ADDRESSES", addresses);
        let output = step.run().await;
        assert!(!output.status.success(), "{origin}");
        assert_eq!(
            String::from_utf8_lossy(&output.stderr),
            unreachable(&origin),
            "{origin}: only that it could not be reached"
        );
        assert!(!step.dir.join("facts/commit").exists());
    }
    assert!(
        server.seen().is_empty(),
        "a refused address was connected to: {:?}",
        server.seen()
    );

    // Allowed, by name: git goes to the address the step resolved, held
    // there by curl's resolve list (which curl's trace shows it using).
    let trace = dir.join("curl-trace");
    let step = SourceRun::new(&by_name, Some("main"))
        .set("GIT_ADDRESSES", "any")
        .set("GIT_TRACE_CURL", &trace.display().to_string());
    let output = step.run().await;
    assert!(output.status.success(), "{}", said(&output));
    assert_eq!(step.fact("commit"), repo.main);
    let pinned = stdout_of(
        Command::new(GIT)
            .env_clear()
            .env("HOME", step.dir.join("home"))
            .args(["config", "--global", "--get-all", "http.curloptResolve"]),
    );
    assert!(
        pinned.starts_with(&format!("localhost:{port}:"))
            && pinned.contains("127.0.0.1")
            && !pinned.contains('\n'),
        "{pinned}"
    );
    let trace = read(&trace);
    assert!(
        trace.contains(&format!("Added localhost:{port}:")),
        "curl took the resolve list: {trace}"
    );
    assert!(!server.seen().is_empty());
}

const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";

/// A small OCI image layout made with umoci: one layer with one file.
fn oci_layout(dir: &Path) -> PathBuf {
    let layout = dir.join("made");
    let umoci = |args: &[&str]| stdout_of(Command::new("umoci").current_dir(dir).args(args));
    umoci(&["init", "--layout", "made"]);
    umoci(&["new", "--image", "made:latest"]);
    std::fs::write(dir.join("hello.txt"), "hello from a build\n").unwrap();
    umoci(&[
        "insert",
        "--rootless",
        "--image",
        "made:latest",
        "hello.txt",
        "/hello.txt",
    ]);
    layout
}

/// The digest of the one manifest of a layout's index.json.
fn layout_digest(layout: &Path) -> String {
    let index: serde_json::Value = serde_json::from_str(&read(&layout.join("index.json"))).unwrap();
    index["manifests"][0]["digest"]
        .as_str()
        .expect("a manifest")
        .to_owned()
}

fn copy_dir(from: &Path, to: &Path) {
    let status = Command::new("cp")
        .arg("-R")
        .arg(from)
        .arg(to)
        .status()
        .unwrap();
    assert!(status.success());
}

/// A build's pod, as far as Berth's registry steps see it: `facts` (as
/// the source step left them), `image` (where builders leave layouts), and
/// a registry that takes only `pusher`'s credential.
struct PushRun {
    dir: PathBuf,
    registry: Registry,
    image: String,
    app_layout: PathBuf,
    env: Vec<(&'static str, String)>,
}

const PUSHER: (&str, &str) = ("pusher", "push-s3cret");

impl PushRun {
    fn new(strategy: &str) -> Self {
        let dir = scratch("berth-push-step");
        let registry = Registry::start(&dir.join("registry"), Some(PUSHER));
        let image = format!("{}/berth/acme/shop/web", registry.host());
        let app_layout = dir
            .join("image")
            .join(repository_layout_path(&image).expect("a repository"));
        let facts = dir.join("facts");
        std::fs::create_dir_all(&facts).unwrap();
        std::fs::write(facts.join("commit"), COMMIT).unwrap();
        std::fs::write(facts.join("strategy"), strategy).unwrap();
        let auth = dir.join("push-config.json");
        let credential = Credential {
            username: PUSHER.0.to_owned(),
            password: PUSHER.1.to_owned(),
        };
        // What `berth-admin registry set` writes into the push Secret.
        std::fs::write(&auth, credential.docker_config(&registry.host())).unwrap();
        let env = vec![
            ("HOME", dir.join("home").display().to_string()),
            ("FACTS", facts.display().to_string()),
            (
                "TERMINATION_LOG",
                dir.join("termination-log").display().to_string(),
            ),
            ("IMAGE", image.clone()),
            ("APP_LAYOUT", app_layout.display().to_string()),
            ("PUSH_AUTH", auth.display().to_string()),
            (
                "SSL_CERT_FILE",
                registry.certificate().display().to_string(),
            ),
        ];
        std::fs::create_dir_all(&app_layout).unwrap();
        Self {
            dir,
            registry,
            image,
            app_layout,
            env,
        }
    }

    async fn push(&self) -> Output {
        run(scripts::PUSH, PATH, &self.env).await
    }

    /// The digest the registry serves for IMAGE:COMMIT.
    fn served_digest(&self, credential: (&str, &str)) -> Output {
        Command::new("skopeo")
            .args(["inspect", "--format", "{{.Digest}}"])
            .env("SSL_CERT_FILE", self.registry.certificate())
            .arg(format!("--creds={}:{}", credential.0, credential.1))
            .arg(format!("docker://{}:{COMMIT}", self.image))
            .output()
            .unwrap()
    }
}

#[tokio::test]
async fn the_push_step_pushes_the_layout_and_the_result_carries_the_registrys_digest() {
    let run_ = PushRun::new("dockerfile");
    let made = oci_layout(&run_.dir);
    copy_dir(&made, &run_.app_layout.join(COMMIT));

    let output = run_.push().await;
    assert!(output.status.success(), "{}", said(&output));
    assert!(!said(&output).contains(PUSHER.1));
    let reported = read(&run_.dir.join("facts/digest"));
    let served = run_.served_digest(PUSHER);
    assert!(served.status.success(), "{}", said(&served));
    assert_eq!(String::from_utf8_lossy(&served.stdout).trim(), reported);
    // Pushed unchanged: the manifest the layout holds.
    assert_eq!(reported, layout_digest(&made));

    let output = run(scripts::RESULT, PATH, &run_.env).await;
    assert!(output.status.success(), "{}", said(&output));
    let pushed =
        Pushed::parse(&read(&run_.dir.join("termination-log"))).expect("the result's shape");
    assert_eq!(
        (
            pushed.commit.as_str(),
            pushed.strategy,
            pushed.digest.as_str()
        ),
        (COMMIT, BuildStrategy::Dockerfile, reported.as_str())
    );
    drop(run_.registry);
}

#[tokio::test]
async fn the_push_step_uses_its_credential_and_refuses_a_layout_with_links() {
    let run_ = PushRun::new("dockerfile");
    let made = oci_layout(&run_.dir);
    let layout = run_.app_layout.join(COMMIT);
    copy_dir(&made, &layout);

    // The registry takes the push credential only.
    let wrong = Credential {
        username: PUSHER.0.to_owned(),
        password: "not-it".to_owned(),
    };
    let wrong_auth = run_.dir.join("wrong-config.json");
    std::fs::write(&wrong_auth, wrong.docker_config(&run_.registry.host())).unwrap();
    let mut env = run_.env.clone();
    env.retain(|(k, _)| *k != "PUSH_AUTH");
    env.push(("PUSH_AUTH", wrong_auth.display().to_string()));
    let output = run(scripts::PUSH, PATH, &env).await;
    assert!(!output.status.success(), "{}", said(&output));
    assert!(!run_.dir.join("facts/digest").exists());

    // A link in the layout (here to a file outside it): nothing is read.
    let secret = run_.dir.join("secret.json");
    std::fs::write(&secret, "{\"auths\":{}}").unwrap();
    std::os::unix::fs::symlink(&secret, layout.join("blobs/sha256/leak")).unwrap();
    let output = run_.push().await;
    assert!(!output.status.success());
    assert!(
        said(&output)
            .contains("holds something other than files and directories: blobs/sha256/leak"),
        "{}",
        said(&output)
    );
    std::fs::remove_file(layout.join("blobs/sha256/leak")).unwrap();

    // A link on the layout's path: refused too.
    let elsewhere = run_.dir.join("elsewhere");
    std::fs::rename(&layout, &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &layout).unwrap();
    let output = run_.push().await;
    assert!(!output.status.success());
    assert!(
        said(&output).contains("the builder left no image to push"),
        "{}",
        said(&output)
    );
    assert!(!run_.served_digest(PUSHER).status.success());

    // Nothing pushed, no result.
    let output = run(scripts::RESULT, PATH, &run_.env).await;
    assert!(!output.status.success());
    assert!(said(&output).contains("the push step reported no image digest"));
}

/// An executable script at `path`.
fn executable(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[tokio::test]
async fn the_dockerfile_step_builds_into_the_layout_the_push_step_pushes() {
    let run_ = PushRun::new("dockerfile");
    let made = oci_layout(&run_.dir);
    let facts = run_.dir.join("facts");
    let context = run_.dir.join("workspace/services/web");
    std::fs::create_dir_all(context.join("docker")).unwrap();
    std::fs::write(context.join("docker/Dockerfile.prod"), "FROM scratch\n").unwrap();
    std::fs::write(facts.join("context"), context.display().to_string()).unwrap();
    std::fs::write(
        facts.join("dockerfile"),
        context.join("docker/Dockerfile.prod").display().to_string(),
    )
    .unwrap();
    // A stand-in for buildctl-daemonless.sh: records its arguments and
    // environment, and leaves what BuildKit's `type=oci,tar=false` export
    // leaves (a layout at `dest`) and its `--metadata-file`.
    let bin = run_.dir.join("bin");
    executable(
        &bin.join("buildctl-daemonless.sh"),
        r#"#!/bin/sh
set -eu
printf '%s\n' "$@" >"$CALLS"
echo "retries=$BUILDCTL_CONNECT_RETRIES_MAX docker_config=$DOCKER_CONFIG" >>"$CALLS"
while [ $# -gt 0 ]; do
  case "$1" in
    --output) dest=${2##*dest=}; shift ;;
    --metadata-file) metadata=$2; shift ;;
  esac
  shift
done
rmdir "$dest"
cp -R "$MADE" "$dest"
printf '{"containerimage.digest":"%s","containerimage.config.digest":"sha256:%s"}' "$MADE_DIGEST" "$(printf 'c%.0s' $(seq 64))" >"$metadata"
"#,
    );
    let calls = run_.dir.join("calls");
    let mut env = run_.env.clone();
    env.extend([
        ("BUILDCTL_CONNECT_RETRIES_MAX", "75".to_owned()),
        (
            "BUILDKITD_FLAGS",
            "--oci-worker-no-process-sandbox".to_owned(),
        ),
        ("DOCKER_CONFIG", "/berth/pull".to_owned()),
        ("CALLS", calls.display().to_string()),
        ("MADE", made.display().to_string()),
        ("MADE_DIGEST", layout_digest(&made)),
    ]);
    let path = format!("{}:{PATH}", bin.display());
    let output = run(scripts::DOCKERFILE, &path, &env).await;
    assert!(output.status.success(), "{}", said(&output));
    let layout = run_.app_layout.join(COMMIT);
    let called = read(&calls);
    for argument in [
        "build".to_owned(),
        "dockerfile.v0".to_owned(),
        format!("context={}", context.display()),
        format!("dockerfile={}", context.join("docker").display()),
        "filename=Dockerfile.prod".to_owned(),
        format!("type=oci,tar=false,dest={}", layout.display()),
        "retries=75 docker_config=/berth/pull".to_owned(),
    ] {
        assert!(
            called.lines().any(|line| line == argument),
            "{argument} in {called}"
        );
    }
    assert!(!called.contains("push=true") && !called.contains("type=image"));

    let output = run_.push().await;
    assert!(output.status.success(), "{}", said(&output));
    let pushed = read(&facts.join("digest"));
    // The step's termination message is BuildKit's metadata; what it says
    // it built is what was pushed.
    let report = read(&run_.dir.join("termination-log"));
    assert_eq!(
        built_digest(BuildStrategy::Dockerfile, &report),
        Ok(Some(pushed.clone()))
    );
    let served = run_.served_digest(PUSHER);
    assert_eq!(String::from_utf8_lossy(&served.stdout).trim(), pushed);

    // Another strategy: the step does nothing.
    std::fs::write(facts.join("strategy"), "buildpacks").unwrap();
    std::fs::remove_file(&calls).unwrap();
    let output = run(scripts::DOCKERFILE, &path, &env).await;
    assert!(output.status.success());
    assert!(!calls.exists());
}

/// The `buildpacks` step with stand-ins for the lifecycle's phases: each
/// records how it was called; `builder` leaves `metadata` as the
/// lifecycle's config/metadata.toml, `exporter` the image layout and a
/// report.toml as it writes them exporting to a layout.
async fn buildpacks_with(metadata: &str) -> (PushRun, String, Output) {
    let run_ = PushRun::new("buildpacks");
    let made = oci_layout(&run_.dir);
    let facts = run_.dir.join("facts");
    let context = run_.dir.join("workspace");
    std::fs::create_dir_all(&context).unwrap();
    std::fs::write(facts.join("context"), context.display().to_string()).unwrap();
    let lifecycle = run_.dir.join("lifecycle");
    let phase = r#"#!/bin/sh
set -eu
echo "$(basename "$0") $*" >>"$CALLS"
echo "  platform=$CNB_PLATFORM_API layout=$CNB_USE_LAYOUT dir=$CNB_LAYOUT_DIR experimental=$CNB_EXPERIMENTAL_MODE" >>"$CALLS"
case "$(basename "$0")" in
  builder)
    mkdir -p "$LAYERS/config"
    cp "$METADATA" "$LAYERS/config/metadata.toml" ;;
  exporter)
    for last; do :; done
    report=
    for argument; do case "$argument" in -report=*) report=${argument#-report=} ;; esac; done
    mkdir -p "$APP_LAYOUT"
    cp -R "$MADE" "$APP_LAYOUT/${last##*:}"
    printf '[build]\n  bom = []\n\n[image]\n  tags = ["%s"]\n  manifest-size = 345\n' "$last" >"$report" ;;
esac
"#;
    for name in ["analyzer", "detector", "restorer", "builder", "exporter"] {
        executable(&lifecycle.join(name), phase);
    }
    let metadata_file = run_.dir.join("metadata.toml");
    std::fs::write(&metadata_file, metadata).unwrap();
    let calls = run_.dir.join("calls");
    let mut env = run_.env.clone();
    let layers = run_.dir.join("layers");
    env.extend([
        ("CNB_PLATFORM_API", "0.13".to_owned()),
        ("CNB_EXPERIMENTAL_MODE", "warn".to_owned()),
        ("CNB_USE_LAYOUT", "true".to_owned()),
        (
            "CNB_LAYOUT_DIR",
            run_.dir.join("image").display().to_string(),
        ),
        ("LIFECYCLE", lifecycle.display().to_string()),
        ("LAYERS", layers.display().to_string()),
        (
            "RUN_IMAGE",
            "index.docker.io/paketobuildpacks/run-jammy-base:0.1.196".to_owned(),
        ),
        ("CALLS", calls.display().to_string()),
        ("MADE", made.display().to_string()),
        ("METADATA", metadata_file.display().to_string()),
    ]);
    let output = run(scripts::BUILDPACKS, PATH, &env).await;
    let called = std::fs::read_to_string(&calls).unwrap_or_default();
    (run_, called, output)
}

#[tokio::test]
async fn the_buildpacks_step_runs_the_phases_into_a_layout_and_picks_the_default_process() {
    // No buildpack declared a default, and there is a `web` process.
    let (run_, called, output) = buildpacks_with(
        "[[buildpacks]]\n  id = \"paketo-buildpacks/procfile\"\n  version = \"5.12.1\"\n\n\
         [[processes]]\n  type = \"worker\"\n  command = [\"worker\"]\n  direct = false\n\n\
         [[processes]]\n  type = \"web\"\n  command = [\"web\"]\n  direct = false\n  default = false\n",
    )
    .await;
    assert!(output.status.success(), "{}", said(&output));
    let image = format!("{}:{COMMIT}", run_.image);
    let layers = run_.dir.join("layers").display().to_string();
    let context = run_.dir.join("workspace").display().to_string();
    let phases: Vec<&str> = called.lines().filter(|l| !l.starts_with(' ')).collect();
    assert_eq!(
        phases,
        [
            format!(
                "analyzer -layers={layers} -run-image=index.docker.io/paketobuildpacks/run-jammy-base:0.1.196 -skip-layers {image}"
            ),
            format!("detector -app={context} -layers={layers}"),
            format!("restorer -layers={layers} -skip-layers"),
            format!("builder -app={context} -layers={layers}"),
            format!(
                "exporter -app={context} -layers={layers} -report={layers}/report.toml -process-type=web {image}"
            ),
        ]
    );
    assert!(called.contains("platform=0.13 layout=true"));
    assert!(called.contains("experimental=warn"));
    // Its report is the step's message; the push step pushes its layout.
    let report = read(&run_.dir.join("termination-log"));
    assert_eq!(built_digest(BuildStrategy::Buildpacks, &report), Ok(None));
    let output = run_.push().await;
    assert!(output.status.success(), "{}", said(&output));

    // A buildpack declared a default: the exporter keeps it.
    let (_, called, output) = buildpacks_with(
        "buildpack-default-process-type = \"worker\"\n\n\
         [[processes]]\n  type = \"worker\"\n  command = [\"worker\"]\n  default = true\n\n\
         [[processes]]\n  type = \"web\"\n  command = [\"web\"]\n",
    )
    .await;
    assert!(output.status.success(), "{}", said(&output));
    assert!(!called.contains("-process-type"), "{called}");
    // No `web` process: no default forced (the exporter would refuse it).
    let (_, called, output) = buildpacks_with(
        "[[processes]]\n  type = \"worker\"\n  command = [\"web\"]\n  args = [\"type = \\\"web\\\"\"]\n",
    )
    .await;
    assert!(output.status.success(), "{}", said(&output));
    assert!(!called.contains("-process-type"), "{called}");
}
