//! What `rgrade grade` writes: metric columns in the order of the cutoffs,
//! rows sorted by run, stage and query, `--stage` and `--meta` in the
//! outputs, and the same bytes whatever the thread count.

use std::io::Write as _;

use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64;

use rgrade::Cutoff;

use crate::util::{
    assert_cell, assert_counts_add_up, assert_text, count, per_query_header, seed, text, Table,
    Workdir,
};

/// The metric columns follow the cutoffs in the order given, and the
/// missing-evidence column is named for the largest one.
#[test]
fn metric_columns_follow_the_cutoff_order() {
    let wd = Workdir::new("cutoff_order");
    wd.rgrade(&[
        "grade",
        "--labels",
        &seed("labels.jsonl"),
        "-k",
        "10,1,3",
        "-o",
        "out",
        "-q",
        &seed("logs.jsonl"),
    ])
    .expect_code(0);
    let per_query = wd.read_csv("out/per_query.csv");
    assert_eq!(
        per_query.header,
        per_query_header(
            &[Cutoff::At(10), Cutoff::At(1), Cutoff::At(3)],
            Cutoff::At(10)
        )
    );
    let row = per_query.row(&[("query_id", "q_reset")]);
    assert_cell(&row, "recall@1", 0.0);
    assert_cell(&row, "recall@3", 1.0);
    assert_cell(&row, "precision@10", 0.2);
}

/// Several runs and stages give rows sorted by run, stage and query_id in
/// byte order; `--stage` (repeatable) grades only the stages named and
/// counts the rest as other-stage events; `--meta` lands in summary.json.
#[test]
fn stages_runs_sorting_and_meta() {
    let wd = Workdir::new("stages_runs");
    wd.write(
        "labels.jsonl",
        text(&[
            r#"{"query_id": "q2", "relevant": ["a"]}"#,
            r#"{"query_id": "q10", "relevant": ["a"]}"#,
            r#"{"query_id": "q1", "relevant": ["a"]}"#,
        ]),
    );
    wd.write(
        "logs.jsonl",
        text(&[
            r#"{"query_id": "q2", "run": "zeta", "stage": "retrieve", "results": ["a"]}"#,
            r#"{"query_id": "q1", "run": "alpha", "stage": "rerank", "results": ["a"]}"#,
            r#"{"query_id": "q10", "run": "alpha", "stage": "final", "results": ["x", "a"]}"#,
            r#"{"query_id": "q1", "results": ["a"]}"#,
            r#"{"query_id": "q2", "run": "zeta", "stage": "final", "results": ["a"]}"#,
            r#"{"query_id": "q1", "run": "Zeta", "stage": "final", "results": ["a"]}"#,
        ]),
    );
    let queries = ["q1", "q10", "q2"];
    let keys = |table: &Table| -> Vec<(String, String, String)> {
        table
            .records()
            .into_iter()
            .map(|r| (r["run"].clone(), r["stage"].clone(), r["query_id"].clone()))
            .collect()
    };
    let expand = |pairs: &[(&str, &str)]| -> Vec<(String, String, String)> {
        pairs
            .iter()
            .flat_map(|(r, s)| queries.map(|q| (r.to_string(), s.to_string(), q.to_string())))
            .collect()
    };

    wd.rgrade(&[
        "grade",
        "--labels",
        "labels.jsonl",
        "--meta",
        "snapshot=2024-06-01",
        "--meta",
        "retriever=bm25 k1=0.9",
        "-o",
        "all",
        "logs.jsonl",
    ])
    .expect_code(0);
    let all_pairs = [
        ("", "final"),
        ("Zeta", "final"),
        ("alpha", "final"),
        ("alpha", "rerank"),
        ("zeta", "final"),
        ("zeta", "retrieve"),
    ];
    let per_query = wd.read_csv("all/per_query.csv");
    assert_eq!(keys(&per_query), expand(&all_pairs));
    let row = per_query.row(&[("run", "alpha"), ("stage", "final"), ("query_id", "q10")]);
    assert_cell(&row, "rr@10", 0.5);
    let row = per_query.row(&[("run", "alpha"), ("stage", "final"), ("query_id", "q1")]);
    assert_text(&row, "status", "missing");
    let aggregates = wd.read_csv("all/aggregates.csv");
    let overall: Vec<(String, String)> = aggregates
        .records()
        .into_iter()
        .filter(|r| r["task"] == "*" && r["language"] == "*")
        .map(|r| (r["run"].clone(), r["stage"].clone()))
        .collect();
    let want: Vec<(String, String)> = all_pairs
        .iter()
        .map(|(r, s)| (r.to_string(), s.to_string()))
        .collect();
    assert_eq!(overall, want, "overall rows of aggregates.csv");
    let summary = wd.read_json("all/summary.json");
    let meta = serde_json::json!({"snapshot": "2024-06-01", "retriever": "bm25 k1=0.9"});
    assert_eq!(summary["meta"], meta);
    assert_eq!(count(&summary, "other_stage_events"), 0);

    wd.rgrade(&[
        "grade",
        "--labels",
        "labels.jsonl",
        "--stage",
        "final",
        "--stage",
        "rerank",
        "-o",
        "two",
        "logs.jsonl",
    ])
    .expect_code(0);
    let per_query = wd.read_csv("two/per_query.csv");
    assert_eq!(
        keys(&per_query),
        expand(&[
            ("", "final"),
            ("Zeta", "final"),
            ("alpha", "final"),
            ("alpha", "rerank"),
            ("zeta", "final"),
        ])
    );
    let summary = wd.read_json("two/summary.json");
    assert_eq!(count(&summary, "other_stage_events"), 1);
    assert_eq!(
        summary["settings"]["stages"],
        serde_json::json!(["final", "rerank"])
    );

    wd.rgrade(&[
        "grade",
        "--labels",
        "labels.jsonl",
        "--stage",
        "retrieve",
        "-o",
        "retrieve",
        "logs.jsonl",
    ])
    .expect_code(0);
    let per_query = wd.read_csv("retrieve/per_query.csv");
    assert_eq!(keys(&per_query), expand(&[("zeta", "retrieve")]));
    let summary = wd.read_json("retrieve/summary.json");
    assert_eq!(count(&summary, "other_stage_events"), 5);
    assert_counts_add_up(&summary);
}

