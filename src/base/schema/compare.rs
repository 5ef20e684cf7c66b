//! comparison.json, the summary `rgrade compare` writes last.
//!
//! comparison.csv's and per_query_delta.csv's columns sit with every other
//! file's, in the parent module.

use serde::{Deserialize, Serialize};

use super::listed::OutputFile;

/// comparison.json: what was compared, how, the figures of both sides
/// that comparison.csv has no room for, and every other output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComparisonSummary {
    /// Always "rgrade".
    pub tool: String,
    /// rgrade's version.
    pub version: String,
    /// The current system.
    pub baseline: ComparedRun,
    /// The proposed change.
    pub candidate: ComparedRun,
    /// xxh3-128 of the labels both were graded with.
    pub labels_hash: String,
    /// How the comparison was made.
    pub settings: CompareSettings,
    /// Per stage, both sides' latency and context size.
    pub stages: Vec<StageSides>,
    /// The cutoff the evidence of the losses is read at: the gradings'
    /// deepest (their `missing_at_` column).
    pub evidence_cutoff: String,
    /// Per stage, the queries that lost most on the first metric, with the
    /// evidence each lost.
    pub biggest_losses: Vec<QueryLoss>,
    /// Every other output of the comparison, as written.
    pub outputs: Vec<OutputFile>,
}

/// One side of a comparison in comparison.json.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ComparedRun {
    /// Its per_query.csv, as found from the path given.
    pub path: String,
    /// The run compared.
    pub run: String,
}

/// The settings of a comparison in comparison.json.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompareSettings {
    /// The metric columns compared, the first one ordering the losses.
    pub metrics: Vec<String>,
    /// Sign-flip permutations of the randomization test.
    pub permutations: usize,
    /// Seed of the permutations.
    pub seed: u64,
    /// Significance level of the marks, and of the power figures.
    pub alpha: f64,
    /// Coverage of the intervals.
    pub confidence: f64,
    /// `--mde`: the change comparison.csv's `queries_for_mde` is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mde: Option<f64>,
}

/// Both sides' latency and context size over one stage's paired queries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageSides {
    /// The stage.
    pub stage: String,
    /// Paired queries.
    pub queries: u64,
    /// Queries counted in the means.
    pub counted: u64,
    /// The baseline's figures.
    pub baseline: SideFigures,
    /// The candidate's figures.
    pub candidate: SideFigures,
}

/// One side's latency percentiles and mean context size, as
/// aggregates.csv computes them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SideFigures {
    /// Median latency.
    pub latency_p50_ms: Option<f64>,
    /// 95th percentile latency.
    pub latency_p95_ms: Option<f64>,
    /// 99th percentile latency.
    pub latency_p99_ms: Option<f64>,
    /// Mean context size.
    pub context_tokens_mean: Option<f64>,
}

/// A query that lost on the first metric, and the evidence it lost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueryLoss {
    /// The stage.
    pub stage: String,
    /// The query.
    pub query_id: String,
    /// Its task.
    pub task: String,
    /// Its language.
    pub language: String,
    /// The first metric compared.
    pub metric: String,
    /// Its baseline value.
    pub baseline: f64,
    /// Its candidate value.
    pub candidate: f64,
    /// Relevant ids the baseline had in its deepest cutoff's top k and
    /// the candidate has not.
    pub lost: Vec<String>,
    /// Relevant ids the candidate has there and the baseline had not.
    pub gained: Vec<String>,
}
