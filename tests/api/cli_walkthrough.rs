//! docs/cli.md's walkthrough ("A first app, from sign-in to clean-up"), run
//! as the guide's test runs the guide: its `sh` blocks in order in one bash,
//! with the `berth` built from this clone, against the whole API served on a
//! loopback port with the controller running, as `make dev` serves it.
//!
//! No node runs containers here: the test plays the kubelet, running the
//! app's pods and ending the one-off command's pod with the status its
//! command (`… && exit 3`) exits with.

use berth_store::identity::members;

use crate::guide::{run_steps, steps_from};
use crate::support::kubelet::{keep_ending_pods, keep_pods_running};
use crate::support::{TestApp, unique};

const CLI_GUIDE: &str = include_str!("../../docs/cli.md");
const SECTION: &str = "## A first app, from sign-in to clean-up";

/// The section's text and the line it starts at.
fn walkthrough() -> (&'static str, usize) {
    let start = CLI_GUIDE
        .find(SECTION)
        .expect("docs/cli.md has the walkthrough");
    let rest = &CLI_GUIDE[start..];
    let end = rest[SECTION.len()..]
        .find("\n## ")
        .map_or(rest.len(), |end| end + SECTION.len());
    (&rest[..end], CLI_GUIDE[..start].lines().count() + 1)
}

#[tokio::test]
async fn the_cli_walkthrough_runs_as_written() {
    let app = TestApp::with_cluster().await;
    // As `make dev`: organization `default`, its owner with a temporary password.
    let owner = members::bootstrap(&app.state.store, "default", "admin@localhost")
        .await
        .expect("bootstrapping the walkthrough's owner");
    let served = app.serve().await;
    let project = unique("shop");
    let namespace = format!("{project}-staging");
    let client = app.cluster().client.clone();
    let _command_ends = keep_ending_pods(
        client.clone(),
        namespace.clone(),
        "berth.dev/command".into(),
        3,
    );
    let _kubelet = keep_pods_running(client, vec![namespace]);

    let (text, first_line) = walkthrough();
    let steps = steps_from(text, first_line);
    for name in ["BERTH", "TEMPORARY_PASSWORD", "NEW_PASSWORD", "PROJECT"] {
        assert!(
            steps[0].sets(name),
            "the walkthrough's first block sets {name}"
        );
    }
    let values = [
        ("BERTH", served.url.clone()),
        ("TEMPORARY_PASSWORD", owner.temporary_password.clone()),
        (
            "NEW_PASSWORD",
            "a passphrase for the walkthrough".to_owned(),
        ),
        ("PROJECT", project.clone()),
    ];
    let dir = std::env::temp_dir().join(unique("berth-cli-walkthrough"));
    std::fs::create_dir_all(&dir).expect("a directory for the walkthrough");
    let berth = crate::cli::binary()
        .parent()
        .expect("the binary's directory")
        .display()
        .to_string();
    let env = [
        ("BERTH_CONFIG_DIR", dir.join("berth").display().to_string()),
        (
            "PATH",
            format!("{berth}:{}", std::env::var("PATH").unwrap_or_default()),
        ),
    ];
    run_steps(
        "docs/cli.md's walkthrough",
        &steps,
        &values,
        &dir,
        &dir,
        &env,
        crate::support::wait_bound() * 2,
    )
    .await;
    drop(served);

    // It did what it says, and left nothing: the project is gone.
    let events = app.audit_events("default").await;
    for action in [
        "createProject",
        "createEnvironment",
        "createApp",
        "updateApp",
        "putSecret",
        "runCommand",
        "deleteApp",
        "deleteEnvironment",
        "deleteProject",
    ] {
        assert!(
            events.iter().any(|event| event.action == action),
            "the walkthrough's {action}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
