//! `rgrade gen`: deterministic, well-formed synthetic data.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::path::Path;

use simd_json::prelude::*;
use simd_json::OwnedValue;

use crate::util::{rgrade, TempDir};

/// Run `rgrade gen ARGS -o out`, expect success and return stderr.
fn gen(out: &Path, args: &[&str]) -> String {
    let output = rgrade()
        .arg("gen")
        .args(args)
        .arg("-o")
        .arg(out)
        .output()
        .expect("run rgrade");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        output.status.success(),
        "rgrade gen {args:?} failed: {stderr}"
    );
    assert!(output.stdout.is_empty(), "gen prints nothing on stdout");
    stderr
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|error| panic!("read {}: {error}", path.display()))
}

/// Every line of `path` as a JSON object.
fn json_lines(path: &Path) -> Vec<OwnedValue> {
    read(path)
        .lines()
        .map(|line| {
            let mut bytes = line.as_bytes().to_vec();
            let value = simd_json::to_owned_value(&mut bytes)
                .unwrap_or_else(|error| panic!("{}: {error}: {line}", path.display()));
            assert!(value.is_object(), "not an object: {line}");
            value
        })
        .collect()
}

fn query_id(record: &OwnedValue) -> String {
    record.get_str("query_id").expect("query_id").to_string()
}

#[test]
fn same_seed_gives_identical_files_another_seed_different_ones() {
    let dir = TempDir::new("gen-determinism");
    for (name, seed) in [("a", "7"), ("b", "7"), ("c", "8")] {
        gen(&dir.join(name), &["--queries", "200", "--seed", seed]);
    }
    for file in ["labels.jsonl", "logs.jsonl"] {
        let [a, b, c] = ["a", "b", "c"].map(|name| read(&dir.join(name).join(file)));
        assert_eq!(a, b, "{file}: same seed, same bytes");
        assert_ne!(a, c, "{file}: another seed, other data");
    }
}

#[test]
fn labels_and_events_are_json_objects_with_the_spec_fields() {
    let dir = TempDir::new("gen-jsonl");
    let stderr = gen(dir.path(), &["--queries", "300", "--results", "15"]);
    assert!(
        stderr.contains("labels.jsonl") && stderr.contains("logs.jsonl"),
        "{stderr}"
    );

    let labels = json_lines(&dir.join("labels.jsonl"));
    assert_eq!(labels.len(), 300);
    let ids: Vec<String> = labels.iter().map(query_id).collect();
    assert!(
        ids.windows(2).all(|pair| pair[0] < pair[1]),
        "labels in id order"
    );
    for label in &labels {
        let relevant = label.get("relevant").expect("relevant");
        let graded_ok = relevant.as_object().is_some_and(|grades| {
            grades
                .values()
                .all(|grade| grade.as_u64().is_some_and(|g| g <= 3))
                && grades.values().any(|grade| grade.as_u64() > Some(0))
        });
        let list_ok = relevant
            .as_array()
            .is_some_and(|docs| docs.iter().all(|doc| doc.as_str().is_some()));
        assert!(graded_ok || list_ok, "relevant: {relevant}");
        assert!(label.get_str("task").is_some() && label.get_str("language").is_some());
        assert!(label
            .get("required")
            .is_none_or(|required| required.as_bool() == Some(true)));
    }

    let events = json_lines(&dir.join("logs.jsonl"));
    assert_eq!(events.len(), 2 * 300);
    let mut retrieved_at: HashMap<String, usize> = HashMap::new();
    for (line, event) in events.iter().enumerate() {
        let results = event.get_array("results").expect("results");
        let docs: HashSet<&str> = results
            .iter()
            .map(|r| r.get_str("doc_id").expect("doc_id"))
            .collect();
        let scores: Vec<f64> = results
            .iter()
            .map(|r| r.get_f64("score").expect("score"))
            .collect();
        assert_eq!(docs.len(), results.len(), "distinct docs: {event}");
        assert!(
            scores.windows(2).all(|pair| pair[0] > pair[1]),
            "descending: {event}"
        );
        assert_eq!(event.get_str("run"), Some("bm25-v3"));
        assert!(
            event.get_f64("latency_ms").is_some_and(|ms| ms > 0.0),
            "{event}"
        );
        assert!(
            event
                .get_u64("context_tokens")
                .is_some_and(|tokens| tokens > 0),
            "{event}"
        );
        let query = query_id(event);
        match event.get_str("stage") {
            Some("retrieve") => {
                assert_eq!(results.len(), 15);
                assert!(
                    retrieved_at.insert(query, line).is_none(),
                    "one retrieve per query"
                );
            }
            Some("final") => {
                assert_eq!(results.len(), 10);
                assert!(
                    retrieved_at.get(&query).is_some_and(|&at| at < line),
                    "retrieve first"
                );
            }
            stage => panic!("unexpected stage {stage:?}"),
        }
    }
    assert_eq!(
        retrieved_at.keys().cloned().collect::<HashSet<_>>(),
        ids.into_iter().collect()
    );
}

