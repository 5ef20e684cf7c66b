//! The questions a grade answers beyond its metrics (docs/guide.md, "Beyond
//! the metrics"): was a wrong answer a retrieval failure (answer_ok and
//! attribution.csv), which documents need judging next (judged@k and
//! review_queue.csv), does the held-out split agree (a label's split), and
//! were the labels reviewed against this collection (collection_version).
//! Every expected value here is worked out by hand from the inputs.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use crate::util::compare::compare;
use crate::util::{
    assert_cell, assert_same_lines, assert_text, grade, repo_path, rgrade_in, text, Run, Workdir,
    REPO_ROOT,
};

/// The shipped sample, relative to the repository's top.
const SAMPLE: &str = "data-samples/questions";

/// data-samples/questions/README.md's command, from the repository's top, into
/// `wd`'s `out`.
fn grade_sample(wd: &Workdir, extra: &[&str]) -> Run {
    let out = wd.path("out").display().to_string();
    let labels = format!("{SAMPLE}/labels.jsonl");
    let logs = format!("{SAMPLE}/logs.jsonl");
    let mut args = vec!["grade", "--labels", &labels, "-k", "1,5,10"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["-o", &out, &logs]);
    rgrade_in(Path::new(REPO_ROOT), &args)
}

/// The sample's command writes and prints `expected/` byte for byte.
#[test]
fn the_sample_writes_the_expected_files() {
    let wd = Workdir::new("questions_sample");
    let run = grade_sample(&wd, &["--review-queue", "--pool-depth", "5"]);
    run.expect_code(0);
    let hint = "(if the change is meant, review it, then rerun data-samples/questions/make.sh)";
    for file in [
        "per_query.csv",
        "aggregates.csv",
        "attribution.csv",
        "review_queue.csv",
    ] {
        let want = fs::read(repo_path(&format!("{SAMPLE}/expected/{file}"))).unwrap();
        assert_same_lines(
            &format!("{file} {hint}"),
            &wd.read(&format!("out/{file}")),
            &want,
        );
    }
    let stdout = fs::read(repo_path(&format!("{SAMPLE}/expected/stdout.txt"))).unwrap();
    assert_same_lines(&format!("stdout {hint}"), run.stdout.as_bytes(), &stdout);
}

/// The sample's numbers follow from its files: attribution.csv's overall
/// row from per_query.csv's answers and recall@10; the review queue holds
/// no judged document and nothing ranked below 5; and its collection
/// versions are what the README says, refused as it says.
#[test]
fn the_sample_numbers_follow_from_its_files() {
    let wd = Workdir::new("questions_sample_numbers");
    grade_sample(&wd, &["--review-queue", "--pool-depth", "5"]).expect_code(0);
    let per_query = wd.read_csv("out/per_query.csv");
    let mut cells: BTreeMap<(bool, bool), u64> = BTreeMap::new();
    for row in per_query.records() {
        let ok = match row["answer_ok"].as_str() {
            "true" => true,
            "false" => false,
            _ => continue,
        };
        if row["status"] == "ok" {
            *cells.entry((ok, row["recall@10"] == "1")).or_default() += 1;
        }
    }
    let attribution = wd.read_csv("out/attribution.csv");
    let overall = attribution.row(&[("task", "*"), ("language", "*"), ("split", "*")]);
    let cell = |ok, all| cells.get(&(ok, all)).copied().unwrap_or(0).to_string();
    assert_text(
        &overall,
        "answered",
        &cells.values().sum::<u64>().to_string(),
    );
    assert_text(&overall, "wrong_missing_evidence", &cell(false, false));
    assert_text(&overall, "wrong_with_evidence", &cell(false, true));
    assert_text(&overall, "ok_missing_evidence", &cell(true, false));

    let labels = fs::read_to_string(repo_path(&format!("{SAMPLE}/labels.jsonl"))).unwrap();
    let judged: BTreeMap<String, Vec<String>> = labels
        .lines()
        .map(|line| {
            let label: serde_json::Value = serde_json::from_str(line).unwrap();
            let docs = match &label["relevant"] {
                serde_json::Value::Array(ids) => ids
                    .iter()
                    .map(|d| d.as_str().unwrap().to_string())
                    .collect(),
                serde_json::Value::Object(grades) => grades.keys().cloned().collect(),
                other => panic!("relevant {other}"),
            };
            (label["query_id"].as_str().unwrap().to_string(), docs)
        })
        .collect();
    let queue = wd.read_csv("out/review_queue.csv");
    assert!(!queue.rows.is_empty());
    for row in queue.records() {
        assert!(
            !judged[&row["query_id"]].contains(&row["doc_id"]),
            "{row:?} is judged"
        );
        let rank: u32 = row["best_rank"].parse().unwrap();
        assert!((1..=5).contains(&rank), "{row:?}");
    }

    let summary = wd.read_json("out/summary.json");
    assert_eq!(
        summary["labels"]["collection_versions"],
        serde_json::json!([
            {"version": "kb-2026-09", "queries": 4},
            {"version": "kb-2026-11", "queries": 147}
        ])
    );
    grade_sample(&wd, &["--collection-version", "kb-2026-11"])
        .expect_code(2)
        .expect_stderr(&[
            "rgrade: data-samples/questions/labels.jsonl: 4 of 151 labeled queries were not \
             reviewed against collection version 'kb-2026-11' (--collection-version): q000047 \
             (kb-2026-09), q000238 (kb-2026-09), q000266 (kb-2026-09), q000285 (kb-2026-09)",
        ]);
}

