//! Stage 2, parse, for traces: an OTLP/JSON line (one
//! ExportTraceServiceRequest, as the OpenTelemetry file exporter writes
//! it) holds many spans; the retrieval and rerank spans among them are
//! captures (docs/reference.md, "Traces").
//!
//! - OpenInference (Arize Phoenix and its instrumentations): a RETRIEVER
//!   span ranks `retrieval.documents.{i}.document.id`, a RERANKER span
//!   `reranker.output_documents.{i}.document.id`, in `i` order.
//! - OpenTelemetry GenAI: a span whose `gen_ai.operation.name` is
//!   `retrieval` ranks the `id` of each of its `gen_ai.retrieval.documents`
//!   (structured, or a JSON string holding them).
//!
//! Every other span is counted, never rejected. [`documents`] reads a
//! capture span's documents.

mod documents;

use std::borrow::Cow;

use simd_json::prelude::*;
use simd_json::tape::Value;

use crate::base::failure::Setting;
use crate::base::options::{JoinBy, SpanKind};
use crate::io::json::{id_text, with_embedded, JsonParser};
use crate::logs::jsonl::{FieldNames, FieldPath};
use crate::logs::partition::partition_value;
use crate::logs::record::{
    deliver, not_a_slice, EventKey, Invalid, LineFormat, Origin, Pending, Ranking, Record,
    RecordSink, RejectReason, SpanIds,
};
use crate::logs::seen::{FieldFlag, FieldsSeen};
use crate::logs::time;

/// Where spans keep what a capture needs, as the user mapped it.
#[derive(Debug, Clone)]
pub struct SpanFields {
    /// The stage of each kind's captures, by [`SpanKind`] order.
    stages: [String; 3],
    /// The attribute naming the query (its id, or its text when joined
    /// by text); `None` for the defaults.
    query: Option<String>,
    /// The attribute naming the run; `None` for the resource's `service.name`.
    run: Option<String>,
    /// Where a document keeps its id.
    doc: DocField,
    /// Whether the query is named by its question text.
    join: JoinBy,
    /// The attribute holding the capture time; `None` for the span's
    /// start time.
    time: Option<String>,
    /// The attributes sliced by.
    slices: Vec<String>,
}

/// Where a retrieved document keeps its id.
#[derive(Debug, Clone)]
pub enum DocField {
    /// The default: OpenInference `document.id`, GenAI `id`.
    Id,
    /// Another key: an OpenInference document attribute (`document.content`)
    /// or a GenAI document's key.
    Key(String),
    /// A JSON pointer into the OpenInference `document.metadata` JSON.
    Metadata(FieldPath),
}

impl SpanFields {
    /// The mapping of `names`, with the stages `span_stages` renames.
    pub fn new(names: &FieldNames, span_stages: &[(SpanKind, String)], join: JoinBy) -> Self {
        let stages = SpanKind::ALL.map(|kind| {
            let renamed = span_stages.iter().rev().find(|(k, _)| *k == kind);
            renamed.map_or_else(|| kind.default_stage().to_string(), |(_, s)| s.clone())
        });
        let doc = match names.doc.as_deref() {
            None => DocField::Id,
            Some(pointer) if pointer.starts_with('/') => {
                DocField::Metadata(FieldPath::parse(pointer))
            }
            Some(key) => DocField::Key(key.to_string()),
        };
        SpanFields {
            stages,
            query: names.query.clone(),
            run: names.run.clone(),
            doc,
            join,
            time: names.time.clone(),
            slices: names.slices.clone(),
        }
    }

    /// The stage of a kind's captures.
    pub fn stage(&self, kind: SpanKind) -> &str {
        &self.stages[kind as usize]
    }

