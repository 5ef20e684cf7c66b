//! What judging leaves of a record, shared by the stages after it: where a
//! record came from, the judged documents a capture found, what survives
//! of a capture, a rejected record, and the line counts of summary.json.

use serde::{Deserialize, Serialize};
use std::ops::Range;

use crate::logs::record::Nanos;
use crate::logs::record::{Invalid, Origin, RejectReason, EXCERPT_BYTES};

/// A judged document found in a ranking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Found {
    /// 1-based rank after any dedupe.
    pub rank: u32,
    /// The document's index in the label index.
    pub doc: u32,
}

/// A capture span of a labeled query that returned no document, held
/// apart until every input is read: if its parent is another capture span
/// of the same (run, stage, query), it is that capture's inner call and
/// set aside; otherwise it is graded as an empty ranking.
#[derive(Debug, Clone, PartialEq)]
pub struct EmptySpan {
    /// The (run, stage) pair, as the block or the grouper numbers it.
    pub pair: u32,
    /// The labeled query.
    pub query: u32,
    /// The capture, of no result.
    pub capture: Capture,
    /// Its own place in the trace.
    pub own: Option<u64>,
    /// Its parent's place in the trace.
    pub parent: Option<u64>,
}

/// What survives of one capture of a labeled query.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Capture {
    /// The record it came from.
    pub origin: Origin,
    /// Results in the ranking (after any dedupe).
    pub n_results: u32,
    /// Input records it was built from: 1, or a TREC ranking's lines.
    pub records: u32,
    /// Latency in milliseconds, if recorded.
    pub latency_ms: Option<f64>,
    /// Context size in tokens, if recorded.
    pub context_tokens: Option<f64>,
    /// Results outside the user's allowed collections (after any dedupe).
    pub unauthorized: u32,
    /// Whether the answer built on this capture was acceptable, if the
    /// record says (`answer_ok`).
    pub answer_ok: Option<bool>,
    /// When it was captured, with a time field (a span's start by
    /// default): `--repeats first|last` order repeats by it, then by
    /// origin. `None` sorts first.
    pub time: Option<Nanos>,
    /// The value of each field sliced by (`slice_by`, in its order), `None`
    /// where the record lacks it; empty when slicing by none, or for a
    /// ranking of run lines, which record no field.
    pub slices: Box<[Option<Box<str>>]>,
    /// The unjudged documents ranked within the pool depth (with
    /// `--review-queue`): a range of the pooled documents of whoever holds
    /// the capture, as `found` is of its found list.
    pub pooled: Range<u32>,
    /// The judged documents (any grade) in the ranking, by rank: a range of the found
    /// list of whoever holds the capture (a block outcome, the grouper).
    pub found: Range<u32>,
    /// Whether the ranking returned any document the labels judge for its
    /// query, whatever its grade and whether withheld as unauthorized: a
    /// query whose results never are is a sign of stale labels.
    pub returned_judged: bool,
}

impl Capture {
    /// Where it stands among the repeats of its (run, stage, query):
    /// by capture time, then in input order.
    pub fn order(&self) -> (Option<Nanos>, Origin) {
        (self.time, self.origin)
    }
}

/// A rejected record, ready for rejects.jsonl.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reject {
    /// Where the record is.
    pub origin: Origin,
    /// The stable code.
    pub reason: RejectReason,
    /// What exactly was wrong.
    pub detail: String,
    /// The record's first bytes.
    pub excerpt: Vec<u8>,
}

impl Reject {
    /// A reject of the record `line` at `origin`, keeping its first bytes.
    pub fn new(origin: Origin, invalid: Invalid, line: &[u8]) -> Self {
        Reject {
            origin,
            reason: invalid.reason,
            detail: invalid.detail,
            excerpt: line[..line.len().min(EXCERPT_BYTES)].to_vec(),
        }
    }
}

/// Line counts of one block, summed into summary.json.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineCounts {
    /// Records: non-blank lines, but each span of an OTLP line.
    pub records: u64,
    /// Blank lines, skipped.
    pub blank: u64,
    /// Header lines of runs, skipped.
    pub header: u64,
    /// Records that parsed (search events, TREC lines), whatever came of
    /// them after: graded, unlabeled, another stage, or rejected later.
    pub events: u64,
    /// Valid records of queries that have no label.
    pub unlabeled: u64,
    /// Valid records of stages left out by `--stage`.
    pub other_stage: u64,
    /// Valid records that carry no search event: spans of other kinds,
    /// OTLP lines holding no span, nested capture spans.
    pub other_records: u64,
    /// Of those, empty capture spans of labeled queries whose parent is
    /// another capture of theirs: an instrumentation's inner call.
    pub nested_spans: u64,
    /// Empty capture spans of labeled queries that are captures of their
    /// own, graded as empty rankings.
    pub empty_spans: u64,
    /// Records rejected while parsing or judging.
    pub rejected: u64,
    /// Valid records of graded stages that named no allowed collections.
    pub without_permissions: u64,
    /// Results of valid records of graded stages outside their allowed
    /// collections.
    pub leaked_results: u64,
    /// Under `--unit doc`, results of judged captures dropped because an
    /// earlier result was a chunk of the same document.
    pub later_chunks: u64,
    /// Under `--unit doc`, result ids of judged captures in which
    /// `--doc-of` found no document: graded as documents of their own.
    pub unmapped_ids: u64,
}

impl std::ops::AddAssign for LineCounts {
    fn add_assign(&mut self, other: Self) {
        self.records += other.records;
        self.blank += other.blank;
        self.header += other.header;
        self.events += other.events;
        self.unlabeled += other.unlabeled;
        self.other_stage += other.other_stage;
        self.other_records += other.other_records;
        self.nested_spans += other.nested_spans;
        self.empty_spans += other.empty_spans;
        self.rejected += other.rejected;
        self.without_permissions += other.without_permissions;
        self.leaked_results += other.leaked_results;
        self.later_chunks += other.later_chunks;
        self.unmapped_ids += other.unmapped_ids;
    }
}

/// A (run, stage) pair as named in the logs.
pub type RunStage = (Box<str>, Box<str>);
