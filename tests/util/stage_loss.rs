//! Reading stage-loss outputs back: the columns of stage_loss.csv and
//! stage_loss_per_query.csv, expected rows written compactly, a table
//! comparison that shows the first difference, the rows of the stdout table,
//! and the grouping sets in the order of aggregates.csv.

use super::{Run, Table};

/// stage_loss.csv's columns, in order.
pub const TOTALS_HEADER: [&str; 8] = [
    "run",
    "task",
    "language",
    "from_stage",
    "to_stage",
    "relevant_found",
    "lost",
    "lost_rate",
];

/// stage_loss_per_query.csv's columns, in order.
pub const PER_QUERY_HEADER: [&str; 9] = [
    "run",
    "query_id",
    "task",
    "language",
    "from_stage",
    "to_stage",
    "relevant_found",
    "lost",
    "lost_ids",
];

/// The title line of the stdout table.
pub const TABLE_TITLE: &str =
    "evidence lost between stages (relevant documents found, then dropped)";

/// `lost / found` as the CSV writes it (`{}` of the f64), empty when
/// nothing was found.
pub fn rate(found: u64, lost: u64) -> String {
    if found == 0 {
        String::new()
    } else {
        (lost as f64 / found as f64).to_string()
    }
}

/// One expected stage_loss.csv row, its rate computed from the counts.
pub fn totals_row(
    run: &str,
    task: &str,
    language: &str,
    from: &str,
    to: &str,
    found: u64,
    lost: u64,
) -> Vec<String> {
    vec![
        run.to_string(),
        task.to_string(),
        language.to_string(),
        from.to_string(),
        to.to_string(),
        found.to_string(),
        lost.to_string(),
        rate(found, lost),
    ]
}

/// Expected CSV rows, each written as its line (no quoting needed).
pub fn csv_rows(want: &[&str]) -> Vec<Vec<String>> {
    want.iter()
        .map(|row| row.split(',').map(String::from).collect())
        .collect()
}

/// Expected stdout table rows, each written as its line (cells split on
/// whitespace, as [`loss_table`] reads them).
pub fn table_rows(want: &[&str]) -> Vec<Vec<String>> {
    want.iter()
        .map(|row| row.split_whitespace().map(String::from).collect())
        .collect()
}

/// Panic unless `table` has exactly `header` and `want`, in order, showing
/// the whole table and the first differing row.
#[track_caller]
pub fn assert_table(table: &Table, header: &[&str], want: &[Vec<String>]) {
    assert_eq!(table.header, header, "{}: header", table.name);
    if table.rows != want {
        let at = table
            .rows
            .iter()
            .zip(want)
            .position(|(g, w)| g != w)
            .unwrap_or(table.rows.len().min(want.len()));
        panic!(
            "{}: first difference at row {} (of {} got, {} wanted)\n want: {:?}\n got:  {:?}\nwhole file:\n{}",
            table.name,
            at + 1,
            table.rows.len(),
            want.len(),
            want.get(at),
            table.rows.get(at),
            table.dump()
        );
    }
}

/// The rows of the "evidence lost between stages" table on stdout, each
/// split on whitespace: run, from, `->`, to, slice, relevant_found, lost,
/// lost_rate. Empty when the table is not there.
#[track_caller]
pub fn loss_table(run: &Run) -> Vec<Vec<String>> {
    let mut lines = run.stdout.lines().skip_while(|line| *line != TABLE_TITLE);
    if lines.next().is_none() {
        return Vec::new();
    }
    let header: Vec<&str> = lines
        .next()
        .unwrap_or_else(|| panic!("no header under the stage-loss title\n{run}"))
        .split_whitespace()
        .collect();
    assert_eq!(
        header,
        [
            "run",
            "from",
            "->",
            "to",
            "slice",
            "relevant_found",
            "lost",
            "lost_rate"
        ],
        "{run}"
    );
    lines
        .take_while(|line| !line.trim().is_empty())
        .map(|line| line.split_whitespace().map(String::from).collect())
        .collect()
}

/// The sort key of a grouping set in aggregates.csv order.
pub fn set_order(task: &str, language: &str) -> (u8, String, String) {
    let level = match (task == "*", language == "*") {
        (true, true) => 0,
        (false, true) => 1,
        (true, false) => 2,
        (false, false) => 3,
    };
    (level, task.to_string(), language.to_string())
}

/// The four grouping sets of a query's slice.
pub fn sets_of(task: &str, language: &str) -> [(String, String); 4] {
    [
        ("*".into(), "*".into()),
        (task.into(), "*".into()),
        ("*".into(), language.into()),
        (task.into(), language.into()),
    ]
}
