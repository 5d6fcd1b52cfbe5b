//! The API version this CLI speaks (`berth_records::API_VERSION`, the
//! records it was built with) against the one an API's description states
//! (`info.version` of `GET /api/v1/openapi.json`).

use std::cmp::Ordering;

use crate::api::Api;
use crate::failure::Result;

pub const SPOKEN: &str = berth_records::API_VERSION;

/// `MAJOR.MINOR.PATCH`, a pre-release (`-rc.1`) or build (`+…`) ignored.
fn numbers(version: &str) -> Option<(u64, u64, u64)> {
    let core = version.split(['-', '+']).next()?;
    let mut parts = core.split('.').map(|part| part.parse::<u64>().ok());
    let numbers = (parts.next()??, parts.next()??, parts.next()??);
    parts.next().is_none().then_some(numbers)
}

/// What a difference between the two versions means to this CLI; `None`
/// when it can use that API as it is.
pub fn judge(api: &str) -> Option<String> {
    let (Some(ours), Some(theirs)) = (numbers(SPOKEN), numbers(api)) else {
        return Some(format!(
            "the API states version `{api}`, which this CLI (for API {SPOKEN}) cannot read"
        ));
    };
    if ours.0 != theirs.0 {
        return Some(format!(
            "the API is version {api} and this CLI speaks {SPOKEN}: a new major version \
             changes what requests mean; use a CLI built for API {}.x",
            theirs.0
        ));
    }
    match (theirs.1, theirs.2).cmp(&(ours.1, ours.2)) {
        // Newer within the major version: only additions, which the
        // records' serde ignores.
        Ordering::Equal | Ordering::Greater => None,
        Ordering::Less => Some(format!(
            "the API is version {api}, older than the {SPOKEN} this CLI speaks: \
             some commands may be refused"
        )),
    }
}

/// The API's version, as its description states it.
pub fn of_api(api: &Api) -> Result<String> {
    let version: Option<String> = api
        .get(&["openapi.json"])?
        .part("info")
        .part("version")
        .record()
        .unwrap_or_default();
    Ok(version.unwrap_or_else(|| "unknown".to_owned()))
}

/// Warns on standard error when the API's version is one this CLI cannot
/// fully handle; a failure to ask is no reason to stop the command.
pub fn warn_if_incompatible(api: &Api) {
    if let Ok(version) = of_api(api)
        && let Some(warning) = judge(&version)
    {
        eprintln!("warning: {warning}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_major_version_newer_or_equal_is_fine() {
        assert_eq!(judge(SPOKEN), None);
        let (major, minor, patch) = numbers(SPOKEN).unwrap();
        assert_eq!(judge(&format!("{major}.{}.0", minor + 1)), None);
        assert_eq!(judge(&format!("{major}.{minor}.{patch}")), None);
        assert!(
            judge(&format!("{}.0.0", major + 1))
                .unwrap()
                .contains("major")
        );
        if minor > 0 {
            assert!(
                judge(&format!("{major}.{}.0", minor - 1))
                    .unwrap()
                    .contains("older")
            );
        }
        assert!(judge("banana").is_some());
    }

    #[test]
    fn it_speaks_the_version_of_the_committed_description() {
        let document: serde_json::Value =
            serde_json::from_str(include_str!("../../openapi/openapi.json")).unwrap();
        assert_eq!(document["info"]["version"], SPOKEN);
    }
}
