//! Stale labels (docs/guide.md, Diagnostics): labeled doc ids that no capture
//! of their query returned, on a hand case, with the warning threshold, the
//! capped sample, repeats and permissions; and `--corpus`, which checks the
//! labels against a snapshot of the collection before grading.

use std::collections::BTreeMap;
use std::fs;

use serde_json::{json, Value};

use crate::util::permissions::grade_logs;
use crate::util::{assert_text, count, grade, row, text, zstd_compress, Run, Workdir};

// ---------------------------------------------------------------------
// Stale labels
// ---------------------------------------------------------------------

/// Labels of the stale-label cases, in this order: q1 (t1, en; a, b
/// relevant, g judged 0), q2 (t1, de; c, d), q3 (t2, en; e, never
/// captured), q4 (t2, en; f, its only capture rejected), q5 (t2, en; h, i).
const STALE_LABELS: &str = concat!(
    r#"{"query_id": "q1", "relevant": {"b": 1, "a": 2, "g": 0}, "task": "t1", "language": "en"}"#,
    "\n",
    r#"{"query_id": "q2", "relevant": ["d", "c"], "task": "t1", "language": "de"}"#,
    "\n",
    r#"{"query_id": "q3", "relevant": ["e"], "task": "t2", "language": "en"}"#,
    "\n",
    r#"{"query_id": "q4", "relevant": ["f"], "task": "t2", "language": "en"}"#,
    "\n",
    r#"{"query_id": "q5", "relevant": ["h", "i"], "task": "t2", "language": "en"}"#,
    "\n",
);

/// The logs of the stale-label cases.
const STALE_LOGS: [&str; 8] = [
    // q1: a deep in the ranking (any depth counts), b never; g (grade 0) never.
    r#"{"query_id": "q1", "results": ["x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "a"]}"#,
    // q2: d only at another stage; c only in another query's results.
    r#"{"query_id": "q2", "results": ["x1"]}"#,
    r#"{"query_id": "q2", "stage": "rerank", "results": ["d"]}"#,
    r#"{"query_id": "q1", "stage": "rerank", "results": ["c", "e", "f"]}"#,
    // q4: rejected (bad_result), so not captured.
    r#"{"query_id": "q4", "results": ["f", 7.5]}"#,
    // q5: h only in the capture superseded by the last one.
    r#"{"query_id": "q5", "results": ["h"]}"#,
    r#"{"query_id": "q5", "results": ["x1"]}"#,
    // An unlabeled query returning labeled ids changes nothing.
    r#"{"query_id": "nobody", "results": ["b", "c", "i"]}"#,
];

/// Grade the stale-label case under `--repeats repeats`, with `extra` options.
fn grade_stale(wd: &Workdir, repeats: &str, extra: &[&str]) -> Run {
    wd.write("labels.jsonl", STALE_LABELS);
    wd.write("logs.jsonl", text(&STALE_LOGS));
    let mut args = vec![
        "--labels",
        "labels.jsonl",
        "-q",
        "--repeats",
        repeats,
        "--max-rejects",
        "1",
        "-o",
        "out",
    ];
    args.extend_from_slice(extra);
    args.push("logs.jsonl");
    grade(wd, &args)
}

/// A `by_slice` row: labeled and unseen documents, then captured queries
/// and those of them that returned no judged document.
fn slice(task: &str, language: &str, docs: (u64, u64), queries: (u64, u64)) -> Value {
    json!({
        "task": task, "language": language, "labeled": docs.0, "unseen": docs.1,
        "queries_captured": queries.0, "queries_without_judged_results": queries.1,
    })
}

