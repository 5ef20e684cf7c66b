//! agreement.json, the summary `rgrade agree` writes last.
//!
//! The columns of its CSV files sit with every other file's, in the parent
//! module.

use serde::{Deserialize, Serialize};

use super::labels::LabelsSummary;
use super::listed::OutputFile;
use crate::base::metrics::Cutoff;

/// agreement.json: the two answer keys `rgrade agree` compared, how many
/// pairs each judges, and the confusion matrix of their grades.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgreementSummary {
    /// Always "rgrade".
    pub tool: String,
    /// rgrade's version.
    pub version: String,
    /// The first key (rows of the confusion matrix, `grade_a`).
    pub key_a: LabelsSummary,
    /// The second key (columns, `grade_b`).
    pub key_b: LabelsSummary,
    /// The lowest grade that counts as relevant, in both keys.
    pub min_rel: i64,
    /// The queries and pairs each key labels, written in place.
    #[serde(flatten)]
    pub overlap: KeyOverlap,
    /// The grades of the confusion matrix, in order.
    pub grades: Vec<i64>,
    /// Pairs both judge, by the first key's grade (row) and the second's
    /// (column), in the order of `grades`.
    pub confusion: Vec<Vec<u64>>,
    /// Cohen's kappa on relevant or not over every pair both judge;
    /// null when undefined (both keys always give one and the same answer).
    pub relevance_kappa: Option<f64>,
    /// Linear-weighted kappa on the grades over every pair both judge;
    /// null when undefined.
    pub grade_kappa: Option<f64>,
    /// Unweighted kappa on the grades (each grade a category of its own)
    /// over every pair both judge; null when undefined.
    pub grade_kappa_unweighted: Option<f64>,
    /// Quadratic-weighted kappa on the grades over every pair both judge;
    /// null when undefined.
    pub grade_kappa_quadratic: Option<f64>,
    /// Krippendorff's alpha on the grades as ordered categories over every
    /// pair both judge; null when undefined.
    pub grade_alpha_ordinal: Option<f64>,
    /// The logs graded under both keys, if any were given.
    pub logs: Option<AgreementLogs>,
    /// Every other output, as written.
    pub outputs: Vec<OutputFile>,
}

/// What two answer keys label: queries and (query, document) pairs
/// judged by both, and by one only.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyOverlap {
    /// Queries both keys label.
    pub queries_both: u64,
    /// Queries only the first key labels.
    pub queries_a_only: u64,
    /// Queries only the second key labels.
    pub queries_b_only: u64,
    /// (query, document) pairs both keys judge, whatever the grade.
    pub pairs_both: u64,
    /// Pairs only the first key judges.
    pub pairs_a_only: u64,
    /// Pairs only the second key judges.
    pub pairs_b_only: u64,
}

/// The logs `rgrade agree --logs` graded under both keys.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgreementLogs {
    /// Each input's name.
    pub inputs: Vec<String>,
    /// The cutoffs graded at.
    pub k: Vec<Cutoff>,
    /// The runs graded under either key.
    pub runs: u64,
    /// (run, stage, query) rows graded with status ok under the first key:
    /// the queries each mean of the first key covers.
    pub graded_a: u64,
    /// The same under the second key.
    pub graded_b: u64,
    /// Records rejected grading under the first key (as `grade` would
    /// reject them: run `grade -o` to see why).
    pub rejected_a: u64,
    /// Records rejected grading under the second key.
    pub rejected_b: u64,
}
