//! `rgrade compare` end to end, through the binary: the comparison story
//! shipped in `data-samples/compare/`, reproducibility, the refusals (exit
//! 2), two runs of one grade output, a case small enough to compute by
//! hand (p-value included, against the exact sign-flip enumeration), every
//! kind of acceptance rule passing and failing, and the order of
//! per_query_delta.csv.

use std::collections::{BTreeSet, HashMap};
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::util::{
    assert_cell, assert_same_lines, assert_text, text, Run, Table, Workdir, CRATE_ROOT, RUN_TIMEOUT,
};

/// The comparison sample, relative to the crate root.
const SAMPLE: &str = "data-samples/compare";

/// The metrics data-samples/compare/README.md's compare command names.
const SAMPLE_METRICS: &str = "recall@5,recall@10,rr@10,ndcg@10";

/// The absolute path of `rel` inside the crate.
fn crate_path(rel: &str) -> PathBuf {
    Path::new(CRATE_ROOT).join(rel)
}

/// `path` as a command-line argument.
fn arg(path: &Path) -> String {
    path.display().to_string()
}

/// `rgrade compare ARGS` in `wd`.
fn compare(wd: &Workdir, args: &[&str]) -> Run {
    let mut all = vec!["compare"];
    all.extend_from_slice(args);
    wd.rgrade(&all)
}

// ---------------------------------------------------------------------
// The shipped sample: data-samples/compare/
// ---------------------------------------------------------------------

/// data-samples/compare/README.md's grade commands, run in `wd` with the
/// same relative output directories (`out/baseline`, `out/candidate`), so
/// that compare's stdout names the same files as `expected/stdout.txt`.
fn grade_sample(wd: &Workdir) {
    let labels = arg(&crate_path("data-samples/realistic/labels.jsonl"));
    for (out, logs) in [
        ("out/baseline", "data-samples/realistic/logs"),
        ("out/candidate", "data-samples/compare/candidate"),
    ] {
        let logs = arg(&crate_path(logs));
        wd.rgrade(&[
            "grade",
            "--labels",
            &labels,
            "-k",
            "1,5,10",
            "--repeats",
            "last",
            "--max-rejects",
            "10",
            "-q",
            "-o",
            out,
            &logs,
        ])
        .expect_code(0);
    }
}

/// The README's compare command, writing into `out`, with `extra` options.
fn compare_sample(wd: &Workdir, out: &str, extra: &[&str]) -> Run {
    let rules = arg(&crate_path("data-samples/compare/rules.toml"));
    let mut args = vec![
        "out/baseline",
        "out/candidate",
        "--rules",
        &rules,
        "--metrics",
        SAMPLE_METRICS,
        "-o",
        out,
    ];
    args.extend_from_slice(extra);
    compare(wd, &args)
}

/// The story of data-samples/compare/README.md: the candidate wins on
/// average but the gate fails (exit 1) on the required case q000025 and
/// on Japanese; the other three rules pass. The outputs are byte for byte
/// `expected/`, and the README shows the very stdout.
#[test]
fn sample_story_matches_expected_outputs() {
    let wd = Workdir::new("compare_sample_story");
    grade_sample(&wd);
    let run = compare_sample(&wd, "out/compare", &[]);
    run.expect_code(1);

    let hint = "(if the change is meant, review it, then rerun data-samples/compare/make.sh)";
    for file in ["comparison.csv", "per_query_delta.csv", "gate.json"] {
        let want = fs::read(crate_path(&format!("{SAMPLE}/expected/{file}")))
            .unwrap_or_else(|e| panic!("cannot read expected/{file}: {e}"));
        assert_same_lines(
            &format!("{file} against {SAMPLE}/expected/{file} {hint}"),
            &wd.read(&format!("out/compare/{file}")),
            &want,
        );
    }
    let want_stdout = fs::read_to_string(crate_path(&format!("{SAMPLE}/expected/stdout.txt")))
        .expect("read expected/stdout.txt");
    assert_same_lines(
        &format!("stdout against {SAMPLE}/expected/stdout.txt {hint}"),
        run.stdout.as_bytes(),
        want_stdout.as_bytes(),
    );
    let readme =
        fs::read_to_string(crate_path(&format!("{SAMPLE}/README.md"))).expect("read README.md");
    assert!(
        readme.contains(&want_stdout),
        "{SAMPLE}/README.md does not show expected/stdout.txt {hint}"
    );

    let gate = wd.read_json("out/compare/gate.json");
    assert_eq!(gate["passed"], Value::Bool(false), "{gate:#}");
    let verdicts: Vec<(&str, bool)> = gate["rules"]
        .as_array()
        .expect("rules array")
        .iter()
        .map(|r| {
            (
                r["name"].as_str().expect("name"),
                r["passed"].as_bool().expect("passed"),
            )
        })
        .collect();
    assert_eq!(
        verdicts,
        [
            ("both export sources in the top 5", true),
            ("no loss on required regression cases", false),
            ("latency within budget", true),
            ("no significant drop for German", true),
            ("no significant drop for Japanese", false),
        ],
        "{gate:#}"
    );
    let rule = |i: usize| &gate["rules"][i];
    assert_eq!(rule(0)["value"].as_f64(), Some(1.0), "{gate:#}");
    assert_eq!(rule(1)["value"].as_f64(), Some(1.0), "one losing query");
    let detail = rule(1)["detail"].as_str().expect("detail");
    assert!(detail.contains("q000025 1.0000 -> 0.0000"), "{detail}");
    // no_significant_loss: the value is the mean delta, held to 0.
    let ja_delta = rule(4)["value"].as_f64().expect("delta");
    assert!((ja_delta - -0.3724).abs() < 5e-5, "{gate:#}");
    assert_eq!(rule(4)["limit"].as_f64(), Some(0.0), "{gate:#}");
    assert!(
        run.stdout.contains("gate: FAIL (2 of 5 rules failed)"),
        "{run}"
    );

    // The latency rule's value is the candidate's p95 over every final
    // capture, recomputed from per_query.csv (linear interpolation).
    let candidate = wd.read_csv("out/candidate/per_query.csv");
    let mut latencies: Vec<f64> = candidate
        .records()
        .iter()
        .filter(|r| r["stage"] == "final" && !r["latency_ms"].is_empty())
        .map(|r| r["latency_ms"].parse().expect("latency"))
        .collect();
    latencies.sort_by(f64::total_cmp);
    assert_eq!(latencies.len(), 300);
    let p95 = percentile(&latencies, 95.0);
    let got = rule(2)["value"].as_f64().expect("latency value");
    assert!((got - p95).abs() < 1e-9, "p95 {got}, recomputed {p95}");
}

