//! `berth`: Berth's API from the command line. It speaks HTTP to the API as
//! any client does and reads its answers as the API's own records
//! (`berth-records`).
//!
//! - [`args`]: the commands and options (clap);
//! - [`api`]: the HTTP client, and Problem Details as [`failure::Failure`];
//! - [`config`]: the stored sign-in and `.berth.toml`, the directory's link;
//! - [`output`]: tables, plain text or the API's JSON, and progress;
//! - [`commands`]: one module per group of commands, [`commands::wait`]
//!   the waiting of `--wait`;
//! - [`version`]: the API's version against the one this CLI speaks.

mod api;
mod args;
mod commands;
mod completion;
mod config;
mod failure;
mod output;
mod prompt;
mod version;

use std::process::ExitCode;

use clap::{CommandFactory as _, Parser as _};

use crate::args::{Cli, Command, DomainsCommand, EnvCommand};
use crate::commands::Session;
use crate::failure::{Failure, Result};
use crate::output::Output;

fn main() -> ExitCode {
    // A shell asking for completions (`COMPLETE=bash berth -- …`) is
    // answered and the process ends here.
    clap_complete::CompleteEnv::with_factory(Cli::command)
        .var(completion::VARIABLE)
        .complete();
    // clap exits with 2 on a usage error, 0 for --help and --version.
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        // The reader of standard output went away (`| head`): nothing to
        // say, and no one to say it to.
        Err(failure @ Failure::ClosedPipe) => failure.exit_code(),
        Err(failure) => {
            eprintln!("error: {}", output::visible(&failure.to_string()));
            failure.exit_code()
        }
    }
}

fn run(cli: Cli) -> Result<()> {
    let out = Output::new(cli.global.output);
    let context = || config::Context::resolve(&cli.global);
    let session = || Session::open(out, cli.global.context.clone());
    match cli.command {
        Command::Login(login) => commands::auth::login(out, cli.global.context.as_deref(), login),
        Command::Contexts { command } => commands::auth::contexts(out, command),
        Command::Logout => commands::auth::logout(&session()?),
        Command::Whoami => commands::auth::whoami(&session()?),
        Command::Version => commands::auth::version(out),
        Command::Tokens { command } => commands::auth::tokens(&session()?, command),
        Command::Link { show: true, .. } => commands::manage::show_link(out),
        Command::Link {
            project,
            environment,
            app,
            show: false,
        } => {
            // clap requires both unless `--show`.
            let (Some(project), Some(environment)) = (project, environment) else {
                return Err(Failure::Usage("berth link PROJECT ENV [APP]".into()));
            };
            let link = config::Link {
                project,
                environment,
                app,
            };
            commands::manage::link(&session()?, link)
        }
        Command::Unlink => commands::manage::unlink(out),
        Command::Init(new) => commands::manage::init(&session()?, &context()?, new),
        Command::Projects { command } => commands::manage::projects(&session()?, command),
        Command::Envs { command } => {
            commands::manage::environments(&session()?, &context()?, command)
        }
        Command::Apps { command } => commands::manage::apps(&session()?, &context()?, command),
        Command::Ps => commands::resources::ps(&session()?, &context()?.app()?),
        Command::Status => commands::resources::status(&session()?, &context()?.app()?),
        Command::Open { print } => {
            commands::resources::open(&session()?, &context()?.app()?, print)
        }
        Command::Scale { processes, wait } => {
            commands::deploy::scale(&session()?, &context()?.app()?, processes, wait)
        }
        Command::Releases { limit } => {
            commands::resources::releases(&session()?, &context()?.app()?, limit)
        }
        Command::Domains { command } => commands::resources::change_domains(
            &session()?,
            &context()?.app()?,
            command.unwrap_or(DomainsCommand::Check),
        ),
        Command::Templates { command } => {
            commands::manage::templates(&session()?, &context()?, command)
        }
        Command::Audit { limit, before, org } => {
            // The project's log (`--project`, else the linked one), unless
            // `--org` asks for the organization's.
            let project = if org { None } else { context()?.project };
            commands::resources::audit(&session()?, project.as_deref(), limit, before)
        }
        // The project's members only when asked (`--project`,
        // `BERTH_PROJECT`), not from the link: `members` is the
        // organization's first.
        Command::Members { command } => {
            commands::team::members(&session()?, cli.global.project.as_deref(), command)
        }
        Command::DeployTokens { command } => {
            commands::team::deploy_tokens(&session()?, context()?.project()?, command)
        }
        Command::Deploy(deploy) => {
            commands::deploy::deploy(&session()?, &context()?.app()?, deploy)
        }
        Command::Rollback { revision, wait } => {
            commands::deploy::rollback(&session()?, &context()?.app()?, revision, wait)
        }
        Command::Promote { to, wait } => {
            commands::deploy::promote(&session()?, &context()?.app()?, &to, wait)
        }
        Command::Restart { wait, timeout } => {
            commands::deploy::restart(&session()?, &context()?.app()?, wait, timeout)
        }
        Command::Run {
            process,
            command,
            size_of,
            timeout,
            raw,
        } => {
            if command.is_empty() {
                commands::deploy::run(&session()?, &context()?.app()?, process)
            } else {
                let one_off = commands::one_off::OneOff {
                    command,
                    size_of,
                    timeout,
                    raw,
                };
                commands::one_off::run(&session()?, &context()?.app()?, one_off)
            }
        }
        Command::Env { command } => commands::vars::env(
            &session()?,
            &context()?.app()?,
            command.unwrap_or(EnvCommand::List),
        ),
        Command::Secrets(command) => commands::vars::secrets(&session()?, &context()?, command),
        Command::Builds(command) => {
            commands::logs::builds(&session()?, &context()?.app()?, command)
        }
        Command::Logs(logs) => commands::logs::logs(&session()?, &context()?.app()?, logs),
        Command::Completions { shell } => completion::registration(shell),
    }
}
