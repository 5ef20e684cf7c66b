//! Parquet labels, and labels handed over as an Arrow table: the CSV
//! labels' columns, one judgment a row; a row whose `doc_id` is null
//! declares a query without judging a document (a no-answer query). Rows
//! are numbered from 1, as lines are.

use std::fs::File;
use std::path::Path;

use anyhow::anyhow;
use arrow_array::RecordBatch;
use arrow_schema::Schema;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ProjectionMask;

use super::build::{Attributes, Builder, LineError};
use crate::grade::parquet::footer;
use crate::grade::parquet::layout::{top_column, Want};
use crate::grade::parquet::rows::Cells;
use crate::guarded;
use crate::tables::ArrowTable;

/// The columns read, with what each must hold.
const COLUMNS: [(&str, Want); 9] = [
    ("query_id", Want::Id),
    ("doc_id", Want::Id),
    ("grade", Want::Integer),
    ("task", Want::Text),
    ("language", Want::Text),
    ("required", Want::Bool),
    ("query", Want::Text),
    ("split", Want::Text),
    ("collection_version", Want::Text),
];

/// Read the Parquet labels at `path` into `builder`.
pub(super) fn read_parquet(path: &Path, builder: &mut Builder) -> Result<(), LineError> {
    let file = File::open(path).map_err(|err| whole(anyhow!("cannot read labels: {err}")))?;
    let metadata = footer(&file).map_err(whole)?;
    let indices = label_columns(metadata.schema(), builder)?;
    let mask = ProjectionMask::roots(metadata.parquet_schema(), indices.iter().flatten().copied());
    // The decoder may panic on a malformed file: an error of the file.
    let read = guarded::decode(|| -> Result<(), LineError> {
        let batches = ParquetRecordBatchReaderBuilder::new_with_metadata(file, metadata.clone())
            .with_projection(mask)
            .build()
            .map_err(|err| whole(anyhow!("cannot read labels: {err}")))?;
        read_batches(
            batches.map(|batch| batch.map_err(|err| err.to_string())),
            builder,
        )
    });
    read.unwrap_or_else(|| {
        Err(whole(anyhow!(
            "cannot read labels: the Parquet decoder failed on it (corrupt file?)"
        )))
    })
}

/// Read labels held in memory as an Arrow table into `builder`.
pub(super) fn read_table(table: &ArrowTable, builder: &mut Builder) -> Result<(), LineError> {
    label_columns(table.schema(), builder)?;
    read_batches(table.batches().iter().cloned().map(Ok), builder)
}

/// An error of the labels as a whole, not of one row.
fn whole(err: anyhow::Error) -> (Option<usize>, anyhow::Error) {
    (None, err)
}

/// Where `schema` keeps each of [`COLUMNS`], checked for its type.
///
/// # Errors
/// A column of the wrong type; no query_id or doc_id; joined by text, no query.
fn label_columns(
    schema: &Schema,
    builder: &Builder,
) -> Result<[Option<usize>; COLUMNS.len()], LineError> {
    let mut indices = [None; COLUMNS.len()];
    for (index, (name, want)) in indices.iter_mut().zip(COLUMNS) {
        *index = top_column(schema, name, want).map_err(|err| whole(anyhow!("{err}")))?;
    }
    let [Some(_), Some(_), ..] = indices else {
        return Err(whole(anyhow!(
            "Parquet and Arrow labels need query_id and doc_id columns"
        )));
    };
    if builder.keep_query_texts && indices[6].is_none() {
        return Err(whole(anyhow!(
            "no 'query' column: --join text matches captures by a label's query text"
        )));
    }
    Ok(indices)
}

/// Add the rows of `batches`, numbered from 1 across them, to `builder`.
fn read_batches(
    batches: impl Iterator<Item = Result<RecordBatch, String>>,
    builder: &mut Builder,
) -> Result<(), LineError> {
    let mut first_row = 1;
    for batch in batches {
        let batch = batch
            .map_err(|err| whole(anyhow!("cannot read labels after row {first_row}: {err}")))?;
        let cells = |i: usize| -> Result<Option<Cells<'_>>, LineError> {
            let Some(array) = batch.column_by_name(COLUMNS[i].0) else {
                return Ok(None);
            };
            Cells::of(array)
                .map(Some)
                .map_err(|err| whole(anyhow!("{err}")))
        };
        let columns = LabelColumns {
            query: cells(0)?,
            doc: cells(1)?,
            grade: cells(2)?,
            task: cells(3)?,
            language: cells(4)?,
            required: cells(5)?,
            text: cells(6)?,
            split: cells(7)?,
            collection_version: cells(8)?,
        };
        for row in 0..batch.num_rows() {
            let line = first_row + row;
            columns
                .add_row(row, line, builder)
                .map_err(|err| (Some(line), err))?;
        }
        first_row += batch.num_rows();
    }
    Ok(())
}

/// The label columns of one batch; absent ones are `None`.
struct LabelColumns<'a> {
    query: Option<Cells<'a>>,
    doc: Option<Cells<'a>>,
    grade: Option<Cells<'a>>,
    task: Option<Cells<'a>>,
    language: Option<Cells<'a>>,
    required: Option<Cells<'a>>,
    text: Option<Cells<'a>>,
    split: Option<Cells<'a>>,
    collection_version: Option<Cells<'a>>,
}

impl<'a> LabelColumns<'a> {
    fn add_row(&self, row: usize, line: usize, builder: &mut Builder) -> anyhow::Result<()> {
        let text = |cells: &Option<Cells<'a>>| cells.as_ref().and_then(|c| c.text(row));
        let id = |cells: &Option<Cells<'a>>| cells.as_ref().and_then(|c| c.id(row));
        let query = id(&self.query).ok_or_else(|| anyhow!("null query_id"))?;
        let q = builder.declare(&query, line)?;
        let required = self.required.as_ref().and_then(|c| c.boolean(row));
        let attributes = Attributes {
            task: text(&self.task),
            language: text(&self.language),
            split: text(&self.split),
            collection_version: text(&self.collection_version),
            required: required.unwrap_or(false),
        };
        builder.set_attributes(q, &attributes, line)?;
        if let Some(query_text) = text(&self.text) {
            builder.set_query_text(q, query_text)?;
        }
        // A row without a doc id declares the query only: a no-answer query.
        if let Some(doc) = id(&self.doc) {
            let grade = match self.grade.as_ref().map(|c| c.integer(row)) {
                None | Some(None) => 1,
                Some(Some(grade)) => {
                    i64::try_from(grade).map_err(|_| anyhow!("grade {grade} is out of range"))?
                }
            };
            builder.judge(q, &doc, grade, line)?;
        }
        Ok(())
    }
}
