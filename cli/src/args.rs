//! The command line, as clap reads it: every command, its arguments and the
//! options every command takes.

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::completion;
use berth_domain::Invalid;
use berth_domain::names::{
    AppName, EnvName, EnvironmentName, Hostname, ProjectName, SecretKey, SecretName,
};

/// Berth's command line: sign in, link a directory to an environment,
/// deploy and wait, follow logs, set secrets, roll back.
///
/// Exit codes: 0 done, 1 failed (the API refused, a deploy failed, a wait
/// timed out), 2 usage, 3 not signed in (no credentials, or the API
/// answered 401), 4 not found (404), 141 standard output closed early
/// (`| head`).
#[derive(Debug, Parser)]
#[command(name = "berth", version, propagate_version = true)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

/// What every command takes.
#[derive(Debug, Args)]
pub struct Global {
    /// `table` (the default on a terminal), `plain` (the default
    /// otherwise: no borders, colours or spinners) or `json` (the API's
    /// records as it answered them).
    #[arg(short = 'o', long, global = true, value_enum)]
    pub output: Option<Format>,
    /// The project; by default `BERTH_PROJECT`, else the one `berth link`
    /// wrote here.
    #[arg(short = 'p', long, global = true, env = "BERTH_PROJECT", add = completion::projects())]
    pub project: Option<String>,
    /// The environment's short name; by default `BERTH_ENVIRONMENT`, else
    /// the linked one. (`--env`, its name before, is kept as an alias for
    /// one release: `berth env` is the app's variables.)
    #[arg(
        short = 'e',
        long = "environment",
        alias = "env",
        global = true,
        env = "BERTH_ENVIRONMENT",
        add = completion::environments()
    )]
    pub environment: Option<String>,
    /// The sign-in to use (`berth contexts` lists them); by default
    /// `BERTH_CONTEXT`, else the current one. With `login`, the name the
    /// new sign-in is kept under.
    #[arg(long, global = true, env = "BERTH_CONTEXT")]
    pub context: Option<String>,
    /// The app; by default `BERTH_APP`, else the linked one.
    #[arg(short = 'a', long, global = true, env = "BERTH_APP", add = completion::apps())]
    pub app: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Table,
    Plain,
    Json,
}

