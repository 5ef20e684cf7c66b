//! Evidence lost between stages (docs/guide.md, Diagnostics), through
//! `rgrade grade --stage-order`: every cell of stage_loss.csv and
//! stage_loss_per_query.csv, and the stdout rows, on a case computed by hand
//! over three stages and three runs (graded labels with judged-irrelevant
//! documents, a no-answer query, queries missing at a stage, an invalid
//! capture, a run without the middle stage, a run with one stage, a stage
//! outside the order); under `--repeats mean|first|last|error` and
//! `--min-rel`; with integer query ids and runs that differ in their stages.

use std::collections::HashMap;

use crate::util::stage_loss::{
    assert_table, csv_rows, loss_table, table_rows, totals_row, PER_QUERY_HEADER, TABLE_TITLE,
    TOTALS_HEADER,
};
use crate::util::{assert_same_lines, grade, text, Workdir};

// ---------------------------------------------------------------------
// A case computed by hand
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
        !run.stderr.contains("was never graded"),
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
// Repeats and --min-rel
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
/// query whose documents are all below it has none to lose (g2: no row). The unnamed run shows as `(unnamed)` on stdout, `(none)` slices
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
// Integer query ids, runs with different stages
// ---------------------------------------------------------------------

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
