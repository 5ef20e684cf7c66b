//! How a Parquet file's rows read, decided once per file from its schema:
//! one row per search event (wide), one row per (event, result) with a
//! rank (long), or Phoenix's span dataframe (spans). The columns each
//! layout needs are found and their types checked here, so that a column
//! of the wrong type stops the input with one error, not a reject per row;
//! the workers then decode those columns alone.
//!
//! A flag names a column; a JSON pointer (`/a/b`) names field `b` of the
//! struct column `a`. Phoenix's columns have dots in their names
//! (`attributes.input.value`), so dots never split a name. Where the
//! pointer reaches a string column and goes on, the rest points into the
//! JSON that column holds (LangSmith's export keeps `outputs` and `extra`
//! so): the query id and the results may be found that way.
//!
//! A flag that names a key of the file's Hive partition (a `key=value`
//! folder above it; pyarrow's `write_to_dataset` and Spark's `partitionBy`
//! keep those values in the path alone) reads the partition's value for
//! every row, and no column of that name is decoded, as Spark reads a
//! partition column.

use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::ProjectionMask;
use parquet::schema::types::SchemaDescriptor;

use crate::base::failure::Setting;
use crate::base::options::SpanKind;
use crate::io::parquet::{show, wrong_type, Want};
use crate::logs::jsonl::{FieldNames, FieldPath};
use crate::logs::otlp::{DocField, QuerySource, SpanFields};
use crate::logs::partition::partition_value;
use crate::logs::seen::{FieldFlag, FieldsSeen};

/// A column, or a field inside struct columns: the names from the top.
pub type ColumnPath = Vec<String>;

/// How the rows of a file read.
#[derive(Debug, Clone)]
pub enum Layout {
    /// One row per search event, its results in a list column.
    Wide(WideColumns),
    /// One row per (event, result): grouped by (run, stage, query) and
    /// ranked by the rank column.
    Long(LongColumns),
    /// Phoenix's span dataframe: retriever and reranker rows are captures.
    Spans(SpanColumns),
}

/// Where every row finds a field: in a column, or in the file's Hive
/// partition, whose one value every row shares.
#[derive(Debug, Clone)]
pub enum Source {
    Column(ColumnPath),
    Partition { key: String, value: String },
}

/// The columns of an event's key; an absent stage or run column gives
/// every row the default.
#[derive(Debug, Clone)]
pub struct KeyColumns {
    pub query: Located,
    pub stage: Option<Source>,
    pub run: Option<Source>,
}

/// A column, or a value inside the JSON a string column holds.
#[derive(Debug, Clone)]
pub struct Located {
    pub column: ColumnPath,
    /// Where in the column's JSON, when the column holds JSON text.
    pub inside: Option<FieldPath>,
}

/// The wide layout's columns.
#[derive(Debug, Clone)]
pub struct WideColumns {
    pub key: KeyColumns,
    pub results: ResultsColumn,
    pub latency: Option<ColumnPath>,
    pub context: Option<ColumnPath>,
    pub outcome: Option<ColumnPath>,
    /// The capture time, when `--time-field` names it.
    pub time: Option<Source>,
    /// Per field sliced by, where it is, if the file has it.
    pub slices: Vec<Option<Source>>,
}

/// Where a row's results are.
#[derive(Debug, Clone)]
pub enum ResultsColumn {
    /// A list column.
    List(Results),
    /// An array inside the JSON a string column holds, its elements read
    /// as a JSONL record's results are (`doc` is `--doc-field`).
    Json {
        located: Located,
        doc: Option<FieldPath>,
    },
}

/// A list column of results, and where in an element the doc id is:
/// empty for a list of ids, the struct fields leading to it otherwise.
#[derive(Debug, Clone)]
pub struct Results {
    pub list: ColumnPath,
    pub doc: Vec<String>,
    /// The struct fields of an element's rank and score, where its
    /// struct has them: the list is then ranked by them.
    pub keys: [Option<String>; 2],
}