/// How long a `--wait` waits.
#[derive(Debug, Clone, Copy, Args)]
pub struct Wait {
    /// Wait until the new revision is available (or has failed), showing
    /// its progress; exit 0 only once it is available.
    #[arg(long)]
    pub wait: bool,
    /// How long `--wait` waits, in seconds, before it gives up (exit 1).
    #[arg(long, default_value_t = 600, value_name = "SECONDS")]
    pub timeout: u64,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Sign in: asks the API URL, email and password (without echo; read
    /// from standard input when it is not a terminal, a line each), replaces
    /// a temporary password, and stores a new API token (mode 0600).
    #[command(
        after_help = "Examples:\n  berth login --url https://berth.example.com\n  berth login --context work --url https://berth.example.com --email you@example.com"
    )]
    Login(Login),
    /// Revoke the stored token and remove it.
    #[command(after_help = "Examples:\n  berth logout\n  berth --context work logout")]
    Logout,
    /// Your sign-ins, one per Berth (or per user of one): `list` (the
    /// default), `use NAME` to make one the current one.
    #[command(
        after_help = "Examples:\n  berth login --context work --url https://berth.example.com\n  berth contexts use work\n  berth --context home apps"
    )]
    Contexts {
        #[command(subcommand)]
        command: Option<ContextsCommand>,
    },
    /// Who the credentials belong to.
    #[command(after_help = "Examples:\n  berth whoami\n  berth whoami -o json")]
    Whoami,
    /// This CLI's version, the API version it speaks, and the API's.
    #[command(after_help = "Examples:\n  berth version")]
    Version,
    /// Write `.berth.toml` here: later commands in this directory (and
    /// below) use its project, environment and app unless told otherwise.
    /// What it links must exist; `--show` prints the link in force.
    #[command(after_help = "Examples:\n  berth link shop staging web\n  berth link --show")]
    Link {
        #[arg(required_unless_present = "show")]
        project: Option<String>,
        #[arg(required_unless_present = "show")]
        environment: Option<String>,
        app: Option<String>,
        /// Print the link in force here (and where it is written), change
        /// nothing.
        #[arg(long, conflicts_with_all = ["project", "environment", "app"])]
        show: bool,
    },
    /// Remove this directory's `.berth.toml`.
    #[command(after_help = "Examples:\n  berth unlink")]
    Unlink,
    /// Make an app in the project's environment (`--project`, `--environment` or
    /// the link) and link this directory to it, in one step.
    #[command(
        after_help = "Examples:\n  berth init web --image nginx:1.27 --port 80 -p shop -e staging\n  berth init api --git-repo https://github.com/acme/api.git"
    )]
    Init(NewApp),
    /// The projects you can see (`list`, the default); make or remove one.
    #[command(
        after_help = "Examples:\n  berth projects\n  berth projects create shop\n  berth projects rm shop --yes"
    )]
    Projects {
        #[command(subcommand)]
        command: Option<ProjectsCommand>,
    },
    /// The environments of the project (`list`, the default); make, remove
    /// or restore one.
    #[command(
        after_help = "Examples:\n  berth envs -p shop\n  berth envs create staging -p shop\n  berth envs create prod --type production -p shop"
    )]
    Envs {
        #[command(subcommand)]
        command: Option<EnvsCommand>,
    },
    /// The apps of the environment (`list`, the default); make or remove
    /// one.
    #[command(
        after_help = "Examples:\n  berth apps\n  berth apps create web --image nginx:1.27 --port 80\n  berth apps rm web --yes"
    )]
    Apps {
        #[command(subcommand)]
        command: Option<AppsCommand>,
    },
    /// The app's processes and pods.
    #[command(after_help = "Examples:\n  berth ps\n  berth ps -a worker -o json")]
    Ps,
    /// The app at a glance: its state, revision, pods ready and URL.
    #[command(after_help = "Examples:\n  berth status\n  berth status -a web -p shop -e staging")]
    Status,
    /// Open the app's URL in a browser (`BROWSER`, else the system's
    /// opener); `--print` only prints it.
    #[command(after_help = "Examples:\n  berth open\n  berth open --print")]
    Open {
        #[arg(long)]
        print: bool,
    },
    /// Set processes' replicas and size: `PROCESS=N`, `PROCESS=MIN-MAX`
    /// (scaling on CPU between them), each with an optional `:SIZE`.
    #[command(after_help = "Examples:\n  berth scale web=3\n  berth scale web=2-6:medium worker=1")]
    Scale {
        #[arg(required = true, value_name = "PROCESS=N[:SIZE]")]
        processes: Vec<String>,
        #[command(flatten)]
        wait: Wait,
    },
    /// Deploy a new image, or build the app's source at a ref.
    #[command(
        after_help = "Examples:\n  berth deploy --image registry.example.com/web:1.4 --wait\n  berth deploy --ref main --wait"
    )]
    Deploy(Deploy),
    /// Roll the app back to an earlier revision (a new revision); without
    /// one, to the revision before the current one.
    #[command(after_help = "Examples:\n  berth rollback\n  berth rollback 12 --wait")]
    Rollback {
        revision: Option<i64>,
        #[command(flatten)]
        wait: Wait,
    },
    /// Promote the app to another environment of the project.
    #[command(after_help = "Examples:\n  berth promote --to production --wait")]
    Promote {
        /// The target environment's short name.
        #[arg(long)]
        to: String,
        #[command(flatten)]
        wait: Wait,
    },
    /// Restart every process of the app (no new revision).
    #[command(after_help = "Examples:\n  berth restart --wait")]
    Restart {
        /// Wait until every pod has been replaced and the app is available.
        #[arg(long)]
        wait: bool,
        #[arg(long, default_value_t = 600, value_name = "SECONDS")]
        timeout: u64,
    },
    /// Run a command once in a fresh pod of the app (`berth run -- CMD`),
    /// printing its output and exiting with its exit status; or, without
    /// `--`, run a scheduled process now.
    #[command(after_help = "Examples:\n  berth run -- ./manage.py migrate\n  \
        berth run --size-of worker --timeout 7200 -- sh -c 'rake reindex'\n  \
        berth run nightly")]
    Run {
        /// Which scheduled process to run now; optional when the app has one.
        #[arg(conflicts_with_all = ["command", "size_of", "timeout"])]
        process: Option<String>,
        /// The command and its arguments, after `--`: run with the app's
        /// current image, env and secrets (no shell unless it names one).
        #[arg(last = true, value_name = "CMD")]
        command: Vec<String>,
        /// The process whose size (CPU and memory) the command gets; the
        /// app's first process by default.
        #[arg(long, value_name = "PROCESS")]
        size_of: Option<String>,
        /// Stop the command after this many seconds (at most 86400).
        #[arg(long, default_value_t = 3600, value_name = "SECONDS")]
        timeout: u64,
        /// Print the output's control characters as they are.
        #[arg(long)]
        raw: bool,
    },
    /// The app's release history, newest first.
    #[command(after_help = "Examples:\n  berth releases\n  berth releases --limit 5 -o json")]
    Releases {
        /// Only the newest N.
        #[arg(long, value_name = "N")]
        limit: Option<usize>,
    },
    /// The app's environment variables (`list`, the default; `get`, `set`,
    /// `unset`).
    #[command(
        after_help = "Examples:\n  berth env\n  berth env get WELCOME\n  berth env set WELCOME=hello\n  berth env set DATABASE_URL --secret db/url\n  berth env unset WELCOME"
    )]
    Env {
        #[command(subcommand)]
        command: Option<EnvCommand>,
    },
    /// The environment's secrets (values are never shown).
    #[command(subcommand)]
    #[command(
        after_help = "Examples:\n  berth secrets list\n  berth secrets set db < db.env\n  berth secrets set tls --key tls.crt --from-file cert.pem\n  berth secrets rm db"
    )]
    Secrets(SecretsCommand),
    /// The app's builds from source.
    #[command(subcommand)]
    #[command(
        after_help = "Examples:\n  berth builds list\n  berth builds logs --follow\n  berth builds cancel 7"
    )]
    Builds(BuildsCommand),
    /// The app's logs.
    #[command(
        after_help = "Examples:\n  berth logs\n  berth logs -f --process web\n  berth logs --release 12"
    )]
    Logs(Logs),
    /// Whether each of the app's hostnames points at the gateway, is
    /// proven yours, and its certificate (`check`, the default); `add` and
    /// `rm` change the app's hostnames.
    #[command(
        after_help = "Examples:\n  berth domains\n  berth domains add shop.example.com\n  berth domains rm shop.example.com"
    )]
    Domains {
        #[command(subcommand)]
        command: Option<DomainsCommand>,
    },
    /// The template catalogue (`list`, the default), and deploying one.
    #[command(
        after_help = "Examples:\n  berth templates\n  berth templates deploy postgres --name db"
    )]
    Templates {
        #[command(subcommand)]
        command: Option<TemplatesCommand>,
    },
    /// The audit log, newest first: the project's (`--project`, else the
    /// linked one), else the organization's.
    #[command(after_help = "Examples:\n  berth audit --limit 20\n  berth audit --org")]
    Audit {
        /// Events per page (1 to 200).
        #[arg(long, default_value_t = 50)]
        limit: u32,
        /// Events older than this (a page's `next_before`).
        #[arg(long)]
        before: Option<u64>,
        /// The organization's log, even where a project is linked.
        #[arg(long, conflicts_with = "project")]
        org: bool,
    },
    /// Your API tokens.
    #[command(
        after_help = "Examples:\n  berth tokens\n  berth tokens create ci --ceiling deploy --expires-in-days 30\n  berth tokens revoke ID"
    )]
    Tokens {
        #[command(subcommand)]
        command: Option<TokensCommand>,
    },
    /// The members of your organization (`list`, the default), or with
    /// `--project` the project's; invite, change roles, remove.
    #[command(
        after_help = "Examples:\n  berth members\n  berth members invite ana@example.com --role member\n  berth members role ana@example.com developer --project shop\n  berth members rm ana@example.com --yes"
    )]
    Members {
        #[command(subcommand)]
        command: Option<MembersCommand>,
    },
    /// The project's deploy tokens (`list`, the default): made by the
    /// project, outliving who made them.
    #[command(
        after_help = "Examples:\n  berth deploy-tokens -p shop\n  berth deploy-tokens create ci --ceiling deploy --only staging\n  berth deploy-tokens rm ID"
    )]
    DeployTokens {
        #[command(subcommand)]
        command: Option<DeployTokensCommand>,
    },
    /// A completion script for your shell, on standard output.
    #[command(
        after_help = "Examples:\n  berth completions bash > ~/.local/share/bash-completion/completions/berth"
    )]
    Completions { shell: clap_complete::Shell },
}

