//! What a grading is asked to do: the command line's `rgrade grade`
//! options, as plain values a library caller can build too. The plan is
//! the one place an option is defined: its field, its default (in
//! [`Plan::new`]) and its checks (when the grading starts) serve every
//! front end. The command line's arguments and Python's keyword arguments
//! are both read into it with serde, by the option's name; an option left
//! out keeps its default.

use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::base::metrics::Cutoff;
use crate::base::options::{
    BadFiles, DuplicateDocs, JoinBy, LabelsFormat, LogsFormat, MissingPolicy, RepeatPolicy,
    ReviewerPolicy, RunName, SpanKind,
};
use crate::base::timestamp::Timestamp;
use crate::grade::units::DocOf;
use crate::io::progress::Progress;
use crate::io::tables::{ArrowTable, LogLines, LogTable};
use crate::logs::jsonl::FieldNames;

/// Everything one grading needs: what to read, how to grade, where to
/// write. The command line's `rgrade grade` options, as plain values.
///
/// Deserialized, it reads the options given and keeps [`Plan::new`]'s
/// default for the others, and refuses a name that is no option.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default = "Plan::unset", deny_unknown_fields)]
pub struct Plan {
    /// The answer key.
    pub labels: PathBuf,
    /// The answer key's format, or `Auto` to decide by content.
    pub labels_format: LabelsFormat,
    /// The lowest grade that counts as relevant.
    pub min_rel: i64,
    /// Whose grade counts for a (query, document) pair several reviewers
    /// judged; `None` when the labels hold no such pair.
    pub reviewers: Option<ReviewerPolicy>,
    /// A human answer key for some of the queries, to calibrate the means
    /// of a grading under a judge's labels against (format by content).
    pub calibrate: Option<PathBuf>,
    /// Whose grade counts in the human key, as `reviewers` says for the
    /// graded one.
    pub calibrate_reviewers: Option<ReviewerPolicy>,
    /// Log files or directories; `-` is standard input.
    pub logs: Vec<PathBuf>,
    /// The logs' format, or `Auto` to decide per input.
    pub logs_format: LogsFormat,
    /// Where a log record keeps each field.
    pub fields: FieldNames,
    /// Record fields (keys or JSON pointers, Parquet columns, span
    /// attributes) to slice the aggregates by, beside the answer key's
    /// task × language: each value its own set, and a per_query.csv
    /// column per field, named after it.
    #[serde(deserialize_with = "crate::base::options::one_or_many")]
    pub slice_by: Vec<String>,
    /// `--unit doc`: how a result id names the document it is a chunk of,
    /// to grade rankings of chunks against labels of documents; `None`
    /// grades the ids as they are.
    pub doc_of: Option<DocOf>,
    /// Whether captures meet their labels by query id or by question text.
    pub join: JoinBy,
    /// Stage names for the captures of these span kinds, instead of the
    /// defaults (`retrieve`, `rerank`).
    pub span_stages: Vec<(SpanKind, String)>,
    /// Cutoffs, in the order given: each at least 1, none twice. Read
    /// under the name the command line and Python give it, too.
    #[serde(alias = "k")]
    pub ks: Vec<Cutoff>,
    /// Measures asked for by name (ir_measures', ranx's or rgrade's:
    /// `nDCG@10`, `P(rel=2)@5`, `map`), graded instead of the six default
    /// metrics at every cutoff; empty grades the defaults. The cutoffs
    /// still set `missing_at_k`, the review pool and stage loss.
    pub measures: Vec<String>,
    /// What a labeled query without a capture scores.
    pub missing: MissingPolicy,
    /// What several captures of one (run, stage, query) become.
    pub repeats: RepeatPolicy,
    /// What a doc id listed twice in one ranking does.
    pub duplicate_docs: DuplicateDocs,
    /// What a log input that cannot be read to its end does: stop the
    /// grading, or be skipped (a reject of its own).
    pub bad_files: BadFiles,
    /// What names a TREC run: its tag, or its file (MS MARCO runs always
    /// take their file's name).
    pub run_name: RunName,
    /// The stages to grade; empty means all.
    #[serde(deserialize_with = "crate::base::options::one_or_many")]
    pub stages: Vec<String>,
    /// Stages in pipeline order, to measure the evidence each drops;
    /// empty for none.
    #[serde(deserialize_with = "crate::base::options::one_or_many")]
    pub stage_order: Vec<String>,
    /// A CSV of doc_id → collection, for results that name none.
    pub doc_collections: Option<PathBuf>,
    /// A collection snapshot (one doc id a line) every labeled id must be in.
    pub corpus: Option<PathBuf>,
    /// The collection version every label must have been reviewed against.
    pub collection_version: Option<String>,
    /// The output directory; `None` writes nothing.
    pub out: Option<PathBuf>,
    /// With an output directory, write review_queue.csv: the unjudged
    /// documents graded captures ranked within `pool_depth`.
    pub review_queue: bool,
    /// The depth of the review queue's pool; `None` is the deepest cutoff.
    pub pool_depth: Option<NonZeroUsize>,
    /// Free facts copied into summary.json, in order.
    pub meta: Vec<(String, String)>,
    /// Worker threads; `None` means all cores.
    pub threads: Option<NonZeroUsize>,
    /// The command line as typed, for summary.json.
    pub command: Vec<String>,
    /// The time the grading stands for in summary.json (a nightly job's
    /// night, when it grades an old one again); `None` is when it runs.
    pub as_of: Option<Timestamp>,
    /// Also write the means and counts in the OpenMetrics text format to
    /// this file (for Prometheus), with or without an output directory.
    pub openmetrics: Option<PathBuf>,
    /// Tables handed over in memory: never part of a plan written down.
    #[serde(skip)]
    pub tables: Tables,
    /// Keep per_query.csv's rows in memory, as [`crate::Graded::per_query`]
    /// (with or without an output directory): for a caller that reads them
    /// rather than the file. How the rows are read, not how they are
    /// graded, so never part of a plan written down either.
    #[serde(skip)]
    pub keep_rows: bool,
    /// Told how the reading of the logs goes (the command line's progress
    /// bar); `None` tells no one. How the logs are read, not graded.
    #[serde(skip)]
    pub progress: Option<Arc<dyn Progress>>,
}

