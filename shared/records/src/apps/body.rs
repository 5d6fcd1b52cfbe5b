//! The app bodies of the API (`createApp`, `updateApp`, a process of
//! `processes`), from one list of fields; `berth_api::apps::body` parses
//! them into the App's configuration.

use serde::{Deserialize, Serialize};

use crate::object;
use berth_domain::CommandArg;
use berth_domain::container_paths::MountPath;
use berth_domain::git::{GitRef, GitRepo};
use berth_domain::names::{
    EnvName, Hostname, NewAppName, ProcessName, SecretKey, SecretName, VolumeName,
};
use berth_domain::size::{Size, VolumeSize};

/// A variable: a plain `value`, or a key of a `secret`.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EnvBody {
    #[schema(value_type = EnvName)]
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    #[serde(
        default,
        deserialize_with = "object::optional",
        skip_serializing_if = "Option::is_none"
    )]
    pub secret: Option<SecretRefBody>,
}

#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SecretRefBody {
    #[schema(value_type = SecretName)]
    pub name: String,
    #[schema(value_type = SecretKey)]
    pub key: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct VolumeBody {
    #[schema(value_type = VolumeName)]
    pub name: String,
    #[schema(value_type = MountPath)]
    pub mount_path: String,
    /// A Kubernetes quantity above zero and at most `1Ti` (`1Gi` by
    /// default); grows, never shrinks.
    #[schema(value_type = Option<VolumeSize>)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<String>,
}

/// How a build of the app's source makes its image (replaced whole in an
/// update; what it leaves out takes its default).
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BuildBody {
    /// `auto` (the default: the Dockerfile if the repository has one,
    /// else buildpacks), `dockerfile` or `buildpacks`.
    #[schema(pattern = "^(auto|dockerfile|buildpacks)$")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub strategy: Option<String>,
    /// The directory to build, relative to the repository's root (no `..`);
    /// the root by default.
    #[schema(max_length = 255)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_dir: Option<String>,
    /// The Dockerfile's path relative to the context directory;
    /// `Dockerfile` by default.
    #[schema(max_length = 255)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dockerfile: Option<String>,
}

