//! The command line as the user types it. Values are checked here (clap
//! parses them through `FromStr`, and the library's choices through
//! [`choice`]); `cmd::*` turns them into the plain plans the library takes
//! (each command's arguments serialize under its plan's own field names,
//! which the plan reads, by [`plan`], as it reads Python's keyword
//! arguments). Only the binary knows clap.

use std::ffi::OsStr;
use std::marker::PhantomData;
use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::time::Duration;

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::{Args, Parser, Subcommand, ValueEnum};
use rgrade::{
    BadFiles, Choice, Cutoff, DocOf, DuplicateDocs, GenFormat, JoinBy, LabelsFormat, LogsFormat,
    MissingPolicy, NightChanges, RepeatPolicy, ReviewerPolicy, RunName, Setting, SpanKind, Unit,
};
use serde::de::DeserializeOwned;
use serde::Serialize;

/// Grade the retrieval step of a RAG or search system from captured search logs.
#[derive(Debug, Parser)]
#[command(name = "rgrade", version, about, help_expected = true)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
// Parsed once per process: the size difference between variants is harmless.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Grade captured search results against an answer key.
    ///
    /// Memory grows with the number of labeled queries, not with the size of
    /// the logs: logs need not be sorted or grouped by query.
    Grade(GradeArgs),
    /// Compare two grade outputs: one change at a time, with paired statistics.
    ///
    /// Both must have been graded with the same labels and cutoffs. Exit
    /// status 1 when an acceptance rule fails.
    Compare(CompareArgs),
    /// Draw the report page of a grade, compare, agree or trend output directory again.
    ///
    /// `grade`, `compare`, `agree` and `trend` write DIR/report.html themselves;
    /// this draws it again, from the complete set of files DIR holds (say,
    /// after an upgrade).
    Report(ReportArgs),
    /// Write deterministic synthetic labels and logs (for demos and benchmarks).
    Gen(GenArgs),
    /// Merge partial gradings (grade --partial) of logs partitioned by query id, and grade them as one.
    ///
    /// DIR then holds what `rgrade grade -o DIR` over all the logs at once
    /// writes: every shard must have been graded with the same labels and
    /// options, and each query's captures must all be in one shard.
    Merge(MergeArgs),
    /// Compile an answer key into a file that grade reads without parsing the labels.
    ///
    /// For nightly jobs whose labels rarely change: `grade --labels KEY`
    /// (and merge, and the Python API) read the key as they read labels,
    /// whatever --min-rel says. summary.json reports the labels it was
    /// compiled from, so gradings from the key and from the labels compare.
    /// A key made by another version of rgrade is refused: compile again.
    Index(IndexArgs),
    /// Compare two answer keys (reviewers, an LLM judge, clicks) on the pairs both judge.
    ///
    /// Prints how many (query, document) pairs each key judges, the
    /// confusion matrix of their grades, Cohen's kappa on relevant or not
    /// and linear-weighted kappa on grades. With --out, also the pairs they
    /// grade differently (agreement.csv) and their agreement per task and
    /// language (agreement_slices.csv), and report.html. With --logs, the logs are graded
    /// under each key, and each run's means and how alike the keys order
    /// the runs (Kendall's tau) are written too.
    Agree(AgreeArgs),
    /// Follow nightly grade outputs: every slice's mean across nights, and alarms on drops.
    ///
    /// Nights are put in the order of the time each stands for (grade
    /// --as-of, else when it ran). Every (run, stage, grouping set, metric)
    /// is tested each night against its first --baseline nights, so that
    /// the chance of any false alarm, over every series and every night
    /// watched, stays under --alpha. Exit status 1 on an alarm.
    Trend(TrendArgs),
}

/// Options of `rgrade trend`: serialized, the [`rgrade::TrendPlan`] they
/// ask for, but for those the plan does not hold and the paths (`skip`, as
/// [`GradeArgs`]' are).
#[derive(Debug, Args, Serialize)]
pub struct TrendArgs {
    /// Write trend.csv and alarms.json into DIR.
    #[arg(short = 'o', long = "out", value_name = "DIR")]
    #[serde(skip)]
    pub out: Option<PathBuf>,

    /// The first N nights of each labels revision make its baseline (at least 2).
    #[arg(long = "baseline", value_name = "N", default_value_t = rgrade::DEFAULT_BASELINE_NIGHTS)]
    pub baseline: usize,

    /// The chance of any false alarm, over every series and night watched.
    #[arg(long, value_name = "A", default_value_t = 0.05, value_parser = parse_alpha)]
    pub alpha: f64,

    /// Watch these metric columns, comma separated [default: those every night has]; fewer make a smaller family and quicker alarms.
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub metrics: Vec<String>,

    /// Watch nights graded with other labels or settings, each labels revision apart, rather than refuse them.
    #[arg(long = "allow-label-changes")]
    pub allow_label_changes: bool,

    /// Use N worker threads [default: all cores]; results do not depend on it.
    #[arg(short = 'j', long = "threads", value_name = "N")]
    pub threads: Option<NonZeroUsize>,

