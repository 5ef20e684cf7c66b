//! Several reviewers in one key, through the binary: how each policy
//! combines their grades, what summary.json says of them (every figure
//! computed by hand), and the places a policy must match (a compiled key,
//! compare).

use crate::util::Workdir;

/// Three reviewers on q1 (alice and bob on d1 and d2, alice alone on d3),
/// alice alone on q2, bob alone on q3.
const KEY: &str = r#"{"query_id": "q1", "reviewer": "alice", "relevant": {"d1": 2, "d2": 0, "d3": 1}, "task": "howto"}
{"query_id": "q1", "reviewer": "bob", "relevant": {"d1": 1, "d2": 1}, "task": "howto"}
{"query_id": "q1", "reviewer": "carol", "relevant": {"d1": 2, "d2": 0}, "task": "howto"}
{"query_id": "q2", "reviewer": "alice", "relevant": {"d4": 1}}
{"query_id": "q3", "reviewer": "bob", "relevant": {"d5": 3}}
"#;

const LOGS: &str = r#"{"query_id": "q1", "results": ["d2", "d1", "d3"]}
{"query_id": "q2", "results": ["x", "d4"]}
{"query_id": "q3", "results": ["d5"]}
"#;

fn workdir(name: &str) -> Workdir {
    let wd = Workdir::new(name);
    wd.write("key.jsonl", KEY);
    wd.write("logs.jsonl", LOGS);
    wd
}

/// Each query's relevant documents under `policy`, as per_query.csv counts them.
fn n_relevant(wd: &Workdir, policy: &str) -> Vec<(String, String)> {
    let out = format!("out-{policy}");
    let args = ["grade", "--labels", "key.jsonl", "--reviewers", policy];
    wd.rgrade(&[&args[..], &["-q", "-o", &out, "logs.jsonl"]].concat())
        .expect_code(0);
    let rows = wd.read_csv(&format!("{out}/per_query.csv")).records();
    (rows.into_iter())
        .map(|row| (row["query_id"].clone(), row["n_relevant"].clone()))
        .collect()
}

#[test]
fn each_policy_counts_the_grade_it_says() {
    let wd = workdir("reviewers_policies");
    let counts = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
        (pairs.iter())
            .map(|(q, n)| (q.to_string(), n.to_string()))
            .collect()
    };
    // q1's d1 is graded 2, 1, 2; d2 0, 1, 0; d3 1 by alice alone.
    // majority: d1 2, d2 0, d3 1; any: 2, 1, 1; all: 1, 0, 1; bob: d1 1,
    // d2 1, and q2 is alice's alone, so it leaves the key.
    for (policy, want) in [
        ("majority", counts(&[("q1", "2"), ("q2", "1"), ("q3", "1")])),
        ("any", counts(&[("q1", "3"), ("q2", "1"), ("q3", "1")])),
        ("all", counts(&[("q1", "2"), ("q2", "1"), ("q3", "1")])),
        ("bob", counts(&[("q1", "2"), ("q3", "1")])),
    ] {
        assert_eq!(n_relevant(&wd, policy), want, "{policy}");
    }
    // Under majority d1 (grade 2) is at rank 2; under all it has grade 1.
    let ndcg = |policy: &str| {
        let table = wd.read_csv(&format!("out-{policy}/per_query.csv"));
        table.row(&[("query_id", "q1")])["ndcg@10"].clone()
    };
    assert_ne!(ndcg("majority"), ndcg("all"));
}

