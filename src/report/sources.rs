//! Where a page finds the output files it reads, and their cells read
//! back.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::base::schema::OutputFile;
use crate::base::slices::ANY;
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

/// aggregates.csv's rows, each with the cells of `columns`: those of the
/// answer key's grouping sets, and apart those of the log fields sliced by
/// (`slice_by`, its trailing columns), each with its field's place and
/// value, so that no reader takes a log-field set for the overall one.
///
/// # Errors
/// As [`read_csv`].
pub fn read_aggregates_csv(
    path: &Path,
    columns: &[&str],
    slice_by: &[String],
) -> Result<(Vec<Vec<String>>, Vec<LogSliceRow>)> {
    let all: Vec<&str> = (columns.iter().copied())
        .chain(slice_by.iter().map(String::as_str))
        .collect();
    let (mut key_sets, mut log_slices) = (Vec::new(), Vec::new());
    for mut row in read_csv(path, &all)? {
        let values = row.split_off(columns.len());
        match values.into_iter().enumerate().find(|(_, v)| v != ANY) {
            None => key_sets.push(row),
            Some((field, value)) => log_slices.push(LogSliceRow {
                field,
                value,
                cells: row,
            }),
        }
    }
    Ok((key_sets, log_slices))
}

/// A row of aggregates.csv of one value of a log field sliced by.
pub struct LogSliceRow {
    /// The field, as its place in `slice_by`.
    pub field: usize,
    /// Its value.
    pub value: String,
    /// The cells asked for.
    pub cells: Vec<String>,
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
