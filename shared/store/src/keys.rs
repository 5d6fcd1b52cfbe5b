//! The key layout of the single table. Each kind of item has one function here.
//!
//! | item | pk | sk |
//! |---|---|---|
//! | organization | `ORG#{org}` | `ORG` |
//! | user profile | `USER#{id}` | `PROFILE` (index `gsi1`: `MEMBERS#{org}` / email) |
//! | session | `USER#{id}` | `SESSION#{sha256}` (TTL) |
//! | API token | `USER#{id}` | `TOKEN#{sha256}` (TTL when it expires) |
//! | deploy token of a project | `PROJECT#{project uid}` | `TOKEN#{sha256}` (TTL when it expires) |
//! | deploy token's name in its project | `PROJECT#{project uid}` | `TOKENNAME#{name}` (TTL as its token) |
//! | email → user | `EMAIL#{email}` | `EMAIL` |
//! | login throttle | `THROTTLE#{EMAIL or IP}#{subject}` | `THROTTLE` (TTL) |
//! | audit counter | `AUDIT#{org}` | `COUNTER` |
//! | audit event | `AUDIT#{org}` | `SEQ#{seq, 20 digits}` (index `gsi1`, of an event concerning a project: `AUDIT#{org}#PROJECT#{project}` / its sk) |
//! | a done upgrade | `UPGRADES` | its name (`LEGACY_CLAIMS`) |
//! | stored kubeconfig | `CLUSTER` | `KUBECONFIG` |
//! | app release | `RELEASES#{app uid}` | `REV#{revision, 12 digits}` |
//! | hostname: each organization's claim and challenge, its verified owner | `HOST#{hostname}` | `HOST` (index `gsi1`: `DOMAINS` / hostname) |
//! | app's webhook (pointer to its hook) | `RELEASES#{app uid}` | `WEBHOOK` |
//! | webhook (with its secret) | `HOOK#{hook id}` | `HOOK` |
//! | webhook delivery seen | `HOOK#{hook id}` | `DELIVERY#{delivery id}` (while the hook exists) |
//! | webhook payload seen | `HOOK#{hook id}` | `PAYLOAD#{sha256 of the body}` (while the hook exists) |
//! | an app's entry in its environment | `ENVAPPS#{namespace}` | `APP#{release history id}` |
//! | a deleted environment awaiting its purge's cleanup | `PURGES` | `ENV#{namespace}#{environment uid}` |
//!
//! A user's sessions and tokens share the profile's partition, so a request is
//! authenticated with one `BatchGetItem`, and everything a user holds is found
//! with one `Query`.

pub const PK: &str = "pk";
pub const SK: &str = "sk";
pub const GSI1: &str = "gsi1";
pub const GSI1_PK: &str = "gsi1pk";
pub const GSI1_SK: &str = "gsi1sk";
/// Unix seconds after which DynamoDB may delete the item. Readers check it too:
/// deletion is lazy.
pub const TTL: &str = "ttl";

/// The audit partition of calls made without a known organization.
pub const SYSTEM_ORG: &str = "_system";

pub const ORG_SK: &str = "ORG";
pub const PROFILE_SK: &str = "PROFILE";
pub const SESSION_SK_PREFIX: &str = "SESSION#";
pub const TOKEN_SK_PREFIX: &str = "TOKEN#";
pub const EMAIL_SK: &str = "EMAIL";
pub const THROTTLE_SK: &str = "THROTTLE";
/// The item the health check reads; it also counts audit fallbacks.
pub const HEALTH: &str = "HEALTH";
pub const AUDIT_COUNTER_SK: &str = "COUNTER";
pub const AUDIT_EVENT_SK_PREFIX: &str = "SEQ#";

pub fn org(org: &str) -> String {
    format!("ORG#{org}")
}

pub fn user(user_id: &str) -> String {
    format!("USER#{user_id}")
}

pub fn session_sk(digest: &str) -> String {
    format!("{SESSION_SK_PREFIX}{digest}")
}

pub fn token_sk(digest: &str) -> String {
    format!("{TOKEN_SK_PREFIX}{digest}")
}

/// A project's deploy tokens, by the project's uid: the partition the
/// token's own uid names, and that its admins list.
pub fn project(project_uid: &str) -> String {
    format!("PROJECT#{project_uid}")
}

pub const TOKEN_NAME_SK_PREFIX: &str = "TOKENNAME#";