    /// Also write each series' last mean, evidence and alarm to FILE in the OpenMetrics text format.
    #[arg(long = "openmetrics", value_name = "FILE")]
    #[serde(skip)]
    pub openmetrics: Option<PathBuf>,

    /// Print nothing on stdout.
    #[arg(short = 'q', long)]
    #[serde(skip)]
    pub quiet: bool,

    /// The nights' `grade --out` directories, in any order.
    #[arg(value_name = "NIGHT", required = true)]
    #[serde(skip)]
    pub nights: Vec<PathBuf>,
}

/// Options of `rgrade agree`: serialized, the [`rgrade::AgreePlan`] they
/// ask for, but for those the plan does not hold and the paths (`skip`, as
/// [`GradeArgs`]' are); the options of the logs count only with logs.
#[derive(Debug, Args, Serialize)]
pub struct AgreeArgs {
    /// The first answer key (JSONL, TREC qrels, CSV, Parquet or a compiled key).
    #[arg(value_name = "KEY_A")]
    #[serde(skip)]
    pub key_a: PathBuf,

    /// The second answer key.
    #[arg(value_name = "KEY_B")]
    #[serde(skip)]
    pub key_b: PathBuf,

    /// Write agreement.csv, agreement_slices.csv, report.html and agreement.json (with --logs,
    /// also agreement_runs.csv and agreement_tau.csv) into DIR.
    #[arg(short = 'o', long = "out", value_name = "DIR")]
    #[serde(skip)]
    pub out: Option<PathBuf>,

    /// Read both keys as this format.
    #[arg(long = "labels-format", value_parser = choice::<LabelsFormat>(), value_name = "FORMAT", default_value_t = LabelsFormat::Auto)]
    pub labels_format: LabelsFormat,

    /// Count a document relevant from grade N up, in both keys.
    #[arg(long = "min-rel", value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(i64).range(1..))]
    pub min_rel: i64,

    /// In both keys, where several reviewers judged one pair, count the majority's grade (a
    /// tie counts the lower), the highest (any), the lowest (all), or only this reviewer's.
    #[arg(long, value_name = "majority|any|all|REVIEWER")]
    pub reviewers: Option<ReviewerPolicy>,

    /// As --reviewers, for KEY_A only (with --reviewers-b, two reviewers of one key compare).
    #[arg(
        long = "reviewers-a",
        value_name = "POLICY",
        conflicts_with = "reviewers"
    )]
    pub reviewers_a: Option<ReviewerPolicy>,

    /// As --reviewers, for KEY_B only.
    #[arg(
        long = "reviewers-b",
        value_name = "POLICY",
        conflicts_with = "reviewers"
    )]
    pub reviewers_b: Option<ReviewerPolicy>,

    /// The logs to grade under both keys, and how.
    #[command(flatten)]
    #[serde(skip)]
    pub graded: AgreeLogsArgs,

    /// Print nothing on stdout.
    #[arg(short, long)]
    #[serde(skip)]
    pub quiet: bool,

    /// Use N worker threads [default: all cores].
    #[arg(short = 'j', long = "threads", value_name = "N")]
    pub threads: Option<NonZeroUsize>,
}

/// The logs `rgrade agree` grades under both keys, and the options that
/// say how: serialized, as [`AgreeArgs`]' are, only when there are logs.
#[derive(Debug, Args, Serialize)]
pub struct AgreeLogsArgs {
    /// Grade this log file or directory (as grade takes them) under both keys; repeat for more.
    #[arg(long = "logs", value_name = "LOGS", action = clap::ArgAction::Append)]
    #[serde(skip)]
    pub logs: Vec<PathBuf>,

    /// With --logs, grade at these cutoffs, comma separated (as grade's -k).
    #[arg(
        short = 'k',
        long = "k",
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "10",
        requires = "logs"
    )]
    #[serde(rename = "ks")]
    pub k: Vec<Cutoff>,

    /// With --logs, read them as this format.
    #[arg(long = "logs-format", value_parser = choice::<LogsFormat>(), value_name = "FORMAT", default_value_t = LogsFormat::Auto, requires = "logs")]
    pub logs_format: LogsFormat,

    /// With --logs, score a labeled query with no capture 0 (fail) or leave it out (skip).
    #[arg(long, value_parser = choice::<MissingPolicy>(), value_name = "POLICY", default_value_t = MissingPolicy::Fail, requires = "logs")]
    pub missing: MissingPolicy,

    /// With --logs, handle several captures of the same (run, stage, query).
    #[arg(long, value_parser = choice::<RepeatPolicy>(), value_name = "POLICY", default_value_t = RepeatPolicy::Error, requires = "logs")]
    pub repeats: RepeatPolicy,

    /// With --logs, name each TREC run by its tag, or by its file's name (files all tagged alike stay apart).
    #[arg(long = "run-name", value_parser = choice::<RunName>(), value_name = "FROM", default_value_t = RunName::Tag, requires = "logs")]
    pub run_name: RunName,
}