#[derive(Debug, Args)]
pub struct Login {
    /// The API's URL, e.g. http://127.0.0.1:3000.
    #[arg(long, env = "BERTH_URL")]
    pub url: Option<String>,
    #[arg(long)]
    pub email: Option<String>,
    /// The name the new token is listed under.
    #[arg(long, default_value = "berth CLI")]
    pub token_name: String,
    /// Days until the token expires (1 to 365); `berth login` again then.
    #[arg(long, default_value_t = 90)]
    pub expires_in_days: u32,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("what").required(true).args(["image", "git_ref"])))]
pub struct Deploy {
    /// The container image to run, e.g. `nginx:1.27`.
    #[arg(long)]
    pub image: Option<String>,
    /// Build the app's source at this branch, tag or commit.
    #[arg(long = "ref", value_name = "REF")]
    pub git_ref: Option<String>,
    #[command(flatten)]
    pub wait: Wait,
}

#[derive(Debug, Subcommand)]
pub enum EnvCommand {
    /// The variables (values only if you may read them).
    List,
    /// One variable's value (or the secret key it comes from).
    Get {
        #[arg(value_parser = parsed::<EnvName>)]
        name: EnvName,
    },
    /// Set variables: `NAME=VALUE …` (a new revision; secrets belong in
    /// `berth secrets`), or `NAME --secret SECRET/KEY`: the variable takes
    /// its value from a key of one of the environment's secrets.
    #[command(
        after_help = "Examples:\n  berth env set WELCOME=hello LOG_LEVEL=debug\n  berth secrets set db < db.env && berth env set DATABASE_URL --secret db/url"
    )]
    Set {
        #[arg(required = true, value_name = "NAME=VALUE", value_parser = Assignment::parse)]
        pairs: Vec<Assignment>,
        /// The secret and key the one variable named takes its value from.
        #[arg(long, value_name = "SECRET/KEY", value_parser = SecretRef::parse)]
        secret: Option<SecretRef>,
        #[command(flatten)]
        wait: Wait,
    },
    /// Remove variables.
    Unset {
        #[arg(required = true, value_name = "NAME", value_parser = parsed::<EnvName>)]
        names: Vec<EnvName>,
        #[command(flatten)]
        wait: Wait,
    },
}