/// Linear-interpolation percentile (numpy's default) of sorted values.
fn percentile(sorted: &[f64], p: f64) -> f64 {
    let position = p / 100.0 * (sorted.len() - 1) as f64;
    let (below, above) = (position.floor() as usize, position.ceil() as usize);
    sorted[below] + (sorted[above] - sorted[below]) * (position - below as f64)
}

/// A few rows of the sample's comparison.csv and per_query_delta.csv,
/// recomputed here from the two per_query.csv files: mean of each side
/// over the queries with a relevant document, delta, wins / ties / losses;
/// and a query's per-query delta.
#[test]
fn sample_comparison_rows_follow_from_both_per_query_files() {
    let wd = Workdir::new("compare_sample_recompute");
    grade_sample(&wd);
    compare_sample(&wd, "out/compare", &[]).expect_code(1);
    let base = wd.read_csv("out/baseline/per_query.csv");
    let cand = wd.read_csv("out/candidate/per_query.csv");
    let comparison = wd.read_csv("out/compare/comparison.csv");

    let scores = |table: &Table, stage: &str, language: Option<&str>, metric: &str| {
        table
            .records()
            .into_iter()
            .filter(|r| {
                r["stage"] == stage
                    && r["status"] != "no_answer"
                    && language.is_none_or(|l| r["language"] == l)
            })
            .map(|r| {
                let score: f64 = r[metric].parse().expect("score");
                (r["query_id"].clone(), score)
            })
            .collect::<HashMap<String, f64>>()
    };
    for (stage, language, metric) in [
        ("final", None, "recall@5"),
        ("final", Some("ja"), "rr@10"),
        ("retrieve", Some("de"), "ndcg@10"),
    ] {
        let b = scores(&base, stage, language, metric);
        let c = scores(&cand, stage, language, metric);
        let ids = |m: &HashMap<String, f64>| m.keys().cloned().collect::<BTreeSet<String>>();
        assert_eq!(ids(&b), ids(&c), "same queries on both sides");
        let n = b.len() as f64;
        let base_mean = b.values().sum::<f64>() / n;
        let cand_mean = c.values().sum::<f64>() / n;
        let (mut wins, mut ties, mut losses) = (0.0, 0.0, 0.0);
        for (q, bv) in &b {
            let d = c[q] - bv;
            if d > 1e-12 {
                wins += 1.0;
            } else if d < -1e-12 {
                losses += 1.0;
            } else {
                ties += 1.0;
            }
        }
        let row = comparison.row(&[
            ("stage", stage),
            ("task", "*"),
            ("language", language.unwrap_or("*")),
            ("metric", metric),
        ]);
        assert_cell(&row, "queries", n);
        assert_cell(&row, "baseline", base_mean);
        assert_cell(&row, "candidate", cand_mean);
        assert_cell(&row, "delta", cand_mean - base_mean);
        assert_cell(&row, "wins", wins);
        assert_cell(&row, "ties", ties);
        assert_cell(&row, "losses", losses);
        let low: f64 = row["ci_low"].parse().expect("ci_low");
        let high: f64 = row["ci_high"].parse().expect("ci_high");
        assert!(
            low <= cand_mean - base_mean && cand_mean - base_mean <= high,
            "{row:?}"
        );
    }
    // The Japanese slice lost significantly; overall recall@5 gained.
    let ja = comparison.row(&[
        ("stage", "final"),
        ("task", "*"),
        ("language", "ja"),
        ("metric", "rr@10"),
    ]);
    assert!(
        ja["delta"].parse::<f64>().unwrap() < 0.0 && ja["p_holm"].parse::<f64>().unwrap() < 0.05
    );

    let delta = wd.read_csv("out/compare/per_query_delta.csv");
    let row = delta.row(&[("stage", "final"), ("query_id", "q000025")]);
    assert_text(&row, "language", "ja");
    assert_text(&row, "required", "true");
    assert_cell(&row, "recall@5_baseline", 1.0);
    assert_cell(&row, "recall@5_candidate", 0.0);
    assert_cell(&row, "recall@5_delta", -1.0);
    assert_sorted_worst_first(&delta, "recall@5");
}

