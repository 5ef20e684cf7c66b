//! Diagnostics (docs/guide.md, Diagnostics) end to end, through the binary: permissions
//! (results outside the user's allowed collections) and stale labels
//! (labeled doc ids no capture returned, `--corpus`).
//!
//! - the shipped sample `data-samples/diagnostics/`: its README's three
//!   commands, run as written, write and print exactly `expected/` and
//!   what the README shows (exit statuses 1, 0 and 2), and the key numbers
//!   are recomputed here from the sample's inputs;
//! - permissions on hand cases: ranks kept, JSON pointers, the
//!   `--doc-collections` map (and its errors), unknown collections,
//!   `bad_field` rejects, dedupe, records without permission data, leaks in
//!   unlabeled records, `--max-leaks`, `--repeats`, the leak list (capped,
//!   in input order, the same with any thread count);
//! - a property over random small logs: an unauthorized result never
//!   raises a score, and scores exactly as an unjudged result at its rank;
//! - stale labels on a hand case, the warning threshold, and `--corpus`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::path::{Path, PathBuf};

use proptest::collection::{btree_map, vec};
use proptest::option::weighted;
use proptest::prelude::*;
use proptest::sample::subsequence;
use proptest::test_runner::TestCaseError;
use serde_json::{json, Value};

use crate::util::{
    assert_cell, assert_counts_add_up, assert_same_lines, assert_text, count, grade,
    metric_columns, text, zstd_compress, Run, Table, Workdir, CRATE_ROOT,
};

/// The diagnostics sample, relative to the crate root, as its README writes it.
const SAMPLE: &str = "data-samples/diagnostics";

/// The sample's input files, copied into a scratch directory so its
/// README's commands run there exactly as written.
const SAMPLE_INPUTS: [&str; 4] = [
    "labels.jsonl",
    "logs.jsonl",
    "doc_collections.csv",
    "corpus.txt",
];

/// What a mismatch with the sample's expected files means.
const HINT: &str =
    "(if the change is meant, review it, then regenerate data-samples/diagnostics/expected/ \
                    with the commands of its README)";

/// The stderr line of the sample's first command.
const SAMPLE_LEAK_MESSAGE: &str =
    "rgrade: 1 result outside the user's allowed collections exceeds \
     --max-leaks 0; the first is data-samples/diagnostics/logs.jsonl:15: query q_refund got \
     refund_approvals from collection finance";

/// The stderr line of the sample's third command.
const SAMPLE_CORPUS_MESSAGE: &str = "rgrade: data-samples/diagnostics/corpus.txt: 1 of 15 labeled \
     doc ids are not in the corpus (e.g. KB-0042); all are listed in \
     out/corpus-check/labels_missing_from_corpus.txt. Were the labels made for another snapshot \
     or id scheme?";

/// The absolute path of `rel` inside the sample.
fn sample_path(rel: &str) -> PathBuf {
    Path::new(CRATE_ROOT).join(SAMPLE).join(rel)
}

/// The text of `rel` inside the sample.
fn sample_text(rel: &str) -> String {
    fs::read_to_string(sample_path(rel))
        .unwrap_or_else(|e| panic!("cannot read {SAMPLE}/{rel}: {e}"))
}

/// The commands of the sample's README: every line of a `sh` block, with
/// its `\` continuations, after `cargo run --release -- `.
fn readme_commands() -> Vec<Vec<String>> {
    let readme = sample_text("README.md");
    let mut commands = Vec::new();
    let mut in_sh = false;
    let mut current = String::new();
    for line in readme.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with("```") {
            in_sh = trimmed == "```sh";
            continue;
        }
        if !in_sh || trimmed.starts_with('#') || trimmed.is_empty() {
            continue;
        }
        if let Some(head) = line.strip_suffix('\\') {
            current.push_str(head);
            current.push(' ');
            continue;
        }
        current.push_str(line);
        let command = current
            .trim()
            .strip_prefix("cargo run --release -- ")
            .unwrap_or_else(|| panic!("{SAMPLE}/README.md: not a cargo run command: {current}"));
        commands.push(command.split_whitespace().map(String::from).collect());
        current.clear();
    }
    assert_eq!(
        commands.len(),
        3,
        "{SAMPLE}/README.md: expected three commands: {commands:?}"
    );
    commands
}

/// A scratch directory holding the sample's inputs where the README's
/// commands look for them.
fn sample_workdir(name: &str) -> Workdir {
    let wd = Workdir::new(name);
    for file in SAMPLE_INPUTS {
        wd.write(&format!("{SAMPLE}/{file}"), sample_text(file));
    }
    wd
}

/// Run one of the README's commands in `wd`.
fn run_readme_command(wd: &Workdir, command: &[String]) -> Run {
    let args: Vec<&str> = command.iter().map(String::as_str).collect();
    wd.rgrade(&args)
}

/// The row of (stage, query) in a per_query.csv.
#[track_caller]
fn row(table: &Table, stage: &str, query: &str) -> HashMap<String, String> {
    table.row(&[("stage", stage), ("query_id", query)])
}

// ---------------------------------------------------------------------
// The sample
// ---------------------------------------------------------------------

/// The README's first command writes exactly `expected/`, prints
/// `expected/stdout.txt` (which the README shows), names the leak on
/// stderr and exits 1; summary.json's counts, stale labels and leak list
/// are `expected/summary_excerpt.json`.
#[test]
fn sample_grade_matches_expected_and_exits_1_for_the_leak() {
    let commands = readme_commands();
    assert!(
        commands[0].contains(&"--stage-order".to_string())
            && !commands[0].contains(&"--max-leaks".to_string()),
        "the first command grades with --stage-order: {:?}",
        commands[0]
    );
    let wd = sample_workdir("perm_sample_leak");
    let run = run_readme_command(&wd, &commands[0]);
    run.expect_code(1);
    assert_eq!(run.stderr.trim_end(), SAMPLE_LEAK_MESSAGE, "{run}");

    for file in [
        "per_query.csv",
        "aggregates.csv",
        "stage_loss.csv",
        "stage_loss_per_query.csv",
    ] {
        let want = fs::read(sample_path(&format!("expected/{file}")))
            .unwrap_or_else(|e| panic!("cannot read expected/{file}: {e}"));
        assert_same_lines(
            &format!("{file} against {SAMPLE}/expected/{file} {HINT}"),
            &wd.read(&format!("out/diagnostics/{file}")),
            &want,
        );
    }
    let want_stdout = sample_text("expected/stdout.txt");
    assert_same_lines(
        &format!("stdout against {SAMPLE}/expected/stdout.txt {HINT}"),
        run.stdout.as_bytes(),
        want_stdout.as_bytes(),
    );
    let readme = sample_text("README.md");
    assert!(
        readme.contains(&format!("```text\n{want_stdout}```")),
        "{SAMPLE}/README.md does not show expected/stdout.txt {HINT}"
    );
    for message in [SAMPLE_LEAK_MESSAGE, SAMPLE_CORPUS_MESSAGE] {
        assert!(
            readme.contains(message),
            "{SAMPLE}/README.md does not show {message:?}"
        );
    }
    assert_eq!(wd.read_text("out/diagnostics/rejects.jsonl"), "");

    let summary = wd.read_json("out/diagnostics/summary.json");
    let excerpt: Value =
        serde_json::from_str(&sample_text("expected/summary_excerpt.json")).expect("valid JSON");
    for key in ["counts", "stale_labels", "leaks"] {
        assert_eq!(
            summary[key], excerpt[key],
            "summary.json {key} against expected/summary_excerpt.json {HINT}"
        );
    }
    assert_counts_add_up(&summary);
}

/// The README's second command, `--max-leaks 1`, tolerates the one leak:
/// exit 0, nothing on stderr, the same outputs.
#[test]
fn sample_with_max_leaks_1_exits_0() {
    let commands = readme_commands();
    let args = &commands[1];
    let at = args
        .iter()
        .position(|a| a == "--max-leaks")
        .expect("the second command has --max-leaks");
    assert_eq!(args[at + 1], "1", "{args:?}");
    let wd = sample_workdir("perm_sample_max_leaks");
    let run = run_readme_command(&wd, args);
    run.expect_code(0);
    assert_eq!(run.stderr, "", "{run}");
    assert_same_lines(
        "stdout with --max-leaks 1",
        run.stdout.as_bytes(),
        sample_text("expected/stdout.txt").as_bytes(),
    );
    for file in [
        "per_query.csv",
        "aggregates.csv",
        "stage_loss.csv",
        "stage_loss_per_query.csv",
    ] {
        assert_same_lines(
            &format!("{file} with --max-leaks 1"),
            &wd.read(&format!("out/diagnostics/{file}")),
            &fs::read(sample_path(&format!("expected/{file}"))).expect("expected file"),
        );
    }
    let summary = wd.read_json("out/diagnostics/summary.json");
    assert_eq!(count(&summary, "leaked_results"), 1);
}

