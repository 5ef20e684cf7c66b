//! Diagnostics (docs/guide.md, Diagnostics) end to end, through the binary: `grade
//! --stage-order`, the relevant documents each stage found and the next
//! one dropped.
//!
//! - a hand-computed case over three stages and three runs (graded labels
//!   with judged-irrelevant documents, a no-answer query, queries missing
//!   at a stage, an invalid capture, a run without the middle stage, a run
//!   with one stage, a stage outside the order): every cell of
//!   stage_loss.csv and stage_loss_per_query.csv, and the stdout rows;
//! - `--repeats mean|first|last|error` and `--min-rel`;
//! - determinism over thread counts and input order on `rgrade gen` data;
//! - an independent recomputation of both files from `rgrade gen`'s
//!   labels.jsonl and logs.jsonl;
//! - properties over random small logs (proptest);
//! - refusals (exit 2), warnings, and no stage-loss output unless asked.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use proptest::collection::{btree_map, vec};
use proptest::option::weighted;
use proptest::prelude::*;
use proptest::sample::{select, subsequence};
use proptest::test_runner::TestCaseError;
use serde_json::{json, Value};

use crate::util::{assert_same_lines, grade, text, Run, Table, Workdir};

/// stage_loss.csv's columns, in order.
const TOTALS_HEADER: [&str; 8] = [
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
const PER_QUERY_HEADER: [&str; 9] = [
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
const TABLE_TITLE: &str = "evidence lost between stages (relevant documents found, then dropped)";

/// `lost / found` as the CSV writes it (`{}` of the f64), empty when
/// nothing was found.
fn rate(found: u64, lost: u64) -> String {
    if found == 0 {
        String::new()
    } else {
        (lost as f64 / found as f64).to_string()
    }
}

/// One expected stage_loss.csv row, its rate computed from the counts.
fn totals_row(
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
fn csv_rows(want: &[&str]) -> Vec<Vec<String>> {
    want.iter()
        .map(|row| row.split(',').map(String::from).collect())
        .collect()
}

/// Expected stdout table rows, each written as its line (cells split on
/// whitespace, as [`loss_table`] reads them).
fn table_rows(want: &[&str]) -> Vec<Vec<String>> {
    want.iter()
        .map(|row| row.split_whitespace().map(String::from).collect())
        .collect()
}

/// Panic unless `table` has exactly `header` and `want`, in order, showing
/// the whole table and the first differing row.
#[track_caller]
fn assert_table(table: &Table, header: &[&str], want: &[Vec<String>]) {
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
fn loss_table(run: &Run) -> Vec<Vec<String>> {
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

// ---------------------------------------------------------------------
// 1. A case computed by hand
// ---------------------------------------------------------------------

/// The answer key of the hand-computed case. `a3` is judged not relevant
/// (grade 0), `qc` is a no-answer query, `qe` has no language, and `qb`'s
/// ids are listed in an order (b9, b10, b2) that is not their byte order
/// (b10, b2, b9).
const HAND_LABELS: &[&str] = &[
    r#"{"query_id": "qa", "relevant": {"a1": 2, "a2": 1, "a3": 0}, "task": "faq", "language": "en"}"#,
    r#"{"query_id": "qb", "relevant": ["b9", "b10", "b2"], "task": "faq", "language": "de"}"#,
    r#"{"query_id": "qc", "relevant": [], "task": "chat", "language": "en"}"#,
    r#"{"query_id": "qd", "relevant": ["d1"], "task": "howto", "language": "en"}"#,
    r#"{"query_id": "qe", "relevant": {"e1": 1, "e2": 3}, "task": "howto"}"#,
    r#"{"query_id": "qf", "relevant": ["f1"], "task": "howto", "language": "de"}"#,
];

/// Run `alpha`: retrieve, rerank and final (and a `debug` stage outside
/// the order); `qf` is not captured at rerank. Stages interleaved on
/// purpose, and one unlabeled query.
const HAND_ALPHA: &[&str] = &[
    r#"{"query_id": "qa", "run": "alpha", "stage": "final", "results": ["a3", "a1"]}"#,
    r#"{"query_id": "qa", "run": "alpha", "stage": "retrieve", "results": ["x", "a3", {"doc_id": "a1", "score": 3.0}, "a2", "y"]}"#,
    r#"{"query_id": "qa", "run": "alpha", "stage": "rerank", "results": ["a1", "a3", "x"]}"#,
    r#"{"query_id": "qa", "run": "alpha", "stage": "debug", "results": ["zz"]}"#,
    r#"{"query_id": "qb", "run": "alpha", "stage": "retrieve", "results": ["b9", "z", "b2", "w"]}"#,
    r#"{"query_id": "qb", "run": "alpha", "stage": "rerank", "results": ["b2", "b9"]}"#,
    r#"{"query_id": "qb", "run": "alpha", "stage": "final", "results": ["b2"]}"#,
    r#"{"query_id": "qc", "run": "alpha", "stage": "retrieve", "results": ["c1", "c2"]}"#,
    r#"{"query_id": "qc", "run": "alpha", "stage": "rerank", "results": ["c1"]}"#,
    r#"{"query_id": "qd", "run": "alpha", "stage": "retrieve", "results": ["n1", "n2"]}"#,
    r#"{"query_id": "qd", "run": "alpha", "stage": "rerank", "results": ["d1"]}"#,
    r#"{"query_id": "qd", "run": "alpha", "stage": "final", "results": ["d1", "n1"]}"#,
    r#"{"query_id": "qe", "run": "alpha", "stage": "retrieve", "results": [{"id": "e2"}, "e1", "q"]}"#,
    r#"{"query_id": "qe", "run": "alpha", "stage": "rerank", "results": ["e1"]}"#,
    r#"{"query_id": "qe", "run": "alpha", "stage": "final", "results": ["e1", "e2"]}"#,
    r#"{"query_id": "qf", "run": "alpha", "stage": "retrieve", "results": ["f1"]}"#,
    r#"{"query_id": "qf", "run": "alpha", "stage": "final", "results": ["x"]}"#,
    r#"{"query_id": "qz", "run": "alpha", "stage": "retrieve", "results": ["a1"]}"#,
];

/// Run `beta`: retrieve and final only (no rerank); `qd`'s final capture
/// repeats a doc (rejected: invalid), `qe` has no final capture, `qf`'s
/// final ranking is empty. Run `gamma`: one stage only.
const HAND_BETA_GAMMA: &[&str] = &[
    r#"{"query_id": "qa", "run": "beta", "stage": "retrieve", "results": ["a1", "a2"]}"#,
    r#"{"query_id": "qa", "run": "beta", "stage": "final", "results": ["a2", "a1"]}"#,
    r#"{"query_id": "qb", "run": "beta", "stage": "retrieve", "results": ["b9", "b2", "b10"]}"#,
    r#"{"query_id": "qb", "run": "beta", "stage": "final", "results": ["x"]}"#,
    r#"{"query_id": "qd", "run": "beta", "stage": "retrieve", "results": ["d1"]}"#,
    r#"{"query_id": "qd", "run": "beta", "stage": "final", "results": ["d1", "d1"]}"#,
    r#"{"query_id": "qe", "run": "beta", "stage": "retrieve", "results": ["e1"]}"#,
    r#"{"query_id": "qf", "run": "beta", "stage": "retrieve", "results": ["f1"]}"#,
    r#"{"query_id": "qf", "run": "beta", "stage": "final", "results": []}"#,
    r#"{"query_id": "qa", "run": "gamma", "stage": "final", "results": ["a1"]}"#,
];

/// Every cell of both files and the stdout rows of the hand-computed case.
///
/// alpha retrieve→rerank: qa found {a1, a2} (a3 has grade 0), rerank
/// drops a2; qb found {b9, b2}, both kept; qd found nothing (a row of
/// zeros: d1 only appears later); qe found {e1, e2}, rerank drops e2;
/// qc is a no-answer query: no rows.
/// alpha rerank→final: qa {a1} kept; qb {b2, b9} loses b9; qd {d1} kept;
/// qe {e1} kept. qf has no rerank capture, so it steps from retrieve
/// straight to final, which loses f1.
/// beta (no rerank) retrieve→final: qa kept both; qb loses all three,
/// listed in byte order `b10|b2|b9`; qd's final capture is invalid and qe
/// has none: no rows; qf's empty final ranking loses f1.
/// gamma has one stage: no transition. `debug` is not in the order.
#[test]
fn hand_computed_three_stages_two_runs() {
    let wd = Workdir::new("stage_loss_hand");
    wd.write("labels.jsonl", text(HAND_LABELS));
    wd.write("logs/alpha.jsonl", text(HAND_ALPHA));
    wd.write("logs/beta.jsonl", text(HAND_BETA_GAMMA));
    let run = grade(
        &wd,
        &[
            "--labels",
            "labels.jsonl",
            "--stage-order",
            "retrieve,rerank,final",
            "--max-rejects",
            "1",
            "-o",
            "out",
            "logs/alpha.jsonl",
            "logs/beta.jsonl",
        ],
    );
    run.expect_code(0);
    assert!(
        !run.stderr.contains("warning"),
        "every stage of the order was graded by some run: no warning\n{run}"
    );

    // The invalid capture is what we meant it to be.
    let per_query = wd.read_csv("out/per_query.csv");
    let qd = per_query.row(&[("run", "beta"), ("stage", "final"), ("query_id", "qd")]);
    assert_eq!(qd["status"], "invalid", "{qd:?}");

    let want_per_query = csv_rows(&[
        "alpha,qa,faq,en,retrieve,rerank,2,1,a2",
        "alpha,qb,faq,de,retrieve,rerank,2,0,",
        "alpha,qd,howto,en,retrieve,rerank,0,0,",
        "alpha,qe,howto,(none),retrieve,rerank,2,1,e2",
        "alpha,qf,howto,de,retrieve,final,1,1,f1",
        "alpha,qa,faq,en,rerank,final,1,0,",
        "alpha,qb,faq,de,rerank,final,2,1,b9",
        "alpha,qd,howto,en,rerank,final,1,0,",
        "alpha,qe,howto,(none),rerank,final,1,0,",
        "beta,qa,faq,en,retrieve,final,2,0,",
        "beta,qb,faq,de,retrieve,final,3,3,b10|b2|b9",
        "beta,qf,howto,de,retrieve,final,1,1,f1",
    ]);
    assert_table(
        &wd.read_csv("out/stage_loss_per_query.csv"),
        &PER_QUERY_HEADER,
        &want_per_query,
    );

    // Grouping sets as in aggregates.csv: overall, tasks, languages
    // (`(none)` sorts before `de`), task × language; empty rate where
    // nothing was found (alpha howto × en, retrieve→rerank).
    let (a, b) = ("alpha", "beta");
    let (rt, rr, fi) = ("retrieve", "rerank", "final");
    let want_totals = vec![
        totals_row(a, "*", "*", rt, rr, 6, 2),
        totals_row(a, "faq", "*", rt, rr, 4, 1),
        totals_row(a, "howto", "*", rt, rr, 2, 1),
        totals_row(a, "*", "(none)", rt, rr, 2, 1),
        totals_row(a, "*", "de", rt, rr, 2, 0),
        totals_row(a, "*", "en", rt, rr, 2, 1),
        totals_row(a, "faq", "de", rt, rr, 2, 0),
        totals_row(a, "faq", "en", rt, rr, 2, 1),
        totals_row(a, "howto", "(none)", rt, rr, 2, 1),
        totals_row(a, "howto", "en", rt, rr, 0, 0),
        totals_row(a, "*", "*", rt, fi, 1, 1),
        totals_row(a, "howto", "*", rt, fi, 1, 1),
        totals_row(a, "*", "de", rt, fi, 1, 1),
        totals_row(a, "howto", "de", rt, fi, 1, 1),
        totals_row(a, "*", "*", rr, fi, 5, 1),
        totals_row(a, "faq", "*", rr, fi, 3, 1),
        totals_row(a, "howto", "*", rr, fi, 2, 0),
        totals_row(a, "*", "(none)", rr, fi, 1, 0),
        totals_row(a, "*", "de", rr, fi, 2, 1),
        totals_row(a, "*", "en", rr, fi, 2, 0),
        totals_row(a, "faq", "de", rr, fi, 2, 1),
        totals_row(a, "faq", "en", rr, fi, 1, 0),
        totals_row(a, "howto", "(none)", rr, fi, 1, 0),
        totals_row(a, "howto", "en", rr, fi, 1, 0),
        totals_row(b, "*", "*", rt, fi, 6, 4),
        totals_row(b, "faq", "*", rt, fi, 5, 3),
        totals_row(b, "howto", "*", rt, fi, 1, 1),
        totals_row(b, "*", "de", rt, fi, 4, 4),
        totals_row(b, "*", "en", rt, fi, 2, 0),
        totals_row(b, "faq", "de", rt, fi, 3, 3),
        totals_row(b, "faq", "en", rt, fi, 2, 0),
        totals_row(b, "howto", "de", rt, fi, 1, 1),
    ];
    let totals = wd.read_csv("out/stage_loss.csv");
    assert_table(&totals, &TOTALS_HEADER, &want_totals);
    // The exact text of a few rates, independent of the helper above.
    assert_eq!(totals.rows[0][7], "0.3333333333333333");
    assert_eq!(totals.rows[1][7], "0.25");
    assert_eq!(totals.rows[4][7], "0");
    assert_eq!(totals.rows[9][7], "");
    assert_eq!(totals.rows[24][7], "0.6666666666666666");
    assert_eq!(totals.rows[27][7], "1");

    // stdout: overall and per-task rows per run and transition, rates to
    // three decimals; no row for the no-answer task `chat`.
    let want_stdout = table_rows(&[
        "alpha retrieve -> rerank all 6 2 0.333",
        "alpha retrieve -> rerank task=faq 4 1 0.250",
        "alpha retrieve -> rerank task=howto 2 1 0.500",
        "alpha retrieve -> final all 1 1 1.000",
        "alpha retrieve -> final task=howto 1 1 1.000",
        "alpha rerank -> final all 5 1 0.200",
        "alpha rerank -> final task=faq 3 1 0.333",
        "alpha rerank -> final task=howto 2 0 0.000",
        "beta retrieve -> final all 6 4 0.667",
        "beta retrieve -> final task=faq 5 3 0.600",
        "beta retrieve -> final task=howto 1 1 1.000",
    ]);
    assert_eq!(loss_table(&run), want_stdout, "{run}");
    // The table comes after the per-stage tables and before the note.
    let title_at = run.stdout.find(TABLE_TITLE).expect("title");
    let last_stage_table = run.stdout.rfind("run gamma  stage final").expect("gamma");
    assert!(last_stage_table < title_at, "{run}");
    if let Some(note) = run.stdout.find("note:") {
        assert!(title_at < note, "{run}");
    }

    // Rejects beyond --max-rejects: exit 1, all outputs written all the
    // same, the stage-loss files byte for byte.
    let strict = grade(
        &wd,
        &[
            "--labels",
            "labels.jsonl",
            "--stage-order",
            "retrieve,rerank,final",
            "-o",
            "strict",
            "logs/alpha.jsonl",
            "logs/beta.jsonl",
        ],
    );
    strict.expect_code(1);
    for file in ["stage_loss.csv", "stage_loss_per_query.csv"] {
        assert_same_lines(
            &format!("strict/{file} against out/{file}"),
            &wd.read(&format!("strict/{file}")),
            &wd.read(&format!("out/{file}")),
        );
    }
    assert_eq!(loss_table(&strict), want_stdout, "{strict}");
}

// ---------------------------------------------------------------------
// 2. Repeats and --min-rel
// ---------------------------------------------------------------------

/// Labels and logs for the repeat policies: q1 and q2 have two captures at
/// some stage, q3 one capture per stage. No `run` field: the unnamed run.
const REPEAT_LABELS: &[&str] = &[
    r#"{"query_id": "q1", "relevant": ["r1", "r2", "r3"], "task": "t", "language": "en"}"#,
    r#"{"query_id": "q2", "relevant": ["s1", "s2"], "task": "t", "language": "en"}"#,
    r#"{"query_id": "q3", "relevant": ["u1"], "task": "t", "language": "en"}"#,
];
const REPEAT_LOGS: &[&str] = &[
    r#"{"query_id": "q1", "stage": "retrieve", "results": ["r1", "x"]}"#,
    r#"{"query_id": "q1", "stage": "retrieve", "results": ["r2", "y"]}"#,
    r#"{"query_id": "q1", "stage": "final", "results": ["r2"]}"#,
    r#"{"query_id": "q1", "stage": "final", "results": ["z"]}"#,
    r#"{"query_id": "q2", "stage": "retrieve", "results": ["s1", "s2"]}"#,
    r#"{"query_id": "q2", "stage": "final", "results": ["s1"]}"#,
    r#"{"query_id": "q2", "stage": "final", "results": ["s2"]}"#,
    r#"{"query_id": "q3", "stage": "retrieve", "results": ["u1"]}"#,
    r#"{"query_id": "q3", "stage": "final", "results": ["v"]}"#,
];

/// Grade the repeat case under `policy`; return the per-query rows as
/// (query, relevant_found, lost, lost_ids) and the overall totals row.
fn repeat_case(policy: &str) -> (Vec<[String; 4]>, Vec<String>) {
    let wd = Workdir::new(&format!("stage_loss_repeats_{policy}"));
    wd.write("labels.jsonl", text(REPEAT_LABELS));
    wd.write("logs.jsonl", text(REPEAT_LOGS));
    let run = grade(
        &wd,
        &[
            "--labels",
            "labels.jsonl",
            "--repeats",
            policy,
            "--max-rejects",
            "100",
            "--stage-order",
            "retrieve,final",
            "-q",
            "-o",
            "out",
            "logs.jsonl",
        ],
    );
    run.expect_code(0);
    let per_query = wd.read_csv("out/stage_loss_per_query.csv");
    assert_eq!(per_query.header, PER_QUERY_HEADER);
    let mut got = Vec::new();
    for r in per_query.records() {
        assert_eq!(
            (
                r["run"].as_str(),
                r["from_stage"].as_str(),
                r["to_stage"].as_str()
            ),
            ("", "retrieve", "final"),
            "{policy}: {r:?}"
        );
        got.push([
            r["query_id"].clone(),
            r["relevant_found"].clone(),
            r["lost"].clone(),
            r["lost_ids"].clone(),
        ]);
    }
    let totals = wd.read_csv("out/stage_loss.csv");
    // One task and one language: four grouping sets, all equal.
    assert_eq!(totals.rows.len(), 4, "{policy}:\n{}", totals.dump());
    for row in &totals.rows {
        assert_eq!(
            row[5..],
            totals.rows[0][5..],
            "{policy}:\n{}",
            totals.dump()
        );
    }
    (got, totals.rows[0].clone())
}

fn q(query: &str, found: &str, lost: &str, ids: &str) -> [String; 4] {
    [query, found, lost, ids].map(String::from)
}

/// `--repeats mean`: every capture of a stage counts, so the found set is
/// the union over captures (q1 found {r1, r2} over its two retrieve
/// captures; final holds r2 in one capture, nothing relevant in the
/// other: r1 lost) and a document kept by any capture of the next stage
/// is not lost (q2: s1 and s2 each survive in one final capture).
#[test]
fn repeats_mean_takes_the_union_of_captures() {
    let (per_query, overall) = repeat_case("mean");
    assert_eq!(
        per_query,
        [
            q("q1", "2", "1", "r1"),
            q("q2", "2", "0", ""),
            q("q3", "1", "1", "u1")
        ]
    );
    assert_eq!(overall, totals_row("", "*", "*", "retrieve", "final", 5, 2));
}

/// `--repeats error`: a repeated key is invalid, so q1 (repeated at both
/// stages) and q2 (repeated at final) get no row; only q3 is measured.
/// `first` and `last` measure the one capture they keep, in input order.
#[test]
fn repeats_error_first_last() {
    let (per_query, overall) = repeat_case("error");
    assert_eq!(per_query, [q("q3", "1", "1", "u1")]);
    assert_eq!(overall, totals_row("", "*", "*", "retrieve", "final", 1, 1));

    let (per_query, overall) = repeat_case("first");
    assert_eq!(
        per_query,
        [
            q("q1", "1", "1", "r1"),
            q("q2", "2", "1", "s2"),
            q("q3", "1", "1", "u1")
        ]
    );
    assert_eq!(overall, totals_row("", "*", "*", "retrieve", "final", 4, 3));

    let (per_query, overall) = repeat_case("last");
    assert_eq!(
        per_query,
        [
            q("q1", "1", "1", "r2"),
            q("q2", "2", "1", "s1"),
            q("q3", "1", "1", "u1")
        ]
    );
    assert_eq!(overall, totals_row("", "*", "*", "retrieve", "final", 4, 3));
}

/// `--min-rel 2`: grade-1 documents are not relevant, neither found nor
/// lost (g1 loses h2 and h3 under the default, only h2 under 2), and a
/// query whose documents are all below it is a no-answer query (g2: no
/// row). The unnamed run shows as `(unnamed)` on stdout, `(none)` slices
/// as `task=(none)`.
#[test]
fn min_rel_decides_what_counts_as_relevant() {
    let wd = Workdir::new("stage_loss_min_rel");
    wd.write(
        "labels.jsonl",
        text(&[
            r#"{"query_id": "g1", "relevant": {"h1": 3, "h2": 2, "h3": 1, "h4": 0}}"#,
            r#"{"query_id": "g2", "relevant": {"k1": 1}}"#,
        ]),
    );
    wd.write(
        "logs.jsonl",
        text(&[
            r#"{"query_id": "g1", "stage": "retrieve", "results": ["h3", "h1", "h2", "h4"]}"#,
            r#"{"query_id": "g1", "stage": "final", "results": ["h1", "h4"]}"#,
            r#"{"query_id": "g2", "stage": "retrieve", "results": ["k1"]}"#,
            r#"{"query_id": "g2", "stage": "final", "results": []}"#,
        ]),
    );
    let run_with = |min_rel: &str, out: &str| {
        let run = grade(
            &wd,
            &[
                "--labels",
                "labels.jsonl",
                "--min-rel",
                min_rel,
                "--stage-order",
                "retrieve,final",
                "-o",
                out,
                "logs.jsonl",
            ],
        );
        run.expect_code(0);
        run
    };
    let (rt, fi) = ("retrieve", "final");

    let run = run_with("1", "out1");
    assert_table(
        &wd.read_csv("out1/stage_loss_per_query.csv"),
        &PER_QUERY_HEADER,
        &csv_rows(&[
            ",g1,(none),(none),retrieve,final,3,2,h2|h3",
            ",g2,(none),(none),retrieve,final,1,1,k1",
        ]),
    );
    assert_table(
        &wd.read_csv("out1/stage_loss.csv"),
        &TOTALS_HEADER,
        &[
            totals_row("", "*", "*", rt, fi, 4, 3),
            totals_row("", "(none)", "*", rt, fi, 4, 3),
            totals_row("", "*", "(none)", rt, fi, 4, 3),
            totals_row("", "(none)", "(none)", rt, fi, 4, 3),
        ],
    );
    assert_eq!(
        loss_table(&run),
        table_rows(&[
            "(unnamed) retrieve -> final all 4 3 0.750",
            "(unnamed) retrieve -> final task=(none) 4 3 0.750"
        ]),
        "{run}"
    );

    let run = run_with("2", "out2");
    assert_table(
        &wd.read_csv("out2/stage_loss_per_query.csv"),
        &PER_QUERY_HEADER,
        &csv_rows(&[",g1,(none),(none),retrieve,final,2,1,h2"]),
    );
    assert_table(
        &wd.read_csv("out2/stage_loss.csv"),
        &TOTALS_HEADER,
        &[
            totals_row("", "*", "*", rt, fi, 2, 1),
            totals_row("", "(none)", "*", rt, fi, 2, 1),
            totals_row("", "*", "(none)", rt, fi, 2, 1),
            totals_row("", "(none)", "(none)", rt, fi, 2, 1),
        ],
    );
    assert_eq!(
        loss_table(&run),
        table_rows(&[
            "(unnamed) retrieve -> final all 2 1 0.500",
            "(unnamed) retrieve -> final task=(none) 2 1 0.500"
        ]),
        "{run}"
    );
}

// ---------------------------------------------------------------------
// 3. and 4. Generated data: determinism and an independent recomputation
// ---------------------------------------------------------------------

/// `rgrade gen --queries 2000 --results 20 --seed 3 -o gen` in `wd`.
fn generate(wd: &Workdir) {
    wd.rgrade(&[
        "gen",
        "--queries",
        "2000",
        "--results",
        "20",
        "--seed",
        "3",
        "-o",
        "gen",
    ])
    .expect_code(0);
}

/// Grade the generated data with `--stage-order retrieve,final` and
/// `extra` options into `out`.
fn grade_generated(wd: &Workdir, out: &str, extra: &[&str], logs: &[&str]) -> Run {
    let mut args = vec![
        "--labels",
        "gen/labels.jsonl",
        "--stage-order",
        "retrieve,final",
        "-o",
        out,
    ];
    args.extend_from_slice(extra);
    args.extend_from_slice(logs);
    let run = grade(wd, &args);
    run.expect_code(0);
    run
}

/// One thread or two (or three), and the log lines in reverse order over
/// three files: byte-identical stage-loss files and stdout table.
#[test]
fn generated_outputs_do_not_depend_on_threads_or_input_order() {
    let wd = Workdir::new("stage_loss_determinism");
    generate(&wd);
    let one = grade_generated(&wd, "j1", &["-j", "1"], &["gen/logs.jsonl"]);
    let two = grade_generated(&wd, "j2", &["-j", "2"], &["gen/logs.jsonl"]);
    let three = grade_generated(&wd, "j3", &["-j", "3"], &["gen/logs.jsonl"]);

    // The same lines reversed and dealt over three files.
    let logs = wd.read_text("gen/logs.jsonl");
    let mut shards = [String::new(), String::new(), String::new()];
    for (i, line) in logs.lines().rev().enumerate() {
        shards[i % 3].push_str(line);
        shards[i % 3].push('\n');
    }
    for (i, shard) in shards.iter().enumerate() {
        wd.write(&format!("shards/{i}.jsonl"), shard);
    }
    let shuffled = grade_generated(
        &wd,
        "shuffled",
        &["-j", "2"],
        &["shards/2.jsonl", "shards/0.jsonl", "shards/1.jsonl"],
    );

    let per_query = wd.read_csv("j1/stage_loss_per_query.csv");
    assert!(
        per_query.rows.len() > 1000,
        "the generated data should measure most queries:\n{}",
        per_query.dump()
    );
    let lost: u64 = per_query
        .column("lost")
        .iter()
        .map(|c| c.parse::<u64>().expect("lost"))
        .sum();
    assert!(lost > 0, "the generated final stage should lose something");

    for file in ["stage_loss.csv", "stage_loss_per_query.csv"] {
        let want = wd.read(&format!("j1/{file}"));
        for other in ["j2", "j3", "shuffled"] {
            assert_same_lines(
                &format!("{other}/{file} against j1/{file}"),
                &wd.read(&format!("{other}/{file}")),
                &want,
            );
        }
    }
    let table = loss_table(&one);
    assert!(!table.is_empty(), "{one}");
    for other in [&two, &three, &shuffled] {
        assert_eq!(loss_table(other), table, "{other}");
    }
    assert_same_lines(
        "stdout -j 2 against -j 1",
        two.stdout.as_bytes(),
        one.stdout.as_bytes(),
    );
}

/// A query id of labels or logs as text (an integer is its decimal text).
fn id_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        other => panic!("not an id: {other}"),
    }
}

/// A labeled query of the reference: its relevant documents (grade >= 1)
/// and its slice.
struct RefLabel {
    relevant: BTreeSet<String>,
    task: String,
    language: String,
}

/// labels.jsonl read with serde_json, nothing shared with `src/`.
fn reference_labels(text: &str) -> BTreeMap<String, RefLabel> {
    let mut labels = BTreeMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line).expect("labels.jsonl line");
        let relevant = match &v["relevant"] {
            Value::Array(ids) => ids.iter().map(id_text).collect(),
            Value::Object(grades) => grades
                .iter()
                .filter(|(_, g)| g.as_i64().expect("integer grade") >= 1)
                .map(|(id, _)| id.clone())
                .collect(),
            other => panic!("relevant: {other}"),
        };
        let slice = |key: &str| v[key].as_str().unwrap_or("(none)").to_string();
        let old = labels.insert(
            id_text(&v["query_id"]),
            RefLabel {
                relevant,
                task: slice("task"),
                language: slice("language"),
            },
        );
        assert!(old.is_none(), "a query labeled twice: {line}");
    }
    labels
}

/// logs.jsonl read with serde_json: (run, stage, query) → rankings.
fn reference_logs(text: &str) -> BTreeMap<(String, String, String), Vec<Vec<String>>> {
    let mut logs: BTreeMap<_, Vec<Vec<String>>> = BTreeMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line).expect("logs.jsonl line");
        let ranking = v["results"]
            .as_array()
            .expect("results")
            .iter()
            .map(|r| match r {
                Value::Object(o) => id_text(o.get("doc_id").or_else(|| o.get("id")).expect("id")),
                other => id_text(other),
            })
            .collect();
        let key = (
            v["run"].as_str().unwrap_or("").to_string(),
            v["stage"].as_str().unwrap_or("final").to_string(),
            id_text(&v["query_id"]),
        );
        logs.entry(key).or_default().push(ranking);
    }
    logs
}

