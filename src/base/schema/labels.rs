//! The answer key's facts, as summary.json (and partial.json and
//! agreement.json) report them: the labels file, its collection versions,
//! reviewers and sources, and the runs its pools came from.

use serde::{Deserialize, Serialize};

use crate::base::options::ReviewerPolicy;

/// The answer key in summary.json.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LabelsSummary {
    /// The path as given.
    pub path: String,
    /// File size.
    pub bytes: u64,
    /// xxh3-128 of the file's bytes.
    pub hash: String,
    /// xxh3-128 of the judgments as graded, whatever the file's format or
    /// order: `compare` and `trend` check that two gradings used the same.
    /// Empty in results written before it was recorded, which compare by
    /// `hash`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub content_hash: String,
    /// The format read.
    pub format: String,
    /// Labeled queries.
    pub queries: usize,
    /// The collection versions the labels were reviewed against
    /// (`collection_version`), each with its labeled queries, by name;
    /// queries whose label names none are not listed.
    #[serde(default)]
    pub collection_versions: Vec<CollectionVersion>,
    /// The compiled key the labels were read from (`rgrade index`), if
    /// they were; the fields above are then the labels it was compiled
    /// from, so that gradings from the key and from its labels compare.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compiled_key: Option<CompiledKeySummary>,
    /// The reviewers the labels name (`reviewer`), when they name any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reviewers: Option<ReviewersSummary>,
    /// Who or what made the labels (`source`: `human`, `llm:<model>`,
    /// `clicks`, ...), by name; empty when no label names one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<SourceSummary>,
    /// Labeled queries whose labels name the runs they were pooled from
    /// (`pooled_from`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pooled_queries: u64,
}

/// Whether a count is zero: a field summary.json leaves out then.
pub(super) fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// `calibration` in summary.json: the human key a judge-graded grading's
/// means were calibrated against (`grade --calibrate`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CalibrationSummary {
    /// The human key, as `labels` describes the graded one.
    pub labels: LabelsSummary,
    /// The human key's queries that the graded key labels too; the others
    /// are not graded.
    pub shared_queries: u64,
    /// Of those, the ones the human key finds no relevant document for but
    /// the graded key does: out of every mean under the human key, and
    /// the judge's errors that the calibrated means correct.
    pub no_answer_by_humans: u64,
    /// Fewer human-graded queries in a grouping set leave its calibrated
    /// means empty.
    pub min_queries: u64,
    /// The intervals' coverage.
    pub level: f64,
}

/// A graded run that is the only run the judging pools of some labeled
/// queries came from (`pooled_from`): it defined its own answer key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SelfPooled {
    /// The run.
    pub run: String,
    /// Labeled queries pooled from this run alone.
    pub queries: u64,
    /// Their share of the labeled queries that name a pool.
    pub share: f64,
}

/// One `source` of labels in summary.json.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceSummary {
    /// The source, as the labels write it.
    pub source: String,
    /// Label lines (JSONL) or rows (CSV, Parquet) that name it.
    pub labels: u64,
    /// The judgments those hold.
    pub judgments: u64,
}

/// The reviewers of one answer key in summary.json (docs/guide.md,
/// "Several reviewers in one key").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReviewersSummary {
    /// `--reviewers`: how the grades of a pair judged by several were
    /// combined (`majority`, `any`, `all`), or the one reviewer whose
    /// grades count; null when none was given.
    pub policy: Option<ReviewerPolicy>,
    /// Each reviewer, by name; `(none)` stands for labels that name none.
    pub reviewers: Vec<ReviewerSummary>,
    /// (query, document) pairs judged by two reviewers or more.
    pub pairs_judged_by_several: u64,
    /// Of those, the pairs not all given the same grade.
    pub pairs_disputed: u64,
    /// Fleiss' kappa over those pairs on relevant or not (at `--min-rel`);
    /// null when undefined (no such pair, or all in one category).
    pub fleiss_kappa_relevance: Option<f64>,
    /// Fleiss' kappa over those pairs, each grade a category of its own.
    pub fleiss_kappa_grade: Option<f64>,
    /// Krippendorff's alpha over those pairs, the grades as ordered
    /// categories: each pair counts with as many reviewers as judged it.
    pub krippendorff_alpha_grade: Option<f64>,
}

/// One reviewer in summary.json.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewerSummary {
    /// The reviewer's name, as the labels write it.
    pub name: String,
    /// The queries they labeled.
    pub queries: u64,
    /// The (query, document) pairs they judged.
    pub pairs: u64,
}

/// A compiled answer key in summary.json.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompiledKeySummary {
    /// The path as given.
    pub path: String,
    /// File size.
    pub bytes: u64,
    /// xxh3-128 of the key file's bytes.
    pub hash: String,
    /// The labels file the key was compiled from (`labels.path`) as it is
    /// now, when it has changed since: the grading used the labels the
    /// key holds, which `labels` describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels_changed: Option<ChangedLabels>,
}

/// A labels file as it is now, in summary.json, when a compiled key of it
/// holds it as it was.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangedLabels {
    /// File size now.
    pub bytes: u64,
    /// xxh3-128 of the file's bytes now.
    pub hash: String,
}

/// A collection version the labels name, in summary.json.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CollectionVersion {
    /// The version, as the labels write it.
    pub version: String,
    /// Labeled queries reviewed against it.
    pub queries: u64,
}
