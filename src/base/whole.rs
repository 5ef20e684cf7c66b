//! Whole numbers as files write them: ranks and grades are whole, but
//! the tools that write them often write floats (pandas' `rank()` gives
//! `1.0`, a DataFrame with a missing value turns its grade column to
//! floats, JSON writers give `2.0` or `1e0`). A float that holds a whole
//! number reads as that number; one with a fraction reads as none, so
//! that `0.5` is refused rather than rounded. One rule for every reader
//! of a rank or a grade.

/// An integer as text writes it, in decimal digits with an optional sign;
/// digits too many for an `i128` read as its largest value, a number too
/// large all the same.
pub fn integer_text(text: &str) -> Option<i128> {
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(text.parse().unwrap_or(if text.starts_with('-') {
        i128::MIN
    } else {
        i128::MAX
    }))
}

/// The whole number `float` holds; `None` for a fraction, NaN or an
/// infinity. Exact below 2^127; a float beyond reads as the largest (or
/// smallest) `i128`, too large for any rank or grade all the same.
pub fn whole_float(float: f64) -> Option<i128> {
    (float.fract() == 0.0).then_some(float as i128)
}

/// A whole number written as an integer (`2`) or as a float that holds
/// one (`2.`, `2.0`, `2e0`); `None` for anything else, a fraction included.
pub fn whole_text(text: &str) -> Option<i128> {
    integer_text(text).or_else(|| whole_float(text.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_numbers_are_read_however_they_are_written() {
        for (text, want) in [
            ("2", Some(2)),
            ("+2", Some(2)),
            ("-1", Some(-1)),
            ("1.", Some(1)),
            ("2.0", Some(2)),
            ("1e0", Some(1)),
            ("0.0", Some(0)),
            ("-0.0", Some(0)),
            ("0.5", None),
            ("1.000001", None),
            ("NaN", None),
            ("inf", None),
            ("x", None),
            ("", None),
            ("99999999999999999999999999999999999999999", Some(i128::MAX)),
            ("1e300", Some(i128::MAX)),
            ("-1e300", Some(i128::MIN)),
        ] {
            assert_eq!(whole_text(text), want, "{text:?}");
        }
    }
}
