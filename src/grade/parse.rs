//! Stage 2, parse: one log line becomes a typed event, or a
//! reject with a stable reason code (docs/guide.md, "Reject codes").
//!
//! JSONL lines go through simd-json's tape, reusing one padded scratch
//! buffer and one tape per worker, so a line costs no allocation. Fields are
//! found by key or JSON pointer, as the user mapped them.

use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::fmt;

use simd_json::prelude::*;
use simd_json::tape::{Array, Value};
use simd_json::{Buffers, ErrorType, Tape};

use crate::options::LogsFormat;

/// How much of a rejected record rejects.jsonl keeps.
pub const EXCERPT_BYTES: usize = 200;

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

/// Where to find a field: a key, or the segments of a JSON pointer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldPath {
    segments: Vec<String>,
    text: String,
}

impl FieldPath {
    /// `/a/b` is a JSON pointer (RFC 6901, `~1` for `/`, `~0` for `~`);
    /// anything else is a top-level key.
    pub fn parse(text: &str) -> Self {
        let segments = match text.strip_prefix('/') {
            Some(pointer) => pointer
                .split('/')
                .map(|s| s.replace("~1", "/").replace("~0", "~"))
                .collect(),
            None => vec![text.to_string()],
        };
        FieldPath {
            segments,
            text: text.to_string(),
        }
    }

    /// The keys it goes through: one for a top-level key.
    pub fn segments(&self) -> &[String] {
        &self.segments
    }

