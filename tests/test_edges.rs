//! Results that would look fine and are not say so: `--min-rel` as
//! trec_eval's `-l`, labels most of whose queries went uncaptured, and
//! commands whose every record was rejected.

use crate::util::{assert_cell, assert_text, count, discount, text, Workdir};

/// TREC qrels: qa has a grade-3 document, qb only grades 2 and 1, qc none
/// above 0.
const QRELS: &str = "qa 0 d1 3\nqa 0 d2 1\nqa 0 d3 0\nqb 0 d1 2\nqb 0 d2 1\nqc 0 d1 0\n";

/// One run: d2 above d1 for qa and qb.
const RUN: &str = "qa Q0 d2 1 3.0 r\nqa Q0 d1 2 2.0 r\nqa Q0 d9 3 1.0 r\n\
                   qb Q0 d2 1 3.0 r\nqb Q0 d1 2 2.0 r\nqc Q0 d1 1 1.0 r\n";

/// `--min-rel 3` as trec_eval's `-l 3`, by hand: qb, whose grades all fall
/// below 3, stays in the means with 0 on every binary metric and its
/// graded nDCG; qc, with no positive grade, is no_answer.
#[test]
fn min_rel_scores_as_trec_eval_l() {
    let wd = Workdir::new("edges_min_rel");
    wd.write("qrels.txt", QRELS);
    wd.write("run.trec", RUN);
    let args = [
        "grade",
        "--labels",
        "qrels.txt",
        "-k",
        "2",
        "--min-rel",
        "3",
    ];
    wd.rgrade(&[&args[..], &["-q", "-o", "out", "run.trec"]].concat())
        .expect_code(0);
    let per_query = wd.read_csv("out/per_query.csv");
    // qa: d1 (grade 3) at rank 2 is its one relevant document.
    let qa = per_query.row(&[("query_id", "qa")]);
    assert_text(&qa, "status", "ok");
    assert_cell(&qa, "n_relevant", 1.0);
    assert_cell(&qa, "first_rel_rank", 2.0);
    let qa_ndcg = (discount(1) + 3.0 * discount(2)) / (3.0 * discount(1) + discount(2));
    for (column, want) in [
        ("recall@2", 1.0),
        ("rr@2", 0.5),
        ("hit@2", 1.0),
        ("precision@2", 0.5),
        ("ap@2", 0.5),
        ("ndcg@2", qa_ndcg),
    ] {
        assert_cell(&qa, column, want);
    }
    // qb: nothing reaches 3; nDCG keeps the gains of grades 1 and 2
    // (pytrec_eval's ndcg_cut_2 at relevance_level 3: 0.8597186998521972).
    let qb = per_query.row(&[("query_id", "qb")]);
    assert_text(&qb, "status", "ok");
    assert_cell(&qb, "n_relevant", 0.0);
    assert_text(&qb, "first_rel_rank", "");
    let qb_ndcg = (discount(1) + 2.0 * discount(2)) / (2.0 * discount(1) + discount(2));
    assert!((qb_ndcg - 0.8597186998521972).abs() < 1e-12);
    for (column, want) in [
        ("recall@2", 0.0),
        ("rr@2", 0.0),
        ("hit@2", 0.0),
        ("precision@2", 0.0),
        ("ap@2", 0.0),
        ("ndcg@2", qb_ndcg),
    ] {
        assert_cell(&qb, column, want);
    }
    let qc = per_query.row(&[("query_id", "qc")]);
    assert_text(&qc, "status", "no_answer");
    assert_text(&qc, "ndcg@2", "");
    // The means are over qa and qb.
    let summary = wd.read_json("out/summary.json");
    assert_eq!(count(&summary, "no_answer"), 1);
    let overall = &summary["overall"][0];
    assert_eq!(
        (overall["ok"].as_u64(), overall["no_answer"].as_u64()),
        (Some(2), Some(1))
    );
    let mean = |name: &str| overall["metrics"][name].as_f64().unwrap();
    assert!((mean("recall@2") - 0.5).abs() < 1e-12);
    assert!((mean("ndcg@2") - (qa_ndcg + qb_ndcg) / 2.0).abs() < 1e-12);
    // The grading reads back: report draws it, a query ok with n_relevant 0.
    wd.rgrade(&["report", "out", "-o", "page.html"])
        .expect_code(0);
}

