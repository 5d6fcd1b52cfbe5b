//! What the CLI keeps between commands: the sign-in (URL and token, in the
//! user's config directory, mode 0600), and a directory's link to a
//! project, environment and app (`.berth.toml`).

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::args::Global;
use crate::failure::{Failure, Result};

/// The sign-in `berth login` stores. No `Debug`: it holds the token.
#[derive(Clone, Serialize, Deserialize)]
pub struct Credentials {
    pub url: String,
    pub token: String,
    /// The token's id, which `berth logout` revokes, and the next `berth
    /// login` of the same user to the same API.
    pub token_id: Option<String>,
    pub email: Option<String>,
}

/// The credentials a command uses: `BERTH_URL` and `BERTH_TOKEN` (for CI)
/// win over the stored file. No `Debug`: it holds the token.
#[derive(Clone)]
pub struct SignIn {
    pub url: String,
    pub token: String,
    /// The stored token's id; none when the token came from the environment.
    pub token_id: Option<String>,
    /// Whether the token is `BERTH_TOKEN`'s (else the stored one).
    pub from_environment: bool,
}

const CREDENTIALS: &str = "credentials.toml";
pub const LINK_FILE: &str = ".berth.toml";

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|value| !value.is_empty())
}

/// `BERTH_CONFIG_DIR`, else the user's config directory's `berth`
/// (`~/.config/berth` on Linux).
pub fn config_dir() -> Result<PathBuf> {
    if let Some(dir) = env("BERTH_CONFIG_DIR") {
        return Ok(PathBuf::from(dir));
    }
    directories::BaseDirs::new()
        .map(|dirs| dirs.config_dir().join("berth"))
        .ok_or_else(|| {
            Failure::failed("no home directory to keep the sign-in in: set BERTH_CONFIG_DIR")
        })
}

pub fn credentials_path() -> Result<PathBuf> {
    Ok(config_dir()?.join(CREDENTIALS))
}

/// Every sign-in kept, by context name (kubectl's word: one per Berth, or
/// per user of one), and the one commands use unless told otherwise
/// (`--context`, `BERTH_CONTEXT`). No `Debug`: it holds tokens.
#[derive(Clone, Default, Serialize, Deserialize)]
pub struct SignIns {
    pub current: String,
    #[serde(default)]
    pub contexts: std::collections::BTreeMap<String, Credentials>,
}

/// The context of a sign-in made without `--context`, and of the one
/// sign-in stored before contexts.
pub const DEFAULT_CONTEXT: &str = "default";

/// What `credentials.toml` holds: its sign-ins, or one sign-in alone as
/// written before contexts (read as the context `default`).
#[derive(Deserialize)]
#[serde(untagged)]
enum Stored {
    Contexts(SignIns),
    One(Credentials),
}

/// Every stored sign-in (none when nothing is stored).
pub fn sign_ins() -> Result<SignIns> {
    let path = credentials_path()?;
    let text = match fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(SignIns::default()),
        Err(e) => return Err(Failure::failed(format!("reading {}: {e}", path.display()))),
    };
    let stored: Stored = toml::from_str(&text).map_err(|e| {
        Failure::failed(format!(
            "{} is not a sign-in ({e}); `berth login` again",
            path.display()
        ))
    })?;
    Ok(match stored {
        Stored::Contexts(sign_ins) => sign_ins,
        Stored::One(credentials) => SignIns {
            current: DEFAULT_CONTEXT.to_owned(),
            contexts: [(DEFAULT_CONTEXT.to_owned(), credentials)].into(),
        },
    })
}

impl SignIns {
    /// The context `named`, else the current one.
    pub fn chosen<'a>(&'a self, named: Option<&'a str>) -> &'a str {
        named.unwrap_or(&self.current)
    }
}

/// The sign-in of context `named` (else the current one), if stored. A
/// context named but not stored is an error: a typo must not fall back.
pub fn stored(named: Option<&str>) -> Result<Option<Credentials>> {
    let sign_ins = sign_ins()?;
    let chosen = sign_ins.chosen(named);
    match sign_ins.contexts.get(chosen) {
        Some(credentials) => Ok(Some(credentials.clone())),
        None if named.is_some() => Err(Failure::NotSignedIn(format!(
            "no sign-in named {chosen}: `berth contexts` lists them, `berth login --context {chosen}` makes it"
        ))),
        None => Ok(None),
    }
}

