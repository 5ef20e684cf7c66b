//! The choices a grading run is configured with: plain values the library
//! takes, which the command line offers as flag values (hence `ValueEnum`;
//! each variant's doc line is its `--help` text).

use clap::ValueEnum;

/// What `--missing` does with a labeled query that has no capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MissingPolicy {
    /// Score it 0 in every metric and count it in the means (trec_eval -c).
    Fail,
    /// Leave it out of the means.
    Skip,
}

/// What `--repeats` does with several captures of one (run, stage, query).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DuplicateDocs {
    /// Reject the capture.
    Reject,
    /// Keep the first occurrence and close the gap.
    Dedupe,
}

/// The format of the labels file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LabelsFormat {
    /// JSONL when the first byte is `{`, CSV when the first line has a comma, else TREC qrels.
    Auto,
    /// One JSON object per labeled query.
    Jsonl,
    /// TREC qrels: query_id iteration doc_id grade.
    Trec,
    /// CSV with a header holding query_id and doc_id.
    Csv,
}

/// The format of a log file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogsFormat {
    /// TREC or MS MARCO run when the first line (or the one after a header) has that shape, else JSONL.
    Auto,
    /// One JSON object per search event.
    Jsonl,
    /// TREC run: query_id Q0 doc_id rank score tag.
    Trec,
    /// MS MARCO run: query_id doc_id rank, ranked by rank; the run is the file's name.
    Msmarco,
}

/// What names the run of a TREC run line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RunName {
    /// The tag, its sixth field.
    Tag,
    /// The file's name without its extensions (`.trec`, `.txt`, `.gz`, ...).
    File,
}

/// When to draw the progress bar.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProgressWhen {
    /// Only when stderr is a terminal.
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}