/// A log larger than 10 MB (several 4 MiB blocks) with repeats under
/// `--repeats last`, unlabeled events and bad lines grades byte-identically
/// with one thread and with two: per_query.csv, aggregates.csv,
/// rejects.jsonl and summary.json's counts.
#[test]
fn one_thread_and_two_threads_agree_on_a_large_log() {
    let wd = Workdir::new("determinism");
    let mut rng = Pcg64::seed_from_u64(20240601);
    let n_labeled = 3000;
    let n_docs = 20_000;
    let mut relevant: Vec<Vec<u32>> = Vec::with_capacity(n_labeled);
    let mut labels = String::new();
    for q in 0..n_labeled {
        let n_rel = if rng.random_bool(0.05) {
            0
        } else {
            rng.random_range(1..=4)
        };
        let docs: Vec<u32> = (0..n_rel).map(|_| rng.random_range(0..n_docs)).collect();
        let mut judged: Vec<String> = Vec::new();
        let mut unique = docs.clone();
        unique.sort_unstable();
        unique.dedup();
        for doc in &unique {
            judged.push(format!(r#""d{doc}": {}"#, rng.random_range(1..=3)));
        }
        labels.push_str(&format!(
            r#"{{"query_id": "q{q:05}", "relevant": {{{}}}, "task": "t{}", "language": "{}"}}"#,
            judged.join(", "),
            q % 7,
            ["en", "de", "fr"][q % 3],
        ));
        labels.push('\n');
        relevant.push(unique);
    }
    wd.write("labels.jsonl", labels);

    let mut log = Vec::with_capacity(11 << 20);
    let mut lines = 0u64;
    while log.len() < 10_500_000 {
        lines += 1;
        if lines.is_multiple_of(997) {
            log.extend_from_slice(b"{\"query_id\": \"broken\n");
            continue;
        }
        if lines.is_multiple_of(1013) {
            log.extend_from_slice(b"\n");
            continue;
        }
        // One in ten events is for a query the key does not cover.
        let q = rng.random_range(0..n_labeled + n_labeled / 9);
        let mut docs: Vec<String> = Vec::new();
        while docs.len() < 10 {
            let doc = match relevant.get(q) {
                Some(rel) if !rel.is_empty() && rng.random_bool(0.2) => {
                    rel[rng.random_range(0..rel.len())]
                }
                _ => rng.random_range(0..n_docs),
            };
            let doc = format!("\"d{doc}\"");
            // A duplicate now and then: a duplicate_doc reject.
            if !docs.contains(&doc) || rng.random_bool(0.01) {
                docs.push(doc);
            }
        }
        writeln!(
            log,
            r#"{{"query_id": "q{q:05}", "run": "{}", "stage": "{}", "results": [{}], "latency_ms": {:.1}, "context_tokens": {}}}"#,
            ["bm25", "dense"][rng.random_range(0..2)],
            ["retrieve", "final"][rng.random_range(0..2)],
            docs.join(", "),
            rng.random_range(5.0..500.0),
            rng.random_range(100..4000),
        )
        .expect("writing to memory");
    }
    assert!(log.len() > 10 << 20, "the log spans several blocks");
    wd.write("logs.jsonl", &log);

    let grade = |threads: &str| {
        let out = format!("out-j{threads}");
        wd.rgrade(&[
            "grade",
            "--labels",
            "labels.jsonl",
            "-k",
            "1,5,10",
            "--repeats",
            "last",
            "--max-rejects",
            "1000000",
            "-q",
            "-j",
            threads,
            "-o",
            &out,
            "logs.jsonl",
        ])
        .expect_code(0);
        out
    };
    let (one, two) = (grade("1"), grade("2"));
    for file in ["per_query.csv", "aggregates.csv", "rejects.jsonl"] {
        let (a, b) = (
            wd.read(&format!("{one}/{file}")),
            wd.read(&format!("{two}/{file}")),
        );
        assert!(a == b, "{file} differs between -j 1 and -j 2");
    }
    let (a, b) = (
        wd.read_json(&format!("{one}/summary.json")),
        wd.read_json(&format!("{two}/summary.json")),
    );
    assert_eq!(a["counts"], b["counts"]);
    assert_eq!(a["overall"], b["overall"]);
    // The input exercised what it was built for.
    assert!(
        count(&a, "superseded_records") > 10_000,
        "{:#}",
        a["counts"]
    );
    assert!(count(&a, "unlabeled_events") > 1_000, "{:#}", a["counts"]);
    assert!(count(&a, "rejected") > 10, "{:#}", a["counts"]);
    assert!(count(&a, "blank_lines") > 10, "{:#}", a["counts"]);
    assert_counts_add_up(&a);
    let statuses = wd
        .read_csv(&format!("{one}/per_query.csv"))
        .column("status");
    assert!(statuses.iter().any(|s| s == "ok"));
    assert!(statuses.iter().any(|s| s == "no_answer"));
}
