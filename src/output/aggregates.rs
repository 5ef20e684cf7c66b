//! aggregates.csv: one row per (run, stage, grouping set); calibrated
//! means follow the others when the grading was calibrated.

use std::path::Path;

use anyhow::Result;

use super::cells::NumberCell;
use super::staged::{self, stage, Staged};
use crate::base::schema::{
    aggregates_header, calibration_columns, Status, AGGREGATES_FILE, LATENCY_PERCENTILES,
};
use crate::base::slices::ANY;
use crate::grade::aggregate::PairAggregates;
use crate::grade::score::GradeSettings;
use crate::labels::LabelIndex;

/// Write aggregates.csv: one row per (run, stage, grouping set), with the
/// calibration columns when `calibrated`.
///
/// # Errors
/// The file cannot be created or written.
pub fn write_aggregates(
    dir: &Path,
    labels: &LabelIndex,
    settings: &GradeSettings,
    pairs: &[PairAggregates],
    calibrated: bool,
) -> Result<Staged> {
    let mut wtr = csv::Writer::from_writer(stage(dir, AGGREGATES_FILE)?);
    let mut header = aggregates_header(&settings.ks);
    if calibrated {
        header.extend(calibration_columns(&settings.ks));
    }
    wtr.write_record(&header)?;
    let mut cell = NumberCell::default();
    for PairAggregates {
        run,
        stage,
        aggregates,
    } in pairs
    {
        for agg in aggregates {
            wtr.write_field(&**run)?;
            wtr.write_field(&**stage)?;
            wtr.write_field(agg.task.map_or(ANY, |t| labels.slice_name(t)))?;
            wtr.write_field(agg.language.map_or(ANY, |l| labels.slice_name(l)))?;
            wtr.write_field(cell.text(Some(agg.queries as f64)))?;
            for status in [
                Status::Ok,
                Status::Missing,
                Status::Invalid,
                Status::NoAnswer,
            ] {
                wtr.write_field(cell.text(Some(agg.status_count(status) as f64)))?;
            }
            let means = agg.means();
            for i in 0..settings.n_scores() {
                wtr.write_field(cell.text(means.as_ref().map(|m| m[i])))?;
            }
            for p in LATENCY_PERCENTILES {
                wtr.write_field(cell.text(agg.latency_percentile(p)))?;
            }
            wtr.write_field(cell.text(agg.context_tokens_mean()))?;
            wtr.write_field(cell.text(Some(agg.leaks as f64)))?;
            wtr.write_field(agg.split.map_or(ANY, |s| labels.slice_name(s)))?;
            let judged = agg.judged_means();
            for i in 0..settings.ks.len() {
                wtr.write_field(cell.text(judged.as_ref().map(|j| j[i])))?;
            }
            let half_widths = agg.half_widths();
            for i in 0..settings.n_scores() {
                wtr.write_field(cell.text(half_widths.as_ref().map(|h| h[i])))?;
            }
            if calibrated {
                wtr.write_field(cell.text(agg.human_queries().map(|n| n as f64)))?;
                let estimates: Vec<_> = agg.calibrated().collect();
                for estimate in &estimates {
                    wtr.write_field(cell.text(estimate.map(|c| c.mean)))?;
                    wtr.write_field(cell.text(estimate.map(|c| c.low)))?;
                    wtr.write_field(cell.text(estimate.map(|c| c.high)))?;
                }
                for estimate in &estimates {
                    wtr.write_field(cell.text(estimate.map(|c| c.lambda)))?;
                }
            }
            wtr.write_record(None::<&[u8]>)?;
        }
    }
    staged::finish_csv(wtr)
}
