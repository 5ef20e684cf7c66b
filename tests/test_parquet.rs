//! Parquet logs and labels (docs/reference.md, "Parquet"): every shape in
//! data-samples/traces/parquet grades as captures.jsonl does; bad rows are
//! rejected with their row group and row; a column of the wrong type, a
//! truncated file and Parquet on standard input stop the run (exit 2).
//! The bad files are written here with the parquet crate itself.

use std::path::Path;
use std::sync::Arc;

use arrow_array::builder::{ListBuilder, StringBuilder};
use arrow_array::{
    ArrayRef, BooleanArray, Float64Array, Int16Array, Int32Array, Int64Array, Int8Array,
    RecordBatch, StringArray, UInt16Array, UInt8Array,
};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::metadata::{
    ColumnChunkMetaData, ParquetMetaDataReader, ParquetMetaDataWriter, RowGroupMetaData,
};
use parquet::file::properties::WriterProperties;

use crate::util::{
    assert_counts_add_up, assert_same_lines, count, repo_path, Workdir, LANGSMITH_FIELDS,
};

/// The trace samples, as absolute paths.
fn traces(rel: &str) -> String {
    repo_path("data-samples/traces")
        .join(rel)
        .display()
        .to_string()
}

/// Grade `logs` against `labels` with `extra` flags into `wd`'s `out`,
/// expecting exit 0; returns per_query.csv and aggregates.csv.
fn grade_into(wd: &Workdir, out: &str, labels: &str, logs: &str, extra: &[&str]) -> Outputs {
    let dir = wd.path(out).display().to_string();
    let mut args = vec![
        "grade", "--labels", labels, "-k", "1,5,10", "-q", "-o", &dir,
    ];
    args.extend_from_slice(extra);
    args.push(logs);
    wd.rgrade(&args).expect_code(0);
    assert_counts_add_up(&wd.read_json(&format!("{out}/summary.json")));
    ["per_query.csv", "aggregates.csv"].map(|file| wd.read(&format!("{out}/{file}")))
}

/// per_query.csv and aggregates.csv of one grading.
type Outputs = [Vec<u8>; 2];

#[track_caller]
fn assert_same_outputs(what: &str, got: &Outputs, want: &Outputs) {
    assert_same_lines(&format!("{what}: per_query.csv"), &got[0], &want[0]);
    assert_same_lines(&format!("{what}: aggregates.csv"), &got[1], &want[1]);
}

/// Each Parquet shape holds the captures of captures.jsonl: the same
/// bytes out, at one thread and two. The long layout has no latency and
/// Phoenix's spans no run, so captures.jsonl is graded without them.
#[test]
fn every_parquet_sample_grades_as_the_jsonl_captures() {
    let wd = Workdir::new("parquet_samples");
    let labels = traces("labels.jsonl");
    let jsonl =
        |out: &str, extra: &[&str]| grade_into(&wd, out, &labels, &traces("captures.jsonl"), extra);
    let want = jsonl("jsonl", &[]);
    // The captures with a field left out of every record.
    let without = |key: &str| {
        let captures = std::fs::read_to_string(traces("captures.jsonl")).expect("a sample");
        let mut stripped = String::new();
        for line in captures.lines() {
            let mut record: serde_json::Value = serde_json::from_str(line).expect("a record");
            record.as_object_mut().map(|fields| fields.remove(key));
            stripped += &format!("{record}\n");
        }
        let name = format!("captures-without-{key}.jsonl");
        wd.write(&name, stripped);
        let logs = wd.path(&name).display().to_string();
        grade_into(&wd, &format!("jsonl-without-{key}"), &labels, &logs, &[])
    };
    let without_latency = without("latency_ms");
    let without_run = without("run");
    let cases: [(&str, &[&str], &Outputs); 6] = [
        ("events", &[], &want),
        ("events_structs", &[], &want),
        ("results_long", &[], &without_latency),
        ("phoenix_spans", &[], &without_run),
        ("phoenix_spans", &["--join", "text"], &without_run),
        ("events", &["--logs-format", "parquet"], &want),
    ];
    for (i, (file, extra, want)) in cases.into_iter().enumerate() {
        let logs = traces(&format!("parquet/{file}.parquet"));
        for threads in ["1", "2"] {
            let mut flags = extra.to_vec();
            flags.extend(["-j", threads]);
            let got = grade_into(
                &wd,
                &format!("{file}-{i}-j{threads}"),
                &labels,
                &logs,
                &flags,
            );
            assert_same_outputs(&format!("{file} {flags:?}"), &got, want);
        }
    }
}

#[test]
fn parquet_labels_grade_as_the_jsonl_labels() {
    let wd = Workdir::new("parquet_labels");
    let logs = traces("captures.jsonl");
    let want = grade_into(&wd, "jsonl", &traces("labels.jsonl"), &logs, &[]);
    let got = grade_into(
        &wd,
        "parquet",
        &traces("parquet/labels.parquet"),
        &logs,
        &[],
    );
    assert_same_outputs("labels.parquet", &got, &want);
}

