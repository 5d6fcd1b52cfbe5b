//! `docs/guide.md`, run as a reader runs it: its `sh` blocks, in order, in one
//! bash, against the whole API served on a loopback port with the controller
//! running, so that the guide cannot rot.
//!
//! The first block sets the variables the reader fills in ([`FILLED_IN`]); the
//! test sets its own values after it. A block preceded by
//! `<!-- expect: TEXT -->` must print TEXT. Each block must succeed (`set -e`,
//! `curl -f`); what it printed is shown when one fails.

use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use berth_domain::{Permission, Role};
use berth_records::audit::Outcome;
use berth_store::identity::members;

use crate::support::kubelet::keep_pods_running;
use crate::support::{TestApp, unique};

const GUIDE: &str = include_str!("../../docs/guide.md");

/// The variables of the guide's first block, which the reader fills in.
const FILLED_IN: [&str; 4] = ["BERTH", "TEMPORARY_PASSWORD", "NEW_PASSWORD", "PROJECT"];

/// The languages of the guide's blocks that show answers (or, `yaml`, a
/// pipeline's configuration) rather than commands.
const SHOWN: [&str; 4] = ["json", "text", "console", "yaml"];

/// Bound on the whole guide: twice the tests' bound on one wait (its waiting
/// loops take a few seconds on the stand-in, longer on a real cluster).
fn guide_deadline() -> Duration {
    crate::support::wait_bound() * 2
}

/// One `sh` block of the guide.
#[derive(Debug)]
pub struct Step {
    /// Its line in the guide, for messages.
    line: usize,
    script: String,
    expect: Option<String>,
}

impl Step {
    /// Whether the block sets the shell variable `name` (`NAME=…`).
    pub fn sets(&self, name: &str) -> bool {
        self.script
            .lines()
            .any(|line| line.starts_with(&format!("{name}=")))
    }
}

/// The `sh` blocks of a Markdown text, in order; `line` counts from
/// `first_line` (where the text starts in its file).
pub fn steps_from(text: &str, first_line: usize) -> Vec<Step> {
    let mut steps = steps(text);
    for step in &mut steps {
        step.line += first_line - 1;
    }
    steps
}

fn steps(guide: &str) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut expect = None;
    let mut lines = guide.lines().enumerate();
    while let Some((index, line)) = lines.next() {
        if let Some(text) = line
            .strip_prefix("<!-- expect: ")
            .and_then(|rest| rest.strip_suffix(" -->"))
        {
            expect = Some(text.to_owned());
        } else if let Some(language) = line.strip_prefix("```") {
            let body: Vec<&str> = lines
                .by_ref()
                .map(|(_, line)| line)
                .take_while(|line| *line != "```")
                .collect();
            if language == "sh" {
                steps.push(Step {
                    line: index + 1,
                    script: body.join("\n"),
                    expect: expect.take(),
                });
            } else {
                // Anything else is shown, not run: a `bash` block would silently not run.
                assert!(
                    SHOWN.contains(&language),
                    "guide line {}: a ```{language} block; commands go in ```sh blocks, \
                     answers in ```json, ```text or ```console",
                    index + 1
                );
                assert!(
                    expect.is_none(),
                    "guide line {}: an expect comment must precede a sh block",
                    index + 1
                );
            }
        }
    }
    steps
}

/// The guide's steps as one bash script: each step's output goes to
/// `{out}/{n}.out`, and `{out}/step` says which step runs.
fn script(steps: &[Step], values: &[(&str, String)], out: &Path) -> String {
    let (settings, rest) = steps.split_first().expect("the guide has sh blocks");
    let out = out.display();
    let mut script = format!("set -euo pipefail\nmkdir -p '{out}' .local\n");
    script.push_str(&settings.script);
    script.push('\n');
    for (name, value) in values {
        assert!(!value.contains('\''), "{name} is quoted with '");
        writeln!(script, "{name}='{value}'").expect("writing to a string");
    }
    for (n, step) in rest.iter().enumerate() {
        let n = n + 1;
        writeln!(
            script,
            "echo {n} >'{out}/step'\n{{\n{}\n}} >'{out}/{n}.out' 2>&1",
            step.script
        )
        .expect("writing to a string");
    }
    writeln!(script, "echo done >'{out}/step'").expect("writing to a string");
    script
}

