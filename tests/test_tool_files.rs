//! Files as other tools write them: BEIR's tab-separated qrels and runs,
//! ranx's and pytrec_eval's JSON dicts of qrels, and grades written as
//! floats, each grading as the same judgments in TREC qrels do, byte for
//! byte; a fraction, or a JSON dict that is no dict, refused with the file
//! and line.

use std::sync::Arc;

use arrow_array::{ArrayRef, Float64Array, StringArray};

use crate::test_parquet::write_parquet;
use crate::util::{assert_cell, assert_text, text, Workdir};

/// Judgments of three queries: (query, doc, grade). q3 judges nothing
/// relevant.
const JUDGED: [(&str, &str, i64); 7] = [
    ("q1", "a", 2),
    ("q1", "b", 0),
    ("q1", "c", 1),
    ("q2", "x", 1),
    ("q2", "doc#9", 3),
    ("q3", "a", 0),
    ("q3", "z", 0),
];

/// A run of those queries, scores tied (broken by doc id descending, as
/// trec_eval breaks them): (query, doc, score).
const RUN: [(&str, &str, &str); 9] = [
    ("q1", "c", "2.5"),
    ("q1", "b", "2.5"),
    ("q1", "a", "1"),
    ("q1", "d", "0.5"),
    ("q2", "y", "3"),
    ("q2", "x", "-1"),
    ("q2", "doc#9", "-1.0"),
    ("q3", "a", "1"),
    ("q4", "a", "1"),
];

/// `grade` written as `float` writes it: `2.`, `0.0`, `1e0` in turn.
fn as_float(grade: i64, i: usize) -> String {
    match i % 3 {
        0 => format!("{grade}."),
        1 => format!("{grade}.0"),
        _ => format!("{grade}e0"),
    }
}

/// `grade` as a JSON float: `2.0`, `2e0` (JSON has no `2.`).
fn as_json_float(grade: i64, i: usize) -> String {
    match i % 2 {
        0 => format!("{grade}.0"),
        _ => format!("{grade}e0"),
    }
}

/// The judged queries, in order.
const QUERIES: [&str; 3] = ["q1", "q2", "q3"];

/// The judgments of `query` as a JSON object's members, `"doc": grade`,
/// grades as floats, each after `gap`.
fn members(query: &str, gap: &str) -> String {
    let docs: Vec<String> = (JUDGED.iter().enumerate())
        .filter(|(_, (q, _, _))| *q == query)
        .map(|(i, (_, doc, grade))| format!("{gap}\"{doc}\": {}", as_json_float(*grade, i)))
        .collect();
    docs.join(",")
}

/// The judgments as a JSON dict, one line or pretty-printed.
fn json_dict(pretty: bool) -> String {
    let (gap, inner, close) = match pretty {
        true => ("\n  ", "\n    ", "\n}\n"),
        false => ("", " ", "}"),
    };
    let queries: Vec<String> = (QUERIES.iter())
        .map(|query| format!("{gap}\"{query}\": {{{}}}", members(query, inner)))
        .collect();
    format!("{{{}{close}", queries.join(","))
}

/// Grade `run` against `labels` (with `extra` flags) into `out`; its
/// per_query.csv and aggregates.csv.
fn graded(wd: &Workdir, labels: &str, run: &str, out: &str, extra: &[&str]) -> [String; 2] {
    let mut args = vec!["grade", "--labels", labels, "-k", "1,3,all", "-q"];
    args.extend_from_slice(&["--run-name", "file", "-o", out]);
    args.extend_from_slice(extra);
    args.push(run);
    wd.rgrade(&args).expect_code(0);
    ["per_query.csv", "aggregates.csv"].map(|file| wd.read_text(&format!("{out}/{file}")))
}

