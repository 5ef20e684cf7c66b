//! Repeats decided by capture time (`--time-field`, docs/reference.md,
//! "Capture time"): `--repeats first|last` keep the earliest or latest
//! capture whatever the file order, ties in input order; a capture with no
//! time is `bad_time`; partial gradings of shards cut by time merge into
//! what one grading of every file writes.

use std::sync::Arc;

use arrow_array::builder::{ListBuilder, StringBuilder};
use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray, TimestampMicrosecondArray};
use parquet::arrow::ArrowWriter;

use crate::util::{assert_cell, assert_counts_add_up, count, text, Workdir};

const LABELS: &str = concat!(
    r#"{"query_id": "q1", "relevant": ["a"]}"#,
    "\n",
    r#"{"query_id": "q2", "relevant": ["b"]}"#,
    "\n",
    r#"{"query_id": "q3", "relevant": ["c"]}"#,
    "\n",
);

/// Two files whose input order is not time order: q1's latest capture is
/// in the first file, q3's in the second; q2's two captures are the same
/// instant (seconds in one file, milliseconds in the other), so input
/// order decides.
fn write_two_files(wd: &Workdir) {
    wd.write("labels.jsonl", LABELS);
    wd.write(
        "logs/a.jsonl",
        text(&[
            r#"{"query_id": "q1", "results": ["a"], "ts": "2026-12-01T10:00:00Z"}"#,
            r#"{"query_id": "q2", "results": ["x", "b"], "ts": 1796094000}"#,
            r#"{"query_id": "q3", "results": ["c"], "ts": "2026-12-01T05:00:00+02:00"}"#,
        ]),
    );
    wd.write(
        "logs/b.jsonl",
        text(&[
            r#"{"query_id": "q1", "results": ["x"], "ts": "2026-12-01 02:00:00"}"#,
            r#"{"query_id": "q2", "results": ["b"], "ts": 1796094000000}"#,
            r#"{"query_id": "q3", "results": ["x"], "ts": 1796096400.5}"#,
        ]),
    );
}

/// rr@10 of q1, q2 and q3 in `dir`.
fn reciprocal_ranks(wd: &Workdir, dir: &str) -> Vec<f64> {
    let per_query = wd.read_csv(&format!("{dir}/per_query.csv"));
    ["q1", "q2", "q3"]
        .iter()
        .map(|q| {
            let row = per_query.row(&[("query_id", q)]);
            row["rr@10"].parse().unwrap()
        })
        .collect()
}

#[test]
fn repeats_keep_the_earliest_or_latest_capture_by_time() {
    let wd = Workdir::new("time_repeats");
    write_two_files(&wd);
    let grade = |out: &str, extra: &[&str]| {
        let mut args = vec!["grade", "--labels", "labels.jsonl", "-o", out];
        args.extend_from_slice(extra);
        args.push("logs");
        wd.rgrade(&args).expect_code(0);
    };
    grade("last", &["--time-field", "ts", "--repeats", "last"]);
    assert_eq!(reciprocal_ranks(&wd, "last"), [1.0, 1.0, 0.0]);
    grade("first", &["--time-field", "ts", "--repeats", "first"]);
    assert_eq!(reciprocal_ranks(&wd, "first"), [0.0, 0.5, 1.0]);
    // Without a time field, input order: the second file's captures.
    grade("input_order", &["--repeats", "last"]);
    assert_eq!(reciprocal_ranks(&wd, "input_order"), [0.0, 1.0, 0.0]);
    let summary = wd.read_json("last/summary.json");
    assert_eq!(count(&summary, "superseded_records"), 3);
    assert_counts_add_up(&summary);
}