    /// Where a capture span of `kind` names its query.
    pub fn query_source(&self, kind: SpanKind) -> QuerySource<'_> {
        match (&self.query, self.join) {
            (Some(key), _) => QuerySource::Named(key),
            (None, JoinBy::Text) => QuerySource::Text(match kind {
                SpanKind::Retriever => "input.value",
                SpanKind::Reranker => "reranker.query",
                SpanKind::GenAiRetrieval => "gen_ai.retrieval.query.text",
            }),
            (None, JoinBy::Id) => QuerySource::Default,
        }
    }

    /// The attribute naming the run, if the user named one.
    pub fn run(&self) -> Option<&str> {
        self.run.as_deref()
    }

    /// Where a retrieved document keeps its id.
    pub fn doc(&self) -> &DocField {
        &self.doc
    }

    /// The attribute holding the capture time, if the user named one
    /// (else a span's start time is).
    pub fn time(&self) -> Option<&str> {
        self.time.as_deref()
    }

    /// The attributes the user named, each with its flag: the query's,
    /// the run's, the time's and those sliced by.
    fn named(&self) -> impl Iterator<Item = (FieldFlag, &str)> {
        let named = [
            (FieldFlag::Query, &self.query),
            (FieldFlag::Run, &self.run),
            (FieldFlag::Time, &self.time),
        ];
        (named.into_iter())
            .filter_map(|(flag, key)| Some((flag, key.as_deref()?)))
            .chain(
                (self.slices.iter().enumerate())
                    .map(|(i, key)| (FieldFlag::Slice(i), key.as_str())),
            )
    }
}

/// Where a capture span names its query: the same rule for OTLP spans and
/// for Phoenix's span exports, whose attributes are columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuerySource<'f> {
    /// The attribute `--query-field` names.
    Named(&'f str),
    /// Joined by text: the attribute holding the kind's question text.
    Text(&'static str),
    /// `query_id` in the span's `metadata`, else a `query_id` attribute.
    Default,
}

impl QuerySource<'_> {
    /// The reject of a span that has no query where this says.
    pub fn missing(self) -> Invalid {
        let detail = match self {
            QuerySource::Named(key) => format!("no '{key}' attribute"),
            QuerySource::Text(key) => format!("no '{key}' text to join the labels by"),
            QuerySource::Default => format!(
                "no query_id in its 'metadata' nor a 'query_id' attribute ({} matches its \
                 question text instead)",
                Setting::Join.given("text")
            ),
        };
        Invalid::new(RejectReason::MissingQueryId, detail)
    }
}

/// The capture kind of an OpenInference span kind (`openinference.span.kind`,
/// Phoenix's `span_kind`), if it is one.
pub fn openinference_kind(kind: &str) -> Option<SpanKind> {
    if kind.eq_ignore_ascii_case("RETRIEVER") {
        Some(SpanKind::Retriever)
    } else if kind.eq_ignore_ascii_case("RERANKER") {
        Some(SpanKind::Reranker)
    } else {
        None
    }
}

/// A span's latency from its start and end in nanoseconds.
///
/// # Errors
/// `bad_field` when it ends before it starts.
pub fn latency_ms(start: i128, end: i128) -> Result<f64, Invalid> {
    if end < start {
        return Err(Invalid::new(
            RejectReason::BadField,
            "the span ends before it starts",
        ));
    }
    Ok((end - start) as f64 / 1e6)
}

impl Default for SpanFields {
    fn default() -> Self {
        SpanFields::new(&FieldNames::default(), &[], JoinBy::Id)
    }
}

/// One span of an export, as grading sees it: a capture span is an
/// event whose ranking was read with its key (its ranking may still be
/// invalid); a span of no kind rgrade grades (LLM, CHAIN, HTTP, ...) is
/// another record; a capture span whose key cannot be read is invalid.
pub type SpanRecord<'i> = Record<'i, Result<Ranking<'i>, Invalid>>;

