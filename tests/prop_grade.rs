//! The whole grade path against a naive reference model, on random inputs.
//!
//! Each case generates an answer key and captured logs (JSONL or TREC run),
//! writes them to a scratch directory, grades them in-process through the
//! library's [`rgrade::grade`], reads `per_query.csv`, `aggregates.csv` and
//! `rejects.jsonl` back and compares every cell with a reference written from
//! docs/reference.md (Input formats, Metrics, Outputs): one plain loop per (run,
//! stage, query) over explicit rankings, no indexes, no hashing tricks, no
//! shared code with `src/`.
//!
//! Where the definitions leave a choice open the reference follows
//! docs/reference.md, Decisions where tools differ, and says so in a comment; on a
//! mismatch the failure prints the input files, the command line and every
//! differing cell.
//!
//! The inputs, and how they are written as files, are in [`inputs`]; the
//! reference model and the tables it expects are in [`model`]. This file runs
//! rgrade on the inputs and compares.

mod inputs;
mod model;

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, StringArray, UInt32Array, UInt64Array};

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use rgrade::{Cutoff, DuplicateDocs, GradePlan, MissingPolicy, RepeatPolicy};
use serde_json::Value;

use crate::util::{aggregates_header, summary_without, Workdir, RUN_KEYS};
use inputs::{jsonl_logs, render, scenario, trec_logs, Options, Repeats, Scenario};
use model::{
    aggregates_table, attribution_table, captures, per_query_header, per_query_table, reference,
    Cell, Origin,
};

// ---------------------------------------------------------------------------
// Running rgrade and reading its outputs.
// ---------------------------------------------------------------------------

/// The written inputs of a scenario and how to describe them on failure.
#[derive(Clone)]
struct Written {
    labels: PathBuf,
    logs: Vec<PathBuf>,
    description: String,
}

fn write_inputs(scenario: &Scenario, dir: &Path) -> Written {
    let (labels_text, logs) = render(scenario);
    let labels = dir.join("labels.jsonl");
    std::fs::write(&labels, &labels_text).expect("write labels");
    let mut description = format!("--- labels.jsonl\n{labels_text}");
    let logs = logs
        .into_iter()
        .map(|(name, contents)| {
            let path = dir.join(&name);
            std::fs::write(&path, &contents).expect("write log");
            let _ = write!(description, "--- {name}\n{contents}");
            path
        })
        .collect();
    Written {
        labels,
        logs,
        description,
    }
}

/// The command line for a scenario, writing into `out`.
fn command_line(written: &Written, options: &Options, threads: usize, out: &Path) -> Vec<String> {
    let ks: Vec<String> = options.ks.iter().map(Cutoff::to_string).collect();
    let mut args: Vec<String> = vec![
        "rgrade".into(),
        "grade".into(),
        "-q".into(),
        "--progress".into(),
        "never".into(),
        "--labels".into(),
        written.labels.display().to_string(),
        "-k".into(),
        ks.join(","),
        "-o".into(),
        out.display().to_string(),
        "--missing".into(),
        (if options.missing_skip { "skip" } else { "fail" }).into(),
        "--repeats".into(),
        options.repeats.name().into(),
        "--duplicate-docs".into(),
        (if options.dedupe { "dedupe" } else { "reject" }).into(),
        "--min-rel".into(),
        options.min_rel.to_string(),
        "-j".into(),
        threads.to_string(),
    ];
    args.extend(written.logs.iter().map(|p| p.display().to_string()));
    args
}

/// The library's plan for what `command_line` says.
fn plan(written: &Written, options: &Options, threads: usize, out: &Path) -> GradePlan {
    GradePlan {
        min_rel: options.min_rel,
        ks: options.ks.clone(),
        missing: if options.missing_skip {
            MissingPolicy::Skip
        } else {
            MissingPolicy::Fail
        },
        repeats: match options.repeats {
            Repeats::Error => RepeatPolicy::Error,
            Repeats::First => RepeatPolicy::First,
            Repeats::Last => RepeatPolicy::Last,
            Repeats::Mean => RepeatPolicy::Mean,
        },
        duplicate_docs: if options.dedupe {
            DuplicateDocs::Dedupe
        } else {
            DuplicateDocs::Reject
        },
        out: Some(out.to_path_buf()),
        threads: NonZeroUsize::new(threads),
        command: command_line(written, options, threads, out),
        ..GradePlan::new(written.labels.clone(), written.logs.clone())
    }
}