/// Labels of five answerable queries and a no-answer one.
fn five_labels(wd: &Workdir) {
    let mut lines: Vec<String> = (1..=5)
        .map(|i| format!(r#"{{"query_id": "q{i}", "relevant": ["d{i}"]}}"#))
        .collect();
    lines.push(r#"{"query_id": "q6", "relevant": {"d6": 0}}"#.to_string());
    wd.write("labels.jsonl", text(&lines));
}

/// A log capturing `queries`, each finding its document first.
fn log_of(queries: &[u32]) -> String {
    let lines: Vec<String> = (queries.iter())
        .map(|i| format!(r#"{{"query_id": "q{i}", "results": ["d{i}", "x"]}}"#))
        .collect();
    text(&lines)
}

/// Three of the five answerable queries without a capture: a warning on
/// stderr naming the share and the usual causes, and summary.json's
/// `mostly_missing`, whether graded at once or merged from shards; none
/// with two of five.
#[test]
fn labels_most_of_whose_queries_have_no_capture_warn() {
    let wd = Workdir::new("edges_mostly_missing");
    five_labels(&wd);
    wd.write("two.jsonl", log_of(&[1, 2]));
    wd.write("three.jsonl", log_of(&[1, 2, 3]));
    wd.write("one.jsonl", log_of(&[1]));
    wd.write("other.jsonl", log_of(&[2]));
    let grade = |out: &str, extra: &[&str], logs: &[&str]| {
        let args = [
            "grade",
            "--labels",
            "labels.jsonl",
            "-k",
            "2",
            "-q",
            "-o",
            out,
        ];
        wd.rgrade(&[&args[..], extra, logs].concat())
    };
    let run = grade("fail", &[], &["two.jsonl"]);
    run.expect_code(0).expect_stderr(&[
        "rgrade: warning: unnamed run, stage 'final': 3 of 5 labeled queries (60.0%) have no \
         capture and score 0 in every mean",
        "several years of qrels against one year's run",
        "query-id field",
        "--missing skip",
    ]);
    let want = serde_json::json!([
        {"run": "", "stage": "final", "queries": 5, "missing": 3, "share": 0.6}
    ]);
    assert_eq!(wd.read_json("fail/summary.json")["mostly_missing"], want);

    // Under --missing skip the missing queries count in no mean: the
    // warning stays, without the advice already taken.
    let run = grade("skip", &["--missing", "skip"], &["two.jsonl"]);
    run.expect_code(0)
        .expect_stderr(&["3 of 5 labeled queries (60.0%) have no capture (summary.json"]);
    assert!(!run.stderr.contains("score 0"), "{run}");
    assert!(!run.stderr.contains("--missing skip"), "{run}");
    assert_eq!(wd.read_json("skip/summary.json")["mostly_missing"], want);

    // Two of five: fine.
    let run = grade("covered", &[], &["three.jsonl"]);
    run.expect_code(0);
    assert!(!run.stderr.contains("no capture"), "{run}");
    let summary = wd.read_json("covered/summary.json");
    assert!(summary.get("mostly_missing").is_none(), "{summary}");

    // Shards say nothing (each covers part of the key by design); the
    // merge counts again and warns as one grading of both would.
    for (shard, log) in [("s1", "one.jsonl"), ("s2", "other.jsonl")] {
        let run = grade(shard, &["--partial"], &[log]);
        run.expect_code(0);
        assert!(!run.stderr.contains("no capture"), "{run}");
    }
    let run = wd.rgrade(&[
        "merge",
        "--labels",
        "labels.jsonl",
        "-q",
        "-o",
        "merged",
        "s1",
        "s2",
    ]);
    run.expect_code(0)
        .expect_stderr(&["3 of 5 labeled queries (60.0%) have no capture"]);
    assert_eq!(wd.read_json("merged/summary.json")["mostly_missing"], want);
}

/// Every record rejected: `grade` exits 1 whatever `--max-rejects`
/// tolerates, naming the first reject, and so does a shard.
#[test]
fn a_grading_whose_every_record_was_rejected_fails() {
    let wd = Workdir::new("edges_all_rejected");
    five_labels(&wd);
    wd.write(
        "logs.jsonl",
        text(&[r#"{"query_id": "q1"}"#, r#"{"query_id": "q2"}"#]),
    );
    let args = [
        "grade",
        "--labels",
        "labels.jsonl",
        "-q",
        "--max-rejects",
        "10",
    ];
    let run = wd.rgrade(&[&args[..], &["-o", "out", "logs.jsonl"]].concat());
    run.expect_code(1).expect_stderr(&[
        "every one of the 2 records read was rejected, so nothing was graded; the first is \
         logs.jsonl:1: missing_results",
        "rejects.jsonl",
    ]);
    assert!(
        wd.exists("out/summary.json"),
        "the outputs are written all the same"
    );
    let run = wd.rgrade(&[&args[..], &["--partial", "-o", "shard", "logs.jsonl"]].concat());
    run.expect_code(1)
        .expect_stderr(&["every one of the shard's 2 records was rejected"]);
    // Records of unlabeled queries aside, every capture of a labeled one
    // rejected is nothing graded too.
    wd.write(
        "labeled.jsonl",
        text(&[
            r#"{"query_id": "q1"}"#,
            r#"{"query_id": "other", "results": ["d1"]}"#,
        ]),
    );
    let run = wd.rgrade(&[&args[..], &["labeled.jsonl"]].concat());
    run.expect_code(1).expect_stderr(&[
        "every capture of a labeled query was rejected (1 rejected record), so nothing was graded",
    ]);
    // One good record is enough to grade.
    wd.write(
        "some.jsonl",
        text(&[
            r#"{"query_id": "q1"}"#,
            r#"{"query_id": "q2", "results": ["d2"]}"#,
        ]),
    );
    let run = wd.rgrade(&[&args[..], &["some.jsonl"]].concat());
    run.expect_code(0);
}