/// The sort key of a grouping set in aggregates.csv order.
fn set_order(task: &str, language: &str) -> (u8, String, String) {
    let level = match (task == "*", language == "*") {
        (true, true) => 0,
        (false, true) => 1,
        (true, false) => 2,
        (false, false) => 3,
    };
    (level, task.to_string(), language.to_string())
}

/// The four grouping sets of a query's slice.
fn sets_of(task: &str, language: &str) -> [(String, String); 4] {
    [
        ("*".into(), "*".into()),
        (task.into(), "*".into()),
        ("*".into(), language.into()),
        (task.into(), language.into()),
    ]
}

/// stage_loss_per_query.csv and stage_loss.csv recomputed from the
/// generated labels.jsonl and logs.jsonl with serde_json and plain loops
/// (one capture per key, no duplicate doc: checked), compared row by row;
/// the overall totals also equal the sums over per_query rows.
#[test]
fn generated_stage_loss_matches_an_independent_recomputation() {
    let wd = Workdir::new("stage_loss_reference");
    generate(&wd);
    let run = grade_generated(&wd, "out", &[], &["gen/logs.jsonl"]);
    assert_eq!(
        wd.read_text("out/rejects.jsonl"),
        "",
        "the reference assumes no reject\n{run}"
    );

    let labels = reference_labels(&wd.read_text("gen/labels.jsonl"));
    let logs = reference_logs(&wd.read_text("gen/logs.jsonl"));
    for (key, captures) in &logs {
        assert_eq!(
            captures.len(),
            1,
            "{key:?}: the reference assumes one capture"
        );
        let unique: BTreeSet<&String> = captures[0].iter().collect();
        assert_eq!(unique.len(), captures[0].len(), "{key:?}: a repeated doc");
    }
    let runs: BTreeSet<&str> = logs.keys().map(|(run, _, _)| run.as_str()).collect();
    let order = ["retrieve", "final"];

    let mut want_per_query = Vec::new();
    let mut want_totals = Vec::new();
    for run in &runs {
        let stages: Vec<&str> = order
            .iter()
            .copied()
            .filter(|s| logs.keys().any(|(r, st, _)| r == run && st == s))
            .collect();
        for pair in stages.windows(2) {
            let (from, to) = (pair[0], pair[1]);
            let mut sets: BTreeMap<(u8, String, String), (u64, u64)> = BTreeMap::new();
            // BTreeMap over String: byte order of query ids.
            for (query, label) in &labels {
                if label.relevant.is_empty() {
                    continue;
                }
                let key = |stage: &str| (run.to_string(), stage.to_string(), query.clone());
                let (Some(before), Some(after)) = (logs.get(&key(from)), logs.get(&key(to))) else {
                    continue;
                };
                let found: BTreeSet<&String> = before[0]
                    .iter()
                    .filter(|d| label.relevant.contains(*d))
                    .collect();
                let lost: Vec<&str> = found
                    .iter()
                    .filter(|d| !after[0].contains(d))
                    .map(|d| d.as_str())
                    .collect();
                want_per_query.push(vec![
                    run.to_string(),
                    query.clone(),
                    label.task.clone(),
                    label.language.clone(),
                    from.to_string(),
                    to.to_string(),
                    found.len().to_string(),
                    lost.len().to_string(),
                    lost.join("|"),
                ]);
                for (task, language) in sets_of(&label.task, &label.language) {
                    let set = sets.entry(set_order(&task, &language)).or_default();
                    set.0 += found.len() as u64;
                    set.1 += lost.len() as u64;
                }
            }
            for ((_, task, language), (found, lost)) in sets {
                want_totals.push(totals_row(run, &task, &language, from, to, found, lost));
            }
        }
    }
    assert!(want_per_query.len() > 1000);

    let per_query = wd.read_csv("out/stage_loss_per_query.csv");
    assert_table(&per_query, &PER_QUERY_HEADER, &want_per_query);
    let totals = wd.read_csv("out/stage_loss.csv");
    assert_table(&totals, &TOTALS_HEADER, &want_totals);

    // The overall totals are the sums of the per-query rows.
    let sum = |column: &str| -> u64 {
        per_query
            .column(column)
            .iter()
            .map(|c| c.parse::<u64>().expect("count"))
            .sum()
    };
    let overall = totals.row(&[("task", "*"), ("language", "*")]);
    assert_eq!(overall["relevant_found"], sum("relevant_found").to_string());
    assert_eq!(overall["lost"], sum("lost").to_string());
    let all = loss_table(&run);
    assert_eq!(all[0][4], "all", "{run}");
    assert_eq!(all[0][5], overall["relevant_found"], "{run}");
    assert_eq!(all[0][6], overall["lost"], "{run}");
}

