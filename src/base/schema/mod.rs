//! The outputs' schema, defined once: the file names, the column names of every CSV file,
//! the values of the `status` column, and the types of summary.json and of
//! a rejects.jsonl line. The writers lay rows out by it, `compare` reads
//! grade outputs back by it, and the tests check files against it.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::base::metrics::{Cutoff, Metric};
use crate::base::timestamp::Timestamp;

mod agree;
mod compare;
mod diagnostics;
mod labels;
mod listed;
mod partial;
mod trend;

pub use agree::{AgreementLogs, AgreementSummary, KeyOverlap};
pub use compare::{
    CompareSettings, ComparedRun, ComparisonSummary, QueryLoss, SideFigures, StageSides,
};
pub use diagnostics::{MostlyMissing, SliceStale, StaleLabels};
pub use labels::{
    CalibrationSummary, ChangedLabels, CollectionVersion, CompiledKeySummary, LabelsSummary,
    ReviewerSummary, ReviewersSummary, SelfPooled, SourceSummary,
};
pub use listed::{InputSummary, OutputFile};
pub use partial::PartialSummary;
pub use trend::{
    Alarm, GroupingSet, RepeatedSet, TrendNight, TrendRevision, TrendSettings, TrendSummary,
};

/// per_query.csv: one row per (run, stage, labeled query).
pub const PER_QUERY_FILE: &str = "per_query.csv";
/// aggregates.csv: one row per (run, stage, grouping set).
pub const AGGREGATES_FILE: &str = "aggregates.csv";
/// rejects.jsonl: one object per rejected record.
pub const REJECTS_FILE: &str = "rejects.jsonl";
/// summary.json: what was graded, from what, and how it went.
pub const SUMMARY_FILE: &str = "summary.json";
/// stage_loss.csv: evidence lost between stages, per grouping set.
pub const STAGE_LOSS_FILE: &str = "stage_loss.csv";
/// stage_loss_per_query.csv: the ids each query lost between stages.
pub const STAGE_LOSS_PER_QUERY_FILE: &str = "stage_loss_per_query.csv";
/// attribution.csv: answers split by their evidence, per grouping set;
/// written when the captures say whether answers were acceptable.
pub const ATTRIBUTION_FILE: &str = "attribution.csv";
/// review_queue.csv: unjudged documents the graded runs ranked high, per
/// query, for the next round of judging (`--review-queue`).
pub const REVIEW_QUEUE_FILE: &str = "review_queue.csv";
/// report.html: the page drawn from the other outputs (not listed in
/// summary.json, which it is drawn from).
pub const REPORT_FILE: &str = "report.html";
/// labels_missing_from_corpus.txt: labeled ids a corpus snapshot lacks.
pub const MISSING_FROM_CORPUS_FILE: &str = "labels_missing_from_corpus.txt";

/// comparison.csv: one row per (stage, grouping set, metric) compared.
pub const COMPARISON_FILE: &str = "comparison.csv";
/// per_query_delta.csv: one row per (stage, query) compared.
pub const PER_QUERY_DELTA_FILE: &str = "per_query_delta.csv";
/// gate.json: the acceptance rules' verdicts.
pub const GATE_FILE: &str = "gate.json";
/// comparison.json: what a comparison compared, and every file it wrote;
/// written last, so a directory without it holds no complete comparison.
pub const COMPARISON_SUMMARY_FILE: &str = "comparison.json";

/// partial.json: what a partial grading (`grade --partial`) read, and the
/// file holding its captures; written last, so a directory without it
/// holds no complete partial grading.
pub const PARTIAL_SUMMARY_FILE: &str = "partial.json";
/// The layout of a partial grading's captures file, raised whenever the
/// grouped captures change shape: 2 counts nested and empty capture spans
/// per input, 3 the chunks `--unit doc` folded and the ids it could not map,
/// 4 each capture's time, so that shards cut by time merge, 5 the answer
/// key's hash of its judgments rather than of its file's bytes.
pub const PARTIAL_FORMAT: u32 = 5;