/// Run the whole grade path in-process; the exit status `rgrade grade`
/// would give (1 when a record was rejected, as `--max-rejects 0` says).
fn grade(plan: &GradePlan) -> Result<u8, String> {
    let graded = rgrade::grade(plan, &mut |_| {}).map_err(|e| format!("grade failed: {e:#}"))?;
    Ok(u8::from(graded.counts.rejected > 0))
}

/// A CSV file as rows of cells, header included.
fn read_csv(path: &Path) -> Result<Vec<Vec<String>>, String> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_path(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    reader
        .records()
        .map(|r| {
            r.map(|r| r.iter().map(str::to_string).collect())
                .map_err(|e| format!("{}: {e}", path.display()))
        })
        .collect()
}

/// The (file index, line) of every record in rejects.jsonl.
fn read_rejects(path: &Path, logs: &[PathBuf]) -> Result<BTreeSet<Origin>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let value: Value = serde_json::from_str(line).map_err(|e| format!("{line}: {e}"))?;
            let file = value["file"].as_str().unwrap_or_default();
            let index = logs
                .iter()
                .position(|p| p.display().to_string() == file)
                .ok_or_else(|| format!("reject names an unknown file: {line}"))?;
            let number = value["line"].as_u64().ok_or(format!("no line: {line}"))?;
            Ok((index, number as usize))
        })
        .collect()
}

// ---------------------------------------------------------------------------
// Comparing.
// ---------------------------------------------------------------------------

/// Absolute and relative tolerance for numeric cells.
const TOLERANCE: f64 = 1e-9;

fn numbers_agree(expected: f64, got: f64) -> bool {
    (expected - got).abs() <= TOLERANCE * expected.abs().max(got.abs()).max(1.0)
}

fn cell_agrees(expected: &Cell, got: &str) -> bool {
    match expected {
        Cell::Text(t) => t == got,
        Cell::Number(None) => got.is_empty(),
        Cell::Number(Some(x)) => got.parse::<f64>().is_ok_and(|g| numbers_agree(*x, g)),
    }
}

fn show(cell: &Cell) -> String {
    match cell {
        Cell::Text(t) => format!("{t:?}"),
        Cell::Number(None) => "(empty)".into(),
        Cell::Number(Some(x)) => x.to_string(),
    }
}

/// Every difference between an expected and a written table, one per line,
/// naming the row by its first `key_columns` cells and the column by name.
fn table_differences(
    file: &str,
    header: &[String],
    expected: &[Vec<Cell>],
    got: &[Vec<String>],
    key_columns: usize,
) -> Vec<String> {
    let mut differences = Vec::new();
    match got.first() {
        Some(got_header) if got_header.as_slice() == header => {}
        other => differences.push(format!(
            "{file}: header\n  expected {header:?}\n  got      {other:?}"
        )),
    }
    let got_rows = got.get(1..).unwrap_or_default();
    if got_rows.len() != expected.len() {
        let keys = |cells: Vec<String>| cells[..key_columns.min(cells.len())].join(",");
        differences.push(format!(
            "{file}: {} rows expected, {} written\n  expected keys {:?}\n  written keys  {:?}",
            expected.len(),
            got_rows.len(),
            expected
                .iter()
                .map(|r| keys(r.iter().map(show).collect()))
                .collect::<Vec<_>>(),
            got_rows.iter().map(|r| keys(r.clone())).collect::<Vec<_>>(),
        ));
    }
    for (want, have) in expected.iter().zip(got_rows) {
        let key = have[..key_columns.min(have.len())].join(", ");
        if have.len() != want.len() {
            differences.push(format!(
                "{file} [{key}]: {} cells, expected {}",
                have.len(),
                want.len()
            ));
            continue;
        }
        for ((column, cell), value) in header.iter().zip(want).zip(have) {
            if !cell_agrees(cell, value) {
                differences.push(format!(
                    "{file} [{key}] {column}: expected {}, got {value:?}",
                    show(cell)
                ));
            }
        }
    }
    differences
}

