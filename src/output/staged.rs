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
    let staging = Staging {
        file,
        name: name.to_string(),
        dir: dir.to_path_buf(),
        bytes: 0,
        hasher: Xxh3::new(),
        finished: false,
    };
    Ok(BufWriter::with_capacity(1 << 20, staging))
}

/// Finish a staged file: flush it and keep it for [`commit`].
///
/// # Errors
/// The file cannot be written.
pub fn finish(writer: BufWriter<Staging>) -> Result<Staged> {
    let mut staging = writer.into_inner().map_err(|err| err.into_error())?;
    staging.finished = true;
    Ok(Staged {
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
}