#[derive(Debug, Subcommand)]
pub enum SecretsCommand {
    /// The secrets and their keys.
    List,
    /// Create or replace a secret from `KEY=VALUE` lines on standard input
    /// or in a file (never from arguments: they land in shell history).
    #[command(
        after_help = "Examples:\n  berth secrets set db < db.env\n  printf 'DATABASE_URL=%s\\n' \"$URL\" | berth secrets set db --to-app --wait"
    )]
    Set {
        #[arg(value_parser = parsed::<SecretName>)]
        name: SecretName,
        /// Read from this file instead of standard input.
        #[arg(long, value_name = "PATH")]
        from_file: Option<std::path::PathBuf>,
        /// The whole input is the value of this one key (e.g. a
        /// certificate), not `KEY=VALUE` lines.
        #[arg(long, value_parser = parsed::<SecretKey>)]
        key: Option<SecretKey>,
        /// Also give the app (linked, or `-a`) a variable per key, named as
        /// the key, its value from the secret (as `env set KEY --secret
        /// NAME/KEY` for each): one step, as `fly secrets set` does.
        #[arg(long)]
        to_app: bool,
        #[command(flatten)]
        wait: Wait,
    },
    /// Delete a secret.
    Rm {
        #[arg(value_parser = parsed::<SecretName>)]
        name: SecretName,
    },
}

