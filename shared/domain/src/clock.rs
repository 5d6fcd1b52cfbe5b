//! Wall-clock helpers: Unix seconds and milliseconds, and RFC 3339 strings for records.

use jiff::Timestamp;

pub fn unix_seconds() -> i64 {
    Timestamp::now().as_second()
}

pub fn unix_millis() -> i64 {
    Timestamp::now().as_millisecond()
}

/// RFC 3339 with second precision, e.g. `2026-11-22T01:02:03Z`.
pub fn rfc3339(unix_seconds: i64) -> String {
    Timestamp::from_second(unix_seconds)
        .map(|at| at.to_string())
        .unwrap_or_default()
}

/// Now in RFC 3339 with sub-second precision: stamps made in one second
/// still differ (restart stamps roll pods only when they change).
pub fn now_precise() -> String {
    Timestamp::now().to_string()
}

/// The Unix seconds of an RFC 3339 time, if it is one.
pub fn parse_rfc3339(at: &str) -> Option<i64> {
    at.parse::<Timestamp>().ok().map(|at| at.as_second())
}

#[cfg(test)]
mod tests {
    #[test]
    fn formats_rfc3339() {
        assert_eq!(super::rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(super::rfc3339(1_700_000_000), "2023-11-14T22:13:20Z");
    }

    #[test]
    fn parses_what_it_formats() {
        assert_eq!(
            super::parse_rfc3339("2023-11-14T22:13:20Z"),
            Some(1_700_000_000)
        );
        assert_eq!(
            super::parse_rfc3339(&super::now_precise()).map(|s| s > 0),
            Some(true)
        );
        assert_eq!(super::parse_rfc3339("yesterday"), None);
    }
}
