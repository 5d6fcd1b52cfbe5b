//! The scopes a token request asks for, and what of them a credential gets
//! (docs/spec/auth/scope.md and token.md of CNCF Distribution v2.8.2).
//!
//! A scope is `resourcetype[(class)]:resourcename:action[,action…]`; a
//! request may repeat `scope`, and one value may hold several scopes
//! separated by spaces (as the registry's challenge lists them). The token
//! carries, for each repository asked for, the intersection of the actions
//! asked with those the credential may have; a repository of which it may
//! have nothing is left out, and that is not an error ("it is not the
//! responsibility of the token server to indicate authorization errors",
//! token.md): the registry refuses the request the token does not cover.
//! Other resource types (`registry:catalog:*`) are never granted.

use serde::Serialize;

use berth_domain::registry::Reach;

/// Scopes asked for, at most this many: a pull or push asks for one or two.
pub const MAX_SCOPES: usize = 50;

/// What [`parse`] takes of one value: scopes separated by spaces (none is
/// none asked for). `parse` is the judge; a test holds the two to the same
/// answers. The count is `maxItems`'s.
const PATTERN: &str = concat!(
    r"^ *(",
    r"[a-z0-9]+(\([a-zA-Z0-9]+\))?:[a-z0-9._/:-]{1,255}:[a-z*]+(,[a-z*]+)*",
    r"( +[a-z0-9]+(\([a-zA-Z0-9]+\))?:[a-z0-9._/:-]{1,255}:[a-z*]+(,[a-z*]+)*)*",
    r")? *$"
);

/// One `scope` value of a token request. Only its schema is a type:
/// [`parse`] reads the values.
pub struct RegistryScopes;

impl utoipa::PartialSchema for RegistryScopes {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::schema::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .pattern(Some(PATTERN))
            .description(Some(
                "Scopes `resourcetype[(class)]:resourcename:action[,action…]` separated by \
                 spaces, as the registry's challenge names them.",
            ))
            .into()
    }
}

impl utoipa::ToSchema for RegistryScopes {}

/// One scope, well formed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requested {
    pub resource_type: String,
    pub name: String,
    pub actions: Vec<String>,
}

/// The scopes of the request's `scope` values; why not, in words that
/// repeat nothing sent.
pub fn parse(values: &[String]) -> Result<Vec<Requested>, String> {
    let mut scopes = Vec::new();
    for (index, scope) in values
        .iter()
        .flat_map(|value| value.split(' '))
        .filter(|scope| !scope.is_empty())
        .enumerate()
    {
        if index == MAX_SCOPES {
            return Err(format!("scope: at most {MAX_SCOPES} scopes are taken"));
        }
        scopes.push(parse_one(scope).ok_or_else(|| {
            format!(
                "scope: scope {} is not `resourcetype:resourcename:actions`",
                index + 1
            )
        })?);
    }
    Ok(scopes)
}

fn parse_one(scope: &str) -> Option<Requested> {
    let (resource_type, rest) = scope.split_once(':')?;
    let (name, actions) = rest.rsplit_once(':')?;
    // `repository(plugin)`: the class is not part of what is granted.
    let resource_type = match resource_type.split_once('(') {
        Some((kind, class)) => {
            let class = class.strip_suffix(')')?;
            if class.is_empty() || !class.bytes().all(|b| b.is_ascii_alphanumeric()) {
                return None;
            }
            kind
        }
        None => resource_type,
    };
    let word = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    };
    if !word(resource_type) || name.is_empty() || name.len() > 255 {
        return None;
    }
    // Distribution's repository names (and a host:port before them).
    if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-/:".contains(&b))
    {
        return None;
    }
    let actions: Vec<String> = actions.split(',').map(str::to_owned).collect();
    if actions
        .iter()
        .any(|a| a.is_empty() || !a.bytes().all(|b| b.is_ascii_lowercase() || b == b'*'))
    {
        return None;
    }
    Some(Requested {
        resource_type: resource_type.to_owned(),
        name: name.to_owned(),
        actions,
    })
}

/// One entry of the token's `access` claim.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ResourceActions {
    #[serde(rename = "type")]
    pub resource_type: String,
    pub name: String,
    pub actions: Vec<String>,
}

/// What `reach` allows of `requested`: one entry per repository, the
/// actions asked for that it may have, merged across scopes naming the same
/// repository; nothing for anything else.
pub fn narrow(requested: &[Requested], reach: &Reach) -> Vec<ResourceActions> {
    let mut granted: Vec<ResourceActions> = Vec::new();
    for scope in requested.iter().filter(|s| s.resource_type == "repository") {
        let asked: Vec<&str> = scope.actions.iter().map(String::as_str).collect();
        let allowed = reach.allowed(&scope.name, &asked);
        if allowed.is_empty() {
            continue;
        }
        match granted.iter_mut().find(|entry| entry.name == scope.name) {
            Some(entry) => {
                for action in allowed {
                    if !entry.actions.iter().any(|a| a == action) {
                        entry.actions.push(action.to_owned());
                    }
                }
            }
            None => granted.push(ResourceActions {
                resource_type: "repository".to_owned(),
                name: scope.name.clone(),
                actions: allowed.into_iter().map(str::to_owned).collect(),
            }),
        }
    }
    granted
}

