//! JSONL search events: one line, one ranking. Fields are found by key or
//! JSON pointer, as the user mapped them (docs/reference.md, "Logs").

use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Serialize};
use simd_json::prelude::*;
use simd_json::tape::{Array, Value};

use crate::io::json::{id_text, json_whole, with_embedded, JsonParser};
use crate::logs::partition::partition_value;
use crate::logs::record::Nanos;
use crate::logs::record::{
    measure, not_a_slice, permuted, ranked_order, EventKey, Invalid, LineFormat, Origin, Pending,
    Permissions, RankKey, Ranking, Record, RecordSink, RejectReason, ResultKeys, DEFAULT_STAGE,
};
use crate::logs::seen::{FieldFlag, FieldsSeen};
use crate::logs::time;

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

    /// The JSON pointer through `segments`.
    pub fn from_segments(segments: &[String]) -> Self {
        let escaped: Vec<String> = (segments.iter())
            .map(|s| s.replace('~', "~0").replace('/', "~1"))
            .collect();
        FieldPath {
            segments: segments.to_vec(),
            text: format!("/{}", escaped.join("/")),
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
    time: Option<FieldPath>,
    slices: Vec<FieldPath>,
    rank: FieldPath,
    score: FieldPath,
    /// The fields the user named, each with its flag: checked against
    /// the records until some record has it.
    given: Vec<(FieldFlag, FieldPath)>,
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
            time: names.time.as_deref().map(FieldPath::parse),
            slices: names
                .slices
                .iter()
                .map(|field| FieldPath::parse(field))
                .collect(),
            rank: path(&names.rank, FieldNames::RANK),
            score: FieldPath::parse(FieldNames::SCORE),
            given: (names.given().into_iter())
                .map(|(flag, name)| (flag, FieldPath::parse(name)))
                .collect(),
        }
    }

    /// Tell `seen` which of the fields the user named the record `root`
    /// (with the fields of its Hive `partition`) has (inside a result, for
    /// a field of results), and which fields the record and its first
    /// result object have.
    fn see(&self, root: Value<'_, '_>, partition: &[(String, String)], seen: &mut FieldsSeen) {
        let Some(record) = root.as_object() else {
            return;
        };
        // Every record's fields while a field named is unmatched, for the
        // message that would refuse it; else the first record's.
        let sample = !seen.sampled() || self.given.iter().any(|&(flag, _)| !seen.matched(flag));
        if sample {
            for key in (record.iter().map(|(key, _)| key))
                .chain(partition.iter().map(|(key, _)| key.as_str()))
            {
                seen.note(key);
            }
        }
        for (flag, path) in &self.given {
            let had = || {
                path.find(root).is_some() || partition_value(partition, path.segments()).is_some()
            };
            if !flag.in_results() && !seen.matched(*flag) && had() {
                seen.mark(*flag);
            }
        }
        let wanted = |flag: FieldFlag, seen: &FieldsSeen| flag.in_results() && !seen.matched(flag);
        if !sample && !self.given.iter().any(|&(flag, _)| wanted(flag, seen)) {
            return;
        }
        let in_results = |results: Array<'_, '_>, seen: &mut FieldsSeen| {
            let objects = results.iter().filter(|result| result.is_object());
            for (i, result) in objects.enumerate() {
                if sample && i == 0 {
                    for (key, _) in result.as_object().iter().flat_map(|o| o.iter()) {
                        seen.note_result(key);
                    }
                }
                for (flag, path) in &self.given {
                    if wanted(*flag, seen) && path.find(result).is_some() {
                        seen.mark(*flag);
                    }
                }
            }
        };
        let Some(results) = self.results.find(root) else {
            return;
        };
        match (results.as_array(), results.into_string()) {
            (Some(array), _) => in_results(array, seen),
            (None, Some(text)) => {
                with_embedded(text, |embedded| {
                    if let Some(array) = embedded.as_array() {
                        in_results(array, seen);
                    }
                });
            }
            (None, None) => {}
        }
    }

    /// The names of a result's rank and score, for messages.
    pub fn rank_names(&self) -> [&str; 2] {
        [&self.rank.text, &self.score.text]
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
/// constants below; spans read theirs from attributes (docs/reference.md,
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
    /// The rank of a result: inside each result of a list (which is then
    /// ranked by it), or a column of a Parquet log of one row per result.
    pub rank: Option<String>,
    /// When each capture was made, which orders its repeats; none
    /// unless named, but a span's start time.
    pub time: Option<String>,
    /// The fields to slice by (the grading's `slice_by`, which sets them):
    /// here so that every format reads them where it reads the others.
    #[serde(skip)]
    pub slices: Vec<String>,
}

