//! Arrow tables handed over in memory instead of files: how a library
//! caller, and the Python package, grades a dataframe; and streams of
//! record batches, graded as they are read, for logs larger than memory.
//! A table's columns are those of Parquet logs or labels
//! (docs/reference.md, "Arrow tables").

use std::fmt;
use std::sync::{Arc, Mutex};

use anyhow::{bail, ensure, Context, Result};
use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, BinaryArray, Int64Array, RecordBatch, RecordBatchReader};
use arrow_data::ArrayData;
use arrow_schema::{DataType, Field, Fields, Schema, SchemaRef};
use xxhash_rust::xxh3::Xxh3;

use crate::base::failure::{Error, ErrorKind, OfKind};

/// Record batches of one schema, with the name that messages and
/// summary.json give them. Cloning shares the batches.
#[derive(Clone)]
pub struct ArrowTable {
    name: String,
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
}

impl fmt::Debug for ArrowTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ArrowTable")
            .field("name", &self.name)
            .field("rows", &self.rows())
            .finish_non_exhaustive()
    }
}

impl ArrowTable {
    /// A table named `name` (in messages, rejects.jsonl and summary.json)
    /// of `batches`, each with `schema`. Large, view and dictionary
    /// strings, and large or fixed-size lists (as pandas, polars and
    /// pyarrow make them), are cast to plain strings and lists, the types
    /// Parquet files decode to; other columns are kept as they are.
    ///
    /// # Errors
    /// A batch whose schema is another; a column that cannot be cast.
    pub fn new(
        name: impl Into<String>,
        schema: SchemaRef,
        batches: Vec<RecordBatch>,
    ) -> Result<Self, Error> {
        Ok(Self::cast(name.into(), schema, batches)?)
    }

    /// [`ArrowTable::new`], its error as it arose.
    fn cast(name: String, schema: SchemaRef, batches: Vec<RecordBatch>) -> Result<Self> {
        let cast = PlainCast::new(schema);
        let batches = (batches.into_iter().enumerate())
            .map(|(i, batch)| cast.batch(i, batch).with_context(|| name.clone()))
            .collect::<Result<_>>()?;
        Ok(ArrowTable {
            name,
            schema: cast.plain,
            batches,
        })
    }

    /// The name it was given.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its schema.
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// Its batches, in order.
    pub fn batches(&self) -> &[RecordBatch] {
        &self.batches
    }

    /// Its rows, over all batches.
    pub fn rows(&self) -> u64 {
        self.batches.iter().map(|b| b.num_rows() as u64).sum()
    }

    /// The memory its arrays hold.
    pub fn bytes(&self) -> u64 {
        self.batches.iter().map(batch_bytes).sum()
    }

    /// The xxh3-128 of its schema and of every array's buffers, in hex:
    /// the same table hashes the same, as a file's bytes do. A table cut
    /// into other batches, or sliced, may hash otherwise.
    pub fn content_hash(&self) -> String {
        let mut digest = TableDigest::new(&self.schema);
        self.batches.iter().for_each(|batch| digest.add(batch));
        digest.hash()
    }
}

/// Record batches handed over as a stream, as a reader of a dataset or of
/// a query's streamed results gives them: read once, a batch at a time, so
/// that a grading holds the batches being graded rather than the stream.
/// Each batch is cast to plain types as [`ArrowTable::new`] casts a
/// table's. Clones share the stream, which only one of them reads.
#[derive(Clone)]
pub struct ArrowStream {
    name: String,
    cast: Arc<PlainCast>,
    /// The batches, until they are read.
    unread: Arc<Mutex<Option<Box<dyn RecordBatchReader + Send>>>>,
}

impl fmt::Debug for ArrowStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ArrowStream")
            .field("name", &self.name)
            .field("read", &self.was_read())
            .finish_non_exhaustive()
    }
}

impl ArrowStream {
    /// The stream of `reader`'s batches, named `name` (in messages,
    /// rejects.jsonl and summary.json); nothing is read until it is
    /// graded.
    pub fn new(name: impl Into<String>, reader: impl RecordBatchReader + Send + 'static) -> Self {
        ArrowStream {
            name: name.into(),
            cast: Arc::new(PlainCast::new(reader.schema())),
            unread: Arc::new(Mutex::new(Some(Box::new(reader)))),
        }
    }

    /// The name it was given.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its schema, of plain types.
    pub fn schema(&self) -> &SchemaRef {
        &self.cast.plain
    }

    /// Whether its batches were taken to be read.
    pub fn was_read(&self) -> bool {
        self.unread.lock().map_or(true, |unread| unread.is_none())
    }

