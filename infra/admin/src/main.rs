//! `berth-admin`: sets up and looks after a Berth installation.
//!
//! Configuration comes from the environment: `BERTH_TABLE` (default `berth`),
//! and the AWS SDK's own `AWS_ENDPOINT_URL_DYNAMODB`, region and credentials
//! (for an endpoint on loopback, DynamoDB Local, none are needed).
//! `make admin ARGS="…"` runs it with the settings of `make dev`.

mod failure;
mod preflight;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use berth_api::ApiError;
use berth_api::AppState;
use berth_api::apps::proofs;
use berth_api::config::Config;
use berth_api::kubeconfig;
use berth_api::registry::{RegistrySettings, SharedCredential};
use berth_api::service_account::{self, ServiceAccountRef};
use berth_cluster::install;
use berth_cluster::registry::{self, Credential, Registry};
use berth_domain::names::{Hostname, OrgName};
use berth_fn_registry::signing;
use berth_records::audit::ActorKind;
use berth_store::audit::Call;
use berth_store::identity::{members, profile};
use berth_store::schema::{self, TableCreation};

use failure::Failure;
use preflight::StoreLocation;

#[derive(Parser)]
#[command(
    name = "berth-admin",
    version,
    about = "Sets up and looks after a Berth installation"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// On failure, also show the cause behind the one-line message.
    #[arg(long, short, global = true)]
    verbose: bool,
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
    /// The image registry builds push to and apps pull from.
    Registry {
        #[command(subcommand)]
        command: RegistryCommand,
    },
    /// Custom domains' proof of ownership (docs/api-notes.md, "Domain ownership").
    Domains {
        #[command(subcommand)]
        command: DomainsCommand,
    },
}

#[derive(Subcommand)]
enum DomainsCommand {
    /// Marks HOSTNAME verified for the organization ORG on the operator's
    /// word, without a TXT record (never looked for afterwards); refused
    /// while another organization has verified it. Recorded in ORG's audit
    /// log.
    Verify {
        hostname: String,
        #[arg(long)]
        org: String,
    },
}

#[derive(Subcommand)]
enum RegistryCommand {
    /// Configures the registry, in the cluster (with an administrator's
    /// kubeconfig used for this command only) and for Berth's token service
    /// (in the table). By default the registry trusts Berth's token service
    /// and the controller mints every credential: one per build, one per
    /// environment. With --shared (an upgrade's first step only), standard
    /// input holds the installation's push credential's user name and
    /// password on two lines, and optionally a pull-only credential's on two
    /// more, as before; the token service then accepts them too.
    Set {
        /// Where images go: a registry host and path, like
        /// registry.example.com/berth (images are PREFIX/ORG/PROJECT/APP).
        #[arg(long)]
        prefix: String,
        /// The registry's host (the prefix's host): where credentials are
        /// for, and the token's audience (the registry's auth.token.service).
        #[arg(long)]
        server: String,
        #[arg(long)]
        kubeconfig: PathBuf,
        #[arg(long)]
        context: Option<String>,
        /// Use the installation's shared credentials (standard input), as
        /// before scoped ones: the first step of the upgrade.
        #[arg(long, conflicts_with = "forget_shared")]
        shared: bool,
        /// Remove the shared credentials of before (their Secrets, and the
        /// token service stops accepting them): the upgrade's last step,
        /// once `registry status` shows every environment with its own.
        #[arg(long)]
        forget_shared: bool,
    },
    /// How far the scoped credentials have come: the registry's settings and
    /// which environments have their own pull credential.
    Status {
        #[arg(long)]
        kubeconfig: PathBuf,
        #[arg(long)]
        context: Option<String>,
    },
    /// Prints a self-signed certificate (PEM) of the token service's signing
    /// key, signed by the key itself: what goes into the registry's
    /// auth.token.rootcertbundle.
    Certificate {
        /// The key, as BERTH_REGISTRY_SIGNING_KEY names it (kms:KEY or
        /// file:PATH); default BERTH_REGISTRY_SIGNING_KEY.
        #[arg(long)]
        signing_key: Option<String>,
        /// How long the certificate is valid (the registry checks only its
        /// key, but tools may warn on an expired one).
        #[arg(long, default_value_t = 3650)]
        days: u32,
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
    /// Stores a kubeconfig (and optionally the context to use); with
    /// --service-account, makes it: a token of that ServiceAccount, asked of
    /// the cluster with the administrator's kubeconfig FILE, which is used for
    /// this command only and never stored.
    Set {
        #[arg(long, value_name = "FILE")]
        kubeconfig: PathBuf,
        #[arg(long)]
        context: Option<String>,
        /// Store a kubeconfig of this ServiceAccount (NAMESPACE/NAME) instead
        /// of FILE, once it is proven held to what Berth owns (the admission
        /// policy of infra/k8s in force). Run the command again before the
        /// token expires to renew it.
        #[arg(long, value_name = "NAMESPACE/NAME", num_args = 0..=1,
              default_missing_value = "berth-system/berth-api")]
        service_account: Option<ServiceAccountRef>,
        /// How long the ServiceAccount's token lasts: a number of days (30d),
        /// hours (12h) or minutes (90m), at least 10 minutes; the cluster may
        /// shorten it.
        #[arg(long, value_name = "DURATION", default_value = "30d",
              value_parser = parse_lifetime, requires = "service_account")]
        token_duration: std::time::Duration,
    },
    /// Shows the stored kubeconfig's context and server, never its credentials.
    Show,
    /// Removes the stored kubeconfig.
    Clear,
    /// Installs (or updates) Berth's CRDs with an administrator's kubeconfig,
    /// which is used for this command only and never stored. Refuses a
    /// cluster that serves no ValidatingAdmissionPolicy.
    Install {
        /// The administrator's kubeconfig (it may use `exec`, e.g. `aws eks get-token`).
        #[arg(long)]
        kubeconfig: PathBuf,
        #[arg(long)]
        context: Option<String>,
    },
}

