//! Where the labels came from, through the binary: each label's `source`
//! and `pooled_from` kept (in every labels format and a compiled key), and
//! the warning for a run that alone was pooled for some labels, with
//! every figure counted by hand.

use crate::util::Workdir;

/// q1 pooled from bm25 and dense, q2 and q3 from bm25 alone, q4 from
/// dense alone, q5 names no pool.
const KEY: &str = r#"{"query_id": "q1", "relevant": {"a": 2}, "source": "human", "pooled_from": ["dense", "bm25"]}
{"query_id": "q2", "relevant": {"b": 1, "c": 0}, "source": "llm:judge-1", "pooled_from": ["bm25"]}
{"query_id": "q3", "relevant": {"d": 1}, "source": "llm:judge-1", "pooled_from": ["bm25"]}
{"query_id": "q4", "relevant": {"e": 1}, "source": "llm:judge-1", "pooled_from": ["dense"]}
{"query_id": "q5", "relevant": {"f": 1}}
"#;

/// The same labels as CSV: a row per judgment, runs joined by `|`.
const KEY_CSV: &str = "query_id,doc_id,grade,source,pooled_from
q1,a,2,human,dense|bm25
q2,b,1,llm:judge-1,bm25
q2,c,0,llm:judge-1,bm25
q3,d,1,llm:judge-1,bm25
q4,e,1,llm:judge-1,dense
q5,f,1,,
";

/// bm25 and hybrid are graded; dense is not.
const LOGS: &str = r#"{"query_id": "q1", "run": "bm25", "results": ["a"]}
{"query_id": "q2", "run": "bm25", "results": ["b"]}
{"query_id": "q1", "run": "hybrid", "results": ["a"]}
"#;

fn graded(wd: &Workdir, labels: &str, out: &str) -> serde_json::Value {
    let run = wd.rgrade(&["grade", "--labels", labels, "-q", "-o", out, "logs.jsonl"]);
    run.expect_code(0).expect_stderr(&[
        "run 'bm25' is the only run the judging pools of 2 labeled queries came from \
         (50.0% of the queries whose labels name their pool)",
    ]);
    assert!(
        !run.stderr.contains("run 'hybrid' is the only"),
        "{}",
        run.stderr
    );
    wd.read_json(&format!("{out}/summary.json"))
}

#[test]
fn sources_and_pools_are_kept_and_a_self_pooled_run_is_named() {
    let wd = Workdir::new("provenance");
    wd.write("key.jsonl", KEY);
    wd.write("key.csv", KEY_CSV);
    wd.write("logs.jsonl", LOGS);
    wd.rgrade(&["index", "key.jsonl", "-o", "key.rgk"])
        .expect_code(0);
    for (labels, label_lines) in [
        ("key.jsonl", [1, 3]),
        ("key.csv", [1, 4]),
        ("key.rgk", [1, 3]),
    ] {
        let summary = graded(&wd, labels, "out");
        let facts = &summary["labels"];
        // A JSONL line is one label; a CSV row is one judgment.
        assert_eq!(
            facts["sources"],
            serde_json::json!([
                {"source": "human", "labels": label_lines[0], "judgments": 1},
                {"source": "llm:judge-1", "labels": label_lines[1], "judgments": 4},
            ]),
            "{labels}"
        );
        // Four queries name a pool; bm25 alone pooled q2 and q3; dense,
        // alone for q4, is not graded; hybrid pooled nothing.
        assert_eq!(facts["pooled_queries"], 4, "{labels}");
        assert_eq!(
            summary["self_pooled"],
            serde_json::json!([{"run": "bm25", "queries": 2, "share": 0.5}]),
            "{labels}"
        );
        let page = wd.read_text("out/report.html");
        assert!(
            page.contains("alone was pooled for 2 of them (50.0%)"),
            "{labels}"
        );
    }
}

#[test]
fn a_pool_that_is_no_list_of_run_names_is_refused() {
    let wd = Workdir::new("provenance_refused");
    wd.write("logs.jsonl", LOGS);
    wd.write(
        "key.jsonl",
        "{\"query_id\": \"q1\", \"relevant\": [\"a\"], \"pooled_from\": \"bm25\"}\n",
    );
    wd.rgrade(&["grade", "--labels", "key.jsonl", "logs.jsonl"])
        .expect_code(2)
        .expect_stderr(&["key.jsonl:1: pooled_from must be an array of run names (strings)"]);
    wd.write(
        "key.jsonl",
        "{\"query_id\": \"q1\", \"relevant\": [\"a\"], \"source\": 3}\n",
    );
    wd.rgrade(&["grade", "--labels", "key.jsonl", "logs.jsonl"])
        .expect_code(2)
        .expect_stderr(&["key.jsonl:1: source must be a string"]);
}