/// Options of `rgrade index`: serialized, the [`rgrade::IndexPlan`] they
/// ask for, but for the paths (`skip`, as [`GradeArgs`]' are).
#[derive(Debug, Args, Serialize)]
pub struct IndexArgs {
    /// The labels to compile (JSONL, TREC qrels, CSV or Parquet).
    #[arg(value_name = "LABELS")]
    #[serde(skip)]
    pub labels: PathBuf,

    /// Write the compiled key to KEY (replaced only once complete).
    #[arg(short = 'o', long = "out", value_name = "KEY")]
    #[serde(skip)]
    pub out: PathBuf,

    /// Read the labels as this format.
    #[arg(long = "labels-format", value_parser = choice::<LabelsFormat>(), value_name = "FORMAT", default_value_t = LabelsFormat::Auto)]
    pub labels_format: LabelsFormat,

    /// Keep each label's question text, for gradings with --join text.
    #[arg(long, value_parser = choice::<JoinBy>(), value_name = "BY", default_value_t = JoinBy::Id)]
    pub join: JoinBy,

    /// Where several reviewers judged one (query, doc) pair, the key holds the majority's grade
    /// (a tie counts the lower), the highest (any), the lowest (all), or only this reviewer's.
    #[arg(long, value_name = "majority|any|all|REVIEWER")]
    pub reviewers: Option<ReviewerPolicy>,

    /// Use N worker threads [default: all cores].
    #[arg(short = 'j', long = "threads", value_name = "N")]
    pub threads: Option<NonZeroUsize>,
}

/// Options of `rgrade merge`: serialized, the [`rgrade::MergePlan`] they
/// ask for, but for those the plan does not hold and the paths (`skip`, as
/// [`GradeArgs`]' are).
#[derive(Debug, Args, Serialize)]
pub struct MergeArgs {
    /// The answer key every shard was graded with.
    #[arg(long, value_name = "FILE")]
    #[serde(skip)]
    pub labels: PathBuf,

    /// Write every output of the grading into DIR.
    #[arg(short = 'o', long = "out", value_name = "DIR")]
    #[serde(skip)]
    pub out: PathBuf,

    /// Tolerate up to N rejected records (over all shards) before exiting with status 1.
    #[arg(long = "max-rejects", value_name = "N", default_value_t = 0)]
    #[serde(skip)]
    pub max_rejects: u64,

    /// Tolerate up to N results outside the user's allowed collections before exiting with status 1.
    #[arg(long = "max-leaks", value_name = "N", default_value_t = 0)]
    #[serde(skip)]
    pub max_leaks: u64,

    /// Use N worker threads [default: all cores].
    #[arg(short = 'j', long = "threads", value_name = "N")]
    pub threads: Option<NonZeroUsize>,

    /// The time the merged grading stands for, in summary.json (RFC 3339 or a date) [default: the shards' --as-of, else now].
    #[arg(long = "as-of", value_name = "TIME")]
    pub as_of: Option<rgrade::Timestamp>,

    /// Also write the means and counts to FILE in the OpenMetrics text format.
    #[arg(long = "openmetrics", value_name = "FILE")]
    #[serde(skip)]
    pub openmetrics: Option<PathBuf>,

    /// Print no table on stdout.
    #[arg(short = 'q', long)]
    #[serde(skip)]
    pub quiet: bool,

    /// Print summary.json's document on stdout, one line of JSON, instead of the table.
    #[arg(long, conflicts_with = "quiet")]
    #[serde(skip)]
    pub json: bool,

    /// The partial gradings' directories, in input order.
    #[arg(value_name = "SHARD", required = true)]
    #[serde(skip)]
    pub shards: Vec<PathBuf>,
}

/// Options of `rgrade report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A complete `grade`, `compare`, `agree` or `trend` output directory.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,

    /// Write the page to FILE (`-`: stdout) [default: DIR/report.html].
    #[arg(short = 'o', long = "out", value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// Options of `rgrade grade`: serialized, the [`rgrade::GradePlan`] they ask
/// for, but for those the plan does not hold and the paths (`skip`: serde
/// writes only paths that are UTF-8, and a file name need not be).
#[derive(Debug, Args, Serialize)]
pub struct GradeArgs {
    /// Read the answer key from FILE (JSONL, TREC qrels, CSV or Parquet).
    #[arg(long, value_name = "FILE")]
    #[serde(skip)]
    pub labels: PathBuf,

