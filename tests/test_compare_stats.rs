//! The statistics of `rgrade compare` on a case small enough to compute by
//! hand: means, deltas, wins, ties and losses, the p-value against the exact
//! sign-flip enumeration, Holm, the interval and the order of
//! per_query_delta.csv; and the same numbers when both runs sit in one grade
//! output, from JSONL or TREC.

use crate::util::compare::{
    assert_sorted_worst_first, cases, cases_trec, compare, exact_p, grade, graded_cases,
};
use crate::util::{assert_cell, assert_same_lines, assert_text, text};

/// The hand-computed case: means, deltas, wins / ties / losses of the
/// overall row and of slices; no row for the task whose only query has no
/// relevant document; the p-value within 0.005 of the exact enumeration
/// (200,000 permutations); Holm over the two metrics; no interval from 5
/// queries, and why; a per-query file in the contracted order.
#[test]
fn hand_computed_case() {
    let wd = graded_cases("compare_hand_computed");
    let run = compare(
        &wd,
        &[
            "base",
            "cand",
            "--metrics",
            "rr@3,recall@3",
            "--permutations",
            "200000",
            "-o",
            "cmp",
        ],
    );
    run.expect_code(0);
    assert!(!wd.exists("cmp/gate.json"), "gate.json without --rules");
    let table = wd.read_csv("cmp/comparison.csv");
    assert_eq!(
        table.header,
        [
            "stage",
            "task",
            "language",
            "metric",
            "queries",
            "baseline",
            "candidate",
            "delta",
            "ci_low",
            "ci_high",
            "wins",
            "ties",
            "losses",
            "p_value",
            "p_holm",
            "split",
            "mde",
            "queries_for_mde",
            "holm_family"
        ]
    );
    // Without --mde, no queries to detect it; the power figures
    // themselves are checked against statsmodels in python/tests.
    assert!(table.column("queries_for_mde").iter().all(String::is_empty));
    let row = |task: &str, language: &str, metric: &str| {
        table.row(&[
            ("stage", "final"),
            ("task", task),
            ("language", language),
            ("metric", metric),
        ])
    };
    // (task, language, metric) → [queries, baseline, candidate, wins, ties, losses]
    type Want = ((&'static str, &'static str, &'static str), [f64; 6]);
    let want: [Want; 6] = [
        (("*", "*", "recall@3"), [5.0, 0.7, 0.8, 2.0, 2.0, 1.0]),
        (("*", "*", "rr@3"), [5.0, 17.0 / 30.0, 0.7, 3.0, 1.0, 1.0]),
        (("howto", "*", "recall@3"), [3.0, 0.5, 1.0, 2.0, 1.0, 0.0]),
        (("*", "de", "rr@3"), [2.0, 0.75, 0.5, 1.0, 0.0, 1.0]),
        (
            ("billing", "de", "recall@3"),
            [1.0, 1.0, 0.0, 0.0, 0.0, 1.0],
        ),
        (
            ("billing", "en", "rr@3"),
            [1.0, 1.0 / 3.0, 1.0, 1.0, 0.0, 0.0],
        ),
    ];
    for ((task, language, metric), [queries, base, cand, wins, ties, losses]) in want {
        let r = row(task, language, metric);
        assert_cell(&r, "queries", queries);
        assert_cell(&r, "baseline", base);
        assert_cell(&r, "candidate", cand);
        assert_cell(&r, "delta", cand - base);
        assert_cell(&r, "wins", wins);
        assert_cell(&r, "ties", ties);
        assert_cell(&r, "losses", losses);
    }
    // Grouping sets: overall, 2 tasks, 2 languages, 4 task × language,
    // two metrics each; chitchat (no counted query) has none.
    assert_eq!(table.rows.len(), 18, "{}", table.dump());
    assert!(!table.column("task").iter().any(|t| t == "chitchat"));

    let deltas = [
        ("rr@3", vec![0.0, 0.5, 2.0 / 3.0, -1.0, 0.5]),
        ("recall@3", vec![0.0, 0.5, 0.0, -1.0, 1.0]),
    ];
    let mut p = Vec::new();
    for (metric, d) in &deltas {
        let r = row("*", "*", metric);
        let got: f64 = r["p_value"].parse().unwrap();
        let exact = exact_p(d);
        assert!(
            (got - exact).abs() < 0.005,
            "{metric}: p {got}, exact {exact}"
        );
        // Five queries are too few for a valid interval: none is given.
        assert_eq!((&*r["ci_low"], &*r["ci_high"]), ("", ""), "{metric}");
        p.push(got);
    }
    assert!(
        exact_p(&deltas[0].1) < 1.0,
        "the rr@3 case should not be trivial"
    );
    // Holm over two: the smaller p doubled, the larger at least that.
    let holm_small = (2.0 * p[0].min(p[1])).min(1.0);
    let holm_large = p[0].max(p[1]).max(holm_small);
    let (h0, h1) = if p[0] <= p[1] {
        (holm_small, holm_large)
    } else {
        (holm_large, holm_small)
    };
    assert_cell(&row("*", "*", "rr@3"), "p_holm", h0);
    assert_cell(&row("*", "*", "recall@3"), "p_holm", h1);
    // Overall the two metrics differ (q3: rr@3 +2/3, recall@3 0): a family
    // of two. Over de's q2 and q4 they change alike (+0.5, then -1), so
    // they test one hypothesis there: a family of one.
    for (language, family) in [("*", 2.0), ("de", 1.0), ("en", 2.0)] {
        for metric in ["rr@3", "recall@3"] {
            assert_cell(&row("*", language, metric), "holm_family", family);
        }
    }

    // per_query_delta.csv: metric columns in --metrics order, worst rr@3
    // loss first, ties by query_id, the no-answer query last and empty.
    let delta = wd.read_csv("cmp/per_query_delta.csv");
    assert_eq!(
        delta.header,
        [
            "stage",
            "query_id",
            "task",
            "language",
            "required",
            "rr@3_baseline",
            "rr@3_candidate",
            "rr@3_delta",
            "recall@3_baseline",
            "recall@3_candidate",
            "recall@3_delta",
            "split"
        ]
    );
    assert_eq!(
        delta.column("query_id"),
        ["q4", "q1", "q2", "q5", "q3", "q6"]
    );
    assert_eq!(delta.rows[5][5..], ["", "", "", "", "", "", "(none)"]);
    let q4 = delta.row(&[("query_id", "q4")]);
    assert_text(&q4, "required", "true");
    assert_cell(&q4, "rr@3_delta", -1.0);
    assert_cell(&q4, "recall@3_baseline", 1.0);
    assert_sorted_worst_first(&delta, "rr@3");

    // Sorted by the first metric named: recall@3 puts q5 (+1) last.
    let run = compare(
        &wd,
        &["base", "cand", "--metrics", "recall@3,rr@3", "-o", "cmp2"],
    );
    run.expect_code(0);
    let delta = wd.read_csv("cmp2/per_query_delta.csv");
    assert_eq!(
        delta.column("query_id"),
        ["q4", "q1", "q3", "q2", "q5", "q6"]
    );

    // stdout: both runs, the overall table, the loser per slice.
    let run = compare(&wd, &["base", "cand"]);
    run.expect_code(0);
    assert!(
        run.stdout.contains("baseline   bm25 (base/per_query.csv)"),
        "{run}"
    );
    assert!(
        run.stdout.contains("candidate  dense (cand/per_query.csv)"),
        "{run}"
    );
    assert!(run.stdout.contains("q4 1.000 -> 0.000"), "{run}");
    assert!(run.stdout.contains("too few queries"), "{run}");
    assert!(!run.stdout.contains("[ "), "no interval printed\n{run}");
    assert!(
        !run.stdout.contains("rules"),
        "no rules section without --rules\n{run}"
    );
}

/// One grade output holding both runs (one JSONL log, or one TREC file
/// with two tags) is compared with --baseline-run/--candidate-run, to the
/// same numbers as two outputs; without them compare refuses.
#[test]
fn one_directory_holding_two_runs() {
    let wd = graded_cases("compare_two_runs_one_dir");
    compare(&wd, &["base", "cand", "-o", "separate"]).expect_code(0);

    grade(&wd, "3", "both", "both.jsonl");
    let run = compare(
        &wd,
        &[
            "both",
            "both",
            "--baseline-run",
            "bm25",
            "--candidate-run",
            "dense",
            "-o",
            "cmp",
        ],
    );
    run.expect_code(0);
    assert!(
        run.stdout.contains("baseline   bm25 (both/per_query.csv)"),
        "{run}"
    );
    assert!(
        run.stdout.contains("candidate  dense (both/per_query.csv)"),
        "{run}"
    );
    for file in ["comparison.csv", "per_query_delta.csv"] {
        assert_same_lines(
            &format!("{file}: one directory vs two"),
            &wd.read(&format!("cmp/{file}")),
            &wd.read(&format!("separate/{file}")),
        );
    }
    // per_query.csv itself may be named instead of its directory.
    compare(
        &wd,
        &[
            "both/per_query.csv",
            "both",
            "--baseline-run",
            "bm25",
            "--candidate-run",
            "dense",
            "-o",
            "by_file",
        ],
    )
    .expect_code(0);
    assert_same_lines(
        "comparison.csv: per_query.csv path vs directory",
        &wd.read("by_file/comparison.csv"),
        &wd.read("cmp/comparison.csv"),
    );

    // A TREC run file with two tags: the same numbers.
    wd.write(
        "both.trec",
        text(&[cases_trec("bm25", false), cases_trec("dense", true)].concat()),
    );
    grade(&wd, "3", "trec", "both.trec");
    compare(
        &wd,
        &[
            "trec",
            "trec",
            "--baseline-run",
            "bm25",
            "--candidate-run",
            "dense",
            "-o",
            "cmp_trec",
        ],
    )
    .expect_code(0);
    assert_same_lines(
        "comparison.csv: TREC vs JSONL",
        &wd.read("cmp_trec/comparison.csv"),
        &wd.read("cmp/comparison.csv"),
    );
    // A run compared with itself: every delta 0, every query a tie, p 1.
    compare(
        &wd,
        &[
            "trec",
            "trec",
            "--baseline-run",
            "dense",
            "--candidate-run",
            "dense",
            "-o",
            "self",
        ],
    )
    .expect_code(0);
    for r in wd.read_csv("self/comparison.csv").records() {
        assert_cell(&r, "delta", 0.0);
        assert_cell(&r, "wins", 0.0);
        assert_cell(&r, "losses", 0.0);
        assert_cell(&r, "p_value", 1.0);
    }

    // Without the run names: refused, naming both runs and the option.
    compare(&wd, &["both", "cand", "-o", "refused"])
        .expect_code(2)
        .expect_stderr(&["several runs", "bm25", "dense", "--baseline-run"]);
    compare(&wd, &["base", "both", "-o", "refused"])
        .expect_code(2)
        .expect_stderr(&["several runs", "--candidate-run"]);
    assert!(!wd.exists("refused/comparison.json"));
    assert!(!wd.exists("refused/comparison.csv"));
}

/// Metrics whose per-query deltas are equal test one hypothesis: hit@1
/// and rr@1 always agree, so with rr@3 and recall@3 the Holm family is 3,
/// not 4. Adding hit@1 changes no other metric's p_holm, hit@1 gets rr@1's,
/// and stdout, comparison.csv and a rule's detail give the family's size.
#[test]
fn holm_counts_metrics_with_equal_deltas_once() {
    let wd = cases("compare_distinct_holm");
    grade(&wd, "1,3", "base", "base.jsonl");
    grade(&wd, "1,3", "cand", "cand.jsonl");
    let overall = |dir: &str| {
        let table = wd.read_csv(&format!("{dir}/comparison.csv"));
        let rows: Vec<_> = table
            .records()
            .into_iter()
            .filter(|r| r["task"] == "*" && r["language"] == "*")
            .collect();
        rows
    };
    let run = compare(
        &wd,
        &[
            "base",
            "cand",
            "--metrics",
            "rr@3,rr@1,hit@1,recall@3",
            "-o",
            "four",
        ],
    );
    run.expect_code(0);
    assert!(
        run.stdout
            .contains("Holm family of 3 (4 metrics; hit@1 equals rr@1 query by query)"),
        "{run}"
    );
    compare(
        &wd,
        &[
            "base",
            "cand",
            "--metrics",
            "rr@3,rr@1,recall@3",
            "-o",
            "three",
        ],
    )
    .expect_code(0);
    let (four, three) = (overall("four"), overall("three"));
    let p_holm = |rows: &[std::collections::HashMap<String, String>], metric: &str| {
        let row = rows.iter().find(|r| r["metric"] == metric).unwrap();
        assert_eq!(row["holm_family"], "3", "{row:?}");
        row["p_holm"].parse::<f64>().unwrap()
    };
    for metric in ["rr@3", "rr@1", "recall@3"] {
        assert_eq!(p_holm(&four, metric), p_holm(&three, metric), "{metric}");
    }
    assert_eq!(p_holm(&four, "hit@1"), p_holm(&four, "rr@1"));
    // Holm by hand over the three distinct p-values.
    let p: Vec<f64> = ["rr@3", "rr@1", "recall@3"]
        .iter()
        .map(|m| {
            let row = three.iter().find(|r| r["metric"] == *m).unwrap();
            row["p_value"].parse().unwrap()
        })
        .collect();
    let mut order = [0, 1, 2];
    order.sort_by(|&a, &b| p[a].total_cmp(&p[b]));
    let mut running = 0.0f64;
    for (rank, &i) in order.iter().enumerate() {
        running = running.max(((3 - rank) as f64 * p[i]).min(1.0));
        let metric = ["rr@3", "rr@1", "recall@3"][i];
        assert!((p_holm(&three, metric) - running).abs() < 1e-9, "{metric}");
    }

    // A rule's family: its metric and the metrics compared, hit@1 once.
    wd.write(
        "rules.toml",
        "[[rule]]\nname = \"hit\"\nmetric = \"hit@1\"\nno_significant_loss = true\n",
    );
    compare(
        &wd,
        &[
            "base",
            "cand",
            "--metrics",
            "rr@3,rr@1,recall@3",
            "--rules",
            "rules.toml",
            "-o",
            "rule",
        ],
    )
    .expect_code(0);
    let gate = wd.read_json("rule/gate.json");
    let detail = gate["rules"][0]["detail"].as_str().unwrap();
    assert!(
        detail.contains("Holm family of 3 (4 metrics; rr@1 equals hit@1 query by query)"),
        "{detail}"
    );
}