// ---------------------------------------------------------------------
// 5. Properties over random small logs
// ---------------------------------------------------------------------

/// Documents the random rankings draw from; `x` and `y` are never labeled.
/// `d10` sorts before `d2` in byte order.
const PROP_DOCS: &[&str] = &["d0", "d1", "d2", "d10", "d4", "x", "y"];
/// Labelable documents (PROP_DOCS without the unlabeled ones).
const PROP_LABEL_DOCS: &[&str] = &["d0", "d1", "d2", "d10", "d4"];
/// Labeled queries; `q10` sorts before `q2`.
const PROP_QUERIES: &[&str] = &["q0", "q1", "q2", "q10"];
/// Runs of a case.
const PROP_RUNS: &[&str] = &["r1", "r2"];
/// The stage order; a case uses its first 2 or 3.
const PROP_STAGES: &[&str] = &["retrieve", "rerank", "final"];

/// One labeled query: grades (0 = judged not relevant), task, language.
#[derive(Debug, Clone)]
struct PropLabel {
    grades: BTreeMap<&'static str, u8>,
    task: &'static str,
    language: &'static str,
}

/// Per query, the ranking if captured.
type StageLogs = Vec<Option<Vec<&'static str>>>;

/// A transition of a run and a grouping set: (run, from, to, set order).
type SetKey = (String, String, String, (u8, String, String));

