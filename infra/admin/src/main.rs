//! `berth-admin`: sets up and looks after a Berth installation.
//!
//! Configuration comes from the environment: `BERTH_TABLE` (default `berth`),
//! and the AWS SDK's own `AWS_ENDPOINT_URL_DYNAMODB`, region and credentials.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use berth_shared::cluster::install;
use berth_shared::identity::members;
use berth_shared::kubeconfig;
use berth_shared::store::schema::{self, TableCreation};
use berth_shared::{ApiError, AppState};

#[derive(Parser)]
#[command(
    name = "berth-admin",
    version,
    about = "Sets up and looks after a Berth installation"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Creates the DynamoDB table (BERTH_TABLE); an existing table is left alone.
    CreateTable,
    /// Creates an organization and its owner, and prints the one-time temporary password.
    Bootstrap {
        #[arg(long)]
        org: String,
        #[arg(long)]
        email: String,
        /// Prints {"email", "temporary_password"} as JSON.
        #[arg(long)]
        json: bool,
    },
    /// The audit log.
    Audit {
        #[command(subcommand)]
        command: AuditCommand,
    },
    /// The kubeconfig Berth uses to reach its cluster.
    Cluster {
        #[command(subcommand)]
        command: ClusterCommand,
    },
}

#[derive(Subcommand)]
enum AuditCommand {
    /// Stores the events of `audit_fallback` lines from function logs (a file,
    /// or `-` for standard input); other lines are ignored, and replaying a
    /// line twice stores its event once.
    Replay { log: PathBuf },
}

#[derive(Subcommand)]
enum ClusterCommand {
    /// Stores a kubeconfig (and optionally the context to use).
    Set {
        #[arg(long)]
        kubeconfig: PathBuf,
        #[arg(long)]
        context: Option<String>,
    },
    /// Shows the stored kubeconfig's context and server, never its credentials.
    Show,
    /// Removes the stored kubeconfig.
    Clear,
    /// Installs (or updates) Berth's CRDs with an administrator's kubeconfig,
    /// which is used for this command only and never stored.
    Install {
        /// The administrator's kubeconfig (it may use `exec`, e.g. `aws eks get-token`).
        #[arg(long)]
        kubeconfig: PathBuf,
        #[arg(long)]
        context: Option<String>,
    },
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let state = match AppState::from_env().await {
        Ok(state) => state,
        Err(error) => {
            eprintln!("berth-admin: {error}");
            return ExitCode::from(2);
        }
    };
    match run(cli.command, &state).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("berth-admin: {message}");
            ExitCode::FAILURE
        }
    }
}

fn explain(error: ApiError) -> String {
    match error {
        ApiError::StorageUnavailable(cause) => {
            format!("DynamoDB did not answer or failed: {cause}")
        }
        ApiError::ClusterUnavailable(cause) => {
            format!("the cluster did not answer or failed: {cause}")
        }
        ApiError::NoCluster => {
            "no kubeconfig stored: run `berth-admin cluster set` first".to_owned()
        }
        ApiError::Internal(cause) => format!("internal error: {cause}"),
        ApiError::ValidationFailed(detail) | ApiError::Conflict(detail) => detail,
        other => other.to_string(),
    }
}

async fn run(command: Command, state: &AppState) -> Result<(), String> {
    let table = state.store.table();
    match command {
        Command::CreateTable => {
            match schema::create_table(state.store.client(), table)
                .await
                .map_err(explain)?
            {
                TableCreation::Created => println!("created table {table}"),
                TableCreation::AlreadyExisted => println!("table {table} already exists"),
            }
        }
        Command::Audit {
            command: AuditCommand::Replay { log },
        } => {
            let text = if log.as_os_str() == "-" {
                std::io::read_to_string(std::io::stdin())
            } else {
                std::fs::read_to_string(&log)
            }
            .map_err(|error| format!("cannot read {}: {error}", log.display()))?;
            let stored = state.audit.replay(&text).await.map_err(explain)?;
            println!("stored {stored} audit events");
        }
        Command::Bootstrap { org, email, json } => {
            let owner = members::bootstrap(&state.store, &org, &email)
                .await
                .map_err(explain)?;
            if json {
                let shown = serde_json::json!({
                    "email": owner.member.email,
                    "temporary_password": owner.temporary_password,
                });
                println!("{shown}");
            } else {
                println!(
                    "organization {org} created with owner {}",
                    owner.member.email
                );
                println!(
                    "temporary password (shown once; change it at first sign-in): {}",
                    owner.temporary_password
                );
            }
        }
        Command::Cluster {
            command:
                ClusterCommand::Set {
                    kubeconfig,
                    context,
                },
        } => {
            let yaml = std::fs::read_to_string(&kubeconfig)
                .map_err(|e| format!("cannot read {}: {e}", kubeconfig.display()))?;
            let summary = kubeconfig::store_kubeconfig(&state.store, yaml, context)
                .await
                .map_err(explain)?;
            println!(
                "stored kubeconfig: context {}, cluster {} at {}",
                summary.context, summary.cluster, summary.server
            );
        }
        Command::Cluster {
            command: ClusterCommand::Show,
        } => match kubeconfig::load(&state.store).await.map_err(explain)? {
            None => println!("no kubeconfig stored"),
            Some(stored) => {
                let summary = kubeconfig::summary(&stored).map_err(explain)?;
                println!("context:    {}", summary.context);
                println!("cluster:    {}", summary.cluster);
                println!("server:     {}", summary.server);
                println!("updated at: {}", summary.updated_at);
            }
        },
        Command::Cluster {
            command:
                ClusterCommand::Install {
                    kubeconfig,
                    context,
                },
        } => {
            let yaml = std::fs::read_to_string(&kubeconfig)
                .map_err(|e| format!("cannot read {}: {e}", kubeconfig.display()))?;
            let client = berth_shared::cluster::access::client_from_kubeconfig(
                &yaml,
                context.as_deref(),
                state.config.cluster_timeout,
            )
            .await
            .map_err(explain)?;
            for name in install::install_crds(&client).await.map_err(explain)? {
                println!("installed CRD {name}");
            }
        }
        Command::Cluster {
            command: ClusterCommand::Clear,
        } => {
            if kubeconfig::clear(&state.store).await.map_err(explain)? {
                println!("stored kubeconfig removed");
            } else {
                println!("no kubeconfig was stored");
            }
        }
    }
    Ok(())
}