/// Grade `scenario` with rgrade and with the reference; describe every
/// difference (with the inputs and command line) if there is any.
fn check_against_reference(scenario: &Scenario) -> Result<(), String> {
    let scratch = Workdir::new("prop_grade");
    let written = write_inputs(scenario, scratch.root());
    let out = scratch.path("out");
    let plan = plan(&written, &scenario.options, scenario.options.threads, &out);
    let context = || {
        format!(
            "{}--- command\n{}\n",
            written.description,
            plan.command.join(" ")
        )
    };
    let status = grade(&plan).map_err(|e| format!("{e}\n{}", context()))?;

    let captures = captures(&scenario.logs);
    let expected = reference(&scenario.labels, &captures, &scenario.options);
    let options = &scenario.options;
    let mut differences = table_differences(
        "per_query.csv",
        &per_query_header(options),
        &per_query_table(&expected.rows),
        &read_csv(&out.join("per_query.csv"))?,
        3,
    );
    differences.extend(table_differences(
        "aggregates.csv",
        &aggregates_header(&options.ks, None),
        &aggregates_table(&expected.rows, options),
        &read_csv(&out.join("aggregates.csv"))?,
        4,
    ));
    // attribution.csv is written when some graded capture said whether
    // its answer was acceptable.
    let attribution = attribution_table(&expected.rows, options);
    let answered = attribution
        .iter()
        .any(|row| row[5] != Cell::Number(Some(0.0)));
    let attribution_path = out.join("attribution.csv");
    if answered {
        differences.extend(table_differences(
            "attribution.csv",
            &rgrade::schema::ATTRIBUTION.map(String::from),
            &attribution,
            &read_csv(&attribution_path)?,
            5,
        ));
    } else if attribution_path.exists() {
        differences.push(
            "attribution.csv was written, yet no graded capture said whether its answer was ok"
                .to_string(),
        );
    }
    let rejected = read_rejects(&out.join("rejects.jsonl"), &written.logs)?;
    if rejected != expected.rejected {
        differences.push(format!(
            "rejects.jsonl (file index, line): expected {:?}, got {rejected:?}",
            expected.rejected
        ));
    }
    let expected_status = u8::from(!expected.rejected.is_empty());
    if status != expected_status {
        differences.push(format!(
            "exit status: expected {expected_status}, got {status}"
        ));
    }
    if differences.is_empty() {
        return Ok(());
    }
    differences.truncate(40);
    Err(format!("{}\n{}", differences.join("\n"), context()))
}

/// Grade `scenario` with -j 1 and -j 2; the outputs must be byte-identical.
fn check_thread_independence(scenario: &Scenario) -> Result<(), String> {
    let scratch = Workdir::new("prop_grade");
    let written = write_inputs(scenario, scratch.root());
    let mut outputs = Vec::new();
    for threads in [1, 2] {
        let out = scratch.path(&format!("out-j{threads}"));
        let plan = plan(&written, &scenario.options, threads, &out);
        let status = grade(&plan).map_err(|e| format!("{e}\n{}", written.description))?;
        let files: Vec<Vec<u8>> = ["per_query.csv", "aggregates.csv", "rejects.jsonl"]
            .iter()
            .map(|name| std::fs::read(out.join(name)).unwrap_or_default())
            .collect();
        outputs.push((status, files, plan.command.join(" ")));
    }
    let (one, two) = (&outputs[0], &outputs[1]);
    let mut differences = Vec::new();
    if one.0 != two.0 {
        differences.push(format!(
            "exit status: -j 1 gives {}, -j 2 gives {}",
            one.0, two.0
        ));
    }
    for (name, (a, b)) in ["per_query.csv", "aggregates.csv", "rejects.jsonl"]
        .iter()
        .zip(one.1.iter().zip(&two.1))
    {
        if a != b {
            differences.push(format!(
                "{name} differs\n--- -j 1\n{}\n--- -j 2\n{}",
                String::from_utf8_lossy(a),
                String::from_utf8_lossy(b)
            ));
        }
    }
    if differences.is_empty() {
        return Ok(());
    }
    Err(format!(
        "{}\n{}--- command\n{}\n",
        differences.join("\n"),
        written.description,
        one.2
    ))
}