#[test]
fn trec_run_has_six_fields_ranks_1_to_m_and_the_jsonl_rankings() {
    let dir = TempDir::new("gen-trec");
    let (jsonl, trec) = (dir.join("jsonl"), dir.join("trec"));
    gen(
        &jsonl,
        &["--queries", "100", "--results", "12", "--seed", "3"],
    );
    gen(
        &trec,
        &[
            "--queries",
            "100",
            "--results",
            "12",
            "--seed",
            "3",
            "--format",
            "trec",
        ],
    );
    assert!(
        !trec.join("logs.jsonl").exists(),
        "only the TREC run is written"
    );
    assert_eq!(
        read(&jsonl.join("labels.jsonl")),
        read(&trec.join("labels.jsonl"))
    );

    let mut rankings: Vec<(String, Vec<String>)> = Vec::new();
    for line in read(&trec.join("run.trec")).lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        assert_eq!(fields.len(), 6, "{line}");
        assert_eq!((fields[1], fields[5]), ("Q0", "bm25-v3"), "{line}");
        assert!(fields[4].parse::<f64>().is_ok(), "{line}");
        if rankings.last().is_none_or(|(query, _)| query != fields[0]) {
            rankings.push((fields[0].to_string(), Vec::new()));
        }
        let (_, docs) = rankings.last_mut().expect("a ranking");
        docs.push(fields[2].to_string());
        assert_eq!(
            fields[3],
            docs.len().to_string(),
            "ranks count from 1: {line}"
        );
    }
    assert_eq!(rankings.len(), 100, "each query's lines are contiguous");
    assert!(rankings.iter().all(|(_, docs)| docs.len() == 12));

    let retrieved: HashMap<String, Vec<String>> = json_lines(&jsonl.join("logs.jsonl"))
        .iter()
        .filter(|event| event.get_str("stage") == Some("retrieve"))
        .map(|event| {
            let results = event.get_array("results").expect("results");
            let docs = results
                .iter()
                .map(|r| r.get_str("doc_id").expect("doc_id").to_string());
            (query_id(event), docs.collect())
        })
        .collect();
    for (query, docs) in &rankings {
        assert_eq!(
            Some(docs),
            retrieved.get(query),
            "{query}: same ranking in both formats"
        );
    }
}

#[test]
fn unlabeled_traffic_adds_queries_that_labels_do_not_know() {
    let dir = TempDir::new("gen-unlabeled");
    let (plain, doubled) = (dir.join("plain"), dir.join("doubled"));
    gen(&plain, &["--queries", "50"]);
    gen(&doubled, &["--queries", "50", "--unlabeled", "50"]);
    assert_eq!(
        read(&plain.join("labels.jsonl")),
        read(&doubled.join("labels.jsonl"))
    );

    let labeled: HashSet<String> = json_lines(&doubled.join("labels.jsonl"))
        .iter()
        .map(query_id)
        .collect();
    let events = json_lines(&doubled.join("logs.jsonl"));
    assert_eq!(events.len(), 2 * 100);
    let logged: HashSet<String> = events.iter().map(query_id).collect();
    let unlabeled: Vec<&String> = logged.difference(&labeled).collect();
    assert_eq!(unlabeled.len(), 50, "{unlabeled:?}");
    assert!(labeled.is_subset(&logged));
    let first_unlabeled = events
        .iter()
        .position(|event| !labeled.contains(&query_id(event)));
    assert!(
        first_unlabeled < Some(events.len() / 2),
        "unlabeled events are shuffled in"
    );
}

#[test]
fn zero_queries_is_an_error_that_writes_nothing() {
    let dir = TempDir::new("gen-zero");
    let out = dir.join("out");
    let output = rgrade()
        .args(["gen", "--queries", "0", "-o"])
        .arg(&out)
        .output()
        .expect("run rgrade");
    assert_eq!(output.status.code(), Some(2));
    assert!(!out.exists());
}