impl FieldNames {
    /// The fields the user named, each with its flag.
    pub fn given(&self) -> Vec<(FieldFlag, &str)> {
        let named = |flag: FieldFlag| match flag {
            FieldFlag::Query => &self.query,
            FieldFlag::Results => &self.results,
            FieldFlag::Doc => &self.doc,
            FieldFlag::Stage => &self.stage,
            FieldFlag::Run => &self.run,
            FieldFlag::Latency => &self.latency,
            FieldFlag::Context => &self.context,
            FieldFlag::Outcome => &self.outcome,
            FieldFlag::Allowed => &self.allowed,
            FieldFlag::Collection => &self.collection,
            FieldFlag::Rank => &self.rank,
            FieldFlag::Time => &self.time,
            FieldFlag::Slice(_) => &None,
        };
        let slices = (self.slices.iter().enumerate())
            .map(|(i, field)| (FieldFlag::Slice(i), field.as_str()));
        (FieldFlag::ALL.into_iter())
            .filter_map(|flag| Some((flag, named(flag).as_deref()?)))
            .chain(slices)
            .collect()
    }

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
    /// The query id column of a table of one row per result that has no
    /// `query_id` column: ranx names it so.
    pub const QUERY_ALIAS: &'static str = "q_id";
    /// Where a result (or a Parquet row of one result) keeps its rank
    /// unless the user says otherwise.
    pub const RANK: &'static str = "rank";
    /// Where a result keeps its score, and the score column of a Parquet
    /// log of one row per result: results that carry scores and no ranks
    /// are ranked by them, as a run's are.
    pub const SCORE: &'static str = "score";
}