/// Stores `credentials` as context `named` (else the current one, else
/// `default`) and makes it the current one.
pub fn store(named: Option<&str>, credentials: &Credentials) -> Result<PathBuf> {
    let mut sign_ins = sign_ins()?;
    let name = match named {
        Some(name) => name.to_owned(),
        None if sign_ins.current.is_empty() => DEFAULT_CONTEXT.to_owned(),
        None => sign_ins.current.clone(),
    };
    sign_ins.contexts.insert(name.clone(), credentials.clone());
    sign_ins.current = name;
    write_sign_ins(&sign_ins)
}

/// Makes context `name` the current one.
pub fn use_context(name: &str) -> Result<()> {
    let mut sign_ins = sign_ins()?;
    if !sign_ins.contexts.contains_key(name) {
        return Err(Failure::NotSignedIn(format!(
            "no sign-in named {name}: `berth login --context {name}` makes it"
        )));
    }
    sign_ins.current = name.to_owned();
    write_sign_ins(&sign_ins).map(|_| ())
}

/// Writes the sign-ins readable by their owner alone: a new file of mode
/// 0600 renamed over the old one, in a directory of mode 0700.
fn write_sign_ins(sign_ins: &SignIns) -> Result<PathBuf> {
    let dir = config_dir()?;
    let failed = |what: &str, e: std::io::Error| Failure::failed(format!("{what}: {e}"));
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
        .create(&dir)
        .map_err(|e| failed(&format!("creating {}", dir.display()), e))?;
    let path = dir.join(CREDENTIALS);
    let temporary = dir.join(format!(".{CREDENTIALS}.{}", std::process::id()));
    let text = toml::to_string(sign_ins)
        .map_err(|e| Failure::failed(format!("writing the sign-in: {e}")))?;
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let written = options
        .open(&temporary)
        .and_then(|mut file| {
            file.write_all(text.as_bytes())
                .and_then(|()| file.sync_all())
        })
        .and_then(|()| fs::rename(&temporary, &path));
    if let Err(e) = written {
        let _ = fs::remove_file(&temporary);
        return Err(failed(&format!("writing {}", path.display()), e));
    }
    Ok(path)
}

/// Forgets context `named` (else the current one); the current one then
/// is the first left, and with none left the file goes.
pub fn forget(named: Option<&str>) -> Result<()> {
    let mut sign_ins = sign_ins()?;
    let name = sign_ins.chosen(named).to_owned();
    sign_ins.contexts.remove(&name);
    if sign_ins.contexts.is_empty() {
        let path = credentials_path()?;
        return match fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Failure::failed(format!("removing {}: {e}", path.display()))),
        };
    }
    if sign_ins.current == name {
        sign_ins.current = sign_ins.contexts.keys().next().cloned().unwrap_or_default();
    }
    write_sign_ins(&sign_ins).map(|_| ())
}

/// The credentials of this command. A stored token is only ever sent to
/// the URL it was made for: `BERTH_URL` naming another API needs
/// `BERTH_TOKEN` too.
pub fn sign_in(context: Option<&str>) -> Result<SignIn> {
    let (url, token) = (env("BERTH_URL"), env("BERTH_TOKEN"));
    if let (Some(url), Some(token)) = (&url, &token) {
        // CI: nothing stored is read.
        return Ok(SignIn {
            url: url.clone(),
            token: token.clone(),
            token_id: None,
            from_environment: true,
        });
    }
    let stored = stored(context)?;
    if let Some(token) = token {
        let url = url.or_else(|| stored.map(|s| s.url)).ok_or_else(|| {
            Failure::NotSignedIn("BERTH_TOKEN is set but BERTH_URL is not".into())
        })?;
        return Ok(SignIn {
            url,
            token,
            token_id: None,
            from_environment: true,
        });
    }
    let Some(stored) = stored else {
        return Err(Failure::NotSignedIn(
            "not signed in: run `berth login`, or set BERTH_URL and BERTH_TOKEN".into(),
        ));
    };
    if let Some(url) = url {
        let same = |a: &str| crate::api::parse_url(a).ok();
        if same(&url) != same(&stored.url) {
            return Err(Failure::NotSignedIn(format!(
                "BERTH_URL is {url} but the stored sign-in is for {}: set BERTH_TOKEN too, \
                 or `berth login` to it",
                stored.url
            )));
        }
    }
    Ok(SignIn {
        url: stored.url,
        token: stored.token,
        token_id: stored.token_id,
        from_environment: false,
    })
}

/// What `berth link` writes.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Link {
    pub project: String,
    pub environment: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app: Option<String>,
}

