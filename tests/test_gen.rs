//! `rgrade gen`: deterministic, well-formed synthetic data.
//!
//! Each test generates a small data set in its own scratch directory and
//! reads it back: labels and JSONL events through serde_json, TREC runs as
//! whitespace-separated fields.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use crate::util::{assert_same_lines, Run, Workdir};

/// Run `rgrade gen ARGS -o OUT` in `wd`, expect success with nothing on
/// stdout (gen reports on stderr, so scripts can pipe it), and return the
/// run for its stderr.
#[track_caller]
fn gen(wd: &Workdir, out: &str, args: &[&str]) -> Run {
    let mut argv = vec!["gen"];
    argv.extend_from_slice(args);
    argv.extend_from_slice(&["-o", out]);
    let run = wd.rgrade(&argv);
    run.expect_code(0);
    assert!(run.stdout.is_empty(), "gen prints nothing on stdout\n{run}");
    run
}

/// Every line of the JSONL file `rel`, each checked to be a JSON object.
#[track_caller]
fn objects(wd: &Workdir, rel: &str) -> Vec<Value> {
    let values = wd.read_jsonl(rel);
    for (i, value) in values.iter().enumerate() {
        assert!(value.is_object(), "{rel}:{}: not an object: {value}", i + 1);
    }
    values
}

/// The string field `key` of `record`, which must be there.
#[track_caller]
fn text<'a>(record: &'a Value, key: &str) -> &'a str {
    record[key]
        .as_str()
        .unwrap_or_else(|| panic!("no string {key:?} in {record}"))
}

/// The `results` array of an event, which must be there.
#[track_caller]
fn results(event: &Value) -> &[Value] {
    event["results"]
        .as_array()
        .unwrap_or_else(|| panic!("no results array in {event}"))
}

/// Same seed, same bytes: two runs with `--seed 7` write byte-identical
/// labels and logs, and `--seed 8` writes other data (STYLE §6).
#[test]
fn same_seed_gives_identical_files_another_seed_different_ones() {
    let wd = Workdir::new("gen_determinism");
    for (out, seed) in [("a", "7"), ("b", "7"), ("c", "8")] {
        gen(&wd, out, &["--queries", "200", "--seed", seed]);
    }
    for file in ["labels.jsonl", "logs.jsonl"] {
        let [a, b, c] = ["a", "b", "c"].map(|out| wd.read(&format!("{out}/{file}")));
        assert_same_lines(&format!("{file}, --seed 7 twice"), &b, &a);
        assert!(a != c, "{file}: --seed 7 and --seed 8 wrote the same bytes");
    }
}

/// Labels and events are JSON objects with the fields docs/reference.md, Input
/// formats, names: every label a task, a language, a relevant list or grades
/// 0..=3 with one above 0, `required` only as `true`; every event distinct doc
/// ids with strictly descending scores, a run, a positive latency and context
/// size; one `retrieve` event of `--results` docs per query, followed later by
/// its `final` event of 10. stderr names both files.
#[test]
fn labels_and_events_are_json_objects_with_the_spec_fields() {
    let wd = Workdir::new("gen_jsonl");
    let run = gen(&wd, "out", &["--queries", "300", "--results", "15"]);
    run.expect_stderr(&["labels.jsonl", "logs.jsonl"]);

    let labels = objects(&wd, "out/labels.jsonl");
    assert_eq!(labels.len(), 300, "one label per query");
    let ids: Vec<&str> = labels.iter().map(|label| text(label, "query_id")).collect();
    assert!(
        ids.windows(2).all(|pair| pair[0] < pair[1]),
        "labels are in query id order: {ids:?}"
    );
    for label in &labels {
        let relevant = &label["relevant"];
        let graded_ok = relevant.as_object().is_some_and(|grades| {
            grades
                .values()
                .all(|grade| grade.as_u64().is_some_and(|g| g <= 3))
                && grades.values().any(|grade| grade.as_u64() > Some(0))
        });
        let list_ok = relevant
            .as_array()
            .is_some_and(|docs| docs.iter().all(Value::is_string));
        assert!(
            graded_ok || list_ok,
            "relevant is neither doc ids nor grades 0..=3: {label}"
        );
        assert!(
            label["task"].is_string() && label["language"].is_string(),
            "task and language are strings: {label}"
        );
        assert!(
            label
                .get("required")
                .is_none_or(|r| r == &Value::Bool(true)),
            "required is absent or true: {label}"
        );
    }

    let events = objects(&wd, "out/logs.jsonl");
    assert_eq!(
        events.len(),
        2 * 300,
        "a retrieve and a final event per query"
    );
    let mut retrieved_at: HashMap<&str, usize> = HashMap::new();
    for (line, event) in events.iter().enumerate() {
        let results = results(event);
        let docs: HashSet<&str> = results.iter().map(|r| text(r, "doc_id")).collect();
        assert_eq!(docs.len(), results.len(), "distinct doc ids: {event}");
        let scores: Vec<f64> = results
            .iter()
            .map(|r| {
                r["score"]
                    .as_f64()
                    .unwrap_or_else(|| panic!("no score in {r}"))
            })
            .collect();
        assert!(
            scores.windows(2).all(|pair| pair[0] > pair[1]),
            "scores strictly descending: {event}"
        );
        assert_eq!(text(event, "run"), "bm25-v3", "{event}");
        assert!(
            event["latency_ms"].as_f64().is_some_and(|ms| ms > 0.0),
            "positive latency_ms: {event}"
        );
        assert!(
            event["context_tokens"].as_u64().is_some_and(|n| n > 0),
            "positive integer context_tokens: {event}"
        );
        let query = text(event, "query_id");
        match text(event, "stage") {
            "retrieve" => {
                assert_eq!(results.len(), 15, "--results 15: {event}");
                assert!(
                    retrieved_at.insert(query, line).is_none(),
                    "one retrieve event per query: {event}"
                );
            }
            "final" => {
                assert_eq!(results.len(), 10, "final keeps 10: {event}");
                assert!(
                    retrieved_at.get(query).is_some_and(|&at| at < line),
                    "the retrieve event comes before the final one: {event}"
                );
            }
            stage => panic!("unexpected stage {stage:?}: {event}"),
        }
    }
    let retrieved: HashSet<&str> = retrieved_at.into_keys().collect();
    assert_eq!(
        retrieved,
        ids.into_iter().collect(),
        "every labeled query, and only those, is logged"
    );
}

