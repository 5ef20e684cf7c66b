//! per_query.csv: one row per (run, stage, labeled query).

use std::io::{BufWriter, Write};
use std::path::Path;

use anyhow::Result;
use rayon::prelude::*;

use super::cells::CsvRows;
use super::staged::{self, stage, Staged, Staging};
use crate::base::schema::{per_query_header, PER_QUERY_FILE};
use crate::grade::score::{GradeSettings, QueryRow};
use crate::labels::LabelIndex;

/// Writes per_query.csv, one row per (run, stage, labeled query), as the
/// rows are graded. Rows are formatted on the worker threads a piece at a
/// time, then written in order.
pub struct PerQueryWriter<'a> {
    file: BufWriter<Staging>,
    labels: &'a LabelIndex,
    n_scores: usize,
    n_ks: usize,
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
            n_scores: settings.n_scores(),
            n_ks: settings.ks.len(),
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
        let labels = self.labels;
        let mut csv = CsvRows::with_capacity(rows.len() * (96 + 12 * self.n_scores));
        let mut missed = String::new();
        for row in rows {
            let q = &labels.queries()[row.query as usize];
            csv.text(run)?;
            csv.text(stage)?;
            csv.text(labels.query_id(row.query))?;
            csv.text(labels.slice_name(q.task))?;
            csv.text(labels.slice_name(q.language))?;
            csv.text(if q.required { "true" } else { "false" })?;
            csv.text(row.status.name())?;
            csv.number(Some(f64::from(q.n_relevant)));
            csv.number(row.n_results);
            csv.number(row.first_rel_rank.map(f64::from));
            csv.number(Some(f64::from(row.captures)));
            csv.number(row.latency_ms);
            csv.number(row.context_tokens);
            for i in 0..self.n_scores {
                csv.number(row.scores.as_ref().map(|s| s[i]));
            }
            join_missed(&mut missed, row, labels);
            csv.text(&missed)?;
            csv.number(row.unauthorized);
            csv.text(labels.slice_name(q.split))?;
            csv.text(
                row.answer_ok
                    .map_or("", |ok| if ok { "true" } else { "false" }),
            )?;
            for i in 0..self.n_ks {
                csv.number(row.judged.as_ref().map(|j| j[i]));
            }
            csv.end_row();
        }
        Ok(csv.bytes)
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