/// captures.postcard.zst: a partial grading's grouped captures, for
/// `rgrade merge` (serde's postcard form, zstd-compressed).
pub const PARTIAL_CAPTURES_FILE: &str = "captures.postcard.zst";

/// Every file a grading, full or partial, may leave in its directory:
/// the files that mark a result complete first, so that a run clearing
/// the directory of an earlier result never leaves one that looks whole.
pub const GRADE_FILES: [&str; 12] = [
    SUMMARY_FILE,
    PARTIAL_SUMMARY_FILE,
    REPORT_FILE,
    PER_QUERY_FILE,
    AGGREGATES_FILE,
    REJECTS_FILE,
    ATTRIBUTION_FILE,
    REVIEW_QUEUE_FILE,
    STAGE_LOSS_FILE,
    STAGE_LOSS_PER_QUERY_FILE,
    MISSING_FROM_CORPUS_FILE,
    PARTIAL_CAPTURES_FILE,
];

/// Every file a comparison may leave in its directory, comparison.json
/// (which marks it complete) first.
pub const COMPARE_FILES: [&str; 5] = [
    COMPARISON_SUMMARY_FILE,
    REPORT_FILE,
    GATE_FILE,
    PER_QUERY_DELTA_FILE,
    COMPARISON_FILE,
];

/// trend.csv: one row per (night, run, stage, grouping set, metric).
pub const TREND_FILE: &str = "trend.csv";
/// alarms.json: the nights read, how they were watched, the alarms and
/// every other file; written last, so a directory without it holds no
/// complete trend.
pub const ALARMS_FILE: &str = "alarms.json";

/// Every file `rgrade trend` may leave in its directory, alarms.json
/// (which marks it complete) first.
pub const TREND_FILES: [&str; 3] = [ALARMS_FILE, REPORT_FILE, TREND_FILE];

/// trend.csv's columns, in order.
pub const TREND: [&str; 19] = [
    "as_of", "night", "revision", RUN, STAGE, TASK, LANGUAGE, SPLIT, "metric", "queries", "mean",
    "ci_low", "ci_high", "role", "paired", "drop", "p_value", "level", "alarm",
];

/// A night's part in its series (trend.csv's `role`).
pub const BASELINE_ROLE: &str = "baseline";
/// A night tested against the baseline.
pub const WATCHED_ROLE: &str = "watched";

/// agreement.csv: one row per (query, document) pair two answer keys
/// both judge and grade differently (`rgrade agree`).
pub const AGREEMENT_FILE: &str = "agreement.csv";
/// agreement_slices.csv: one row per grouping set of two keys' agreement.
pub const AGREEMENT_SLICES_FILE: &str = "agreement_slices.csv";
/// agreement_runs.csv: with logs, one row per (run, stage, grouping set,
/// metric): the run's mean under each key.
pub const AGREEMENT_RUNS_FILE: &str = "agreement_runs.csv";
/// agreement_tau.csv: with logs, one row per (stage, grouping set,
/// metric): how alike the two keys order the runs.
pub const AGREEMENT_TAU_FILE: &str = "agreement_tau.csv";
/// agreement.json: which keys were compared, the pair counts, the
/// confusion matrix and every other file; written last, so a directory
/// without it holds no complete agreement.
pub const AGREEMENT_SUMMARY_FILE: &str = "agreement.json";

/// Every file `rgrade agree` may leave in its directory, agreement.json
/// (which marks it complete) first.
pub const AGREE_FILES: [&str; 6] = [
    AGREEMENT_SUMMARY_FILE,
    REPORT_FILE,
    AGREEMENT_SLICES_FILE,
    AGREEMENT_FILE,
    AGREEMENT_RUNS_FILE,
    AGREEMENT_TAU_FILE,
];

/// agreement.csv's columns, in order.
pub const AGREEMENT: [&str; 9] = [
    QUERY_ID,
    "doc_id",
    TASK,
    LANGUAGE,
    "grade_a",
    "grade_b",
    "relevant_a",
    "relevant_b",
    "recall_shift",
];

