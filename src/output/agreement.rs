//! The outputs of `rgrade agree`: agreement.csv (the pairs two answer
//! keys grade differently), agreement_slices.csv (their agreement per
//! grouping set) and agreement.json (what was compared, the counts and
//! the confusion matrix).

use std::io::Write;
use std::path::Path;

use anyhow::Result;

use super::cells::NumberCell;
use super::staged::{self, stage, Staged};
use crate::agree::{Agreement, RunsUnderBoth};
use crate::base::schema::{
    AgreementSummary, AGREEMENT, AGREEMENT_FILE, AGREEMENT_RUNS, AGREEMENT_RUNS_FILE,
    AGREEMENT_SLICES, AGREEMENT_SLICES_FILE, AGREEMENT_SUMMARY_FILE, AGREEMENT_TAU,
    AGREEMENT_TAU_FILE,
};

/// Write agreement.csv: one row per pair both keys judge and grade
/// differently, in the order of [`Agreement::disagreements`].
///
/// # Errors
/// The file cannot be created or written.
pub fn write_disagreements(dir: &Path, agreement: &Agreement) -> Result<Staged> {
    let mut wtr = csv::Writer::from_writer(stage(dir, AGREEMENT_FILE)?);
    wtr.write_record(AGREEMENT)?;
    let mut cell = NumberCell::default();
    let flag = |on: bool| if on { "true" } else { "false" };
    for d in &agreement.disagreements {
        wtr.write_field(&d.query_id)?;
        wtr.write_field(&d.doc_id)?;
        wtr.write_field(&d.task)?;
        wtr.write_field(&d.language)?;
        wtr.write_field(d.grade_a.to_string())?;
        wtr.write_field(d.grade_b.to_string())?;
        wtr.write_field(flag(d.relevant_a))?;
        wtr.write_field(flag(d.relevant_b))?;
        wtr.write_field(cell.text(Some(d.recall_shift)))?;
        wtr.write_record(None::<&[u8]>)?;
    }
    staged::finish_csv(wtr)
}

/// Write agreement_slices.csv: one row per grouping set, overall first.
///
/// # Errors
/// The file cannot be created or written.
pub fn write_slices(dir: &Path, agreement: &Agreement) -> Result<Staged> {
    let mut wtr = csv::Writer::from_writer(stage(dir, AGREEMENT_SLICES_FILE)?);
    wtr.write_record(AGREEMENT_SLICES)?;
    let mut cell = NumberCell::default();
    for slice in &agreement.slices {
        wtr.write_field(&slice.task)?;
        wtr.write_field(&slice.language)?;
        for count in [
            slice.queries,
            slice.pairs,
            slice.same_grade,
            slice.same_relevance,
        ] {
            wtr.write_field(count.to_string())?;
        }
        for kappa in [
            slice.relevance_kappa,
            slice.grade_kappa,
            slice.grade_kappa_unweighted,
            slice.grade_kappa_quadratic,
            slice.grade_alpha_ordinal,
        ] {
            wtr.write_field(cell.text(kappa))?;
        }
        wtr.write_record(None::<&[u8]>)?;
    }
    staged::finish_csv(wtr)
}

/// Write agreement_runs.csv (every run's means under both keys) and
/// agreement_tau.csv (how alike the keys order the runs).
///
/// # Errors
/// A file cannot be created or written.
pub fn write_runs(dir: &Path, runs: &RunsUnderBoth) -> Result<[Staged; 2]> {
    let mut cell = NumberCell::default();
    let mut wtr = csv::Writer::from_writer(stage(dir, AGREEMENT_RUNS_FILE)?);
    wtr.write_record(AGREEMENT_RUNS)?;
    for row in &runs.means {
        for text in [&row.run, &row.stage, &row.task, &row.language, &row.metric] {
            wtr.write_field(text)?;
        }
        wtr.write_field(cell.text(row.mean_a))?;
        wtr.write_field(cell.text(row.mean_b))?;
        wtr.write_record(None::<&[u8]>)?;
    }
    let means = staged::finish_csv(wtr)?;
    let mut wtr = csv::Writer::from_writer(stage(dir, AGREEMENT_TAU_FILE)?);
    wtr.write_record(AGREEMENT_TAU)?;
    for row in &runs.orders {
        for text in [&row.stage, &row.task, &row.language, &row.metric] {
            wtr.write_field(text)?;
        }
        wtr.write_field(row.runs.to_string())?;
        wtr.write_field(cell.text(row.kendall_tau))?;
        wtr.write_record(None::<&[u8]>)?;
    }
    Ok([means, staged::finish_csv(wtr)?])
}

/// Write agreement.json.
///
/// # Errors
/// The file cannot be created or written.
pub fn write_summary(dir: &Path, summary: &AgreementSummary) -> Result<Staged> {
    let mut out = stage(dir, AGREEMENT_SUMMARY_FILE)?;
    serde_json::to_writer_pretty(&mut out, summary)?;
    writeln!(out)?;
    staged::finish(out)
}