/// Runs `steps` as a reader would, in one bash in `cwd` with `env` added:
/// the first step sets what the reader fills in, `values` replace those
/// settings after it. Panics, showing the failed step and what it printed,
/// unless every step succeeds and prints what its `expect` comment says;
/// returns what each step printed. `dir` keeps the script and its outputs.
pub async fn run_steps(
    what: &str,
    steps: &[Step],
    values: &[(&str, String)],
    dir: &Path,
    cwd: &Path,
    env: &[(&str, String)],
    deadline: Duration,
) -> Vec<String> {
    let out = dir.join("steps");
    std::fs::create_dir_all(&out).expect("a directory for the steps' output");
    let script_path = dir.join("steps.sh");
    std::fs::write(&script_path, script(steps, values, &out)).expect("writing the script");
    let exit = run_bash(&script_path, cwd, env, deadline).await;

    let reached = std::fs::read_to_string(out.join("step")).unwrap_or_default();
    let output = |n: usize| std::fs::read_to_string(out.join(format!("{n}.out")));
    if !exit.is_some_and(|status| status.success()) {
        let failed = reached.trim().parse::<usize>().unwrap_or(0);
        let step = &steps[failed];
        panic!(
            "{what}: the block at line {} {} (files in {}):\n{}\n--- it printed:\n{}\n--- bash:\n{}",
            step.line,
            if exit.is_some() {
                "failed"
            } else {
                "did not finish in time"
            },
            dir.display(),
            step.script,
            output(failed).unwrap_or_default(),
            std::fs::read_to_string(dir.join("bash.err")).unwrap_or_default(),
        );
    }
    let mut printed = vec![String::new()];
    for (n, step) in steps.iter().enumerate().skip(1) {
        let text = output(n).expect("each step's output");
        println!("--- {what}, line {}:\n{text}", step.line);
        if let Some(expected) = &step.expect {
            assert!(
                text.contains(expected.as_str()),
                "{what}: the block at line {} should print {expected}; it printed:\n{text}",
                step.line
            );
        }
        printed.push(text);
    }
    printed
}

#[test]
fn the_guide_starts_by_setting_what_the_reader_fills_in() {
    let steps = steps(GUIDE);
    let settings = &steps[0];
    for name in FILLED_IN {
        assert!(
            settings.sets(name),
            "the guide's first sh block sets {name}:\n{}",
            settings.script
        );
    }
}

/// The guide's table of roles is the one `Role::grants` implements.
#[test]
fn the_guides_permission_table_is_the_one_berth_enforces() {
    let mut rows = Vec::new();
    for line in GUIDE.lines().filter(|line| line.starts_with("| `")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let id = cells[1]
            .trim_start_matches('`')
            .split('`')
            .next()
            .unwrap_or_default();
        let permission = Permission::ALL
            .into_iter()
            .find(|p| p.as_str() == id)
            .unwrap_or_else(|| panic!("the guide's table names `{id}`, no permission"));
        let granted: Vec<bool> = cells[2..8].iter().map(|cell| *cell == "✓").collect();
        let expected: Vec<bool> = Role::ALL
            .into_iter()
            .map(|role| role.grants(permission))
            .collect();
        assert_eq!(granted, expected, "the guide's row for `{id}`");
        rows.push(permission);
    }
    assert_eq!(rows, Permission::ALL, "one row per permission, in order");
}