/// The long layout's columns.
#[derive(Debug, Clone)]
pub struct LongColumns {
    pub key: KeyColumns,
    pub doc: ColumnPath,
    /// The rank column, or with `by_score` the score column.
    pub rank: ColumnPath,
    /// Whether the results are ranked by their scores, higher first, as
    /// trec_eval ranks a run's lines (no rank column, a score column).
    pub by_score: bool,
}

/// Where a Phoenix row keeps its query id or text: tried in order.
#[derive(Debug, Clone)]
pub enum QueryColumn {
    /// A column of ids (or of question texts, joined by text).
    Id(ColumnPath),
    /// A string column holding a JSON object with `query_id` (a
    /// `metadata` attribute left as text).
    JsonQueryId(ColumnPath),
}

/// Phoenix's span columns; the attribute `x` of a span is the column
/// `attributes.x`.
#[derive(Debug, Clone)]
pub struct SpanColumns {
    pub kind: ColumnPath,
    pub name: Option<ColumnPath>,
    /// Per capture kind (retriever, reranker): where its query is.
    pub query: [Vec<QueryColumn>; 2],
    /// Per capture kind: its documents.
    pub documents: [Option<Results>; 2],
    pub run: Option<Source>,
    pub start: Option<ColumnPath>,
    pub end: Option<ColumnPath>,
    /// The capture time, when `--time-field` names it (else `start`).
    pub time: Option<Source>,
    /// Where a span sits in its trace, when these hold strings or
    /// integers: `context.trace_id`, `context.span_id`, `parent_id`.
    pub trace: Option<ColumnPath>,
    pub span_id: Option<ColumnPath>,
    pub parent: Option<ColumnPath>,
}

/// The Phoenix span kind columns, by preference.
const SPAN_KIND_COLUMNS: [&str; 2] = ["span_kind", "attributes.openinference.span.kind"];
/// The Phoenix document columns of a retriever and of a reranker span.
const DOCUMENT_COLUMNS: [&str; 2] = [
    "attributes.retrieval.documents",
    "attributes.reranker.output_documents",
];
/// The capture kinds of Phoenix rows, in the order of the arrays above.
pub const SPAN_KINDS: [SpanKind; 2] = [SpanKind::Retriever, SpanKind::Reranker];

/// A layout with the columns it reads, and which of the fields the user
/// named the schema has.
pub struct Planned {
    pub layout: Layout,
    pub seen: FieldsSeen,
    wanted: Vec<ColumnPath>,
}

impl Planned {
    /// The leaf columns of a Parquet file with `schema` under the wanted
    /// paths: all that is decoded.
    pub fn mask(&self, schema: &Schema, parquet: &SchemaDescriptor) -> ProjectionMask {
        let columns = Columns {
            schema,
            partition: &[],
            wanted: self.wanted.clone(),
        };
        columns.mask(parquet)
    }
}