/// Same inputs and seed give byte-identical outputs with one thread or
/// two; another seed moves only the p-values and intervals, and only a
/// little (10,000 permutations: a standard error under 0.005).
#[test]
fn results_depend_on_the_seed_only_never_on_threads() {
    let wd = Workdir::new("compare_determinism");
    grade_sample(&wd);
    let one = compare_sample(&wd, "out/j1", &["-j", "1"]);
    one.expect_code(1);
    let two = compare_sample(&wd, "out/j2", &["-j", "2"]);
    two.expect_code(1);
    assert_same_lines(
        "stdout -j 1 vs -j 2",
        two.stdout.as_bytes(),
        one.stdout.as_bytes(),
    );
    for file in ["comparison.csv", "per_query_delta.csv", "gate.json"] {
        assert_same_lines(
            &format!("{file} -j 1 vs -j 2"),
            &wd.read(&format!("out/j2/{file}")),
            &wd.read(&format!("out/j1/{file}")),
        );
    }

    compare_sample(&wd, "out/seed1", &["--seed", "1"]).expect_code(1);
    let seed0 = wd.read_csv("out/j1/comparison.csv");
    let seed1 = wd.read_csv("out/seed1/comparison.csv");
    assert_eq!(seed0.header, seed1.header);
    assert_eq!(seed0.rows.len(), seed1.rows.len());
    let mut p_moved = 0;
    for (a, b) in seed0.records().iter().zip(seed1.records()) {
        for column in [
            "stage",
            "task",
            "language",
            "metric",
            "queries",
            "baseline",
            "candidate",
            "delta",
            "wins",
            "ties",
            "losses",
        ] {
            assert_eq!(a[column], b[column], "{column}: {a:?} vs {b:?}");
        }
        let num = |r: &HashMap<String, String>, c: &str| r[c].parse::<f64>().expect(c);
        for column in ["p_value", "p_holm"] {
            let (x, y) = (num(a, column), num(&b, column));
            assert!((x - y).abs() <= 0.03, "{column} {x} vs {y}: {a:?} vs {b:?}");
            if x != y {
                p_moved += 1;
            }
        }
        let width = num(a, "ci_high") - num(a, "ci_low");
        for column in ["ci_low", "ci_high"] {
            let (x, y) = (num(a, column), num(&b, column));
            assert!(
                (x - y).abs() <= 0.25 * width + 1e-9,
                "{column} {x} vs {y} (interval width {width}): {a:?} vs {b:?}"
            );
        }
    }
    assert!(p_moved > 0, "--seed 1 gave the very p-values of seed 0");
}

// ---------------------------------------------------------------------
// A case small enough to compute by hand
// ---------------------------------------------------------------------

/// One labeled query of the hand-computed fixture and its two captures.
struct Case {
    id: &'static str,
    task: &'static str,
    language: &'static str,
    required: bool,
    relevant: &'static [&'static str],
    baseline: &'static [&'static str],
    candidate: &'static [&'static str],
    latency: (f64, f64),
    context: (u32, u32),
}

/// Six queries at k = 3 (q6 has no relevant document):
///
/// | query | recall@3 base → cand | rr@3 base → cand |
/// |-------|----------------------|------------------|
/// | q1    | 1 → 1                | 1 → 1            |
/// | q2    | 0.5 → 1              | 0.5 → 1          |
/// | q3    | 1 → 1                | 1/3 → 1          |
/// | q4    | 1 → 0 (required)     | 1 → 0            |
/// | q5    | 0 → 1                | 0 → 0.5          |
///
/// recall@3: 0.7 → 0.8, 2 wins, 2 ties, 1 loss; rr@3: 17/30 → 0.7, 3 wins,
/// 1 tie, 1 loss. Candidate latencies 15, 25, 35, 45, 55, 300 (p50 40,
/// p95 238.75, p99 287.75); context 100 … 600 on both sides (mean 350).
const CASES: [Case; 6] = [
    Case {
        id: "q1",
        task: "howto",
        language: "en",
        required: false,
        relevant: &["d1"],
        baseline: &["d1", "x1", "x2"],
        candidate: &["d1", "x1", "x2"],
        latency: (10.0, 15.0),
        context: (100, 100),
    },
    Case {
        id: "q2",
        task: "howto",
        language: "de",
        required: false,
        relevant: &["d2a", "d2b"],
        baseline: &["x1", "d2a", "x2"],
        candidate: &["d2a", "d2b", "x1"],
        latency: (20.0, 25.0),
        context: (200, 200),
    },
    Case {
        id: "q3",
        task: "billing",
        language: "en",
        required: false,
        relevant: &["d3"],
        baseline: &["x1", "x2", "d3"],
        candidate: &["d3", "x1", "x2"],
        latency: (30.0, 35.0),
        context: (300, 300),
    },
    Case {
        id: "q4",
        task: "billing",
        language: "de",
        required: true,
        relevant: &["d4"],
        baseline: &["d4", "x1", "x2"],
        candidate: &["x1", "x2", "x3"],
        latency: (40.0, 45.0),
        context: (400, 400),
    },
    Case {
        id: "q5",
        task: "howto",
        language: "en",
        required: false,
        relevant: &["d5"],
        baseline: &["x1", "x2", "x3"],
        candidate: &["x1", "d5", "x2"],
        latency: (50.0, 55.0),
        context: (500, 500),
    },
    Case {
        id: "q6",
        task: "chitchat",
        language: "en",
        required: false,
        relevant: &[],
        baseline: &["x1"],
        candidate: &["x1"],
        latency: (60.0, 300.0),
        context: (600, 600),
    },
];

/// The fixture's answer key.
fn cases_labels() -> String {
    text(
        &CASES
            .iter()
            .map(|c| {
                serde_json::json!({
                    "query_id": c.id,
                    "relevant": c.relevant,
                    "task": c.task,
                    "language": c.language,
                    "required": c.required,
                })
                .to_string()
            })
            .collect::<Vec<_>>(),
    )
}