    /// Grade at these cutoffs, comma separated: each at least 1, or `all` for the whole ranking.
    #[arg(
        short = 'k',
        long = "k",
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "10"
    )]
    #[serde(rename = "ks")]
    pub k: Vec<Cutoff>,

    /// Grade these measures instead of the six metrics at every cutoff, comma separated, by ir_measures', ranx's or rgrade's names (nDCG@10,P(rel=2)@5,RBP(p=0.8),map,bpref); the cutoffs still set missing_at_k.
    #[arg(long, value_name = "LIST")]
    pub measures: Vec<String>,

    /// Write per_query.csv, aggregates.csv, summary.json and rejects.jsonl into DIR.
    #[arg(short = 'o', long = "out", value_name = "DIR")]
    #[serde(skip)]
    pub out: Option<PathBuf>,

    /// Also write review_queue.csv: per labeled query, the unjudged documents the graded captures ranked within --pool-depth, for the next round of judging.
    #[arg(long = "review-queue", requires = "out")]
    pub review_queue: bool,

    /// Write a partial grading into DIR instead: the captures of a shard of logs partitioned by query id, for rgrade merge.
    #[arg(long, requires = "out")]
    #[serde(skip)]
    pub partial: bool,

    /// Pool the documents ranked within the top N for the review queue [default: the deepest cutoff].
    #[arg(long = "pool-depth", value_name = "N", requires = "review_queue")]
    pub pool_depth: Option<NonZeroUsize>,

    /// Score a labeled query with no capture 0 (fail) or leave it out of the means (skip).
    #[arg(long, value_parser = choice::<MissingPolicy>(), value_name = "POLICY", default_value_t = MissingPolicy::Fail)]
    pub missing: MissingPolicy,

    /// Handle several captures of the same (run, stage, query).
    #[arg(long, value_parser = choice::<RepeatPolicy>(), value_name = "POLICY", default_value_t = RepeatPolicy::Error)]
    pub repeats: RepeatPolicy,

    /// Handle a doc id that appears twice in one ranking.
    #[arg(long = "duplicate-docs", value_parser = choice::<DuplicateDocs>(), value_name = "POLICY", default_value_t = DuplicateDocs::Reject)]
    pub duplicate_docs: DuplicateDocs,

    /// A log file that cannot be read to its end (truncated gzip or zstd, corrupt Parquet): stop with nothing graded, or skip it as a rejected record (bad_file).
    #[arg(long = "bad-files", value_parser = choice::<BadFiles>(), value_name = "POLICY", default_value_t = BadFiles::Fail)]
    pub bad_files: BadFiles,

    /// Name each TREC run by its tag, or by its file's name (files all tagged alike stay apart).
    #[arg(long = "run-name", value_parser = choice::<RunName>(), value_name = "FROM", default_value_t = RunName::Tag)]
    pub run_name: RunName,

    /// Count grades of at least N as relevant, like trec_eval -l.
    #[arg(long = "min-rel", value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(i64).range(1..))]
    pub min_rel: i64,

    /// Where several reviewers judged one (query, doc) pair, count the majority's grade
    /// (a tie counts the lower), the highest (any), the lowest (all), or only this reviewer's.
    #[arg(long, value_name = "majority|any|all|REVIEWER")]
    pub reviewers: Option<ReviewerPolicy>,

    /// Grade each result as itself, or as the document it is a chunk of (--doc-of says how):
    /// a document takes its first chunk's place, and its later chunks are dropped.
    #[arg(long, value_parser = choice::<Unit>(), value_name = "UNIT", default_value_t = Unit::Result)]
    #[serde(skip)]
    pub unit: Unit,

    /// With --unit doc, a result id's document: the one capture group of a regular expression
    /// ('^(.+)#chunk-[0-9]+$'), or, for a pattern without '(', the id up to the last
    /// occurrence of this separator ('#').
    #[arg(long = "doc-of", value_name = "PATTERN", value_parser = parse_doc_of)]
    #[serde(skip)]
    pub doc_of: Option<DocOf>,

    /// Calibrate every mean against this human answer key, which grades a random sample of
    /// the queries --labels (a judge's) grades: aggregates.csv gains each metric's calibrated
    /// mean and 95% interval (prediction-powered inference). Reads the logs twice.
    #[arg(long, value_name = "HUMAN", conflicts_with = "partial")]
    #[serde(skip)]
    pub calibrate: Option<PathBuf>,

    /// As --reviewers, for the --calibrate key.
    #[arg(
        long = "calibrate-reviewers",
        value_name = "majority|any|all|REVIEWER",
        requires = "calibrate"
    )]
    pub calibrate_reviewers: Option<ReviewerPolicy>,

    /// Grade only this stage; repeat the flag for several [default: all stages].
    #[arg(long = "stage", value_name = "NAME")]
    pub stages: Vec<String>,

    /// Report the relevant documents each stage found and the next one lost,
    /// for stages in this order (comma separated: retrieve,rerank,final).
    #[arg(long = "stage-order", value_name = "LIST", value_delimiter = ',')]
    pub stage_order: Vec<String>,

    /// Read each doc's collection from this CSV (doc_id,collection) when a result names none.
    #[arg(long = "doc-collections", value_name = "FILE")]
    #[serde(skip)]
    pub doc_collections: Option<PathBuf>,

    /// Tolerate up to N results outside the user's allowed collections before exiting with status 1.
    #[arg(long = "max-leaks", value_name = "N", default_value_t = 0)]
    #[serde(skip)]
    pub max_leaks: u64,

    /// Check that every labeled doc id is in this collection snapshot (one id a line); exit 2 if not.
    #[arg(long, value_name = "FILE")]
    #[serde(skip)]
    pub corpus: Option<PathBuf>,

    /// Refuse labels reviewed against another collection version than V (their collection_version); exit 2.
    #[arg(long = "collection-version", value_name = "V")]
    pub collection_version: Option<String>,

    /// Tolerate up to N rejected records before exiting with status 1.
    #[arg(long = "max-rejects", value_name = "N", default_value_t = 0)]
    #[serde(skip)]
    pub max_rejects: u64,

    /// Read the labels as this format.
    #[arg(long = "labels-format", value_parser = choice::<LabelsFormat>(), value_name = "FORMAT", default_value_t = LabelsFormat::Auto)]
    pub labels_format: LabelsFormat,

    /// Read the logs as this format.
    #[arg(long = "logs-format", value_parser = choice::<LogsFormat>(), value_name = "FORMAT", default_value_t = LogsFormat::Auto)]
    pub logs_format: LogsFormat,

    /// Where a log record keeps each field.
    #[command(flatten)]
    pub fields: FieldArgs,

    /// Also slice the aggregates by this record field (a key or JSON pointer, a Parquet column, a span attribute), one slice per value beside task × language; per_query.csv gains a column named after it. Repeat the flag or list fields comma separated.
    #[arg(long = "slice-by", value_name = "FIELD", value_delimiter = ',')]
    pub slice_by: Vec<String>,

    /// Match captures to labels by query id, or by the question text against each label's `query`.
    #[arg(long, value_parser = choice::<JoinBy>(), value_name = "BY", default_value_t = JoinBy::Id)]
    pub join: JoinBy,

    /// Give the captures of spans of KIND (RETRIEVER, RERANKER, retrieval) the stage NAME; repeatable.
    #[arg(long = "span-stage", value_name = "KIND=NAME", value_parser = parse_span_stage)]
    pub span_stages: Vec<(SpanKind, String)>,

    /// Copy KEY=VALUE into summary.json (collection snapshot, retriever config, ...); repeatable.
    #[arg(long = "meta", value_name = "KEY=VALUE", value_parser = parse_meta)]
    pub meta: Vec<(String, String)>,

    /// The time this grading stands for, in summary.json (RFC 3339 or a date), to grade an old night again [default: now].
    #[arg(long = "as-of", value_name = "TIME")]
    pub as_of: Option<rgrade::Timestamp>,

    /// Also write the means and counts to FILE in the OpenMetrics text format (Prometheus' textfile collector, a Pushgateway).
    #[arg(long = "openmetrics", value_name = "FILE")]
    #[serde(skip)]
    pub openmetrics: Option<PathBuf>,

    /// Use N worker threads [default: all cores].
    #[arg(short = 'j', long = "threads", value_name = "N")]
    pub threads: Option<NonZeroUsize>,

    /// Show how the reading of the logs goes, on stderr.
    #[arg(long, value_enum, value_name = "WHEN", default_value_t = ProgressWhen::Auto)]
    #[serde(skip)]
    pub progress: ProgressWhen,

    /// Write a progress line (--progress lines, or auto without a terminal) at most every SECONDS.
    #[arg(long = "progress-every", value_name = "SECONDS", default_value = "10", value_parser = parse_seconds)]
    #[serde(skip)]
    pub progress_every: Duration,

    /// Print no table on stdout.
    #[arg(short = 'q', long)]
    #[serde(skip)]
    pub quiet: bool,

    /// Print summary.json's document on stdout, one line of JSON, instead of the table (with or without -o).
    #[arg(long, conflicts_with_all = ["quiet", "partial"])]
    #[serde(skip)]
    pub json: bool,

    /// Log files or directories (walked for *.jsonl, *.trec, *.run, each plain, .gz or .zst, for
    /// *.parquet, and for runs in *.txt, *.tsv); - for stdin.
    #[arg(value_name = "LOGS", required = true)]
    #[serde(skip)]
    pub logs: Vec<PathBuf>,
}