#[derive(Debug, Subcommand)]
pub enum BuildsCommand {
    /// The app's builds, newest first.
    List,
    /// Cancel a queued or running build.
    Cancel {
        /// The build's number; the newest by default.
        build: Option<i64>,
    },
    /// A build's logs, one section per step.
    Logs {
        /// The build's number; the newest by default.
        build: Option<i64>,
        /// Lines per step (1 to 2000).
        #[arg(long, default_value_t = 200)]
        tail: u32,
        /// Keep printing new lines until the build ends; exit 0 only if it
        /// succeeded.
        #[arg(short = 'f', long)]
        follow: bool,
        /// Print control characters as they came (escape sequences reach
        /// the terminal); by default they are shown as `less` shows them.
        #[arg(long)]
        raw: bool,
    },
}

#[derive(Debug, Args)]
pub struct Logs {
    /// Only this process's pods.
    #[arg(long)]
    pub process: Option<String>,
    /// Lines per pod (1 to 2000).
    #[arg(long, default_value_t = 200)]
    pub tail: u32,
    /// The previous (crashed) container's logs.
    #[arg(long)]
    pub previous: bool,
    /// The release command's logs of this revision.
    #[arg(long, value_name = "REVISION")]
    pub release: Option<i64>,
    /// Keep printing new lines (every 2 s) until interrupted, across
    /// restarts and new pods; with `-o json`, one JSON object per line.
    #[arg(short = 'f', long, conflicts_with = "previous")]
    pub follow: bool,
    /// Print control characters as they came (escape sequences reach the
    /// terminal); by default they are shown as `less` shows them.
    #[arg(long)]
    pub raw: bool,
}

#[derive(Debug, Subcommand)]
pub enum TokensCommand {
    /// Your tokens (the default).
    List,
    /// Make a token; its secret is printed this once.
    #[command(
        after_help = "Examples:\n  berth tokens create ci --ceiling deploy --expires-in-days 30\n  BERTH_TOKEN=$(berth tokens create ci -o plain) …"
    )]
    Create {
        /// The name it is listed under.
        name: String,
        /// Days until it expires (1 to 365); never, if omitted.
        #[arg(long)]
        expires_in_days: Option<u32>,
        /// The most it may do (`read` or `deploy`); your own rights if
        /// omitted.
        #[arg(long, value_enum)]
        ceiling: Option<TokenCeiling>,
    },
    /// Revoke one of your tokens, by id.
    Revoke { id: String },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TokenCeiling {
    Read,
    Deploy,
}

impl From<TokenCeiling> for berth_domain::Ceiling {
    fn from(ceiling: TokenCeiling) -> Self {
        match ceiling {
            TokenCeiling::Read => Self::Read,
            TokenCeiling::Deploy => Self::Deploy,
        }
    }
}

/// Removing is for good (a production environment's after its grace):
/// asked on a terminal, `--yes` in scripts.
#[derive(Debug, Clone, Copy, Args)]
pub struct Confirm {
    /// Do not ask: remove it.
    #[arg(long, short = 'y')]
    pub yes: bool,
}

