//! Name rules (DESIGN §2) and Kubernetes quantities.

use crate::ApiError;

/// A DNS label (`[a-z0-9]([-a-z0-9]*[a-z0-9])?`) of 1 to `max` characters;
/// `field` names the body field in the error.
pub fn dns_label(field: &str, value: &str, max: usize) -> Result<(), ApiError> {
    let bytes = value.as_bytes();
    let valid = (1..=max).contains(&value.len())
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        && bytes.first().is_some_and(u8::is_ascii_alphanumeric)
        && bytes.last().is_some_and(u8::is_ascii_alphanumeric);
    if valid {
        Ok(())
    } else {
        Err(ApiError::ValidationFailed(format!(
            "{field}: must be a DNS label (lowercase letters, digits and '-', starting and ending \
             with a letter or digit) of 1 to {max} characters"
        )))
    }
}

/// Text of 1 to `max` characters that is not only white space.
pub fn text(field: &str, value: &str, max: usize) -> Result<(), ApiError> {
    if value.trim().is_empty() || value.chars().count() > max {
        return Err(ApiError::ValidationFailed(format!(
            "{field}: must be 1 to {max} characters"
        )));
    }
    Ok(())
}

/// A Kubernetes quantity in its canonical notation: a non-negative decimal
/// number with an optional suffix (`500m`, `2`, `1.5`, `512Mi`, `4Gi`, `1G`).
pub fn quantity(field: &str, value: &str) -> Result<(), ApiError> {
    const SUFFIXES: [&str; 14] = [
        "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "n", "u", "m", "k", "M", "G", "T", "P",
    ];
    let number = SUFFIXES
        .iter()
        .find_map(|suffix| value.strip_suffix(suffix))
        .or_else(|| value.strip_suffix('E'))
        .unwrap_or(value);
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    let valid = !whole.is_empty()
        && digits(whole)
        && digits(fraction)
        && (fraction.is_empty() != number.contains('.'))
        && value.len() <= 32;
    if valid {
        Ok(())
    } else {
        Err(ApiError::ValidationFailed(format!(
            "{field}: must be a Kubernetes quantity such as 500m, 2, 512Mi or 4Gi"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns_labels() {
        for good in ["a", "web", "web-1", "1abc", &"a".repeat(40)] {
            assert!(dns_label("name", good, 40).is_ok(), "{good}");
        }
        for bad in ["", "-a", "a-", "Web", "a_b", "a.b", "ä", &"a".repeat(41)] {
            assert!(dns_label("name", bad, 40).is_err(), "{bad}");
        }
    }

    #[test]
    fn quantities() {
        for good in [
            "1", "500m", "0.5", "2", "512Mi", "4Gi", "1G", "100k", "1E", "1Ei",
        ] {
            assert!(quantity("cpu", good).is_ok(), "{good}");
        }
        for bad in [
            "", "m", "-1", "1.", ".5", "1.5.1", "4GB", "4 Gi", "one", "1mi",
        ] {
            assert!(quantity("cpu", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn texts() {
        assert!(text("display_name", "Web", 100).is_ok());
        assert!(text("display_name", "  ", 100).is_err());
        assert!(text("display_name", &"x".repeat(101), 100).is_err());
    }
}
