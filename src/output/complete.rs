//! Reading an output back: a directory holds a complete result only when
//! its summary.json (or a comparison's comparison.json) is there and every
//! file it lists is too, byte for byte. Readers of a result (`compare`,
//! `report`) go through here, so a directory left by a killed run, or
//! changed since, is refused rather than read.

use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use anyhow::{ensure, Context, Result};
use xxhash_rust::xxh3::Xxh3;

use super::schema::{ComparisonSummary, OutputFile, PartialSummary, Summary};

/// Read the summary.json at `summary` and check every output it lists in
/// its directory.
///
/// # Errors
/// summary.json unreadable or not rgrade's, or a listed file missing,
/// unreadable or changed: each message names the file.
pub fn read_summary(summary: &Path) -> Result<Summary> {
    let file =
        File::open(summary).with_context(|| format!("{}: cannot open", summary.display()))?;
    let parsed: Summary = serde_json::from_reader(BufReader::new(file)).with_context(|| {
        format!(
            "{}: not a summary.json written by rgrade grade",
            summary.display()
        )
    })?;
    let dir = summary.parent().unwrap_or(Path::new("."));
    for listed in &parsed.outputs {
        check_file(dir, listed, summary)?;
    }
    Ok(parsed)
}

/// Read the partial.json at `path` and check every output it lists in its
/// directory.
///
/// # Errors
/// partial.json unreadable or not rgrade's, or a listed file missing,
/// unreadable or changed: each message names the file.
pub fn read_partial(path: &Path) -> Result<PartialSummary> {
    let file = File::open(path).with_context(|| {
        format!(
            "{}: cannot open: not a partial grading (grade --partial -o DIR writes one)",
            path.display()
        )
    })?;
    let parsed: PartialSummary =
        serde_json::from_reader(BufReader::new(file)).with_context(|| {
            format!(
                "{}: not a partial.json written by rgrade grade --partial",
                path.display()
            )
        })?;
    let dir = path.parent().unwrap_or(Path::new("."));
    for listed in &parsed.outputs {
        check_file(dir, listed, path)?;
    }
    Ok(parsed)
}

/// Read the comparison.json at `path` and check every output it lists in
/// its directory.
///
/// # Errors
/// comparison.json unreadable or not rgrade's, or a listed file missing,
/// unreadable or changed: each message names the file.
pub fn read_comparison(path: &Path) -> Result<ComparisonSummary> {
    let file = File::open(path).with_context(|| format!("{}: cannot open", path.display()))?;
    let parsed: ComparisonSummary =
        serde_json::from_reader(BufReader::new(file)).with_context(|| {
            format!(
                "{}: not a comparison.json written by rgrade",
                path.display()
            )
        })?;
    let dir = path.parent().unwrap_or(Path::new("."));
    for listed in &parsed.outputs {
        check_file(dir, listed, path)?;
    }
    Ok(parsed)
}

/// Fail unless `dir` holds `listed` with its size and hash.
fn check_file(dir: &Path, listed: &OutputFile, summary: &Path) -> Result<()> {
    let path = dir.join(&listed.name);
    let mut reader = File::open(&path).with_context(|| {
        format!(
            "{}: cannot open a file {} lists: not a complete grade output",
            path.display(),
            summary.display()
        )
    })?;
    let mut hasher = Xxh3::new();
    let bytes = std::io::copy(&mut reader, &mut hasher)
        .with_context(|| format!("{}: cannot read", path.display()))?;
    let hash = format!("{:032x}", hasher.digest128());
    ensure!(
        bytes == listed.bytes && hash == listed.hash,
        "{}: does not match {} (changed or cut short since it was graded); grade again",
        path.display(),
        summary.display()
    );
    Ok(())
}