/// agreement_runs.csv's columns, in order.
pub const AGREEMENT_RUNS: [&str; 7] = [RUN, STAGE, TASK, LANGUAGE, "metric", "mean_a", "mean_b"];

/// agreement_tau.csv's columns, in order.
pub const AGREEMENT_TAU: [&str; 6] = [STAGE, TASK, LANGUAGE, "metric", "runs", "kendall_tau"];

/// agreement_slices.csv's columns, in order.
pub const AGREEMENT_SLICES: [&str; 11] = [
    TASK,
    LANGUAGE,
    "queries",
    "pairs",
    "same_grade",
    "same_relevance",
    "relevance_kappa",
    "grade_kappa",
    "grade_kappa_unweighted",
    "grade_kappa_quadratic",
    "grade_alpha_ordinal",
];

/// The lock a run holds on its output directory while it writes there.
pub const LOCK_FILE: &str = ".rgrade.lock";

/// per_query.csv's `run` column (also in aggregates.csv and the stage-loss files).
pub const RUN: &str = "run";
/// per_query.csv's `stage` column.
pub const STAGE: &str = "stage";
/// per_query.csv's `query_id` column.
pub const QUERY_ID: &str = "query_id";
/// per_query.csv's `task` column.
pub const TASK: &str = "task";
/// per_query.csv's `language` column.
pub const LANGUAGE: &str = "language";
/// per_query.csv's `split` column (also in aggregates.csv and compare's
/// files): the held-out split, after the columns that came before it.
pub const SPLIT: &str = "split";
/// per_query.csv's `required` column: `true` or `false`.
pub const REQUIRED: &str = "required";
/// per_query.csv's `status` column: a [`Status`] name.
pub const STATUS: &str = "status";
/// per_query.csv's `latency_ms` column.
pub const LATENCY_MS: &str = "latency_ms";
/// per_query.csv's `context_tokens` column.
pub const CONTEXT_TOKENS: &str = "context_tokens";

/// per_query.csv's columns before the metrics, in order.
pub const PER_QUERY_LEADING: [&str; 13] = [
    RUN,
    STAGE,
    QUERY_ID,
    TASK,
    LANGUAGE,
    REQUIRED,
    STATUS,
    "n_relevant",
    "n_results",
    "first_rel_rank",
    "captures",
    LATENCY_MS,
    CONTEXT_TOKENS,
];

/// aggregates.csv's columns before the metric means, in order.
pub const AGGREGATES_LEADING: [&str; 9] = [
    RUN,
    STAGE,
    TASK,
    LANGUAGE,
    "queries",
    "ok",
    "missing",
    "invalid",
    "no_answer",
];

/// aggregates.csv's columns after the metric means, in order.
pub const AGGREGATES_TRAILING: [&str; 6] = [
    "latency_p50_ms",
    "latency_p95_ms",
    "latency_p99_ms",
    "context_tokens_mean",
    "leaks",
    SPLIT,
];

/// The latency percentiles of aggregates.csv, in column order.
pub const LATENCY_PERCENTILES: [f64; 3] = [50.0, 95.0, 99.0];

/// stage_loss.csv's columns.
pub const STAGE_LOSS: [&str; 8] = [
    RUN,
    TASK,
    LANGUAGE,
    "from_stage",
    "to_stage",
    "relevant_found",
    "lost",
    "lost_rate",
];

/// attribution.csv's columns.
pub const ATTRIBUTION: [&str; 10] = [
    RUN,
    STAGE,
    TASK,
    LANGUAGE,
    SPLIT,
    "answered",
    ANSWER_OK,
    "wrong_missing_evidence",
    "wrong_with_evidence",
    "ok_missing_evidence",
];

/// review_queue.csv's columns.
pub const REVIEW_QUEUE: [&str; 7] = [
    QUERY_ID,
    TASK,
    LANGUAGE,
    "doc_id",
    "best_rank",
    "runs",
    "captures",
];

