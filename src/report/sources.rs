//! Where a page finds the output files it reads, and their cells read
//! back.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::base::schema::OutputFile;
use crate::output::staged::Staged;

/// Where the page finds each output file it reads: complete files under
/// their temporary names while a grading is written, or a directory's.
pub struct Sources {
    files: Vec<(String, PathBuf)>,
}

impl Sources {
    /// Files staged by the run being written.
    pub fn staged(files: &[Staged]) -> Self {
        Sources {
            files: files
                .iter()
                .map(|f| (f.listed().name.clone(), f.path().to_path_buf()))
                .collect(),
        }
    }

    /// The files summary.json lists in `dir`.
    pub fn listed(dir: &Path, outputs: &[OutputFile]) -> Self {
        Sources {
            files: outputs
                .iter()
                .map(|f| (f.name.clone(), dir.join(&f.name)))
                .collect(),
        }
    }

    /// Where the output `name` is, if the run wrote it.
    pub fn path(&self, name: &str) -> Option<&Path> {
        self.files
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, path)| path.as_path())
    }

    /// Where the output `name` is.
    ///
    /// # Errors
    /// The run did not write it.
    pub fn require(&self, name: &str) -> Result<&Path> {
        self.path(name)
            .with_context(|| format!("{name}: not among the outputs; not a complete grade output"))
    }
}

/// A CSV file's rows as text, with the position of each named column.
pub fn read_csv(path: &Path, columns: &[&str]) -> Result<Vec<Vec<String>>> {
    let mut reader =
        csv::Reader::from_path(path).with_context(|| format!("{}: cannot open", path.display()))?;
    let header = reader.headers()?.clone();
    let at: Vec<usize> = columns
        .iter()
        .map(|c| {
            header.iter().position(|h| h == *c).with_context(|| {
                format!(
                    "{}: no column {c}: not written by this rgrade",
                    path.display()
                )
            })
        })
        .collect::<Result<_>>()?;
    let mut rows = Vec::new();
    for record in reader.records() {
        let record = record.with_context(|| format!("{}: cannot read", path.display()))?;
        rows.push(at.iter().map(|&i| record[i].to_string()).collect());
    }
    Ok(rows)
}

/// A number cell, empty for none.
pub fn number(text: &str, path: &Path) -> Result<Option<f64>> {
    match text {
        "" => Ok(None),
        _ => text
            .parse()
            .map(Some)
            .with_context(|| format!("{}: '{text}' is not a number", path.display())),
    }
}
