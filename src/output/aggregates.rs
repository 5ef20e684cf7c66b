//! aggregates.csv: one row per (run, stage, grouping set); calibrated
//! means follow the others when the grading was calibrated.

use std::io::Write;
use std::path::Path;

use anyhow::Result;

use super::cells::NumberCell;
use super::staged::{self, stage, Staged};
use crate::base::schema::{
    aggregates_header, calibration_columns, Status, AGGREGATES_FILE, LATENCY_PERCENTILES,
};
use crate::base::slices::ANY;
use crate::grade::aggregate::{Aggregate, PairAggregates};
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
    let mut header = aggregates_header(&settings.ks, settings.asked().as_deref());
    if calibrated {
        header.extend(calibration_columns(&settings.metric_columns()));
    }
    header.extend(settings.slice_by.iter().cloned());
    wtr.write_record(&header)?;
    let mut row = Row {
        cell: NumberCell::default(),
        settings,
        calibrated,
    };
    let name = |slice: Option<u32>| slice.map_or(ANY, |s| labels.slice_name(s));
    for pair in pairs {
        let (run, stage) = (&*pair.run, &*pair.stage);
        for agg in &pair.aggregates {
            let names = [name(agg.task), name(agg.language), name(agg.split)];
            row.write(&mut wtr, (run, stage), names, agg)?;
            wtr.write_record(settings.slice_by.iter().map(|_| ANY))?;
        }
        for slice in &pair.log_slices {
            row.write(&mut wtr, (run, stage), [ANY; 3], &slice.aggregate)?;
            let fields = 0..settings.slice_by.len();
            wtr.write_record(fields.map(|f| if f == slice.field { &*slice.value } else { ANY }))?;
        }
    }
    staged::finish_csv(wtr)
}

/// How a row is written: the settings it was graded with, and whether
/// its means were calibrated.
struct Row<'a> {
    cell: NumberCell,
    settings: &'a GradeSettings,
    calibrated: bool,
}

impl Row<'_> {
    /// Write every cell of `agg`'s row but those of the log fields sliced
    /// by, which end it: its (run, stage), its task, language and split,
    /// then its counts and means (and calibrated means).
    fn write<W: Write>(
        &mut self,
        wtr: &mut csv::Writer<W>,
        (run, stage): (&str, &str),
        [task, language, split]: [&str; 3],
        agg: &Aggregate,
    ) -> Result<()> {
        let (cell, settings) = (&mut self.cell, self.settings);
        wtr.write_field(run)?;
        wtr.write_field(stage)?;
        wtr.write_field(task)?;
        wtr.write_field(language)?;
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
        wtr.write_field(split)?;
        let judged = agg.judged_means();
        for i in 0..settings.judged_cutoffs().len() {
            wtr.write_field(cell.text(judged.as_ref().map(|j| j[i])))?;
        }
        let half_widths = agg.half_widths();
        for i in 0..settings.n_scores() {
            wtr.write_field(cell.text(half_widths.as_ref().map(|h| h[i])))?;
        }
        if self.calibrated {
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
        Ok(())
    }
}
