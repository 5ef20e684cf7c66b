//! The samples shipped in `data-samples/` are fixtures: the README's
//! commands, run as a user would from the repository's top, print and write what
//! the READMEs and `data-samples/realistic/expected/` say.
//!
//! The golden files are also checked against the inputs, by recomputing a
//! few of their numbers here from labels.jsonl and the raw logs, so they
//! are not only checked against themselves.

use std::collections::BTreeSet;
use std::fs::{self, File};
use std::io::Read as _;
use std::path::{Path, PathBuf};

use flate2::read::MultiGzDecoder;
use serde_json::Value;

use crate::util::{
    assert_cell, assert_counts_add_up, assert_same_lines, assert_text, count, doc_id, repo_path,
    rgrade_in, Run, Table, Workdir, REPO_ROOT,
};

/// The realistic sample, relative to the repository's top, as the README writes it.
const REALISTIC: &str = "data-samples/realistic";

/// The absolute path of `rel` inside the realistic sample.
fn realistic(rel: &str) -> PathBuf {
    repo_path(REALISTIC).join(rel)
}

/// data-samples/README.md's command for the realistic sample, writing into
/// `wd`'s `out/`, run from the repository's top so the `file` of every reject is
/// the same relative path as in `expected/rejects.jsonl`. `repeats` is
/// the `--repeats` option, or nothing for the default.
fn grade_realistic(wd: &Workdir, repeats: &[&str]) -> Run {
    let out = wd.path("out").display().to_string();
    let labels = format!("{REALISTIC}/labels.jsonl");
    let logs = format!("{REALISTIC}/logs");
    let mut args = vec!["grade", "--labels", &labels, "-k", "1,5,10"];
    args.extend_from_slice(repeats);
    args.extend_from_slice(&["--max-rejects", "10", "-o", &out, &logs]);
    rgrade_in(Path::new(REPO_ROOT), &args)
}

/// The `reason` of every reject in rejects.jsonl, sorted.
fn reasons(rejects: &[Value]) -> Vec<&str> {
    let mut reasons: Vec<&str> = rejects
        .iter()
        .map(|r| r["reason"].as_str().unwrap_or("(no reason)"))
        .collect();
    reasons.sort_unstable();
    reasons
}

/// The README's first command, run from the repository's top exactly as written
/// (its grade part), prints `recall@3 0.833` and `rr@3 0.667` on the `all`
/// row and exits 0.
#[test]
fn readme_first_command_prints_the_worked_example_numbers() {
    let run = rgrade_in(
        Path::new(REPO_ROOT),
        &[
            "grade",
            "--labels",
            "data-samples/seed/labels.jsonl",
            "-k",
            "3",
            "data-samples/seed/logs.jsonl",
        ],
    );
    run.expect_code(0);
    let table = run.stdout_table();
    assert_eq!(table.len(), 1, "one (run, stage) table\n{run}");
    let slices = table.values().next().expect("one table");
    let all = slices
        .get("all")
        .unwrap_or_else(|| panic!("no `all` row\n{run}"));
    assert_eq!(all["recall@3"], "0.833", "recall@3 on the all row\n{run}");
    assert_eq!(all["rr@3"], "0.667", "rr@3 on the all row\n{run}");
}

/// data-samples/README.md's command for the realistic sample writes
/// per_query.csv, aggregates.csv and rejects.jsonl byte for byte as in
/// `expected/`, and exits 0 (5 rejects, `--max-rejects 10`).
#[test]
fn realistic_sample_writes_the_expected_files() {
    let wd = Workdir::new("samples_realistic_expected");
    let run = grade_realistic(&wd, &["--repeats", "last"]);
    run.expect_code(0);
    for file in ["per_query.csv", "aggregates.csv", "rejects.jsonl"] {
        let expected = realistic(&format!("expected/{file}"));
        let want = fs::read(&expected)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", expected.display()));
        assert_same_lines(
            &format!(
                "{file} against {REALISTIC}/expected/{file} (if the change is meant, \
                 review it, then rerun data-samples/README.md's command into expected/)"
            ),
            &wd.read(&format!("out/{file}")),
            &want,
        );
    }
}