/// The hand case: only captured queries count (q3 never captured, q4
/// only rejected); positive grades only (g is judged 0); a document is
/// seen when any capture of its own query returned it at any depth, at
/// any stage, superseded captures included, and not when only another
/// query's capture did. Each of the three captured queries returned a
/// judged document (q2 at another stage, q5 in a superseded capture), so
/// half the labeled documents unseen is no warning.
#[test]
fn stale_labels_hand_case() {
    let wd = Workdir::new("stale_hand");
    let run = grade_stale(&wd, "last", &[]);
    run.expect_code(0);
    assert!(!run.stderr.contains("returned no judged document"), "{run}");
    let summary = wd.read_json("out/summary.json");
    assert_eq!(
        summary["stale_labels"],
        json!({
            "labeled": 6,
            "unseen": 3,
            "fraction": 0.5,
            "sample": ["b", "c", "i"],
            "by_slice": [
                slice("t1", "*", (4, 2), (2, 0)),
                slice("t2", "*", (2, 1), (1, 0)),
                slice("*", "de", (2, 1), (1, 0)),
                slice("*", "en", (4, 2), (2, 0)),
                slice("t1", "de", (2, 1), (1, 0)),
                slice("t1", "en", (2, 1), (1, 0)),
                slice("t2", "en", (2, 1), (1, 0)),
            ],
            "queries_captured": 3,
            "queries_without_judged_results": 0,
        }),
        "{:#}",
        summary["stale_labels"]
    );
    let per_query = wd.read_csv("out/per_query.csv");
    assert_text(&row(&per_query, "final", "q3"), "status", "missing");
    assert_text(&row(&per_query, "final", "q4"), "status", "invalid");
    assert_eq!(count(&summary, "superseded_records"), 1);
}

/// Stages left out by `--stage` are not looked at, so d becomes unseen (4
/// of 6) and q2 a query that returned no judged document; one query of
/// three is no warning, however many labeled documents went unseen.
#[test]
fn stale_labels_count_the_queries_without_judged_results() {
    let wd = Workdir::new("stale_warn");
    let run = grade_stale(&wd, "last", &["--stage", "final"]);
    run.expect_code(0);
    assert!(!run.stderr.contains("warning"), "{run}");
    let stale = &wd.read_json("out/summary.json")["stale_labels"];
    assert_eq!(stale["unseen"].as_u64(), Some(4));
    assert_eq!(stale["sample"], json!(["b", "c", "d", "i"]));
    assert_eq!(stale["queries_captured"].as_u64(), Some(3));
    assert_eq!(stale["queries_without_judged_results"].as_u64(), Some(1));
    // Nothing labeled is captured: no query to warn about, and every
    // grouping set of the labels still has its (empty) row.
    wd.write(
        "unlabeled.jsonl",
        "{\"query_id\": \"nobody\", \"results\": [\"a\", \"b\"]}\n",
    );
    let run = grade(
        &wd,
        &[
            "--labels",
            "labels.jsonl",
            "-q",
            "-o",
            "out",
            "unlabeled.jsonl",
        ],
    );
    run.expect_code(0);
    assert!(!run.stderr.contains("captured queries"), "{run}");
    let stale = &wd.read_json("out/summary.json")["stale_labels"];
    let empty = |task: &str, language: &str| slice(task, language, (0, 0), (0, 0));
    assert_eq!(
        stale,
        &json!({"labeled": 0, "unseen": 0, "fraction": 0.0, "sample": [], "by_slice": [
            empty("t1", "*"), empty("t2", "*"), empty("*", "de"), empty("*", "en"),
            empty("t1", "de"), empty("t1", "en"), empty("t2", "en"),
        ], "queries_captured": 0, "queries_without_judged_results": 0})
    );
}

/// Pooled qrels, as TREC writes them: each query judges a few documents,
/// several of them 0 or below, and a run retrieves few of them. Every query
/// below returns a judged document all the same: q1 a relevant one, q2 one
/// judged 0 only, q3 one judged -1 only, q4 one judged 0 at rank 30.
const POOLED_QRELS: &str = "\
q1 0 d11 1\nq1 0 d12 1\nq1 0 d13 2\nq1 0 d14 0
q2 0 d21 1\nq2 0 d22 1\nq2 0 d23 0\nq2 0 d24 0
q3 0 d31 2\nq3 0 d32 1\nq3 0 d33 -1
q4 0 d41 1\nq4 0 d42 1\nq4 0 d43 1\nq4 0 d44 0
";

