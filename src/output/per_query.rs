//! per_query.csv: one row per (run, stage, labeled query), written as a
//! file or kept as Arrow record batches with the same columns and values,
//! and read back. Both writers lay a row out through [`row_cells`], the one
//! place that knows the columns' order; [`PerQueryReader`] is the one
//! reader, for compare and the report alike.

use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{anyhow, bail, ensure, Context, Result};
use arrow_array::builder::{BooleanBuilder, Float64Builder, Int64Builder, StringBuilder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use rayon::prelude::*;

use super::cells::{read_measure, read_metric, CsvRows};
use super::staged::{self, stage, Staged, Staging};
use crate::base::metrics::Cutoff;
use crate::base::schema::{
    judged_columns, judged_cutoffs, metric_names, missing_column, per_query_header, OutputFile,
    Status, ANSWER_OK, CONTEXT_TOKENS, LANGUAGE, LATENCY_MS, PER_QUERY_FILE, QUERY_ID, REQUIRED,
    RUN, SPLIT, STAGE, STATUS, TASK,
};
use crate::base::slices::NO_SLICE;
use crate::grade::score::{GradeSettings, QueryRow};
use crate::io::decompress::Tally;
use crate::io::tables::ArrowTable;
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
            judged: settings.judged_cutoffs().len(),
        }
    }
}

/// Hand `cell` every cell of `row`, of (`run`, `stage`), in the columns'
/// order ([`header`]); `missed` is scratch for the ids of the
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
    for value in &row.slices {
        cell(Cell::Text(value));
    }
}

/// per_query.csv's header for rows graded with `settings`: a column per
/// log field sliced by after all the others.
pub fn header(settings: &GradeSettings) -> Vec<String> {
    let mut header = per_query_header(&settings.ks, settings.asked().as_deref());
    header.extend(settings.slice_by.iter().cloned());
    header
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
        wtr.write_record(header(settings))?;
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
/// booleans; an empty number or flag is a null, an empty text stays empty.
/// Rows become record batches a piece at a time on the worker threads, as
/// the file's rows become text.
pub struct PerQueryTable<'a> {
    labels: &'a LabelIndex,
    widths: Widths,
    schema: Arc<Schema>,
    batches: Vec<RecordBatch>,
}

/// One column under construction.
enum Column {
    Text(StringBuilder),
    Count(Int64Builder),
    Number(Float64Builder),
    Flag(BooleanBuilder),
}

impl<'a> PerQueryTable<'a> {
    /// Rows built into one record batch.
    const ROWS_AT_A_TIME: usize = 1 << 13;

    /// No rows yet, of rows graded with `settings`.
    pub fn new(labels: &'a LabelIndex, settings: &GradeSettings) -> Self {
        let header = per_query_header(&settings.ks, settings.asked().as_deref());
        let missing = missing_column(&settings.ks);
        let data_type = |name: &str| match name {
            RUN | STAGE | QUERY_ID | TASK | LANGUAGE | STATUS | SPLIT => DataType::Utf8,
            _ if name == missing => DataType::Utf8,
            REQUIRED | ANSWER_OK => DataType::Boolean,
            "n_relevant" | "first_rel_rank" | "captures" => DataType::Int64,
            _ => DataType::Float64,
        };
        let fields: Vec<Field> = (header.iter())
            .map(|name| Field::new(name, data_type(name), true))
            .chain((settings.slice_by.iter()).map(|name| Field::new(name, DataType::Utf8, true)))
            .collect();
        PerQueryTable {
            labels,
            widths: Widths::of(settings),
            schema: Arc::new(Schema::new(fields)),
            batches: Vec::new(),
        }
    }

