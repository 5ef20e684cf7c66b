//! The boundary between log formats and grading: what every format makes
//! of a record ([`Record`]). Where it came from ([`Origin`], and a span's
//! place in its trace), which (run, stage, query) it is ([`EventKey`]),
//! what it ranked ([`Ranking`], read only once grading wants it), and, for
//! a record that cannot be graded, why ([`RejectReason`], [`Invalid`]).
//! A format hands its records to a [`RecordSink`] (grading), from a
//! [`RecordSource`] of a chunk's records or, for a format of lines, a
//! [`LineFormat`] that reads one line.

use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::fmt;

use crate::base::options::{LogsFormat, RunName};
use crate::io::blocks::OVERSIZED_HEAD;
use crate::io::json::BadJson;
use crate::logs::seen::FieldsSeen;

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
    /// stage or run is not a string, latency or context size not a number,
    /// or a field sliced by an object or an array.
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
    /// With a time field, a capture of a graded stage whose time is
    /// missing or is not a time: it cannot be placed among its repeats.
    BadTime,
    /// A result without a rank in a list whose other results carry one:
    /// where it ranks cannot be said.
    UnrankedResult,
    /// A log input that cannot be read to its end (a truncated gzip or
    /// zstd stream, a corrupt Parquet file), skipped under `--bad-files
    /// skip`: one reject for the whole file.
    BadFile,
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
            RejectReason::BadTime => "bad_time",
            RejectReason::UnrankedResult => "unranked_result",
            RejectReason::BadFile => "bad_file",
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

/// What ranks a run line, higher first: a TREC score as trec_eval keeps
/// it (a 32-bit float, `-0` equal to `0`), or an MS MARCO rank turned
/// around. Kept as an integer that orders as the score does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RankKey(u32);

impl RankKey {
    /// The key of a TREC score, rounded through f64 to f32 as trec_eval's
    /// atof into a float does.
    pub fn score(score: f64) -> Self {
        let score = score as f32;
        // trec_eval compares scores with < and >, so -0 ties with 0.
        let score = if score == 0.0 { 0.0 } else { score };
        let bits = score.to_bits();
        // Negative floats order backwards as bits: flip them all; put the
        // positive ones above them.
        RankKey(if bits >> 31 == 1 {
            !bits
        } else {
            bits | 1 << 31
        })
    }

    /// The key of an MS MARCO rank: rank 1 first.
    pub fn rank(rank: u32) -> Self {
        RankKey(u32::MAX - rank)
    }

    /// The key of a rank read as the whole number `whole` (`None` when
    /// what was read is none); `what` names it in the error, which says
    /// whether it is no rank at all or one too large to keep.
    pub fn whole_rank(whole: Option<i128>, what: &str) -> Result<Self, String> {
        match whole {
            Some(rank) if rank > i128::from(u32::MAX) => Err(format!(
                "{what} is too large: a rank goes up to {}",
                u32::MAX
            )),
            Some(rank) if rank >= 1 => Ok(RankKey::rank(rank as u32)),
            _ => Err(format!("{what} is not a whole number of at least 1")),
        }
    }
}

/// A capture time: nanoseconds since 1970-01-01T00:00:00Z
/// (`crate::logs::time` reads it as each format writes it).
pub type Nanos = i128;
/// trec_eval's order of two results, `a` before `b` when less: the higher
/// key first, then the greater doc id (`D` is the id, or what orders as
/// it does). Run lines and the results of one list are ranked by it.
pub fn trec_order<D: Ord>(a: (RankKey, D), b: (RankKey, D)) -> std::cmp::Ordering {
    b.cmp(&a)
}

/// What a result of a list carries that may rank it: a rank, a score,
/// both or neither (a bare doc id, say).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ResultKeys {
    /// Its rank, as a key.
    pub rank: Option<RankKey>,
    /// Its score, as a key.
    pub score: Option<RankKey>,
}