/// The same judgments as TREC qrels, BEIR TSV, JSON dicts (one line and
/// pretty-printed), CSV and Parquet with float grades, and JSONL with
/// float grades: the same outputs as the qrels give.
#[test]
fn every_shape_of_the_judgments_grades_as_the_qrels() {
    let wd = Workdir::new("tool_files_labels");
    let trec: Vec<String> = (RUN.iter())
        .map(|(q, d, s)| format!("{q} Q0 {d} 0 {s} x"))
        .collect();
    wd.write("bm25.trec", text(&trec));
    let qrels: Vec<String> = (JUDGED.iter())
        .map(|(q, d, g)| format!("{q} 0 {d} {g}"))
        .collect();
    wd.write("qrels.txt", text(&qrels));
    let mut beir = vec!["query-id\tcorpus-id\tscore".to_string()];
    let floats = JUDGED.iter().enumerate();
    beir.extend(
        floats
            .clone()
            .map(|(i, (q, d, g))| format!("{q}\t{d}\t{}", as_float(*g, i))),
    );
    wd.write("test.tsv", text(&beir));
    let mut csv = vec!["q_id,doc_id,relevance".to_string()];
    csv.extend(floats.map(|(i, (q, d, g))| format!("{q},{d},{}", as_float(*g, i))));
    wd.write("labels.csv", text(&csv));
    wd.write("one_line.json", json_dict(false));
    wd.write("pretty.json", json_dict(true));
    let jsonl: Vec<String> = (QUERIES.iter())
        .map(|q| {
            format!(
                "{{\"query_id\": \"{q}\", \"relevant\": {{{}}}}}",
                members(q, "")
            )
        })
        .collect();
    wd.write("labels.jsonl", text(&jsonl));
    let column = |i: usize| JUDGED.iter().map(move |j| [j.0, j.1][i]);
    write_parquet(
        &wd.path("labels.parquet"),
        vec![
            (
                "query_id",
                Arc::new(StringArray::from_iter_values(column(0))) as ArrayRef,
            ),
            ("doc_id", Arc::new(StringArray::from_iter_values(column(1)))),
            (
                "grade",
                Arc::new(Float64Array::from_iter_values(JUDGED.map(|j| j.2 as f64))),
            ),
        ],
        4,
    );
    let want = graded(&wd, "qrels.txt", "bm25.trec", "qrels", &[]);
    for labels in [
        "test.tsv",
        "one_line.json",
        "pretty.json",
        "labels.csv",
        "labels.jsonl",
        "labels.parquet",
    ] {
        let got = graded(&wd, labels, "bm25.trec", &format!("out-{labels}"), &[]);
        assert_eq!(got, want, "{labels}");
    }
    let asked = [("test.tsv", "tsv"), ("one_line.json", "json")];
    for (labels, format) in asked {
        let out = format!("{labels}-asked");
        let got = graded(&wd, labels, "bm25.trec", &out, &["--labels-format", format]);
        assert_eq!(got, want, "{labels} as {format}");
        let summary = wd.read_json(&format!("{out}/summary.json"));
        assert_eq!(summary["labels"]["format"], format, "{labels}");
    }
}

/// A BEIR-style run (`query-id corpus-id score`, tab-separated) is ranked
/// by its scores as the same run in TREC form is.
#[test]
fn a_beir_run_grades_as_the_same_trec_run() {
    let wd = Workdir::new("tool_files_beir_run");
    let qrels: Vec<String> = (JUDGED.iter())
        .map(|(q, d, g)| format!("{q} 0 {d} {g}"))
        .collect();
    wd.write("qrels.txt", text(&qrels));
    let trec: Vec<String> = (RUN.iter())
        .map(|(q, d, s)| format!("{q} Q0 {d} 0 {s} x"))
        .collect();
    wd.write("bm25.trec", text(&trec));
    let mut beir = vec!["query-id\tcorpus-id\tscore".to_string()];
    beir.extend(RUN.iter().rev().map(|(q, d, s)| format!("{q}\t{d}\t{s}")));
    wd.write("tsv/bm25.tsv", text(&beir));
    let want = graded(&wd, "qrels.txt", "bm25.trec", "trec", &[]);
    let got = graded(&wd, "qrels.txt", "tsv/bm25.tsv", "tsv", &[]);
    assert_eq!(got, want);
    // The tie at 2.5, listed b first here, is broken by doc id descending
    // as trec_eval breaks it: c, the relevant one, first; the run is named
    // after its file.
    let q1 = wd.read_csv("tsv/per_query.csv").row(&[("query_id", "q1")]);
    assert_cell(&q1, "first_rel_rank", 1.0);
    assert_text(&q1, "run", "bm25");
    let asked = graded(
        &wd,
        "qrels.txt",
        "tsv/bm25.tsv",
        "asked",
        &["--logs-format", "csv"],
    );
    assert_eq!(asked, want);
}