/// A random case: labels per query, then per run and stage either nothing
/// (the run lacks the stage) or per query an optional ranking.
#[derive(Debug, Clone)]
struct PropCase {
    stages: usize,
    labels: Vec<PropLabel>,
    /// [run][stage] → per query, the ranking if captured.
    logs: Vec<Vec<Option<StageLogs>>>,
}

/// A labeled query: up to four graded documents (possibly none relevant).
fn prop_label() -> impl Strategy<Value = PropLabel> {
    (
        btree_map(select(PROP_LABEL_DOCS), 0u8..=2, 0..=4),
        select(&["faq", "howto"][..]),
        select(&["en", "de"][..]),
    )
        .prop_map(|(grades, task, language)| PropLabel {
            grades,
            task,
            language,
        })
}

/// A ranking: distinct documents, labeled or not, in random order.
fn prop_ranking() -> impl Strategy<Value = Vec<&'static str>> {
    subsequence(PROP_DOCS, 0..=PROP_DOCS.len()).prop_shuffle()
}

/// A whole case: 2–3 stages, labels, and per run and stage the captures.
fn prop_case() -> impl Strategy<Value = PropCase> {
    let stage = weighted(0.85, vec(weighted(0.8, prop_ranking()), PROP_QUERIES.len()));
    (
        2usize..=3,
        vec(prop_label(), PROP_QUERIES.len()),
        vec(vec(stage, PROP_STAGES.len()), PROP_RUNS.len()),
    )
        .prop_map(|(stages, labels, logs)| PropCase {
            stages,
            labels,
            logs,
        })
}

