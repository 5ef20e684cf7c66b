//! attribution.csv: per (run, stage, grouping set), how the answered
//! queries split by their evidence: wrong answers whose evidence was
//! missing (retrieval failures), wrong answers with all of it (generation
//! failures), right answers without all of it.

use std::path::Path;

use anyhow::Result;

use super::staged::{self, stage, Staged};
use crate::base::schema::{ATTRIBUTION, ATTRIBUTION_FILE};
use crate::base::slices::ANY;
use crate::grade::aggregate::PairAggregates;
use crate::labels::LabelIndex;

/// Write attribution.csv, one row per (run, stage, grouping set) in the
/// order of aggregates.csv.
///
/// # Errors
/// The file cannot be created or written.
pub fn write_attribution(
    dir: &Path,
    labels: &LabelIndex,
    pairs: &[PairAggregates],
) -> Result<Staged> {
    let mut wtr = csv::Writer::from_writer(stage(dir, ATTRIBUTION_FILE)?);
    wtr.write_record(ATTRIBUTION)?;
    let name = |slice: Option<u32>| slice.map_or(ANY, |s| labels.slice_name(s));
    for pair in pairs {
        for agg in &pair.aggregates {
            let a = agg.attribution;
            let counts = [
                a.answered,
                a.answer_ok,
                a.wrong_missing_evidence,
                a.wrong_with_evidence,
                a.ok_missing_evidence,
            ]
            .map(|n| n.to_string());
            wtr.write_field(&*pair.run)?;
            wtr.write_field(&*pair.stage)?;
            wtr.write_field(name(agg.task))?;
            wtr.write_field(name(agg.language))?;
            wtr.write_field(name(agg.split))?;
            for count in &counts {
                wtr.write_field(count)?;
            }
            wtr.write_record(None::<&[u8]>)?;
        }
    }
    staged::finish_csv(wtr)
}