#[tokio::test]
async fn every_command_of_the_guide_works() {
    let bash_tools = ["bash", "curl", "jq"];
    for tool in bash_tools {
        let found = Command::new(tool).arg("--version").output();
        assert!(
            found.is_ok_and(|output| output.status.success()),
            "{tool} is needed to run docs/guide.md (scripts/install-tools.sh installs jq)"
        );
    }
    let started = Instant::now();
    let app = TestApp::with_cluster().await;
    // As `make dev`: organization `default`, its owner with a temporary password.
    let owner = members::bootstrap(&app.state.store, "default", "admin@localhost")
        .await
        .expect("bootstrapping the guide's owner");
    let served = app.serve().await;
    let project = unique("shop");
    let _kubelet = keep_pods_running(
        app.cluster().client.clone(),
        vec![
            format!("{project}-staging"),
            format!("{project}-production"),
        ],
    );

    let steps = steps(GUIDE);
    // In FILLED_IN's order.
    let values: Vec<(&str, String)> = FILLED_IN
        .into_iter()
        .zip([
            format!("{}/api/v1", served.url),
            owner.temporary_password.clone(),
            "a passphrase for the guide".to_owned(),
            project.clone(),
        ])
        .collect();
    let dir = std::env::temp_dir().join(unique("berth-guide"));
    std::fs::create_dir_all(&dir).expect("a directory for the guide");
    // The reader's own curl settings (~/.curlrc) and berth sign-in stay
    // out of it; `berth` is the one built from this clone.
    let berth = crate::cli::binary()
        .parent()
        .expect("the binary's directory")
        .display()
        .to_string();
    let env = [
        ("CURL_HOME", dir.display().to_string()),
        ("BERTH_CONFIG_DIR", dir.join("berth").display().to_string()),
        (
            "PATH",
            format!("{berth}:{}", std::env::var("PATH").unwrap_or_default()),
        ),
    ];
    run_steps(
        "docs/guide.md",
        &steps,
        &values,
        &dir,
        &dir,
        &env,
        guide_deadline(),
    )
    .await;
    drop(served);
    println!("the guide ran in {:?}", started.elapsed());

    // The guide did what it says: every call it teaches is in the audit log,
    // as the outcome it describes.
    let events = app.audit_events("default").await;
    let recorded = |action: &str, outcome: Outcome| {
        events
            .iter()
            .any(|event| event.action == action && event.outcome == outcome)
    };
    assert!(
        recorded("listProjects", Outcome::Denied),
        "refused before the password change"
    );
    assert!(
        recorded("createProject", Outcome::Failure),
        "the taken name"
    );
    for action in [
        "login",
        "changePassword",
        "createToken",
        "getCurrentUser",
        "logout",
        "createProject",
        "createEnvironment",
        "getEnvironment",
        "createApp",
        "getApp",
        "updateApp",
        "listReleases",
        "rollbackApp",
        "promoteApp",
        "listApps",
        "getAppLogs",
        "restartApp",
        "putSecret",
        "listSecrets",
        "listTemplates",
        "deployTemplate",
        "inviteMember",
        "updateMember",
        "listMembers",
        "listAuditEvents",
        "deleteToken",
    ] {
        assert!(
            recorded(action, Outcome::Success),
            "the guide's {action} succeeded"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs the bash script `script` in `cwd`, for at most `deadline`; how it
/// exited, if it did. Polled, so that the servers it talks to keep running
/// on this runtime. Its stderr goes to `bash.err` beside the script.
async fn run_bash(
    script: &Path,
    cwd: &Path,
    env: &[(&str, String)],
    deadline: Duration,
) -> Option<ExitStatus> {
    let stderr =
        std::fs::File::create(script.with_file_name("bash.err")).expect("a file for bash's errors");
    let mut bash = Command::new("bash");
    bash.arg(script)
        .current_dir(cwd)
        .env("NO_PROXY", "127.0.0.1")
        .env_remove("http_proxy")
        .env_remove("HTTP_PROXY")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr);
    for (name, value) in env {
        bash.env(name, value);
    }
    let mut bash = bash.spawn().expect("starting bash");
    let until = Instant::now() + deadline;
    loop {
        if let Some(status) = bash.try_wait().expect("waiting for bash") {
            return Some(status);
        }
        if Instant::now() > until {
            let _ = bash.kill();
            let _ = bash.wait();
            return None;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
