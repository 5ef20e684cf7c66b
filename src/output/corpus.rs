//! labels_missing_from_corpus.txt: the labeled doc ids a collection
//! snapshot lacks, one a line, written when `--corpus` stops a grading.

use std::io::Write;

use anyhow::Result;

use super::staged::{self, stage};
use super::OutputDir;
use crate::base::schema::MISSING_FROM_CORPUS_FILE;

/// Write `ids` into the directory `held`, returning where the file is as
/// messages show it.
///
/// # Errors
/// The file cannot be written, or the directory is no longer the one held.
pub fn write_missing(held: &OutputDir, ids: &[String]) -> Result<String> {
    let dir = held.dir();
    let mut out = stage(dir, MISSING_FROM_CORPUS_FILE)?;
    for id in ids {
        writeln!(out, "{id}")?;
    }
    held.commit(vec![staged::finish(out)?])?;
    Ok(held.shown(MISSING_FROM_CORPUS_FILE))
}