/// On the realistic sample, summary.json accounts for every flaw the
/// sample's README lists: the counts add up; each of the five bad lines
/// has its own reject reason; the blank line is counted apart; the three
/// retries are superseded under `--repeats last`; the 20 unlabeled
/// queries make 40 events; and both shards are listed in sorted order with
/// their sizes on disk.
#[test]
fn realistic_summary_accounts_for_every_flaw() {
    let wd = Workdir::new("samples_realistic_summary");
    let run = grade_realistic(&wd, &["--repeats", "last"]);
    run.expect_code(0);
    let summary = wd.read_json("out/summary.json");
    assert_counts_add_up(&summary);
    for (name, want) in [
        ("rejected", 5),
        ("unlabeled_events", 40),
        ("blank_lines", 1),
        ("superseded_records", 3),
    ] {
        assert_eq!(
            count(&summary, name),
            want,
            "counts.{name}:\n{:#}",
            summary["counts"]
        );
    }
    let rejects = wd.read_jsonl("out/rejects.jsonl");
    assert_eq!(
        reasons(&rejects),
        [
            "bad_results",
            "duplicate_doc",
            "invalid_json",
            "invalid_utf8",
            "missing_results"
        ],
        "one reject per flawed line"
    );

    let inputs = summary["inputs"]
        .as_array()
        .unwrap_or_else(|| panic!("no inputs in summary.json:\n{summary:#}"));
    let paths: Vec<&str> = inputs
        .iter()
        .map(|input| input["path"].as_str().unwrap_or("(no path)"))
        .collect();
    assert_eq!(
        paths,
        [
            "data-samples/realistic/logs/part-000.jsonl",
            "data-samples/realistic/logs/part-001.jsonl.gz"
        ],
        "the directory's files, in sorted order"
    );
    for (input, path) in inputs.iter().zip(paths) {
        let on_disk = fs::metadata(Path::new(REPO_ROOT).join(path))
            .unwrap_or_else(|e| panic!("cannot stat {path}: {e}"))
            .len();
        assert_eq!(
            input["bytes"].as_u64(),
            Some(on_disk),
            "{path}: bytes in summary.json against the file on disk"
        );
    }
}

/// Without `--repeats last` (so `error`, the default) every capture of the
/// three retried (run, stage, query) keys is a `repeated_capture` reject and
/// the keys are `invalid` with 2 captures. So are q000001, q000010 and q000011
/// `final`: their flawed records (a chunk listed twice, no results, results as
/// a string) still count as captures of their keys once the key was read
/// (docs/reference.md, Decisions where tools differ: several captures), which
/// makes their one good capture a repeat too. 14 rejects exceed
/// `--max-rejects 10`: exit 1.
#[test]
fn realistic_retries_are_rejected_under_the_default_repeats_error() {
    let wd = Workdir::new("samples_realistic_repeats_error");
    let run = grade_realistic(&wd, &[]);
    run.expect_code(1)
        .expect_stderr(&["14 rejected records exceed --max-rejects 10"]);

    // make.sh appends copies of lines 5..=7 of the generated log to the
    // second shard, after its 320 generated lines; the good final captures
    // of q000010, q000001 and q000011 are line 242 of the first shard and
    // lines 26 and 216 of the second.
    let part0 = "data-samples/realistic/logs/part-000.jsonl";
    let part1 = "data-samples/realistic/logs/part-001.jsonl.gz";
    let want: Vec<(&str, u64)> = vec![
        (part0, 5),
        (part0, 6),
        (part0, 7),
        (part0, 242),
        (part1, 26),
        (part1, 216),
        (part1, 321),
        (part1, 322),
        (part1, 323),
    ];
    let rejects = wd.read_jsonl("out/rejects.jsonl");
    let repeated: Vec<(&str, u64)> = rejects
        .iter()
        .filter(|r| r["reason"] == "repeated_capture")
        .map(|r| {
            let file = r["file"].as_str().unwrap_or("(no file)");
            (file, r["line"].as_u64().unwrap_or(0))
        })
        .collect();
    assert_eq!(repeated, want, "repeated_capture rejects, in input order");
    assert_eq!(rejects.len(), 14, "9 repeats and the 5 flawed lines");

    let per_query = wd.read_csv("out/per_query.csv");
    let mut invalid: Vec<(String, String)> = per_query
        .records()
        .into_iter()
        .filter(|row| row["status"] == "invalid")
        .map(|row| {
            assert_cell(&row, "captures", 2.0);
            assert_text(&row, "n_results", "");
            (row["stage"].clone(), row["query_id"].clone())
        })
        .collect();
    invalid.sort();
    let want_invalid = [
        ("final", "q000001"),
        ("final", "q000010"),
        ("final", "q000011"),
        ("final", "q000287"),
        ("retrieve", "q000031"),
        ("retrieve", "q000282"),
    ]
    .map(|(stage, query)| (stage.to_string(), query.to_string()));
    assert_eq!(invalid, want_invalid, "(stage, query) of the invalid rows");

    let summary = wd.read_json("out/summary.json");
    assert_counts_add_up(&summary);
    assert_eq!(
        count(&summary, "superseded_records"),
        0,
        "nothing superseded"
    );
}

/// The relevant doc ids of `query` in the realistic answer key: every id
/// of a list, or every id graded 1 or more (docs/reference.md, Input formats).
fn relevant(query: &str) -> BTreeSet<String> {
    let path = realistic("labels.jsonl");
    let text =
        fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let label: Value = text
        .lines()
        .map(|line| serde_json::from_str(line).expect("labels.jsonl is valid JSONL"))
        .find(|label: &Value| label["query_id"] == query)
        .unwrap_or_else(|| panic!("{query} is not in {}", path.display()));
    match &label["relevant"] {
        Value::Array(docs) => docs.iter().map(|d| doc_id(d, &label)).collect(),
        Value::Object(grades) => grades
            .iter()
            .filter(|(_, grade)| grade.as_i64().is_some_and(|g| g >= 1))
            .map(|(doc, _)| doc.clone())
            .collect(),
        _ => panic!("relevant is neither a list nor grades: {label}"),
    }
}

