//! Outputs a reader can trust after any failure. Every file is written
//! under a hidden temporary name beside its final one, hashed as it is
//! written, and renamed into place only when the whole set is complete,
//! summary.json last; so a killed, failed or full-disk run never leaves a
//! partly written file under a final name, and a directory whose
//! summary.json is there holds the complete set it lists.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Context, Result};
use xxhash_rust::xxh3::Xxh3;

use crate::base::schema::OutputFile;

/// Makes the process abort after writing this many output bytes in all:
/// how the tests kill a run at any point of its writing.
const ABORT_AFTER_BYTES: &str = "RGRADE_TEST_ABORT_AFTER_BYTES";

/// An output file being written under its temporary name.
pub struct Staging {
    file: File,
    name: String,
    dir: PathBuf,
    bytes: u64,
    hasher: Xxh3,
    /// Whether [`finish`] took it; dropped unfinished (a write failed),
    /// its temporary file is removed.
    finished: bool,
}

/// Start writing the output `name` of `dir`, buffered.
///
/// # Errors
/// The temporary file cannot be created.
pub fn stage(dir: &Path, name: &str) -> Result<BufWriter<Staging>> {
    let temp = temp_path(dir, name);
    let file = File::create(&temp).with_context(|| format!("{}: cannot create", temp.display()))?;
    Ok(buffered(file, dir, name))
}

/// Start writing `name` of `dir` outside an output directory (a file no
/// directory lock guards): the temporary file is locked while it is
/// written, so two runs writing one path take turns instead of writing
/// into one file, and one a killed run left is taken over.
///
/// # Errors
/// The temporary file cannot be created or locked.
pub fn stage_alone(dir: &Path, name: &str) -> Result<BufWriter<Staging>> {
    let temp = temp_path(dir, name);
    let cannot = || format!("{}: cannot create", temp.display());
    let file = loop {
        let file = (File::options().create(true).truncate(false).write(true))
            .open(&temp)
            .with_context(cannot)?;
        file.lock().with_context(cannot)?;
        // The run before may have renamed (or removed) the file it
        // locked while this one waited: then lock the one there now.
        if still_there(&file, &temp) {
            break file;
        }
    };
    file.set_len(0).with_context(cannot)?;
    Ok(buffered(file, dir, name))
}

/// Remove the temporary file of `name` in `dir` that a killed run left,
/// unless a run is writing it now.
///
/// # Errors
/// The file is there, unlocked, and cannot be removed.
pub fn remove_abandoned(dir: &Path, name: &str) -> Result<()> {
    let temp = temp_path(dir, name);
    let Ok(file) = File::options().write(true).open(&temp) else {
        return Ok(());
    };
    if file.try_lock().is_ok() && still_there(&file, &temp) {
        std::fs::remove_file(&temp)
            .with_context(|| format!("{}: cannot remove a killed run's file", temp.display()))?;
    }
    Ok(())
}

/// Whether `path` still names the open `file`.
fn still_there(file: &File, path: &Path) -> bool {
    let ours = file.metadata().ok().map(|m| identity(&m));
    ours.is_some() && ours == std::fs::metadata(path).ok().map(|m| identity(&m))
}

/// `file`, the temporary file of `name` in `dir`, to write buffered.
fn buffered(file: File, dir: &Path, name: &str) -> BufWriter<Staging> {
    let staging = Staging {
        file,
        name: name.to_string(),
        dir: dir.to_path_buf(),
        bytes: 0,
        hasher: Xxh3::new(),
        finished: false,
    };
    BufWriter::with_capacity(1 << 20, staging)
}

/// Finish a staged file: flush it and keep it for [`commit`].
///
/// # Errors
/// The file cannot be written.
pub fn finish(writer: BufWriter<Staging>) -> Result<Staged> {
    let mut staging = writer.into_inner().map_err(|err| err.into_error())?;
    staging.finished = true;
    Ok(Staged {
        _open: (staging.file.try_clone())
            .with_context(|| format!("{}: cannot write", staging.name))?,
        temp: temp_path(&staging.dir, &staging.name),
        listed: OutputFile {
            name: staging.name.clone(),
            bytes: staging.bytes,
            hash: format!("{:032x}", staging.hasher.digest128()),
        },
        dir: staging.dir.clone(),
        committed: false,
    })
}

/// Finish a staged CSV file.
///
/// # Errors
/// The file cannot be written.
pub fn finish_csv(writer: csv::Writer<BufWriter<Staging>>) -> Result<Staged> {
    finish(writer.into_inner().map_err(|err| err.into_error())?)
}

impl Staging {
    /// `err` saying which output failed, by its whole final path: every
    /// writer above (CSV, JSON, text) passes it on as it is.
    fn failed(&self, err: io::Error) -> io::Error {
        let path = self.dir.join(&self.name);
        io::Error::new(
            err.kind(),
            format!("{}: cannot write: {err}", path.display()),
        )
    }
}

impl Write for Staging {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        abort_if_told(buf.len());
        let n = self.file.write(buf).map_err(|err| self.failed(err))?;
        self.hasher.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush().map_err(|err| self.failed(err))
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.finished {
            let _ = std::fs::remove_file(temp_path(&self.dir, &self.name));
        }
    }
}