    /// The value it names in `root`, if any.
    pub fn find<'t, 'i>(&self, root: Value<'t, 'i>) -> Option<Value<'t, 'i>> {
        let mut value = root;
        for segment in &self.segments {
            value = if value.is_array() {
                value.get_idx(segment.parse().ok()?)?
            } else {
                value.get(segment.as_str())?
            };
        }
        Some(value)
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Where a log record keeps each thing.
#[derive(Debug, Clone)]
pub struct LogFields {
    query: FieldPath,
    results: FieldPath,
    doc: Option<FieldPath>,
    stage: FieldPath,
    run: FieldPath,
    latency: FieldPath,
    context: FieldPath,
    outcome: FieldPath,
    allowed: FieldPath,
    collection: FieldPath,
}

impl LogFields {
    /// The mapping `names` gives, the JSONL defaults where it names none.
    pub fn new(names: &FieldNames) -> Self {
        let path = |name: &Option<String>, default: &str| {
            FieldPath::parse(name.as_deref().unwrap_or(default))
        };
        LogFields {
            query: path(&names.query, FieldNames::QUERY),
            results: path(&names.results, FieldNames::RESULTS),
            doc: names.doc.as_deref().map(FieldPath::parse),
            stage: path(&names.stage, FieldNames::STAGE),
            run: path(&names.run, FieldNames::RUN),
            latency: path(&names.latency, FieldNames::LATENCY),
            context: path(&names.context, FieldNames::CONTEXT),
            outcome: path(&names.outcome, FieldNames::OUTCOME),
            allowed: path(&names.allowed, FieldNames::ALLOWED),
            collection: path(&names.collection, FieldNames::COLLECTION),
        }
    }
}

impl Default for LogFields {
    fn default() -> Self {
        LogFields::new(&FieldNames::default())
    }
}

/// Where a log record keeps each thing, as the user names it; `None`
/// leaves it where the format keeps it. In JSONL, a name is a top-level
/// key or a JSON pointer such as `/request/qid`, and the defaults are the
/// constants below; spans read theirs from attributes (docs/guide.md,
/// "Traces").
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldNames {
    /// The query id.
    pub query: Option<String>,
    /// The ranked results.
    pub results: Option<String>,
    /// A result object's doc id; JSONL reads `doc_id`, else `id`.
    pub doc: Option<String>,
    /// The stage (absent means `final`).
    pub stage: Option<String>,
    /// The run name (absent means empty).
    pub run: Option<String>,
    /// The latency in milliseconds.
    pub latency: Option<String>,
    /// The context size in tokens.
    pub context: Option<String>,
    /// Whether the answer was acceptable, a boolean.
    pub outcome: Option<String>,
    /// The collections the user may see, an array of names.
    pub allowed: Option<String>,
    /// A result object's collection, inside the result.
    pub collection: Option<String>,
    /// The rank of a result in a log of one row per result (Parquet).
    pub rank: Option<String>,
}

impl FieldNames {
    /// Where a JSONL record keeps the query id unless the user says otherwise.
    pub const QUERY: &'static str = "query_id";
    /// Where a JSONL record keeps the results unless the user says otherwise.
    pub const RESULTS: &'static str = "results";
    /// Where a JSONL record keeps the stage unless the user says otherwise.
    pub const STAGE: &'static str = "stage";
    /// Where a JSONL record keeps the run unless the user says otherwise.
    pub const RUN: &'static str = "run";
    /// Where a JSONL record keeps the latency unless the user says otherwise.
    pub const LATENCY: &'static str = "latency_ms";
    /// Where a JSONL record keeps the context size unless the user says otherwise.
    pub const CONTEXT: &'static str = "context_tokens";
    /// Where a JSONL record keeps the answer's outcome unless the user says otherwise.
    pub const OUTCOME: &'static str = "answer_ok";
    /// Where a JSONL record keeps the allowed collections unless the user says otherwise.
    pub const ALLOWED: &'static str = "allowed_collections";
    /// Where a result keeps its collection unless the user says otherwise.
    pub const COLLECTION: &'static str = "collection";
    /// Where a Parquet row of one result keeps its rank unless the user says otherwise.
    pub const RANK: &'static str = "rank";
}

/// The stage of a record that names none.
pub const DEFAULT_STAGE: &str = "final";

/// What a JSONL record is about: the key captures are grouped by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventKey<'i> {
    /// The query id (an integer becomes its decimal text).
    pub query_id: Cow<'i, str>,
    /// The pipeline stage, `final` when absent.
    pub stage: &'i str,
    /// The run, empty when absent.
    pub run: &'i str,
}

impl<'i> EventKey<'i> {
    /// Read the key out of a parsed line. It is read before the rest, so
    /// that a record rejected for its results still counts as a capture of
    /// its query.
    ///
    /// # Errors
    /// `not_an_object`, `missing_query_id`, `bad_query_id`, or `bad_field`
    /// for a stage or run that is not a string.
    pub fn from_value(root: Value<'_, 'i>, fields: &LogFields) -> Result<Self, Invalid> {
        if !root.is_object() {
            return Err(Invalid::new(
                RejectReason::NotAnObject,
                "a log line must be a JSON object",
            ));
        }
        let query_id = match fields.query.find(root) {
            None => {
                return Err(Invalid::new(
                    RejectReason::MissingQueryId,
                    format!("no '{}' field", fields.query),
                ))
            }
            Some(v) => id_text(v).ok_or_else(|| {
                Invalid::new(
                    RejectReason::BadQueryId,
                    format!(
                        "'{}' must be a string or an integer within 64 bits",
                        fields.query
                    ),
                )
            })?,
        };
        Ok(EventKey {
            query_id,
            stage: optional_str(root, &fields.stage)?.unwrap_or(DEFAULT_STAGE),
            run: optional_str(root, &fields.run)?.unwrap_or(""),
        })
    }
}

/// The ranking and measurements of a JSONL search event, borrowing from
/// the parsed line.
pub struct Event<'t, 'i> {
    /// Latency in milliseconds, if recorded.
    pub latency_ms: Option<f64>,
    /// Context size in tokens, if recorded.
    pub context_tokens: Option<f64>,
    /// Whether the answer was acceptable, if recorded.
    pub answer_ok: Option<bool>,
    /// The collections the user may see, if the record says.
    pub allowed: Option<Vec<&'i str>>,
    /// The ranking; `None` for a null one, which found nothing.
    results: Option<Array<'t, 'i>>,
}

impl<'t, 'i> Event<'t, 'i> {
    /// Read the ranking and measurements out of a parsed line.
    ///
    /// # Errors
    /// `missing_results`, `bad_results`, or `bad_field` for a latency or
    /// context size that is not a number, or an outcome not a boolean. Null results are an empty
    /// ranking: OpenSearch UBI, for one, records a search that found
    /// nothing that way.
    pub fn from_value(root: Value<'t, 'i>, fields: &LogFields) -> Result<Self, Invalid> {
        let results = match fields.results.find(root) {
            None => {
                return Err(Invalid::new(
                    RejectReason::MissingResults,
                    format!("no '{}' field", fields.results),
                ))
            }
            Some(v) if v.is_null() => None,
            Some(v) => Some(v.as_array().ok_or_else(|| {
                Invalid::new(
                    RejectReason::BadResults,
                    format!("'{}' must be an array or null", fields.results),
                )
            })?),
        };
        Ok(Event {
            latency_ms: optional_measure(root, &fields.latency)?,
            context_tokens: optional_measure(root, &fields.context)?,
            answer_ok: optional_bool(root, &fields.outcome)?,
            allowed: optional_names(root, &fields.allowed)?,
            results,
        })
    }

    /// Each result's collection, if it names one.
    ///
    /// # Errors
    /// `bad_field` for a collection that is not a string.
    pub fn collections<'e>(
        &'e self,
        fields: &'e LogFields,
    ) -> impl Iterator<Item = Result<Option<&'i str>, Invalid>> + 'e {
        self.results
            .iter()
            .flat_map(Array::iter)
            .enumerate()
            .map(move |(i, result)| {
                if !result.is_object() {
                    return Ok(None);
                }
                match fields.collection.find(result) {
                    None => Ok(None),
                    Some(v) if v.is_null() => Ok(None),
                    Some(v) => v.into_string().map(Some).ok_or_else(|| {
                        Invalid::new(
                            RejectReason::BadField,
                            format!("result {}: '{}' must be a string", i + 1, fields.collection),
                        )
                    }),
                }
            })
    }