impl PropCase {
    /// The same case with every stage of every run holding, for every
    /// query, the ranking of the run's first stage that has one.
    fn identical(&self) -> PropCase {
        let logs = self
            .logs
            .iter()
            .map(|run| {
                let per_query: StageLogs = (0..PROP_QUERIES.len())
                    .map(|q| {
                        run[..self.stages]
                            .iter()
                            .flatten()
                            .find_map(|stage| stage[q].clone())
                    })
                    .collect();
                vec![Some(per_query); PROP_STAGES.len()]
            })
            .collect();
        PropCase {
            logs,
            ..self.clone()
        }
    }

    fn labels_jsonl(&self) -> String {
        PROP_QUERIES
            .iter()
            .zip(&self.labels)
            .map(|(q, l)| {
                let line = json!({
                    "query_id": q,
                    "relevant": l.grades,
                    "task": l.task,
                    "language": l.language,
                });
                format!("{line}\n")
            })
            .collect()
    }

    fn logs_jsonl(&self) -> String {
        let mut out = String::new();
        for (run, stages) in PROP_RUNS.iter().zip(&self.logs) {
            for (stage, queries) in PROP_STAGES[..self.stages].iter().zip(stages) {
                let Some(queries) = queries else { continue };
                for (q, ranking) in PROP_QUERIES.iter().zip(queries) {
                    if let Some(ranking) = ranking {
                        let line = json!({
                            "query_id": q, "run": run, "stage": stage, "results": ranking,
                        });
                        out.push_str(&format!("{line}\n"));
                    }
                }
            }
        }
        out
    }