/// The worked example's labels, with splits and collection versions, and
/// a grade-0 judgment for q_export (`billing`: judged, not relevant).
fn labels() -> String {
    text(&[
        r#"{"query_id": "q_export", "relevant": {"export_csv": 1, "billing": 0}, "task": "howto", "split": "dev", "collection_version": "kb-11"}"#,
        r#"{"query_id": "q_reset", "relevant": ["reset_steps", "reset_limits"], "task": "account", "split": "test", "collection_version": "kb-11"}"#,
        r#"{"query_id": "q_sharing", "relevant": ["share_roles", "share_limits"], "task": "permissions", "split": "test", "collection_version": "kb-09"}"#,
    ])
}

/// The worked example's rankings, with the outcome of each answer.
fn logs(run: &str, outcomes: [&str; 3]) -> String {
    let rankings = [
        ("q_export", r#"["export_csv", "billing", "profile"]"#),
        ("q_reset", r#"["billing", "reset_steps", "reset_limits"]"#),
        ("q_sharing", r#"["profile", "share_roles", "billing"]"#),
    ];
    let lines: Vec<String> = rankings
        .iter()
        .zip(outcomes)
        .map(|((query, results), ok)| {
            let outcome = match ok {
                "" => String::new(),
                ok => format!(r#", "answer_ok": {ok}"#),
            };
            format!(r#"{{"query_id": "{query}", "run": "{run}", "results": {results}{outcome}}}"#)
        })
        .collect();
    text(&lines)
}

/// `rgrade grade ARGS` in `wd`, ARGS split at spaces.
fn grade_line(wd: &Workdir, args: &str) -> Run {
    let args: Vec<&str> = args.split_whitespace().collect();
    grade(wd, &args)
}

/// `rgrade grade --labels labels.jsonl ARGS` in `wd`.
fn grade_key(wd: &Workdir, args: &str) -> Run {
    grade_line(wd, &format!("--labels labels.jsonl {args}"))
}

fn workdir(name: &str) -> Workdir {
    let wd = Workdir::new(name);
    wd.write("labels.jsonl", labels());
    wd
}

/// q_export's answer is right with all its evidence; q_reset's is wrong
/// though both its documents are in the top 3 (a generation failure);
/// q_sharing's is wrong and share_limits was never retrieved (a retrieval
/// failure). At k = 1 only q_export has all its evidence.
#[test]
fn wrong_answers_split_by_their_evidence() {
    let wd = workdir("questions_attribution");
    wd.write("logs.jsonl", logs("bm25", ["true", "false", "false"]));
    let run = grade_key(&wd, "-k 1,3 -o out logs.jsonl");
    run.expect_code(0);
    let per_query = wd.read_csv("out/per_query.csv");
    let answers = per_query.column("answer_ok");
    assert_eq!(answers, ["true", "false", "false"]);

    let attribution = wd.read_csv("out/attribution.csv");
    assert_eq!(attribution.header, rgrade::schema::ATTRIBUTION);
    let overall = attribution.row(&[("task", "*"), ("language", "*"), ("split", "*")]);
    for (column, want) in [
        ("answered", "3"),
        ("answer_ok", "1"),
        ("wrong_missing_evidence", "1"),
        ("wrong_with_evidence", "1"),
        ("ok_missing_evidence", "0"),
    ] {
        assert_text(&overall, column, want);
    }
    let test_split = attribution.row(&[("task", "*"), ("language", "*"), ("split", "test")]);
    assert_text(&test_split, "answered", "2");
    assert_text(&test_split, "wrong_with_evidence", "1");
    let reset = attribution.row(&[("task", "account"), ("language", "*"), ("split", "*")]);
    assert_text(&reset, "wrong_with_evidence", "1");

    for line in [
        "run bm25  stage final: 3 answered, 1 ok, 2 wrong",
        "retrieval: 1 wrong without all their evidence (50% of wrong)",
        "generation: 1 wrong with all their evidence (50% of wrong)",
        "0 ok without all their evidence",
    ] {
        assert!(run.stdout.contains(line), "stdout lacks {line:?}\n{run}");
    }
}

/// Evidence is judged at the deepest cutoff, whatever order -k gives.
#[test]
fn attribution_reads_recall_at_the_deepest_cutoff() {
    let wd = workdir("questions_attribution_deepest");
    wd.write("logs.jsonl", logs("bm25", ["true", "true", "true"]));
    grade_key(&wd, "-k 3,1 -o out logs.jsonl").expect_code(0);
    let attribution = wd.read_csv("out/attribution.csv");
    let overall = attribution.row(&[("task", "*"), ("language", "*"), ("split", "*")]);
    // At k = 3 only q_sharing lacks a document: at k = 1 two would.
    assert_text(&overall, "ok_missing_evidence", "1");
}

/// Without outcomes there is nothing to attribute: no attribution.csv,
/// no stdout block, an empty answer_ok column; and a later grading
/// without them removes an earlier one's attribution.csv.
#[test]
fn without_outcomes_there_is_no_attribution() {
    let wd = workdir("questions_no_outcomes");
    wd.write("with.jsonl", logs("bm25", ["true", "", "false"]));
    wd.write("without.jsonl", logs("bm25", ["", "", ""]));
    grade_key(&wd, "-k 3 -o out with.jsonl").expect_code(0);
    let attribution = wd.read_csv("out/attribution.csv");
    let overall = attribution.row(&[("task", "*"), ("language", "*"), ("split", "*")]);
    assert_text(&overall, "answered", "2");
    let run = grade_key(&wd, "-k 3 -o out without.jsonl");
    run.expect_code(0);
    assert!(!wd.exists("out/attribution.csv"), "{run}");
    assert!(!run.stdout.contains("wrong answers"), "{run}");
    assert_eq!(
        wd.read_csv("out/per_query.csv").column("answer_ok"),
        ["", "", ""]
    );
}

/// An outcome that is not a boolean rejects its record, naming the field;
/// --outcome-field reads it from elsewhere.
#[test]
fn outcomes_are_booleans_read_from_a_field() {
    let wd = workdir("questions_outcome_field");
    wd.write(
        "logs.jsonl",
        text(&[
            r#"{"query_id": "q_export", "results": ["export_csv"], "answer_ok": "yes"}"#,
            r#"{"query_id": "q_reset", "results": ["reset_steps"], "feedback": {"ok": false}}"#,
        ]),
    );
    let run = grade_key(&wd, "-o out logs.jsonl");
    run.expect_code(1);
    let rejects = wd.read_jsonl("out/rejects.jsonl");
    assert_eq!(rejects.len(), 1, "{run}");
    assert_eq!(rejects[0]["reason"], "bad_field");
    assert!(rejects[0]["detail"].as_str().unwrap().contains("answer_ok"));

    grade_key(&wd, "--outcome-field /feedback/ok -o out logs.jsonl").expect_code(0);
    let per_query = wd.read_csv("out/per_query.csv");
    assert_text(
        &per_query.row(&[("query_id", "q_reset")]),
        "answer_ok",
        "false",
    );
    assert_text(&per_query.row(&[("query_id", "q_export")]), "answer_ok", "");
}

/// judged@k by hand: q_export's top 3 holds export_csv (grade 1) and
/// billing (grade 0), both judged; q_reset's holds its two documents;
/// q_sharing's one. Every ranking is 3 long, so at 5 and at `all` the
/// top 3 is all that was shown. Means over the three.
#[test]
fn judged_at_k_counts_every_judged_document() {
    let wd = workdir("questions_judged");
    wd.write("logs.jsonl", logs("bm25", ["", "", ""]));
    grade_key(&wd, "-k 1,3,5,all -o out logs.jsonl").expect_code(0);
    let per_query = wd.read_csv("out/per_query.csv");
    let want = [
        ("q_export", [1.0, 2.0 / 3.0, 2.0 / 3.0, 2.0 / 3.0]),
        ("q_reset", [0.0, 2.0 / 3.0, 2.0 / 3.0, 2.0 / 3.0]),
        ("q_sharing", [0.0, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0]),
    ];
    for (query, values) in want {
        let row = per_query.row(&[("query_id", query)]);
        for (k, value) in ["1", "3", "5", "all"].iter().zip(values) {
            assert_cell(&row, &format!("judged@{k}"), value);
        }
    }
    let aggregates = wd.read_csv("out/aggregates.csv");
    let overall = aggregates.row(&[("task", "*"), ("language", "*"), ("split", "*")]);
    assert_cell(&overall, "judged@1", 1.0 / 3.0);
    assert_cell(&overall, "judged@3", 5.0 / 9.0);
}

/// The review queue lists, per query, the documents no label line judges
/// that a graded capture ranked within the pool depth: best rank over
/// every run and stage, how many runs and captures ranked them.
#[test]
fn the_review_queue_pools_unjudged_documents() {
    let wd = workdir("questions_review_queue");
    wd.write("bm25.jsonl", logs("bm25", ["", "", ""]));
    wd.write(
        "dense.jsonl",
        text(&[
            r#"{"query_id": "q_export", "run": "dense", "results": ["profile", "new_doc", "export_csv"]}"#,
            r#"{"query_id": "q_reset", "run": "dense", "results": ["reset_steps", "reset_limits", "billing"]}"#,
        ]),
    );
    let run = grade_key(&wd, "-k 3 --review-queue -o out bm25.jsonl dense.jsonl");
    run.expect_code(0);
    let queue = wd.read_csv("out/review_queue.csv");
    assert_eq!(queue.header, rgrade::schema::REVIEW_QUEUE);
    assert_eq!(queue_rows(&wd), QUEUE_OF_TWO_RUNS);

    let summary = wd.read_json("out/summary.json");
    assert_eq!(summary["settings"]["pool_depth"], 3, "the deepest cutoff");

    // A shallower pool: only what some capture ranked first.
    grade_key(
        &wd,
        "-k 3 --review-queue --pool-depth 1 -o out bm25.jsonl dense.jsonl",
    )
    .expect_code(0);
    let queue = wd.read_csv("out/review_queue.csv");
    assert_eq!(queue.column("doc_id"), ["profile", "billing", "profile"]);

    // Without the flag the file is gone; the flag needs an output directory.
    grade_key(&wd, "-k 3 -o out bm25.jsonl").expect_code(0);
    assert!(!wd.exists("out/review_queue.csv"));
    grade_key(&wd, "--review-queue bm25.jsonl")
        .expect_code(2)
        .expect_stderr(&["--out"]);
}

/// The queue of bm25 and dense in [`the_review_queue_pools_unjudged_documents`].
const QUEUE_OF_TWO_RUNS: [&str; 5] = [
    // billing is judged (grade 0) for q_export: never queued there.
    "q_export,howto,(none),profile,1,2,2",
    "q_export,howto,(none),new_doc,2,1,1",
    "q_reset,account,(none),billing,1,2,2",
    "q_sharing,permissions,(none),profile,1,1,1",
    "q_sharing,permissions,(none),billing,3,1,1",
];

/// review_queue.csv's rows, each joined by commas.
fn queue_rows(wd: &Workdir) -> Vec<String> {
    let queue = wd.read_csv("out/review_queue.csv");
    queue.rows.iter().map(|r| r.join(",")).collect()
}

/// bm25's rankings of [`logs`] as a TREC run, its lines out of order and
/// some of a query apart.
const BM25_TREC: &str = "\
q_sharing Q0 billing 3 1.0 bm25
q_export Q0 billing 2 2.0 bm25
q_export Q0 export_csv 1 3.0 bm25
q_reset Q0 reset_limits 3 1.0 bm25
q_reset Q0 billing 1 3.0 bm25
q_reset Q0 reset_steps 2 2.0 bm25
q_export Q0 profile 3 1.0 bm25
q_sharing Q0 share_roles 2 2.0 bm25
q_sharing Q0 profile 1 3.0 bm25
";

/// A ranking of run lines keeps no unjudged id while it is ranked: the ids
/// of the lines it pooled are read again from their files, compressed or
/// not, so TREC and MS MARCO runs queue what the same rankings as search
/// events queue.
#[test]
fn the_review_queue_pools_runs_read_from_files() {
    let wd = workdir("questions_review_queue_runs");
    wd.write_gz("bm25.trec.gz", BM25_TREC);
    wd.write(
        "dense.tsv",
        "q_reset\tbilling\t3\nq_export\tprofile\t1\nq_export\texport_csv\t3\n\
         q_reset\treset_steps\t1\nq_export\tnew_doc\t2\nq_reset\treset_limits\t2\n",
    );
    grade_key(&wd, "-k 3 --review-queue -o out bm25.trec.gz dense.tsv").expect_code(0);
    assert_eq!(queue_rows(&wd), QUEUE_OF_TWO_RUNS);
    let per_query = wd.read_csv("out/per_query.csv");
    assert_eq!(
        per_query.column("run"),
        ["bm25", "bm25", "bm25", "dense", "dense", "dense"]
    );
    assert_eq!(
        per_query.column("status")[5],
        "missing",
        "dense has no q_sharing"
    );
}

/// Standard input cannot be read a second time for the ids its lines
/// pooled: the queue leaves them out and says how many.
#[test]
fn the_review_queue_says_what_runs_from_stdin_leave_out() {
    let wd = workdir("questions_review_queue_stdin");
    let args = "grade --labels labels.jsonl -k 3 --review-queue -o out -";
    let args: Vec<&str> = args.split_whitespace().collect();
    wd.rgrade_stdin(&args, BM25_TREC.as_bytes())
        .expect_code(0)
        .expect_stderr(&["review_queue.csv leaves out 4 documents that runs from standard input"]);
    assert!(queue_rows(&wd).is_empty());
}

/// A label's split adds each grouping set again within the split, after
/// those over every split, in aggregates.csv and on stdout.
#[test]
fn splits_slice_like_tasks_and_languages() {
    let wd = workdir("questions_split");
    wd.write("logs.jsonl", logs("bm25", ["", "", ""]));
    let run = grade_key(&wd, "-k 3 -o out logs.jsonl");
    run.expect_code(0);
    let per_query = wd.read_csv("out/per_query.csv");
    assert_eq!(per_query.column("split"), ["dev", "test", "test"]);
    let aggregates = wd.read_csv("out/aggregates.csv");
    let sets: Vec<String> = aggregates
        .records()
        .iter()
        .map(|r| format!("{}/{}/{}", r["split"], r["task"], r["language"]))
        .collect();
    assert_eq!(
        sets,
        [
            "*/*/*",
            "*/account/*",
            "*/howto/*",
            "*/permissions/*",
            "*/*/(none)",
            "*/account/(none)",
            "*/howto/(none)",
            "*/permissions/(none)",
            "dev/*/*",
            "dev/howto/*",
            "dev/*/(none)",
            "dev/howto/(none)",
            "test/*/*",
            "test/account/*",
            "test/permissions/*",
            "test/*/(none)",
            "test/account/(none)",
            "test/permissions/(none)",
        ]
    );
    let test_split = aggregates.row(&[("split", "test"), ("task", "*"), ("language", "*")]);
    assert_cell(&test_split, "recall@3", 0.75);
    assert_cell(&test_split, "rr@3", 0.5);
    let table = run.stdout_table();
    let slices = &table[&("bm25".to_string(), "final".to_string())];
    assert_eq!(slices["split=test"]["recall@3"], "0.750", "{run}");
    assert_eq!(slices["split=dev"]["recall@3"], "1.000", "{run}");
}

/// Labels without any split keep one grouping set per slice, `*` in the
/// split column.
#[test]
fn labels_without_splits_add_no_sets() {
    let wd = Workdir::new("questions_no_split");
    wd.write(
        "labels.jsonl",
        labels().replace(r#""split": "#, r#""phase": "#),
    );
    wd.write("logs.jsonl", logs("bm25", ["", "", ""]));
    grade_key(&wd, "-k 3 -o out logs.jsonl").expect_code(0);
    let aggregates = wd.read_csv("out/aggregates.csv");
    assert_eq!(aggregates.rows.len(), 8);
    assert!(aggregates.column("split").iter().all(|s| s == "*"));
    assert!(wd
        .read_csv("out/per_query.csv")
        .column("split")
        .iter()
        .all(|s| s == "(none)"));
}

/// compare pairs within splits, and a rule can gate on the held-out one.
#[test]
fn compare_gates_on_the_test_split() {
    let wd = workdir("questions_compare_split");
    wd.write("base.jsonl", logs("base", ["", "", ""]));
    // The candidate loses q_reset's first document: only the test split moves.
    wd.write(
        "cand.jsonl",
        logs("cand", ["", "", ""]).replace(
            r#"["billing", "reset_steps", "reset_limits"]"#,
            r#"["billing", "profile", "reset_limits"]"#,
        ),
    );
    for side in ["base", "cand"] {
        let logs = format!("{side}.jsonl");
        grade(
            &wd,
            &[
                "--labels",
                "labels.jsonl",
                "-k",
                "3",
                "-q",
                "-o",
                side,
                &logs,
            ],
        )
        .expect_code(0);
    }
    wd.write(
        "rules.toml",
        text(&[
            "[[rule]]",
            r#"name = "dev holds""#,
            r#"split = "dev""#,
            r#"metric = "recall@3""#,
            "no_loss = true",
            "[[rule]]",
            r#"name = "test holds""#,
            r#"split = "test""#,
            r#"metric = "recall@3""#,
            "no_loss = true",
        ]),
    );
    let run = compare(&wd, &["base", "cand", "--rules", "rules.toml", "-o", "cmp"]);
    run.expect_code(1);
    let gate = wd.read_json("cmp/gate.json");
    assert_eq!(gate["rules"][0]["passed"], true, "{run}");
    assert_eq!(gate["rules"][1]["passed"], false, "{run}");
    let comparison = wd.read_csv("cmp/comparison.csv");
    let test_split = comparison.row(&[
        ("split", "test"),
        ("task", "*"),
        ("language", "*"),
        ("metric", "recall@3"),
    ]);
    assert_cell(&test_split, "delta", -0.25);
    assert!(
        run.stdout.contains("split=test: q_reset 1.000 -> 0.500"),
        "{run}"
    );
    let delta = wd.read_csv("cmp/per_query_delta.csv");
    assert_eq!(delta.header.last().map(String::as_str), Some("split"));
    let metrics = comparison.column("metric");
    assert!(
        !metrics.iter().any(|m| m.starts_with("judged@")),
        "judged@k only when named"
    );

    // judged@k is compared when named: the candidate's top 3 of q_reset
    // holds one judged document fewer.
    compare(&wd, &["base", "cand", "--metrics", "judged@3", "-o", "cmp"]).expect_code(0);
    let comparison = wd.read_csv("cmp/comparison.csv");
    let overall = comparison.row(&[("split", "*"), ("task", "*"), ("language", "*")]);
    assert_text(&overall, "metric", "judged@3");
    assert_cell(&overall, "delta", -1.0 / 9.0);

    wd.write(
        "typo.toml",
        text(&[
            "[[rule]]",
            r#"name = "x""#,
            r#"split = "tset""#,
            r#"metric = "recall@3""#,
            "min = 0.5",
        ]),
    );
    compare(&wd, &["base", "cand", "--rules", "typo.toml"])
        .expect_code(2)
        .expect_stderr(&["unknown split 'tset'"]);
}

/// --collection-version refuses labels reviewed against another version
/// (or none), naming how many and which; summary.json lists the versions
/// the labels name either way.
#[test]
fn labels_of_another_collection_version_are_refused() {
    let wd = workdir("questions_collection_version");
    wd.write("logs.jsonl", logs("bm25", ["", "", ""]));
    grade_key(&wd, "-q -o out logs.jsonl").expect_code(0);
    let summary = wd.read_json("out/summary.json");
    assert_eq!(
        summary["labels"]["collection_versions"],
        serde_json::json!([{"version": "kb-09", "queries": 1}, {"version": "kb-11", "queries": 2}])
    );
    assert_eq!(
        summary["settings"]["collection_version"],
        serde_json::Value::Null
    );

    let run = grade_key(&wd, "--collection-version kb-11 -o out logs.jsonl");
    run.expect_code(2).expect_stderr(&[
        "labels.jsonl: 1 of 3 labeled queries were not reviewed against collection version 'kb-11'",
        "q_sharing (kb-09)",
    ]);
    assert!(
        !wd.exists("out/summary.json"),
        "a refused grading leaves no result"
    );

    wd.write("one.jsonl", text(&[r#"{"query_id": "q_export", "relevant": ["export_csv"], "collection_version": "kb-11"}"#, r#"{"query_id": "q_reset", "relevant": ["reset_steps"]}"#]));
    grade_line(
        &wd,
        "--labels one.jsonl --collection-version kb-11 logs.jsonl",
    )
    .expect_code(2)
    .expect_stderr(&["q_reset (no collection_version)"]);
    wd.write("all.jsonl", labels().replace("kb-09", "kb-11"));
    grade_line(
        &wd,
        "--labels all.jsonl --collection-version kb-11 -q -o out logs.jsonl",
    )
    .expect_code(0);
    let summary = wd.read_json("out/summary.json");
    assert_eq!(summary["settings"]["collection_version"], "kb-11");
}

/// CSV labels name splits and versions in columns; a query's lines must
/// agree on them.
#[test]
fn csv_labels_carry_split_and_version() {
    let wd = Workdir::new("questions_csv_labels");
    wd.write(
        "labels.csv",
        text(&[
            "query_id,doc_id,split,collection_version",
            "q1,a,test,v2",
            "q1,b,test,v2",
            "q2,c,dev,v1",
        ]),
    );
    wd.write(
        "logs.jsonl",
        text(&[r#"{"query_id": "q1", "results": ["a"]}"#]),
    );
    grade_line(&wd, "--labels labels.csv -q -o out logs.jsonl").expect_code(0);
    assert_eq!(
        wd.read_csv("out/per_query.csv").column("split"),
        ["test", "dev"]
    );
    wd.write(
        "bad.csv",
        text(&["query_id,doc_id,split", "q1,a,test", "q1,b,dev"]),
    );
    grade_line(&wd, "--labels bad.csv logs.jsonl")
        .expect_code(2)
        .expect_stderr(&["bad.csv:3: query_id 'q1' has split 'dev' here but 'test' on line 2"]);
}