/// `30d`, `12h` or `90m`.
fn parse_lifetime(text: &str) -> Result<std::time::Duration, String> {
    let unit_seconds = match text.chars().last() {
        Some('d') => 86_400,
        Some('h') => 3_600,
        Some('m') => 60,
        _ => return Err("a number of days, hours or minutes: 30d, 12h or 90m".into()),
    };
    let count: u64 = text[..text.len() - 1]
        .parse()
        .map_err(|_| format!("{text:?} is not a whole number of days, hours or minutes"))?;
    let seconds = count.saturating_mul(unit_seconds);
    if seconds < 600 {
        return Err("at least 10 minutes, the shortest token a cluster issues".into());
    }
    Ok(std::time::Duration::from_secs(seconds))
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    match admin(cli.command).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            failure.print(cli.verbose);
            ExitCode::FAILURE
        }
    }
}

async fn admin(command: Command) -> Result<(), Failure> {
    let config = Config::from_env().map_err(|error| Failure::plain(error.to_string()))?;
    let sdk = berth_api::state::aws_config()
        .await
        .map_err(|error| Failure::plain(error.to_string()))?;
    let location = StoreLocation::new(&sdk);
    // Its own client, for the preflight's look at the table.
    let dynamodb = aws_sdk_dynamodb::Client::new(&sdk);
    let state = AppState::new(dynamodb.clone(), config);
    // What `registry set` is given is checked before anything is asked.
    let registry_input = match &command {
        Command::Registry {
            command:
                RegistryCommand::Set {
                    prefix,
                    server,
                    shared,
                    ..
                },
        } => Some(registry_input(prefix, server, *shared).map_err(Failure::plain)?),
        _ => None,
    };
    // Installing the CRDs, the registry's state and its certificate need
    // no table.
    let cluster_only = matches!(
        command,
        Command::Cluster {
            command: ClusterCommand::Install { .. }
        } | Command::Registry {
            command: RegistryCommand::Status { .. } | RegistryCommand::Certificate { .. }
        }
    );
    if !cluster_only {
        let table = state.store.table();
        let table_exists = preflight::check(&sdk, &dynamodb, table, &location).await?;
        if !table_exists && !matches!(command, Command::CreateTable) {
            return Err(preflight::missing_table(state.store.table(), &location));
        }
    }
    run(command, &state, registry_input)
        .await
        .map_err(|error| explain(error, &location))
}

fn explain(error: CommandError, location: &StoreLocation) -> Failure {
    let error = match error {
        CommandError::Unreadable(message) => return Failure::plain(message),
        CommandError::Api(error) => error,
    };
    match error {
        ApiError::StorageUnavailable(cause) => Failure::caused(
            format!("DynamoDB at {location} did not answer or failed"),
            cause,
        ),
        ApiError::ClusterUnavailable(cause) => Failure::caused(
            "the cluster did not answer or failed: check the kubeconfig's server, and that \
             the cluster runs",
            cause,
        ),
        ApiError::ClusterMisconfigured { detail, cause } => Failure::caused(detail, cause),
        ApiError::NoCluster => {
            Failure::plain("no kubeconfig stored: run `berth-admin cluster set` first")
        }
        ApiError::Internal(cause) => Failure::caused("internal error", cause),
        ApiError::ValidationFailed(detail) | ApiError::Conflict(detail) => Failure::plain(detail),
        other => Failure::plain(other.to_string()),
    }
}

