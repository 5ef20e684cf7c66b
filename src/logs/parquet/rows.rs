//! Stage 2, parse, for Parquet and Arrow tables: a worker decodes the row
//! group it was handed, only the columns its layout needs and a batch of
//! rows at a time (a table's rows are decoded already), and reads each
//! row as a record: a search event, one result of a ranking, or a span of
//! a kind rgrade does not grade.

use std::borrow::Cow;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ListArray, RecordBatch};
use serde_json::{Map, Value};
use simd_json::prelude::*;

use super::layout::{
    ColumnPath, KeyColumns, Layout, Located, QueryColumn, Results, ResultsColumn, Source,
    SPAN_KINDS,
};
use super::{RowGroup, Rows};
use crate::io::guarded;
use crate::io::json::{id_text, with_embedded};
use crate::io::parquet::{column, show, Cells};
use crate::logs::jsonl::{doc_id, no_doc_id, FieldPath};
use crate::logs::otlp::{latency_ms, metadata_query_id, openinference_kind, SpanFields};
use crate::logs::record::Nanos;
use crate::logs::record::{
    measure, permuted, ranked_order, EventKey, Invalid, Origin, Pending, RankKey, Ranking, Record,
    RecordSink, RecordSource, RejectReason, ResultKeys, RunResult, SpanIds, DEFAULT_STAGE,
};
use crate::logs::time;

/// Rows decoded at a time: a few MiB of columns for a row of 100
/// results, whatever the size of the row group.
const BATCH_ROWS: usize = 1024;

/// Results shown in a reject's excerpt (it is cut at 200 bytes anyway).
const EXCERPT_RESULTS: usize = 10;

/// The records of a Parquet row group or a part of a table, row by row: a
/// search event as a JSONL line is, a result row as a run line is.
pub struct RowRecords<'c> {
    /// The rows.
    pub group: &'c RowGroup,
    /// Where a span's row keeps what a capture needs.
    pub spans: &'c SpanFields,
}

impl RecordSource for RowRecords<'_> {
    fn for_each(&mut self, sink: &mut dyn RecordSink) -> Result<(), String> {
        let seen = match &self.group.rows {
            Rows::Parquet { file, .. } => &file.seen,
            Rows::Table { table, .. } => &table.seen,
        };
        sink.seen().merge(seen);
        let read = for_each_batch(self.group, self.spans, |batch| {
            for row in 0..batch.len() {
                let origin = batch.origin(row);
                let mut ranking = || batch.ranking(row);
                let record = batch.read(row).unwrap_or_else(Record::Invalid);
                let record = record.map_ranking(|()| Pending::Later(&mut ranking));
                if let Err(invalid) = sink.take(origin, record) {
                    sink.reject(origin, batch.locate(row, invalid), &batch.excerpt(row));
                }
            }
        });
        read.map_err(|err| format!("cannot read (truncated or corrupt Parquet?): {err}"))
    }
}

/// Decode the rows of `chunk` and hand `visit` each batch of them.
///
/// # Errors
/// The row group cannot be read or decoded (a corrupt or truncated file),
/// or the decoder panicked on it: the message says which.
fn for_each_batch(
    chunk: &RowGroup,
    spans: &SpanFields,
    mut visit: impl FnMut(&Batch<'_>),
) -> Result<(), String> {
    let (file, group) = match &chunk.rows {
        Rows::Parquet { file, group } => (file, *group),
        Rows::Table { table, rows } => {
            let place = Place {
                input: chunk.input,
                first_row: chunk.first_row,
                group: None,
                group_row: chunk.first_row - 1,
            };
            visit(&Batch::new(rows, &table.layout, spans, place)?);
            return Ok(());
        }
    };
    // The decoder may panic on a malformed file: that is an error of the
    // input, not of rgrade.
    let decoded = guarded::decode(|| -> Result<(), String> {
        let batches = (file.at)
            .batches(
                &file.metadata,
                Some(vec![group]),
                file.mask.clone(),
                BATCH_ROWS,
            )
            .map_err(|err| format!("{err:#}"))?;
        let mut row = 0;
        for batch in batches {
            let batch = batch.map_err(|err| err.to_string())?;
            let place = Place {
                input: chunk.input,
                first_row: chunk.first_row + row,
                group: Some(group),
                group_row: row,
            };
            visit(&Batch::new(&batch, &file.layout, spans, place)?);
            row += batch.num_rows() as u64;
        }
        Ok(())
    });
    let read = decoded.unwrap_or_else(|| Err("the Parquet decoder failed on it".to_string()));
    read.map_err(|err| format!("row group {group}: {err}"))
}

/// Where a batch's rows are.
struct Place {
    input: u32,
    /// 1-based number of the first row in the file or table.
    first_row: u64,
    /// The row group, in a Parquet file.
    group: Option<usize>,
    /// The first row within its row group (or table), from 0.
    group_row: u64,
}

/// A batch of decoded rows, with its columns typed for the layout.
pub struct Batch<'a> {
    origin: Origin,
    group: Option<usize>,
    /// The row of the batch's first row within its row group (or table), from 0.
    group_row: u64,
    rows: usize,
    key: KeyCells<'a>,
    view: View<'a>,
    spans: &'a SpanFields,
}