    /// Add the rows of one (run, stage), in the order given, building them
    /// on the current rayon pool.
    ///
    /// # Errors
    /// Never in practice: every column has a cell of every row.
    pub fn add(&mut self, run: &str, stage: &str, rows: &[QueryRow]) -> Result<()> {
        let batches: Vec<RecordBatch> = rows
            .par_chunks(Self::ROWS_AT_A_TIME)
            .map(|rows| self.batch(run, stage, rows))
            .collect::<Result<_>>()?;
        self.batches.extend(batches);
        Ok(())
    }

    /// The record batch of `rows`.
    fn batch(&self, run: &str, stage: &str, rows: &[QueryRow]) -> Result<RecordBatch> {
        let n = rows.len();
        let mut columns: Vec<Column> = (self.schema.fields().iter())
            .map(|field| match field.data_type() {
                DataType::Utf8 => Column::Text(StringBuilder::with_capacity(n, 16 * n)),
                DataType::Int64 => Column::Count(Int64Builder::with_capacity(n)),
                DataType::Boolean => Column::Flag(BooleanBuilder::with_capacity(n)),
                _ => Column::Number(Float64Builder::with_capacity(n)),
            })
            .collect();
        let mut missed = String::new();
        for row in rows {
            let mut columns = columns.iter_mut();
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
                    _ => unreachable!("row_cells lays a row out as header names it"),
                },
            );
        }
        let arrays = columns.iter_mut().map(|column| -> ArrayRef {
            match column {
                Column::Text(b) => Arc::new(b.finish()),
                Column::Count(b) => Arc::new(b.finish()),
                Column::Number(b) => Arc::new(b.finish()),
                Column::Flag(b) => Arc::new(b.finish()),
            }
        });
        Ok(RecordBatch::try_new(
            Arc::clone(&self.schema),
            arrays.collect(),
        )?)
    }

    /// The rows added, as a table of record batches named per_query.csv.
    ///
    /// # Errors
    /// Never in practice: every batch has the table's schema.
    pub fn finish(self) -> Result<ArrowTable> {
        Ok(ArrowTable::new(PER_QUERY_FILE, self.schema, self.batches)?)
    }
}

/// Where each column read back is in the file.
struct Columns {
    run: usize,
    stage: usize,
    query_id: usize,
    task: usize,
    language: usize,
    required: usize,
    status: usize,
    n_relevant: usize,
    first_rel_rank: usize,
    latency_ms: usize,
    context_tokens: usize,
    missed: usize,
    /// Gradings by an older rgrade have no split column: their labels
    /// named none.
    split: Option<usize>,
    metrics: Vec<usize>,
    /// `judged@k`, which gradings by an older rgrade lack.
    judged: Option<Vec<usize>>,
}

/// per_query.csv read back a row at a time, every cell checked to be as
/// rgrade writes it: a number no output of rgrade holds (NaN, an infinity,
/// a negative latency, a metric beyond [0, 1], a rank of 0) is refused,
/// never read. Errors name the file and line.
pub struct PerQueryReader {
    path: PathBuf,
    reader: csv::Reader<BufReader<Tally<File>>>,
    /// What the file's summary lists, for the bytes read to match once
    /// the last row was read ([`PerQueryReader::open_as_listed`]).
    listed: Option<OutputFile>,
    header: csv::StringRecord,
    columns: Columns,
    record: csv::StringRecord,
    metrics: Vec<f64>,
    judged: Vec<f64>,
}

