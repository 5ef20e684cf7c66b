//! labels_missing_from_corpus.txt: the labeled doc ids a collection
//! snapshot lacks, one a line, written when `--corpus` stops a grading.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::schema::MISSING_FROM_CORPUS_FILE;

/// Write `ids` into `dir`, returning the file's path.
///
/// # Errors
/// The file cannot be written.
pub fn write_missing(dir: &Path, ids: &[String]) -> Result<PathBuf> {
    let path = dir.join(MISSING_FROM_CORPUS_FILE);
    let mut text = ids.join("\n");
    text.push('\n');
    std::fs::write(&path, text).with_context(|| format!("{}: cannot write", path.display()))?;
    Ok(path)
}