impl<'i> EventKey<'i> {
    /// Read the key out of a parsed line. It is read before the rest, so
    /// that a record rejected for its results still counts as a capture of
    /// its query.
    ///
    /// A stage or run field that names a key of the record's Hive
    /// `partition` is the partition's value, as Spark and pyarrow read a
    /// partition column, whatever the record holds under that key.
    ///
    /// # Errors
    /// `not_an_object`, `missing_query_id`, `bad_query_id`, or `bad_field`
    /// for a stage or run that is not a string.
    pub fn from_value(
        root: Value<'_, 'i>,
        fields: &LogFields,
        partition: &'i [(String, String)],
    ) -> Result<Self, Invalid> {
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
        let text = |path: &FieldPath| match partition_value(partition, path.segments()) {
            Some(value) => Ok(Some(value)),
            None => optional_str(root, path),
        };
        Ok(EventKey {
            query_id,
            stage: text(&fields.stage)?.unwrap_or(DEFAULT_STAGE),
            run: text(&fields.run)?.unwrap_or(""),
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
    /// When it was captured, with a time field.
    pub time: Option<Nanos>,
    /// The value of each field sliced by, as text; `None` where absent.
    pub slices: Vec<Option<Cow<'i, str>>>,
    /// The ranking; `None` for a null one, which found nothing, and for
    /// one held as JSON text.
    results: Option<Array<'t, 'i>>,
    /// A ranking held as JSON text (Langfuse keeps a retriever's output
    /// so), read out of the text: each result's doc id and collection.
    from_text: Vec<TextResult>,
}

/// A result of a ranking held as JSON text: its doc id, if it has one,
/// and its collection (`Err` when that is not a string).
struct TextResult {
    doc: Option<String>,
    collection: Result<Option<String>, ()>,
    keys: Result<ResultKeys, Invalid>,
}

impl<'t, 'i> Event<'t, 'i> {
    /// Read the ranking and measurements out of a parsed line.
    ///
    /// # Errors
    /// `missing_results`, `bad_results`, or `bad_field` for a latency or
    /// context size that is not a number, or an outcome not a boolean. Null results are an empty
    /// ranking: OpenSearch UBI, for one, records a search that found
    /// nothing that way. Results may be a string holding a JSON array.
    pub fn from_value(
        root: Value<'t, 'i>,
        fields: &LogFields,
        partition: &'i [(String, String)],
    ) -> Result<Self, Invalid> {
        let bad_results = |what: &str| {
            Invalid::new(
                RejectReason::BadResults,
                format!("'{}' {what}", fields.results),
            )
        };
        let mut from_text = Vec::new();
        let results = match fields.results.find(root) {
            None => {
                return Err(Invalid::new(
                    RejectReason::MissingResults,
                    format!("no '{}' field", fields.results),
                ))
            }
            Some(v) if v.is_null() => None,
            Some(v) => match (v.as_array(), v.into_string()) {
                (Some(array), _) => Some(array),
                (None, Some(text)) => {
                    from_text = with_embedded(text, |root| {
                        let results = root.as_array()?;
                        let read = results.iter().enumerate().map(|(i, result)| TextResult {
                            doc: doc_id(result, fields.doc.as_ref()).map(Cow::into_owned),
                            collection: collection(result, fields).map(|c| c.map(str::to_string)),
                            keys: result_keys(result, fields, i + 1),
                        });
                        Some(read.collect())
                    })
                    .flatten()
                    .ok_or_else(|| bad_results("is a string that holds no JSON array"))?;
                    None
                }
                (None, None) => return Err(bad_results("must be an array or null")),
            },
        };
        Ok(Event {
            latency_ms: optional_measure(root, &fields.latency)?,
            context_tokens: optional_measure(root, &fields.context)?,
            answer_ok: optional_bool(root, &fields.outcome)?,
            allowed: optional_names(root, &fields.allowed)?,
            time: (fields.time.as_ref())
                .map(|path| match partition_value(partition, path.segments()) {
                    Some(value) => time::from_text(value)
                        .ok_or_else(|| time::unreadable(&path.to_string(), &format!("{value:?}"))),
                    None => time(root, path),
                })
                .transpose()?,
            slices: (fields.slices.iter())
                .map(|path| match partition_value(partition, path.segments()) {
                    Some(value) => Ok(Some(Cow::Borrowed(value))),
                    None => slice_value(root, path),
                })
                .collect::<Result<_, _>>()?,
            results,
            from_text,
        })
    }

    /// Each result's collection, if it names one.
    ///
    /// # Errors
    /// `bad_field` for a collection that is not a string.
    pub fn collections<'e>(
        &'e self,
        fields: &'e LogFields,
    ) -> impl Iterator<Item = Result<Option<Cow<'i, str>>, Invalid>> + 'e {
        let listed = (self.results.iter().flat_map(Array::iter))
            .map(move |result| collection(result, fields).map(|c| c.map(Cow::Borrowed)));
        let from_text = (self.from_text.iter())
            .map(|result| (result.collection.clone()).map(|c| c.map(Cow::Owned)));
        listed
            .chain(from_text)
            .enumerate()
            .map(move |(i, collection)| {
                collection.map_err(|()| {
                    Invalid::new(
                        RejectReason::BadField,
                        format!("result {}: '{}' must be a string", i + 1, fields.collection),
                    )
                })
            })
    }

    /// The doc ids in ranking order.
    pub fn doc_ids<'e>(
        &'e self,
        fields: &'e LogFields,
    ) -> impl Iterator<Item = Result<Cow<'i, str>, Invalid>> + 'e {
        let listed = (self.results.iter().flat_map(Array::iter))
            .map(move |result| doc_id(result, fields.doc.as_ref()));
        let from_text = (self.from_text.iter()).map(|result| result.doc.clone().map(Cow::Owned));
        (listed.chain(from_text).enumerate())
            .map(move |(i, id)| id.ok_or_else(|| no_doc_id(i + 1, "", fields.doc.as_ref())))
    }

    /// What ranks each result, in list order.
    ///
    /// # Errors
    /// As [`result_keys`].
    pub fn result_keys<'e>(
        &'e self,
        fields: &'e LogFields,
    ) -> impl Iterator<Item = Result<ResultKeys, Invalid>> + 'e {
        let listed = (self.results.iter().flat_map(Array::iter).enumerate())
            .map(move |(i, result)| result_keys(result, fields, i + 1));
        listed.chain(self.from_text.iter().map(|result| result.keys.clone()))
    }

    /// The ranking, measurements and permissions of the event: the
    /// results in the order their ranks or scores give ([`ranked_order`]),
    /// else in list order.
    ///
    /// # Errors
    /// A result without a doc id, whose collection is not a string, or
    /// whose rank or score cannot rank it.
    pub fn ranking(mut self, fields: &LogFields) -> Result<Ranking<'i>, Invalid> {
        let mut docs: Vec<Cow<'i, str>> = self.doc_ids(fields).collect::<Result<_, _>>()?;
        let keys: Vec<ResultKeys> = self.result_keys(fields).collect::<Result<_, _>>()?;
        let order = ranked_order(&keys, &docs, fields.rank_names())?;
        let mut permissions = match self.allowed.take() {
            Some(allowed) => Some(Permissions {
                collections: self.collections(fields).collect::<Result<_, _>>()?,
                allowed,
            }),
            None => None,
        };
        if let Some(order) = order {
            docs = permuted(&mut docs, &order);
            if let Some(permissions) = &mut permissions {
                permissions.collections = permuted(&mut permissions.collections, &order);
            }
        }
        Ok(Ranking {
            docs,
            latency_ms: self.latency_ms,
            context_tokens: self.context_tokens,
            answer_ok: self.answer_ok,
            permissions,
            time: self.time,
            slices: self.slices,
        })
    }
}