/// With a time field, a capture of a graded stage whose time is missing,
/// null or no time is rejected as `bad_time`, naming the field; one of a
/// stage left out is not read, and so not rejected.
#[test]
fn a_capture_without_a_readable_time_is_rejected() {
    let wd = Workdir::new("time_bad");
    write_two_files(&wd);
    wd.write(
        "logs/c.jsonl",
        text(&[
            r#"{"query_id": "q1", "results": ["a"]}"#,
            r#"{"query_id": "q1", "results": ["a"], "ts": null}"#,
            r#"{"query_id": "q1", "results": ["a"], "ts": "yesterday"}"#,
            r#"{"query_id": "q1", "results": ["a"], "ts": true}"#,
            r#"{"query_id": "q1", "stage": "retrieve", "results": ["a"]}"#,
        ]),
    );
    let run = wd.rgrade(&[
        "grade",
        "--labels",
        "labels.jsonl",
        "-o",
        "out",
        "--time-field",
        "ts",
        "--repeats",
        "first",
        "--stage",
        "final",
        "logs",
    ]);
    run.expect_code(1);
    let rejects = wd.read_jsonl("out/rejects.jsonl");
    let reasons: Vec<&str> = rejects
        .iter()
        .map(|r| r["reason"].as_str().unwrap())
        .collect();
    assert_eq!(reasons, ["bad_time"; 4]);
    let details: Vec<&str> = rejects
        .iter()
        .map(|r| r["detail"].as_str().unwrap())
        .collect();
    assert!(details[0].contains("'ts' is absent or null"), "{details:?}");
    assert!(
        details[2].contains("'ts' is \"yesterday\", not a time"),
        "{details:?}"
    );
    // The rejected captures do not displace the valid ones.
    assert_eq!(reciprocal_ranks(&wd, "out"), [0.0, 0.5, 1.0]);
    let summary = wd.read_json("out/summary.json");
    assert_eq!(count(&summary, "other_stage_events"), 1);
    assert_counts_add_up(&summary);
}

/// Write `columns` as a Parquet file.
fn write_parquet(wd: &Workdir, rel: &str, columns: Vec<(&str, ArrayRef)>) {
    let batch = RecordBatch::try_from_iter(columns).unwrap();
    let file = std::fs::File::create(wd.path(rel)).unwrap();
    let mut writer = ArrowWriter::try_new(file, batch.schema(), None).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
}

fn ids(values: &[&str]) -> ArrayRef {
    Arc::new(StringArray::from(values.to_vec()))
}

fn results(rows: &[&[&str]]) -> ArrayRef {
    let mut builder = ListBuilder::new(StringBuilder::new());
    for row in rows {
        for id in *row {
            builder.values().append_value(id);
        }
        builder.append(true);
    }
    Arc::new(builder.finish())
}

/// A Parquet time column is a timestamp of any unit and zone (the instant
/// is what counts), or a number counting since 1970; a null is `bad_time`;
/// a time field that names no column stops the run, naming it and the
/// columns there are.
#[test]
fn parquet_time_columns_order_repeats() {
    let wd = Workdir::new("time_parquet");
    wd.write("labels.jsonl", LABELS);
    std::fs::create_dir_all(wd.path("logs")).unwrap();
    // 2026-12-01T03:00:00Z in microseconds, written in a zone two hours east.
    let at = 1_796_094_000_000_000i64;
    let hour = 3_600_000_000i64;
    let zoned = TimestampMicrosecondArray::from(vec![Some(at + 7 * hour), Some(at), None])
        .with_timezone("+02:00");
    write_parquet(
        &wd,
        "logs/a.parquet",
        vec![
            ("query_id", ids(&["q1", "q3", "q2"])),
            ("results", results(&[&["a"], &["c"], &["b"]])),
            ("ts", Arc::new(zoned) as ArrayRef),
        ],
    );
    // Milliseconds since 1970.
    let ms = Int64Array::from(vec![(at - 2 * hour) / 1000, (at + hour) / 1000]);
    write_parquet(
        &wd,
        "logs/b.parquet",
        vec![
            ("query_id", ids(&["q1", "q3"])),
            ("results", results(&[&["x"], &["x"]])),
            ("ts", Arc::new(ms) as ArrayRef),
        ],
    );
    let grade = |out: &str, repeats: &str, field: &str| {
        wd.rgrade(&[
            "grade",
            "--labels",
            "labels.jsonl",
            "-o",
            out,
            "--time-field",
            field,
            "--repeats",
            repeats,
            "logs",
        ])
    };
    grade("last", "last", "ts").expect_code(1);
    let per_query = wd.read_csv("last/per_query.csv");
    assert_cell(&per_query.row(&[("query_id", "q1")]), "recall@10", 1.0);
    assert_cell(&per_query.row(&[("query_id", "q3")]), "recall@10", 0.0);
    let rejects = wd.read_jsonl("last/rejects.jsonl");
    assert_eq!(rejects.len(), 1);
    assert_eq!(rejects[0]["reason"], "bad_time");
    grade("first", "first", "ts").expect_code(1);
    let per_query = wd.read_csv("first/per_query.csv");
    assert_cell(&per_query.row(&[("query_id", "q1")]), "recall@10", 0.0);
    assert_cell(&per_query.row(&[("query_id", "q3")]), "recall@10", 1.0);
    grade("none", "last", "captured_at")
        .expect_code(2)
        .expect_stderr(&[
            "logs/a.parquet",
            "the field 'captured_at' that --time-field names",
            "have query_id, results, ts",
        ]);
}

