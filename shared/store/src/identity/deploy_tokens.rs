//! A project's deploy tokens: `Authorization: Bearer brd_…`, a machine's
//! (a CI pipeline's) credential, owned by the project rather than by the
//! member who made it, whom it outlives. Kept in the project's partition
//! (by its uid, which the token carries), so that authenticating reads the
//! token in one round trip and a project made again under the name is not
//! reached. Only the SHA-256 of a token is stored.
//!
//! A deploy token calls as a member whose organization role is `member`,
//! holding `admin` in its project (its ceiling, when it has one, lowers
//! that), scoped to that project and the environments it names.

use aws_sdk_dynamodb::types::{Delete, Put};
use serde::{Deserialize, Serialize};

use super::project_roles::GrantedProject;
use super::{Credential, Principal, ProjectGrant, TokenScope, User, tokens};
use crate as store;
use crate::StoreError;
use crate::{Item, Store, keys};
use berth_domain::ids::RecordId;
use berth_domain::names::{DeployTokenName, EnvironmentName, OrgName, ProjectName};
use berth_domain::scope::ScopeEntry;
use berth_domain::{Ceiling, Missing, ProjectRole, Role, clock, credentials};
use berth_records::tokens::{CreatedDeployToken, DeployTokenRecord, NewDeployToken};

/// The reserved domain (RFC 2606's `.invalid`) of deploy tokens' actors.
pub const ACTOR_DOMAIN: &str = "deploy.invalid";

/// Who a deploy token's calls are made as: `{token}@{project}.deploy.invalid`,
/// never a person's email.
pub fn actor(name: &DeployTokenName, project: &ProjectName) -> String {
    format!("{name}@{project}.{ACTOR_DOMAIN}")
}

#[derive(Debug, Serialize, Deserialize)]
pub struct DeployTokenItem {
    pub pk: String,
    pub sk: String,
    pub id: String,
    pub name: DeployTokenName,
    pub org: OrgName,
    pub project: ProjectName,
    pub project_uid: String,
    pub prefix: String,
    pub created_by: String,
    pub created_at: i64,
    pub expires_at: Option<i64>,
    pub last_used_at: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ceiling: Option<Ceiling>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environments: Option<Vec<EnvironmentName>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl: Option<i64>,
}

/// What keeps a deploy token's name its own in its project while it lives.
#[derive(Serialize, Deserialize)]
struct NameItem {
    pk: String,
    sk: String,
    token_sk: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    ttl: Option<i64>,
}

impl DeployTokenItem {
    fn expired(&self, now: i64) -> bool {
        self.expires_at.is_some_and(|at| at <= now)
    }

    pub fn record(&self) -> DeployTokenRecord {
        DeployTokenRecord {
            id: self.id.clone(),
            name: self.name.clone(),
            project: self.project.clone(),
            prefix: self.prefix.clone(),
            actor: actor(&self.name, &self.project),
            created_by: self.created_by.clone(),
            created_at: clock::rfc3339(self.created_at),
            expires_at: self.expires_at.map(clock::rfc3339),
            last_used_at: self.last_used_at.map(clock::rfc3339),
            ceiling: self.ceiling,
            environments: self.environments.clone(),
        }
    }

    /// The caller this token is: a `member` of the organization holding
    /// `admin` in the project (under the token's ceiling), scoped to it.
    fn principal(&self) -> Principal {
        Principal {
            user: User {
                id: self.id.clone(),
                email: actor(&self.name, &self.project),
                display_name: Some(self.name.to_string()),
                org: self.org.clone(),
                role: Role::Member,
                projects: vec![ProjectGrant {
                    project: self.project.clone(),
                    uid: self.project_uid.clone(),
                    role: ProjectRole::Admin,
                }],
                must_change_password: false,
                active: true,
                session_epoch: 0,
            },
            credential: Credential::DeployToken {
                id: self.id.clone(),
            },
            ceiling: self.ceiling,
            scope: Some(TokenScope {
                entries: vec![ScopeEntry {
                    project: self.project.clone(),
                    environments: self.environments.clone(),
                }],
                since: self.created_at,
            }),
            project_role: None,
        }
    }
}

