//! Graded rows on their way to a result directory: per_query.csv is
//! written and the report's figures gathered as each range of rows is
//! graded, so rows never pile up in memory.

use std::path::Path;

use anyhow::Result;

use crate::base::schema::Status;
use crate::grade::aggregate::RowSink;
use crate::grade::score::{GradeSettings, QueryRow};
use crate::labels::{LabelIndex, LabeledQuery};
use crate::output::per_query::{join_missed, PerQueryWriter};
use crate::output::staged::Staged;
use crate::report::collect::{Collector, PairFigures, PerQueryRow};

/// per_query.csv and the report's figures, fed the rows as they come.
pub struct RowOutputs<'a> {
    per_query: PerQueryWriter<'a>,
    figures: Collector,
    labels: &'a LabelIndex,
}

impl<'a> RowOutputs<'a> {
    /// Start per_query.csv in `dir`.
    ///
    /// # Errors
    /// The file cannot be created.
    pub fn create(dir: &Path, labels: &'a LabelIndex, settings: &GradeSettings) -> Result<Self> {
        Ok(RowOutputs {
            per_query: PerQueryWriter::create(dir, labels, settings)?,
            figures: Collector::new(&settings.ks),
            labels,
        })
    }

    /// per_query.csv, complete under its temporary name, and what the
    /// report draws of its rows.
    ///
    /// # Errors
    /// The file cannot be flushed.
    pub fn finish(self) -> Result<(Staged, Vec<PairFigures>)> {
        Ok((self.per_query.finish()?, self.figures.finish()))
    }
}

impl RowSink for RowOutputs<'_> {
    fn begin_pair(&mut self, run: &str, stage: &str, rows: usize) {
        self.figures.begin_pair(run, stage, rows);
    }

    fn rows(&mut self, run: &str, stage: &str, rows: &[QueryRow]) -> Result<()> {
        let labels = self.labels;
        let figures = &mut self.figures;
        let (written, ()) = rayon::join(
            || self.per_query.write(run, stage, rows),
            || {
                for row in rows {
                    figures.add(&RowView { row, labels });
                }
            },
        );
        written
    }
}

/// A graded row as the report reads it: what per_query.csv says of it.
struct RowView<'a> {
    row: &'a QueryRow,
    labels: &'a LabelIndex,
}

impl PerQueryRow for RowView<'_> {
    fn query_id(&self) -> &str {
        self.labels.query_id(self.row.query)
    }
    fn task(&self) -> &str {
        self.labels.slice_name(self.label().task)
    }
    fn language(&self) -> &str {
        self.labels.slice_name(self.label().language)
    }
    fn split(&self) -> &str {
        self.labels.slice_name(self.label().split)
    }
    fn status(&self) -> Status {
        self.row.status
    }
    fn n_relevant(&self) -> u32 {
        self.label().n_relevant
    }
    fn first_rel_rank(&self) -> Option<u32> {
        self.row.first_rel_rank
    }
    fn latency_ms(&self) -> Option<f64> {
        self.row.latency_ms
    }
    fn context_tokens(&self) -> Option<f64> {
        self.row.context_tokens
    }
    fn scores(&self) -> Option<&[f64]> {
        self.row.scores.as_deref()
    }
    fn missed(&self) -> String {
        let mut cell = String::new();
        join_missed(&mut cell, self.row, self.labels);
        cell
    }
}

impl RowView<'_> {
    fn label(&self) -> &LabeledQuery {
        &self.labels.queries()[self.row.query as usize]
    }
}