/// `agree` reads both keys' grades written as floats, and says the same
/// of them as of the keys written as integers.
#[test]
fn agree_reads_float_grades_as_their_whole_numbers() {
    let wd = Workdir::new("tool_files_agree");
    let qrels: Vec<String> = (JUDGED.iter())
        .map(|(q, d, g)| format!("{q} 0 {d} {g}"))
        .collect();
    wd.write("a.qrels", text(&qrels));
    let other: Vec<String> = (JUDGED.iter())
        .map(|(q, d, g)| format!("{q} 0 {d} {}", (g + 1) % 3))
        .collect();
    wd.write("b.qrels", text(&other));
    wd.write("a.json", json_dict(true));
    let floats: Vec<String> = (JUDGED.iter())
        .map(|(q, d, g)| format!("{q} 0 {d} {}.", (g + 1) % 3))
        .collect();
    wd.write("b_floats.qrels", text(&floats));
    wd.rgrade(&["agree", "a.qrels", "b.qrels", "-o", "ints", "-q"])
        .expect_code(0);
    wd.rgrade(&["agree", "a.json", "b_floats.qrels", "-o", "floats", "-q"])
        .expect_code(0);
    for file in ["agreement.csv", "agreement_slices.csv"] {
        let read = |out: &str| wd.read_text(&format!("{out}/{file}"));
        assert_eq!(read("floats"), read("ints"), "{file}");
    }
}

/// A fraction is no grade in any format; a JSON dict whose values are not
/// objects of grades, or with more after its object, is refused; each
/// names the file and line.
#[test]
fn fractions_and_broken_dicts_are_refused_with_file_and_line() {
    let wd = Workdir::new("tool_files_refusals");
    wd.write("run.trec", "q1 Q0 a 1 1.0 x\n");
    let cases = [
        (
            "qrels.txt",
            "q1 0 a 1\nq1 0 b 0.5\n",
            "qrels.txt:2: grade '0.5' is not a whole number",
        ),
        (
            "test.tsv",
            "query-id\tcorpus-id\tscore\nq1\ta\t1.5\n",
            "test.tsv:2: score '1.5' is not a whole number",
        ),
        (
            "labels.jsonl",
            "{\"query_id\": \"q1\", \"relevant\": {\"a\": 0.25}}\n",
            "labels.jsonl:1: the grade of 'a' is not a whole number",
        ),
        (
            "labels.csv",
            "query_id,doc_id,grade\nq1,a,1\nq1,b,2.5\n",
            "labels.csv:3: grade '2.5' is not a whole number",
        ),
        (
            "pretty.json",
            "{\n  \"q1\": {\n    \"a\": 1,\n    \"b\": 0.5\n  }\n}\n",
            "pretty.json:4: the grade of 'b' (0.5) is not a whole number",
        ),
        (
            "lists.json",
            "{\"q1\": {\"a\": 1}, \"q2\": [\"a\"]}",
            "lists.json:1: invalid type: sequence, expected an object of doc id to grade for \
             query 'q2' (column 24)",
        ),
        (
            "two.json",
            "{\"q1\": {\"a\": 1}}\n{\"q2\": {\"a\": 1}}\n",
            "two.json:2: more after the JSON object (column 1): a JSON dict file holds one \
             object of query id to {doc id: grade}",
        ),
    ];
    for (file, contents, says) in cases {
        wd.write(file, contents);
        let out = format!("out-{file}");
        let run = wd.rgrade(&["grade", "--labels", file, "-q", "-o", &out, "run.trec"]);
        run.expect_code(2);
        assert!(run.stderr.contains(says), "{file}: {run}");
    }
    write_parquet(
        &wd.path("labels.parquet"),
        vec![
            (
                "query_id",
                Arc::new(StringArray::from(vec!["q1", "q1"])) as ArrayRef,
            ),
            ("doc_id", Arc::new(StringArray::from(vec!["a", "b"]))),
            ("grade", Arc::new(Float64Array::from(vec![1.0, 0.5]))),
        ],
        4,
    );
    let run = wd.rgrade(&[
        "grade",
        "--labels",
        "labels.parquet",
        "-q",
        "-o",
        "pq",
        "run.trec",
    ]);
    run.expect_code(2);
    let says = "labels.parquet:2: grade 0.5 of doc 'b' is not a whole number";
    assert!(run.stderr.contains(says), "{run}");
}