#[derive(Debug, Subcommand)]
pub enum ProjectsCommand {
    /// The projects you can see (the default).
    List,
    /// Make a project.
    #[command(after_help = "Example:\n  berth projects create shop --display-name \"The shop\"")]
    Create {
        /// A DNS label (letters, digits, `-`), at most 40 characters.
        #[arg(value_parser = new_name::<ProjectName>)]
        name: ProjectName,
        /// How it is shown; its name if omitted.
        #[arg(long)]
        display_name: Option<String>,
        #[arg(long)]
        description: Option<String>,
    },
    /// Remove an empty project.
    Rm {
        name: String,
        #[command(flatten)]
        confirm: Confirm,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EnvironmentType {
    Standard,
    Production,
    Preview,
}

#[derive(Debug, Subcommand)]
pub enum EnvsCommand {
    /// The environments of the project (the default).
    List,
    /// Make an environment of the project.
    #[command(
        after_help = "Examples:\n  berth envs create staging --wait\n  berth envs create prod --type production --cpu 8 --memory 16Gi --pods 50"
    )]
    Create {
        /// A DNS label (letters, digits, `-`), at most 22 characters.
        #[arg(value_parser = new_name::<EnvironmentName>)]
        name: EnvironmentName,
        /// `production` environments are purged only after a grace
        /// period, during which `berth envs restore` brings them back.
        #[arg(long = "type", value_enum, default_value = "standard")]
        env_type: EnvironmentType,
        /// The CPU all its pods may request together, e.g. `4` or `500m`.
        #[arg(long)]
        cpu: Option<String>,
        /// The memory all its pods may request together, e.g. `8Gi`.
        #[arg(long)]
        memory: Option<String>,
        /// How many pods it may run.
        #[arg(long)]
        pods: Option<i32>,
        /// Wait until it is ready for apps (its namespace provisioned).
        #[arg(long)]
        wait: bool,
        /// How long `--wait` waits, in seconds, before it gives up (exit 1).
        #[arg(long, default_value_t = 600, value_name = "SECONDS")]
        timeout: u64,
    },
    /// Remove an environment and everything in it (a production one after
    /// its grace period).
    Rm {
        name: String,
        #[command(flatten)]
        confirm: Confirm,
        /// Wait until it is gone (not for a production one: it is kept
        /// through its grace period).
        #[arg(long)]
        wait: bool,
        /// How long `--wait` waits, in seconds, before it gives up (exit 1).
        #[arg(long, default_value_t = 600, value_name = "SECONDS")]
        timeout: u64,
    },
    /// Bring back a production environment removed within its grace period.
    Restore { name: String },
}

#[derive(Debug, Subcommand)]
pub enum AppsCommand {
    /// The apps of the environment (the default).
    List,
    /// Make an app in the environment.
    #[command(
        after_help = "Examples:\n  berth apps create web --image nginx:1.27 --port 80\n  berth apps create api --git-repo https://github.com/acme/api.git --ref main"
    )]
    Create(NewApp),
    /// Remove an app and everything it owns (its volumes only with
    /// `--delete-volumes`).
    Rm {
        name: String,
        /// Remove its volumes too (kept otherwise).
        #[arg(long)]
        delete_volumes: bool,
        #[command(flatten)]
        confirm: Confirm,
    },
}

/// An app to make: from an image, or from a repository built at a ref.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("source").required(true).multiple(true).args(["image", "git_repo"])))]
pub struct NewApp {
    /// A DNS label (letters, digits, `-`), starting with a letter, at most
    /// 40 characters.
    #[arg(value_parser = new_name::<AppName>)]
    pub name: AppName,
    /// The container image to run, e.g. `nginx:1.27`.
    #[arg(long)]
    pub image: Option<String>,
    /// An `https://` git repository to build the image from.
    #[arg(long)]
    pub git_repo: Option<String>,
    /// The branch, tag or commit to build; the repository's default branch
    /// if omitted.
    #[arg(long = "ref", value_name = "REF", requires = "git_repo")]
    pub git_ref: Option<String>,
    /// The port it listens on (an HTTP process: it gets a URL).
    #[arg(long)]
    pub port: Option<i64>,
}

