//! `rgrade grade` end to end, through the binary.
//!
//! Each test writes its own small inputs (or uses the shipped worked example
//! in `data-samples/seed/`), runs the real binary in a scratch directory and
//! reads the outputs back: CSV into rows, summary.json and rejects.jsonl
//! through serde_json, the stdout table into cells.

use std::io::{BufRead, BufReader, Write as _};
use std::process::Command;
use std::time::Duration;

use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64;
use serde_json::Value;

use crate::util::{
    aggregates_header, assert_cell, assert_counts_add_up, assert_text, count, gzip, metric_columns,
    per_query_header, run_command, seed, text, zstd_compress, Run, Table, Workdir, RUN_TIMEOUT,
};

/// 1 / log2(rank + 1): the nDCG discount at a 1-based rank.
fn discount(rank: u32) -> f64 {
    1.0 / f64::from(rank + 1).log2()
}

/// rejects.jsonl as (file, line, reason), in file order.
fn reject_keys(rejects: &[Value]) -> Vec<(String, u64, String)> {
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
fn in_file(file: &str, rejects: &[(u64, &str)]) -> Vec<(String, u64, String)> {
    rejects
        .iter()
        .map(|(line, reason)| (file.to_string(), *line, reason.to_string()))
        .collect()
}

/// The worked example of README.md, Quick start, grades to the published
/// numbers: 0.833 mean recall@3 and 0.667 MRR@3 on stdout; the per-query
/// values, columns in the contracted order and `missing_at_3 = share_limits`
/// for q_sharing in per_query.csv; the overall and per-task rows of
/// aggregates.csv; summary.json's counts; no reject; exit status 0.
#[test]
fn worked_example_reproduces_the_spec() {
    let wd = Workdir::new("worked_example");
    let run = wd.rgrade(&[
        "grade",
        "--labels",
        &seed("labels.jsonl"),
        "-k",
        "3",
        "-o",
        "out",
        &seed("logs.jsonl"),
    ]);
    run.expect_code(0);

    let table = run.stdout_table();
    let all = &table[&("(unnamed)".to_string(), "final".to_string())]["all"];
    assert_eq!(all["recall@3"], "0.833", "{run}");
    assert_eq!(all["rr@3"], "0.667", "{run}");
    assert_eq!(all["queries"], "3", "{run}");

    let per_query = wd.read_csv("out/per_query.csv");
    assert_eq!(per_query.header, per_query_header(&[3], 3));
    assert_eq!(
        per_query.column("query_id"),
        ["q_export", "q_reset", "q_sharing"]
    );

    // (query, task, n_relevant, first_rel_rank, recall, rr, precision, ndcg, ap, missing)
    let idcg2 = discount(1) + discount(2);
    let expected = [
        ("q_export", "howto", 1, 1, 1.0, 1.0, 1.0 / 3.0, 1.0, 1.0, ""),
        (
            "q_reset",
            "troubleshooting",
            2,
            2,
            1.0,
            0.5,
            2.0 / 3.0,
            (discount(2) + discount(3)) / idcg2,
            (1.0 / 2.0 + 2.0 / 3.0) / 2.0,
            "",
        ),
        (
            "q_sharing",
            "permissions",
            2,
            2,
            0.5,
            0.5,
            1.0 / 3.0,
            discount(2) / idcg2,
            0.5 / 2.0,
            "share_limits",
        ),
    ];
    for (query, task, n_rel, first, recall, rr, precision, ndcg, ap, missing) in expected {
        let row = per_query.row(&[("query_id", query)]);
        for (column, want) in [
            ("run", ""),
            ("stage", "final"),
            ("task", task),
            ("language", "en"),
            ("required", "false"),
            ("status", "ok"),
            ("latency_ms", ""),
            ("context_tokens", ""),
            ("missing_at_3", missing),
        ] {
            assert_text(&row, column, want);
        }
        assert_cell(&row, "n_relevant", f64::from(n_rel));
        assert_cell(&row, "n_results", 3.0);
        assert_cell(&row, "first_rel_rank", f64::from(first));
        assert_cell(&row, "captures", 1.0);
        assert_cell(&row, "recall@3", recall);
        assert_cell(&row, "rr@3", rr);
        assert_cell(&row, "hit@3", 1.0);
        assert_cell(&row, "precision@3", precision);
        assert_cell(&row, "ndcg@3", ndcg);
        assert_cell(&row, "ap@3", ap);
    }

    let aggregates = wd.read_csv("out/aggregates.csv");
    assert_eq!(aggregates.header, aggregates_header(&[3]));
    let slices: Vec<(String, String)> = aggregates
        .column("task")
        .into_iter()
        .zip(aggregates.column("language"))
        .collect();
    let want_slices = [
        ("*", "*"),
        ("howto", "*"),
        ("permissions", "*"),
        ("troubleshooting", "*"),
        ("*", "en"),
        ("howto", "en"),
        ("permissions", "en"),
        ("troubleshooting", "en"),
    ]
    .map(|(t, l)| (t.to_string(), l.to_string()));
    assert_eq!(slices, want_slices, "\n{}", aggregates.dump());
    let overall = aggregates.row(&[("task", "*"), ("language", "*")]);
    assert_cell(&overall, "queries", 3.0);
    assert_cell(&overall, "ok", 3.0);
    assert_cell(&overall, "missing", 0.0);
    assert_cell(&overall, "recall@3", 2.5 / 3.0);
    assert_cell(&overall, "rr@3", 2.0 / 3.0);
    assert_text(&overall, "latency_p50_ms", "");
    for (task, recall, rr) in [
        ("howto", 1.0, 1.0),
        ("permissions", 0.5, 0.5),
        ("troubleshooting", 1.0, 0.5),
    ] {
        let row = aggregates.row(&[("task", task), ("language", "*")]);
        assert_cell(&row, "queries", 1.0);
        assert_cell(&row, "recall@3", recall);
        assert_cell(&row, "rr@3", rr);
    }

    let summary = wd.read_json("out/summary.json");
    for (name, want) in [
        ("labeled", 3),
        ("no_answer", 0),
        ("graded", 3),
        ("records", 3),
        ("blank_lines", 0),
        ("events", 3),
        ("unlabeled_events", 0),
        ("other_stage_events", 0),
        ("rejected", 0),
        ("repeats", 0),
        ("graded_records", 3),
        ("superseded_records", 0),
    ] {
        assert_eq!(count(&summary, name), want, "counts.{name}");
    }
    let recall = summary["overall"][0]["metrics"]["recall@3"].as_f64();
    assert!(
        recall.is_some_and(|r| (r - 2.5 / 3.0).abs() < 1e-9),
        "overall recall@3 in summary.json: {:#}",
        summary["overall"]
    );
    assert_eq!(wd.read("out/rejects.jsonl"), b"", "rejects.jsonl is empty");
}

/// The metric columns follow the cutoffs in the order given, and the
/// missing-evidence column is named for the largest one.
#[test]
fn metric_columns_follow_the_cutoff_order() {
    let wd = Workdir::new("cutoff_order");
    wd.rgrade(&[
        "grade",
        "--labels",
        &seed("labels.jsonl"),
        "-k",
        "10,1,3",
        "-o",
        "out",
        "-q",
        &seed("logs.jsonl"),
    ])
    .expect_code(0);
    let per_query = wd.read_csv("out/per_query.csv");
    assert_eq!(per_query.header, per_query_header(&[10, 1, 3], 10));
    let row = per_query.row(&[("query_id", "q_reset")]);
    assert_cell(&row, "recall@1", 0.0);
    assert_cell(&row, "recall@3", 1.0);
    assert_cell(&row, "precision@10", 0.2);
}

/// Every class of bad JSONL line is rejected with its own code, file and
/// line (blank lines keep their numbers), its record excerpt kept, and the
/// good lines are still graded; `--max-rejects` decides between exit 1
/// (outputs still written) and 0.
#[test]
fn bad_log_lines_are_rejected_and_the_rest_is_graded() {
    let wd = Workdir::new("bad_lines");
    wd.write(
        "labels.jsonl",
        text(&[
            r#"{"query_id": "q1", "relevant": ["a"]}"#,
            r#"{"query_id": "q2", "relevant": ["b"]}"#,
            r#"{"query_id": "q3", "relevant": ["c"]}"#,
        ]),
    );
    let good_and_bad: [&[u8]; 14] = [
        br#"{"query_id": "q1", "results": ["a", "x"]}"#,
        b"not json at all",
        b"{\"query_id\": \"zz\", \"results\": [\"\xff\xfe\"]}",
        b"[1, 2]",
        b"",
        br#"{"results": ["a"]}"#,
        br#"{"query_id": ["q2"], "results": ["b"]}"#,
        br#"{"query_id": "zz"}"#,
        br#"{"query_id": "zz", "results": "a"}"#,
        br#"{"query_id": "zz", "results": [{"score": 1.0}]}"#,
        br#"{"query_id": "zz", "results": ["a"], "latency_ms": "fast"}"#,
        br#"{"query_id": "zz", "results": ["a"], "stage": 7}"#,
        br#"{"query_id": "q2", "results": ["x", "b"]}"#,
        br#"{"query_id": "q3", "results": ["c", "y", "c"]}"#,
    ];
    let mut log = Vec::new();
    for line in good_and_bad {
        log.extend_from_slice(line);
        log.push(b'\n');
    }
    wd.write("logs.jsonl", &log);

    let args = |max: &'static str, out: &'static str| {
        [
            "grade",
            "--labels",
            "labels.jsonl",
            "-k",
            "3",
            "--max-rejects",
            max,
            "-o",
            out,
            "logs.jsonl",
        ]
    };
    let run = wd.rgrade(&args("0", "out"));
    run.expect_code(1).expect_stderr(&["logs.jsonl:2"]);

    let rejects = wd.read_jsonl("out/rejects.jsonl");
    let want = in_file(
        "logs.jsonl",
        &[
            (2, "invalid_json"),
            (3, "invalid_utf8"),
            (4, "not_an_object"),
            (6, "missing_query_id"),
            (7, "bad_query_id"),
            (8, "missing_results"),
            (9, "bad_results"),
            (10, "bad_result"),
            (11, "bad_field"),
            (12, "bad_field"),
            (14, "duplicate_doc"),
        ],
    );
    assert_eq!(reject_keys(&rejects), want);
    for reject in &rejects {
        let line = reject["line"].as_u64().unwrap_or_default() as usize;
        let original = String::from_utf8_lossy(good_and_bad[line - 1]);
        assert_eq!(reject["record"], *original, "record excerpt of {reject}");
        assert!(
            reject["detail"].as_str().is_some_and(|d| !d.is_empty()),
            "a reject explains itself: {reject}"
        );
    }

    let per_query = wd.read_csv("out/per_query.csv");
    let q1 = per_query.row(&[("query_id", "q1")]);
    assert_text(&q1, "status", "ok");
    assert_cell(&q1, "rr@3", 1.0);
    let q2 = per_query.row(&[("query_id", "q2")]);
    assert_text(&q2, "status", "ok");
    assert_cell(&q2, "rr@3", 0.5);
    let q3 = per_query.row(&[("query_id", "q3")]);
    assert_text(&q3, "status", "invalid");
    assert_cell(&q3, "captures", 1.0);
    assert_cell(&q3, "recall@3", 0.0);
    let summary = wd.read_json("out/summary.json");
    assert_eq!(count(&summary, "rejected"), 11);
    assert_eq!(count(&summary, "blank_lines"), 1);
    assert_counts_add_up(&summary);

    wd.rgrade(&args("10", "out10")).expect_code(1);
    assert!(
        wd.exists("out10/per_query.csv"),
        "outputs written on exit 1"
    );
    let run = wd.rgrade(&args("11", "out11"));
    run.expect_code(0);
    assert_eq!(
        wd.read("out11/per_query.csv"),
        wd.read("out/per_query.csv"),
        "the exit status does not change the grades"
    );
}

/// `--duplicate-docs reject` rejects a ranking that lists a doc twice and
/// makes the query invalid; `dedupe` keeps the first occurrence and closes
/// the gap, so later documents move up.
#[test]
fn duplicate_docs_are_rejected_or_deduped() {
    let wd = Workdir::new("duplicate_docs");
    wd.write(
        "labels.jsonl",
        text(&[r#"{"query_id": "q", "relevant": ["b"]}"#]),
    );
    wd.write(
        "logs.jsonl",
        text(&[r#"{"query_id": "q", "results": ["x", "y", "x", "a", "b"]}"#]),
    );
    let grade = |policy: &str, out: &str| {
        wd.rgrade(&[
            "grade",
            "--labels",
            "labels.jsonl",
            "-k",
            "4",
            "--duplicate-docs",
            policy,
            "-o",
            out,
            "logs.jsonl",
        ])
    };

    grade("reject", "rejected").expect_code(1);
    let rejects = wd.read_jsonl("rejected/rejects.jsonl");
    assert_eq!(
        reject_keys(&rejects),
        in_file("logs.jsonl", &[(1, "duplicate_doc")])
    );
    let row = wd
        .read_csv("rejected/per_query.csv")
        .row(&[("query_id", "q")]);
    assert_text(&row, "status", "invalid");
    assert_cell(&row, "recall@4", 0.0);

    grade("dedupe", "deduped").expect_code(0);
    assert_eq!(wd.read("deduped/rejects.jsonl"), b"");
    let row = wd
        .read_csv("deduped/per_query.csv")
        .row(&[("query_id", "q")]);
    assert_text(&row, "status", "ok");
    assert_cell(&row, "n_results", 4.0);
    assert_cell(&row, "first_rel_rank", 4.0);
    assert_cell(&row, "recall@4", 1.0);
    assert_cell(&row, "rr@4", 0.25);
}

/// Under `--repeats error` (the default) every capture of a repeated
/// (run, stage, query) is rejected as `repeated_capture`, each with its
/// line and the first 200 bytes of its record, and the query is invalid
/// while the others are graded.
#[test]
fn repeated_captures_are_rejected_under_repeats_error() {
    let wd = Workdir::new("repeats_error");
    wd.write(
        "labels.jsonl",
        text(&[
            r#"{"query_id": "q1", "relevant": ["a"]}"#,
            r#"{"query_id": "q2", "relevant": ["b"]}"#,
        ]),
    );
    let long = format!(
        r#"{{"query_id": "q1", "results": ["a"], "note": "{}"}}"#,
        "n".repeat(300)
    );
    let third = r#"{"query_id": "q1", "results": ["z", "a"]}"#;
    let log = text(&[&long, r#"{"query_id": "q2", "results": ["b"]}"#, third]);
    wd.write("logs.jsonl", &log);
    wd.write_gz("logs.jsonl.gz", &log);
    // The default policy, the explicit one, and excerpts read back from a
    // compressed file.
    for (flag, out, log) in [
        (None, "default", "logs.jsonl"),
        (Some("error"), "error", "logs.jsonl"),
        (Some("error"), "gz", "logs.jsonl.gz"),
    ] {
        let mut args = vec!["grade", "--labels", "labels.jsonl", "-o", out];
        if let Some(policy) = flag {
            args.extend(["--repeats", policy]);
        }
        args.extend(["--max-rejects", "2", log]);
        wd.rgrade(&args).expect_code(0);

        let rejects = wd.read_jsonl(&format!("{out}/rejects.jsonl"));
        assert_eq!(
            reject_keys(&rejects),
            in_file(log, &[(1, "repeated_capture"), (3, "repeated_capture")])
        );
        assert_eq!(rejects[0]["record"], long[..200], "first 200 bytes");
        assert_eq!(rejects[1]["record"], third);
        let per_query = wd.read_csv(&format!("{out}/per_query.csv"));
        let q1 = per_query.row(&[("query_id", "q1")]);
        assert_text(&q1, "status", "invalid");
        assert_cell(&q1, "captures", 2.0);
        assert_cell(&q1, "recall@10", 0.0);
        assert_text(&q1, "missing_at_10", "a");
        let q2 = per_query.row(&[("query_id", "q2")]);
        assert_text(&q2, "status", "ok");
        let summary = wd.read_json(&format!("{out}/summary.json"));
        assert_eq!(summary["settings"]["repeats"], "error");
        assert_counts_add_up(&summary);
    }
}

/// A repeated capture is known only once every record was read, when its
/// bytes are gone: rgrade reads files again for the excerpt, but standard
/// input cannot be read twice, so there the reject names `-` and the line
/// with an empty `record` (docs/guide.md, Outputs).
#[test]
fn repeated_captures_from_stdin_name_the_line() {
    let wd = Workdir::new("repeats_stdin");
    wd.write(
        "labels.jsonl",
        text(&[r#"{"query_id": "q", "relevant": ["a"]}"#]),
    );
    let lines = [
        r#"{"query_id": "q", "results": ["a"]}"#,
        r#"{"query_id": "q", "results": ["b"]}"#,
    ];
    wd.rgrade_stdin(
        &[
            "grade",
            "--labels",
            "labels.jsonl",
            "--max-rejects",
            "2",
            "-o",
            "out",
            "-",
        ],
        text(&lines).as_bytes(),
    )
    .expect_code(0);
    let rejects = wd.read_jsonl("out/rejects.jsonl");
    assert_eq!(
        reject_keys(&rejects),
        in_file("-", &[(1, "repeated_capture"), (2, "repeated_capture")])
    );
    for reject in &rejects {
        assert_eq!(reject["record"], "", "{reject}");
    }
}

/// A TREC run line with fewer than six fields is `bad_trec_line`, one whose
/// score is not a finite number is `bad_score`, a doc listed twice in a
/// ranking rejects every line of it; the good lines are still graded.
#[test]
fn bad_trec_lines_are_rejected() {
    let wd = Workdir::new("bad_trec");
    wd.write(
        "labels.jsonl",
        text(&[
            r#"{"query_id": "q1", "relevant": ["a"]}"#,
            r#"{"query_id": "q2", "relevant": ["x"]}"#,
        ]),
    );
    let run_lines = [
        "q1 Q0 a 1 2.0 runA",
        "q1 Q0 b 2",
        "q1 Q0 c 3 high runA",
        "q1 Q0 d 4 nan runA",
        "q2 Q0 x 1 1.0 runA",
        "q2 Q0 x 2 0.5 runA",
        "q1 Q0 e 5 inf runA",
    ];
    wd.write("run.trec", text(&run_lines));
    wd.rgrade(&[
        "grade",
        "--labels",
        "labels.jsonl",
        "--max-rejects",
        "6",
        "-o",
        "out",
        "run.trec",
    ])
    .expect_code(0);
    let rejects = wd.read_jsonl("out/rejects.jsonl");
    let want = in_file(
        "run.trec",
        &[
            (2, "bad_trec_line"),
            (3, "bad_score"),
            (4, "bad_score"),
            (5, "duplicate_doc"),
            (6, "duplicate_doc"),
            (7, "bad_score"),
        ],
    );
    assert_eq!(reject_keys(&rejects), want);
    for reject in &rejects {
        let line = reject["line"].as_u64().unwrap_or_default() as usize;
        assert_eq!(reject["record"], run_lines[line - 1], "{reject}");
    }
    let per_query = wd.read_csv("out/per_query.csv");
    let q1 = per_query.row(&[("query_id", "q1")]);
    assert_text(&q1, "run", "runA");
    assert_text(&q1, "status", "ok");
    assert_cell(&q1, "n_results", 1.0);
    assert_cell(&q1, "rr@10", 1.0);
    let q2 = per_query.row(&[("query_id", "q2")]);
    assert_text(&q2, "status", "invalid");
    assert_counts_add_up(&wd.read_json("out/summary.json"));
}

/// On a mixed input — repeats, unlabeled queries, a stage left out, bad
/// JSONL and TREC lines, blank lines, a no-answer query — summary.json
/// accounts for every record under every `--repeats` policy:
/// records = graded + superseded + unlabeled + other stage + rejected,
/// with blank lines counted apart.
#[test]
fn summary_counts_account_for_every_record() {
    let wd = Workdir::new("count_identity");
    wd.write(
        "labels.jsonl",
        text(&[
            r#"{"query_id": "q1", "relevant": ["a"]}"#,
            r#"{"query_id": "q2", "relevant": ["b"]}"#,
            r#"{"query_id": "q3", "relevant": ["c"]}"#,
            r#"{"query_id": "q4", "relevant": []}"#,
        ]),
    );
    wd.write(
        "logs.jsonl",
        text(&[
            r#"{"query_id": "q1", "run": "r", "results": ["a"]}"#,
            "",
            r#"{"query_id": "q1", "run": "r", "results": ["x", "a"]}"#,
            r#"{"query_id": "unlabeled", "run": "r", "results": ["a"]}"#,
            r#"{"query_id": "q2", "run": "r", "stage": "retrieve", "results": ["b"]}"#,
            "{garbage",
            r#"{"query_id": "q3", "run": "r", "results": ["c", "c"]}"#,
            "   ",
            r#"{"query_id": "q4", "run": "r", "results": ["a"]}"#,
        ]),
    );
    wd.write(
        "run.trec",
        text(&[
            "q2 Q0 b 1 1.0 r",
            "q2 Q0 y 2 0.5 r",
            "q9 Q0 b 1 1.0 r",
            "q2 Q0 z 3",
        ]),
    );
    let expected = [
        // (policy, graded_records, superseded_records, rejected)
        ("last", 4, 1, 3),
        ("first", 4, 1, 3),
        ("mean", 5, 0, 3),
        ("error", 3, 0, 5),
    ];
    for (policy, graded, superseded, rejected) in expected {
        let out = format!("out-{policy}");
        wd.rgrade(&[
            "grade",
            "--labels",
            "labels.jsonl",
            "--stage",
            "final",
            "--repeats",
            policy,
            "--max-rejects",
            "10",
            "-o",
            &out,
            "logs.jsonl",
            "run.trec",
        ])
        .expect_code(0);
        let summary = wd.read_json(&format!("{out}/summary.json"));
        assert_counts_add_up(&summary);
        let context = format!("--repeats {policy}: {:#}", summary["counts"]);
        assert_eq!(count(&summary, "records"), 11, "{context}");
        assert_eq!(count(&summary, "blank_lines"), 2, "{context}");
        assert_eq!(count(&summary, "unlabeled_events"), 2, "{context}");
        assert_eq!(count(&summary, "other_stage_events"), 1, "{context}");
        assert_eq!(count(&summary, "graded_records"), graded, "{context}");
        assert_eq!(
            count(&summary, "superseded_records"),
            superseded,
            "{context}"
        );
        assert_eq!(count(&summary, "rejected"), rejected, "{context}");
        assert_eq!(count(&summary, "labeled"), 4, "{context}");
        assert_eq!(count(&summary, "no_answer"), 1, "{context}");
        let rejects = wd.read_jsonl(&format!("{out}/rejects.jsonl"));
        assert_eq!(rejects.len() as u64, rejected, "{context}");
    }
}

/// A repeated capture that is a TREC ranking (several lines) rejects each
/// of its lines under `--repeats error`, so no line is silently dropped and
/// summary.json's counts still add up (docs/guide.md, Outputs).
#[test]
fn a_repeated_trec_ranking_rejects_every_line() {
    let wd = Workdir::new("repeated_trec");
    wd.write(
        "labels.jsonl",
        text(&[r#"{"query_id": "q", "relevant": ["a"]}"#]),
    );
    wd.write(
        "logs.jsonl",
        text(&[r#"{"query_id": "q", "run": "r", "results": ["a"]}"#]),
    );
    wd.write(
        "run.trec",
        text(&["q Q0 a 1 2.0 r", "q Q0 b 2 1.0 r", "q Q0 c 3 0.5 r"]),
    );
    wd.rgrade(&[
        "grade",
        "--labels",
        "labels.jsonl",
        "--max-rejects",
        "10",
        "-o",
        "out",
        "logs.jsonl",
        "run.trec",
    ])
    .expect_code(0);
    let row = wd.read_csv("out/per_query.csv").row(&[("query_id", "q")]);
    assert_text(&row, "status", "invalid");
    let summary = wd.read_json("out/summary.json");
    assert_eq!(count(&summary, "records"), 4);
    let rejects = wd.read_jsonl("out/rejects.jsonl");
    let mut want = in_file("logs.jsonl", &[(1, "repeated_capture")]);
    want.extend(in_file(
        "run.trec",
        &[
            (1, "repeated_capture"),
            (2, "repeated_capture"),
            (3, "repeated_capture"),
        ],
    ));
    assert_eq!(reject_keys(&rejects), want);
    assert_counts_add_up(&summary);
}

/// `--repeats first|last` pick by input order — files in the order given,
/// then line number — across two files, and `mean` averages every
/// capture's metrics, result counts and latencies.
#[test]
fn repeats_follow_input_order_across_files() {
    let wd = Workdir::new("repeats_order");
    wd.write(
        "labels.jsonl",
        text(&[r#"{"query_id": "q", "relevant": ["r"]}"#]),
    );
    // Given as `2.jsonl 1.jsonl`, the captures come in the order A, B, C, D.
    wd.write(
        "2.jsonl",
        text(&[
            r#"{"query_id": "q", "results": ["r", "x", "y"], "latency_ms": 10}"#,
            r#"{"query_id": "q", "results": ["x", "r", "y", "w"], "latency_ms": 20}"#,
        ]),
    );
    wd.write(
        "1.jsonl",
        text(&[
            r#"{"query_id": "q", "results": ["x", "y", "r"], "latency_ms": 30}"#,
            r#"{"query_id": "other", "results": ["r"]}"#,
            r#"{"query_id": "q", "results": ["x", "y", "z"], "latency_ms": 40}"#,
        ]),
    );
    let grade = |policy: &str, files: [&str; 2]| {
        let out = format!("out-{policy}-{}", files[0]);
        let mut args = vec!["grade", "--labels", "labels.jsonl", "-k", "3"];
        args.extend(["--repeats", policy, "-o", out.as_str()]);
        args.extend(files);
        wd.rgrade(&args).expect_code(0);
        let row = wd
            .read_csv(&format!("{out}/per_query.csv"))
            .row(&[("query_id", "q")]);
        (row, wd.read_json(&format!("{out}/summary.json")))
    };

    let (first, summary) = grade("first", ["2.jsonl", "1.jsonl"]);
    assert_cell(&first, "rr@3", 1.0);
    assert_cell(&first, "latency_ms", 10.0);
    assert_text(&first, "missing_at_3", "");
    assert_eq!(count(&summary, "superseded_records"), 3);

    let (last, summary) = grade("last", ["2.jsonl", "1.jsonl"]);
    assert_cell(&last, "rr@3", 0.0);
    assert_cell(&last, "latency_ms", 40.0);
    assert_text(&last, "first_rel_rank", "");
    assert_text(&last, "missing_at_3", "r");
    assert_eq!(count(&summary, "superseded_records"), 3);
    assert_eq!(count(&summary, "graded_records"), 1);

    let (first_swapped, _) = grade("first", ["1.jsonl", "2.jsonl"]);
    assert_cell(&first_swapped, "rr@3", 1.0 / 3.0);
    assert_cell(&first_swapped, "latency_ms", 30.0);
    let (last_swapped, _) = grade("last", ["1.jsonl", "2.jsonl"]);
    assert_cell(&last_swapped, "rr@3", 0.5);
    assert_cell(&last_swapped, "latency_ms", 20.0);

    let (mean, summary) = grade("mean", ["2.jsonl", "1.jsonl"]);
    assert_text(&mean, "status", "ok");
    assert_cell(&mean, "captures", 4.0);
    assert_cell(&mean, "rr@3", (1.0 + 0.5 + 1.0 / 3.0 + 0.0) / 4.0);
    assert_cell(&mean, "recall@3", 0.75);
    assert_cell(&mean, "precision@3", 0.25);
    assert_cell(&mean, "n_results", 3.25);
    assert_cell(&mean, "latency_ms", 25.0);
    assert_cell(&mean, "first_rel_rank", 1.0);
    assert_text(&mean, "missing_at_3", "r");
    assert_eq!(count(&summary, "graded_records"), 4);
    assert_eq!(count(&summary, "superseded_records"), 0);
    assert_eq!(count(&summary, "repeats"), 3);
}

/// Under `--repeats first|last` the `captures` column still counts every
/// capture of the key and summary.json's `repeats` every capture beyond
/// the first, though only one capture is graded (docs/guide.md, Outputs:
/// "`captures` counts every capture of the key").
#[test]
fn first_and_last_still_count_every_capture() {
    let wd = Workdir::new("repeats_captures");
    wd.write(
        "labels.jsonl",
        text(&[r#"{"query_id": "q", "relevant": ["r"]}"#]),
    );
    wd.write(
        "logs.jsonl",
        text(&[
            r#"{"query_id": "q", "results": ["r"]}"#,
            r#"{"query_id": "q", "results": ["x", "r"]}"#,
            r#"{"query_id": "q", "results": ["x"]}"#,
        ]),
    );
    for policy in ["first", "last", "mean"] {
        let out = format!("out-{policy}");
        wd.rgrade(&[
            "grade",
            "--labels",
            "labels.jsonl",
            "--repeats",
            policy,
            "-o",
            &out,
            "logs.jsonl",
        ])
        .expect_code(0);
        let row = wd
            .read_csv(&format!("{out}/per_query.csv"))
            .row(&[("query_id", "q")]);
        assert_cell(&row, "captures", 3.0);
        let summary = wd.read_json(&format!("{out}/summary.json"));
        assert_eq!(count(&summary, "repeats"), 2, "--repeats {policy}");
    }
}

/// `--missing fail` scores a labeled query without capture 0 and counts it
/// in the means; `skip` leaves its cells empty and it out of the means.
/// `invalid` always counts, `no_answer` never does (empty cells, and a
/// slice of only no-answer queries has no mean).
#[test]
fn missing_fail_and_skip() {
    let wd = Workdir::new("missing_policy");
    wd.write(
        "labels.jsonl",
        text(&[
            r#"{"query_id": "q_ok", "relevant": ["a"], "task": "t1"}"#,
            r#"{"query_id": "q_missing", "relevant": ["b"], "task": "t1"}"#,
            r#"{"query_id": "q_invalid", "relevant": ["c"], "task": "t1"}"#,
            r#"{"query_id": "q_none", "relevant": [], "task": "chitchat"}"#,
        ]),
    );
    wd.write(
        "logs.jsonl",
        text(&[
            r#"{"query_id": "q_ok", "results": ["a"]}"#,
            r#"{"query_id": "q_invalid", "results": ["c", "c"]}"#,
            r#"{"query_id": "q_none", "results": ["a"]}"#,
        ]),
    );
    let grade = |policy: &str| {
        let out = format!("out-{policy}");
        let run = wd.rgrade(&[
            "grade",
            "--labels",
            "labels.jsonl",
            "-k",
            "1",
            "--missing",
            policy,
            "--max-rejects",
            "1",
            "-o",
            &out,
            "logs.jsonl",
        ]);
        run.expect_code(0);
        let per_query = wd.read_csv(&format!("{out}/per_query.csv"));
        let aggregates = wd.read_csv(&format!("{out}/aggregates.csv"));
        (run, per_query, aggregates)
    };

    let (run, per_query, aggregates) = grade("fail");
    let missing = per_query.row(&[("query_id", "q_missing")]);
    assert_text(&missing, "status", "missing");
    assert_cell(&missing, "captures", 0.0);
    assert_text(&missing, "n_results", "");
    assert_text(&missing, "first_rel_rank", "");
    for metric in metric_columns(&[1]) {
        assert_cell(&missing, &metric, 0.0);
    }
    assert_text(&missing, "missing_at_1", "b");
    let invalid = per_query.row(&[("query_id", "q_invalid")]);
    assert_text(&invalid, "status", "invalid");
    assert_cell(&invalid, "recall@1", 0.0);
    let none = per_query.row(&[("query_id", "q_none")]);
    assert_text(&none, "status", "no_answer");
    assert_cell(&none, "n_relevant", 0.0);
    for metric in metric_columns(&[1]) {
        assert_text(&none, &metric, "");
    }
    let overall = aggregates.row(&[("task", "*"), ("language", "*")]);
    for (column, want) in [
        ("queries", 4.0),
        ("ok", 1.0),
        ("missing", 1.0),
        ("invalid", 1.0),
        ("no_answer", 1.0),
        ("recall@1", 1.0 / 3.0),
    ] {
        assert_cell(&overall, column, want);
    }
    let chitchat = aggregates.row(&[("task", "chitchat"), ("language", "*")]);
    assert_cell(&chitchat, "no_answer", 1.0);
    assert_text(&chitchat, "recall@1", "");
    let stdout = run.stdout_table();
    let slices = &stdout[&("(unnamed)".to_string(), "final".to_string())];
    assert_eq!(slices["task=chitchat"]["recall@1"], "-", "{run}");
    assert_eq!(slices["all"]["recall@1"], "0.333", "{run}");

    let (_, per_query, aggregates) = grade("skip");
    let missing = per_query.row(&[("query_id", "q_missing")]);
    assert_text(&missing, "status", "missing");
    for metric in metric_columns(&[1]) {
        assert_text(&missing, &metric, "");
    }
    let overall = aggregates.row(&[("task", "*"), ("language", "*")]);
    assert_cell(&overall, "missing", 1.0);
    assert_cell(&overall, "recall@1", 0.5);
    let t1 = aggregates.row(&[("task", "t1"), ("language", "*")]);
    assert_cell(&t1, "recall@1", 0.5);
}

/// `--min-rel 2` makes only grades >= 2 relevant for recall, rr, hit,
/// precision, ap and missing_at_k, while nDCG keeps the raw grades; a query
/// left with no relevant document becomes `no_answer`.
#[test]
fn min_rel_applies_to_relevance_but_not_to_ndcg_gains() {
    let wd = Workdir::new("min_rel");
    wd.write(
        "labels.jsonl",
        text(&[
            r#"{"query_id": "q", "relevant": {"a": 2, "b": 1, "c": 3, "n": 0}}"#,
            r#"{"query_id": "q_low", "relevant": {"d": 1}}"#,
        ]),
    );
    wd.write(
        "logs.jsonl",
        text(&[
            r#"{"query_id": "q", "results": ["b", "a", "n", "c"]}"#,
            r#"{"query_id": "q_low", "results": ["d"]}"#,
        ]),
    );
    let grade = |min_rel: &str| {
        let out = format!("out-{min_rel}");
        wd.rgrade(&[
            "grade",
            "--labels",
            "labels.jsonl",
            "-k",
            "3",
            "--min-rel",
            min_rel,
            "-o",
            &out,
            "logs.jsonl",
        ])
        .expect_code(0);
        wd.read_csv(&format!("{out}/per_query.csv"))
    };
    // Gains 1 (b) and 2 (a) at ranks 1 and 2; ideal 3, 2, 1.
    let ndcg = (1.0 * discount(1) + 2.0 * discount(2))
        / (3.0 * discount(1) + 2.0 * discount(2) + 1.0 * discount(3));

    let one = grade("1");
    let q = one.row(&[("query_id", "q")]);
    assert_cell(&q, "n_relevant", 3.0);
    assert_cell(&q, "recall@3", 2.0 / 3.0);
    assert_cell(&q, "rr@3", 1.0);
    assert_cell(&q, "precision@3", 2.0 / 3.0);
    assert_cell(&q, "ap@3", (1.0 + 1.0) / 3.0);
    assert_cell(&q, "ndcg@3", ndcg);
    assert_text(&q, "missing_at_3", "c");
    assert_text(&one.row(&[("query_id", "q_low")]), "status", "ok");

    let two = grade("2");
    let q = two.row(&[("query_id", "q")]);
    assert_cell(&q, "n_relevant", 2.0);
    assert_cell(&q, "first_rel_rank", 2.0);
    assert_cell(&q, "recall@3", 0.5);
    assert_cell(&q, "rr@3", 0.5);
    assert_cell(&q, "hit@3", 1.0);
    assert_cell(&q, "precision@3", 1.0 / 3.0);
    assert_cell(&q, "ap@3", 0.5 / 2.0);
    assert_cell(&q, "ndcg@3", ndcg);
    assert_text(&q, "missing_at_3", "c");
    let low = two.row(&[("query_id", "q_low")]);
    assert_text(&low, "status", "no_answer");
    assert_text(&low, "recall@3", "");
}

/// Several runs and stages give rows sorted by run, stage and query_id in
/// byte order; `--stage` (repeatable) grades only the stages named and
/// counts the rest as other-stage events; `--meta` lands in summary.json.
#[test]
fn stages_runs_sorting_and_meta() {
    let wd = Workdir::new("stages_runs");
    wd.write(
        "labels.jsonl",
        text(&[
            r#"{"query_id": "q2", "relevant": ["a"]}"#,
            r#"{"query_id": "q10", "relevant": ["a"]}"#,
            r#"{"query_id": "q1", "relevant": ["a"]}"#,
        ]),
    );
    wd.write(
        "logs.jsonl",
        text(&[
            r#"{"query_id": "q2", "run": "zeta", "stage": "retrieve", "results": ["a"]}"#,
            r#"{"query_id": "q1", "run": "alpha", "stage": "rerank", "results": ["a"]}"#,
            r#"{"query_id": "q10", "run": "alpha", "stage": "final", "results": ["x", "a"]}"#,
            r#"{"query_id": "q1", "results": ["a"]}"#,
            r#"{"query_id": "q2", "run": "zeta", "stage": "final", "results": ["a"]}"#,
            r#"{"query_id": "q1", "run": "Zeta", "stage": "final", "results": ["a"]}"#,
        ]),
    );
    let queries = ["q1", "q10", "q2"];
    let keys = |table: &Table| -> Vec<(String, String, String)> {
        table
            .records()
            .into_iter()
            .map(|r| (r["run"].clone(), r["stage"].clone(), r["query_id"].clone()))
            .collect()
    };
    let expand = |pairs: &[(&str, &str)]| -> Vec<(String, String, String)> {
        pairs
            .iter()
            .flat_map(|(r, s)| queries.map(|q| (r.to_string(), s.to_string(), q.to_string())))
            .collect()
    };

    wd.rgrade(&[
        "grade",
        "--labels",
        "labels.jsonl",
        "--meta",
        "snapshot=2024-06-01",
        "--meta",
        "retriever=bm25 k1=0.9",
        "-o",
        "all",
        "logs.jsonl",
    ])
    .expect_code(0);
    let all_pairs = [
        ("", "final"),
        ("Zeta", "final"),
        ("alpha", "final"),
        ("alpha", "rerank"),
        ("zeta", "final"),
        ("zeta", "retrieve"),
    ];
    let per_query = wd.read_csv("all/per_query.csv");
    assert_eq!(keys(&per_query), expand(&all_pairs));
    let row = per_query.row(&[("run", "alpha"), ("stage", "final"), ("query_id", "q10")]);
    assert_cell(&row, "rr@10", 0.5);
    let row = per_query.row(&[("run", "alpha"), ("stage", "final"), ("query_id", "q1")]);
    assert_text(&row, "status", "missing");
    let aggregates = wd.read_csv("all/aggregates.csv");
    let overall: Vec<(String, String)> = aggregates
        .records()
        .into_iter()
        .filter(|r| r["task"] == "*" && r["language"] == "*")
        .map(|r| (r["run"].clone(), r["stage"].clone()))
        .collect();
    let want: Vec<(String, String)> = all_pairs
        .iter()
        .map(|(r, s)| (r.to_string(), s.to_string()))
        .collect();
    assert_eq!(overall, want, "overall rows of aggregates.csv");
    let summary = wd.read_json("all/summary.json");
    let meta = serde_json::json!({"snapshot": "2024-06-01", "retriever": "bm25 k1=0.9"});
    assert_eq!(summary["meta"], meta);
    assert_eq!(count(&summary, "other_stage_events"), 0);

    wd.rgrade(&[
        "grade",
        "--labels",
        "labels.jsonl",
        "--stage",
        "final",
        "--stage",
        "rerank",
        "-o",
        "two",
        "logs.jsonl",
    ])
    .expect_code(0);
    let per_query = wd.read_csv("two/per_query.csv");
    assert_eq!(
        keys(&per_query),
        expand(&[
            ("", "final"),
            ("Zeta", "final"),
            ("alpha", "final"),
            ("alpha", "rerank"),
            ("zeta", "final"),
        ])
    );
    let summary = wd.read_json("two/summary.json");
    assert_eq!(count(&summary, "other_stage_events"), 1);
    assert_eq!(
        summary["settings"]["stages"],
        serde_json::json!(["final", "rerank"])
    );

    wd.rgrade(&[
        "grade",
        "--labels",
        "labels.jsonl",
        "--stage",
        "retrieve",
        "-o",
        "retrieve",
        "logs.jsonl",
    ])
    .expect_code(0);
    let per_query = wd.read_csv("retrieve/per_query.csv");
    assert_eq!(keys(&per_query), expand(&[("zeta", "retrieve")]));
    let summary = wd.read_json("retrieve/summary.json");
    assert_eq!(count(&summary, "other_stage_events"), 5);
    assert_counts_add_up(&summary);
}

/// A TREC run is grouped by query across the file, ranked by score
/// descending with ties broken by doc id descending in byte order (as
/// trec_eval), the rank column ignored, fields past the sixth ignored;
/// the tag is the run, the stage `final`, and `#` is part of a doc id.
#[test]
fn trec_runs_are_ranked_like_trec_eval() {
    let wd = Workdir::new("trec_run");
    wd.write(
        "labels.jsonl",
        text(&[
            r#"{"query_id": "q1", "relevant": ["Zeta", "msmarco#7"]}"#,
            r#"{"query_id": "q2", "relevant": ["x"]}"#,
        ]),
    );
    wd.write(
        "run.trec",
        text(&[
            "q1 Q0 alpha 4 1.0 myrun",
            "q2 Q0 x 1 -1.5 myrun",
            "q1\tQ0\tZeta\t3\t1.0\tmyrun",
            "q1  Q0  msmarco#7 2 0.5 myrun extra fields",
            "q2 Q0 y 2 -1.0 myrun",
            "q1 Q0 top 1 3e0 myrun",
        ]),
    );
    wd.rgrade(&[
        "grade",
        "--labels",
        "labels.jsonl",
        "-k",
        "3",
        "-o",
        "out",
        "run.trec",
    ])
    .expect_code(0);
    // q1 ranks top (3.0), then the 1.0 tie alpha before Zeta (byte order
    // descending: 'a' > 'Z'), then msmarco#7 (0.5): relevant at ranks 3 and 4.
    let per_query = wd.read_csv("out/per_query.csv");
    let q1 = per_query.row(&[("query_id", "q1")]);
    assert_text(&q1, "run", "myrun");
    assert_text(&q1, "stage", "final");
    assert_text(&q1, "status", "ok");
    assert_cell(&q1, "n_results", 4.0);
    assert_cell(&q1, "first_rel_rank", 3.0);
    assert_cell(&q1, "recall@3", 0.5);
    assert_cell(&q1, "rr@3", 1.0 / 3.0);
    assert_cell(&q1, "precision@3", 1.0 / 3.0);
    assert_cell(&q1, "ap@3", (1.0 / 3.0) / 2.0);
    assert_cell(&q1, "ndcg@3", discount(3) / (discount(1) + discount(2)));
    assert_text(&q1, "missing_at_3", "msmarco#7");
    let q2 = per_query.row(&[("query_id", "q2")]);
    assert_cell(&q2, "first_rel_rank", 2.0);
    assert_cell(&q2, "rr@3", 0.5);
    let summary = wd.read_json("out/summary.json");
    assert_eq!(count(&summary, "records"), 6);
    assert_eq!(count(&summary, "graded_records"), 6);
    assert_eq!(count(&summary, "rejected"), 0);
}

/// A TREC run of several 1 MB blocks grades the same whether each query's
/// lines are together (ranked in the block that holds them, or held when
/// at a block's edge), some are far apart in the file or split over two
/// files (read a second time), or it comes on standard input (all held).
#[test]
fn a_long_trec_run_grades_the_same_however_its_lines_are_laid_out() {
    const QUERIES: usize = 2_000;
    const RESULTS: usize = 40;
    let wd = Workdir::new("trec_layouts");
    let mut rng = Pcg64::seed_from_u64(7);
    let mut labels = String::new();
    let mut queries: Vec<Vec<String>> = Vec::new();
    for q in 0..QUERIES {
        labels.push_str(&format!(
            "{{\"query_id\": \"q{q:04}\", \"relevant\": {{\"d{q}_3\": 2, \"d{q}_{}\": 1}}}}\n",
            rng.random_range(4..2 * RESULTS)
        ));
        let lines = (0..RESULTS)
            .map(|d| {
                // Few distinct scores: many ties, broken by doc id.
                let score = f64::from(rng.random_range(0..8u8)) / 4.0;
                format!("q{q:04} Q0 d{q}_{d} {d} {score} run\n")
            })
            .collect();
        queries.push(lines);
    }
    // A doc twice in one ranking: that query's lines are all rejected.
    queries[700][5] = queries[700][9].clone();
    wd.write("labels.jsonl", &labels);

    let together: String = queries.iter().flatten().cloned().collect();
    assert!(together.len() > 2 << 20, "{} bytes", together.len());
    wd.write("together.trec", &together);
    // Every 50th query's first lines moved to the end of the file.
    let mut far_apart = String::new();
    let mut moved = String::new();
    for (q, lines) in queries.iter().enumerate() {
        let (head, tail) = lines.split_at(if q % 50 == 0 { 10 } else { 0 });
        moved.extend(head.iter().cloned());
        far_apart.extend(tail.iter().cloned());
    }
    far_apart.push_str(&moved);
    wd.write("far_apart.trec", &far_apart);
    // Each query's first half in one file, the rest in the other.
    let (first, second): (String, String) = queries
        .iter()
        .map(|lines| {
            let (a, b) = lines.split_at(RESULTS / 2);
            (a.concat(), b.concat())
        })
        .unzip();
    wd.write("split/1.trec", &first);
    wd.write("split/2.trec", &second);

    let grade = |out: &str, logs: &[&str]| {
        let mut args = vec!["grade", "--labels", "labels.jsonl", "-k", "5,20", "-o", out];
        args.extend(logs);
        wd.rgrade(&args).expect_code(1);
    };
    grade("together", &["together.trec"]);
    grade("far_apart", &["far_apart.trec"]);
    grade("split", &["split/1.trec", "split/2.trec"]);
    wd.rgrade_stdin(
        &[
            "grade",
            "--labels",
            "labels.jsonl",
            "-k",
            "5,20",
            "-o",
            "stdin",
            "-",
        ],
        together.as_bytes(),
    )
    .expect_code(1);

    let want = wd.read("together/per_query.csv");
    let q700 = wd.read_csv("together/per_query.csv");
    assert_text(&q700.row(&[("query_id", "q0700")]), "status", "invalid");
    assert_text(&q700.row(&[("query_id", "q0701")]), "status", "ok");
    for layout in ["far_apart", "split", "stdin"] {
        assert_eq!(
            wd.read(&format!("{layout}/per_query.csv")),
            want,
            "{layout} grades like the run with each query's lines together"
        );
        let summary = wd.read_json(&format!("{layout}/summary.json"));
        assert_eq!(count(&summary, "records"), (QUERIES * RESULTS) as u64);
        assert_eq!(count(&summary, "rejected"), RESULTS as u64, "{layout}");
        assert_counts_add_up(&summary);
    }
    let lines = |layout: &str| {
        let rejects = wd.read_jsonl(&format!("{layout}/rejects.jsonl"));
        reject_keys(&rejects)
            .into_iter()
            .map(|(_, line, reason)| (line, reason))
            .collect::<Vec<_>>()
    };
    let first_rejected = (700 * RESULTS + 1) as u64;
    assert_eq!(
        lines("together")[0],
        (first_rejected, "duplicate_doc".to_string())
    );
    assert_eq!(lines("stdin"), lines("together"));
}

/// A TREC ranking ranked early in one file and found in another, read a
/// second time, meets a JSONL capture of the same (run, stage, query) as
/// any repeat does; with the JSONL log on standard input, which cannot be
/// read twice, every TREC line is held instead, and the outputs agree.
#[test]
fn a_trec_ranking_read_twice_is_a_repeat_of_a_jsonl_capture() {
    let wd = Workdir::new("trec_read_twice_repeat");
    wd.write(
        "labels.jsonl",
        text(&[
            r#"{"query_id": "q1", "relevant": ["a"]}"#,
            r#"{"query_id": "q2", "relevant": ["b", "c"]}"#,
            r#"{"query_id": "q3", "relevant": ["d"]}"#,
        ]),
    );
    // q2 lies whole in the middle of a.trec, so it is ranked there, and
    // b.trec has more of it.
    wd.write(
        "a.trec",
        text(&[
            "q1 Q0 a 1 2.0 t",
            "q1 Q0 x 2 1.0 t",
            "q2 Q0 x 1 3.0 t",
            "q2 Q0 c 2 2.0 t",
            "q2 Q0 y 3 1.0 t",
            "q3 Q0 d 1 1.0 t",
            "q3 Q0 z 2 0.5 t",
        ]),
    );
    wd.write(
        "b.trec",
        text(&[
            "q2 Q0 b 4 2.5 t",
            "q2 Q0 w 5 0.1 t",
            "q1 Q0 v 3 0.2 t",
            "q1 Q0 u 4 0.1 t",
        ]),
    );
    let jsonl = text(&[r#"{"query_id": "q2", "run": "t", "results": ["b", "c"]}"#]);
    wd.write("c.jsonl", &jsonl);

    for repeats in ["error", "first", "last", "mean"] {
        let args = |out: &str, last: &str| {
            let args = [
                "grade",
                "--labels",
                "labels.jsonl",
                "-k",
                "3",
                "--repeats",
                repeats,
            ];
            let mut args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
            args.extend(["-o", out, "a.trec", "b.trec", last].map(String::from));
            args
        };
        let code = if repeats == "error" { 1 } else { 0 };
        let files = args(&format!("files-{repeats}"), "c.jsonl");
        let files: Vec<&str> = files.iter().map(String::as_str).collect();
        wd.rgrade(&files).expect_code(code);
        let piped = args(&format!("piped-{repeats}"), "-");
        let piped: Vec<&str> = piped.iter().map(String::as_str).collect();
        wd.rgrade_stdin(&piped, jsonl.as_bytes()).expect_code(code);

        let per_query = wd.read(&format!("files-{repeats}/per_query.csv"));
        assert_eq!(
            wd.read(&format!("piped-{repeats}/per_query.csv")),
            per_query,
            "--repeats {repeats}: held or read twice, the same grades"
        );
        let lines = |out: &str| {
            let rejects = wd.read_jsonl(&format!("{out}-{repeats}/rejects.jsonl"));
            let keys = reject_keys(&rejects).into_iter();
            keys.map(|(_, line, reason)| (line, reason))
                .collect::<Vec<_>>()
        };
        assert_eq!(lines("piped"), lines("files"), "--repeats {repeats}");
        let table = wd.read_csv(&format!("files-{repeats}/per_query.csv"));
        let q2 = table.row(&[("query_id", "q2")]);
        match repeats {
            "error" => {
                assert_text(&q2, "status", "invalid");
                let repeated = |file: &str, lines: &[u64]| {
                    let rejects: Vec<(u64, &str)> =
                        lines.iter().map(|&l| (l, "repeated_capture")).collect();
                    in_file(file, &rejects)
                };
                let mut want = repeated("a.trec", &[3, 4, 5]);
                want.extend(repeated("b.trec", &[1, 2]));
                want.extend(repeated("c.jsonl", &[1]));
                let rejects = wd.read_jsonl("files-error/rejects.jsonl");
                assert_eq!(reject_keys(&rejects), want, "every line of both captures");
            }
            // The TREC ranking (x 3.0, b 2.5, c 2.0, y, w) starts in a.trec,
            // before the JSONL capture (b, c).
            "first" => assert_cell(&q2, "rr@3", 0.5),
            "last" => assert_cell(&q2, "rr@3", 1.0),
            _ => assert_cell(&q2, "rr@3", 0.75),
        }
        let q1 = table.row(&[("query_id", "q1")]);
        assert_cell(&q1, "n_results", 4.0);
    }
}

/// The same answer key written as JSONL, TREC qrels and CSV grades to the
/// same per_query.csv, no-answer queries and `#` in doc ids included; with
/// task, language and required, JSONL and CSV agree too.
#[test]
fn label_formats_agree() {
    let wd = Workdir::new("label_formats");
    wd.write(
        "labels.jsonl",
        text(&[
            r#"{"query_id": "q1", "relevant": {"a": 2, "b": 1}}"#,
            r#"{"query_id": "q2", "relevant": ["c"]}"#,
            r#"{"query_id": "q3", "relevant": []}"#,
            r#"{"query_id": "q4", "relevant": ["d#1"]}"#,
        ]),
    );
    wd.write(
        "qrels.txt",
        text(&[
            "q1 0 a 2",
            "q1 0 b 1",
            "q2 0 c 1",
            "q3 0 zz 0",
            "q4\t0\td#1\t1",
        ]),
    );
    wd.write(
        "labels.csv",
        text(&[
            "query_id,doc_id,grade",
            "q1,a,2",
            "q1,b,1",
            "q2,c,1",
            "q3,,",
            "q4,d#1,1",
        ]),
    );
    wd.write(
        "logs.jsonl",
        text(&[
            r#"{"query_id": "q1", "results": ["b", "a", "c"]}"#,
            r#"{"query_id": "q2", "results": ["c"]}"#,
            r#"{"query_id": "q3", "results": ["a"]}"#,
            r#"{"query_id": "q4", "results": ["x", "d#1"]}"#,
        ]),
    );
    let grade = |labels: &str, out: &str| {
        wd.rgrade(&[
            "grade",
            "--labels",
            labels,
            "-k",
            "1,3",
            "-o",
            out,
            "logs.jsonl",
        ])
        .expect_code(0);
        wd.read(&format!("{out}/per_query.csv"))
    };
    let jsonl = grade("labels.jsonl", "from-jsonl");
    let per_query = wd.read_csv("from-jsonl/per_query.csv");
    assert_eq!(
        per_query.column("status"),
        ["ok", "ok", "no_answer", "ok"],
        "\n{}",
        per_query.dump()
    );
    assert_cell(&per_query.row(&[("query_id", "q4")]), "rr@3", 0.5);
    assert_eq!(
        String::from_utf8_lossy(&grade("qrels.txt", "from-qrels")),
        String::from_utf8_lossy(&jsonl),
        "qrels vs JSONL"
    );
    assert_eq!(
        String::from_utf8_lossy(&grade("labels.csv", "from-csv")),
        String::from_utf8_lossy(&jsonl),
        "CSV vs JSONL"
    );
    let formats: Vec<Value> = ["from-jsonl", "from-qrels", "from-csv"]
        .iter()
        .map(|out| wd.read_json(&format!("{out}/summary.json"))["labels"]["format"].clone())
        .collect();
    assert_eq!(formats, ["jsonl", "trec", "csv"]);

    wd.write(
        "sliced.jsonl",
        text(&[
            r#"{"query_id": "q1", "relevant": ["a"], "task": "howto", "language": "de", "required": true}"#,
            r#"{"query_id": "q2", "relevant": [], "task": "chitchat", "language": "en"}"#,
        ]),
    );
    wd.write(
        "sliced.csv",
        text(&[
            "query_id,doc_id,grade,task,language,required",
            "q1,a,1,howto,de,true",
            "q2,,,chitchat,en,false",
        ]),
    );
    let from_jsonl = grade("sliced.jsonl", "sliced-jsonl");
    assert_eq!(
        String::from_utf8_lossy(&grade("sliced.csv", "sliced-csv")),
        String::from_utf8_lossy(&from_jsonl)
    );
    assert_eq!(
        wd.read("sliced-csv/aggregates.csv"),
        wd.read("sliced-jsonl/aggregates.csv")
    );
    let q1 = wd
        .read_csv("sliced-csv/per_query.csv")
        .row(&[("query_id", "q1")]);
    assert_text(&q1, "task", "howto");
    assert_text(&q1, "language", "de");
    assert_text(&q1, "required", "true");
}

/// Invalid labels stop rgrade before grading (exit 2, no output written)
/// with a message naming `file:line`: a bad line in each format, a query
/// labeled twice (naming both lines), a file with no labeled query, a
/// missing file; `-k 0` is a usage error.
#[test]
fn invalid_labels_and_cutoffs_exit_2_naming_the_place() {
    let wd = Workdir::new("label_errors");
    wd.write(
        "logs.jsonl",
        text(&[r#"{"query_id": "q1", "results": ["a"]}"#]),
    );
    let cases: [(&str, String, &[&str]); 6] = [
        (
            "bad.jsonl",
            text(&[r#"{"query_id": "q1", "relevant": ["a"]}"#, "{oops"]),
            &["bad.jsonl:2:"],
        ),
        (
            "twice.jsonl",
            text(&[
                r#"{"query_id": "q1", "relevant": ["a"]}"#,
                r#"{"query_id": "q2", "relevant": ["b"]}"#,
                r#"{"query_id": "q1", "relevant": ["c"]}"#,
            ]),
            &["twice.jsonl:3:", "q1", "line 1"],
        ),
        (
            "qrels.txt",
            text(&["q1 0 a 1", "q1 0 b 1", "q1 0 c"]),
            &["qrels.txt:3:"],
        ),
        (
            "labels.csv",
            text(&["query_id,doc_id,grade", "q1,a,1", "q1,b,high"]),
            &["labels.csv:3:", "high"],
        ),
        (
            "blank.txt",
            text(&["", "  ", ""]),
            &["blank.txt", "no labeled query"],
        ),
        (
            "no_relevant_key.jsonl",
            text(&[r#"{"query_id": "q1"}"#]),
            &["no_relevant_key.jsonl:1:"],
        ),
    ];
    for (name, contents, needles) in cases {
        wd.write(name, contents);
        let out = format!("out-{name}");
        wd.rgrade(&["grade", "--labels", name, "-o", &out, "logs.jsonl"])
            .expect_code(2)
            .expect_stderr(needles);
        assert!(
            !wd.exists(&format!("{out}/per_query.csv")),
            "{name}: nothing graded"
        );
    }
    wd.rgrade(&["grade", "--labels", "nowhere.jsonl", "logs.jsonl"])
        .expect_code(2)
        .expect_stderr(&["nowhere.jsonl"]);
    wd.write(
        "ok.jsonl",
        text(&[r#"{"query_id": "q1", "relevant": ["a"]}"#]),
    );
    wd.rgrade(&[
        "grade",
        "--labels",
        "ok.jsonl",
        "-k",
        "3,0",
        "-o",
        "k0",
        "logs.jsonl",
    ])
    .expect_code(2)
    .expect_stderr(&["'0'"]);
    assert!(!wd.exists("k0"), "-k 0 grades nothing");
}

/// gzip and zstd logs, named `.jsonl`, `.jsonl.gz`/`.jsonl.zst` or without
/// extension, concatenated members and frames included, are recognised by
/// their magic bytes and grade exactly like the plain file; a truncated
/// stream is an error naming the file (exit 2).
#[test]
fn compressed_logs_are_recognised_by_magic_bytes() {
    let wd = Workdir::new("compressed");
    let plain = std::fs::read(seed("logs.jsonl")).expect("the seed logs ship with the crate");
    let half = plain
        .iter()
        .position(|&b| b == b'\n')
        .map_or(plain.len(), |i| i + 1);
    wd.write("plain.jsonl", &plain);
    wd.write_gz("gz-named.jsonl", &plain);
    wd.write_gz("gz-noext", &plain);
    wd.write_gz("proper.jsonl.gz", &plain);
    wd.write_zst("zst-named.jsonl", &plain);
    wd.write_zst("zst-noext", &plain);
    wd.write_zst("proper.jsonl.zst", &plain);
    let mut members = gzip(&plain[..half]);
    members.extend(gzip(&plain[half..]));
    wd.write("members.jsonl.gz", members);
    let mut frames = zstd_compress(&plain[..half]);
    frames.extend(zstd_compress(&plain[half..]));
    wd.write("frames.jsonl.zst", frames);

    let grade = |log: &str| {
        let out = format!("out-{log}");
        let run = wd.rgrade(&[
            "grade",
            "--labels",
            &seed("labels.jsonl"),
            "-k",
            "3",
            "-o",
            &out,
            log,
        ]);
        (run, out)
    };
    let (run, _) = grade("plain.jsonl");
    run.expect_code(0);
    let expected = wd.read("out-plain.jsonl/per_query.csv");
    for log in [
        "gz-named.jsonl",
        "gz-noext",
        "proper.jsonl.gz",
        "zst-named.jsonl",
        "zst-noext",
        "proper.jsonl.zst",
        "members.jsonl.gz",
        "frames.jsonl.zst",
    ] {
        let (run, out) = grade(log);
        run.expect_code(0);
        assert_eq!(
            String::from_utf8_lossy(&wd.read(&format!("{out}/per_query.csv"))),
            String::from_utf8_lossy(&expected),
            "{log} grades like the plain file\n{run}"
        );
        let input = &wd.read_json(&format!("{out}/summary.json"))["inputs"][0];
        assert_eq!(input["decoded_bytes"], plain.len(), "{log}: {input}");
        assert_eq!(input["bytes"], wd.read(log).len(), "{log}: {input}");
    }

    let gz = gzip(&plain);
    wd.write("cut.jsonl.gz", &gz[..gz.len() / 2]);
    let zst = zstd_compress(&plain);
    wd.write("cut.jsonl.zst", &zst[..zst.len() / 2]);
    for log in ["cut.jsonl.gz", "cut.jsonl.zst"] {
        let (run, out) = grade(log);
        run.expect_code(2).expect_stderr(&[log]);
        assert!(
            !wd.exists(&format!("{out}/per_query.csv")),
            "{log}: nothing graded"
        );
    }
}

/// An empty or missing log file is an error naming it (exit 2); `-` reads
/// standard input; a directory is walked in sorted order for the log file
/// names only, other files ignored.
#[test]
fn log_inputs_files_stdin_and_directories() {
    let wd = Workdir::new("log_inputs");
    let labels = seed("labels.jsonl");
    let plain = std::fs::read(seed("logs.jsonl")).expect("the seed logs ship with the crate");
    wd.write("empty.jsonl", "");
    wd.write("plain.jsonl", &plain);
    for (log, needle) in [("empty.jsonl", "empty.jsonl"), ("nope.jsonl", "nope.jsonl")] {
        wd.rgrade(&[
            "grade",
            "--labels",
            &labels,
            "-o",
            "bad",
            "plain.jsonl",
            log,
        ])
        .expect_code(2)
        .expect_stderr(&[needle]);
        assert!(!wd.exists("bad/per_query.csv"), "{log}: nothing graded");
    }
    wd.rgrade_stdin(&["grade", "--labels", &labels, "-"], b"")
        .expect_code(2);

    wd.rgrade(&[
        "grade",
        "--labels",
        &labels,
        "-k",
        "3",
        "-o",
        "file",
        "plain.jsonl",
    ])
    .expect_code(0);
    wd.rgrade_stdin(
        &["grade", "--labels", &labels, "-k", "3", "-o", "stdin", "-"],
        &plain,
    )
    .expect_code(0);
    assert_eq!(
        wd.read("stdin/per_query.csv"),
        wd.read("file/per_query.csv"),
        "stdin grades like the file"
    );
    assert_eq!(wd.read_json("stdin/summary.json")["inputs"][0]["path"], "-");

    // One capture per file; the unnamed run in JSONL, run "t" in TREC.
    let event = |q: &str, docs: &str| format!(r#"{{"query_id": "{q}", "results": [{docs}]}}"#);
    wd.write(
        "logs/a.jsonl",
        text(&[&event("q_export", r#""export_csv""#)]),
    );
    wd.write_gz(
        "logs/sub/b.jsonl.gz",
        text(&[&event(
            "q_reset",
            r#""billing", "reset_steps", "reset_limits""#,
        )]),
    );
    wd.write_zst(
        "logs/c.jsonl.zst",
        text(&[&event("q_sharing", r#""profile", "share_roles""#)]),
    );
    wd.write("logs/d.trec", text(&["q_export Q0 export_csv 1 1.0 t"]));
    wd.write("logs/e.run", text(&["q_reset Q0 reset_steps 1 1.0 t"]));
    for ignored in [
        "logs/notes.txt",
        "logs/f.json",
        "logs/g.jsonl.bak",
        "logs/README",
    ] {
        wd.write(ignored, "this is not a log line\n");
    }
    wd.rgrade(&["grade", "--labels", &labels, "-k", "3", "-o", "dir", "logs"])
        .expect_code(0);
    let summary = wd.read_json("dir/summary.json");
    let inputs: Vec<&str> = summary["inputs"]
        .as_array()
        .map(|a| a.iter().filter_map(|i| i["path"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(
        inputs,
        [
            "logs/a.jsonl",
            "logs/c.jsonl.zst",
            "logs/d.trec",
            "logs/e.run",
            "logs/sub/b.jsonl.gz",
        ]
    );
    assert_eq!(count(&summary, "records"), 5);
    assert_eq!(count(&summary, "rejected"), 0);
    let per_query = wd.read_csv("dir/per_query.csv");
    for (run, query, status, recall) in [
        ("", "q_export", "ok", "1"),
        ("", "q_reset", "ok", "1"),
        ("", "q_sharing", "ok", "0.5"),
        ("t", "q_export", "ok", "1"),
        ("t", "q_reset", "ok", "0.5"),
        ("t", "q_sharing", "missing", "0"),
    ] {
        let row = per_query.row(&[("run", run), ("query_id", query)]);
        assert_text(&row, "status", status);
        assert_text(&row, "recall@3", recall);
    }
}

/// A log larger than 10 MB (several 4 MiB blocks) with repeats under
/// `--repeats last`, unlabeled events and bad lines grades byte-identically
/// with one thread and with two: per_query.csv, aggregates.csv,
/// rejects.jsonl and summary.json's counts.
#[test]
fn one_thread_and_two_threads_agree_on_a_large_log() {
    let wd = Workdir::new("determinism");
    let mut rng = Pcg64::seed_from_u64(20240601);
    let n_labeled = 3000;
    let n_docs = 20_000;
    let mut relevant: Vec<Vec<u32>> = Vec::with_capacity(n_labeled);
    let mut labels = String::new();
    for q in 0..n_labeled {
        let n_rel = if rng.random_bool(0.05) {
            0
        } else {
            rng.random_range(1..=4)
        };
        let docs: Vec<u32> = (0..n_rel).map(|_| rng.random_range(0..n_docs)).collect();
        let mut judged: Vec<String> = Vec::new();
        let mut unique = docs.clone();
        unique.sort_unstable();
        unique.dedup();
        for doc in &unique {
            judged.push(format!(r#""d{doc}": {}"#, rng.random_range(1..=3)));
        }
        labels.push_str(&format!(
            r#"{{"query_id": "q{q:05}", "relevant": {{{}}}, "task": "t{}", "language": "{}"}}"#,
            judged.join(", "),
            q % 7,
            ["en", "de", "fr"][q % 3],
        ));
        labels.push('\n');
        relevant.push(unique);
    }
    wd.write("labels.jsonl", labels);

    let mut log = Vec::with_capacity(11 << 20);
    let mut lines = 0u64;
    while log.len() < 10_500_000 {
        lines += 1;
        if lines.is_multiple_of(997) {
            log.extend_from_slice(b"{\"query_id\": \"broken\n");
            continue;
        }
        if lines.is_multiple_of(1013) {
            log.extend_from_slice(b"\n");
            continue;
        }
        // One in ten events is for a query the key does not cover.
        let q = rng.random_range(0..n_labeled + n_labeled / 9);
        let mut docs: Vec<String> = Vec::new();
        while docs.len() < 10 {
            let doc = match relevant.get(q) {
                Some(rel) if !rel.is_empty() && rng.random_bool(0.2) => {
                    rel[rng.random_range(0..rel.len())]
                }
                _ => rng.random_range(0..n_docs),
            };
            let doc = format!("\"d{doc}\"");
            // A duplicate now and then: a duplicate_doc reject.
            if !docs.contains(&doc) || rng.random_bool(0.01) {
                docs.push(doc);
            }
        }
        writeln!(
            log,
            r#"{{"query_id": "q{q:05}", "run": "{}", "stage": "{}", "results": [{}], "latency_ms": {:.1}, "context_tokens": {}}}"#,
            ["bm25", "dense"][rng.random_range(0..2)],
            ["retrieve", "final"][rng.random_range(0..2)],
            docs.join(", "),
            rng.random_range(5.0..500.0),
            rng.random_range(100..4000),
        )
        .expect("writing to memory");
    }
    assert!(log.len() > 10 << 20, "the log spans several blocks");
    wd.write("logs.jsonl", &log);

    let grade = |threads: &str| {
        let out = format!("out-j{threads}");
        wd.rgrade(&[
            "grade",
            "--labels",
            "labels.jsonl",
            "-k",
            "1,5,10",
            "--repeats",
            "last",
            "--max-rejects",
            "1000000",
            "-q",
            "-j",
            threads,
            "-o",
            &out,
            "logs.jsonl",
        ])
        .expect_code(0);
        out
    };
    let (one, two) = (grade("1"), grade("2"));
    for file in ["per_query.csv", "aggregates.csv", "rejects.jsonl"] {
        let (a, b) = (
            wd.read(&format!("{one}/{file}")),
            wd.read(&format!("{two}/{file}")),
        );
        assert!(a == b, "{file} differs between -j 1 and -j 2");
    }
    let (a, b) = (
        wd.read_json(&format!("{one}/summary.json")),
        wd.read_json(&format!("{two}/summary.json")),
    );
    assert_eq!(a["counts"], b["counts"]);
    assert_eq!(a["overall"], b["overall"]);
    // The input exercised what it was built for.
    assert!(
        count(&a, "superseded_records") > 10_000,
        "{:#}",
        a["counts"]
    );
    assert!(count(&a, "unlabeled_events") > 1_000, "{:#}", a["counts"]);
    assert!(count(&a, "rejected") > 10, "{:#}", a["counts"]);
    assert!(count(&a, "blank_lines") > 10, "{:#}", a["counts"]);
    assert_counts_add_up(&a);
    let statuses = wd
        .read_csv(&format!("{one}/per_query.csv"))
        .column("status");
    assert!(statuses.iter().any(|s| s == "ok"));
    assert!(statuses.iter().any(|s| s == "no_answer"));
}

/// When the reader of stdout goes away (`rgrade ... | head -1`) rgrade
/// ends quietly: exit status 0 and nothing on stderr, even with a table
/// far larger than a pipe's buffer.
#[test]
fn a_closed_stdout_pipe_ends_quietly() {
    let wd = Workdir::new("closed_pipe");
    let mut log = String::new();
    for run in 0..400 {
        for (q, docs) in [
            ("q_export", r#""export_csv""#),
            ("q_reset", r#""reset_steps""#),
            ("q_sharing", r#""share_roles""#),
        ] {
            log.push_str(&format!(
                r#"{{"query_id": "{q}", "run": "run-{run:04}", "results": [{docs}]}}"#
            ));
            log.push('\n');
        }
    }
    wd.write("logs.jsonl", log);
    let mut child = wd
        .command(&["grade", "--labels", &seed("labels.jsonl"), "logs.jsonl"])
        .spawn()
        .expect("rgrade starts");
    let stdout = child.stdout.take().expect("stdout is piped");
    let mut first = String::new();
    BufReader::new(stdout)
        .read_line(&mut first)
        .expect("reading the first line");
    // The reader is dropped here: the pipe is closed with most of the table unread.
    assert!(first.starts_with("run "), "first line: {first:?}");
    let output = child.wait_with_output().expect("rgrade ends");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "stderr: {stderr}");
    assert_eq!(stderr, "", "nothing on stderr");
}

/// The field options map records of another shape: JSON pointers for the
/// query, results, stage, run and latency, a top-level key for the context
/// size, `--doc-field` for the key of a result object's doc id.
#[test]
fn field_options_map_other_record_shapes() {
    let wd = Workdir::new("field_mapping");
    wd.write(
        "labels.jsonl",
        text(&[
            r#"{"query_id": "q1", "relevant": ["a"]}"#,
            r#"{"query_id": 2, "relevant": ["c"]}"#,
        ]),
    );
    wd.write(
        "logs.jsonl",
        text(&[
            r#"{"request": {"qid": "q1", "hits": [{"id": "a", "doc_id": "WRONG"}, {"id": "b"}]}, "meta": {"pipeline": "rerank", "variant": "v2"}, "timing": {"ms": 12.5}, "ctx": 300}"#,
            r#"{"request": {"qid": 2, "hits": [{"id": "x"}, {"id": "c", "doc_id": "a"}]}, "meta": {"pipeline": "rerank", "variant": "v2"}, "timing": {"ms": 7.5}, "ctx": 100}"#,
        ]),
    );
    wd.rgrade(&[
        "grade",
        "--labels",
        "labels.jsonl",
        "-k",
        "2",
        "--query-field",
        "/request/qid",
        "--results-field",
        "/request/hits",
        "--doc-field",
        "id",
        "--stage-field",
        "/meta/pipeline",
        "--run-field",
        "/meta/variant",
        "--latency-field",
        "/timing/ms",
        "--context-field",
        "ctx",
        "-o",
        "mapped",
        "logs.jsonl",
    ])
    .expect_code(0);
    assert_eq!(wd.read("mapped/rejects.jsonl"), b"");
    let per_query = wd.read_csv("mapped/per_query.csv");
    let q1 = per_query.row(&[("query_id", "q1")]);
    assert_text(&q1, "run", "v2");
    assert_text(&q1, "stage", "rerank");
    assert_cell(&q1, "rr@2", 1.0);
    assert_cell(&q1, "latency_ms", 12.5);
    assert_cell(&q1, "context_tokens", 300.0);
    let q2 = per_query.row(&[("query_id", "2")]);
    assert_cell(&q2, "rr@2", 0.5);
    assert_cell(&q2, "latency_ms", 7.5);
    let overall = wd
        .read_csv("mapped/aggregates.csv")
        .row(&[("task", "*"), ("language", "*")]);
    assert_cell(&overall, "latency_p50_ms", 10.0);
    assert_cell(&overall, "context_tokens_mean", 200.0);

    // Without the mapping, the same records lack a query id.
    wd.rgrade(&[
        "grade",
        "--labels",
        "labels.jsonl",
        "-o",
        "unmapped",
        "logs.jsonl",
    ])
    .expect_code(1);
    let reasons: Vec<String> = reject_keys(&wd.read_jsonl("unmapped/rejects.jsonl"))
        .into_iter()
        .map(|(_, _, reason)| reason)
        .collect();
    assert_eq!(reasons, ["missing_query_id", "missing_query_id"]);
}

/// A closed stdout pipe does not hide a failure: with more rejected records
/// than `--max-rejects`, a reader that goes away before reading anything
/// (`rgrade ... | false`) still sees exit status 1, the rejects message on
/// stderr and every output written, even with a table far larger than a
/// pipe's buffer.
#[test]
fn a_closed_stdout_pipe_keeps_the_exit_status() {
    let wd = Workdir::new("closed_pipe_status");
    let mut log = String::new();
    for run in 0..400 {
        for (q, docs) in [
            ("q_export", r#""export_csv""#),
            ("q_reset", r#""reset_steps""#),
            ("q_sharing", r#""share_roles""#),
        ] {
            log.push_str(&format!(
                r#"{{"query_id": "{q}", "run": "run-{run:04}", "results": [{docs}]}}"#
            ));
            log.push('\n');
        }
    }
    log.push_str("not json\n");
    wd.write("logs.jsonl", log);
    let labels = seed("labels.jsonl");
    let args = ["grade", "--labels", &labels, "-o", "out", "logs.jsonl"];

    // The table does not fit in a pipe's buffer, so rgrade must write
    // into the closed pipe.
    let full = wd.rgrade(&args);
    full.expect_code(1);
    assert!(
        full.stdout.len() > 64 << 10,
        "table of {} bytes",
        full.stdout.len()
    );

    let mut cmd = wd.command(&args);
    let mut child = cmd.spawn().expect("rgrade starts");
    drop(child.stdout.take());
    let run = Run::wait(&cmd, child, RUN_TIMEOUT);
    run.expect_code(1)
        .expect_stderr(&["rejected record", "logs.jsonl:1201"]);
    assert_eq!(run.stdout, "", "stdout was closed before rgrade wrote");
    assert_eq!(wd.read_csv("out/per_query.csv").rows.len(), 1200);
    assert_eq!(
        reject_keys(&wd.read_jsonl("out/rejects.jsonl")),
        in_file("logs.jsonl", &[(1201, "invalid_json")])
    );
}

/// The UTF-8 byte-order mark some Windows tools write is not part of the
/// first query id or record: labels (JSONL, TREC qrels, CSV, detected by
/// content) and logs (JSONL plain, gzip and from stdin, TREC run) that
/// start with one grade exactly like the same files without it, and a
/// record excerpt read back from such a log does not carry the mark.
#[test]
fn a_byte_order_mark_is_ignored() {
    const BOM: &str = "\u{feff}";
    let wd = Workdir::new("bom");
    let labels_jsonl = text(&[
        r#"{"query_id": "q1", "relevant": ["a"]}"#,
        r#"{"query_id": "q2", "relevant": ["b"]}"#,
    ]);
    wd.write("labels.jsonl", format!("{BOM}{labels_jsonl}"));
    wd.write("labels.qrels", format!("{BOM}q1 0 a 1\nq2 0 b 1\n"));
    wd.write("labels.csv", format!("{BOM}query_id,doc_id\nq1,a\nq2,b\n"));
    let records = text(&[
        r#"{"query_id": "q1", "results": ["a", "x"]}"#,
        r#"{"query_id": "q2", "results": ["x", "b"]}"#,
    ]);
    wd.write("plain.jsonl", format!("{BOM}{records}"));
    wd.write_gz("gz.jsonl.gz", format!("{BOM}{records}"));
    wd.write(
        "run.trec",
        format!("{BOM}q1 Q0 a 1 2.0 t\nq1 Q0 x 2 1.0 t\nq2 Q0 x 1 2.0 t\nq2 Q0 b 2 1.0 t\n"),
    );

    // (labels, log or stdin, out, run name, labels format in summary.json)
    let cases = [
        ("labels.jsonl", "plain.jsonl", "jsonl", "", "jsonl"),
        ("labels.qrels", "plain.jsonl", "qrels", "", "trec"),
        ("labels.csv", "plain.jsonl", "csv", "", "csv"),
        ("labels.jsonl", "gz.jsonl.gz", "gz", "", "jsonl"),
        ("labels.jsonl", "-", "stdin", "", "jsonl"),
        ("labels.jsonl", "run.trec", "trec", "t", "jsonl"),
    ];
    for (labels, log, out, run_name, format) in cases {
        let args = ["grade", "--labels", labels, "-k", "2", "-o", out, log];
        let run = if log == "-" {
            wd.rgrade_stdin(&args, format!("{BOM}{records}").as_bytes())
        } else {
            wd.rgrade(&args)
        };
        run.expect_code(0);
        assert_eq!(wd.read(&format!("{out}/rejects.jsonl")), b"", "{run}");
        let per_query = wd.read_csv(&format!("{out}/per_query.csv"));
        assert_eq!(per_query.column("query_id"), ["q1", "q2"], "{labels} {log}");
        for (query, rr) in [("q1", 1.0), ("q2", 0.5)] {
            let row = per_query.row(&[("run", run_name), ("query_id", query)]);
            assert_text(&row, "status", "ok");
            assert_cell(&row, "rr@2", rr);
        }
        let summary = wd.read_json(&format!("{out}/summary.json"));
        assert_eq!(summary["labels"]["format"], format, "{labels}");
        assert_eq!(count(&summary, "graded"), 2, "{log}");
    }

    // A repeated capture on the first line is reported once every record
    // was read, its excerpt read back from the file: without the mark.
    let first = r#"{"query_id": "q1", "results": ["a"]}"#;
    wd.write("repeat.jsonl", format!("{BOM}{}", text(&[first, first])));
    wd.rgrade(&[
        "grade",
        "--labels",
        "labels.jsonl",
        "--max-rejects",
        "2",
        "-o",
        "repeat",
        "repeat.jsonl",
    ])
    .expect_code(0);
    let rejects = wd.read_jsonl("repeat/rejects.jsonl");
    assert_eq!(
        reject_keys(&rejects),
        in_file(
            "repeat.jsonl",
            &[(1, "repeated_capture"), (2, "repeated_capture")]
        )
    );
    assert_eq!(rejects[0]["record"], first, "no mark in the excerpt");
}

/// Make a named pipe at `path` with the system's `mkfifo`; false (and a
/// note on stderr) where there is none, for the caller to skip its test.
fn make_fifo(path: &std::path::Path) -> bool {
    match Command::new("mkfifo").arg(path).status() {
        Ok(status) if status.success() => true,
        other => {
            eprintln!("skipped: mkfifo is not available here ({other:?})");
            false
        }
    }
}

/// Run `rgrade args` in `wd` while a thread writes `log` into the named
/// pipe `fifo`; the writer is released even if rgrade never opens the pipe.
fn rgrade_with_fifo(wd: &Workdir, args: &[&str], fifo: &str, log: &[u8]) -> Run {
    let path = wd.path(fifo);
    let bytes = log.to_vec();
    let writer = std::thread::spawn({
        let path = path.clone();
        move || -> std::io::Result<()> {
            // Blocks until a reader opens the pipe.
            let mut pipe = std::fs::OpenOptions::new().write(true).open(&path)?;
            pipe.write_all(&bytes)
        }
    });
    let mut cmd = wd.command(args);
    let child = cmd.spawn().expect("rgrade starts");
    let run = Run::wait(&cmd, child, Duration::from_secs(60));
    // Opening a FIFO for reading and writing never blocks on Linux, and
    // lets a writer still waiting for a reader go on (the log is smaller
    // than the pipe's buffer).
    let release = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path);
    let written = writer.join().expect("the writer thread panicked");
    drop(release);
    assert!(written.is_ok(), "writing into the pipe: {written:?}\n{run}");
    run
}

/// A named pipe (`<(zcat logs.gz)`, `mkfifo`) is a log input like any
/// other: read once, as it is written, and graded like the same records in
/// a file; a repeated capture in it is reported with an empty excerpt
/// rather than by opening the pipe again.
#[test]
fn a_named_pipe_is_read_as_a_log() {
    let wd = Workdir::new("fifo");
    let labels = seed("labels.jsonl");
    let plain = std::fs::read(seed("logs.jsonl")).expect("the seed logs ship with the crate");
    if !make_fifo(&wd.path("pipe.jsonl")) {
        return;
    }
    wd.write("file.jsonl", &plain);
    wd.rgrade(&["grade", "--labels", &labels, "-o", "file", "file.jsonl"])
        .expect_code(0);

    let run = rgrade_with_fifo(
        &wd,
        &["grade", "--labels", &labels, "-o", "fifo", "pipe.jsonl"],
        "pipe.jsonl",
        &plain,
    );
    run.expect_code(0);
    assert_eq!(
        String::from_utf8_lossy(&wd.read("fifo/per_query.csv")),
        String::from_utf8_lossy(&wd.read("file/per_query.csv")),
        "the pipe grades like the file\n{run}"
    );
    let summary = wd.read_json("fifo/summary.json");
    assert_eq!(summary["inputs"][0]["path"], "pipe.jsonl");
    assert_eq!(count(&summary, "graded"), 3);
    assert_eq!(count(&summary, "rejected"), 0);

    let repeated = r#"{"query_id": "q_export", "results": ["export_csv"]}"#;
    let run = rgrade_with_fifo(
        &wd,
        &[
            "grade",
            "--labels",
            &labels,
            "--max-rejects",
            "2",
            "-o",
            "repeat",
            "pipe.jsonl",
        ],
        "pipe.jsonl",
        text(&[repeated, repeated]).as_bytes(),
    );
    run.expect_code(0);
    let rejects = wd.read_jsonl("repeat/rejects.jsonl");
    assert_eq!(
        reject_keys(&rejects),
        in_file(
            "pipe.jsonl",
            &[(1, "repeated_capture"), (2, "repeated_capture")]
        )
    );
    assert_eq!(rejects[0]["record"], "", "a pipe cannot be read twice");
}

/// A directory walk does not follow symbolic links to directories, so a
/// link back to the directory itself (even one named like a log) reads
/// each log once: no `repeated_capture`, exit 0. Naming the same log
/// twice, directly or through its directory, is an error naming it
/// (exit 2), since its records would be counted twice.
#[test]
fn a_log_is_read_once_whatever_leads_to_it() {
    let wd = Workdir::new("symlinks");
    let labels = seed("labels.jsonl");
    let plain = std::fs::read(seed("logs.jsonl")).expect("the seed logs ship with the crate");
    wd.write("logs/a.jsonl", &plain);
    wd.write("plain.jsonl", &plain);
    std::os::unix::fs::symlink(wd.path("logs"), wd.path("logs/self")).expect("symlink");
    std::os::unix::fs::symlink(".", wd.path("logs/loop.jsonl")).expect("symlink");
    std::fs::create_dir_all(wd.path("logs/sub")).expect("mkdir");
    std::os::unix::fs::symlink("..", wd.path("logs/sub/up")).expect("symlink");

    wd.rgrade(&["grade", "--labels", &labels, "-k", "3", "-o", "out", "logs"])
        .expect_code(0);
    assert_eq!(wd.read("out/rejects.jsonl"), b"");
    let summary = wd.read_json("out/summary.json");
    assert_eq!(summary["inputs"].as_array().map(Vec::len), Some(1));
    assert_eq!(summary["inputs"][0]["path"], "logs/a.jsonl");
    assert_eq!(count(&summary, "records"), 3);
    assert_eq!(count(&summary, "repeats"), 0);
    for row in wd.read_csv("out/per_query.csv").records() {
        assert_text(&row, "status", "ok");
        assert_cell(&row, "captures", 1.0);
    }

    for (twice, named) in [
        (["plain.jsonl", "plain.jsonl"], "plain.jsonl"),
        (["plain.jsonl", "./plain.jsonl"], "plain.jsonl"),
        (["logs", "logs/a.jsonl"], "logs/a.jsonl"),
    ] {
        let mut args = vec!["grade", "--labels", &labels, "-o", "twice"];
        args.extend(twice);
        wd.rgrade(&args)
            .expect_code(2)
            .expect_stderr(&[named, "given twice"]);
        assert!(
            !wd.exists("twice/per_query.csv"),
            "{twice:?}: nothing graded"
        );
    }
}

/// `--doc-field` takes a JSON pointer into each result object, like the
/// other field options: `/meta/id` reads `{"meta": {"id": "a"}}`; a
/// plain string result is still a doc id, and an object without that
/// field is a `bad_result` even if it has an `id`.
#[test]
fn doc_field_takes_a_json_pointer() {
    let wd = Workdir::new("doc_field_pointer");
    wd.write(
        "labels.jsonl",
        text(&[
            r#"{"query_id": "q1", "relevant": ["a"]}"#,
            r#"{"query_id": "q2", "relevant": ["c"]}"#,
            r#"{"query_id": "q3", "relevant": ["b"]}"#,
        ]),
    );
    wd.write(
        "logs.jsonl",
        text(&[
            r#"{"query_id": "q1", "results": [{"meta": {"id": "x"}}, {"meta": {"id": "a"}}]}"#,
            r#"{"query_id": "q2", "results": ["c", {"meta": {"id": "y"}, "id": "c"}]}"#,
            r#"{"query_id": "q3", "results": [{"id": "b"}]}"#,
        ]),
    );
    wd.rgrade(&[
        "grade",
        "--labels",
        "labels.jsonl",
        "-k",
        "2",
        "--doc-field",
        "/meta/id",
        "--max-rejects",
        "1",
        "-o",
        "out",
        "logs.jsonl",
    ])
    .expect_code(0);
    let per_query = wd.read_csv("out/per_query.csv");
    let q1 = per_query.row(&[("query_id", "q1")]);
    assert_text(&q1, "status", "ok");
    assert_cell(&q1, "rr@2", 0.5);
    let q2 = per_query.row(&[("query_id", "q2")]);
    assert_text(&q2, "status", "ok");
    assert_cell(&q2, "rr@2", 1.0);
    assert_cell(&q2, "n_results", 2.0);
    assert_text(&per_query.row(&[("query_id", "q3")]), "status", "invalid");
    assert_eq!(
        reject_keys(&wd.read_jsonl("out/rejects.jsonl")),
        in_file("logs.jsonl", &[(3, "bad_result")])
    );
}

/// The `-o` directory is created before any log is read, so a typo in it
/// costs seconds, not a whole run: an `-o` path that cannot be created
/// (under a regular file) exits 2 naming that path, before a corrupt log
/// could be noticed.
#[test]
fn an_output_directory_that_cannot_be_created_fails_first() {
    let wd = Workdir::new("bad_out");
    let labels = seed("labels.jsonl");
    wd.write("file.txt", "a regular file\n");
    let plain = std::fs::read(seed("logs.jsonl")).expect("the seed logs ship with the crate");
    let gz = gzip(&plain);
    wd.write("cut.jsonl.gz", &gz[..gz.len() / 2]);

    wd.rgrade(&[
        "grade",
        "--labels",
        &labels,
        "-o",
        "file.txt/out",
        &seed("logs.jsonl"),
    ])
    .expect_code(2)
    .expect_stderr(&["file.txt/out", "cannot create output directory"]);

    let run = wd.rgrade(&[
        "grade",
        "--labels",
        &labels,
        "-o",
        "file.txt/out",
        "cut.jsonl.gz",
    ]);
    run.expect_code(2)
        .expect_stderr(&["file.txt/out", "cannot create output directory"]);
    assert!(
        !run.stderr.contains("cut.jsonl.gz"),
        "the log was not read before the output directory was made\n{run}"
    );
}

/// With a bad `-o` and a log that does not exist, the `-o` problem is
/// the one reported (exit 2), as the output directory is made first.
#[test]
fn a_bad_output_directory_is_reported_before_a_missing_log() {
    let wd = Workdir::new("bad_out_missing_log");
    wd.write("file.txt", "a regular file\n");
    wd.rgrade(&[
        "grade",
        "--labels",
        &seed("labels.jsonl"),
        "-o",
        "file.txt/out",
        "missing.jsonl",
    ])
    .expect_code(2)
    .expect_stderr(&["file.txt/out", "cannot create output directory"]);
}

/// When no event matches a labeled query id (the logs say `7`, the labels
/// `q_7`) rgrade still grades (every query `missing`, exit 0) but warns on
/// stderr that none of the N events matched, pointing at the likely cause;
/// a run where ids match carries no such warning.
#[test]
fn no_matching_query_id_is_warned_about() {
    let wd = Workdir::new("no_match");
    wd.write(
        "labels.jsonl",
        text(&[
            r#"{"query_id": "q_7", "relevant": ["a"]}"#,
            r#"{"query_id": "q_8", "relevant": ["b"]}"#,
        ]),
    );
    wd.write(
        "logs.jsonl",
        text(&[
            r#"{"query_id": 7, "results": ["a"]}"#,
            r#"{"query_id": 8, "results": ["b"]}"#,
            r#"{"query_id": "9", "results": ["c"]}"#,
        ]),
    );
    let run = wd.rgrade(&[
        "grade",
        "--labels",
        "labels.jsonl",
        "-o",
        "out",
        "logs.jsonl",
    ]);
    run.expect_code(0)
        .expect_stderr(&["none of the 3 events matched a labeled query_id"]);
    let per_query = wd.read_csv("out/per_query.csv");
    assert_eq!(per_query.column("status"), ["missing", "missing"]);
    let summary = wd.read_json("out/summary.json");
    assert_eq!(count(&summary, "unlabeled_events"), 3);
    assert_eq!(count(&summary, "rejected"), 0);

    let run = wd.rgrade(&[
        "grade",
        "--labels",
        &seed("labels.jsonl"),
        &seed("logs.jsonl"),
    ]);
    run.expect_code(0);
    assert!(!run.stderr.contains("none of the"), "{run}");
}

/// `{"query_id":"q_long","results":["` + `n` bytes of `a` + `"]}`.
fn long_record(n: usize) -> Vec<u8> {
    let mut line = br#"{"query_id":"q_long","results":[""#.to_vec();
    line.resize(line.len() + n, b'a');
    line.extend_from_slice(br#""]}"#);
    line
}

/// A line longer than 64 MiB is rejected as `line_too_long` with its file
/// and line, its excerpt cut to 200 bytes, and the lines around it are
/// graded; whether it is just over the limit or well over it (where it
/// falls among rgrade's read blocks differs).
#[test]
fn a_line_longer_than_64_mib_is_rejected() {
    let wd = Workdir::new("long_line");
    wd.write(
        "labels.jsonl",
        text(&[
            r#"{"query_id": "q1", "relevant": ["a"]}"#,
            r#"{"query_id": "q2", "relevant": ["b"]}"#,
            r#"{"query_id": "q3", "relevant": ["c"]}"#,
        ]),
    );
    let wrapper = long_record(0).len();
    let mut log = Vec::with_capacity(132 << 20);
    log.extend_from_slice(b"{\"query_id\": \"q1\", \"results\": [\"a\"]}\n");
    log.extend(long_record((64 << 20) + 1 - wrapper));
    log.extend_from_slice(b"\n{\"query_id\": \"q2\", \"results\": [\"b\"]}\n");
    log.extend(long_record(65 << 20));
    log.extend_from_slice(b"\n{\"query_id\": \"q3\", \"results\": [\"c\"]}\n");
    wd.write("logs.jsonl", &log);
    drop(log);

    let run = wd.rgrade(&[
        "grade",
        "--labels",
        "labels.jsonl",
        "-o",
        "out",
        "logs.jsonl",
    ]);
    run.expect_code(1)
        .expect_stderr(&["logs.jsonl:2", "line_too_long"]);
    let rejects = wd.read_jsonl("out/rejects.jsonl");
    assert_eq!(
        reject_keys(&rejects),
        in_file("logs.jsonl", &[(2, "line_too_long"), (4, "line_too_long")])
    );
    for reject in &rejects {
        let record = reject["record"].as_str().unwrap_or_default();
        assert!(
            record.len() <= 200 && record.starts_with(r#"{"query_id":"q_long","results":["aaa"#),
            "excerpt of {} bytes: {record:.80}",
            record.len()
        );
    }
    for row in wd.read_csv("out/per_query.csv").records() {
        assert_text(&row, "status", "ok");
        assert_cell(&row, "rr@10", 1.0);
    }
    let summary = wd.read_json("out/summary.json");
    assert_eq!(count(&summary, "records"), 5);
    assert_eq!(count(&summary, "rejected"), 2);
    assert_counts_add_up(&summary);
}

/// The limit is "longer than 64 MiB": a record of exactly 64 MiB is
/// graded, wherever it starts (here as the first line, at a block boundary).
#[test]
fn a_line_of_exactly_64_mib_is_graded() {
    let wd = Workdir::new("line_64mib");
    wd.write(
        "labels.jsonl",
        text(&[
            r#"{"query_id": "q_long", "relevant": ["a"]}"#,
            r#"{"query_id": "q1", "relevant": ["a"]}"#,
        ]),
    );
    let mut log = long_record((64 << 20) - long_record(0).len());
    assert_eq!(log.len(), 64 << 20);
    log.extend_from_slice(b"\n{\"query_id\": \"q1\", \"results\": [\"a\"]}\n");
    wd.write("logs.jsonl", &log);
    drop(log);

    let run = wd.rgrade(&[
        "grade",
        "--labels",
        "labels.jsonl",
        "-o",
        "out",
        "logs.jsonl",
    ]);
    run.expect_code(0);
    assert_eq!(wd.read("out/rejects.jsonl"), b"", "{run}");
    let per_query = wd.read_csv("out/per_query.csv");
    let long = per_query.row(&[("query_id", "q_long")]);
    assert_text(&long, "status", "ok");
    assert_cell(&long, "n_results", 1.0);
}

/// A record of a labeled query rejected after its key was read (a latency
/// or context size that is not a number, no `results`, `results` not an
/// array, a result without a doc id) is a capture of that query: its only
/// capture rejected, the query is `invalid` with `captures` 1 and scores 0,
/// not `missing`. A line that is not JSON names no query, so its query
/// stays `missing`.
#[test]
fn a_rejected_capture_makes_its_query_invalid_not_missing() {
    let wd = Workdir::new("invalid_not_missing");
    let queries = [
        "q_latency",
        "q_context",
        "q_no_results",
        "q_bad_results",
        "q_bad_result",
        "q_json",
        "q_ok",
    ];
    let labels: Vec<String> = queries
        .iter()
        .map(|q| format!(r#"{{"query_id": "{q}", "relevant": ["a"]}}"#))
        .collect();
    wd.write(
        "labels.jsonl",
        text(&labels.iter().map(String::as_str).collect::<Vec<_>>()),
    );
    wd.write(
        "logs.jsonl",
        text(&[
            r#"{"query_id": "q_latency", "results": ["a"], "latency_ms": "slow"}"#,
            r#"{"query_id": "q_context", "results": ["a"], "context_tokens": "many"}"#,
            r#"{"query_id": "q_no_results"}"#,
            r#"{"query_id": "q_bad_results", "results": "a"}"#,
            r#"{"query_id": "q_bad_result", "results": ["a", {"score": 1.0}]}"#,
            r#"{"query_id": "q_json", "results": ["a"]"#,
            r#"{"query_id": "q_ok", "results": ["a"]}"#,
        ]),
    );
    wd.rgrade(&[
        "grade",
        "--labels",
        "labels.jsonl",
        "-k",
        "3",
        "--max-rejects",
        "6",
        "-o",
        "out",
        "logs.jsonl",
    ])
    .expect_code(0);
    assert_eq!(
        reject_keys(&wd.read_jsonl("out/rejects.jsonl")),
        in_file(
            "logs.jsonl",
            &[
                (1, "bad_field"),
                (2, "bad_field"),
                (3, "missing_results"),
                (4, "bad_results"),
                (5, "bad_result"),
                (6, "invalid_json"),
            ]
        )
    );
    let per_query = wd.read_csv("out/per_query.csv");
    for query in &queries[..5] {
        let row = per_query.row(&[("query_id", query)]);
        assert_text(&row, "status", "invalid");
        assert_cell(&row, "captures", 1.0);
        assert_text(&row, "n_results", "");
        assert_cell(&row, "recall@3", 0.0);
        assert_text(&row, "missing_at_3", "a");
    }
    let q_json = per_query.row(&[("query_id", "q_json")]);
    assert_text(&q_json, "status", "missing");
    assert_cell(&q_json, "captures", 0.0);
    assert_text(&per_query.row(&[("query_id", "q_ok")]), "status", "ok");
    let overall = wd
        .read_csv("out/aggregates.csv")
        .row(&[("task", "*"), ("language", "*")]);
    assert_cell(&overall, "invalid", 5.0);
    assert_cell(&overall, "missing", 1.0);
    assert_cell(&overall, "ok", 1.0);
    assert_cell(&overall, "recall@3", 1.0 / 7.0);
}

/// A file name that is not UTF-8 is a file name like any other: a missing
/// one is an error naming it (shown lossily, exit 2, no panic), whether
/// log or labels, and an existing one grades, into an output directory
/// whose name is not UTF-8 either.
#[test]
fn file_names_that_are_not_utf8() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;

    let wd = Workdir::new("non_utf8_names");
    let labels = seed("labels.jsonl");
    let log = OsStr::from_bytes(b"\xff.jsonl");
    let run = run_command(wd.command(&["grade", "--labels", &labels]).arg(log));
    run.expect_code(2).expect_stderr(&["\u{fffd}.jsonl"]);
    assert!(!run.stderr.contains("panicked"), "{run}");

    let run = run_command(
        wd.command(&["grade", "--labels"])
            .arg(OsStr::from_bytes(b"l\xfe.jsonl"))
            .arg(seed("logs.jsonl")),
    );
    run.expect_code(2).expect_stderr(&["l\u{fffd}.jsonl"]);
    assert!(!run.stderr.contains("panicked"), "{run}");

    std::fs::write(
        wd.root().join(log),
        std::fs::read(seed("logs.jsonl")).expect("the seed logs ship with the crate"),
    )
    .expect("writing the log");
    let out = OsStr::from_bytes(b"out\xff");
    let run = run_command(
        wd.command(&["grade", "--labels", &labels, "-k", "3", "-o"])
            .arg(out)
            .arg(log),
    );
    run.expect_code(0);
    let summary: Value = serde_json::from_slice(
        &std::fs::read(wd.root().join(out).join("summary.json")).expect("summary.json written"),
    )
    .expect("summary.json is JSON");
    assert_eq!(summary["inputs"][0]["path"], "\u{fffd}.jsonl");
    assert_eq!(count(&summary, "graded"), 3);
}