/// A span of an export line: its attributes, what resource it ran in,
/// and the Hive partition of its file, whose values win over attributes
/// of the same name.
struct OtlpSpan<'t, 'i> {
    value: Value<'t, 'i>,
    /// (key, AnyValue object) pairs, in the order given.
    attributes: Vec<(&'i str, Value<'t, 'i>)>,
    service: Option<&'i str>,
    partition: &'i [(String, String)],
}

/// Hand each span of the export `root`, from a log in the Hive
/// `partition`, to `visit` in the order the line lists them, with its
/// value (for a reject's excerpt) and what it is. Returns how many spans
/// there were.
///
/// Protobuf's JSON mapping leaves an empty list out, so an export of no
/// spans is `{}`, and a resource or scope with none may lack its list.
///
/// # Errors
/// `not_a_trace` when the line is no ExportTraceServiceRequest: neither
/// `{}` nor an object with a `resourceSpans` array of resources, whose
/// `scopeSpans` and `spans` (where present) are arrays.
pub fn for_each_span<'t, 'i>(
    root: Value<'t, 'i>,
    fields: &'i SpanFields,
    partition: &'i [(String, String)],
    seen: &mut FieldsSeen,
    mut visit: impl FnMut(Value<'t, 'i>, SpanRecord<'i>),
) -> Result<u64, Invalid> {
    let not_a_trace = |detail: &str| {
        Invalid::new(
            RejectReason::NotATrace,
            format!("not an OTLP trace export: {detail}"),
        )
    };
    if root.as_object().is_some_and(|object| object.is_empty()) {
        return Ok(0);
    }
    let resources = root
        .get("resourceSpans")
        .and_then(|v| v.as_array())
        .ok_or_else(|| not_a_trace("no 'resourceSpans' array"))?;
    // The whole line is checked before any span is visited, so that a
    // line rejected as a whole has no span counted.
    let mut spans = Vec::new();
    for resource in resources.iter() {
        let scopes = match resource.get("scopeSpans") {
            None => continue,
            Some(v) => v
                .as_array()
                .ok_or_else(|| not_a_trace("a resource whose 'scopeSpans' is not an array"))?,
        };
        let service = resource
            .get("resource")
            .and_then(|r| r.get("attributes"))
            .and_then(|a| a.as_array())
            .and_then(|attributes| {
                attributes
                    .iter()
                    .find(|a| a.get("key").and_then(|k| k.into_string()) == Some("service.name"))
            })
            .and_then(|a| a.get("value"))
            .and_then(|v| v.get("stringValue"))
            .and_then(|v| v.into_string());
        for scope in scopes.iter() {
            let scope_spans = match scope.get("spans") {
                // A scope with no span may leave the array out.
                None => continue,
                Some(v) => v
                    .as_array()
                    .ok_or_else(|| not_a_trace("a scope whose 'spans' is not an array"))?,
            };
            spans.extend(scope_spans.iter().map(|span| (span, service)));
        }
    }
    let count = spans.len() as u64;
    for (value, service) in spans {
        let record = match OtlpSpan::new(value, service, partition) {
            Ok(span) => span.record(fields, seen),
            Err(invalid) => Record::Invalid(invalid),
        };
        visit(value, record);
    }
    Ok(count)
}

fn bad_span(detail: impl Into<String>) -> Invalid {
    Invalid::new(RejectReason::BadSpan, detail)
}

impl<'t, 'i> OtlpSpan<'t, 'i> {
    fn new(
        value: Value<'t, 'i>,
        service: Option<&'i str>,
        partition: &'i [(String, String)],
    ) -> Result<Self, Invalid> {
        if !value.is_object() {
            return Err(bad_span("a span must be a JSON object"));
        }
        let attributes = match value.get("attributes") {
            None => Vec::new(),
            Some(list) => {
                let list = list
                    .as_array()
                    .ok_or_else(|| bad_span("'attributes' must be an array"))?;
                list.iter()
                    .map(|a| {
                        let key = a.get("key").and_then(|k| k.into_string());
                        let value = a.get("value").filter(|v| v.is_object());
                        key.zip(value).ok_or_else(|| {
                            bad_span(
                                "an attribute must be an object with a 'key' and a 'value' object",
                            )
                        })
                    })
                    .collect::<Result<_, _>>()?
            }
        };
        Ok(OtlpSpan {
            value,
            attributes,
            service,
            partition,
        })
    }

    /// The AnyValue of the attribute `key`; the first, if given twice.
    fn attribute(&self, key: &str) -> Option<Value<'t, 'i>> {
        self.attributes
            .iter()
            .find(|(k, _)| *k == key)
            .map(|&(_, value)| value)
    }

    fn string(&self, key: &str) -> Option<&'i str> {
        self.attribute(key)
            .and_then(|v| v.get("stringValue"))
            .and_then(|v| v.into_string())
    }

    fn kind(&self) -> Option<SpanKind> {
        let openinference = self.string("openinference.span.kind");
        match openinference.and_then(openinference_kind) {
            Some(kind) => Some(kind),
            None if self.string("gen_ai.operation.name") == Some("retrieval") => {
                Some(SpanKind::GenAiRetrieval)
            }
            None => None,
        }
    }

    /// The record the span is; `seen` hears which of the attributes the
    /// user named a capture span has (and, from the first, which it has).
    fn record(&self, fields: &'i SpanFields, seen: &mut FieldsSeen) -> SpanRecord<'i> {
        let Some(kind) = self.kind() else {
            return Record::Other;
        };
        self.see(fields, seen);
        let key = self.key(kind, fields).map(|(query_id, run)| EventKey {
            query_id,
            stage: fields.stage(kind),
            run,
        });
        let name = self
            .value
            .get("name")
            .and_then(|n| n.into_string())
            .unwrap_or("");
        let about = |invalid: Invalid| Invalid {
            detail: format!("{} '{name}': {}", kind.name(), invalid.detail),
            ..invalid
        };
        match key {
            Err(invalid) => Record::Invalid(about(invalid)),
            Ok(key) => {
                let text = |key: &str| self.value.get(key).and_then(|v| v.into_string());
                let ids = SpanIds::new(text("traceId"), text("spanId"), text("parentSpanId"));
                let ranking = self.ranking(kind, fields).map_err(about);
                // Documents found, under whatever attribute the user named.
                if ranking.as_ref().is_ok_and(|r| !r.docs.is_empty()) {
                    seen.mark(FieldFlag::Doc);
                }
                Record::Event {
                    key,
                    span: Some(ids),
                    ranking,
                }
            }
        }
    }

    /// Tell `seen` which attributes the user named (the query's, the
    /// run's, the time's, those sliced by) the span has, its partition
    /// counted, and its attributes while one is unmatched.
    fn see(&self, fields: &SpanFields, seen: &mut FieldsSeen) {
        let unmatched = fields.named().any(|(flag, _)| !seen.matched(flag));
        if unmatched || !seen.sampled() {
            let keys = self.attributes.iter().map(|&(key, _)| key);
            keys.chain(self.partition.iter().map(|(key, _)| key.as_str()))
                .for_each(|key| seen.note(key));
        }
        for (flag, key) in fields.named() {
            if !seen.matched(flag) && self.field(key).is_some() {
                seen.mark(flag);
            }
        }
    }

    /// The field `key`: its partition's value, else its attribute.
    fn field(&self, key: &str) -> Option<Field<'t, 'i>> {
        match partition_value(self.partition, &[key]) {
            Some(value) => Some(Field::Partition(value)),
            None => self.attribute(key).map(Field::Attribute),
        }
    }

    /// The query (its id, or its text when joined by text) and the run.
    fn key(&self, kind: SpanKind, fields: &SpanFields) -> Result<(Cow<'i, str>, &'i str), Invalid> {
        let source = fields.query_source(kind);
        let query = match source {
            QuerySource::Named(key) => self.id_attribute(key)?,
            QuerySource::Text(key) => self.string(key).map(Cow::Borrowed),
            QuerySource::Default => match self.metadata_query_id()? {
                Some(id) => Some(id),
                None => self.id_attribute("query_id")?,
            },
        };
        let query = query.ok_or_else(|| source.missing())?;
        let run = match &fields.run {
            None => self.service.unwrap_or(""),
            Some(key) => match self.field(key) {
                None => "",
                Some(Field::Partition(value)) => value,
                Some(Field::Attribute(value)) => value
                    .get("stringValue")
                    .and_then(|v| v.into_string())
                    .ok_or_else(|| {
                        Invalid::new(RejectReason::BadField, format!("'{key}' must be a string"))
                    })?,
            },
        };
        Ok((query, run))
    }

    /// An id attribute: a string, or an integer as its decimal text.
    fn id_attribute(&self, key: &str) -> Result<Option<Cow<'i, str>>, Invalid> {
        match self.attribute(key) {
            None => Ok(None),
            Some(value) => any_id(value).map(Some).ok_or_else(|| {
                Invalid::new(
                    RejectReason::BadQueryId,
                    format!("'{key}' must be a string or an integer within 64 bits"),
                )
            }),
        }
    }

    /// An attribute sliced by, as text: a string as it is, an integer, a
    /// double or a boolean as its JSON text; `None` when absent.
    ///
    /// # Errors
    /// `bad_field` for an array, a key-value list or bytes, which name no
    /// one slice.
    fn slice_attribute(&self, key: &str) -> Result<Option<Cow<'i, str>>, Invalid> {
        let value = match self.field(key) {
            None => return Ok(None),
            Some(Field::Partition(value)) => return Ok(Some(Cow::Borrowed(value))),
            Some(Field::Attribute(value)) => value,
        };
        let scalar = |name: &str| value.get(name).filter(|v| !v.is_null());
        let text = (any_id(value))
            .or_else(|| {
                scalar("boolValue")?
                    .as_bool()
                    .map(|b| Cow::Owned(b.to_string()))
            })
            .or_else(|| {
                scalar("doubleValue")?
                    .as_f64()
                    .map(|n| Cow::Owned(n.to_string()))
            });
        text.map(Some).ok_or_else(|| not_a_slice(key))
    }