/// A result's collection: `None` when it names none (or is no object),
/// `Err` when it names one that is not a string.
fn collection<'i>(result: Value<'_, 'i>, fields: &LogFields) -> Result<Option<&'i str>, ()> {
    if !result.is_object() {
        return Ok(None);
    }
    match fields.collection.find(result) {
        None => Ok(None),
        Some(v) if v.is_null() => Ok(None),
        Some(v) => v.into_string().map(Some).ok_or(()),
    }
}

/// What ranks result `position` (from 1) of a list: the rank and the
/// score `fields` names inside it, where it is an object that has them
/// (null is none).
///
/// # Errors
/// `bad_rank` for a rank that is no whole number of at least 1,
/// `bad_score` for a score that is no finite number.
pub fn result_keys(
    result: Value<'_, '_>,
    fields: &LogFields,
    position: usize,
) -> Result<ResultKeys, Invalid> {
    if !result.is_object() {
        return Ok(ResultKeys::default());
    }
    let present = |path: &FieldPath| path.find(result).filter(|v| !v.is_null());
    let rank = match present(&fields.rank) {
        None => None,
        Some(value) => {
            let what = format!("result {position}: '{}'", fields.rank);
            Some(
                RankKey::whole_rank(json_whole(value), &what)
                    .map_err(|detail| Invalid::new(RejectReason::BadRank, detail))?,
            )
        }
    };
    let score = match present(&fields.score) {
        None => None,
        Some(value) => match value.cast_f64().filter(|s| s.is_finite()) {
            Some(score) => Some(RankKey::score(score)),
            None => {
                let detail = format!(
                    "result {position}: '{}' is not a finite number",
                    fields.score
                );
                return Err(Invalid::new(RejectReason::BadScore, detail));
            }
        },
    };
    Ok(ResultKeys { rank, score })
}

/// The reject of result `position` (from 1) of the ranking `within`
/// (empty when the record holds one), which is neither a doc id nor an
/// object with one at `field` (else `doc_id` or `id`).
pub fn no_doc_id(position: usize, within: &str, field: Option<&FieldPath>) -> Invalid {
    let wanted = field.map_or("doc_id or id".to_string(), |d| format!("'{d}'"));
    let within = if within.is_empty() {
        String::new()
    } else {
        format!(" in '{within}'")
    };
    let detail =
        format!("result {position}{within} is neither a doc id nor an object with {wanted}");
    Invalid::new(RejectReason::BadResult, detail)
}