/// One capture per query of `run`: the baseline's rankings or the candidate's.
fn cases_log(run: &str, candidate: bool) -> Vec<String> {
    CASES
        .iter()
        .map(|c| {
            let (ranking, latency, context) = if candidate {
                (c.candidate, c.latency.1, c.context.1)
            } else {
                (c.baseline, c.latency.0, c.context.0)
            };
            serde_json::json!({
                "query_id": c.id,
                "run": run,
                "results": ranking,
                "latency_ms": latency,
                "context_tokens": context,
            })
            .to_string()
        })
        .collect()
}

/// The same captures as a TREC run: one line per result, scores
/// descending, tagged with the run.
fn cases_trec(run: &str, candidate: bool) -> Vec<String> {
    CASES
        .iter()
        .flat_map(|c| {
            let ranking = if candidate { c.candidate } else { c.baseline };
            ranking
                .iter()
                .enumerate()
                .map(move |(i, doc)| format!("{} Q0 {doc} {} {} {run}", c.id, i + 1, 10 - i))
        })
        .collect()
}

/// Write labels.jsonl, base.jsonl (run `bm25`), cand.jsonl (run `dense`)
/// and both.jsonl (both runs) into `wd`.
fn write_cases(wd: &Workdir) {
    wd.write("labels.jsonl", cases_labels());
    let base = cases_log("bm25", false);
    let cand = cases_log("dense", true);
    wd.write("base.jsonl", text(&base));
    wd.write("cand.jsonl", text(&cand));
    wd.write("both.jsonl", text(&[base, cand].concat()));
}

/// `rgrade grade --labels labels.jsonl -k K -q -o OUT LOGS`, expected to exit 0.
fn grade(wd: &Workdir, k: &str, out: &str, logs: &str) {
    wd.rgrade(&[
        "grade",
        "--labels",
        "labels.jsonl",
        "-k",
        k,
        "-q",
        "-o",
        out,
        logs,
    ])
    .expect_code(0);
}

/// The fixture graded at k = 3: `base/` and `cand/`.
fn graded_cases(name: &str) -> Workdir {
    let wd = Workdir::new(name);
    write_cases(&wd);
    grade(&wd, "3", "base", "base.jsonl");
    grade(&wd, "3", "cand", "cand.jsonl");
    wd
}

/// The exact two-sided p-value of the sign-flip test: the share of the
/// 2^n sign assignments whose |sum| reaches the observed |sum|.
fn exact_p(deltas: &[f64]) -> f64 {
    let observed = deltas.iter().sum::<f64>().abs();
    let n = deltas.len();
    let extreme = (0u32..1 << n)
        .filter(|signs| {
            let sum: f64 = (0..n)
                .map(|i| {
                    if signs >> i & 1 == 1 {
                        -deltas[i]
                    } else {
                        deltas[i]
                    }
                })
                .sum();
            sum.abs() >= observed - 1e-9
        })
        .count();
    extreme as f64 / f64::from(1u32 << n)
}

/// The hand-computed case: means, deltas, wins / ties / losses of the
/// overall row and of slices; no row for the task whose only query has no
/// relevant document; the p-value within 0.005 of the exact enumeration
/// (200,000 permutations); Holm over the two metrics; the interval around
/// the delta; a per-query file in the contracted order.
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
            "p_holm"
        ]
    );
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
        let (low, high): (f64, f64) = (r["ci_low"].parse().unwrap(), r["ci_high"].parse().unwrap());
        let mean = d.iter().sum::<f64>() / d.len() as f64;
        let lowest = d.iter().copied().fold(f64::INFINITY, f64::min);
        let highest = d.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        assert!(
            lowest <= low && low <= mean && mean <= high && high <= highest,
            "{metric}: interval [{low}, {high}] around {mean}"
        );
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
            "recall@3_delta"
        ]
    );
    assert_eq!(
        delta.column("query_id"),
        ["q4", "q1", "q2", "q5", "q3", "q6"]
    );
    assert_eq!(delta.rows[5][5..], ["", "", "", "", "", ""]);
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
    assert!(
        !run.stdout.contains("rules"),
        "no rules section without --rules\n{run}"
    );
}

/// Rows of per_query_delta.csv are sorted by `metric`'s delta, most
/// negative first, ties by query_id; rows with an empty delta (no relevant
/// document) come last with every metric cell empty.
#[track_caller]
fn assert_sorted_worst_first(table: &Table, metric: &str) {
    let deltas = table.column(&format!("{metric}_delta"));
    let ids = table.column("query_id");
    let counted = deltas.iter().take_while(|d| !d.is_empty()).count();
    assert!(
        deltas[counted..].iter().all(String::is_empty),
        "{}: a row with a delta after a row without",
        table.name
    );
    for i in 1..counted {
        let (a, b): (f64, f64) = (deltas[i - 1].parse().unwrap(), deltas[i].parse().unwrap());
        assert!(
            a < b || (a == b && ids[i - 1] <= ids[i]),
            "{}: row {} ({} {a}) before row {} ({} {b})",
            table.name,
            i,
            ids[i - 1],
            i + 1,
            ids[i]
        );
    }
    let first_metric = table
        .header
        .iter()
        .position(|h| h.ends_with("_baseline"))
        .expect("metric columns");
    for row in &table.rows[counted..] {
        assert!(row[first_metric..].iter().all(String::is_empty), "{row:?}");
    }
}

// ---------------------------------------------------------------------
// Two runs in one grade output
// ---------------------------------------------------------------------

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
    assert!(!wd.exists("refused"));
}

// ---------------------------------------------------------------------
// Refusals
// ---------------------------------------------------------------------

