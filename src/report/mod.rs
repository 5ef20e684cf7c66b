//! The report: one HTML page beside the outputs of a grading or a
//! comparison, for the people who would rather look than read CSV. It is
//! drawn from the outputs themselves (summary.json, aggregates.csv,
//! rejects.jsonl, stage_loss.csv and per_query.csv's rows; or
//! comparison.json, comparison.csv, per_query_delta.csv and gate.json),
//! so `rgrade report DIR` draws the same page again from a complete
//! output directory.
//!
//! - [`collect`] gathers what the page shows of each (run, stage) from
//!   per_query.csv's rows, bounded whatever their number;
//! - [`per_query`] reads those rows back from the file;
//! - [`intervals`] finds the 95% interval of each mean;
//! - [`charts`] draws the figures (plotters, SVG);
//! - [`page`] is the frame every page shares (maud, inline CSS);
//! - [`sources`] says where the output files a page reads are;
//! - [`grade`] lays out the grade page, [`compare`] the compare page.
//!
//! The page is self-contained: inline CSS and SVG, no script, and a
//! Content-Security-Policy that forbids every request.

pub mod charts;
pub mod collect;
pub mod compare;
pub mod grade;
pub mod intervals;
pub mod page;
pub mod per_query;
pub mod sources;

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, ensure, Context, Result};

use crate::output::schema::{
    COMPARISON_SUMMARY_FILE, LOCK_FILE, PER_QUERY_FILE, REPORT_FILE, SUMMARY_FILE,
};
use crate::output::staged::{self, stage, Staged};
use crate::output::{complete, OutputDir};
use collect::Collector;
pub use sources::Sources;

/// Stage report.html in `dir`, to be committed with the other outputs.
///
/// # Errors
/// The file cannot be written.
pub fn stage_page(dir: &Path, name: &str, html: &str) -> Result<Staged> {
    let mut out = stage(dir, name)?;
    out.write_all(html.as_bytes())?;
    staged::finish(out)
}

/// Draw the page of the complete grade or compare output directory `dir`
/// again, into `out` (default: report.html in `dir`), and say where it
/// went.
///
/// # Errors
/// `dir` holds no complete result (no summary.json or comparison.json, or
/// a file that does not match it), a file cannot be read, or the page
/// cannot be written.
pub fn draw_again(dir: &Path, out: Option<&Path>) -> Result<PathBuf> {
    let (html, marker, outputs) = if dir.join(COMPARISON_SUMMARY_FILE).exists() {
        let summary = complete::read_comparison(&dir.join(COMPARISON_SUMMARY_FILE))?;
        let html = compare::page(&summary, &Sources::listed(dir, &summary.outputs))?;
        (html, COMPARISON_SUMMARY_FILE, summary.outputs)
    } else if dir.join(SUMMARY_FILE).exists() {
        let summary = complete::read_summary(&dir.join(SUMMARY_FILE))?;
        let sources = Sources::listed(dir, &summary.outputs);
        let mut collector = Collector::new(&summary.settings.k);
        per_query::read(
            sources.require(PER_QUERY_FILE)?,
            &summary.settings.k,
            &mut collector,
        )?;
        let html = grade::page(&summary, &collector.finish(), &sources)?;
        (html, SUMMARY_FILE, summary.outputs)
    } else {
        bail!(
            "{}: no {SUMMARY_FILE} or {COMPARISON_SUMMARY_FILE}: not a complete grade or compare \
             output (a run that failed, was killed or is still writing leaves neither)",
            dir.display()
        );
    };
    let target = out.map_or_else(|| dir.join(REPORT_FILE), Path::to_path_buf);
    let (parent, name) = split_target(&target)?;
    let same_dir = parent.canonicalize().ok() == dir.canonicalize().ok();
    let mut drawn_from = (outputs.iter().map(|o| o.name.as_str()))
        .chain([marker, LOCK_FILE])
        .filter(|&listed| listed != REPORT_FILE);
    if same_dir && drawn_from.any(|listed| listed == name) {
        bail!(
            "{}: one of the files the page is drawn from; write the page to another file",
            target.display()
        );
    }
    // The page is written beside its target and renamed over it, which
    // would put a file in the place of a link, a pipe or a device.
    if let Ok(meta) = std::fs::symlink_metadata(&target) {
        ensure!(
            meta.is_file(),
            "{}: not a regular file (a link, a directory, a pipe or a device); \
             write the page to a file",
            target.display()
        );
    }
    // Writing into the output directory, hold it as a run would.
    let _lock = same_dir.then(|| OutputDir::claim(dir)).transpose()?;
    staged::commit(vec![stage_page(&parent, &name, &html)?])?;
    Ok(target)
}

/// The directory and file name of a page to write.
fn split_target(target: &Path) -> Result<(PathBuf, String)> {
    let name = target
        .file_name()
        .and_then(|n| n.to_str())
        .with_context(|| {
            format!(
                "{}: not a file name to write the report to",
                target.display()
            )
        })?;
    let parent = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    Ok((parent, name.to_string()))
}
