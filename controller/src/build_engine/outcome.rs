//! How a build's Job ended, read from its Job and its pod: the `result`
//! container's JSON (the digest the push step reported), checked against
//! what the builder step reported it made, or the first step that failed
//! and why.

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ContainerStatus, Pod};
use serde::Deserialize;

use berth_domain::app::BuildStrategy;

use super::{BUILDPACKS, DOCKERFILE, PUSH, RESULT, RUN_IMAGE, SOURCE};

/// What a finished build pushed, as its `result` container said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pushed {
    /// 40 lowercase hex digits.
    pub commit: String,
    pub strategy: BuildStrategy,
    /// `sha256:` and 64 lowercase hex digits.
    pub digest: String,
}

impl Pushed {
    /// The termination message of `result`, parsed strictly: any other
    /// shape is no result at all.
    pub fn parse(message: &str) -> Option<Self> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Message {
            commit: String,
            strategy: String,
            digest: String,
        }
        let message: Message = serde_json::from_str(message.trim()).ok()?;
        let strategy = match message.strategy.as_str() {
            "dockerfile" => BuildStrategy::Dockerfile,
            "buildpacks" => BuildStrategy::Buildpacks,
            _ => return None,
        };
        (is_hex(&message.commit, 40) && is_digest(&message.digest)).then_some(Self {
            commit: message.commit,
            strategy,
            digest: message.digest,
        })
    }
}

fn is_hex(text: &str, length: usize) -> bool {
    text.len() == length && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// `sha256:` and 64 lowercase hex digits.
fn is_digest(text: &str) -> bool {
    text.strip_prefix("sha256:")
        .is_some_and(|hex| is_hex(hex, 64))
}

/// The digest a builder step says it made, from its termination message:
/// `Ok(None)` when its report names none, `Err` when it is not a report.
///
/// - `dockerfile`: BuildKit's `--metadata-file`, a JSON object whose
///   `containerimage.digest` is the digest of the image (or index) the
///   exporter wrote (`exporter/oci/export.go`, `ExporterImageDigestKey`,
///   moby/buildkit v0.32.2).
/// - `buildpacks`: the lifecycle's `report.toml` (`platform/files/report.go`
///   in buildpacks/lifecycle v0.21.1: `[build]` with the BOM, whose
///   entries may carry `digest` keys of their own, and `[image]` with
///   `tags`, `digest`, `image-id`, `manifest-size`): the `digest` of the
///   `[image]` table and nothing else. The exporter writes one only for an
///   image it pushed to a registry (`phase/save.go`, a
///   `remote.DigestIdentifier`); exporting to a layout, as Berth does, it
///   writes none, and the push step's digest stands alone.
pub fn built_digest(strategy: BuildStrategy, message: &str) -> Result<Option<String>, String> {
    let digest = match strategy {
        BuildStrategy::Dockerfile => {
            let metadata: serde_json::Value = serde_json::from_str(message.trim())
                .map_err(|_| "BuildKit's metadata is not JSON".to_owned())?;
            let digest = metadata
                .get("containerimage.digest")
                .and_then(serde_json::Value::as_str)
                .ok_or("BuildKit's metadata names no containerimage.digest")?;
            Some(digest.to_owned())
        }
        BuildStrategy::Buildpacks => {
            #[derive(Deserialize)]
            struct Report {
                image: ImageReport,
            }
            #[derive(Deserialize)]
            struct ImageReport {
                digest: Option<String>,
            }
            let report: Report = toml::from_str(message)
                .map_err(|_| "the lifecycle's report.toml has no [image] table".to_owned())?;
            report.image.digest
        }
        BuildStrategy::Auto => return Err("no builder runs for `auto`".to_owned()),
    };
    match digest {
        Some(digest) if !is_digest(&digest) => Err(format!("{digest:?} is not a sha256 digest")),
        digest => Ok(digest),
    }
}

/// How a build's Job ended; None while it runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Succeeded(Pushed),
    /// Why, in words a tenant may read (the failed step's output tail).
    Failed(String),
}

/// The most of a failed step's output a build's message keeps.
const MESSAGE_TAIL: usize = 600;

