//! Reading `rgrade grade`'s outputs back: the column layout of
//! per_query.csv and aggregates.csv (from rgrade's output schema, the one
//! place column names are spelled), CSV files as tables of text cells,
//! summary.json's counts, and assertions that show the whole context when
//! they fail.

use std::collections::HashMap;
use std::path::Path;

use rgrade::{schema, Cutoff};
use serde_json::Value;

/// The metric columns for these cutoffs, in the order given: six per
/// cutoff, as the schema names them.
pub use rgrade::schema::metric_columns;

/// per_query.csv's header for cutoffs `ks`, its missing-evidence column
/// named `missing_at_{missing_at}` (the caller says which cutoff that is),
/// then `unauthorized`, `split`, `answer_ok` and `judged@k` per cutoff.
pub fn per_query_header(ks: &[Cutoff], missing_at: Cutoff) -> Vec<String> {
    let mut header: Vec<String> = schema::PER_QUERY_LEADING.map(String::from).to_vec();
    header.extend(metric_columns(ks));
    header.push(format!("missing_at_{missing_at}"));
    header.extend(["unauthorized", "split", "answer_ok"].map(String::from));
    header.extend(ks.iter().map(|k| format!("judged@{k}")));
    header
}

/// aggregates.csv's header for cutoffs `ks`.
pub use rgrade::schema::aggregates_header;

/// A count from summary.json.
#[track_caller]
pub fn count(summary: &Value, name: &str) -> u64 {
    summary["counts"][name]
        .as_u64()
        .unwrap_or_else(|| panic!("summary.json counts.{name} missing:\n{summary:#}"))
}

/// summary.json's counts add up (docs/reference.md, Outputs): every record is
/// graded, superseded by a repeat, unlabeled, of another stage, carries no
/// search event, or is rejected.
#[track_caller]
pub fn assert_counts_add_up(summary: &Value) {
    let parts = [
        "graded_records",
        "superseded_records",
        "unlabeled_events",
        "other_stage_events",
        "other_records",
        "rejected",
    ];
    let sum: u64 = parts.iter().map(|p| count(summary, p)).sum();
    assert_eq!(
        count(summary, "records"),
        sum,
        "records != {}:\n{:#}",
        parts.join(" + "),
        summary["counts"]
    );
}

/// Panic unless `got` and `want` are the same bytes, naming the first line
/// where they differ (1-based) and showing both versions of it, so a
/// mismatch in a large file reads as a one-line diff.
#[track_caller]
pub fn assert_same_lines(what: &str, got: &[u8], want: &[u8]) {
    if got == want {
        return;
    }
    let got_lines: Vec<&[u8]> = got.split(|&b| b == b'\n').collect();
    let want_lines: Vec<&[u8]> = want.split(|&b| b == b'\n').collect();
    let at = got_lines
        .iter()
        .zip(&want_lines)
        .position(|(g, w)| g != w)
        .unwrap_or(got_lines.len().min(want_lines.len()));
    let show = |lines: &[&[u8]]| match lines.get(at) {
        Some(line) => String::from_utf8_lossy(line).into_owned(),
        None => "(end of file)".to_string(),
    };
    panic!(
        "{what}: first difference at line {}\n want: {}\n got:  {}\n({} bytes wanted, {} got)",
        at + 1,
        show(&want_lines),
        show(&got_lines),
        want.len(),
        got.len()
    );
}