/// A command's failure: the store's or the cluster's, or a file it could not read.
enum CommandError {
    Api(ApiError),
    Unreadable(String),
}

impl From<ApiError> for CommandError {
    fn from(error: ApiError) -> Self {
        Self::Api(error)
    }
}

/// Said as the API says it (`explain` reads the API's error).
impl From<berth_store::StoreError> for CommandError {
    fn from(error: berth_store::StoreError) -> Self {
        Self::Api(error.into())
    }
}

impl From<berth_cluster::ClusterError> for CommandError {
    fn from(error: berth_cluster::ClusterError) -> Self {
        Self::Api(error.into())
    }
}

fn unreadable(path: &std::path::Path, error: std::io::Error) -> CommandError {
    CommandError::Unreadable(format!("cannot read {}: {error}", path.display()))
}

/// A client with an administrator's kubeconfig FILE, for one command only.
async fn administrator(
    kubeconfig: &std::path::Path,
    context: Option<&str>,
    state: &AppState,
) -> Result<kube::Client, CommandError> {
    let yaml =
        std::fs::read_to_string(kubeconfig).map_err(|error| unreadable(kubeconfig, error))?;
    Ok(
        berth_api::access::client_from_kubeconfig(&yaml, context, state.config.cluster_timeout)
            .await?,
    )
}

/// What `registry set` is given: the registry, and with `--shared` the
/// installation's credentials (standard input).
struct RegistryInput {
    registry: Registry,
    given: Option<(Credential, Option<Credential>)>,
}

fn registry_input(prefix: &str, server: &str, shared: bool) -> Result<RegistryInput, String> {
    let registry = Registry::parse(prefix, server)?;
    let given = if shared {
        let input = std::io::read_to_string(std::io::stdin())
            .map_err(|error| format!("cannot read standard input: {error}"))?;
        Some(Credential::parse_input(&input)?)
    } else {
        None
    };
    Ok(RegistryInput { registry, given })
}

/// `registry set`: the token service's settings in the table (the prefix,
/// the server, and the shared credentials' digests it still accepts: those
/// given, else those of before unless `forget_shared`), then the cluster's
/// (and with shared credentials, their Secrets).
async fn set_registry(
    state: &AppState,
    input: RegistryInput,
    kubeconfig: &std::path::Path,
    context: Option<String>,
    forget_shared: bool,
) -> Result<(), CommandError> {
    let RegistryInput { registry, given } = input;
    let kept = RegistrySettings::load(&state.store)
        .await?
        .map(|settings| settings.shared)
        .unwrap_or_default();
    let client = administrator(kubeconfig, context.as_deref(), state).await?;
    registry::check_namespaces(&client).await?;
    let accepted = match &given {
        Some((push, pull)) => {
            let digest = |credential: &Credential, push: bool| SharedCredential {
                username: credential.username.clone(),
                digest: berth_domain::credentials::digest(&credential.password),
                push,
            };
            let mut accepted = vec![digest(push, true)];
            accepted.extend(pull.as_ref().map(|pull| digest(pull, false)));
            accepted
        }
        None if forget_shared => Vec::new(),
        None => kept,
    };
    // The token service first: a registry switched to it meanwhile finds
    // every credential in the cluster accepted.
    RegistrySettings {
        prefix: registry.prefix.clone(),
        server: registry.server.clone(),
        shared: accepted,
    }
    .store(&state.store)
    .await?;
    match &given {
        Some((push, pull)) => {
            registry::set(
                &client,
                &registry,
                registry::Credentials::Shared {
                    push,
                    pull: pull.as_ref(),
                },
            )
            .await?;
            println!(
                "registry set: images under {}, shared credentials for {} ({}); the token service accepts them too",
                registry.prefix,
                registry.server,
                if pull.is_some() {
                    "a pull-only credential for apps and builds"
                } else {
                    "apps pull with the push credential; builds pull anonymously"
                }
            );
        }
        None => {
            registry::set(&client, &registry, registry::Credentials::Scoped).await?;
            if forget_shared {
                registry::forget_shared(&client).await?;
            }
            println!(
                "registry set: images under {}, credentials minted by Berth for {} (one per build, one per environment){}",
                registry.prefix,
                registry.server,
                if forget_shared {
                    "; the shared credentials of before are removed"
                } else {
                    ""
                }
            );
        }
    }
    Ok(())
}

