//! The edges of a lake's parts: empty files and 0-row Parquet parts are
//! inputs without records; damaged ones stop the run or, with
//! `--bad-files skip`, are skipped as rejects; result lists are ranked by
//! the ranks (or scores) their results carry, whatever order the list
//! came in; a field flag that matches no field of any record is refused.

use std::path::Path;
use std::sync::Arc;

use arrow_array::builder::{
    Float64Builder, Int64Builder, ListBuilder, StringBuilder, StructBuilder,
};
use arrow_array::{ArrayRef, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Fields};
use parquet::arrow::ArrowWriter;

use crate::util::{assert_counts_add_up, assert_same_lines, gzip, Workdir};

const LABELS: &str = "{\"query_id\": \"q1\", \"relevant\": [\"a\"]}\n\
                      {\"query_id\": \"q2\", \"relevant\": {\"b\": 2, \"c\": 1}}\n\
                      {\"query_id\": \"q3\", \"relevant\": [\"d\"]}\n";

/// The rankings of the three queries, best first.
const RANKINGS: [(&str, &[&str]); 3] = [
    ("q1", &["x", "a", "y"]),
    ("q2", &["c", "z", "b", "w"]),
    ("q3", &["v", "u", "d"]),
];

/// The rankings as JSONL, their results listed in order or shuffled, each
/// result made by `result` from its doc id and 0-based place in the
/// ranking.
fn jsonl(result: impl Fn(&str, usize) -> String, shuffle: bool) -> String {
    let mut text = String::new();
    for (query, docs) in RANKINGS {
        let mut listed: Vec<(usize, &str)> = docs.iter().copied().enumerate().collect();
        if shuffle {
            listed.reverse();
            listed.rotate_left(1);
        }
        let results: Vec<String> = listed.iter().map(|&(i, doc)| result(doc, i)).collect();
        text += &format!(
            "{{\"query_id\": \"{query}\", \"results\": [{}]}}\n",
            results.join(", ")
        );
    }
    text
}

/// The arguments grading `logs` (options may lead) into `out` at cutoffs
/// 1 and 3; `out` is the eighth.
fn grade_args<'a>(out: &'a str, logs: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "grade",
        "--labels",
        "labels.jsonl",
        "-k",
        "1,3",
        "-q",
        "-o",
        out,
    ];
    args.extend_from_slice(logs);
    args
}

/// Grade `logs` into `out` at cutoffs 1 and 3, expecting `code`.
fn grade(wd: &Workdir, out: &str, logs: &[&str], code: i32) -> Vec<u8> {
    wd.rgrade(&grade_args(out, logs)).expect_code(code);
    assert_counts_add_up(&wd.read_json(&format!("{out}/summary.json")));
    wd.read(&format!("{out}/per_query.csv"))
}

/// A result as `write_structs` writes it: doc id, score, rank.
type StructResult<'a> = (&'a str, Option<f64>, Option<i64>);

