//! Hive partition folders (`dt=…/hour=…`) as fields of every record under
//! them, in JSONL, Parquet (whose files written by pyarrow or Spark keep
//! those values in the path alone) and OTLP traces alike: the run field,
//! the time field and the fields sliced by may name one, and its
//! percent-decoded value wins over a field, column or attribute of the same
//! name. A `--slice-by` or `--time-field` that names no field of any
//! record is refused (exit 2), naming the option and the fields there are.

use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, StringArray};
use serde_json::json;

use crate::test_parquet::{results, write_parquet};
use crate::util::{assert_cell, assert_text, Workdir};

const LABELS: &str = concat!(
    r#"{"query_id": "q1", "relevant": ["a"]}"#,
    "\n",
    r#"{"query_id": "q2", "relevant": ["b"]}"#,
    "\n",
);

/// A capture: its query, its ranking and its tenant.
type Capture = (&'static str, &'static [&'static str], &'static str);

/// The lake: q1 found first on 2026-12-02 in `east/` and missed on
/// 2026-12-01 in `west/`, whose path sorts last; q2 missed once, by
/// tenant zeta. Every record also holds an `hour` of its own (99) that
/// the partition's wins over.
const LAKE: [(&str, &[Capture]); 2] = [
    ("east/dt=2026-12-02/hour=2", &[("q1", &["a"], "acme")]),
    (
        "west/dt=2026-12-01/hour=10%2B1",
        &[("q1", &["x"], "acme"), ("q2", &["x"], "zeta")],
    ),
];

/// The formats a lake is written in.
#[derive(Clone, Copy, Debug)]
enum Format {
    Jsonl,
    Parquet,
    Otlp,
}

/// Write `LAKE` under `lake/` in `format`, each partition one part file.
fn write_lake(wd: &Workdir, format: Format) {
    wd.write("labels.jsonl", LABELS);
    for (folder, captures) in LAKE {
        match format {
            Format::Jsonl => {
                let lines: String = (captures.iter())
                    .map(|(query, docs, tenant)| {
                        let record = json!({"query_id": query, "results": docs,
                            "tenant": tenant, "hour": 99});
                        format!("{record}\n")
                    })
                    .collect();
                wd.write(&format!("lake/{folder}/part-0.jsonl"), lines);
            }
            Format::Parquet => {
                let queries: Vec<&str> = captures.iter().map(|c| c.0).collect();
                let rankings: Vec<Option<Vec<Option<&str>>>> = (captures.iter())
                    .map(|c| Some(c.1.iter().map(|d| Some(*d)).collect()))
                    .collect();
                let tenants: Vec<&str> = captures.iter().map(|c| c.2).collect();
                let path = wd.path(&format!("lake/{folder}/part-0.parquet"));
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                let columns: Vec<(&str, ArrayRef)> = vec![
                    ("query_id", Arc::new(StringArray::from(queries))),
                    ("results", results(&rankings)),
                    ("tenant", Arc::new(StringArray::from(tenants))),
                    ("hour", Arc::new(Int64Array::from(vec![99; captures.len()]))),
                ];
                write_parquet(&path, columns, 10);
            }
            Format::Otlp => {
                let spans: Vec<serde_json::Value> = (captures.iter())
                    .map(|(query, docs, tenant)| retriever(query, docs, tenant))
                    .collect();
                let export = json!({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]});
                wd.write(
                    &format!("lake/{folder}/part-0.jsonl"),
                    format!("{export}\n"),
                );
            }
        }
    }
}

