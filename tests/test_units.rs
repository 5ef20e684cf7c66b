//! `--unit doc --doc-of PATTERN`, through the binary: chunk rankings graded
//! against labels of documents equal a grading of rankings this test maps
//! to documents itself; a hand-computed case; and what is refused.

use serde_json::{json, Value};

use crate::util::{repo_path, Workdir};

/// A chunk id's document, as the test maps it: the id before its last `#`.
fn document(id: &str) -> &str {
    id.rfind('#').map_or(id, |at| &id[..at])
}

/// The judges sample's judge key with every label moved to its document
/// (a document takes its chunks' highest grade), as JSONL.
fn document_labels() -> String {
    let key = std::fs::read_to_string(repo_path("data-samples/judges/judge.jsonl")).unwrap();
    let mut out = String::new();
    for line in key.lines() {
        let mut label: Value = serde_json::from_str(line).unwrap();
        let mut grades = serde_json::Map::new();
        for (id, grade) in label["relevant"].as_object().unwrap() {
            let doc = document(id).to_string();
            let best = grades.get(&doc).map_or(i64::MIN, |g| g.as_i64().unwrap());
            grades.insert(doc, json!(best.max(grade.as_i64().unwrap())));
        }
        label["relevant"] = Value::Object(grades);
        out.push_str(&format!("{label}\n"));
    }
    out
}

/// The sample's logs, each ranking's chunks replaced by their documents,
/// a document at its first chunk's place and its later chunks left out.
fn document_rankings(logs: &str) -> (String, u64) {
    let mut out = String::new();
    let mut dropped = 0;
    for line in logs.lines() {
        let mut event: Value = serde_json::from_str(line).unwrap();
        let mut seen = Vec::new();
        for id in event["results"].as_array().unwrap() {
            let doc = document(id.as_str().unwrap()).to_string();
            if seen.contains(&doc) {
                dropped += 1;
            } else {
                seen.push(doc);
            }
        }
        event["results"] = json!(seen);
        out.push_str(&format!("{event}\n"));
    }
    (out, dropped)
}

#[test]
fn chunk_rankings_grade_as_their_documents_would() {
    let wd = Workdir::new("units_sample");
    let logs = std::fs::read_to_string(repo_path("data-samples/judges/logs.jsonl")).unwrap();
    // Two chunks of one document in a ranking, so that folding shows.
    let logs = logs.replacen(
        "chunk-0016\"",
        "chunk-0016\",\"kb/troubleshooting/session-export#chunk-0099\"",
        1,
    );
    let (mapped, dropped) = document_rankings(&logs);
    assert!(dropped > 0);
    wd.write("labels.jsonl", document_labels());
    wd.write("chunks.jsonl", &logs);
    wd.write("docs.jsonl", mapped);
    let grade = |out: &str, extra: &[&str], log: &str| {
        let mut args = vec![
            "grade",
            "--labels",
            "labels.jsonl",
            "-k",
            "1,5,10",
            "-q",
            "-o",
            out,
        ];
        args.extend(extra);
        args.push(log);
        wd.rgrade(&args).expect_code(0);
    };
    grade("by_test", &[], "docs.jsonl");
    grade(
        "by_separator",
        &["--unit", "doc", "--doc-of", "#"],
        "chunks.jsonl",
    );
    grade(
        "by_regex",
        &["--unit", "doc", "--doc-of", r"^(.+)#chunk-[0-9]+$"],
        "chunks.jsonl",
    );
    let want = wd.read("by_test/per_query.csv");
    for out in ["by_separator", "by_regex"] {
        assert_eq!(wd.read(&format!("{out}/per_query.csv")), want, "{out}");
        assert_eq!(
            wd.read(&format!("{out}/aggregates.csv")),
            wd.read("by_test/aggregates.csv")
        );
        let summary = wd.read_json(&format!("{out}/summary.json"));
        assert_eq!(summary["counts"]["later_chunks"], dropped, "{out}");
        assert_eq!(summary["counts"].get("unmapped_ids"), None, "{out}");
    }
    assert_eq!(
        wd.read_json("by_regex/summary.json")["settings"]["doc_of"],
        r"^(.+)#chunk-[0-9]+$"
    );
    // Graded as chunks, the same rankings find none of the documents.
    grade("as_chunks", &[], "chunks.jsonl");
    let summary = wd.read_json("as_chunks/summary.json");
    let recall = &summary["overall"][0]["metrics"]["recall@10"];
    assert_eq!(recall.as_f64(), Some(0.0), "{summary}");
}

