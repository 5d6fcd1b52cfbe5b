//! Organization members: accounts, roles, and the rule that an organization
//! always keeps an owner. The organization item counts its owners, and every
//! write that changes the count does so in the same transaction as the member
//! change, conditioned on at least one owner remaining.

use aws_sdk_dynamodb::types::{ConditionCheck, Delete, Put, TransactWriteItem, Update};

use super::profile::{self, EmailItem, NewProfile, OrgItem, ProfileItem};
use super::{Principal, ProjectGrant, normalize_email, password, validate_email};
use crate as store;
use crate::StoreError;
use crate::{Item, Store, keys};
use berth_domain::ids::UserId;
use berth_domain::names::OrgName;
use berth_domain::roles::Permission;
use berth_domain::{Role, clock, credentials};
use berth_records::members::{MemberRecord, NewMember};

pub const MAX_DISPLAY_NAME_LEN: usize = 100;

impl From<&ProfileItem> for MemberRecord {
    fn from(profile: &ProfileItem) -> Self {
        Self {
            id: profile.id.clone(),
            email: profile.email.clone(),
            display_name: profile.display_name.clone(),
            role: profile.role,
            must_change_password: profile.must_change_password,
            active: profile.active,
            projects: profile.projects.iter().map(ProjectGrant::record).collect(),
        }
    }
}

/// The members of an organization, by email.
pub async fn list(store: &Store, org: &OrgName) -> Result<Vec<MemberRecord>, StoreError> {
    Ok(profiles(store, org)
        .await?
        .iter()
        .map(MemberRecord::from)
        .collect())
}

/// The profiles of an organization's members, by email.
pub(super) async fn profiles(store: &Store, org: &OrgName) -> Result<Vec<ProfileItem>, StoreError> {
    let items = store::index_partition(store, keys::members_of(org.as_str())).await?;
    items
        .into_iter()
        .map(store::from_item::<ProfileItem>)
        .collect()
}

fn validate_display_name(display_name: Option<&str>) -> Result<(), StoreError> {
    display_name.map_or(Ok(()), |name| {
        Ok(berth_domain::name_rules::text(
            "display_name",
            name,
            MAX_DISPLAY_NAME_LEN,
        )?)
    })
}

pub(super) fn require_owner_rights(caller: &Principal, roles: &[Role]) -> Result<(), StoreError> {
    if roles.contains(&Role::Owner) && !caller.can(Permission::ManageOwners) {
        return Err(StoreError::Forbidden("only owners manage owners".into()));
    }
    Ok(())
}

/// Invites a member of the caller's organization: a new account with a
/// temporary password that must be replaced at first sign-in.
pub async fn invite(
    store: &Store,
    caller: &Principal,
    email: &str,
    role: Role,
    display_name: Option<String>,
) -> Result<NewMember, StoreError> {
    validate_display_name(display_name.as_deref())?;
    require_owner_rights(caller, &[role])?;
    let account = NewAccount {
        email,
        display_name,
        org: &caller.user.org,
        role,
    };
    create_account(store, account, OrgWrite::Existing).await
}

/// Creates an organization and its first owner (the admin CLI's bootstrap).
pub async fn bootstrap(store: &Store, org: &str, email: &str) -> Result<NewMember, StoreError> {
    let org = org_name(org)?;
    let account = NewAccount {
        email,
        display_name: None,
        org: &org,
        role: Role::Owner,
    };
    create_account(store, account, OrgWrite::Create).await
}

/// A new organization's name, as the admin CLI gives it.
pub fn org_name(org: &str) -> Result<OrgName, StoreError> {
    OrgName::parse(org).map_err(|e| e.at("org").into())
}

struct NewAccount<'a> {
    email: &'a str,
    display_name: Option<String>,
    org: &'a OrgName,
    role: Role,
}

enum OrgWrite {
    /// The organization must exist already.
    Existing,
    /// The organization is created with this account as its one owner.
    Create,
}

/// Writes the account, its email marker and the organization's side in one
/// transaction; the account gets a temporary password.
async fn create_account(
    store: &Store,
    account: NewAccount<'_>,
    org: OrgWrite,
) -> Result<NewMember, StoreError> {
    let email = normalize_email(account.email);
    validate_email(&email)?;
    let temporary_password = credentials::new_temporary_password();
    let profile = ProfileItem::new(NewProfile {
        id: &credentials::new_user_id(),
        email: &email,
        display_name: account.display_name,
        org: account.org,
        role: account.role,
        password_hash: password::hash(temporary_password.clone()).await?,
        must_change_password: true,
    });
    let table = store.table();
    let put_new = |item: Item| {
        store::tx_put(
            Put::builder()
                .table_name(table)
                .set_item(Some(item))
                .condition_expression("attribute_not_exists(pk)"),
        )
    };
    let org_key = store::key(keys::org(profile.org.as_str()), keys::ORG_SK);
    let org_write = match org {
        OrgWrite::Create => put_new(store::to_item(&OrgItem {
            pk: keys::org(profile.org.as_str()),
            sk: keys::ORG_SK.to_owned(),
            name: profile.org.to_string(),
            owners: 1,
            created_at: clock::unix_seconds(),
        })?)?,
        OrgWrite::Existing if profile.role == Role::Owner => {
            owner_count_change(store, &profile.org, 1)?
        }
        OrgWrite::Existing => store::tx_check(
            ConditionCheck::builder()
                .table_name(table)
                .set_key(Some(org_key))
                .condition_expression("attribute_exists(pk)"),
        )?,
    };
    let writes = vec![
        put_new(store::to_item(&EmailItem::new(
            &profile.email,
            &profile.id,
        ))?)?,
        put_new(store::to_item(&profile)?)?,
        org_write,
    ];
    if let Err(e) = store.transact(writes).await {
        return Err(match store::cancelled_conditions(&e).as_deref() {
            Some([true, ..]) => {
                StoreError::Conflict("an account with this email already exists".into())
            }
            Some([_, _, true]) => match org {
                OrgWrite::Create => {
                    StoreError::Conflict(format!("organization {} already exists", profile.org))
                }
                OrgWrite::Existing => StoreError::Missing(berth_domain::Missing::Organization {
                    org: profile.org.to_string(),
                }),
            },
            _ => store::transaction_failure(e),
        });
    }
    Ok(NewMember {
        member: MemberRecord::from(&profile),
        temporary_password,
    })
}