/// The key columns: query id, stage, run.
struct KeyCells<'a> {
    query: Named<'a>,
    stage: Named<'a>,
    run: Named<'a>,
}

/// The columns of a layout. One is made per batch of rows, so the size of
/// its largest variant costs nothing.
#[allow(clippy::large_enum_variant)]
enum View<'a> {
    Wide {
        results: WideResults<'a>,
        latency: Named<'a>,
        context: Named<'a>,
        outcome: Named<'a>,
        time: Named<'a>,
        slices: Vec<Named<'a>>,
    },
    Long {
        doc: Named<'a>,
        rank: Named<'a>,
        by_score: bool,
    },
    Spans {
        kind: Named<'a>,
        name: Named<'a>,
        query: [Vec<(Named<'a>, bool)>; 2],
        documents: [Option<ResultCells<'a>>; 2],
        start: Named<'a>,
        end: Named<'a>,
        time: Named<'a>,
        trace: Named<'a>,
        span_id: Named<'a>,
        parent: Named<'a>,
    },
}

impl<'a> Batch<'a> {
    fn new(
        batch: &'a RecordBatch,
        layout: &'a Layout,
        spans: &'a SpanFields,
        place: Place,
    ) -> Result<Self, String> {
        let named = |path: &Option<ColumnPath>| match path {
            Some(path) => Named::of(batch, path),
            None => Ok(Named::absent()),
        };
        let source = |source: &'a Option<Source>| match source {
            Some(Source::Column(path)) => Named::of(batch, path),
            Some(Source::Partition { key, value }) => Ok(Named::partition(key, value)),
            None => Ok(Named::absent()),
        };
        let results = |results: &Results| ResultCells::of(batch, results);
        let key = |key: &'a KeyColumns| -> Result<KeyCells<'a>, String> {
            Ok(KeyCells {
                query: Named::located(batch, &key.query)?,
                stage: source(&key.stage)?,
                run: source(&key.run)?,
            })
        };
        let (key, view) = match layout {
            Layout::Wide(wide) => (
                key(&wide.key)?,
                View::Wide {
                    results: WideResults::of(batch, &wide.results)?,
                    latency: named(&wide.latency)?,
                    context: named(&wide.context)?,
                    outcome: named(&wide.outcome)?,
                    time: source(&wide.time)?,
                    slices: wide.slices.iter().map(source).collect::<Result<_, _>>()?,
                },
            ),
            Layout::Long(long) => (
                key(&long.key)?,
                View::Long {
                    doc: Named::of(batch, &long.doc)?,
                    rank: Named::of(batch, &long.rank)?,
                    by_score: long.by_score,
                },
            ),
            Layout::Spans(columns) => {
                let query = |columns: &[QueryColumn]| -> Result<Vec<(Named<'a>, bool)>, String> {
                    columns
                        .iter()
                        .map(|column| match column {
                            QueryColumn::Id(path) => Ok((Named::of(batch, path)?, false)),
                            QueryColumn::JsonQueryId(path) => Ok((Named::of(batch, path)?, true)),
                        })
                        .collect()
                };
                let documents = |i: usize| columns.documents[i].as_ref().map(results).transpose();
                // A span's query and stage follow from its kind.
                let key = KeyCells {
                    query: Named::absent(),
                    stage: Named::absent(),
                    run: source(&columns.run)?,
                };
                let view = View::Spans {
                    kind: Named::of(batch, &columns.kind)?,
                    name: named(&columns.name)?,
                    query: [query(&columns.query[0])?, query(&columns.query[1])?],
                    documents: [documents(0)?, documents(1)?],
                    start: named(&columns.start)?,
                    end: named(&columns.end)?,
                    time: source(&columns.time)?,
                    trace: named(&columns.trace)?,
                    span_id: named(&columns.span_id)?,
                    parent: named(&columns.parent)?,
                };
                (key, view)
            }
        };
        Ok(Batch {
            origin: Origin::line(place.input, place.first_row),
            group: place.group,
            group_row: place.group_row,
            rows: batch.num_rows(),
            key,
            view,
            spans,
        })
    }

    /// For a span's row, where it sits in its trace (`None` in other
    /// layouts).
    pub fn span_ids(&self, row: usize) -> Option<SpanIds> {
        let View::Spans {
            trace,
            span_id,
            parent,
            ..
        } = &self.view
        else {
            return None;
        };
        let (trace, id, parent) = (
            trace.cells.id(row),
            span_id.cells.id(row),
            parent.cells.id(row),
        );
        Some(SpanIds::new(
            trace.as_deref(),
            id.as_deref(),
            parent.as_deref(),
        ))
    }

    /// How many rows it holds.
    pub fn len(&self) -> usize {
        self.rows
    }

    /// Where row `row` of the batch is: its 1-based number in the file.
    pub fn origin(&self, row: usize) -> Origin {
        Origin::line(self.origin.input, self.origin.line + row as u64)
    }

    /// What row `row` is.
    ///
    /// # Errors
    /// `missing_query_id` (a null id) or `bad_query_id` (a span's
    /// metadata that is no JSON). A result row with a null doc id
    /// (`bad_result`) or a bad rank (`bad_rank`) is a
    /// [`Record::LostResult`]. An event's ranking is read by
    /// [`Batch::ranking`].
    pub fn read(&self, row: usize) -> Result<Record<'a, ()>, Invalid> {
        let event = |key| Record::Event {
            key,
            span: self.span_ids(row),
            ranking: (),
        };
        match &self.view {
            View::Wide { .. } => self.key(row).map(event),
            View::Long {
                doc,
                rank,
                by_score,
            } => {
                let key = self.key(row)?;
                // A null run or stage in a column that is there: the row
                // would fall into a ranking of the defaults.
                let present_null =
                    |named: &Named| named.cells.is_present() && named.cells.is_null(row);
                if let Some(named) = [&self.key.run, &self.key.stage]
                    .into_iter()
                    .find(|n| present_null(n))
                {
                    let detail = format!("'{}' is null", named.name);
                    let invalid = Invalid::new(RejectReason::BadField, detail);
                    return Ok(Record::Unplaced {
                        query_id: key.query_id,
                        invalid,
                    });
                }
                let Some(doc_id) = doc.cells.id(row) else {
                    let detail = format!("'{}' is null", doc.name);
                    let invalid = Invalid::new(RejectReason::BadResult, detail);
                    return Ok(Record::LostResult { key, invalid });
                };
                let rank = if *by_score {
                    let score = rank.cells.number(row).filter(|s| s.is_finite());
                    score.map(RankKey::score).ok_or_else(|| {
                        let detail = format!("'{}' is not a finite number", rank.name);
                        Invalid::new(RejectReason::BadScore, detail)
                    })
                } else {
                    RankKey::whole_rank(rank.cells.whole(row), &format!("'{}'", rank.name))
                        .map_err(|detail| Invalid::new(RejectReason::BadRank, detail))
                };
                let rank = match rank {
                    Ok(rank) => rank,
                    Err(invalid) => return Ok(Record::LostResult { key, invalid }),
                };
                Ok(Record::Result(RunResult { key, doc_id, rank }))
            }
            View::Spans { kind, query, .. } => {
                let Some(kind) = kind.cells.text(row).and_then(openinference_kind) else {
                    return Ok(Record::Other);
                };
                let i = SPAN_KINDS.iter().position(|k| *k == kind).unwrap_or(0);
                let mut id = None;
                for (column, json) in &query[i] {
                    id = match (column.cells.text(row), json) {
                        (Some(text), true) => metadata_query_id(text)?,
                        _ => column.cells.id(row),
                    };
                    if id.is_some() {
                        break;
                    }
                }
                let query_id = id.ok_or_else(|| self.spans.query_source(kind).missing())?;
                Ok(event(EventKey {
                    query_id,
                    stage: self.spans.stage(kind),
                    run: self.key.run.text(row).unwrap_or(""),
                }))
            }
        }
    }

    /// The key of a wide or long row.
    fn key(&self, row: usize) -> Result<EventKey<'a>, Invalid> {
        let query = &self.key.query;
        let query_id = query.id(row)?.ok_or_else(|| {
            let absent = if query.inside.is_some() {
                "absent or null"
            } else {
                "null"
            };
            Invalid::new(
                RejectReason::MissingQueryId,
                format!("'{}' is {absent}", query.name),
            )
        })?;
        Ok(EventKey {
            query_id,
            stage: self.key.stage.text(row).unwrap_or(DEFAULT_STAGE),
            run: self.key.run.text(row).unwrap_or(""),
        })
    }

    /// The ranking of an event row: a null list is an empty ranking.
    ///
    /// # Errors
    /// `bad_result` for a null doc id, `bad_field` for a span that ends
    /// before it starts.
    pub fn ranking(&self, row: usize) -> Result<Ranking<'a>, Invalid> {
        // A null cell is no measurement; any other cell must be one.
        let measured = |named: &Named| match named.cells.is_null(row) {
            true => Ok(None),
            false => measure(named.cells.number(row), &named.name).map(Some),
        };
        match &self.view {
            View::Wide {
                results,
                latency,
                context,
                outcome,
                time,
                slices,
            } => Ok(Ranking {
                docs: results.docs(row)?,
                latency_ms: measured(latency)?,
                context_tokens: measured(context)?,
                answer_ok: outcome.cells.boolean(row),
                permissions: None,
                time: time.time(row)?,
                slices: slices.iter().map(|named| named.slice(row)).collect(),
            }),
            View::Spans {
                kind,
                documents,
                start,
                end,
                time,
                ..
            } => {
                let kind = kind.cells.text(row).and_then(openinference_kind);
                let i = SPAN_KINDS.iter().position(|k| Some(*k) == kind);
                let docs = match i.and_then(|i| documents[i].as_ref()) {
                    Some(results) => results.docs(row)?,
                    None => Vec::new(),
                };
                let latency_ms = match (start.cells.nanos(row), end.cells.nanos(row)) {
                    (Some(start), Some(end)) => Some(latency_ms(start, end)?),
                    _ => None,
                };
                Ok(Ranking {
                    docs,
                    latency_ms,
                    context_tokens: None,
                    answer_ok: None,
                    permissions: None,
                    time: match time.is_present() {
                        true => time.time(row)?,
                        false => start.cells.nanos(row),
                    },
                    slices: Vec::new(),
                })
            }
            View::Long { .. } => Ok(Ranking {
                docs: Vec::new(),
                latency_ms: None,
                context_tokens: None,
                answer_ok: None,
                permissions: None,
                time: None,
                slices: Vec::new(),
            }),
        }
    }

    /// `invalid` located in the file: its row group and row (both from 0,
    /// as Parquet tools number them; a table's row alone), and for a span
    /// its kind and name.
    pub fn locate(&self, row: usize, invalid: Invalid) -> Invalid {
        let span = match &self.view {
            View::Spans { kind, name, .. } => {
                let kind = kind.cells.text(row).and_then(openinference_kind);
                kind.map(|kind| {
                    let name = name.cells.text(row).unwrap_or("");
                    format!("{} span '{name}': ", kind.name())
                })
            }
            _ => None,
        };
        let group = self
            .group
            .map(|g| format!("row group {g}, "))
            .unwrap_or_default();
        Invalid {
            detail: format!(
                "{group}row {}: {}{}",
                self.group_row + row as u64,
                span.unwrap_or_default(),
                invalid.detail
            ),
            ..invalid
        }
    }

    /// A short JSON rendering of the cells of row `row` that rgrade reads,
    /// for a reject's excerpt.
    pub fn excerpt(&self, row: usize) -> Vec<u8> {
        let mut object = Map::new();
        let mut put = |named: &Named, value: Value| {
            if named.cells.is_present() {
                object.insert(named.name.clone(), value);
            }
        };
        let text = |named: &Named| {
            let id = named.id(row).ok().flatten();
            id.map_or(Value::Null, |t| t.into())
        };
        let number = |named: &Named| named.cells.number(row).map_or(Value::Null, Value::from);
        match &self.view {
            View::Spans {
                kind, name, query, ..
            } => {
                put(name, text(name));
                put(kind, text(kind));
                for (column, _) in query.iter().flatten() {
                    put(column, text(column));
                }
            }
            _ => {
                put(&self.key.query, text(&self.key.query));
                put(&self.key.stage, text(&self.key.stage));
                put(&self.key.run, text(&self.key.run));
            }
        }
        match &self.view {
            View::Wide { results, .. } => {
                let (name, docs) = results.excerpt(row);
                object.insert(name.to_string(), docs);
            }
            View::Long { doc, rank, .. } => {
                put(doc, text(doc));
                put(rank, number(rank));
            }
            View::Spans { .. } => {}
        }
        serde_json::to_vec(&object).unwrap_or_default()
    }
}