/// stage_loss_per_query.csv's columns.
pub const STAGE_LOSS_PER_QUERY: [&str; 9] = [
    RUN,
    QUERY_ID,
    TASK,
    LANGUAGE,
    "from_stage",
    "to_stage",
    "relevant_found",
    "lost",
    "lost_ids",
];

/// comparison.csv's columns.
pub const COMPARISON: [&str; 19] = [
    STAGE,
    TASK,
    LANGUAGE,
    "metric",
    "queries",
    "baseline",
    "candidate",
    "delta",
    "ci_low",
    "ci_high",
    "wins",
    "ties",
    "losses",
    "p_value",
    "p_holm",
    SPLIT,
    "mde",
    "queries_for_mde",
    "holm_family",
];

/// per_query_delta.csv's columns before the three of each metric
/// ([`per_query_delta_columns`]); `split` follows those.
pub const PER_QUERY_DELTA_LEADING: [&str; 5] = [STAGE, QUERY_ID, TASK, LANGUAGE, REQUIRED];

/// per_query_delta.csv's columns of one metric: both sides and the change.
pub fn per_query_delta_columns(metric: &str) -> [String; 3] {
    [
        format!("{metric}_baseline"),
        format!("{metric}_candidate"),
        format!("{metric}_delta"),
    ]
}

/// Metric column names, six per cutoff, cutoffs in the order given.
pub fn metric_columns(ks: &[Cutoff]) -> Vec<String> {
    ks.iter()
        .flat_map(|k| Metric::ALL.iter().map(move |m| format!("{}@{k}", m.name())))
        .collect()
}

/// The name of the missing-evidence column: `missing_at_<deepest cutoff>`
/// (`missing_at_all` when `all` is among them).
pub fn missing_column(ks: &[Cutoff]) -> String {
    format!(
        "missing_at_{}",
        ks.iter().max().copied().unwrap_or(Cutoff::At(0))
    )
}

/// per_query.csv's `answer_ok` column: `true`, `false`, or empty when the
/// captures do not say.
pub const ANSWER_OK: &str = "answer_ok";

/// The label-coverage columns, one per cutoff in the order given:
/// `judged@k` (per query in per_query.csv, means in aggregates.csv).
pub fn judged_columns(ks: &[Cutoff]) -> Vec<String> {
    ks.iter().map(|k| format!("judged@{k}")).collect()
}

/// A grading's metric columns: the six default metrics at every cutoff
/// (`metric_columns`), or the measures asked for by name, as named.
pub fn metric_names(ks: &[Cutoff], asked: Option<&[String]>) -> Vec<String> {
    asked.map_or_else(|| metric_columns(ks), <[String]>::to_vec)
}

/// The cutoffs of a grading's `judged@k` columns after the others: every
/// cutoff, or none when measures were asked for by name (`judged@k` is
/// then among them if asked).
pub fn judged_cutoffs<'a>(ks: &'a [Cutoff], asked: Option<&[String]>) -> &'a [Cutoff] {
    match asked {
        Some(_) => &[],
        None => ks,
    }
}

/// The metric columns a grading's page leads with: the six default
/// metrics at the deepest cutoff, or every measure asked for by name.
#[derive(Debug, Clone, PartialEq)]
pub struct Headline {
    /// Where the first sits among the metric columns.
    pub first: usize,
    /// Their names, in column order.
    pub names: Vec<String>,
    /// Their names where a caption gives the cutoff: the default metrics'
    /// without it (`recall`), the measures asked for as named.
    pub short_names: Vec<String>,
}

impl Headline {
    /// The headline of a grading at cutoffs `ks` of the measures `asked`
    /// by name, if any.
    pub fn of(ks: &[Cutoff], asked: Option<&[String]>) -> Self {
        match asked {
            Some(names) => Headline {
                first: 0,
                names: names.to_vec(),
                short_names: names.to_vec(),
            },
            None => {
                let deepest = (0..ks.len()).max_by_key(|&i| ks[i]).unwrap_or(0);
                let k = ks.get(deepest).copied().unwrap_or(Cutoff::At(10));
                Headline {
                    first: deepest * Metric::ALL.len(),
                    names: (Metric::ALL.iter())
                        .map(|m| format!("{}@{k}", m.name()))
                        .collect(),
                    short_names: Metric::ALL.map(|m| m.name().to_string()).to_vec(),
                }
            }
        }
    }