/// Decide how the rows of a file or table with `schema`, in the Hive
/// `partition` (none for a table), read.
///
/// # Errors
/// A column a layout needs is missing or of the wrong type; the message
/// names the column, the type found and the type expected. A capture time
/// the file has nowhere; the message lists the fields it has.
pub fn plan(
    schema: &Schema,
    names: &FieldNames,
    spans: &SpanFields,
    partition: &[(String, String)],
) -> Result<Planned, String> {
    let mut columns = Columns {
        schema,
        partition,
        wanted: Vec::new(),
    };
    // Phoenix's retrieved-documents frame (its index `context.span_id`,
    // `document_position`) names each document by its text and position
    // only: nothing in it says which document was retrieved.
    if names.doc.is_none() && columns.has("document_position") && columns.has("context.span_id") {
        return Err(
            "this is Phoenix's retrieved-documents frame (get_retrieved_documents()), \
                    which names each document by its text and position, never by an id, so \
                    it cannot be graded; save the spans instead (get_spans_dataframe()), \
                    whose retrieval documents hold their ids (docs/reference.md, \"Parquet\")"
                .to_string(),
        );
    }
    let layout = if SPAN_KIND_COLUMNS.iter().any(|c| columns.has(c))
        && DOCUMENT_COLUMNS.iter().any(|c| columns.has(c))
    {
        if let Some(field) = names.slices.first() {
            return Err(unsliced(field, "of Phoenix spans"));
        }
        Layout::Spans(columns.spans(spans)?)
    } else {
        let results = path(names.results.as_deref(), FieldNames::RESULTS);
        let rank = path(names.rank.as_deref(), FieldNames::RANK);
        let key = KeyColumns {
            query: columns.require_located(
                query_path(&columns, names.query.as_deref()),
                Want::Id,
                &format!("the query id; {} names another", Setting::QueryField),
            )?,
            stage: columns.field(path(names.stage.as_deref(), FieldNames::STAGE), Want::Text)?,
            run: columns.field(path(names.run.as_deref(), FieldNames::RUN), Want::Text)?,
        };
        let score = path(None, FieldNames::SCORE);
        let ranked = columns.find(&rank).is_some();
        let has_results =
            columns.find(&results).is_some() || columns.json_split(&results).is_some();
        if !has_results && (ranked || columns.find(&score).is_some()) {
            let doc = path(names.doc.as_deref(), "doc_id");
            let doc = columns.require(
                doc,
                Want::Id,
                &format!("a result's doc id; {} names another", Setting::DocField),
            )?;
            if names.time.is_some() {
                return Err(format!(
                    "{} is not read in a log of one row per result, whose rankings are \
                     spread over rows; grade it without, or log one row per search event",
                    Setting::TimeField
                ));
            }
            let (rank, by_score) = match ranked {
                true => (columns.require(rank, Want::Whole, "")?, false),
                false => (columns.require(score, Want::Number, "")?, true),
            };
            if let Some(field) = names.slices.first() {
                return Err(unsliced(field, "of one row per result"));
            }
            Layout::Long(LongColumns {
                key,
                doc,
                rank,
                by_score,
            })
        } else {
            let doc = names.doc.as_deref().map(FieldPath::parse);
            let results = match columns.json_text(&results) {
                Some(located) => ResultsColumn::Json { located, doc },
                None => {
                    let doc = doc.as_ref().map(FieldPath::segments);
                    let mut list = columns.results(results, doc, &["doc_id", "id"])?;
                    let rank = names.rank.as_deref().unwrap_or(FieldNames::RANK);
                    columns.result_keys(&mut list, [rank, FieldNames::SCORE])?;
                    ResultsColumn::List(list)
                }
            };
            Layout::Wide(WideColumns {
                key,
                results,
                latency: columns.optional(
                    path(names.latency.as_deref(), FieldNames::LATENCY),
                    Want::Number,
                )?,
                context: columns.optional(
                    path(names.context.as_deref(), FieldNames::CONTEXT),
                    Want::Number,
                )?,
                outcome: columns.optional(
                    path(names.outcome.as_deref(), FieldNames::OUTCOME),
                    Want::Bool,
                )?,
                time: columns.time(names.time.as_deref())?,
                slices: (names.slices.iter())
                    .map(|field| columns.field(path(Some(field), ""), Want::Id))
                    .collect::<Result<_, _>>()?,
            })
        }
    };
    Ok(Planned {
        seen: columns.seen(names, &layout),
        layout,
        wanted: columns.wanted,
    })
}

/// Why a table `of_what` (its layout) is not sliced by `field`: its
/// rankings are not one row each, so no one cell is a capture's value.
fn unsliced(field: &str, of_what: &str) -> String {
    format!(
        "{} {field}: a table {of_what} is not sliced by log fields; only a table of one row \
         per search event (its results in a list column) is",
        Setting::SliceBy
    )
}

