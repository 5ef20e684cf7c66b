//! Stage loss on `rgrade gen` data: the same bytes whatever the thread count
//! and the order of the log lines, and both files equal to an independent
//! recomputation from the generated labels.jsonl and logs.jsonl.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::util::stage_loss::{
    assert_table, loss_table, set_order, sets_of, totals_row, PER_QUERY_HEADER, TOTALS_HEADER,
};
use crate::util::{assert_same_lines, grade, Run, Workdir};

/// `rgrade gen --queries 2000 --results 20 --seed 3 -o gen` in `wd`.
fn generate(wd: &Workdir) {
    wd.rgrade(&[
        "gen",
        "--queries",
        "2000",
        "--results",
        "20",
        "--seed",
        "3",
        "-o",
        "gen",
    ])
    .expect_code(0);
}

/// Grade the generated data with `--stage-order retrieve,final` and
/// `extra` options into `out`.
fn grade_generated(wd: &Workdir, out: &str, extra: &[&str], logs: &[&str]) -> Run {
    let mut args = vec![
        "--labels",
        "gen/labels.jsonl",
        "--stage-order",
        "retrieve,final",
        "-o",
        out,
    ];
    args.extend_from_slice(extra);
    args.extend_from_slice(logs);
    let run = grade(wd, &args);
    run.expect_code(0);
    run
}

/// One thread or two (or three), and the log lines in reverse order over
/// three files: byte-identical stage-loss files and stdout table.
#[test]
fn generated_outputs_do_not_depend_on_threads_or_input_order() {
    let wd = Workdir::new("stage_loss_determinism");
    generate(&wd);
    let one = grade_generated(&wd, "j1", &["-j", "1"], &["gen/logs.jsonl"]);
    let two = grade_generated(&wd, "j2", &["-j", "2"], &["gen/logs.jsonl"]);
    let three = grade_generated(&wd, "j3", &["-j", "3"], &["gen/logs.jsonl"]);

    // The same lines reversed and dealt over three files.
    let logs = wd.read_text("gen/logs.jsonl");
    let mut shards = [String::new(), String::new(), String::new()];
    for (i, line) in logs.lines().rev().enumerate() {
        shards[i % 3].push_str(line);
        shards[i % 3].push('\n');
    }
    for (i, shard) in shards.iter().enumerate() {
        wd.write(&format!("shards/{i}.jsonl"), shard);
    }
    let shuffled = grade_generated(
        &wd,
        "shuffled",
        &["-j", "2"],
        &["shards/2.jsonl", "shards/0.jsonl", "shards/1.jsonl"],
    );

    let per_query = wd.read_csv("j1/stage_loss_per_query.csv");
    assert!(
        per_query.rows.len() > 1000,
        "the generated data should measure most queries:\n{}",
        per_query.dump()
    );
    let lost: u64 = per_query
        .column("lost")
        .iter()
        .map(|c| c.parse::<u64>().expect("lost"))
        .sum();
    assert!(lost > 0, "the generated final stage should lose something");

    for file in ["stage_loss.csv", "stage_loss_per_query.csv"] {
        let want = wd.read(&format!("j1/{file}"));
        for other in ["j2", "j3", "shuffled"] {
            assert_same_lines(
                &format!("{other}/{file} against j1/{file}"),
                &wd.read(&format!("{other}/{file}")),
                &want,
            );
        }
    }
    let table = loss_table(&one);
    assert!(!table.is_empty(), "{one}");
    for other in [&two, &three, &shuffled] {
        assert_eq!(loss_table(other), table, "{other}");
    }
    assert_same_lines(
        "stdout -j 2 against -j 1",
        two.stdout.as_bytes(),
        one.stdout.as_bytes(),
    );
}

/// A query id of labels or logs as text (an integer is its decimal text).
fn id_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        other => panic!("not an id: {other}"),
    }
}

/// A labeled query of the reference: its relevant documents (grade >= 1)
/// and its slice.
struct RefLabel {
    relevant: BTreeSet<String>,
    task: String,
    language: String,
}

/// labels.jsonl read with serde_json, nothing shared with `src/`.
fn reference_labels(text: &str) -> BTreeMap<String, RefLabel> {
    let mut labels = BTreeMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line).expect("labels.jsonl line");
        let relevant = match &v["relevant"] {
            Value::Array(ids) => ids.iter().map(id_text).collect(),
            Value::Object(grades) => grades
                .iter()
                .filter(|(_, g)| g.as_i64().expect("integer grade") >= 1)
                .map(|(id, _)| id.clone())
                .collect(),
            other => panic!("relevant: {other}"),
        };
        let slice = |key: &str| v[key].as_str().unwrap_or("(none)").to_string();
        let old = labels.insert(
            id_text(&v["query_id"]),
            RefLabel {
                relevant,
                task: slice("task"),
                language: slice("language"),
            },
        );
        assert!(old.is_none(), "a query labeled twice: {line}");
    }
    labels
}