    /// `query_id` inside the span's `metadata` attribute, a JSON string.
    fn metadata_query_id(&self) -> Result<Option<Cow<'i, str>>, Invalid> {
        match self.string("metadata") {
            None => Ok(None),
            Some(metadata) => metadata_query_id(metadata),
        }
    }

    fn ranking(&self, kind: SpanKind, fields: &SpanFields) -> Result<Ranking<'i>, Invalid> {
        let doc = &fields.doc;
        // An SDK over its attribute count limit (128 by default) drops
        // attributes, documents among them, and says how many: such a
        // ranking would be graded short or shifted.
        // A count that says nothing readable could hide dropped documents.
        let dropped = match self.value.get("droppedAttributesCount") {
            None => 0,
            Some(count) if count.is_null() => 0,
            Some(count) => (count.as_u64())
                .or_else(|| count.into_string().and_then(|text| text.parse().ok()))
                .ok_or_else(|| {
                    Invalid::new(
                        RejectReason::BadSpan,
                        format!(
                            "droppedAttributesCount {} is not a count, so the span may have \
                             lost documents unseen",
                            count.encode()
                        ),
                    )
                })?,
        };
        if dropped > 0 {
            return Err(Invalid::new(
                RejectReason::DroppedAttributes,
                format!(
                    "the exporter dropped {dropped} of the span's attributes, so its ranking may \
                     miss documents; raise the SDK's attribute count limit \
                     (OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT)"
                ),
            ));
        }
        let docs = match kind {
            SpanKind::Retriever => self.retriever_documents(doc)?,
            SpanKind::Reranker => self.flattened_documents("reranker.output_documents.", doc)?,
            SpanKind::GenAiRetrieval => self.genai_documents(doc)?,
        };
        Ok(Ranking {
            docs,
            latency_ms: self.latency_ms()?,
            context_tokens: None,
            answer_ok: None,
            permissions: None,
            time: match fields.time() {
                None => self.span_time("startTimeUnixNano")?.map(i128::from),
                Some(key) => match self.field(key).ok_or_else(|| time::missing(key))? {
                    Field::Partition(value) => Some(
                        time::from_text(value)
                            .ok_or_else(|| time::unreadable(key, &format!("{value:?}")))?,
                    ),
                    Field::Attribute(value) => {
                        let read = time::from_any_value(value);
                        Some(read.ok_or_else(|| time::unreadable(key, &value.encode()))?)
                    }
                },
            },
            slices: (fields.slices.iter())
                .map(|key| self.slice_attribute(key))
                .collect::<Result<_, _>>()?,
        })
    }

    /// The span's time `key` (`startTimeUnixNano`, `endTimeUnixNano`),
    /// if it has it.
    ///
    /// # Errors
    /// `bad_field` when it is not a count of nanoseconds.
    fn span_time(&self, key: &str) -> Result<Option<u64>, Invalid> {
        let Some(value) = self.value.get(key) else {
            return Ok(None);
        };
        let parsed = match value.as_str() {
            Some(text) => text.parse().ok(),
            None => value.as_u64(),
        };
        parsed.map(Some).ok_or_else(|| {
            Invalid::new(
                RejectReason::BadField,
                format!("'{key}' must be nanoseconds, an unsigned 64-bit integer"),
            )
        })
    }

    /// End minus start, in milliseconds, when the span has both times.
    fn latency_ms(&self) -> Result<Option<f64>, Invalid> {
        let start = self.span_time("startTimeUnixNano")?;
        match (start, self.span_time("endTimeUnixNano")?) {
            (Some(start), Some(end)) => latency_ms(start.into(), end.into()).map(Some),
            _ => Ok(None),
        }
    }
}

