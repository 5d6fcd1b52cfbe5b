//! Image names as the tools of a build read them, and where the Cloud
//! Native Buildpacks lifecycle keeps an image in its OCI layout directory.
//!
//! In layout mode the lifecycle reads and writes `<layout-dir>/<path>`,
//! with the path from imgutil's `layout.ParseRefToPath` (buildpacks/imgutil
//! `layout/util.go`, the version buildpacks/lifecycle v0.21.1 pins):
//! `<registry>/<repository>/<tag>`, or `<registry>/<repository>/sha256/<hex>`
//! for a digest, where registry and repository are go-containerregistry's
//! (`pkg/name`, v0.20.7): the first component is the registry only when it
//! has a `.` or a `:` (else the registry is Docker Hub's), `docker.io` is
//! written `index.docker.io`, and a Docker Hub repository of one component
//! gets `library/`. The other steps (the `run-image` step that fills the
//! layout, BuildKit that writes the app's image there too, the `push` step
//! that reads it) are given the same paths, made here once.

/// An image reference an operator set (`name[:tag][@sha256:hex]`), well
/// formed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageRef {
    /// As given.
    reference: String,
    registry: String,
    repository: String,
    identifier: Identifier,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Identifier {
    Tag(String),
    /// The hex of a sha256 digest.
    Digest(String),
}

/// Docker Hub, as go-containerregistry names it.
const DOCKER_HUB: &str = "index.docker.io";

impl ImageRef {
    /// `reference`, or why not in a sentence.
    pub fn parse(reference: &str) -> Result<Self, String> {
        let bad = || {
            format!(
                "{reference:?} is not an image reference like registry.example.com/repository:tag or …@sha256:<64 hex digits>"
            )
        };
        let (name, digest) = match reference.split_once('@') {
            Some((name, digest)) => {
                let hex = digest.strip_prefix("sha256:").ok_or_else(bad)?;
                let hex_ok =
                    hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
                if !hex_ok {
                    return Err(bad());
                }
                (name, Some(hex.to_owned()))
            }
            None => (reference, None),
        };
        // A tag follows the last `:` after the last `/` (a registry's port
        // comes before a `/`).
        let last_slash = name.rfind('/').map_or(0, |at| at + 1);
        let (repository_name, tag) = match name[last_slash..].rfind(':') {
            Some(at) => (&name[..last_slash + at], Some(&name[last_slash + at + 1..])),
            None => (name, None),
        };
        let tag_ok = tag.is_none_or(|tag| {
            !tag.is_empty()
                && tag.len() <= 128
                && !tag.starts_with(['.', '-'])
                && tag
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
        });
        let (registry, repository) = repository_of(repository_name).ok_or_else(bad)?;
        if !tag_ok {
            return Err(bad());
        }
        let identifier = match (digest, tag) {
            (Some(hex), _) => Identifier::Digest(hex),
            (None, Some(tag)) => Identifier::Tag(tag.to_owned()),
            (None, None) => Identifier::Tag("latest".to_owned()),
        };
        Ok(Self {
            reference: reference.to_owned(),
            registry,
            repository,
            identifier,
        })
    }

    /// The reference as the operator gave it.
    pub fn as_str(&self) -> &str {
        &self.reference
    }

    /// The reference the tools are given: by digest alone when it has one
    /// (the `docker://` transport of skopeo refuses a tag and a digest
    /// together), else by tag.
    pub fn pull_ref(&self) -> String {
        match &self.identifier {
            Identifier::Digest(hex) => {
                format!("{}/{}@sha256:{hex}", self.registry, self.repository)
            }
            Identifier::Tag(tag) => format!("{}/{}:{tag}", self.registry, self.repository),
        }
    }

    /// Where the lifecycle reads this image in a layout directory, relative
    /// to it.
    pub fn layout_path(&self) -> String {
        match &self.identifier {
            Identifier::Digest(hex) => {
                format!("{}/{}/sha256/{hex}", self.registry, self.repository)
            }
            Identifier::Tag(tag) => format!("{}/{}/{tag}", self.registry, self.repository),
        }
    }
}

/// The layout directory's path of a repository's images (each tag a
/// directory in it), relative to the layout directory: for an app's
/// repository `{prefix}/{org}/{project}/{app}`. None when it is no
/// repository name.
pub fn repository_layout_path(repository: &str) -> Option<String> {
    let (registry, repository) = repository_of(repository)?;
    Some(format!("{registry}/{repository}"))
}