/// One command, against the table (and the cluster where it needs one):
/// each is a function of its own below.
async fn run(
    command: Command,
    state: &AppState,
    registry_input: Option<RegistryInput>,
) -> Result<(), CommandError> {
    match command {
        Command::CreateTable => create_table(state).await,
        Command::Audit {
            command: AuditCommand::Replay { log },
        } => replay_audit(state, &log).await,
        Command::Domains {
            command: DomainsCommand::Verify { hostname, org },
        } => verify_domain(state, &hostname, &org).await,
        Command::Bootstrap { org, email, json } => bootstrap(state, &org, &email, json).await,
        Command::Cluster { command } => match command {
            ClusterCommand::Set {
                kubeconfig,
                context,
                service_account,
                token_duration,
            } => set_cluster(state, &kubeconfig, context, service_account, token_duration).await,
            ClusterCommand::Show => show_cluster(state).await,
            ClusterCommand::Install {
                kubeconfig,
                context,
            } => install_cluster(state, &kubeconfig, context.as_deref()).await,
            ClusterCommand::Clear => clear_cluster(state).await,
        },
        Command::Registry { command } => match command {
            RegistryCommand::Set {
                kubeconfig,
                context,
                forget_shared,
                ..
            } => {
                let input = registry_input.ok_or_else(|| {
                    CommandError::Unreadable("the registry's settings were not read".into())
                })?;
                set_registry(state, input, &kubeconfig, context, forget_shared).await
            }
            RegistryCommand::Status {
                kubeconfig,
                context,
            } => registry_status(state, &kubeconfig, context.as_deref()).await,
            RegistryCommand::Certificate { signing_key, days } => {
                registry_certificate(state, signing_key, days).await
            }
        },
    }
}

/// `create-table`.
async fn create_table(state: &AppState) -> Result<(), CommandError> {
    let table = state.store.table();
    match schema::create(&state.store).await? {
        TableCreation::Created => println!("created table {table}"),
        TableCreation::AlreadyExisted => println!("table {table} already exists"),
    }
    Ok(())
}

/// `audit replay LOG`: the events a fallback log holds, into the table.
async fn replay_audit(state: &AppState, log: &std::path::Path) -> Result<(), CommandError> {
    let text = if log.as_os_str() == "-" {
        std::io::read_to_string(std::io::stdin())
    } else {
        std::fs::read_to_string(log)
    }
    .map_err(|error| unreadable(log, error))?;
    let stored = state.audit.replay(&text).await?;
    println!("stored {stored} audit events");
    Ok(())
}

/// `domains verify HOSTNAME --org ORG`: an operator vouches for a domain's
/// ownership; audited in that organization's log.
async fn verify_domain(state: &AppState, hostname: &str, org: &str) -> Result<(), CommandError> {
    let hostname = Hostname::parse(hostname)
        .map_err(|error| ApiError::ValidationFailed(format!("hostname: {error}")))?;
    let org = OrgName::parse(org)
        .map_err(|error| ApiError::ValidationFailed(format!("--org: {error}")))?;
    if !profile::organization_exists(&state.store, org.as_str()).await? {
        return Err(ApiError::ValidationFailed(format!("no organization {org}")).into());
    }
    // The App is updated now when the cluster can be reached; else
    // at the app's next write or the next sweep.
    let client = state.cluster.client().await.ok();
    proofs::verify_by_operator(
        &state.store,
        client.as_ref(),
        org.as_str(),
        hostname.as_str(),
    )
    .await?;
    let call = Call {
        actor_kind: ActorKind::Operator,
        actor: Some("berth-admin domains verify".to_owned()),
        action: berth_domain::operation::VERIFY_DOMAIN,
        target_kind: Some("domain".to_owned()),
        target: Some(hostname.to_string()),
        status: 200,
        ip: None,
        request_id: uuid::Uuid::new_v4().to_string(),
        project: None,
        detail: None,
    };
    state.audit.record(org.as_str(), &call).await;
    println!("{hostname} is verified for {org}");
    Ok(())
}

/// `bootstrap --org ORG --email EMAIL`: an organization and its first
/// owner, whose temporary password is shown once.
async fn bootstrap(
    state: &AppState,
    org: &str,
    email: &str,
    json: bool,
) -> Result<(), CommandError> {
    let owner = members::bootstrap(&state.store, org, email).await?;
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
    Ok(())
}