/// The query id a log line names, as the shards are split by: a JSONL
/// record's `query_id` (a string or an integer), a TREC line's first
/// field; empty for a line that names none.
fn query_of(line: &str) -> String {
    match serde_json::from_str::<Value>(line) {
        Ok(record) => match &record["query_id"] {
            Value::String(id) => id.clone(),
            Value::Number(id) => id.to_string(),
            _ => String::new(),
        },
        Err(_) => line
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_string(),
    }
}

/// Split the logs of `scenario` by query id into `shards` shards (`seed`
/// picks which query goes where), grade each shard with `--partial` and
/// merge them; every output must be the bytes of one grading of all the
/// shards' files, summary.json apart from the command line and timing.
fn check_merge(scenario: &Scenario, shards: u64, seed: u64) -> Result<(), String> {
    let scratch = Workdir::new("prop_merge");
    let written = write_inputs(scenario, scratch.root());
    // Each shard's part of each log file, in file order; empty parts are no file.
    let mut parts: Vec<Vec<PathBuf>> = vec![Vec::new(); shards as usize];
    for (index, log) in written.logs.iter().enumerate() {
        let text = std::fs::read_to_string(log).map_err(|e| e.to_string())?;
        let mut lines = vec![String::new(); shards as usize];
        for line in text.split_inclusive('\n') {
            let hash = xxhash_rust::xxh3::xxh3_64_with_seed(query_of(line).as_bytes(), seed);
            lines[(hash % shards) as usize].push_str(line);
        }
        for (shard, lines) in lines.iter().enumerate().filter(|(_, l)| !l.is_empty()) {
            let name = log.file_name().unwrap_or_default().to_string_lossy();
            let path = scratch.path(&format!("shard{shard}-{index}-{name}"));
            std::fs::write(&path, lines).map_err(|e| e.to_string())?;
            parts[shard].push(path);
        }
    }
    parts.retain(|files| !files.is_empty());
    let options = &scenario.options;
    let all = Written {
        labels: written.labels.clone(),
        logs: parts.concat(),
        description: written.description.clone(),
    };
    let mut one = plan(&all, options, 2, &scratch.path("one"));
    one.review_queue = true;
    let fail = |e: rgrade::Error| format!("{e}\n{}", written.description);
    let graded = rgrade::grade(&one, &mut |_| {}).map_err(fail)?;
    let mut shard_dirs = Vec::new();
    for (shard, files) in parts.into_iter().enumerate() {
        let dir = scratch.path(&format!("partial{shard}"));
        let part = Written {
            logs: files,
            ..all.clone()
        };
        let mut partial = plan(&part, options, 1, &dir);
        partial.review_queue = true;
        rgrade::grade_partial(&partial, &mut |_| {}).map_err(fail)?;
        shard_dirs.push(dir);
    }
    let merge = rgrade::MergePlan {
        threads: NonZeroUsize::new(2),
        command: vec!["rgrade".into(), "merge".into()],
        ..rgrade::MergePlan::new(written.labels.clone(), shard_dirs, scratch.path("merged"))
    };
    let merged = rgrade::merge(&merge, &mut |_| {}).map_err(fail)?;
    let mut differences = Vec::new();
    if graded.counts != merged.counts {
        differences.push(format!(
            "counts: {:?} against {:?}",
            graded.counts, merged.counts
        ));
    }
    let mut names: Vec<String> = std::fs::read_dir(one.out.clone().unwrap_or_default())
        .map_err(|e| e.to_string())?
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter(|name| !name.starts_with('.'))
        .collect();
    names.sort();
    for name in names {
        let read = |dir: &Path| std::fs::read(dir.join(&name)).unwrap_or_default();
        let (a, b) = (read(&scratch.path("one")), read(&merge.out));
        let same = if name == "summary.json" {
            summary_without(&a, &RUN_KEYS) == summary_without(&b, &RUN_KEYS)
        } else {
            a == b
        };
        if !same {
            differences.push(format!(
                "{name} differs\n--- one grading\n{}\n--- merged\n{}",
                String::from_utf8_lossy(&a),
                String::from_utf8_lossy(&b)
            ));
        }
    }
    if differences.is_empty() {
        return Ok(());
    }
    Err(format!(
        "{}\n{}",
        differences.join("\n"),
        written.description
    ))
}