/// A RETRIEVER span of `query` ranking `docs`, by `tenant`, with an
/// integer attribute `hour` (which as a run would be `bad_field`).
fn retriever(query: &str, docs: &[&str], tenant: &str) -> serde_json::Value {
    let string = |key: &str, value: &str| json!({"key": key, "value": {"stringValue": value}});
    let mut attributes = vec![
        string("openinference.span.kind", "RETRIEVER"),
        string("metadata", &json!({"query_id": query}).to_string()),
        string("tenant", tenant),
        json!({"key": "hour", "value": {"intValue": "99"}}),
    ];
    for (i, doc) in docs.iter().enumerate() {
        attributes.push(string(&format!("retrieval.documents.{i}.document.id"), doc));
    }
    json!({"name": "retrieve", "startTimeUnixNano": "1000000000",
        "endTimeUnixNano": "1002000000", "attributes": attributes})
}

/// Grade the lake with `extra` options into `out`.
fn grade(wd: &Workdir, out: &str, extra: &[&str]) -> crate::util::Run {
    let mut args = vec!["grade", "--labels", "labels.jsonl", "-k", "10", "-o", out];
    args.extend_from_slice(extra);
    args.push("lake");
    wd.rgrade(&args)
}

/// In every format: the run field names the partition's `hour`,
/// percent-decoded (`10%2B1` is run `10+1`) and never the record's own;
/// the time field names `dt`, so `--repeats last` keeps q1's later day
/// although its path sorts first; and `dt` slices beside the record's
/// `tenant`, each query in the slice of its graded capture.
#[test]
fn partition_folders_are_fields_in_every_format() {
    for format in [Format::Jsonl, Format::Parquet, Format::Otlp] {
        let wd = Workdir::new(&format!("partitions_{format:?}"));
        write_lake(&wd, format);

        grade(&wd, "by_hour", &["--run-field", "hour"]).expect_code(0);
        let per_query = wd.read_csv("by_hour/per_query.csv");
        for (run, want) in [("2", 1.0), ("10+1", 0.0)] {
            let row = per_query.row(&[("run", run), ("query_id", "q1")]);
            assert_cell(&row, "recall@10", want);
        }

        let sliced = [
            "--time-field",
            "dt",
            "--repeats",
            "last",
            "--slice-by",
            "dt,tenant",
        ];
        grade(&wd, "sliced", &sliced).expect_code(0);
        let per_query = wd.read_csv("sliced/per_query.csv");
        for (query, recall, dt, tenant) in [
            ("q1", 1.0, "2026-12-02", "acme"),
            ("q2", 0.0, "2026-12-01", "zeta"),
        ] {
            let row = per_query.row(&[("query_id", query)]);
            assert_cell(&row, "recall@10", recall);
            assert_text(&row, "dt", dt);
            assert_text(&row, "tenant", tenant);
        }
        let aggregates = wd.read_csv("sliced/aggregates.csv");
        for (dt, tenant, recall) in [
            ("2026-12-02", "*", 1.0),
            ("2026-12-01", "*", 0.0),
            ("*", "acme", 1.0),
            ("*", "zeta", 0.0),
        ] {
            let key = [
                ("task", "*"),
                ("language", "*"),
                ("split", "*"),
                ("dt", dt),
                ("tenant", tenant),
            ];
            let row = aggregates.row(&key);
            assert_cell(&row, "queries", 1.0);
            assert_cell(&row, "recall@10", recall);
        }
    }
}

/// A field sliced by or a time field that no record has, in any format,
/// is exit 2 naming the option and listing the fields the records have,
/// a partition's key among them; nothing is written.
#[test]
fn a_slice_or_time_field_no_record_has_is_refused() {
    for format in [Format::Jsonl, Format::Parquet, Format::Otlp] {
        let wd = Workdir::new(&format!("partitions_refused_{format:?}"));
        write_lake(&wd, format);
        for (option, field) in [("--slice-by", "tenantt"), ("--time-field", "dtt")] {
            grade(&wd, "out", &[option, field])
                .expect_code(2)
                .expect_stderr(&[
                    &format!("the field '{field}' that {option} names"),
                    "dt, ",
                    "tenant",
                ]);
            assert!(!wd.exists("out/summary.json"), "{format:?} {option}");
        }
    }
}