/// Run compare with `args`, expect exit 2, every needle on stderr and no
/// output file written into `refused/`.
#[track_caller]
fn expect_refusal(wd: &Workdir, args: &[&str], needles: &[&str]) {
    let mut all = args.to_vec();
    all.extend_from_slice(&["-o", "refused"]);
    let run = compare(wd, &all);
    run.expect_code(2).expect_stderr(needles);
    assert!(
        run.stdout.is_empty(),
        "nothing on stdout when refusing\n{run}"
    );
    for file in ["comparison.csv", "per_query_delta.csv", "gate.json"] {
        assert!(
            !wd.exists(&format!("refused/{file}")),
            "{file} written\n{run}"
        );
    }
}

/// Inputs that cannot be compared exit 2 with a message saying why:
/// different labels, different cutoffs, an unknown run on either side, an
/// unknown --metrics name, a missing summary.json or per_query.csv.
#[test]
fn incomparable_inputs_are_refused() {
    let wd = graded_cases("compare_refused_inputs");

    // Other labels: one more query (different content, different hash).
    let mut other = cases_labels();
    other.push_str("{\"query_id\":\"q7\",\"relevant\":[\"d7\"]}\n");
    wd.write("other/labels.jsonl", other);
    wd.rgrade(&[
        "grade",
        "--labels",
        "other/labels.jsonl",
        "-k",
        "3",
        "-q",
        "-o",
        "other_out",
        "cand.jsonl",
    ])
    .expect_code(0);
    expect_refusal(
        &wd,
        &["base", "other_out"],
        &["different labels", "same answer key"],
    );

    grade(&wd, "3,5", "k35", "cand.jsonl");
    expect_refusal(
        &wd,
        &["base", "k35"],
        &["different cutoffs", "[3]", "[3, 5]"],
    );

    expect_refusal(
        &wd,
        &["base", "cand", "--baseline-run", "nope"],
        &["base/per_query.csv", "no rows of run 'nope' (runs found: '"],
    );
    expect_refusal(
        &wd,
        &["base", "cand", "--candidate-run", "nope"],
        &["cand/per_query.csv", "no rows of run 'nope'"],
    );

    expect_refusal(
        &wd,
        &["base", "cand", "--metrics", "recall@3,recal@3"],
        &["unknown metric 'recal@3'", "recall@3"],
    );
    // A cutoff that was not graded is not a metric either.
    expect_refusal(
        &wd,
        &["base", "cand", "--metrics", "ndcg@10"],
        &["unknown metric 'ndcg@10'"],
    );

    expect_refusal(&wd, &["base", "nowhere"], &["nowhere", "not found"]);

    fs::create_dir_all(wd.path("nosummary")).unwrap();
    fs::copy(
        wd.path("cand/per_query.csv"),
        wd.path("nosummary/per_query.csv"),
    )
    .unwrap();
    expect_refusal(&wd, &["base", "nosummary"], &["summary.json", "not found"]);
    expect_refusal(
        &wd,
        &["nosummary/per_query.csv", "cand"],
        &["summary.json", "not found"],
    );
}

/// Rules that cannot be checked as written exit 2 naming the file and the
/// rule, never a silent pass: an unknown metric, query, task, language or
/// stage; two checks or none; a misspelt key; no rule at all.
#[test]
fn mistaken_rules_are_refused() {
    let wd = graded_cases("compare_refused_rules");
    let cases: [(&str, &str, &[&str]); 12] = [
        (
            "unknown metric",
            "metric = \"recal@3\"\nmin = 0.5",
            &["unknown metric 'recal@3'", "latency_p95_ms"],
        ),
        (
            "unknown query",
            "query = \"q9\"\nmetric = \"recall@3\"\nmin = 0.5",
            &["unknown query 'q9'"],
        ),
        (
            "unknown task",
            "task = \"shopping\"\nmetric = \"recall@3\"\nmin = 0.5",
            &["unknown task 'shopping'"],
        ),
        (
            "unknown language",
            "language = \"xx\"\nmetric = \"recall@3\"\nmin = 0.5",
            &["unknown language 'xx'"],
        ),
        // A language name is not a task.
        (
            "language as task",
            "task = \"en\"\nmetric = \"recall@3\"\nmin = 0.5",
            &["unknown task 'en'"],
        ),
        (
            "unknown stage",
            "stage = \"rerank\"\nmetric = \"recall@3\"\nmin = 0.5",
            &["unknown stage 'rerank'", "final"],
        ),
        (
            "two checks",
            "metric = \"recall@3\"\nmin = 0.5\nmax = 0.9",
            &["several checks"],
        ),
        ("no check", "metric = \"recall@3\"", &["no check"]),
        (
            "no_loss false",
            "metric = \"recall@3\"\nno_loss = false",
            &["no_loss = false"],
        ),
        (
            "misspelt key",
            "metric = \"recall@3\"\nno_los = true",
            &["unknown field", "no_los"],
        ),
        (
            "latency no_loss",
            "metric = \"latency_p95_ms\"\nno_loss = true",
            &["use min or max"],
        ),
        // Only the no-answer query: nothing to average.
        (
            "no-answer only",
            "query = \"q6\"\nmetric = \"recall@3\"\nmin = 0.5",
            &["counts in the means"],
        ),
    ];
    for (name, body, needles) in cases {
        let file = format!("{}.toml", name.replace(' ', "_"));
        wd.write(&file, format!("[[rule]]\nname = \"{name}\"\n{body}\n"));
        let mut all = needles.to_vec();
        all.push(file.as_str());
        expect_refusal(&wd, &["base", "cand", "--rules", &file], &all);
    }
    wd.write("empty.toml", "# nothing yet\n");
    expect_refusal(
        &wd,
        &["base", "cand", "--rules", "empty.toml"],
        &["no [[rule]]"],
    );
    wd.write("bad.toml", "[[rule]\nname = 1\n");
    expect_refusal(&wd, &["base", "cand", "--rules", "bad.toml"], &["bad.toml"]);
    expect_refusal(
        &wd,
        &["base", "cand", "--rules", "absent.toml"],
        &["absent.toml"],
    );
}