/// A CSV file read back: its header and its rows, as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    /// The file it came from, for messages.
    pub name: String,
    /// Column names, in order.
    pub header: Vec<String>,
    /// Rows, each as long as the header.
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// Read the CSV file at `path` (a header, then rows), wherever it is.
    pub fn from_path(path: &Path) -> Table {
        let mut rdr = csv::Reader::from_path(path)
            .unwrap_or_else(|e| panic!("cannot open {}: {e}", path.display()));
        let header = rdr
            .headers()
            .unwrap_or_else(|e| panic!("{}: bad header: {e}", path.display()))
            .iter()
            .map(String::from)
            .collect();
        let rows = rdr
            .records()
            .map(|r| {
                r.unwrap_or_else(|e| panic!("{}: bad row: {e}", path.display()))
                    .iter()
                    .map(String::from)
                    .collect()
            })
            .collect();
        Table {
            name: path.display().to_string(),
            header,
            rows,
        }
    }

    /// The rows as column name → cell.
    pub fn records(&self) -> Vec<HashMap<String, String>> {
        self.rows
            .iter()
            .map(|row| {
                self.header
                    .iter()
                    .cloned()
                    .zip(row.iter().cloned())
                    .collect()
            })
            .collect()
    }

    /// The one row whose cells equal `key` (column, value) pairs.
    #[track_caller]
    pub fn row(&self, key: &[(&str, &str)]) -> HashMap<String, String> {
        let found: Vec<HashMap<String, String>> = self
            .records()
            .into_iter()
            .filter(|r| {
                key.iter()
                    .all(|(c, v)| r.get(*c).map(String::as_str) == Some(*v))
            })
            .collect();
        assert_eq!(
            found.len(),
            1,
            "{}: expected exactly one row with {key:?}, found {}:\n{}",
            self.name,
            found.len(),
            self.dump()
        );
        found.into_iter().next().expect("one row")
    }

    /// Every cell of column `name`, top to bottom.
    #[track_caller]
    pub fn column(&self, name: &str) -> Vec<String> {
        let i = self
            .header
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| {
                panic!(
                    "{}: no column {name:?} in header {:?}",
                    self.name, self.header
                )
            });
        self.rows.iter().map(|r| r[i].clone()).collect()
    }

    /// The table as text, for failure messages.
    pub fn dump(&self) -> String {
        std::iter::once(&self.header)
            .chain(&self.rows)
            .map(|r| r.join(","))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Panic unless the cell `column` of `row` holds a number within 1e-9 of `want`.
#[track_caller]
pub fn assert_cell(row: &HashMap<String, String>, column: &str, want: f64) {
    let cell = row
        .get(column)
        .unwrap_or_else(|| panic!("no column {column:?} in row {row:?}"));
    let got: f64 = cell
        .parse()
        .unwrap_or_else(|_| panic!("{column} = {cell:?} is not a number, want {want} in {row:?}"));
    assert!(
        (got - want).abs() < 1e-9,
        "{column}: got {got}, want {want}, in row {row:?}"
    );
}

/// Panic unless the cell `column` of `row` is exactly `want` (text).
#[track_caller]
pub fn assert_text(row: &HashMap<String, String>, column: &str, want: &str) {
    let cell = row
        .get(column)
        .unwrap_or_else(|| panic!("no column {column:?} in row {row:?}"));
    assert_eq!(cell, want, "{column} in row {row:?}");
}

/// 1 / log2(rank + 1): the nDCG discount at a 1-based rank.
pub fn discount(rank: u32) -> f64 {
    1.0 / f64::from(rank + 1).log2()
}

/// rejects.jsonl as (file, line, reason), in file order.
pub fn reject_keys(rejects: &[Value]) -> Vec<(String, u64, String)> {
    rejects
        .iter()
        .map(|r| {
            (
                r["file"].as_str().unwrap_or_default().to_string(),
                r["line"].as_u64().unwrap_or_default(),
                r["reason"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// Expected rejects of one file: (line, reason) → (file, line, reason).
pub fn in_file(file: &str, rejects: &[(u64, &str)]) -> Vec<(String, u64, String)> {
    rejects
        .iter()
        .map(|(line, reason)| (file.to_string(), *line, reason.to_string()))
        .collect()
}

/// The row of (stage, query) in a per_query.csv.
#[track_caller]
pub fn row(table: &Table, stage: &str, query: &str) -> HashMap<String, String> {
    table.row(&[("stage", stage), ("query_id", query)])
}

/// The `p` quantile (0 to 1) of sorted values: linear interpolation between
/// closest ranks (numpy's default), as rgrade's latency percentiles.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    let h = (sorted.len() - 1) as f64 * p;
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(sorted.len() - 1);
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

/// What two summary.json files of one grading share: the keys that
/// differ between runs (the command line and timing) are left out.
pub const RUN_KEYS: [&str; 4] = ["command", "as_of", "elapsed_seconds", "throughput"];

/// summary.json's `bytes` without the keys `left_out`, for comparing
/// what two gradings wrote.
#[track_caller]
pub fn summary_without(bytes: &[u8], left_out: &[&str]) -> Value {
    let mut summary: Value = serde_json::from_slice(bytes).expect("summary.json is JSON");
    for key in left_out {
        summary[*key] = Value::Null;
    }
    summary
}
