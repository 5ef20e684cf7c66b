//! `rgrade compare` end to end, through the binary: the comparison story
//! shipped in `data-samples/compare/` (byte for byte, recomputed from both
//! per_query.csv files, the same whatever the thread count), a failed gate
//! that a closed stdout cannot hide, and the inputs compare refuses (exit 2).

use std::collections::{BTreeSet, HashMap};
use std::fs;
use std::path::Path;

use serde_json::{json, Value};

use crate::util::compare::{
    assert_sorted_worst_first, cases_labels, compare, expect_refusal, grade, graded_cases,
};
use crate::util::{
    assert_cell, assert_same_lines, assert_text, percentile, relist, repo_path, text, Run, Table,
    Workdir, RUN_TIMEOUT,
};

/// The comparison sample, relative to the repository's top.
const SAMPLE: &str = "data-samples/compare";

/// The metrics data-samples/compare/README.md's compare command names.
const SAMPLE_METRICS: &str = "recall@5,recall@10,rr@10,ndcg@10";

/// `path` as a command-line argument.
fn arg(path: &Path) -> String {
    path.display().to_string()
}

// ---------------------------------------------------------------------
// The shipped sample: data-samples/compare/
// ---------------------------------------------------------------------

/// data-samples/compare/README.md's grade commands, run in `wd` with the
/// same relative output directories (`out/baseline`, `out/candidate`), so
/// that compare's stdout names the same files as `expected/stdout.txt`.
fn grade_sample(wd: &Workdir) {
    let labels = arg(&repo_path("data-samples/compare/labels.jsonl"));
    for (out, logs) in [
        ("out/baseline", "data-samples/realistic/logs"),
        ("out/candidate", "data-samples/compare/candidate"),
    ] {
        let logs = arg(&repo_path(logs));
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
    let rules = arg(&repo_path("data-samples/compare/rules.toml"));
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
        let want = fs::read(repo_path(&format!("{SAMPLE}/expected/{file}")))
            .unwrap_or_else(|e| panic!("cannot read expected/{file}: {e}"));
        assert_same_lines(
            &format!("{file} against {SAMPLE}/expected/{file} {hint}"),
            &wd.read(&format!("out/compare/{file}")),
            &want,
        );
    }
    let want_stdout = fs::read_to_string(repo_path(&format!("{SAMPLE}/expected/stdout.txt")))
        .expect("read expected/stdout.txt");
    assert_same_lines(
        &format!("stdout against {SAMPLE}/expected/stdout.txt {hint}"),
        run.stdout.as_bytes(),
        want_stdout.as_bytes(),
    );
    let readme =
        fs::read_to_string(repo_path(&format!("{SAMPLE}/README.md"))).expect("read README.md");
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
            (
                "held-out test split: recall@10 does not drop significantly",
                true
            ),
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
        run.stdout.contains("gate: FAIL (2 of 6 rules failed)"),
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
    let p95 = percentile(&latencies, 0.95);
    let got = rule(2)["value"].as_f64().expect("latency value");
    assert!((got - p95).abs() < 1e-9, "p95 {got}, recomputed {p95}");
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
            ("split", "*"),
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
        ("split", "*"),
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
/// two; another seed moves only the p-values, and only a little (10,000
/// permutations: a standard error under 0.005).
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
        // The intervals draw nothing at random.
        for column in ["ci_low", "ci_high", "holm_family"] {
            assert_eq!(a[column], b[column], "{column}: {a:?} vs {b:?}");
        }
    }
    assert!(p_moved > 0, "--seed 1 gave the very p-values of seed 0");
}

