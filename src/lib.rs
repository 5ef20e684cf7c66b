//! rgrade grades the retrieval step of a RAG or search system: it streams
//! captured search logs, groups them by query, grades every labeled query
//! against a reviewed answer key and reports per-query and sliced results.
//!
//! # Ubiquitous language
//!
//! - **query**: one question a user asked, known by its `query_id`.
//! - **label**: the answer key's entry for a query: its judged documents,
//!   task, language, and whether it is a required regression case.
//! - **grade**: how relevant a judged document is (an integer; a document
//!   counts as relevant from `--min-rel` up).
//! - **run**: one retriever configuration whose results were captured.
//! - **stage**: a step of the pipeline (`retrieve`, `rerank`, `final`).
//! - **capture** (or event): one ranking a run returned for a query at a
//!   stage, as logged.
//! - **result**: one retrieved document of a capture, in pipeline order.
//!
//! # Map
//!
//! - [`grade()`] takes a [`GradePlan`]: the logs read and parsed by
//!   `src/logs/` (over the plumbing of `src/io/`), graded by `src/grade/`,
//!   written by `src/output/` (one file per output over one [`schema`]),
//!   all driven by `src/run/`. [`grade_partial`] grades a shard of logs
//!   partitioned by query id up to its captures, and [`merge()`] grades the
//!   shards as one. The answer key is `src/labels/`; the metric
//!   definitions, the options and the other shared vocabulary are in
//!   `src/base/`.
//! - [`compare()`] takes a [`ComparePlan`]: two grade outputs read back,
//!   paired per query, tested with paired statistics and held to rules.
//! - [`index()`] takes an [`IndexPlan`]: the answer key compiled into a
//!   file that gradings read back instead of parsing the labels.
//! - [`agree()`] takes an [`AgreePlan`]: two answer keys compared on the
//!   pairs both judge (`src/agree/`).
//! - [`draw_report`] draws the report page of a grade output again;
//!   `src/report/` draws it (grading draws it too, as it writes).
//! - [`write_dataset`] takes a [`GenConfig`]: synthetic labels and logs.
//!
//! The binary (`src/main.rs`, `src/cli.rs`, `src/cmd/`) turns the command
//! line into these plain plans; docs/DESIGN.md maps the whole tree.
#![deny(missing_docs)]

mod agree;
mod base;
mod compare;
mod gen;
mod grade;
mod io;
mod labels;
mod logs;
mod output;
mod report;
mod run;
mod trend;

pub use agree::{Agreement, Disagreement, RunMeans, RunOrder, RunsUnderBoth, SliceAgreement};
pub use base::failure::{spell_settings, Error, ErrorKind, Message, Setting};
pub use base::metrics::Cutoff;
pub use base::options::{
    BadFiles, Choice, DuplicateDocs, JoinBy, LabelsFormat, LogsFormat, MissingPolicy, RepeatPolicy,
    ReviewerPolicy, RunName, SpanKind, Unit, UnknownChoice,
};
pub use base::schema;
pub use base::text::{visible, visible_json};
pub use base::timestamp::Timestamp;
pub use compare::{Compared, Plan as ComparePlan, Warning as CompareWarning};
pub use gen::{
    write_dataset, GenConfig, GenFormat, NightChanges, Nights, PlantedDrop, Written, WrittenFile,
};
pub use grade::plan::Tables;
pub use grade::units::{doc_of, ChunkLabels, DocOf};
pub use grade::{Graded, Plan as GradePlan, Warning};
pub use io::guarded::quiet_decoder_panics;
pub use io::location::shown as shown_path;
pub use io::progress::Progress;
pub use io::tables::{ArrowStream, ArrowTable, LogLines, LogTable};
pub use logs::discover::log_files;
pub use logs::jsonl::FieldNames;
pub use report::draw_again as draw_report;
pub use report::STDOUT as REPORT_TO_STDOUT;
pub use run::agree::{run as agree, Agreed, Plan as AgreePlan};
pub use run::compare::run as compare;
pub use run::copy::copy_result;
pub use run::grade::run as grade;
pub use run::index::{run as index, Compiled as CompiledKey, Plan as IndexPlan};
pub use run::partial::{grade as grade_partial, merge, MergePlan};
pub use run::trend::run as trend;
pub use trend::{Plan as TrendPlan, Trended, Warning as TrendWarning, DEFAULT_BASELINE_NIGHTS};

/// The pipeline's hot kernels, public for the benchmarks in `benches/` and
/// the fuzz targets in `fuzz/`: not a stable API.
#[doc(hidden)]
pub mod kernels {
    pub use crate::base::metrics::{score, Hit, Judgments};
    pub use crate::base::options::Reviewing;
    pub use crate::base::stats::{bootstrap_mean_interval, paired_randomization_p_value};
    pub use crate::grade::judge::{BlockWorker, JudgeConfig};
    pub use crate::grade::trec::runs::TrecLines;
    pub use crate::io::blocks::{lines, Block, Chunk, Header};
    pub use crate::io::inputs::Input;
    pub use crate::io::json::JsonParser;
    pub use crate::io::workers::{for_each_block, pool};
    pub use crate::labels::{id_hash, LabelIndex};
    pub use crate::logs::discover::discover;
    pub use crate::logs::jsonl::{Event, FieldNames, LogFields};
    pub use crate::logs::otlp::SpanFields;
    pub use crate::logs::parquet::ColumnNames;
    pub use crate::logs::read::{read_inputs, LogChunk};
    pub use crate::logs::record::EventKey;
    pub use crate::logs::records::RecordOptions;
}

/// The compare readers fuzz/ drives one by one (`rgrade compare` only
/// reaches them together): not a stable API.
#[doc(hidden)]
pub mod fuzzing {
    pub use crate::compare::graded::{load as load_graded, Side};
    pub use crate::compare::paired::{pair, Paired, StatSettings};
    pub use crate::compare::rules::{load as load_rules, RuleContext};
}