/// One row read back, borrowing from the reader.
#[derive(Debug)]
pub struct ReadRow<'r> {
    /// The run.
    pub run: &'r str,
    /// The stage.
    pub stage: &'r str,
    /// The query.
    pub query_id: &'r str,
    /// Its task.
    pub task: &'r str,
    /// Its language.
    pub language: &'r str,
    /// Its held-out split ([`NO_SLICE`] in a file without the column).
    pub split: &'r str,
    /// A regression case a change must not lose.
    pub required: bool,
    /// How it was graded.
    pub status: Status,
    /// Its relevant documents.
    pub n_relevant: u32,
    /// The rank of its first relevant document.
    pub first_rel_rank: Option<u32>,
    /// Its latency.
    pub latency_ms: Option<f64>,
    /// Its context size.
    pub context_tokens: Option<f64>,
    /// Its metric cells, in [`metric_names`] order; `None` when the row
    /// holds none (a query with no score).
    pub metrics: Option<&'r [f64]>,
    /// Its `judged@k` cells, likewise; `None` in a file without them too.
    pub judged: Option<&'r [f64]>,
    /// The relevant ids it missed, `|`-joined.
    pub missed: &'r str,
    /// Its line in the file.
    pub line: u64,
    /// Where its record starts in the file, to find it again on a second
    /// reading.
    pub offset: u64,
}

impl PerQueryReader {
    /// Open the per_query.csv at `path`, graded at cutoffs `ks` and the
    /// measures `asked` by name, if any.
    ///
    /// # Errors
    /// The file cannot be opened or lacks a column.
    pub fn open(path: &Path, ks: &[Cutoff], asked: Option<&[String]>) -> Result<Self> {
        let file = File::open(path).with_context(|| format!("{}: cannot open", path.display()))?;
        let tally = Tally::new(file);
        let mut reader = csv::Reader::from_reader(BufReader::with_capacity(1 << 20, tally));
        let header = (reader.headers())
            .with_context(|| format!("{}:1", path.display()))?
            .clone();
        let find = |name: &str| header.iter().position(|h| h == name);
        let column = |name: &str| {
            find(name).with_context(|| format!("{}:1: no column '{name}'", path.display()))
        };
        let metrics = (metric_names(ks, asked).iter())
            .map(|name| column(name))
            .collect::<Result<Vec<_>>>()
            .context("per_query.csv does not have the metric columns of its cutoffs")?;
        let columns = Columns {
            run: column(RUN)?,
            stage: column(STAGE)?,
            query_id: column(QUERY_ID)?,
            task: column(TASK)?,
            language: column(LANGUAGE)?,
            required: column(REQUIRED)?,
            status: column(STATUS)?,
            n_relevant: column("n_relevant")?,
            first_rel_rank: column("first_rel_rank")?,
            latency_ms: column(LATENCY_MS)?,
            context_tokens: column(CONTEXT_TOKENS)?,
            missed: column(&missing_column(ks))?,
            split: find(SPLIT),
            metrics,
            judged: (judged_columns(judged_cutoffs(ks, asked)).iter())
                .map(|name| find(name))
                .collect(),
        };
        Ok(PerQueryReader {
            path: path.to_path_buf(),
            reader,
            listed: None,
            header,
            columns,
            record: csv::StringRecord::new(),
            metrics: Vec::new(),
            judged: Vec::new(),
        })
    }

    /// [`PerQueryReader::open`], and once the last row was read, check
    /// that the bytes parsed are those `listed` (its entry in its
    /// summary.json) records: a file rewritten after its summary was
    /// checked, while it was being read, is refused rather than read
    /// half old and half new, or new under the old summary's settings.
    ///
    /// # Errors
    /// As [`PerQueryReader::open`].
    pub fn open_as_listed(
        path: &Path,
        ks: &[Cutoff],
        asked: Option<&[String]>,
        listed: &OutputFile,
    ) -> Result<Self> {
        let reader = PerQueryReader::open(path, ks, asked)?;
        Ok(PerQueryReader {
            listed: Some(listed.clone()),
            ..reader
        })
    }

    /// Whether the file has the `judged@k` columns.
    pub fn has_judged(&self) -> bool {
        self.columns.judged.is_some()
    }

