//! The report page: one HTML page beside the outputs of a grading or a
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
//! - `crate::base::intervals` finds the 95% interval of each mean;
//! - [`charts`] draws the figures (plotters, SVG);
//! - [`page`] is the frame every page shares (maud, inline CSS);
//! - [`sources`] says where the output files a page reads are;
//! - [`small_multiples`] draws a series across nights per panel;
//! - [`grade`] lays out the grade page ([`calibration`] its means
//!   calibrated against a human key), [`compare`] the compare page,
//!   [`agree`] the page of two answer keys' agreement, [`trend`] the page
//!   of a series of nights.
//!
//! The page is self-contained: inline CSS and SVG, no script, and a
//! Content-Security-Policy that forbids every request.

pub mod agree;
pub mod calibration;
pub mod charts;
pub mod collect;
pub mod compare;
pub mod grade;
pub mod page;
pub mod per_query;
pub mod small_multiples;
pub mod sources;
pub mod trend;

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, ensure, Context, Result};

use crate::base::failure::{Error, ErrorKind, OfKind};
use crate::base::schema::{
    OutputFile, AGREEMENT_SUMMARY_FILE, AGREE_FILES, ALARMS_FILE, COMPARE_FILES,
    COMPARISON_SUMMARY_FILE, GRADE_FILES, LOCK_FILE, PARTIAL_SUMMARY_FILE, PER_QUERY_FILE,
    REPORT_FILE, SUMMARY_FILE, TREND_FILES,
};
use crate::io::location::{shown, Location};
use crate::io::objects;
use crate::output::complete::ReadBack;
use crate::output::staged::{self, stage, Staged};
use crate::output::{bucket, complete, OutputDir};
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

/// Draw the page of the complete grade, compare, agree or trend output
/// directory `dir` again, into `out` (default: report.html in `dir`), and
/// say where it went.
///
/// # Errors
/// `dir` holds no complete result (no summary.json, comparison.json,
/// agreement.json or alarms.json, or a file that does not match it), a
/// file cannot be read, or the page cannot be written.
pub fn draw_again(dir: &Path, out: Option<&Path>) -> Result<PathBuf, Error> {
    Ok(draw_page(dir, out).of_kind(ErrorKind::Output)?)
}

