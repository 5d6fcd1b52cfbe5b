//! When a scheduled process runs: a cron expression a Kubernetes CronJob
//! accepts, and the IANA time zone it is read in.

use std::sync::OnceLock;

use croner::parser::{CronParser, Seconds, Year};

use super::Invalid;
use super::names::string_newtype;

/// The `@` macros Kubernetes' cron parser accepts (case-sensitively).
const MACROS: [&str; 7] = [
    "@yearly",
    "@annually",
    "@monthly",
    "@weekly",
    "@daily",
    "@midnight",
    "@hourly",
];

/// The time zone of a schedule that names none.
pub const DEFAULT_TIME_ZONE: &str = "UTC";

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const WEEKDAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

/// A cron schedule of 5 fields (minute, hour, day of month, month, day of
/// week) or one of the macros `@yearly`, `@annually`, `@monthly`, `@weekly`,
/// `@daily`, `@midnight` and `@hourly`; stored with runs of white space
/// collapsed to one space.
///
/// Only what both [`croner`] and Kubernetes' CronJob parser accept is
/// accepted: numbers, `*`, `?` in the day fields, lists, ranges, steps, and
/// three-letter month and weekday names; not seconds or years, not croner's
/// `L`, `W` and `#` extensions, and days of week 0 to 6 only (Kubernetes
/// refuses 7).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Schedule(String);

impl Schedule {
    pub fn parse(value: &str) -> Result<Self, Invalid> {
        let fields: Vec<&str> = value.split_whitespace().collect();
        if let [single] = fields.as_slice()
            && MACROS.contains(single)
        {
            return Ok(Self((*single).to_owned()));
        }
        let parser = CronParser::builder()
            .seconds(Seconds::Disallowed)
            .year(Year::Disallowed)
            // `5/15` (from 5 on, every 15) as Kubernetes reads it; a bare
            // `/15` is refused by `kubernetes_accepts`.
            .sloppy_ranges(true)
            .build();
        let expression = fields.join(" ");
        let valid = fields.len() == 5
            && fields
                .iter()
                .zip(FIELDS)
                .all(|(field, rule)| kubernetes_accepts(field, &rule))
            && parser.parse(&expression).is_ok();
        if valid {
            Ok(Self(expression))
        } else {
            Err(Invalid::new(
                "must be a cron expression of 5 fields (minute, hour, day of month, month, day \
                 of week) such as '*/15 * * * *' or '0 3 * * mon-fri', or one of @yearly, \
                 @annually, @monthly, @weekly, @daily, @midnight and @hourly",
            ))
        }
    }
}
string_newtype!(Schedule);

/// What a cron field may hold in Kubernetes' parser (`robfig/cron`).
struct FieldRule {
    min: u32,
    max: u32,
    names: &'static [&'static str],
    /// Whether the first name stands for `min` (weekdays from 0) or `min`+1.
    names_from: u32,
    question_mark: bool,
}

const FIELDS: [FieldRule; 5] = [
    FieldRule {
        min: 0,
        max: 59,
        names: &[],
        names_from: 0,
        question_mark: false,
    },
    FieldRule {
        min: 0,
        max: 23,
        names: &[],
        names_from: 0,
        question_mark: false,
    },
    FieldRule {
        min: 1,
        max: 31,
        names: &[],
        names_from: 0,
        question_mark: true,
    },
    FieldRule {
        min: 1,
        max: 12,
        names: &MONTHS,
        names_from: 1,
        question_mark: false,
    },
    FieldRule {
        min: 0,
        max: 6,
        names: &WEEKDAYS,
        names_from: 0,
        question_mark: true,
    },
];

/// Whether Kubernetes' cron parser accepts `field`: a list of `*`, `?`,
/// values or ranges, each with an optional `/step`; values in bounds,
/// ranges ascending.
fn kubernetes_accepts(field: &str, rule: &FieldRule) -> bool {
    let value = |text: &str| -> Option<u32> {
        if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
            return text.parse().ok();
        }
        let lower = text.to_ascii_lowercase();
        let index = rule.names.iter().position(|name| *name == lower)?;
        Some(rule.names_from + index as u32)
    };
    field.split(',').all(|item| {
        let (range, step) = match item.split_once('/') {
            Some((range, step)) => (range, Some(step)),
            None => (item, None),
        };
        let step_ok = step.is_none_or(|step| {
            !step.is_empty() && step.bytes().all(|b| b.is_ascii_digit()) && step != "0"
        });
        let range_ok = match range {
            "*" => true,
            "?" => rule.question_mark,
            _ => {
                let (low, high) = match range.split_once('-') {
                    Some((low, high)) => (value(low), value(high)),
                    None => (value(range), value(range)),
                };
                matches!((low, high), (Some(low), Some(high))
                    if rule.min <= low && low <= high && high <= rule.max)
            }
        };
        step_ok && range_ok
    })
}

/// An IANA time zone name such as `UTC`, `Europe/Berlin` or
/// `America/Argentina/Buenos_Aires`, spelt as in the database, checked against
/// the database bundled into the binary (so it works where there is no
/// `/usr/share/zoneinfo`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TimeZone(String);

