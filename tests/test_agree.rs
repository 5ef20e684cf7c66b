//! `rgrade agree` through the binary: two answer keys in different
//! formats, every figure computed by hand.

use std::io::Write as _;
use std::time::Duration;

use crate::util::{make_fifo, Run, Workdir};

/// Graded JSONL labels: q1 and q2 are judged by both keys, q3 by this one only.
const KEY_A: &str = r#"{"query_id": "q1", "relevant": {"d1": 2, "d2": 0, "d3": 1}, "task": "howto", "language": "en"}
{"query_id": "q2", "relevant": {"d1": 1, "d2": 1, "d3": 1}, "task": "faq", "language": "en"}
{"query_id": "q3", "relevant": ["d9"], "task": "faq", "language": "de"}
"#;

/// The same questions as TREC qrels, from another judge; q4 only here.
const KEY_B: &str = "q1 0 d1 2\nq1 0 d2 1\nq1 0 d4 3\nq2 0 d1 0\nq2 0 d2 1\nq2 0 d3 1\nq4 0 d1 1\n";

fn workdir(name: &str) -> Workdir {
    let wd = Workdir::new(name);
    wd.write("a.jsonl", KEY_A);
    wd.write("b.qrels", KEY_B);
    wd
}

fn close(value: &serde_json::Value, expected: f64) -> bool {
    value.as_f64().is_some_and(|v| (v - expected).abs() < 1e-12)
}

#[test]
fn two_keys_agree_as_computed_by_hand() {
    let wd = workdir("agree_by_hand");
    let run = wd.rgrade(&["agree", "a.jsonl", "b.qrels", "-o", "out"]);
    run.expect_code(0);
    let summary = wd.read_json("out/agreement.json");
    // Both judge q1/d1 (2, 2), q1/d2 (0, 1), q2/d1 (1, 0), q2/d2 (1, 1)
    // and q2/d3 (1, 1); only A judges q1/d3 and q3/d9; only B q1/d4 and q4/d1.
    for (field, value) in [
        ("queries_both", 2),
        ("queries_a_only", 1),
        ("queries_b_only", 1),
        ("pairs_both", 5),
        ("pairs_a_only", 2),
        ("pairs_b_only", 2),
    ] {
        assert_eq!(summary[field], value, "{field}: {summary}");
    }
    assert_eq!(summary["grades"], serde_json::json!([0, 1, 2]));
    assert_eq!(
        summary["confusion"],
        serde_json::json!([[0, 1, 0], [1, 2, 0], [0, 0, 1]])
    );
    // Relevance: 3 of 5 alike; each key says "relevant" 4 times in 5, so
    // chance agrees on 17/25: kappa = (15/25 - 17/25) / (8/25) = -0.25.
    assert!(close(&summary["relevance_kappa"], -0.25), "{summary}");
    // Grades: rows and columns 1, 3, 1; observed weight 2, expected 16/5:
    // kappa = 1 - 10/16.
    assert!(close(&summary["grade_kappa"], 0.375), "{summary}");
    // Unweighted: 3 of 5 alike against chance (1 + 9 + 1)/25: kappa =
    // (15 - 11) / (25 - 11) = 2/7. Quadratic: observed 2, expected
    // 20/5: kappa = 1/2.
    assert!(
        close(&summary["grade_kappa_unweighted"], 2.0 / 7.0),
        "{summary}"
    );
    assert!(close(&summary["grade_kappa_quadratic"], 0.5), "{summary}");
    // Ordinal alpha: coincidences [[0,2,0],[2,4,0],[0,0,2]], totals 2, 6,
    // 2 (n = 10); distances 0-1 and 1-2 are (8 - 4)^2 = 16, 0-2 is
    // (10 - 2)^2 = 64; observed 4 * 16, expected 2 * (192 + 256 + 192):
    // alpha = 1 - 9 * 64 / 1280 = 0.55.
    assert!(close(&summary["grade_alpha_ordinal"], 0.55), "{summary}");
    let slices = wd.read_csv("out/agreement_slices.csv");
    let overall = &slices.rows[0];
    let at = |name: &str| slices.header.iter().position(|h| h == name).unwrap();
    assert_eq!(overall[at("task")], "*");
    for field in [
        "grade_kappa_unweighted",
        "grade_kappa_quadratic",
        "grade_alpha_ordinal",
    ] {
        let cell: f64 = overall[at(field)].parse().unwrap();
        assert!(
            close(&summary[field], cell),
            "{field} of agreement_slices.csv"
        );
    }
    let outputs: Vec<&str> = (summary["outputs"].as_array().unwrap().iter())
        .map(|o| o["name"].as_str().unwrap())
        .collect();
    assert_eq!(outputs, ["agreement.csv", "agreement_slices.csv"]);
    assert!(
        run.stdout
            .contains("kappa on relevance (grade >= 1): -0.250"),
        "{run}"
    );

    // q1's relevant documents are d1, d3 under A and d1, d2, d4 under B:
    // a ranking of d3 and d1 has recall 1 under A and 1/3 under B. q2's
    // are d1, d2, d3 and d2, d3: d2 and d3 alone score 2/3 against 1.
    let pairs = wd.read_csv("out/agreement.csv");
    let q1 = [
        "q1",
        "d2",
        "howto",
        "en",
        "0",
        "1",
        "false",
        "true",
        "0.6666666666666666",
    ];
    let q2 = [
        "q2",
        "d1",
        "faq",
        "en",
        "1",
        "0",
        "true",
        "false",
        "0.3333333333333333",
    ];
    assert_eq!(pairs.rows, [q1, q2]);
    let slices = wd.read_csv("out/agreement_slices.csv");
    let names: Vec<(&str, &str)> = (slices.rows.iter())
        .map(|r| (r[0].as_str(), r[1].as_str()))
        .collect();
    assert_eq!(
        names,
        [
            ("*", "*"),
            ("faq", "*"),
            ("howto", "*"),
            ("*", "en"),
            ("faq", "en"),
            ("howto", "en")
        ]
    );
    // faq is q2 alone: A calls all three relevant, B two of them; chance
    // then agrees as often as the keys do, and kappa is 0.
    assert_eq!(slices.rows[1][2..7], ["1", "3", "2", "2", "0"]);
    // howto is q1: (2, 2) and (0, 1). On relevance B always says "yes":
    // chance agrees half the time, as the keys do (kappa 0). On grades,
    // observed weight 1 against expected 2: kappa 1/2.
    assert_eq!(slices.rows[2][2..8], ["1", "2", "1", "1", "0", "0.5"]);
}