/// A column's cells with the name that messages use; or the value of the
/// file's Hive partition, every row's.
struct Named<'a> {
    name: String,
    cells: Cells<'a>,
    /// Where in the JSON its strings hold the value is, if they hold JSON.
    inside: Option<Inside<'a>>,
    /// The partition's value, which no column holds.
    partition: Option<&'a str>,
}

/// A value inside the JSON a string column holds.
struct Inside<'a> {
    /// The column, as messages name it.
    column: String,
    pointer: &'a FieldPath,
}

impl Inside<'_> {
    fn no_json(&self, reason: RejectReason) -> Invalid {
        Invalid::new(reason, format!("'{}' holds no valid JSON", self.column))
    }
}

impl<'a> Named<'a> {
    fn of(batch: &'a RecordBatch, path: &[String]) -> Result<Self, String> {
        let array = column(batch, path)
            .ok_or_else(|| format!("column '{}' was not decoded", show(path)))?;
        Ok(Named {
            name: show(path),
            cells: Cells::of(array)?,
            inside: None,
            partition: None,
        })
    }

    /// The value of the partition key `key`, every row's.
    fn partition(key: &str, value: &'a str) -> Self {
        Named {
            name: key.to_string(),
            partition: Some(value),
            ..Named::absent()
        }
    }