/// `rows` (a query, its results as listed) as a Parquet file with a
/// results column of structs `doc_id`, `score` and `rank` (`None` a null
/// field).
fn write_structs(path: &Path, rows: &[(&str, Vec<StructResult<'_>>)]) {
    let fields = Fields::from(vec![
        Field::new("doc_id", DataType::Utf8, true),
        Field::new("score", DataType::Float64, true),
        Field::new("rank", DataType::Int64, true),
    ]);
    let mut results = ListBuilder::new(StructBuilder::from_fields(fields, 0));
    for (_, listed) in rows {
        let element = results.values();
        for &(doc, score, rank) in listed {
            let ids = element.field_builder::<StringBuilder>(0).expect("doc_id");
            ids.append_value(doc);
            let scores = element.field_builder::<Float64Builder>(1).expect("score");
            scores.append_option(score);
            let ranks = element.field_builder::<Int64Builder>(2).expect("rank");
            ranks.append_option(rank);
            element.append(true);
        }
        results.append(true);
    }
    let queries: Vec<&str> = rows.iter().map(|(q, _)| *q).collect();
    let columns: Vec<(&str, ArrayRef)> = vec![
        ("query_id", Arc::new(StringArray::from(queries))),
        ("results", Arc::new(results.finish())),
    ];
    let batch = RecordBatch::try_from_iter(columns).expect("a batch");
    let file = std::fs::File::create(path).expect("a Parquet file");
    let mut writer = ArrowWriter::try_new(file, batch.schema(), None).expect("a writer");
    writer.write(&batch).expect("written");
    writer.close().expect("closed");
}

/// A list whose results carry ranks is ranked by them, one whose results
/// all carry scores (and no rank) by the scores, higher first, in JSONL
/// and in a Parquet list of structs: listed in any order, they grade as
/// the same rankings listed in order. Ties go as trec_eval's: doc id descending.
/// A list where some results carry a rank and others not is rejected
/// (`unranked_result`), as is a rank that is no whole number (`bad_rank`).
#[test]
fn results_are_ranked_by_their_ranks_or_scores() {
    let wd = Workdir::new("ranked_results");
    wd.write("labels.jsonl", LABELS);
    wd.write("listed.jsonl", jsonl(|doc, _| format!("\"{doc}\""), false));
    let want = grade(&wd, "listed", &["listed.jsonl"], 0);

    let ranked = |doc: &str, i: usize| format!("{{\"doc_id\": \"{doc}\", \"rank\": {}}}", i + 1);
    // Scores that contradict the ranks: the ranks decide.
    let both = |doc: &str, i: usize| {
        format!(
            "{{\"doc_id\": \"{doc}\", \"rank\": {}, \"score\": {i}}}",
            i + 1
        )
    };
    let scored = |doc: &str, i: usize| format!("{{\"id\": \"{doc}\", \"score\": {}}}", 10 - i);
    wd.write("ranked.jsonl", jsonl(ranked, true));
    wd.write("both.jsonl", jsonl(both, true));
    wd.write("scored.jsonl", jsonl(scored, true));
    let mut rows = Vec::new();
    for (query, docs) in RANKINGS {
        let mut listed: Vec<StructResult> = (docs.iter().enumerate())
            .map(|(i, &doc)| (doc, Some(-(i as f64)), Some(i as i64 + 1)))
            .collect();
        listed.reverse();
        rows.push((query, listed));
    }
    write_structs(&wd.path("ranked.parquet"), &rows);
    for row in &mut rows {
        for result in &mut row.1 {
            result.2 = None;
        }
    }
    write_structs(&wd.path("scored.parquet"), &rows);
    for logs in [
        "ranked.jsonl",
        "both.jsonl",
        "scored.jsonl",
        "ranked.parquet",
        "scored.parquet",
    ] {
        let got = grade(&wd, &format!("out-{logs}"), &[logs], 0);
        assert_same_lines(logs, &got, &want);
    }

    // Two results of one rank, or of one score: the greater doc id first,
    // as trec_eval breaks ties, whatever their order in the list. A list
    // where only some results carry a score is ranked as listed.
    wd.write(
        "ties.jsonl",
        "{\"query_id\": \"q1\", \"results\": [{\"doc_id\": \"a\", \"rank\": 1}, {\"doc_id\": \"b\", \"rank\": 1}]}\n\
         {\"query_id\": \"q2\", \"results\": [{\"doc_id\": \"b\", \"score\": 0.1}, \"z\", {\"doc_id\": \"c\", \"score\": 5}]}\n\
         {\"query_id\": \"q3\", \"results\": [{\"doc_id\": \"d\", \"score\": 1}, {\"doc_id\": \"e\", \"score\": 1.0}]}\n",
    );
    wd.rgrade(&[
        "grade",
        "--labels",
        "labels.jsonl",
        "-k",
        "1",
        "-q",
        "-o",
        "ties",
        "ties.jsonl",
    ])
    .expect_code(0);
    let ties = wd.read_csv("ties/per_query.csv");
    for (query, first_relevant) in [("q1", "2"), ("q2", "1"), ("q3", "2")] {
        let row = ties.row(&[("query_id", query)]);
        assert_eq!(row["first_rel_rank"], first_relevant, "{query}");
    }

    // Some results with a rank, others without; a rank of 0.
    wd.write(
        "mixed.jsonl",
        "{\"query_id\": \"q1\", \"results\": [{\"doc_id\": \"a\", \"rank\": 2}, \"x\"]}\n\
         {\"query_id\": \"q3\", \"results\": [{\"doc_id\": \"d\", \"rank\": 0}]}\n",
    );
    wd.rgrade(&[
        "grade",
        "--labels",
        "labels.jsonl",
        "-q",
        "-o",
        "mixed",
        "mixed.jsonl",
    ])
    .expect_code(1)
    .expect_stderr(&[
        "unranked_result",
        "result 2 has no 'rank' though result 1 has one",
    ]);
    let reasons: Vec<String> = (wd.read_jsonl("mixed/rejects.jsonl").iter())
        .map(|reject| reject["reason"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(reasons, ["unranked_result", "bad_rank"]);
}

/// Empty parts are inputs without records: a 0-byte file, a 0-byte file
/// named `.gz`, a valid gzip stream of nothing and a 0-row Parquet part
/// (what Spark writes for an empty partition) beside a log are each
/// listed in summary.json with no record, and the grades are those of
/// the log alone. When every input is empty, nothing was graded: exit 2.
#[test]
fn empty_parts_are_inputs_without_records() {
    let wd = Workdir::new("empty_parts");
    wd.write("labels.jsonl", LABELS);
    wd.write("listed.jsonl", jsonl(|doc, _| format!("\"{doc}\""), false));
    let want = grade(&wd, "alone", &["listed.jsonl"], 0);
    wd.write("empty.jsonl", "");
    wd.write("empty.jsonl.gz", "");
    wd.write("nothing.jsonl.gz", gzip(b""));
    write_structs(&wd.path("part-0.parquet"), &[]);
    let empties = [
        "empty.jsonl",
        "empty.jsonl.gz",
        "nothing.jsonl.gz",
        "part-0.parquet",
    ];
    let mut logs = vec!["listed.jsonl"];
    logs.extend(empties);
    let got = grade(&wd, "parts", &logs, 0);
    assert_same_lines("with empty parts", &got, &want);
    let summary = wd.read_json("parts/summary.json");
    let inputs = summary["inputs"].as_array().expect("inputs");
    assert_eq!(inputs.len(), 5);
    for (input, name) in inputs[1..].iter().zip(empties) {
        assert!(
            input["path"].as_str().unwrap_or_default().ends_with(name),
            "{input}"
        );
        assert_eq!(
            (input["records"].as_u64(), input["lines"].as_u64()),
            (Some(0), Some(0))
        );
    }

    let mut args = vec!["grade", "--labels", "labels.jsonl", "-o", "none"];
    args.extend(empties);
    wd.rgrade(&args)
        .expect_code(2)
        .expect_stderr(&["no log input holds a record (4 inputs read"]);
    assert!(!wd.exists("none/summary.json"));
}

/// A field flag given that matches no field of any record is exit 2,
/// naming the flag and the fields the records have, in JSONL, Parquet and
/// traces alike; a field some input lacks but another has is fine, and a
/// flag left at its default may match nothing.
#[test]
fn a_field_flag_that_matches_nothing_is_refused() {
    let wd = Workdir::new("field_flags");
    wd.write("labels.jsonl", LABELS);
    wd.write(
        "stages.jsonl",
        "{\"query_id\": \"q1\", \"stage\": \"retrieve\", \"results\": [\"x\", \"a\"]}\n\
         {\"query_id\": \"q1\", \"stage\": \"final\", \"results\": [\"a\"], \"latency_ms\": 4}\n",
    );
    wd.write(
        "other.jsonl",
        "{\"query_id\": \"q2\", \"results\": [\"b\"]}\n",
    );
    let refused = |flags: &[&str], logs: &str, needles: &[&str]| {
        let mut args = vec!["grade", "--labels", "labels.jsonl", "-q", "-o", "refused"];
        args.extend_from_slice(flags);
        args.push(logs);
        wd.rgrade(&args).expect_code(2).expect_stderr(needles);
        assert!(
            !wd.exists("refused/summary.json"),
            "{flags:?}: nothing graded"
        );
    };
    refused(
        &["--stage-field", "stg"],
        "stages.jsonl",
        &[
            "no record of the logs has the field 'stg' that --stage-field names",
            "(the records have latency_ms, query_id, results, stage)",
        ],
    );
    refused(
        &["--query-field", "/request/qid"],
        "stages.jsonl",
        &["'/request/qid' that --query-field names"],
    );
    refused(
        &["--doc-field", "docid"],
        "stages.jsonl",
        &["no result of any record of the logs has the field 'docid' that --doc-field names"],
    );
    // The latency is in one input, not the other: the run has it.
    wd.rgrade(&[
        "grade",
        "--labels",
        "labels.jsonl",
        "-q",
        "--latency-field",
        "latency_ms",
        "--stage-field",
        "stage",
        "stages.jsonl",
        "other.jsonl",
    ])
    .expect_code(0);

    // Parquet: the schema decides, and a rank field inside the results.
    let rows = vec![("q1", vec![("a", Some(1.0), Some(1))])];
    write_structs(&wd.path("events.parquet"), &rows);
    refused(
        &["--run-field", "runn"],
        "events.parquet",
        &[
            "'runn' that --run-field names",
            "(the records have query_id, results)",
        ],
    );
    refused(
        &["--rank-field", "position"],
        "events.parquet",
        &["--rank-field"],
    );
    wd.rgrade(&[
        "grade",
        "--labels",
        "labels.jsonl",
        "-q",
        "--rank-field",
        "rank",
        "events.parquet",
    ])
    .expect_code(0);

    // Traces: a span attribute.
    let span = serde_json::json!({"resourceSpans": [{"scopeSpans": [{"spans": [{
        "name": "retrieve",
        "attributes": [
            {"key": "openinference.span.kind", "value": {"stringValue": "RETRIEVER"}},
            {"key": "query_id", "value": {"stringValue": "q1"}},
            {"key": "retrieval.documents.0.document.id", "value": {"stringValue": "a"}},
        ],
    }]}]}]});
    wd.write("traces.jsonl", format!("{span}\n"));
    refused(
        &["--query-field", "qid"],
        "traces.jsonl",
        &["'qid' that --query-field names", "openinference.span.kind"],
    );
    wd.rgrade(&[
        "grade",
        "--labels",
        "labels.jsonl",
        "-q",
        "--query-field",
        "query_id",
        "traces.jsonl",
    ])
    .expect_code(0);
}

/// A damaged input (a gzip stream cut short, a zstd one, a Parquet file
/// cut short) stops the run by default, naming it (exit 2); with
/// `--bad-files skip` the other inputs grade as they would alone, and each
/// damaged file, in input order, is one `bad_file` reject (line 0) and
/// listed in summary.json with why, counting against `--max-rejects`.
#[test]
fn damaged_inputs_stop_the_run_or_are_skipped() {
    let wd = Workdir::new("damaged_parts");
    wd.write("labels.jsonl", LABELS);
    wd.write("listed.jsonl", jsonl(|doc, _| format!("\"{doc}\""), false));
    let want = grade(&wd, "alone", &["listed.jsonl"], 0);
    let many = jsonl(
        |doc, i| format!("{{\"doc_id\": \"{doc}\", \"rank\": {}}}", i + 1),
        false,
    )
    .repeat(200);
    let gz = gzip(many.as_bytes());
    wd.write("a-cut.jsonl.gz", &gz[..gz.len() / 2]);
    let zst = crate::util::zstd_compress(many.as_bytes());
    wd.write("b-cut.jsonl.zst", &zst[..zst.len() / 2]);
    let rows = vec![("q1", vec![("a", Some(1.0), Some(1))])];
    write_structs(&wd.path("whole.parquet"), &rows);
    let parquet = wd.read("whole.parquet");
    wd.write("c-cut.parquet", &parquet[..parquet.len() - 10]);
    let damaged = ["a-cut.jsonl.gz", "b-cut.jsonl.zst", "c-cut.parquet"];
    for file in damaged {
        wd.rgrade(&[
            "grade",
            "--labels",
            "labels.jsonl",
            "-q",
            "-o",
            "stopped",
            "listed.jsonl",
            file,
        ])
        .expect_code(2)
        .expect_stderr(&[file]);
        assert!(!wd.exists("stopped/summary.json"), "{file}: nothing graded");
    }
    let mut args = grade_args(
        "skipped",
        &[
            "--bad-files",
            "skip",
            "--max-rejects",
            "3",
            "c-cut.parquet",
            "listed.jsonl",
            "a-cut.jsonl.gz",
            "b-cut.jsonl.zst",
        ],
    );
    wd.rgrade(&args).expect_code(0);
    assert_same_lines(
        "damaged parts skipped",
        &wd.read("skipped/per_query.csv"),
        &want,
    );
    let summary = wd.read_json("skipped/summary.json");
    assert_counts_add_up(&summary);
    let skipped: Vec<&str> = (summary["inputs"].as_array().expect("inputs").iter())
        .filter(|input| input["skipped"].is_string())
        .map(|input| input["path"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        skipped,
        ["c-cut.parquet", "a-cut.jsonl.gz", "b-cut.jsonl.zst"]
    );
    let rejects = wd.read_jsonl("skipped/rejects.jsonl");
    let listed: Vec<(&str, u64, &str)> = (rejects.iter())
        .map(|r| {
            let text = |key: &str| r[key].as_str().unwrap_or_default();
            (
                text("file"),
                r["line"].as_u64().unwrap_or(u64::MAX),
                text("reason"),
            )
        })
        .collect();
    assert_eq!(
        listed,
        [
            ("c-cut.parquet", 0, "bad_file"),
            ("a-cut.jsonl.gz", 0, "bad_file"),
            ("b-cut.jsonl.zst", 0, "bad_file"),
        ]
    );
    // Over --max-rejects, as any reject: exit 1, every output written.
    let limit = args.iter().position(|a| *a == "3").expect("the limit");
    args[limit] = "2";
    args[7] = "over";
    wd.rgrade(&args).expect_code(1).expect_stderr(&["bad_file"]);
    assert!(wd.exists("over/summary.json"));
}
