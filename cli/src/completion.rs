//! Shell completion that knows Berth's names: `berth completions SHELL`
//! prints clap_complete's registration script, which asks `berth` itself
//! (`COMPLETE=SHELL berth -- WORDS…`) for each completion, so project,
//! environment and app names come from the API as the stored sign-in (or
//! `BERTH_URL`/`BERTH_TOKEN`) sees them. Which project and environment a
//! name belongs to comes from the words typed so far (`-p`, `-e`), else
//! `BERTH_PROJECT`…, else the directory's link. Nothing is printed when the
//! API cannot be asked: a completion never fails loudly.

use std::ffi::OsStr;

use clap_complete::engine::{ArgValueCompleter, CompletionCandidate};

use crate::args::Global;
use crate::commands::Session;
use crate::config::Context;
use crate::failure::Failure;
use crate::output::Output;

/// The variable that asks `berth` for completions.
pub const VARIABLE: &str = "COMPLETE";

/// The script `shell` sources to complete `berth`: it runs this very
/// binary (by its path) for each completion.
pub fn registration(shell: clap_complete::Shell) -> crate::failure::Result<()> {
    let name = shell.to_string();
    let shells = clap_complete::env::Shells::builtins();
    let completer = shells
        .completer(&name)
        .ok_or_else(|| Failure::Usage(format!("no completions for {name}")))?;
    let berth = std::env::current_exe()
        .map(|path| path.display().to_string())
        .unwrap_or_else(|_| "berth".to_owned());
    let mut script = Vec::new();
    completer
        .write_registration(VARIABLE, "berth", "berth", &berth, &mut script)
        .map_err(|e| Failure::failed(format!("writing the script: {e}")))?;
    crate::output::write(&script)
}

pub fn projects() -> ArgValueCompleter {
    ArgValueCompleter::new(|current: &OsStr| candidates(current, |_| Some(vec!["projects".into()])))
}

pub fn environments() -> ArgValueCompleter {
    ArgValueCompleter::new(|current: &OsStr| {
        candidates(current, |context| {
            let project = context.project.clone()?;
            Some(vec!["projects".into(), project, "environments".into()])
        })
    })
}

pub fn apps() -> ArgValueCompleter {
    ArgValueCompleter::new(|current: &OsStr| {
        candidates(current, |context| {
            let project = context.project.clone()?;
            let environment = context.environment.clone()?;
            Some(vec![
                "projects".into(),
                project,
                "environments".into(),
                environment,
                "apps".into(),
            ])
        })
    })
}

/// The names the API lists at the path `list` makes of the context, that
/// start with what was typed.
fn candidates(
    current: &OsStr,
    list: impl FnOnce(&Context) -> Option<Vec<String>>,
) -> Vec<CompletionCandidate> {
    let typed = current.to_string_lossy();
    let global = typed_so_far();
    let Some(segments) = Context::resolve(&global)
        .ok()
        .and_then(|context| list(&context))
    else {
        return Vec::new();
    };
    let Ok(session) = Session::open(Output::new(None), global.context.clone()) else {
        return Vec::new();
    };
    let segments: Vec<&str> = segments.iter().map(String::as_str).collect();
    let Ok(listed) = session
        .api
        .get(&segments)
        .and_then(|answer| answer.record::<Vec<serde_json::Value>>())
    else {
        return Vec::new();
    };
    listed
        .iter()
        .filter_map(|item| item.get("name")?.as_str())
        .filter(|name| name.starts_with(typed.as_ref()))
        .map(CompletionCandidate::new)
        .collect()
}

/// The global flags in the words typed so far (after `--` in `berth`'s
/// arguments, as the registration script passes them), else their
/// variables.
fn typed_so_far() -> Global {
    let words: Vec<String> = std::env::args()
        .skip_while(|word| word != "--")
        .skip(1)
        .collect();
    let flag = |short: &str, long: &str, variable: &str| {
        let prefix = format!("{long}=");
        let mut found = None;
        for (index, word) in words.iter().enumerate() {
            if word == short || word == long {
                found = words.get(index + 1).cloned();
            } else if let Some(value) = word.strip_prefix(&prefix) {
                found = Some(value.to_owned());
            }
        }
        found.or_else(|| std::env::var(variable).ok())
    };
    Global {
        output: None,
        project: flag("-p", "--project", "BERTH_PROJECT"),
        environment: flag("-e", "--environment", "BERTH_ENVIRONMENT"),
        context: flag("--context", "--context", "BERTH_CONTEXT"),
        app: flag("-a", "--app", "BERTH_APP"),
    }
}