    /// Its batches, in order, each cast to plain types as it is read.
    ///
    /// # Errors
    /// The stream was read already (then nothing is read); as it is read, a
    /// batch that cannot be read, of another schema, or with a column that
    /// cannot be cast.
    fn read(&self) -> Result<impl Iterator<Item = Result<RecordBatch>> + '_> {
        let taken = self.unread.lock().ok().and_then(|mut unread| unread.take());
        let Some(reader) = taken else {
            bail!(
                "a stream of record batches is read once, and this one was read already: \
                 hand over a new stream, or a table"
            );
        };
        Ok(reader.enumerate().map(|(i, batch)| {
            let batch = batch.with_context(|| format!("record batch {i} cannot be read"))?;
            self.cast.batch(i, batch)
        }))
    }
}

/// Search events handed over in memory: a table held whole, which can be
/// read again, or a stream, read once as it is graded.
#[derive(Debug, Clone)]
pub enum LogTable {
    /// A table held whole.
    Whole(ArrowTable),
    /// A stream of batches.
    Stream(ArrowStream),
}

impl From<ArrowTable> for LogTable {
    fn from(table: ArrowTable) -> Self {
        LogTable::Whole(table)
    }
}

impl From<ArrowStream> for LogTable {
    fn from(stream: ArrowStream) -> Self {
        LogTable::Stream(stream)
    }
}

impl LogTable {
    /// The name it was given.
    pub fn name(&self) -> &str {
        match self {
            LogTable::Whole(table) => table.name(),
            LogTable::Stream(stream) => stream.name(),
        }
    }

    /// Its schema, of plain types.
    pub fn schema(&self) -> &SchemaRef {
        match self {
            LogTable::Whole(table) => table.schema(),
            LogTable::Stream(stream) => stream.schema(),
        }
    }

    /// Whether it can be read a second time: a stream cannot.
    pub fn can_read_again(&self) -> bool {
        matches!(self, LogTable::Whole(_))
    }

    /// The memory its arrays hold, when known before it is read.
    pub fn bytes(&self) -> Option<u64> {
        match self {
            LogTable::Whole(table) => Some(table.bytes()),
            LogTable::Stream(_) => None,
        }
    }

    /// Its batches in order, of plain types.
    ///
    /// # Errors
    /// As [`ArrowStream::read`].
    pub(crate) fn batches(&self) -> Result<Box<dyn Iterator<Item = Result<RecordBatch>> + '_>> {
        Ok(match self {
            LogTable::Whole(table) => Box::new(table.batches().iter().cloned().map(Ok)),
            LogTable::Stream(stream) => Box::new(stream.read()?),
        })
    }
}

/// The byte count and content hash of a table's batches, fed one at a
/// time: a stream of the same batches counts and hashes as the table does
/// ([`ArrowTable::content_hash`]), with no batch kept.
pub(crate) struct TableDigest {
    hasher: Xxh3,
    bytes: u64,
}

impl TableDigest {
    /// A digest of no batch yet, of a table of `schema`.
    pub(crate) fn new(schema: &Schema) -> Self {
        let mut hasher = Xxh3::new();
        hasher.update(format!("{:?}", schema.fields()).as_bytes());
        TableDigest { hasher, bytes: 0 }
    }

    /// Feed the next batch.
    pub(crate) fn add(&mut self, batch: &RecordBatch) {
        self.bytes += batch_bytes(batch);
        self.hasher.update(&(batch.num_rows() as u64).to_le_bytes());
        for column in batch.columns() {
            hash_data(&column.to_data(), &mut self.hasher);
        }
    }

    /// The memory the batches fed held.
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The xxh3-128 of the schema and batches fed, in hex.
    pub(crate) fn hash(&self) -> String {
        format!("{:032x}", self.hasher.digest128())
    }
}

/// The memory a batch's arrays hold.
fn batch_bytes(batch: &RecordBatch) -> u64 {
    (batch.columns().iter())
        .map(|c| c.get_array_memory_size() as u64)
        .sum()
}

/// Casts the batches of a schema as given to the plain types Parquet
/// files decode to ([`plain_type`]).
struct PlainCast {
    given: SchemaRef,
    plain: SchemaRef,
}

impl PlainCast {
    fn new(given: SchemaRef) -> Self {
        let plain: Fields = given.fields().iter().map(|f| plain_field(f)).collect();
        let plain = Arc::new(Schema::new_with_metadata(plain, given.metadata().clone()));
        PlainCast { given, plain }
    }