/// Arrow tables a library caller grades instead of files.
#[derive(Debug, Clone, Default)]
pub struct Tables {
    /// The answer key, read instead of the file [`Plan::labels`] names
    /// (which then only names it in messages).
    pub labels: Option<ArrowTable>,
    /// Search events, one row each as in Parquet logs, read after the
    /// log files in this order: tables held whole, or streams read once.
    pub logs: Vec<LogTable>,
    /// Lines of JSONL logs with the file and line each came from, read
    /// after the tables as the inputs they name.
    pub lines: Option<Arc<LogLines>>,
}

impl Plan {
    /// Grade `logs` against `labels` as `rgrade grade --labels LABELS
    /// LOGS...` does with no other option (cutoff 10, formats by content,
    /// all cores), writing nothing and drawing no progress bar: a caller
    /// sets the fields it wants otherwise.
    ///
    /// ```no_run
    /// use rgrade::{Cutoff, GradePlan};
    ///
    /// let plan = GradePlan {
    ///     ks: vec![Cutoff::At(3), Cutoff::At(10)],
    ///     out: Some("graded".into()),
    ///     ..GradePlan::new("labels.jsonl".into(), vec!["logs/".into()])
    /// };
    /// let graded = rgrade::grade(&plan, &mut |_| {})?;
    /// println!("{} queries graded", graded.counts.graded);
    /// # Ok::<(), anyhow::Error>(())
    /// ```
    pub fn new(labels: PathBuf, logs: Vec<PathBuf>) -> Self {
        Plan {
            labels,
            labels_format: LabelsFormat::Auto,
            min_rel: 1,
            reviewers: None,
            calibrate: None,
            calibrate_reviewers: None,
            logs,
            logs_format: LogsFormat::Auto,
            fields: FieldNames::default(),
            slice_by: Vec::new(),
            doc_of: None,
            join: JoinBy::Id,
            span_stages: Vec::new(),
            ks: vec![Cutoff::At(10)],
            measures: Vec::new(),
            missing: MissingPolicy::Fail,
            repeats: RepeatPolicy::Error,
            duplicate_docs: DuplicateDocs::Reject,
            bad_files: BadFiles::Fail,
            run_name: RunName::Tag,
            stages: Vec::new(),
            stage_order: Vec::new(),
            doc_collections: None,
            corpus: None,
            collection_version: None,
            out: None,
            review_queue: false,
            pool_depth: None,
            meta: Vec::new(),
            threads: None,
            progress: None,
            command: Vec::new(),
            as_of: None,
            openmetrics: None,
            tables: Tables::default(),
            keep_rows: false,
        }
    }

    /// The plan of no labels and no logs, whose other options a
    /// deserialized plan keeps when it is not given them.
    fn unset() -> Self {
        Plan::new(PathBuf::new(), Vec::new())
    }

    /// The depth of the review queue's pool, when one is asked for: the
    /// depth given, else the deepest cutoff (the whole ranking at `all`).
    pub fn pool_depth(&self, ks: &[Cutoff]) -> Option<usize> {
        let deepest = ks.iter().map(|k| k.depth()).max().unwrap_or(0);
        (self.review_queue && self.out.is_some())
            .then(|| self.pool_depth.map_or(deepest, NonZeroUsize::get))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Python's `measures=` and the command line's `--measures` reach the
    /// plan under the field's name, as a list of names kept as given (read
    /// into measures when the grading starts); left out, none are asked.
    #[test]
    fn measures_are_read_by_the_field_s_name() {
        let json = r#"{"measures": ["nDCG@10", "RBP(p=0.9,rel=2)"], "k": [5]}"#;
        let plan: Plan = serde_json::from_str(json).unwrap();
        assert_eq!(plan.measures, ["nDCG@10", "RBP(p=0.9,rel=2)"]);
        assert_eq!(plan.ks, [Cutoff::At(5)]);
        let plan: Plan = serde_json::from_str("{}").unwrap();
        assert!(plan.measures.is_empty());
        assert!(serde_json::from_str::<Plan>(r#"{"measure": ["AP"]}"#).is_err());
    }
}