/// The query id column: the one `--query-field` names, else `query_id`,
/// else ranx's `q_id` when the table has no `query_id`.
fn query_path(columns: &Columns<'_>, named: Option<&str>) -> ColumnPath {
    let default = match named {
        None if !columns.has(FieldNames::QUERY) && columns.has(FieldNames::QUERY_ALIAS) => {
            FieldNames::QUERY_ALIAS
        }
        _ => FieldNames::QUERY,
    };
    path(named, default)
}

/// The column path a flag names, or the default.
fn path(named: Option<&str>, default: &str) -> ColumnPath {
    FieldPath::parse(named.unwrap_or(default))
        .segments()
        .to_vec()
}

/// Finds columns in a schema, or fields in the file's Hive partition, and
/// remembers which columns are wanted.
struct Columns<'s> {
    schema: &'s Schema,
    partition: &'s [(String, String)],
    wanted: Vec<ColumnPath>,
}

impl Columns<'_> {
    fn has(&self, name: &str) -> bool {
        self.schema.field_with_name(name).is_ok()
    }

    /// The field at `path`, through struct columns.
    fn find(&self, path: &[String]) -> Option<&Field> {
        let (top, inner) = path.split_first()?;
        let mut field = self.schema.field_with_name(top).ok()?;
        for name in inner {
            field = child(field, name)?;
        }
        Some(field)
    }

    /// The column at `path`, which must hold `want` if present.
    fn optional(&mut self, path: ColumnPath, want: Want) -> Result<Option<ColumnPath>, String> {
        let Some(field) = self.find(&path) else {
            return Ok(None);
        };
        if !want.fits(field.data_type()) {
            return Err(wrong_type(&path, field.data_type(), want.expected()));
        }
        self.wanted.push(path.clone());
        Ok(Some(path))
    }

    /// Where the field at `path` is: the partition's value if its key is
    /// the field's name, else the column at `path`, which must hold `want`
    /// if present.
    fn field(&mut self, path: ColumnPath, want: Want) -> Result<Option<Source>, String> {
        if let Some(value) = partition_value(self.partition, &path) {
            return Ok(Some(Source::Partition {
                key: path.concat(),
                value: value.to_string(),
            }));
        }
        Ok(self.optional(path, want)?.map(Source::Column))
    }

    /// The column at `path` if it holds `want`: a column read only to tell
    /// more (where a span sits in its trace), whose absence or another
    /// type costs nothing but that.
    fn if_fits(&mut self, path: ColumnPath, want: Want) -> Option<ColumnPath> {
        self.optional(path, want).ok().flatten()
    }

    /// Where `path` points into the JSON of a string column: the
    /// column its first segments name, the rest a pointer; `None` when a
    /// column or struct field has the whole path, or no string column
    /// starts it.
    fn json_text(&mut self, path: &[String]) -> Option<Located> {
        let split = self.json_split(path)?;
        let column = path[..split].to_vec();
        self.wanted.push(column.clone());
        Some(Located {
            column,
            inside: Some(FieldPath::from_segments(&path[split..])),
        })
    }

    /// How many segments of `path` name the string column whose JSON
    /// the rest points into, as [`Columns::json_text`] finds it.
    fn json_split(&self, path: &[String]) -> Option<usize> {
        if self.find(path).is_some() {
            return None;
        }
        (1..path.len()).find(|&i| {
            self.find(&path[..i])
                .is_some_and(|f| Want::Text.fits(f.data_type()))
        })
    }

    /// As [`Columns::require`], or a value inside a string column's JSON.
    fn require_located(
        &mut self,
        path: ColumnPath,
        want: Want,
        what: &str,
    ) -> Result<Located, String> {
        if let Some(located) = self.json_text(&path) {
            return Ok(located);
        }
        let column = self.require(path, want, what)?;
        Ok(Located {
            column,
            inside: None,
        })
    }

    /// The column at `path`, which must be there and hold `want`.
    fn require(&mut self, path: ColumnPath, want: Want, what: &str) -> Result<ColumnPath, String> {
        match self.optional(path.clone(), want)? {
            Some(path) => Ok(path),
            None if what.is_empty() => Err(format!("no column '{}'", show(&path))),
            None => Err(format!("no column '{}' ({what})", show(&path))),
        }
    }

    /// A list column of results: a list of ids, or of structs holding
    /// the id at `doc` (else at the first of `defaults` it has).
    fn results(
        &mut self,
        list: ColumnPath,
        doc: Option<&[String]>,
        defaults: &[&str],
    ) -> Result<Results, String> {
        let expected = "a list of doc ids or of structs holding one";
        let field = self.find(&list).ok_or_else(|| {
            format!(
                "no column '{}' (the results; {} names another; a log of one row per result \
                 needs a '{}' column, or {}, or a '{}' column)",
                show(&list),
                Setting::ResultsField,
                FieldNames::RANK,
                Setting::RankField,
                FieldNames::SCORE
            )
        })?;
        let DataType::List(element) = field.data_type() else {
            return Err(wrong_type(&list, field.data_type(), expected));
        };
        let doc: Vec<String> = match element.data_type() {
            DataType::Struct(fields) => match doc {
                Some(doc) => doc.to_vec(),
                None => {
                    let default = defaults
                        .iter()
                        .find(|d| fields.iter().any(|f| f.name() == *d));
                    vec![default.unwrap_or(&defaults[0]).to_string()]
                }
            },
            data_type if Want::Id.fits(data_type) => Vec::new(),
            data_type => {
                return Err(
                    wrong_type(&list, &DataType::List(element.clone()), expected)
                        + &format!(" (its elements are {data_type})"),
                )
            }
        };
        let mut id = element.as_ref();
        for name in &doc {
            id = child(id, name).ok_or_else(|| {
                format!(
                    "the results in column '{}' have no field '{}' ({} names the doc id)",
                    show(&list),
                    doc.join("/"),
                    Setting::DocField
                )
            })?;
        }
        if !Want::Id.fits(id.data_type()) {
            let mut at = list.clone();
            at.extend(doc.iter().cloned());
            return Err(wrong_type(&at, id.data_type(), Want::Id.expected()));
        }
        let mut wanted = list.clone();
        wanted.extend(doc.iter().cloned());
        self.wanted.push(wanted);
        Ok(Results {
            list,
            doc,
            keys: [None, None],
        })
    }

    /// The fields `names` (a rank's, a score's) of the structs of the
    /// list `results`, where they have them: a rank must hold whole
    /// numbers, a score numbers.
    fn result_keys(&mut self, results: &mut Results, names: [&str; 2]) -> Result<(), String> {
        let Some(DataType::List(element)) = self.find(&results.list).map(|f| f.data_type().clone())
        else {
            return Ok(());
        };
        for ((key, name), want) in (results.keys.iter_mut())
            .zip(names)
            .zip([Want::Whole, Want::Number])
        {
            let Some(field) = child(&element, name) else {
                continue;
            };
            let mut path = results.list.clone();
            path.push(name.to_string());
            if !want.fits(field.data_type()) {
                return Err(wrong_type(&path, field.data_type(), want.expected()));
            }
            self.wanted.push(path);
            *key = Some(name.to_string());
        }
        Ok(())
    }

    fn spans(&mut self, spans: &SpanFields) -> Result<SpanColumns, String> {
        let attribute = |name: &str| vec![format!("attributes.{name}")];
        let kind = SPAN_KIND_COLUMNS
            .iter()
            .map(|c| vec![c.to_string()])
            .find(|c| self.find(c).is_some())
            .unwrap_or_default();
        let kind = self.require(kind, Want::Text, "")?;
        let name = self.optional(vec!["name".to_string()], Want::Text)?;
        let doc: Vec<String> = match spans.doc() {
            DocField::Id => vec!["document.id".to_string()],
            DocField::Key(key) => vec![key.clone()],
            DocField::Metadata(pointer) => {
                let mut path = vec!["document.metadata".to_string()];
                path.extend(pointer.segments().iter().cloned());
                path
            }
        };
        let mut query = [Vec::new(), Vec::new()];
        let mut documents = [None, None];
        for (i, kind) in SPAN_KINDS.into_iter().enumerate() {
            query[i] = match spans.query_source(kind) {
                QuerySource::Named(key) => self
                    .optional(FieldPath::parse(key).segments().to_vec(), Want::Id)?
                    .map(QueryColumn::Id)
                    .into_iter()
                    .collect(),
                QuerySource::Text(key) => self
                    .optional(attribute(key), Want::Text)?
                    .map(QueryColumn::Id)
                    .into_iter()
                    .collect(),
                QuerySource::Default => {
                    let metadata = attribute("metadata");
                    let mut found = Vec::new();
                    match self.find(&metadata).map(|f| f.data_type()) {
                        Some(DataType::Utf8) => {
                            self.wanted.push(metadata.clone());
                            found.push(QueryColumn::JsonQueryId(metadata));
                        }
                        Some(DataType::Struct(_)) => {
                            let mut id = metadata;
                            id.push("query_id".to_string());
                            found.extend(self.optional(id, Want::Id)?.map(QueryColumn::Id));
                        }
                        _ => {}
                    }
                    found.extend(
                        self.optional(attribute("query_id"), Want::Id)?
                            .map(QueryColumn::Id),
                    );
                    found
                }
            };
            let list = vec![DOCUMENT_COLUMNS[i].to_string()];
            if self.find(&list).is_some() {
                documents[i] = Some(self.results(list, Some(&doc), &[])?);
            }
        }
        let run = match spans.run() {
            Some(run) => self.field(FieldPath::parse(run).segments().to_vec(), Want::Text)?,
            None => None,
        };
        Ok(SpanColumns {
            kind,
            name,
            query,
            documents,
            run,
            start: self.optional(vec!["start_time".to_string()], Want::Time)?,
            time: self.time(spans.time())?,
            end: self.optional(vec!["end_time".to_string()], Want::Time)?,
            trace: self.if_fits(vec!["context.trace_id".to_string()], Want::Id),
            span_id: self.if_fits(vec!["context.span_id".to_string()], Want::Id),
            parent: self.if_fits(vec!["parent_id".to_string()], Want::Id),
        })
    }

    /// Where the capture time `named` names is, if it names one: it must
    /// be there, a column or the partition's.
    fn time(&mut self, named: Option<&str>) -> Result<Option<Source>, String> {
        let Some(named) = named else {
            return Ok(None);
        };
        let path = FieldPath::parse(named).segments().to_vec();
        match self.field(path, Want::Moment)? {
            Some(source) => Ok(Some(source)),
            None => Err(self.fields().refusal(FieldFlag::Time, named)),
        }
    }

    /// The fields every row has: each column, and each key of the
    /// partition.
    fn fields(&self) -> FieldsSeen {
        let mut seen = FieldsSeen::default();
        for field in self.schema.fields() {
            seen.note(field.name());
        }
        for (key, _) in self.partition {
            seen.note(key);
        }
        seen
    }

    /// Which of the fields `names` gives the schema has, read as
    /// `layout` reads it: a column or a struct field where a flag points,
    /// or a result's field; every column, and every field of a list of
    /// result structs, noted. A pointer into a column's JSON, and a doc id
    /// in results `layout` found it in, count as had.
    fn seen(&self, names: &FieldNames, layout: &Layout) -> FieldsSeen {
        let mut seen = self.fields();
        let results = match layout {
            Layout::Wide(WideColumns {
                results: ResultsColumn::List(results),
                ..
            }) => Some(results),
            _ => None,
        };
        let element = results
            .and_then(|results| self.find(&results.list))
            .and_then(|list| match list.data_type() {
                DataType::List(element) => Some(element),
                _ => None,
            });
        if let Some(DataType::Struct(fields)) = element.map(|e| e.data_type()) {
            for field in fields {
                seen.note_result(field.name());
            }
        }
        for (flag, given) in names.given() {
            let at = path(Some(given), "");
            let found = self.find(&at).is_some()
                || self.json_split(&at).is_some()
                || partition_value(self.partition, &at).is_some()
                || match flag {
                    FieldFlag::Doc => !matches!(layout, Layout::Long(_)),
                    FieldFlag::Rank => results.is_some_and(|r| r.keys[0].is_some()),
                    _ => false,
                };
            if found {
                seen.mark(flag);
            }
        }
        seen
    }

    /// The leaf columns under the wanted paths: all that is decoded.
    fn mask(&self, parquet: &SchemaDescriptor) -> ProjectionMask {
        let mut leaves = Vec::new();
        for field in self.schema.fields() {
            leaf_paths(field, &mut vec![field.name().clone()], &mut leaves);
        }
        if leaves.len() != parquet.num_columns() {
            // Not a schema whose leaves are known one for one: decode the
            // wanted columns whole.
            let roots = (self.schema.fields().iter().enumerate())
                .filter(|(_, f)| self.wanted.iter().any(|w| &w[0] == f.name()))
                .map(|(i, _)| i);
            return ProjectionMask::roots(parquet, roots);
        }
        let wanted = (leaves.iter().enumerate())
            .filter(|(_, leaf)| self.wanted.iter().any(|w| leaf.starts_with(w)))
            .map(|(i, _)| i);
        ProjectionMask::leaves(parquet, wanted)
    }
}