/// Reads the end of a build from its Job and (when there is one) its pod.
pub fn outcome(job: &Job, pod: Option<&Pod>, deadline_seconds: i64) -> Option<Outcome> {
    let conditions = job.status.as_ref()?.conditions.as_ref()?;
    let holds = |kind: &str| {
        conditions
            .iter()
            .find(|condition| condition.type_ == kind && condition.status == "True")
    };
    let statuses: Vec<&ContainerStatus> = pod
        .and_then(|pod| pod.status.as_ref())
        .map(|status| {
            status
                .init_container_statuses
                .iter()
                .flatten()
                .chain(status.container_statuses.iter().flatten())
                .collect()
        })
        .unwrap_or_default();
    let terminated = |name: &str| {
        statuses
            .iter()
            .find(|status| status.name == name)
            .and_then(|status| status.state.as_ref()?.terminated.as_ref())
    };
    if holds("Complete").is_some() {
        let Some(pushed) = terminated(RESULT)
            .and_then(|terminated| terminated.message.as_deref())
            .and_then(Pushed::parse)
        else {
            return Some(Outcome::Failed(
                "the build ended without a result Berth can read (its result step said no commit and digest)".to_owned(),
            ));
        };
        let builder = match pushed.strategy {
            BuildStrategy::Dockerfile => DOCKERFILE,
            _ => BUILDPACKS,
        };
        let report = terminated(builder)
            .and_then(|terminated| terminated.message.as_deref())
            .unwrap_or_default();
        return Some(match built_digest(pushed.strategy, report) {
            Err(why) => {
                Outcome::Failed(format!("the {builder} step's report is unreadable: {why}"))
            }
            Ok(Some(built)) if built != pushed.digest => Outcome::Failed(format!(
                "the image pushed ({}) is not the one the {builder} step built ({built})",
                pushed.digest
            )),
            Ok(_) => Outcome::Succeeded(pushed),
        });
    }
    let failed = holds("Failed")?;
    if failed.reason.as_deref() == Some("DeadlineExceeded") {
        return Some(Outcome::Failed(format!(
            "it ran past its deadline of {deadline_seconds} s"
        )));
    }
    let step = [SOURCE, RUN_IMAGE, DOCKERFILE, BUILDPACKS, PUSH, RESULT]
        .into_iter()
        .find_map(|name| {
            let terminated = terminated(name)?;
            (terminated.exit_code != 0).then(|| (name, terminated.message.clone()))
        });
    Some(Outcome::Failed(match step {
        Some((name, Some(message))) if !message.trim().is_empty() => {
            format!("step {name} failed: {}", tail(message.trim()))
        }
        Some((name, _)) => format!("step {name} failed"),
        None => match failed.reason.as_deref() {
            Some(reason) => format!("its Job failed ({reason})"),
            None => "its Job failed".to_owned(),
        },
    }))
}