/// Options of `rgrade compare`: serialized, the [`rgrade::ComparePlan`]
/// they ask for, but for those the plan does not hold and the paths
/// (`skip`, as [`GradeArgs`]' are).
#[derive(Debug, Args, Serialize)]
pub struct CompareArgs {
    /// The current system: a `grade --out` directory or its per_query.csv.
    #[arg(value_name = "BASELINE")]
    #[serde(skip)]
    pub baseline: PathBuf,

    /// The proposed change: a `grade --out` directory or its per_query.csv.
    #[arg(value_name = "CANDIDATE")]
    #[serde(skip)]
    pub candidate: PathBuf,

    /// Check the acceptance rules of this TOML file; any FAIL exits with status 1.
    #[arg(long, value_name = "FILE")]
    #[serde(skip)]
    pub rules: Option<PathBuf>,

    /// Write comparison.csv, per_query_delta.csv and (with --rules) gate.json into DIR.
    #[arg(short = 'o', long = "out", value_name = "DIR")]
    #[serde(skip)]
    pub out: Option<PathBuf>,

    /// Take this run from BASELINE (needed when it holds several).
    #[arg(long = "baseline-run", value_name = "NAME")]
    pub baseline_run: Option<String>,

    /// Take this run from CANDIDATE (needed when it holds several).
    #[arg(long = "candidate-run", value_name = "NAME")]
    pub candidate_run: Option<String>,

