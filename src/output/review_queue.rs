//! review_queue.csv: per labeled query, the unjudged documents the graded
//! captures ranked within the pool depth, best rank first: what to judge
//! next.

use std::path::Path;

use anyhow::Result;

use super::staged::{self, stage, Staged};
use crate::base::schema::{REVIEW_QUEUE, REVIEW_QUEUE_FILE};
use crate::grade::diagnostics::review;
use crate::grade::group::Grouped;
use crate::grade::score::GradeSettings;
use crate::labels::LabelIndex;

/// Write review_queue.csv from the pool of `grouped`'s graded captures.
///
/// # Errors
/// The file cannot be created or written.
pub fn write_review_queue(
    dir: &Path,
    grouped: &Grouped,
    labels: &LabelIndex,
    settings: &GradeSettings,
) -> Result<Staged> {
    let mut wtr = csv::Writer::from_writer(stage(dir, REVIEW_QUEUE_FILE)?);
    wtr.write_record(REVIEW_QUEUE)?;
    review::queue(grouped, labels, settings, |rows| -> Result<()> {
        for row in rows {
            let q = &labels.queries()[row.query as usize];
            wtr.write_record([
                labels.query_id(row.query),
                labels.slice_name(q.task),
                labels.slice_name(q.language),
                row.doc_id,
                &row.best_rank.to_string(),
                &row.runs.to_string(),
                &row.captures.to_string(),
            ])?;
        }
        Ok(())
    })?;
    staged::finish_csv(wtr)
}