/// One capture per query in each hour of a day, in `lake/hour=HH/`, the
/// hours' files listed latest capture first; the query `q2` has no
/// capture in the last hours, so its latest is in the morning.
fn write_day(wd: &Workdir) {
    wd.write("labels.jsonl", LABELS);
    for hour in 0..24 {
        let mut lines = Vec::new();
        for minute in [50, 10] {
            for (q, docs) in [("q1", ["a", "x"]), ("q2", ["b", "y"]), ("q3", ["z", "c"])] {
                if q == "q2" && hour >= 12 {
                    continue;
                }
                // Rankings that change with the hour, so that which capture
                // is kept shows in the grade.
                let ranked = if (hour + minute / 10) % 4 == 1 {
                    format!(r#"["{}", "{}"]"#, docs[0], docs[1])
                } else {
                    format!(r#"["{}"]"#, docs[1])
                };
                lines.push(format!(
                    r#"{{"query_id": "{q}", "results": {ranked}, "ts": "2026-12-01T{hour:02}:{minute}:00Z"}}"#
                ));
            }
        }
        wd.write(&format!("lake/hour={hour:02}/part-0.jsonl"), text(&lines));
    }
}

/// Hours 00-11 and 12-23 graded as two partial gradings and merged write
/// the per_query.csv and aggregates.csv one grading of the whole day
/// writes, under `first`, `last` and `mean`, whichever shard comes first;
/// under `error` the merge is refused, naming the query and both shards.
#[test]
fn shards_cut_by_time_merge_as_one_grading() {
    let wd = Workdir::new("time_shards");
    write_day(&wd);
    let hours = |range: std::ops::Range<usize>| -> Vec<String> {
        range.map(|hour| format!("lake/hour={hour:02}")).collect()
    };
    let (morning, evening) = (hours(0..12), hours(12..24));
    for repeats in ["first", "last", "mean"] {
        let options = [
            "--labels",
            "labels.jsonl",
            "--time-field",
            "ts",
            "--repeats",
            repeats,
        ];
        let grade = |out: &str, partial: bool, logs: &[String]| {
            let mut args = vec!["grade"];
            args.extend_from_slice(&options);
            if partial {
                args.push("--partial");
            }
            args.extend(["-q", "-o", out]);
            args.extend(logs.iter().map(String::as_str));
            wd.rgrade(&args).expect_code(0);
        };
        let whole = format!("{repeats}_whole");
        grade(&whole, false, &["lake".to_string()]);
        grade(&format!("{repeats}_am"), true, &morning);
        grade(&format!("{repeats}_pm"), true, &evening);
        for (merged, order) in [("merged", ["am", "pm"]), ("reversed", ["pm", "am"])] {
            let merged = format!("{repeats}_{merged}");
            let shards = order.map(|half| format!("{repeats}_{half}"));
            wd.rgrade(&[
                "merge",
                "--labels",
                "labels.jsonl",
                "-q",
                "-o",
                &merged,
                &shards[0],
                &shards[1],
            ])
            .expect_code(0);
            for file in ["per_query.csv", "aggregates.csv"] {
                let (one, theirs) = (
                    wd.read(&format!("{whole}/{file}")),
                    wd.read(&format!("{merged}/{file}")),
                );
                assert!(one == theirs, "{file} of {merged} differs from {whole}");
            }
            let summary = wd.read_json(&format!("{merged}/summary.json"));
            assert_counts_add_up(&summary);
        }
    }
    // The latest captures: q1 and q3 at 23:50, q2 at 11:50; the earliest
    // at 00:10.
    assert_eq!(reciprocal_ranks(&wd, "last_whole"), [0.0, 0.0, 1.0]);
    assert_eq!(reciprocal_ranks(&wd, "first_whole"), [1.0, 1.0, 0.5]);
    for (shard, hour) in [("error_am", "08"), ("error_pm", "20")] {
        let log = format!("{shard}.jsonl");
        let capture =
            format!(r#"{{"query_id": "q1", "results": ["a"], "ts": "2026-12-01T{hour}:00:00Z"}}"#);
        wd.write(&log, text(&[capture]));
        let args = [
            "grade",
            "--labels",
            "labels.jsonl",
            "--partial",
            "-o",
            shard,
            &log,
        ];
        wd.rgrade(&args).expect_code(0);
    }
    wd.rgrade(&[
        "merge",
        "--labels",
        "labels.jsonl",
        "-o",
        "error",
        "error_am",
        "error_pm",
    ])
    .expect_code(2)
    .expect_stderr(&[
        "query_id 'q1' was captured in two shards, error_am and error_pm",
        "--repeats error",
    ]);
}

/// An OTLP export of two RETRIEVER spans of `q1`, listed latest start
/// first; each also names its time in the attribute `captured_at`, in the
/// other order.
fn spans_export() -> String {
    let span = |start: &str, at: &str, doc: &str| {
        serde_json::json!({
            "name": "retrieve",
            "startTimeUnixNano": start,
            "endTimeUnixNano": start,
            "attributes": [
                {"key": "openinference.span.kind", "value": {"stringValue": "RETRIEVER"}},
                {"key": "metadata", "value": {"stringValue": "{\"query_id\": \"q1\"}"}},
                {"key": "captured_at", "value": {"stringValue": at}},
                {"key": "retrieval.documents.0.document.id", "value": {"stringValue": doc}},
            ],
        })
    };
    let export = serde_json::json!({"resourceSpans": [{"scopeSpans": [{"spans": [
        span("1796097600000000000", "2026-12-01T01:00:00Z", "a"),
        span("1796094000000000000", "2026-12-01T05:00:00Z", "x"),
    ]}]}]});
    format!("{export}\n")
}

/// A span's time is its start by default; `--time-field` names an
/// attribute instead.
#[test]
fn spans_order_repeats_by_their_start_unless_told() {
    let wd = Workdir::new("time_spans");
    wd.write("labels.jsonl", LABELS);
    wd.write("traces.jsonl", spans_export());
    for (out, extra, want) in [
        ("by_start", vec![], 1.0),
        ("by_attribute", vec!["--time-field", "captured_at"], 0.0),
    ] {
        let mut args = vec![
            "grade",
            "--labels",
            "labels.jsonl",
            "--repeats",
            "last",
            "-o",
            out,
        ];
        args.extend(extra);
        args.push("traces.jsonl");
        wd.rgrade(&args).expect_code(0);
        let per_query = wd.read_csv(&format!("{out}/per_query.csv"));
        let row = per_query.row(&[("query_id", "q1"), ("stage", "retrieve")]);
        assert_cell(&row, "recall@10", want);
    }
}

/// Without a time field, repeats decided in the path order of Hive
/// partitions that is not time order warn, on stderr and in summary.json,
/// naming `--time-field`; with one, or in zero-padded partitions of one
/// file each, nothing is said.
#[test]
fn repeats_in_a_path_order_that_is_not_time_order_warn() {
    let wd = Workdir::new("time_path_order");
    wd.write("labels.jsonl", LABELS);
    let capture = |docs: &str, at: &str| {
        format!(r#"{{"query_id": "q1", "results": {docs}, "ts": "2026-12-01T{at}:00:00Z"}}"#)
    };
    wd.write(
        "hive/dt=2026-12-01/hour=2/part-0.jsonl",
        text(&[capture(r#"["x"]"#, "02")]),
    );
    wd.write(
        "hive/dt=2026-12-01/hour=10/part-0.jsonl",
        text(&[capture(r#"["a"]"#, "10")]),
    );
    wd.write(
        "padded/hour=02/part-0.jsonl",
        text(&[capture(r#"["x"]"#, "02")]),
    );
    wd.write(
        "padded/hour=10/part-0.jsonl",
        text(&[capture(r#"["a"]"#, "10")]),
    );
    let grade = |out: &str, lake: &str, extra: &[&str]| {
        let mut args = vec![
            "grade",
            "--labels",
            "labels.jsonl",
            "--repeats",
            "last",
            "-o",
            out,
        ];
        args.extend_from_slice(extra);
        args.push(lake);
        let run = wd.rgrade(&args);
        run.expect_code(0);
        let summary = wd.read_json(&format!("{out}/summary.json"));
        (run.stderr, summary["repeats_in_path_order"].clone())
    };
    let (stderr, noted) = grade("hive", "hive", &[]);
    assert!(
        stderr.contains("'hour=10' sorts before 'hour=2'"),
        "{stderr}"
    );
    assert!(stderr.contains("--time-field FIELD"), "{stderr}");
    assert_eq!(noted, "'hour=10' sorts before 'hour=2'");
    // The last in path order, hour=2, not the latest.
    assert_eq!(reciprocal_ranks(&wd, "hive")[0], 0.0);
    let (stderr, noted) = grade("timed", "hive", &["--time-field", "ts"]);
    assert!(!stderr.contains("sorts before"), "{stderr}");
    assert!(noted.is_null());
    assert_eq!(reciprocal_ranks(&wd, "timed")[0], 1.0);
    let (stderr, noted) = grade("padded", "padded", &[]);
    assert!(!stderr.contains("path order"), "{stderr}");
    assert!(noted.is_null());
}

/// A `key=value` folder below the LOGS folder is a field of every record
/// under it, as Spark and pyarrow read a partition column: the run and
/// time fields may name it, and it wins over a record's own field of that
/// name (here a number, which as a run would be `bad_field`). Values are
/// percent-decoded as Hive writes them.
#[test]
fn partition_folders_are_fields_of_their_records() {
    let wd = Workdir::new("time_partitions");
    wd.write("labels.jsonl", LABELS);
    let capture = |docs: &str| format!(r#"{{"query_id": "q1", "results": {docs}, "hour": 99}}"#);
    wd.write(
        "lake/east/dt=2026-12-02/hour=2/part-0.jsonl",
        text(&[capture(r#"["a"]"#)]),
    );
    wd.write(
        "lake/west/dt=2026-12-01/hour=10%2B1/part-0.jsonl",
        text(&[capture(r#"["x"]"#)]),
    );
    wd.rgrade(&[
        "grade",
        "--labels",
        "labels.jsonl",
        "--run-field",
        "hour",
        "-o",
        "by_hour",
        "lake",
    ])
    .expect_code(0);
    let per_query = wd.read_csv("by_hour/per_query.csv");
    assert_cell(
        &per_query.row(&[("run", "2"), ("query_id", "q1")]),
        "recall@10",
        1.0,
    );
    assert_cell(
        &per_query.row(&[("run", "10+1"), ("query_id", "q1")]),
        "recall@10",
        0.0,
    );
    // dt=2026-12-02 is the later day, though its path (east/) sorts first.
    for (repeats, want) in [("last", 1.0), ("first", 0.0)] {
        let out = format!("by_day_{repeats}");
        wd.rgrade(&[
            "grade",
            "--labels",
            "labels.jsonl",
            "--time-field",
            "dt",
            "--repeats",
            repeats,
            "-o",
            &out,
            "lake",
        ])
        .expect_code(0);
        let per_query = wd.read_csv(&format!("{out}/per_query.csv"));
        assert_cell(&per_query.row(&[("query_id", "q1")]), "recall@10", want);
    }
}