/// Phoenix's LLM and CHAIN rows are counted, never rejected; summary.json
/// counts a row as a line and a record, and the file's own size and hash.
#[test]
fn phoenix_rows_of_other_kinds_are_other_records() {
    let wd = Workdir::new("parquet_phoenix_counts");
    let logs = traces("parquet/phoenix_spans.parquet");
    grade_into(&wd, "out", &traces("labels.jsonl"), &logs, &[]);
    let summary = wd.read_json("out/summary.json");
    assert_eq!(count(&summary, "graded_records"), 40);
    assert_eq!(count(&summary, "rejected"), 0);
    let other = count(&summary, "other_records");
    assert!(other > 0, "{:#}", summary["counts"]);
    let input = &summary["inputs"][0];
    let bytes = std::fs::read(&logs).unwrap();
    assert_eq!(input["bytes"].as_u64(), Some(bytes.len() as u64));
    assert_eq!(input["lines"].as_u64(), Some(40 + other));
    let hash = format!("{:032x}", xxhash_rust::xxh3::xxh3_128(&bytes));
    assert_eq!(input["hash"].as_str(), Some(hash.as_str()));
}

/// Write `columns` as a Parquet file of row groups of `group_rows` rows.
pub fn write_parquet(path: &Path, columns: Vec<(&str, ArrayRef)>, group_rows: usize) {
    let batch = RecordBatch::try_from_iter(columns).unwrap();
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(group_rows))
        .build();
    let file = std::fs::File::create(path).unwrap();
    let mut writer = ArrowWriter::try_new(file, batch.schema(), Some(props)).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
}

/// A list column of doc ids; `None` is a null list, `Some(None)` a null id.
pub fn results(rows: &[Option<Vec<Option<&str>>>]) -> ArrayRef {
    let mut builder = ListBuilder::new(StringBuilder::new());
    for row in rows {
        match row {
            Some(ids) => {
                for id in ids {
                    builder.values().append_option(*id);
                }
                builder.append(true);
            }
            None => builder.append(false),
        }
    }
    Arc::new(builder.finish())
}

/// The reason of every reject in `dir`/rejects.jsonl, in input order.
fn reject_reasons(wd: &Workdir, dir: &str) -> Vec<String> {
    let rejects = wd.read_jsonl(&format!("{dir}/rejects.jsonl"));
    let reason = |r: &serde_json::Value| r["reason"].as_str().unwrap().to_string();
    rejects.iter().map(reason).collect()
}

const LABELS: &str = concat!(
    r#"{"query_id": "q1", "relevant": ["a"]}"#,
    "\n",
    r#"{"query_id": "q2", "relevant": ["b"]}"#,
    "\n",
);