/// The README's third command, `--corpus`, stops before grading: exit 2,
/// the message names the count and the example, the full list is
/// `expected/labels_missing_from_corpus.txt`, and nothing else is written.
/// Without `-o` the message says how to get the list; with the missing id
/// added to the snapshot the same command grades.
#[test]
fn sample_corpus_check_exits_2() {
    let commands = readme_commands();
    let args = &commands[2];
    assert!(args.contains(&"--corpus".to_string()), "{args:?}");
    let wd = sample_workdir("perm_sample_corpus");
    let run = run_readme_command(&wd, args);
    run.expect_code(2);
    assert_eq!(run.stderr.trim_end(), SAMPLE_CORPUS_MESSAGE, "{run}");
    assert_eq!(run.stdout, "", "{run}");
    assert_same_lines(
        "labels_missing_from_corpus.txt",
        &wd.read("out/corpus-check/labels_missing_from_corpus.txt"),
        &fs::read(sample_path("expected/labels_missing_from_corpus.txt")).expect("expected file"),
    );
    assert_eq!(
        wd.read_text("out/corpus-check/labels_missing_from_corpus.txt"),
        "KB-0042\n"
    );
    for file in ["per_query.csv", "aggregates.csv", "summary.json"] {
        assert!(
            !wd.exists(&format!("out/corpus-check/{file}")),
            "{file} written although nothing was graded"
        );
    }

    // Without -o.
    let without_out: Vec<String> = {
        let at = args.iter().position(|a| a == "-o").expect("-o");
        let mut v = args.clone();
        v.drain(at..at + 2);
        v
    };
    let run = run_readme_command(&wd, &without_out);
    run.expect_code(2).expect_stderr(&[
        "corpus.txt: 1 of 15 labeled doc ids are not in the corpus (e.g. KB-0042); \
         use -o DIR to list them all",
    ]);

    // The snapshot with the id: grading goes ahead (and the leak decides).
    let mut corpus = sample_text("corpus.txt");
    corpus.push_str("KB-0042\n");
    wd.write(&format!("{SAMPLE}/corpus.txt"), corpus);
    let run = run_readme_command(&wd, args);
    run.expect_code(1)
        .expect_stderr(&["logs.jsonl:15: query q_refund got refund_approvals"]);
    assert!(wd.exists("out/corpus-check/per_query.csv"));
}

/// A parsed JSONL file, one value per non-blank line, with its line number.
fn jsonl(text: &str) -> Vec<(u64, Value)> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            (
                i as u64 + 1,
                serde_json::from_str(l).unwrap_or_else(|e| panic!("line {}: {e}", i + 1)),
            )
        })
        .collect()
}

/// A result's doc id (a string, or an object's `doc_id`).
fn result_doc(result: &Value) -> String {
    match result {
        Value::String(s) => s.clone(),
        other => other["doc_id"].as_str().expect("doc_id").to_string(),
    }
}

/// The key numbers of the sample, recomputed from its inputs: the leak
/// list and permission counts, `unauthorized` per query, `leaks` per
/// grouping set, the stale labels (numbers, sample, every slice), the
/// scores the leak costs and the evidence lost between stages.
#[test]
fn sample_numbers_follow_from_the_inputs() {
    let labels = jsonl(&sample_text("labels.jsonl"));
    let logs = jsonl(&sample_text("logs.jsonl"));
    let mapped: HashMap<String, String> = sample_text("doc_collections.csv")
        .lines()
        .skip(1)
        .map(|l| {
            let (doc, collection) = l.split_once(',').expect("two columns");
            (doc.to_string(), collection.to_string())
        })
        .collect();

    let wd = sample_workdir("perm_sample_numbers");
    let run = run_readme_command(&wd, &readme_commands()[0]);
    run.expect_code(1);
    let summary = wd.read_json("out/diagnostics/summary.json");
    let per_query = wd.read_csv("out/diagnostics/per_query.csv");
    let aggregates = wd.read_csv("out/diagnostics/aggregates.csv");

    // Leaks and records without permission data, from the raw records.
    let mut leaks = Vec::new();
    let mut without = 0;
    let mut unauthorized: HashMap<(String, String), u64> = HashMap::new();
    for (line, record) in &logs {
        let query = record["query_id"].as_str().expect("query_id").to_string();
        let stage = record["stage"].as_str().expect("stage").to_string();
        let Some(allowed) = record["allowed_collections"].as_array() else {
            without += 1;
            continue;
        };
        let allowed: Vec<&str> = allowed.iter().map(|a| a.as_str().expect("name")).collect();
        for result in record["results"].as_array().expect("results") {
            let doc = result_doc(result);
            let collection = result["collection"]
                .as_str()
                .map(String::from)
                .or_else(|| mapped.get(&doc).cloned());
            if let Some(c) = collection.filter(|c| !allowed.contains(&c.as_str())) {
                *unauthorized
                    .entry((stage.clone(), query.clone()))
                    .or_default() += 1;
                leaks.push(json!({
                    "query_id": query, "doc_id": doc, "collection": c,
                    "file": format!("{SAMPLE}/logs.jsonl"), "line": line,
                }));
            }
        }
    }
    assert_eq!(
        without, 21,
        "20 retrieve and rerank events and q_2fa's final"
    );
    assert_eq!(count(&summary, "records_without_permissions"), without);
    assert_eq!(count(&summary, "leaked_results"), leaks.len() as u64);
    assert_eq!(summary["leaks"], Value::Array(leaks.clone()));
    assert_eq!(
        leaks,
        [
            json!({"query_id": "q_refund", "doc_id": "refund_approvals", "collection": "finance",
                "file": "data-samples/diagnostics/logs.jsonl", "line": 15})
        ]
    );
    assert_eq!(count(&summary, "records"), 30);
    assert_eq!(count(&summary, "graded_records"), 30);
    assert_eq!(count(&summary, "graded"), 27, "9 ok queries at 3 stages");
    assert_eq!(count(&summary, "rejected"), 0);

    // unauthorized per row: the count for a captured query, empty when missing.
    let task_of: HashMap<String, (String, String)> = labels
        .iter()
        .map(|(_, l)| {
            (
                l["query_id"].as_str().expect("id").to_string(),
                (
                    l["task"].as_str().expect("task").to_string(),
                    l["language"].as_str().expect("language").to_string(),
                ),
            )
        })
        .collect();
    assert_eq!(per_query.rows.len(), 33, "11 queries at 3 stages");
    for r in per_query.records() {
        let key = (r["stage"].clone(), r["query_id"].clone());
        let want = match r["status"].as_str() {
            "missing" => String::new(),
            _ => unauthorized.get(&key).copied().unwrap_or(0).to_string(),
        };
        assert_text(&r, "unauthorized", &want);
    }

    // leaks per grouping set: the queries of the set with unauthorized > 0.
    for r in aggregates.records() {
        let leaking = unauthorized
            .iter()
            .filter(|((stage, query), n)| {
                let (task, language) = &task_of[query];
                *stage == r["stage"]
                    && **n > 0
                    && (r["task"] == "*" || r["task"] == *task)
                    && (r["language"] == "*" || r["language"] == *language)
            })
            .count();
        assert_text(&r, "leaks", &leaking.to_string());
    }
    let leaking_sets: Vec<(String, String, String)> = aggregates
        .records()
        .into_iter()
        .filter(|r| r["leaks"] != "0")
        .map(|r| (r["stage"].clone(), r["task"].clone(), r["language"].clone()))
        .collect();
    let set = |s: &str, t: &str, l: &str| (s.to_string(), t.to_string(), l.to_string());
    assert_eq!(
        leaking_sets,
        [
            set("final", "*", "*"),
            set("final", "billing", "*"),
            set("final", "*", "en"),
            set("final", "billing", "en"),
        ]
    );

    // What the leak costs q_refund: refund_policy keeps rank 2.
    let refund = row(&per_query, "final", "q_refund");
    for (column, want) in [
        ("recall@1", 0.0),
        ("rr@1", 0.0),
        ("recall@3", 0.5),
        ("rr@3", 0.5),
        ("hit@3", 1.0),
        ("precision@3", 1.0 / 3.0),
        ("ndcg@3", (1.0 / 3f64.log2()) / (1.0 + 1.0 / 3f64.log2())),
        ("ap@3", 0.25),
        ("first_rel_rank", 2.0),
        ("n_results", 3.0),
    ] {
        assert_cell(&refund, column, want);
    }
    assert_text(&refund, "missing_at_3", "refund_approvals");
    let before = row(&per_query, "rerank", "q_refund");
    assert_cell(&before, "rr@3", 1.0);
    assert_cell(&before, "recall@3", 1.0);
    assert_text(&before, "unauthorized", "0");
    // q_2fa's final result from support_internal is not checked: no allowed list.
    assert_text(&row(&per_query, "final", "q_2fa"), "unauthorized", "0");
    assert_cell(&row(&per_query, "final", "q_2fa"), "recall@3", 1.0);

    // Stale labels: the positive-grade documents of the captured queries,
    // unseen when no capture of their own query returned them.
    let mut returned: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (_, record) in &logs {
        let query = record["query_id"].as_str().expect("query_id").to_string();
        let docs = record["results"].as_array().expect("results");
        returned
            .entry(query)
            .or_default()
            .extend(docs.iter().map(result_doc));
    }
    let mut sets: BTreeMap<(u8, String, String), (u64, u64)> = BTreeMap::new();
    let (mut labeled, mut unseen, mut sample) = (0u64, 0u64, Vec::<String>::new());
    for (_, label) in &labels {
        let query = label["query_id"].as_str().expect("id");
        let Some(seen) = returned.get(query) else {
            continue;
        };
        let positive: Vec<String> = match &label["relevant"] {
            Value::Array(ids) => ids.iter().map(|i| i.as_str().expect("id").into()).collect(),
            Value::Object(grades) => grades
                .iter()
                .filter(|(_, g)| g.as_i64().expect("grade") > 0)
                .map(|(d, _)| d.clone())
                .collect(),
            other => panic!("relevant {other}"),
        };
        let mut missing: Vec<String> = positive
            .iter()
            .filter(|d| !seen.contains(*d))
            .cloned()
            .collect();
        missing.sort();
        labeled += positive.len() as u64;
        unseen += missing.len() as u64;
        let (task, language) = &task_of[query];
        for key in [
            (0, task.clone(), "*".to_string()),
            (1, "*".to_string(), language.clone()),
            (2, task.clone(), language.clone()),
        ] {
            let entry = sets.entry(key).or_default();
            entry.0 += positive.len() as u64;
            entry.1 += missing.len() as u64;
        }
        for id in missing {
            if !sample.contains(&id) {
                sample.push(id);
            }
        }
    }
    let stale = &summary["stale_labels"];
    assert_eq!((labeled, unseen), (14, 1));
    assert_eq!(stale["labeled"].as_u64(), Some(labeled));
    assert_eq!(stale["unseen"].as_u64(), Some(unseen));
    assert_eq!(stale["fraction"].as_f64(), Some(1.0 / 14.0));
    assert_eq!(stale["sample"], json!(sample));
    assert_eq!(sample, ["KB-0042"]);
    let by_slice: Vec<Value> = sets
        .into_iter()
        .map(|((_, task, language), (labeled, unseen))| {
            json!({"task": task, "language": language, "labeled": labeled, "unseen": unseen})
        })
        .collect();
    assert_eq!(stale["by_slice"], Value::Array(by_slice), "{stale:#}");
    assert!(
        !run.stderr.contains("warning"),
        "1 of 14 unseen is no reason to warn\n{run}"
    );

    // Evidence lost between stages, as the README tells it.
    let loss = wd.read_csv("out/diagnostics/stage_loss_per_query.csv");
    let lost: Vec<(String, String, String, String)> = loss
        .records()
        .into_iter()
        .filter(|r| r["lost"] != "0")
        .map(|r| {
            (
                r["query_id"].clone(),
                r["from_stage"].clone(),
                r["to_stage"].clone(),
                r["lost_ids"].clone(),
            )
        })
        .collect();
    let l = |q: &str, f: &str, t: &str, ids: &str| {
        (q.to_string(), f.to_string(), t.to_string(), ids.to_string())
    };
    assert_eq!(
        lost,
        [
            l("q_reset", "retrieve", "rerank", "reset_limits"),
            l("q_refund", "rerank", "final", "refund_approvals"),
            l("q_sso_de", "rerank", "final", "sso_setup_de"),
        ]
    );
    let totals = wd.read_csv("out/diagnostics/stage_loss.csv");
    let overall =
        |from: &str| totals.row(&[("task", "*"), ("language", "*"), ("from_stage", from)]);
    assert_text(&overall("retrieve"), "relevant_found", "13");
    assert_text(&overall("retrieve"), "lost", "1");
    assert_text(&overall("rerank"), "relevant_found", "12");
    assert_text(&overall("rerank"), "lost", "2");
}

