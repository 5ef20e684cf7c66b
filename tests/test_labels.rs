//! Answer keys in every format (JSONL, TREC qrels, CSV) grade alike, and
//! invalid labels stop `rgrade grade` before it grades anything (exit 2).

use serde_json::Value;

use crate::util::{assert_cell, assert_text, text, Workdir};

/// The same answer key written as JSONL, TREC qrels and CSV grades to the
/// same per_query.csv, no-answer queries and `#` in doc ids included; with
/// task, language and required, JSONL and CSV agree too.
#[test]
fn label_formats_agree() {
    let wd = Workdir::new("label_formats");
    wd.write(
        "labels.jsonl",
        text(&[
            r#"{"query_id": "q1", "relevant": {"a": 2, "b": 1}}"#,
            r#"{"query_id": "q2", "relevant": ["c"]}"#,
            r#"{"query_id": "q3", "relevant": []}"#,
            r#"{"query_id": "q4", "relevant": ["d#1"]}"#,
        ]),
    );
    wd.write(
        "qrels.txt",
        text(&[
            "q1 0 a 2",
            "q1 0 b 1",
            "q2 0 c 1",
            "q3 0 zz 0",
            "q4\t0\td#1\t1",
        ]),
    );
    wd.write(
        "labels.csv",
        text(&[
            "query_id,doc_id,grade",
            "q1,a,2",
            "q1,b,1",
            "q2,c,1",
            "q3,,",
            "q4,d#1,1",
        ]),
    );
    wd.write(
        "logs.jsonl",
        text(&[
            r#"{"query_id": "q1", "results": ["b", "a", "c"]}"#,
            r#"{"query_id": "q2", "results": ["c"]}"#,
            r#"{"query_id": "q3", "results": ["a"]}"#,
            r#"{"query_id": "q4", "results": ["x", "d#1"]}"#,
        ]),
    );
    let grade = |labels: &str, out: &str| {
        wd.rgrade(&[
            "grade",
            "--labels",
            labels,
            "-k",
            "1,3",
            "-o",
            out,
            "logs.jsonl",
        ])
        .expect_code(0);
        wd.read(&format!("{out}/per_query.csv"))
    };
    let jsonl = grade("labels.jsonl", "from-jsonl");
    let per_query = wd.read_csv("from-jsonl/per_query.csv");
    assert_eq!(
        per_query.column("status"),
        ["ok", "ok", "no_answer", "ok"],
        "\n{}",
        per_query.dump()
    );
    assert_cell(&per_query.row(&[("query_id", "q4")]), "rr@3", 0.5);
    assert_eq!(
        String::from_utf8_lossy(&grade("qrels.txt", "from-qrels")),
        String::from_utf8_lossy(&jsonl),
        "qrels vs JSONL"
    );
    assert_eq!(
        String::from_utf8_lossy(&grade("labels.csv", "from-csv")),
        String::from_utf8_lossy(&jsonl),
        "CSV vs JSONL"
    );
    let formats: Vec<Value> = ["from-jsonl", "from-qrels", "from-csv"]
        .iter()
        .map(|out| wd.read_json(&format!("{out}/summary.json"))["labels"]["format"].clone())
        .collect();
    assert_eq!(formats, ["jsonl", "trec", "csv"]);

    wd.write(
        "sliced.jsonl",
        text(&[
            r#"{"query_id": "q1", "relevant": ["a"], "task": "howto", "language": "de", "required": true}"#,
            r#"{"query_id": "q2", "relevant": [], "task": "chitchat", "language": "en"}"#,
        ]),
    );
    wd.write(
        "sliced.csv",
        text(&[
            "query_id,doc_id,grade,task,language,required",
            "q1,a,1,howto,de,true",
            "q2,,,chitchat,en,false",
        ]),
    );
    let from_jsonl = grade("sliced.jsonl", "sliced-jsonl");
    assert_eq!(
        String::from_utf8_lossy(&grade("sliced.csv", "sliced-csv")),
        String::from_utf8_lossy(&from_jsonl)
    );
    assert_eq!(
        wd.read("sliced-csv/aggregates.csv"),
        wd.read("sliced-jsonl/aggregates.csv")
    );
    let q1 = wd
        .read_csv("sliced-csv/per_query.csv")
        .row(&[("query_id", "q1")]);
    assert_text(&q1, "task", "howto");
    assert_text(&q1, "language", "de");
    assert_text(&q1, "required", "true");
}