/// A field of a span: its partition's value, or an attribute's AnyValue.
enum Field<'t, 'i> {
    Partition(&'i str),
    Attribute(Value<'t, 'i>),
}

/// `query_id` inside a span's `metadata`, a JSON object as text.
///
/// # Errors
/// `bad_query_id`: the text is no JSON, or its `query_id` is neither a
/// string nor an integer.
pub fn metadata_query_id<'i>(metadata: &str) -> Result<Option<Cow<'i, str>>, Invalid> {
    let bad = |detail: &str| Invalid::new(RejectReason::BadQueryId, detail.to_string());
    let query_id = with_embedded(metadata, |root| match root.get("query_id") {
        None => Ok(None),
        Some(id) if id.is_null() => Ok(None),
        Some(id) => owned_id(id).map(|id| Some(Cow::Owned(id))).ok_or_else(|| {
            bad("'query_id' in 'metadata' must be a string or an integer within 64 bits")
        }),
    });
    query_id.unwrap_or_else(|| Err(bad("'metadata' is not valid JSON")))
}

/// An AnyValue holding an id: a string, or an integer (OTLP/JSON writes
/// 64-bit integers as strings) as its decimal text.
fn any_id<'i>(value: Value<'_, 'i>) -> Option<Cow<'i, str>> {
    if let Some(text) = value.get("stringValue").and_then(|v| v.into_string()) {
        return Some(Cow::Borrowed(text));
    }
    let int = value.get("intValue")?;
    match int.into_string() {
        Some(text) => text.parse::<i64>().ok().map(|_| Cow::Borrowed(text)),
        None => id_text(int),
    }
}

/// A string id, or an integer id as its decimal text, outliving its tape.
fn owned_id(value: Value<'_, '_>) -> Option<String> {
    id_text(value).map(Cow::into_owned)
}

/// The lines of an OTLP/JSON log: each an export of spans, a record each.
pub struct OtlpLines<'c> {
    parser: &'c mut JsonParser,
    fields: &'c SpanFields,
    partition: &'c [(String, String)],
}

