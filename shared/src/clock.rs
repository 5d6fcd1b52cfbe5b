//! Wall-clock helpers: Unix seconds and milliseconds, and RFC 3339 strings for records.

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

pub fn now() -> OffsetDateTime {
    OffsetDateTime::now_utc()
}

pub fn unix_seconds() -> i64 {
    now().unix_timestamp()
}

pub fn unix_millis() -> i64 {
    i64::try_from(now().unix_timestamp_nanos() / 1_000_000).unwrap_or(i64::MAX)
}

/// RFC 3339 with second precision, e.g. `2026-11-22T01:02:03Z`.
pub fn rfc3339(unix_seconds: i64) -> String {
    OffsetDateTime::from_unix_timestamp(unix_seconds)
        .ok()
        .and_then(|t| t.format(&Rfc3339).ok())
        .unwrap_or_default()
}

/// Now in RFC 3339 with sub-second precision: stamps made in one second
/// still differ (restart stamps roll pods only when they change).
pub fn now_precise() -> String {
    now().format(&Rfc3339).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #[test]
    fn formats_rfc3339() {
        assert_eq!(super::rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(super::rfc3339(1_700_000_000), "2023-11-14T22:13:20Z");
    }
}
