//! One output file as the file that marks a result complete lists it
//! (summary.json, comparison.json, agreement.json, alarms.json), so a
//! reader can check it was not changed since.

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
