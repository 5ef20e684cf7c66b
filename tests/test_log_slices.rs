//! `grade --slice-by FIELD`: aggregates sliced by a field the logs
//! recorded, beside the answer key's task × language. Each query counts in
//! the slice of its graded capture's value, `(none)` without one; the
//! means per slice are checked against sums done by hand, and slicing adds
//! columns and rows without changing any other cell.

use crate::util::{assert_cell, assert_text, text, Table, Workdir};

/// Six labeled queries, one relevant document each; `q6` has no capture.
const LABELS: [&str; 6] = [
    r#"{"query_id": "q1", "relevant": ["a"], "task": "howto", "language": "en"}"#,
    r#"{"query_id": "q2", "relevant": ["b"], "task": "howto", "language": "de"}"#,
    r#"{"query_id": "q3", "relevant": ["c"], "task": "faq", "language": "en"}"#,
    r#"{"query_id": "q4", "relevant": ["d"], "task": "faq", "language": "de"}"#,
    r#"{"query_id": "q5", "relevant": ["e"], "task": "faq", "language": "en"}"#,
    r#"{"query_id": "q6", "relevant": ["f"], "task": "faq", "language": "en"}"#,
];

/// At k = 1: q1, q3 and q4 find their document first (recall 1), q2 and
/// q5 do not (recall 0). acme holds q1, q2, q3; zeta holds q4; q5 records
/// no tenant. The logged language is a pointer into `ctx`; `shard` is a
/// number and `beta` a boolean, read as their JSON text.
const LOGS: [&str; 5] = [
    r#"{"query_id": "q1", "results": ["a", "x"], "tenant": "acme", "ctx": {"lang": "en"}, "shard": 3}"#,
    r#"{"query_id": "q2", "results": ["x", "b"], "tenant": "acme", "ctx": {"lang": "de"}, "shard": 3}"#,
    r#"{"query_id": "q3", "results": ["c"], "tenant": "acme", "ctx": {"lang": "de"}, "beta": true}"#,
    r#"{"query_id": "q4", "results": ["d"], "tenant": "zeta", "ctx": {"lang": null}}"#,
    r#"{"query_id": "q5", "results": ["x", "e"]}"#,
];

fn workdir(name: &str, logs: &[&str]) -> Workdir {
    let wd = Workdir::new(name);
    wd.write("labels.jsonl", text(&LABELS));
    wd.write("logs.jsonl", text(logs));
    wd
}

/// The row of aggregates.csv of `value` of the slice field `field`, every
/// other slice field `*`.
fn slice_row(
    table: &Table,
    fields: &[&str],
    field: &str,
    value: &str,
) -> std::collections::HashMap<String, String> {
    let mut key = vec![("task", "*"), ("language", "*"), ("split", "*")];
    key.extend(
        fields
            .iter()
            .map(|&f| (f, if f == field { value } else { "*" })),
    );
    table.row(&key)
}