#[test]
fn a_hand_computed_ranking_of_chunks() {
    let wd = Workdir::new("units_by_hand");
    wd.write(
        "labels.jsonl",
        r#"{"query_id": "q1", "relevant": ["kb/a", "kb/b"]}
{"query_id": "q2", "relevant": {"kb/c": 2, "kb/d": 0}}
"#,
    );
    // q1: x, a, (x), (a), b → x a b; q2: d, (d), c, plainid → d c plainid.
    wd.write(
        "logs.jsonl",
        r#"{"query_id": "q1", "results": ["kb/x#1", "kb/a#3", "kb/x#2", "kb/a#1", "kb/b#0"]}
{"query_id": "q2", "results": ["kb/d#1", "kb/d#2", "kb/c#9", "plainid"]}
"#,
    );
    let run = wd.rgrade(&[
        "grade",
        "--labels",
        "labels.jsonl",
        "-k",
        "2",
        "--unit",
        "doc",
        "--doc-of",
        "#",
        "-o",
        "out",
        "-q",
        "logs.jsonl",
    ]);
    run.expect_code(0);
    assert!(
        run.stderr.contains("--doc-of found no document in 1 id"),
        "{}",
        run.stderr
    );
    let rows = wd.read_csv("out/per_query.csv").records();
    let cells = |row: &std::collections::HashMap<String, String>| {
        [
            "n_results",
            "first_rel_rank",
            "recall@2",
            "rr@2",
            "precision@2",
        ]
        .map(|c| row[c].clone())
    };
    assert_eq!(cells(&rows[0]), ["3", "2", "0.5", "0.5", "0.5"]);
    assert_eq!(cells(&rows[1]), ["3", "2", "1", "0.5", "0.5"]);
    let counts = &wd.read_json("out/summary.json")["counts"];
    assert_eq!(
        (&counts["later_chunks"], &counts["unmapped_ids"]),
        (&json!(3), &json!(1))
    );
    let page = wd.read_text("out/report.html");
    assert!(page.contains("3 later chunks of a ranked document dropped"));
    assert!(page.contains("1 result ids named no document"));
}

/// Labels made per chunk, graded with `--unit doc`: only results are
/// mapped, so a chunk-labeled query scores 0. Half such a key gives a
/// plausible recall of 0.5 where the rankings found every label; grade
/// warns (whatever -q), counts the ids in summary.json and the page.
#[test]
fn labels_that_look_like_chunks_are_warned_of() {
    let wd = Workdir::new("units_chunk_labels");
    wd.write(
        "labels.jsonl",
        r#"{"query_id": "q1", "relevant": ["kb/a#1"]}
{"query_id": "q2", "relevant": ["kb/b"]}
"#,
    );
    wd.write(
        "logs.jsonl",
        r#"{"query_id": "q1", "results": ["kb/a#1"]}
{"query_id": "q2", "results": ["kb/b#3"]}
"#,
    );
    let doc = ["--unit", "doc", "--doc-of", "#"];
    let mut args = vec!["grade", "--labels", "labels.jsonl", "-o", "out", "-q"];
    args.extend(doc);
    args.push("logs.jsonl");
    let run = wd.rgrade(&args);
    run.expect_code(0).expect_stderr(&[
        "--doc-of finds a document in 1 of 2 labeled ids (e.g. 'kb/a#1'",
        "the labels look made per chunk",
    ]);
    let summary = wd.read_json("out/summary.json");
    assert_eq!(summary["overall"][0]["metrics"]["recall@10"], json!(0.5));
    assert_eq!(summary["counts"]["labeled_chunk_ids"], json!(1));
    let page = wd.read_text("out/report.html");
    assert!(page.contains("1 labeled ids look like chunks"));
    // Labels of documents only: no such warning.
    wd.write(
        "docs.jsonl",
        "{\"query_id\": \"q1\", \"relevant\": [\"kb/a\"]}\n",
    );
    let mut args = vec!["grade", "--labels", "docs.jsonl", "-o", "docs", "-q"];
    args.extend(doc);
    args.push("logs.jsonl");
    let run = wd.rgrade(&args);
    run.expect_code(0);
    assert!(!run.stderr.contains("labeled ids"), "{}", run.stderr);
    let counts = &wd.read_json("docs/summary.json")["counts"];
    assert_eq!(counts.get("labeled_chunk_ids"), None);
}

