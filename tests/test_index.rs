//! `rgrade index` through the binary: a compiled answer key grades,
//! merges and compares exactly as the labels it was compiled from; a key
//! that cannot be made or read is refused, and leaves no file behind.

use serde_json::Value;

use crate::util::{repo_path, summary_without, Workdir, REALISTIC_OPTIONS, RUN_KEYS};

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
    let labels = repo_path(LABELS).display().to_string();
    let logs = repo_path(LOGS).display().to_string();
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

/// Small labels with a task, a language and a split in every label, so
/// that a key's header names them, and logs that find some of them.
const SMALL_LABELS: &str = concat!(
    r#"{"query_id": "q1", "relevant": {"a": 2, "b": 1}, "task": "billing", "language": "en", "split": "test"}"#,
    "\n",
    r#"{"query_id": "q2", "relevant": ["c"], "task": "howto", "language": "de", "split": "dev"}"#,
    "\n",
);
const SMALL_LOGS: &str = concat!(
    r#"{"query_id": "q1", "results": ["b", "x", "a"]}"#,
    "\n",
    r#"{"query_id": "q2", "results": ["x", "c"]}"#,
    "\n",
);

/// summary.json of the grading in `dir`, without what differs from one
/// run to the next and the key file's own facts.
fn summary_of_grades(wd: &Workdir, dir: &str) -> Value {
    let mut summary = summary_without(&wd.read(&format!("{dir}/summary.json")), &RUN_KEYS);
    summary["labels"]["compiled_key"] = Value::Null;
    summary["outputs"] = Value::Null;
    summary
}

/// Every byte of a key's first line, header and padding, one bit flipped
/// at a time (a different bit from one byte to the next): no grading
/// from a flipped key exits 0 with outputs other than the key's own;
/// each is refused, exit 2, naming the key.
#[test]
fn no_flipped_header_bit_changes_a_grading() {
    let wd = Workdir::new("index_flips");
    wd.write("labels.jsonl", SMALL_LABELS);
    wd.write("log.jsonl", SMALL_LOGS);
    wd.rgrade(&["index", "labels.jsonl", "-o", "key.rgx"])
        .expect_code(0);
    let key = wd.read("key.rgx");
    let grade =
        |key: &str, out: &str| wd.rgrade(&["grade", "--labels", key, "-q", "-o", out, "log.jsonl"]);
    grade("key.rgx", "base").expect_code(0);
    let outputs = |dir: &str| {
        (
            wd.read(&format!("{dir}/per_query.csv")),
            wd.read(&format!("{dir}/aggregates.csv")),
            summary_of_grades(&wd, dir),
        )
    };
    let base = outputs("base");
    let magic_end = key.iter().position(|&b| b == b'\n').unwrap() + 1;
    let line_end = magic_end + key[magic_end..].iter().position(|&b| b == b'\n').unwrap() + 1;
    let body_start = line_end.next_multiple_of(8);
    for at in 0..body_start {
        let mut flipped = key.clone();
        flipped[at] ^= 1 << (at % 8);
        wd.write("flipped.rgx", &flipped);
        let run = grade("flipped.rgx", "flipped");
        if run.status.code() == Some(0) {
            assert!(
                outputs("flipped") == base,
                "byte {at}: a flipped key graded otherwise: {run}"
            );
        } else {
            run.expect_code(2);
            assert!(run.stderr.contains("flipped.rgx"), "byte {at}: {run}");
        }
        let _ = std::fs::remove_dir_all(wd.path("flipped"));
    }
}

/// Labels edited after they were compiled: the key grades as it was
/// compiled, warns on stderr, and summary.json says how the labels file
/// differs now; labels no longer there are not looked for.
#[test]
fn a_key_whose_labels_changed_since_warns() {
    let wd = Workdir::new("index_changed");
    wd.write("labels.jsonl", SMALL_LABELS);
    wd.write("log.jsonl", SMALL_LOGS);
    wd.rgrade(&["index", "labels.jsonl", "-o", "key.rgx"])
        .expect_code(0);
    let grade =
        |out: &str| wd.rgrade(&["grade", "--labels", "key.rgx", "-q", "-o", out, "log.jsonl"]);
    let warning = "key.rgx: labels.jsonl has changed since this key was compiled from it";
    let run = grade("fresh");
    run.expect_code(0);
    assert!(!run.stderr.contains(warning), "{run}");
    let fresh = wd.read_json("fresh/summary.json");
    assert_eq!(fresh["labels"]["compiled_key"].get("labels_changed"), None);

    // One grade changed, the size the same.
    let edited = SMALL_LABELS.replacen("\"a\": 2", "\"a\": 1", 1);
    wd.write("labels.jsonl", &edited);
    let run = grade("stale");
    run.expect_code(0).expect_stderr(&[warning, "rgrade index"]);
    let stale = wd.read_json("stale/summary.json");
    let changed = &stale["labels"]["compiled_key"]["labels_changed"];
    assert_eq!(changed["bytes"].as_u64(), Some(edited.len() as u64));
    let hash = format!("{:032x}", xxhash_rust::xxh3::xxh3_128(edited.as_bytes()));
    assert_eq!(changed["hash"].as_str(), Some(hash.as_str()));
    // The grades are the key's, and so are the labels summary.json names.
    assert_eq!(stale["labels"]["hash"], fresh["labels"]["hash"]);
    assert!(wd.read("stale/per_query.csv") == wd.read("fresh/per_query.csv"));
    // So does such a key as the human sample of --calibrate.
    wd.write("judge.jsonl", SMALL_LABELS);
    let calibrate = "grade --labels judge.jsonl --calibrate key.rgx -q log.jsonl";
    let run = wd.rgrade(&calibrate.split(' ').collect::<Vec<_>>());
    run.expect_code(0).expect_stderr(&[warning]);

    std::fs::remove_file(wd.path("labels.jsonl")).unwrap();
    let run = grade("gone");
    run.expect_code(0);
    assert!(!run.stderr.contains(warning), "{run}");
}

/// A key cut within its first line is refused as a damaged key, not read
/// as TREC qrels.
#[test]
fn a_key_cut_in_its_first_line_is_refused_as_a_key() {
    let wd = Workdir::new("index_cut");
    wd.write("labels.jsonl", SMALL_LABELS);
    wd.write("log.jsonl", SMALL_LOGS);
    wd.rgrade(&["index", "labels.jsonl", "-o", "key.rgx"])
        .expect_code(0);
    let key = wd.read("key.rgx");
    for len in [5, 20, 26] {
        wd.write("cut.rgx", &key[..len]);
        let run = wd.rgrade(&["grade", "--labels", "cut.rgx", "-q", "log.jsonl"]);
        run.expect_code(2)
            .expect_stderr(&["cut.rgx: a compiled key with less than its first line"]);
    }
}