/// Each tenant's means are those of its queries: acme 2 of 3 found, zeta
/// 1 of 1; `(none)` holds q5, which records no tenant, and q6, which no
/// record captured (missing, scoring 0). per_query.csv names each query's
/// value; the stdout table shows `tenant=acme`; summary.json records the
/// option.
#[test]
fn slices_by_a_logged_field_average_their_queries() {
    let wd = workdir("log_slices_means", &LOGS);
    let fields = ["tenant", "/ctx/lang", "shard", "beta"];
    let run = wd.rgrade(&[
        "grade",
        "--labels",
        "labels.jsonl",
        "-k",
        "1",
        "--slice-by",
        "tenant,/ctx/lang",
        "--slice-by",
        "shard",
        "--slice-by",
        "beta",
        "-o",
        "out",
        "logs.jsonl",
    ]);
    run.expect_code(0);

    let per_query = wd.read_csv("out/per_query.csv");
    assert_eq!(per_query.header[per_query.header.len() - 4..], fields);
    for (query, tenant, lang, shard, beta) in [
        ("q1", "acme", "en", "3", "(none)"),
        ("q2", "acme", "de", "3", "(none)"),
        ("q3", "acme", "de", "(none)", "true"),
        ("q4", "zeta", "(none)", "(none)", "(none)"),
        ("q5", "(none)", "(none)", "(none)", "(none)"),
        ("q6", "(none)", "(none)", "(none)", "(none)"),
    ] {
        let row = per_query.row(&[("query_id", query)]);
        for (field, want) in fields.iter().zip([tenant, lang, shard, beta]) {
            assert_text(&row, field, want);
        }
    }

    let aggregates = wd.read_csv("out/aggregates.csv");
    assert_eq!(aggregates.header[aggregates.header.len() - 4..], fields);
    // The answer key's sets are marked `*` in every field column.
    let overall = slice_row(&aggregates, &fields, "", "");
    assert_cell(&overall, "queries", 6.0);
    assert_cell(&overall, "recall@1", 3.0 / 6.0);
    for (field, value, queries, missing, recall) in [
        ("tenant", "acme", 3.0, 0.0, 2.0 / 3.0),
        ("tenant", "zeta", 1.0, 0.0, 1.0),
        ("tenant", "(none)", 2.0, 1.0, 0.0),
        ("/ctx/lang", "en", 1.0, 0.0, 1.0),
        ("/ctx/lang", "de", 2.0, 0.0, 0.5),
        ("/ctx/lang", "(none)", 3.0, 1.0, 1.0 / 3.0),
        ("shard", "3", 2.0, 0.0, 0.5),
        ("beta", "true", 1.0, 0.0, 1.0),
    ] {
        let row = slice_row(&aggregates, &fields, field, value);
        assert_cell(&row, "queries", queries);
        assert_cell(&row, "missing", missing);
        assert_cell(&row, "recall@1", recall);
        assert_cell(&row, "hit@1", recall);
    }
    // One row per value of each field, crossed with nothing: the key's 1
    // overall + 2 tasks + 2 languages + 4 task × language, then 3 + 3 + 2
    // + 2 values.
    assert_eq!(aggregates.rows.len(), 9 + 10);

    let table = run.stdout_table();
    let slices = &table[&("(unnamed)".to_string(), "final".to_string())];
    assert_eq!(slices["tenant=acme"]["queries"], "3");
    assert_eq!(slices["tenant=acme"]["recall@1"], "0.667");
    assert_eq!(slices["tenant=(none)"]["missing"], "1");

    let summary = wd.read_json("out/summary.json");
    assert_eq!(summary["settings"]["slice_by"], serde_json::json!(fields));
    let report = wd.read_text("out/report.html");
    assert!(report.contains("Slices by log fields") && report.contains("tenant=acme"));
}

/// Slicing adds its columns and rows and changes no other cell: the
/// grading without the option is the sliced one without them.
#[test]
fn slicing_changes_no_other_cell() {
    let wd = workdir("log_slices_unchanged", &LOGS);
    for (out, extra) in [("plain", None), ("sliced", Some("tenant"))] {
        let mut args = vec!["grade", "--labels", "labels.jsonl", "-k", "1,3", "-o", out];
        args.extend(
            extra
                .map(|field| ["--slice-by", field])
                .into_iter()
                .flatten(),
        );
        args.push("logs.jsonl");
        wd.rgrade(&args).expect_code(0);
    }
    let plain = wd.read_text("plain/per_query.csv");
    let sliced = wd.read_text("sliced/per_query.csv");
    let cut = |line: &str| {
        line.rsplit_once(',')
            .map_or(line, |(rest, _)| rest)
            .to_string()
    };
    assert_eq!(
        plain.lines().map(String::from).collect::<Vec<_>>(),
        sliced.lines().map(cut).collect::<Vec<_>>()
    );
    let plain = wd.read_text("plain/aggregates.csv");
    let sliced = wd.read_text("sliced/aggregates.csv");
    let key_sets: Vec<String> = (sliced.lines())
        .filter(|line| line.ends_with(",*") || line.ends_with(",tenant"))
        .map(cut)
        .collect();
    assert_eq!(
        plain.lines().map(String::from).collect::<Vec<_>>(),
        key_sets
    );
}

/// A query of several captures takes the value of the one graded: the
/// first or the last in input order; under `--repeats mean`, the value
/// all its captures share, else `(mixed)`.
#[test]
fn repeats_choose_the_value_of_the_graded_capture() {
    let logs = [
        r#"{"query_id": "q1", "results": ["x", "a"], "tenant": "acme"}"#,
        r#"{"query_id": "q1", "results": ["a"], "tenant": "zeta"}"#,
        r#"{"query_id": "q2", "results": ["b"], "tenant": "acme"}"#,
        r#"{"query_id": "q2", "results": ["x"], "tenant": "acme"}"#,
    ];
    let wd = workdir("log_slices_repeats", &logs);
    for (policy, q1, q2) in [
        ("first", "acme", "acme"),
        ("last", "zeta", "acme"),
        ("mean", "(mixed)", "acme"),
    ] {
        let args = [
            "grade",
            "--labels",
            "labels.jsonl",
            "-k",
            "1",
            "--repeats",
            policy,
            "--slice-by",
            "tenant",
            "--missing",
            "skip",
            "-o",
            policy,
            "logs.jsonl",
        ];
        wd.rgrade(&args).expect_code(0);
        let per_query = wd.read_csv(&format!("{policy}/per_query.csv"));
        assert_text(&per_query.row(&[("query_id", "q1")]), "tenant", q1);
        assert_text(&per_query.row(&[("query_id", "q2")]), "tenant", q2);
        let aggregates = wd.read_csv(&format!("{policy}/aggregates.csv"));
        let acme = slice_row(&aggregates, &["tenant"], "tenant", "acme");
        // q1 scores 0 first and 1 last; q2 1 first and 0 last.
        let want = match policy {
            "first" => (2.0, 0.5),
            "last" => (1.0, 0.0),
            _ => (1.0, 0.5),
        };
        assert_cell(&acme, "queries", want.0);
        assert_cell(&acme, "recall@1", want.1);
    }
    let mixed = slice_row(
        &wd.read_csv("mean/aggregates.csv"),
        &["tenant"],
        "tenant",
        "(mixed)",
    );
    assert_cell(&mixed, "recall@1", 0.5);
}

