//! Reading an output back: a directory holds a complete result only when
//! its summary.json (or a comparison's comparison.json) is there and every
//! file it lists is too, byte for byte. Readers of a result (`compare`,
//! `report`) go through here, so a directory left by a killed run, or
//! changed since, is refused rather than read.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use anyhow::{ensure, Context, Result};
use serde::de::DeserializeOwned;
use xxhash_rust::xxh3::Xxh3;

use crate::base::schema::{
    AgreementSummary, ComparisonSummary, OutputFile, PartialSummary, Summary, TrendSummary,
};
use crate::io::location::Location;

/// Read the summary.json at `summary` and check every output it lists in
/// its directory.
///
/// # Errors
/// summary.json unreadable or not rgrade's, or a listed file missing,
/// unreadable or changed: each message names the file.
pub fn read_summary(summary: &Path) -> Result<Summary> {
    read_marker(
        summary,
        "a summary.json written by rgrade grade",
        |s: &Summary| &s.outputs,
    )
}

/// Read the partial.json at `path` and check every output it lists in its
/// directory.
///
/// # Errors
/// partial.json unreadable or not rgrade's, or a listed file missing,
/// unreadable or changed: each message names the file.
pub fn read_partial(path: &Path) -> Result<PartialSummary> {
    Location::local_only(path, "a result read back")?;
    ensure!(
        path.is_file(),
        "{}: cannot open: not a partial grading (grade --partial -o DIR writes one)",
        path.display()
    );
    let what = "a partial.json written by rgrade grade --partial";
    read_marker(path, what, |s: &PartialSummary| &s.outputs)
}

/// Read the comparison.json at `path` and check every output it lists in
/// its directory.
///
/// # Errors
/// comparison.json unreadable or not rgrade's, or a listed file missing,
/// unreadable or changed: each message names the file.
pub fn read_comparison(path: &Path) -> Result<ComparisonSummary> {
    let what = "a comparison.json written by rgrade";
    read_marker(path, what, |s: &ComparisonSummary| &s.outputs)
}

/// Read agreement.json at `path` and check every file it lists.
///
/// # Errors
/// agreement.json unreadable or not rgrade's, or a listed file missing,
/// unreadable or changed: each message names the file.
pub fn read_agreement(path: &Path) -> Result<AgreementSummary> {
    let what = "an agreement.json written by rgrade";
    read_marker(path, what, |s: &AgreementSummary| &s.outputs)
}

/// Read the alarms.json at `path` and check every file it lists.
///
/// # Errors
/// alarms.json unreadable or not rgrade's, or a listed file missing,
/// unreadable or changed: each message names the file.
pub fn read_trend(path: &Path) -> Result<TrendSummary> {
    let what = "an alarms.json written by rgrade trend";
    read_marker(path, what, |s: &TrendSummary| &s.outputs)
}

/// Read the file at `path` that marks a set of outputs complete (`what` it
/// should be), and check every output it lists (`outputs`) in its directory.
fn read_marker<T: DeserializeOwned>(
    path: &Path,
    what: &str,
    outputs: impl Fn(&T) -> &[OutputFile],
) -> Result<T> {
    Location::local_only(path, "a result read back")?;
    let file = open_regular(path).with_context(|| format!("{}: cannot open", path.display()))?;
    let parsed: T = serde_json::from_reader(BufReader::new(file))
        .with_context(|| format!("{}: not {what}", path.display()))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    for listed in outputs(&parsed) {
        check_file(dir, listed, path)?;
    }
    Ok(parsed)
}

/// Open `path` if it is a regular file (or a link to one): a pipe or a
/// device in its place would block a reader, or never end.
fn open_regular(path: &Path) -> Result<File> {
    let meta = std::fs::metadata(path)?;
    ensure!(
        meta.is_file(),
        "not a regular file (a pipe, a device or a directory)"
    );
    Ok(File::open(path)?)
}

/// Fail unless `dir` holds `listed` with its size and hash.
fn check_file(dir: &Path, listed: &OutputFile, summary: &Path) -> Result<()> {
    let path = dir.join(&listed.name);
    let reader = open_regular(&path).with_context(|| {
        format!(
            "{}: cannot open a file {} lists: not a complete result",
            path.display(),
            summary.display()
        )
    })?;
    let mut hasher = Xxh3::new();
    // One byte past the size listed tells a longer file, however long.
    let bytes = std::io::copy(&mut reader.take(listed.bytes + 1), &mut hasher)
        .with_context(|| format!("{}: cannot read", path.display()))?;
    let hash = format!("{:032x}", hasher.digest128());
    ensure!(
        bytes == listed.bytes && hash == listed.hash,
        "{}: does not match {} (changed or cut short since it was written); run what wrote \
         it again",
        path.display(),
        summary.display()
    );
    Ok(())
}