/// Invalid labels stop rgrade before grading (exit 2, no output written)
/// with a message naming `file:line`: a bad line in each format, a query
/// labeled twice (naming both lines), a file with no labeled query, a
/// missing file; `-k 0` is a usage error.
#[test]
fn invalid_labels_and_cutoffs_exit_2_naming_the_place() {
    let wd = Workdir::new("label_errors");
    wd.write(
        "logs.jsonl",
        text(&[r#"{"query_id": "q1", "results": ["a"]}"#]),
    );
    let cases: [(&str, String, &[&str]); 6] = [
        (
            "bad.jsonl",
            text(&[r#"{"query_id": "q1", "relevant": ["a"]}"#, "{oops"]),
            &["bad.jsonl:2:"],
        ),
        (
            "twice.jsonl",
            text(&[
                r#"{"query_id": "q1", "relevant": ["a"]}"#,
                r#"{"query_id": "q2", "relevant": ["b"]}"#,
                r#"{"query_id": "q1", "relevant": ["c"]}"#,
            ]),
            &["twice.jsonl:3:", "q1", "line 1"],
        ),
        (
            "qrels.txt",
            text(&["q1 0 a 1", "q1 0 b 1", "q1 0 c"]),
            &["qrels.txt:3:"],
        ),
        (
            "labels.csv",
            text(&["query_id,doc_id,grade", "q1,a,1", "q1,b,high"]),
            &["labels.csv:3:", "high"],
        ),
        (
            "blank.txt",
            text(&["", "  ", ""]),
            &["blank.txt", "no labeled query"],
        ),
        (
            "no_relevant_key.jsonl",
            text(&[r#"{"query_id": "q1"}"#]),
            &["no_relevant_key.jsonl:1:"],
        ),
    ];
    for (name, contents, needles) in cases {
        wd.write(name, contents);
        let out = format!("out-{name}");
        wd.rgrade(&["grade", "--labels", name, "-o", &out, "logs.jsonl"])
            .expect_code(2)
            .expect_stderr(needles);
        assert!(
            !wd.exists(&format!("{out}/per_query.csv")),
            "{name}: nothing graded"
        );
    }
    wd.rgrade(&["grade", "--labels", "nowhere.jsonl", "logs.jsonl"])
        .expect_code(2)
        .expect_stderr(&["nowhere.jsonl"]);
    wd.write(
        "ok.jsonl",
        text(&[r#"{"query_id": "q1", "relevant": ["a"]}"#]),
    );
    wd.rgrade(&[
        "grade",
        "--labels",
        "ok.jsonl",
        "-k",
        "3,0",
        "-o",
        "k0",
        "logs.jsonl",
    ])
    .expect_code(2)
    .expect_stderr(&["'0'"]);
    assert!(!wd.exists("k0"), "-k 0 grades nothing");
}

/// A task, language or split named `*`, the name every output gives the
/// grouping set of any, is refused (exit 2, naming `file:line`): graded,
/// it would list two grouping sets under one name.
#[test]
fn a_slice_named_like_the_any_slice_is_refused() {
    let wd = Workdir::new("label_any_slice");
    wd.write(
        "logs.jsonl",
        text(&[r#"{"query_id": "q1", "results": ["a"]}"#]),
    );
    let cases = [
        (
            "task.jsonl",
            text(&[
                r#"{"query_id": "q0", "relevant": ["a"]}"#,
                r#"{"query_id": "q1", "relevant": ["a"], "task": "*"}"#,
            ]),
            ["task.jsonl:2:", "task '*'"],
        ),
        (
            "language.csv",
            text(&["query_id,doc_id,grade,language", "q1,a,1,*"]),
            ["language.csv:2:", "language '*'"],
        ),
        (
            "split.jsonl",
            text(&[r#"{"query_id": "q1", "relevant": ["a"], "split": "*"}"#]),
            ["split.jsonl:1:", "split '*'"],
        ),
    ];
    for (name, contents, needles) in cases {
        wd.write(name, contents);
        let out = format!("out-{name}");
        wd.rgrade(&["grade", "--labels", name, "-o", &out, "logs.jsonl"])
            .expect_code(2)
            .expect_stderr(&needles);
        assert!(
            !wd.exists(&format!("{out}/per_query.csv")),
            "{name}: nothing graded"
        );
    }
}

/// Tabular labels keep the grade under the names other tools write:
/// ir_measures' `relevance`, ranx's `score`, `rel`. Judged-not-relevant
/// rows (grade 0, as TREC DL's qrels hold many) grade as the qrels do, not
/// as relevant; a grade column with an empty cell, two grade columns and a
/// column rgrade does not know are refused (exit 2), naming the file and
/// the column.
#[test]
fn csv_grade_columns_are_read_and_unknown_columns_refused() {
    let wd = Workdir::new("label_grade_columns");
    wd.write(
        "qrels.txt",
        text(&["q1 0 a 0", "q1 0 b 2", "q2 0 c -1", "q2 0 d 1"]),
    );
    wd.write(
        "logs.jsonl",
        text(&[
            r#"{"query_id": "q1", "results": ["a", "b"]}"#,
            r#"{"query_id": "q2", "results": ["c", "x", "d"]}"#,
        ]),
    );
    let grade = |labels: &str, out: &str| {
        let args = [
            "grade",
            "--labels",
            labels,
            "-k",
            "1,3",
            "-o",
            out,
            "logs.jsonl",
        ];
        wd.rgrade(&args).expect_code(0);
        wd.read(&format!("{out}/per_query.csv"))
    };
    let want = grade("qrels.txt", "qrels");
    let rr = wd.read_csv("qrels/per_query.csv");
    assert_cell(&rr.row(&[("query_id", "q1")]), "rr@3", 0.5);
    assert_cell(&rr.row(&[("query_id", "q2")]), "rr@3", 1.0 / 3.0);
    for name in ["relevance", "score", "rel", "grade"] {
        let csv = format!("{name}.csv");
        wd.write(
            &csv,
            text(&[
                &format!("query_id,iteration,doc_id,{name}"),
                "q1,0,a,0",
                "q1,0,b,2",
                "q2,0,c,-1",
                "q2,0,d,1",
            ]),
        );
        assert_eq!(
            String::from_utf8_lossy(&grade(&csv, name)),
            String::from_utf8_lossy(&want),
            "a '{name}' column grades as the qrels"
        );
    }
    let refused: [(&str, &[&str], &[&str]); 4] = [
        (
            "unknown.csv",
            &["query_id,doc_id,judgement", "q1,a,0"],
            &[
                "unknown.csv:1:",
                "unknown labels column 'judgement'",
                "relevance",
            ],
        ),
        (
            "two_grades.csv",
            &["query_id,doc_id,grade,relevance", "q1,a,0,0"],
            &[
                "two_grades.csv:1:",
                "'grade' and 'relevance' both hold the grade",
            ],
        ),
        (
            "empty_grade.csv",
            &["query_id,doc_id,relevance", "q1,a,2", "q1,b,"],
            &["empty_grade.csv:3:", "no relevance for doc 'b'"],
        ),
        (
            "pandas_index.csv",
            &[",query_id,doc_id,relevance", "0,q1,a,2"],
            &["pandas_index.csv:1:", "index=False"],
        ),
    ];
    for (name, lines, needles) in refused {
        wd.write(name, text(lines));
        let out = format!("out-{name}");
        wd.rgrade(&["grade", "--labels", name, "-o", &out, "logs.jsonl"])
            .expect_code(2)
            .expect_stderr(needles);
        assert!(!wd.exists(&format!("{out}/per_query.csv")), "{name}");
    }
}