/// [`draw_again`], its error marked with its kind where it arose.
fn draw_page(dir: &Path, out: Option<&Path>) -> Result<PathBuf> {
    if out.is_some_and(|out| out.as_os_str() == STDOUT) {
        return draw_to_stdout(dir);
    }
    let is_object = |path: &Path| matches!(Location::parse(path), Ok(Location::Object(_)));
    if is_object(dir) || out.is_some_and(is_object) {
        return draw_stored_page(dir, out);
    }
    ensure!(dir.is_dir(), "{}: no such output directory", dir.display());
    let target = out.map_or_else(|| dir.join(REPORT_FILE), Path::to_path_buf);
    let (parent, name) = split_target(&target)?;
    let same_dir = matches!(
        (parent.canonicalize(), dir.canonicalize()),
        (Ok(parent), Ok(dir)) if parent == dir
    );
    // Writing into the output directory, hold it as a run would, before
    // reading it: a grade cannot then replace the result while its page
    // is drawn.
    let held = same_dir.then(|| OutputDir::claim(dir)).transpose()?;
    let drawn = draw(dir)?;
    // Never in the place of a result's file, this one's or another's: a
    // page is no per_query.csv, and another result's page shows another
    // grading.
    refuse_result_file(&target.display().to_string(), &name)?;
    // A result, or one being written (its summary.json is gone while the
    // run holds the directory, but its lock file stays).
    let holds_result = [
        SUMMARY_FILE,
        COMPARISON_SUMMARY_FILE,
        AGREEMENT_SUMMARY_FILE,
        ALARMS_FILE,
        PARTIAL_SUMMARY_FILE,
        LOCK_FILE,
    ]
    .iter()
    .any(|marker| parent.join(marker).exists());
    if !same_dir && name == REPORT_FILE && holds_result {
        bail!(
            "{}: the page of another result; write this page to another file",
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
    let page = stage_page(&parent, &name, &drawn.html)?;
    // Drawn elsewhere, the directory is not held: a page of a result
    // replaced meanwhile is not committed.
    let now = marker_outputs(dir, drawn.marker)?;
    ensure!(
        now == drawn.outputs,
        "{}: the result changed while its page was drawn (another run wrote it); draw it again",
        dir.display()
    );
    match &held {
        Some(held) => held.commit(vec![page])?,
        None => staged::commit(vec![page])?,
    }
    Ok(target)
}

/// The name of stdout as a page's FILE, as `--openmetrics` takes it.
pub const STDOUT: &str = "-";

/// [`draw_page`] to stdout (`-o -`): the page of the result `dir` (a
/// directory, or a prefix of object storage) written as drawn, with no
/// file made; a reader that closed the pipe early wanted no more.
fn draw_to_stdout(dir: &Path) -> Result<PathBuf> {
    let read = ReadBack::open(dir)?;
    ensure!(
        read.path().is_dir(),
        "{}: no such output directory",
        shown(dir)
    );
    let drawn = draw(read.path())?;
    let mut out = std::io::stdout().lock();
    let written = out
        .write_all(drawn.html.as_bytes())
        .and_then(|()| out.flush());
    match written {
        Err(err) if err.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(err).context("stdout: cannot write the page")
        }
        _ => Ok(PathBuf::from(STDOUT)),
    }
}

/// Refuse to write a page over `name`, a name rgrade gives the files of a
/// result (but the page's own), at `target`.
fn refuse_result_file(target: &str, name: &str) -> Result<()> {
    let result_file = (GRADE_FILES.iter().chain(&COMPARE_FILES).chain(&AGREE_FILES))
        .chain(&TREND_FILES)
        .chain(&[LOCK_FILE])
        .any(|&file| file == name && file != REPORT_FILE);
    if result_file {
        bail!(
            "{target}: a name rgrade gives the files of a result (the page may be drawn from \
             it); write the page to another file"
        );
    }
    Ok(())
}

/// [`draw_page`] of a result in object storage, or to an object: the
/// result read from a checked copy, the page stored whole at `out`
/// (default: report.html under the result's prefix), once sure the
/// result is still the one drawn.
fn draw_stored_page(dir: &Path, out: Option<&Path>) -> Result<PathBuf> {
    let read = ReadBack::open(dir)?;
    let drawn = draw(read.path())?;
    let target = match (out, read.prefix()) {
        (Some(out), _) => out.to_path_buf(),
        (None, Some(prefix)) => PathBuf::from(format!("{prefix}/{REPORT_FILE}")),
        (None, None) => dir.join(REPORT_FILE),
    };
    let Location::Object(uri) = Location::parse(&target)? else {
        // A result in object storage, its page drawn to a local file.
        let (parent, name) = split_target(&target)?;
        refuse_result_file(&target.display().to_string(), &name)?;
        std::fs::create_dir_all(&parent)
            .with_context(|| format!("{}: cannot create", parent.display()))?;
        staged::commit(vec![stage_page(&parent, &name, &drawn.html)?])?;
        return Ok(target);
    };
    let name = uri.file_name();
    refuse_result_file(&uri.to_string(), &name)?;
    let own_prefix = read
        .prefix()
        .is_some_and(|prefix| prefix.same_folder(&uri.parent()));
    if !own_prefix && name == REPORT_FILE && bucket::holds_result(&uri.parent())? {
        bail!("{uri}: the page of another result; write this page to another object");
    }
    ensure!(
        read.still_lists(&drawn.outputs)?,
        "{}: the result changed while its page was drawn (another run wrote it); draw it again",
        shown(dir)
    );
    objects::put(&uri, drawn.html.into_bytes().into(), false)?;
    Ok(PathBuf::from(uri.to_string()))
}

/// A page drawn from a complete output directory, with the marker file
/// it was drawn by and the outputs that file listed.
struct Drawn {
    html: String,
    marker: &'static str,
    outputs: Vec<OutputFile>,
}

/// Draw the page of the complete grade, compare, agree or trend output
/// `dir`.
fn draw(dir: &Path) -> Result<Drawn> {
    if dir.join(ALARMS_FILE).exists() {
        let summary = complete::read_trend(&dir.join(ALARMS_FILE))?;
        let html = trend::page(&summary, &Sources::listed(dir, &summary.outputs))?;
        return Ok(Drawn {
            html,
            marker: ALARMS_FILE,
            outputs: summary.outputs,
        });
    }
    if dir.join(AGREEMENT_SUMMARY_FILE).exists() {
        let summary = complete::read_agreement(&dir.join(AGREEMENT_SUMMARY_FILE))?;
        let html = agree::page(&summary, &Sources::listed(dir, &summary.outputs))?;
        return Ok(Drawn {
            html,
            marker: AGREEMENT_SUMMARY_FILE,
            outputs: summary.outputs,
        });
    }
    if dir.join(COMPARISON_SUMMARY_FILE).exists() {
        let summary = complete::read_comparison(&dir.join(COMPARISON_SUMMARY_FILE))?;
        let html = compare::page(&summary, &Sources::listed(dir, &summary.outputs))?;
        return Ok(Drawn {
            html,
            marker: COMPARISON_SUMMARY_FILE,
            outputs: summary.outputs,
        });
    }
    if dir.join(SUMMARY_FILE).exists() {
        let summary = complete::read_summary(&dir.join(SUMMARY_FILE))?;
        let sources = Sources::listed(dir, &summary.outputs);
        let mut collector =
            Collector::new(&summary.settings.k, summary.settings.measures.as_deref());
        per_query::read(
            sources.require(PER_QUERY_FILE)?,
            &summary.settings.k,
            summary.settings.measures.as_deref(),
            &mut collector,
        )?;
        let html = grade::page(&summary, &collector.finish(), &sources)?;
        return Ok(Drawn {
            html,
            marker: SUMMARY_FILE,
            outputs: summary.outputs,
        });
    }
    bail!(
        "{}: no {SUMMARY_FILE}, {COMPARISON_SUMMARY_FILE}, {AGREEMENT_SUMMARY_FILE} or \
         {ALARMS_FILE}: not a complete grade, compare, agree or trend output (a run that failed, \
         was killed or is still writing leaves none)",
        dir.display()
    )
}

/// The outputs the marker file of `dir` lists now, each checked against
/// its size and hash.
fn marker_outputs(dir: &Path, marker: &str) -> Result<Vec<OutputFile>> {
    let path = dir.join(marker);
    Ok(if marker == COMPARISON_SUMMARY_FILE {
        complete::read_comparison(&path)?.outputs
    } else if marker == AGREEMENT_SUMMARY_FILE {
        complete::read_agreement(&path)?.outputs
    } else if marker == ALARMS_FILE {
        complete::read_trend(&path)?.outputs
    } else {
        complete::read_summary(&path)?.outputs
    })
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
