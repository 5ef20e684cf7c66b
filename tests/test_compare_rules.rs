//! Acceptance rules of `rgrade compare --rules`: every kind passing and
//! failing with the value and limit gate.json reports, no_significant_loss on
//! a significant loss only, no_loss on a query the candidate stopped
//! capturing, mistaken rules refused (exit 2), and no old gate.json left.

use serde_json::Value;

use crate::util::compare::{compare, exact_p, expect_refusal, grade, graded_cases};
use crate::util::{assert_cell, text, Workdir};

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
    // Every delta -0.5: nothing tells the spread, so no interval.
    assert_eq!((&*row["ci_low"], &*row["ci_high"]), ("", ""));
    assert!(detail.contains("no 95% CI: all deltas equal"), "{detail}");
    assert!(detail.contains("Holm family of 1 metric"), "{detail}");

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
    // One permutation over every metric: Holm's adjustment caps at 1.
    let args = [
        "base",
        "cand",
        "--rules",
        "rules.toml",
        "--permutations",
        "1",
    ];
    compare(&wd, &args).expect_code(2).expect_stderr(&[
        "in the Holm family the smallest adjusted p-value is 1.0000,",
        "raise --permutations",
    ]);
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

/// Rules that cannot be checked as written exit 2 naming the file and the
/// rule, never a silent pass: an unknown metric, query, task, language or
/// stage; two checks or none; a misspelt key; no rule at all.
#[test]
fn mistaken_rules_are_refused() {
    let wd = graded_cases("compare_refused_rules");
    let cases: [(&str, &str, &[&str]); 14] = [
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
        (
            "limit not a number",
            "metric = \"recall@3\"\nmin = nan",
            &["min = NaN is not a finite number"],
        ),
        (
            "infinite limit",
            "metric = \"latency_p95_ms\"\nmax = inf",
            &["max = inf is not a finite number"],
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