/// `cluster set KUBECONFIG`: the kubeconfig Berth reaches the cluster with,
/// stored as given or, with `--service-account`, one made for that account
/// (stored only if the account is held to what Berth owns).
async fn set_cluster(
    state: &AppState,
    kubeconfig: &std::path::Path,
    context: Option<String>,
    service_account: Option<ServiceAccountRef>,
    token_duration: std::time::Duration,
) -> Result<(), CommandError> {
    let yaml =
        std::fs::read_to_string(kubeconfig).map_err(|error| unreadable(kubeconfig, error))?;
    let Some(account) = service_account else {
        let summary = kubeconfig::store_kubeconfig(&state.store, yaml, context).await?;
        println!(
            "stored kubeconfig: context {}, cluster {} at {}",
            summary.context, summary.cluster, summary.server
        );
        return Ok(());
    };
    let made = service_account::service_account_kubeconfig(
        &yaml,
        context.as_deref(),
        &account,
        token_duration,
        state.config.cluster_timeout,
    )
    .await?;
    // Stored only if the account is held to what Berth owns (the
    // admission policy of infra/k8s is in force).
    let as_account =
        berth_api::access::client_from_kubeconfig(&made.yaml, None, state.config.cluster_timeout)
            .await?;
    install::require_confinement(&as_account).await?;
    let summary = kubeconfig::store_kubeconfig(&state.store, made.yaml, None).await?;
    println!(
        "stored kubeconfig of service account {account}: cluster {} at {}",
        summary.cluster, summary.server
    );
    println!(
        "its token expires at {}: run this command again before then to renew it",
        made.expires_at
    );
    Ok(())
}

/// `cluster show`: which cluster the stored kubeconfig reaches.
async fn show_cluster(state: &AppState) -> Result<(), CommandError> {
    match kubeconfig::load(&state.store).await? {
        None => println!("no kubeconfig stored"),
        Some(stored) => {
            let summary = kubeconfig::summary(&stored)?;
            println!("context:    {}", summary.context);
            println!("cluster:    {}", summary.cluster);
            println!("server:     {}", summary.server);
            println!("updated at: {}", summary.updated_at);
        }
    }
    Ok(())
}

/// `cluster install KUBECONFIG`: Berth's CRDs, with an administrator's
/// kubeconfig.
async fn install_cluster(
    state: &AppState,
    kubeconfig: &std::path::Path,
    context: Option<&str>,
) -> Result<(), CommandError> {
    let client = administrator(kubeconfig, context, state).await?;
    // Nothing without the admission policy's API: Berth's identities
    // would not be held to what Berth owns.
    install::require_admission_policies(&client).await?;
    for name in install::install_crds(&client).await? {
        println!("installed CRD {name}");
    }
    Ok(())
}

/// `cluster clear`: the stored kubeconfig removed.
async fn clear_cluster(state: &AppState) -> Result<(), CommandError> {
    if kubeconfig::clear(&state.store).await? {
        println!("stored kubeconfig removed");
    } else {
        println!("no kubeconfig was stored");
    }
    Ok(())
}

/// `registry status KUBECONFIG`: the registry set, and which environments
/// have their own pull credential yet.
async fn registry_status(
    state: &AppState,
    kubeconfig: &std::path::Path,
    context: Option<&str>,
) -> Result<(), CommandError> {
    let client = administrator(kubeconfig, context, state).await?;
    let status = registry::status(&client).await?;
    match &status.registry {
        Some(registry) => println!(
            "registry:     {} ({}), credentials {}",
            registry.prefix,
            registry.server,
            registry.credentials.as_str()
        ),
        None => println!("registry:     not set"),
    }
    println!(
        "environments: {} of {} have their own pull credential",
        status.environments_with_own, status.environments
    );
    for name in &status.waiting {
        println!("  waiting:    {name}");
    }
    Ok(())
}

/// `registry certificate`: the token service's certificate (PEM), made
/// with its signing key, for the registry to trust.
async fn registry_certificate(
    state: &AppState,
    signing_key: Option<String>,
    days: u32,
) -> Result<(), CommandError> {
    let source = signing_key
        .or_else(|| state.config.registry_signing_key.clone())
        .ok_or_else(|| {
            CommandError::Unreadable(
                "name the signing key: --signing-key kms:KEY|file:PATH, or BERTH_REGISTRY_SIGNING_KEY"
                    .into(),
            )
        })?;
    let source = signing::KeySource::parse(&source).map_err(CommandError::Unreadable)?;
    let signer = signing::Signer::load(&source)
        .await
        .map_err(|error| CommandError::Unreadable(error.to_string()))?;
    let pem = signing::certificate(&signer, "Berth registry token service", days)
        .await
        .map_err(CommandError::Unreadable)?;
    print!("{pem}");
    eprintln!("key id (the tokens' kid): {}", signer.key_id());
    Ok(())
}
