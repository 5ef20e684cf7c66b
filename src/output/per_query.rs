//! per_query.csv: one row per (run, stage, labeled query), written as a
//! file or kept as an Arrow record batch with the same columns and values.
//! Both lay a row out through [`row_cells`], the one place that knows the
//! columns' order.

use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Arc;

use anyhow::Result;
use arrow_array::builder::{BooleanBuilder, Float64Builder, Int64Builder, StringBuilder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use rayon::prelude::*;

use super::cells::CsvRows;
use super::staged::{self, stage, Staged, Staging};
use crate::base::schema::{
    missing_column, per_query_header, ANSWER_OK, LANGUAGE, PER_QUERY_FILE, QUERY_ID, REQUIRED, RUN,
    SPLIT, STAGE, STATUS, TASK,
};
use crate::grade::score::{GradeSettings, QueryRow};
use crate::labels::LabelIndex;

/// One cell of a per-query row, typed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Cell<'a> {
    /// A name, an id or a list of ids.
    Text(&'a str),
    /// A count, or a rank.
    Count(Option<u32>),
    /// A measurement or a metric.
    Number(Option<f64>),
    /// `true` or `false`.
    Flag(Option<bool>),
}

/// How many metric and `judged@k` columns a row has.
#[derive(Debug, Clone, Copy)]
pub struct Widths {
    /// Metric columns: six per cutoff.
    pub scores: usize,
    /// `judged@k` columns: one per cutoff.
    pub judged: usize,
}

impl Widths {
    /// The widths of rows graded with `settings`.
    pub fn of(settings: &GradeSettings) -> Self {
        Widths {
            scores: settings.n_scores(),
            judged: settings.ks.len(),
        }
    }
}

/// Hand `cell` every cell of `row`, of (`run`, `stage`), in the columns'
/// order ([`per_query_header`]); `missed` is scratch for the ids of the
/// missing-evidence cell.
pub fn row_cells(
    labels: &LabelIndex,
    (run, stage): (&str, &str),
    widths: Widths,
    row: &QueryRow,
    missed: &mut String,
    mut cell: impl FnMut(Cell<'_>),
) {
    let q = &labels.queries()[row.query as usize];
    cell(Cell::Text(run));
    cell(Cell::Text(stage));
    cell(Cell::Text(labels.query_id(row.query)));
    cell(Cell::Text(labels.slice_name(q.task)));
    cell(Cell::Text(labels.slice_name(q.language)));
    cell(Cell::Flag(Some(q.required)));
    cell(Cell::Text(row.status.name()));
    cell(Cell::Count(Some(q.n_relevant)));
    cell(Cell::Number(row.n_results));
    cell(Cell::Count(row.first_rel_rank));
    cell(Cell::Count(Some(row.captures)));
    cell(Cell::Number(row.latency_ms));
    cell(Cell::Number(row.context_tokens));
    for i in 0..widths.scores {
        cell(Cell::Number(row.scores.as_ref().map(|s| s[i])));
    }
    join_missed(missed, row, labels);
    cell(Cell::Text(missed));
    cell(Cell::Number(row.unauthorized));
    cell(Cell::Text(labels.slice_name(q.split)));
    cell(Cell::Flag(row.answer_ok));
    for i in 0..widths.judged {
        cell(Cell::Number(row.judged.as_ref().map(|j| j[i])));
    }
}

/// Writes per_query.csv, one row per (run, stage, labeled query), as the
/// rows are graded. Rows are formatted on the worker threads a piece at a
/// time, then written in order.
pub struct PerQueryWriter<'a> {
    file: BufWriter<Staging>,
    labels: &'a LabelIndex,
    widths: Widths,
}

impl<'a> PerQueryWriter<'a> {
    /// Rows formatted as one piece of work.
    const ROWS_AT_A_TIME: usize = 1 << 11;

    /// Create the file in `dir` and write its header.
    ///
    /// # Errors
    /// The file cannot be created or written.
    pub fn create(dir: &Path, labels: &'a LabelIndex, settings: &GradeSettings) -> Result<Self> {
        let mut wtr = csv::Writer::from_writer(stage(dir, PER_QUERY_FILE)?);
        let header = per_query_header(&settings.ks);
        wtr.write_record(&header)?;
        let file = wtr.into_inner().map_err(|err| err.into_error())?;
        Ok(PerQueryWriter {
            file,
            labels,
            widths: Widths::of(settings),
        })
    }

    /// Write the rows of one (run, stage), in the order given, formatting
    /// them on the current rayon pool.
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn write(&mut self, run: &str, stage: &str, rows: &[QueryRow]) -> Result<()> {
        let pieces: Vec<Vec<u8>> = rows
            .par_chunks(Self::ROWS_AT_A_TIME)
            .map(|rows| self.format(run, stage, rows))
            .collect::<Result<_>>()?;
        for piece in pieces {
            self.file.write_all(&piece)?;
        }
        Ok(())
    }

    /// The CSV text of `rows`.
    fn format(&self, run: &str, stage: &str, rows: &[QueryRow]) -> Result<Vec<u8>> {
        let row_bytes = 96 + 12 * self.widths.scores;
        let mut csv = CsvRows::with_capacity(rows.len() * row_bytes);
        let mut missed = String::new();
        let mut failed = None;
        for row in rows {
            row_cells(
                self.labels,
                (run, stage),
                self.widths,
                row,
                &mut missed,
                |cell| {
                    let text = match cell {
                        Cell::Count(count) => return csv.number(count.map(f64::from)),
                        Cell::Number(number) => return csv.number(number),
                        Cell::Text(text) => text,
                        Cell::Flag(flag) => flag.map_or("", |on| if on { "true" } else { "false" }),
                    };
                    if let Err(err) = csv.text(text) {
                        failed.get_or_insert(err);
                    }
                },
            );
            csv.end_row();
        }
        failed.map_or(Ok(csv.bytes), Err)
    }

    /// Flush the file.
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn finish(self) -> Result<Staged> {
        staged::finish(self.file)
    }
}

/// Put the missing-evidence cell of `row` in `cell`: its missed ids, `|`-joined.
pub fn join_missed(cell: &mut String, row: &QueryRow, labels: &LabelIndex) {
    cell.clear();
    for (n, &doc) in row.missed.iter().enumerate() {
        if n > 0 {
            cell.push('|');
        }
        cell.push_str(labels.doc_id(doc));
    }
}

/// Keeps per_query.csv's rows in memory as Arrow columns, for a caller
/// that reads the rows rather than the file: texts as strings, counts and
/// ranks as 64-bit integers, measurements and metrics as doubles, flags as
/// booleans; an empty cell is a null.
pub struct PerQueryTable<'a> {
    labels: &'a LabelIndex,
    widths: Widths,
    schema: Arc<Schema>,
    columns: Vec<Column>,
}

