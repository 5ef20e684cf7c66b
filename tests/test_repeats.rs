//! Several captures of one (run, stage, query) under `--repeats`: all
//! rejected under `error` (excerpts read back from files, none from standard
//! input), picked in input order under `first` and `last`, averaged under
//! `mean`, and counted in full whatever the policy.

use crate::util::{
    assert_cell, assert_counts_add_up, assert_text, count, in_file, reject_keys, seed, text,
    Workdir,
};

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
/// with an empty `record` (docs/reference.md, Outputs).
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
    .expect_code(1)
    .expect_stderr(&["was rejected, so nothing was graded"]);
    let rejects = wd.read_jsonl("out/rejects.jsonl");
    assert_eq!(
        reject_keys(&rejects),
        in_file("-", &[(1, "repeated_capture"), (2, "repeated_capture")])
    );
    for reject in &rejects {
        assert_eq!(reject["record"], "", "{reject}");
    }
}

/// A repeated capture that is a TREC ranking (several lines) rejects each
/// of its lines under `--repeats error`, so no line is silently dropped and
/// summary.json's counts still add up (docs/reference.md, Outputs).
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
    .expect_code(1)
    .expect_stderr(&["was rejected, so nothing was graded"]);
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
/// the first, though only one capture is graded (docs/reference.md, Outputs:
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

/// `--repeats mean` sums in one order whatever order the captures come
/// in, so a log read in another order gives the same bytes; and finite
/// inputs give finite outputs, however large (docs/reference.md, Outputs).
#[test]
fn means_do_not_depend_on_input_order_and_stay_finite() {
    let wd = Workdir::new("mean_order");
    let labels = seed("labels.jsonl");
    let event = |latency: &str| {
        format!(r#"{{"query_id": "q_export", "results": ["export_csv"], "latency_ms": {latency}}}"#)
    };
    let latencies = ["0.1", "0.2", "0.3"];
    let forward: Vec<String> = latencies.iter().map(|l| event(l)).collect();
    let backward: Vec<String> = latencies.iter().rev().map(|l| event(l)).collect();
    wd.write("forward.jsonl", text(&forward));
    wd.write("backward.jsonl", text(&backward));
    for name in ["forward", "backward"] {
        let log = format!("{name}.jsonl");
        wd.rgrade(&[
            "grade",
            "--labels",
            &labels,
            "--repeats",
            "mean",
            "-q",
            "-o",
            name,
            &log,
        ])
        .expect_code(0);
    }
    assert_eq!(
        wd.read("forward/per_query.csv"),
        wd.read("backward/per_query.csv")
    );

    // Latencies near the largest f64: their means and percentiles stay
    // finite, and compare reads grade's own files.
    let huge = [
        event("1.7e308"),
        event("1.7e308"),
        event("1.7e308").replace("q_export", "q_reset"),
    ];
    wd.write("huge.jsonl", text(&huge));
    wd.rgrade(&[
        "grade",
        "--labels",
        &labels,
        "--repeats",
        "mean",
        "-q",
        "-o",
        "huge",
        "huge.jsonl",
    ])
    .expect_code(0);
    let per_query = wd.read_csv("huge/per_query.csv");
    let export = per_query.row(&[("query_id", "q_export")]);
    assert_cell(&export, "latency_ms", 1.7e308);
    let overall = wd
        .read_csv("huge/aggregates.csv")
        .row(&[("task", "*"), ("language", "*")]);
    for column in ["latency_p50_ms", "latency_p95_ms", "latency_p99_ms"] {
        let value: f64 = overall[column].parse().expect("a number");
        assert!(value.is_finite(), "{column} = {value}");
    }
    wd.rgrade(&["compare", "huge", "huge"]).expect_code(0);
}