/// The order of a list of results (`keys`, each with its doc id in
/// `docs`), ranked as a run's lines are ([`trec_order`], list order
/// between results that tie on both): by their ranks when they carry
/// ranks, else by their scores when every one carries a score. `None`
/// when the list's own order is the ranking: no result carries a rank,
/// and some (or all) carry no score, as where a pipeline logs a score
/// beside some results of the list it returned.
/// `names` are the rank's and the score's fields, for the message.
///
/// # Errors
/// `unranked_result`: some results carry a rank and another does not, so
/// where it ranks cannot be said.
pub fn ranked_order(
    keys: &[ResultKeys],
    docs: &[Cow<'_, str>],
    names: [&str; 2],
) -> Result<Option<Vec<usize>>, Invalid> {
    let by_rank = keys.iter().any(|k| k.rank.is_some());
    if !by_rank && (keys.is_empty() || keys.iter().any(|k| k.score.is_none())) {
        return Ok(None);
    }
    let mut order = Vec::with_capacity(keys.len());
    for (i, result) in keys.iter().enumerate() {
        let key = match by_rank {
            true => result.rank,
            false => result.score,
        };
        let Some(key) = key else {
            let with = keys.iter().position(|k| k.rank.is_some()).unwrap_or(0);
            let detail = format!(
                "result {} has no '{}' though result {} has one: a list is ranked by its \
                 results' ranks only when every result has one",
                i + 1,
                names[0],
                with + 1
            );
            return Err(Invalid::new(RejectReason::UnrankedResult, detail));
        };
        order.push((key, i));
    }
    // Stable: results that tie on key and id keep list order.
    order.sort_by(|&(a, i), &(b, j)| trec_order((a, docs[i].as_bytes()), (b, docs[j].as_bytes())));
    Ok(Some(order.into_iter().map(|(_, i)| i).collect()))
}

/// `items` in `order` (indices into them, each once), taken out of
/// `items`.
pub fn permuted<T: Default>(items: &mut [T], order: &[usize]) -> Vec<T> {
    order
        .iter()
        .map(|&i| std::mem::take(&mut items[i]))
        .collect()
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

/// The reject of a record whose field sliced by (`slice_by`) holds an
/// object or an array: a slice is one value, and no text of a structure
/// would name the same slice twice for the same meaning.
pub fn not_a_slice(field: &str) -> Invalid {
    Invalid::new(
        RejectReason::BadField,
        format!(
            "'{field}' holds an object or an array: a field to slice by must be a string, \
             a number or a boolean"
        ),
    )
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

/// One record of a log, whatever its format: a search event, one result
/// of a ranking spread over records (a run line, a result row), what such
/// a ranking lost, or a line that carries nothing to grade.
///
/// `R` is how an event's ranking is handed over: a [`Pending`] one to the
/// grading, which reads it only for an event it grades.
pub enum Record<'i, R> {
    /// A search event: its key, its place in its trace when it is a span,
    /// and its ranking.
    Event {
        /// Which (run, stage, query) it captured.
        key: EventKey<'i>,
        /// Where it sits in its trace, for a capture span.
        span: Option<SpanIds>,
        /// What it ranked.
        ranking: R,
    },
    /// One result of a ranking spread over records.
    Result(RunResult<'i>),
    /// A record of `key`'s ranking, spread over records, that cannot be
    /// read (a score or rank unusable, a doc id missing): rejected, and its
    /// ranking with it.
    LostResult {
        /// The ranking that lost it.
        key: EventKey<'i>,
        /// Why it cannot be read.
        invalid: Invalid,
    },
    /// A record of a ranking of `query_id` spread over records that does
    /// not say which run it belongs to (a run line cut before its tag, a
    /// result row whose run or stage is null): rejected, and every ranking
    /// of the query in its input with it.
    Unplaced {
        /// The query it names.
        query_id: Cow<'i, str>,
        /// Why it cannot be read.
        invalid: Invalid,
    },
    /// A record that carries no search event: a span of another kind, an
    /// export of no span.
    Other,
    /// A line that is not one line of a run: blank, or the run's header.
    Skipped(Skipped),
    /// A record that cannot be read at all.
    Invalid(Invalid),
}

impl<'i, R> Record<'i, R> {
    /// The same record with its ranking, if it is an event, handed over
    /// as `hand_over` makes of it.
    pub fn map_ranking<S>(self, hand_over: impl FnOnce(R) -> S) -> Record<'i, S> {
        match self {
            Record::Event { key, span, ranking } => Record::Event {
                key,
                span,
                ranking: hand_over(ranking),
            },
            Record::Result(result) => Record::Result(result),
            Record::LostResult { key, invalid } => Record::LostResult { key, invalid },
            Record::Unplaced { query_id, invalid } => Record::Unplaced { query_id, invalid },
            Record::Other => Record::Other,
            Record::Skipped(skipped) => Record::Skipped(skipped),
            Record::Invalid(invalid) => Record::Invalid(invalid),
        }
    }
}

/// A line that is not a record: counted, never read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skipped {
    /// Nothing but whitespace.
    Blank,
    /// A run's header line.
    Header,
}

/// One result of a ranking spread over records.
#[derive(Debug, Clone, PartialEq)]
pub struct RunResult<'i> {
    /// The ranking it belongs to.
    pub key: EventKey<'i>,
    /// The document it returned.
    pub doc_id: Cow<'i, str>,
    /// What ranks it within its ranking (higher first).
    pub rank: RankKey,
}

