//! Signing in with email and password, and changing the password.

use aws_sdk_dynamodb::types::{AttributeValue, Update};

use super::profile::{self, EmailItem, ProfileItem};
use super::sessions::{self, NewSession, SessionItem};
use super::throttle::{self, Attempts, Subject};
use super::{Credential, MAX_EMAIL_LEN, Principal, User, normalize_email, password};
use crate as store;
use crate::StoreError;
use crate::{Item, Store, keys};
use berth_domain::credentials;

/// What a login attempt found out, whatever its outcome: the account the email
/// belongs to (for the audit log), and the session or the refusal.
pub struct LoginAttempt {
    pub account: Option<User>,
    pub outcome: Result<(User, NewSession), StoreError>,
}

pub async fn login(
    store: &Store,
    session_settings: sessions::SessionSettings,
    email: &str,
    password: String,
    client_ip: &str,
) -> Result<LoginAttempt, StoreError> {
    let email = login_key(email);
    let client = throttle::caller_network(client_ip);
    let client_ip = client.as_str();
    let lookup = LoginLookup::read(store, &email, client_ip).await?;
    let account = match &lookup.user_id {
        Some(user_id) => profile::get_profile(store, user_id).await?,
        None => {
            // Read a profile that does not exist: unknown and known emails
            // cost the same round trips.
            profile::get_profile(store, &credentials::new_user_id()).await?;
            None
        }
    };
    let user = account.as_ref().map(ProfileItem::user);
    let throttled = |error| {
        Ok(LoginAttempt {
            account: user.clone(),
            outcome: Err(error),
        })
    };
    // Both attempts are counted before the password is checked (throttle.rs
    // says why); unknown emails are counted alike and cost the same writes.
    let email_slot =
        match throttle::reserve(store, Subject::Email, &email, lookup.email_attempts).await {
            Ok(slot) => slot,
            Err(error @ StoreError::Throttled { .. }) => return throttled(error),
            Err(error) => return Err(error),
        };
    let ip_slot = match throttle::reserve(store, Subject::Ip, client_ip, lookup.ip_attempts).await {
        Ok(slot) => slot,
        Err(error @ StoreError::Throttled { .. }) => {
            // Refused for the address, not the email: no guess at this email
            // was made, so it does not count against it.
            email_slot.release(store).await?;
            return throttled(error);
        }
        Err(error) => return Err(error),
    };
    let stored_hash = account
        .as_ref()
        .filter(|a| a.active)
        .map(|a| a.password_hash.clone());
    let verified = password::verify(password, stored_hash).await?;
    let Some(account) = account.filter(|_| verified) else {
        // Both attempts stay counted: they were failures.
        return throttled(StoreError::InvalidCredentials);
    };
    // A success forgets the email's failures and is no failure of the address.
    tokio::try_join!(
        throttle::clear(store, Subject::Email, &email),
        ip_slot.release(store),
    )?;
    let session =
        sessions::create(store, session_settings, &account.id, account.session_epoch).await?;
    let user = account.user();
    Ok(LoginAttempt {
        account: Some(user.clone()),
        outcome: Ok((user, session)),
    })
}

/// The email a login is looked up and throttled by. An email longer than any
/// address can be names no account, and as a key it would break DynamoDB's
/// key size limit; it must not be told apart from an unknown email either. So
/// it stands in as its digest, which has no `@` and so matches no account: the
/// same work, the same 401, and counted by the throttle like any other guess.
fn login_key(email: &str) -> String {
    let email = normalize_email(email);
    if email.len() > MAX_EMAIL_LEN {
        format!("overlong-{}", credentials::digest(&email))
    } else {
        email
    }
}

/// The email's account and both subjects' recent attempts, read in one round trip.
struct LoginLookup {
    user_id: Option<String>,
    email_attempts: Attempts,
    ip_attempts: Attempts,
}

