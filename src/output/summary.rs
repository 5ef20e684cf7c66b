//! summary.json: what was graded, from what, and how it went.

use std::io::Write;
use std::path::Path;

use anyhow::Result;

use super::staged::{self, stage, Staged};

use crate::base::schema::{
    MostlyMissing, OrderedMap, OverallSummary, Status, Summary, SUMMARY_FILE,
};
use crate::grade::aggregate::{Aggregate, PairAggregates};
use crate::grade::score::GradeSettings;

/// Write summary.json.
///
/// # Errors
/// The file cannot be created or written.
pub fn write_summary(dir: &Path, summary: &Summary) -> Result<Staged> {
    let mut out = stage(dir, SUMMARY_FILE)?;
    serde_json::to_writer_pretty(&mut out, summary)?;
    out.write_all(b"\n")?;
    staged::finish(out)
}

/// summary.json's overall row of every (run, stage) in `pairs`.
pub fn overall_rows(pairs: &[PairAggregates], settings: &GradeSettings) -> Vec<OverallSummary> {
    (pairs.iter())
        .filter_map(|p| (p.aggregates.first()).map(|overall| overall_row(p, overall, settings)))
        .collect()
}

/// The (run, stage)s of `overall` more than half of whose labeled queries
/// with an answer have no capture.
pub fn mostly_missing(overall: &[OverallSummary]) -> Vec<MostlyMissing> {
    (overall.iter())
        .filter_map(|row| {
            let queries = row.queries - row.no_answer;
            (row.missing * 2 > queries).then(|| MostlyMissing {
                run: row.run.clone(),
                stage: row.stage.clone(),
                queries,
                missing: row.missing,
                share: row.missing as f64 / queries as f64,
            })
        })
        .collect()
}

/// summary.json's row of a (run, stage)'s overall aggregate.
fn overall_row(
    pair: &PairAggregates,
    overall: &Aggregate,
    settings: &GradeSettings,
) -> OverallSummary {
    let means = overall.means();
    let metrics = settings
        .metric_columns()
        .into_iter()
        .enumerate()
        .map(|(i, name)| (name, means.as_ref().map(|m| m[i])))
        .collect();
    OverallSummary {
        run: pair.run.to_string(),
        stage: pair.stage.to_string(),
        queries: overall.queries,
        ok: overall.status_count(Status::Ok),
        missing: overall.status_count(Status::Missing),
        invalid: overall.status_count(Status::Invalid),
        no_answer: overall.status_count(Status::NoAnswer),
        metrics: OrderedMap(metrics),
    }
}