/// The last [`MESSAGE_TAIL`] bytes of `text`, cut at a character.
fn tail(text: &str) -> &str {
    let mut start = text.len().saturating_sub(MESSAGE_TAIL);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::batch::v1::{JobCondition, JobStatus};
    use k8s_openapi::api::core::v1::{ContainerState, ContainerStateTerminated, PodStatus};

    const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";

    fn digest(fill: &str) -> String {
        format!("sha256:{}", fill.repeat(64 / fill.len()))
    }

    /// A report.toml as the lifecycle's exporter writes it after a push to a
    /// registry (`files.Report` encoded by BurntSushi/toml: `[build]` first,
    /// its BOM entries carrying metadata of the buildpacks' own, here a
    /// `digest`, then `[image]`).
    fn registry_report(bom_digest: &str, image_digest: &str) -> String {
        format!(
            r#"[build]

  [[build.bom]]
    name = "jre"

    [build.bom.metadata]
      digest = "{bom_digest}"
      version = "21.0.5"

    [build.bom.buildpack]
      id = "paketo-buildpacks/bellsoft-liberica"
      version = "11.0.1"

[image]
  tags = ["registry.example.com/berth/acme/shop/web:{COMMIT}"]
  digest = "{image_digest}"
  manifest-size = 2381
"#
        )
    }

    /// The same exporter writing to an OCI layout: no digest (`phase/save.go`).
    fn layout_report() -> String {
        format!(
            "[build]\n  bom = []\n\n[image]\n  tags = [\"registry.example.com/berth/acme/shop/web:{COMMIT}\"]\n  manifest-size = 2381\n"
        )
    }

    /// BuildKit's `--metadata-file` after a `type=oci` export.
    fn buildkit_metadata(image_digest: &str) -> String {
        format!(
            r#"{{
  "containerimage.config.digest": "{config}",
  "containerimage.descriptor": {{
    "mediaType": "application/vnd.oci.image.manifest.v1+json",
    "digest": "{image_digest}",
    "size": 1071
  }},
  "containerimage.digest": "{image_digest}"
}}"#,
            config = digest("c")
        )
    }

    #[test]
    fn a_builders_digest_is_its_reports_own() {
        let (image, bom) = (digest("ab"), digest("0f"));
        assert_eq!(
            built_digest(BuildStrategy::Buildpacks, &registry_report(&bom, &image)),
            Ok(Some(image.clone()))
        );
        assert_eq!(
            built_digest(BuildStrategy::Buildpacks, &layout_report()),
            Ok(None)
        );
        assert_eq!(
            built_digest(BuildStrategy::Dockerfile, &buildkit_metadata(&image)),
            Ok(Some(image.clone()))
        );
        for (strategy, bad) in [
            (BuildStrategy::Buildpacks, String::new()),
            (BuildStrategy::Buildpacks, "[build]\n".to_owned()),
            (BuildStrategy::Buildpacks, registry_report(&bom, "sha256:1")),
            (BuildStrategy::Dockerfile, "{}".to_owned()),
            (BuildStrategy::Dockerfile, registry_report(&bom, &image)),
        ] {
            assert!(built_digest(strategy, &bad).is_err(), "{bad}");
        }
    }

    fn ended(
        job_condition: (&str, Option<&str>),
        steps: &[(&str, i32, Option<&str>)],
    ) -> (Job, Pod) {
        let job = Job {
            status: Some(JobStatus {
                conditions: Some(vec![JobCondition {
                    type_: job_condition.0.to_owned(),
                    status: "True".to_owned(),
                    reason: job_condition.1.map(str::to_owned),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            ..Default::default()
        };
        let status = |(name, exit_code, message): &(&str, i32, Option<&str>)| ContainerStatus {
            name: (*name).to_owned(),
            state: Some(ContainerState {
                terminated: Some(ContainerStateTerminated {
                    exit_code: *exit_code,
                    message: message.map(str::to_owned),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        let (init, main): (Vec<_>, Vec<_>) = steps.iter().partition(|(name, ..)| *name != RESULT);
        let pod = Pod {
            status: Some(PodStatus {
                init_container_statuses: Some(init.iter().map(&status).collect()),
                container_statuses: Some(main.iter().map(status).collect()),
                ..Default::default()
            }),
            ..Default::default()
        };
        (job, pod)
    }

    fn result(strategy: &str, digest: &str) -> String {
        format!(r#"{{"commit":"{COMMIT}","strategy":"{strategy}","digest":"{digest}"}}"#)
    }

    #[test]
    fn a_builds_end_is_read_from_its_result_or_its_failed_step() {
        let pushed = digest("ab");
        let succeeded = |strategy: BuildStrategy| {
            Some(Outcome::Succeeded(Pushed {
                commit: COMMIT.to_owned(),
                strategy,
                digest: pushed.clone(),
            }))
        };
        let metadata = buildkit_metadata(&pushed);
        let message = result("dockerfile", &pushed);
        let (job, pod) = ended(
            ("Complete", None),
            &[
                (SOURCE, 0, None),
                (RUN_IMAGE, 0, None),
                (DOCKERFILE, 0, Some(&metadata)),
                (BUILDPACKS, 0, None),
                (PUSH, 0, None),
                (RESULT, 0, Some(&message)),
            ],
        );
        assert_eq!(
            outcome(&job, Some(&pod), 600),
            succeeded(BuildStrategy::Dockerfile)
        );
        // Buildpacks exported to a layout: its report names no digest.
        let report = layout_report();
        let message = result("buildpacks", &pushed);
        let (job, pod) = ended(
            ("Complete", None),
            &[(BUILDPACKS, 0, Some(&report)), (RESULT, 0, Some(&message))],
        );
        assert_eq!(
            outcome(&job, Some(&pod), 600),
            succeeded(BuildStrategy::Buildpacks)
        );
        // A builder that says it built another image than was pushed.
        let other = buildkit_metadata(&digest("cd"));
        let message = result("dockerfile", &pushed);
        let (job, pod) = ended(
            ("Complete", None),
            &[(DOCKERFILE, 0, Some(&other)), (RESULT, 0, Some(&message))],
        );
        assert_eq!(
            outcome(&job, Some(&pod), 600),
            Some(Outcome::Failed(format!(
                "the image pushed ({pushed}) is not the one the dockerfile step built ({})",
                digest("cd")
            )))
        );
        // A builder's report that is none.
        let (job, pod) = ended(
            ("Complete", None),
            &[(DOCKERFILE, 0, None), (RESULT, 0, Some(&message))],
        );
        assert!(matches!(
            outcome(&job, Some(&pod), 600),
            Some(Outcome::Failed(why)) if why.starts_with("the dockerfile step's report is unreadable")
        ));
        // A result that is not exactly the shape is no success.
        let (job, pod) = ended(
            ("Complete", None),
            &[(RESULT, 0, Some("{\"commit\":\"x\"}"))],
        );
        assert!(matches!(
            outcome(&job, Some(&pod), 600),
            Some(Outcome::Failed(_))
        ));
        let (job, pod) = ended(
            ("Failed", Some("BackoffLimitExceeded")),
            &[
                (SOURCE, 0, None),
                (RUN_IMAGE, 0, None),
                (DOCKERFILE, 1, Some("ERROR: failed to solve: exit code 2\n")),
            ],
        );
        assert_eq!(
            outcome(&job, Some(&pod), 600),
            Some(Outcome::Failed(
                "step dockerfile failed: ERROR: failed to solve: exit code 2".to_owned()
            ))
        );
        let (job, pod) = ended(
            ("Failed", Some("BackoffLimitExceeded")),
            &[(PUSH, 1, Some("the builder left no image to push"))],
        );
        assert_eq!(
            outcome(&job, Some(&pod), 600),
            Some(Outcome::Failed(
                "step push failed: the builder left no image to push".to_owned()
            ))
        );
        let (job, _) = ended(("Failed", Some("DeadlineExceeded")), &[]);
        assert_eq!(
            outcome(&job, None, 900),
            Some(Outcome::Failed(
                "it ran past its deadline of 900 s".to_owned()
            ))
        );
        assert_eq!(outcome(&Job::default(), None, 600), None);
    }

    #[test]
    fn a_result_is_taken_only_in_its_exact_shape() {
        let digest = digest("ab");
        let good = result("dockerfile", &digest);
        let pushed = Pushed::parse(&good).expect("parsed");
        assert_eq!(pushed.commit, COMMIT);
        assert_eq!(pushed.strategy, BuildStrategy::Dockerfile);
        assert_eq!(pushed.digest, digest);
        for bad in [
            good.replace("dockerfile", "auto"),
            good.replace(COMMIT, &COMMIT[1..]),
            good.replace(COMMIT, &COMMIT.to_uppercase()),
            good.replace("sha256:", "sha512:"),
            good.replace(&digest, &format!("{digest}0")),
            good.replace('}', r#","extra":1}"#),
            "not json".to_owned(),
            String::new(),
        ] {
            assert_eq!(Pushed::parse(&bad), None, "{bad}");
        }
    }

    #[test]
    fn a_tail_is_cut_at_a_character() {
        let text = format!("{}é{}", "a".repeat(10), "b".repeat(MESSAGE_TAIL - 1));
        let cut = tail(&text);
        assert!(cut.len() <= MESSAGE_TAIL);
        assert!(cut.ends_with('b'));
        assert_eq!(tail("short"), "short");
    }
}