// ---------------------------------------------------------------------
// Acceptance rules
// ---------------------------------------------------------------------

/// Every kind of rule passes and fails at least once on the hand-computed
/// case, with the value and limit gate.json reports: min and max on a
/// metric, on one query and on `required` queries; no_loss; latency p50,
/// p95 and p99 and context_tokens_mean max; no_significant_loss passing on
/// a gain. Any FAIL makes exit status 1; all PASS, 0.
#[test]
fn each_rule_kind_passes_and_fails() {
    let wd = graded_cases("compare_rule_kinds");
    // (name, selectors and check, passes, value)
    let rules: &[(&str, &str, bool, f64)] = &[
        ("min pass", "metric = \"recall@3\"\nmin = 0.8", true, 0.8),
        ("min fail", "metric = \"recall@3\"\nmin = 0.81", false, 0.8),
        (
            "query min pass",
            "query = \"q2\"\nmetric = \"recall@3\"\nmin = 1.0",
            true,
            1.0,
        ),
        (
            "query min fail",
            "query = \"q4\"\nmetric = \"recall@3\"\nmin = 1.0",
            false,
            0.0,
        ),
        ("max pass", "metric = \"rr@3\"\nmax = 0.75", true, 0.7),
        ("max fail", "metric = \"rr@3\"\nmax = 0.6", false, 0.7),
        (
            "required min",
            "required = true\nmetric = \"rr@3\"\nmin = 0.0",
            true,
            0.0,
        ),
        (
            "not required min",
            "required = false\nmetric = \"recall@3\"\nmin = 1.0",
            true,
            1.0,
        ),
        (
            "task language min",
            "task = \"billing\"\nlanguage = \"en\"\nmetric = \"rr@3\"\nmin = 1.0",
            true,
            1.0,
        ),
        (
            "no_loss pass",
            "task = \"howto\"\nmetric = \"recall@3\"\nno_loss = true",
            true,
            0.0,
        ),
        (
            "no_loss fail",
            "required = true\nmetric = \"recall@3\"\nno_loss = true",
            false,
            1.0,
        ),
        (
            "no_loss fail overall",
            "metric = \"rr@3\"\nno_loss = true",
            false,
            1.0,
        ),
        (
            "p50 pass",
            "metric = \"latency_p50_ms\"\nmax = 40.0",
            true,
            40.0,
        ),
        (
            "p50 fail",
            "metric = \"latency_p50_ms\"\nmax = 39.9",
            false,
            40.0,
        ),
        (
            "p95 pass",
            "metric = \"latency_p95_ms\"\nmax = 240.0",
            true,
            238.75,
        ),
        (
            "p95 fail",
            "metric = \"latency_p95_ms\"\nmax = 238.0",
            false,
            238.75,
        ),
        (
            "p99 pass",
            "metric = \"latency_p99_ms\"\nmax = 290.0",
            true,
            287.75,
        ),
        (
            "p99 fail",
            "metric = \"latency_p99_ms\"\nmax = 287.0",
            false,
            287.75,
        ),
        (
            "p99 of en",
            "language = \"en\"\nmetric = \"latency_p99_ms\"\nmax = 300.0",
            true,
            292.65,
        ),
        (
            "context pass",
            "metric = \"context_tokens_mean\"\nmax = 350.0",
            true,
            350.0,
        ),
        (
            "context fail",
            "metric = \"context_tokens_mean\"\nmax = 349.9",
            false,
            350.0,
        ),
        (
            "context min",
            "required = true\nmetric = \"context_tokens_mean\"\nmin = 400.0",
            true,
            400.0,
        ),
        (
            "gain is no loss",
            "metric = \"rr@3\"\nno_significant_loss = true",
            true,
            f64::NAN,
        ),
    ];
    let toml: String = rules
        .iter()
        .map(|(name, body, _, _)| format!("[[rule]]\nname = \"{name}\"\n{body}\n\n"))
        .collect();
    wd.write("rules.toml", &toml);
    let run = compare(&wd, &["base", "cand", "--rules", "rules.toml", "-o", "cmp"]);
    run.expect_code(1);
    let gate = wd.read_json("cmp/gate.json");
    assert_eq!(gate["passed"], Value::Bool(false));
    let got = gate["rules"].as_array().expect("rules");
    assert_eq!(got.len(), rules.len(), "{gate:#}");
    for ((name, _, passes, value), rule) in rules.iter().zip(got) {
        assert_eq!(rule["name"].as_str(), Some(*name), "{rule:#}");
        assert_eq!(rule["passed"].as_bool(), Some(*passes), "{rule:#}");
        if !value.is_nan() {
            let v = rule["value"].as_f64().expect("value");
            assert!((v - value).abs() < 1e-9, "{name}: value {v}, want {value}");
        }
        let verdict = if *passes { "PASS" } else { "FAIL" };
        assert!(
            run.stdout.contains(&format!("  {verdict}  {name}: ")),
            "{name}: no {verdict} line\n{run}"
        );
    }
    let failed = rules.iter().filter(|r| !r.2).count();
    assert!(
        run.stdout.contains(&format!(
            "gate: FAIL ({failed} of {} rules failed)",
            rules.len()
        )),
        "{run}"
    );
    // The no_loss details name the losing query and its scores.
    let detail = got[10]["detail"].as_str().unwrap();
    assert!(
        detail.contains("q4 1.0000 -> 0.0000") && detail.contains("required"),
        "{detail}"
    );
    assert_eq!(got[10]["limit"].as_f64(), Some(0.0));

    // Only the passing rules: gate PASS, exit 0; -q prints only the rules.
    let passing: String = rules
        .iter()
        .filter(|r| r.2)
        .map(|(name, body, _, _)| format!("[[rule]]\nname = \"{name}\"\n{body}\n\n"))
        .collect();
    wd.write("passing.toml", &passing);
    let run = compare(
        &wd,
        &["base", "cand", "--rules", "passing.toml", "-q", "-o", "ok"],
    );
    run.expect_code(0);
    assert_eq!(wd.read_json("ok/gate.json")["passed"], Value::Bool(true));
    assert!(run.stdout.starts_with("rules\n"), "{run}");
    assert!(run.stdout.contains("gate: PASS"), "{run}");
    assert!(
        !run.stdout.lines().any(|l| l.starts_with("stage ")),
        "-q prints no table\n{run}"
    );
}