/// `--format trec` writes only `run.trec`: six space-separated fields
/// (`query_id Q0 doc_id rank score tag`), each query's lines contiguous
/// with ranks 1..=M, and the same rankings as the JSONL `retrieve` events
/// of the same seed; the labels do not depend on the format.
#[test]
fn trec_run_has_six_fields_ranks_1_to_m_and_the_jsonl_rankings() {
    let wd = Workdir::new("gen_trec");
    let args = ["--queries", "100", "--results", "12", "--seed", "3"];
    gen(&wd, "jsonl", &args);
    gen(&wd, "trec", &[&args[..], &["--format", "trec"]].concat());
    assert!(
        !wd.exists("trec/logs.jsonl"),
        "--format trec writes only the TREC run"
    );
    assert_same_lines(
        "labels.jsonl, --format trec against jsonl",
        &wd.read("trec/labels.jsonl"),
        &wd.read("jsonl/labels.jsonl"),
    );

    let trec = wd.read_text("trec/run.trec");
    let mut rankings: Vec<(&str, Vec<&str>)> = Vec::new();
    for line in trec.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        assert_eq!(fields.len(), 6, "six fields: {line:?}");
        assert_eq!((fields[1], fields[5]), ("Q0", "bm25-v3"), "{line:?}");
        assert!(fields[4].parse::<f64>().is_ok(), "numeric score: {line:?}");
        if rankings.last().is_none_or(|(query, _)| *query != fields[0]) {
            rankings.push((fields[0], Vec::new()));
        }
        let (_, docs) = rankings.last_mut().expect("pushed above");
        docs.push(fields[2]);
        assert_eq!(
            fields[3],
            docs.len().to_string(),
            "ranks count from 1: {line:?}"
        );
    }
    assert_eq!(rankings.len(), 100, "each query's lines are contiguous");
    for (query, docs) in &rankings {
        assert_eq!(docs.len(), 12, "{query}: --results 12");
    }

    let events = objects(&wd, "jsonl/logs.jsonl");
    let retrieved: HashMap<&str, Vec<&str>> = events
        .iter()
        .filter(|event| text(event, "stage") == "retrieve")
        .map(|event| {
            let docs = results(event).iter().map(|r| text(r, "doc_id"));
            (text(event, "query_id"), docs.collect())
        })
        .collect();
    for (query, docs) in &rankings {
        assert_eq!(
            Some(docs),
            retrieved.get(query),
            "{query}: the same ranking in both formats"
        );
    }
}

/// `--unlabeled 50` adds traffic of 50 queries the labels do not know,
/// shuffled in among the labeled ones, and leaves the labels unchanged.
#[test]
fn unlabeled_traffic_adds_queries_that_labels_do_not_know() {
    let wd = Workdir::new("gen_unlabeled");
    gen(&wd, "plain", &["--queries", "50"]);
    gen(&wd, "doubled", &["--queries", "50", "--unlabeled", "50"]);
    assert_same_lines(
        "labels.jsonl, with --unlabeled against without",
        &wd.read("doubled/labels.jsonl"),
        &wd.read("plain/labels.jsonl"),
    );

    let labels = objects(&wd, "doubled/labels.jsonl");
    let labeled: HashSet<&str> = labels.iter().map(|l| text(l, "query_id")).collect();
    let events = objects(&wd, "doubled/logs.jsonl");
    assert_eq!(events.len(), 2 * 100, "two events per query");
    let logged: HashSet<&str> = events.iter().map(|e| text(e, "query_id")).collect();
    let mut unlabeled: Vec<&str> = logged.difference(&labeled).copied().collect();
    unlabeled.sort_unstable();
    assert_eq!(unlabeled.len(), 50, "unlabeled queries: {unlabeled:?}");
    assert!(
        labeled.is_subset(&logged),
        "labeled queries without traffic: {:?}",
        labeled.difference(&logged).collect::<Vec<_>>()
    );
    let first_unlabeled = events
        .iter()
        .position(|event| !labeled.contains(text(event, "query_id")));
    assert!(
        first_unlabeled < Some(events.len() / 2),
        "unlabeled events are shuffled in, not appended: first at {first_unlabeled:?}"
    );
}

/// `--queries 0` is a usage error (exit status 2) that says what is wrong
/// in one `rgrade: ` line on stderr and writes nothing.
#[test]
fn zero_queries_is_an_error_that_writes_nothing() {
    let wd = Workdir::new("gen_zero");
    let run = wd.rgrade(&["gen", "--queries", "0", "-o", "out"]);
    run.expect_code(2)
        .expect_stderr(&["rgrade: ", "--queries must be at least 1"]);
    assert!(!wd.exists("out"), "nothing written\n{run}");
}
