//! The outputs of a grading, one file per output over the one
//! [`crate::base::schema`]: stage 6 of the pipeline. Nothing here computes a
//! score; it only lays out what the earlier stages produced.
//!
//! - [`per_query`] writes per_query.csv while rows are graded;
//! - [`aggregates`] writes aggregates.csv;
//! - [`rejects`] writes rejects.jsonl;
//! - [`stage_loss`] writes stage_loss.csv and stage_loss_per_query.csv;
//! - [`agreement`] writes `rgrade agree`'s files;
//! - [`corpus`] lists the labeled ids a corpus snapshot lacks;
//! - [`summary`] writes summary.json;
//! - [`openmetrics`] writes the means and counts for Prometheus;
//! - [`target`] judges the path of a one-file output (a file, a stream,
//!   or a result's file it must not replace);
//! - [`table`] prints the table on stdout;
//! - [`cells`] writes numbers and rows the one way they all use;
//! - [`staged`] writes every file under a temporary name and moves the
//!   complete set into place, summary.json last;
//! - [`complete`] reads a result back only when the set is complete.

use std::fs::{File, TryLockError};
use std::io;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::base::schema::{
    AGREEMENT_SUMMARY_FILE, AGREE_FILES, ALARMS_FILE, COMPARE_FILES, COMPARISON_SUMMARY_FILE,
    GRADE_FILES, LOCK_FILE, PARTIAL_SUMMARY_FILE, SUMMARY_FILE, TREND_FILES,
};
use crate::io::location::Location;

pub mod aggregates;
pub mod agreement;
pub mod attribution;
pub mod cells;
pub mod complete;
pub mod corpus;
pub mod openmetrics;
pub mod per_query;
pub mod rejects;
pub mod review_queue;
pub mod stage_loss;
pub mod staged;
pub mod summary;
pub mod table;
pub mod target;

/// Remove `name` from `dir` if an earlier run left it there: an output
/// this run does not write must not pass for one of its results (an old
/// gate.json read by a CI job, say).
///
/// # Errors
/// The file exists and cannot be removed.
pub fn remove_stale_output(dir: &Path, name: &str) -> Result<()> {
    let path = dir.join(name);
    match std::fs::remove_file(&path) {
        Err(err) if err.kind() != io::ErrorKind::NotFound => Err(err)
            .with_context(|| format!("{}: cannot remove an earlier run's output", path.display())),
        _ => Ok(()),
    }
}

/// Remove the files a run that was killed was writing into `dir`: with
/// the lock held, no run is writing them now, and one that writes other
/// outputs than that run would leave them behind.
///
/// # Errors
/// `dir` cannot be listed, or such a file removed.
fn remove_unfinished(dir: &Path) -> Result<()> {
    let listed = |err| anyhow::Error::new(err).context(format!("{}: cannot list", dir.display()));
    for entry in std::fs::read_dir(dir).map_err(listed)? {
        let name = entry.map_err(listed)?.file_name();
        if name.to_str().is_some_and(staged::is_temp_name) {
            remove_stale_output(dir, &name.to_string_lossy())?;
        }
    }
    Ok(())
}

/// The kinds of result an output directory holds. Each marks itself by
/// the file it writes last; all write report.html, so their files must
/// not mix in one directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResultKind {
    /// `grade -o` (a partial grading too).
    Grading,
    /// `compare -o`.
    Comparison,
    /// `agree -o`.
    Agreement,
    /// `trend -o`.
    Trend,
}

impl ResultKind {
    const ALL: [ResultKind; 4] = [
        ResultKind::Grading,
        ResultKind::Comparison,
        ResultKind::Agreement,
        ResultKind::Trend,
    ];