// ---------------------------------------------------------------------
// Permissions, hand cases
// ---------------------------------------------------------------------

/// Two labeled queries: q1 (a, b relevant; g judged 0) and q2 (c).
const LABELS: &str = concat!(
    r#"{"query_id": "q1", "relevant": {"a": 1, "b": 1, "g": 0}, "task": "t1", "language": "en"}"#,
    "\n",
    r#"{"query_id": "q2", "relevant": ["c"], "task": "t2", "language": "de"}"#,
    "\n",
);

/// Grade `logs` (one file, logs.jsonl) against [`LABELS`] at k = 1,3
/// into `out`, with `extra` options.
fn grade_logs(wd: &Workdir, logs: &[&str], extra: &[&str]) -> Run {
    wd.write("labels.jsonl", LABELS);
    wd.write("logs.jsonl", text(logs));
    let mut args = vec!["--labels", "labels.jsonl", "-k", "1,3", "-q", "-o", "out"];
    args.extend_from_slice(extra);
    args.push("logs.jsonl");
    grade(wd, &args)
}

/// A result outside the allowed collections keeps its rank: the relevant
/// document after it is scored at rank 2, not moved up to 1, and the
/// unauthorized relevant document counts for nothing.
#[test]
fn an_unauthorized_result_keeps_its_rank() {
    let wd = Workdir::new("perm_rank_kept");
    let run = grade_logs(
        &wd,
        &[
            r#"{"query_id": "q1", "allowed_collections": ["pub"], "results": [{"doc_id": "a", "collection": "hr"}, {"doc_id": "b", "collection": "pub"}, {"doc_id": "x", "collection": "fin"}, "y"]}"#,
        ],
        &["--max-leaks", "2"],
    );
    run.expect_code(0);
    let per_query = wd.read_csv("out/per_query.csv");
    let q1 = row(&per_query, "final", "q1");
    for (column, want) in [
        ("n_results", 4.0),
        ("first_rel_rank", 2.0),
        ("unauthorized", 2.0),
        ("recall@1", 0.0),
        ("rr@1", 0.0),
        ("precision@1", 0.0),
        ("recall@3", 0.5),
        ("rr@3", 0.5),
        ("hit@3", 1.0),
        ("precision@3", 1.0 / 3.0),
        ("ndcg@3", (1.0 / 3f64.log2()) / (1.0 + 1.0 / 3f64.log2())),
        ("ap@3", 0.25),
    ] {
        assert_cell(&q1, column, want);
    }
    assert_text(&q1, "missing_at_3", "a");
    // q2 was not captured: no unauthorized count.
    assert_text(&row(&per_query, "final", "q2"), "unauthorized", "");
    let aggregates = wd.read_csv("out/aggregates.csv");
    let leaks: Vec<String> = aggregates.column("leaks");
    // *,*  t1,*  t2,*  *,de  *,en  t1,en  t2,de
    assert_eq!(
        leaks,
        ["1", "1", "0", "0", "1", "1", "0"],
        "{}",
        aggregates.dump()
    );
    let summary = wd.read_json("out/summary.json");
    assert_eq!(count(&summary, "leaked_results"), 2);
    assert_eq!(
        summary["leaks"],
        json!([
            {"query_id": "q1", "doc_id": "a", "collection": "hr", "file": "logs.jsonl", "line": 1},
            {"query_id": "q1", "doc_id": "x", "collection": "fin", "file": "logs.jsonl", "line": 1},
        ])
    );
}

/// `--allowed-field` and `--collection-field` as JSON pointers: the
/// record's `/user/acl` and each result's `/meta/coll` decide; the default
/// keys, present with other values, are ignored.
#[test]
fn json_pointer_fields() {
    let wd = Workdir::new("perm_pointers");
    let logs = [
        r#"{"query_id": "q1", "user": {"acl": ["pub"]}, "allowed_collections": ["hr"], "results": [{"doc_id": "a", "meta": {"coll": "hr"}, "collection": "pub"}, {"doc_id": "b", "meta": {"coll": "pub"}, "collection": "hr"}]}"#,
        r#"{"query_id": "q2", "user": {"acl": ["pub", "hr"]}, "allowed_collections": [], "results": [{"doc_id": "c", "meta": {"coll": "hr"}}]}"#,
    ];
    let run = grade_logs(
        &wd,
        &logs,
        &[
            "--allowed-field",
            "/user/acl",
            "--collection-field",
            "/meta/coll",
            "--max-leaks",
            "1",
        ],
    );
    run.expect_code(0);
    let per_query = wd.read_csv("out/per_query.csv");
    let q1 = row(&per_query, "final", "q1");
    assert_text(&q1, "unauthorized", "1");
    assert_cell(&q1, "rr@3", 0.5);
    assert_text(&q1, "missing_at_3", "a");
    let q2 = row(&per_query, "final", "q2");
    assert_text(&q2, "unauthorized", "0");
    assert_cell(&q2, "rr@1", 1.0);
    let summary = wd.read_json("out/summary.json");
    assert_eq!(
        summary["leaks"],
        json!([{"query_id": "q1", "doc_id": "a", "collection": "hr", "file": "logs.jsonl", "line": 1}])
    );
    assert_eq!(count(&summary, "records_without_permissions"), 0);

    // With the default fields: allowed [hr], and a in pub is the outsider
    // again, by other fields (mixing a pointer with a default key would
    // leave b outside instead).
    let run = grade_logs(&wd, &logs, &["--max-leaks", "9"]);
    run.expect_code(0);
    let per_query = wd.read_csv("out/per_query.csv");
    let q1 = row(&per_query, "final", "q1");
    assert_text(&q1, "unauthorized", "1");
    assert_text(&q1, "missing_at_3", "a");
    // allowed_collections [] allows nothing, but c names no `collection`.
    assert_text(&row(&per_query, "final", "q2"), "unauthorized", "0");
}

