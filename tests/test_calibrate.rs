//! `grade --calibrate HUMAN`, through the binary: on the judges sample,
//! every calibrated mean and interval equals prediction-powered inference
//! computed here, in its centred textbook form, from the per-query values
//! of two plain gradings (under the judge's key and under the human key);
//! and the edges: too few human-graded queries, human queries the judge's
//! key lacks, standard input, a shard.

use std::collections::HashMap;
use std::io::Write as _;

use statrs::distribution::{ContinuousCDF, StudentsT};

use crate::util::{repo_path, Table, Workdir};

fn judges(file: &str) -> String {
    repo_path(&format!("data-samples/judges/{file}"))
        .display()
        .to_string()
}

/// The mean and sample variance (or covariance) of paired values.
fn mean(x: &[f64]) -> f64 {
    x.iter().sum::<f64>() / x.len() as f64
}

fn cov(x: &[f64], y: &[f64]) -> f64 {
    let (mx, my) = (mean(x), mean(y));
    let s: f64 = x.iter().zip(y).map(|(a, b)| (a - mx) * (b - my)).sum();
    s / (x.len() as f64 - 1.0)
}

/// Student's t 97.5% quantile with `df` degrees of freedom.
fn t_975(df: f64) -> f64 {
    StudentsT::new(0.0, 1.0, df).unwrap().inverse_cdf(0.975)
}

/// A query's value under the judge's key and the human key, `None`
/// without an answer.
type Pair = (Option<f64>, Option<f64>);

/// θ, the interval's ends (clamped to [0, 1]) and λ as docs/guide.md
/// defines them, from the judge's values over the queries it alone grades
/// (`alone`) and both values over the human-graded ones (`None`: no
/// answer under that key).
fn ppi(alone: &[Option<f64>], paired: &[Pair]) -> [f64; 4] {
    let (big, n) = (alone.len() as f64, paired.len() as f64);
    let value = |v: &Option<f64>| v.unwrap_or(0.0);
    let answered = |v: &Option<f64>| f64::from(u8::from(v.is_some()));
    let judged = |g: &dyn Fn(&Option<f64>) -> f64| mean(&alone.iter().map(g).collect::<Vec<_>>());
    let both = |g: &dyn Fn(&Pair) -> f64| paired.iter().map(g).collect::<Vec<_>>();
    let ratio = |lambda: f64| {
        let total = lambda * judged(&value) + mean(&both(&|(f, y)| value(y) - lambda * value(f)));
        let share =
            lambda * judged(&answered) + mean(&both(&|(f, y)| answered(y) - lambda * answered(f)));
        (total / share, share)
    };
    let pseudo = |v: &Option<f64>, theta: f64| v.map_or(0.0, |x| x - theta);
    let (theta0, _) = ratio(0.0);
    let u0 = both(&|(_, y)| pseudo(y, theta0));
    let v0 = both(&|(f, _)| pseudo(f, theta0));
    let alone0: Vec<f64> = alone.iter().map(|f| pseudo(f, theta0)).collect();
    let lambda =
        (cov(&u0, &v0) / n / (cov(&alone0, &alone0) / big + cov(&v0, &v0) / n)).clamp(0.0, 1.0);
    let (theta, share) = ratio(lambda);
    let rest = both(&|(f, y)| pseudo(y, theta) - lambda * pseudo(f, theta));
    let alone_v: Vec<f64> = alone.iter().map(|f| pseudo(f, theta)).collect();
    let p = 1.0 / (n + 2.0);
    let variance = (lambda * lambda * cov(&alone_v, &alone_v) / big
        + cov(&rest, &rest).max(p * (1.0 - p)) / n)
        / (share * share);
    let half = t_975(n - 1.0) * variance.sqrt();
    let [theta, low, high] = [theta, theta - half, theta + half].map(|x| x.clamp(0.0, 1.0));
    [theta, low, high, lambda]
}

/// (run, query) → the per_query.csv row of every query in the
/// calibration: those that count in the means, and those that would but
/// for having no answer.
fn calibrated_rows(table: &Table) -> HashMap<(String, String), HashMap<String, String>> {
    (table.records().into_iter())
        .filter(|r| {
            r["status"] != "missing" && (r["status"] != "no_answer" || r["captures"] != "0")
        })
        .map(|r| ((r["run"].clone(), r["query_id"].clone()), r))
        .collect()
}