    /// The doc ids in ranking order.
    pub fn doc_ids<'e>(
        &'e self,
        fields: &'e LogFields,
    ) -> impl Iterator<Item = Result<Cow<'i, str>, Invalid>> + 'e {
        self.results
            .iter()
            .flat_map(Array::iter)
            .enumerate()
            .map(move |(i, result)| {
                doc_id(result, fields.doc.as_ref()).ok_or_else(|| {
                    let wanted = fields
                        .doc
                        .as_ref()
                        .map_or("doc_id or id".to_string(), |d| format!("'{d}'"));
                    Invalid::new(
                        RejectReason::BadResult,
                        format!(
                            "result {} is neither a doc id nor an object with {wanted}",
                            i + 1
                        ),
                    )
                })
            })
    }
}

/// A result's doc id: the result itself, or a field of a result object
/// (`doc_id`, else `id`, unless the user named one).
fn doc_id<'i>(result: Value<'_, 'i>, field: Option<&FieldPath>) -> Option<Cow<'i, str>> {
    if !result.is_object() {
        return id_text(result);
    }
    match field {
        Some(path) => path.find(result).and_then(id_text),
        None => result
            .get("doc_id")
            .or_else(|| result.get("id"))
            .and_then(id_text),
    }
}

/// A string id, or an integer id as its decimal text.
pub fn id_text<'i>(value: Value<'_, 'i>) -> Option<Cow<'i, str>> {
    if let Some(text) = value.into_string() {
        return Some(Cow::Borrowed(text));
    }
    value
        .as_i64()
        .map(|n| n.to_string())
        .or_else(|| value.as_u64().map(|n| n.to_string()))
        .map(Cow::Owned)
}

fn optional_str<'i>(root: Value<'_, 'i>, path: &FieldPath) -> Result<Option<&'i str>, Invalid> {
    match path.find(root) {
        None => Ok(None),
        Some(v) if v.is_null() => Ok(None),
        Some(v) => v.into_string().map(Some).ok_or_else(|| {
            Invalid::new(RejectReason::BadField, format!("'{path}' must be a string"))
        }),
    }
}

fn optional_names<'i>(
    root: Value<'_, 'i>,
    path: &FieldPath,
) -> Result<Option<Vec<&'i str>>, Invalid> {
    let bad = || {
        Invalid::new(
            RejectReason::BadField,
            format!("'{path}' must be an array of strings"),
        )
    };
    match path.find(root) {
        None => Ok(None),
        Some(v) if v.is_null() => Ok(None),
        Some(v) => {
            let names = v.as_array().ok_or_else(bad)?;
            names
                .iter()
                .map(|name| name.into_string().ok_or_else(bad))
                .collect::<Result<Vec<_>, _>>()
                .map(Some)
        }
    }
}