/// What a search event ranked, and what it measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Ranking<'i> {
    /// The doc ids in ranking order.
    pub docs: Vec<Cow<'i, str>>,
    /// Latency in milliseconds, if recorded.
    pub latency_ms: Option<f64>,
    /// Context size in tokens, if recorded.
    pub context_tokens: Option<f64>,
    /// Whether the answer was acceptable, if recorded.
    pub answer_ok: Option<bool>,
    /// What the user may see, when the event says.
    pub permissions: Option<Permissions<'i>>,
    /// When it was captured, with a time field (a span's start by
    /// default), which orders its repeats.
    pub time: Option<Nanos>,
    /// The value of each field sliced by (`slice_by`, in its order) as
    /// text, `None` where the record lacks it; empty when slicing by none.
    pub slices: Vec<Option<Cow<'i, str>>>,
}

/// The collections a search event's user may see, and the collection
/// each of its results names (`None` where it names none).
#[derive(Debug, Clone, PartialEq)]
pub struct Permissions<'i> {
    /// The allowed collections.
    pub allowed: Vec<&'i str>,
    /// Each result's own collection, in ranking order.
    pub collections: Vec<Option<Cow<'i, str>>>,
}

/// An event's ranking as a format hands it over: already read (a span's,
/// read with its key), or read only when asked, so that an event the
/// grading leaves out (another stage, say) costs no more than its key.
pub enum Pending<'r, 'i> {
    /// Read with the key (boxed: a record is moved on its way to grading,
    /// and a run line's should not move a ranking's room).
    Read(Box<Result<Ranking<'i>, Invalid>>),
    /// Read when asked.
    Later(&'r mut dyn FnMut() -> Result<Ranking<'i>, Invalid>),
}

impl<'i> Pending<'_, 'i> {
    /// The ranking.
    ///
    /// # Errors
    /// Why the event's ranking cannot be read.
    pub fn read(self) -> Result<Ranking<'i>, Invalid> {
        match self {
            Pending::Read(ranking) => *ranking,
            Pending::Later(read) => read(),
        }
    }
}

/// What names a run of run lines: a TREC run's tag, or its file.
#[derive(Debug, Clone, Copy)]
pub struct RunNames<'a> {
    /// What names a TREC or CSV run.
    pub run_name: RunName,
    /// Each input's name as a run: its file name without extensions.
    pub file_runs: &'a [String],
}

impl<'a> RunNames<'a> {
    /// The run of a line from `input` in `format` tagged `tag`: its file's
    /// name for an MS MARCO run, which has no tag, or when runs are named
    /// after their files.
    pub fn run_of<'t>(&self, tag: &'t str, format: LogsFormat, input: u32) -> &'t str
    where
        'a: 't,
    {
        if self.by_file(format) {
            &self.file_runs[input as usize]
        } else {
            tag
        }
    }

    /// Whether the runs of `format` are named after their files.
    pub fn by_file(&self, format: LogsFormat) -> bool {
        format == LogsFormat::Msmarco || self.run_name == RunName::File
    }
}

/// Where a source's records go: grading.
pub trait RecordSink {
    /// Take the record found at `origin`.
    ///
    /// # Errors
    /// Why the record is rejected; the source then hands it to
    /// [`RecordSink::reject`] with what it can show of it.
    fn take<'i>(
        &mut self,
        origin: Origin,
        record: Record<'i, Pending<'_, 'i>>,
    ) -> Result<(), Invalid>;

    /// Reject the record at `origin` as `invalid`; `excerpt` is what it
    /// held (cut to a reject's excerpt).
    fn reject(&mut self, origin: Origin, invalid: Invalid, excerpt: &[u8]);

    /// Where the source tells which fields its records have.
    fn seen(&mut self) -> &mut FieldsSeen;
}

/// The records of one chunk, in input order.
pub trait RecordSource {
    /// Hand every record of the chunk to `sink`, in input order.
    ///
    /// # Errors
    /// The chunk cannot be read at all (a Parquet row group that does not
    /// decode, a CSV run whose header cannot be read), after the records
    /// read before: its whole input is then in error.
    fn for_each(&mut self, sink: &mut dyn RecordSink) -> Result<(), String>;
}

/// Hand `record` to `sink`, and reject it there, showing `excerpt`, if
/// the sink does not take it.
#[inline]
pub fn deliver<'i>(
    sink: &mut dyn RecordSink,
    origin: Origin,
    record: Record<'i, Pending<'_, 'i>>,
    excerpt: &[u8],
) {
    if let Err(invalid) = sink.take(origin, record) {
        sink.reject(origin, invalid, excerpt);
    }
}

/// How a format of lines reads one line.
pub trait LineFormat {
    /// Whether a block is checked as UTF-8 once, not line by line: for
    /// run files, whose lines are read as text.
    const AS_TEXT: bool;

    /// Read the line `line` found at `origin` (`text` is the line when the
    /// block was checked as UTF-8 and is) and hand its records to `sink`.
    fn line(&mut self, line: &[u8], text: Option<&str>, origin: Origin, sink: &mut dyn RecordSink);

    /// Why no line of the block can be read (a CSV run whose header
    /// cannot be), if none can.
    fn unreadable(&self) -> Option<String> {
        None
    }
}