#[test]
fn swapping_the_keys_transposes_the_matrix_and_keeps_kappa() {
    let wd = workdir("agree_swapped");
    wd.rgrade(&["agree", "a.jsonl", "b.qrels", "-o", "ab", "-q"])
        .expect_code(0);
    wd.rgrade(&["agree", "b.qrels", "a.jsonl", "-o", "ba", "-q"])
        .expect_code(0);
    let (ab, ba) = (
        wd.read_json("ab/agreement.json"),
        wd.read_json("ba/agreement.json"),
    );
    assert_eq!(
        ba["confusion"],
        serde_json::json!([[0, 1, 0], [1, 2, 0], [0, 0, 1]])
    );
    assert_eq!(
        (ab["pairs_a_only"].clone(), ab["queries_a_only"].clone()),
        (ba["pairs_b_only"].clone(), ba["queries_b_only"].clone())
    );
    for field in [
        "relevance_kappa",
        "grade_kappa",
        "grade_kappa_unweighted",
        "grade_kappa_quadratic",
        "grade_alpha_ordinal",
    ] {
        assert!(close(&ba[field], ab[field].as_f64().unwrap()), "{field}");
    }
}

#[test]
fn a_key_that_does_not_load_names_its_file_and_writes_nothing() {
    let wd = workdir("agree_bad_key");
    wd.write(
        "bad.jsonl",
        "{\"query_id\": \"q1\", \"relevant\": [\"d1\"]}\n{\"query_id\": \n",
    );
    let run = wd.rgrade(&["agree", "a.jsonl", "bad.jsonl", "-o", "out"]);
    run.expect_code(2);
    assert!(run.stderr.contains("bad.jsonl:2"), "{run}");
    assert!(!wd.exists("out/agreement.json"));
    let run = wd.rgrade(&["agree", "a.jsonl", "missing.qrels"]);
    run.expect_code(2);
    assert!(run.stderr.contains("missing.qrels"), "{run}");
}

