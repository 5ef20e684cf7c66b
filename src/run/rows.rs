//! Graded rows on their way out: to a result directory, where
//! per_query.csv is written and the report's figures gathered as each
//! range of rows is graded (so rows never pile up in memory), and, when
//! the caller asks, into Arrow record batches it reads instead.

use std::path::Path;

use anyhow::Result;

use crate::base::schema::Status;
use crate::grade::aggregate::RowSink;
use crate::grade::score::{GradeSettings, QueryRow};
use crate::io::tables::ArrowTable;
use crate::labels::{LabelIndex, LabeledQuery};
use crate::output::per_query::{join_missed, PerQueryTable, PerQueryWriter};
use crate::output::staged::Staged;
use crate::report::collect::{Collector, PairFigures, PerQueryRow};

/// Where the rows go: per_query.csv and the report's figures (with an
/// output directory), record batches (when kept), or both.
pub struct RowOutputs<'a> {
    files: Option<(PerQueryWriter<'a>, Collector)>,
    table: Option<PerQueryTable<'a>>,
    labels: &'a LabelIndex,
}

/// What the rows left: per_query.csv, complete under its temporary name,
/// with what the report draws of its rows; and the rows kept.
pub struct RowsWritten {
    /// per_query.csv and the report's figures, with an output directory.
    pub files: Option<(Staged, Vec<PairFigures>)>,
    /// The rows, when kept.
    pub table: Option<ArrowTable>,
}

impl<'a> RowOutputs<'a> {
    /// Start per_query.csv in `dir`, if any, and keep the rows in memory
    /// if `keep`.
    ///
    /// # Errors
    /// The file cannot be created.
    pub fn create(
        dir: Option<&Path>,
        keep: bool,
        labels: &'a LabelIndex,
        settings: &GradeSettings,
    ) -> Result<Self> {
        let files = match dir {
            Some(dir) => Some((
                PerQueryWriter::create(dir, labels, settings)?,
                Collector::new(&settings.ks, settings.asked().as_deref()),
            )),
            None => None,
        };
        Ok(RowOutputs {
            files,
            table: keep.then(|| PerQueryTable::new(labels, settings)),
            labels,
        })
    }

    /// Whether the rows go anywhere.
    pub fn any(&self) -> bool {
        self.files.is_some() || self.table.is_some()
    }

    /// What the rows left.
    ///
    /// # Errors
    /// The file cannot be flushed.
    pub fn finish(self) -> Result<RowsWritten> {
        let files = match self.files {
            Some((per_query, figures)) => Some((per_query.finish()?, figures.finish())),
            None => None,
        };
        let table = self.table.map(PerQueryTable::finish).transpose()?;
        Ok(RowsWritten { files, table })
    }
}

impl RowSink for RowOutputs<'_> {
    fn begin_pair(&mut self, run: &str, stage: &str, rows: usize) {
        if let Some((_, figures)) = &mut self.files {
            figures.begin_pair(run, stage, rows);
        }
    }

    fn rows(&mut self, run: &str, stage: &str, rows: &[QueryRow]) -> Result<()> {
        let labels = self.labels;
        let (files, table) = (&mut self.files, &mut self.table);
        let (written, kept) = rayon::join(
            || match files {
                Some((per_query, figures)) => {
                    let (written, ()) = rayon::join(
                        || per_query.write(run, stage, rows),
                        || {
                            for row in rows {
                                figures.add(&RowView { row, labels });
                            }
                        },
                    );
                    written
                }
                None => Ok(()),
            },
            || match table {
                Some(table) => table.add(run, stage, rows),
                None => Ok(()),
            },
        );
        written.and(kept)
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
