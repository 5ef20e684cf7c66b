//! Parquet logs, and search events handed over as Arrow tables, which
//! read as Parquet rows do (docs/reference.md, "Parquet"). Stage 1 for a Parquet file is
//! its footer: the reader thread [`open`]s it, decides the file's
//! [`layout`] from the schema, and sends one chunk per row group (hashing
//! the file's bytes as it goes, in [`crate::logs::read`]). Each worker
//! then decodes its own row group from the file ([`rows`]), so row groups
//! decode in parallel and memory stays a batch of rows per worker.
//!
//! Parquet needs a seekable file or an object read by ranges (its footer,
//! then each row group's column chunks): standard input or a compressed
//! stream holding Parquet is an error naming the input. A table, or a
//! stream of batches, is cut into parts of its batches, each chunk holding
//! its part of the batch for the workers to read in place: a batch is freed
//! once its parts are graded.

pub mod layout;
pub mod rows;

use std::fmt;
use std::sync::Arc;

use anyhow::{anyhow, bail, Result};
use arrow_array::RecordBatch;
use arrow_schema::Schema;
use parquet::arrow::arrow_reader::ArrowReaderMetadata;
use parquet::arrow::ProjectionMask;

use crate::io::parquet::ParquetAt;
use crate::logs::jsonl::FieldNames;
use crate::logs::otlp::SpanFields;
use crate::logs::partition::{partition_of, Partition};
use crate::logs::seen::FieldsSeen;
use layout::Layout;

/// How the columns of Parquet logs are named: the field flags, and the
/// span mapping for Phoenix's exports; and each file's Hive partition.
#[derive(Debug, Clone, Copy)]
pub struct ColumnNames<'a> {
    /// `--query-field` and the others; a name is a column.
    pub fields: &'a FieldNames,
    /// The span mapping, as for OTLP traces.
    pub spans: &'a SpanFields,
    /// Each input's Hive partition, by input index.
    pub partitions: &'a [Partition],
}

/// A Parquet log file as its reader found it; its row groups share it.
pub struct ParquetFile {
    /// Where the workers read it again.
    pub at: ParquetAt,
    metadata: ArrowReaderMetadata,
    layout: Layout,
    /// Which of the fields the user named its schema has.
    seen: FieldsSeen,
    mask: ProjectionMask,
}

impl fmt::Debug for ParquetFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ParquetFile")
            .field("at", &self.at)
            .field("layout", &self.layout)
            .finish_non_exhaustive()
    }
}

/// The layout the columns of an Arrow table or stream were found to
/// have, which every part of its batches shares.
pub struct PlannedTable {
    layout: Layout,
    /// Which of the fields the user named its schema has.
    seen: FieldsSeen,
}

impl fmt::Debug for PlannedTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PlannedTable")
            .field("layout", &self.layout)
            .finish()
    }
}

/// Where a worker finds the rows of its chunk.
#[derive(Debug, Clone)]
pub enum Rows {
    /// A row group of a Parquet file, to decode.
    Parquet {
        /// The file and its layout.
        file: Arc<ParquetFile>,
        /// The row group's index in the file, from 0.
        group: usize,
    },
    /// Rows of one batch of a table or stream in memory.
    Table {
        /// The layout of the table's columns.
        table: Arc<PlannedTable>,
        /// The rows: a slice of the batch, sharing its arrays.
        rows: RecordBatch,
    },
}

/// Rows for a worker to read: a row group, or a part of a table.
#[derive(Debug, Clone)]
pub struct RowGroup {
    /// Index of the input in the order given.
    pub input: u32,
    /// Where the rows are.
    pub rows: Rows,
    /// 1-based number of its first row in the file or table.
    pub first_row: u64,
}

/// A row group's place in its file, for the reader.
#[derive(Debug, Clone, Copy)]
pub struct GroupPlace {
    /// Its rows.
    pub rows: u64,
    /// Its columns' uncompressed size.
    pub decoded_bytes: u64,
    /// The end of its last column chunk in the file.
    pub end: u64,
}

/// Open the Parquet file `at`, input `input`, whose footer is `metadata`,
/// for reading by row groups: its layout given the column names and its
/// partition, and its row groups' places.
///
/// # Errors
/// The footer holds a negative size, or the file lacks a column its
/// layout needs (or has one of the wrong type).
pub fn open(
    at: &ParquetAt,
    input: u32,
    metadata: ArrowReaderMetadata,
    columns: ColumnNames<'_>,
) -> Result<(Arc<ParquetFile>, Vec<GroupPlace>)> {
    let partition = partition_of(columns.partitions, input);
    let planned = layout::plan(metadata.schema(), columns.fields, columns.spans, partition)
        .map_err(|err| anyhow!("{err}"))?;
    let mask = planned.mask(metadata.schema(), metadata.parquet_schema());
    let mut places = Vec::with_capacity(metadata.metadata().num_row_groups());
    for (i, group) in metadata.metadata().row_groups().iter().enumerate() {
        let (Ok(rows), Ok(decoded_bytes)) = (
            u64::try_from(group.num_rows()),
            u64::try_from(group.total_byte_size()),
        ) else {
            bail!("row group {i}: a negative size in the footer (corrupt file?)");
        };
        let mut end = 0u64;
        for column in group.columns() {
            // As the crate's byte_range computes it, which panics on a
            // negative offset or size instead of failing.
            let start = column
                .dictionary_page_offset()
                .unwrap_or_else(|| column.data_page_offset());
            let (Ok(start), Ok(len)) = (
                u64::try_from(start),
                u64::try_from(column.compressed_size()),
            ) else {
                bail!(
                    "row group {i}: a negative column offset or size in the footer (corrupt file?)"
                );
            };
            end = end.max(start.saturating_add(len));
        }
        places.push(GroupPlace {
            rows,
            decoded_bytes,
            end,
        });
    }
    let file = ParquetFile {
        at: at.clone(),
        layout: planned.layout,
        seen: planned.seen,
        mask,
        metadata,
    };
    Ok((Arc::new(file), places))
}

/// Decide the layout of the search events of a table of `schema` as
/// [`open`] does a Parquet file's.
///
/// # Errors
/// The table lacks a column its layout needs, or has one of the wrong type.
pub fn open_table(schema: &Schema, columns: ColumnNames<'_>) -> Result<Arc<PlannedTable>> {
    let planned =
        layout::plan(schema, columns.fields, columns.spans, &[]).map_err(|err| anyhow!("{err}"))?;
    Ok(Arc::new(PlannedTable {
        layout: planned.layout,
        seen: planned.seen,
    }))
}