#[test]
fn calibrated_means_equal_the_textbook_form_on_the_judges_sample() {
    let wd = Workdir::new("calibrate_sample");
    let [judge, human, logs] = ["judge.jsonl", "human.jsonl", "logs.jsonl"].map(judges);
    for (labels, out) in [(&judge, "judge"), (&human, "human")] {
        (wd.rgrade(&[
            "grade", "--labels", labels, "-k", "10", "-q", "-o", out, &logs,
        ]))
        .expect_code(0);
    }
    let run = wd.rgrade(&[
        "grade",
        "--labels",
        &judge,
        "--calibrate",
        &human,
        "-k",
        "10",
        "-o",
        "calibrated",
        &logs,
    ]);
    run.expect_code(0);
    assert!(
        run.stdout.contains("means calibrated against")
            && run.stdout.contains("80 queries human-graded")
            && run.stdout.contains("judge's weight"),
        "{}",
        run.stdout
    );
    let f = calibrated_rows(&wd.read_csv("judge/per_query.csv"));
    let y = calibrated_rows(&wd.read_csv("human/per_query.csv"));
    let aggregates = wd.read_csv("calibrated/aggregates.csv");
    let (mut checked, mut too_few) = (0, 0);
    for row in aggregates.records() {
        let in_set = |r: &HashMap<String, String>| {
            r["run"] == row["run"]
                && ["*", r["task"].as_str()].contains(&row["task"].as_str())
                && ["*", r["language"].as_str()].contains(&row["language"].as_str())
        };
        let set: Vec<&(String, String)> = f.keys().filter(|key| in_set(&f[*key])).collect();
        let paired: Vec<&(String, String)> = set
            .iter()
            .copied()
            .filter(|key| y.contains_key(*key))
            .collect();
        assert_eq!(row["calibration_queries"], paired.len().to_string());
        for metric in ["recall@10", "rr@10", "ndcg@10", "ap@10"] {
            let cells = ["", "_low", "_high", "_weight"]
                .map(|end| &row[&format!("{metric}_calibrated{end}")]);
            if paired.len() < 10 {
                assert_eq!(cells, [""; 4].each_ref(), "{row:?}");
                too_few += 1;
                continue;
            }
            let value = |rows: &HashMap<_, HashMap<String, String>>, key| {
                let row: &HashMap<String, String> = &rows[key];
                (row["status"] != "no_answer").then(|| row[metric].parse::<f64>().unwrap())
            };
            let alone: Vec<Option<f64>> = (set.iter())
                .filter(|key| !y.contains_key(**key))
                .map(|key| value(&f, *key))
                .collect();
            let both: Vec<Pair> = (paired.iter())
                .map(|key| (value(&f, *key), value(&y, *key)))
                .collect();
            let want = ppi(&alone, &both);
            for (cell, want) in cells.iter().zip(want) {
                let got: f64 = cell.parse().unwrap();
                assert!(
                    (got - want).abs() < 1e-12,
                    "{metric}: {got} vs {want} in {row:?}"
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 4 * 4 * 10, "{checked} calibrated means checked");
    assert!(too_few > 0, "no set with too few human-graded queries");
    // The guide's figures: bm25's rr@10 0.625 alone, 0.513 [0.433, 0.593].
    let bm25 = &aggregates.records()[0];
    let rounded = |column: &str| format!("{:.3}", bm25[column].parse::<f64>().unwrap());
    assert_eq!(
        [
            "rr@10",
            "rr@10_calibrated",
            "rr@10_calibrated_low",
            "rr@10_calibrated_high"
        ]
        .map(rounded),
        ["0.625", "0.513", "0.433", "0.593"]
    );
    let summary = wd.read_json("calibrated/summary.json");
    assert_eq!(summary["calibration"]["no_answer_by_humans"], 4);
    assert_eq!(summary["calibration"]["shared_queries"], 80);
    assert_eq!(summary["calibration"]["min_queries"], 10);
    assert_eq!(summary["calibration"]["labels"]["queries"], 80);
    // Without --calibrate, aggregates.csv keeps its columns.
    let plain = wd.read_csv("judge/aggregates.csv");
    assert!(!plain.header.iter().any(|c| c.contains("calibrat")));
}

/// Twelve queries, task a or b; the judge calls each query's first result
/// relevant, the humans only for even queries.
fn small(wd: &Workdir, human_queries: usize) {
    let mut judge = String::new();
    let mut human = String::new();
    let mut logs = String::new();
    for q in 0..12 {
        let task = if q < 6 { "a" } else { "b" };
        judge.push_str(&format!(
            "{{\"query_id\": \"q{q}\", \"relevant\": {{\"d{q}\": 1}}, \"task\": \"{task}\"}}\n"
        ));
        if q < human_queries {
            let grade = u8::from(q % 2 == 0);
            human.push_str(&format!(
                "{{\"query_id\": \"q{q}\", \"relevant\": {{\"d{q}\": {grade}, \"e{q}\": 1}}}}\n"
            ));
        }
        logs.push_str(&format!(
            "{{\"query_id\": \"q{q}\", \"results\": [\"d{q}\", \"x\"]}}\n"
        ));
    }
    // A reviewed query the judge's key does not label.
    human.push_str("{\"query_id\": \"elsewhere\", \"relevant\": [\"z\"]}\n");
    wd.write("judge.jsonl", judge);
    wd.write("human.jsonl", human);
    wd.write("logs.jsonl", logs);
}

/// [`small`] graded at k = 1 under the judge's key, calibrated, into `out`.
fn grade_small(wd: &Workdir) -> crate::util::Run {
    wd.rgrade(&[
        "grade",
        "--labels",
        "judge.jsonl",
        "--calibrate",
        "human.jsonl",
        "-k",
        "1",
        "-o",
        "out",
        "logs.jsonl",
    ])
}

#[test]
fn too_few_human_queries_leave_the_cells_empty_and_say_so() {
    let wd = Workdir::new("calibrate_too_few");
    small(&wd, 9);
    let run = grade_small(&wd);
    run.expect_code(0);
    assert!(
        run.stdout
            .contains("9 queries human-graded, too few to calibrate"),
        "{}",
        run.stdout
    );
    let overall = &wd.read_csv("out/aggregates.csv").records()[0];
    assert_eq!(overall["calibration_queries"], "9");
    assert_eq!(overall["recall@1_calibrated"], "");
    assert_eq!(
        wd.read_json("out/summary.json")["calibration"]["shared_queries"],
        9
    );
}

#[test]
fn a_hand_computed_calibration() {
    let wd = Workdir::new("calibrate_by_hand");
    small(&wd, 12);
    grade_small(&wd).expect_code(0);
    // rr@1 = hit@1: the judge scores every query 1, the humans the even
    // ones (q0, q2, ... each ranks its relevant d first): f is constant, so
    // λ = 0 and θ is the human mean, 1/2, ± t₁₁·sqrt(Var/12), Var = 3/11
    // (above the floor (1/14)(13/14)).
    let overall = &wd.read_csv("out/aggregates.csv").records()[0];
    assert_eq!(overall["calibration_queries"], "12");
    let half = t_975(11.0) * (3.0_f64 / 11.0 / 12.0).sqrt();
    for (column, want) in [
        ("rr@1_calibrated", 0.5),
        ("rr@1_calibrated_low", 0.5 - half),
        ("rr@1_calibrated_high", 0.5 + half),
    ] {
        let got: f64 = overall[column].parse().unwrap();
        assert!((got - want).abs() < 1e-12, "{column}: {got} vs {want}");
    }
    // Each task holds six human-graded queries: too few.
    let task_a = &wd.read_csv("out/aggregates.csv").records()[1];
    assert_eq!(
        (task_a["task"].as_str(), task_a["rr@1_calibrated"].as_str()),
        ("a", "")
    );
}

/// Queries the humans find no answer for are among the n human-graded
/// ones, each adding 0 to both of its ratio's human terms, and never in
/// the judge-only term (docs/guide.md: "corrected like any other"): 24
/// queries the judge answers, its relevant document ranked second for
/// every fourth; the humans grade q0..q11 and find no answer for q0, q3,
/// q6, q9.
#[test]
fn queries_the_humans_find_no_answer_for_are_paired_not_the_judges_alone() {
    let wd = Workdir::new("calibrate_no_answer");
    let (mut judge, mut human, mut logs) = (String::new(), String::new(), String::new());
    for q in 0..24 {
        judge.push_str(&format!(
            "{{\"query_id\": \"q{q}\", \"relevant\": [\"d{q}\"]}}\n"
        ));
        if q < 12 && q % 3 == 0 {
            let none = format!("{{\"query_id\": \"q{q}\", \"relevant\": {{\"d{q}\": 0}}}}\n");
            human.push_str(&none);
        } else if q < 12 {
            let grade = q % 2;
            human.push_str(&format!(
                "{{\"query_id\": \"q{q}\", \"relevant\": {{\"d{q}\": {grade}, \"e{q}\": 1}}}}\n"
            ));
        }
        let ranking = if q % 4 == 0 {
            "\"x\", \"d\""
        } else {
            "\"d\", \"x\""
        };
        logs.push_str(&format!(
            "{{\"query_id\": \"q{q}\", \"results\": [{}]}}\n",
            ranking.replace("\"d\"", &format!("\"d{q}\""))
        ));
    }
    wd.write("judge.jsonl", judge);
    wd.write("human.jsonl", human);
    wd.write("logs.jsonl", logs);
    let args = [
        "grade",
        "--labels",
        "judge.jsonl",
        "--calibrate",
        "human.jsonl",
        "-k",
        "1",
        "-q",
        "-o",
        "out",
        "logs.jsonl",
    ];
    wd.rgrade(&args).expect_code(0);
    // Paired (f, y), y None where the humans find no answer: q0 (0, -),
    // q1 (1, 1/2), q2 (1, 0), q3 (1, -), q4 (0, 0), q5 (1, 1/2), q6 (1, -),
    // q7 (1, 1/2), q8 (0, 0), q9 (1, -), q10 (1, 0), q11 (1, 1/2); the
    // judge alone: q12..q23, f = 0 for q12, q16, q20, else 1. The humans'
    // own estimate is 2/8 = 1/4 (their 8 answered queries), the judge's 3/4.
    let judged = |q: usize| if q.is_multiple_of(4) { 0.0 } else { 1.0 };
    let paired: Vec<Pair> = (0..12)
        .map(|q: usize| {
            let f = judged(q);
            let y = match (q % 3, q % 4, q % 2) {
                (0, _, _) => None,
                (_, 0, _) => Some(0.0),
                (_, _, 1) => Some(0.5),
                _ => Some(0.0),
            };
            (Some(f), y)
        })
        .collect();
    let alone: Vec<Option<f64>> = (12..24).map(|q: usize| Some(judged(q))).collect();
    let want = ppi(&alone, &paired);
    let overall = &wd.read_csv("out/aggregates.csv").records()[0];
    assert_eq!(overall["calibration_queries"], "12");
    let cells = ["", "_low", "_high", "_weight"].map(|end| format!("recall@1_calibrated{end}"));
    for (column, want) in cells.iter().zip(want) {
        let got: f64 = overall[column].parse().unwrap();
        assert!((got - want).abs() < 1e-12, "{column}: {got} vs {want}");
    }
    // θ stays at the humans' 1/4, the judge trusted with λ = 1/9.
    assert!((want[0] - 0.25).abs() < 1e-12 && (want[3] - 1.0 / 9.0).abs() < 1e-12);
    let summary = wd.read_json("out/summary.json");
    assert_eq!(summary["calibration"]["no_answer_by_humans"], 4);
}

#[test]
fn a_human_key_of_no_query_in_common_is_refused() {
    let wd = Workdir::new("calibrate_nothing_shared");
    small(&wd, 12);
    wd.write(
        "other.jsonl",
        "{\"query_id\": \"z1\", \"relevant\": [\"d1\"]}\n",
    );
    let args = [
        "grade",
        "--labels",
        "judge.jsonl",
        "--calibrate",
        "other.jsonl",
        "-q",
        "-o",
        "out",
        "logs.jsonl",
    ];
    // No result to give, whether or not -q hides the notes.
    wd.rgrade(&args).expect_code(2).expect_stderr(&[
        "--calibrate other.jsonl: labels none of the queries of --labels, so nothing can be \
         calibrated",
    ]);
    assert!(!wd.exists("out/summary.json"));
}

#[test]
fn logs_that_change_between_the_two_passes_are_refused() {
    let wd = Workdir::new("calibrate_changed");
    small(&wd, 12);
    let args = [
        "grade",
        "--labels",
        "judge.jsonl",
        "--calibrate",
        "human.jsonl",
        "-k",
        "1",
        "-q",
        "logs.jsonl",
    ];
    wd.rgrade_paused(&args, || {}).expect_code(0);
    // Appended to between the human key's pass and the judge's: the
    // calibration would pair the judge's means of other logs.
    let run = wd.rgrade_paused(&args, || {
        let mut log = std::fs::OpenOptions::new()
            .append(true)
            .open(wd.path("logs.jsonl"))
            .unwrap();
        log.write_all(b"{\"query_id\": \"q12\", \"results\": [\"x\"]}\n")
            .unwrap();
    });
    run.expect_code(2)
        .expect_stderr(&["logs.jsonl: changed while it was being graded; grade it again"]);
}

#[test]
fn standard_input_and_shards_are_refused() {
    let wd = Workdir::new("calibrate_refused");
    small(&wd, 12);
    let logs = wd.read("logs.jsonl");
    let run = wd.rgrade_stdin(
        &[
            "grade",
            "--labels",
            "judge.jsonl",
            "--calibrate",
            "human.jsonl",
            "-",
        ],
        &logs,
    );
    run.expect_code(2);
    assert!(
        run.stderr.contains("standard input can be read only once"),
        "{}",
        run.stderr
    );
    let run = wd.rgrade(&[
        "grade",
        "--labels",
        "judge.jsonl",
        "--calibrate",
        "missing.jsonl",
        "logs.jsonl",
    ]);
    run.expect_code(2);
    assert!(run.stderr.contains("missing.jsonl"), "{}", run.stderr);
    let run = wd.rgrade(&[
        "grade",
        "--labels",
        "judge.jsonl",
        "--calibrate",
        "human.jsonl",
        "--partial",
        "-o",
        "shard",
        "logs.jsonl",
    ]);
    run.expect_code(2);
    assert!(run.stderr.contains("--calibrate"), "{}", run.stderr);
}

#[test]
fn the_human_key_takes_its_own_reviewers_policy() {
    let wd = Workdir::new("calibrate_reviewers");
    let [judge, reviewers, logs] = ["judge.jsonl", "reviewers.jsonl", "logs.jsonl"].map(judges);
    let grade = |extra: &[&str]| {
        let mut args = vec!["grade", "--labels", &judge, "--calibrate", &reviewers, "-q"];
        args.extend(extra);
        args.push(&logs);
        wd.rgrade(&args)
    };
    // Three reviewers judge each pair: whose grade counts must be said,
    // with the option that says it for the human key; --reviewers is the
    // judge's key's, which names none.
    let unsaid = grade(&[]);
    unsaid.expect_code(2);
    assert!(
        (unsaid.stderr).contains("reviewers.jsonl:2: doc_id")
            && (unsaid.stderr)
                .contains("say whose grade counts with --calibrate-reviewers majority"),
        "{}",
        unsaid.stderr
    );
    let misplaced = grade(&["--reviewers", "majority"]);
    misplaced.expect_code(2);
    assert!(
        (misplaced.stderr).contains("--reviewers majority: no label names a reviewer"),
        "{}",
        misplaced.stderr
    );
    let absent = grade(&["--calibrate-reviewers", "nobody"]);
    absent.expect_code(2);
    assert!(
        (absent.stderr).contains("--calibrate-reviewers nobody: no label is by reviewer 'nobody'"),
        "{}",
        absent.stderr
    );
    grade(&["--calibrate-reviewers", "majority", "-o", "out"]).expect_code(0);
    let summary = wd.read_json("out/summary.json");
    assert_eq!(
        summary["calibration"]["labels"]["reviewers"]["policy"],
        "majority"
    );
    assert_eq!(summary["labels"].get("reviewers"), None);
}
