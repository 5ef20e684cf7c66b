//! `rgrade index` through the binary: a compiled answer key grades,
//! merges and compares exactly as the labels it was compiled from; a key
//! that cannot be made or read is refused, and leaves no file behind.

use serde_json::Value;

use crate::util::{crate_path, summary_without, Workdir, REALISTIC_OPTIONS, RUN_KEYS};

/// The realistic sample's labels (graded, with no-answer and required
/// queries) and logs.
const LABELS: &str = "data-samples/realistic/labels.jsonl";
const LOGS: &str = "data-samples/realistic/logs";

/// `rgrade grade --labels LABELS` with the realistic sample's options
/// and `--min-rel 2`, which a key must apply as the labels do.
fn grade(wd: &Workdir, labels: &str, args: &[&str]) -> crate::util::Run {
    let mut all = vec!["grade", "--labels", labels, "--min-rel", "2", "-q"];
    all.extend_from_slice(&REALISTIC_OPTIONS);
    all.extend_from_slice(args);
    wd.rgrade(&all)
}

#[test]
fn a_compiled_key_grades_merges_and_compares_as_its_labels() {
    let wd = Workdir::new("index_sample");
    let labels = crate_path(LABELS).display().to_string();
    let logs = crate_path(LOGS).display().to_string();
    let run = wd.rgrade(&["index", &labels, "-o", "key.rgx"]);
    run.expect_code(0);
    assert!(run.stderr.contains("300 labeled queries"), "{run}");

    grade(&wd, &labels, &["-o", "from_labels", &logs]).expect_code(0);
    grade(&wd, "key.rgx", &["-o", "from_key", &logs]).expect_code(0);
    grade(&wd, "key.rgx", &["--partial", "-o", "shard", &logs]).expect_code(0);
    wd.rgrade(&[
        "merge",
        "--labels",
        "key.rgx",
        "--max-rejects",
        "10",
        "-o",
        "merged",
        "shard",
    ])
    .expect_code(0);
    for file in [
        "per_query.csv",
        "aggregates.csv",
        "rejects.jsonl",
        "report.html",
    ] {
        let want = wd.read(&format!("from_labels/{file}"));
        assert!(want == wd.read(&format!("from_key/{file}")), "{file}: key");
        assert!(want == wd.read(&format!("merged/{file}")), "{file}: merged");
    }
    // summary.json reports the labels the key was compiled from, and the
    // key beside them.
    let without = |dir: &str| {
        let mut summary = summary_without(&wd.read(&format!("{dir}/summary.json")), &RUN_KEYS);
        let key = summary["labels"]["compiled_key"].take();
        summary["labels"]["path"] = Value::Null;
        summary["outputs"] = Value::Null;
        (summary, key)
    };
    let (from_labels, no_key) = without("from_labels");
    let (from_key, key) = without("from_key");
    assert_eq!(from_labels, from_key);
    assert_eq!(no_key, Value::Null);
    assert_eq!(key["path"], "key.rgx");
    let key_bytes = std::fs::metadata(wd.path("key.rgx")).unwrap().len();
    assert_eq!(key["bytes"].as_u64(), Some(key_bytes));
    let summary: Value = serde_json::from_slice(&wd.read("from_key/summary.json")).unwrap();
    assert_eq!(summary["labels"]["path"].as_str(), Some(labels.as_str()));

    // The same labels as far as compare is concerned.
    let run = wd.rgrade(&["compare", "from_labels", "from_key", "-q"]);
    run.expect_code(0);
}

#[test]
fn a_key_that_cannot_be_made_or_read_is_refused() {
    let wd = Workdir::new("index_refused");
    wd.write(
        "labels.jsonl",
        "{\"query_id\": \"q1\", \"relevant\": [\"a\"]}\nnot json\n",
    );
    let run = wd.rgrade(&["index", "labels.jsonl", "-o", "key.rgx"]);
    run.expect_code(2);
    assert!(run.stderr.contains("labels.jsonl:2"), "{run}");
    let left: Vec<String> = std::fs::read_dir(wd.path("."))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(left, ["labels.jsonl"], "a failed index leaves no file");

    wd.write(
        "labels.jsonl",
        "{\"query_id\": \"q1\", \"relevant\": [\"a\"]}\n",
    );
    wd.write(
        "log.jsonl",
        "{\"query_id\": \"q1\", \"results\": [\"a\"]}\n",
    );
    let compiled = ["--labels-format", "compiled", "log.jsonl"];
    let run = grade(&wd, "labels.jsonl", &compiled);
    run.expect_code(2);
    assert!(
        run.stderr.contains("labels.jsonl: no compiled key"),
        "{run}"
    );

    wd.rgrade(&["index", "labels.jsonl", "-o", "key.rgx"])
        .expect_code(0);
    let run = grade(&wd, "key.rgx", &["--join", "text", "log.jsonl"]);
    run.expect_code(2);
    assert!(run.stderr.contains("rgrade index --join text"), "{run}");
    grade(&wd, "key.rgx", &["log.jsonl"]).expect_code(0);
}