#[test]
fn a_directory_holding_a_grading_is_refused() {
    let wd = workdir("agree_grade_dir");
    wd.write(
        "logs.jsonl",
        "{\"query_id\": \"q1\", \"results\": [\"d1\"]}\n",
    );
    wd.rgrade(&[
        "grade",
        "--labels",
        "a.jsonl",
        "-q",
        "-o",
        "out",
        "logs.jsonl",
    ])
    .expect_code(0);
    let run = wd.rgrade(&["agree", "a.jsonl", "b.qrels", "-o", "out"]);
    run.expect_code(2);
    assert!(run.stderr.contains("a grade output"), "{run}");
    assert!(!wd.exists("out/agreement.csv"));
}

/// Kendall's tau-b the textbook way, ties in either ordering left out of
/// its side of the denominator, means within 1e-12 tied (as rgrade ties
/// means that differ by their summation order alone).
fn naive_tau_b(pairs: &[(f64, f64)]) -> Option<f64> {
    let sign = |x: f64, y: f64| {
        if (x - y).abs() <= 1e-12 {
            0.0
        } else {
            (x - y).signum()
        }
    };
    let n = pairs.len();
    let (mut score, mut untied_x, mut untied_y) = (0.0, 0.0, 0.0);
    for i in 0..n {
        for j in i + 1..n {
            let dx = sign(pairs[i].0, pairs[j].0);
            let dy = sign(pairs[i].1, pairs[j].1);
            score += dx * dy;
            untied_x += dx.abs();
            untied_y += dy.abs();
        }
    }
    let denominator = (untied_x * untied_y).sqrt();
    (denominator > 0.0).then(|| score / denominator)
}

#[test]
fn runs_graded_under_both_keys_are_ordered_by_each() {
    let wd = Workdir::new("agree_runs");
    let sample = crate::util::repo_path("data-samples/judges");
    let [human, judge, logs] = ["human.jsonl", "judge.jsonl", "logs.jsonl"]
        .map(|name| sample.join(name).display().to_string());
    let run = wd.rgrade(&[
        "agree", &human, &judge, "--logs", &logs, "-k", "5,10", "-o", "out",
    ]);
    run.expect_code(0);
    assert!(
        run.stdout.contains("4 runs graded under both keys"),
        "{run}"
    );
    // Each key's means are those `grade` finds under it.
    for (key, column) in [(&human, 5), (&judge, 6)] {
        let dir = format!("graded-{column}");
        wd.rgrade(&[
            "grade", "--labels", key, "-k", "5,10", "-q", "-o", &dir, &logs,
        ])
        .expect_code(0);
        let aggregates = wd.read_csv(&format!("{dir}/aggregates.csv"));
        let means = wd.read_csv("out/agreement_runs.csv");
        for row in &aggregates.rows {
            let metric_at = |name: &str| aggregates.header.iter().position(|h| h == name).unwrap();
            let found = (means.rows.iter())
                .find(|m| {
                    m[0] == row[0]
                        && m[1] == row[1]
                        && m[2] == row[2]
                        && m[3] == row[3]
                        && m[4] == "recall@10"
                })
                .unwrap_or_else(|| panic!("no means for {row:?}"));
            assert_eq!(found[column], row[metric_at("recall@10")], "{row:?}");
        }
    }
    // Each tau is the textbook one over the runs' means.
    let means = wd.read_csv("out/agreement_runs.csv");
    let taus = wd.read_csv("out/agreement_tau.csv");
    assert!(taus.rows.len() >= 12, "{taus:?}");
    for tau in &taus.rows {
        let pairs: Vec<(f64, f64)> = (means.rows.iter())
            .filter(|m| m[1..5] == tau[0..4] && !m[5].is_empty() && !m[6].is_empty())
            .map(|m| (m[5].parse().unwrap(), m[6].parse().unwrap()))
            .collect();
        assert_eq!(tau[4], pairs.len().to_string(), "{tau:?}");
        match naive_tau_b(&pairs) {
            Some(expected) => {
                let got: f64 = tau[5].parse().unwrap();
                assert!((got - expected).abs() < 1e-12, "{tau:?}: {expected}");
            }
            None => assert_eq!(tau[5], "", "{tau:?}"),
        }
    }
    let overall = (taus.rows.iter())
        .find(|t| t[1] == "*" && t[2] == "*" && t[3] == "recall@10")
        .unwrap();
    assert_eq!(overall[4], "4");
    let summary = wd.read_json("out/agreement.json");
    assert_eq!(summary["logs"]["runs"], 4);
}