/// The app's bodies from one list of fields, so a new field is one entry
/// here: `createApp` takes each as given, `updateApp` changes what is
/// present (the spec: the same fields, all optional), and a process's
/// fields serve both a [`ProcessBody`] of `processes` and the main process
/// a body carries flat. Each body refuses unknown fields, which serde
/// cannot do for a struct flattened into another: hence a macro rather
/// than shared structs.
macro_rules! bodies {
    (
        process: { $($(#[$process_attribute:meta])* $process_field:ident: $process_type:ty,)* }
        app: { $($(#[$app_attribute:meta])* $app_field:ident: $app_type:ty,)* }
    ) => {
        /// A process of `processes`; its fields are also the main process's,
        /// flat in a create or update body.
        #[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
        #[serde(deny_unknown_fields)]
        pub struct ProcessBody {
            /// Every process of `processes` has one (the flat fields' main
            /// process is named by what it is: `web`, `worker` or `job`).
            #[schema(value_type = ProcessName, required = true)]
            #[serde(skip_serializing_if = "Option::is_none")]
            pub name: Option<String>,
            $($(#[$process_attribute])* #[serde(skip_serializing_if = "Option::is_none")] pub $process_field: $process_type,)*
        }

        /// `POST ENV/apps`: the spec's flat fields, or `processes` for an app
        /// of several processes (never both).
        #[derive(Debug, Default, Clone, Serialize, Deserialize, utoipa::ToSchema)]
        #[schema(as = CreateAppBody)]
        #[serde(deny_unknown_fields)]
        pub struct CreateBody {
            /// A DNS-1035 label without `--` (which separates the parts of
            /// the app's default host).
            #[schema(value_type = NewAppName)]
            pub name: String,
            $($(#[$app_attribute])* #[serde(skip_serializing_if = "Option::is_none")] pub $app_field: $app_type,)*
            $($(#[$process_attribute])* #[serde(skip_serializing_if = "Option::is_none")] pub $process_field: $process_type,)*
        }

        /// `PATCH ENV/apps/{app}`: omitted fields stay; lists are replaced
        /// whole.
        #[derive(Debug, Default, Clone, Serialize, Deserialize, utoipa::ToSchema)]
        #[schema(as = UpdateAppBody)]
        #[serde(deny_unknown_fields)]
        pub struct UpdateBody {
            $($(#[$app_attribute])* #[serde(skip_serializing_if = "Option::is_none")] pub $app_field: $app_type,)*
            $($(#[$process_attribute])* #[serde(skip_serializing_if = "Option::is_none")] pub $process_field: $process_type,)*
        }

        /// The main process's fields that a body carries flat.
        pub const FLAT_PROCESS_FIELDS: &[&str] = &[$(stringify!($process_field)),*];

        impl CreateBody {
            /// The flat process fields, as a process body without a name.
            pub fn flat_process(&self) -> ProcessBody {
                ProcessBody { name: None, $($process_field: Clone::clone(&self.$process_field),)* }
            }
        }

        impl UpdateBody {
            /// The flat process fields, as a process body without a name.
            pub fn flat_process(&self) -> ProcessBody {
                ProcessBody { name: None, $($process_field: Clone::clone(&self.$process_field),)* }
            }
        }
    };
}

bodies! {
process: {
    #[schema(value_type = Option<Vec<CommandArg>>, max_items = 100)]
    command: Option<Vec<String>>,
    #[schema(minimum = 1, maximum = 65535)]
    port: Option<i64>,
    /// `nano`, `small`, `medium`, `large`, or `CPU/MEMORY` in Kubernetes
    /// quantities (e.g. `750m/1536Mi`), at most 16 CPU and 64Gi.
    #[schema(value_type = Option<Size>)]
    size: Option<String>,
    #[schema(minimum = 0, maximum = 100)]
    replicas: Option<i64>,
    /// At least `replicas`; above it, the process scales on CPU.
    #[schema(minimum = 0, maximum = 100)]
    max_replicas: Option<i64>,
    /// A 5-field cron expression: the process runs on a schedule.
    schedule: Option<String>,
    /// An IANA time zone for `schedule`; `UTC` by default.
    time_zone: Option<String>,
    #[schema(pattern = "^(http|tcp)$")]
    protocol: Option<String>,
}
app: {
    /// A container image reference, e.g. `nginx:1.27`; optional with a
    /// `git_repo`. A new image deploys a release (`app-deploy`).
    #[schema(min_length = 1)]
    image: Option<String>,
    /// The `https://` URL of a git repository to build the image from (no
    /// credentials in it: see `git_secret`). An app has an `image`, a
    /// `git_repo` or both; with a `git_repo` and no `image`, build 1 is
    /// queued at once and the app awaits it. A new repository is
    /// `app-deploy`, like every source field; `null` removes the app's
    /// source, only when it has an image.
    #[schema(value_type = Option<GitRepo>)]
    #[serde(default, deserialize_with = "present")]
    git_repo: Option<Option<String>>,
    /// The branch, tag or commit to build (git's ref-format rules, at most
    /// 255 characters); the repository's default branch when omitted or
    /// `null`.
    #[schema(value_type = Option<GitRef>)]
    #[serde(default, deserialize_with = "present")]
    git_ref: Option<Option<String>>,
    #[serde(default, deserialize_with = "object::optional")]
    build: Option<BuildBody>,
    /// A secret of the environment holding the credential to clone with
    /// (key `token`, optionally `username`); only its name is ever shown.
    /// `null`: clone without a credential.
    #[schema(value_type = Option<SecretName>)]
    #[serde(default, deserialize_with = "present")]
    git_secret: Option<Option<String>>,
    /// Several processes, instead of the flat fields of the main one.
    #[schema(min_items = 1, max_items = 20)]
    #[serde(default, deserialize_with = "object::optional_list")]
    processes: Option<Vec<ProcessBody>>,
    #[schema(max_items = 500)]
    #[serde(default, deserialize_with = "object::optional_list")]
    env: Option<Vec<EnvBody>>,
    /// Hostnames the app answers on (through the gateway), case-insensitive
    /// and with the DNS root's trailing dot optional (kept lowercase,
    /// without it). Each serves one app on the whole platform; none may be
    /// under the platform's apps domain.
    #[schema(value_type = Option<Vec<Hostname>>, max_items = 50)]
    domains: Option<Vec<String>>,
    /// A URL path (and query) starting with '/', printable ASCII without
    /// spaces, that answers when the app is healthy; `""`: no health check
    /// (removes it).
    #[schema(max_length = 1024, pattern = "^$|^/[!-~]*$")]
    health_check_path: Option<String>,
    #[schema(max_items = 20)]
    #[serde(default, deserialize_with = "object::optional_list")]
    volumes: Option<Vec<VolumeBody>>,
    #[schema(minimum = 1, maximum = 2147483647)]
    fs_group: Option<i64>,
    /// Run before the workloads change, whenever the image, a command, the
    /// env or this command change (a Job from the new image with the new
    /// env, no volumes); the workloads change only when it succeeds. Empty
    /// to remove (`app-deploy`, like `command`).
    #[schema(value_type = Option<Vec<CommandArg>>, max_items = 100)]
    release_command: Option<Vec<String>>,
    /// Roll a revision whose rollout fails back to the last configuration
    /// that became available; `true` by default.
    auto_rollback: Option<bool>,
}
}

/// What no body may be, for the rules between fields that the derived
/// schemas cannot state (JSON Schema `not`, by schema name): `processes`
/// and the main process's flat fields together (refused by `berth_api`),
/// a variable's `value` and `secret` together.
pub fn forbidden_combinations() -> [(&'static str, serde_json::Value); 3] {
    use serde_json::json;
    let given = |field: &str| json!({ "required": [field], "properties": { field: { "not": { "type": "null" } } } });
    let both_process_forms = json!({
        "allOf": [
            given("processes"),
            { "anyOf": FLAT_PROCESS_FIELDS.iter().map(|field| given(field)).collect::<Vec<_>>() },
        ]
    });
    [
        ("CreateAppBody", both_process_forms.clone()),
        ("UpdateAppBody", both_process_forms),
        (
            "EnvBody",
            json!({ "allOf": [given("value"), given("secret")] }),
        ),
    ]
}

/// A field that is given as `null` (`Some(None)`) told apart from one left
/// out (`None`, by `#[serde(default)]`).
fn present<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer).map(Some)
}

/// Where each field of the app's bodies is declared: once, in the list
/// `bodies!` takes, whichever bodies it ends up in (`createApp`'s,
/// `updateApp`'s, a process of `processes`).
#[cfg(test)]
mod declarations {
    use utoipa::PartialSchema;
    use utoipa::openapi::{RefOr, schema::Schema};

    /// The bodies of what an app holds, with fields of their own (a
    /// volume's `size` is not the process's).
    const PARTS: [&str; 4] = ["EnvBody", "SecretRefBody", "VolumeBody", "BuildBody"];

    fn properties<T: PartialSchema>() -> Vec<String> {
        match T::schema() {
            RefOr::T(Schema::Object(object)) => object.properties.keys().cloned().collect(),
            _ => panic!("an object schema"),
        }
    }

    /// Where this file declares `field` (`field: Type,`, a struct's field or
    /// an entry of `bodies!`'s list): the struct or list, and the line.
    fn declarations(field: &str) -> Vec<(String, usize)> {
        let mut found = Vec::new();
        let mut block: Option<(String, i32)> = None;
        for (number, line) in include_str!("body.rs").lines().enumerate() {
            let line = line.trim();
            if block.is_none() {
                let opened = line
                    .strip_prefix("pub struct ")
                    .map(|rest| rest.split([' ', '<']).next().unwrap_or_default().to_owned())
                    .or_else(|| (line == "bodies! {").then(|| "bodies!".to_owned()));
                block = opened.map(|name| (name, 0));
            }
            let Some((name, depth)) = &mut block else {
                continue;
            };
            let declared = line.strip_prefix("pub ").unwrap_or(line);
            if declared
                .strip_prefix(field)
                .and_then(|rest| rest.strip_prefix(": "))
                .is_some_and(|ty| ty.ends_with(',') && ty.starts_with(char::is_uppercase))
                && !PARTS.contains(&name.as_str())
            {
                found.push((name.clone(), number + 1));
            }
            *depth += line.matches('{').count() as i32 - line.matches('}').count() as i32;
            if *depth <= 0 && line.contains('}') {
                block = None;
            }
        }
        found
    }

    #[test]
    fn every_field_of_the_app_bodies_is_declared_once() {
        let mut fields = properties::<super::UpdateBody>();
        fields.extend(properties::<super::ProcessBody>());
        fields.sort();
        fields.dedup();
        // A process's `name` and a new app's are each their body's own.
        fields.retain(|field| field != "name");
        assert!(fields.len() > 20, "{fields:?}");
        for field in &fields {
            let places = declarations(field);
            assert!(
                places.len() == 1 && places[0].0 == "bodies!",
                "{field} is declared at {places:?} (struct or list, line)"
            );
        }
    }
}

/// A client (the CLI) sends these bodies: what it leaves out stays out of
/// the JSON (never `null`, which means something for `git_repo`), and what
/// it writes the API reads back as sent.
#[cfg(test)]
mod sent {
    use super::*;

    #[test]
    fn a_body_holds_only_what_is_given() {
        let update = UpdateBody {
            image: Some("nginx:1.28".into()),
            env: Some(vec![EnvBody {
                name: "A".into(),
                value: None,
                secret: None,
            }]),
            git_repo: Some(None),
            ..UpdateBody::default()
        };
        let json = serde_json::to_value(&update).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"image": "nginx:1.28", "env": [{"name": "A"}], "git_repo": null})
        );
        let read: UpdateBody = serde_json::from_value(json).unwrap();
        assert_eq!(read.image.as_deref(), Some("nginx:1.28"));
        assert_eq!(read.git_repo, Some(None));
        assert_eq!(
            serde_json::to_value(UpdateBody::default()).unwrap(),
            serde_json::json!({})
        );
    }
}
