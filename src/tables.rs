//! Arrow tables handed over in memory instead of files: how a library
//! caller, and the Python package, grades a dataframe. A table's columns
//! are those of Parquet logs or labels (docs/guide.md, "Arrow tables").

use std::fmt;
use std::sync::Arc;

use anyhow::{ensure, Context, Result};
use arrow_array::{Array, RecordBatch};
use arrow_data::ArrayData;
use arrow_schema::{DataType, Field, Fields, Schema, SchemaRef};
use xxhash_rust::xxh3::Xxh3;

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
    ) -> Result<Self> {
        let name = name.into();
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

/// The type a Parquet file decodes `data_type` to: plain strings for
/// large, view and dictionary ones, plain lists for large and fixed-size
/// ones, through lists and structs.
fn plain_type(data_type: &DataType) -> DataType {
    match data_type {
        DataType::LargeUtf8 | DataType::Utf8View => DataType::Utf8,
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