/// A result's doc id: the result itself, or a field of a result object
/// (`doc_id`, else `id`, unless the user named one).
pub fn doc_id<'i>(result: Value<'_, 'i>, field: Option<&FieldPath>) -> Option<Cow<'i, str>> {
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

/// The capture time at `path`, which every record must have.
///
/// # Errors
/// `bad_time` when it is missing, null or no time.
fn time(root: Value<'_, '_>, path: &FieldPath) -> Result<Nanos, Invalid> {
    let value = path.find(root).filter(|v| !v.is_null());
    let value = value.ok_or_else(|| time::missing(&path.to_string()))?;
    let read = match value.into_string() {
        Some(text) => time::from_text(text),
        None => match value.as_i64().map(i128::from) {
            Some(count) => Some(time::from_integer(count)),
            None => (value.as_u64().map(|n| time::from_integer(n.into())))
                .or_else(|| value.cast_f64().and_then(time::from_number)),
        },
    };
    read.ok_or_else(|| time::unreadable(&path.to_string(), &value.encode()))
}

/// A field sliced by, as text: a string as it is, a number or a boolean
/// as its JSON text; `None` when absent or null.
///
/// # Errors
/// `bad_field` for an object or an array, which names no one slice.
fn slice_value<'i>(root: Value<'_, 'i>, path: &FieldPath) -> Result<Option<Cow<'i, str>>, Invalid> {
    let Some(value) = path.find(root).filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    let text = (value.as_bool().map(|b| Cow::Owned(b.to_string())))
        .or_else(|| id_text(value))
        .or_else(|| value.as_f64().map(|n| Cow::Owned(n.to_string())));
    text.map(Some).ok_or_else(|| not_a_slice(&path.to_string()))
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

/// The lines of a JSONL log: each one search event.
pub struct JsonlLines<'c> {
    parser: &'c mut JsonParser,
    fields: &'c LogFields,
    partition: &'c [(String, String)],
}

impl<'c> JsonlLines<'c> {
    /// The lines of a JSONL log, parsed by `parser`, whose records keep
    /// their fields where `fields` says, or in the log's Hive `partition`.
    pub fn new(
        parser: &'c mut JsonParser,
        fields: &'c LogFields,
        partition: &'c [(String, String)],
    ) -> Self {
        JsonlLines {
            parser,
            fields,
            partition,
        }
    }
}

impl LineFormat for JsonlLines<'_> {
    const AS_TEXT: bool = false;

    /// The event's key is read with the line, its ranking only if asked.
    fn line(&mut self, line: &[u8], _: Option<&str>, origin: Origin, sink: &mut dyn RecordSink) {
        let (fields, partition) = (self.fields, self.partition);
        let taken = self.parser.parse(line, |root| {
            fields.see(root, partition, sink.seen());
            let record = match EventKey::from_value(root, fields, partition) {
                Ok(key) => Record::Event {
                    key,
                    span: None,
                    ranking: Pending::Later(&mut || {
                        Event::from_value(root, fields, partition)?.ranking(fields)
                    }),
                },
                Err(invalid) => Record::Invalid(invalid),
            };
            sink.take(origin, record)
        });
        let taken = taken.unwrap_or_else(|bad| sink.take(origin, Record::Invalid(bad.into())));
        if let Err(invalid) = taken {
            sink.reject(origin, invalid, line);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::json::JsonParser;

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
            let key = EventKey::from_value(root, fields, &[])?;
            let event = Event::from_value(root, fields, &[])?;
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
    fn results_held_as_json_text_read_as_an_array() {
        let fields = LogFields::new(&FieldNames {
            results: Some("output".to_string()),
            ..FieldNames::default()
        });
        let line = r#"{"query_id": "q1", "output": "[{\"id\": \"a\"}, \"b\", {\"doc_id\": 7}]"}"#;
        assert_eq!(parse_event(line, &fields).unwrap().docs, ["a", "b", "7"]);
        for bad in [r#""not json""#, r#""{\"id\": \"a\"}""#, "3"] {
            let line = format!(r#"{{"query_id": "q1", "output": {bad}}}"#);
            let err = parse_event(&line, &fields).unwrap_err();
            assert_eq!(err.reason, RejectReason::BadResults, "{bad}");
        }
        let no_id = r#"{"query_id": "q1", "output": "[{\"title\": \"x\"}]"}"#;
        let err = parse_event(no_id, &fields).unwrap_err();
        assert_eq!(err.reason, RejectReason::BadResult);
        // Collections inside the text are read as in an array of the line.
        let mut parser = JsonParser::default();
        let line = r#"{"query_id": "q1", "output": "[{\"id\": \"a\", \"collection\": \"hr\"}, {\"id\": \"b\", \"collection\": 5}]"}"#;
        let collections = parser
            .parse(line.as_bytes(), |root| {
                let event = Event::from_value(root, &fields, &[]).unwrap();
                let read: Vec<Result<Option<String>, RejectReason>> = event
                    .collections(&fields)
                    .map(|c| c.map(|c| c.map(Cow::into_owned)).map_err(|e| e.reason))
                    .collect();
                read
            })
            .unwrap();
        assert_eq!(
            collections,
            [Ok(Some("hr".to_string())), Err(RejectReason::BadField)]
        );
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
                    EventKey::from_value(root, &fields, &[])?;
                    let event = Event::from_value(root, &fields, &[])?;
                    let docs = event.doc_ids(&fields).try_for_each(|d| d.map(drop));
                    docs
                })
                .map_err(Invalid::from)
                .and_then(|r| r);
            assert_eq!(
                got.map_err(|e| e.reason),
                Err(want),
                "{}",
                String::from_utf8_lossy(line)
            );
        }
    }
}