    /// Compare these metric columns, comma separated [default: all].
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub metrics: Vec<String>,

    /// Sign-flip permutations of the paired randomization test.
    #[arg(long, value_name = "N", default_value_t = 10_000, value_parser = at_least_one)]
    pub permutations: usize,

    /// Accepted and ignored: the intervals are no longer bootstrapped (docs/compare.md).
    #[arg(long, value_name = "N", value_parser = at_least_one)]
    #[serde(skip)]
    pub bootstrap: Option<usize>,

    /// Seed of the permutations: the same seed gives the same numbers.
    #[arg(long, value_name = "S", default_value_t = 0)]
    pub seed: u64,

    /// Significance level for the marks and for no_significant_loss rules, and of the power figures.
    #[arg(long, value_name = "A", default_value_t = 0.05, value_parser = parse_alpha)]
    pub alpha: f64,

    /// Also find, per metric and grouping set, the queries a paired test needs to detect a change of D (comparison.csv's queries_for_mde).
    #[arg(long = "mde", value_name = "D", value_parser = parse_effect)]
    pub mde: Option<f64>,

    /// Use N worker threads [default: all cores]; results do not depend on it.
    #[arg(short = 'j', long = "threads", value_name = "N")]
    pub threads: Option<NonZeroUsize>,

    /// Print nothing on stdout but the rules' verdicts.
    #[arg(short = 'q', long)]
    #[serde(skip)]
    pub quiet: bool,
}

/// Where a log record keeps each thing: in JSONL a top-level key or a JSON
/// pointer such as `/request/qid`; in spans an attribute (docs/reference.md).
/// Serialized, the library's [`rgrade::FieldNames`].
#[derive(Debug, Args, Clone, Serialize)]
pub struct FieldArgs {
    /// Read the query id from this key or JSON pointer [default: query_id; spans: query_id in the metadata attribute, else a query_id attribute].
    #[arg(long = "query-field", value_name = "KEY")]
    pub query: Option<String>,
    /// Read the ranked results from this key or JSON pointer [default: results].
    #[arg(long = "results-field", value_name = "KEY")]
    pub results: Option<String>,
    /// Read a result object's doc id from this key or JSON pointer [default: doc_id, else id; spans: document.id, or a pointer into document.metadata].
    #[arg(long = "doc-field", value_name = "KEY")]
    pub doc: Option<String>,
    /// Read the stage from this key or JSON pointer (absent means "final") [default: stage].
    #[arg(long = "stage-field", value_name = "KEY")]
    pub stage: Option<String>,
    /// Read the run name from this key or JSON pointer (absent means empty) [default: run; spans: the resource's service.name].
    #[arg(long = "run-field", value_name = "KEY")]
    pub run: Option<String>,
    /// Read the latency in milliseconds from this key or JSON pointer [default: latency_ms; spans: end minus start].
    #[arg(long = "latency-field", value_name = "KEY")]
    pub latency: Option<String>,
    /// Read the context size in tokens from this key or JSON pointer [default: context_tokens].
    #[arg(long = "context-field", value_name = "KEY")]
    pub context: Option<String>,

    /// Read whether the answer was acceptable (a boolean) from this key or JSON pointer [default: answer_ok].
    #[arg(long = "outcome-field", value_name = "KEY")]
    pub outcome: Option<String>,
    /// Read the collections the user may see (an array of names) from this key or JSON pointer [default: allowed_collections].
    #[arg(long = "allowed-field", value_name = "KEY")]
    pub allowed: Option<String>,
    /// Read a result object's collection from this key or JSON pointer inside it [default: collection].
    #[arg(long = "collection-field", value_name = "KEY")]
    pub collection: Option<String>,
    /// Read a result's rank from this column, in Parquet logs of one row per result [default: rank].
    #[arg(long = "rank-field", value_name = "KEY")]
    pub rank: Option<String>,
    /// Read each capture's time from this key, JSON pointer or column (RFC 3339, or seconds to nanoseconds since 1970 told by size), so that --repeats first|last keep the earliest|latest capture; a capture without one is rejected (bad_time) [default: none; spans: their start time].
    #[arg(long = "time-field", value_name = "KEY")]
    pub time: Option<String>,
}

/// Options of `rgrade gen`.
#[derive(Debug, Args)]
pub struct GenArgs {
    /// Write N labeled queries.
    #[arg(long, value_name = "N")]
    pub queries: usize,