#[derive(Debug, Subcommand)]
pub enum DomainsCommand {
    /// Each hostname's DNS, proof of ownership and certificate (the
    /// default).
    Check,
    /// Add a hostname to the app (then prove it: `berth domains` shows the
    /// TXT record).
    Add {
        #[arg(value_parser = parsed::<Hostname>)]
        hostname: Hostname,
    },
    /// Remove a hostname from the app.
    Rm {
        #[arg(value_parser = parsed::<Hostname>)]
        hostname: Hostname,
    },
}

#[derive(Debug, Subcommand)]
pub enum TemplatesCommand {
    /// The catalogue (the default).
    List,
    /// Deploy a template into the environment as an app.
    #[command(
        after_help = "Example:\n  berth templates deploy postgres --name db --set POSTGRES_DB=shop"
    )]
    Deploy {
        template: String,
        /// The app's name; the template's by default.
        #[arg(long)]
        name: Option<String>,
        /// A value for one of the template's variables, `NAME=VALUE`.
        #[arg(long = "set", value_name = "NAME=VALUE")]
        values: Vec<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum MembersCommand {
    /// The members (the default): the organization's, or the project's
    /// with `--project`.
    List,
    /// Invite someone to the organization; a new account's temporary
    /// password is printed this once.
    #[command(
        after_help = "Examples:\n  berth members invite ana@example.com --role member\n  berth members role ana@example.com developer --project shop"
    )]
    Invite {
        email: String,
        /// `owner`, `admin`, `developer`, `viewer` or `member` (nothing
        /// beyond project roles).
        #[arg(long, default_value = "member")]
        role: String,
        #[arg(long)]
        display_name: Option<String>,
    },
    /// Change a member's role: the organization's, or with `--project`
    /// the role in that project (`viewer`, `operator`, `developer`,
    /// `admin`).
    Role {
        /// The member's email or id.
        member: String,
        role: String,
    },
    /// Remove a member from the organization, or with `--project` only
    /// their role in that project.
    Rm {
        /// The member's email or id.
        member: String,
        #[command(flatten)]
        confirm: Confirm,
    },
}

#[derive(Debug, Subcommand)]
pub enum DeployTokensCommand {
    /// The project's deploy tokens (the default).
    List,
    /// Make one; its secret is printed this once, alone on standard output.
    Create {
        name: String,
        #[arg(long)]
        expires_in_days: Option<u32>,
        #[arg(long, value_enum)]
        ceiling: Option<TokenCeiling>,
        /// Only these environments of the project (repeat it); all by
        /// default.
        #[arg(long = "only", value_name = "ENV")]
        environments: Vec<String>,
    },
    /// Revoke one, by id.
    Rm { id: String },
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory as _;

    /// clap's own checks of the whole command line (unique flags, valid
    /// defaults), which otherwise only fail when a command is run.
    #[test]
    fn the_command_line_is_consistent() {
        super::Cli::command().debug_assert();
    }

    /// A value the API would refuse is refused as the argument the user
    /// typed, with the API's rule (never the API's field path).
    #[test]
    fn an_invalid_argument_is_named_as_typed() {
        use clap::Parser as _;
        let refusal = |args: &[&str]| {
            super::Cli::try_parse_from(args)
                .err()
                .map(|error| error.to_string())
                .unwrap_or_default()
        };
        let bad_name = refusal(&["berth", "env", "set", "A=1", "1BAD=x"]);
        assert!(
            bad_name.contains("invalid value '1BAD=x' for '<NAME=VALUE>...': NAME "),
            "{bad_name}"
        );
        assert!(!bad_name.contains("env["), "{bad_name}");
        let reference = refusal(&["berth", "env", "set", "DB", "--secret", "db"]);
        assert!(
            reference.contains("'db' for '--secret <SECRET/KEY>': give SECRET/KEY"),
            "{reference}"
        );
        let key = refusal(&["berth", "env", "set", "DB", "--secret", "db/a b"]);
        assert!(key.contains("KEY "), "{key}");
        let environment = refusal(&["berth", "envs", "create", "stag--ing"]);
        assert!(
            environment.contains("'stag--ing' for '<NAME>': must not contain '--'"),
            "{environment}"
        );
        let host = refusal(&["berth", "domains", "add", "*.example.com"]);
        assert!(host.contains("'*.example.com' for '<HOSTNAME>'"), "{host}");
        assert!(
            super::Cli::try_parse_from(["berth", "env", "set", "DB", "--secret", "db/url"]).is_ok()
        );
    }

