//! Where a page finds the output files it reads.

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