impl LoginLookup {
    async fn read(store: &Store, email: &str, client_ip: &str) -> Result<Self, StoreError> {
        let items = store
            .get_many(vec![
                store::key(keys::email(email), keys::EMAIL_SK),
                throttle::key(Subject::Email, email),
                throttle::key(Subject::Ip, client_ip),
            ])
            .await?;
        let pk_of = |item: &Item| item.get(keys::PK).and_then(|v| v.as_s().ok()).cloned();
        let mut lookup = Self {
            user_id: None,
            email_attempts: Attempts::none(Subject::Email),
            ip_attempts: Attempts::none(Subject::Ip),
        };
        for item in items {
            let pk = pk_of(&item).unwrap_or_default();
            if pk == keys::email(email) {
                lookup.user_id = Some(store::from_item::<EmailItem>(item)?.user_id);
            } else if pk == Subject::Email.pk(email) {
                lookup.email_attempts = Attempts::from_item(Subject::Email, &item);
            } else if pk == Subject::Ip.pk(client_ip) {
                lookup.ip_attempts = Attempts::from_item(Subject::Ip, &item);
            }
        }
        Ok(lookup)
    }
}

/// Replaces the caller's password and signs out every other session of the
/// user. Bumping the profile's session epoch is what signs them out, in the
/// same transaction that stores the new hash; deleting their items afterwards
/// only tidies up.
pub async fn change_password(
    store: &Store,
    principal: &Principal,
    current_password: String,
    new_password: String,
) -> Result<(), StoreError> {
    password::check_policy("new_password", &new_password)?;
    if credentials::same_secret(&current_password, &new_password) {
        return Err(StoreError::Invalid(
            "new_password: must differ from the current password".into(),
        ));
    }
    let user = &principal.user;
    // The profile (for its hash) and the email's throttle slots, in one round trip.
    let mut profile = None;
    let mut attempts = Attempts::none(Subject::Email);
    for item in store
        .get_many(vec![
            store::key(keys::user(&user.id), keys::PROFILE_SK),
            throttle::key(Subject::Email, &user.email),
        ])
        .await?
    {
        if store::sort_key(&item) == keys::PROFILE_SK {
            profile = Some(store::from_item::<ProfileItem>(item)?);
        } else {
            attempts = Attempts::from_item(Subject::Email, &item);
        }
    }
    let profile = profile.ok_or(StoreError::Unauthenticated)?;
    // The current password is a guess like a login's: counted before it is
    // checked, so parallel guesses through a stolen session are bounded too.
    let slot = throttle::reserve(store, Subject::Email, &user.email, attempts).await?;
    if !password::verify(current_password, Some(profile.password_hash.clone())).await? {
        return Err(StoreError::Invalid(
            "current_password: is not correct".into(),
        ));
    }
    slot.release(store).await?;
    let new_hash = password::hash(new_password).await?;
    let epoch = profile.session_epoch + 1;
    let mut writes = vec![store::tx_update(
        Update::builder()
            .table_name(store.table())
            .set_key(Some(store::key(keys::user(&user.id), keys::PROFILE_SK)))
            .update_expression(
                "SET password_hash = :new, must_change_password = :false, session_epoch = :epoch",
            )
            .condition_expression("password_hash = :old")
            .expression_attribute_values(":new", store::s(new_hash))
            .expression_attribute_values(":old", store::s(profile.password_hash))
            .expression_attribute_values(":false", AttributeValue::Bool(false))
            .expression_attribute_values(":epoch", store::n(epoch)),
    )?];
    // The session making the change stays signed in: it moves to the new epoch.
    if let Credential::Session { digest } = &principal.credential {
        writes.push(store::tx_update(
            Update::builder()
                .table_name(store.table())
                .set_key(Some(store::key(
                    keys::user(&user.id),
                    &keys::session_sk(digest),
                )))
                .update_expression("SET epoch = :epoch")
                .condition_expression("attribute_exists(pk)")
                .expression_attribute_values(":epoch", store::n(epoch)),
        )?);
    }
    match store.transact(writes).await {
        Ok(()) => {}
        Err(e) if store::cancelled_conditions(&e).is_some_and(|failed| failed.contains(&true)) => {
            return Err(StoreError::Conflict(
                "the password was changed meanwhile; sign in again".into(),
            ));
        }
        Err(e) => return Err(store::transaction_failure(e)),
    }
    if let Err(error) = delete_stale_sessions(store, &user.id, epoch).await {
        tracing::warn!(error = %error, "tidying up signed-out sessions failed; they are already invalid");
    }
    Ok(())
}

async fn delete_stale_sessions(store: &Store, user_id: &str, epoch: u64) -> Result<(), StoreError> {
    // A session of another epoch is dead already, and so is one that
    // cannot be read: both go.
    profile::delete_user_items(store, user_id, keys::SESSION_SK_PREFIX, |item| {
        store::from_item::<SessionItem>(item.clone()).map_or(true, |session| session.epoch != epoch)
    })
    .await
}
