//! The shipped diagnostics sample, `data-samples/diagnostics/`: its README's
//! three commands, run as written, write and print exactly `expected/` and
//! what the README shows (exit statuses 1, 0 and 2), and the key numbers
//! (leaks, stale labels, evidence lost between stages) are recomputed here
//! from the sample's inputs (docs/guide.md, Diagnostics).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::path::PathBuf;

use serde_json::{json, Value};

use crate::util::{
    assert_cell, assert_counts_add_up, assert_same_lines, assert_text, count, doc_id, repo_path,
    row, Run, Workdir,
};

/// The diagnostics sample, relative to the repository's top, as its README writes it.
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
    repo_path(SAMPLE).join(rel)
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
            let doc = doc_id(result, record);
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
    // unseen when no capture of their own query returned them; and the
    // captured queries judging a document (any grade), without judged
    // results when none of those came back.
    let mut returned: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (_, record) in &logs {
        let query = record["query_id"].as_str().expect("query_id").to_string();
        let docs = record["results"].as_array().expect("results");
        returned
            .entry(query)
            .or_default()
            .extend(docs.iter().map(|doc| doc_id(doc, record)));
    }
    let mut sets: BTreeMap<(u8, String, String), [u64; 4]> = BTreeMap::new();
    let (mut labeled, mut unseen, mut sample) = (0u64, 0u64, Vec::<String>::new());
    for (_, label) in &labels {
        let query = label["query_id"].as_str().expect("id");
        let Some(seen) = returned.get(query) else {
            continue;
        };
        let graded: Vec<(String, i64)> = match &label["relevant"] {
            Value::Array(ids) => ids
                .iter()
                .map(|i| (i.as_str().expect("id").into(), 1))
                .collect(),
            Value::Object(grades) => grades
                .iter()
                .map(|(d, g)| (d.clone(), g.as_i64().expect("grade")))
                .collect(),
            other => panic!("relevant {other}"),
        };
        let positive: Vec<String> = graded
            .iter()
            .filter(|(_, g)| *g > 0)
            .map(|(d, _)| d.clone())
            .collect();
        let judges_any = !graded.is_empty();
        let without_judged = judges_any && !graded.iter().any(|(d, _)| seen.contains(d));
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
            entry[0] += positive.len() as u64;
            entry[1] += missing.len() as u64;
            entry[2] += u64::from(judges_any);
            entry[3] += u64::from(without_judged);
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
        .map(
            |((_, task, language), [labeled, unseen, captured, without])| {
                json!({
                    "task": task, "language": language, "labeled": labeled, "unseen": unseen,
                    "queries_captured": captured, "queries_without_judged_results": without,
                })
            },
        )
        .collect();
    assert_eq!(stale["by_slice"], Value::Array(by_slice), "{stale:#}");
    assert_eq!(
        (
            &stale["queries_captured"],
            &stale["queries_without_judged_results"]
        ),
        (&json!(9), &json!(0)),
        "{stale:#}"
    );
    assert!(
        !run.stderr.contains("warning"),
        "every captured query returned a judged document: no reason to warn\n{run}"
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