    /// `batch`, the `i`-th of its table or stream, of plain types.
    ///
    /// # Errors
    /// The batch has another schema than the one given; a column cannot
    /// be cast.
    fn batch(&self, i: usize, batch: RecordBatch) -> Result<RecordBatch> {
        ensure!(
            batch.schema().fields() == self.given.fields(),
            "record batch {i} has another schema than the table"
        );
        if self.plain == self.given {
            return Ok(batch);
        }
        let columns = (batch.columns().iter().zip(self.plain.fields()))
            .map(|(column, field)| {
                arrow_cast::cast(column, field.data_type())
                    .with_context(|| format!("column '{}' cannot be read", field.name()))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(RecordBatch::try_new(Arc::clone(&self.plain), columns)?)
    }
}

/// `field` with the plain type [`plain_type`] gives.
fn plain_field(field: &Field) -> Field {
    field.clone().with_data_type(plain_type(field.data_type()))
}

/// The type a Parquet file decodes `data_type` to: plain strings (and
/// bytes) for large, view and dictionary ones, plain lists for large and fixed-size
/// ones, through lists and structs.
fn plain_type(data_type: &DataType) -> DataType {
    match data_type {
        DataType::LargeUtf8 | DataType::Utf8View => DataType::Utf8,
        DataType::LargeBinary | DataType::BinaryView => DataType::Binary,
        DataType::Dictionary(_, values) if values.is_string() => DataType::Utf8,
        DataType::List(item)
        | DataType::LargeList(item)
        | DataType::ListView(item)
        | DataType::LargeListView(item)
        | DataType::FixedSizeList(item, _) => DataType::List(Arc::new(plain_field(item))),
        DataType::Struct(fields) => {
            DataType::Struct(fields.iter().map(|f| plain_field(f)).collect())
        }
        other => other.clone(),
    }
}

/// Feed an array's shape and bytes, its children's included, to `hasher`.
fn hash_data(data: &ArrayData, hasher: &mut Xxh3) {
    for number in [data.len(), data.offset(), data.buffers().len()] {
        hasher.update(&(number as u64).to_le_bytes());
    }
    if let Some(nulls) = data.nulls() {
        hasher.update(&(nulls.offset() as u64).to_le_bytes());
        hasher.update(nulls.validity());
    }
    for buffer in data.buffers() {
        hasher.update(&(buffer.len() as u64).to_le_bytes());
        hasher.update(buffer.as_slice());
    }
    for child in data.child_data() {
        hash_data(child, hasher);
    }
}

/// Log lines handed over with the place each was read from: the rows of a
/// table with columns `input` (an index into the input names), `line`
/// (its number there, from 1) and `text` (the line without its line end,
/// as bytes or a string). What a Spark partition of JSONL logs,
/// repartitioned by query id, holds: rgrade grades them as it would the
/// files, each line known by its file and line number.
#[derive(Debug, Clone)]
pub struct LogLines {
    inputs: Vec<String>,
    /// Each batch's `text` column.
    texts: Vec<BinaryArray>,
    /// Per input, its lines in order: (line number, batch, row).
    order: Vec<Vec<(u64, u32, u32)>>,
}

impl LogLines {
    /// The lines of `table`, whose `input` column indexes `inputs`.
    ///
    /// # Errors
    /// A column missing, of another type or with nulls; an input index out
    /// of range; a line number below 1, or the same line twice; a text
    /// holding a line break.
    pub fn new(inputs: Vec<String>, table: &ArrowTable) -> Result<Self, Error> {
        Ok(Self::read(inputs, table).of_kind(ErrorKind::Logs)?)
    }

    /// [`LogLines::new`], its error as it arose.
    fn read(inputs: Vec<String>, table: &ArrowTable) -> Result<Self> {
        let name = table.name();
        let schema = table.schema();
        let column = |name: &str| schema.index_of(name).ok();
        let (Some(input), Some(line), Some(text)) =
            (column("input"), column("line"), column("text"))
        else {
            bail!("{name}: log lines need the columns input, line and text");
        };
        let mut order = vec![Vec::new(); inputs.len()];
        let mut texts = Vec::with_capacity(table.batches().len());
        for (b, batch) in (0u32..).zip(table.batches()) {
            let cast = |i: usize, to: &DataType| {
                let column = batch.column(i);
                ensure!(
                    column.null_count() == 0,
                    "{name}: column '{}' holds nulls",
                    schema.field(i).name()
                );
                arrow_cast::cast(column, to).with_context(|| {
                    format!("{name}: column '{}' cannot be read", schema.field(i).name())
                })
            };
            let numbers = |i: usize| -> Result<Int64Array> {
                Ok(cast(i, &DataType::Int64)?
                    .as_primitive::<Int64Type>()
                    .clone())
            };
            let (input_of, line_of) = (numbers(input)?, numbers(line)?);
            for (row, (i, number)) in (0u32..).zip(input_of.values().iter().zip(line_of.values())) {
                let lines = usize::try_from(*i).ok().and_then(|i| order.get_mut(i));
                let (Some(lines), Ok(number @ 1..)) = (lines, u64::try_from(*number)) else {
                    bail!(
                        "{name}: row {row} of batch {b}: input {i}, line {number} is no line of the {} inputs given (inputs count from 0, lines from 1)",
                        inputs.len()
                    );
                };
                lines.push((number, b, row));
            }
            let text = cast(text, &DataType::Binary)?.as_binary::<i32>().clone();
            if let Some(row) =
                (0..text.len()).find(|&row| memchr::memchr(b'\n', text.value(row)).is_some())
            {
                bail!("{name}: row {row} of batch {b}: a line holds a line break; hand each line over alone");
            }
            texts.push(text);
        }
        for (lines, input) in order.iter_mut().zip(&inputs) {
            lines.sort_unstable();
            if let Some(pair) = lines.windows(2).find(|pair| pair[0].0 == pair[1].0) {
                bail!("{name}: line {} of {input} is given twice", pair[0].0);
            }
        }
        Ok(LogLines {
            inputs,
            texts,
            order,
        })
    }

    /// The names of the inputs the lines come from, in input order.
    pub fn inputs(&self) -> &[String] {
        &self.inputs
    }

    /// The lines of input `input` handed over, in line order: (number, text).
    pub fn lines(&self, input: usize) -> impl Iterator<Item = (u64, &[u8])> + '_ {
        (self.order.get(input).into_iter().flatten())
            .map(|&(number, batch, row)| (number, self.texts[batch as usize].value(row as usize)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{LargeStringArray, RecordBatchIterator, StringArray};

    /// Batches of one large-string column `id`, one per slice of `ids`.
    fn batches(ids: &[&[&str]]) -> (SchemaRef, Vec<RecordBatch>) {
        let schema = Arc::new(Schema::new(vec![Field::new(
            "id",
            DataType::LargeUtf8,
            false,
        )]));
        let batches = (ids.iter())
            .map(|ids| {
                let column = Arc::new(LargeStringArray::from(ids.to_vec()));
                RecordBatch::try_new(Arc::clone(&schema), vec![column]).unwrap()
            })
            .collect();
        (schema, batches)
    }

    fn stream(schema: &SchemaRef, batches: Vec<RecordBatch>) -> ArrowStream {
        let reader = RecordBatchIterator::new(batches.into_iter().map(Ok), Arc::clone(schema));
        ArrowStream::new("events", reader)
    }

    #[test]
    fn a_stream_is_cast_counted_and_hashed_as_the_same_batches_held_whole() {
        let (schema, batches) = batches(&[&["a", "b"], &["c"]]);
        let whole = ArrowTable::new("events", Arc::clone(&schema), batches.clone()).unwrap();
        let stream = stream(&schema, batches.clone());
        assert_eq!(stream.schema(), whole.schema());
        assert_eq!(stream.schema().field(0).data_type(), &DataType::Utf8);
        let mut digest = TableDigest::new(stream.schema());
        for batch in LogTable::from(stream).batches().unwrap() {
            let batch = batch.unwrap();
            assert_eq!(batch.column(0).as_string::<i32>().len(), batch.num_rows());
            digest.add(&batch);
        }
        assert_eq!(
            (digest.bytes(), digest.hash()),
            (whole.bytes(), whole.content_hash())
        );
    }

    #[test]
    fn a_stream_is_read_once() {
        let (schema, batches) = batches(&[&["a"]]);
        let stream = LogTable::from(stream(&schema, batches.clone()));
        assert!(!stream.can_read_again());
        assert_eq!(stream.bytes(), None);
        assert_eq!(stream.batches().unwrap().count(), 1);
        let err = stream.batches().err().unwrap();
        assert!(format!("{err}").contains("read once"), "{err}");
        let whole = LogTable::from(ArrowTable::new("events", schema, batches).unwrap());
        assert!(whole.can_read_again());
        assert_eq!(whole.batches().unwrap().count(), 1);
        assert_eq!(whole.batches().unwrap().count(), 1);
    }

    #[test]
    fn a_batch_of_another_schema_is_an_error_where_it_is_read() {
        let (schema, mut batches) = batches(&[&["a"]]);
        let other = RecordBatch::try_from_iter([(
            "doc",
            Arc::new(StringArray::from(vec!["x"])) as Arc<dyn Array>,
        )])
        .unwrap();
        batches.push(other);
        let stream = LogTable::from(stream(&schema, batches.clone()));
        let read: Vec<_> = stream.batches().unwrap().collect();
        assert!(read[0].is_ok());
        let err = read[1].as_ref().err().unwrap();
        assert_eq!(
            format!("{err}"),
            "record batch 1 has another schema than the table"
        );
    }
}