/// The field `name` of a struct field.
fn child<'f>(field: &'f Field, name: &str) -> Option<&'f Field> {
    match field.data_type() {
        DataType::Struct(fields) => fields.iter().find(|f| f.name() == name).map(|f| f.as_ref()),
        _ => None,
    }
}

/// The path of struct field names to each leaf under `field`, lists
/// looked through: Parquet's leaf columns, in order.
fn leaf_paths(field: &Field, path: &mut Vec<String>, leaves: &mut Vec<ColumnPath>) {
    match field.data_type() {
        DataType::Struct(fields) => {
            for child in fields {
                path.push(child.name().clone());
                leaf_paths(child, path, leaves);
                path.pop();
            }
        }
        DataType::List(item) | DataType::LargeList(item) | DataType::FixedSizeList(item, _) => {
            leaf_paths(item, path, leaves)
        }
        DataType::Map(entries, _) => leaf_paths(entries, path, leaves),
        _ => leaves.push(path.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_schema::Fields;
    use std::sync::Arc;

    #[test]
    fn leaves_are_found_through_lists_and_structs() {
        let result = Fields::from(vec![
            Field::new("doc_id", DataType::Utf8, true),
            Field::new("score", DataType::Float64, true),
        ]);
        let list = DataType::List(Arc::new(Field::new(
            "element",
            DataType::Struct(result),
            true,
        )));
        let field = Field::new("results", list, true);
        let mut leaves = Vec::new();
        leaf_paths(&field, &mut vec!["results".to_string()], &mut leaves);
        assert_eq!(leaves, [["results", "doc_id"], ["results", "score"]]);
    }

    #[test]
    fn a_column_of_the_wrong_type_names_what_it_found() {
        let schema = Schema::new(vec![
            Field::new("query_id", DataType::Utf8, true),
            Field::new("results", DataType::Int64, true),
        ]);
        let mut columns = Columns {
            schema: &schema,
            partition: &[],
            wanted: Vec::new(),
        };
        let err = columns
            .results(vec!["results".to_string()], None, &["doc_id"])
            .unwrap_err();
        assert_eq!(
            err,
            "column 'results' is Int64, expected a list of doc ids or of structs holding one"
        );
    }
}