    /// The next row, or `None` at the end of the file.
    ///
    /// # Errors
    /// The file cannot be read, a cell is not as rgrade writes it, or (at
    /// its end) the bytes read are not those listed.
    pub fn next_row(&mut self) -> Result<Option<ReadRow<'_>>> {
        let read = self.reader.read_record(&mut self.record);
        let at = self.reader.position().line();
        if !read.with_context(|| format!("{}:{at}", self.path.display()))? {
            if let Some(listed) = self.listed.take() {
                let (bytes, hash) = self.reader.get_ref().get_ref().digest();
                ensure!(
                    bytes == listed.bytes && hash == listed.hash,
                    "{}: changed while it was being read (its bytes are no longer those its \
                     summary.json lists); read it again once nothing writes there",
                    self.path.display()
                );
            }
            return Ok(None);
        }
        self.row().map(Some)
    }

    /// The record just read, checked.
    fn row(&mut self) -> Result<ReadRow<'_>> {
        let (line, offset) = (self.record.position()).map_or((0, 0), |p| (p.line(), p.byte()));
        let (record, header, c) = (&self.record, &self.header, &self.columns);
        let at = || format!("{}:{line}", self.path.display());
        let status = &record[c.status];
        let status = Status::from_name(status)
            .with_context(|| format!("{}: unknown status '{status}'", at()))?;
        let required = match &record[c.required] {
            "true" => true,
            "false" => false,
            other => bail!("{}: required is '{other}', not true or false", at()),
        };
        let count = |col: usize| -> Result<Option<u32>> {
            match &record[col] {
                "" => Ok(None),
                cell => (cell.parse().map(Some)).map_err(|_| {
                    anyhow!(
                        "{}: '{cell}' is not a count in column {}",
                        at(),
                        &header[col]
                    )
                }),
            }
        };
        let n_relevant = count(c.n_relevant)?.unwrap_or(0);
        let first_rel_rank = count(c.first_rel_rank)?;
        // Ranks start at 1, and a relevant document found is one the labels
        // count. (A query graded ok may have none: its grades may all fall
        // below --min-rel.)
        ensure!(
            first_rel_rank != Some(0),
            "{}: '0' is not a rank in column first_rel_rank",
            at()
        );
        ensure!(
            n_relevant > 0 || first_rel_rank.is_none(),
            "{}: a relevant document at rank {} of a query with none (n_relevant 0)",
            at(),
            first_rel_rank.unwrap_or_default()
        );
        let cell = |col: usize, read: fn(&str) -> Result<Option<f64>, String>| {
            read(&record[col]).map_err(|err| anyhow!("{}: {err} in column {}", at(), &header[col]))
        };
        // A row has every metric cell or none, and a query graded ok has them.
        let all_or_none = |columns: &[usize], into: &mut Vec<f64>, what: &str| -> Result<bool> {
            into.clear();
            for &col in columns {
                into.extend(cell(col, read_metric)?);
            }
            match into.len() {
                n if n == columns.len() => Ok(true),
                0 if status != Status::Ok => Ok(false),
                0 => bail!(
                    "{}: query graded ok without a value in column {}",
                    at(),
                    &header[columns[0]]
                ),
                _ => bail!("{}: some {what} cells are empty and some not", at()),
            }
        };
        let has_metrics = all_or_none(&c.metrics, &mut self.metrics, "metric")?;
        let has_judged = match &c.judged {
            Some(columns) => all_or_none(columns, &mut self.judged, "judged@k")?,
            None => false,
        };
        Ok(ReadRow {
            run: &record[c.run],
            stage: &record[c.stage],
            query_id: &record[c.query_id],
            task: &record[c.task],
            language: &record[c.language],
            split: c.split.map_or(NO_SLICE, |col| &record[col]),
            required,
            status,
            n_relevant,
            first_rel_rank,
            latency_ms: cell(c.latency_ms, read_measure)?,
            context_tokens: cell(c.context_tokens, read_measure)?,
            metrics: has_metrics.then_some(&self.metrics[..]),
            judged: has_judged.then_some(&self.judged[..]),
            missed: &record[c.missed],
            line,
            offset,
        })
    }
}