    /// Its columns of a row's metric values.
    pub fn of_row<'a, T>(&self, metrics: &'a [T]) -> &'a [T] {
        &metrics[self.first..self.first + self.names.len()]
    }
}

/// per_query.csv's header for cutoffs `ks` and the measures `asked` by
/// name, if any.
pub fn per_query_header(ks: &[Cutoff], asked: Option<&[String]>) -> Vec<String> {
    let trailing = [
        missing_column(ks),
        "unauthorized".to_string(),
        SPLIT.to_string(),
        ANSWER_OK.to_string(),
    ];
    header(
        &PER_QUERY_LEADING,
        metric_names(ks, asked),
        trailing
            .into_iter()
            .chain(judged_columns(judged_cutoffs(ks, asked))),
    )
}

/// aggregates.csv's header for cutoffs `ks` and the measures `asked` by
/// name, if any.
pub fn aggregates_header(ks: &[Cutoff], asked: Option<&[String]>) -> Vec<String> {
    let trailing = AGGREGATES_TRAILING.map(String::from);
    let trailing = (trailing.into_iter()).chain(judged_columns(judged_cutoffs(ks, asked)));
    header(
        &AGGREGATES_LEADING,
        metric_names(ks, asked),
        trailing.chain(half_width_columns(&metric_names(ks, asked))),
    )
}

/// aggregates.csv's half-widths of the 95% intervals of its metric means,
/// one per metric column, in the same order (`recall@10_half_width`).
pub fn half_width_columns(metrics: &[String]) -> Vec<String> {
    (metrics.iter())
        .map(|m| format!("{m}_half_width"))
        .collect()
}

/// The columns aggregates.csv gains, after all the others, when its
/// means were calibrated against a human key (`grade --calibrate`): the
/// human-graded queries the set counts, then for every metric column its
/// calibrated mean and the 95% interval's ends, then for every metric
/// column the weight its judge-graded values earned (λ in [0, 1]).
pub fn calibration_columns(metrics: &[String]) -> Vec<String> {
    let calibrated = metrics.iter().flat_map(|m| {
        [
            format!("{m}_calibrated"),
            format!("{m}_calibrated_low"),
            format!("{m}_calibrated_high"),
        ]
    });
    let weights = metrics.iter().map(|m| format!("{m}{CALIBRATED_WEIGHT}"));
    std::iter::once(CALIBRATION_QUERIES.to_string())
        .chain(calibrated)
        .chain(weights)
        .collect()
}

/// The ending of aggregates.csv's column of the weight a metric's judge-graded
/// values earned in its calibrated mean.
pub const CALIBRATED_WEIGHT: &str = "_calibrated_weight";

/// aggregates.csv's count of the human-graded queries behind a set's
/// calibrated means.
pub const CALIBRATION_QUERIES: &str = "calibration_queries";

/// A CSV header: the leading columns, the metric columns, the trailing ones.
fn header(
    leading: &[&str],
    metrics: Vec<String>,
    trailing: impl IntoIterator<Item = String>,
) -> Vec<String> {
    let mut header: Vec<String> = leading.iter().map(|s| s.to_string()).collect();
    header.extend(metrics);
    header.extend(trailing);
    header
}

/// How a labeled query fared in one (run, stage).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Status {
    /// Captured, and at least one capture was valid.
    Ok,
    /// Labeled but never captured.
    Missing,
    /// Captured, but every capture was rejected.
    Invalid,
    /// The label judges no document above 0: kept out of every mean.
    NoAnswer,
}

impl Status {
    /// The name written to per_query.csv.
    pub fn name(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Missing => "missing",
            Status::Invalid => "invalid",
            Status::NoAnswer => "no_answer",
        }
    }

    /// The status a per_query.csv cell names, if any.
    pub fn from_name(name: &str) -> Option<Status> {
        [
            Status::Ok,
            Status::Missing,
            Status::Invalid,
            Status::NoAnswer,
        ]
        .into_iter()
        .find(|status| status.name() == name)
    }
}