    /// The files whose presence marks a result of this kind.
    fn markers(self) -> &'static [&'static str] {
        match self {
            ResultKind::Grading => &[SUMMARY_FILE, PARTIAL_SUMMARY_FILE],
            ResultKind::Comparison => &[COMPARISON_SUMMARY_FILE],
            ResultKind::Agreement => &[AGREEMENT_SUMMARY_FILE],
            ResultKind::Trend => &[ALARMS_FILE],
        }
    }

    /// Every file a result of this kind may hold.
    fn files(self) -> &'static [&'static str] {
        match self {
            ResultKind::Grading => &GRADE_FILES,
            ResultKind::Comparison => &COMPARE_FILES,
            ResultKind::Agreement => &AGREE_FILES,
            ResultKind::Trend => &TREND_FILES,
        }
    }

    /// What a message calls a result of this kind.
    fn described(self) -> &'static str {
        match self {
            ResultKind::Grading => "a grade output",
            ResultKind::Comparison => "a comparison",
            ResultKind::Agreement => "an agreement of answer keys",
            ResultKind::Trend => "a trend",
        }
    }

    /// The kind of the complete result in `dir`, by its marker, if any.
    pub fn of_dir(dir: &Path) -> Option<(ResultKind, &'static str)> {
        let kinds = ResultKind::ALL.into_iter();
        kinds
            .flat_map(|kind| kind.markers().iter().map(move |&marker| (kind, marker)))
            .find(|(_, marker)| dir.join(marker).exists())
    }
}

/// Whether `name` is a file some result of rgrade may hold in its
/// directory.
fn is_result_file(name: &str) -> bool {
    (ResultKind::ALL.iter()).any(|kind| kind.files().contains(&name))
}

/// An output directory one run holds: created if missing, and locked, so
/// that a second run into it stops at once instead of mixing its files in.
/// The lock lasts as long as this value (or the process) does.
pub struct OutputDir {
    lock: File,
    path: PathBuf,
}

impl OutputDir {
    /// Create `dir` if need be and take its lock.
    ///
    /// # Errors
    /// The directory cannot be created, or another run holds it; it is a
    /// URI (of object storage, or of a scheme rgrade does not support).
    pub fn claim(dir: &Path) -> Result<Self> {
        // Never a local folder named `s3:` for `s3://bucket/night`.
        Location::local_only(dir, "an output directory")?;
        std::fs::create_dir_all(dir)
            .with_context(|| format!("{}: cannot create output directory", dir.display()))?;
        let path = dir.join(LOCK_FILE);
        let lock = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .with_context(|| format!("{}: cannot open the directory's lock", path.display()))?;
        match lock.try_lock() {
            Ok(()) => {
                remove_unfinished(dir)?;
                Ok(OutputDir { lock, path })
            }
            Err(TryLockError::WouldBlock) => bail!(
                "{}: another rgrade run is writing into this directory; \
                 wait for it to end or choose another output directory",
                dir.display()
            ),
            Err(TryLockError::Error(err)) => {
                Err(err).with_context(|| format!("{}: cannot lock", path.display()))
            }
        }
    }

    /// Claim `dir` for a result of `kind`: refuse a directory holding a
    /// result of another kind, and remove every file of an earlier result
    /// of this kind, so that until the new set is complete the directory
    /// holds no result a reader could take for this run's, nor an optional
    /// output this run will not write.
    ///
    /// # Errors
    /// As [`OutputDir::claim`]; `dir` holds a result of another kind; a
    /// file cannot be removed.
    pub fn claim_for(dir: &Path, kind: ResultKind) -> Result<Self> {
        let claimed = Self::claim(dir)?;
        for other in ResultKind::ALL.into_iter().filter(|&other| other != kind) {
            if let Some(marker) = other.markers().iter().find(|m| dir.join(m).exists()) {
                bail!(
                    "{}: holds {} ({marker}); write into another directory",
                    dir.display(),
                    other.described()
                );
            }
        }
        for name in kind.files() {
            remove_stale_output(dir, name)?;
        }
        Ok(claimed)
    }

    /// The directory held.
    pub fn dir(&self) -> &Path {
        self.path.parent().unwrap_or(&self.path)
    }

    /// Move the staged `files` into place, once sure the directory is
    /// still the one locked: removed and made again while this run wrote
    /// (a cleanup job, a user), it holds another lock file, and perhaps
    /// another run's files.
    ///
    /// # Errors
    /// The lock file is gone or replaced; a file cannot be moved.
    pub fn commit(&self, files: Vec<staged::Staged>) -> Result<()> {
        let ours = self.lock.metadata().ok().map(|m| staged::identity(&m));
        let there = std::fs::metadata(&self.path)
            .ok()
            .map(|m| staged::identity(&m));
        if ours.is_none() || ours != there {
            bail!(
                "{}: the output directory was removed or replaced while this run wrote into it; \
                 nothing was written; run again",
                self.dir().display()
            );
        }
        staged::commit(files)
    }
}