/// no_significant_loss fails on a loss that is significant after Holm, and
/// passes on the same loss at a stricter alpha, or on too few queries to
/// be significant: twelve queries that each drop from rank 1 to rank 2
/// (rr@3 -0.5 each; exact p = 2/4096).
#[test]
fn no_significant_loss_fails_only_on_a_significant_loss() {
    let wd = Workdir::new("compare_significant_loss");
    let n = 12;
    let labels: Vec<String> = (0..n)
        .map(|i| {
            let language = if i < 2 { "fr" } else { "de" };
            format!(r#"{{"query_id":"s{i:02}","relevant":["r{i}"],"language":"{language}"}}"#)
        })
        .collect();
    wd.write("labels.jsonl", text(&labels));
    let log = |run: &str, ranking: &dyn Fn(usize) -> String| -> String {
        text(
            &(0..n)
                .map(|i| {
                    format!(
                        r#"{{"query_id":"s{i:02}","run":"{run}","results":{}}}"#,
                        ranking(i)
                    )
                })
                .collect::<Vec<_>>(),
        )
    };
    wd.write("base.jsonl", log("a", &|i| format!(r#"["r{i}","x","y"]"#)));
    wd.write("cand.jsonl", log("b", &|i| format!(r#"["x","r{i}","y"]"#)));
    grade(&wd, "3", "base", "base.jsonl");
    grade(&wd, "3", "cand", "cand.jsonl");
    wd.write(
        "rules.toml",
        "[[rule]]\nname = \"all\"\nmetric = \"rr@3\"\nno_significant_loss = true\n\n\
         [[rule]]\nname = \"french\"\nlanguage = \"fr\"\nmetric = \"rr@3\"\nno_significant_loss = true\n\n\
         [[rule]]\nname = \"recall unchanged\"\nmetric = \"recall@3\"\nno_significant_loss = true\n",
    );
    let run = compare(
        &wd,
        &[
            "base",
            "cand",
            "--rules",
            "rules.toml",
            "--metrics",
            "rr@3",
            "-o",
            "cmp",
        ],
    );
    run.expect_code(1);
    let gate = wd.read_json("cmp/gate.json");
    let verdicts: Vec<bool> = gate["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["passed"].as_bool().unwrap())
        .collect();
    assert_eq!(verdicts, [false, true, true], "{gate:#}");
    // value is the mean delta, held to 0; the p-value is in the detail.
    assert_eq!(gate["rules"][0]["value"].as_f64(), Some(-0.5), "{gate:#}");
    assert_eq!(gate["rules"][0]["limit"].as_f64(), Some(0.0), "{gate:#}");
    let row = wd.read_csv("cmp/comparison.csv").row(&[
        ("task", "*"),
        ("language", "*"),
        ("metric", "rr@3"),
    ]);
    // Holm over the rule's metric only (--metrics rr@3): p itself.
    let p: f64 = row["p_holm"].parse().unwrap();
    assert!((p - exact_p(&[-0.5; 12])).abs() < 0.002, "p {p}\n{gate:#}");
    let detail = gate["rules"][0]["detail"].as_str().unwrap();
    assert!(detail.contains(&format!("Holm p {p:.4}")), "{detail}");
    assert_cell(&row, "delta", -0.5);
    assert_cell(&row, "losses", 12.0);
    assert_cell(&row, "ci_low", -0.5);
    assert_cell(&row, "ci_high", -0.5);

    // At alpha 0.00001 no p-value that 10,000 permutations can give is
    // below alpha: such a rule could never fail, so it is refused.
    let strict = |extra: &[&str], out: &str| {
        let mut args = vec![
            "base",
            "cand",
            "--rules",
            "rules.toml",
            "--metrics",
            "rr@3",
            "--alpha",
            "0.00001",
            "-o",
            out,
        ];
        args.extend_from_slice(extra);
        compare(&wd, &args)
    };
    strict(&[], "strict").expect_code(2).expect_stderr(&[
        "rule 'all'",
        "could never fail",
        "raise --permutations",
    ]);
    // With enough permutations the rule is accepted, but 12 queries cannot
    // give a p-value below 2^-11 = 0.00049: stderr says the rule cannot
    // fail, and the gate passes.
    let run = strict(&["--permutations", "200000"], "strict");
    run.expect_code(0)
        .expect_stderr(&["rule 'all': with 12 queries", "cannot fail"]);
    assert_eq!(
        wd.read_json("strict/gate.json")["passed"],
        Value::Bool(true)
    );
}

// ---------------------------------------------------------------------
// A gate never passes by accident
// ---------------------------------------------------------------------

/// A reader that closes stdout before compare writes (`rgrade compare ...
/// | false`) must not turn a failed gate into success.
#[test]
fn a_closed_stdout_pipe_keeps_a_failed_gate() {
    let wd = Workdir::new("compare_closed_pipe");
    grade_sample(&wd);
    let rules = arg(&crate_path("data-samples/compare/rules.toml"));
    let args = [
        "compare",
        "out/baseline",
        "out/candidate",
        "--rules",
        &rules,
        "-o",
        "out/compare",
    ];
    let mut cmd = wd.command(&args);
    let mut child = cmd.spawn().expect("rgrade starts");
    drop(child.stdout.take());
    let run = Run::wait(&cmd, child, RUN_TIMEOUT);
    run.expect_code(1);
    assert_eq!(
        wd.read_json("out/compare/gate.json")["passed"],
        Value::Bool(false)
    );
}

/// Under `--missing skip` a query the baseline answered and the candidate
/// never captured is in no mean, but `no_loss` counts it as lost.
#[test]
fn no_loss_counts_a_query_the_candidate_stopped_capturing() {
    let wd = Workdir::new("compare_skip_no_loss");
    wd.write(
        "labels.jsonl",
        text(&[
            r#"{"query_id": "q1", "relevant": ["a"], "language": "de"}"#.to_string(),
            r#"{"query_id": "q2", "relevant": ["b"], "language": "de"}"#.to_string(),
        ]),
    );
    wd.write(
        "base.jsonl",
        text(&[
            r#"{"query_id": "q1", "results": ["a"]}"#.to_string(),
            r#"{"query_id": "q2", "results": ["b"]}"#.to_string(),
        ]),
    );
    wd.write(
        "cand.jsonl",
        text(&[r#"{"query_id": "q1", "results": ["a"]}"#.to_string()]),
    );
    for (out, logs) in [("base", "base.jsonl"), ("cand", "cand.jsonl")] {
        wd.rgrade(&[
            "grade",
            "--labels",
            "labels.jsonl",
            "-k",
            "1",
            "--missing",
            "skip",
            "-q",
            "-o",
            out,
            logs,
        ])
        .expect_code(0);
    }
    wd.write(
        "rules.toml",
        "[[rule]]\nname = \"de\"\nlanguage = \"de\"\nmetric = \"recall@1\"\nno_loss = true\n\n\
         [[rule]]\nname = \"q2 only\"\nquery = \"q2\"\nmetric = \"recall@1\"\nno_loss = true\n",
    );
    let run = compare(&wd, &["base", "cand", "--rules", "rules.toml", "-o", "cmp"]);
    run.expect_code(1);
    for needle in ["FAIL  de:", "1 query not captured by the candidate: q2"] {
        assert!(run.stdout.contains(needle), "{needle}\n{run}");
    }
    let gate = wd.read_json("cmp/gate.json");
    for rule in gate["rules"].as_array().expect("rules") {
        assert_eq!(rule["passed"], Value::Bool(false), "{rule:#}");
        assert_eq!(rule["value"].as_f64(), Some(1.0), "{rule:#}");
    }
}

/// Hand-edited or concatenated outputs: a summary.json without cutoffs,
/// a query listed twice in a stage, and statistics with nothing to draw.
#[test]
fn malformed_outputs_and_empty_statistics_are_refused() {
    let wd = graded_cases("compare_malformed");
    let summary = wd.read_text("base/summary.json");
    let mut parsed: Value = serde_json::from_str(&summary).unwrap();
    parsed["settings"]["k"] = serde_json::json!([]);
    fs::create_dir_all(wd.path("nok")).unwrap();
    fs::copy(wd.path("base/per_query.csv"), wd.path("nok/per_query.csv")).unwrap();
    wd.write("nok/summary.json", parsed.to_string());
    expect_refusal(&wd, &["nok", "cand"], &["nok/summary.json", "settings.k"]);

    let per_query = wd.read_text("base/per_query.csv");
    let first_row = per_query.lines().nth(1).unwrap().to_string();
    fs::create_dir_all(wd.path("dup")).unwrap();
    fs::copy(wd.path("base/summary.json"), wd.path("dup/summary.json")).unwrap();
    wd.write("dup/per_query.csv", format!("{per_query}{first_row}\n"));
    expect_refusal(
        &wd,
        &["dup", "cand"],
        &["dup/per_query.csv", "has two rows"],
    );

    for option in ["--permutations", "--bootstrap"] {
        compare(&wd, &["base", "cand", option, "0"])
            .expect_code(2)
            .expect_stderr(&[option, "at least 1"]);
    }
}

/// A rerun into the same directory without rules removes the earlier
/// gate.json: a CI job must never read an old verdict as this run's.
#[test]
fn a_rerun_without_rules_leaves_no_old_gate() {
    let wd = graded_cases("compare_rerun_gate");
    wd.write(
        "rules.toml",
        "[[rule]]\nname = \"any\"\nmetric = \"recall@3\"\nmin = 0.0\n",
    );
    compare(&wd, &["base", "cand", "--rules", "rules.toml", "-o", "cmp"]).expect_code(0);
    assert!(wd.exists("cmp/gate.json"));
    compare(&wd, &["base", "cand", "-o", "cmp"]).expect_code(0);
    assert!(
        !wd.exists("cmp/gate.json"),
        "an earlier run's gate.json is left"
    );
    assert!(wd.exists("cmp/comparison.csv"));
}
