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
//! - [`bucket`] keeps the same promise for a result in object storage,
//!   which has no rename;
//! - [`kind`] tells the kinds of result by their files;
//! - [`complete`] reads a result back only when the set is complete.

use std::fs::{File, TryLockError};
use std::io;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::base::schema::LOCK_FILE;
use crate::io::location::Location;

pub mod aggregates;
pub mod agreement;
pub mod attribution;
pub mod bucket;
pub mod cells;
pub mod complete;
pub mod corpus;
pub mod kind;
pub mod openmetrics;
pub mod per_query;
pub mod rejects;
pub mod review_queue;
pub mod stage_loss;
pub mod staged;
pub mod summary;
pub mod table;
pub mod target;

pub use kind::ResultKind;

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

/// An output directory one run holds: created if missing, and locked, so
/// that a second run into it stops at once instead of mixing its files in.
/// The lock lasts as long as this value (or the process) does. A prefix of
/// object storage is held as [`bucket::Claimed`] says: the files are staged
/// here and stored when committed, and the same promise holds.
pub struct OutputDir {
    held: Held,
}

/// Where an output directory is.
enum Held {
    /// On this machine, locked by `lock`, the file at `path`.
    Local { lock: File, path: PathBuf },
    /// Under a prefix of object storage.
    Bucket(bucket::Claimed),
}

impl OutputDir {
    /// Create `dir` if need be and take its lock; a URI of object storage
    /// is claimed to write files under, leaving what it holds alone.
    ///
    /// # Errors
    /// The directory cannot be created, or another run holds it; it is a
    /// URI of a scheme rgrade does not support.
    pub fn claim(dir: &Path) -> Result<Self> {
        match Location::parse(dir)? {
            Location::Local(dir) => Self::claim_local(&dir),
            Location::Object(prefix) => Ok(OutputDir {
                held: Held::Bucket(bucket::Claimed::claim(prefix)?),
            }),
        }
    }

    /// Create the local `dir` if need be and take its lock.
    fn claim_local(dir: &Path) -> Result<Self> {
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
                Ok(OutputDir {
                    held: Held::Local { lock, path },
                })
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
        if let Location::Object(prefix) = Location::parse(dir)? {
            return Ok(OutputDir {
                held: Held::Bucket(bucket::Claimed::claim_for(prefix, kind)?),
            });
        }
        let claimed = Self::claim_local(dir)?;
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

    /// The directory the files are written into: the one held, or for a
    /// prefix of object storage, the local one they are staged in.
    pub fn dir(&self) -> &Path {
        match &self.held {
            Held::Local { path, .. } => path.parent().unwrap_or(path),
            Held::Bucket(claimed) => claimed.staging(),
        }
    }

    /// Where the output `name` is, as messages show it.
    pub fn shown(&self, name: &str) -> String {
        match &self.held {
            Held::Local { .. } => self.dir().join(name).display().to_string(),
            Held::Bucket(claimed) => claimed.shown(name),
        }
    }

    /// Move the staged `files` into place, once sure the directory is
    /// still the one locked: removed and made again while this run wrote
    /// (a cleanup job, a user), it holds another lock file, and perhaps
    /// another run's files.
    ///
    /// # Errors
    /// The lock file is gone or replaced; a file cannot be moved.
    pub fn commit(&self, files: Vec<staged::Staged>) -> Result<()> {
        let (lock, path) = match &self.held {
            Held::Local { lock, path } => (lock, path),
            Held::Bucket(claimed) => return claimed.commit(files),
        };
        let ours = lock.metadata().ok().map(|m| staged::identity(&m));
        let there = std::fs::metadata(path).ok().map(|m| staged::identity(&m));
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