    /// Write M results per ranking.
    #[arg(long, value_name = "M", default_value_t = 10)]
    pub results: usize,

    /// Seed the generator; the same seed gives byte-identical files.
    #[arg(long, value_name = "S", default_value_t = 0)]
    pub seed: u64,

    /// Write the logs as JSONL (logs.jsonl), a TREC run (run.trec), OTLP/JSON spans
    /// (traces.jsonl) or Parquet rows (logs.parquet).
    #[arg(long, value_parser = choice::<GenFormat>(), value_name = "FORMAT", default_value_t = GenFormat::Jsonl)]
    pub format: GenFormat,

    /// Also write N unlabeled queries' events, shuffled in (traffic the key does not cover).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub unlabeled: usize,

    /// Write labels and logs into DIR, created if missing.
    #[arg(short = 'o', long = "out", value_name = "DIR")]
    pub out: PathBuf,

    /// Write a series of N nights for `rgrade trend`: one answer key, and each night's log in DIR/night-01, DIR/night-02, ...
    #[arg(long, value_name = "N")]
    pub nights: Option<usize>,

    /// With --nights: a query's rankings drawn afresh one night revert the next night, or persist until drawn afresh again.
    #[arg(long, value_parser = choice::<NightChanges>(), value_name = "HOW", default_value_t = NightChanges::Revert, requires = "nights")]
    pub changes: NightChanges,

    /// Plant a drop from night N on (with --nights and --drop-task).
    #[arg(long = "drop-from", value_name = "N", requires_all = ["nights", "drop_task"])]
    pub drop_from: Option<usize>,

    /// The task whose queries drop: howto, troubleshooting, billing or permissions.
    #[arg(long = "drop-task", value_name = "TASK", requires = "drop_from")]
    pub drop_task: Option<String>,

    /// The chance each relevant document of the task's queries is lost from the rankings once the drop begins.
    #[arg(
        long = "drop-rate",
        value_name = "P",
        default_value_t = 0.05,
        requires = "drop_from"
    )]
    pub drop_rate: f64,
}

/// The library's plan for a command's arguments `args`: they serialize
/// under the plan's field names, so the plan reads them as it reads
/// Python's keyword arguments, every option it is not given at its
/// default. Paths, which need not be UTF-8 (serde writes only UTF-8
/// paths), are not serialized: the caller hands them over as they are.
pub fn plan<P: DeserializeOwned>(args: &impl Serialize) -> Result<P, serde_json::Error> {
    serde_json::from_value(serde_json::to_value(args)?)
}

/// A library setting as the command line spells it (`--reviewers`), with
/// the value a message quotes with it (`--join text`): the one place a
/// setting meets its flag.
pub fn flag(setting: Setting, value: Option<&str>) -> String {
    let flag = match setting {
        Setting::Labels => "--labels",
        Setting::Out => "-o",
        Setting::K => "-k",
        Setting::Measures => "--measures",
        Setting::Reviewers => "--reviewers",
        Setting::ReviewersA => "--reviewers-a",
        Setting::ReviewersB => "--reviewers-b",
        Setting::Calibrate => "--calibrate",
        Setting::CalibrateReviewers => "--calibrate-reviewers",
        Setting::Partial => "--partial",
        Setting::Join => "--join",
        Setting::Unit => "--unit",
        Setting::DocOf => "--doc-of",
        Setting::MinRel => "--min-rel",
        Setting::Missing => "--missing",
        Setting::StageOrder => "--stage-order",
        Setting::SpanStages => "--span-stage",
        Setting::CollectionVersion => "--collection-version",
        Setting::Logs => "--logs",
        Setting::Corpus => "--corpus",
        Setting::Stages => "--stage",
        Setting::DuplicateDocs => "--duplicate-docs",
        Setting::BadFiles => "--bad-files",
        Setting::MaxRejects => "--max-rejects",
        Setting::MaxLeaks => "--max-leaks",
        Setting::LogsFormat => "--logs-format",
        Setting::Repeats => "--repeats",
        Setting::RunName => "--run-name",
        Setting::QueryField => "--query-field",
        Setting::ResultsField => "--results-field",
        Setting::DocField => "--doc-field",
        Setting::RankField => "--rank-field",
        Setting::TimeField => "--time-field",
        Setting::SliceBy => "--slice-by",
        Setting::StageField => "--stage-field",
        Setting::RunField => "--run-field",
        Setting::LatencyField => "--latency-field",
        Setting::ContextField => "--context-field",
        Setting::OutcomeField => "--outcome-field",
        Setting::AllowedField => "--allowed-field",
        Setting::CollectionField => "--collection-field",
        Setting::AsOf => "--as-of",
        Setting::Openmetrics => "--openmetrics",
        Setting::Metrics => "--metrics",
        Setting::Rules => "--rules",
        Setting::Threads => "--threads",
        Setting::Permutations => "--permutations",
        Setting::Mde => "--mde",
        Setting::Baseline => "--baseline",
        Setting::Alpha => "--alpha",
        Setting::AllowLabelChanges => "--allow-label-changes",
        Setting::Queries => "--queries",
        Setting::Results => "--results",
        Setting::Nights => "--nights",
        Setting::DropFrom => "--drop-from",
        Setting::DropTask => "--drop-task",
        Setting::DropRate => "--drop-rate",
    };
    match value {
        Some(value) => format!("{flag} {value}"),
        None => flag.to_string(),
    }
}