    /// Whether every row has a value here, or a cell (null or not).
    fn is_present(&self) -> bool {
        self.partition.is_some() || self.cells.is_present()
    }

    /// The text in row `row`, if any.
    fn text(&self, row: usize) -> Option<&'a str> {
        self.partition.or_else(|| self.cells.text(row))
    }

    /// The value sliced by in row `row`: a string, or an integer as its
    /// decimal text; `None` when null or absent.
    fn slice(&self, row: usize) -> Option<Cow<'a, str>> {
        (self.partition.map(Cow::Borrowed)).or_else(|| self.cells.id(row))
    }

    /// A column, or a string column's JSON and where the value is in it;
    /// named by the whole path.
    fn located(batch: &'a RecordBatch, located: &'a Located) -> Result<Self, String> {
        let mut named = Named::of(batch, &located.column)?;
        if let Some(pointer) = &located.inside {
            let mut path = located.column.clone();
            path.extend_from_slice(pointer.segments());
            named.name = show(&path);
            named.inside = Some(Inside {
                column: show(&located.column),
                pointer,
            });
        }
        Ok(named)
    }

    /// The capture time in row `row`: the partition's, read as text is,
    /// or the cell's if the column is there (a span without a start time
    /// has none).
    ///
    /// # Errors
    /// `bad_time` for a null cell of a column named as the time, or a
    /// cell (or partition value) that holds no time.
    fn time(&self, row: usize) -> Result<Option<Nanos>, Invalid> {
        if let Some(value) = self.partition {
            let read = time::from_text(value);
            return (read.map(Some))
                .ok_or_else(|| time::unreadable(&self.name, &format!("{value:?}")));
        }
        if !self.cells.is_present() {
            return Ok(None);
        }
        if self.cells.is_null(row) {
            return Err(time::missing(&self.name));
        }
        let cells = &self.cells;
        let read = (cells.nanos(row))
            .or_else(|| cells.text(row).map(time::from_text).unwrap_or_default())
            .or_else(|| cells.integer(row).map(time::from_integer))
            .or_else(|| cells.number(row).and_then(time::from_number));
        read.map(Some).ok_or_else(|| {
            let found = cells.text(row).map(|t| format!("{t:?}"));
            let found = found.or_else(|| cells.number(row).map(|n| n.to_string()));
            time::unreadable(&self.name, &found.unwrap_or_default())
        })
    }

    fn absent() -> Self {
        Named {
            name: String::new(),
            cells: Cells::absent(),
            inside: None,
            partition: None,
        }
    }

    /// The id in row `row`: the cell, or the string or integer its JSON
    /// holds where `inside` points; `None` when null or absent.
    ///
    /// # Errors
    /// `bad_query_id` for a cell that should hold JSON and does not, or
    /// whose JSON holds something else than an id there.
    fn id(&self, row: usize) -> Result<Option<Cow<'a, str>>, Invalid> {
        let Some(inside) = &self.inside else {
            return Ok(self.cells.id(row));
        };
        let Some(text) = self.cells.text(row) else {
            return Ok(None);
        };
        // As in a JSONL record: absent is no id, any value not an id a bad one.
        let found = with_embedded(text, |root| match inside.pointer.find(root) {
            None => Ok(None),
            Some(value) => {
                (id_text(value).map(|id| Some(Cow::Owned(id.into_owned())))).ok_or_else(|| {
                    let detail = format!(
                        "'{}' must be a string or an integer within 64 bits",
                        self.name
                    );
                    Invalid::new(RejectReason::BadQueryId, detail)
                })
            }
        });
        found.unwrap_or_else(|| Err(inside.no_json(RejectReason::BadQueryId)))
    }
}