/// Changes a member's role.
pub async fn change_role(
    store: &Store,
    caller: &Principal,
    member_id: &UserId,
    role: Role,
) -> Result<MemberRecord, StoreError> {
    let mut target = profile::get_member(store, &caller.user.org, member_id).await?;
    require_owner_rights(caller, &[target.role, role])?;
    if target.role == role {
        return Ok(MemberRecord::from(&target));
    }
    let mut writes = vec![store::tx_update(
        Update::builder()
            .table_name(store.table())
            .set_key(Some(store::key(
                keys::user(member_id.as_str()),
                keys::PROFILE_SK,
            )))
            .update_expression("SET #role = :new")
            .condition_expression("#role = :old AND org = :org")
            .expression_attribute_names("#role", "role")
            .expression_attribute_values(":new", store::s(role.as_str()))
            .expression_attribute_values(":old", store::s(target.role.as_str()))
            .expression_attribute_values(":org", store::s(caller.user.org.as_str())),
    )?];
    let owners_delta = i64::from(role == Role::Owner) - i64::from(target.role == Role::Owner);
    if owners_delta != 0 {
        writes.push(owner_count_change(store, &caller.user.org, owners_delta)?);
    }
    if let Err(e) = store.transact(writes).await {
        return Err(member_change_failure(e));
    }
    target.role = role;
    Ok(MemberRecord::from(&target))
}

/// Removes a member: the account, its sessions and its tokens. The account is
/// deleted first, in one transaction, so every credential stops working at once.
pub async fn remove(
    store: &Store,
    caller: &Principal,
    member_id: &UserId,
) -> Result<(), StoreError> {
    let target = profile::get_member(store, &caller.user.org, member_id).await?;
    require_owner_rights(caller, &[target.role])?;
    let mut writes = vec![
        store::tx_delete(
            Delete::builder()
                .table_name(store.table())
                .set_key(Some(store::key(
                    keys::user(member_id.as_str()),
                    keys::PROFILE_SK,
                )))
                .condition_expression("#role = :role AND org = :org")
                .expression_attribute_names("#role", "role")
                .expression_attribute_values(":role", store::s(target.role.as_str()))
                .expression_attribute_values(":org", store::s(caller.user.org.as_str())),
        )?,
        store::tx_delete(
            Delete::builder()
                .table_name(store.table())
                .set_key(Some(store::key(keys::email(&target.email), keys::EMAIL_SK))),
        )?,
    ];
    if target.role == Role::Owner {
        writes.push(owner_count_change(store, &caller.user.org, -1)?);
    }
    store
        .transact(writes)
        .await
        .map_err(member_change_failure)?;
    if let Err(error) = delete_credentials(store, member_id.as_str()).await {
        tracing::warn!(error = %error, "tidying up a removed member's credentials failed; they are already invalid");
    }
    Ok(())
}

/// A member change's transaction refused: the member changed meanwhile (the
/// first item), or the organization would lose its last owner (the last).
fn member_change_failure(error: store::TransactError) -> StoreError {
    let conditions = store::cancelled_conditions(&error).unwrap_or_default();
    if conditions.first() == Some(&true) {
        StoreError::Conflict("the member was changed meanwhile; try again".into())
    } else if conditions.len() > 1 && conditions.last() == Some(&true) {
        StoreError::Conflict("an organization must keep at least one owner".into())
    } else {
        store::transaction_failure(error)
    }
}

/// Moves the organization's owner count; a decrease must leave one owner.
fn owner_count_change(
    store: &Store,
    org: &OrgName,
    delta: i64,
) -> Result<TransactWriteItem, StoreError> {
    let update = Update::builder()
        .table_name(store.table())
        .set_key(Some(store::key(keys::org(org.as_str()), keys::ORG_SK)))
        .update_expression("ADD owners :delta")
        .expression_attribute_values(":delta", store::n(delta));
    store::tx_update(if delta < 0 {
        update
            .condition_expression("owners > :one")
            .expression_attribute_values(":one", store::n(1))
    } else {
        update.condition_expression("attribute_exists(pk)")
    })
}

async fn delete_credentials(store: &Store, user_id: &str) -> Result<(), StoreError> {
    for prefix in [keys::SESSION_SK_PREFIX, keys::TOKEN_SK_PREFIX] {
        profile::delete_user_items(store, user_id, prefix, |_| true).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn org_names_are_dns_labels() {
        for good in ["default", "acme-1", "a"] {
            assert!(super::org_name(good).is_ok(), "{good}");
        }
        for bad in ["", "-a", "a-", "Acme", "a_b", &"a".repeat(41)] {
            assert!(super::org_name(bad).is_err(), "{bad}");
        }
    }
}