/// A `--doc-of` pattern, as the library reads it, its message in flags.
fn parse_doc_of(text: &str) -> Result<DocOf, String> {
    (text.parse()).map_err(|err: String| rgrade::spell_settings(&err, flag))
}

/// When and how `--progress` shows the reading of the logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProgressWhen {
    /// A bar when stderr is a terminal, else a line every --progress-every seconds.
    Auto,
    /// A line every --progress-every seconds, even on a terminal.
    Lines,
    /// Nothing.
    Never,
}

fn parse_seconds(text: &str) -> Result<Duration, String> {
    (text.parse::<f64>().ok())
        .and_then(|seconds| Duration::try_from_secs_f64(seconds).ok())
        .ok_or_else(|| format!("expected a number of seconds, 0 or more, got '{text}'"))
}

fn parse_meta(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_string(), value.to_string())),
        _ => Err(format!("expected KEY=VALUE, got '{text}'")),
    }
}

fn parse_span_stage(text: &str) -> Result<(SpanKind, String), String> {
    let kinds = || SpanKind::ALL.map(SpanKind::name).join(", ");
    match text.split_once('=') {
        Some((kind, stage)) if !stage.is_empty() => SpanKind::from_name(kind)
            .map(|kind| (kind, stage.to_string()))
            .ok_or_else(|| format!("unknown span kind '{kind}': expected one of {}", kinds())),
        _ => Err(format!(
            "expected KIND=NAME (KIND one of {}), got '{text}'",
            kinds()
        )),
    }
}

fn at_least_one(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!(
            "expected a whole number of at least 1, got '{text}'"
        )),
    }
}

fn parse_effect(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(effect) if effect > 0.0 && effect <= 1.0 => Ok(effect),
        _ => Err(format!(
            "expected a change of a metric's mean, above 0 and at most 1, got '{text}'"
        )),
    }
}

fn parse_alpha(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(alpha) if alpha > 0.0 && alpha < 1.0 => Ok(alpha),
        _ => Err(format!("expected a level between 0 and 1, got '{text}'")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn cutoffs_are_comma_separated_and_positive() {
        let cli =
            Cli::try_parse_from(["rgrade", "grade", "--labels", "l", "-k", "3,10", "x"]).unwrap();
        let Command::Grade(args) = cli.command else {
            panic!("expected grade")
        };
        assert_eq!(args.k, [Cutoff::At(3), Cutoff::At(10)]);
        assert!(Cli::try_parse_from(["rgrade", "grade", "--labels", "l", "-k", "0", "x"]).is_err());
    }

    /// The mapping of settings to flags names only flags there are.
    #[test]
    fn every_setting_is_spelled_as_a_flag_of_the_command_line() {
        let cli = Cli::command();
        let arguments = cli
            .get_subcommands()
            .flat_map(|command| command.get_arguments());
        let flags: Vec<String> = arguments
            .flat_map(|arg| {
                let long = arg.get_long().map(|long| format!("--{long}"));
                long.into_iter()
                    .chain(arg.get_short().map(|short| format!("-{short}")))
            })
            .collect();
        for &setting in Setting::ALL {
            assert!(flags.contains(&flag(setting, None)), "{setting:?}");
        }
        assert_eq!(flag(Setting::Join, Some("text")), "--join text");
    }

    #[test]
    fn meta_needs_a_key() {
        assert_eq!(parse_meta("a=b=c"), Ok(("a".into(), "b=c".into())));
        assert!(parse_meta("=b").is_err());
        assert!(parse_meta("novalue").is_err());
    }
}

/// The value parser of a library [`Choice`]: clap offers its names with
/// their help and refuses any other name, as it does for its own value
/// enums.
#[derive(Clone)]
struct ChoiceParser<T>(PhantomData<T>);

/// Parse a flag's value as the choice `T`.
fn choice<T>() -> ChoiceParser<T> {
    ChoiceParser(PhantomData)
}

impl<T: Choice + Clone + Send + Sync> TypedValueParser for ChoiceParser<T> {
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<T, clap::Error> {
        let names = PossibleValuesParser::new(T::ALL.iter().map(|value| value.name()));
        let name = names.parse_ref(cmd, arg, value)?;
        T::from_name(&name)
            .map_err(|_| clap::Error::new(clap::error::ErrorKind::InvalidValue).with_cmd(cmd))
    }

    /// Each name with its help, without the final period, as clap shows
    /// a doc line.
    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(T::ALL.iter().map(|value| {
            let help = value.help();
            PossibleValue::new(value.name()).help(help.strip_suffix('.').unwrap_or(help))
        })))
    }
}