/// Each query's ranking, best first, under the ids `rename` gives.
fn pooled_rankings(rename: impl Fn(&str) -> String) -> Vec<(&'static str, Vec<String>)> {
    let unjudged = |n: usize, q: &'static str| (0..n).map(move |i| format!("{q}_x{i}"));
    let mut q4: Vec<String> = unjudged(29, "q4").collect();
    q4.push(rename("d44"));
    vec![
        ("q1", vec!["q1_x0".into(), rename("d11"), "q1_x1".into()]),
        ("q2", vec![rename("d23"), "q2_x0".into()]),
        ("q3", unjudged(2, "q3").chain([rename("d33")]).collect()),
        ("q4", q4),
    ]
}

/// Grade the pooled rankings under `rename`, as a TREC run and as JSONL
/// logs; each run's output goes to `out/trec` or `out/jsonl`.
fn grade_pooled(wd: &Workdir, rename: impl Fn(&str) -> String) -> [(Run, Value); 2] {
    let rankings = pooled_rankings(rename);
    let mut trec = String::new();
    let mut jsonl = String::new();
    for (query, docs) in &rankings {
        for (rank, doc) in docs.iter().enumerate() {
            let score = 100 - rank;
            trec.push_str(&format!("{query} Q0 {doc} {} {score} pooled\n", rank + 1));
        }
        let record = json!({"query_id": query, "run": "pooled", "results": docs});
        jsonl.push_str(&format!("{record}\n"));
    }
    wd.write("qrels.txt", POOLED_QRELS);
    wd.write("run.trec", trec);
    wd.write("logs.jsonl", jsonl);
    [("trec", "run.trec"), ("jsonl", "logs.jsonl")].map(|(format, log)| {
        let out = format!("out/{format}");
        let args = ["--labels", "qrels.txt", "-q", "-o", &out, log];
        let run = grade(wd, &args);
        let stale = wd.read_json(&format!("{out}/summary.json"))["stale_labels"].clone();
        (run, stale)
    })
}

/// Pooled labels are no stale labels: 9 of the 10 relevant documents were
/// never returned, yet every query returned a judged one (a grade of 0 or
/// below counts), so nothing warns, from a TREC run or JSONL logs alike.
#[test]
fn stale_pooled_labels_do_not_warn() {
    let wd = Workdir::new("stale_pooled");
    for (run, stale) in grade_pooled(&wd, str::to_string) {
        run.expect_code(0);
        assert_eq!(run.stderr, "", "{run}");
        assert_eq!(
            (
                &stale["labeled"],
                &stale["unseen"],
                &stale["queries_captured"],
                &stale["queries_without_judged_results"]
            ),
            (&json!(10), &json!(9), &json!(4), &json!(0)),
            "{stale:#}"
        );
    }
}