    /// `--help` of every command shows how it is used.
    #[test]
    fn every_command_has_examples() {
        let cli = super::Cli::command();
        let missing: Vec<&str> = cli
            .get_subcommands()
            .filter(|command| command.get_name() != "help")
            .filter(|command| {
                !command
                    .get_after_help()
                    .is_some_and(|help| help.to_string().starts_with("Example"))
            })
            .map(|command| command.get_name())
            .collect();
        assert!(missing.is_empty(), "no examples in --help: {missing:?}");
    }
}

#[derive(Debug, Subcommand)]
pub enum ContextsCommand {
    /// The sign-ins, the current one marked (the default).
    List,
    /// Make NAME the current sign-in.
    Use { name: String },
}

/// A value of the API's own type, parsed by its parser as clap reads the
/// argument: a refused one is `invalid value 'X' for '<NAME>': the rule`,
/// naming the user's argument (never the API's field path).
trait Parsed: Sized {
    fn parse(value: &str) -> Result<Self, Invalid>;
}

/// The name of something about to be made (its parser's `parse_new`: no
/// `--`).
trait NewName: Sized {
    fn parse_new(value: &str) -> Result<Self, Invalid>;
}

macro_rules! parsed_by {
    ($($name:ty),+) => {$(
        impl Parsed for $name {
            fn parse(value: &str) -> Result<Self, Invalid> {
                <$name>::parse(value)
            }
        }
    )+};
}
parsed_by!(EnvName, SecretName, SecretKey, Hostname);

macro_rules! new_names {
    ($($name:ty),+) => {$(
        impl NewName for $name {
            fn parse_new(value: &str) -> Result<Self, Invalid> {
                <$name>::parse_new(value)
            }
        }
    )+};
}
new_names!(ProjectName, EnvironmentName, AppName);

fn parsed<T: Parsed>(value: &str) -> Result<T, String> {
    T::parse(value).map_err(|rule| rule.to_string())
}

fn new_name<T: NewName>(value: &str) -> Result<T, String> {
    T::parse_new(value).map_err(|rule| rule.to_string())
}

/// `NAME=VALUE`, or `NAME` alone (with `--secret`).
#[derive(Debug, Clone)]
pub struct Assignment {
    pub name: EnvName,
    pub value: Option<String>,
}

impl Assignment {
    fn parse(argument: &str) -> Result<Self, String> {
        let (name, value) = match argument.split_once('=') {
            Some((name, value)) => (name, Some(value.to_owned())),
            None => (argument, None),
        };
        let name = EnvName::parse(name).map_err(|rule| format!("NAME {rule}"))?;
        Ok(Self { name, value })
    }
}

/// `SECRET/KEY`: a key of one of the environment's secrets.
#[derive(Debug, Clone)]
pub struct SecretRef {
    pub secret: SecretName,
    pub key: SecretKey,
}

impl SecretRef {
    fn parse(argument: &str) -> Result<Self, String> {
        let (secret, key) = argument
            .split_once('/')
            .ok_or("give SECRET/KEY, e.g. db/url")?;
        Ok(Self {
            secret: SecretName::parse(secret).map_err(|rule| format!("SECRET {rule}"))?,
            key: SecretKey::parse(key).map_err(|rule| format!("KEY {rule}"))?,
        })
    }
}