/// A complete output under its temporary name. Dropped uncommitted (a
/// later step failed), it is removed.
pub struct Staged {
    /// The file, held open (its lock held, if [`stage_alone`] took one)
    /// until it is moved into place.
    _open: File,
    listed: OutputFile,
    temp: PathBuf,
    dir: PathBuf,
    committed: bool,
}

impl Staged {
    /// The file as summary.json lists it.
    pub fn listed(&self) -> &OutputFile {
        &self.listed
    }

    /// Where the complete file is until it is committed.
    pub fn path(&self) -> &Path {
        &self.temp
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_file(&self.temp);
        }
    }
}

/// Rename every staged file into place, in the order given: the file that
/// marks the set complete (summary.json, gate.json) comes last.
///
/// # Errors
/// A file cannot be renamed.
pub fn commit(files: Vec<Staged>) -> Result<()> {
    for mut file in files {
        let target = file.dir.join(&file.listed.name);
        std::fs::rename(&file.temp, &target)
            .with_context(|| format!("{}: cannot move into place", target.display()))?;
        file.committed = true;
    }
    Ok(())
}

/// What tells one file from another: its device and inode.
#[cfg(unix)]
pub fn identity(meta: &std::fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}

/// Elsewhere no inode tells: only that the file is still there.
#[cfg(not(unix))]
pub fn identity(_: &std::fs::Metadata) -> (u64, u64) {
    (0, 0)
}

/// Where `name` is written until the set is complete: hidden, and named so
/// that no log walk takes it for a log.
fn temp_path(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!(".{name}{TEMP_SUFFIX}"))
}

/// How the name of a file being written ends.
const TEMP_SUFFIX: &str = ".rgrade-tmp";

/// Whether `name` is that of a file a run was writing ([`temp_path`]).
pub fn is_temp_name(name: &str) -> bool {
    name.starts_with('.') && name.ends_with(TEMP_SUFFIX)
}

/// Abort the process once the output bytes written exceed the budget the
/// environment sets (tests only; unset, this costs one check per write).
fn abort_if_told(bytes: usize) {
    static WRITTEN: AtomicU64 = AtomicU64::new(0);
    static BUDGET: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
    let budget = BUDGET.get_or_init(|| {
        std::env::var(ABORT_AFTER_BYTES)
            .ok()
            .and_then(|v| v.parse().ok())
    });
    if let Some(budget) = budget {
        let written = WRITTEN.fetch_add(bytes as u64, Ordering::Relaxed) + bytes as u64;
        if written > *budget {
            std::process::abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("rgrade-staged-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn only_a_committed_file_takes_its_final_name() {
        let dir = scratch("commit");
        let temp = temp_path(&dir, "a.csv");

        // A write that never finished leaves nothing behind.
        let mut abandoned = stage(&dir, "a.csv").unwrap();
        abandoned.write_all(b"half").unwrap();
        drop(abandoned);
        assert!(!temp.exists() && !dir.join("a.csv").exists());

        // A finished file that a later failure leaves uncommitted neither.
        let mut done = stage(&dir, "a.csv").unwrap();
        done.write_all(b"whole\n").unwrap();
        drop(finish(done).unwrap());
        assert!(!temp.exists() && !dir.join("a.csv").exists());

        let mut done = stage(&dir, "a.csv").unwrap();
        done.write_all(b"whole\n").unwrap();
        let staged = finish(done).unwrap();
        assert_eq!(staged.listed().bytes, 6);
        assert_eq!(
            staged.listed().hash,
            format!("{:032x}", xxhash_rust::xxh3::xxh3_128(b"whole\n"))
        );
        commit(vec![staged]).unwrap();
        assert_eq!(std::fs::read(dir.join("a.csv")).unwrap(), b"whole\n");
        assert!(!temp.exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Two writers of one path outside an output directory take turns:
    /// the one that waited writes a file of its own (not the one the first
    /// renamed into place), and the last complete file stays.
    #[test]
    fn writers_of_one_path_take_turns() {
        let dir = scratch("alone");
        let mut first = stage_alone(&dir, "m.prom").unwrap();
        first.write_all(b"first\n").unwrap();
        let second = {
            let dir = dir.clone();
            std::thread::spawn(move || {
                let mut second = stage_alone(&dir, "m.prom").unwrap();
                second.write_all(b"second\n").unwrap();
                commit(vec![finish(second).unwrap()]).unwrap();
            })
        };
        // Most likely the second writer waits for the lock by now; if it
        // has not started yet, it takes its turn after the first all the same.
        std::thread::sleep(std::time::Duration::from_millis(100));
        commit(vec![finish(first).unwrap()]).unwrap();
        second.join().unwrap();
        assert_eq!(std::fs::read(dir.join("m.prom")).unwrap(), b"second\n");
        assert!(!temp_path(&dir, "m.prom").exists());

        // A file a killed writer left is removed, unless one is writing it.
        std::fs::write(temp_path(&dir, "m.prom"), b"half").unwrap();
        let writing = stage_alone(&dir, "m.prom").unwrap();
        remove_abandoned(&dir, "m.prom").unwrap();
        assert!(temp_path(&dir, "m.prom").exists());
        drop(writing);
        std::fs::write(temp_path(&dir, "m.prom"), b"half").unwrap();
        remove_abandoned(&dir, "m.prom").unwrap();
        assert!(!temp_path(&dir, "m.prom").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
