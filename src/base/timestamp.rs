//! The time a grading stands for: summary.json's `as_of`, which orders a
//! series of nightly gradings (`rgrade trend`).
//!
//! A nightly job grades last night's logs, and may grade an old night
//! again; so the time is the grading's own unless `--as-of` names
//! another. It is kept to the second, in UTC, as RFC 3339 text, so it
//! sorts as text and reads the same in every time zone.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Datelike, NaiveDate, SecondsFormat, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A moment, to the second, in UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(DateTime<Utc>);

impl Timestamp {
    /// Now, to the second.
    pub fn now() -> Self {
        Self::from_seconds(Utc::now().timestamp())
    }

    /// `seconds` after 1970-01-01T00:00:00Z; out of chrono's range (some
    /// 262,000 years) it is that epoch.
    pub fn from_seconds(seconds: i64) -> Self {
        Timestamp(DateTime::from_timestamp(seconds, 0).unwrap_or_default())
    }

    /// Seconds since 1970-01-01T00:00:00Z.
    pub fn seconds(self) -> i64 {
        self.0.timestamp()
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.to_rfc3339_opts(SecondsFormat::Secs, true))
    }
}

impl FromStr for Timestamp {
    type Err = String;

    /// An RFC 3339 time (`2026-12-04T02:00:00Z`, `2026-12-04T03:00:00+01:00`;
    /// fractions of a second dropped) or a date (`2026-12-04`, its midnight
    /// in UTC).
    ///
    /// A time whose year in UTC is not between 0000 and 9999 is refused:
    /// RFC 3339 writes four digits, and every reader would refuse it.
    fn from_str(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let seconds = if let Ok(time) = DateTime::parse_from_rfc3339(text) {
            time.timestamp()
        } else if let Ok(date) = NaiveDate::parse_from_str(text, "%Y-%m-%d") {
            let midnight = date.and_hms_opt(0, 0, 0).unwrap_or_default();
            midnight.and_utc().timestamp()
        } else {
            return Err(format!(
                "'{text}' is not a time: expected RFC 3339 (2026-12-04T02:00:00Z) or a date \
                 (2026-12-04)"
            ));
        };
        let time = Self::from_seconds(seconds);
        if !(0..=9999).contains(&time.0.year()) {
            return Err(format!(
                "'{text}' is {time} in UTC: a time must fall within the years 0000 to 9999 \
                 (RFC 3339's four digits)"
            ));
        }
        Ok(time)
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_times_and_dates_and_writes_utc_seconds() {
        let read = |text: &str| text.parse::<Timestamp>().unwrap().to_string();
        assert_eq!(read("2026-12-04T02:00:00Z"), "2026-12-04T02:00:00Z");
        assert_eq!(read("2026-12-04T03:00:00.75+01:00"), "2026-12-04T02:00:00Z");
        assert_eq!(read("2026-12-04"), "2026-12-04T00:00:00Z");
        assert_eq!(read(" 2026-12-04 "), "2026-12-04T00:00:00Z");
        for bad in [
            "",
            "yesterday",
            "2026-13-01",
            "2026-12-04 02:00",
            "1733277600",
        ] {
            assert!(bad.parse::<Timestamp>().is_err(), "{bad}");
        }
    }

    #[test]
    fn refuses_times_outside_four_digit_years_in_utc() {
        for bad in [
            "9999-12-31T23:59:59-01:00",
            "+10000-01-01",
            "0000-01-01T00:00:00+01:00",
        ] {
            let err = bad.parse::<Timestamp>().unwrap_err();
            assert!(err.contains("years 0000 to 9999"), "{bad}: {err}");
        }
        let last: Timestamp = "9999-12-31T23:59:59Z".parse().unwrap();
        assert_eq!(last.to_string().parse::<Timestamp>(), Ok(last));
    }

    #[test]
    fn orders_by_the_moment_and_round_trips_through_json() {
        let early: Timestamp = "2026-12-04T01:00:00+02:00".parse().unwrap();
        let late: Timestamp = "2026-12-04T00:00:00Z".parse().unwrap();
        assert!(early < late);
        let json = serde_json::to_string(&late).unwrap();
        assert_eq!(json, "\"2026-12-04T00:00:00Z\"");
        assert_eq!(serde_json::from_str::<Timestamp>(&json).unwrap(), late);
        assert_eq!(Timestamp::from_seconds(late.seconds()), late);
    }
}
