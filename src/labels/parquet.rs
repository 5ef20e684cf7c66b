//! Parquet labels, and labels handed over as an Arrow table: the CSV
//! labels' columns, one judgment a row; a row whose `doc_id` is null
//! declares a query without judging a document (a no-answer query). Rows
//! are numbered from 1, as lines are.

use anyhow::anyhow;
use arrow_array::RecordBatch;
use arrow_schema::Schema;
use parquet::arrow::ProjectionMask;

use super::build::{whole_grade, Attributes, Builder, LineError, POOL_SEPARATOR};
use super::columns::{Column, Columns};
use crate::io::guarded;
use crate::io::inputs::Input;
use crate::io::parquet::{top_column, Cells, ParquetAt, Want};
use crate::io::tables::ArrowTable;

/// What a column of `kind` must hold.
fn want(kind: Column) -> Want {
    match kind {
        Column::QueryId | Column::DocId => Want::Id,
        Column::Grade => Want::Whole,
        Column::Required => Want::Bool,
        Column::Task
        | Column::Language
        | Column::Query
        | Column::Split
        | Column::CollectionVersion
        | Column::Reviewer
        | Column::Source
        | Column::PooledFrom => Want::Text,
    }
}

/// Rows a batch of labels is read in (the Parquet reader's default).
const DEFAULT_BATCH_ROWS: usize = 1024;

/// The labels' columns: each kind's name in the table.
type Named = Vec<(Column, String)>;

/// Read the Parquet labels of `input` (a file, or an object read by
/// ranges) into `builder`.
pub(super) fn read_parquet(input: &Input, builder: &mut Builder) -> Result<(), LineError> {
    let cannot_read = |err: anyhow::Error| whole(anyhow!("cannot read labels: {err:#}"));
    let at = match input {
        Input::File(path) => ParquetAt::File(path.clone()),
        Input::Object(uri) => ParquetAt::object(uri).map_err(cannot_read)?,
        other => return Err(whole(anyhow!("{}: not a Parquet file", other.name()))),
    };
    let metadata = at.footer().map_err(whole)?;
    let named = label_columns(metadata.schema(), builder)?;
    let schema = metadata.schema();
    let indices = named
        .iter()
        .filter_map(|(_, name)| schema.index_of(name).ok());
    let mask = ProjectionMask::roots(metadata.parquet_schema(), indices);
    // The decoder may panic on a malformed file: an error of the file.
    let read = guarded::decode(|| -> Result<(), LineError> {
        let batches =
            (at.batches(&metadata, None, mask, DEFAULT_BATCH_ROWS)).map_err(cannot_read)?;
        read_batches(
            batches.map(|batch| batch.map_err(|err| err.to_string())),
            &named,
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
    let named = label_columns(table.schema(), builder)?;
    read_batches(table.batches().iter().cloned().map(Ok), &named, builder)
}

/// An error of the labels as a whole, not of one row.
fn whole(err: anyhow::Error) -> (Option<usize>, anyhow::Error) {
    (None, err)
}

/// The name of each column `schema` holds, checked for its type.
///
/// # Errors
/// A column rgrade does not know, or of the wrong type; no query_id or
/// doc_id; joined by text, no query.
fn label_columns(schema: &Schema, builder: &Builder) -> Result<Named, LineError> {
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    let columns = Columns::find(names.iter().copied()).map_err(|err| whole(anyhow!("{err}")))?;
    let mut named = Named::new();
    for (kind, index) in columns.present() {
        top_column(schema, names[index], want(kind)).map_err(|err| whole(anyhow!("{err}")))?;
        named.push((kind, names[index].to_string()));
    }
    if columns.get(Column::QueryId).is_none() || columns.get(Column::DocId).is_none() {
        return Err(whole(anyhow!(
            "Parquet and Arrow labels need query_id and doc_id columns"
        )));
    }
    if builder.keep_query_texts && columns.get(Column::Query).is_none() {
        return Err(whole(anyhow!(
            "no 'query' column: {} matches captures by a label's query text",
            crate::base::failure::Setting::Join.given("text")
        )));
    }
    Ok(named)
}

/// Add the rows of `batches`, numbered from 1 across them, to `builder`.
fn read_batches(
    batches: impl Iterator<Item = Result<RecordBatch, String>>,
    named: &Named,
    builder: &mut Builder,
) -> Result<(), LineError> {
    let mut first_row = 1;
    for batch in batches {
        let batch = batch
            .map_err(|err| whole(anyhow!("cannot read labels after row {first_row}: {err}")))?;
        let mut columns = LabelColumns::default();
        for (kind, name) in named {
            let Some(array) = batch.column_by_name(name) else {
                continue;
            };
            let cells = Cells::of(array).map_err(|err| whole(anyhow!("{err}")))?;
            columns.0.push((*kind, name, cells));
        }
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

/// The label columns of one batch, each with its kind and name.
#[derive(Default)]
struct LabelColumns<'a>(Vec<(Column, &'a str, Cells<'a>)>);

impl<'a> LabelColumns<'a> {
    fn get(&self, kind: Column) -> Option<(&'a str, &Cells<'a>)> {
        (self.0.iter())
            .find(|(k, _, _)| *k == kind)
            .map(|(_, name, cells)| (*name, cells))
    }

    fn add_row(&self, row: usize, line: usize, builder: &mut Builder) -> anyhow::Result<()> {
        let text = |kind| self.get(kind).and_then(|(_, c)| c.text(row));
        let id = |kind| self.get(kind).and_then(|(_, c)| c.id(row));
        let query = id(Column::QueryId).ok_or_else(|| anyhow!("null query_id"))?;
        let q = builder.declare(&query, line)?;
        let required = self.get(Column::Required).and_then(|(_, c)| c.boolean(row));
        let attributes = Attributes {
            task: text(Column::Task),
            language: text(Column::Language),
            split: text(Column::Split),
            collection_version: text(Column::CollectionVersion),
            required: required.unwrap_or(false),
        };
        builder.set_attributes(q, &attributes, line)?;
        if let Some(query_text) = text(Column::Query) {
            builder.set_query_text(q, query_text)?;
        }
        let has_reviewers = self.get(Column::Reviewer).is_some();
        let reviewer = builder.row_reviewer(q, has_reviewers, text(Column::Reviewer));
        let pooled_from = text(Column::PooledFrom).unwrap_or_default();
        let doc = id(Column::DocId);
        let judgments = usize::from(doc.is_some());
        let source = text(Column::Source);
        builder.set_provenance(q, source, pooled_from.split(POOL_SEPARATOR), judgments);
        // A row without a doc id declares the query only: a no-answer query.
        let Some(doc) = doc else {
            return Ok(());
        };
        // Without a grade column every row is relevant; with one, a row
        // must say its grade.
        let grade = match self.get(Column::Grade) {
            None => 1,
            Some((name, cells)) => {
                let number = cells
                    .number(row)
                    .ok_or_else(|| anyhow!("{name} is null for doc '{doc}'"))?;
                whole_grade(cells.whole(row), || {
                    format!("{name} {number} of doc '{doc}'")
                })?
            }
        };
        builder.judge(q, &doc, grade, reviewer, line)?;
        Ok(())
    }
}