    /// The ranking of (run, stage, query) if captured.
    fn ranking(&self, run: &str, stage: &str, query: &str) -> Option<&Vec<&'static str>> {
        let r = PROP_RUNS.iter().position(|x| *x == run)?;
        let s = PROP_STAGES[..self.stages]
            .iter()
            .position(|x| *x == stage)?;
        let q = PROP_QUERIES.iter().position(|x| *x == query)?;
        self.logs[r][s].as_ref()?[q].as_ref()
    }
}

/// Run the case through the binary; return the two tables or a message.
fn run_case(case: &PropCase) -> Result<(Table, Table), TestCaseError> {
    let wd = Workdir::new("stage_loss_prop");
    wd.write("labels.jsonl", case.labels_jsonl());
    wd.write("logs.jsonl", case.logs_jsonl());
    let order = PROP_STAGES[..case.stages].join(",");
    let run = grade(
        &wd,
        &[
            "--labels",
            "labels.jsonl",
            "--stage-order",
            &order,
            "-j",
            "2",
            "-q",
            "-o",
            "out",
            "logs.jsonl",
        ],
    );
    prop_assert_eq!(run.status.code(), Some(0), "{}", run);
    Ok((
        wd.read_csv("out/stage_loss.csv"),
        wd.read_csv("out/stage_loss_per_query.csv"),
    ))
}

