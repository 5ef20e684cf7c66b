//! per_query.csv read back, row by row ([`PerQueryReader`]), into the
//! page's [`Collector`]: how `rgrade report` draws a grading it did not
//! just make.

use std::path::Path;

use anyhow::{bail, Result};

use super::collect::{Collector, PerQueryRow};
use crate::base::metrics::Cutoff;
use crate::base::schema::Status;
use crate::output::per_query::{PerQueryReader, ReadRow};

/// Feed every row of the per_query.csv at `path`, graded at cutoffs `ks`
/// and the measures `asked` by name, if any,
/// to `collector`.
///
/// # Errors
/// The file cannot be read, lacks a column, holds a cell that is not as
/// rgrade writes it, or is not sorted by (run, stage).
pub fn read(
    path: &Path,
    ks: &[Cutoff],
    asked: Option<&[String]>,
    collector: &mut Collector,
) -> Result<()> {
    let mut reader = PerQueryReader::open(path, ks, asked)?;
    let mut seen = Vec::<(String, String)>::new();
    while let Some(row) = reader.next_row()? {
        let (run, stage, line) = (row.run, row.stage, row.line);
        if !collector.is_pair(run, stage) {
            if seen.iter().any(|(r, s)| r == run && s == stage) {
                bail!(
                    "{}:{line}: rows of run '{run}', stage '{stage}' are not together: \
                     not a per_query.csv written by rgrade",
                    path.display()
                );
            }
            seen.push((run.to_string(), stage.to_string()));
            collector.begin_pair(run, stage, 0);
        }
        collector.add(&row);
    }
    Ok(())
}

impl PerQueryRow for ReadRow<'_> {
    fn query_id(&self) -> &str {
        self.query_id
    }
    fn task(&self) -> &str {
        self.task
    }
    fn language(&self) -> &str {
        self.language
    }
    fn split(&self) -> &str {
        self.split
    }
    fn status(&self) -> Status {
        self.status
    }
    fn n_relevant(&self) -> u32 {
        self.n_relevant
    }
    fn first_rel_rank(&self) -> Option<u32> {
        self.first_rel_rank
    }
    fn latency_ms(&self) -> Option<f64> {
        self.latency_ms
    }
    fn context_tokens(&self) -> Option<f64> {
        self.context_tokens
    }
    fn scores(&self) -> Option<&[f64]> {
        self.metrics
    }
    fn missed(&self) -> String {
        self.missed.to_string()
    }
}
