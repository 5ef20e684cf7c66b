//! Bad input to `rgrade grade`: every reject code with its file, line and
//! excerpt, `--max-rejects` and the exit status, duplicate docs, lines longer
//! than 64 MiB, and summary.json's counts adding up whatever is rejected.

use crate::util::{
    assert_cell, assert_counts_add_up, assert_text, count, in_file, reject_keys, text, Workdir,
};

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

/// A number no 64-bit type holds (a 128-bit trace id, `1e400`) in a field
/// rgrade ignores leaves the record graded, in logs and labels alike; in the
/// query id it is `bad_query_id`, in latency `bad_field`.
#[test]
fn numbers_beyond_64_bits_reject_only_the_fields_rgrade_reads() {
    let wd = Workdir::new("big_numbers");
    wd.write(
        "labels.jsonl",
        text(&[
            r#"{"query_id": "q1", "relevant": ["a"], "batch": 340282366920938463463374607431768211455}"#,
            r#"{"query_id": "q2", "relevant": ["b"], "weight": 1e400}"#,
        ]),
    );
    wd.write(
        "logs.jsonl",
        text(&[
            r#"{"trace_id": 123456789012345678901234567890, "query_id": "q1", "results": ["a"]}"#,
            r#"{"query_id": "q2", "results": ["x", "b"], "attributes": {"span.cost": -1e400}}"#,
            r#"{"query_id": 123456789012345678901234567890, "results": ["a"]}"#,
            r#"{"query_id": "q9", "results": ["b"], "latency_ms": 1e400}"#,
        ]),
    );
    let run = wd.rgrade(&[
        "grade",
        "--labels",
        "labels.jsonl",
        "-k",
        "2",
        "-o",
        "out",
        "logs.jsonl",
    ]);
    run.expect_code(1).expect_stderr(&["2 rejected"]);
    let rejects = wd.read_jsonl("out/rejects.jsonl");
    let want = in_file("logs.jsonl", &[(3, "bad_query_id"), (4, "bad_field")]);
    assert_eq!(reject_keys(&rejects), want);
    let per_query = wd.read_csv("out/per_query.csv");
    assert_cell(&per_query.row(&[("query_id", "q1")]), "rr@2", 1.0);
    assert_cell(&per_query.row(&[("query_id", "q2")]), "rr@2", 0.5);
    assert_counts_add_up(&wd.read_json("out/summary.json"));
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
    // The run's last line is cut before its tag: q2's ranking in run.trec
    // (two lines) is rejected with it.
    let expected = [
        // (policy, graded_records, superseded_records, rejected)
        ("last", 2, 1, 5),
        ("first", 2, 1, 5),
        ("mean", 3, 0, 5),
        ("error", 1, 0, 7),
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
        // Under error every labeled query's captures are rejected: nothing
        // is graded, whatever --max-rejects tolerates.
        .expect_code(if policy == "error" { 1 } else { 0 });
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