/// The properties of one case's outputs; a message naming the case's
/// input on failure. Returns the per-query table.
fn check_case(case: &PropCase) -> Result<Table, TestCaseError> {
    let context = format!(
        "labels:\n{}logs:\n{}",
        case.labels_jsonl(),
        case.logs_jsonl()
    );
    let (totals, per_query) = run_case(case)?;
    prop_assert_eq!(&per_query.header, &PER_QUERY_HEADER);
    prop_assert_eq!(&totals.header, &TOTALS_HEADER);

    // Every per-query row: the query is labeled with relevant documents,
    // both stages captured it, `relevant_found` counts the relevant
    // documents of the earlier ranking, lost ⊆ those, each lost document
    // is absent from the later ranking, and every relevant document of the
    // earlier ranking absent from the later one is listed, sorted.
    let mut sums: BTreeMap<SetKey, (u64, u64)> = BTreeMap::new();
    let mut seen: BTreeSet<(String, String, String, String)> = BTreeSet::new();
    for r in per_query.records() {
        let q = PROP_QUERIES
            .iter()
            .position(|x| *x == r["query_id"])
            .ok_or_else(|| TestCaseError::fail(format!("unknown query {r:?}\n{context}")))?;
        let label = &case.labels[q];
        let relevant: BTreeSet<&str> = label
            .grades
            .iter()
            .filter(|(_, g)| **g >= 1)
            .map(|(d, _)| *d)
            .collect();
        prop_assert!(
            !relevant.is_empty(),
            "no-answer query measured: {:?}\n{}",
            r,
            context
        );
        prop_assert_eq!(&r["task"], label.task);
        prop_assert_eq!(&r["language"], label.language);
        let (run, from, to) = (&r["run"], &r["from_stage"], &r["to_stage"]);
        let before = case.ranking(run, from, &r["query_id"]);
        let after = case.ranking(run, to, &r["query_id"]);
        let (Some(before), Some(after)) = (before, after) else {
            return Err(TestCaseError::fail(format!(
                "a row for a query not captured at both stages: {r:?}\n{context}"
            )));
        };
        let found: BTreeSet<&str> = before
            .iter()
            .copied()
            .filter(|d| relevant.contains(d))
            .collect();
        prop_assert_eq!(
            &r["relevant_found"],
            &found.len().to_string(),
            "{:?}\n{}",
            r,
            context
        );
        let lost: Vec<&str> = if r["lost_ids"].is_empty() {
            Vec::new()
        } else {
            r["lost_ids"].split('|').collect()
        };
        prop_assert_eq!(&r["lost"], &lost.len().to_string(), "{:?}\n{}", r, context);
        for doc in &lost {
            prop_assert!(
                found.contains(doc),
                "lost {} not found before: {:?}\n{}",
                doc,
                r,
                context
            );
            prop_assert!(
                !after.contains(doc),
                "lost {} is in the later ranking: {:?}\n{}",
                doc,
                r,
                context
            );
        }
        let want_lost: Vec<&str> = found
            .iter()
            .copied()
            .filter(|d| !after.contains(d))
            .collect();
        prop_assert_eq!(&lost, &want_lost, "{:?}\n{}", r, context);
        prop_assert!(
            seen.insert((run.clone(), from.clone(), to.clone(), r["query_id"].clone())),
            "a row twice: {:?}\n{}",
            r,
            context
        );
        for (task, language) in sets_of(label.task, label.language) {
            let key = (
                run.clone(),
                from.clone(),
                to.clone(),
                set_order(&task, &language),
            );
            let sum = sums.entry(key).or_default();
            sum.0 += found.len() as u64;
            sum.1 += lost.len() as u64;
        }
    }

    // Exactly the expected rows: consecutive stages the run has (stages
    // it lacks skipped), queries with relevant documents captured at both.
    // Each (run, query) with relevant documents steps through the stages
    // that graded it: a stage it lacks is skipped.
    let mut want_seen = BTreeSet::new();
    for (r, run) in PROP_RUNS.iter().enumerate() {
        for (q, query) in PROP_QUERIES.iter().enumerate() {
            if !case.labels[q].grades.values().any(|g| *g >= 1) {
                continue;
            }
            let stages: Vec<&str> = (0..case.stages)
                .filter(|&s| case.logs[r][s].is_some())
                .map(|s| PROP_STAGES[s])
                .filter(|stage| case.ranking(run, stage, query).is_some())
                .collect();
            for pair in stages.windows(2) {
                want_seen.insert((
                    run.to_string(),
                    pair[0].to_string(),
                    pair[1].to_string(),
                    query.to_string(),
                ));
            }
        }
    }
    prop_assert_eq!(&seen, &want_seen, "{}", context);

    // Row order: by run, then transition in stage order, then query id in
    // byte order (`q10` before `q2`, though the labels list `q2` first).
    let stage_rank = |s: &str| PROP_STAGES.iter().position(|x| *x == s);
    let order_keys: Vec<_> = per_query
        .records()
        .iter()
        .map(|r| {
            (
                r["run"].clone(),
                stage_rank(&r["from_stage"]),
                stage_rank(&r["to_stage"]),
                r["query_id"].clone(),
            )
        })
        .collect();
    let mut sorted = order_keys.clone();
    sorted.sort();
    prop_assert_eq!(&order_keys, &sorted, "per-query row order\n{}", context);

    // Totals: one row per (run, transition, grouping set) with a query,
    // equal to the per-query sums, with the rate lost / found.
    let mut got_sums = BTreeMap::new();
    for r in totals.records() {
        let key = (
            r["run"].clone(),
            r["from_stage"].clone(),
            r["to_stage"].clone(),
            set_order(&r["task"], &r["language"]),
        );
        let found: u64 = r["relevant_found"].parse().expect("count");
        let lost: u64 = r["lost"].parse().expect("count");
        prop_assert!(lost <= found, "{:?}\n{}", r, context);
        prop_assert_eq!(&r["lost_rate"], &rate(found, lost), "{:?}\n{}", r, context);
        prop_assert!(
            got_sums.insert(key, (found, lost)).is_none(),
            "{:?} twice",
            r
        );
    }
    prop_assert_eq!(
        &got_sums,
        &sums,
        "totals against per-query sums\n{}",
        context
    );
    Ok(per_query)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Random labels (grades 0–2, some no-answer queries) and logs over
    /// two runs and two or three stages (a run may lack a stage, a stage a
    /// query): every row agrees with the rankings, lost ⊆ found ∖ later
    /// ranking, totals are the per-query sums. With the same ranking at
    /// every stage nothing is lost and every transition finds the same.
    #[test]
    fn stage_loss_properties(case in prop_case()) {
        check_case(&case)?;
        // Same rankings everywhere: nothing lost (the totals, checked
        // against the per-query sums, are then 0 too).
        let per_query = check_case(&case.identical())?;
        for r in per_query.records() {
            prop_assert_eq!(&r["lost"], "0", "{:?}", r);
            prop_assert_eq!(&r["lost_ids"], "", "{:?}", r);
        }
    }
}

// ---------------------------------------------------------------------
// 6. Refusals, warnings, and nothing unless asked
// ---------------------------------------------------------------------