pub fn write_link(dir: &Path, link: &Link) -> Result<PathBuf> {
    let path = dir.join(LINK_FILE);
    let text = format!(
        "# Written by `berth link`: the project, environment and app of berth's\n\
         # commands run in this directory and below, unless told otherwise.\n{}",
        toml::to_string(link).map_err(|e| Failure::failed(format!("writing the link: {e}")))?
    );
    fs::write(&path, text)
        .map_err(|e| Failure::failed(format!("writing {}: {e}", path.display())))?;
    Ok(path)
}

/// The nearest `.berth.toml`, in this directory or one above it.
pub fn find_link() -> Result<Option<Link>> {
    Ok(find_link_file()?.map(|(_, link)| link))
}

/// The nearest `.berth.toml` and where it is.
pub fn find_link_file() -> Result<Option<(PathBuf, Link)>> {
    let Ok(here) = std::env::current_dir() else {
        return Ok(None);
    };
    for dir in here.ancestors() {
        if let Some(link) = read_link(dir)? {
            return Ok(Some((dir.join(LINK_FILE), link)));
        }
    }
    Ok(None)
}

/// The link written in `dir` itself, if any.
pub fn read_link(dir: &Path) -> Result<Option<Link>> {
    let path = dir.join(LINK_FILE);
    match fs::read_to_string(&path) {
        Ok(text) => toml::from_str(&text)
            .map(Some)
            .map_err(|e| Failure::Usage(format!("{} is not a link ({e})", path.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Failure::failed(format!("reading {}: {e}", path.display()))),
    }
}

/// Removes the link written in `dir`; the link it was, if there was one.
pub fn remove_link(dir: &Path) -> Result<Option<Link>> {
    let Some(link) = read_link(dir)? else {
        return Ok(None);
    };
    let path = dir.join(LINK_FILE);
    fs::remove_file(&path)
        .map_err(|e| Failure::failed(format!("removing {}: {e}", path.display())))?;
    Ok(Some(link))
}

/// Where a command acts: its flags, else the link.
#[derive(Debug, Clone)]
pub struct Context {
    pub project: Option<String>,
    pub environment: Option<String>,
    pub app: Option<String>,
}

impl Context {
    pub fn resolve(global: &Global) -> Result<Self> {
        let link = find_link()?.unwrap_or_default();
        // A flag, or its variable (`BERTH_PROJECT`…, which clap reads),
        // set empty counts as not given.
        let or_link = |flag: &Option<String>, linked: Option<String>| {
            flag.clone()
                .filter(|value| !value.is_empty())
                .or(linked.filter(|value| !value.is_empty()))
        };
        Ok(Self {
            project: or_link(&global.project, Some(link.project)),
            environment: or_link(&global.environment, Some(link.environment)),
            app: or_link(&global.app, link.app),
        })
    }

    pub fn project(&self) -> Result<&str> {
        self.project.as_deref().ok_or_else(|| {
            Failure::Usage("which project? give --project, or `berth link PROJECT ENV` here".into())
        })
    }

    pub fn environment(&self) -> Result<(&str, &str)> {
        let project = self.project()?;
        let environment = self.environment.as_deref().ok_or_else(|| {
            Failure::Usage(
                "which environment? give --environment (-e), or `berth link PROJECT ENV` here"
                    .into(),
            )
        })?;
        Ok((project, environment))
    }

    pub fn app(&self) -> Result<AppPath> {
        let (project, environment) = self.environment()?;
        let app = self.app.as_deref().ok_or_else(|| {
            Failure::Usage("which app? give --app, or `berth link PROJECT ENV APP` here".into())
        })?;
        Ok(AppPath {
            project: project.to_owned(),
            environment: environment.to_owned(),
            app: app.to_owned(),
        })
    }
}

/// An app's place, and the paths under it.
#[derive(Debug, Clone)]
pub struct AppPath {
    pub project: String,
    pub environment: String,
    pub app: String,
}

impl AppPath {
    /// `projects/P/environments/E/apps/A` and `more`.
    pub fn path<'a>(&'a self, more: &[&'a str]) -> Vec<&'a str> {
        let mut path = vec![
            "projects",
            &self.project,
            "environments",
            &self.environment,
            "apps",
            &self.app,
        ];
        path.extend_from_slice(more);
        path
    }

    /// The same app in another environment of the project.
    pub fn in_environment(&self, environment: &str) -> Self {
        Self {
            environment: environment.to_owned(),
            ..self.clone()
        }
    }
}