/// A changed chunk-id scheme: the same rankings under new ids return no
/// judged document for any query, and stderr says so.
#[test]
fn stale_changed_id_scheme_warns() {
    let wd = Workdir::new("stale_changed_ids");
    for (run, stale) in grade_pooled(&wd, |id| format!("{}#chunk0", id.to_uppercase())) {
        run.expect_code(0).expect_stderr(&[
            "rgrade: warning: 4 of 4 captured queries returned no judged document at any depth \
             (labeled ids never returned: d11, d12, d13): were the labels made for another \
             chunking or collection version? --corpus FILE checks the labels against a snapshot",
        ]);
        assert_eq!(
            (
                &stale["unseen"],
                &stale["queries_captured"],
                &stale["queries_without_judged_results"]
            ),
            (&json!(10), &json!(4), &json!(4)),
            "{stale:#}"
        );
        let all = |captured: u64, without: u64| json!({"queries_captured": captured, "queries_without_judged_results": without});
        let by_slice: Vec<Value> = stale["by_slice"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                all(
                    s["queries_captured"].as_u64().unwrap(),
                    s["queries_without_judged_results"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(by_slice, [all(4, 4), all(4, 4), all(4, 4)], "{stale:#}");
    }
}

/// The sample lists at most 20 ids, distinct, in query order (an id
/// unseen for two queries once).
#[test]
fn stale_sample_is_capped_and_distinct() {
    let wd = Workdir::new("stale_sample");
    let mut labels = String::new();
    let mut logs = String::new();
    for q in 0..12 {
        let ids = [
            format!("shared{}", q % 2),
            format!("own{q:02}_a"),
            format!("own{q:02}_b"),
        ];
        labels.push_str(&format!(
            "{}\n",
            json!({"query_id": format!("q{q:02}"), "relevant": ids})
        ));
        logs.push_str(&format!(
            "{}\n",
            json!({"query_id": format!("q{q:02}"), "results": ["z"]})
        ));
    }
    wd.write("labels.jsonl", labels);
    wd.write("logs.jsonl", logs);
    let run = grade(
        &wd,
        &["--labels", "labels.jsonl", "-q", "-o", "out", "logs.jsonl"],
    );
    run.expect_code(0).expect_stderr(&[
        "12 of 12 captured queries returned no judged document at any depth \
         (labeled ids never returned: own00_a, own00_b, shared0)",
    ]);
    let stale = &wd.read_json("out/summary.json")["stale_labels"];
    let want: Vec<String> = [
        "own00_a", "own00_b", "shared0", "own01_a", "own01_b", "shared1", "own02_a", "own02_b",
        "own03_a", "own03_b", "own04_a", "own04_b", "own05_a", "own05_b", "own06_a", "own06_b",
        "own07_a", "own07_b", "own08_a", "own08_b",
    ]
    .map(String::from)
    .to_vec();
    assert_eq!(stale["sample"], json!(want));
    assert_eq!(stale["fraction"].as_f64(), Some(1.0));
}

/// Under `--repeats first` the later, superseded capture's documents were
/// returned, so they count as seen.
#[test]
fn stale_superseded_capture_counts_as_seen_under_first() {
    let wd = Workdir::new("stale_first");
    let run = grade_stale(&wd, "first", &[]);
    run.expect_code(0);
    let stale = &wd.read_json("out/summary.json")["stale_labels"];
    // q5: the first capture returns h; its superseded second one x1: h seen.
    // The same with the two captures swapped.
    assert_eq!(stale["unseen"].as_u64(), Some(3), "{stale:#}");
    let mut swapped = STALE_LOGS;
    swapped.swap(5, 6);
    wd.write("logs.jsonl", text(&swapped));
    let run = grade(
        &wd,
        &[
            "--labels",
            "labels.jsonl",
            "-q",
            "--repeats",
            "first",
            "--max-rejects",
            "1",
            "-o",
            "out",
            "logs.jsonl",
        ],
    );
    run.expect_code(0);
    let stale = &wd.read_json("out/summary.json")["stale_labels"];
    assert_eq!(stale["unseen"].as_u64(), Some(3), "{stale:#}");
}

/// Under `--repeats error` every capture of a repeated key is rejected for the
/// policy, but each was a valid record that returned its documents: the query
/// counts as captured and what it returned as seen (docs/guide.md,
/// Diagnostics).
#[test]
fn stale_repeated_captures_still_show_what_they_returned() {
    let wd = Workdir::new("stale_repeats_error");
    wd.write("labels.jsonl", STALE_LABELS);
    wd.write(
        "logs.jsonl",
        text(&[
            r#"{"query_id": "q1", "results": ["a"]}"#,
            r#"{"query_id": "q1", "results": ["b"]}"#,
            r#"{"query_id": "q2", "results": ["d"]}"#,
        ]),
    );
    let run = grade(
        &wd,
        &[
            "--labels",
            "labels.jsonl",
            "-q",
            "--max-rejects",
            "2",
            "-o",
            "out",
            "logs.jsonl",
        ],
    );
    run.expect_code(0);
    let stale = &wd.read_json("out/summary.json")["stale_labels"];
    // q1 (a, b) and q2 (c, d) were captured; a, b and d were returned.
    assert_eq!(stale["labeled"].as_u64(), Some(4), "{stale:#}");
    assert_eq!(stale["unseen"].as_u64(), Some(1), "{stale:#}");
    assert_eq!(stale["sample"], serde_json::json!(["c"]), "{stale:#}");
}

/// A document returned only outside the user's collections was returned,
/// so it is not a stale label.
#[test]
fn stale_an_unauthorized_result_was_seen() {
    let wd = Workdir::new("stale_unauthorized");
    let run = grade_logs(
        &wd,
        &[
            r#"{"query_id": "q1", "allowed_collections": ["pub"], "results": [{"doc_id": "a", "collection": "hr"}, "b"]}"#,
        ],
        &["--max-leaks", "1"],
    );
    run.expect_code(0);
    let stale = &wd.read_json("out/summary.json")["stale_labels"];
    assert_eq!(stale["unseen"].as_u64(), Some(0), "{stale:#}");
}

// ---------------------------------------------------------------------
// --corpus
// ---------------------------------------------------------------------

/// A corpus holding every labeled id with a positive grade grades as
/// usual, whether plain, gzip or zstd, with CRLF line ends, padding and
/// blank lines; grade-0 ids need not be in it.
#[test]
fn corpus_with_every_labeled_id_grades() {
    let wd = Workdir::new("corpus_ok");
    wd.write("labels.jsonl", STALE_LABELS);
    wd.write("logs.jsonl", text(&STALE_LOGS[..3]));
    let corpus = "a\r\n  b \r\n\r\nc\r\nd\r\ne\r\n\r\nf\r\nh\r\ni\r\nother\r\n";
    wd.write("corpus.txt", corpus);
    wd.write_gz("corpus.gz", corpus);
    wd.write("corpus.zst", zstd_compress(corpus.as_bytes()));
    for file in ["corpus.txt", "corpus.gz", "corpus.zst"] {
        let _ = fs::remove_dir_all(wd.path("out"));
        let run = grade(
            &wd,
            &[
                "--labels",
                "labels.jsonl",
                "--corpus",
                file,
                "-q",
                "-o",
                "out",
                "logs.jsonl",
            ],
        );
        run.expect_code(0);
        assert!(wd.exists("out/per_query.csv"), "{file}\n{run}");
        assert!(!wd.exists("out/labels_missing_from_corpus.txt"), "{file}");
    }
}

/// Missing ids: exit 2 before the logs are read (a missing log is not
/// what the message is about), naming the count and the first five of
/// labels_missing_from_corpus.txt, which lists them all (ids with a
/// positive grade only, CRLF trimmed, gzip); a missing corpus file is
/// exit 2 too.
#[test]
fn corpus_missing_ids_exit_2() {
    let wd = Workdir::new("corpus_missing");
    let mut labels = String::new();
    for q in 0..4 {
        let grades: BTreeMap<String, u8> =
            [("m{q}_x", 1), ("m{q}_y", 2), ("ok{q}", 1), ("zero{q}", 0)]
                .into_iter()
                .map(|(id, grade)| (id.replace("{q}", &q.to_string()), grade))
                .collect();
        labels.push_str(&format!(
            "{}\n",
            json!({"query_id": format!("q{q}"), "relevant": grades})
        ));
    }
    wd.write("labels.jsonl", labels);
    wd.write_gz("corpus.gz", "ok0\nok1\nok2\nok3\r\nm3_y\n");
    let run = grade(
        &wd,
        &[
            "--labels",
            "labels.jsonl",
            "--corpus",
            "corpus.gz",
            "-o",
            "out",
            "no-such-log.jsonl",
        ],
    );
    run.expect_code(2);
    // All seven, each query's ids together, queries in id order (within a
    // query the order is the label index's, not the file's, so it is not
    // checked).
    let listed = wd.read_text("out/labels_missing_from_corpus.txt");
    let listed: Vec<&str> = listed.lines().collect();
    let mut sorted = listed.clone();
    sorted.sort_unstable();
    assert_eq!(
        sorted,
        ["m0_x", "m0_y", "m1_x", "m1_y", "m2_x", "m2_y", "m3_x"]
    );
    let queries: Vec<&str> = listed.iter().map(|id| &id[..2]).collect();
    assert!(queries.is_sorted(), "{listed:?}");
    assert_eq!(
        run.stderr.trim_end(),
        format!(
            "rgrade: corpus.gz: 7 of 12 labeled doc ids are not in the corpus (e.g. {}); all are \
             listed in out/labels_missing_from_corpus.txt. Were the labels made for another \
             snapshot or id scheme?",
            listed[..5].join(", ")
        ),
        "{run}"
    );
    let run = grade(
        &wd,
        &[
            "--labels",
            "labels.jsonl",
            "--corpus",
            "absent.txt",
            "no-such-log.jsonl",
        ],
    );
    run.expect_code(2).expect_stderr(&["absent.txt"]);
}