/// A null query id is `missing_query_id`, a null doc id `bad_result`; a
/// null results list is an empty ranking. Each reject names the row's
/// number in the file, its row group and row there, and shows its cells.
#[test]
fn bad_rows_are_rejected_with_their_row_group_and_row() {
    let wd = Workdir::new("parquet_bad_rows");
    wd.write("labels.jsonl", LABELS);
    let query: ArrayRef = Arc::new(StringArray::from(vec![
        Some("q1"),
        None,
        Some("q2"),
        Some("q9"),
        Some("q2"),
    ]));
    let ranked = results(&[
        Some(vec![Some("x"), Some("a")]),
        Some(vec![Some("a")]),
        Some(vec![Some("b"), None]),
        None,
        None,
    ]);
    let stage: ArrayRef = Arc::new(StringArray::from(vec![
        None,
        None,
        None,
        None,
        Some("rerank"),
    ]));
    let columns = vec![("query_id", query), ("results", ranked), ("stage", stage)];
    write_parquet(&wd.path("log.parquet"), columns, 2);
    let args = ["--labels", "labels.jsonl", "-o", "out", "-q", "log.parquet"];
    let mut all = vec!["grade"];
    all.extend(args);
    wd.rgrade(&all).expect_code(1);
    let summary = wd.read_json("out/summary.json");
    assert_counts_add_up(&summary);
    assert_eq!(count(&summary, "records"), 5);
    assert_eq!(
        count(&summary, "unlabeled_events"),
        1,
        "q9, its null list empty"
    );
    let rejects = wd.read_jsonl("out/rejects.jsonl");
    let got: Vec<(u64, &str, &str)> = rejects
        .iter()
        .map(|r| {
            let line = r["line"].as_u64().unwrap();
            (
                line,
                r["reason"].as_str().unwrap(),
                r["detail"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (
                2,
                "missing_query_id",
                "row group 0, row 1: 'query_id' is null"
            ),
            (
                3,
                "bad_result",
                "row group 1, row 0: result 2 in 'results' has a null doc id"
            ),
        ]
    );
    assert_eq!(rejects[1]["file"].as_str(), Some("log.parquet"));
    assert_eq!(
        rejects[1]["record"].as_str(),
        Some(r#"{"query_id":"q2","results":["b",null],"stage":null}"#)
    );
}

/// A pointer that reaches a string column goes on inside the JSON it
/// holds (LangSmith's export): each row's JSON is read as a JSONL record's
/// field is, and a cell that holds none, or not what the pointer wants,
/// rejects its row alone with the reason a JSONL line would get.
#[test]
fn pointers_into_json_held_in_string_columns() {
    let wd = Workdir::new("parquet_json_text");
    let labels = format!("{LABELS}{}\n", r#"{"query_id": "3", "relevant": ["c"]}"#);
    wd.write("labels.jsonl", &labels);
    let rows: [(Option<&str>, Option<&str>); 10] = [
        (
            Some(r#"{"metadata": {"query_id": "q1"}}"#),
            Some(r#"{"documents": [{"metadata": {"id": "x"}}, {"metadata": {"id": "a"}}]}"#),
        ),
        (
            Some(r#"{"metadata": {"query_id": 3}}"#),
            Some(r#"{"documents": null}"#),
        ),
        (Some("not json"), Some(r#"{"documents": []}"#)),
        (Some(r#"{"metadata": {}}"#), Some(r#"{"documents": []}"#)),
        (None, Some(r#"{"documents": []}"#)),
        (Some(r#"{"metadata": {"query_id": "q2"}}"#), Some("{")),
        (Some(r#"{"metadata": {"query_id": "q2"}}"#), Some("{}")),
        (
            Some(r#"{"metadata": {"query_id": "q2"}}"#),
            Some(r#"{"documents": "b"}"#),
        ),
        (
            Some(r#"{"metadata": {"query_id": "q2"}}"#),
            Some(r#"{"documents": [{"id": "b"}]}"#),
        ),
        (
            Some(r#"{"metadata": {"query_id": ["q2"]}}"#),
            Some(r#"{"documents": []}"#),
        ),
    ];
    let extra: ArrayRef = Arc::new(StringArray::from_iter(rows.iter().map(|r| r.0)));
    let outputs: ArrayRef = Arc::new(StringArray::from_iter(rows.iter().map(|r| r.1)));
    let columns = vec![("extra", extra), ("outputs", outputs)];
    write_parquet(&wd.path("log.parquet"), columns, 4);
    let mut args = vec![
        "grade",
        "--labels",
        "labels.jsonl",
        "-o",
        "out",
        "-q",
        "-k",
        "2",
    ];
    args.extend(LANGSMITH_FIELDS);
    args.push("log.parquet");
    wd.rgrade(&args).expect_code(1);
    let summary = wd.read_json("out/summary.json");
    assert_counts_add_up(&summary);
    assert_eq!(count(&summary, "graded_records"), 2);
    let rejects = wd.read_jsonl("out/rejects.jsonl");
    let got: Vec<(u64, &str, &str)> = (rejects.iter())
        .map(|r| {
            let line = r["line"].as_u64().unwrap();
            let detail = r["detail"].as_str().unwrap();
            (line, r["reason"].as_str().unwrap(), detail)
        })
        .collect();
    let row = |group, row, detail: &str| format!("row group {group}, row {row}: {detail}");
    let result =
        "result 1 in '/outputs/documents' is neither a doc id nor an object with '/metadata/id'";
    let want = [
        (3, "bad_query_id", row(0, 2, "'extra' holds no valid JSON")),
        (
            4,
            "missing_query_id",
            row(0, 3, "'/extra/metadata/query_id' is absent or null"),
        ),
        (
            5,
            "missing_query_id",
            row(1, 0, "'/extra/metadata/query_id' is absent or null"),
        ),
        (6, "bad_results", row(1, 1, "'outputs' holds no valid JSON")),
        (7, "missing_results", row(1, 2, "no '/outputs/documents'")),
        (
            8,
            "bad_results",
            row(1, 3, "'/outputs/documents' must be an array or null"),
        ),
        (9, "bad_result", row(2, 0, result)),
        (
            10,
            "bad_query_id",
            row(
                2,
                1,
                "'/extra/metadata/query_id' must be a string or an integer within 64 bits",
            ),
        ),
    ];
    let want: Vec<(u64, &str, &str)> = (want.iter())
        .map(|(line, reason, detail)| (*line, *reason, detail.as_str()))
        .collect();
    assert_eq!(got, want);
    // q1 ranked x, a; 3 (an integer id) found nothing: null documents are
    // an empty ranking, as in JSONL; q2's captures were all rejected.
    let per_query = String::from_utf8(wd.read("out/per_query.csv")).unwrap();
    let recall: Vec<(&str, &str, &str)> = (per_query.lines().skip(1))
        .map(|line| {
            let cells: Vec<&str> = line.split(',').collect();
            (cells[2], cells[6], cells[13])
        })
        .collect();
    assert_eq!(
        recall,
        [("3", "ok", "0"), ("q1", "ok", "1"), ("q2", "invalid", "0")]
    );
}

/// A column of the wrong type stops the input at once, naming the file,
/// the column, and the type found against the one expected.
#[test]
fn a_column_of_the_wrong_type_is_an_error_for_the_input() {
    let wd = Workdir::new("parquet_wrong_type");
    wd.write("labels.jsonl", LABELS);
    let columns: Vec<(&str, ArrayRef)> = vec![
        ("query_id", Arc::new(StringArray::from(vec!["q1"]))),
        ("results", Arc::new(Int64Array::from(vec![7]))),
    ];
    write_parquet(&wd.path("log.parquet"), columns, 10);
    let run = wd.rgrade(&["grade", "--labels", "labels.jsonl", "log.parquet"]);
    run.expect_code(2).expect_stderr(&[
        "log.parquet",
        "column 'results' is Int64, expected a list of doc ids",
    ]);
}

/// A log whose columns are not where rgrade looks names the option that
/// says where they are, as the command line spells it.
#[test]
fn columns_not_found_name_the_options_that_name_others() {
    let wd = Workdir::new("parquet_columns_not_found");
    wd.write("labels.jsonl", LABELS);
    let ids = || -> ArrayRef { Arc::new(StringArray::from(vec!["q1"])) };
    let refused = |file: &str, columns: Vec<(&str, ArrayRef)>, says: &str| {
        write_parquet(&wd.path(file), columns, 10);
        let run = wd.rgrade(&["grade", "--labels", "labels.jsonl", file]);
        run.expect_code(2).expect_stderr(&[file, says]);
    };
    refused(
        "no_query.parquet",
        vec![
            ("qid", ids()),
            ("results", results(&[Some(vec![Some("a")])])),
        ],
        "(the query id; --query-field names another)",
    );
    refused(
        "no_doc.parquet",
        vec![
            ("query_id", ids()),
            ("rank", Arc::new(Int64Array::from(vec![1]))),
        ],
        "(a result's doc id; --doc-field names another)",
    );
    refused(
        "no_results.parquet",
        vec![("query_id", ids())],
        "(the results; --results-field names another; a log of one row per result needs \
         a 'rank' column, or --rank-field, or a 'score' column)",
    );
}

/// A file compressed with a codec rgrade is not built to read (brotli,
/// here: its footer rewritten to say so) is refused naming the codec and
/// the column, not called truncated or corrupt.
#[test]
fn a_codec_rgrade_does_not_read_is_named() {
    let wd = Workdir::new("parquet_brotli");
    wd.write("labels.jsonl", LABELS);
    let columns: Vec<(&str, ArrayRef)> = vec![
        ("query_id", Arc::new(StringArray::from(vec!["q1"]))),
        ("results", results(&[Some(vec![Some("a")])])),
    ];
    let path = wd.path("log.parquet");
    write_parquet(&path, columns, 10);
    let metadata = ParquetMetaDataReader::new()
        .parse_and_finish(&std::fs::File::open(&path).unwrap())
        .unwrap();
    let brotli = |column: &ColumnChunkMetaData| {
        let column = column.clone().into_builder();
        column
            .set_compression(Compression::BROTLI(Default::default()))
            .build()
            .unwrap()
    };
    let groups: Vec<RowGroupMetaData> = (metadata.row_groups().iter())
        .map(|group| {
            let columns = group.columns().iter().map(brotli).collect();
            let group = group.clone().into_builder();
            group.set_column_metadata(columns).build().unwrap()
        })
        .collect();
    let metadata = metadata.into_builder().set_row_groups(groups).build();
    let mut bytes = std::fs::read(&path).unwrap();
    let footer_len = u32::from_le_bytes(bytes[bytes.len() - 8..][..4].try_into().unwrap());
    bytes.truncate(bytes.len() - 8 - footer_len as usize);
    ParquetMetaDataWriter::new(&mut bytes, &metadata)
        .finish()
        .unwrap();
    std::fs::write(&path, bytes).unwrap();
    let run = wd.rgrade(&["grade", "--labels", "labels.jsonl", "log.parquet"]);
    run.expect_code(2).expect_stderr(&[
        "log.parquet",
        "column 'query_id' is compressed with brotli, which rgrade does not read",
    ]);
    assert!(!run.stderr.contains("corrupt"), "{run}");
}

/// One row per result: ranked by the rank column, ties by doc id
/// descending (as trec_eval breaks score ties); a rank below 1 is `bad_rank`.
/// An event row's `answer_ok` column (a boolean; null says nothing) is
/// the outcome of its answer, as in JSONL.
#[test]
fn an_answer_ok_column_says_whether_the_answer_was_acceptable() {
    let wd = Workdir::new("parquet_answer_ok");
    wd.write("labels.jsonl", LABELS);
    let columns: Vec<(&str, ArrayRef)> = vec![
        ("query_id", Arc::new(StringArray::from(vec!["q1", "q2"]))),
        (
            "results",
            results(&[Some(vec![Some("a")]), Some(vec![Some("z")])]),
        ),
        (
            "answer_ok",
            Arc::new(BooleanArray::from(vec![Some(true), Some(false)])),
        ),
    ];
    write_parquet(&wd.path("events.parquet"), columns, 2);
    let run = wd.rgrade(&[
        "grade",
        "--labels",
        "labels.jsonl",
        "-k",
        "1",
        "-o",
        "out",
        "events.parquet",
    ]);
    run.expect_code(0);
    let per_query = wd.read_csv("out/per_query.csv");
    assert_eq!(per_query.column("answer_ok"), ["true", "false"]);
    let attribution = wd.read_csv("out/attribution.csv");
    let overall = attribution.row(&[("task", "*"), ("language", "*"), ("split", "*")]);
    assert_eq!(overall["answered"], "2");
    assert_eq!(
        overall["wrong_missing_evidence"], "1",
        "q2 returned no relevant document"
    );
}

#[test]
fn a_log_of_one_row_per_result_is_ranked_by_its_rank_column() {
    let wd = Workdir::new("parquet_long");
    wd.write("labels.jsonl", LABELS);
    let columns: Vec<(&str, ArrayRef)> = vec![
        (
            "query_id",
            Arc::new(StringArray::from(vec!["q1", "q2", "q1", "q1", "q2"])),
        ),
        (
            "doc_id",
            Arc::new(StringArray::from(vec!["a", "b", "z", "y", "c"])),
        ),
        ("rank", Arc::new(Int32Array::from(vec![2, 0, 1, 2, 1]))),
    ];
    write_parquet(&wd.path("long.parquet"), columns, 2);
    let run = wd.rgrade(&[
        "grade",
        "--labels",
        "labels.jsonl",
        "-k",
        "3",
        "-o",
        "out",
        "-q",
        "long.parquet",
    ]);
    run.expect_code(1);
    let per_query = wd.read_csv("out/per_query.csv");
    let q1 = per_query.row(&[("query_id", "q1")]);
    // z at 1, then y and a tie at 2: y before a (doc id descending).
    assert_eq!(q1["first_rel_rank"], "3");
    // b's row has rank 0: rejected, and q2's ranking with it, rather than
    // graded as c alone at rank 1.
    let q2 = per_query.row(&[("query_id", "q2")]);
    assert_eq!(q2["status"], "invalid");
    let rejects = wd.read_jsonl("out/rejects.jsonl");
    let reasons: Vec<(u64, &str)> = (rejects.iter())
        .map(|r| {
            (
                r["line"].as_u64().unwrap_or(0),
                r["reason"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(reasons, [(2, "bad_rank"), (5, "incomplete_ranking")]);

    // Its rows cannot be read again as lines for the ids a ranking pooled.
    let args = "grade --labels labels.jsonl -k 3 --review-queue -o out -q long.parquet";
    let args: Vec<&str> = args.split_whitespace().collect();
    wd.rgrade(&args)
        .expect_code(1)
        .expect_stderr(&["review_queue.csv leaves out 2 documents", "Parquet"]);
    assert_eq!(wd.read_csv("out/review_queue.csv").rows.len(), 0);
}

/// pandas' `rank()` gives floats: a rank column of doubles holding whole
/// numbers ranks as the same integers would; a rank with a fraction, NaN
/// or an infinity is `bad_rank`, and its ranking is rejected.
#[test]
fn whole_number_float_ranks_read_as_integers() {
    let wd = Workdir::new("parquet_float_ranks");
    wd.write("labels.jsonl", LABELS);
    let write = |name: &str, ranks: ArrayRef| {
        let columns: Vec<(&str, ArrayRef)> = vec![
            (
                "query_id",
                Arc::new(StringArray::from(vec!["q1", "q1", "q1", "q2", "q2"])),
            ),
            (
                "doc_id",
                Arc::new(StringArray::from(vec!["z", "y", "a", "b", "c"])),
            ),
            ("rank", ranks),
        ];
        write_parquet(&wd.path(name), columns, 2);
    };
    write(
        "int.parquet",
        Arc::new(Int32Array::from(vec![1, 2, 2, 2, 1])),
    );
    write(
        "float.parquet",
        Arc::new(Float64Array::from(vec![1.0, 2.0, 2.0, 2.0, 1.0])),
    );
    let grade = |log: &str, out: &str| {
        let args = [
            "grade",
            "--labels",
            "labels.jsonl",
            "-k",
            "3",
            "-o",
            out,
            "-q",
            log,
        ];
        wd.rgrade(&args).expect_code(0);
        std::fs::read(wd.path(&format!("{out}/per_query.csv"))).unwrap()
    };
    assert_eq!(grade("float.parquet", "float"), grade("int.parquet", "int"));
    let per_query = wd.read_csv("float/per_query.csv");
    // z at 1, then y and a tied at 2: a after y (doc id descending).
    assert_eq!(per_query.row(&[("query_id", "q1")])["first_rel_rank"], "3");

    for (name, bad) in [("half", 1.5), ("nan", f64::NAN), ("inf", f64::INFINITY)] {
        let file = format!("{name}.parquet");
        write(
            &file,
            Arc::new(Float64Array::from(vec![1.0, 2.0, 3.0, bad, 1.0])),
        );
        let args = [
            "grade",
            "--labels",
            "labels.jsonl",
            "-k",
            "3",
            "-o",
            name,
            "-q",
            &file,
        ];
        wd.rgrade(&args).expect_code(1);
        let reasons = reject_reasons(&wd, name);
        assert_eq!(reasons, ["bad_rank", "incomplete_ranking"], "{name}");
        let per_query = wd.read_csv(&format!("{name}/per_query.csv"));
        assert_eq!(
            per_query.row(&[("query_id", "q2")])["status"],
            "invalid",
            "{name}"
        );
    }
}

/// A log of one row per result with a score and no rank column is ranked
/// as trec_eval ranks a run: score (as a 32-bit float) descending, then
/// doc id descending; it grades as the same lines in a TREC run do. A
/// score that is no finite number is `bad_score`, and its ranking is
/// rejected.
#[test]
fn a_scored_log_without_ranks_is_ranked_as_a_run() {
    let wd = Workdir::new("parquet_scored");
    wd.write("labels.jsonl", LABELS);
    let queries = ["q1", "q1", "q1", "q2", "q2"];
    let docs = ["z", "a", "y", "c", "b"];
    let write = |name: &str, scores: Vec<f64>| {
        let columns: Vec<(&str, ArrayRef)> = vec![
            ("query_id", Arc::new(StringArray::from(queries.to_vec()))),
            ("doc_id", Arc::new(StringArray::from(docs.to_vec()))),
            ("score", Arc::new(Float64Array::from(scores))),
        ];
        write_parquet(&wd.path(name), columns, 2);
    };
    let scores = vec![2.5, 1.0, 2.5, 0.5, 0.25];
    write("scored.parquet", scores.clone());
    let lines: String = (queries.iter().zip(docs).zip(&scores))
        .map(|((q, d), s)| format!("{q} Q0 {d} 0 {s} run\n"))
        .collect();
    wd.write("run.trec", &lines);
    let grade = |log: &str, out: &str| {
        let args = [
            "grade",
            "--labels",
            "labels.jsonl",
            "-k",
            "1,3",
            "-o",
            out,
            "-q",
            log,
        ];
        wd.rgrade(&args).expect_code(0);
        let per_query = wd.read_csv(&format!("{out}/per_query.csv"));
        let cells = |q: &str| {
            let row = per_query.row(&[("query_id", q)]);
            [
                row["first_rel_rank"].clone(),
                row["rr@3"].clone(),
                row["n_results"].clone(),
            ]
        };
        [cells("q1"), cells("q2")]
    };
    let scored = grade("scored.parquet", "scored");
    // q1: z and y tie at 2.5, z first (doc id descending), then a.
    assert_eq!(
        scored[0],
        ["3", "0.3333333333333333", "3"].map(String::from)
    );
    assert_eq!(scored[1], ["2", "0.5", "2"].map(String::from));
    assert_eq!(scored, grade("run.trec", "trec"));

    write("nan.parquet", vec![2.5, 1.0, 2.5, f64::NAN, 0.25]);
    let args = [
        "grade",
        "--labels",
        "labels.jsonl",
        "-k",
        "3",
        "-o",
        "nan",
        "-q",
        "nan.parquet",
    ];
    wd.rgrade(&args).expect_code(1);
    let reasons = reject_reasons(&wd, "nan");
    assert_eq!(reasons, ["bad_score", "incomplete_ranking"]);
}

/// pandas and polars keep small integers in 8- and 16-bit columns: ids,
/// grades and ranks of any integer width read as the same numbers.
#[test]
fn integer_columns_of_any_width_read_alike() {
    let wd = Workdir::new("parquet_narrow_integers");
    wd.write(
        "labels.jsonl",
        "{\"query_id\": 1, \"relevant\": {\"7\": 2, \"9\": 1}}\n\
         {\"query_id\": 2, \"relevant\": {\"4\": 1, \"3\": 0}}\n",
    );
    wd.write(
        "logs.jsonl",
        "{\"query_id\": 1, \"results\": [\"9\", \"5\", \"7\"]}\n\
         {\"query_id\": 2, \"results\": [\"3\", \"4\"]}\n",
    );
    let labels: Vec<(&str, ArrayRef)> = vec![
        ("query_id", Arc::new(UInt16Array::from(vec![1, 1, 2, 2]))),
        ("doc_id", Arc::new(Int8Array::from(vec![7, 9, 4, 3]))),
        ("grade", Arc::new(Int8Array::from(vec![2, 1, 1, 0]))),
    ];
    write_parquet(&wd.path("labels.parquet"), labels, 3);
    let logs: Vec<(&str, ArrayRef)> = vec![
        ("query_id", Arc::new(Int16Array::from(vec![1, 2, 1, 2, 1]))),
        ("doc_id", Arc::new(UInt8Array::from(vec![9, 4, 5, 3, 7]))),
        ("rank", Arc::new(Int8Array::from(vec![1, 2, 2, 1, 3]))),
    ];
    write_parquet(&wd.path("logs.parquet"), logs, 2);
    let want = grade_into(&wd, "jsonl", "labels.jsonl", "logs.jsonl", &[]);
    let got = grade_into(&wd, "parquet", "labels.parquet", "logs.parquet", &[]);
    assert_same_outputs("8- and 16-bit columns", &got, &want);
    let per_query = wd.read_csv("parquet/per_query.csv");
    assert_eq!(per_query.column("first_rel_rank"), ["1", "2"]);
}

#[test]
fn a_truncated_file_is_an_error_naming_it() {
    let wd = Workdir::new("parquet_truncated");
    let bytes = std::fs::read(traces("parquet/events.parquet")).unwrap();
    for cut in [bytes.len() / 2, bytes.len() - 3] {
        wd.write("cut.parquet", &bytes[..cut]);
        let labels = traces("labels.jsonl");
        let run = wd.rgrade(&["grade", "--labels", &labels, "cut.parquet"]);
        run.expect_code(2).expect_stderr(&["cut.parquet"]);
    }
}

#[test]
fn parquet_on_standard_input_is_an_error() {
    let wd = Workdir::new("parquet_stdin");
    let bytes = std::fs::read(traces("parquet/events.parquet")).unwrap();
    let labels = traces("labels.jsonl");
    let run = wd.rgrade_stdin(&["grade", "--labels", &labels, "-"], &bytes);
    run.expect_code(2)
        .expect_stderr(&["-: Parquet needs a seekable file"]);
}

/// Parquet and Arrow labels read ir_measures' `relevance` (or ranx's
/// `score`) as the grade: judged-not-relevant rows stay not relevant. A
/// column rgrade does not know is refused, naming it and the file.
#[test]
fn parquet_labels_read_grade_columns_and_refuse_unknown_ones() {
    let wd = Workdir::new("parquet_labels_grade_columns");
    wd.write("qrels.txt", "q1 0 a 0\nq1 0 b 1\n");
    wd.write(
        "logs.jsonl",
        "{\"query_id\": \"q1\", \"results\": [\"a\", \"b\"]}\n",
    );
    let key = |grade: &'static str| -> Vec<(&'static str, ArrayRef)> {
        vec![
            ("query_id", Arc::new(StringArray::from(vec!["q1", "q1"]))),
            ("doc_id", Arc::new(StringArray::from(vec!["a", "b"]))),
            (grade, Arc::new(Int64Array::from(vec![0, 1]))),
        ]
    };
    let want = grade_into(&wd, "qrels", "qrels.txt", "logs.jsonl", &[]);
    for grade in ["relevance", "score"] {
        let path = format!("{grade}.parquet");
        write_parquet(&wd.path(&path), key(grade), 10);
        let got = grade_into(&wd, grade, &path, "logs.jsonl", &[]);
        assert_same_outputs(grade, &got, &want);
    }
    let per_query = wd.read_csv("relevance/per_query.csv");
    assert_eq!(per_query.column("first_rel_rank"), ["2"], "a is judged 0");

    let mut unknown = key("relevance");
    unknown.push(("judgement", Arc::new(Int64Array::from(vec![1, 1]))));
    write_parquet(&wd.path("unknown.parquet"), unknown, 10);
    let run = wd.rgrade(&["grade", "--labels", "unknown.parquet", "logs.jsonl"]);
    run.expect_code(2)
        .expect_stderr(&["unknown.parquet", "unknown labels column 'judgement'"]);
}

/// A labels row without a query id is an error naming the file and row.
#[test]
fn a_parquet_labels_row_without_a_query_id_is_named() {
    let wd = Workdir::new("parquet_labels_bad");
    let columns: Vec<(&str, ArrayRef)> = vec![
        (
            "query_id",
            Arc::new(StringArray::from(vec![Some("q1"), None])),
        ),
        ("doc_id", Arc::new(StringArray::from(vec!["a", "b"]))),
    ];
    write_parquet(&wd.path("labels.parquet"), columns, 10);
    let logs = traces("captures.jsonl");
    let run = wd.rgrade(&["grade", "--labels", "labels.parquet", &logs]);
    run.expect_code(2)
        .expect_stderr(&["labels.parquet:2: null query_id"]);
}

/// `rgrade gen --format parquet` writes the events of logs.jsonl as rows:
/// they grade to the same bytes.
#[test]
fn generated_parquet_grades_as_the_generated_jsonl_log() {
    let wd = Workdir::new("parquet_gen");
    for (format, dir) in [("jsonl", "jsonl"), ("parquet", "parquet")] {
        wd.rgrade(&[
            "gen",
            "--queries",
            "9000",
            "--results",
            "12",
            "--unlabeled",
            "50",
            "--seed",
            "4",
            "--format",
            format,
            "-o",
            dir,
        ])
        .expect_code(0);
    }
    let grade = |logs: &str, out: &str| {
        wd.rgrade(&[
            "grade",
            "--labels",
            "jsonl/labels.jsonl",
            "-k",
            "1,5,10",
            "-q",
            "-o",
            out,
            logs,
        ])
        .expect_code(0);
        ["per_query.csv", "aggregates.csv"].map(|file| wd.read(&format!("{out}/{file}")))
    };
    let jsonl = grade("jsonl/logs.jsonl", "out-jsonl");
    let parquet = grade("parquet/logs.parquet", "out-parquet");
    assert_same_outputs("gen --format parquet", &parquet, &jsonl);
    let summary = wd.read_json("out-parquet/summary.json");
    assert_counts_add_up(&summary);
    // 9,050 queries, two events each: more than one row group of 8,192.
    assert_eq!(count(&summary, "records"), 18_100);
}

/// Files the fuzz targets found: the Parquet crate panics on them (a
/// negative column offset in the footer; a page whose bit-packed values
/// run past its end). rgrade reports each as a corrupt input, exit 2,
/// naming it, and prints no panic.
#[test]
fn files_the_decoder_panics_on_are_errors_of_the_input() {
    let wd = Workdir::new("parquet_fuzz_regressions");
    let regression = |name: &str| {
        repo_path("tests/fuzz_regressions")
            .join(name)
            .display()
            .to_string()
    };
    let logs = regression("logs_negative_column_offset.parquet");
    let labels = traces("labels.jsonl");
    let run = wd.rgrade(&["grade", "--labels", &labels, &logs]);
    run.expect_code(2).expect_stderr(&[
        "logs_negative_column_offset.parquet: row group 0: a negative column offset",
    ]);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);

    let labels = regression("labels_page_out_of_bounds.parquet");
    let logs = traces("captures.jsonl");
    let run = wd.rgrade(&["grade", "--labels", &labels, &logs]);
    run.expect_code(2).expect_stderr(&[
        "labels_page_out_of_bounds.parquet: cannot read labels: the Parquet decoder failed on it",
    ]);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
}

/// Latency and context size follow one rule in every format: a finite
/// number of at least 0, `-0` read as 0. NaN, an infinity or a negative
/// number rejects the record (`bad_field`) in Parquet as in JSONL, rather
/// than leaving the cell empty or averaging a negative time.
#[test]
fn latencies_are_finite_and_not_negative_in_every_format() {
    let wd = Workdir::new("parquet_latency_rule");
    wd.write("labels.jsonl", LABELS);
    let latencies = [f64::NAN, f64::INFINITY, -1.0, -0.0, 5.0];
    let queries = vec!["q1", "q1", "q1", "q1", "q2"];
    let columns: Vec<(&str, ArrayRef)> = vec![
        ("query_id", Arc::new(StringArray::from(queries.clone()))),
        ("results", results(&vec![Some(vec![Some("a")]); 5])),
        (
            "latency_ms",
            Arc::new(Float64Array::from(latencies.to_vec())),
        ),
    ];
    write_parquet(&wd.path("log.parquet"), columns, 10);
    let jsonl: String = (queries.iter().zip(latencies))
        .map(|(query, latency)| {
            // JSON has no NaN or infinity: such a log writes them as text.
            let latency = match latency {
                l if l.is_nan() => "NaN".to_string(),
                l if l.is_infinite() => "1e400".to_string(),
                l => format!("{l:?}"),
            };
            format!(
                "{{\"query_id\": \"{query}\", \"results\": [\"a\"], \"latency_ms\": {latency}}}\n"
            )
        })
        .collect();
    wd.write("log.jsonl", jsonl);
    for (log, first_reason) in [("log.parquet", "bad_field"), ("log.jsonl", "invalid_json")] {
        let out = format!("out_{log}");
        let args = [
            "grade",
            "--labels",
            "labels.jsonl",
            "--repeats",
            "last",
            "-q",
            "-o",
            &out,
            log,
        ];
        wd.rgrade(&args).expect_code(1);
        let reasons = reject_reasons(&wd, &out);
        assert_eq!(reasons, [first_reason, "bad_field", "bad_field"], "{log}");
        let per_query = wd.read_csv(&format!("{out}/per_query.csv"));
        let q1 = per_query.row(&[("query_id", "q1")]);
        assert_eq!(q1["latency_ms"], "0", "{log}: -0 is 0");
        assert_eq!(per_query.row(&[("query_id", "q2")])["latency_ms"], "5");
    }
}

/// A result row whose stage (or run) is null says no ranking: it would
/// fall into the default stage and leave its own ranking short. It is
/// rejected, and every ranking of its query in the file with it.
#[test]
fn a_result_row_of_no_stage_rejects_its_query_rankings() {
    let wd = Workdir::new("parquet_long_null_stage");
    wd.write("labels.jsonl", LABELS);
    let columns: Vec<(&str, ArrayRef)> = vec![
        (
            "query_id",
            Arc::new(StringArray::from(vec!["q1", "q1", "q1", "q2"])),
        ),
        (
            "doc_id",
            Arc::new(StringArray::from(vec!["x", "y", "a", "b"])),
        ),
        ("rank", Arc::new(Int32Array::from(vec![1, 2, 3, 1]))),
        (
            "stage",
            Arc::new(StringArray::from(vec![
                Some("retrieve"),
                None,
                Some("retrieve"),
                Some("retrieve"),
            ])),
        ),
    ];
    write_parquet(&wd.path("long.parquet"), columns, 10);
    let args = [
        "grade",
        "--labels",
        "labels.jsonl",
        "-k",
        "3",
        "-o",
        "out",
        "-q",
        "long.parquet",
    ];
    wd.rgrade(&args).expect_code(1);
    let per_query = wd.read_csv("out/per_query.csv");
    let statuses: Vec<(String, String, String)> = (per_query.column("stage").into_iter())
        .zip(per_query.column("query_id"))
        .zip(per_query.column("status"))
        .map(|((stage, query), status)| (stage, query, status))
        .collect();
    let row = |stage: &str, query: &str, status: &str| (stage.into(), query.into(), status.into());
    assert_eq!(
        statuses,
        [
            row("retrieve", "q1", "invalid"),
            row("retrieve", "q2", "ok")
        ]
    );
    let reasons = reject_reasons(&wd, "out");
    assert_eq!(
        reasons,
        ["incomplete_ranking", "bad_field", "incomplete_ranking"]
    );
    assert_counts_add_up(&wd.read_json("out/summary.json"));
}

/// Parquet labels of more than a MiB: summary.json's labels bytes and
/// hash are of the whole file, as for every other format (and so a
/// compiled key of them does not take them for changed).
#[test]
fn parquet_labels_are_hashed_whole() {
    let wd = Workdir::new("parquet_labels_hash");
    let rows: usize = 40_000;
    let queries: Vec<String> = (0..rows).map(|i| format!("query-{i:06}")).collect();
    let docs: Vec<String> = (0..rows)
        .map(|i| format!("doc-{:032x}", xxhash_rust::xxh3::xxh3_128(&i.to_le_bytes())))
        .collect();
    let columns: Vec<(&str, ArrayRef)> = vec![
        ("query_id", Arc::new(StringArray::from(queries))),
        ("doc_id", Arc::new(StringArray::from(docs))),
    ];
    write_parquet(&wd.path("labels.parquet"), columns, rows);
    let bytes = wd.read("labels.parquet");
    assert!(bytes.len() > 1 << 21, "{} bytes", bytes.len());
    wd.write(
        "log.jsonl",
        "{\"query_id\": \"query-000001\", \"results\": [\"x\"]}\n",
    );
    let run = wd.rgrade(&[
        "grade",
        "--labels",
        "labels.parquet",
        "-q",
        "-o",
        "out",
        "log.jsonl",
    ]);
    run.expect_code(0);
    let summary = wd.read_json("out/summary.json");
    assert_eq!(
        summary["labels"]["bytes"].as_u64(),
        Some(bytes.len() as u64)
    );
    let hash = format!("{:032x}", xxhash_rust::xxh3::xxh3_128(&bytes));
    assert_eq!(summary["labels"]["hash"].as_str(), Some(hash.as_str()));

    wd.rgrade(&["index", "labels.parquet", "-o", "key.rgx"])
        .expect_code(0);
    let run = wd.rgrade(&["grade", "--labels", "key.rgx", "-q", "log.jsonl"]);
    run.expect_code(0);
    assert!(!run.stderr.contains("has changed since"), "{run}");
}