/// logs.jsonl read with serde_json: (run, stage, query) → rankings.
fn reference_logs(text: &str) -> BTreeMap<(String, String, String), Vec<Vec<String>>> {
    let mut logs: BTreeMap<_, Vec<Vec<String>>> = BTreeMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line).expect("logs.jsonl line");
        let ranking = v["results"]
            .as_array()
            .expect("results")
            .iter()
            .map(|r| match r {
                Value::Object(o) => id_text(o.get("doc_id").or_else(|| o.get("id")).expect("id")),
                other => id_text(other),
            })
            .collect();
        let key = (
            v["run"].as_str().unwrap_or("").to_string(),
            v["stage"].as_str().unwrap_or("final").to_string(),
            id_text(&v["query_id"]),
        );
        logs.entry(key).or_default().push(ranking);
    }
    logs
}

/// stage_loss_per_query.csv and stage_loss.csv recomputed from the
/// generated labels.jsonl and logs.jsonl with serde_json and plain loops
/// (one capture per key, no duplicate doc: checked), compared row by row;
/// the overall totals also equal the sums over per_query rows.
#[test]
fn generated_stage_loss_matches_an_independent_recomputation() {
    let wd = Workdir::new("stage_loss_reference");
    generate(&wd);
    let run = grade_generated(&wd, "out", &[], &["gen/logs.jsonl"]);
    assert_eq!(
        wd.read_text("out/rejects.jsonl"),
        "",
        "the reference assumes no reject\n{run}"
    );

    let labels = reference_labels(&wd.read_text("gen/labels.jsonl"));
    let logs = reference_logs(&wd.read_text("gen/logs.jsonl"));
    for (key, captures) in &logs {
        assert_eq!(
            captures.len(),
            1,
            "{key:?}: the reference assumes one capture"
        );
        let unique: BTreeSet<&String> = captures[0].iter().collect();
        assert_eq!(unique.len(), captures[0].len(), "{key:?}: a repeated doc");
    }
    let runs: BTreeSet<&str> = logs.keys().map(|(run, _, _)| run.as_str()).collect();
    let order = ["retrieve", "final"];

    let mut want_per_query = Vec::new();
    let mut want_totals = Vec::new();
    for run in &runs {
        let stages: Vec<&str> = order
            .iter()
            .copied()
            .filter(|s| logs.keys().any(|(r, st, _)| r == run && st == s))
            .collect();
        for pair in stages.windows(2) {
            let (from, to) = (pair[0], pair[1]);
            let mut sets: BTreeMap<(u8, String, String), (u64, u64)> = BTreeMap::new();
            // BTreeMap over String: byte order of query ids.
            for (query, label) in &labels {
                if label.relevant.is_empty() {
                    continue;
                }
                let key = |stage: &str| (run.to_string(), stage.to_string(), query.clone());
                let (Some(before), Some(after)) = (logs.get(&key(from)), logs.get(&key(to))) else {
                    continue;
                };
                let found: BTreeSet<&String> = before[0]
                    .iter()
                    .filter(|d| label.relevant.contains(*d))
                    .collect();
                let lost: Vec<&str> = found
                    .iter()
                    .filter(|d| !after[0].contains(d))
                    .map(|d| d.as_str())
                    .collect();
                want_per_query.push(vec![
                    run.to_string(),
                    query.clone(),
                    label.task.clone(),
                    label.language.clone(),
                    from.to_string(),
                    to.to_string(),
                    found.len().to_string(),
                    lost.len().to_string(),
                    lost.join("|"),
                ]);
                for (task, language) in sets_of(&label.task, &label.language) {
                    let set = sets.entry(set_order(&task, &language)).or_default();
                    set.0 += found.len() as u64;
                    set.1 += lost.len() as u64;
                }
            }
            for ((_, task, language), (found, lost)) in sets {
                want_totals.push(totals_row(run, &task, &language, from, to, found, lost));
            }
        }
    }
    assert!(want_per_query.len() > 1000);

    let per_query = wd.read_csv("out/stage_loss_per_query.csv");
    assert_table(&per_query, &PER_QUERY_HEADER, &want_per_query);
    let totals = wd.read_csv("out/stage_loss.csv");
    assert_table(&totals, &TOTALS_HEADER, &want_totals);

    // The overall totals are the sums of the per-query rows.
    let sum = |column: &str| -> u64 {
        per_query
            .column(column)
            .iter()
            .map(|c| c.parse::<u64>().expect("count"))
            .sum()
    };
    let overall = totals.row(&[("task", "*"), ("language", "*")]);
    assert_eq!(overall["relevant_found"], sum("relevant_found").to_string());
    assert_eq!(overall["lost"], sum("lost").to_string());
    let all = loss_table(&run);
    assert_eq!(all[0][4], "all", "{run}");
    assert_eq!(all[0][5], overall["relevant_found"], "{run}");
    assert_eq!(all[0][6], overall["lost"], "{run}");
}