#[test]
fn summary_lists_the_reviewers_and_their_agreement() {
    let wd = workdir("reviewers_summary");
    n_relevant(&wd, "majority");
    let summary = wd.read_json("out-majority/summary.json");
    let reviewers = &summary["labels"]["reviewers"];
    assert_eq!(reviewers["policy"], "majority");
    assert_eq!(
        reviewers["reviewers"],
        serde_json::json!([
            {"name": "alice", "queries": 2, "pairs": 4},
            {"name": "bob", "queries": 2, "pairs": 3},
            {"name": "carol", "queries": 1, "pairs": 2},
        ])
    );
    assert_eq!(reviewers["pairs_judged_by_several"], 2);
    assert_eq!(reviewers["pairs_disputed"], 2);
    // Relevance: d1 all relevant (agreement 1), d2 two of three not
    // (1/3): observed 2/3; ratings 4 relevant, 2 not, so chance is 5/9 and
    // kappa = (6/9 - 5/9) / (4/9) = 1/4. Grades: d1 {1, 2, 2} and d2
    // {0, 0, 1} agree 1/3 each; grades 0, 1, 2 are a third each: kappa 0.
    let kappa = |name: &str| reviewers[name].as_f64().unwrap();
    assert!((kappa("fleiss_kappa_relevance") - 0.25).abs() < 1e-12);
    assert!(kappa("fleiss_kappa_grade").abs() < 1e-12);
    // Ordinal alpha: coincidences [[1,1,0],[1,0,1],[0,1,1]] (each pair of
    // a three-reviewer item weighs 1/2), totals 2, 2, 2; distances 0-1 and
    // 1-2 are (4 - 2)^2 = 4, 0-2 is (6 - 2)^2 = 16; observed 16, expected
    // 2 * (16 + 64 + 16): alpha = 1 - 5 * 16 / 192 = 7/12.
    assert!((kappa("krippendorff_alpha_grade") - 7.0 / 12.0).abs() < 1e-12);
    let page = wd.read_text("out-majority/report.html");
    assert!(page.contains("alice</code> (2 queries, 4 pairs)"), "{page}");
    assert!(page.contains("whose grade counts: <code>majority</code>"));
}

#[test]
fn several_grades_without_a_policy_or_an_unknown_reviewer_grade_nothing() {
    let wd = workdir("reviewers_refused");
    wd.rgrade(&["grade", "--labels", "key.jsonl", "logs.jsonl"])
        .expect_code(2)
        .expect_stderr(&[
            "key.jsonl:2: doc_id 'd1' of query_id 'q1' is judged by 3 reviewers",
            "('alice' on line 1, 'bob' on line 2, 'carol' on line 3)",
            "--reviewers majority, any, all or a reviewer's name",
        ]);
    let args = ["grade", "--labels", "key.jsonl", "--reviewers", "dave"];
    wd.rgrade(&[&args[..], &["logs.jsonl"]].concat())
        .expect_code(2)
        .expect_stderr(&["no label is by reviewer 'dave'; the reviewers are alice, bob, carol"]);
    wd.write("plain.qrels", "q1 0 d1 1\n");
    let args = ["grade", "--labels", "plain.qrels", "--reviewers", "any"];
    wd.rgrade(&[&args[..], &["logs.jsonl"]].concat())
        .expect_code(2)
        .expect_stderr(&["--reviewers any: no label names a reviewer"]);
    // agree names the option of the key's side.
    let args = ["agree", "key.jsonl", "key.jsonl", "--reviewers-a", "alice"];
    wd.rgrade(&[&args[..], &["--reviewers-b", "dave"]].concat())
        .expect_code(2)
        .expect_stderr(&["--reviewers-b dave: no label is by reviewer 'dave'"]);
    wd.rgrade(&["agree", "key.jsonl", "plain.qrels"])
        .expect_code(2)
        .expect_stderr(&["say whose grade counts with --reviewers-a majority"]);
}

#[test]
fn a_compiled_key_and_compare_hold_to_one_policy() {
    let wd = workdir("reviewers_compiled");
    n_relevant(&wd, "majority");
    n_relevant(&wd, "any");
    wd.rgrade(&[
        "index",
        "key.jsonl",
        "-o",
        "key.rgk",
        "--reviewers",
        "majority",
    ])
    .expect_code(0);
    wd.rgrade(&[
        "grade",
        "--labels",
        "key.rgk",
        "-q",
        "-o",
        "from-key",
        "logs.jsonl",
    ])
    .expect_code(0);
    assert_eq!(
        wd.read("from-key/per_query.csv"),
        wd.read("out-majority/per_query.csv")
    );
    let from_key = wd.read_json("from-key/summary.json");
    let from_labels = wd.read_json("out-majority/summary.json");
    assert_eq!(
        from_key["labels"]["reviewers"],
        from_labels["labels"]["reviewers"]
    );
    let args = ["grade", "--labels", "key.rgk", "--reviewers", "any"];
    wd.rgrade(&[&args[..], &["logs.jsonl"]].concat())
        .expect_code(2)
        .expect_stderr(&[
            "compiled with --reviewers majority",
            "rgrade index --reviewers any",
        ]);
    wd.rgrade(&["compare", "out-majority", "out-any"])
        .expect_code(2)
        .expect_stderr(&[
            "reviewers counted differently (--reviewers majority vs --reviewers any)",
        ]);
}