/// A reader that closes stdout before compare writes (`rgrade compare ...
/// | false`) must not turn a failed gate into success.
#[test]
fn a_closed_stdout_pipe_keeps_a_failed_gate() {
    let wd = Workdir::new("compare_closed_pipe");
    grade_sample(&wd);
    let rules = arg(&repo_path("data-samples/compare/rules.toml"));
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

// ---------------------------------------------------------------------
// Refusals
// ---------------------------------------------------------------------

/// The same judgments in another order and another file compare: labels
/// are checked by what they judge, not by their file's bytes.
#[test]
fn the_same_judgments_in_another_order_compare() {
    let wd = graded_cases("compare_resorted_labels");
    let labels = wd.read_text("labels.jsonl");
    let mut lines: Vec<&str> = labels.lines().collect();
    lines.reverse();
    wd.write("resorted/labels.jsonl", text(&lines));
    wd.rgrade(&[
        "grade",
        "--labels",
        "resorted/labels.jsonl",
        "-k",
        "3",
        "-q",
        "-o",
        "resorted_out",
        "cand.jsonl",
    ])
    .expect_code(0);
    compare(&wd, &["base", "resorted_out", "-o", "compared"]).expect_code(0);
    assert_eq!(wd.read("compared/comparison.csv"), {
        compare(&wd, &["base", "cand", "-o", "compared_same_file"]).expect_code(0);
        wd.read("compared_same_file/comparison.csv")
    });
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
        &["different cutoffs", "-k 3 vs -k 3,5"],
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

/// Hand-edited or concatenated outputs: a summary.json without cutoffs,
/// a query listed twice in a stage, and statistics with nothing to draw.
#[test]
fn malformed_outputs_and_empty_statistics_are_refused() {
    let wd = graded_cases("compare_malformed");
    let summary = wd.read_text("base/summary.json");
    let mut parsed: Value = serde_json::from_str(&summary).unwrap();
    parsed["settings"]["k"] = serde_json::json!([]);
    copy_output(&wd, "base", "nok");
    wd.write("nok/summary.json", parsed.to_string());
    expect_refusal(&wd, &["nok", "cand"], &["nok/summary.json", "settings.k"]);

    // A per_query.csv that is not the one summary.json lists is refused;
    // one that is listed is still read with care.
    let per_query = wd.read_text("base/per_query.csv");
    let first_row = per_query.lines().nth(1).unwrap().to_string();
    let doubled = format!("{per_query}{first_row}\n");
    copy_output(&wd, "base", "dup");
    wd.write("dup/per_query.csv", &doubled);
    expect_refusal(
        &wd,
        &["dup", "cand"],
        &["dup/per_query.csv", "does not match", "summary.json"],
    );
    relist(&wd, "dup", &doubled);
    expect_refusal(
        &wd,
        &["dup", "cand"],
        &["dup/per_query.csv", "has two rows"],
    );

    // A metric cell outside [0, 1] is no grade output, listed or not.
    let header = per_query.lines().next().unwrap();
    let recall = header.split(',').position(|c| c == "recall@3").unwrap();
    for bad in ["-7", "1e308", "1.5"] {
        let mut cells: Vec<&str> = first_row.split(',').collect();
        cells[recall] = bad;
        let edited = per_query.replacen(&first_row, &cells.join(","), 1);
        copy_output(&wd, "base", "bad");
        relist(&wd, "bad", &edited);
        expect_refusal(
            &wd,
            &["bad", "cand"],
            &["bad/per_query.csv:2", bad, "not a metric value"],
        );
    }

    for option in ["--permutations", "--bootstrap"] {
        compare(&wd, &["base", "cand", option, "0"])
            .expect_code(2)
            .expect_stderr(&[option, "at least 1"]);
    }
}

/// Every file summary.json lists must be there as graded, not only
/// per_query.csv: a changed or missing aggregates.csv or rejects.jsonl
/// means the directory holds no complete result.
#[test]
fn a_directory_whose_listed_files_changed_is_refused() {
    let wd = graded_cases("compare_incomplete");
    compare(&wd, &["base", "cand"]).expect_code(0);
    let listed: Value = serde_json::from_str(&wd.read_text("base/summary.json")).unwrap();
    let names: Vec<&str> = listed["outputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|output| output["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"aggregates.csv"), "{names:?}");
    for name in names {
        copy_output(&wd, "base", "edited");
        let path = format!("edited/{name}");
        wd.write(&path, format!("{} ", wd.read_text(&path)));
        expect_refusal(&wd, &["edited", "cand"], &[&path, "does not match"]);
        fs::remove_file(wd.path(&path)).unwrap();
        // Without its per_query.csv, a directory is no grade output at all.
        let missing = if name == "per_query.csv" {
            "not found"
        } else {
            "cannot open"
        };
        expect_refusal(&wd, &["edited", "cand"], &[&path, missing]);
        fs::remove_dir_all(wd.path("edited")).unwrap();
    }
}

/// The evidence of the biggest losses reads both per_query.csv files a
/// second time: one graded again in between is refused, never read as
/// the rows the comparison paired.
#[test]
fn a_grading_redone_while_compare_reads_it_is_refused() {
    let wd = graded_cases("compare_regraded");
    let args = ["compare", "base", "cand", "-o", "out"];
    wd.rgrade_paused(&args, || {}).expect_code(0);
    assert!(
        !wd.read_json("out/comparison.json")["biggest_losses"]
            .as_array()
            .unwrap()
            .is_empty(),
        "no loss, so no second reading to test"
    );
    let run = wd.rgrade_paused(&args, || grade(&wd, "3", "cand", "base.jsonl"));
    run.expect_code(2)
        .expect_stderr(&["cand/per_query.csv: changed while it was being read"]);
    assert!(!wd.exists("out/comparison.json"), "{run}");
}

/// Copy the grade output directory `from` to `to`.
fn copy_output(wd: &Workdir, from: &str, to: &str) {
    fs::create_dir_all(wd.path(to)).unwrap();
    for entry in fs::read_dir(wd.path(from)).unwrap() {
        let entry = entry.unwrap();
        fs::copy(entry.path(), wd.path(to).join(entry.file_name())).unwrap();
    }
}

// ---------------------------------------------------------------------
// stdout
// ---------------------------------------------------------------------

/// The "lost most" lines of compare's stdout for labels `labels` (one
/// line per query) where the candidate loses q1 and q2's only relevant
/// document.
fn lost_most_lines(wd: &Workdir, labels: &[&str]) -> Vec<String> {
    wd.write("labels.jsonl", text(labels));
    let logs = |lost: &[&str]| {
        let records: Vec<String> = ["q1", "q2", "q3"]
            .iter()
            .map(|q| {
                let found = if lost.contains(q) { "x" } else { "d" };
                json!({"query_id": q, "results": [format!("{found}_{q}")]}).to_string()
            })
            .collect();
        text(&records)
    };
    wd.write("base.jsonl", logs(&[]));
    wd.write("cand.jsonl", logs(&["q1", "q2"]));
    for side in ["base", "cand"] {
        grade(wd, "3", &format!("out/{side}"), &format!("{side}.jsonl"));
    }
    let run = compare(wd, &["out/base", "out/cand", "--metrics", "recall@3"]);
    run.expect_code(0);
    let lines = run.stdout.lines().skip_while(|l| !l.contains("lost most"));
    lines
        .skip(1)
        .take_while(|l| l.starts_with("    "))
        .map(|l| l.trim().to_string())
        .collect()
}

/// A `(none)` task or language that every query has lists the overall
/// set's losers once: as `all` when neither tasks nor languages are
/// labeled, under the tasks alone when only they are.
#[test]
fn lost_most_leaves_out_none_slices_that_repeat_the_overall_set() {
    let wd = Workdir::new("compare_lost_most_none");
    let losses = "q1 1.000 -> 0.000, q2 1.000 -> 0.000";
    let plain = [
        r#"{"query_id": "q1", "relevant": ["d_q1"]}"#,
        r#"{"query_id": "q2", "relevant": ["d_q2"]}"#,
        r#"{"query_id": "q3", "relevant": ["d_q3"]}"#,
    ];
    assert_eq!(lost_most_lines(&wd, &plain), [format!("all: {losses}")]);
    let with_tasks = [
        r#"{"query_id": "q1", "relevant": ["d_q1"], "task": "a"}"#,
        r#"{"query_id": "q2", "relevant": ["d_q2"], "task": "b"}"#,
        r#"{"query_id": "q3", "relevant": ["d_q3"]}"#,
    ];
    // Some queries have no task: task=(none) is a slice of its own.
    assert_eq!(
        lost_most_lines(&wd, &with_tasks),
        ["task=a: q1 1.000 -> 0.000", "task=b: q2 1.000 -> 0.000"]
    );
}

/// Labels with tasks and no language: the page draws each slice of
/// queries once (the language `(none)` and each task × `(none)` are the
/// overall set and the tasks again) and says so, while comparison.csv keeps
/// every slice. A reranker that moves q1's relevant document from rank 1
/// to rank 2 loses it from no top 3: the lost cell says the loss is within
/// the top 1, where recall@1 measures it.
#[test]
fn the_page_draws_a_slice_once_and_places_a_shallow_loss() {
    let wd = Workdir::new("compare_page_repeats_and_shallow_loss");
    wd.write(
        "labels.jsonl",
        text(&[
            r#"{"query_id": "q1", "relevant": ["d1"], "task": "a"}"#,
            r#"{"query_id": "q2", "relevant": ["d2"], "task": "a"}"#,
            r#"{"query_id": "q3", "relevant": ["d3"], "task": "b"}"#,
        ]),
    );
    let logs = |q1: [&str; 2]| {
        let ranking = |q: &str, results: [&str; 2]| json!({"query_id": q, "results": results});
        text(&[
            ranking("q1", q1).to_string(),
            ranking("q2", ["d2", "x"]).to_string(),
            ranking("q3", ["d3", "x"]).to_string(),
        ])
    };
    wd.write("base.jsonl", logs(["d1", "x"]));
    wd.write("cand.jsonl", logs(["x", "d1"]));
    grade(&wd, "1,3", "base", "base.jsonl");
    grade(&wd, "1,3", "cand", "cand.jsonl");
    compare(
        &wd,
        &["base", "cand", "--metrics", "recall@1", "-q", "-o", "out"],
    )
    .expect_code(0);
    let page = wd.read_text("out/report.html");
    let repeated =
        "Drawn once, as the broader slice of the same queries: (none), a × (none), b × (none).";
    assert!(page.contains(repeated), "{page}");
    assert!(
        page.contains("none from the top 3; the loss is within the top 1"),
        "{page}"
    );
    let slices: BTreeSet<(String, String)> = (wd.read_csv("out/comparison.csv").rows.iter())
        .map(|row| (row[1].clone(), row[2].clone()))
        .collect();
    assert_eq!(slices.len(), 6, "{slices:?}");
}
