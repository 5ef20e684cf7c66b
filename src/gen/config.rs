//! What `rgrade gen` is asked for: how many queries and results, the seed,
//! the log format and the output directory, with the limits they are
//! checked against. Every part of the generator reads it and it reads none
//! of them, so it stands on its own.

use std::path::PathBuf;

use anyhow::bail;

use crate::base::options::choice;

/// The most results per ranking: rankings deeper than trec_eval's
/// customary 1000 are rare, and the corpus grows with the ranking depth.
pub const MAX_RESULTS: usize = 10_000;

/// What to generate and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenConfig {
    /// Queries in the answer key (and in the log), at least 1.
    pub labeled: usize,
    /// Queries in the log that the answer key does not cover.
    pub unlabeled: usize,
    /// Results per retrieved ranking, 1 to 10,000.
    pub results: usize,
    /// Seeds every random draw: the same configuration gives byte-identical
    /// files.
    pub seed: u64,
    /// The log's format.
    pub format: GenFormat,
    /// The directory to write into, created if missing.
    pub out: PathBuf,
}

choice! {
    /// The log format `rgrade gen` writes.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum GenFormat {
        /// logs.jsonl, one JSON object per search event.
        Jsonl = "jsonl",
        /// run.trec, a TREC run file.
        Trec = "trec",
        /// traces.jsonl, OTLP/JSON exports: a RETRIEVER, a RERANKER and an LLM span per query.
        Otlp = "otlp",
        /// logs.parquet, the events of logs.jsonl as Parquet rows.
        Parquet = "parquet",
    }
}

impl GenConfig {
    /// An error for counts the generator cannot honour, named by the
    /// `rgrade gen` options that set them.
    pub(super) fn check(&self) -> anyhow::Result<()> {
        if self.labeled == 0 {
            bail!("--queries must be at least 1: the answer key needs a labeled query");
        }
        if !(1..=MAX_RESULTS).contains(&self.results) {
            bail!(
                "--results must be between 1 and {MAX_RESULTS}, got {}",
                self.results
            );
        }
        Ok(())
    }
}