// ---------------------------------------------------------------------------
/// The lines of the log files of `written`, split by query id into
/// `shards` tables of (input, line, text) rows as the Spark job hands
/// them over (`seed` picks which query goes where), each graded as a
/// partial grading and merged: every output but the inputs' list (in
/// summary.json and the report) must be the bytes one grading of the
/// files writes.
fn check_merge_lines(scenario: &Scenario, shards: u64, seed: u64) -> Result<(), String> {
    let scratch = Workdir::new("prop_merge_lines");
    let written = write_inputs(scenario, scratch.root());
    let mut rows: Vec<Vec<(u32, u64, String)>> = vec![Vec::new(); shards as usize];
    for (input, log) in (0..).zip(&written.logs) {
        let text = std::fs::read_to_string(log).map_err(|e| e.to_string())?;
        for (line, text) in (1..).zip(text.split_inclusive('\n')) {
            let hash = xxhash_rust::xxh3::xxh3_64_with_seed(query_of(text).as_bytes(), seed);
            let text = text.strip_suffix('\n').unwrap_or(text).to_string();
            rows[(hash % shards) as usize].push((input, line, text));
        }
    }
    let options = &scenario.options;
    let fail = |e: rgrade::Error| format!("{e}\n{}", written.description);
    let mut one = plan(&written, options, 2, &scratch.path("one"));
    one.review_queue = true;
    rgrade::grade(&one, &mut |_| {}).map_err(fail)?;
    let names: Vec<String> = written
        .logs
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    let mut shard_dirs = Vec::new();
    for (shard, rows) in rows.into_iter().enumerate().filter(|(_, r)| !r.is_empty()) {
        let input: ArrayRef = Arc::new(UInt32Array::from_iter_values(rows.iter().map(|r| r.0)));
        let line: ArrayRef = Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.1)));
        let text: ArrayRef = Arc::new(StringArray::from_iter_values(rows.iter().map(|r| &r.2)));
        let batch = RecordBatch::try_from_iter([("input", input), ("line", line), ("text", text)])
            .map_err(|e| e.to_string())?;
        let table = rgrade::ArrowTable::new("lines", batch.schema(), vec![batch]).map_err(fail)?;
        let lines = rgrade::LogLines::new(names.clone(), &table).map_err(fail)?;
        let dir = scratch.path(&format!("partial{shard}"));
        let mut partial = plan(&written, options, 1, &dir);
        partial.logs.clear();
        partial.review_queue = true;
        partial.tables.lines = Some(Arc::new(lines));
        rgrade::grade_partial(&partial, &mut |_| {}).map_err(fail)?;
        shard_dirs.push(dir);
    }
    let merge = rgrade::MergePlan {
        threads: NonZeroUsize::new(2),
        ..rgrade::MergePlan::new(written.labels.clone(), shard_dirs, scratch.path("merged"))
    };
    rgrade::merge(&merge, &mut |_| {}).map_err(fail)?;
    let mut differences = Vec::new();
    let mut files: Vec<String> = std::fs::read_dir(scratch.path("one"))
        .map_err(|e| e.to_string())?
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter(|name| name.ends_with(".csv") || name.ends_with(".jsonl"))
        .collect();
    files.sort();
    for name in files {
        let read = |dir: &Path| std::fs::read(dir.join(&name)).unwrap_or_default();
        let (a, b) = (read(&scratch.path("one")), read(&merge.out));
        if a != b {
            differences.push(format!(
                "{name} differs\n--- one grading\n{}\n--- merged\n{}",
                String::from_utf8_lossy(&a),
                String::from_utf8_lossy(&b)
            ));
        }
    }
    let inputless = |dir: &Path| {
        let bytes = std::fs::read(dir.join("summary.json")).unwrap_or_default();
        summary_without(&bytes, &[&RUN_KEYS[..], &["inputs", "outputs"]].concat())
    };
    if inputless(&scratch.path("one")) != inputless(&merge.out) {
        differences.push("summary.json differs but for its inputs".to_string());
    }
    if differences.is_empty() {
        return Ok(());
    }
    Err(format!(
        "{}\n{}",
        differences.join("\n"),
        written.description
    ))
}

