//! Signing in and out, who you are, your tokens, the versions.

use berth_domain::Ceiling;
use berth_records::auth::{Identity, LoginBody, PasswordChange};
use berth_records::tokens::{CreatedToken, NewToken, TokenRecord};

use super::Session;
use crate::api::{Api, Credential, parse_url};
use crate::args::{ContextsCommand, Login, TokensCommand};
use crate::config::{self, Credentials};
use crate::failure::{Failure, Result};
use crate::output::{Output, or_dash, print};
use crate::prompt::Prompt;
use crate::version;

/// Signs in with the password (replacing a temporary one), makes an API
/// token with the session, ends the session and stores the token.
pub fn login(out: Output, context: Option<&str>, login: Login) -> Result<()> {
    let prompt = Prompt::new();
    let asked = |given: Option<String>, question: &str| match given {
        Some(value) => Ok(value),
        None if prompt.terminal() => prompt.line(question),
        None => Err(Failure::Usage(format!(
            "standard input is not a terminal: give --{}",
            question.to_lowercase().replace(' ', "-")
        ))),
    };
    let url = parse_url(&asked(login.url, "URL")?)?;
    let email = asked(login.email, "Email")?;
    warn_if_cleartext(&url);
    let mut api = Api::new(url.clone(), Credential::None)?;
    version::warn_if_incompatible(&api);
    let password = prompt.password("Password")?;
    let (answer, cookie) = api.login(&LoginBody {
        email: email.clone(),
        password: password.clone(),
    })?;
    api.with_credential(Credential::Session(cookie));
    let token = with_session(
        &api,
        &prompt,
        answer,
        password,
        login.token_name,
        login.expires_in_days,
    );
    // The session has done its work (or failed): end it either way.
    let _ = api.post_empty(&["auth", "logout"]);
    let (identity, created) = token?;
    // The sign-in this one replaces: the same user's, at the same API.
    let earlier = config::stored(context)
        .ok()
        .flatten()
        .filter(|earlier| {
            parse_url(&earlier.url).is_ok_and(|earlier| earlier == url)
                && earlier
                    .email
                    .as_deref()
                    .is_some_and(|email| email.eq_ignore_ascii_case(&identity.email))
        })
        .and_then(|earlier| earlier.token_id)
        .filter(|id| *id != created.record.id);
    let path = config::store(
        context,
        &Credentials {
            url: url.to_string(),
            token: created.token.clone(),
            token_id: Some(created.record.id.clone()),
            email: Some(identity.email.clone()),
        },
    )?;
    let revoked = earlier.and_then(|id| revoke_earlier(&url, &created.token, id));
    out.say(&format!(
        "Signed in to {url} as {}; token {} ({}) expires {}, stored in {}",
        identity.email,
        created.record.name,
        created.record.id,
        or_dash(created.record.expires_at.as_deref()),
        path.display()
    ))?;
    match revoked {
        Some(id) => out.say(&format!("Revoked this CLI's earlier token {id}")),
        None => Ok(()),
    }
}

/// Revokes the token of this CLI's earlier sign-in (`DELETE
/// /api/v1/tokens/{id}`, with the new token): that one only, never a token
/// made with it. Answers its id once revoked; one already gone (404) needs
/// no word, and one that cannot be revoked a warning, not a failed login.
fn revoke_earlier(url: &reqwest::Url, token: &str, id: String) -> Option<String> {
    let revoked = Api::new(url.clone(), Credential::Token(token.to_owned()))
        .and_then(|api| api.delete(&["tokens", &id]));
    match revoked {
        Ok(_) => Some(id),
        Err(failure) if failure.status() == Some(404) => None,
        Err(failure) => {
            eprintln!(
                "warning: the earlier sign-in's token {id} was not revoked ({failure}); \
                 revoke it with `berth tokens revoke {id}`"
            );
            None
        }
    }
}

/// What login does with the session: replaces a temporary password, then
/// creates the CLI's token.
fn with_session(
    api: &Api,
    prompt: &Prompt,
    answer: crate::api::Answer,
    password: String,
    name: String,
    expires_in_days: u32,
) -> Result<(Identity, CreatedToken)> {
    let identity: Identity = answer.record()?;
    if identity.must_change_password {
        eprintln!("Your password is temporary: choose a new one (12 characters or more).");
        let new_password = new_password(prompt)?;
        api.post(
            &["me", "password"],
            &PasswordChange {
                current_password: password,
                new_password,
            },
        )?;
    }
    let created = api
        .post(
            &["tokens"],
            &NewToken {
                name,
                expires_in_days: Some(expires_in_days),
                ceiling: None,
                scope: None,
            },
        )?
        .record()?;
    Ok((identity, created))
}

fn new_password(prompt: &Prompt) -> Result<String> {
    let first = prompt.password("New password")?;
    if prompt.terminal() && prompt.password("New password again")? != first {
        return Err(Failure::failed("the two new passwords differ"));
    }
    Ok(first)
}

/// A token sent over plain HTTP to another machine can be read on the way.
fn warn_if_cleartext(url: &reqwest::Url) {
    let host = url.host_str().unwrap_or_default();
    let loopback = host == "localhost"
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|address| address.is_loopback());
    if url.scheme() == "http" && !loopback {
        eprintln!(
            "warning: {url} is not https: your password and token cross the network readable"
        );
    }
}

