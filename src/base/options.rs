//! The choices a grading run is configured with: plain values the library
//! takes, which the command line offers as flag values (hence `ValueEnum`;
//! each variant's doc line is its `--help` text).

use clap::ValueEnum;
use serde::{Deserialize, Serialize};

/// What `--missing` does with a labeled query that has no capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
pub enum MissingPolicy {
    /// Score it 0 in every metric and count it in the means (trec_eval -c).
    Fail,
    /// Leave it out of the means.
    Skip,
}

/// What `--repeats` does with several captures of one (run, stage, query).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
pub enum RepeatPolicy {
    /// Reject every capture of that key; the query is invalid.
    Error,
    /// Grade the first capture in input order.
    First,
    /// Grade the last capture in input order.
    Last,
    /// Grade every capture and average the scores.
    Mean,
}

/// What `--duplicate-docs` does with a doc id listed twice in one ranking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
pub enum DuplicateDocs {
    /// Reject the capture.
    Reject,
    /// Keep the first occurrence and close the gap.
    Dedupe,
}

/// The format of the labels file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
pub enum LabelsFormat {
    /// Parquet by its PAR1 magic, JSONL when the first byte is `{`, CSV when the first line has a comma, else TREC qrels.
    Auto,
    /// One JSON object per labeled query.
    Jsonl,
    /// TREC qrels: query_id iteration doc_id grade.
    Trec,
    /// CSV with a header holding query_id and doc_id.
    Csv,
    /// Parquet with the CSV labels' columns (a file opening with PAR1).
    Parquet,
}

/// The format of a log file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
pub enum LogsFormat {
    /// Parquet by its PAR1 magic; TREC or MS MARCO run when the first line (or the one after a header) has that shape; else JSONL.
    Auto,
    /// One JSON object per search event.
    Jsonl,
    /// TREC run: query_id Q0 doc_id rank score tag.
    Trec,
    /// MS MARCO run: query_id doc_id rank, ranked by rank; the run is the file's name.
    Msmarco,
    /// OpenTelemetry traces as OTLP/JSON lines: retrieval and rerank spans are the captures.
    Otlp,
    /// Parquet: a row per search event, a row per (event, result) with a rank, or Phoenix spans.
    Parquet,
}

/// What `--join` matches a capture to its label by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
pub enum JoinBy {
    /// The query id.
    Id,
    /// The question text, trimmed, against each label's `query`.
    Text,
}

/// The kinds of span that are captures, as `--span-stage` names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum SpanKind {
    /// An OpenInference RETRIEVER span.
    Retriever,
    /// An OpenInference RERANKER span.
    Reranker,
    /// An OpenTelemetry GenAI span whose operation is `retrieval`.
    GenAiRetrieval,
}

impl SpanKind {
    /// Every kind, in the order the docs list them.
    pub const ALL: [SpanKind; 3] = [
        SpanKind::Retriever,
        SpanKind::Reranker,
        SpanKind::GenAiRetrieval,
    ];

    /// The name `--span-stage` takes: the OpenInference span kind, or the
    /// GenAI operation name.
    pub fn name(self) -> &'static str {
        match self {
            SpanKind::Retriever => "RETRIEVER",
            SpanKind::Reranker => "RERANKER",
            SpanKind::GenAiRetrieval => "retrieval",
        }
    }

    /// The stage its captures have unless `--span-stage` renames it.
    pub fn default_stage(self) -> &'static str {
        match self {
            SpanKind::Retriever | SpanKind::GenAiRetrieval => "retrieve",
            SpanKind::Reranker => "rerank",
        }
    }

    /// The kind `--span-stage` names, if any.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.name() == name)
    }
}

/// What names the run of a TREC run line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
pub enum RunName {
    /// The tag, its sixth field.
    Tag,
    /// The file's name without its extensions (`.trec`, `.txt`, `.gz`, ...).
    File,
}

/// When to draw the progress bar.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
pub enum ProgressWhen {
    /// Only when stderr is a terminal.
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}