/// `--doc-collections`: results that name no collection take the mapped
/// one (bare ids and objects alike, gzip or plain CSV, columns in any
/// order, extra columns ignored); a result's own collection wins over the
/// map; a doc in neither is allowed.
#[test]
fn doc_collections_map_results_that_name_none() {
    let wd = Workdir::new("perm_doc_collections");
    let csv = text(&[
        "collection,note,doc_id",
        "hr,old,a",
        "pub,,b",
        "hr,,c",
        "hr,same again,a",
    ]);
    wd.write("map.csv", &csv);
    wd.write_gz("map.csv.gz", &csv);
    let logs = [
        r#"{"query_id": "q1", "allowed_collections": ["pub"], "results": ["a", {"doc_id": "b"}, "y"]}"#,
        r#"{"query_id": "q2", "allowed_collections": ["pub"], "results": [{"doc_id": "c", "collection": "pub"}]}"#,
    ];
    for map in ["map.csv", "map.csv.gz"] {
        let run = grade_logs(&wd, &logs, &["--doc-collections", map]);
        run.expect_code(1).expect_stderr(&[
            "1 result outside the user's allowed collections exceeds --max-leaks 0; \
             the first is logs.jsonl:1: query q1 got a from collection hr",
        ]);
        let per_query = wd.read_csv("out/per_query.csv");
        let q1 = row(&per_query, "final", "q1");
        assert_text(&q1, "unauthorized", "1");
        assert_cell(&q1, "rr@1", 0.0);
        assert_cell(&q1, "rr@3", 0.5);
        assert_cell(&q1, "recall@3", 0.5);
        let q2 = row(&per_query, "final", "q2");
        assert_text(&q2, "unauthorized", "0");
        assert_cell(&q2, "rr@1", 1.0);
    }
    // Without the map nothing can be checked.
    let run = grade_logs(&wd, &logs, &[]);
    run.expect_code(0);
    let per_query = wd.read_csv("out/per_query.csv");
    assert_text(&row(&per_query, "final", "q1"), "unauthorized", "0");
    assert_cell(&row(&per_query, "final", "q1"), "rr@1", 1.0);
}