/// One line of rejects.jsonl.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RejectLine {
    /// The input, as summary.json names it.
    pub file: String,
    /// The 1-based line.
    pub line: u64,
    /// The stable snake_case reason code.
    pub reason: String,
    /// What exactly was wrong.
    pub detail: String,
    /// The record's first bytes (invalid UTF-8 replaced).
    pub record: String,
}

/// summary.json: what was graded, from what, and how it went.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Always "rgrade".
    pub tool: String,
    /// rgrade's version.
    pub version: String,
    /// The command line, argument by argument.
    pub command: Vec<String>,
    /// The time the grading stands for (`--as-of`, else when it ran),
    /// which orders nights in `rgrade trend`; absent from gradings
    /// written before rgrade recorded it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub as_of: Option<Timestamp>,
    /// The answer key.
    pub labels: LabelsSummary,
    /// Each log input, in the order read.
    pub inputs: Vec<InputSummary>,
    /// The settings that shape the grades.
    pub settings: SettingsSummary,
    /// `--meta KEY=VALUE` facts, in the order given.
    pub meta: OrderedMap<String>,
    /// Record and query counts.
    pub counts: Counts,
    /// The overall row of every (run, stage).
    pub overall: Vec<OverallSummary>,
    /// Labeled documents no capture of their query returned.
    pub stale_labels: StaleLabels,
    /// The first results outside their user's allowed collections.
    pub leaks: Vec<LeakSummary>,
    /// The graded runs that alone were pooled for some labels, by run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub self_pooled: Vec<SelfPooled>,
    /// The human key the means were calibrated against, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration: Option<CalibrationSummary>,
    /// The (run, stage)s most of whose labeled queries no record captured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mostly_missing: Vec<MostlyMissing>,
    /// Without a time field, why the path order of Hive-partitioned logs
    /// that decided repeats (`--repeats first|last`) is not time order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeats_in_path_order: Option<String>,
    /// Every other output of the run, as written: a reader checks a file
    /// against its entry before trusting it.
    pub outputs: Vec<OutputFile>,
    /// Wall-clock seconds from start to the last output.
    pub elapsed_seconds: f64,
    /// Speed of the whole run.
    pub throughput: Throughput,
}

/// The grading settings in summary.json.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SettingsSummary {
    /// Cutoffs, in the order given.
    pub k: Vec<Cutoff>,
    /// `--measures`: the measures asked for by name, as their columns
    /// are named; absent when the default metrics were graded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measures: Option<Vec<String>>,
    /// `--missing`.
    pub missing: String,
    /// `--repeats`.
    pub repeats: String,
    /// `--duplicate-docs`.
    pub duplicate_docs: String,
    /// `--min-rel`.
    pub min_rel: i64,
    /// `--stage`, empty for all.
    pub stages: Vec<String>,
    /// Worker threads used.
    pub threads: usize,
    /// `--collection-version`: the version every label was checked to name.
    #[serde(default)]
    pub collection_version: Option<String>,
    /// With `--review-queue`, the depth its pool was drawn from.
    #[serde(default)]
    pub pool_depth: Option<usize>,
    /// `--unit doc --doc-of PATTERN`: the pattern that named each result's
    /// document; absent when results were graded as they are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub doc_of: Option<String>,
    /// `--slice-by`: the log fields the aggregates were sliced by, in
    /// order, each a column of per_query.csv and of aggregates.csv;
    /// absent when none was.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slice_by: Vec<String>,
}

