//! The text of CSV cells, written the same way by every output: numbers
//! that read back as the same f64, and rows built straight into bytes.

use std::fmt::Write as _;

use anyhow::Result;

/// The CSV text of an optional number, as every output of rgrade writes it
/// (see [`NumberCell`]).
pub fn number_text(value: Option<f64>) -> String {
    String::from_utf8_lossy(NumberCell::default().text(value)).into_owned()
}

/// A number cell read back: empty is `None`. rgrade writes finite
/// numbers only, so anything else (text, NaN, inf, `1e400`) is no cell of
/// its output.
///
/// # Errors
/// The cell holds something else than a finite number.
pub fn read_number(cell: &str) -> Result<Option<f64>, String> {
    if cell.is_empty() {
        return Ok(None);
    }
    match cell.parse::<f64>() {
        Ok(value) if value.is_finite() => Ok(Some(value)),
        _ => Err(format!("'{cell}' is not a number")),
    }
}

/// A latency or context size cell read back: rgrade takes no other than a
/// number of at least 0 (docs/reference.md, "Reject codes").
///
/// # Errors
/// The cell holds something else than a number of at least 0.
pub fn read_measure(cell: &str) -> Result<Option<f64>, String> {
    match read_number(cell)? {
        Some(value) if value < 0.0 => Err(format!("'{cell}' is not a number of at least 0")),
        value => Ok(value),
    }
}

/// A metric cell read back: every metric lies in [0, 1], so another value
/// is no grade output.
///
/// # Errors
/// The cell holds something else than a number from 0 to 1.
pub fn read_metric(cell: &str) -> Result<Option<f64>, String> {
    match read_number(cell)? {
        Some(value) if !(0.0..=1.0).contains(&value) => {
            Err(format!("'{cell}' is not a metric value (0 to 1)"))
        }
        value => Ok(value),
    }
}

/// Writes the text of optional numbers for CSV cells: empty when absent,
/// else the shortest text that reads back as the same f64, never with an
/// exponent, as `{}` writes it. Millions of rows make std's float
/// formatting a large share of a run, so whole numbers go through itoa and
/// fractions through zmij, several times faster. The two differ from std
/// only on an exact tie between two shortest texts, which zmij breaks
/// towards the even digit and std upwards. Values zmij would write with
/// an exponent take std's path.
#[derive(Default)]
pub struct NumberCell {
    whole: itoa::Buffer,
    fraction: zmij::Buffer,
    other: String,
}

impl NumberCell {
    /// Below 2^53 every whole f64 is exactly an integer, and its shortest
    /// text is that integer's.
    const WHOLE_LIMIT: f64 = 9_007_199_254_740_992.0;
    /// zmij writes fractions from here up without an exponent (the other
    /// end, 1e16, is above every f64 fraction).
    const FIXED_FROM: f64 = 1e-5;

    /// The cell text of `value`.
    pub fn text(&mut self, value: Option<f64>) -> &[u8] {
        let Some(v) = value else { return b"" };
        let whole = v as i64;
        if whole as f64 == v && v.abs() < Self::WHOLE_LIMIT && (whole != 0 || v.is_sign_positive())
        {
            self.whole.format(whole).as_bytes()
        } else if v.is_finite() && v.fract() != 0.0 && v.abs() >= Self::FIXED_FROM {
            self.fraction.format_finite(v).as_bytes()
        } else {
            self.other.clear();
            // Writing into a String cannot fail.
            let _ = write!(self.other, "{v}");
            self.other.as_bytes()
        }
    }
}

/// CSV rows as the csv crate writes them (comma-separated, `\n` after each
/// row, fields quoted only where needed), built straight into bytes for
/// the millions of rows of per_query.csv. Numbers never need quoting and
/// most text does not, so only text holding a comma, quote or line end
/// goes through the csv crate to be quoted.
pub struct CsvRows {
    /// The rows so far.
    pub bytes: Vec<u8>,
    cell: NumberCell,
    row_started: bool,
}

impl CsvRows {
    /// Room for about `bytes` bytes of rows.
    pub fn with_capacity(bytes: usize) -> Self {
        CsvRows {
            bytes: Vec::with_capacity(bytes),
            cell: NumberCell::default(),
            row_started: false,
        }
    }

    fn delimit(&mut self) {
        if self.row_started {
            self.bytes.push(b',');
        }
        self.row_started = true;
    }

    /// A number cell (empty when absent).
    pub fn number(&mut self, value: Option<f64>) {
        self.delimit();
        self.bytes.extend_from_slice(self.cell.text(value));
    }

