//! The boundary between log formats and grading: what every format makes
//! of a record. Where it came from ([`Origin`], and a span's place in its
//! trace), which (run, stage, query) it is ([`EventKey`]), and, for a
//! record that cannot be graded, why ([`RejectReason`], [`Invalid`]).

use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::fmt;

use crate::io::blocks::OVERSIZED_HEAD;
use crate::io::json::BadJson;

/// How much of a rejected record rejects.jsonl keeps: as much as the
/// reader keeps of an oversized line.
pub const EXCERPT_BYTES: usize = OVERSIZED_HEAD;

/// Why a record was rejected: stable snake_case codes for rejects.jsonl.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum RejectReason {
    /// The line is not valid UTF-8.
    InvalidUtf8,
    /// The line is not valid JSON.
    InvalidJson,
    /// The line is JSON but not an object.
    NotAnObject,
    /// No query id at the mapped field.
    MissingQueryId,
    /// The query id is neither a string nor an integer.
    BadQueryId,
    /// No results at the mapped field.
    MissingResults,
    /// The results are not an array.
    BadResults,
    /// A result is neither a doc id nor an object holding one.
    BadResult,
    /// stage or run is not a string, or latency or context size not a number.
    BadField,
    /// The line is longer than 64 MiB.
    LineTooLong,
    /// A doc id appears twice in one ranking.
    DuplicateDoc,
    /// Another capture has the same (run, stage, query) under `--repeats error`.
    RepeatedCapture,
    /// A TREC run line with fewer than six fields, or an MS MARCO run line
    /// with fewer than three.
    BadTrecLine,
    /// A TREC run line whose score is not a finite number.
    BadScore,
    /// An MS MARCO run line whose rank is not a whole number of at least 1.
    BadRank,
    /// A CSV run line with not as many fields as its header names, or a
    /// quote that does not close.
    BadCsvLine,
    /// An OTLP line that is no trace export (no `resourceSpans` of scopes
    /// of spans).
    NotATrace,
    /// A span that is not an object, or whose attributes are malformed.
    BadSpan,
    /// A capture span whose exporter dropped attributes (over its
    /// attribute count limit): its ranking may have lost documents.
    DroppedAttributes,
    /// A line of a ranking spread over records (a run line, a Parquet row
    /// of one result) whose ranking lost another line, rejected: graded
    /// without it, the documents below it would move up.
    IncompleteRanking,
}

impl RejectReason {
    /// The code written to rejects.jsonl.
    pub fn code(self) -> &'static str {
        match self {
            RejectReason::InvalidUtf8 => "invalid_utf8",
            RejectReason::InvalidJson => "invalid_json",
            RejectReason::NotAnObject => "not_an_object",
            RejectReason::MissingQueryId => "missing_query_id",
            RejectReason::BadQueryId => "bad_query_id",
            RejectReason::MissingResults => "missing_results",
            RejectReason::BadResults => "bad_results",
            RejectReason::BadResult => "bad_result",
            RejectReason::BadField => "bad_field",
            RejectReason::LineTooLong => "line_too_long",
            RejectReason::DuplicateDoc => "duplicate_doc",
            RejectReason::RepeatedCapture => "repeated_capture",
            RejectReason::BadTrecLine => "bad_trec_line",
            RejectReason::BadScore => "bad_score",
            RejectReason::BadRank => "bad_rank",
            RejectReason::BadCsvLine => "bad_csv_line",
            RejectReason::NotATrace => "not_a_trace",
            RejectReason::BadSpan => "bad_span",
            RejectReason::DroppedAttributes => "dropped_attributes",
            RejectReason::IncompleteRanking => "incomplete_ranking",
        }
    }
}

impl fmt::Display for RejectReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

/// A reason plus a human detail, before the file and line are attached.
#[derive(Debug, Clone, PartialEq)]
pub struct Invalid {
    /// The stable code.
    pub reason: RejectReason,
    /// What exactly was wrong.
    pub detail: String,
}

impl Invalid {
    pub(crate) fn new(reason: RejectReason, detail: impl Into<String>) -> Self {
        Invalid {
            reason,
            detail: detail.into(),
        }
    }
}

impl From<BadJson> for Invalid {
    fn from(bad: BadJson) -> Self {
        let reason = match bad {
            BadJson::NotUtf8 => RejectReason::InvalidUtf8,
            BadJson::Invalid(_) => RejectReason::InvalidJson,
        };
        Invalid::new(reason, bad.to_string())
    }
}

/// The stage of a record that names none.
pub const DEFAULT_STAGE: &str = "final";

/// What a record is about: the key captures are grouped by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventKey<'i> {
    /// The query id (an integer becomes its decimal text).
    pub query_id: Cow<'i, str>,
    /// The pipeline stage, `final` when absent.
    pub stage: &'i str,
    /// The run, empty when absent.
    pub run: &'i str,
}

/// A latency or context size as every format takes it: a finite number
/// of at least 0, `-0` read as 0 (a span that ends before it starts is
/// refused the same way).
///
/// # Errors
/// `bad_field` for no number (`None`), NaN, an infinity or a negative
/// number.
pub fn measure(value: Option<f64>, field: &str) -> Result<f64, Invalid> {
    match value {
        Some(value) if value.is_finite() && value >= 0.0 => Ok(value + 0.0),
        _ => Err(Invalid::new(
            RejectReason::BadField,
            format!("'{field}' must be a number of at least 0"),
        )),
    }
}

/// Where a record came from: the input's index, the 1-based line, and
/// for a span its place in the line. Ordered as the input is: files in
/// the order given, then line number, then span.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Origin {
    /// Index of the input in the order given.
    pub input: u32,
    /// 1-based line number within the input.
    pub line: u64,
    /// 0 for a record that is a whole line; a span's 1-based number
    /// among the spans of its OTLP line.
    pub item: u32,
}

impl Origin {
    /// The record that is line `line` of input `input`.
    pub fn line(input: u32, line: u64) -> Self {
        Origin {
            input,
            line,
            item: 0,
        }
    }
}

/// Where a capture span sits in its trace: its own id and its parent's,
/// each hashed with the trace id (the ids as the export writes them, hex
/// or base64), `None` where the span names none. Instrumentations trace a
/// call and the call it makes: OpenInference's LlamaIndex instrumentation
/// writes a RETRIEVER span for `retrieve()`, holding the documents, whose
/// child `_retrieve()` is a RETRIEVER span holding none. Such an empty
/// child of another capture of the same query is no capture of its own.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SpanIds {
    /// The span's own place.
    pub own: Option<u64>,
    /// Its parent's place.
    pub parent: Option<u64>,
}

impl SpanIds {
    /// The places of the span `span` and of its parent `parent` in the
    /// trace `trace`.
    pub fn new(trace: Option<&str>, span: Option<&str>, parent: Option<&str>) -> Self {
        let place = |id: Option<&str>| {
            let (trace, id) = (trace?, id.filter(|id| !id.is_empty())?);
            let mut hasher = xxhash_rust::xxh3::Xxh3::new();
            hasher.update(trace.as_bytes());
            hasher.update(b"/");
            hasher.update(id.as_bytes());
            Some(hasher.digest())
        };
        SpanIds {
            own: place(span),
            parent: place(parent),
        }
    }
}
