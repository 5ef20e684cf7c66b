//! `rgrade grade` as a user meets it: the worked example's numbers on stdout
//! and in every output, `--missing` and `--min-rel`, the exit status when
//! stdout closes early, an `-o` that cannot be made, and the warning when no
//! event matches a labeled query.
//!
//! Each test writes its own small inputs (or uses the shipped worked example
//! in `data-samples/seed/`), runs the real binary in a scratch directory and
//! reads the outputs back: CSV into rows, summary.json and rejects.jsonl
//! through serde_json, the stdout table into cells.

use std::io::{BufRead, BufReader};

use rgrade::Cutoff;

use crate::util::{
    aggregates_header, assert_cell, assert_text, count, discount, gzip, in_file, metric_columns,
    per_query_header, reject_keys, seed, text, Run, Workdir, RUN_TIMEOUT,
};

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
    assert_eq!(
        per_query.header,
        per_query_header(&[Cutoff::At(3)], Cutoff::At(3))
    );
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
    assert_eq!(aggregates.header, aggregates_header(&[Cutoff::At(3)], None));
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
    for metric in metric_columns(&[Cutoff::At(1)]) {
        assert_cell(&missing, &metric, 0.0);
    }
    assert_text(&missing, "missing_at_1", "b");
    let invalid = per_query.row(&[("query_id", "q_invalid")]);
    assert_text(&invalid, "status", "invalid");
    assert_cell(&invalid, "recall@1", 0.0);
    let none = per_query.row(&[("query_id", "q_none")]);
    assert_text(&none, "status", "no_answer");
    assert_cell(&none, "n_relevant", 0.0);
    for metric in metric_columns(&[Cutoff::At(1)]) {
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
    for metric in metric_columns(&[Cutoff::At(1)]) {
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
/// left with no relevant document is graded as trec_eval `-l 2` grades it:
/// 0 but for its nDCG, in the means.
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
    assert_text(&low, "status", "ok");
    assert_cell(&low, "n_relevant", 0.0);
    assert_text(&low, "first_rel_rank", "");
    for metric in ["recall", "rr", "hit", "precision", "ap"] {
        assert_cell(&low, &format!("{metric}@3"), 0.0);
    }
    // d, graded 1, at rank 1 of an ideal ranking of d alone.
    assert_cell(&low, "ndcg@3", 1.0);
    assert_text(&low, "missing_at_3", "");
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

/// A `--stage` no record had is a typo until shown otherwise: named alone,
/// nothing is graded (exit 2, no outputs); beside a stage that was read,
/// it is a warning and the rest is graded.
#[test]
fn a_stage_no_record_had_is_an_error_or_a_warning() {
    let wd = Workdir::new("stage_typo");
    let labels = seed("labels.jsonl");
    let logs = seed("logs.jsonl");
    let alone = [
        "grade", "--labels", &labels, "--stage", "finall", "-o", "out", &logs,
    ];
    wd.rgrade(&alone)
        .expect_code(2)
        .expect_stderr(&["no record of stage finall", "'stage' field"]);
    assert!(!wd.exists("out/per_query.csv"), "nothing is graded");

    let beside = [
        "grade", "--labels", &labels, "--stage", "final", "--stage", "finall", "-k", "3", &logs,
    ];
    let run = wd.rgrade(&beside);
    run.expect_code(0)
        .expect_stderr(&["warning: no record of --stage finall was read"]);
    let table = run.stdout_table();
    let all = &table[&("(unnamed)".to_string(), "final".to_string())]["all"];
    assert_eq!(all["recall@3"], "0.833", "{run}");

    wd.write("run.trec", "q_export Q0 export_csv 1 2.5 bm25\n");
    wd.rgrade(&[
        "grade", "--labels", &labels, "--stage", "retrieve", "run.trec",
    ])
    .expect_code(2)
    .expect_stderr(&["no record of stage retrieve", "TREC runs are stage final"]);
}

/// In a job's log (stderr not a terminal, as under a scheduler), progress
/// is a line at a time, each ended by a newline, never a bar's redraws:
/// with `--progress-every 0` every block read and judged writes one, and
/// the last counts every record and byte read. `--progress never` writes
/// none; a negative interval is refused.
#[test]
fn progress_in_a_jobs_log_is_whole_lines() {
    let wd = Workdir::new("progress_lines");
    let (labels, logs) = (seed("labels.jsonl"), seed("logs.jsonl"));
    let size = std::fs::metadata(&logs).unwrap().len();
    let run = wd.rgrade(&[
        "grade",
        "--labels",
        &labels,
        "-q",
        "--progress",
        "auto",
        "--progress-every",
        "0",
        &logs,
    ]);
    run.expect_code(0);
    assert!(!run.stderr.contains(['\r', '\u{1b}']), "{run}");
    let lines: Vec<&str> = (run.stderr.lines())
        .filter(|line| line.starts_with("rgrade: progress: "))
        .collect();
    assert!(
        lines.len() >= 2,
        "a line per read and per judged block: {run}"
    );
    let last = lines.last().unwrap();
    assert!(
        last.contains(&format!("{size} B read of {size} B (100%), 3 records, ")),
        "{last}"
    );
    assert!(run.stderr.ends_with('\n'), "{run}");

    let quiet = wd.rgrade(&[
        "grade",
        "--labels",
        &labels,
        "-q",
        "--progress",
        "never",
        "--progress-every",
        "0",
        &logs,
    ]);
    quiet.expect_code(0);
    assert!(!quiet.stderr.contains("progress"), "{quiet}");

    wd.rgrade(&["grade", "--labels", &labels, "--progress-every=-1", &logs])
        .expect_code(2)
        .expect_stderr(&["expected a number of seconds, 0 or more, got '-1'"]);
}
