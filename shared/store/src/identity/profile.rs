//! The stored account (profile item), the email → account marker and the
//! organization item.

use serde::{Deserialize, Serialize};

use super::{ProjectGrant, User};
use crate as store;
use crate::StoreError;
use crate::{Store, keys};
use berth_domain::Role;
use berth_domain::ids::UserId;
use berth_domain::names::OrgName;

/// A user profile as stored. No `Debug`: it holds the password hash.
#[derive(Clone, Serialize, Deserialize)]
pub struct ProfileItem {
    pub pk: String,
    pub sk: String,
    pub gsi1pk: String,
    pub gsi1sk: String,
    pub id: String,
    pub email: String,
    pub display_name: Option<String>,
    pub org: OrgName,
    pub role: Role,
    /// Roles in single projects; absent on accounts made before them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub projects: Vec<ProjectGrant>,
    pub password_hash: String,
    pub must_change_password: bool,
    pub active: bool,
    /// Sessions made under an older epoch are dead (password changes bump it).
    pub session_epoch: u64,
    pub created_at: i64,
}

pub struct NewProfile<'a> {
    pub id: &'a str,
    pub email: &'a str,
    pub display_name: Option<String>,
    pub org: &'a OrgName,
    pub role: Role,
    pub password_hash: String,
    pub must_change_password: bool,
}

impl ProfileItem {
    pub fn new(new: NewProfile<'_>) -> Self {
        Self {
            pk: keys::user(new.id),
            sk: keys::PROFILE_SK.to_owned(),
            gsi1pk: keys::members_of(new.org.as_str()),
            gsi1sk: new.email.to_owned(),
            id: new.id.to_owned(),
            email: new.email.to_owned(),
            display_name: new.display_name,
            org: new.org.clone(),
            role: new.role,
            projects: Vec::new(),
            password_hash: new.password_hash,
            must_change_password: new.must_change_password,
            active: true,
            session_epoch: 0,
            created_at: berth_domain::clock::unix_seconds(),
        }
    }

    pub fn user(&self) -> User {
        User {
            id: self.id.clone(),
            email: self.email.clone(),
            display_name: self.display_name.clone(),
            org: self.org.clone(),
            role: self.role,
            projects: self.projects.clone(),
            must_change_password: self.must_change_password,
            active: self.active,
            session_epoch: self.session_epoch,
        }
    }
}

#[derive(Serialize, Deserialize)]
pub struct EmailItem {
    pub pk: String,
    pub sk: String,
    pub user_id: String,
}

impl EmailItem {
    pub fn new(email: &str, user_id: &str) -> Self {
        Self {
            pk: keys::email(email),
            sk: keys::EMAIL_SK.to_owned(),
            user_id: user_id.to_owned(),
        }
    }
}

#[derive(Serialize, Deserialize)]
pub struct OrgItem {
    pub pk: String,
    pub sk: String,
    pub name: String,
    /// How many owners the organization has; writes keep it at one or more.
    pub owners: u64,
    pub created_at: i64,
}

/// Whether organization `org` exists.
pub async fn organization_exists(store: &Store, org: &str) -> Result<bool, StoreError> {
    Ok(store
        .get(store::key(keys::org(org), keys::ORG_SK))
        .await?
        .is_some())
}

pub async fn get_profile(store: &Store, user_id: &str) -> Result<Option<ProfileItem>, StoreError> {
    store
        .get_as(store::key(keys::user(user_id), keys::PROFILE_SK))
        .await
}

/// The profile of a member of `org`; anyone else's is not found.
pub async fn get_member(
    store: &Store,
    org: &OrgName,
    user_id: &UserId,
) -> Result<ProfileItem, StoreError> {
    match get_profile(store, user_id.as_str()).await? {
        Some(profile) if &profile.org == org => Ok(profile),
        _ => Err(StoreError::Missing(berth_domain::Missing::Member {
            member: user_id.clone(),
        })),
    }
}

/// Deletes the items under a user's partition, whose sort key starts with
/// `prefix`, that `doomed` picks: the one way credentials are cleared away.
pub async fn delete_user_items(
    store: &Store,
    user_id: &str,
    prefix: &str,
    doomed: impl Fn(&store::Item) -> bool,
) -> Result<(), StoreError> {
    for item in user_items(store, user_id, prefix).await? {
        if doomed(&item) {
            store
                .delete(store::key(keys::user(user_id), store::sort_key(&item)))
                .await?;
        }
    }
    Ok(())
}

/// Every item under a user's partition whose sort key starts with `prefix`.
pub async fn user_items(
    store: &Store,
    user_id: &str,
    prefix: &str,
) -> Result<Vec<store::Item>, StoreError> {
    store::query_all(
        store
            .client()
            .query()
            .table_name(store.table())
            .key_condition_expression("pk = :pk AND begins_with(sk, :prefix)")
            .expression_attribute_values(":pk", store::s(keys::user(user_id)))
            .expression_attribute_values(":prefix", store::s(prefix))
            .consistent_read(true),
    )
    .await
}
