//! labels_missing_from_corpus.txt: the labeled doc ids a collection
//! snapshot lacks, one a line, written when `--corpus` stops a grading.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Result;

use super::schema::MISSING_FROM_CORPUS_FILE;
use super::staged::{self, stage};

/// Write `ids` into `dir`, returning the file's path.
///
/// # Errors
/// The file cannot be written.
pub fn write_missing(dir: &Path, ids: &[String]) -> Result<PathBuf> {
    let mut out = stage(dir, MISSING_FROM_CORPUS_FILE)?;
    for id in ids {
        writeln!(out, "{id}")?;
    }
    staged::commit(vec![staged::finish(out)?])?;
    Ok(dir.join(MISSING_FROM_CORPUS_FILE))
}