/// Counts in summary.json. For every log,
/// `records = graded_records + superseded_records + unlabeled_events +
/// other_stage_events + other_records + rejected`.
#[derive(Debug, Clone, Default, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Labeled queries.
    pub labeled: u64,
    /// Labeled queries without a positive grade (`no_answer`).
    pub no_answer: u64,
    /// (run, stage, query) rows with status ok.
    pub graded: u64,
    /// Records: non-blank input lines, but each span of an OTLP line.
    pub records: u64,
    /// Blank input lines, skipped.
    pub blank_lines: u64,
    /// Header lines of TREC and MS MARCO runs, skipped.
    pub header_lines: u64,
    /// Valid records (a TREC line, or a JSONL search event).
    pub events: u64,
    /// Valid records of queries without a label.
    pub unlabeled_events: u64,
    /// Valid records of stages left out by `--stage`.
    pub other_stage_events: u64,
    /// Valid records that carry no search event: spans of other kinds than
    /// retrieval and rerank, OTLP lines holding no span, nested spans.
    pub other_records: u64,
    /// Of the other records, retrieval or rerank spans with no document
    /// inside another of their kind in the same trace (an
    /// instrumentation's inner call), set aside rather than graded.
    #[serde(default)]
    pub nested_spans: u64,
    /// Retrieval or rerank spans with no document on their own, graded as
    /// empty rankings.
    #[serde(default)]
    pub empty_spans: u64,
    /// Records in rejects.jsonl.
    pub rejected: u64,
    /// Captures beyond the first of a (run, stage, query).
    pub repeats: u64,
    /// Records behind the graded captures.
    pub graded_records: u64,
    /// Records set aside by `--repeats first|last`.
    pub superseded_records: u64,
    /// Valid records of graded stages that named no allowed collections.
    pub records_without_permissions: u64,
    /// Results outside their user's allowed collections.
    pub leaked_results: u64,
    /// Under `--unit doc`, results dropped because an earlier result of
    /// their capture was a chunk of the same document.
    #[serde(default, skip_serializing_if = "labels::is_zero")]
    pub later_chunks: u64,
    /// Under `--unit doc`, result ids in which `--doc-of` found no
    /// document, graded as documents of their own.
    #[serde(default, skip_serializing_if = "labels::is_zero")]
    pub unmapped_ids: u64,
    /// Under `--unit doc`, labeled ids in which `--doc-of` finds a
    /// document: labels that look made per chunk, which no mapped result
    /// matches.
    #[serde(default, skip_serializing_if = "labels::is_zero")]
    pub labeled_chunk_ids: u64,
}

/// The overall row of one (run, stage) in summary.json.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OverallSummary {
    /// The run.
    pub run: String,
    /// The stage.
    pub stage: String,
    /// Labeled queries.
    pub queries: u64,
    /// Status ok.
    pub ok: u64,
    /// Status missing.
    pub missing: u64,
    /// Status invalid.
    pub invalid: u64,
    /// Status no_answer.
    pub no_answer: u64,
    /// Metric means by column name (null when no query counts).
    pub metrics: OrderedMap<Option<f64>>,
}

/// Throughput in summary.json.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Throughput {
    /// Decompressed log megabytes (10^6 bytes) per second.
    pub mb_per_second: f64,
    /// Input records per second.
    pub records_per_second: f64,
}

/// One leak as summary.json lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeakSummary {
    /// The query it answered.
    pub query_id: String,
    /// The document the user should not have seen.
    pub doc_id: String,
    /// The document's collection.
    pub collection: String,
    /// The input it was read from.
    pub file: String,
    /// Its 1-based line.
    pub line: u64,
}

/// Key-value pairs written as a JSON object, keeping their order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OrderedMap<V>(pub Vec<(String, V)>);

impl<V: Serialize> Serialize for OrderedMap<V> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (key, value) in &self.0 {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

impl<'de, V: Deserialize<'de>> Deserialize<'de> for OrderedMap<V> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        /// Reads the entries in file order.
        struct Entries<V>(PhantomData<V>);

        impl<'de, V: Deserialize<'de>> Visitor<'de> for Entries<V> {
            type Value = OrderedMap<V>;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut entries = Vec::with_capacity(map.size_hint().unwrap_or(0));
                while let Some(entry) = map.next_entry()? {
                    entries.push(entry);
                }
                Ok(OrderedMap(entries))
            }
        }

        deserializer.deserialize_map(Entries(PhantomData))
    }
}