/// Small two-stage inputs in `wd`.
fn two_stage_inputs(wd: &Workdir) {
    wd.write(
        "labels.jsonl",
        text(&[r#"{"query_id": "q1", "relevant": ["a", "b"], "task": "t", "language": "en"}"#]),
    );
    wd.write(
        "logs.jsonl",
        text(&[
            r#"{"query_id": "q1", "stage": "retrieve", "results": ["a", "b"]}"#,
            r#"{"query_id": "q1", "stage": "final", "results": ["b"]}"#,
        ]),
    );
}

/// One stage, a stage named twice or an empty name: exit 2 before
/// grading, a message naming --stage-order, no output directory.
#[test]
fn stage_order_needs_two_distinct_stages() {
    let wd = Workdir::new("stage_loss_refusals");
    two_stage_inputs(&wd);
    for (order, out, needles) in [
        ("retrieve", "one", vec!["--stage-order", "two stages"]),
        ("final", "one_b", vec!["--stage-order", "two stages"]),
        (
            "retrieve,final,retrieve",
            "twice",
            vec!["--stage-order", "retrieve", "twice"],
        ),
        (
            "final,final",
            "twice_b",
            vec!["--stage-order", "final", "twice"],
        ),
        // Spaces around a name are dropped, so this is final twice.
        (
            "final, final",
            "twice_c",
            vec!["--stage-order", "final", "twice"],
        ),
        (
            "retrieve,,final",
            "empty",
            vec!["--stage-order", "empty stage name"],
        ),
    ] {
        let run = grade(
            &wd,
            &[
                "--labels",
                "labels.jsonl",
                "--stage-order",
                order,
                "-o",
                out,
                "logs.jsonl",
            ],
        );
        run.expect_code(2).expect_stderr(&needles);
        assert!(run.stdout.is_empty(), "{run}");
        assert!(
            !wd.exists(out),
            "nothing is written on a usage error\n{run}"
        );
    }
}

/// A stage of the order that no run graded: a warning on stderr naming it
/// (even with -q), exit 0, and the stages that were graded are compared.
/// No stage of the order graded at all: one warning each, a one-line note
/// on stdout, the files hold their headers only.
#[test]
fn unseen_stages_warn() {
    let wd = Workdir::new("stage_loss_unseen");
    two_stage_inputs(&wd);
    let run = grade(
        &wd,
        &[
            "--labels",
            "labels.jsonl",
            "--stage-order",
            "retrieve,rerank,final",
            "-o",
            "out",
            "logs.jsonl",
        ],
    );
    run.expect_code(0).expect_stderr(&[
        "rgrade: warning: stage rerank of --stage-order was never graded; \
         evidence loss is measured between the stages that were",
    ]);
    assert!(!run.stderr.contains("stage retrieve"), "{run}");
    assert!(!run.stderr.contains("stage final"), "{run}");
    assert_table(
        &wd.read_csv("out/stage_loss_per_query.csv"),
        &PER_QUERY_HEADER,
        &csv_rows(&[",q1,t,en,retrieve,final,2,1,a"]),
    );
    assert_eq!(
        loss_table(&run),
        table_rows(&[
            "(unnamed) retrieve -> final all 2 1 0.500",
            "(unnamed) retrieve -> final task=t 2 1 0.500"
        ]),
        "{run}"
    );

    // -q: no table, the warning all the same.
    let quiet = grade(
        &wd,
        &[
            "--labels",
            "labels.jsonl",
            "--stage-order",
            "retrieve,rerank,final",
            "-q",
            "logs.jsonl",
        ],
    );
    quiet
        .expect_code(0)
        .expect_stderr(&["stage rerank of --stage-order was never graded"]);
    assert!(quiet.stdout.is_empty(), "{quiet}");

    // --stage keeps a stage out of grading: then it was never graded.
    let filtered = grade(
        &wd,
        &[
            "--labels",
            "labels.jsonl",
            "--stage",
            "final",
            "--stage-order",
            "retrieve,final",
            "-o",
            "filtered",
            "logs.jsonl",
        ],
    );
    filtered
        .expect_code(0)
        .expect_stderr(&["stage retrieve of --stage-order was never graded"]);
    assert_eq!(
        wd.read_csv("filtered/stage_loss.csv").rows.len(),
        0,
        "{filtered}"
    );

    let none = grade(
        &wd,
        &[
            "--labels",
            "labels.jsonl",
            "--stage-order",
            "dense,sparse",
            "-o",
            "none",
            "logs.jsonl",
        ],
    );
    none.expect_code(0).expect_stderr(&[
        "stage dense of --stage-order was never graded",
        "stage sparse of --stage-order was never graded",
    ]);
    assert!(
        none.stdout
            .contains("evidence lost between stages: no run graded two stages of --stage-order"),
        "{none}"
    );
    assert!(loss_table(&none).is_empty(), "{none}");
    assert_table(&wd.read_csv("none/stage_loss.csv"), &TOTALS_HEADER, &[]);
    assert_table(
        &wd.read_csv("none/stage_loss_per_query.csv"),
        &PER_QUERY_HEADER,
        &[],
    );
}

/// Without --stage-order: no stage-loss files, no stdout table, no
/// warning, even when the logs hold several stages.
#[test]
fn no_stage_loss_unless_asked() {
    let wd = Workdir::new("stage_loss_not_asked");
    two_stage_inputs(&wd);
    let run = grade(
        &wd,
        &["--labels", "labels.jsonl", "-o", "out", "logs.jsonl"],
    );
    run.expect_code(0);
    assert!(wd.exists("out/per_query.csv"), "{run}");
    assert!(!wd.exists("out/stage_loss.csv"), "{run}");
    assert!(!wd.exists("out/stage_loss_per_query.csv"), "{run}");
    assert!(!run.stdout.contains("evidence lost"), "{run}");
    assert!(!run.stderr.contains("--stage-order"), "{run}");
    // The per-stage tables are still the usual ones.
    let table = run.stdout_table();
    assert_eq!(table.len(), 2, "{run}");

    // A rerun into a directory that holds an earlier run's stage-loss
    // files removes them: they are not this run's results.
    let args = ["--labels", "labels.jsonl", "-o", "out", "logs.jsonl"];
    let mut with_order = args.to_vec();
    with_order.extend(["--stage-order", "retrieve,final"]);
    grade(&wd, &with_order).expect_code(0);
    assert!(wd.exists("out/stage_loss.csv"));
    grade(&wd, &args).expect_code(0);
    assert!(!wd.exists("out/stage_loss.csv"));
    assert!(!wd.exists("out/stage_loss_per_query.csv"));
}

/// The stage-loss files and table name every run's transitions even when
/// runs differ in their stages, and a query id given as a JSON integer is
/// written as its decimal text.
#[test]
fn integer_query_ids_and_runs_with_different_stages() {
    let wd = Workdir::new("stage_loss_integer_ids");
    wd.write(
        "labels.jsonl",
        text(&[r#"{"query_id": 7, "relevant": ["a"], "task": "t", "language": "en"}"#]),
    );
    wd.write(
        "logs.jsonl",
        text(&[
            r#"{"query_id": 7, "run": "one", "stage": "retrieve", "results": ["a"]}"#,
            r#"{"query_id": "7", "run": "one", "stage": "rerank", "results": ["b"]}"#,
            r#"{"query_id": 7, "run": "two", "stage": "rerank", "results": ["a"]}"#,
            r#"{"query_id": 7, "run": "two", "stage": "final", "results": ["a"]}"#,
        ]),
    );
    let run = grade(
        &wd,
        &[
            "--labels",
            "labels.jsonl",
            "--stage-order",
            "retrieve,rerank,final",
            "-o",
            "out",
            "logs.jsonl",
        ],
    );
    run.expect_code(0);
    assert_table(
        &wd.read_csv("out/stage_loss_per_query.csv"),
        &PER_QUERY_HEADER,
        &csv_rows(&[
            "one,7,t,en,retrieve,rerank,1,1,a",
            "two,7,t,en,rerank,final,1,0,",
        ]),
    );
    let totals = wd.read_csv("out/stage_loss.csv");
    let two: HashMap<String, String> =
        totals.row(&[("run", "two"), ("task", "*"), ("language", "*")]);
    assert_eq!(two["lost_rate"], "0", "{two:?}");
    let one = totals.row(&[("run", "one"), ("task", "*"), ("language", "*")]);
    assert_eq!(one["lost_rate"], "1", "{one:?}");
}