fn optional_measure(root: Value<'_, '_>, path: &FieldPath) -> Result<Option<f64>, Invalid> {
    match path.find(root) {
        None => Ok(None),
        Some(v) if v.is_null() => Ok(None),
        Some(v) => measure(v.cast_f64(), &path.to_string()).map(Some),
    }
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

fn optional_bool(root: Value<'_, '_>, path: &FieldPath) -> Result<Option<bool>, Invalid> {
    match path.find(root) {
        None => Ok(None),
        Some(v) if v.is_null() => Ok(None),
        Some(v) => v.as_bool().map(Some).ok_or_else(|| {
            Invalid::new(
                RejectReason::BadField,
                format!("'{path}' must be true or false"),
            )
        }),
    }
}

/// A worker's reusable JSON parsing state: a padded copy of the line and
/// simd-json's buffers and tape, kept across lines.
pub struct JsonParser {
    scratch: Vec<u8>,
    buffers: Buffers,
    tape: Option<Tape<'static>>,
}

impl Default for JsonParser {
    fn default() -> Self {
        JsonParser {
            scratch: Vec::new(),
            buffers: Buffers::new(4096),
            tape: Some(Tape::null()),
        }
    }
}

impl JsonParser {
    /// Parse `line` and hand its root value to `visit`.
    ///
    /// # Errors
    /// `invalid_utf8` or `invalid_json`, with simd-json's description.
    pub fn parse<R>(
        &mut self,
        line: &[u8],
        visit: impl FnOnce(Value<'_, '_>) -> R,
    ) -> Result<R, Invalid> {
        let len = line.len();
        let mut tape = self.tape.take().unwrap_or_else(Tape::null).reset();
        self.copy_padded(line);
        let parsed =
            simd_json::fill_tape_padded(&mut self.scratch, len, &mut self.buffers, &mut tape);
        let (parsed, tape) = match parsed {
            Err(err) if matches!(err.error(), ErrorType::InvalidNumber) => {
                let mut retry = tape.reset();
                // Parsing rewrote the scratch in place: start again from the line.
                self.copy_padded(line);
                if blank_out_of_range_numbers(&mut self.scratch[..len]) {
                    let parsed = simd_json::fill_tape_padded(
                        &mut self.scratch,
                        len,
                        &mut self.buffers,
                        &mut retry,
                    );
                    (parsed, retry)
                } else {
                    (Err(err), retry)
                }
            }
            parsed => (parsed, tape),
        };
        let result = match parsed {
            Ok(()) => Ok(visit(tape.as_value())),
            Err(err) if matches!(err.error(), ErrorType::InvalidUtf8) => Err(Invalid::new(
                RejectReason::InvalidUtf8,
                "the line is not valid UTF-8",
            )),
            Err(err) => Err(Invalid::new(
                RejectReason::InvalidJson,
                describe_invalid_json(line, &err),
            )),
        };
        self.tape = Some(tape.reset());
        result
    }

    fn copy_padded(&mut self, line: &[u8]) {
        self.scratch.clear();
        self.scratch.extend_from_slice(line);
        self.scratch
            .resize(line.len() + simd_json::INPUT_PADDING, 0);
    }
}

/// What is wrong with a line simd-json rejected, and where. simd-json's
/// first pass places a bracket left open at character 0 and names some
/// errors after its internals, so the line, already rejected and rare, is
/// read again by serde_json, whose message says what it expected where
/// (its column counts bytes from 1). Should serde_json take the line
/// (they differ on some limits), simd-json's own words stand.
/// Nesting past simd-json's depth limit is said as such: serde_json's
/// own limit is lower.
fn describe_invalid_json(line: &[u8], err: &simd_json::Error) -> String {
    if matches!(err.error(), ErrorType::DepthLimitExceeded) {
        let depth = simd_json::DEFAULT_MAX_DEPTH;
        return format!("not valid JSON: nested deeper than {depth} arrays and objects");
    }
    match serde_json::from_slice::<serde::de::IgnoredAny>(line) {
        Err(reread) => {
            let message = reread.to_string();
            // One line: its "at line 1" would only confuse the file's line.
            let what = match message.rfind(" at line ") {
                Some(at) => &message[..at],
                None => &message,
            };
            format!("not valid JSON: {what} at byte {}", reread.column())
        }
        Ok(_) => format!("not valid JSON: {err}"),
    }
}

/// Replace each number that no 64-bit type holds (an integer beyond
/// i64/u64, a float beyond f64 such as `1e400`) by `[]` padded with
/// spaces, and say whether any was found.
///
/// simd-json refuses such a line outright, yet the number is often in a
/// field rgrade ignores (a 128-bit trace id). Blanked, the line parses; a
/// field rgrade does read then holds `[]`, which no reader accepts, so the
/// record is still rejected, under that field's own reason
/// (`bad_query_id`, `bad_field`, `bad_result`).
fn blank_out_of_range_numbers(line: &mut [u8]) -> bool {
    let mut blanked = false;
    let mut in_string = false;
    let mut i = 0;
    while i < line.len() {
        let byte = line[i];
        if in_string {
            match byte {
                b'\\' => i += 1,
                b'"' => in_string = false,
                _ => {}
            }
            i += 1;
        } else if byte == b'"' {
            in_string = true;
            i += 1;
        } else if byte == b'-' || byte.is_ascii_digit() {
            let start = i;
            while i < line.len()
                && matches!(line[i], b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')
            {
                i += 1;
            }
            let number = &mut line[start..i];
            if out_of_range(number) {
                number.fill(b' ');
                number[..2].copy_from_slice(b"[]");
                blanked = true;
            }
        } else {
            i += 1;
        }
    }
    blanked
}

/// Whether a JSON number's text is well formed yet held by no i64, u64 or
/// finite f64. Always at least two bytes long when true.
fn out_of_range(number: &[u8]) -> bool {
    if !is_json_number(number) {
        return false;
    }
    // A JSON number is ASCII, so this never fails.
    let text = std::str::from_utf8(number).unwrap_or_default();
    if text.parse::<i64>().is_ok() || text.parse::<u64>().is_ok() {
        return false;
    }
    let integer = !text.contains(['.', 'e', 'E']);
    integer || text.parse::<f64>().is_ok_and(f64::is_infinite)
}

/// JSON's number grammar: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
fn is_json_number(text: &[u8]) -> bool {
    fn digits(text: &[u8]) -> usize {
        text.iter().take_while(|b| b.is_ascii_digit()).count()
    }
    let mut rest = text.strip_prefix(b"-").unwrap_or(text);
    let whole = digits(rest);
    if whole == 0 || (whole > 1 && rest[0] == b'0') {
        return false;
    }
    rest = &rest[whole..];
    if let Some(after_point) = rest.strip_prefix(b".") {
        let fraction = digits(after_point);
        if fraction == 0 {
            return false;
        }
        rest = &after_point[fraction..];
    }
    if let Some(after_e) = rest.strip_prefix(b"e").or_else(|| rest.strip_prefix(b"E")) {
        let after_sign = after_e
            .strip_prefix(b"+")
            .or_else(|| after_e.strip_prefix(b"-"))
            .unwrap_or(after_e);
        let exponent = digits(after_sign);
        if exponent == 0 {
            return false;
        }
        rest = &after_sign[exponent..];
    }
    rest.is_empty()
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
}

/// One line of a run file: a TREC run's `query_id Q0 doc_id rank score
/// tag`, or an MS MARCO run's `query_id doc_id rank`.
#[derive(Debug, Clone, PartialEq)]
pub struct TrecLine<'a> {
    /// The query id.
    pub query_id: &'a str,
    /// The retrieved document.
    pub doc_id: &'a str,
    /// What ranks it (higher first).
    pub key: RankKey,
    /// The run tag; empty for an MS MARCO line, whose run is its file's.
    pub run: &'a str,
}

/// A run line that cannot be read, and what it names of the ranking it
/// belongs to: a line whose score or rank is unusable, or that is cut
/// short, still says which query (and, with six fields, which tag) lost a
/// result.
#[derive(Debug, Clone, PartialEq)]
pub struct BadRunLine<'a> {
    /// Why the line is rejected.
    pub invalid: Invalid,
    /// The query id, when the first field is text.
    pub query_id: Option<&'a str>,
    /// The run tag, when the line has one that is text (empty for an MS
    /// MARCO line, whose run is its file's).
    pub tag: Option<&'a str>,
}