/// A map that puts one doc in two collections, or lacks a column, or a
/// row without a collection cell, or no file at all: exit 2 before
/// grading, naming the file (and line).
#[test]
fn doc_collections_errors_exit_2() {
    let wd = Workdir::new("perm_doc_collections_errors");
    let logs = [r#"{"query_id": "q1", "allowed_collections": ["pub"], "results": ["a"]}"#];
    wd.write(
        "twice.csv",
        text(&["doc_id,collection", "a,hr", "b,pub", "a,pub"]),
    );
    wd.write_gz(
        "twice.csv.gz",
        text(&["doc_id,collection", "b,pub", "a,hr", "a,fin"]),
    );
    wd.write("no_collection.csv", text(&["doc_id,group", "a,hr"]));
    wd.write("no_doc.csv", text(&["doc,collection", "a,hr"]));
    for (map, needles) in [
        (
            "twice.csv",
            vec!["twice.csv:4: doc a is in collection pub here but in hr on an earlier line"],
        ),
        (
            "twice.csv.gz",
            vec!["twice.csv.gz:4: doc a is in collection fin here but in hr"],
        ),
        (
            "no_collection.csv",
            vec!["no_collection.csv:1: no 'collection' column"],
        ),
        ("no_doc.csv", vec!["no_doc.csv:1: no 'doc_id' column"]),
        ("absent.csv", vec!["absent.csv: cannot open"]),
    ] {
        let run = grade_logs(&wd, &logs, &["--doc-collections", map]);
        run.expect_code(2).expect_stderr(&needles);
        assert!(!wd.exists("out/per_query.csv"), "graded with {map}\n{run}");
    }
    // A short row names its file; the line is checked loosely (see report).
    wd.write("short.csv", text(&["doc_id,collection", "a"]));
    let run = grade_logs(&wd, &logs, &["--doc-collections", "short.csv"]);
    run.expect_code(2).expect_stderr(&["short.csv:"]);
}

/// A result whose collection is unknown (no own collection, a `null` one,
/// not in the map) is allowed; a record with `allowed_collections: null`
/// has no permission data; `[]` allows no known collection.
#[test]
fn unknown_collections_are_allowed() {
    let wd = Workdir::new("perm_unknown");
    wd.write("map.csv", text(&["doc_id,collection", "z,hr"]));
    let run = grade_logs(
        &wd,
        &[
            r#"{"query_id": "q1", "allowed_collections": ["pub"], "results": ["y", {"doc_id": "a", "collection": null}, {"id": "b"}]}"#,
            r#"{"query_id": "q1", "stage": "s2", "allowed_collections": null, "results": [{"doc_id": "a", "collection": "hr"}]}"#,
            r#"{"query_id": "q1", "stage": "s3", "allowed_collections": [], "results": [{"doc_id": "a", "collection": "pub"}, "b", "z"]}"#,
        ],
        &["--doc-collections", "map.csv", "--max-leaks", "2"],
    );
    run.expect_code(0);
    let per_query = wd.read_csv("out/per_query.csv");
    let final_q1 = row(&per_query, "final", "q1");
    assert_text(&final_q1, "unauthorized", "0");
    assert_cell(&final_q1, "recall@3", 1.0);
    assert_text(&row(&per_query, "s2", "q1"), "unauthorized", "0");
    let s3 = row(&per_query, "s3", "q1");
    assert_text(&s3, "unauthorized", "2");
    assert_cell(&s3, "rr@3", 0.5);
    let summary = wd.read_json("out/summary.json");
    assert_eq!(count(&summary, "records_without_permissions"), 1);
    assert_eq!(count(&summary, "leaked_results"), 2);
}

/// A collection that is not a string, or an allowed field that is not an
/// array of strings, rejects the record as `bad_field`; its query, with
/// no other capture, is `invalid`.
#[test]
fn bad_permission_fields_are_rejected() {
    let wd = Workdir::new("perm_bad_field");
    let run = grade_logs(
        &wd,
        &[
            r#"{"query_id": "q1", "allowed_collections": ["pub"], "results": [{"doc_id": "a", "collection": "pub"}, {"doc_id": "b", "collection": 3}]}"#,
            r#"{"query_id": "q1", "stage": "s2", "allowed_collections": "pub", "results": ["a"]}"#,
            r#"{"query_id": "q1", "stage": "s3", "allowed_collections": ["pub", 1], "results": ["a"]}"#,
            r#"{"query_id": "q1", "stage": "s4", "allowed_collections": {"pub": true}, "results": ["a"]}"#,
            r#"{"query_id": "q2", "stage": "s4", "allowed_collections": ["pub"], "results": [{"doc_id": "c", "collection": ["pub"]}]}"#,
            r#"{"query_id": "q2", "allowed_collections": ["pub"], "results": ["c"]}"#,
        ],
        &["--max-rejects", "5"],
    );
    run.expect_code(0);
    let rejects = wd.read_jsonl("out/rejects.jsonl");
    let got: Vec<(u64, &str, &str)> = rejects
        .iter()
        .map(|r| {
            (
                r["line"].as_u64().expect("line"),
                r["reason"].as_str().expect("reason"),
                r["detail"].as_str().expect("detail"),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (1, "bad_field", "result 2: 'collection' must be a string"),
            (
                2,
                "bad_field",
                "'allowed_collections' must be an array of strings"
            ),
            (
                3,
                "bad_field",
                "'allowed_collections' must be an array of strings"
            ),
            (
                4,
                "bad_field",
                "'allowed_collections' must be an array of strings"
            ),
            (5, "bad_field", "result 1: 'collection' must be a string"),
        ]
    );
    let per_query = wd.read_csv("out/per_query.csv");
    for stage in ["final", "s2", "s3", "s4"] {
        let q1 = row(&per_query, stage, "q1");
        assert_text(&q1, "status", "invalid");
        assert_text(&q1, "unauthorized", "");
    }
    assert_text(&row(&per_query, "s4", "q2"), "status", "invalid");
    assert_text(&row(&per_query, "final", "q2"), "status", "ok");
    let summary = wd.read_json("out/summary.json");
    assert_eq!(count(&summary, "rejected"), 5);
    assert_eq!(count(&summary, "records_without_permissions"), 0);
    assert_eq!(count(&summary, "leaked_results"), 0);
    assert_counts_add_up(&summary);
}

/// Under `--duplicate-docs dedupe` the first occurrence decides: a
/// repeated unauthorized doc counts once in `unauthorized`, the gap
/// closes, and a doc allowed at its first occurrence is allowed.
#[test]
fn dedupe_counts_unauthorized_after_dedupe() {
    let wd = Workdir::new("perm_dedupe");
    let run = grade_logs(
        &wd,
        &[
            r#"{"query_id": "q1", "allowed_collections": ["pub"], "results": [{"doc_id": "x", "collection": "hr"}, {"doc_id": "x", "collection": "hr"}, "a"]}"#,
            r#"{"query_id": "q2", "allowed_collections": ["pub"], "results": [{"doc_id": "c", "collection": "pub"}, {"doc_id": "c", "collection": "hr"}]}"#,
        ],
        &["--duplicate-docs", "dedupe", "--max-leaks", "9"],
    );
    run.expect_code(0);
    let per_query = wd.read_csv("out/per_query.csv");
    let q1 = row(&per_query, "final", "q1");
    assert_text(&q1, "unauthorized", "1");
    assert_text(&q1, "n_results", "2");
    assert_cell(&q1, "rr@3", 0.5);
    let q2 = row(&per_query, "final", "q2");
    assert_text(&q2, "unauthorized", "0");
    assert_text(&q2, "n_results", "1");
    assert_cell(&q2, "rr@1", 1.0);
}

/// Under dedupe, a repeated unauthorized result was shown once: summary.json
/// counts and lists it once, as per_query.csv does.
#[test]
fn dedupe_lists_a_repeated_leak_once() {
    let wd = Workdir::new("perm_dedupe_leaks");
    let run = grade_logs(
        &wd,
        &[
            r#"{"query_id": "q1", "allowed_collections": ["pub"], "results": [{"doc_id": "x", "collection": "hr"}, {"doc_id": "x", "collection": "hr"}, "a"]}"#,
        ],
        &["--duplicate-docs", "dedupe", "--max-leaks", "1"],
    );
    run.expect_code(0);
    let summary = wd.read_json("out/summary.json");
    assert_eq!(count(&summary, "leaked_results"), 1);
    assert_eq!(summary["leaks"].as_array().map(Vec::len), Some(1));
}

/// A record rejected as `duplicate_doc` is not a valid record: its
/// unauthorized results are neither counted nor listed.
#[test]
fn a_rejected_record_has_no_leaks() {
    let wd = Workdir::new("perm_rejected_leaks");
    let run = grade_logs(
        &wd,
        &[
            r#"{"query_id": "q1", "allowed_collections": ["pub"], "results": [{"doc_id": "x", "collection": "hr"}, "a", "a"]}"#,
        ],
        &["--max-rejects", "1"],
    );
    run.expect_code(0);
    let summary = wd.read_json("out/summary.json");
    assert_eq!(count(&summary, "leaked_results"), 0);
    assert_eq!(summary["leaks"], json!([]));
}

/// records_without_permissions counts the valid records of graded stages
/// that name no allowed list, labeled or not; not rejected records, not
/// records of a stage left out by `--stage`, not those that carry one.
#[test]
fn records_without_permissions_are_counted() {
    let wd = Workdir::new("perm_without");
    let logs = [
        r#"{"query_id": "q1", "results": ["a"]}"#,
        r#"{"query_id": "q2", "allowed_collections": ["pub"], "results": ["c"]}"#,
        r#"{"query_id": "unlabeled", "results": ["a"]}"#,
        r#"{"query_id": "unlabeled", "allowed_collections": [], "results": ["a"]}"#,
        r#"{"query_id": "q1", "stage": "retrieve", "results": ["a"]}"#,
        r#"{"query_id": "unlabeled", "stage": "final", "results": "c"}"#,
        r#"{"query_id": "q1", "stage": "final", "run": "other", "allowed_collections": null, "results": ["b"]}"#,
    ];
    let run = grade_logs(&wd, &logs, &["--stage", "final", "--max-rejects", "1"]);
    run.expect_code(0);
    let summary = wd.read_json("out/summary.json");
    assert_eq!(
        count(&summary, "records_without_permissions"),
        3,
        "lines 1, 3, 7"
    );
    assert_eq!(count(&summary, "other_stage_events"), 1);
    assert_eq!(count(&summary, "rejected"), 1);
    assert_eq!(count(&summary, "leaked_results"), 0);
    assert_counts_add_up(&summary);
    // Without --stage the retrieve record counts too.
    let run = grade_logs(&wd, &logs, &["--max-rejects", "1"]);
    run.expect_code(0);
    let summary = wd.read_json("out/summary.json");
    assert_eq!(count(&summary, "records_without_permissions"), 4);
}

/// A leak in a record of an unlabeled query counts (and is listed, and
/// fails the run) though nothing of it is graded; leaks of a stage left
/// out by `--stage` do not.
#[test]
fn leaks_in_unlabeled_records_are_counted() {
    let wd = Workdir::new("perm_unlabeled_leaks");
    let logs = [
        r#"{"query_id": "q1", "allowed_collections": ["pub"], "results": ["a"]}"#,
        r#"{"query_id": "q1", "stage": "retrieve", "allowed_collections": ["pub"], "results": [{"doc_id": "s", "collection": "hr"}]}"#,
        r#"{"query_id": "nobody", "allowed_collections": ["pub"], "results": [{"doc_id": "secret", "collection": "hr"}, "a"]}"#,
    ];
    let run = grade_logs(&wd, &logs, &["--stage", "final"]);
    run.expect_code(1).expect_stderr(&[
        "rgrade: 1 result outside the user's allowed collections exceeds --max-leaks 0; \
         the first is logs.jsonl:3: query nobody got secret from collection hr",
    ]);
    let summary = wd.read_json("out/summary.json");
    assert_eq!(count(&summary, "unlabeled_events"), 1);
    assert_eq!(count(&summary, "leaked_results"), 1);
    assert_eq!(
        summary["leaks"],
        json!([{"query_id": "nobody", "doc_id": "secret", "collection": "hr", "file": "logs.jsonl", "line": 3}])
    );
    let per_query = wd.read_csv("out/per_query.csv");
    assert_text(&row(&per_query, "final", "q1"), "unauthorized", "0");
    assert!(wd
        .read_csv("out/aggregates.csv")
        .column("leaks")
        .iter()
        .all(|l| l == "0"));
}

/// `--max-leaks N` tolerates exactly N unauthorized results: N - 1 exits
/// 1 (every output written, the message naming the first leak), N exits
/// 0; rejects beyond `--max-rejects` and leaks beyond `--max-leaks` both
/// speak.
#[test]
fn max_leaks_boundary() {
    let wd = Workdir::new("perm_max_leaks");
    let logs = [
        r#"{"query_id": "q2", "allowed_collections": ["pub"], "results": ["c"]}"#,
        r#"{"query_id": "q1", "allowed_collections": ["pub"], "results": [{"doc_id": "x", "collection": "hr"}, "a", {"doc_id": "b", "collection": "fin"}]}"#,
        r#"{"query_id": "q1", "stage": "s2", "allowed_collections": ["hr"], "results": [{"doc_id": "a", "collection": "pub"}]}"#,
    ];
    for (max, code) in [
        (None, 1),
        (Some("1"), 1),
        (Some("2"), 1),
        (Some("3"), 0),
        (Some("4"), 0),
    ] {
        let _ = fs::remove_dir_all(wd.path("out"));
        let extra: Vec<&str> = max.map_or_else(Vec::new, |m| vec!["--max-leaks", m]);
        let run = grade_logs(&wd, &logs, &extra);
        run.expect_code(code);
        for file in [
            "per_query.csv",
            "aggregates.csv",
            "summary.json",
            "rejects.jsonl",
        ] {
            assert!(
                wd.exists(&format!("out/{file}")),
                "{file} not written\n{run}"
            );
        }
        if code == 1 {
            let limit = max.unwrap_or("0");
            run.expect_stderr(&[&format!(
                "rgrade: 3 results outside the user's allowed collections exceed --max-leaks \
                 {limit}; the first is logs.jsonl:2: query q1 got x from collection hr"
            )]);
        } else {
            assert_eq!(run.stderr, "", "{run}");
        }
    }
    // Both checks fail: both messages, exit 1.
    let mut with_reject = logs.to_vec();
    with_reject.push("not json");
    let run = grade_logs(&wd, &with_reject, &["--max-leaks", "2"]);
    run.expect_code(1).expect_stderr(&[
        "3 results outside the user's allowed collections exceed --max-leaks 2",
        "1 rejected record exceeds --max-rejects 0; the first is logs.jsonl:4: invalid_json",
    ]);
}

/// `unauthorized` under `--repeats`: the mean over graded captures, or
/// the chosen capture's count; `leaks` counts a query whose value is > 0.
/// leaked_results counts every valid record, superseded ones included.
#[test]
fn repeats_and_unauthorized() {
    let wd = Workdir::new("perm_repeats");
    let logs = [
        r#"{"query_id": "q1", "allowed_collections": ["pub"], "results": [{"doc_id": "a", "collection": "hr"}, {"doc_id": "x", "collection": "hr"}, "b"]}"#,
        r#"{"query_id": "q1", "allowed_collections": ["pub"], "results": ["a", "b"]}"#,
        r#"{"query_id": "q1", "allowed_collections": ["pub"], "results": ["b", {"doc_id": "a", "collection": "hr"}]}"#,
    ];
    for (policy, unauthorized, rr3, leaks) in [
        ("mean", "1", (1.0 / 3.0 + 1.0 + 1.0) / 3.0, "1"),
        ("first", "2", 1.0 / 3.0, "1"),
        ("last", "1", 1.0, "1"),
    ] {
        let run = grade_logs(&wd, &logs, &["--repeats", policy, "--max-leaks", "3"]);
        run.expect_code(0);
        let per_query = wd.read_csv("out/per_query.csv");
        let q1 = row(&per_query, "final", "q1");
        assert_text(&q1, "unauthorized", unauthorized);
        assert_cell(&q1, "rr@3", rr3);
        let aggregates = wd.read_csv("out/aggregates.csv");
        assert_text(
            &aggregates.row(&[("task", "*"), ("language", "*")]),
            "leaks",
            leaks,
        );
        let summary = wd.read_json("out/summary.json");
        assert_eq!(count(&summary, "leaked_results"), 3, "{policy}");
    }
    // The mean can be a fraction.
    let run = grade_logs(&wd, &logs[1..], &["--repeats", "mean", "--max-leaks", "3"]);
    run.expect_code(0);
    let q1 = row(&wd.read_csv("out/per_query.csv"), "final", "q1");
    assert_text(&q1, "unauthorized", "0.5");
    // Last without leaks: the query has none, though a superseded record did.
    let run = grade_logs(&wd, &logs[..2], &["--repeats", "last", "--max-leaks", "2"]);
    run.expect_code(0);
    let aggregates = wd.read_csv("out/aggregates.csv");
    assert!(
        aggregates.column("leaks").iter().all(|l| l == "0"),
        "{}",
        aggregates.dump()
    );
    assert_eq!(
        count(&wd.read_json("out/summary.json"), "leaked_results"),
        2
    );
}

/// The leak list holds the first 100 leaks in input order (files in the
/// order given, then line), labeled or not, across many blocks, and is
/// the same with one thread or two; leaked_results counts them all.
#[test]
fn leak_list_is_capped_at_100_in_input_order() {
    let wd = Workdir::new("perm_leak_list");
    wd.write("labels.jsonl", LABELS);
    // Three files of about 1.4 MB (more than one block each): every
    // record padded, one leak in two records, some records with two.
    let pad = "p".repeat(2000);
    let mut want: Vec<Value> = Vec::new();
    let mut total = 0u64;
    let files = ["b_first.jsonl", "a_second.jsonl", "c_third.jsonl"];
    for (f, file) in files.iter().enumerate() {
        let mut lines = Vec::new();
        for i in 0..700usize {
            let query = match i % 3 {
                0 => "q1".to_string(),
                1 => "q2".to_string(),
                _ => format!("u{f}_{i}"),
            };
            let mut results = vec![json!("a")];
            let mut leaked = Vec::new();
            if i % 2 == 0 {
                leaked.push((format!("s{f}_{i}"), "hr"));
            }
            if i % 10 == 4 {
                leaked.push((format!("t{f}_{i}"), "fin"));
            }
            for (doc, collection) in &leaked {
                results.push(json!({"doc_id": doc, "collection": collection}));
                total += 1;
                want.push(
                    json!({"query_id": query, "doc_id": doc, "collection": collection,
                                 "file": file, "line": i + 1}),
                );
            }
            let stage = format!("s{}", i % 4);
            lines.push(
                json!({"query_id": query, "stage": stage, "pad": pad, "allowed_collections": ["pub"], "results": results})
                    .to_string(),
            );
        }
        wd.write(file, lines.join("\n") + "\n");
    }
    want.truncate(100);
    let mut summaries = Vec::new();
    for threads in ["1", "2"] {
        let out = format!("out{threads}");
        let run = grade(
            &wd,
            &[
                "--labels",
                "labels.jsonl",
                "-k",
                "3",
                "-q",
                "--repeats",
                "mean",
                "-j",
                threads,
                "-o",
                out.as_str(),
                files[0],
                files[1],
                files[2],
            ],
        );
        run.expect_code(1).expect_stderr(&[&format!(
            "rgrade: {total} results outside the user's allowed collections exceed --max-leaks 0; \
             the first is b_first.jsonl:1: query q1 got s0_0 from collection hr"
        )]);
        let summary = wd.read_json(&format!("{out}/summary.json"));
        assert_eq!(count(&summary, "leaked_results"), total);
        assert_eq!(summary["leaks"], Value::Array(want.clone()), "-j {threads}");
        summaries.push(summary);
        for file in ["per_query.csv", "aggregates.csv"] {
            assert_same_lines(
                &format!("{file} -j {threads} against -j 1"),
                &wd.read(&format!("{out}/{file}")),
                &wd.read(&format!("out1/{file}")),
            );
        }
    }
    assert_eq!(summaries[0]["counts"], summaries[1]["counts"]);
    // In the order given: a later file's leaks come after.
    let run = grade(
        &wd,
        &[
            "--labels",
            "labels.jsonl",
            "-k",
            "3",
            "-q",
            "--repeats",
            "mean",
            "-j",
            "2",
            "--max-leaks",
            "100000",
            "-o",
            "out_rev",
            files[2],
            files[0],
        ],
    );
    run.expect_code(0);
    let summary = wd.read_json("out_rev/summary.json");
    let listed = summary["leaks"].as_array().expect("leaks");
    assert_eq!(listed.len(), 100);
    assert!(listed.iter().all(|l| l["file"] == "c_third.jsonl"));
    assert_eq!(listed[0]["doc_id"], "s2_0");
}

// ---------------------------------------------------------------------
// Property: an unauthorized result is an unjudged result at its rank
// ---------------------------------------------------------------------

const P_DOCS: &[&str] = &["d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7"];
const P_COLLECTIONS: &[&str] = &["pub", "hr", "fin"];
const P_STAGES: &[&str] = &["final", "retrieve"];
const P_KS: [usize; 3] = [1, 3, 5];

#[derive(Debug, Clone)]
struct PResult {
    doc: &'static str,
    /// Its own collection, if it names one.
    collection: Option<&'static str>,
    /// Logged as an object (else a bare id, which can name no collection).
    object: bool,
}

#[derive(Debug, Clone)]
struct PRecord {
    /// Index into the labeled queries; one past the end is unlabeled.
    query: usize,
    stage: &'static str,
    allowed: Option<Vec<&'static str>>,
    results: Vec<PResult>,
}

#[derive(Debug, Clone)]
struct PCase {
    /// Per query, doc → grade.
    labels: Vec<BTreeMap<&'static str, u8>>,
    /// `--doc-collections`, if given.
    map: Option<BTreeMap<&'static str, &'static str>>,
    records: Vec<PRecord>,
}

fn p_query(i: usize) -> String {
    format!("q{i}")
}

fn p_result() -> impl Strategy<Value = (Option<&'static str>, bool)> {
    (
        weighted(0.6, proptest::sample::select(P_COLLECTIONS)),
        any::<bool>(),
    )
}

fn p_record(queries: usize) -> impl Strategy<Value = PRecord> {
    (
        0..=queries,
        proptest::sample::select(P_STAGES),
        weighted(0.7, subsequence(P_COLLECTIONS, 0..=3)),
        subsequence(P_DOCS, 0..=6).prop_shuffle(),
        vec(p_result(), 6),
    )
        .prop_map(|(query, stage, allowed, docs, attrs)| PRecord {
            query,
            stage,
            allowed: allowed.map(|a| a.to_vec()),
            results: docs
                .into_iter()
                .zip(attrs)
                .map(|(doc, (collection, object))| PResult {
                    doc,
                    collection: collection.filter(|_| object),
                    object,
                })
                .collect(),
        })
}

fn p_case() -> impl Strategy<Value = PCase> {
    (1usize..=3).prop_flat_map(|queries| {
        (
            vec(
                btree_map(proptest::sample::select(P_DOCS), 0u8..=3, 0..=4),
                queries,
            ),
            weighted(
                0.5,
                btree_map(
                    proptest::sample::select(P_DOCS),
                    proptest::sample::select(P_COLLECTIONS),
                    0..=6,
                ),
            ),
            vec(p_record(queries), 1..=8),
        )
            .prop_map(|(labels, map, records)| PCase {
                labels,
                map,
                records,
            })
    })
}

impl PCase {
    fn labels_jsonl(&self) -> String {
        self.labels
            .iter()
            .enumerate()
            .map(|(i, grades)| format!("{}\n", json!({"query_id": p_query(i), "relevant": grades})))
            .collect()
    }

    /// The collection rgrade should give a result: its own, else the map's.
    fn collection(&self, result: &PResult) -> Option<&'static str> {
        result
            .collection
            .or_else(|| self.map.as_ref().and_then(|m| m.get(result.doc).copied()))
    }

    /// Whether the result at `position` of `record` is unauthorized.
    fn outside(&self, record: &PRecord, result: &PResult) -> bool {
        match (&record.allowed, self.collection(result)) {
            (Some(allowed), Some(c)) => !allowed.contains(&c),
            _ => false,
        }
    }

    /// The logs: with permission data (`with`), without it, or without it
    /// and every unauthorized result replaced by an unjudged placeholder.
    fn logs(&self, variant: Variant) -> String {
        let mut out = String::new();
        for (line, record) in self.records.iter().enumerate() {
            let results: Vec<Value> = record
                .results
                .iter()
                .enumerate()
                .map(|(pos, r)| {
                    if variant == Variant::Placeholders && self.outside(record, r) {
                        return json!(format!("placeholder_{line}_{pos}"));
                    }
                    match (r.object, r.collection) {
                        (false, _) => json!(r.doc),
                        (true, Some(c)) => json!({"doc_id": r.doc, "collection": c}),
                        (true, None) => json!({"doc_id": r.doc}),
                    }
                })
                .collect();
            let mut value = json!({
                "query_id": p_query(record.query),
                "stage": record.stage,
                "results": results,
            });
            if let (Variant::WithPermissions, Some(allowed)) = (variant, &record.allowed) {
                value["allowed_collections"] = json!(allowed);
            }
            out.push_str(&format!("{value}\n"));
        }
        out
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Variant {
    WithPermissions,
    Without,
    Placeholders,
}

/// Grade one variant; per_query.csv and summary.json.
fn p_grade(wd: &Workdir, case: &PCase, variant: Variant) -> Result<(Table, Value), TestCaseError> {
    let name = format!("{variant:?}");
    wd.write(&format!("{name}.jsonl"), case.logs(variant));
    let out = format!("out_{name}");
    let mut args = vec![
        "--labels",
        "labels.jsonl",
        "-k",
        "1,3,5",
        "--repeats",
        "mean",
        "--max-leaks",
        "1000",
        "-q",
        "-j",
        "1",
        "-o",
        &out,
    ];
    if variant == Variant::WithPermissions && case.map.is_some() {
        args.extend_from_slice(&["--doc-collections", "map.csv"]);
    }
    let logs = format!("{name}.jsonl");
    args.push(&logs);
    let run = grade(wd, &args);
    prop_assert_eq!(run.status.code(), Some(0), "{}", run);
    Ok((
        wd.read_csv(&format!("{out}/per_query.csv")),
        wd.read_json(&format!("{out}/summary.json")),
    ))
}

fn p_check(case: &PCase) -> Result<(), TestCaseError> {
    let wd = Workdir::new("perm_prop");
    wd.write("labels.jsonl", case.labels_jsonl());
    if let Some(map) = &case.map {
        let mut csv = String::from("doc_id,collection\n");
        for (doc, collection) in map {
            csv.push_str(&format!("{doc},{collection}\n"));
        }
        wd.write("map.csv", csv);
    }
    let (with, summary) = p_grade(&wd, case, Variant::WithPermissions)?;
    let (without, _) = p_grade(&wd, case, Variant::Without)?;
    let (placeholders, _) = p_grade(&wd, case, Variant::Placeholders)?;

    // The counts in summary.json, from the case.
    let leaked: u64 = case
        .records
        .iter()
        .map(|r| r.results.iter().filter(|x| case.outside(r, x)).count() as u64)
        .sum();
    prop_assert_eq!(count(&summary, "leaked_results"), leaked);
    let unlisted = case.records.iter().filter(|r| r.allowed.is_none()).count() as u64;
    prop_assert_eq!(count(&summary, "records_without_permissions"), unlisted);
    prop_assert_eq!(
        summary["leaks"].as_array().map(Vec::len),
        Some(leaked.min(100) as usize)
    );

    prop_assert_eq!(&with.header, &without.header);
    prop_assert_eq!(with.rows.len(), without.rows.len());
    let metrics = metric_columns(&P_KS);
    let (w, b, p) = (with.records(), without.records(), placeholders.records());
    for ((w, b), p) in w.iter().zip(&b).zip(&p) {
        let key = (&w["run"], &w["stage"], &w["query_id"]);
        prop_assert_eq!(key, (&b["run"], &b["stage"], &b["query_id"]));
        // Exactly the placeholder grading, but for the unauthorized count.
        for column in &with.header {
            if column != "unauthorized" {
                prop_assert_eq!(&w[column], &p[column], "{} of {:?}", column, key);
            }
        }
        // Never above the grading without permission data.
        for column in &metrics {
            if w[column].is_empty() {
                prop_assert!(b[column].is_empty(), "{} of {:?}", column, key);
                continue;
            }
            let (got, base): (f64, f64) = (
                w[column].parse().expect("number"),
                b[column].parse().expect("number"),
            );
            prop_assert!(
                got <= base + 1e-12,
                "{} of {:?}: {} > {}",
                column,
                key,
                got,
                base
            );
        }
        let missing = "missing_at_5";
        let set = |s: &str| -> BTreeSet<String> {
            s.split('|')
                .filter(|x| !x.is_empty())
                .map(String::from)
                .collect()
        };
        prop_assert!(set(&w[missing]).is_superset(&set(&b[missing])), "{:?}", key);
        // unauthorized: the mean over the query's captures at that stage.
        let captures: Vec<&PRecord> = case
            .records
            .iter()
            .filter(|r| p_query(r.query) == *w["query_id"] && r.stage == w["stage"])
            .collect();
        let want = if captures.is_empty() {
            String::new()
        } else {
            let sum: usize = captures
                .iter()
                .map(|r| r.results.iter().filter(|x| case.outside(r, x)).count())
                .sum();
            (sum as f64 / captures.len() as f64).to_string()
        };
        prop_assert_eq!(&w["unauthorized"], &want, "{:?}", key);
        prop_assert!(
            b["unauthorized"] == "0" || b["unauthorized"].is_empty(),
            "{:?}",
            key
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// On random small logs (random allowed lists, own and mapped
    /// collections, bare and object results, repeated captures, unlabeled
    /// queries), marking results unauthorized never raises a metric of any
    /// query, and grades exactly as replacing them with unjudged ids at the
    /// same rank; the counts in summary.json follow from the logs.
    #[test]
    fn unauthorized_results_score_as_unjudged_ones(case in p_case()) {
        p_check(&case)?;
    }
}

// ---------------------------------------------------------------------
// Stale labels
// ---------------------------------------------------------------------

/// Labels of the stale-label cases, in this order: q1 (t1, en; a, b
/// relevant, g judged 0), q2 (t1, de; c, d), q3 (t2, en; e, never
/// captured), q4 (t2, en; f, its only capture rejected), q5 (t2, en; h, i).
const STALE_LABELS: &str = concat!(
    r#"{"query_id": "q1", "relevant": {"b": 1, "a": 2, "g": 0}, "task": "t1", "language": "en"}"#,
    "\n",
    r#"{"query_id": "q2", "relevant": ["d", "c"], "task": "t1", "language": "de"}"#,
    "\n",
    r#"{"query_id": "q3", "relevant": ["e"], "task": "t2", "language": "en"}"#,
    "\n",
    r#"{"query_id": "q4", "relevant": ["f"], "task": "t2", "language": "en"}"#,
    "\n",
    r#"{"query_id": "q5", "relevant": ["h", "i"], "task": "t2", "language": "en"}"#,
    "\n",
);

/// The logs of the stale-label cases.
const STALE_LOGS: [&str; 8] = [
    // q1: a deep in the ranking (any depth counts), b never; g (grade 0) never.
    r#"{"query_id": "q1", "results": ["x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "a"]}"#,
    // q2: d only at another stage; c only in another query's results.
    r#"{"query_id": "q2", "results": ["x1"]}"#,
    r#"{"query_id": "q2", "stage": "rerank", "results": ["d"]}"#,
    r#"{"query_id": "q1", "stage": "rerank", "results": ["c", "e", "f"]}"#,
    // q4: rejected (bad_result), so not captured.
    r#"{"query_id": "q4", "results": ["f", 7.5]}"#,
    // q5: h only in the capture superseded by the last one.
    r#"{"query_id": "q5", "results": ["h"]}"#,
    r#"{"query_id": "q5", "results": ["x1"]}"#,
    // An unlabeled query returning labeled ids changes nothing.
    r#"{"query_id": "nobody", "results": ["b", "c", "i"]}"#,
];

/// Grade the stale-label case under `--repeats repeats`, with `extra` options.
fn grade_stale(wd: &Workdir, repeats: &str, extra: &[&str]) -> Run {
    wd.write("labels.jsonl", STALE_LABELS);
    wd.write("logs.jsonl", text(&STALE_LOGS));
    let mut args = vec![
        "--labels",
        "labels.jsonl",
        "-q",
        "--repeats",
        repeats,
        "--max-rejects",
        "1",
        "-o",
        "out",
    ];
    args.extend_from_slice(extra);
    args.push("logs.jsonl");
    grade(wd, &args)
}

fn slice(task: &str, language: &str, labeled: u64, unseen: u64) -> Value {
    json!({"task": task, "language": language, "labeled": labeled, "unseen": unseen})
}

/// The hand case: only captured queries count (q3 never captured, q4
/// only rejected); positive grades only (g is judged 0); a document is
/// seen when any capture of its own query returned it at any depth, at
/// any stage, superseded captures included, and not when only another
/// query's capture did. 3 of 6 unseen is exactly one half: no warning.
#[test]
fn stale_labels_hand_case() {
    let wd = Workdir::new("stale_hand");
    let run = grade_stale(&wd, "last", &[]);
    run.expect_code(0);
    assert!(!run.stderr.contains("warning"), "{run}");
    let summary = wd.read_json("out/summary.json");
    assert_eq!(
        summary["stale_labels"],
        json!({
            "labeled": 6,
            "unseen": 3,
            "fraction": 0.5,
            "sample": ["b", "c", "i"],
            "by_slice": [
                slice("t1", "*", 4, 2),
                slice("t2", "*", 2, 1),
                slice("*", "de", 2, 1),
                slice("*", "en", 4, 2),
                slice("t1", "de", 2, 1),
                slice("t1", "en", 2, 1),
                slice("t2", "en", 2, 1),
            ],
        }),
        "{:#}",
        summary["stale_labels"]
    );
    let per_query = wd.read_csv("out/per_query.csv");
    assert_text(&row(&per_query, "final", "q3"), "status", "missing");
    assert_text(&row(&per_query, "final", "q4"), "status", "invalid");
    assert_eq!(count(&summary, "superseded_records"), 1);
}

/// Above one half, stderr warns, naming the counts and examples; stages
/// left out by `--stage` are not looked at, so d becomes unseen (4 of 6).
#[test]
fn stale_labels_warn_above_one_half() {
    let wd = Workdir::new("stale_warn");
    let run = grade_stale(&wd, "last", &["--stage", "final"]);
    run.expect_code(0).expect_stderr(&[
        "rgrade: warning: 4 of 6 labeled doc ids (67%) never appeared in any capture of their \
         query (e.g. b, c, d); do the labels and the collection use the same doc ids? \
         --corpus FILE checks the labels against a snapshot",
    ]);
    let stale = &wd.read_json("out/summary.json")["stale_labels"];
    assert_eq!(stale["unseen"].as_u64(), Some(4));
    assert_eq!(stale["sample"], json!(["b", "c", "d", "i"]));
    // Nothing labeled is captured: no fraction to warn about, and every
    // grouping set of the labels still has its (empty) row.
    let run = grade_stale(&wd, "last", &["--stage", "nothing"]);
    run.expect_code(0);
    assert!(!run.stderr.contains("labeled doc ids"), "{run}");
    let stale = &wd.read_json("out/summary.json")["stale_labels"];
    let empty = |task: &str, language: &str| json!({"task": task, "language": language, "labeled": 0, "unseen": 0});
    assert_eq!(
        stale,
        &json!({"labeled": 0, "unseen": 0, "fraction": 0.0, "sample": [], "by_slice": [
            empty("t1", "*"), empty("t2", "*"), empty("*", "de"), empty("*", "en"),
            empty("t1", "de"), empty("t1", "en"), empty("t2", "en"),
        ]})
    );
}

/// The sample lists at most 20 ids, distinct, in query order (an id
/// unseen for two queries once).
#[test]
fn stale_sample_is_capped_and_distinct() {
    let wd = Workdir::new("stale_sample");
    let mut labels = String::new();
    let mut logs = String::new();
    for q in 0..12 {
        let ids = [
            format!("shared{}", q % 2),
            format!("own{q:02}_a"),
            format!("own{q:02}_b"),
        ];
        labels.push_str(&format!(
            "{}\n",
            json!({"query_id": format!("q{q:02}"), "relevant": ids})
        ));
        logs.push_str(&format!(
            "{}\n",
            json!({"query_id": format!("q{q:02}"), "results": ["z"]})
        ));
    }
    wd.write("labels.jsonl", labels);
    wd.write("logs.jsonl", logs);
    let run = grade(
        &wd,
        &["--labels", "labels.jsonl", "-q", "-o", "out", "logs.jsonl"],
    );
    run.expect_code(0)
        .expect_stderr(&["36 of 36 labeled doc ids (100%)"]);
    let stale = &wd.read_json("out/summary.json")["stale_labels"];
    let want: Vec<String> = [
        "own00_a", "own00_b", "shared0", "own01_a", "own01_b", "shared1", "own02_a", "own02_b",
        "own03_a", "own03_b", "own04_a", "own04_b", "own05_a", "own05_b", "own06_a", "own06_b",
        "own07_a", "own07_b", "own08_a", "own08_b",
    ]
    .map(String::from)
    .to_vec();
    assert_eq!(stale["sample"], json!(want));
    assert_eq!(stale["fraction"].as_f64(), Some(1.0));
}

/// Under `--repeats first` the later, superseded capture's documents were
/// returned, so they count as seen.
#[test]
fn stale_superseded_capture_counts_as_seen_under_first() {
    let wd = Workdir::new("stale_first");
    let run = grade_stale(&wd, "first", &[]);
    run.expect_code(0);
    let stale = &wd.read_json("out/summary.json")["stale_labels"];
    // q5: the first capture returns h; its superseded second one x1: h seen.
    // The same with the two captures swapped.
    assert_eq!(stale["unseen"].as_u64(), Some(3), "{stale:#}");
    let mut swapped = STALE_LOGS;
    swapped.swap(5, 6);
    wd.write("logs.jsonl", text(&swapped));
    let run = grade(
        &wd,
        &[
            "--labels",
            "labels.jsonl",
            "-q",
            "--repeats",
            "first",
            "--max-rejects",
            "1",
            "-o",
            "out",
            "logs.jsonl",
        ],
    );
    run.expect_code(0);
    let stale = &wd.read_json("out/summary.json")["stale_labels"];
    assert_eq!(stale["unseen"].as_u64(), Some(3), "{stale:#}");
}

/// Under `--repeats error` every capture of a repeated key is rejected for the
/// policy, but each was a valid record that returned its documents: the query
/// counts as captured and what it returned as seen (docs/guide.md,
/// Diagnostics).
#[test]
fn stale_repeated_captures_still_show_what_they_returned() {
    let wd = Workdir::new("stale_repeats_error");
    wd.write("labels.jsonl", STALE_LABELS);
    wd.write(
        "logs.jsonl",
        text(&[
            r#"{"query_id": "q1", "results": ["a"]}"#,
            r#"{"query_id": "q1", "results": ["b"]}"#,
            r#"{"query_id": "q2", "results": ["d"]}"#,
        ]),
    );
    let run = grade(
        &wd,
        &[
            "--labels",
            "labels.jsonl",
            "-q",
            "--max-rejects",
            "2",
            "-o",
            "out",
            "logs.jsonl",
        ],
    );
    run.expect_code(0);
    let stale = &wd.read_json("out/summary.json")["stale_labels"];
    // q1 (a, b) and q2 (c, d) were captured; a, b and d were returned.
    assert_eq!(stale["labeled"].as_u64(), Some(4), "{stale:#}");
    assert_eq!(stale["unseen"].as_u64(), Some(1), "{stale:#}");
    assert_eq!(stale["sample"], serde_json::json!(["c"]), "{stale:#}");
}

/// A document returned only outside the user's collections was returned,
/// so it is not a stale label.
#[test]
fn stale_an_unauthorized_result_was_seen() {
    let wd = Workdir::new("stale_unauthorized");
    let run = grade_logs(
        &wd,
        &[
            r#"{"query_id": "q1", "allowed_collections": ["pub"], "results": [{"doc_id": "a", "collection": "hr"}, "b"]}"#,
        ],
        &["--max-leaks", "1"],
    );
    run.expect_code(0);
    let stale = &wd.read_json("out/summary.json")["stale_labels"];
    assert_eq!(stale["unseen"].as_u64(), Some(0), "{stale:#}");
}

// ---------------------------------------------------------------------
// --corpus
// ---------------------------------------------------------------------

/// A corpus holding every labeled id with a positive grade grades as
/// usual, whether plain, gzip or zstd, with CRLF line ends, padding and
/// blank lines; grade-0 ids need not be in it.
#[test]
fn corpus_with_every_labeled_id_grades() {
    let wd = Workdir::new("corpus_ok");
    wd.write("labels.jsonl", STALE_LABELS);
    wd.write("logs.jsonl", text(&STALE_LOGS[..3]));
    let corpus = "a\r\n  b \r\n\r\nc\r\nd\r\ne\r\n\r\nf\r\nh\r\ni\r\nother\r\n";
    wd.write("corpus.txt", corpus);
    wd.write_gz("corpus.gz", corpus);
    wd.write("corpus.zst", zstd_compress(corpus.as_bytes()));
    for file in ["corpus.txt", "corpus.gz", "corpus.zst"] {
        let _ = fs::remove_dir_all(wd.path("out"));
        let run = grade(
            &wd,
            &[
                "--labels",
                "labels.jsonl",
                "--corpus",
                file,
                "-q",
                "-o",
                "out",
                "logs.jsonl",
            ],
        );
        run.expect_code(0);
        assert!(wd.exists("out/per_query.csv"), "{file}\n{run}");
        assert!(!wd.exists("out/labels_missing_from_corpus.txt"), "{file}");
    }
}

/// Missing ids: exit 2 before the logs are read (a missing log is not
/// what the message is about), naming the count and the first five of
/// labels_missing_from_corpus.txt, which lists them all (ids with a
/// positive grade only, CRLF trimmed, gzip); a missing corpus file is
/// exit 2 too.
#[test]
fn corpus_missing_ids_exit_2() {
    let wd = Workdir::new("corpus_missing");
    let mut labels = String::new();
    for q in 0..4 {
        let grades: BTreeMap<String, u8> =
            [("m{q}_x", 1), ("m{q}_y", 2), ("ok{q}", 1), ("zero{q}", 0)]
                .into_iter()
                .map(|(id, grade)| (id.replace("{q}", &q.to_string()), grade))
                .collect();
        labels.push_str(&format!(
            "{}\n",
            json!({"query_id": format!("q{q}"), "relevant": grades})
        ));
    }
    wd.write("labels.jsonl", labels);
    wd.write_gz("corpus.gz", "ok0\nok1\nok2\nok3\r\nm3_y\n");
    let run = grade(
        &wd,
        &[
            "--labels",
            "labels.jsonl",
            "--corpus",
            "corpus.gz",
            "-o",
            "out",
            "no-such-log.jsonl",
        ],
    );
    run.expect_code(2);
    // All seven, each query's ids together, queries in id order (within a
    // query the order is the label index's, not the file's: see the report).
    let listed = wd.read_text("out/labels_missing_from_corpus.txt");
    let listed: Vec<&str> = listed.lines().collect();
    let mut sorted = listed.clone();
    sorted.sort_unstable();
    assert_eq!(
        sorted,
        ["m0_x", "m0_y", "m1_x", "m1_y", "m2_x", "m2_y", "m3_x"]
    );
    let queries: Vec<&str> = listed.iter().map(|id| &id[..2]).collect();
    assert!(queries.is_sorted(), "{listed:?}");
    assert_eq!(
        run.stderr.trim_end(),
        format!(
            "rgrade: corpus.gz: 7 of 12 labeled doc ids are not in the corpus (e.g. {}); all are \
             listed in out/labels_missing_from_corpus.txt. Were the labels made for another \
             snapshot or id scheme?",
            listed[..5].join(", ")
        ),
        "{run}"
    );
    let run = grade(
        &wd,
        &[
            "--labels",
            "labels.jsonl",
            "--corpus",
            "absent.txt",
            "no-such-log.jsonl",
        ],
    );
    run.expect_code(2).expect_stderr(&["absent.txt"]);
}
