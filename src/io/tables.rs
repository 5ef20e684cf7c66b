//! Arrow tables handed over in memory instead of files: how a library
//! caller, and the Python package, grades a dataframe. A table's columns
//! are those of Parquet logs or labels (docs/reference.md, "Arrow tables").

use std::fmt;
use std::sync::Arc;

use anyhow::{bail, ensure, Context, Result};
use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, BinaryArray, Int64Array, RecordBatch};
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
        let plain: Fields = schema.fields().iter().map(|f| plain_field(f)).collect();
        let plain = Arc::new(Schema::new_with_metadata(plain, schema.metadata().clone()));
        let mut cast = Vec::with_capacity(batches.len());
        for (i, batch) in batches.into_iter().enumerate() {
            ensure!(
                batch.schema().fields() == schema.fields(),
                "{name}: record batch {i} has another schema than the table"
            );
            cast.push(if plain == schema {
                batch
            } else {
                let columns = (batch.columns().iter().zip(plain.fields()))
                    .map(|(column, field)| {
                        arrow_cast::cast(column, field.data_type()).with_context(|| {
                            format!("{name}: column '{}' cannot be read", field.name())
                        })
                    })
                    .collect::<Result<Vec<_>>>()?;
                RecordBatch::try_new(Arc::clone(&plain), columns)?
            });
        }
        Ok(ArrowTable {
            name,
            schema: plain,
            batches: cast,
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
        let batch = |b: &RecordBatch| -> u64 {
            (b.columns().iter())
                .map(|c| c.get_array_memory_size() as u64)
                .sum()
        };
        self.batches.iter().map(batch).sum()
    }

    /// The xxh3-128 of its schema and of every array's buffers, in hex:
    /// the same table hashes the same, as a file's bytes do. A table cut
    /// into other batches, or sliced, may hash otherwise.
    pub fn content_hash(&self) -> String {
        let mut hasher = Xxh3::new();
        hasher.update(format!("{:?}", self.schema.fields()).as_bytes());
        for batch in &self.batches {
            hasher.update(&(batch.num_rows() as u64).to_le_bytes());
            for column in batch.columns() {
                hash_data(&column.to_data(), &mut hasher);
            }
        }
        format!("{:032x}", hasher.digest128())
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