#[test]
fn logs_that_can_be_read_only_once_are_refused() {
    let wd = workdir("agree_stdin");
    let run = wd.rgrade_stdin(&["agree", "a.jsonl", "b.qrels", "--logs", "-"], b"");
    run.expect_code(2).expect_stderr(&[
        "agree reads the logs once under each key, and standard input can be read only once: \
         save it to a file first",
    ]);
    // A named pipe (`<(cat logs)`) too, refused before it is opened: no
    // writer needs to come, and nothing waits for one.
    if make_fifo(&wd.path("pipe.jsonl")) {
        let mut cmd = wd.command(&["agree", "a.jsonl", "b.qrels", "--logs", "pipe.jsonl"]);
        let child = cmd.spawn().expect("rgrade starts");
        let run = Run::wait(&cmd, child, Duration::from_secs(60));
        run.expect_code(2)
            .expect_stderr(&["pipe.jsonl can be read only once: save it to a file first"]);
    }
}

#[test]
fn logs_that_change_between_the_two_gradings_are_refused() {
    let wd = workdir("agree_changed");
    wd.write(
        "logs/a.jsonl",
        "{\"query_id\": \"q1\", \"results\": [\"d1\", \"d3\"]}\n",
    );
    let args = ["agree", "a.jsonl", "b.qrels", "--logs", "logs", "-q"];
    wd.rgrade_paused(&args, || {}).expect_code(0);
    // Appended to once graded under the first key: the second would grade
    // other logs.
    let run = wd.rgrade_paused(&args, || {
        let mut log = std::fs::OpenOptions::new()
            .append(true)
            .open(wd.path("logs/a.jsonl"))
            .unwrap();
        log.write_all(b"{\"query_id\": \"q2\", \"results\": [\"d2\"]}\n")
            .unwrap();
    });
    run.expect_code(2)
        .expect_stderr(&["logs/a.jsonl: changed while it was being graded; grade it again"]);
    // A log file added to the directory meanwhile.
    let run = wd.rgrade_paused(&args, || {
        wd.write(
            "logs/b.jsonl",
            "{\"query_id\": \"q2\", \"results\": [\"d2\"]}\n",
        );
    });
    run.expect_code(2)
        .expect_stderr(&["logs/b.jsonl: among the logs on one reading and not the other"]);
}

#[test]
fn the_page_shows_the_figures_and_is_drawn_again_the_same() {
    let wd = workdir("agree_page");
    wd.rgrade(&["agree", "a.jsonl", "b.qrels", "-q", "-o", "out"])
        .expect_code(0);
    let page = wd.read_text("out/report.html");
    assert!(page.contains("rgrade agree report"), "{page}");
    assert!(page.contains("-0.250") && page.contains("0.375"), "{page}");
    assert!(page.contains("<code>d2</code>"), "{page}");
    let summary = wd.read_json("out/agreement.json");
    let listed: Vec<&str> = (summary["outputs"].as_array().unwrap().iter())
        .map(|o| o["name"].as_str().unwrap())
        .collect();
    assert!(!listed.contains(&"report.html"), "{listed:?}");
    wd.rgrade(&["report", "out", "-o", "again.html"])
        .expect_code(0);
    assert_eq!(wd.read("again.html"), wd.read("out/report.html"));
    // Another kind of result does not go where an agreement is.
    let run = wd.rgrade(&["grade", "--labels", "a.jsonl", "-q", "-o", "out", "a.jsonl"]);
    run.expect_code(2);
    assert!(run.stderr.contains("an agreement of answer keys"), "{run}");
}