/// The results of an event row: a list column, or an array inside a
/// string column's JSON.
enum WideResults<'a> {
    List(ResultCells<'a>),
    Json {
        named: Named<'a>,
        doc: Option<&'a FieldPath>,
    },
}

impl<'a> WideResults<'a> {
    fn of(batch: &'a RecordBatch, results: &'a ResultsColumn) -> Result<Self, String> {
        Ok(match results {
            ResultsColumn::List(list) => WideResults::List(ResultCells::of(batch, list)?),
            ResultsColumn::Json { located, doc } => WideResults::Json {
                named: Named::located(batch, located)?,
                doc: doc.as_ref(),
            },
        })
    }

    /// The doc ids of row `row` in ranking order. A null cell, or a null
    /// where the pointer leads, is an empty ranking; elements read as a
    /// JSONL record's results do.
    ///
    /// # Errors
    /// `bad_results` for JSON that is not valid or holds no array there,
    /// `missing_results` when the pointer leads nowhere, `bad_result` for
    /// an element without a doc id.
    fn docs(&self, row: usize) -> Result<Vec<Cow<'a, str>>, Invalid> {
        let (named, doc) = match self {
            WideResults::List(list) => return list.docs(row),
            WideResults::Json { named, doc } => (named, *doc),
        };
        let (Some(text), Some(inside)) = (named.cells.text(row), &named.inside) else {
            return Ok(Vec::new());
        };
        let name = &named.name;
        let bad_results = || {
            let detail = format!("'{name}' must be an array or null");
            Invalid::new(RejectReason::BadResults, detail)
        };
        let read = with_embedded(text, |root| {
            let Some(found) = inside.pointer.find(root) else {
                let detail = format!("no '{name}'");
                return Err(Invalid::new(RejectReason::MissingResults, detail));
            };
            if found.is_null() {
                return Ok(Vec::new());
            }
            let results = found.as_array().ok_or_else(bad_results)?;
            (results.iter().enumerate())
                .map(|(i, result)| match doc_id(result, doc) {
                    Some(id) => Ok(Cow::Owned(id.into_owned())),
                    None => Err(no_doc_id(i + 1, name, doc)),
                })
                .collect()
        });
        read.unwrap_or_else(|| Err(inside.no_json(RejectReason::BadResults)))
    }

    /// The column's name and the first ids of row `row`, for an excerpt.
    fn excerpt(&self, row: usize) -> (&str, Value) {
        match self {
            WideResults::List(list) => (&list.name, list.excerpt(row)),
            WideResults::Json { named, .. } => {
                let docs = self.docs(row).ok().map(|docs| {
                    let ids = docs.into_iter().take(EXCERPT_RESULTS);
                    Value::Array(ids.map(|id| Value::from(id.into_owned())).collect())
                });
                (&named.name, docs.unwrap_or(Value::Null))
            }
        }
    }
}

