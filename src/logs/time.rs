//! Capture times as production logs write them (`--time-field`), read
//! into one scale, nanoseconds since 1970-01-01T00:00:00Z, so that
//! `--repeats first|last` can keep the earliest or latest capture
//! whatever the format (docs/reference.md, "Capture time").
//!
//! - Text is RFC 3339 (`2026-12-01T03:00:00Z`, `+01:00`, a space for the
//!   `T`, any fraction of a second); text with no offset
//!   (`2026-12-01T03:00:00`, as Python's `isoformat()` of a naive time
//!   writes it) is read as UTC, and a date alone (`2026-12-01`, a `dt`
//!   partition) as its midnight in UTC.
//! - A number counts seconds, milliseconds, microseconds or nanoseconds
//!   since the epoch, told by its size: below 10^11 seconds (up to the
//!   year 5138), below 10^14 milliseconds, below 10^17 microseconds,
//!   nanoseconds above. For any time from 1973 to 5138 the rule is
//!   exact; a log of small numbers (seconds since a job started) keeps
//!   its order, as every value is read in the same unit.
//! - A timestamp column (Parquet, Arrow) is read in its own unit; its
//!   time zone, if it names one, changes nothing, as Arrow stores the
//!   instant in UTC.

use chrono::{DateTime, NaiveDate, NaiveDateTime};
use simd_json::prelude::*;
use simd_json::tape::Value;

use crate::logs::record::{Invalid, Nanos, RejectReason};

/// The time `text` writes, if it is one.
pub fn from_text(text: &str) -> Option<Nanos> {
    let text = text.trim();
    if let Ok(time) = DateTime::parse_from_rfc3339(text) {
        return time.timestamp_nanos_opt().map(Nanos::from);
    }
    let naive = ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f"]
        .iter()
        .find_map(|format| NaiveDateTime::parse_from_str(text, format).ok())
        .or_else(|| {
            let date = NaiveDate::parse_from_str(text, "%Y-%m-%d").ok()?;
            date.and_hms_opt(0, 0, 0)
        })?;
    naive.and_utc().timestamp_nanos_opt().map(Nanos::from)
}

/// The time a whole number counts since the epoch, its unit told by its
/// size.
pub fn from_integer(count: i128) -> Nanos {
    let per_unit: i128 = match count.unsigned_abs() {
        n if n < 100_000_000_000 => 1_000_000_000,
        n if n < 100_000_000_000_000 => 1_000_000,
        n if n < 100_000_000_000_000_000 => 1_000,
        _ => 1,
    };
    count.saturating_mul(per_unit)
}

/// The time a number counts since the epoch, its unit told by its size
/// as [`from_integer`]'s; `None` for NaN and infinities.
pub fn from_number(count: f64) -> Option<Nanos> {
    if !count.is_finite() {
        return None;
    }
    let per_unit: i128 = match count.abs() {
        n if n < 1e11 => 1_000_000_000,
        n if n < 1e14 => 1_000_000,
        n if n < 1e17 => 1_000,
        _ => 1,
    };
    // The whole units and the fraction apart: at today's times a float
    // of nanoseconds is exact only to some hundred nanoseconds.
    let whole = count.trunc();
    let fraction = ((count - whole) * per_unit as f64).round() as Nanos;
    Some((whole as Nanos).saturating_mul(per_unit) + fraction)
}

/// The time an OTLP attribute value (an AnyValue) holds: text, or a
/// count since the epoch (an `intValue`, which OTLP/JSON may write as a
/// string, or a `doubleValue`).
pub fn from_any_value(value: Value<'_, '_>) -> Option<Nanos> {
    if let Some(text) = value.get("stringValue").and_then(|v| v.into_string()) {
        return from_text(text);
    }
    if let Some(int) = value.get("intValue") {
        let count = match int.into_string() {
            Some(text) => text.parse::<i64>().ok(),
            None => int.as_i64(),
        };
        return count.map(|count| from_integer(count.into()));
    }
    (value.get("doubleValue").and_then(|v| v.cast_f64())).and_then(from_number)
}

/// The reject of a record with no time at `field` (absent or null).
pub fn missing(field: &str) -> Invalid {
    Invalid::new(
        RejectReason::BadTime,
        format!("'{field}' is absent or null: with a time field every capture needs its time"),
    )
}

/// The reject of a record whose `field` holds no time (`found`, as shown).
pub fn unreadable(field: &str, found: &str) -> Invalid {
    Invalid::new(
        RejectReason::BadTime,
        format!(
            "'{field}' is {found}, not a time: expected RFC 3339 text \
             (2026-12-01T03:00:00Z) or a number of seconds, milliseconds, \
             microseconds or nanoseconds since 1970"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Nanos = 1_000_000_000;
    /// 2026-12-01T03:00:00Z.
    const AT: Nanos = 1_796_094_000 * SECOND;

    #[test]
    fn text_reads_as_rfc_3339_naive_utc_or_a_date() {
        for text in [
            "2026-12-01T03:00:00Z",
            "2026-12-01t03:00:00z",
            "2026-12-01 03:00:00Z",
            "2026-12-01T04:00:00+01:00",
            "2026-12-01T03:00:00",
            "2026-12-01 03:00:00.000",
            " 2026-12-01T03:00:00.000000000Z ",
        ] {
            assert_eq!(from_text(text), Some(AT), "{text}");
        }
        assert_eq!(from_text("2026-12-01T03:00:00.5Z"), Some(AT + SECOND / 2));
        assert_eq!(from_text("2026-12-01"), Some(AT - 3 * 3600 * SECOND));
        for bad in [
            "",
            "yesterday",
            "1796094000",
            "2026-13-01",
            "2026-12-01T25:00:00Z",
        ] {
            assert_eq!(from_text(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_number_unit_is_told_by_its_size() {
        let seconds = AT / SECOND;
        for (count, unit) in [
            (1, SECOND),
            (1_000, 1_000_000),
            (1_000_000, 1_000),
            (1_000_000_000, 1),
        ] {
            assert_eq!(from_integer(seconds * count), AT, "{unit}");
            assert_eq!(from_number((seconds * count) as f64), Some(AT));
        }
        assert_eq!(from_number(1_796_094_000.25), Some(AT + SECOND / 4));
        // Small counts (seconds since a job began) keep their order.
        assert!(from_integer(5) < from_integer(86_400));
        assert_eq!(from_number(f64::NAN), None);
        assert_eq!(from_number(f64::INFINITY), None);
        assert_eq!(from_integer(i128::MAX), i128::MAX, "saturates");
    }
}