impl<'c> OtlpLines<'c> {
    /// The lines of an OTLP/JSON log, parsed by `parser`, whose spans keep
    /// what a capture needs where `fields` says, or in the log's Hive
    /// `partition`.
    pub fn new(
        parser: &'c mut JsonParser,
        fields: &'c SpanFields,
        partition: &'c [(String, String)],
    ) -> Self {
        OtlpLines {
            parser,
            fields,
            partition,
        }
    }
}

impl LineFormat for OtlpLines<'_> {
    const AS_TEXT: bool = false;

    /// A span rejected shows itself, and says which span of the line it
    /// is; a line that is no export, or of no span, is one record.
    fn line(&mut self, line: &[u8], _: Option<&str>, origin: Origin, sink: &mut dyn RecordSink) {
        let (fields, partition) = (self.fields, self.partition);
        // Moved out while the spans are handed to the sink, and back.
        let mut seen = std::mem::take(sink.seen());
        let read = self.parser.parse(line, |root| {
            let mut item = 0;
            let spans = for_each_span(root, fields, partition, &mut seen, |span, record| {
                item += 1;
                let origin = Origin { item, ..origin };
                if let Err(invalid) = sink.take(
                    origin,
                    record.map_ranking(|ranking| Pending::Read(Box::new(ranking))),
                ) {
                    let invalid = Invalid {
                        detail: format!("span {item}, {}", invalid.detail),
                        ..invalid
                    };
                    sink.reject(origin, invalid, span.encode().as_bytes());
                }
            })?;
            if spans == 0 {
                deliver(sink, origin, Record::Other, line);
            }
            Ok(())
        });
        *sink.seen() = seen;
        if let Err(invalid) = read.map_err(Invalid::from).and_then(|read| read) {
            deliver(sink, origin, Record::Invalid(invalid), line);
        }
    }
}

#[cfg(test)]
mod tests;