    /// A text cell, quoted when it needs to be.
    ///
    /// # Errors
    /// Never in practice: the csv crate writes into memory.
    pub fn text(&mut self, text: &str) -> Result<()> {
        self.delimit();
        if text
            .bytes()
            .any(|b| matches!(b, b',' | b'"' | b'\r' | b'\n'))
        {
            // The closing quote comes with the end of the record, whose
            // line end is then taken back.
            let mut quoting = csv::Writer::from_writer(&mut self.bytes);
            quoting.write_field(text)?;
            quoting.write_record(None::<&[u8]>)?;
            quoting.flush()?;
            drop(quoting);
            self.bytes.pop();
        } else {
            self.bytes.extend_from_slice(text.as_bytes());
        }
        Ok(())
    }

    /// End the current row.
    pub fn end_row(&mut self) {
        self.bytes.push(b'\n');
        self.row_started = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn cell_text(value: f64) -> String {
        String::from_utf8(NumberCell::default().text(Some(value)).to_vec()).unwrap()
    }

    /// A cell reads back as the value and is as short as std's text; where
    /// the two differ (an exact tie), only the last digit does, by one.
    fn check_cell(value: f64) -> Result<(), String> {
        let (cell, std) = (cell_text(value), format!("{value}"));
        if cell == std {
            return Ok(());
        }
        let reads_back = cell.parse::<f64>().map(f64::to_bits) == Ok(value.to_bits());
        let (cell_last, std_last) = (cell.as_bytes().last(), std.as_bytes().last());
        let last_digit_apart = cell.len() == std.len()
            && cell[..cell.len() - 1] == std[..std.len() - 1]
            && cell_last
                .zip(std_last)
                .is_some_and(|(c, s)| c.abs_diff(*s) == 1);
        if reads_back && last_digit_apart {
            Ok(())
        } else {
            Err(format!("{value:e}: cell {cell}, std {std}"))
        }
    }

    #[test]
    fn cells_write_what_std_writes_at_every_boundary() {
        let cases = [
            0.0,
            -0.0,
            1.0,
            -3.0,
            0.5,
            0.1,
            1.0 / 3.0,
            2.0 / 3.0,
            0.2943107231069255,
            87.8,
            1e-5,
            9.999999999999999e-6,
            1.5e-7,
            1e15,
            9007199254740991.0,
            9007199254740992.0,
            1e16,
            1e300,
            f64::MIN_POSITIVE,
            f64::MAX,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ];
        for value in cases {
            assert_eq!(cell_text(value), format!("{value}"), "{value:e}");
        }
        assert_eq!(NumberCell::default().text(None), b"");
    }

    #[test]
    fn a_tie_goes_to_the_even_digit() {
        // 268140455654867.625 lies exactly between the two shortest texts.
        let value = 268_140_455_654_867.0 + 0.625;
        assert_eq!(format!("{value}"), "268140455654867.63");
        assert_eq!(cell_text(value), "268140455654867.62");
    }

    proptest! {
        /// Rows built by hand read exactly as the csv crate writes them.
        #[test]
        fn csv_rows_match_the_csv_crate(
            rows in prop::collection::vec(
                prop::collection::vec(
                    prop_oneof![
                        "[a-z,\"\r\n |#-]{0,6}".prop_map(Ok),
                        prop::option::of(any::<f64>()).prop_map(Err),
                    ],
                    // A row of one empty field is quoted; per_query.csv
                    // rows have twenty fields and more.
                    2..6,
                ),
                1..4,
            ),
        ) {
            let mut ours = CsvRows::with_capacity(0);
            let mut theirs = csv::WriterBuilder::new().flexible(true).from_writer(Vec::new());
            for row in &rows {
                for field in row {
                    match field {
                        Ok(text) => {
                            ours.text(text).unwrap();
                            theirs.write_field(text).unwrap();
                        }
                        Err(number) => {
                            ours.number(*number);
                            let text = NumberCell::default().text(*number).to_vec();
                            theirs.write_field(text).unwrap();
                        }
                    }
                }
                ours.end_row();
                theirs.write_record(None::<&[u8]>).unwrap();
            }
            let theirs = theirs.into_inner().unwrap();
            prop_assert_eq!(String::from_utf8_lossy(&ours.bytes), String::from_utf8_lossy(&theirs));
        }

        #[test]
        fn cells_match_std_for_any_f64(bits in any::<u64>()) {
            check_cell(f64::from_bits(bits)).map_err(TestCaseError::fail)?;
        }

        #[test]
        fn cells_match_std_for_fractions_zmij_writes(value in 1e-5..4.5e15f64) {
            check_cell(value).map_err(TestCaseError::fail)?;
            check_cell(-value).map_err(TestCaseError::fail)?;
        }

        #[test]
        fn cells_write_what_std_writes_for_metric_like_values(
            num in 0u32..2000, den in 1u32..2000, rank in 1u32..2000,
        ) {
            for value in [
                f64::from(num) / f64::from(den),
                f64::from(num) / f64::from(rank + 1).log2(),
                f64::from(num) * 0.1,
            ] {
                prop_assert_eq!(cell_text(value), format!("{value}"));
            }
        }
    }
}