#[test]
fn what_cannot_be_mapped_is_refused() {
    let wd = Workdir::new("units_refused");
    wd.write(
        "labels.jsonl",
        "{\"query_id\": \"q1\", \"relevant\": [\"kb/a\"]}\n",
    );
    wd.write("run.trec", "q1 Q0 kb/a#1 1 3.0 r\nq1 Q0 kb/a#2 2 2.0 r\n");
    wd.write(
        "twice.jsonl",
        "{\"query_id\": \"q1\", \"results\": [\"kb/a#1\", \"kb/a#1\"]}\n",
    );
    let doc = ["--unit", "doc", "--doc-of", "#"];
    let grade = |extra: &[&str], log: &str| {
        let mut args = vec!["grade", "--labels", "labels.jsonl", "-q"];
        args.extend(extra);
        args.push(log);
        wd.rgrade(&args)
    };
    let run = grade(&doc, "run.trec");
    run.expect_code(2);
    assert!(
        run.stderr
            .contains("run.trec: --unit doc maps the results of search events"),
        "{}",
        run.stderr
    );
    for (extra, says) in [
        (&["--unit", "doc"][..], "--unit doc needs --doc-of"),
        (
            &["--doc-of", "#"][..],
            "--doc-of only applies with --unit doc",
        ),
        (
            &["--unit", "doc", "--doc-of", "(a)(b)"][..],
            "2 capture groups",
        ),
    ] {
        let run = grade(extra, "twice.jsonl");
        run.expect_code(2);
        assert!(run.stderr.contains(says), "{extra:?}: {}", run.stderr);
    }
    // The same chunk twice is a repeat, as it is without --unit doc.
    let run = grade(&doc, "twice.jsonl");
    run.expect_code(1);
    assert!(run.stderr.contains("duplicate_doc"), "{}", run.stderr);
}

#[test]
fn compare_refuses_gradings_of_different_units() {
    let wd = Workdir::new("units_compare");
    wd.write(
        "labels.jsonl",
        "{\"query_id\": \"q1\", \"relevant\": [\"kb/a\"]}\n",
    );
    wd.write(
        "logs.jsonl",
        "{\"query_id\": \"q1\", \"results\": [\"kb/a#1\"]}\n",
    );
    for (out, extra) in [
        ("docs", &["--unit", "doc", "--doc-of", "#"][..]),
        ("ids", &[][..]),
    ] {
        let mut args = vec!["grade", "--labels", "labels.jsonl", "-q", "-o", out];
        args.extend(extra);
        args.push("logs.jsonl");
        wd.rgrade(&args).expect_code(0);
    }
    let run = wd.rgrade(&["compare", "docs", "ids", "-q"]);
    run.expect_code(2);
    assert!(
        run.stderr.contains("graded different units"),
        "{}",
        run.stderr
    );
}

#[test]
fn the_documents_sample_grades_as_the_guide_says() {
    let wd = Workdir::new("units_documents_sample");
    let [key, logs] = ["documents.jsonl", "logs.jsonl"].map(|f| {
        repo_path(&format!("data-samples/judges/{f}"))
            .display()
            .to_string()
    });
    wd.rgrade(&[
        "grade", "--labels", &key, "--unit", "doc", "--doc-of", "#", "-k", "10", "-q", "-o", "out",
        &logs,
    ])
    .expect_code(0);
    let summary = wd.read_json("out/summary.json");
    assert_eq!(summary["counts"]["later_chunks"], 16);
    assert_eq!(summary["counts"]["graded_records"], 320);
    let bm25 = &summary["overall"][0];
    assert_eq!(bm25["run"], "bm25");
    let recall = bm25["metrics"]["recall@10"].as_f64().unwrap();
    assert!((recall - 0.641).abs() < 0.0005, "{recall}");
}