/// Registry and repository, as go-containerregistry's `NewRepository` and
/// `NewRegistry` make them.
fn repository_of(name: &str) -> Option<(String, String)> {
    let (registry, repository) = match name.split_once('/') {
        Some((first, rest)) if first.contains(['.', ':']) => (first, rest),
        _ => ("", name),
    };
    let registry = match registry {
        "" | "docker.io" => DOCKER_HUB,
        other => other,
    };
    let registry_ok = registry
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':'))
        && !registry.starts_with(['.', '-', ':']);
    // pkg/name's repositoryChars, and no empty, `.` or `..` component.
    let repository_ok = (2..=255).contains(&repository.len())
        && repository
            .bytes()
            .all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-' | b'.' | b'/'))
        && repository
            .split('/')
            .all(|part| !part.is_empty() && part != "." && part != "..");
    if !registry_ok || !repository_ok {
        return None;
    }
    let repository = if registry == DOCKER_HUB && !repository.contains('/') {
        format!("library/{repository}")
    } else {
        repository.to_owned()
    };
    Some((registry.to_owned(), repository))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// imgutil's own cases (layout/util_test.go, `ParseRefToPath`).
    #[test]
    fn layout_paths_are_imgutils() {
        let hex = "f75f3d1a317fc82c793d567de94fc8df2bece37acd5f2bd364a0d91a0d1f3dab";
        let hub = "index.docker.io/library";
        for (reference, path) in [
            (
                "my-full-stack-run".to_owned(),
                format!("{hub}/my-full-stack-run/latest"),
            ),
            (
                "my-full-stack-run:bionic".to_owned(),
                format!("{hub}/my-full-stack-run/bionic"),
            ),
            (
                format!("my-full-stack-run@sha256:{hex}"),
                format!("{hub}/my-full-stack-run/sha256/{hex}"),
            ),
            (
                "cnb/my-full-stack-run".to_owned(),
                "index.docker.io/cnb/my-full-stack-run/latest".to_owned(),
            ),
            (
                "cnb/my-full-stack-run:bionic".to_owned(),
                "index.docker.io/cnb/my-full-stack-run/bionic".to_owned(),
            ),
            (
                format!("cnb/my-full-stack-run@sha256:{hex}"),
                format!("index.docker.io/cnb/my-full-stack-run/sha256/{hex}"),
            ),
            (
                "my-registry.com/my-full-stack-run".to_owned(),
                "my-registry.com/my-full-stack-run/latest".to_owned(),
            ),
            (
                "my-registry.com/my-full-stack-run:bionic".to_owned(),
                "my-registry.com/my-full-stack-run/bionic".to_owned(),
            ),
            (
                format!("my-registry.com/my-full-stack-run@sha256:{hex}"),
                format!("my-registry.com/my-full-stack-run/sha256/{hex}"),
            ),
            (
                "my-registry.com/cnb/my-full-stack-run".to_owned(),
                "my-registry.com/cnb/my-full-stack-run/latest".to_owned(),
            ),
            (
                "my-registry.com/cnb/my-full-stack-run:bionic".to_owned(),
                "my-registry.com/cnb/my-full-stack-run/bionic".to_owned(),
            ),
            (
                format!("my-registry.com/cnb/my-full-stack-run@sha256:{hex}"),
                format!("my-registry.com/cnb/my-full-stack-run/sha256/{hex}"),
            ),
        ] {
            let image = ImageRef::parse(&reference).expect(&reference);
            assert_eq!(image.as_str(), reference);
            assert_eq!(image.layout_path(), path, "{reference}");
        }
    }

    #[test]
    fn references_are_pulled_by_digest_when_they_have_one() {
        let hex = "a".repeat(64);
        for (reference, pull) in [
            (
                "docker.io/paketobuildpacks/run-jammy-base:0.1.196".to_owned(),
                "index.docker.io/paketobuildpacks/run-jammy-base:0.1.196".to_owned(),
            ),
            (
                format!("my-registry.io:5000/team/run:1.0@sha256:{hex}"),
                format!("my-registry.io:5000/team/run@sha256:{hex}"),
            ),
            // A first component without `.` or `:` is a Docker Hub namespace.
            (
                "localhost/run:2".to_owned(),
                "index.docker.io/localhost/run:2".to_owned(),
            ),
        ] {
            assert_eq!(
                ImageRef::parse(&reference).expect(&reference).pull_ref(),
                pull
            );
        }
        for bad in [
            "",
            "Registry.io/UPPER:1",
            "registry.io/run:",
            "registry.io/run@sha256:abc",
            "registry.io/../run:1",
            "registry.io/run:-x",
        ] {
            assert!(ImageRef::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(
            repository_layout_path("127.0.0.1:5000/berth/acme/shop/web").as_deref(),
            Some("127.0.0.1:5000/berth/acme/shop/web")
        );
        assert_eq!(
            repository_layout_path("docker.io/acme/web").as_deref(),
            Some("index.docker.io/acme/web")
        );
        assert_eq!(repository_layout_path("registry.io/UPPER"), None);
    }
}
