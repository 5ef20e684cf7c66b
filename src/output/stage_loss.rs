//! stage_loss.csv and stage_loss_per_query.csv: the evidence each stage
//! of `--stage-order` dropped.

use std::path::Path;

use anyhow::Result;

use super::cells::number_text;
use super::staged::{self, stage, Staged};
use crate::base::schema::{
    STAGE_LOSS, STAGE_LOSS_FILE, STAGE_LOSS_PER_QUERY, STAGE_LOSS_PER_QUERY_FILE,
};
use crate::base::slices::ANY;
use crate::grade::diagnostics::stage_loss::StageLoss;
use crate::labels::LabelIndex;

/// stage_loss.csv (totals per run, transition and grouping set) and
/// stage_loss_per_query.csv (the lost ids of every query and transition).
///
/// # Errors
/// A file cannot be written.
pub fn write_stage_loss(dir: &Path, labels: &LabelIndex, loss: &StageLoss) -> Result<[Staged; 2]> {
    let slice = |s: Option<u32>| s.map_or(ANY, |s| labels.slice_name(s));
    let mut totals = csv::Writer::from_writer(stage(dir, STAGE_LOSS_FILE)?);
    totals.write_record(STAGE_LOSS)?;
    let mut per_query = csv::Writer::from_writer(stage(dir, STAGE_LOSS_PER_QUERY_FILE)?);
    per_query.write_record(STAGE_LOSS_PER_QUERY)?;
    for step in &loss.transitions {
        for set in &step.totals {
            let rate = number_text(set.lost_rate());
            totals.write_record([
                &*step.run,
                slice(set.task),
                slice(set.language),
                &step.from,
                &step.to,
                &set.relevant_found.to_string(),
                &set.lost.to_string(),
                &rate,
            ])?;
        }
        for query in &step.queries {
            let q = &labels.queries()[query.query as usize];
            let lost_ids: Vec<&str> = query.lost.iter().map(|&d| labels.doc_id(d)).collect();
            per_query.write_record([
                &*step.run,
                labels.query_id(query.query),
                labels.slice_name(q.task),
                labels.slice_name(q.language),
                &step.from,
                &step.to,
                &query.relevant_found.to_string(),
                &query.lost.len().to_string(),
                &lost_ids.join("|"),
            ])?;
        }
    }
    Ok([staged::finish_csv(totals)?, staged::finish_csv(per_query)?])
}