pub fn token_name_sk(name: &str) -> String {
    format!("{TOKEN_NAME_SK_PREFIX}{name}")
}

pub fn email(email: &str) -> String {
    format!("EMAIL#{email}")
}

pub fn members_of(org: &str) -> String {
    format!("MEMBERS#{org}")
}

pub fn throttle(kind: &str, subject: &str) -> String {
    format!("THROTTLE#{kind}#{subject}")
}

pub fn audit(org: &str) -> String {
    format!("AUDIT#{org}")
}

/// The partition of index `gsi1` holding the events concerning one
/// project of an organization, by name.
pub fn audit_of_project(org: &str, project: &str) -> String {
    format!("AUDIT#{org}#PROJECT#{project}")
}

pub fn audit_event_sk(seq: u64) -> String {
    format!("{AUDIT_EVENT_SK_PREFIX}{seq:020}")
}

/// An app's release history, keyed by the App resource's uid: a recreated
/// app of the same name starts a history of its own.
pub fn releases(app_uid: &str) -> String {
    format!("RELEASES#{app_uid}")
}

pub const RELEASE_SK_PREFIX: &str = "REV#";

pub fn release_sk(revision: i64) -> String {
    format!("{RELEASE_SK_PREFIX}{revision:012}")
}

/// The item of a hostname (in its normal form, see
/// `domain::names::Hostname`): who claims it, who proved it is theirs
/// (`crate::hostnames`).
pub fn host(hostname: &str) -> String {
    format!("HOST#{hostname}")
}

pub const HOST_SK: &str = "HOST";

/// Done upgrades: one item each, written when its work is over.
pub const UPGRADES_PK: &str = "UPGRADES";
/// The hostname claims of before domains were proven are adopted
/// (`crate::hostnames::legacy_adopted`).
pub const LEGACY_CLAIMS_SK: &str = "LEGACY_CLAIMS";

/// The partition of index `gsi1` holding every claimed hostname's item:
/// what the scheduled check of domain proofs goes through.
pub const DOMAINS_INDEX: &str = "DOMAINS";

/// The pointer from an app to its webhook lives in the app's release
/// history partition, so that deleting the history (when the app is
/// deleted) finds it in the same query; it sorts after every `REV#` item,
/// so the history's reads (`sk < REV#{current}`) never see it.
pub const WEBHOOK_SK: &str = "WEBHOOK";

/// A webhook by its random id (`webhooks::hooks`): what the receiver reads.
pub fn hook(hook_id: &str) -> String {
    format!("HOOK#{hook_id}")
}

pub const HOOK_SK: &str = "HOOK";
pub const DELIVERY_SK_PREFIX: &str = "DELIVERY#";

pub fn delivery_sk(delivery_id: &str) -> String {
    format!("{DELIVERY_SK_PREFIX}{delivery_id}")
}

pub fn payload_sk(body_digest: &str) -> String {
    format!("PAYLOAD#{body_digest}")
}

/// The apps an environment's namespace has held, by release history id:
/// what is left in the table of an environment once it is purged
/// (`apps::leftovers`).
pub fn environment_apps(namespace: &str) -> String {
    format!("ENVAPPS#{namespace}")
}

pub const ENVIRONMENT_APP_SK_PREFIX: &str = "APP#";

pub fn environment_app_sk(history: &str) -> String {
    format!("{ENVIRONMENT_APP_SK_PREFIX}{history}")
}

/// The one partition of environments deleted through the API whose purge's
/// leftovers are still to be removed (`environments::purges`): small, as it
/// only holds what is being deleted.
pub const PURGES_PK: &str = "PURGES";

pub fn environment_purge_sk(namespace: &str, uid: &str) -> String {
    format!("ENV#{namespace}#{uid}")
}

pub const CLUSTER_PK: &str = "CLUSTER";
pub const KUBECONFIG_SK: &str = "KUBECONFIG";

#[cfg(test)]
mod tests {
    #[test]
    fn audit_keys_sort_by_sequence() {
        assert!(super::audit_event_sk(9) < super::audit_event_sk(10));
        assert!(super::audit_event_sk(99_999) < super::audit_event_sk(100_000));
        assert!(super::AUDIT_COUNTER_SK < super::AUDIT_EVENT_SK_PREFIX);
    }

    #[test]
    fn an_apps_webhook_sorts_after_its_releases() {
        assert!(super::release_sk(999_999_999_999).as_str() < super::WEBHOOK_SK);
    }
}
