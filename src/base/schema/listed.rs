//! The files a summary lists: each log input a grading read
//! (summary.json, partial.json), and each output file as the file that
//! marks a result complete lists it (summary.json, comparison.json,
//! agreement.json, alarms.json), so a reader can check it was not changed
//! since.

use serde::{Deserialize, Serialize};

/// One output file as summary.json lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutputFile {
    /// Its name in the output directory.
    pub name: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// xxh3-128 of its bytes, in hex.
    pub hash: String,
}

/// One log input in summary.json.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InputSummary {
    /// The path as given or found (`-` for stdin).
    pub path: String,
    /// Bytes read (compressed size for compressed input).
    pub bytes: u64,
    /// Bytes after decompression.
    pub decoded_bytes: u64,
    /// Lines, blank ones included.
    pub lines: u64,
    /// Non-blank lines: the records.
    pub records: u64,
    /// Records rejected while reading this input (rejects decided later,
    /// such as repeated captures, are only in the total).
    pub rejected: u64,
    /// xxh3-128 of the bytes read, in hex.
    pub hash: String,
    /// Why it was skipped unread (`--bad-files skip`: it cannot be read
    /// to its end), if it was; its reject in rejects.jsonl says the same.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
}