/// Makes a deploy token of the project, by `caller` (a person: deploy
/// tokens make none).
pub async fn create(
    store: &Store,
    caller: &Principal,
    project: GrantedProject<'_>,
    new: NewDeployToken,
) -> Result<CreatedDeployToken, StoreError> {
    if let Some(environments) = &new.environments
        && environments.is_empty()
    {
        return Err(StoreError::Invalid(
            "environments: must name at least one environment (omit it for every environment)"
                .into(),
        ));
    }
    let now = clock::unix_seconds();
    let expires_at = tokens::expiry(new.expires_in_days, now)?;
    let token = credentials::new_deploy_token(project.uid);
    let item = DeployTokenItem {
        pk: keys::project(project.uid),
        sk: keys::token_sk(&credentials::digest(&token)),
        id: credentials::new_record_id(),
        name: new.name,
        org: caller.user.org.clone(),
        project: project.name.clone(),
        project_uid: project.uid.to_owned(),
        prefix: token.chars().take(8).collect(),
        created_by: caller.user.email.clone(),
        created_at: now,
        expires_at,
        last_used_at: None,
        ceiling: new.ceiling,
        environments: new.environments,
        ttl: expires_at,
    };
    let name = NameItem {
        pk: item.pk.clone(),
        sk: keys::token_name_sk(item.name.as_str()),
        token_sk: item.sk.clone(),
        ttl: expires_at,
    };
    let table = store.table();
    let writes = vec![
        // The name is free, or held by a token that has expired (TTL
        // deletion is lazy).
        store::tx_put(
            Put::builder()
                .table_name(table)
                .set_item(Some(store::to_item(&name)?))
                .condition_expression("attribute_not_exists(pk) OR #ttl <= :now")
                .expression_attribute_names("#ttl", keys::TTL)
                .expression_attribute_values(":now", store::n(now)),
        )?,
        store::tx_put(
            Put::builder()
                .table_name(table)
                .set_item(Some(store::to_item(&item)?))
                .condition_expression("attribute_not_exists(pk)"),
        )?,
    ];
    if let Err(error) = store.transact(writes).await {
        return Err(match store::cancelled_conditions(&error).as_deref() {
            Some([true, ..]) => StoreError::Conflict(format!(
                "project {} already has a deploy token named {}",
                item.project, item.name
            )),
            _ => store::transaction_failure(error),
        });
    }
    Ok(CreatedDeployToken {
        record: item.record(),
        token,
    })
}

/// The project's live deploy tokens, newest first.
pub async fn list(store: &Store, project_uid: &str) -> Result<Vec<DeployTokenItem>, StoreError> {
    let now = clock::unix_seconds();
    let items = store::query_all(
        store
            .client()
            .query()
            .table_name(store.table())
            .key_condition_expression("pk = :pk AND begins_with(sk, :tokens)")
            .expression_attribute_values(":pk", store::s(keys::project(project_uid)))
            .expression_attribute_values(":tokens", store::s(keys::TOKEN_SK_PREFIX)),
    )
    .await?;
    let mut tokens: Vec<DeployTokenItem> = items
        .into_iter()
        .map(store::from_item::<DeployTokenItem>)
        .filter(|token| token.as_ref().map_or(true, |t| !t.expired(now)))
        .collect::<Result<_, _>>()?;
    tokens.sort_by(|a, b| {
        b.created_at
            .cmp(&a.created_at)
            .then_with(|| a.id.cmp(&b.id))
    });
    Ok(tokens)
}

/// Revokes one of the project's deploy tokens: it stops working at once.
pub async fn revoke(
    store: &Store,
    project: GrantedProject<'_>,
    token_id: &RecordId,
) -> Result<(), StoreError> {
    let missing = || {
        StoreError::Missing(Missing::DeployToken {
            project: project.name.to_string(),
            token: token_id.clone(),
        })
    };
    let token = list(store, project.uid)
        .await?
        .into_iter()
        .find(|token| token.id == token_id.as_str())
        .ok_or_else(missing)?;
    let table = store.table();
    let writes = vec![
        store::tx_delete(
            Delete::builder()
                .table_name(table)
                .set_key(Some(store::key(token.pk.clone(), &token.sk)))
                .condition_expression("attribute_exists(pk)"),
        )?,
        store::tx_delete(Delete::builder().table_name(table).set_key(Some(store::key(
            token.pk.clone(),
            &keys::token_name_sk(token.name.as_str()),
        ))))?,
    ];
    match store.transact(writes).await {
        Ok(()) => Ok(()),
        Err(error) => Err(match store::cancelled_conditions(&error).as_deref() {
            Some([true, ..]) => missing(),
            _ => store::transaction_failure(error),
        }),
    }
}

/// Deletes every deploy token of a deleted project. None of them works any
/// more (no other project has its uid): this is the deletion's tidying up.
pub async fn forget_project(store: &Store, project_uid: &str) -> Result<(), StoreError> {
    let items = store::query_all(
        store
            .client()
            .query()
            .table_name(store.table())
            .key_condition_expression("pk = :pk")
            .expression_attribute_values(":pk", store::s(keys::project(project_uid))),
    )
    .await?;
    let keys: Vec<Item> = items
        .iter()
        .map(|item| store::key(keys::project(project_uid), store::sort_key(item)))
        .collect();
    store.delete_batch(keys).await
}

/// The caller a presented deploy token is, if it is live; one read.
pub async fn resolve(store: &Store, token: &str) -> Result<Option<Principal>, StoreError> {
    let Some(project_uid) = credentials::project_of_deploy_token(token) else {
        return Ok(None);
    };
    let key = store::key(
        keys::project(project_uid),
        &keys::token_sk(&credentials::digest(token)),
    );
    let Some(item) = store.get_as::<DeployTokenItem>(key.clone()).await? else {
        return Ok(None);
    };
    // Read by the digest's key, so it is the presented token's: only its
    // expiry is left to check.
    if item.expired(clock::unix_seconds()) {
        return Ok(None);
    }
    tokens::touch(store, key, item.last_used_at).await;
    Ok(Some(item.principal()))
}