/// Revokes the stored token and forgets it. A token the API no longer
/// takes (401: revoked or expired) or knows (404) is forgotten all the
/// same, and said to have been so.
pub fn logout(session: &Session) -> Result<()> {
    let Some(id) = session.sign_in.token_id.as_deref() else {
        return Err(Failure::Usage(
            "the token comes from BERTH_TOKEN: revoke it with `berth tokens revoke ID`".into(),
        ));
    };
    let revoked = match session.api.delete(&["tokens", id]) {
        Ok(_) => true,
        Err(failure) if matches!(failure.status(), Some(401 | 404)) => false,
        Err(failure) => return Err(failure),
    };
    config::forget(session.context.as_deref())?;
    let url = &session.sign_in.url;
    session.out.say(&if revoked {
        format!("Signed out of {url}: token {id} revoked")
    } else {
        format!(
            "Signed out of {url}: token {id} was already revoked or no longer valid; \
             the stored sign-in is removed"
        )
    })
}

pub fn whoami(session: &Session) -> Result<()> {
    let answer = session.api.get(&["me"])?;
    version::warn_if_incompatible(&session.api);
    session.out.answer(&answer, || {
        let me: Identity = answer.record()?;
        session.out.fields(&[
            ("email", me.email),
            ("id", me.id),
            ("name", or_dash(me.display_name)),
            ("via", me.via),
            ("api", session.sign_in.url.clone()),
        ])
    })
}

pub fn version(out: Output) -> Result<()> {
    let api_version = config::sign_in(None)
        .ok()
        .and_then(|sign_in| parse_url(&sign_in.url).ok())
        .and_then(|url| Api::new(url, Credential::None).ok())
        .map(|api| version::of_api(&api));
    let warning = match &api_version {
        Some(Ok(version)) => version::judge(version),
        _ => None,
    };
    let shown = match api_version {
        Some(Ok(version)) => version,
        Some(Err(failure)) => format!("unknown ({failure})"),
        None => "unknown (not signed in)".to_owned(),
    };
    if out.json() {
        /// Pretty, as every answer `-o json` prints.
        #[derive(serde::Serialize)]
        struct Versions<'a> {
            cli: &'a str,
            speaks_api: &'a str,
            api: &'a str,
        }
        let text = serde_json::to_string_pretty(&Versions {
            cli: env!("CARGO_PKG_VERSION"),
            speaks_api: version::SPOKEN,
            api: &shown,
        })
        .map_err(|e| Failure::failed(format!("printing the versions: {e}")))?;
        print(&text)?;
    } else {
        out.fields(&[
            ("berth", env!("CARGO_PKG_VERSION").to_owned()),
            ("speaks API", version::SPOKEN.to_owned()),
            ("API", shown),
        ])?;
    }
    if let Some(warning) = warning {
        eprintln!("warning: {warning}");
    }
    Ok(())
}

pub fn tokens(session: &Session, command: Option<TokensCommand>) -> Result<()> {
    match command.unwrap_or(TokensCommand::List) {
        TokensCommand::List => {
            let answer = session.api.get(&["tokens"])?;
            session.out.answer(&answer, || {
                let tokens: Vec<TokenRecord> = answer.record()?;
                let this = session.sign_in.token_id.as_deref();
                let rows = tokens
                    .into_iter()
                    .map(|token| {
                        let mark = if Some(token.id.as_str()) == this {
                            " (this CLI)"
                        } else {
                            ""
                        };
                        vec![
                            token.id.clone(),
                            format!("{}{mark}", token.name),
                            token.prefix,
                            token.created_at,
                            or_dash(token.expires_at),
                            or_dash(token.last_used_at),
                            or_dash(token.ceiling.map(|c| c.as_str())),
                            token.scope.map_or_else(
                                || "all projects".to_owned(),
                                |scope| {
                                    scope
                                        .iter()
                                        .map(|entry| entry.project.to_string())
                                        .collect::<Vec<_>>()
                                        .join(", ")
                                },
                            ),
                        ]
                    })
                    .collect();
                session.out.list(
                    &[
                        "ID",
                        "NAME",
                        "PREFIX",
                        "CREATED",
                        "EXPIRES",
                        "LAST USED",
                        "CEILING",
                        "SCOPE",
                    ],
                    rows,
                    "No tokens: make one with `berth tokens create NAME`",
                )
            })
        }
        TokensCommand::Create {
            name,
            expires_in_days,
            ceiling,
        } => {
            let answer = session.api.post(
                &["tokens"],
                &NewToken {
                    name,
                    expires_in_days,
                    ceiling: ceiling.map(Ceiling::from),
                    scope: None,
                },
            )?;
            let created: CreatedToken = answer.record()?;
            eprintln!(
                "Token {} ({}) made: its secret is shown this once, below; keep it where your CI keeps secrets",
                created.record.id, created.record.name
            );
            if session.out.json() {
                print(&answer.pretty()?)
            } else {
                // The secret alone on standard output: `$(berth tokens create …)`.
                print(&created.token)
            }
        }
        TokensCommand::Revoke { id } => {
            session.api.delete(&["tokens", &id])?;
            session.out.say(&format!("Token {id} revoked"))
        }
    }
}

/// `berth contexts`: the stored sign-ins, or another made the current one.
pub fn contexts(out: Output, command: Option<ContextsCommand>) -> Result<()> {
    match command.unwrap_or(ContextsCommand::List) {
        ContextsCommand::List => {
            let sign_ins = config::sign_ins()?;
            let rows = sign_ins
                .contexts
                .iter()
                .map(|(name, credentials)| {
                    vec![
                        if *name == sign_ins.current { "*" } else { "" }.to_owned(),
                        name.clone(),
                        credentials.url.clone(),
                        or_dash(credentials.email.as_deref()),
                    ]
                })
                .collect();
            out.list(
                &["CURRENT", "NAME", "API", "EMAIL"],
                rows,
                "No sign-ins: `berth login` (with `--context NAME` for more than one)",
            )
        }
        ContextsCommand::Use { name } => {
            config::use_context(&name)?;
            out.say(&format!("Commands now use the sign-in {name}"))
        }
    }
}
