//! Helpers shared by the integration tests: a scratch directory per test,
//! running the real `rgrade` binary in it ([`run`]), and reading its outputs
//! back ([`outputs`]: CSV into rows, JSON and JSONL through serde_json).
//! What only one group of test files shares has a module of its own:
//! [`compare`], [`nights`], [`permissions`] and [`stage_loss`]. A helper that two test
//! files need lives here, once.

use std::path::{Path, PathBuf};

use serde_json::Value;

pub mod compare;
pub mod nights;
mod outputs;
pub mod permissions;
mod run;
pub mod stage_loss;

pub use outputs::*;
pub use run::*;

/// The repository's top, where the README's commands run: the command
/// line's package, which these tests belong to, sits in `cli/` below it.
pub const REPO_ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

/// The absolute path of `rel` inside the repository: a file of a shipped sample,
/// say (`data-samples/...`).
pub fn repo_path(rel: &str) -> PathBuf {
    Path::new(REPO_ROOT).join(rel)
}

/// Write `per_query` as `dir`'s per_query.csv and list it in the
/// summary.json there, as a grading would have (what a tool that edits a
/// result after the fact does).
pub fn relist(wd: &Workdir, dir: &str, per_query: &str) {
    wd.write(&format!("{dir}/per_query.csv"), per_query);
    let path = format!("{dir}/summary.json");
    let mut summary: Value = serde_json::from_str(&wd.read_text(&path)).unwrap();
    for output in summary["outputs"].as_array_mut().unwrap() {
        if output["name"] == "per_query.csv" {
            output["bytes"] = serde_json::json!(per_query.len());
            let hash = xxhash_rust::xxh3::xxh3_128(per_query.as_bytes());
            output["hash"] = serde_json::json!(format!("{hash:032x}"));
        }
    }
    wd.write(&path, summary.to_string());
}

/// The absolute path of a file of the shipped worked example
/// (`data-samples/seed/`), as a command-line argument.
pub fn seed(name: &str) -> String {
    repo_path("data-samples/seed")
        .join(name)
        .display()
        .to_string()
}

/// A doc id of a logged ranking: a string, or the `doc_id` of an object.
/// `context` (the record, say) is shown if there is none.
#[track_caller]
pub fn doc_id(doc: &Value, context: &Value) -> String {
    doc.as_str()
        .or_else(|| doc["doc_id"].as_str())
        .unwrap_or_else(|| panic!("no doc id in {doc} of {context}"))
        .to_string()
}

/// Lines joined into a file's text, each ending in a newline.
pub fn text<S: AsRef<str>>(lines: &[S]) -> String {
    lines
        .iter()
        .map(|line| format!("{}\n", line.as_ref()))
        .collect()
}

/// The options the realistic sample is graded with (its README): three
/// cutoffs, retried requests kept last, its ten flawed lines tolerated.
pub const REALISTIC_OPTIONS: [&str; 6] =
    ["-k", "1,5,10", "--repeats", "last", "--max-rejects", "10"];

/// Where LangSmith's runs keep a retriever's query id and documents, as
/// field flags: the same for its JSONL runs and its bulk Parquet export.
pub const LANGSMITH_FIELDS: [&str; 6] = [
    "--query-field",
    "/extra/metadata/query_id",
    "--results-field",
    "/outputs/documents",
    "--doc-field",
    "/metadata/id",
];

/// `rgrade grade ARGS` in `wd`.
pub fn grade(wd: &Workdir, args: &[&str]) -> Run {
    let mut all = vec!["grade"];
    all.extend_from_slice(args);
    wd.rgrade(&all)
}