/// A list column of results, and the ids of its elements.
struct ResultCells<'a> {
    name: String,
    list: &'a ListArray,
    ids: Cells<'a>,
    /// Where an element keeps its id, for messages: empty for a list of ids.
    doc: String,
    /// The elements' ranks and scores (absent where their structs have
    /// none), with the fields' names.
    keys: [(Cells<'a>, String); 2],
}

impl<'a> ResultCells<'a> {
    fn of(batch: &'a RecordBatch, results: &Results) -> Result<Self, String> {
        let name = show(&results.list);
        let list = column(batch, &results.list)
            .and_then(|a| a.as_list_opt::<i32>())
            .ok_or_else(|| format!("column '{name}' was not decoded as a list"))?;
        let field = |path: &[String]| {
            let mut values = list.values();
            for field in path {
                values = values
                    .as_struct_opt()
                    .and_then(|s| s.column_by_name(field))
                    .ok_or_else(|| format!("column '{name}' has no field '{field}'"))?;
            }
            Cells::of(values)
        };
        let key = |key: &Option<String>| -> Result<(Cells<'a>, String), String> {
            match key {
                Some(key) => Ok((field(std::slice::from_ref(key))?, key.clone())),
                None => Ok((Cells::absent(), String::new())),
            }
        };
        Ok(ResultCells {
            ids: field(&results.doc)?,
            keys: [key(&results.keys[0])?, key(&results.keys[1])?],
            name,
            list,
            doc: results.doc.join("/"),
        })
    }

    fn range(&self, row: usize) -> std::ops::Range<usize> {
        if self.list.is_null(row) {
            return 0..0;
        }
        let offsets = self.list.value_offsets();
        offsets[row] as usize..offsets[row + 1] as usize
    }

    /// The doc ids of row `row` in ranking order: the order their ranks
    /// or scores give ([`ranked_order`]), else list order.
    ///
    /// # Errors
    /// `bad_result` for a null doc id, `bad_rank` or `bad_score` for a
    /// rank or score that cannot rank its result, `unranked_result` for a
    /// result without one in a list whose others have one.
    fn docs(&self, row: usize) -> Result<Vec<Cow<'a, str>>, Invalid> {
        let mut docs = self.listed_docs(row)?;
        let [(ranks, rank), (scores, score)] = &self.keys;
        if !ranks.is_present() && !scores.is_present() {
            return Ok(docs);
        }
        let start = self.range(row).start;
        let keys = (self.range(row))
            .map(|i| {
                let at =
                    |what: &str| format!("result {} in '{}': '{what}'", i - start + 1, self.name);
                let rank = (!ranks.is_null(i))
                    .then(|| RankKey::whole_rank(ranks.whole(i), &at(rank)))
                    .transpose()
                    .map_err(|detail| Invalid::new(RejectReason::BadRank, detail))?;
                let score = match scores.number(i) {
                    None => None,
                    Some(s) if s.is_finite() => Some(RankKey::score(s)),
                    Some(_) => {
                        let detail = format!("{} is not a finite number", at(score));
                        return Err(Invalid::new(RejectReason::BadScore, detail));
                    }
                };
                Ok(ResultKeys { rank, score })
            })
            .collect::<Result<Vec<_>, Invalid>>()?;
        Ok(match ranked_order(&keys, &docs, [rank, score])? {
            Some(order) => permuted(&mut docs, &order),
            None => docs,
        })
    }

    /// The doc ids of row `row` in list order.
    fn listed_docs(&self, row: usize) -> Result<Vec<Cow<'a, str>>, Invalid> {
        let range = self.range(row);
        let start = range.start;
        range
            .map(|i| {
                self.ids.id(i).ok_or_else(|| {
                    let what = if self.doc.is_empty() {
                        "a null doc id".to_string()
                    } else {
                        format!("no '{}'", self.doc)
                    };
                    Invalid::new(
                        RejectReason::BadResult,
                        format!("result {} in '{}' has {what}", i - start + 1, self.name),
                    )
                })
            })
            .collect()
    }

    fn excerpt(&self, row: usize) -> Value {
        if self.list.is_null(row) {
            return Value::Null;
        }
        let ids = self.range(row).take(EXCERPT_RESULTS);
        Value::Array(
            ids.map(|i| self.ids.id(i).map_or(Value::Null, |id| id.into()))
                .collect(),
        )
    }
}