impl TimeZone {
    pub fn parse(value: &str) -> Result<Self, Invalid> {
        static DB: OnceLock<jiff::tz::TimeZoneDatabase> = OnceLock::new();
        let plausible = !value.is_empty()
            && value.len() <= 255
            && value != "Local"
            && value
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'/' | b'_' | b'-' | b'+'));
        // The database's lookup ignores case; Kubernetes' does not, so the
        // name must be spelt as the database spells it.
        let known = plausible
            && DB
                .get_or_init(jiff::tz::TimeZoneDatabase::bundled)
                .get(value)
                .is_ok_and(|zone| zone.iana_name() == Some(value));
        if known {
            Ok(Self(value.to_owned()))
        } else {
            Err(Invalid::new(
                "must be an IANA time zone name such as UTC, Europe/Berlin or America/New_York",
            ))
        }
    }

    /// `UTC`, the default.
    pub fn utc() -> Self {
        Self("UTC".to_owned())
    }
}
string_newtype!(TimeZone);

impl Default for TimeZone {
    fn default() -> Self {
        Self::utc()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedules_that_parse() {
        for good in [
            "* * * * *",
            "*/15 * * * *",
            "0 3 * * *",
            "0 0 1 1 *",
            "30 2 * * 1-5",
            "0 9-17/2 * * mon-fri",
            "0 0 * * SUN",
            "0 0 * * Sat,sun",
            "0 0 1 jan,jul *",
            "0 0 1 JAN-DEC/3 *",
            "0 0 ? * *",
            "0 0 * * ?",
            "5/15 * * * *",
            "0,15,30,45 * * * *",
            "59 23 31 12 6",
            "0 0 1-31 1-12 0-6",
            "0 12 15 * 0",
        ] {
            let schedule = Schedule::parse(good).unwrap_or_else(|err| panic!("{good:?}: {err}"));
            assert_eq!(schedule.as_str(), good);
            assert_eq!(schedule.to_string(), good);
            assert_eq!(schedule.as_ref(), good);
        }
    }

    #[test]
    fn schedules_collapse_white_space() {
        let schedule = Schedule::parse("  0   3\t* *\n *  ").unwrap();
        assert_eq!(schedule.as_str(), "0 3 * * *");
        assert_eq!(Schedule::parse(" @daily ").unwrap().as_str(), "@daily");
    }

    #[test]
    fn macros_are_exactly_those_of_kubernetes() {
        for good in MACROS {
            assert_eq!(Schedule::parse(good).unwrap().into_inner(), good);
        }
        for bad in [
            "@DAILY",
            "@Daily",
            "@every 5m",
            "@every",
            "@reboot",
            "@weekdays",
            "@daily *",
            "@",
        ] {
            assert!(Schedule::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn schedules_that_fail() {
        for bad in [
            "",
            "   ",
            "*",
            "* * * *",
            // seconds or years
            "0 * * * * *",
            "0 0 * * * * 2030",
            // out of range
            "60 * * * *",
            "* 24 * * *",
            "* * 0 * *",
            "* * 32 * *",
            "* * * 0 *",
            "* * * 13 *",
            "* * * * 7",
            "* * * * 0-7",
            // malformed lists, ranges and steps
            "5-1 * * * *",
            "*/0 * * * *",
            "/15 * * * *",
            "*/ * * * *",
            "1- * * * *",
            "-1 * * * *",
            ",1 * * * *",
            "1,,2 * * * *",
            "*-5 * * * *",
            "? * * * *",
            "* ? * * *",
            "* * * ? *",
            // names in the wrong field or misspelt
            "* * * * monday",
            "* * * mon *",
            "* * jan * *",
            "* * * * january",
            // croner extensions Kubernetes lacks
            "0 0 L * *",
            "0 0 15W * *",
            "0 0 * * 5L",
            "0 0 * * 1#2",
            "0 0 * * +1",
            // time zone prefixes Kubernetes refuses in the schedule
            "TZ=UTC 0 0 * * *",
            "CRON_TZ=UTC 0 0 * * *",
            "a b c d e",
        ] {
            assert!(Schedule::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn schedule_message_does_not_echo_the_value() {
        let err = Schedule::parse("secret-value * * * *").unwrap_err();
        assert!(err.0.contains("5 fields"), "{err}");
        assert!(!err.0.contains("secret"), "{err}");
    }

    #[test]
    fn time_zones_that_parse() {
        for good in [
            "UTC",
            "Etc/UTC",
            "Etc/GMT+5",
            "Europe/Berlin",
            "America/New_York",
            "America/Argentina/Buenos_Aires",
            "Asia/Kolkata",
            "Australia/Lord_Howe",
            "Pacific/Chatham",
        ] {
            let zone = TimeZone::parse(good).unwrap_or_else(|err| panic!("{good:?}: {err}"));
            assert_eq!(zone.as_str(), good);
            assert_eq!(zone.to_string(), good);
        }
        assert_eq!(TimeZone::default(), TimeZone::parse("UTC").unwrap());
        assert_eq!(TimeZone::utc().into_inner(), "UTC");
    }

    #[test]
    fn time_zones_that_fail() {
        for bad in [
            "",
            "Mars/Olympus",
            "utc ",
            " UTC",
            "Europe/ Berlin",
            "Local",
            "EST5EDT,M3.2.0,M11.1.0",
            "<+03>-3",
            "CET-1CEST,M3.5.0,M10.5.0/3",
            "utc",
            "europe/berlin",
            "Europe/berlin",
            "Europe",
            "/Europe/Berlin",
            "Europe/Berlin/",
            "../etc/passwd",
            "Europe/../Europe/Berlin",
            "+01:00",
            &"A".repeat(256),
        ] {
            let err = TimeZone::parse(bad).unwrap_err();
            assert!(err.0.contains("IANA time zone"), "{bad:?}: {err}");
        }
    }
}