/// One column under construction.
enum Column {
    Text(StringBuilder),
    Count(Int64Builder),
    Number(Float64Builder),
    Flag(BooleanBuilder),
}

impl<'a> PerQueryTable<'a> {
    /// No rows yet, of rows graded with `settings`.
    pub fn new(labels: &'a LabelIndex, settings: &GradeSettings) -> Self {
        let header = per_query_header(&settings.ks);
        let missing = missing_column(&settings.ks);
        let data_type = |name: &str| match name {
            RUN | STAGE | QUERY_ID | TASK | LANGUAGE | STATUS | SPLIT => DataType::Utf8,
            _ if name == missing => DataType::Utf8,
            REQUIRED | ANSWER_OK => DataType::Boolean,
            "n_relevant" | "first_rel_rank" | "captures" => DataType::Int64,
            _ => DataType::Float64,
        };
        let fields: Vec<Field> = header
            .iter()
            .map(|name| Field::new(name, data_type(name), true))
            .collect();
        let columns = fields
            .iter()
            .map(|field| match field.data_type() {
                DataType::Utf8 => Column::Text(StringBuilder::new()),
                DataType::Int64 => Column::Count(Int64Builder::new()),
                DataType::Boolean => Column::Flag(BooleanBuilder::new()),
                _ => Column::Number(Float64Builder::new()),
            })
            .collect();
        PerQueryTable {
            labels,
            widths: Widths::of(settings),
            schema: Arc::new(Schema::new(fields)),
            columns,
        }
    }

    /// Add the rows of one (run, stage), in the order given.
    pub fn add(&mut self, run: &str, stage: &str, rows: &[QueryRow]) {
        let mut missed = String::new();
        for row in rows {
            let mut columns = self.columns.iter_mut();
            row_cells(
                self.labels,
                (run, stage),
                self.widths,
                row,
                &mut missed,
                |cell| match (columns.next(), cell) {
                    (Some(Column::Text(b)), Cell::Text(text)) => b.append_value(text),
                    (Some(Column::Count(b)), Cell::Count(count)) => {
                        b.append_option(count.map(i64::from))
                    }
                    (Some(Column::Number(b)), Cell::Number(number)) => b.append_option(number),
                    (Some(Column::Flag(b)), Cell::Flag(flag)) => b.append_option(flag),
                    _ => unreachable!("row_cells lays a row out as per_query_header names it"),
                },
            );
        }
    }

    /// The rows added, as one record batch.
    ///
    /// # Errors
    /// Never in practice: every column has a cell of every row.
    pub fn finish(self) -> Result<RecordBatch> {
        let columns: Vec<ArrayRef> = self
            .columns
            .into_iter()
            .map(|column| -> ArrayRef {
                match column {
                    Column::Text(mut b) => Arc::new(b.finish()),
                    Column::Count(mut b) => Arc::new(b.finish()),
                    Column::Number(mut b) => Arc::new(b.finish()),
                    Column::Flag(mut b) => Arc::new(b.finish()),
                }
            })
            .collect();
        Ok(RecordBatch::try_new(self.schema, columns)?)
    }
}