/// The one `final` ranking of `query` in the realistic logs, read without
/// rgrade: both shards, the second gunzipped here. Lines that are not JSON
/// (the sample's cut-off and non-UTF-8 lines) are skipped, so a query is
/// only usable if exactly one parsed record holds its final ranking.
fn final_ranking(query: &str) -> Vec<String> {
    let plain = fs::read(realistic("logs/part-000.jsonl")).expect("read part-000.jsonl");
    let mut unzipped = Vec::new();
    MultiGzDecoder::new(File::open(realistic("logs/part-001.jsonl.gz")).expect("open part-001"))
        .read_to_end(&mut unzipped)
        .expect("gunzip part-001.jsonl.gz");
    let captures: Vec<Value> = [plain, unzipped]
        .iter()
        .flat_map(|bytes| bytes.split(|&b| b == b'\n'))
        .filter_map(|line| serde_json::from_slice::<Value>(line).ok())
        .filter(|record| record["query_id"] == query && record["stage"] == "final")
        .collect();
    assert_eq!(
        captures.len(),
        1,
        "{query}: pick a query with exactly one final capture, found {captures:#?}"
    );
    let capture = &captures[0];
    capture["results"]
        .as_array()
        .unwrap_or_else(|| panic!("{query}: no results array in {capture}"))
        .iter()
        .map(|doc| doc_id(doc, capture))
        .collect()
}

/// A few numbers of `expected/per_query.csv`, recomputed from the raw inputs
/// with the definitions of docs/reference.md, Metrics: recall@5 = |top 5 ∩ R| /
/// |R|, rr@10 = 1 / rank of the first relevant doc within 10, n_relevant = |R|
/// and missing_at_10 = R minus the top 10, sorted and `|`-joined. The two
/// queries picked sit in different shards (plain and gzip), one with graded
/// labels including a grade-0 doc, the other with a list, and both score
/// strictly between 0 and 1, so the check has something to catch.
#[test]
fn realistic_expected_numbers_follow_from_the_inputs() {
    let expected = Table::from_path(&realistic("expected/per_query.csv"));
    for query in ["q000160", "q000090"] {
        let rel = relevant(query);
        let ranking = final_ranking(query);
        let found_in = |k: usize| ranking.iter().take(k).filter(|d| rel.contains(*d)).count();
        let recall5 = found_in(5) as f64 / rel.len() as f64;
        let rr10 = ranking
            .iter()
            .take(10)
            .position(|d| rel.contains(d))
            .map_or(0.0, |i| 1.0 / (i + 1) as f64);
        let top10: BTreeSet<&String> = ranking.iter().take(10).collect();
        let missing10: Vec<&str> = rel
            .iter()
            .filter(|d| !top10.contains(d))
            .map(String::as_str)
            .collect();
        assert!(
            0.0 < recall5 && recall5 < 1.0 && 0.0 < rr10 && rr10 < 1.0,
            "{query}: recall@5 {recall5} and rr@10 {rr10} are not partial \
             credit; pick a query that can tell a right number from a wrong one"
        );

        let row = expected.row(&[("stage", "final"), ("query_id", query)]);
        assert_cell(&row, "n_relevant", rel.len() as f64);
        assert_cell(&row, "recall@5", recall5);
        assert_cell(&row, "rr@10", rr10);
        assert_text(&row, "missing_at_10", &missing10.join("|"));
    }
}

/// OpenSearch UBI's `ubi_queries` records grade through field mapping
/// alone: the query text is the key of the answer key, the hit ids are the
/// ranking, the application is the run; a search that found nothing
/// (`query_response_hit_ids: null`) is an empty ranking, not a reject.
#[test]
fn ubi_queries_grade_through_field_mapping() {
    let wd = Workdir::new("ubi_sample");
    let sample = |rel: &str| {
        repo_path(&format!("data-samples/ubi/{rel}"))
            .display()
            .to_string()
    };
    let (labels, logs) = (sample("labels.jsonl"), sample("ubi_queries.jsonl"));
    wd.rgrade(&[
        "grade",
        "--labels",
        &labels,
        "--query-field",
        "user_query",
        "--results-field",
        "query_response_hit_ids",
        "--run-field",
        "application",
        "-k",
        "3",
        "-o",
        "out",
        &logs,
    ])
    .expect_code(0);
    let per_query = wd.read_csv("out/per_query.csv");
    let row = |query: &str| per_query.row(&[("run", "chorus"), ("query_id", query)]);
    assert_cell(&row("laptop sleeve"), "rr@3", 0.5);
    assert_cell(&row("usb c charger"), "recall@3", 0.5);
    let nothing = row("wireless mouse");
    assert_text(&nothing, "status", "ok");
    assert_cell(&nothing, "n_results", 0.0);
    assert_cell(&nothing, "recall@3", 0.0);
    let summary = wd.read_json("out/summary.json");
    assert_eq!(count(&summary, "rejected"), 0);
    assert_eq!(count(&summary, "unlabeled_events"), 1);
    assert_counts_add_up(&summary);
}