#[test]
fn keys_of_no_common_query_and_log_options_without_logs_are_refused() {
    let wd = workdir("agree_refused");
    wd.write("other.qrels", "x1 0 d1 1\nx2 0 d2 1\n");
    let run = wd.rgrade(&["agree", "a.jsonl", "other.qrels", "-o", "out"]);
    run.expect_code(2);
    assert!(run.stderr.contains("label no query in common"), "{run}");
    assert!(!wd.exists("out/agreement.json"));
    // Options that only matter when logs are graded say so.
    let run = wd.rgrade(&["agree", "a.jsonl", "b.qrels", "-k", "5"]);
    run.expect_code(2);
    assert!(run.stderr.contains("--logs"), "{run}");
}

#[test]
fn what_both_gradings_say_of_the_logs_is_said_once() {
    let wd = workdir("agree_warnings");
    wd.write(
        "logs/logs.jsonl",
        "{\"query_id\": \"q1\", \"results\": [\"d1\"]}\n",
    );
    wd.write("logs/notes.txt", "not a run\n");
    let run = wd.rgrade(&["agree", "a.jsonl", "b.qrels", "--logs", "logs", "-q"]);
    run.expect_code(0);
    assert_eq!(run.stderr.matches("logs/notes.txt").count(), 1, "{run}");
}

/// Two TREC runs written with one tag fuse into rankings full of
/// duplicates, and every line of a labeled query is rejected (q9's, of no
/// label, are not): agree exits 1 with grade's hint rather than print taus
/// over nothing; `--run-name file` keeps them apart.
#[test]
fn logs_whose_every_record_was_rejected_fail_with_grades_hint() {
    let wd = workdir("agree_all_rejected");
    wd.write(
        "runs/a.trec",
        "q1 Q0 d1 1 2.0 run\nq1 Q0 d3 2 1.0 run\nq9 Q0 d1 1 1.0 run\n",
    );
    wd.write(
        "runs/b.trec",
        "q1 Q0 d3 1 2.0 run\nq1 Q0 d1 2 1.0 run\nq9 Q0 d2 1 1.0 run\n",
    );
    let run = wd.rgrade(&["agree", "a.jsonl", "b.qrels", "--logs", "runs", "-q"]);
    run.expect_code(1).expect_stderr(&[
        "the logs graded under a.jsonl: every capture of a labeled query was rejected (4 \
         rejected records), so nothing was graded; the first is",
        "duplicate_doc",
        "do two runs share a tag? --run-name file keeps them apart",
        "rgrade grade --labels a.jsonl -o DIR lists them all in rejects.jsonl",
    ]);
    let run = wd.rgrade(&[
        "agree",
        "a.jsonl",
        "b.qrels",
        "--logs",
        "runs",
        "--run-name",
        "file",
        "-q",
    ]);
    run.expect_code(0);
    assert!(!run.stderr.contains("rejected"), "{run}");
}

/// Keys that name no task or language hold four grouping sets of the same
/// queries: stdout and the page show the overall one alone, and
/// agreement_slices.csv keeps all four.
#[test]
fn sets_of_the_same_queries_are_shown_once() {
    let wd = Workdir::new("agree_repeated_sets");
    wd.write("a.qrels", "q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 2\n");
    wd.write("b.qrels", "q1 0 d1 1\nq1 0 d2 1\nq2 0 d3 2\n");
    let run = wd.rgrade(&["agree", "a.qrels", "b.qrels", "-o", "out"]);
    run.expect_code(0);
    let rows: Vec<&str> = (run.stdout.lines())
        .skip_while(|line| !line.starts_with("task "))
        .skip(1)
        .take_while(|line| !line.is_empty())
        .collect();
    assert_eq!(rows.len(), 1, "{run}");
    assert!(rows[0].starts_with("*  "), "{run}");
    let slices = wd.read_csv("out/agreement_slices.csv");
    assert_eq!(slices.column("task"), ["*", "(none)", "*", "(none)"]);
    let page = wd.read_text("out/report.html");
    assert!(
        page.contains("broader set of the same queries: 3 sets"),
        "{page}"
    );
    assert!(!page.contains("<td>(none)</td><td>*</td>"), "{page}");
}
