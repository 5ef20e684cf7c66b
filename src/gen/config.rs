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
#[derive(Debug, Clone, PartialEq)]
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
    /// A log per night under one answer key, for `rgrade trend`; `None`
    /// writes one log.
    pub nights: Option<Nights>,
}

/// A series of nights: the answer key once, and each night's log in
/// `night-01/`, `night-02/`, ... Each night one query in twenty draws
/// its rankings afresh (an index that changes a little every night);
/// the rest rank as `changes` says.
#[derive(Debug, Clone, PartialEq)]
pub struct Nights {
    /// How many nights, at least 1.
    pub count: usize,
    /// Whether a query's fresh rankings stay or revert the next night.
    pub changes: NightChanges,
    /// A drop planted in one task's rankings, if any.
    pub drop: Option<PlantedDrop>,
}

/// From night `from` on, each relevant document of `task`'s queries is
/// lost from their rankings with probability `rate`.
#[derive(Debug, Clone, PartialEq)]
pub struct PlantedDrop {
    /// The task whose queries drop.
    pub task: String,
    /// The first night that drops, from 1.
    pub from: usize,
    /// The chance a relevant document is lost, in (0, 1].
    pub rate: f64,
}

choice! {
    /// What becomes of a query's rankings the night after they were drawn
    /// afresh (`rgrade gen --nights --changes`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum NightChanges {
        /// The next night it ranks as it always had: changes come and go.
        Revert = "revert",
        /// It keeps the new rankings until it draws afresh again, as an
        /// index that changes and stays changed; quality expected over
        /// queries never moves.
        Persist = "persist",
    }
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
            bail!(
                "{} must be at least 1: the answer key needs a labeled query",
                crate::base::failure::Setting::Queries
            );
        }
        if !(1..=MAX_RESULTS).contains(&self.results) {
            bail!(
                "{} must be between 1 and {MAX_RESULTS}, got {}",
                crate::base::failure::Setting::Results,
                self.results
            );
        }
        let Some(nights) = &self.nights else {
            return Ok(());
        };
        if nights.count == 0 {
            bail!(
                "{} must be at least 1",
                crate::base::failure::Setting::Nights
            );
        }
        if let Some(drop) = &nights.drop {
            if !(1..=nights.count).contains(&drop.from) {
                bail!(
                    "{} is not one of the {} nights",
                    crate::base::failure::Setting::DropFrom.given(drop.from),
                    nights.count
                );
            }
            if !(drop.rate > 0.0 && drop.rate <= 1.0) {
                bail!(
                    "{} must be above 0 and at most 1, got {}",
                    crate::base::failure::Setting::DropRate,
                    drop.rate
                );
            }
        }
        Ok(())
    }
}