impl<'a> BadRunLine<'a> {
    /// `invalid`, for a line of `format` whose fields are `fields`.
    fn new<F: Copy>(
        invalid: Invalid,
        format: LogsFormat,
        fields: &[F],
        text: impl Fn(F) -> Option<&'a str>,
    ) -> Self {
        let tag = match format {
            LogsFormat::Msmarco => Some(""),
            _ => fields.get(5).copied().and_then(&text),
        };
        BadRunLine {
            invalid,
            query_id: fields.first().copied().and_then(&text),
            tag,
        }
    }

    /// `invalid`, for the line `text` of `format`.
    fn of_text(invalid: Invalid, format: LogsFormat, text: &'a str) -> Self {
        let fields: Vec<&str> = text.split_ascii_whitespace().collect();
        Self::new(invalid, format, &fields, Some)
    }
}

impl<'a> TrecLine<'a> {
    /// Split a run line of `format` (TREC, else MS MARCO) on whitespace.
    ///
    /// # Errors
    /// `invalid_utf8` (naming the ranking when its query id and tag are
    /// text), or as [`TrecLine::parse_text`].
    pub fn parse(line: &'a [u8], format: LogsFormat) -> Result<Self, BadRunLine<'a>> {
        let Ok(text) = std::str::from_utf8(line) else {
            let invalid = Invalid::new(RejectReason::InvalidUtf8, "the line is not valid UTF-8");
            let fields: Vec<&[u8]> = (line.split(u8::is_ascii_whitespace))
                .filter(|field| !field.is_empty())
                .collect();
            return Err(BadRunLine::new(invalid, format, &fields, |field| {
                std::str::from_utf8(field).ok()
            }));
        };
        Self::parse_text(text, format)
    }

    /// [`TrecLine::parse`] for a line already known to be UTF-8.
    ///
    /// # Errors
    /// `bad_trec_line` (too few fields), `bad_score` (TREC) or `bad_rank`
    /// (MS MARCO), with what the line names of its ranking.
    pub fn parse_text(text: &'a str, format: LogsFormat) -> Result<Self, BadRunLine<'a>> {
        match format {
            LogsFormat::Msmarco => Self::msmarco(text),
            _ => Self::trec(text),
        }
    }

    /// `query_id Q0 doc_id rank score tag`: fields after the sixth are
    /// ignored and the rank column is not used, as trec_eval does.
    fn trec(text: &'a str) -> Result<Self, BadRunLine<'a>> {
        let bad = |invalid| BadRunLine::of_text(invalid, LogsFormat::Trec, text);
        let Some([query_id, _q0, doc_id, _rank, score, run]) = leading_fields(text) else {
            return Err(bad(Invalid::new(
                RejectReason::BadTrecLine,
                "expected 6 fields 'query_id Q0 doc_id rank score tag'",
            )));
        };
        let score = score
            .parse::<f64>()
            .ok()
            .filter(|s| s.is_finite())
            .ok_or_else(|| {
                bad(Invalid::new(
                    RejectReason::BadScore,
                    format!("score '{score}' is not a finite number"),
                ))
            })?;
        Ok(TrecLine {
            query_id,
            doc_id,
            key: RankKey::score(score),
            run,
        })
    }

    /// `query_id doc_id rank`: fields after the third are ignored, as in a
    /// TREC line.
    fn msmarco(text: &'a str) -> Result<Self, BadRunLine<'a>> {
        let bad = |invalid| BadRunLine::of_text(invalid, LogsFormat::Msmarco, text);
        let Some([query_id, doc_id, rank]) = leading_fields(text) else {
            return Err(bad(Invalid::new(
                RejectReason::BadTrecLine,
                "expected 3 fields 'query_id doc_id rank' (an MS MARCO run)",
            )));
        };
        let rank = rank
            .parse::<u32>()
            .ok()
            .filter(|&r| r >= 1)
            .ok_or_else(|| {
                bad(Invalid::new(
                    RejectReason::BadRank,
                    format!("rank '{rank}' is not a whole number of at least 1"),
                ))
            })?;
        Ok(TrecLine {
            query_id,
            doc_id,
            key: RankKey::rank(rank),
            run: "",
        })
    }
}

/// The first `N` fields of `text` split on ASCII whitespace, as
/// `split_ascii_whitespace` gives them; `None` if it has fewer. A run
/// line's fields are short, and a run holds millions of lines: each field
/// end is looked for eight bytes at a time, among the bytes up to a space.
fn leading_fields<const N: usize>(text: &str) -> Option<[&str; N]> {
    let bytes = text.as_bytes();
    let mut fields = [""; N];
    let mut at = 0;
    for field in &mut fields {
        while at < bytes.len() && bytes[at].is_ascii_whitespace() {
            at += 1;
        }
        if at == bytes.len() {
            return None;
        }
        let start = at;
        at = field_end(bytes, at + 1);
        // Whitespace is ASCII, so both ends are on character boundaries.
        *field = text.get(start..at)?;
    }
    Some(fields)
}

/// The place of the first ASCII whitespace byte at or after `from`, or the
/// end of `bytes`.
fn field_end(bytes: &[u8], mut from: usize) -> usize {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
    while let Some(word) = bytes.get(from..from + 8) {
        let word = u64::from_le_bytes(word.try_into().unwrap_or_default());
        // The lowest set high bit marks the first byte below 0x21 (bits
        // above it may be set by the borrow, and are not read).
        let low = word.wrapping_sub(0x21 * ONES) & !word & HIGH;
        if low == 0 {
            from += 8;
            continue;
        }
        let first = from + (low.trailing_zeros() / 8) as usize;
        if bytes[first].is_ascii_whitespace() {
            return first;
        }
        // A control byte inside a field: look on past it.
        from = first + 1;
    }
    bytes[from.min(bytes.len())..]
        .iter()
        .position(u8::is_ascii_whitespace)
        .map_or(bytes.len(), |offset| from + offset)
}

/// Whether a line holds nothing but whitespace (skipped, and counted).
pub fn is_blank(line: &[u8]) -> bool {
    line.iter().all(u8::is_ascii_whitespace)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// An event with everything owned, to compare in tests.
    #[derive(Debug, PartialEq)]
    struct Owned {
        query_id: String,
        stage: String,
        run: String,
        latency_ms: Option<f64>,
        docs: Vec<String>,
    }

    fn parse_event(line: &str, fields: &LogFields) -> Result<Owned, Invalid> {
        let mut parser = JsonParser::default();
        parser.parse(line.as_bytes(), |root| {
            let key = EventKey::from_value(root, fields)?;
            let event = Event::from_value(root, fields)?;
            let docs = event
                .doc_ids(fields)
                .map(|d| d.map(|d| d.into_owned()))
                .collect::<Result<_, _>>()?;
            Ok(Owned {
                query_id: key.query_id.into_owned(),
                stage: key.stage.to_string(),
                run: key.run.to_string(),
                latency_ms: event.latency_ms,
                docs,
            })
        })?
    }

    #[test]
    fn spec_example_record() {
        let line = r#"{"query_id": "q_sharing", "stage": "final", "run": "bm25-v3", "results": [{"doc_id": "profile", "score": 3.1}, {"id": "share_roles"}, "billing", 42], "latency_ms": 41, "context_tokens": 1830}"#;
        let want = Owned {
            query_id: "q_sharing".into(),
            stage: "final".into(),
            run: "bm25-v3".into(),
            latency_ms: Some(41.0),
            docs: ["profile", "share_roles", "billing", "42"]
                .map(String::from)
                .to_vec(),
        };
        assert_eq!(parse_event(line, &LogFields::default()).unwrap(), want);
    }

    #[test]
    fn defaults_escapes_and_pointers() {
        let line = r#"{"request": {"qid": 17, "hits": ["a\"b", "c\u00e9"]}}"#;
        let fields = LogFields {
            query: FieldPath::parse("/request/qid"),
            results: FieldPath::parse("/request/hits"),
            ..LogFields::default()
        };
        let want = Owned {
            query_id: "17".into(),
            stage: "final".into(),
            run: String::new(),
            latency_ms: None,
            docs: vec!["a\"b".into(), "cé".into()],
        };
        assert_eq!(parse_event(line, &fields).unwrap(), want);
        assert_eq!(FieldPath::parse("/a~1b/c~0d").segments, ["a/b", "c~d"]);
        let nested =
            r#"{"query_id": "q", "results": [{"meta": {"id": "x"}}, {"meta": {"id": 7}}]}"#;
        let fields = LogFields {
            doc: Some(FieldPath::parse("/meta/id")),
            ..LogFields::default()
        };
        assert_eq!(parse_event(nested, &fields).unwrap().docs, ["x", "7"]);
    }

    #[test]
    fn numbers_beyond_64_bits() {
        let fields = LogFields::default();
        let reason = |line: &str| parse_event(line, &fields).map_err(|e| e.reason);
        // Ignored fields: the record is graded.
        for ignored in [
            "123456789012345678901234567890",
            "-99999999999999999999",
            "1e400",
            "-1E+400",
            "[1e400, {\"deep\": 18446744073709551616}]",
        ] {
            let line = format!(r#"{{"trace_id": {ignored}, "query_id": "q", "results": ["a"]}}"#);
            assert_eq!(reason(&line).unwrap().docs, ["a"], "{line}");
        }
        // Fields rgrade reads: rejected under the field's own reason.
        let cases = [
            (
                r#"{"query_id": 123456789012345678901234567890, "results": []}"#,
                RejectReason::BadQueryId,
            ),
            (
                r#"{"query_id": "q", "latency_ms": 1e400, "results": []}"#,
                RejectReason::BadField,
            ),
            (
                r#"{"query_id": "q", "results": [18446744073709551616]}"#,
                RejectReason::BadResult,
            ),
            // Not JSON numbers at all: still invalid JSON.
            (
                r#"{"query_id": "q", "x": 01e400, "results": []}"#,
                RejectReason::InvalidJson,
            ),
            (
                r#"{"query_id": "q", "x": 1.e400, "results": []}"#,
                RejectReason::InvalidJson,
            ),
        ];
        for (line, want) in cases {
            assert_eq!(reason(line).unwrap_err(), want, "{line}");
        }
        // Digits inside strings are text, even after an escaped quote.
        let quoted = r#"{"query_id": "q", "note": "\" 1e400", "results": ["a"]}"#;
        assert_eq!(reason(quoted).unwrap().docs, ["a"]);
        // In range: untouched, and an integer id keeps its digits.
        let max = r#"{"query_id": 18446744073709551615, "x": 1e308, "results": []}"#;
        assert_eq!(reason(max).unwrap().query_id, "18446744073709551615");
    }

    /// The detail of an `invalid_json` reject says what is wrong where,
    /// not where simd-json's first pass gave up.
    #[test]
    fn invalid_json_names_what_and_where() {
        let cases = [
            (
                r#"{"query_id":"b","results":["x""#,
                "EOF while parsing a list at byte 30",
            ),
            (
                r#"{"query_id": "q", "results": []}   garbage"#,
                "trailing characters at byte 36",
            ),
            (
                r#"{"query_id": "q" "results": []}"#,
                "expected `,` or `}` at byte 18",
            ),
        ];
        let mut parser = JsonParser::default();
        for (line, want) in cases {
            let err = parser.parse(line.as_bytes(), |_| ()).unwrap_err();
            assert_eq!(err.reason, RejectReason::InvalidJson, "{line}");
            assert_eq!(err.detail, format!("not valid JSON: {want}"), "{line}");
        }
        let nested = format!("{}{}", "[".repeat(1100), "]".repeat(1100));
        let deep = format!(r#"{{"query_id": "q", "x": {nested}, "results": []}}"#);
        let err = parser.parse(deep.as_bytes(), |_| ()).unwrap_err();
        assert_eq!(err.reason, RejectReason::InvalidJson);
        assert!(
            err.detail.contains("nested deeper than 1024"),
            "{}",
            err.detail
        );
    }

    #[test]
    fn every_reject_reason_has_a_distinct_code() {
        let cases: [(&[u8], RejectReason); 9] = [
            (
                b"{\"query_id\": \"q\", \"results\": [\xff]}",
                RejectReason::InvalidUtf8,
            ),
            (
                b"{\"query_id\": \"q\", \"results\": [",
                RejectReason::InvalidJson,
            ),
            (b"[1, 2]", RejectReason::NotAnObject),
            (b"{\"results\": []}", RejectReason::MissingQueryId),
            (
                b"{\"query_id\": [1], \"results\": []}",
                RejectReason::BadQueryId,
            ),
            (b"{\"query_id\": \"q\"}", RejectReason::MissingResults),
            (
                b"{\"query_id\": \"q\", \"results\": \"a\"}",
                RejectReason::BadResults,
            ),
            (
                b"{\"query_id\": \"q\", \"results\": [{\"score\": 1}]}",
                RejectReason::BadResult,
            ),
            (
                b"{\"query_id\": \"q\", \"results\": [], \"latency_ms\": \"fast\"}",
                RejectReason::BadField,
            ),
        ];
        let fields = LogFields::default();
        let mut parser = JsonParser::default();
        for (line, want) in cases {
            let got = parser
                .parse(line, |root| {
                    EventKey::from_value(root, &fields)?;
                    let event = Event::from_value(root, &fields)?;
                    let docs = event.doc_ids(&fields).try_for_each(|d| d.map(drop));
                    docs
                })
                .and_then(|r| r);
            assert_eq!(
                got.map_err(|e| e.reason),
                Err(want),
                "{}",
                String::from_utf8_lossy(line)
            );
        }
    }

    #[test]
    fn trec_lines() {
        let line =
            TrecLine::parse(b"q1\tQ0  msmarco#12 1 -3.5e1 run-a extra", LogsFormat::Trec).unwrap();
        assert_eq!(
            line,
            TrecLine {
                query_id: "q1",
                doc_id: "msmarco#12",
                key: RankKey::score(-35.0),
                run: "run-a"
            }
        );
        let bad = |line: &'static [u8], format| TrecLine::parse(line, format).unwrap_err();
        fn named<'a>(bad: &BadRunLine<'a>) -> (Option<&'a str>, Option<&'a str>) {
            (bad.query_id, bad.tag)
        }
        let short = bad(b"q1 Q0 d 1 2", LogsFormat::Trec);
        assert_eq!(short.invalid.reason, RejectReason::BadTrecLine);
        assert_eq!(
            named(&short),
            (Some("q1"), None),
            "no tag: its run is unknown"
        );
        for line in [
            &b"q1 Q0 d 1 nan r"[..],
            b"q1 Q0 d 1 x r",
            b"q1 Q0 d 1 -inf r",
        ] {
            let lost = bad(line, LogsFormat::Trec);
            assert_eq!(lost.invalid.reason, RejectReason::BadScore);
            assert_eq!(
                named(&lost),
                (Some("q1"), Some("r")),
                "its ranking lost a line"
            );
        }
        let garbled = bad(b"q1 Q0 caf\xe9 1 9.0 r", LogsFormat::Trec);
        assert_eq!(garbled.invalid.reason, RejectReason::InvalidUtf8);
        assert_eq!(named(&garbled), (Some("q1"), Some("r")));
        assert_eq!(
            named(&bad(b"q\xff Q0 d 1 9.0 r", LogsFormat::Trec)),
            (None, Some("r"))
        );
        let msmarco = TrecLine::parse(b"1048585\t7187158\t3", LogsFormat::Msmarco).unwrap();
        assert_eq!((msmarco.query_id, msmarco.doc_id), ("1048585", "7187158"));
        assert_eq!(msmarco.key, RankKey::rank(3));
        assert_eq!(
            named(&bad(b"q1\td1", LogsFormat::Msmarco)),
            (Some("q1"), Some(""))
        );
        for line in [
            &b"q1 d1 0"[..],
            b"q1 d1 1.5",
            b"q1 d1 -2",
            b"q1 d1 4294967296",
        ] {
            let lost = bad(line, LogsFormat::Msmarco);
            assert_eq!(lost.invalid.reason, RejectReason::BadRank);
            assert_eq!(named(&lost), (Some("q1"), Some("")));
        }
    }

    /// Keys order as trec_eval compares scores (as 32-bit floats, -0 equal
    /// to 0) and MS MARCO ranks (1 first).
    #[test]
    fn rank_keys_order_as_scores_and_ranks() {
        let scores = [
            -1e39,
            -3.5,
            -1e-40,
            0.0,
            1e-40,
            0.06016738602340007,
            2.0,
            1e39,
        ];
        for pair in scores.windows(2) {
            assert!(
                RankKey::score(pair[0]) < RankKey::score(pair[1]),
                "{pair:?}"
            );
        }
        assert_eq!(RankKey::score(-0.0), RankKey::score(0.0));
        assert_eq!(
            RankKey::score(0.06016738602340008),
            RankKey::score(0.06016738602340007)
        );
        assert!(RankKey::rank(1) > RankKey::rank(2));
        assert!(RankKey::rank(u32::MAX) < RankKey::rank(u32::MAX - 1));
    }

    /// Any text, made of the bytes that matter to a field split: every
    /// ASCII whitespace byte, other control bytes, `!` (just above the
    /// space), letters and a character of two bytes.
    fn field_text() -> impl Strategy<Value = String> {
        let piece = prop::sample::select(vec![
            " ", "\t", "\n", "\r", "\x0c", "\x0b", "\x01", "\x1f", "!", "a", "Q0", "\u{e9}", "#",
        ]);
        prop::collection::vec(piece, 0..60).prop_map(|pieces| pieces.concat())
    }

    proptest! {
        /// The word-at-a-time split finds the fields std's split finds.
        #[test]
        fn leading_fields_split_as_std_does(text in field_text()) {
            let std: Vec<&str> = text.split_ascii_whitespace().collect();
            let want3 = (std.len() >= 3).then(|| [std[0], std[1], std[2]]);
            prop_assert_eq!(leading_fields::<3>(&text), want3);
            let want6 = (std.len() >= 6).then(|| [std[0], std[1], std[2], std[3], std[4], std[5]]);
            prop_assert_eq!(leading_fields::<6>(&text), want6);
        }
    }
}