/// The granted scopes as the OAuth2 answer's `scope` writes them.
pub fn scope_string(granted: &[ResourceActions]) -> String {
    granted
        .iter()
        .map(|entry| {
            format!(
                "{}:{}:{}",
                entry.resource_type,
                entry.name,
                entry.actions.join(",")
            )
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values of which `parse` takes none.
    const MALFORMED: &[&str] = &[
        "repository",
        "repository:name",
        "repository::pull",
        "repository:Name:pull",
        "repository:name:",
        "repository:name:pull,,push",
        "Repository:name:pull",
        "repository(:name:pull",
        "repository():name:pull",
        "repository:na me:pull",
        "repository:name:pull\trepository:b:pull",
    ];

    fn scopes(values: &[&str]) -> Vec<Requested> {
        parse(&values.iter().map(|v| (*v).to_owned()).collect::<Vec<_>>()).expect("well formed")
    }

    #[test]
    fn scopes_are_parsed_from_repeated_and_spaced_values() {
        let parsed = scopes(&[
            "repository:berth/acme/shop/web:pull,push",
            "repository:berth/acme/base:pull repository(plugin):x/y:pull",
        ]);
        assert_eq!(parsed.len(), 3);
        assert_eq!(parsed[0].name, "berth/acme/shop/web");
        assert_eq!(parsed[0].actions, ["pull", "push"]);
        assert_eq!(parsed[2].resource_type, "repository");
        // A name with a registry's host and port.
        assert_eq!(
            scopes(&["repository:localhost:5000/acme/web:pull"])[0].name,
            "localhost:5000/acme/web"
        );
        assert!(scopes(&[]).is_empty());
        for &bad in MALFORMED {
            let error = parse(&[bad.to_owned()]).expect_err(bad);
            assert!(!error.contains(bad), "the detail repeats nothing sent");
        }
        let many = vec!["repository:a:pull".to_owned(); MAX_SCOPES + 1];
        assert!(parse(&many).is_err());
    }

    #[test]
    fn the_described_pattern_takes_what_parse_takes() {
        let pattern = regex::Regex::new(PATTERN).expect("a valid pattern");
        let long = |length: usize| format!("repository:{}:pull", "a".repeat(length));
        let (longest, too_long) = (long(255), long(256));
        let well_formed = [
            "",
            " ",
            "repository:berth/acme/shop/web:pull,push",
            "repository:berth/acme/base:pull repository(plugin):x/y:pull",
            "  repository:a:pull   registry:catalog:* ",
            "repository:localhost:5000/acme/web:pull",
            &longest,
        ];
        for value in well_formed
            .iter()
            .chain(MALFORMED)
            .chain([&too_long.as_str()])
        {
            assert_eq!(
                pattern.is_match(value),
                parse(&[(*value).to_owned()]).is_ok(),
                "{value:?}"
            );
        }
    }

    #[test]
    fn a_push_credential_gets_only_its_own_repository() {
        let reach = Reach::Repository("berth/acme/shop/web".into());
        let granted = narrow(
            &scopes(&[
                "repository:berth/acme/shop/web:pull,push",
                "repository:berth/acme/shop/api:pull,push",
                "repository:berth/other/shop/web:pull",
                "registry:catalog:*",
                "repository:berth/acme/shop/web:delete,*",
            ]),
            &reach,
        );
        assert_eq!(
            granted,
            [ResourceActions {
                resource_type: "repository".into(),
                name: "berth/acme/shop/web".into(),
                actions: vec!["pull".into(), "push".into()],
            }]
        );
        assert_eq!(
            scope_string(&granted),
            "repository:berth/acme/shop/web:pull,push"
        );
    }

    #[test]
    fn a_pull_credential_gets_pull_of_its_projects_repositories_only() {
        let reach = Reach::project("registry.example.com/berth", "acme", "shop").expect("names");
        let granted = narrow(
            &scopes(&[
                "repository:berth/acme/shop/web:pull,push",
                "repository:berth/acme/billing/api:pull",
                "repository:berth/acme/shop/api:push",
                "repository:berth/acmecorp/shop/web:pull",
                "repository:berth/other/shop/web:pull",
                "repository:elsewhere/acme/shop/web:pull",
            ]),
            &reach,
        );
        assert_eq!(
            granted,
            [ResourceActions {
                resource_type: "repository".into(),
                name: "berth/acme/shop/web".into(),
                actions: vec!["pull".into()],
            }]
        );
    }
}
