//! summary.json's diagnostics: labels that look made for other ids, and
//! (run, stage)s most of whose labeled queries no record captured.

use serde::{Deserialize, Serialize};

/// The stale-label counts of one grouping set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SliceStale {
    /// The task, or `*`.
    pub task: String,
    /// The language, or `*`.
    pub language: String,
    /// Labeled documents of the captured queries in the set.
    pub labeled: u64,
    /// Of those, the ones no capture of their query returned.
    pub unseen: u64,
    /// Queries of the set with at least one valid capture and a judged
    /// document.
    pub queries_captured: u64,
    /// Of those, the ones whose valid captures returned no judged document.
    pub queries_without_judged_results: u64,
}

/// `stale_labels` in summary.json.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StaleLabels {
    /// Labeled (query, document) pairs of the queries with at least one
    /// valid capture, in any run and stage.
    pub labeled: u64,
    /// Of those, the ones no capture of their query returned at any depth.
    pub unseen: u64,
    /// `unseen / labeled` (0 when nothing is labeled).
    pub fraction: f64,
    /// The first unseen ids, in query order.
    pub sample: Vec<String>,
    /// Per task, per language and per task × language, as in aggregates.csv.
    pub by_slice: Vec<SliceStale>,
    /// Labeled queries with at least one valid capture, in any run and
    /// stage, whose labels judge a document (any grade): a query that
    /// judges none could return none.
    pub queries_captured: u64,
    /// Of those, the ones of which no valid capture returned a document
    /// their labels judge, whatever its grade (0 and negative included) and
    /// depth: what a changed id scheme does to every query, and pooled
    /// labels to none.
    pub queries_without_judged_results: u64,
}

impl StaleLabels {
    /// Whether the labels look made for other ids: more than half of the
    /// captured queries returned no judged document at all.
    pub fn look_stale(&self) -> bool {
        self.queries_without_judged_results * 2 > self.queries_captured
    }
}

/// A (run, stage) most of whose labeled queries with an answer no record
/// captured: labels that cover more than the logs (several years of
/// qrels against one year's run), or a query-id field that does not match
/// the labels' ids. Under `--missing fail` each scores 0, so the means
/// fall towards 0.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MostlyMissing {
    /// The run.
    pub run: String,
    /// The stage.
    pub stage: String,
    /// Labeled queries with an answer (not `no_answer`).
    pub queries: u64,
    /// Of those, the ones with status missing.
    pub missing: u64,
    /// `missing / queries`.
    pub share: f64,
}