/// A value that is an object or an array names no one slice: the record
/// is rejected (`bad_field`, naming the field), as a stage that is no
/// string is.
#[test]
fn a_structured_value_is_rejected_naming_the_field() {
    let logs = [
        r#"{"query_id": "q1", "results": ["a"], "tenant": {"id": 1}}"#,
        r#"{"query_id": "q2", "results": ["b"], "tenant": ["acme"]}"#,
        r#"{"query_id": "q3", "results": ["c"], "tenant": "acme"}"#,
    ];
    let wd = workdir("log_slices_structured", &logs);
    let run = wd.rgrade(&[
        "grade",
        "--labels",
        "labels.jsonl",
        "--slice-by",
        "tenant",
        "-o",
        "out",
        "logs.jsonl",
    ]);
    run.expect_code(1)
        .expect_stderr(&["bad_field", "'tenant' holds an object or an array"]);
    let rejects = wd.read_jsonl("out/rejects.jsonl");
    assert_eq!(rejects.len(), 2);
    assert!(rejects.iter().all(|r| r["reason"] == "bad_field"));
    let per_query = wd.read_csv("out/per_query.csv");
    assert_text(&per_query.row(&[("query_id", "q1")]), "status", "invalid");
    assert_text(&per_query.row(&[("query_id", "q1")]), "tenant", "(none)");
    assert_text(&per_query.row(&[("query_id", "q3")]), "tenant", "acme");
}

/// A field named as an existing column, or twice, is refused before
/// anything is read (exit 2), naming the option.
#[test]
fn a_field_named_as_a_column_or_twice_is_refused() {
    let wd = workdir("log_slices_refused", &LOGS);
    for (fields, needle) in [
        ("task", "per_query.csv already has a column 'task'"),
        ("recall@10", "already has a column 'recall@10'"),
        ("tenant,tenant", "field tenant is given twice in --slice-by"),
    ] {
        wd.rgrade(&[
            "grade",
            "--labels",
            "labels.jsonl",
            "--slice-by",
            fields,
            "-o",
            "out",
            "logs.jsonl",
        ])
        .expect_code(2)
        .expect_stderr(&["--slice-by", needle]);
        assert!(!wd.exists("out/summary.json"));
    }
}

/// Shards graded apart with `--slice-by` carry each capture's values, so
/// their merge writes the per_query.csv and aggregates.csv one grading
/// writes; compare and trend refuse a sliced grading by the option's
/// name, rather than compare it without its slices.
#[test]
fn merge_carries_the_values_and_compare_refuses_them() {
    let wd = workdir("log_slices_merge", &LOGS);
    wd.write("shard0.jsonl", text(&LOGS[..2]));
    wd.write("shard1.jsonl", text(&LOGS[2..]));
    let grade = |out: &str, extra: &[&str], logs: &str| {
        let mut args = vec![
            "grade",
            "--labels",
            "labels.jsonl",
            "-k",
            "1",
            "--slice-by",
            "tenant",
        ];
        args.extend_from_slice(extra);
        args.extend(["-o", out, logs]);
        wd.rgrade(&args).expect_code(0);
    };
    grade("one", &[], "logs.jsonl");
    grade("p0", &["--partial"], "shard0.jsonl");
    grade("p1", &["--partial"], "shard1.jsonl");
    wd.rgrade(&[
        "merge",
        "--labels",
        "labels.jsonl",
        "-o",
        "merged",
        "p0",
        "p1",
    ])
    .expect_code(0);
    for file in ["per_query.csv", "aggregates.csv"] {
        assert_eq!(
            wd.read_text(&format!("one/{file}")),
            wd.read_text(&format!("merged/{file}")),
            "{file}"
        );
    }
    wd.rgrade(&["compare", "one", "merged"])
        .expect_code(2)
        .expect_stderr(&[
            "graded with --slice-by tenant",
            "do not read slices by log fields",
        ]);
    wd.rgrade(&["trend", "one", "merged"])
        .expect_code(2)
        .expect_stderr(&["--slice-by tenant"]);
}
