//! partial.json, the summary a partial grading (`grade --partial`) writes
//! last, for people and for `rgrade merge`.
//!
//! Its file names and the layout of its captures file sit with every other
//! file's, in the parent module.

use serde::{Deserialize, Serialize};

use super::labels::LabelsSummary;
use super::listed::{InputSummary, OutputFile};

/// partial.json: a partial grading, for people and for `rgrade merge`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartialSummary {
    /// Always `rgrade`.
    pub tool: String,
    /// The version that wrote it: `merge` takes partial gradings of its own version only.
    pub version: String,
    /// The layout of its captures file ([`super::PARTIAL_FORMAT`]; absent, 1):
    /// `merge` takes its own layout only, whatever the version says.
    #[serde(default = "first_partial_format")]
    pub format: u32,
    /// The command line as typed.
    pub command: Vec<String>,
    /// The answer key.
    pub labels: LabelsSummary,
    /// Every log input read.
    pub inputs: Vec<InputSummary>,
    /// Labeled queries with a capture in any (run, stage).
    pub captured_queries: u64,
    /// Records rejected.
    pub rejected: u64,
    /// The files of the partial grading, with sizes and hashes.
    pub outputs: Vec<OutputFile>,
}

fn first_partial_format() -> u32 {
    1
}