// The properties.
// ---------------------------------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// JSONL logs (results as strings, integers, `doc_id` and `id` objects,
    /// split over 1–3 files, with repeated captures, duplicate docs, empty
    /// rankings and unlabeled queries) under `--repeats error|mean`: every
    /// cell of per_query.csv and aggregates.csv matches the reference
    /// within 1e-9, rejects.jsonl lists exactly the records the reference
    /// rejects, and the exit status says whether there was any.
    #[test]
    fn jsonl_logs_grade_like_the_reference(
        scenario in scenario(jsonl_logs(5), &Repeats::EVERY_CAPTURE)
    ) {
        check_against_reference(&scenario).map_err(TestCaseError::fail)?;
    }

    /// The same promise under `--repeats first|last`: the capture graded is
    /// the first (last) valid one in input order, and `captures` still
    /// counts every capture of the key, superseded ones included
    /// (docs/reference.md, Outputs).
    #[test]
    fn jsonl_logs_under_first_or_last_grade_like_the_reference(
        scenario in scenario(jsonl_logs(5), &Repeats::ONE_OF_SEVERAL)
    ) {
        check_against_reference(&scenario).map_err(TestCaseError::fail)?;
    }

    /// TREC runs (score ties ranked by doc id descending, whitespace of any
    /// kind, trailing fields, one ranking per (tag, query) across files,
    /// duplicate docs rejecting every line of their ranking): the same
    /// promise as for JSONL.
    #[test]
    fn trec_runs_grade_like_the_reference(
        scenario in scenario(trec_logs(10), &Repeats::ALL)
    ) {
        check_against_reference(&scenario).map_err(TestCaseError::fail)?;
    }

    /// Logs split into random partitions by query id, graded shard by
    /// shard with `--partial` and merged, write the bytes one grading of
    /// every shard's files writes: per_query.csv, aggregates.csv,
    /// rejects.jsonl, review_queue.csv, attribution.csv, the report and
    /// summary.json (but for its command line and timing).
    #[test]
    fn merged_shards_grade_as_one(
        scenario in scenario(prop_oneof![jsonl_logs(30), trec_logs(30)], &Repeats::ALL),
        shards in 1u64..=3,
        seed in any::<u64>(),
    ) {
        check_merge(&scenario, shards, seed).map_err(TestCaseError::fail)?;
    }

    /// JSONL lines handed over with their file and line, split by query
    /// id into random partitions as the Spark job splits them, graded as
    /// partial gradings and merged, write what one grading of the files
    /// writes but for the list of inputs: per_query.csv, aggregates.csv,
    /// rejects.jsonl (file order, excerpts), review_queue.csv,
    /// attribution.csv, summary.json's counts.
    #[test]
    fn merged_lines_grade_as_the_files(
        scenario in scenario(jsonl_logs(30), &Repeats::ALL),
        shards in 1u64..=3,
        seed in any::<u64>(),
    ) {
        check_merge_lines(&scenario, shards, seed).map_err(TestCaseError::fail)?;
    }

    /// The thread count never shows in the outputs: `-j 1` and `-j 2` write
    /// byte-identical per_query.csv, aggregates.csv and rejects.jsonl and
    /// exit alike.
    #[test]
    fn thread_count_does_not_change_outputs(
        scenario in scenario(prop_oneof![jsonl_logs(60), trec_logs(60)], &Repeats::ALL)
    ) {
        check_thread_independence(&scenario).map_err(TestCaseError::fail)?;
    }
}
